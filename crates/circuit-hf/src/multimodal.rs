//! Multimodal configs: a `config.json` whose `model_type` names a vision-language model
//! (`llama4`, `gemma3`, `mistral3`, `llava`, `llava_next`, `kimi_vl`, `qwen2_5_vl`,
//! `qwen3_vl`, `qwen3_vl_moe`) nests the language model's config under `text_config` (or,
//! for Qwen2.5-VL's first release, keeps it at the top level) and the vision tower's under
//! `vision_config`. The language model is imported from `text_config` as the model type it
//! is read as, with the checkpoint-wide keys (`torch_dtype`, `quantization_config`, ...) that
//! the wrapper holds forwarded to it and the defaults of the wrapper's own text configuration
//! class where they differ; the vision tower is counted from `vision_config`
//! ([`crate::vision`], [`crate::qwen_vision`], [`crate::moonvit`]) and held as weights only, so
//! the circuit's weights are the whole checkpoint's while the planned step is text-only.
//!
//! Invariants: every top-level key is read, forwarded, known to leave memory unchanged, or
//! refused; a key both levels set must agree; the text model's tensors carry the wrapper's
//! names (`language_model.`, `model.language_model.`), as the checkpoint names them.

use serde_json::{Map, Value};

use crate::arch::{Arch, MoeNames};
use crate::config::render;
use crate::error::HfError;
use crate::model::{KeyRole, ModelType};
use crate::vision::{self, VisionTower};

/// Counts a vision tower from `vision_config` (origin for messages, `vision_config`, the
/// top-level object for the projector's keys, the language model's hidden size).
type TowerReader =
    fn(&str, &Map<String, Value>, &Map<String, Value>, u64) -> Result<VisionTower, HfError>;

/// A language model a wrapper's `text_config` may hold.
pub(crate) struct TextModel {
    /// Its `model_type` as `text_config` writes it (the wrapper's own text class's, e.g.
    /// `qwen3_vl_text`, or a causal LM's).
    pub name: &'static str,
    /// The model type it is read as (keys, tensors, defaults).
    pub read_as: ModelType,
    /// Defaults of the wrapper's text configuration class that differ from `read_as`'s, as
    /// JSON values; an absent key takes them and is reported as a default.
    pub defaults: &'static [(&'static str, &'static str)],
}

/// A text model read as its own type, with that type's defaults.
const fn own(m: ModelType, name: &'static str) -> TextModel {
    TextModel {
        name,
        read_as: m,
        defaults: &[],
    }
}

/// A multimodal model type.
pub(crate) struct Wrapper {
    /// The top-level `model_type`.
    pub name: &'static str,
    /// The class `architectures` must name.
    pub class: &'static str,
    /// The language models `text_config` may hold; the first is the class's default when it
    /// names none.
    pub text: &'static [TextModel],
    /// How the checkpoint names the language model's tensors: a leading `from` of the text
    /// model's own names (`model.`, or empty for every name) is replaced by `to`.
    pub rename: (&'static str, &'static str),
    /// Counts the vision tower from `vision_config`, given the language model's hidden size.
    tower: TowerReader,
    /// Top-level keys without a memory effect.
    ignored: &'static [&'static str],
    /// Top-level keys, beyond [`FORWARDED`], that hold for the language model (Gemma 3's
    /// `tie_word_embeddings`: its `lm_head` sits at the top and is tied by this key).
    forwarded: &'static [&'static str],
    /// Top-level keys the tower reader reads (the projector's).
    tower_keys: &'static [&'static str],
    /// The language model's keys may sit at the top level when there is no `text_config`
    /// (Qwen2.5-VL's first release; transformers' `Qwen2_5_VLConfig` builds its text config
    /// from them).
    flat_text: bool,
    /// The modalities the tower serves (a multimodal engine builds it unless every one of
    /// them is limited to 0 items per prompt).
    pub modalities: &'static [&'static str],
    /// How the checkpoint stores the language model where its wrapper differs from the
    /// text model type's own checkpoints (Qwen3-VL-MoE's fused experts).
    adjust: fn(&mut Arch),
}

/// The keys the wrapper holds for the whole checkpoint and hands to the language model.
const FORWARDED: &[&str] = &[
    "torch_dtype",
    "dtype",
    "quantization_config",
    "compression_config",
];

/// Token ids Qwen's multimodal configs keep at the top level.
const QWEN_VL_TOKEN_IDS: &[&str] = &[
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    // Written by Qwen2.5-VL's first release; no class field.
    "vision_token_id",
];

/// The language model as stored.
fn as_stored(_: &mut Arch) {}

/// Qwen3-VL-MoE stores each layer's experts as one tensor per projection
/// (`mlp.experts.gate_up_proj`, `mlp.experts.down_proj`; vLLM's qwen3_vl_moe.py transposes
/// and splits them while loading, which changes no byte).
fn fused_experts(arch: &mut Arch) {
    if let Some(m) = &mut arch.moe {
        m.names = MoeNames::FusedMlp;
    }
}

