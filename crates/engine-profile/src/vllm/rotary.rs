//! vLLM's rotary cos/sin caches: `get_rope` (model_executor/layers/rotary_embedding/
//! __init__.py:29-86) builds one rotary embedding per distinct key (head size, rotary width,
//! max position, style, the rope parameters, dtype) and caches it in `_ROPE_DICT`, so a model
//! whose layer types rotate differently (Gemma 3's sliding and global layers) holds one cache
//! each; each holds a `cos_sin_cache` buffer of rows x rotary_dim (cos and sin halves) in the
//! model's default dtype (base.py:52-58), its rows set by the embedding's class.
//!
//! Invariants: the rows of each rope type are those of vLLM 0.19's class for it, cited at each
//! arm; a type this module does not know is refused naming it, never taken as unscaled.

use model_facts::{ModelFacts, RopeSet};

/// The rows of the cos/sin cache vLLM builds for `set` at the model's
/// `max_position_embeddings` (`Err`: the rope type, not modelled).
pub(crate) fn cache_rows(set: &RopeSet, model: &ModelFacts) -> Result<u64, String> {
    let max_position = model.max_position_embeddings;
    let scaled = |base: u64| crate::rotary::scaled_rows(set, base);
    // A top-level original_max_position_embeddings overwrites the set's own
    // (transformers_utils/config.py:387-405 patch_rope_parameters).
    let original = || {
        model
            .rope
            .original_max_position_embeddings
            .or(set.original_max_position_embeddings)
            .ok_or_else(|| {
                format!(
                    "rope type `{}` without original_max_position_embeddings",
                    set.rope_type
                )
            })
    };
    // M-RoPE: a default or yarn set giving `mrope_section` builds an MRotaryEmbedding
    // (__init__.py:95-105, 249-262) whose cache has 4 x max_position rows ("We enlarge
    // max_position_embeddings to 4 times", mrope.py:235-245), yarn's built at
    // original_max_position and scaled by its factor (mrope.py:258-261,
    // yarn_scaling_rope.py:75-80). The legacy type `mrope` is read as `default`, and refused
    // without `mrope_section` (transformers_utils/config.py:454-460).
    if set.mrope_section || set.rope_type == "mrope" {
        let four = |rows: u64| {
            rows.checked_mul(4)
                .ok_or_else(|| "M-RoPE rows overflow".to_owned())
        };
        return match set.rope_type.as_str() {
            "mrope" if !set.mrope_section => {
                Err("rope type `mrope` without mrope_section".to_owned())
            }
            "default" | "mrope" => four(max_position),
            "yarn" => scaled(four(original()?)?),
            other => Err(format!("rope type `{other}` with mrope_section")),
        };
    }
    match set.rope_type.as_str() {
        // RotaryEmbedding (base.py:83-91): max_position rows; Llama3RotaryEmbedding
        // (llama3_rope.py) and NTKScalingRotaryEmbedding (ntk_scaling_rope.py) change only the
        // frequencies.
        "default" | "llama3" | "ntk" => Ok(max_position),
        // LinearScalingRotaryEmbedding (linear_scaling_rope.py:79-92): max_position x factor.
        "linear" => scaled(max_position),
        // DynamicNTKScalingRotaryEmbedding (dynamic_ntk_scaling_rope.py:51-62) scales by its
        // factor; DynamicNTKAlphaRotaryEmbedding (dynamic_ntk_alpha_rope.py:30-37), an `alpha`
        // and no factor, does not.
        "dynamic" if set.factor.is_some() => scaled(max_position),
        "dynamic" => Ok(max_position),
        // YaRNScalingRotaryEmbedding (yarn_scaling_rope.py:75-80) and
        // DeepseekScalingRotaryEmbedding (deepseek_scaling_rope.py:102-111), built at
        // original_max_position (__init__.py:232-300): original x factor.
        "yarn" | "deepseek_yarn" | "deepseek_llama_scaling" => scaled(original()?),
        // Phi3LongRoPEScaledRotaryEmbedding (phi3_long_rope_scaled_rope.py:81-95): a short
        // cache of original_max_position rows and a long one of max_position, concatenated
        // (`su` is the legacy name, transformers_utils/config.py:451-453).
        "longrope" | "su" => original()?
            .checked_add(max_position)
            .ok_or_else(|| "longrope rows overflow".to_owned()),
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
        // Gemma 3 4B's global layers: linear x 8 over 131,072 positions.
        assert_eq!(
            cache_rows(&set("linear", Some(8.0), None), &model(131_072)),
            Ok(1_048_576)
        );
        // Llama 3.1: llama3 scaling keeps max_position rows.
        assert_eq!(
            cache_rows(&set("llama3", Some(8.0), Some(8192)), &model(131_072)),
            Ok(131_072)
        );
        // DeepSeek-V2-Lite: deepseek_yarn, 4,096 x 40 = 163,840; gpt-oss: yarn 4,096 x 32.
        assert_eq!(
            cache_rows(
                &set("deepseek_yarn", Some(40.0), Some(4096)),
                &model(163_840)
            ),
            Ok(163_840)
        );
        assert_eq!(
            cache_rows(&set("yarn", Some(32.0), Some(4096)), &model(131_072)),
            Ok(131_072)
        );
        // Phi-3 longrope: 4,096 short rows and 131,072 long ones.
        assert_eq!(
            cache_rows(&set("longrope", None, Some(4096)), &model(131_072)),
            Ok(135_168)
        );
        // A fractional factor: ceil(1000 x 2.5) = 2,500; ceil(1001 x 2.5) = 2,503.
        assert_eq!(
            cache_rows(&set("linear", Some(2.5), None), &model(1001)),
            Ok(2503)
        );
        // Qwen2.5-VL's legacy `mrope` and Qwen3-VL's default set with mrope_section: 4 x
        // 128,000 and 4 x 262,144 rows; a yarn M-RoPE of 32,768 x 4: ceil(4 x 32,768 x 4).
        let mrope = |rope_type: &str, factor: Option<f64>, original: Option<u64>| RopeSet {
            mrope_section: true,
            ..set(rope_type, factor, original)
        };
        assert_eq!(
            cache_rows(&mrope("mrope", None, None), &model(128_000)),
            Ok(512_000)
        );
        assert_eq!(
            cache_rows(&mrope("default", None, None), &model(262_144)),
            Ok(1_048_576)
        );
        assert_eq!(
            cache_rows(&mrope("yarn", Some(4.0), Some(32_768)), &model(131_072)),
            Ok(524_288)
        );
        assert_eq!(
            cache_rows(&set("mrope", None, None), &model(8)),
            Err("rope type `mrope` without mrope_section".to_owned())
        );
        assert_eq!(
            cache_rows(&mrope("linear", Some(2.0), None), &model(8)),
            Err("rope type `linear` with mrope_section".to_owned())
        );
        assert_eq!(
            cache_rows(&set("proportional", None, None), &model(8)),
            Err("rope type `proportional`".to_owned())
        );
    }
}
