//! The multimodal encoder's run on a worker during the profile run: the items the engine's
//! encoder budget allows and the bytes of the engine file's encoder terms (its inputs, its
//! outputs, its own peak), over the run's names and the encoder's shape.
//!
//! Invariants: all zero when the profile runs no encoder (a text-only model, a skipped or
//! unloaded tower); the encoder's names (`mm_*`, `vision_*`, `tp`) are bound only here.

use circuit_ir::Circuit;

use crate::facts::{Where, sum};
use crate::formula::Env;
use crate::startup::Settled;
use crate::{EncoderBytes, EngineError, EngineProfile};

impl EngineProfile {
    /// The encoder's run on a worker of `circuit`.
    pub(crate) fn encoder_run(
        &self,
        settled: &Settled,
        env: &Env<'_>,
        circuit: &Circuit,
        at: Where,
    ) -> Result<EncoderBytes, EngineError> {
        let (Some(run), Some(facts)) = (settled.encoder, &self.facts.run()?.profile_run.encoder)
        else {
            return Ok(EncoderBytes::default());
        };
        let e = run.shape;
        let mut env = env.clone();
        env.extend([
            ("max_model_len", run.max_model_len),
            ("tp", run.tp),
            ("mm_limit_per_prompt", run.limit_per_prompt),
            ("mm_tokens_per_item", e.tokens_per_item),
            ("mm_tiles_per_item", e.tiles_per_item),
            ("mm_rows_per_tile", e.rows_per_tile),
            ("mm_pixels_per_tile", e.pixels_per_tile),
            ("mm_output_hidden", e.output_hidden),
            ("vision_hidden", e.hidden),
            ("vision_heads", e.heads),
            ("vision_head_dim", e.head_dim),
            ("vision_ffn", e.ffn),
            ("vision_complex_rotary", u64::from(e.complex_rotary)),
            ("vision_activation_tensors", e.activation_tensors),
        ]);
        let items = facts.items.eval(&env)?;
        let env = env.with("mm_items", items);
        Ok(EncoderBytes {
            items,
            held: sum("profile_run.encoder.held", &facts.held, &env, circuit, at)?,
            outputs: sum(
                "profile_run.encoder.outputs",
                &facts.outputs,
                &env,
                circuit,
                at,
            )?,
            peak: sum("profile_run.encoder.peak", &facts.peak, &env, circuit, at)?,
        })
    }
}
