//! The supported model types and, for each, the `config.json` keys it knows: the keys it
//! reads (they shape the circuit), the keys it ignores (they do not change memory) and the
//! keys it refuses (they change memory in a way that is not modelled).
//!
//! Invariants: a key is listed at most once per model type (tested); every key the importer
//! reads is listed as read for that type (checked in debug builds at every read); a key that is
//! in none of the lists is unknown and refused.

use std::fmt;

mod deepseek;
mod gemma;
mod moe;
mod multimodal;
mod qwen3_next;
mod text;
mod vision;

macro_rules! model_types {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, $class:literal, $table:path;)*) => {
        /// A Hugging Face `model_type` the importer knows: a language model it imports
        /// ([`ModelType::ALL`]) or a vision tower it counts inside a multimodal config
        /// ([`ModelType::VISION`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ModelType {
            $($(#[doc = $doc])* $variant,)*
        }

        impl ModelType {
            /// The `model_type` string.
            pub fn name(self) -> &'static str {
                match self {
                    $(ModelType::$variant => $name,)*
                }
            }

            /// The class `architectures` must name (when present): the causal LM, or for a
            /// multimodal type the conditional-generation model around it.
            pub fn causal_lm_class(self) -> &'static str {
                match self {
                    $(ModelType::$variant => $class,)*
                }
            }

            fn own_keys(self) -> &'static [KeyInfo] {
                match self {
                    $(ModelType::$variant => $table,)*
                }
            }
        }
    };
}

model_types! {
    /// `llama` (LlamaForCausalLM).
    Llama = "llama", "LlamaForCausalLM", text::LLAMA;
    /// `mistral` (MistralForCausalLM).
    Mistral = "mistral", "MistralForCausalLM", text::MISTRAL;
    /// `qwen2` (Qwen2ForCausalLM).
    Qwen2 = "qwen2", "Qwen2ForCausalLM", text::QWEN2;
    /// `qwen3` (Qwen3ForCausalLM).
    Qwen3 = "qwen3", "Qwen3ForCausalLM", text::QWEN3;
    /// `qwen3_moe` (Qwen3MoeForCausalLM).
    Qwen3Moe = "qwen3_moe", "Qwen3MoeForCausalLM", moe::QWEN3_MOE;
    /// `mixtral` (MixtralForCausalLM).
    Mixtral = "mixtral", "MixtralForCausalLM", moe::MIXTRAL;
    /// `phi3` (Phi3ForCausalLM).
    Phi3 = "phi3", "Phi3ForCausalLM", text::PHI3;
    /// `gemma2` (Gemma2ForCausalLM).
    Gemma2 = "gemma2", "Gemma2ForCausalLM", gemma::GEMMA2;
    /// `deepseek_v2` (DeepseekV2ForCausalLM).
    DeepseekV2 = "deepseek_v2", "DeepseekV2ForCausalLM", deepseek::DEEPSEEK_V2;
    /// `gemma` (GemmaForCausalLM).
    Gemma = "gemma", "GemmaForCausalLM", gemma::GEMMA;
    /// `gemma3_text` (Gemma3ForCausalLM).
    Gemma3Text = "gemma3_text", "Gemma3ForCausalLM", gemma::GEMMA3_TEXT;
    /// `gemma3` (Gemma3ForConditionalGeneration): a `gemma3_text` language model and a SigLIP
    /// vision tower.
    Gemma3 = "gemma3", "Gemma3ForConditionalGeneration", multimodal::GEMMA3;
    /// `deepseek_v3` (DeepseekV3ForCausalLM).
    DeepseekV3 = "deepseek_v3", "DeepseekV3ForCausalLM", deepseek::DEEPSEEK_V3;
    /// `kimi_k2` (DeepseekV3ForCausalLM: DeepSeek-V3's architecture under Moonshot's name).
    KimiK2 = "kimi_k2", "DeepseekV3ForCausalLM", deepseek::DEEPSEEK_V3;
    /// `gpt_oss` (GptOssForCausalLM).
    GptOss = "gpt_oss", "GptOssForCausalLM", moe::GPT_OSS;
    /// `qwen3_next` (Qwen3NextForCausalLM).
    Qwen3Next = "qwen3_next", "Qwen3NextForCausalLM", qwen3_next::QWEN3_NEXT;
    /// `llama4_text` (Llama4ForCausalLM).
    Llama4Text = "llama4_text", "Llama4ForCausalLM", moe::LLAMA4_TEXT;
    /// `llama4` (Llama4ForConditionalGeneration): a `llama4_text` language model and its
    /// vision model.
    Llama4 = "llama4", "Llama4ForConditionalGeneration", multimodal::LLAMA4;
    /// `glm4_moe` (Glm4MoeForCausalLM).
    Glm4Moe = "glm4_moe", "Glm4MoeForCausalLM", moe::GLM4_MOE;
    /// `qwen2_moe` (Qwen2MoeForCausalLM).
    Qwen2Moe = "qwen2_moe", "Qwen2MoeForCausalLM", moe::QWEN2_MOE;
    /// `granite` (GraniteForCausalLM).
    Granite = "granite", "GraniteForCausalLM", text::GRANITE;
    /// `phi` (PhiForCausalLM: Phi-1, Phi-1.5, Phi-2).
    Phi = "phi", "PhiForCausalLM", text::PHI;
    /// `mistral3` (Mistral3ForConditionalGeneration): a text model and a Pixtral vision tower.
    Mistral3 = "mistral3", "Mistral3ForConditionalGeneration", multimodal::MISTRAL3;
    /// `llava` (LlavaForConditionalGeneration): a text model and a CLIP (or SigLIP) vision
    /// tower.
    Llava = "llava", "LlavaForConditionalGeneration", multimodal::LLAVA;
    /// `siglip_vision_model` (a vision tower of `gemma3`, `llava`).
    SiglipVision = "siglip_vision_model", "SiglipVisionModel", vision::SIGLIP;
    /// `clip_vision_model` (a vision tower of `llava`).
    ClipVision = "clip_vision_model", "CLIPVisionModel", vision::CLIP;
    /// `pixtral` (the vision tower of `mistral3`).
    Pixtral = "pixtral", "PixtralVisionModel", vision::PIXTRAL;
    /// `llama4_vision_model` (the vision model of `llama4`).
    Llama4Vision = "llama4_vision_model", "Llama4VisionModel", vision::LLAMA4_VISION;
}

