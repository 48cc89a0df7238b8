//! The context lengths vLLM derives for a model (`vllm/config/model.py`
//! `_get_and_verify_max_len`, vLLM 0.19.0 lines 2045-2200): `max_position_embeddings`, times
//! the rope scaling's `factor` for every rope type but `su`, `longrope` and `llama3` (under
//! `yarn` the factor scales the set's `original_max_position_embeddings`, which transformers
//! fills from the top-level key, else from `max_position_embeddings`), Gemma 3 excepted (its
//! length is already scaled); the default is that length, except under `longrope`, where it is
//! the config's top-level `original_max_position_embeddings`.
//!
//! Invariants: both lengths are at least 1; a length beyond u64 saturates (vLLM computes in
//! floats); the other keys vLLM takes a minimum over (`n_positions`, `max_seq_len`,
//! `seq_length`, ...) and the tokenizer's `model_max_length` are not read: no supported model
//! type has them, and the tokenizer is not a config.

use model_facts::ModelFacts;

use crate::ModelLen;

/// The rope types whose factor does not stretch the context (`su` and `longrope` carry their
/// own lengths; `llama3` rescales frequencies within `max_position_embeddings`).
const UNSCALED: [&str; 3] = ["su", "longrope", "llama3"];

/// The longest and default max-model-len vLLM takes for `model`.
pub(crate) fn max_model_len(model: &ModelFacts) -> ModelLen {
    let positions = model.max_position_embeddings;
    let rope = &model.rope;
    // "Gemma3's max_model_len (128K) is already scaled by RoPE scaling" (model.py:2104-2106).
    if rope.sets.is_empty() || model.model_type.contains("gemma3") {
        return ModelLen {
            longest: positions,
            default: positions,
        };
    }
    let mut derived = positions as f64;
    let mut factor = 1.0f64;
    for set in &rope.sets {
        if UNSCALED.contains(&set.rope_type.as_str()) {
            continue;
        }
        // `rp.get("factor", scaling_factor)`: an absent factor keeps the last one, a null one
        // falls back to 1.
        if let Some(f) = set.factor {
            factor = f;
        } else if set.factor_null {
            factor = 1.0;
        }
        if set.rope_type == "yarn" {
            derived = set
                .original_max_position_embeddings
                .or(rope.original_max_position_embeddings)
                .unwrap_or(positions) as f64;
        }
    }
    let scaled = derived * factor;
    let longest = if scaled >= u64::MAX as f64 {
        u64::MAX
    } else {
        (scaled.floor() as u64).max(1)
    };
    let longrope = rope.sets.iter().any(|s| s.rope_type == "longrope");
    let default = if longrope {
        rope.original_max_position_embeddings.unwrap_or(longest)
    } else {
        longest
    };
    ModelLen { longest, default }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::max_model_len;
    use crate::ModelLen;

    /// The lengths vLLM derives for Qwen2.5-7B's config (max_position_embeddings 131,072, no
    /// rope scaling) or Gemma 3 1B's, with `patch` merged into it.
    fn limits(model_type: &str, patch: Value) -> Result<ModelLen, circuit_hf::HfError> {
        let base = match model_type {
            "qwen2" => include_str!("../../../../data/models/qwen2.5-7b/config.json"),
            "gemma3_text" => {
                include_str!("../../../../data/checkpoints/gemma-3-1b-it/config.json")
            }
            other => panic!("no config for {other}"),
        };
        let mut config: Value = serde_json::from_str(base).unwrap();
        for (k, v) in patch.as_object().unwrap() {
            config[k] = v.clone();
        }
        circuit_hf::import(&config.to_string(), "config.json").map(|i| max_model_len(&i.facts))
    }

    fn both(n: u64) -> ModelLen {
        ModelLen {
            longest: n,
            default: n,
        }
    }

    #[test]
    fn rope_factors_extend_the_context_as_vllm_derives_it() {
        // No scaling: max_position_embeddings.
        assert_eq!(limits("qwen2", json!({})).unwrap(), both(131_072));
        // Qwen's long-context recipe: yarn over its original 32,768 positions.
        let yarn = json!({"max_position_embeddings": 32768, "rope_scaling":
            {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}});
        assert_eq!(limits("qwen2", yarn).unwrap(), both(131_072));
        // transformers 5's name wins, and linear scaling multiplies max_position_embeddings.
        let linear = json!({"max_position_embeddings": 4096,
            "rope_scaling": {"rope_type": "yarn", "factor": 8.0},
            "rope_parameters": {"rope_type": "linear", "factor": 2.5}});
        assert_eq!(limits("qwen2", linear).unwrap(), both(10_240));
        // llama3 and the default type leave it; a null factor is 1.
        let llama3 = json!({"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
            "original_max_position_embeddings": 8192}});
        assert_eq!(limits("qwen2", llama3).unwrap(), both(131_072));
        let null = json!({"rope_scaling": {"rope_type": "dynamic", "factor": null}});
        assert_eq!(limits("qwen2", null).unwrap(), both(131_072));
        // yarn without its original length scales max_position_embeddings.
        let bare = json!({"max_position_embeddings": 1000,
            "rope_parameters": {"rope_type": "yarn", "factor": 1.5}});
        assert_eq!(limits("qwen2", bare).unwrap(), both(1500));
    }

    #[test]
    fn longrope_defaults_to_the_original_context_and_gemma3_ignores_its_factor() {
        let longrope = json!({"original_max_position_embeddings": 4096,
            "rope_scaling": {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}});
        // Qwen2 has no top-level original_max_position_embeddings key: refused as unknown.
        assert!(limits("qwen2", longrope).is_err());
        let longrope = json!({"rope_scaling": {"type": "longrope", "factor": 32.0}});
        assert_eq!(limits("qwen2", longrope).unwrap(), both(131_072));
        let gemma = json!({"rope_scaling": {"rope_type": "linear", "factor": 8.0}});
        assert_eq!(limits("gemma3_text", gemma).unwrap(), both(32_768));
    }
}
