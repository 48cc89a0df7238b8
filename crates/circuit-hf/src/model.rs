//! The supported model types and, for each, the `config.json` keys it knows: the keys it
//! reads (they shape the circuit), the keys it ignores (they do not change memory) and the
//! keys it refuses (they change memory in a way that is not modelled).
//!
//! Invariants: a key is listed at most once per model type (tested); every key the importer
//! reads is listed as read for that type (checked in debug builds at every read); a key that is
//! in none of the lists is unknown and refused.

use std::fmt;

/// A supported Hugging Face `model_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelType {
    /// `llama` (LlamaForCausalLM).
    Llama,
    /// `granite` (GraniteForCausalLM: Llama's layout with multipliers).
    Granite,
    /// `mistral` (MistralForCausalLM).
    Mistral,
    /// `qwen2` (Qwen2ForCausalLM).
    Qwen2,
    /// `qwen3` (Qwen3ForCausalLM).
    Qwen3,
    /// `qwen3_moe` (Qwen3MoeForCausalLM).
    Qwen3Moe,
    /// `qwen2_moe` (Qwen2MoeForCausalLM: Qwen1.5-MoE, Qwen2-57B-A14B).
    Qwen2Moe,
    /// `mixtral` (MixtralForCausalLM).
    Mixtral,
    /// `phi3` (Phi3ForCausalLM).
    Phi3,
    /// `phi` (PhiForCausalLM: Phi-1, Phi-1.5, Phi-2).
    Phi,
    /// `gemma` (GemmaForCausalLM: Gemma 1 and 1.1).
    Gemma,
    /// `gemma2` (Gemma2ForCausalLM).
    Gemma2,
    /// `gemma3_text` (Gemma3ForCausalLM).
    Gemma3Text,
    /// `deepseek_v2` (DeepseekV2ForCausalLM).
    DeepseekV2,
    /// `deepseek_v3` (DeepseekV3ForCausalLM).
    DeepseekV3,
    /// `kimi_k2` (Kimi K2: DeepSeek-V3's architecture under DeepseekV3ForCausalLM).
    KimiK2,
    /// `gpt_oss` (GptOssForCausalLM).
    GptOss,
    /// `glm4_moe` (Glm4MoeForCausalLM: GLM-4.5, GLM-4.5-Air, GLM-4.6).
    Glm4Moe,
    /// `llama4_text` (Llama4ForCausalLM; the language model of a `llama4` config's
    /// `text_config`).
    Llama4Text,
    /// `qwen3_next` (Qwen3NextForCausalLM).
    Qwen3Next,
}

