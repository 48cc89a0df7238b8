//! Multimodal configs: a `config.json` whose `model_type` names a vision-language model
//! (`llama4`, `gemma3`, `mistral3`, `llava`) nests the language model's config under `text_config` and the vision tower's
//! under `vision_config`. The language model is imported from `text_config` as its own model
//! type, with the checkpoint-wide keys (`torch_dtype`, `quantization_config`, ...) that the
//! wrapper holds forwarded to it; the vision tower is counted from `vision_config`
//! ([`crate::vision`]) and held as weights only, so the circuit's weights are the whole
//! checkpoint's while the planned step is text-only.
//!
//! Invariants: every top-level key is read, forwarded, known to leave memory unchanged, or
//! refused; a key both levels set must agree; the text model's tensors carry the wrapper's
//! prefix (`language_model.`), as the checkpoint names them.

use serde_json::{Map, Value};

use crate::config::render;
use crate::error::HfError;
use crate::model::{KeyRole, ModelType};
use crate::vision::{self, VisionTower};

/// Counts a vision tower from `vision_config` (origin for messages, `vision_config`, the
/// top-level object for the projector's keys, the language model's hidden size).
type TowerReader =
    fn(&str, &Map<String, Value>, &Map<String, Value>, u64) -> Result<VisionTower, HfError>;

/// A multimodal model type.
pub(crate) struct Wrapper {
    /// The top-level `model_type`.
    pub name: &'static str,
    /// The class `architectures` must name.
    pub class: &'static str,
    /// The model types `text_config` may name; the first is the class's default when it
    /// names none.
    pub text: &'static [ModelType],
    /// Prepended to the language model's tensor names in the checkpoint.
    pub prefix: &'static str,
    /// Counts the vision tower from `vision_config`, given the language model's hidden size.
    tower: TowerReader,
    /// Top-level keys without a memory effect.
    ignored: &'static [&'static str],
    /// Top-level keys, beyond [`FORWARDED`], that hold for the language model (Gemma 3's
    /// `tie_word_embeddings`: its `lm_head` sits at the top and is tied by this key).
    forwarded: &'static [&'static str],
    /// Top-level keys the tower reader reads (the projector's).
    tower_keys: &'static [&'static str],
}

/// The keys the wrapper holds for the whole checkpoint and hands to the language model.
const FORWARDED: &[&str] = &[
    "torch_dtype",
    "dtype",
    "quantization_config",
    "compression_config",
];

/// The multimodal model types.
pub(crate) static WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "llama4",
        class: "Llama4ForConditionalGeneration",
        text: &[ModelType::Llama4Text],
        prefix: "language_model.",
        tower: vision::llama4,
        // `tie_word_embeddings` of the wrapper: its lm_head is the language model's
        // (`Llama4ForCausalLM(text_config)`), tied or not by `text_config`.
        ignored: &[
            "boi_token_index",
            "eoi_token_index",
            "image_token_index",
            "tie_word_embeddings",
        ],
        forwarded: &[],
        tower_keys: &[],
    },
    Wrapper {
        name: "gemma3",
        class: "Gemma3ForConditionalGeneration",
        text: &[ModelType::Gemma3Text],
        prefix: "language_model.",
        tower: vision::siglip_gemma3,
        ignored: &[
            "boi_token_index",
            "eoi_token_index",
            "image_token_index",
            "initializer_range",
        ],
        forwarded: &["tie_word_embeddings"],
        // The image's soft tokens: the projector pools the patches to these (no weight
        // depends on it; the engine's encoder profile does).
        tower_keys: &["mm_tokens_per_image"],
    },
    Wrapper {
        name: "mistral3",
        class: "Mistral3ForConditionalGeneration",
        text: &[ModelType::Mistral],
        prefix: "language_model.",
        tower: vision::pixtral_mistral3,
        ignored: &["image_token_index", "projector_hidden_act"],
        // vLLM builds the language model from `text_config` alone; a top-level tie applies
        // only when `text_config` does not say.
        forwarded: &["tie_word_embeddings"],
        tower_keys: &[
            "vision_feature_layer",
            "multimodal_projector_bias",
            "spatial_merge_size",
        ],
    },
    Wrapper {
        name: "llava",
        class: "LlavaForConditionalGeneration",
        // LLaVA pairs CLIP with Llama-family language models (Vicuna, Llama, Mistral); the
        // converted checkpoints name a llama text_config.
        text: &[ModelType::Llama, ModelType::Mistral, ModelType::Qwen2],
        prefix: "language_model.",
        tower: vision::clip_llava,
        ignored: &[
            "ignore_index",
            "image_token_index",
            "image_seq_length",
            "projector_hidden_act",
        ],
        // Early conversions (transformers 4.36) keep the vocabulary at the top too.
        forwarded: &["tie_word_embeddings", "vocab_size"],
        tower_keys: &[
            "vision_feature_layer",
            "multimodal_projector_bias",
            "vision_feature_select_strategy",
        ],
    },
];

