//! SGLang's rotary cos/sin caches (`weights.rotary_caches = "sglang"`): `get_rope`
//! (0.4.6 layers/rotary_embedding.py:1064-1240; 0.5.23 layers/rotary_embedding/factory.py:
//! 125-440) builds one embedding per distinct key (head size, rotary width, max position,
//! base, style, the rope_scaling items, dtype) and caches it in `_ROPE_DICT`, so each distinct
//! rotary configuration of a model's layers holds one `cos_sin_cache` of rows x rotary_dim
//! (cos and sin halves), its rows set by the class the scaling type picks. Every release from
//! 0.4.6 to 0.5.23 picks the same class, with the same rows, for each type modelled here.
//!
//! Invariants: a type, or a set lacking a key the class reads, that this module does not
//! model is refused naming it, never taken as unscaled; the rows are those of the class cited
//! at each arm.

use model_facts::{ModelFacts, RopeSet};

/// The rows of the cos/sin cache SGLang's `get_rope` builds for `set` at the model's
/// `max_position_embeddings` (`Err`: what is not modelled).
pub(crate) fn cache_rows(set: &RopeSet, model: &ModelFacts) -> Result<u64, String> {
    let max_position = model.max_position_embeddings;
    // The classes read `rope_scaling["factor"]` (0.4.x raises KeyError without it; 0.5.10 on
    // warn and take 1.0, factory.py:202 `_get_rope_param`): a set without one is refused.
    let scaled = |base: u64| crate::rotary::scaled_rows(set, base);
    // Read from the rope_scaling dict alone (a top-level key is not consulted).
    let original = || {
        set.original_max_position_embeddings.ok_or_else(|| {
            format!(
                "rope type `{}` without original_max_position_embeddings",
                set.rope_type
            )
        })
    };
    match set.rope_type.as_str() {
        // RotaryEmbedding (0.5.23 base.py:253-266; 0.4.6 rotary_embedding.py:108-116), also
        // MRotaryEmbedding under `mrope_section` (mrope.py:60-80, no enlargement), and
        // Llama3RotaryEmbedding (rope_variant.py:557-600), which changes only the
        // frequencies: max_position rows.
        "default" | "llama3" => Ok(max_position),
        // LinearScalingRotaryEmbedding (base.py:649-680; 0.4.6 :232-265) and
        // DynamicNTKScalingRotaryEmbedding (rope_variant.py:879-887; 0.4.6 :292-300):
        // max_position x factor.
        "linear" | "dynamic" => scaled(max_position),
        // YaRNScalingRotaryEmbedding (yarn.py:171-176; 0.4.6 :415-420), with `mrope_section`
        // YaRNScalingMRotaryEmbedding (mrope.py:510-514), and DeepseekScalingRotaryEmbedding
        // (rope_variant.py:406-411; 0.4.6 :640-645), built at original_max_position
        // (factory.py:351, 395): original x factor.
        "yarn" | "deepseek_yarn" => scaled(original()?),
        // Phi3LongRoPEScaledRotaryEmbedding (rope_variant.py:37-103) holds three buffers
        // (short, long and both) in the model dtype, not one float32 cache.
        "longrope" => Err("rope type `longrope` (three caches in the model dtype)".to_owned()),
        other => Err(format!("rope type `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::cache_rows;
    use crate::rotary::fixtures::{model, set};
    use model_facts::RopeSet;

    #[test]
    fn rows_per_rope_type() {
        // Gemma 3 4B's global layers as written: linear x 8 over 131,072 positions.
        assert_eq!(
            cache_rows(&set("linear", Some(8.0), None), &model(131_072)),
            Ok(1_048_576)
        );
        // Llama 3.1: llama3 keeps max_position rows; dynamic x 2.5 over 1001: ceil(2502.5).
        assert_eq!(
            cache_rows(&set("llama3", Some(8.0), Some(8192)), &model(131_072)),
            Ok(131_072)
        );
        assert_eq!(
            cache_rows(&set("dynamic", Some(2.5), None), &model(1001)),
            Ok(2503)
        );
        // DeepSeek-V3: deepseek_yarn 4,096 x 40; a yarn M-RoPE 32,768 x 4; a default M-RoPE
        // keeps max_position (vLLM enlarges it 4 times; SGLang does not).
        assert_eq!(
            cache_rows(
                &set("deepseek_yarn", Some(40.0), Some(4096)),
                &model(163_840)
            ),
            Ok(163_840)
        );
        let mrope = |rope_type: &str, factor: Option<f64>, original: Option<u64>| RopeSet {
            mrope_section: true,
            ..set(rope_type, factor, original)
        };
        assert_eq!(
            cache_rows(&mrope("yarn", Some(4.0), Some(32_768)), &model(131_072)),
            Ok(131_072)
        );
        assert_eq!(
            cache_rows(&mrope("default", None, None), &model(262_144)),
            Ok(262_144)
        );
        // Refused: the keys a class reads, longrope's buffers, a type get_rope lacks.
        assert_eq!(
            cache_rows(&set("yarn", Some(4.0), None), &model(8)),
            Err("rope type `yarn` without original_max_position_embeddings".to_owned())
        );
        assert_eq!(
            cache_rows(&set("dynamic", None, None), &model(8)),
            Err("rope type `dynamic` without a factor".to_owned())
        );
        assert_eq!(
            cache_rows(&set("longrope", None, Some(4096)), &model(131_072)),
            Err("rope type `longrope` (three caches in the model dtype)".to_owned())
        );
        assert_eq!(
            cache_rows(&set("ntk", Some(2.0), None), &model(8)),
            Err("rope type `ntk`".to_owned())
        );
    }
}