impl ModelType {
    /// Every supported model type, in documentation order.
    pub const ALL: &'static [ModelType] = &[
        ModelType::Llama,
        ModelType::Granite,
        ModelType::Mistral,
        ModelType::Qwen2,
        ModelType::Qwen3,
        ModelType::Qwen3Moe,
        ModelType::Qwen2Moe,
        ModelType::Mixtral,
        ModelType::Phi3,
        ModelType::Phi,
        ModelType::Gemma,
        ModelType::Gemma2,
        ModelType::Gemma3Text,
        ModelType::DeepseekV2,
        ModelType::DeepseekV3,
        ModelType::KimiK2,
        ModelType::GptOss,
        ModelType::Glm4Moe,
        ModelType::Llama4Text,
        ModelType::Qwen3Next,
    ];

    /// The `model_type` string.
    pub fn name(self) -> &'static str {
        match self {
            ModelType::Llama => "llama",
            ModelType::Granite => "granite",
            ModelType::Mistral => "mistral",
            ModelType::Qwen2 => "qwen2",
            ModelType::Qwen3 => "qwen3",
            ModelType::Qwen3Moe => "qwen3_moe",
            ModelType::Qwen2Moe => "qwen2_moe",
            ModelType::Mixtral => "mixtral",
            ModelType::Phi3 => "phi3",
            ModelType::Phi => "phi",
            ModelType::Gemma => "gemma",
            ModelType::Gemma2 => "gemma2",
            ModelType::Gemma3Text => "gemma3_text",
            ModelType::DeepseekV2 => "deepseek_v2",
            ModelType::DeepseekV3 => "deepseek_v3",
            ModelType::KimiK2 => "kimi_k2",
            ModelType::GptOss => "gpt_oss",
            ModelType::Glm4Moe => "glm4_moe",
            ModelType::Llama4Text => "llama4_text",
            ModelType::Qwen3Next => "qwen3_next",
        }
    }

    /// The model type of a `model_type` string.
    pub fn from_name(name: &str) -> Option<ModelType> {
        ModelType::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The causal-LM class `architectures` must name (when present).
    pub fn causal_lm_class(self) -> &'static str {
        match self {
            ModelType::Llama => "LlamaForCausalLM",
            ModelType::Granite => "GraniteForCausalLM",
            ModelType::Mistral => "MistralForCausalLM",
            ModelType::Qwen2 => "Qwen2ForCausalLM",
            ModelType::Qwen3 => "Qwen3ForCausalLM",
            ModelType::Qwen3Moe => "Qwen3MoeForCausalLM",
            ModelType::Qwen2Moe => "Qwen2MoeForCausalLM",
            ModelType::Mixtral => "MixtralForCausalLM",
            ModelType::Phi3 => "Phi3ForCausalLM",
            ModelType::Phi => "PhiForCausalLM",
            ModelType::Gemma => "GemmaForCausalLM",
            ModelType::Gemma2 => "Gemma2ForCausalLM",
            ModelType::Gemma3Text => "Gemma3ForCausalLM",
            ModelType::DeepseekV2 => "DeepseekV2ForCausalLM",
            ModelType::DeepseekV3 | ModelType::KimiK2 => "DeepseekV3ForCausalLM",
            ModelType::GptOss => "GptOssForCausalLM",
            ModelType::Glm4Moe => "Glm4MoeForCausalLM",
            ModelType::Llama4Text => "Llama4ForCausalLM",
            ModelType::Qwen3Next => "Qwen3NextForCausalLM",
        }
    }

    /// Every key this model type knows, with its role: the keys common to all types first,
    /// then the type's own. A type's own entry replaces a common one of the same key
    /// (`num_nextn_predict_layers`, refused in general, is read by DeepSeek-V3).
    pub fn keys(self) -> impl Iterator<Item = &'static KeyInfo> {
        let own = self.own_keys();
        COMMON
            .iter()
            .filter(move |c| !own.iter().any(|o| o.key == c.key))
            .chain(own.iter())
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

    fn own_keys(self) -> &'static [KeyInfo] {
        match self {
            ModelType::Llama => LLAMA,
            ModelType::Granite => GRANITE,
            ModelType::Mistral => MISTRAL,
            ModelType::Qwen2 => QWEN2,
            ModelType::Qwen3 => QWEN3,
            ModelType::Qwen3Moe => QWEN3_MOE,
            ModelType::Qwen2Moe => QWEN2_MOE,
            ModelType::Mixtral => MIXTRAL,
            ModelType::Phi3 => PHI3,
            ModelType::Phi => PHI,
            ModelType::Gemma => GEMMA,
            ModelType::Gemma2 => GEMMA2,
            ModelType::Gemma3Text => GEMMA3_TEXT,
            ModelType::DeepseekV2 => DEEPSEEK_V2,
            ModelType::DeepseekV3 | ModelType::KimiK2 => DEEPSEEK_V3,
            ModelType::GptOss => GPT_OSS,
            ModelType::Glm4Moe => GLM4_MOE,
            ModelType::Llama4Text => LLAMA4_TEXT,
            ModelType::Qwen3Next => QWEN3_NEXT,
        }
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
        .chain(crate::multimodal::WRAPPERS.iter().map(|w| w.name))
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

const fn read(key: &'static str, note: &'static str) -> KeyInfo {
    KeyInfo {
        key,
        role: KeyRole::Read,
        note,
    }
}

const fn ignored(key: &'static str, note: &'static str) -> KeyInfo {
    KeyInfo {
        key,
        role: KeyRole::Ignored,
        note,
    }
}