/// The multimodal model types.
pub(crate) static WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "llama4",
        class: "Llama4ForConditionalGeneration",
        text: &[own(ModelType::Llama4Text, "llama4_text")],
        rename: ("", "language_model."),
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
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "gemma3",
        class: "Gemma3ForConditionalGeneration",
        text: &[own(ModelType::Gemma3Text, "gemma3_text")],
        rename: ("", "language_model."),
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
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "mistral3",
        class: "Mistral3ForConditionalGeneration",
        text: &[own(ModelType::Mistral, "mistral")],
        rename: ("", "language_model."),
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
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "llava",
        class: "LlavaForConditionalGeneration",
        // LLaVA pairs CLIP with Llama-family language models (Vicuna, Llama, Mistral); the
        // converted checkpoints name a llama text_config.
        text: &[
            own(ModelType::Llama, "llama"),
            own(ModelType::Mistral, "mistral"),
            own(ModelType::Qwen2, "qwen2"),
        ],
        rename: ("", "language_model."),
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
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "llava_next",
        class: "LlavaNextForConditionalGeneration",
        // LLaVA-NeXT (llava-v1.6: Vicuna, Mistral, Yi), IBM's Granite Vision (granite).
        text: &[
            own(ModelType::Llama, "llama"),
            own(ModelType::Mistral, "mistral"),
            own(ModelType::Qwen2, "qwen2"),
            own(ModelType::Granite, "granite"),
        ],
        rename: ("", "language_model."),
        tower: vision::clip_or_siglip_llava_next,
        ignored: &[
            "ignore_index",
            "image_token_index",
            "image_seq_length",
            "projector_hidden_act",
            // Granite Vision's; vLLM builds `image_newline` whatever it says.
            "use_image_newline_parameter",
        ],
        forwarded: &["tie_word_embeddings", "vocab_size"],
        tower_keys: &[
            "vision_feature_layer",
            "multimodal_projector_bias",
            "vision_feature_select_strategy",
            "image_grid_pinpoints",
        ],
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "kimi_vl",
        class: "KimiVLForConditionalGeneration",
        // vLLM 0.19's KimiVLConfig reads text_config as transformers' DeepseekV2Config
        // whatever model_type it names (transformers_utils/configs/kimi_vl.py), and builds
        // DeepseekV2ForCausalLM (kimi_vl.py); the published config names deepseek_v3.
        text: &[
            own(ModelType::DeepseekV2, "deepseek_v2"),
            TextModel {
                name: "deepseek_v3",
                read_as: ModelType::DeepseekV2,
                defaults: &[],
            },
        ],
        rename: ("", "language_model."),
        tower: crate::moonvit::moonvit_kimi_vl,
        ignored: &["ignore_index", "media_placeholder_token_id"],
        forwarded: &["tie_word_embeddings"],
        tower_keys: &[],
        flat_text: false,
        modalities: &["image"],
        adjust: as_stored,
    },
    Wrapper {
        name: "qwen2_5_vl",
        class: "Qwen2_5_VLForConditionalGeneration",
        // Qwen2_5_VLTextConfig (transformers 4.57.6): Qwen2's keys with the 72B's sizes as
        // defaults; vLLM builds Qwen2ForCausalLM from it (qwen2_5_vl.py).
        text: &[TextModel {
            name: "qwen2_5_vl_text",
            read_as: ModelType::Qwen2,
            defaults: &[
                ("vocab_size", "152064"),
                ("hidden_size", "8192"),
                ("intermediate_size", "29568"),
                ("num_hidden_layers", "80"),
                ("num_attention_heads", "64"),
                ("num_key_value_heads", "8"),
                ("max_window_layers", "80"),
            ],
        }],
        // The first release stores the language model as Qwen2's own checkpoints do
        // (`model.layers.*`, `lm_head`); later saves under `model.language_model.`, the same
        // bytes (vLLM maps both, `hf_to_vllm_mapper`).
        rename: ("", ""),
        tower: crate::qwen_vision::qwen2_5_vl,
        ignored: QWEN_VL_TOKEN_IDS,
        forwarded: &["tie_word_embeddings"],
        tower_keys: &[],
        flat_text: true,
        modalities: &["image", "video"],
        adjust: as_stored,
    },
    Wrapper {
        name: "qwen3_vl",
        class: "Qwen3VLForConditionalGeneration",
        // Qwen3VLTextConfig: Qwen3's keys; its defaults differ only in the context.
        text: &[TextModel {
            name: "qwen3_vl_text",
            read_as: ModelType::Qwen3,
            defaults: &[("max_position_embeddings", "128000")],
        }],
        rename: ("model.", "model.language_model."),
        tower: crate::qwen_vision::qwen3_vl,
        ignored: QWEN_VL_TOKEN_IDS,
        forwarded: &["tie_word_embeddings"],
        tower_keys: &[],
        flat_text: false,
        modalities: &["image", "video"],
        adjust: as_stored,
    },
    Wrapper {
        name: "qwen3_vl_moe",
        class: "Qwen3VLMoeForConditionalGeneration",
        // Qwen3VLMoeTextConfig: Qwen3-MoE's keys with Qwen1.5-MoE-like defaults.
        text: &[TextModel {
            name: "qwen3_vl_moe_text",
            read_as: ModelType::Qwen3Moe,
            defaults: &[
                ("intermediate_size", "5632"),
                ("num_attention_heads", "16"),
                ("num_key_value_heads", "16"),
                ("moe_intermediate_size", "1408"),
                ("num_experts_per_tok", "4"),
                ("num_experts", "60"),
                ("max_position_embeddings", "128000"),
            ],
        }],
        rename: ("model.", "model.language_model."),
        tower: crate::qwen_vision::qwen3_vl_moe,
        ignored: QWEN_VL_TOKEN_IDS,
        forwarded: &["tie_word_embeddings"],
        tower_keys: &[],
        flat_text: false,
        modalities: &["image", "video"],
        adjust: fused_experts,
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
    /// `text_config` (or the top-level text keys) with the forwarded keys, the wrapper's text
    /// class defaults, and `model_type` the type it is read as.
    pub text: Map<String, Value>,
    /// Whether the text keys sit at the top level (no `text_config`).
    pub flat: bool,
    /// `vision_config` (empty when absent: the class's defaults).
    vision: Map<String, Value>,
    /// Top-level keys read or forwarded, and those ignored, in file order (a flat config's
    /// text keys are the text import's to report).
    pub keys_read: Vec<String>,
    pub keys_ignored: Vec<String>,
    /// The wrapper's text class defaults the text took, with the value used.
    pub text_defaults: Vec<(String, String)>,
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

    /// The language model's architecture as this wrapper's checkpoints store it.
    pub fn adjust(&self, arch: &mut Arch) {
        (self.wrapper.adjust)(arch);
    }
}

