//! The rope scaling of a config (`rope_parameters`, transformers 5's name, else `rope_scaling`)
//! read into [`RopeScaling`]: each set's type, factor and original context, as written. How far
//! a scaling lets an engine's context stretch is that engine's rule, not the checkpoint's.
//!
//! The rotary embeddings the decoder layers apply ([`rotary`]): one per distinct
//! configuration, each with the width of a head it rotates, for an engine that builds a cos/sin
//! cache per configuration.
//!
//! Invariants: no byte of a circuit depends on the rope scaling; a set that is not an object, a
//! factor that is not a positive finite number, and an original context that is not a positive
//! integer are refused naming the key, as is a factor that stretches the context past 64 bits;
//! a model type without a top-level `original_max_position_embeddings` key never reads it (the
//! key is refused as unknown); the rotary list names each configuration once, and none when no
//! layer rotates (Llama 4's NoPE layers, Qwen3-Next's linear-attention layers rotate nothing).

use model_facts::{RopeScaling, RopeSet, Rotary};
use serde_json::{Map, Value};

use crate::arch::{Arch, Attn};
use crate::config::{Config, Got};
use crate::error::HfError;
use crate::model::{KeyRole, ModelType};

/// Reads the rope scaling of `cfg`, whose `max_position_embeddings` is `positions`. A factor
/// that would stretch the context past 64 bits is refused here, where the key can be named.
pub(crate) fn read(cfg: &Config<'_>, positions: u64) -> Result<RopeScaling, HfError> {
    let original_max_position_embeddings = original_context(cfg)?;
    let rope = match cfg.value("rope_parameters") {
        Got::Value(v) => Some(("rope_parameters", v)),
        Got::Missing | Got::Null => match cfg.value("rope_scaling") {
            Got::Value(v) => Some(("rope_scaling", v)),
            Got::Missing | Got::Null => None,
        },
    };
    let Some((key, rope)) = rope else {
        return Ok(RopeScaling {
            sets: Vec::new(),
            original_max_position_embeddings,
        });
    };
    let Value::Object(rope) = rope else {
        return Err(cfg.bad(key, "an object or null", rope));
    };
    // Per attention-layer type (`{"full_attention": {...}, ...}`) or one set for all.
    let nested = !rope.is_empty() && rope.values().all(Value::is_object);
    let maps: Vec<&Map<String, Value>> = if nested {
        rope.values().filter_map(Value::as_object).collect()
    } else {
        vec![rope]
    };
    let mut sets = Vec::with_capacity(maps.len());
    for set in maps {
        let rope_type = ["rope_type", "type"]
            .iter()
            .find_map(|k| set.get(*k).and_then(Value::as_str))
            .unwrap_or("default")
            .to_owned();
        let (factor, factor_null) = match set.get("factor") {
            None => (None, false),
            Some(Value::Null) => (None, true),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(f) if f.is_finite() && f > 0.0 => (Some(f), false),
                _ => {
                    return Err(cfg.bad(key, "a positive `factor`", &Value::Number(n.clone())));
                }
            },
            Some(other) => return Err(cfg.bad(key, "a numeric `factor`", other)),
        };
        let original = match set.get("original_max_position_embeddings") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => n.as_u64(),
            Some(other) => {
                return Err(cfg.bad(
                    key,
                    "a positive integer `original_max_position_embeddings`",
                    other,
                ));
            }
        };
        if let Some(f) = factor {
            // The longest context a factor can give: its set's original context (yarn) or
            // the top-level one or max_position_embeddings, times the factor (computed in
            // floats, as engines compute it).
            let base = original
                .or(original_max_position_embeddings)
                .unwrap_or(positions)
                .max(positions);
            if base as f64 * f >= u64::MAX as f64 {
                let found = set.get("factor").cloned().unwrap_or(Value::Null);
                return Err(cfg.bad(
                    key,
                    format!(
                        "a `factor` whose scaled context fits 64 bits ({base} positions x {f:e} is above 2^64 - 1 tokens)"
                    ),
                    &found,
                ));
            }
        }
        sets.push(RopeSet {
            rope_type,
            factor,
            factor_null,
            original_max_position_embeddings: original,
            mrope_section: set.contains_key("mrope_section"),
        });
    }
    Ok(RopeScaling {
        sets,
        original_max_position_embeddings,
    })
}