const fn refused(key: &'static str, note: &'static str) -> KeyInfo {
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

const NO_MEMORY: &str = "does not change weights or caches";
const GENERATION: &str = "generation or training setting; no memory effect";

/// Keys every model type knows.
static COMMON: &[KeyInfo] = &[
    read("model_type", "selects the importer"),
    read(
        "architectures",
        "each entry must be the type's *ForCausalLM class (other heads are not modelled)",
    ),
    read(
        "torch_dtype",
        "default bfloat16 (absent, transformers takes the stored tensors' dtype, which the config does not say); bfloat16, float16 or float32: the dtype of unquantized tensors, activations and the KV cache unless --dtype converts; any other value is refused",
    ),
    read(
        "dtype",
        "the transformers 5 name of `torch_dtype`; same rule",
    ),
    read(
        "quantization_config",
        "the quantization format (docs/quantization.md): gptq, awq, fp8, fbgemm_fp8, mxfp4, compressed-tensors, modelopt; null plans the unquantized model; `{}` (no method named) and other formats are refused",
    ),
    read(
        "compression_config",
        "compressed-tensors' older name of `quantization_config`; same rule (both non-null is refused)",
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
    read(
        "rope_scaling",
        "read for the context an engine accepts: a `factor` of any rope type but `su`, `longrope` and `llama3` multiplies `max_position_embeddings` (under `yarn` its `original_max_position_embeddings`), except for Gemma 3; a product past 2^64 - 1 tokens is refused; no byte depends on it",
    ),
    read(
        "rope_parameters",
        "as `rope_scaling` (transformers 5 writes this one; it wins when both are given)",
    ),
    read(
        "max_position_embeddings",
        "default (and null): the type's class default, not reported among the defaults since no byte of the circuit depends on it (the planned context is `--kv-tokens`); `--engine` takes it as the default max model length",
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

const KV_HEADS: &str = "default (and null): num_attention_heads";
const HEAD_DIM_DERIVED: &str =
    "default (and null): hidden_size / num_attention_heads, which must then divide";
const HEAD_DIM_GETATTR: &str = "default: hidden_size / num_attention_heads (no class field: the attention code's getattr), which must then divide";
const LAYERS_32: &str = "default 32; at most 4096 (the largest published models have under 200)";
const ACT: &str = "default silu; silu or swish gives silu_mul, a gelu variant gelu_mul, anything else is an error";
const TIE_FALSE: &str = "default false; true stores one tensor for embed_tokens and lm_head";
const NO_BIAS: &str =
    "transformers never reads it for this type: the architecture has no such biases";
const ROUTER: &str = "training setting; no memory effect";

static LLAMA: &[KeyInfo] = &[
    read("vocab_size", "default 32000"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 11008"),
    read("num_key_value_heads", KV_HEADS),
    read("head_dim", HEAD_DIM_DERIVED),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "mlp_bias",
        "default false; true adds gate/up/down_proj biases",
    ),
];

static GRANITE: &[KeyInfo] = &[
    read("vocab_size", "default 32000"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 11008"),
    read("num_key_value_heads", KV_HEADS),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "mlp_bias",
        "default false; true adds gate/up/down_proj biases",
    ),
    ignored(
        "embedding_multiplier",
        "a factor, whatever its value: the embeddings are always multiplied into a new tensor (node `embed.scale`)",
    ),
    ignored(
        "logits_scaling",
        "a divisor, whatever its value: the logits are always divided into a new tensor (node `head.logits_scale`)",
    ),
    ignored(
        "residual_multiplier",
        "a factor folded into each residual add; no memory effect",
    ),
    ignored(
        "attention_multiplier",
        "the attention's softmax scale; no memory effect",
    ),
];

static MISTRAL: &[KeyInfo] = &[
    read("vocab_size", "default 32000"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 14336"),
    read("num_key_value_heads", "default 8"),
    read("head_dim", HEAD_DIM_DERIVED),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "sliding_window",
        "default 4096; null: no window; otherwise every layer holds at most this many tokens per sequence",
    ),
    ignored("attention_bias", NO_BIAS),
    ignored("mlp_bias", NO_BIAS),
];

static QWEN2: &[KeyInfo] = &[
    read("vocab_size", "default 151936"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 22016"),
    read(
        "num_key_value_heads",
        "default 32; null: num_attention_heads",
    ),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "use_sliding_window",
        "default false; false disables sliding_window",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; used only with use_sliding_window",
    ),
    read(
        "max_window_layers",
        "default 28; layers with index >= it slide (when layer_types is absent)",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): sliding_attention on layers >= max_window_layers",
    ),
    ignored(
        "attention_bias",
        "transformers never reads it for qwen2: q/k/v_proj always have biases, o_proj never",
    ),
    ignored("use_mrope", NO_MEMORY),
];

static QWEN3: &[KeyInfo] = &[
    read("vocab_size", "default 151936"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 22016"),
    read(
        "num_key_value_heads",
        "default 32; null: num_attention_heads",
    ),
    read("head_dim", "default 128 (Qwen3Config's own)"),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "use_sliding_window",
        "default false; false disables sliding_window",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; used only with use_sliding_window",
    ),
    read(
        "max_window_layers",
        "default 28; layers with index >= it slide (when layer_types is absent)",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): sliding_attention on layers >= max_window_layers",
    ),
];

static QWEN3_MOE: &[KeyInfo] = &[
    read("vocab_size", "default 151936"),
    read("hidden_size", "default 2048"),
    read(
        "num_hidden_layers",
        "default 24; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 32"),
    read(
        "intermediate_size",
        "default 6144; read only when a layer is dense (mlp_only_layers, decoder_sparse_step, num_experts 0)",
    ),
    read("num_key_value_heads", "default 4"),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "use_sliding_window",
        "default false; true makes every layer slide (transformers 5 reads no max_window_layers here)",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; used only with use_sliding_window",
    ),
    read("num_experts", "default 128; 0 makes every layer dense"),
    read("num_local_experts", "alias of num_experts"),
    read(
        "num_experts_per_tok",
        "default 8; read only when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 768; read only when a layer is sparse",
    ),
    read(
        "decoder_sparse_step",
        "default 1; layer i is sparse when (i + 1) % step == 0",
    ),
    read(
        "mlp_only_layers",
        "default (and null): []; these layers have a dense MLP of intermediate_size",
    ),
    ignored(
        "max_window_layers",
        "transformers 5 does not read it for qwen3_moe",
    ),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];

static QWEN2_MOE: &[KeyInfo] = &[
    read("vocab_size", "default 151936"),
    read("hidden_size", "default 2048"),
    read(
        "num_hidden_layers",
        "default 24; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 16"),
    read(
        "intermediate_size",
        "default 5632; read only when a layer is dense (mlp_only_layers, decoder_sparse_step, num_experts 0)",
    ),
    read("num_key_value_heads", "default 16"),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "qkv_bias",
        "default true: q/k/v_proj biases (o_proj has none)",
    ),
    read(
        "use_sliding_window",
        "default false; true makes the layers layer_types names slide",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; used only with use_sliding_window",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default: sliding on the even layers below max_window_layers (used only with use_sliding_window)",
    ),
    read(
        "max_window_layers",
        "default 28; used only for the default layer_types",
    ),
    read("num_experts", "default 60; 0 makes every layer dense"),
    read(
        "num_experts_per_tok",
        "default 4; read only when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 1408; read only when a layer is sparse",
    ),
    read(
        "shared_expert_intermediate_size",
        "default 5632: the shared expert of every sparse layer, scaled by the sigmoid of shared_expert_gate [1, hidden]",
    ),
    read(
        "decoder_sparse_step",
        "default 1; layer i is sparse when (i + 1) % step == 0",
    ),
    read(
        "mlp_only_layers",
        "default (and null): []; these layers have a dense MLP of intermediate_size",
    ),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];

