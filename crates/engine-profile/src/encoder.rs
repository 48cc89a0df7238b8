//! The multimodal encoder's run on a worker during the profile run: the modality profiled
//! (an image, or a dummy video for a tower that takes both: the item with more tokens, a tie
//! as the engine file says), the items the engine's encoder budget allows and the bytes of the
//! engine file's encoder terms (its inputs, its outputs, its own peak), over the run's names
//! and the encoder's shape.
//!
//! Invariants: all zero when the profile runs no encoder (a text-only model, a skipped or
//! unloaded tower, every modality limited to 0); the encoder's names (`mm_*`, `vision_*`,
//! `tp`) are bound only here; a modality limited to 0 is never profiled.

use circuit_ir::Circuit;

use crate::facts::{Where, sum};
use crate::formula::Env;
use crate::startup::Settled;
use crate::{EncoderBytes, EngineError, EngineProfile};

/// One dummy item of a modality.
#[derive(Debug, Clone, Copy)]
struct Item {
    video: bool,
    tokens: u64,
    tiles: u64,
    rows_per_tile: u64,
    pixels_per_tile: u64,
    limit: u64,
}

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
        let class = facts.for_class(&settled.model.architecture);
        let mut env = env.clone();
        env.extend([
            ("max_model_len", run.max_model_len),
            ("tp", run.tp),
            ("mm_output_hidden", e.output_hidden),
            ("vision_hidden", e.hidden),
            ("vision_heads", e.heads),
            ("vision_head_dim", e.head_dim),
            ("vision_ffn", e.ffn),
            ("vision_complex_rotary", u64::from(e.complex_rotary)),
            ("vision_activation_tensors", e.activation_tensors),
            ("vision_layers", e.layers),
            ("vision_feature_layers", e.feature_layers),
            ("vision_merge", e.merge),
            ("vision_deepstack_layers", e.deepstack_layers),
        ]);
        let overflow = || EngineError::Overflow {
            what: format!("{}: the encoder's dummy video", circuit.name()),
        };
        let image = (run.limit_per_prompt > 0).then_some(Item {
            video: false,
            tokens: e.tokens_per_item,
            tiles: e.tiles_per_item,
            rows_per_tile: e.rows_per_tile,
            pixels_per_tile: e.pixels_per_tile,
            limit: run.limit_per_prompt,
        });
        let video = match (e.video, class.video) {
            (Some(v), Some(vf)) if run.video_limit_per_prompt > 0 => {
                let groups = vf.groups.eval(
                    &env.clone()
                        .with("mm_video_group_tokens", v.group_tokens)
                        .with("mm_video_frames_per_group", v.frames_per_group),
                )?;
                Some(Item {
                    video: true,
                    tokens: groups.checked_mul(v.group_tokens).ok_or_else(overflow)?,
                    tiles: 1,
                    rows_per_tile: groups.checked_mul(v.group_rows).ok_or_else(overflow)?,
                    pixels_per_tile: groups.checked_mul(v.group_pixels).ok_or_else(overflow)?,
                    limit: run.video_limit_per_prompt,
                })
            }
            _ => None,
        };
        let wins_tie = class.video.is_some_and(|v| v.wins_tie);
        let item = match (image, video) {
            (Some(i), Some(v)) if v.tokens > i.tokens || (v.tokens == i.tokens && wins_tie) => v,
            (Some(i), _) => i,
            (None, Some(v)) => v,
            (None, None) => return Ok(EncoderBytes::default()),
        };
        env.extend([
            ("mm_limit_per_prompt", item.limit),
            ("mm_video", u64::from(item.video)),
            ("mm_tokens_per_item", item.tokens),
            ("mm_tiles_per_item", item.tiles),
            ("mm_rows_per_tile", item.rows_per_tile),
            ("mm_pixels_per_tile", item.pixels_per_tile),
        ]);
        let items = facts.items.eval(&env)?;
        let env = env.with("mm_items", items);
        Ok(EncoderBytes {
            items,
            video: item.video,
            held: sum("profile_run.encoder.held", class.held, &env, circuit, at)?,
            outputs: sum(
                "profile_run.encoder.outputs",
                class.outputs,
                &env,
                circuit,
                at,
            )?,
            peak: sum("profile_run.encoder.peak", class.peak, &env, circuit, at)?,
        })
    }
}