/// The rotary embeddings of `arch`'s decoder layers (`cfg` its config), one per distinct
/// configuration: the head size (`qk_rope_head_dim` under multi-head latent attention) times
/// `partial_rotary_factor` where the type has one (transformers' class defaults: Phi 0.5,
/// Phi-3 1.0, GLM-4-MoE 0.5, Qwen3-Next 0.25), rounded down as `int(head_size * factor)`; the
/// rope set of every rotating layer, or one per set when the config gives one per layer type.
/// Gemma 3's sliding layers apply their own, unscaled rotary of base `rope_local_base_freq`
/// (transformers' `Gemma3RotaryEmbedding` for `rotary_emb_local`): a second configuration
/// unless it equals the global layers' (no scaling and the same base).
pub(crate) fn rotary(cfg: &Config<'_>, arch: &Arch) -> Result<Vec<Rotary>, HfError> {
    let rotating = |l: &crate::arch::Layer| !l.nope && !l.linear;
    if !arch.layers.iter().any(rotating) {
        return Ok(Vec::new());
    }
    let head_size = match arch.attn {
        Attn::Gqa { head_dim, .. } => head_dim,
        Attn::Mla {
            qk_rope_head_dim, ..
        } => qk_rope_head_dim,
    };
    let partial = match cfg.model() {
        ModelType::Phi | ModelType::Glm4Moe => Some(0.5),
        ModelType::Phi3 => Some(1.0),
        ModelType::Qwen3Next => Some(0.25),
        _ => None,
    };
    let factor = match partial {
        None => 1.0,
        Some(default) => match cfg.number("partial_rotary_factor")? {
            Got::Value(f) if f > 0.0 && f <= 1.0 => f,
            Got::Value(f) => {
                return Err(cfg.bad(
                    "partial_rotary_factor",
                    "a number in (0, 1]",
                    &serde_json::json!(f),
                ));
            }
            // Not reported among the defaults: no byte of the circuit depends on it.
            Got::Missing | Got::Null => default,
        },
    };
    // int(head_size * factor), as the engines compute it.
    let rotary_dim = (head_size as f64 * factor).floor() as u64;
    let unscaled = RopeSet {
        rope_type: "default".to_owned(),
        factor: None,
        factor_null: false,
        original_max_position_embeddings: None,
        mrope_section: false,
    };
    let sets = &arch.rope.sets;
    let mut out: Vec<Rotary> = match sets.len() {
        0 => vec![Rotary {
            set: unscaled.clone(),
            rotary_dim,
        }],
        _ => sets
            .iter()
            .map(|set| Rotary {
                set: set.clone(),
                rotary_dim,
            })
            .collect(),
    };
    if cfg.model() == ModelType::Gemma3Text
        && sets.len() <= 1
        && arch.layers.iter().any(|l| l.sliding)
    {
        let base = |key: &'static str, default: f64| -> Result<f64, HfError> {
            Ok(match cfg.number(key)? {
                Got::Value(v) if v.is_finite() && v > 0.0 => v,
                Got::Value(v) => {
                    return Err(cfg.bad(key, "a positive number", &serde_json::json!(v)));
                }
                Got::Missing | Got::Null => default,
            })
        };
        // Gemma3TextConfig: rope_theta 1,000,000, rope_local_base_freq 10,000.
        let global = base("rope_theta", 1_000_000.0)?;
        let local = base("rope_local_base_freq", 10_000.0)?;
        let global_is_plain = out[0].set.rope_type == "default" && out[0].set.factor.is_none();
        let full_layers = arch.layers.iter().any(|l| !l.sliding && rotating(l));
        let local_rotary = Rotary {
            set: unscaled,
            rotary_dim,
        };
        if !full_layers {
            out = vec![local_rotary];
        } else if !(global_is_plain && global == local) {
            out.push(local_rotary);
        }
    }
    Ok(out)
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
    use model_facts::{RopeScaling, RopeSet};
    use serde_json::{Value, json};

    /// Qwen2.5-7B's config (max_position_embeddings 131,072, no rope scaling) with `patch`
    /// merged into it.
    fn rope(patch: Value) -> Result<RopeScaling, crate::HfError> {
        let base = include_str!("../../../data/models/qwen2.5-7b/config.json");
        let mut config: Value = serde_json::from_str(base).unwrap();
        for (k, v) in patch.as_object().unwrap() {
            config[k] = v.clone();
        }
        crate::import(&config.to_string(), "config.json").map(|i| i.facts.rope)
    }

    fn set(rope_type: &str, factor: Option<f64>, original: Option<u64>) -> RopeSet {
        RopeSet {
            rope_type: rope_type.to_owned(),
            factor,
            factor_null: false,
            original_max_position_embeddings: original,
            mrope_section: false,
        }
    }

    #[test]
    fn the_sets_are_read_as_written() {
        assert_eq!(rope(json!({})).unwrap(), RopeScaling::default());
        // transformers 5's name wins over the older one; `type` is the older `rope_type`.
        let both = json!({"rope_scaling": {"type": "yarn", "factor": 8.0},
            "rope_parameters": {"rope_type": "linear", "factor": 2.5}});
        assert_eq!(rope(both).unwrap().sets, [set("linear", Some(2.5), None)]);
        let yarn = json!({"rope_scaling": {"type": "yarn", "factor": 4.0,
            "original_max_position_embeddings": 32768}});
        assert_eq!(
            rope(yarn).unwrap().sets,
            [set("yarn", Some(4.0), Some(32768))]
        );
        // One set per attention-layer type, in file order; a null factor is kept as such.
        let nested = json!({"rope_parameters": {
            "full_attention": {"rope_type": "dynamic", "factor": null},
            "sliding_attention": {"rope_type": "default"}}});
        let got = rope(nested).unwrap().sets;
        assert_eq!(got.len(), 2);
        assert!(got[0].factor_null && got[0].factor.is_none());
        assert_eq!(got[1], set("default", None, None));
    }

    #[test]
    fn a_bad_rope_is_a_typed_error_naming_the_key() {
        for (rope_value, want) in [
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
            let e = rope(json!({ "rope_scaling": rope_value })).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("rope_scaling") && text.contains(want),
                "{text}"
            );
        }
    }
}