impl ModelType {
    /// Every language model type the importer imports, in documentation order.
    pub const ALL: &'static [ModelType] = &[
        ModelType::Llama,
        ModelType::Mistral,
        ModelType::Qwen2,
        ModelType::Qwen3,
        ModelType::Qwen3Moe,
        ModelType::Mixtral,
        ModelType::Phi3,
        ModelType::Gemma2,
        ModelType::DeepseekV2,
        ModelType::Gemma,
        ModelType::Gemma3Text,
        ModelType::Gemma3,
        ModelType::DeepseekV3,
        ModelType::KimiK2,
        ModelType::GptOss,
        ModelType::Qwen3Next,
        ModelType::Llama4Text,
        ModelType::Llama4,
        ModelType::Glm4Moe,
        ModelType::Qwen2Moe,
        ModelType::Granite,
        ModelType::Phi,
        ModelType::Mistral3,
        ModelType::Llava,
    ];

    /// The vision towers counted (as weights) inside a multimodal config's `vision_config`;
    /// never imported on their own.
    pub const VISION: &'static [ModelType] = &[
        ModelType::SiglipVision,
        ModelType::ClipVision,
        ModelType::Pixtral,
        ModelType::Llama4Vision,
    ];

    /// The language model type of a `model_type` string (vision towers are not).
    pub fn from_name(name: &str) -> Option<ModelType> {
        ModelType::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The vision tower of a `vision_config`'s `model_type` string.
    pub fn vision_from_name(name: &str) -> Option<ModelType> {
        ModelType::VISION.iter().copied().find(|m| m.name() == name)
    }

    /// A multimodal type: a language model in `text_config` and a vision tower in
    /// `vision_config`.
    pub fn is_multimodal(self) -> bool {
        matches!(
            self,
            ModelType::Gemma3 | ModelType::Llama4 | ModelType::Mistral3 | ModelType::Llava
        )
    }

    /// Every key this model type knows, with its role: the keys common to all types (but those
    /// the type overrides) first, then the type's own.
    pub fn keys(self) -> impl Iterator<Item = &'static KeyInfo> {
        let own = self.own_keys();
        COMMON
            .iter()
            .filter(move |c| !own.iter().any(|o| o.key == c.key))
            .chain(own.iter())
    }

    /// The keys every type knows ([`ModelType::keys`] lists them unless the type overrides
    /// one, as the multimodal types read `text_config`).
    pub fn common_keys() -> &'static [KeyInfo] {
        COMMON
    }

    /// How this model type treats `key`; `None` for an unknown key. Keys starting with `_`
    /// (`_name_or_path`, `_commit_hash`, ...) are private metadata and ignored.
    pub fn key(self, key: &str) -> Option<&'static KeyInfo> {
        if key.starts_with('_') {
            return Some(&PRIVATE);
        }
        self.keys().find(|k| k.key == key)
    }

    /// Whether the importer may read `key` for this type.
    pub(crate) fn reads(self, key: &str) -> bool {
        self.key(key).is_some_and(|k| k.role == KeyRole::Read)
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The supported model types, comma-separated, for messages.
pub fn supported_list() -> String {
    ModelType::ALL
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the importer does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// Read: its value shapes the circuit (validated; a default applies when it is absent).
    Read,
    /// Ignored: it does not change weights, activations or caches.
    Ignored,
    /// Refused (with some values, see the note): it changes memory in a way not modelled.
    Refused,
}

/// A key of `config.json` and what the importer does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key.
    pub key: &'static str,
    /// Read, ignored or refused.
    pub role: KeyRole,
    /// Why, and for read keys the default relied on.
    pub note: &'static str,
}

