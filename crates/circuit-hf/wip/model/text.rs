//! Key tables of the dense decoder types: Llama, Mistral, Qwen2, Qwen3, Phi-3, Granite, Phi.

use super::*;

pub(super) static LLAMA: &[KeyInfo] = &[
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

pub(super) static MISTRAL: &[KeyInfo] = &[
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

pub(super) static QWEN2: &[KeyInfo] = &[
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

pub(super) static QWEN3: &[KeyInfo] = &[
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

pub(super) static PHI3: &[KeyInfo] = &[
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
    ignored("original_max_position_embeddings", NO_MEMORY),
    ignored("partial_rotary_factor", NO_MEMORY),
];

pub(super) static GRANITE: &[KeyInfo] = &[
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
    ignored("embedding_multiplier", MULTIPLIER),
    ignored("residual_multiplier", MULTIPLIER),
    ignored("attention_multiplier", MULTIPLIER),
    ignored("logits_scaling", MULTIPLIER),
];

pub(super) static PHI: &[KeyInfo] = &[
    read("vocab_size", "default 51200"),
    read("hidden_size", "default 2048"),
    read("num_hidden_layers", "default 24; at most 4096 (the largest published models have under 200)"),
    read("num_attention_heads", "default 32"),
    read("intermediate_size", "default 8192: fc1's width"),
    read("num_key_value_heads", KV_HEADS),
    read("head_dim", HEAD_DIM_GETATTR),
    read(
        "hidden_act",
        "default gelu_new; a gelu variant gives the ungated gelu between fc1 and fc2, anything else is an error",
    ),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "qk_layernorm",
        "default false; true adds q_layernorm and k_layernorm (LayerNorm of head_dim, with biases)",
    ),
    ignored(
        "partial_rotary_factor",
        "rotary embedding applies to part of each head; no weight or cache effect",
    ),
    ignored("layer_norm_eps", NO_MEMORY),
    ignored("resid_pdrop", NO_MEMORY),
    ignored("embd_pdrop", NO_MEMORY),
];