impl Wrapper {
    /// The wrapper a `model_type` names.
    pub fn of(name: &str) -> Option<&'static Wrapper> {
        WRAPPERS.iter().find(|w| w.name == name)
    }
}

/// A multimodal config taken apart.
pub(crate) struct Unwrapped {
    pub wrapper: &'static Wrapper,
    /// `text_config` with the forwarded keys.
    pub text: Map<String, Value>,
    /// `vision_config` (empty when absent: the class's defaults).
    vision: Map<String, Value>,
    /// Top-level keys read or forwarded, and those ignored, in file order.
    pub keys_read: Vec<String>,
    pub keys_ignored: Vec<String>,
}

impl Unwrapped {
    /// The vision tower, for a language model of `text_hidden`; `top` is the config this was
    /// taken from (the projector reads its keys).
    pub fn tower(
        &self,
        origin: &str,
        top: &Map<String, Value>,
        text_hidden: u64,
    ) -> Result<VisionTower, HfError> {
        (self.wrapper.tower)(origin, &self.vision, top, text_hidden)
    }
}

/// Takes a multimodal config apart; `None` when `map`'s model type is not a wrapper.
pub(crate) fn unwrap(map: &Map<String, Value>, origin: &str) -> Result<Option<Unwrapped>, HfError> {
    let Some(Value::String(name)) = map.get("model_type") else {
        return Ok(None);
    };
    let Some(wrapper) = Wrapper::of(name) else {
        return Ok(None);
    };
    let object = |key: &str| -> Result<Map<String, Value>, HfError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(other) => Err(HfError::BadValue {
                origin: origin.to_owned(),
                key: key.to_owned(),
                expected: "an object (the nested model configuration)".to_owned(),
                found: render(other),
            }),
        }
    };
    let mut text = object("text_config")?;
    let vision = object("vision_config")?;
    let names: Vec<&str> = wrapper.text.iter().map(|m| m.name()).collect();
    match text.get("model_type") {
        None | Some(Value::Null) => {
            text.insert("model_type".to_owned(), Value::String(names[0].to_owned()));
        }
        Some(Value::String(t)) if names.contains(&t.as_str()) => {}
        Some(other) => {
            return Err(HfError::BadValue {
                origin: origin.to_owned(),
                key: "text_config.model_type".to_owned(),
                expected: format!(
                    "{} (the language model of {})",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(" or "),
                    wrapper.name
                ),
                found: render(other),
            });
        }
    }
    let mut keys_read = Vec::new();
    let mut keys_ignored = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "model_type" | "text_config" | "vision_config" => keys_read.push(key.clone()),
            k if wrapper.tower_keys.contains(&k) => keys_read.push(key.clone()),
            "architectures" => {
                check_architectures(wrapper, value, origin)?;
                keys_read.push(key.clone());
            }
            k if FORWARDED.contains(&k) || wrapper.forwarded.contains(&k) => {
                match text.get(k) {
                    Some(inner) if !inner.is_null() && !value.is_null() && inner != value => {
                        return Err(HfError::Contradiction {
                            origin: origin.to_owned(),
                            message: format!(
                                "`{k}` {} and `text_config.{k}` {} disagree",
                                render(value),
                                render(inner)
                            ),
                        });
                    }
                    Some(inner) if !inner.is_null() => {}
                    _ => {
                        text.insert(k.to_owned(), value.clone());
                    }
                }
                keys_read.push(key.clone());
            }
            k if k.starts_with('_') || wrapper.ignored.contains(&k) => {
                keys_ignored.push(key.clone())
            }
            // The keys every model type ignores (token ids, generation settings, ...).
            k if wrapper.text[0]
                .key(k)
                .is_some_and(|i| i.role == KeyRole::Ignored) =>
            {
                keys_ignored.push(key.clone())
            }
            _ => {
                return Err(HfError::UnknownKey {
                    origin: origin.to_owned(),
                    key: key.clone(),
                    model_type: wrapper.name.to_owned(),
                });
            }
        }
    }
    Ok(Some(Unwrapped {
        wrapper,
        text,
        vision,
        keys_read,
        keys_ignored,
    }))
}

fn check_architectures(wrapper: &Wrapper, value: &Value, origin: &str) -> Result<(), HfError> {
    let bad = || HfError::BadValue {
        origin: origin.to_owned(),
        key: "architectures".to_owned(),
        expected: format!("a list of `{}`", wrapper.class),
        found: render(value),
    };
    match value {
        Value::Null => Ok(()),
        Value::Array(items) => items.iter().try_for_each(|item| match item {
            Value::String(c) if c == wrapper.class => Ok(()),
            _ => Err(bad()),
        }),
        _ => Err(bad()),
    }
}