static MIXTRAL: &[KeyInfo] = &[
    read("vocab_size", "default 32000"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("num_key_value_heads", "default 8"),
    read("head_dim", HEAD_DIM_DERIVED),
    read(
        "intermediate_size",
        "default 14336: the width of each expert",
    ),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "sliding_window",
        "default null (no window); otherwise every layer holds at most this many tokens per sequence",
    ),
    read("num_local_experts", "default 8"),
    read("num_experts", "alias of num_local_experts"),
    read("num_experts_per_tok", "default 2"),
    ignored("attention_bias", NO_BIAS),
    ignored("mlp_bias", NO_BIAS),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
    ignored("router_jitter_noise", ROUTER),
];

static PHI3: &[KeyInfo] = &[
    read("vocab_size", "default 32064"),
    read("hidden_size", "default 3072"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 8192"),
    read("num_key_value_heads", KV_HEADS),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "sliding_window",
        "default null (no window); otherwise every layer holds at most this many tokens per sequence",
    ),
    ignored("attention_bias", NO_BIAS),
    ignored("resid_pdrop", NO_MEMORY),
    ignored("embd_pdrop", NO_MEMORY),
    read(
        "original_max_position_embeddings",
        "under `longrope` rope scaling, the max model length an engine defaults to; no byte depends on it",
    ),
    read(
        "partial_rotary_factor",
        "default 1.0: the part of each head the rotary embedding turns (int(head_dim x factor)), which sizes an engine's cos/sin cache; no byte of the circuit depends on it",
    ),
];

