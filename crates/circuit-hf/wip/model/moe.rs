//! Key tables of the mixture-of-experts types: Qwen3-MoE, Mixtral, Qwen2-MoE, gpt-oss,
//! GLM-4-MoE, Llama 4 (text).

use super::*;

pub(super) static QWEN3_MOE: &[KeyInfo] = &[
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

pub(super) static MIXTRAL: &[KeyInfo] = &[
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

pub(super) static QWEN2_MOE: &[KeyInfo] = &[
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
    read(
        "num_key_value_heads",
        "default 16; null: num_attention_heads",
    ),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "qkv_bias",
        "default true: q/k/v_proj biases (o_proj never has one)",
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
        "default 28; with use_sliding_window, even layers below it slide (when layer_types is absent)",
    ),
    read(
        "layer_types",
        "full_attention or sliding_attention per layer; default (and null): from use_sliding_window and max_window_layers",
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
        "default 5632: the shared expert's width, gated by shared_expert_gate; read only when a layer is sparse",
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

pub(super) static GPT_OSS: &[KeyInfo] = &[
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
    read(
        "num_key_value_heads",
        "default 8; null: num_attention_heads",
    ),
    read(
        "head_dim",
        "default 64; null: hidden_size / num_attention_heads, which must then divide",
    ),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default true: q/k/v/o_proj biases; every layer also has its sinks [num_attention_heads]",
    ),
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
        "hidden_act",
        "the experts apply gpt-oss's clamped SwiGLU (clamped_swiglu) whatever it says",
    ),
    ignored("swiglu_alpha", NO_MEMORY),
    ignored("swiglu_limit", NO_MEMORY),
    ignored(
        "experts_per_token",
        "legacy key of the original export; transformers and vLLM read num_experts_per_tok",
    ),
    ignored(
        "initial_context_length",
        "legacy key of the original export; no weight or cache effect",
    ),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];

pub(super) static GLM4_MOE: &[KeyInfo] = &[
    read("vocab_size", "default 151552"),
    read("hidden_size", "default 4096"),
    read(
        "num_hidden_layers",
        "default 46; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 96"),
    read(
        "intermediate_size",
        "default 10944; read only when a layer is dense (first_k_dense_replace > 0)",
    ),
    read("num_key_value_heads", "default 8"),
    read("head_dim", HEAD_DIM_GETATTR),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v_proj biases (o_proj never has one)",
    ),
    read(
        "use_qk_norm",
        "default false; true adds per-head q_norm and k_norm",
    ),
    read("n_routed_experts", "default 128"),
    read("num_local_experts", "alias of n_routed_experts"),
    read("n_shared_experts", "default 1; 0: no shared experts"),
    read(
        "num_experts_per_tok",
        "default 8; read only when a layer is sparse",
    ),
    read(
        "moe_intermediate_size",
        "default 1408; read only when a layer is sparse",
    ),
    read(
        "first_k_dense_replace",
        "default 1; the first k layers have a dense MLP of intermediate_size",
    ),
    read(
        "num_nextn_predict_layers",
        "default 1: multi-token-prediction layers after the last one, each a decoder layer with its own embed_tokens, enorm, hnorm, eh_proj and shared_head (norm and head); held as weights only",
    ),
    read("num_mtp_layers", MTP_ALIAS),
    ignored(
        "partial_rotary_factor",
        "rotary embedding applies to part of each head; no weight or cache effect",
    ),
    ignored("n_group", NO_MEMORY),
    ignored("topk_group", NO_MEMORY),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("routed_scaling_factor", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
];

pub(super) static LLAMA4_TEXT: &[KeyInfo] = &[
    read("vocab_size", "default 202048"),
    read("hidden_size", "default 5120"),
    read(
        "num_hidden_layers",
        "default 48; at most 4096 (the largest published models have under 200)",
    ),
    read("num_attention_heads", "default 40"),
    read(
        "intermediate_size",
        "default 8192: the width of each expert and of the shared expert",
    ),
    read(
        "intermediate_size_mlp",
        "default 16384: the dense layers' width; read only when a layer is dense",
    ),
    read(
        "num_key_value_heads",
        "default 8; null: num_attention_heads",
    ),
    read(
        "head_dim",
        "default 128; null: hidden_size / num_attention_heads, which must then divide",
    ),
    read("hidden_act", ACT),
    read("tie_word_embeddings", TIE_FALSE),
    read(
        "attention_bias",
        "default false; true adds q/k/v/o_proj biases",
    ),
    read("num_local_experts", "default 16"),
    read(
        "num_experts_per_tok",
        "default 1; read only when a layer is sparse",
    ),
    read(
        "moe_layers",
        "default (and null): every interleave_moe_layer_step-th layer (step - 1, 2 step - 1, ...); the others are dense",
    ),
    read(
        "interleave_moe_layer_step",
        "default 1; read only when moe_layers is absent",
    ),
    read(
        "no_rope_layers",
        "1 (rotary) or 0 (NoPE) per layer; default (and null or empty): NoPE on every no_rope_layer_interval-th layer",
    ),
    read(
        "no_rope_layer_interval",
        "default 4; read only when no_rope_layers is absent",
    ),
    read(
        "use_qk_norm",
        "default true; a weightless RMS norm of q and k on rotary layers (no tensor)",
    ),
    read(
        "attention_chunk_size",
        "default 8192; null: no chunking; a chunked layer holds at most this many tokens per sequence (vLLM's chunked local attention)",
    ),
    read(
        "layer_types",
        "chunked_attention or full_attention per layer; default (and null): chunked_attention on rotary layers when attention_chunk_size is set",
    ),
    ignored("attn_temperature_tuning", NO_MEMORY),
    ignored("floor_scale", NO_MEMORY),
    ignored("attn_scale", NO_MEMORY),
    ignored("for_llm_compressor", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
    ignored("router_jitter_noise", ROUTER),
];
