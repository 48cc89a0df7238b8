//! The context lengths a config allows: `max_position_embeddings`, extended by the rope scaling
//! that stretches positions (yarn, linear, dynamic), as vLLM 0.19 derives the longest
//! `max_model_len` it accepts and the one it picks when none is given
//! (vllm/config/model.py `_get_and_verify_max_len`).
//!
//! Invariants: no byte of a circuit depends on these lengths; both are at least 1; the default
//! is at most the longest, except under `longrope`, where vLLM defaults to the original
//! context and still accepts the scaled one.

use serde_json::{Map, Value};

use crate::config::{Config, Got};
use crate::error::HfError;
use crate::model::{KeyRole, ModelType};

/// The rope types whose factor does not extend the context vLLM accepts (`su` and `longrope`
/// carry their own lengths; `llama3` rescales frequencies within `max_position_embeddings`).
const UNSCALED: [&str; 3] = ["su", "longrope", "llama3"];

/// The lengths of a model's context, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// The longest `max_model_len` an engine accepts (vLLM refuses a longer one).
    pub longest: u64,
    /// The `max_model_len` an engine takes when the caller gives none.
    pub default: u64,
}

impl ContextLimits {
    /// Reads the rope scaling of `cfg` over `max_position_embeddings` = `positions`.
    pub(crate) fn read(cfg: &Config<'_>, positions: u64) -> Result<ContextLimits, HfError> {
        // transformers 5 writes `rope_parameters`; older files `rope_scaling`.
        let rope = match cfg.value("rope_parameters") {
            Got::Value(v) => Some(("rope_parameters", v)),
            Got::Missing | Got::Null => match cfg.value("rope_scaling") {
                Got::Value(v) => Some(("rope_scaling", v)),
                Got::Missing | Got::Null => None,
            },
        };
        let unchanged = ContextLimits {
            longest: positions,
            default: positions,
        };
        // vLLM leaves Gemma 3's context alone whatever its rope says.
        let Some((key, rope)) = rope.filter(|_| cfg.model() != ModelType::Gemma3Text) else {
            return Ok(unchanged);
        };
        let Value::Object(rope) = rope else {
            return Err(cfg.bad(key, "an object or null", rope));
        };
        // Per attention-layer type (`{"full_attention": {...}, ...}`) or one set for all.
        let nested = !rope.is_empty() && rope.values().all(Value::is_object);
        let sets: Vec<&Map<String, Value>> = if nested {
            rope.values().filter_map(Value::as_object).collect()
        } else {
            vec![rope]
        };
        let mut derived = positions as f64;
        let mut factor = 1.0f64;
        let mut factor_found = Value::Null;
        let mut longrope = false;
        for set in sets {
            let rope_type = ["rope_type", "type"]
                .iter()
                .find_map(|k| set.get(*k).and_then(Value::as_str))
                .unwrap_or("default");
            longrope |= rope_type == "longrope";
            if UNSCALED.contains(&rope_type) {
                continue;
            }
            match set.get("factor") {
                None => {}
                Some(Value::Null) => factor = 1.0,
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(f) if f.is_finite() && f > 0.0 => {
                        factor = f;
                        factor_found = Value::Number(n.clone());
                    }
                    _ => {
                        return Err(cfg.bad(key, "a positive `factor`", &Value::Number(n.clone())));
                    }
                },
                Some(other) => return Err(cfg.bad(key, "a numeric `factor`", other)),
            }
            if rope_type == "yarn" {
                // yarn scales its original context, whatever max_position_embeddings says.
                // transformers fills it from the top-level key, else max_position_embeddings.
                derived = match set.get("original_max_position_embeddings") {
                    Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => {
                        n.as_u64().unwrap_or(1) as f64
                    }
                    Some(other) => {
                        return Err(cfg.bad(
                            key,
                            "a positive integer `original_max_position_embeddings` under yarn",
                            other,
                        ));
                    }
                    None => original_context(cfg)?.unwrap_or(positions) as f64,
                };
            }
        }
        // vLLM multiplies in floats too (`derived_max_model_len *= scaling_factor`), so the
        // product is the one it takes; a context past 64 bits is refused, never saturated.
        let scaled = derived * factor;
        if scaled >= u64::MAX as f64 {
            return Err(cfg.bad(
                key,
                format!(
                    "a `factor` whose scaled context fits 64 bits ({derived} positions x {factor:e} is above 2^64 - 1 tokens)"
                ),
                &factor_found,
            ));
        }
        let longest = (scaled.floor() as u64).max(1);
        // Under longrope vLLM defaults to the config's original context.
        let default = if longrope {
            original_context(cfg)?.unwrap_or(longest)
        } else {
            longest
        };
        Ok(ContextLimits { longest, default })
    }
}

/// The top-level `original_max_position_embeddings`, for the model types that have the key
/// (the others refuse it as unknown).
fn original_context(cfg: &Config<'_>) -> Result<Option<u64>, HfError> {
    const KEY: &str = "original_max_position_embeddings";
    if !cfg
        .model()
        .key(KEY)
        .is_some_and(|k| k.role == KeyRole::Read)
    {
        return Ok(None);
    }
    Ok(match cfg.int(KEY, 1, u64::MAX)? {
        Got::Value(v) => Some(v),
        Got::Missing | Got::Null => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::ContextLimits;

    /// Qwen2.5-7B's config (max_position_embeddings 131,072, no rope scaling) with `patch`
    /// merged into it.
    fn limits(model_type: &str, patch: Value) -> Result<ContextLimits, crate::HfError> {
        let base = match model_type {
            "qwen2" => include_str!("../../../data/models/qwen2.5-7b/config.json"),
            "gemma3_text" => include_str!("../../../data/checkpoints/gemma-3-1b-it/config.json"),
            other => panic!("no config for {other}"),
        };
        let mut config: Value = serde_json::from_str(base).unwrap();
        for (k, v) in patch.as_object().unwrap() {
            config[k] = v.clone();
        }
        crate::import(&config.to_string(), "config.json").map(|i| i.context)
    }

    fn both(n: u64) -> ContextLimits {
        ContextLimits {
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

    #[test]
    fn a_bad_rope_is_a_typed_error_naming_the_key() {
        for (rope, want) in [
            (json!("yarn"), "an object or null"),
            (
                json!({"rope_type": "linear", "factor": "2"}),
                "a numeric `factor`",
            ),
            (
                json!({"rope_type": "linear", "factor": -2.0}),
                "a positive `factor`",
            ),
            (
                json!({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 0}),
                "original_max_position_embeddings",
            ),
        ] {
            let e = limits("qwen2", json!({ "rope_scaling": rope })).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("rope_scaling") && text.contains(want),
                "{text}"
            );
        }
    }
}