static PHI: &[KeyInfo] = &[
    read("vocab_size", "default 51200"),
    read("hidden_size", "default 2048"),
    read(
        "num_hidden_layers",
        "default 24; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 32"),
    read(
        "intermediate_size",
        "default 8192: the width of fc1 (a plain, not gated, MLP)",
    ),
    read("num_key_value_heads", KV_HEADS),
    read("head_dim", HEAD_DIM_GETATTR),
    read(
        "hidden_act",
        "default gelu_new; a gelu variant gives gelu; anything else is refused (the plain MLP is modelled with GELU only)",
    ),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "qk_layernorm",
        "default false; true (LayerNorms of q and k per head) is not modelled and refused",
    ),
    read(
        "partial_rotary_factor",
        "default 0.5: the part of each head the rotary embedding turns (int(head_dim x factor)), which sizes an engine's cos/sin cache; no byte of the circuit depends on it",
    ),
    ignored("layer_norm_eps", NO_MEMORY),
    ignored("resid_pdrop", NO_MEMORY),
    ignored("embd_pdrop", NO_MEMORY),
];

static GEMMA: &[KeyInfo] = &[
    read("vocab_size", "default 256000"),
    read("hidden_size", "default 3072"),
    read(
        "num_hidden_layers",
        "default 28; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 16"),
    read("intermediate_size", "default 24576"),
    read("num_key_value_heads", "default 16"),
    read("head_dim", "default 256 (GemmaConfig's own)"),
    read(
        "hidden_act",
        "default gelu_pytorch_tanh (gelu_mul; `gelu` means the same); silu gives silu_mul",
    ),
    read(
        "tie_word_embeddings",
        "default true: one tensor for embed_tokens and lm_head",
    ),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    ignored(
        "hidden_activation",
        "Gemma 1.1's key; transformers 5's GemmaMLP reads hidden_act",
    ),
    ignored(
        "use_bidirectional_attention",
        "the attention mask only; no memory effect",
    ),
];

static GEMMA2: &[KeyInfo] = &[
    read("vocab_size", "default 256000"),
    read("hidden_size", "default 2304"),
    read(
        "num_hidden_layers",
        "default 26; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 8"),
    read("intermediate_size", "default 9216"),
    read("num_key_value_heads", "default 4"),
    read("head_dim", "default 256 (Gemma2Config's own)"),
    read(
        "hidden_activation",
        "default gelu_pytorch_tanh (gelu_mul); silu gives silu_mul",
    ),
    read(
        "tie_word_embeddings",
        "default true: one tensor for embed_tokens and lm_head",
    ),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; sliding layers hold at most this many tokens per sequence",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): sliding_attention on even layers",
    ),
    read(
        "final_logit_softcapping",
        "default 30.0; a number adds a softcap node after lm_head, null removes it",
    ),
    ignored(
        "hidden_act",
        "transformers' Gemma 2 reads hidden_activation instead",
    ),
    ignored("query_pre_attn_scalar", NO_MEMORY),
    ignored(
        "attn_logit_softcapping",
        "applied inside attention; no memory effect",
    ),
    ignored(
        "cache_implementation",
        "the window of each layer is modelled from sliding_window and layer_types",
    ),
    ignored(
        "sliding_window_size",
        "legacy key; transformers reads sliding_window",
    ),
    ignored("use_bidirectional_attention", NO_MEMORY),
];

static GEMMA3_TEXT: &[KeyInfo] = &[
    read("vocab_size", "default 262208"),
    read("hidden_size", "default 2304"),
    read(
        "num_hidden_layers",
        "default 26; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 8"),
    read("intermediate_size", "default 9216"),
    read("num_key_value_heads", "default 4"),
    read("head_dim", "default 256 (Gemma3TextConfig's own)"),
    read(
        "hidden_activation",
        "default gelu_pytorch_tanh (gelu_mul); silu gives silu_mul",
    ),
    read(
        "tie_word_embeddings",
        "default true: one tensor for embed_tokens and lm_head",
    ),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "sliding_window",
        "default 4096; null: no window; sliding layers hold at most this many tokens per sequence",
    ),
    read(
        "sliding_window_pattern",
        "default 6; without layer_types, layer i is full attention when (i + 1) % pattern == 0",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): from sliding_window_pattern",
    ),
    read(
        "final_logit_softcapping",
        "default null; a number adds a softcap node after lm_head",
    ),
    ignored(
        "hidden_act",
        "transformers' Gemma 3 reads hidden_activation instead",
    ),
    ignored("query_pre_attn_scalar", NO_MEMORY),
    ignored(
        "attn_logit_softcapping",
        "applied inside attention; no memory effect",
    ),
    ignored(
        "cache_implementation",
        "the window of each layer is modelled from sliding_window and layer_types",
    ),
    read(
        "rope_local_base_freq",
        "default 10000: the sliding layers' rotary base; when it differs from rope_theta or the global layers scale their rope, the sliding layers apply a rotary of their own (an engine's second cos/sin cache); no byte of the circuit depends on it",
    ),
    read(
        "rope_theta",
        "default 1000000: the global layers' rotary base, read to tell their rotary from the sliding layers'; no byte of the circuit depends on it",
    ),
    ignored("use_bidirectional_attention", NO_MEMORY),
];