pub(super) const fn read(key: &'static str, note: &'static str) -> KeyInfo {
    KeyInfo {
        key,
        role: KeyRole::Read,
        note,
    }
}

pub(super) const fn ignored(key: &'static str, note: &'static str) -> KeyInfo {
    KeyInfo {
        key,
        role: KeyRole::Ignored,
        note,
    }
}

pub(super) const fn refused(key: &'static str, note: &'static str) -> KeyInfo {
    KeyInfo {
        key,
        role: KeyRole::Refused,
        note,
    }
}

static PRIVATE: KeyInfo = ignored(
    "_*",
    "private metadata (`_name_or_path`, `_commit_hash`, ...)",
);

pub(super) const NO_MEMORY: &str = "does not change weights or caches";
pub(super) const GENERATION: &str = "generation or training setting; no memory effect";

/// Keys every model type knows.
static COMMON: &[KeyInfo] = &[
    read("model_type", "selects the importer"),
    read(
        "architectures",
        "each entry must be the type's *ForCausalLM class (other heads are not modelled)",
    ),
    read(
        "torch_dtype",
        "bfloat16, float16 or float32 accepted (the checkpoint's storage; weights are planned in bf16); any other value is refused",
    ),
    read(
        "dtype",
        "the transformers 5 name of `torch_dtype`; same rule",
    ),
    refused(
        "quantization_config",
        "changes weight bytes and is not modelled",
    ),
    refused(
        "compression_config",
        "changes weight bytes and is not modelled",
    ),
    refused(
        "text_config",
        "a nested (multimodal) model configuration is not modelled",
    ),
    refused(
        "vision_config",
        "a nested (multimodal) model configuration is not modelled",
    ),
    refused(
        "audio_config",
        "a nested (multimodal) model configuration is not modelled",
    ),
    refused(
        "pruned_heads",
        "refused unless empty: pruned heads change weight shapes",
    ),
    refused(
        "num_nextn_predict_layers",
        "refused unless 0: multi-token-prediction layers add weights",
    ),
    ignored("transformers_version", NO_MEMORY),
    ignored("auto_map", NO_MEMORY),
    ignored("use_cache", "the planner always plans the KV cache"),
    ignored("bos_token_id", NO_MEMORY),
    ignored("eos_token_id", NO_MEMORY),
    ignored("pad_token_id", NO_MEMORY),
    ignored("sep_token_id", NO_MEMORY),
    ignored("decoder_start_token_id", NO_MEMORY),
    ignored("initializer_range", NO_MEMORY),
    ignored("rms_norm_eps", NO_MEMORY),
    ignored("rope_theta", NO_MEMORY),
    ignored("rope_scaling", NO_MEMORY),
    ignored("rope_parameters", NO_MEMORY),
    ignored(
        "max_position_embeddings",
        "the context length is the planner's `--kv-tokens`, not a config key",
    ),
    ignored("attention_dropout", NO_MEMORY),
    ignored("pretraining_tp", NO_MEMORY),
    ignored("return_dict", NO_MEMORY),
    ignored("output_hidden_states", NO_MEMORY),
    ignored("output_attentions", NO_MEMORY),
    ignored("torchscript", NO_MEMORY),
    ignored("use_bfloat16", NO_MEMORY),
    ignored("tf_legacy_loss", NO_MEMORY),
    ignored("tie_encoder_decoder", NO_MEMORY),
    ignored("is_decoder", NO_MEMORY),
    ignored("is_encoder_decoder", NO_MEMORY),
    ignored("add_cross_attention", NO_MEMORY),
    ignored("cross_attention_hidden_size", NO_MEMORY),
    ignored("chunk_size_feed_forward", NO_MEMORY),
    ignored("finetuning_task", NO_MEMORY),
    ignored("id2label", NO_MEMORY),
    ignored("label2id", NO_MEMORY),
    ignored("num_labels", NO_MEMORY),
    ignored("tokenizer_class", NO_MEMORY),
    ignored("prefix", NO_MEMORY),
    ignored("task_specific_params", NO_MEMORY),
    ignored("problem_type", NO_MEMORY),
    ignored("max_length", GENERATION),
    ignored("min_length", GENERATION),
    ignored("do_sample", GENERATION),
    ignored("early_stopping", GENERATION),
    ignored("num_beams", GENERATION),
    ignored("num_beam_groups", GENERATION),
    ignored("diversity_penalty", GENERATION),
    ignored("temperature", GENERATION),
    ignored("top_k", GENERATION),
    ignored("top_p", GENERATION),
    ignored("typical_p", GENERATION),
    ignored("repetition_penalty", GENERATION),
    ignored("length_penalty", GENERATION),
    ignored("no_repeat_ngram_size", GENERATION),
    ignored("encoder_no_repeat_ngram_size", GENERATION),
    ignored("bad_words_ids", GENERATION),
    ignored("num_return_sequences", GENERATION),
    ignored("output_scores", GENERATION),
    ignored("return_dict_in_generate", GENERATION),
    ignored("forced_bos_token_id", GENERATION),
    ignored("forced_eos_token_id", GENERATION),
    ignored("remove_invalid_values", GENERATION),
    ignored("exponential_decay_length_penalty", GENERATION),
    ignored("suppress_tokens", GENERATION),
    ignored("begin_suppress_tokens", GENERATION),
];

pub(super) const KV_HEADS: &str = "default (and null): num_attention_heads";
pub(super) const HEAD_DIM_DERIVED: &str =
    "default (and null): hidden_size / num_attention_heads, which must then divide";
pub(super) const HEAD_DIM_GETATTR: &str = "default: hidden_size / num_attention_heads (no class field: the attention code's getattr), which must then divide";
pub(super) const LAYERS_32: &str = "default 32; at most 4096 (the largest published models have under 200)";
pub(super) const ACT: &str = "default silu; silu or swish gives silu_mul, a gelu variant gelu_mul, anything else is an error";
pub(super) const TIE_FALSE: &str = "default false; true stores one tensor for embed_tokens and lm_head";
pub(super) const NO_BIAS: &str =
    "transformers never reads it for this type: the architecture has no such biases";
pub(super) const ROUTER: &str = "training setting; no memory effect";
pub(super) const MULTIPLIER: &str =
    "a scalar applied in the forward pass; no weight or cache effect";
pub(super) const MTP_ALIAS: &str = "alias of num_nextn_predict_layers";