/// The modalities a multimodal config's tower serves (`["image"]`, `["image", "video"]`);
/// empty for a text-only config or one that is not valid JSON (the import says why).
pub fn modalities(text: &str) -> &'static [&'static str] {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return &[];
    };
    match map.get("model_type") {
        Some(Value::String(name)) => Wrapper::of(name).map_or(&[], |w| w.modalities),
        _ => &[],
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
    let object = |key: &str| -> Result<Option<Map<String, Value>>, HfError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(other) => Err(HfError::BadValue {
                origin: origin.to_owned(),
                key: key.to_owned(),
                expected: "an object (the nested model configuration)".to_owned(),
                found: render(other),
            }),
        }
    };
    let nested_text = object("text_config")?;
    let flat = wrapper.flat_text && nested_text.is_none();
    let mut text = nested_text.unwrap_or_default();
    let vision = object("vision_config")?.unwrap_or_default();
    let names: Vec<&str> = wrapper.text.iter().map(|m| m.name).collect();
    // A flat config's text model is the wrapper's (its top-level `model_type` is the
    // wrapper's own).
    let text_model = match (flat, text.get("model_type")) {
        (true, _) | (false, None | Some(Value::Null)) => &wrapper.text[0],
        (false, Some(Value::String(t))) if names.contains(&t.as_str()) => wrapper
            .text
            .iter()
            .find(|m| m.name == t)
            .expect("the name was found among the wrapper's"),
        (false, Some(other)) => {
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
    };
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
            k if k.starts_with('_') || wrapper.ignored.contains(&k) => {
                keys_ignored.push(key.clone())
            }
            // Every other top-level key of a flat config is the language model's: its
            // import reads, ignores or refuses it.
            k if flat => {
                text.insert(k.to_owned(), value.clone());
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
            // The keys every model type ignores (token ids, generation settings, ...).
            k if text_model
                .read_as
                .key(k)
                .is_some_and(|i| i.role == KeyRole::Ignored) =>
            {
                keys_ignored.push(key.clone())
            }
            // A re-saved flat config (transformers keeps the first release's top-level keys
            // beside the `text_config` it writes): `text_config` wins, as the class reads it
            // (`Qwen2_5_VLConfig.__getattribute__`); the two must not disagree.
            k if wrapper.flat_text && text_model.read_as.key(k).is_some() => {
                if let Some(inner) = text.get(k)
                    && inner != value
                {
                    return Err(HfError::Contradiction {
                        origin: origin.to_owned(),
                        message: format!(
                            "`{k}` {} and `text_config.{k}` {} disagree",
                            render(value),
                            render(inner)
                        ),
                    });
                }
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
    text.insert(
        "model_type".to_owned(),
        Value::String(text_model.read_as.name().to_owned()),
    );
    let mut text_defaults = Vec::new();
    for (key, value) in text_model.defaults {
        if !text.contains_key(*key) {
            let v: Value = serde_json::from_str(value).expect("a wrapper default is JSON");
            text.insert((*key).to_owned(), v);
            text_defaults.push(((*key).to_owned(), (*value).to_owned()));
        }
    }
    Ok(Some(Unwrapped {
        wrapper,
        text,
        flat,
        vision,
        keys_read,
        keys_ignored,
        text_defaults,
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
