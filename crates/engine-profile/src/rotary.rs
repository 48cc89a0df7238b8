//! What every engine's rotary cos/sin cache shares: its rows come from `torch.arange` over a
//! scaled position count, which each engine's rope classes compute the same way. Which class a
//! rope type picks, and so which count is scaled, is the engine's own (`vllm/rotary.rs`,
//! `sglang/rotary.rs`).
//!
//! Invariant: the rows are checked, never wrapped: a factor that gives no finite count of at
//! least one row below `u64::MAX` is an error naming the rope type.

use model_facts::RopeSet;

/// The rows of a cache built over `base` positions scaled by `set`'s factor: `torch.arange(end)`
/// of a float end has ceil(end) elements (`Err`: the factor is missing or the count is not a
/// row count).
pub(crate) fn scaled_rows(set: &RopeSet, base: u64) -> Result<u64, String> {
    let factor = set
        .factor
        .ok_or_else(|| format!("rope type `{}` without a factor", set.rope_type))?;
    let rows = (base as f64 * factor).ceil();
    if rows.is_finite() && rows >= 1.0 && rows < u64::MAX as f64 {
        Ok(rows as u64)
    } else {
        Err(format!(
            "rope type `{}`: {base} x factor {factor} rows",
            set.rope_type
        ))
    }
}

/// Fixtures of the engines' rope tests: a model with `max_position_embeddings` positions and
/// a rope set of a type, factor and original position count.
#[cfg(test)]
pub(crate) mod fixtures {
    use model_facts::{ModelFacts, RopeScaling, RopeSet};

    pub(crate) fn model(max_position_embeddings: u64) -> ModelFacts {
        ModelFacts {
            model_type: "m".to_owned(),
            architecture: "M".to_owned(),
            dtype: circuit_ir::Format::Bf16,
            quantization: None,
            max_position_embeddings,
            rope: RopeScaling::default(),
            rotary: Vec::new(),
            vocab_size: 1,
            num_attention_heads: 1,
            attention_chunk_size: None,
            vision_encoder: false,
            encoder: None,
            checkpoint_quantized: false,
        }
    }

    pub(crate) fn set(rope_type: &str, factor: Option<f64>, original: Option<u64>) -> RopeSet {
        RopeSet {
            rope_type: rope_type.to_owned(),
            factor,
            factor_null: false,
            original_max_position_embeddings: original,
            mrope_section: false,
        }
    }
}