static DEEPSEEK_V2: &[KeyInfo] = &[
    read("vocab_size", "default 102400"),
    read("hidden_size", "default 4096"),
    read("num_hidden_layers", LAYERS_32),
    read("num_attention_heads", "default 32"),
    read(
        "intermediate_size",
        "default 11008; read only when a layer is dense (first_k_dense_replace > 0, moe_layer_freq > 1 or n_routed_experts null)",
    ),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q_a_proj (or nothing without q LoRA), kv_a_proj_with_mqa and o_proj biases",
    ),
    read(
        "mlp_bias",
        "default false; true adds biases to the dense and shared-expert MLPs",
    ),
    read(
        "q_lora_rank",
        "default 1536; null: one q_proj instead of q_a_proj, q_a_layernorm, q_b_proj",
    ),
    read("kv_lora_rank", "default 512"),
    read("qk_nope_head_dim", "default 128"),
    read("qk_rope_head_dim", "default 64"),
    read("v_head_dim", "default 128"),
    read(
        "n_routed_experts",
        "default 64; null: every layer is dense (DeepSeek's code)",
    ),
    read("num_experts", "alias of n_routed_experts"),
    read(
        "n_shared_experts",
        "default 2; null or 0: no shared experts",
    ),
    read(
        "num_experts_per_tok",
        "no default (DeepseekV2Config's is None): required when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 1407; read only when a layer is sparse",
    ),
    read(
        "first_k_dense_replace",
        "default 0; the first k layers have a dense MLP of intermediate_size",
    ),
    read(
        "moe_layer_freq",
        "default 1 (DeepSeek's code; transformers 5 ignores it); layer i >= first_k_dense_replace is sparse when i % freq == 0",
    ),
    ignored(
        "num_key_value_heads",
        "MLA caches one latent per token; the key has no effect on weights or cache",
    ),
    ignored(
        "head_dim",
        "transformers overwrites it with qk_rope_head_dim; the head widths come from qk_*_head_dim and v_head_dim",
    ),
    ignored("n_group", NO_MEMORY),
    ignored("topk_group", NO_MEMORY),
    read(
        "topk_method",
        "default greedy; noaux_tc adds the router's f32 e_score_correction_bias [experts] on every sparse layer (Kimi-VL's language model stores it)",
    ),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("routed_scaling_factor", NO_MEMORY),
    ignored("scoring_func", NO_MEMORY),
    ignored("aux_loss_alpha", ROUTER),
    ignored("seq_aux", ROUTER),
    ignored("ep_size", "expert parallelism; total memory unchanged"),
    ignored("output_router_logits", ROUTER),
];

static DEEPSEEK_V3: &[KeyInfo] = &[
    read("vocab_size", "default 129280"),
    read("hidden_size", "default 7168"),
    read(
        "num_hidden_layers",
        "default 61; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 128"),
    read(
        "intermediate_size",
        "default 18432; read only when a layer is dense (first_k_dense_replace > 0, moe_layer_freq > 1)",
    ),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q_a_proj (or nothing without q LoRA), kv_a_proj_with_mqa and o_proj biases",
    ),
    read(
        "q_lora_rank",
        "default 1536; null: one q_proj instead of q_a_proj, q_a_layernorm, q_b_proj",
    ),
    read("kv_lora_rank", "default 512"),
    read("qk_nope_head_dim", "default 128"),
    read("qk_rope_head_dim", "default 64"),
    read("v_head_dim", "default 128"),
    read(
        "n_routed_experts",
        "default 256; the router also holds an f32 e_score_correction_bias [experts]",
    ),
    read("num_experts", "alias of n_routed_experts"),
    read(
        "n_shared_experts",
        "default 1; null or 0: no shared experts",
    ),
    read(
        "num_experts_per_tok",
        "default 8; null refused; read only when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 2048; read only when a layer is sparse",
    ),
    read(
        "first_k_dense_replace",
        "default 3; the first k layers have a dense MLP of intermediate_size",
    ),
    read(
        "moe_layer_freq",
        "default 1 (DeepSeek's code; transformers 5 ignores it); layer i >= first_k_dense_replace is sparse when i % freq == 0",
    ),
    read(
        "num_nextn_predict_layers",
        "default 1: multi-token-prediction layers after the last one (model.layers.<num_hidden_layers + j>), each a decoder layer with its own embed_tokens, enorm, hnorm, eh_proj and shared_head (norm and head); held as weights only, no KV cache",
    ),
    ignored(
        "num_key_value_heads",
        "MLA caches one latent per token; the key has no effect on weights or cache",
    ),
    ignored(
        "head_dim",
        "transformers overwrites it with qk_rope_head_dim; the head widths come from qk_*_head_dim and v_head_dim",
    ),
    ignored("n_group", NO_MEMORY),
    ignored("topk_group", NO_MEMORY),
    ignored("topk_method", NO_MEMORY),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("routed_scaling_factor", NO_MEMORY),
    ignored("scoring_func", NO_MEMORY),
    ignored("rope_interleave", NO_MEMORY),
    ignored("aux_loss_alpha", ROUTER),
    ignored("seq_aux", ROUTER),
    ignored("ep_size", "expert parallelism; total memory unchanged"),
    ignored("output_router_logits", ROUTER),
];

