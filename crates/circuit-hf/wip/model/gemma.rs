//! Key tables of the Gemma types: Gemma, Gemma 2, Gemma 3 (text).

use super::*;

pub(super) static GEMMA2: &[KeyInfo] = &[
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

pub(super) static GEMMA: &[KeyInfo] = &[
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
        "default gelu_pytorch_tanh (gelu_mul; gelu means the same); silu gives silu_mul",
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
        "transformers 5's Gemma reads hidden_act instead",
    ),
    ignored("use_bidirectional_attention", NO_MEMORY),
];

pub(super) static GEMMA3_TEXT: &[KeyInfo] = &[
    read("vocab_size", "default 262208 (the multimodal models'; Gemma-3-1B has 262144)"),
    read("hidden_size", "default 2304"),
    read(
        "num_hidden_layers",
        "default 26; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 8"),
    read("intermediate_size", "default 9216"),
    read("num_key_value_heads", "default 4"),
    read(
        "head_dim",
        "default 256 (Gemma3TextConfig's own, not hidden_size / num_attention_heads)",
    ),
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
        "default 6: layer i slides unless (i + 1) % pattern == 0; read only when layer_types is absent",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): from sliding_window_pattern",
    ),
    read(
        "use_bidirectional_attention",
        "default false; true makes the window sliding_window / 2 + 1 (transformers' __post_init__)",
    ),
    read(
        "final_logit_softcapping",
        "default null (no softcap node); a number adds a softcap node after lm_head",
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
    ignored("rope_local_base_freq", NO_MEMORY),
    ignored(
        "cache_implementation",
        "the window of each layer is modelled from sliding_window and layer_types",
    ),
];