static GPT_OSS: &[KeyInfo] = &[
    read("vocab_size", "default 201088"),
    read("hidden_size", "default 2880"),
    read(
        "num_hidden_layers",
        "default 36; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 64"),
    read(
        "intermediate_size",
        "default 2880: the width of each expert",
    ),
    read("num_key_value_heads", "default 8"),
    read("head_dim", "default 64 (GptOssConfig's own)"),
    read("tie_word_embeddings", TIE_FALSE),
    read("attention_bias", "default true: q/k/v/o_proj biases"),
    read(
        "sliding_window",
        "default 128; null: no window; sliding layers hold at most this many tokens per sequence",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): sliding_attention on even layers",
    ),
    read("num_local_experts", "default 128"),
    read("num_experts", "alias of num_local_experts"),
    read("num_experts_per_tok", "default 4"),
    ignored(
        "experts_per_token",
        "the original release's name; transformers reads num_experts_per_tok",
    ),
    ignored(
        "hidden_act",
        "transformers' gpt-oss experts always run their clamped SwiGLU",
    ),
    ignored("swiglu_limit", NO_MEMORY),
    ignored("initial_context_length", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];

static GLM4_MOE: &[KeyInfo] = &[
    read("vocab_size", "default 151552"),
    read("hidden_size", "default 4096"),
    read(
        "num_hidden_layers",
        "default 46; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 96"),
    read(
        "intermediate_size",
        "default 10944: the dense MLP of the first first_k_dense_replace layers",
    ),
    read("num_key_value_heads", "default 8"),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v_proj biases (o_proj has none)",
    ),
    read(
        "use_qk_norm",
        "default false; true adds per-head RMS norms q_norm and k_norm [head_dim]",
    ),
    read("n_routed_experts", "default 128"),
    read(
        "n_shared_experts",
        "default 1: the shared experts, one MLP of n_shared_experts x moe_intermediate_size",
    ),
    read("num_experts_per_tok", "default 8"),
    read("moe_intermediate_size", "default 1408"),
    read(
        "first_k_dense_replace",
        "default 1: the first layers have a dense MLP of intermediate_size, the others are sparse",
    ),
    read(
        "num_nextn_predict_layers",
        "default 1 (Glm4MoeConfig's num_mtp_layers): multi-token-prediction layers after the last one (model.layers.<num_hidden_layers + j>), laid out as DeepSeek-V3's (own embed_tokens, enorm, hnorm, eh_proj, shared_head); held as weights only, no KV cache",
    ),
    read("num_mtp_layers", "alias of num_nextn_predict_layers"),
    read(
        "partial_rotary_factor",
        "default 0.5: the part of each head the rotary embedding turns (int(head_dim x factor)), which sizes an engine's cos/sin cache; no byte of the circuit depends on it",
    ),
    ignored("n_group", NO_MEMORY),
    ignored("topk_group", NO_MEMORY),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("routed_scaling_factor", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];

static LLAMA4_TEXT: &[KeyInfo] = &[
    read("vocab_size", "default 202048"),
    read("hidden_size", "default 5120"),
    read(
        "num_hidden_layers",
        "default 48; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 40"),
    read(
        "intermediate_size",
        "default 8192: the width of each routed expert and of the shared expert",
    ),
    read(
        "intermediate_size_mlp",
        "default 16384: the width of the dense MLP of the layers not in moe_layers",
    ),
    read(
        "num_key_value_heads",
        "default 8; null: num_attention_heads",
    ),
    read(
        "head_dim",
        "default 128; null: hidden_size / num_attention_heads",
    ),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read("num_local_experts", "default 16"),
    read("num_experts_per_tok", "default 1"),
    read(
        "moe_layers",
        "default (and null): every interleave_moe_layer_step-th layer, from layer step - 1; the others have a dense MLP of intermediate_size_mlp",
    ),
    read(
        "interleave_moe_layer_step",
        "default 1; used only when moe_layers is absent",
    ),
    read(
        "no_rope_layers",
        "per layer, 0 for a NoPE layer (no rotary, global attention) and nonzero for a rotary one; default (and null or []): every no_rope_layer_interval-th layer is NoPE",
    ),
    read(
        "no_rope_layer_interval",
        "default 4; used only when no_rope_layers is absent",
    ),
    read(
        "attention_chunk_size",
        "default 8192; null: no chunked layers; a chunked layer holds at most this many tokens per sequence",
    ),
    read(
        "layer_types",
        "chunked_attention or full_attention per layer; default (and null): chunked on the rotary layers when attention_chunk_size is set",
    ),
    read(
        "use_qk_norm",
        "default true: a weightless RMS norm of q and k after the rotary embedding, on the rotary layers",
    ),
    read(
        "attn_temperature_tuning",
        "default true: the NoPE layers scale q by a per-position factor",
    ),
    ignored("floor_scale", NO_MEMORY),
    ignored("attn_scale", NO_MEMORY),
    ignored("router_jitter_noise", ROUTER),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
    ignored(
        "for_llm_compressor",
        "an older release's loading hint; transformers 5 does not read it",
    ),
];

static QWEN3_NEXT: &[KeyInfo] = &[
    read("vocab_size", "default 151936"),
    read("hidden_size", "default 2048"),
    read(
        "num_hidden_layers",
        "default 48; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 16"),
    read(
        "intermediate_size",
        "default 5632; read only when a layer is dense (mlp_only_layers, decoder_sparse_step, num_experts 0)",
    ),
    read("num_key_value_heads", "default 2"),
    read("head_dim", "default 256 (Qwen3NextConfig's own)"),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases on the full-attention layers (q_proj's is 2 x heads x head_dim: query and output gate)",
    ),
    read(
        "layer_types",
        "linear_attention (Gated DeltaNet) or full_attention per layer; default (and null): full_attention when (i + 1) % full_attention_interval == 0, linear_attention otherwise",
    ),
    read(
        "full_attention_interval",
        "default 4; read only when layer_types is absent or null (Qwen3NextConfig pops it to build layer_types)",
    ),
    read(
        "linear_num_key_heads",
        "default 16; read only when a layer is linear_attention",
    ),
    read(
        "linear_num_value_heads",
        "default 32; must be a multiple of linear_num_key_heads (each key head serves a group of value heads)",
    ),
    read("linear_key_head_dim", "default 128"),
    read("linear_value_head_dim", "default 128"),
    read(
        "linear_conv_kernel_dim",
        "default 4; the convolution state holds kernel - 1 inputs per sequence",
    ),
    read("num_experts", "default 512; 0 makes every layer dense"),
    read(
        "num_experts_per_tok",
        "default 10; read only when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 512; read only when a layer is sparse",
    ),
    read(
        "shared_expert_intermediate_size",
        "default 512; at least 1: the one shared expert (mlp.shared_expert) of every sparse layer, scaled by sigmoid(mlp.shared_expert_gate [1, hidden])",
    ),
    read(
        "decoder_sparse_step",
        "default 1; layer i is sparse when (i + 1) % step == 0",
    ),
    read(
        "mlp_only_layers",
        "default (and null): []; these layers have a dense MLP of intermediate_size",
    ),
    read(
        "num_nextn_predict_layers",
        "default 1 (qwen3_next_mtp's getattr; the published checkpoints store one MTP layer and their config.json has no such key): mtp.fc, mtp.norm, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden and layers mtp.layers.<j> (full attention; sparse by j as the decoder layers are), held as weights only, no KV cache",
    ),
    ignored(
        "use_sliding_window",
        "Qwen3NextConfig has no such field and neither transformers' nor the engines' Qwen3-Next attention reads it",
    ),
    read(
        "partial_rotary_factor",
        "default 0.25: the part of each head the rotary embedding turns (int(head_dim x factor)), which sizes an engine's cos/sin cache; no byte of the circuit depends on it",
    ),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];
