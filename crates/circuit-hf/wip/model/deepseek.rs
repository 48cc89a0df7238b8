//! Key tables of the DeepSeek types: DeepSeek-V2, DeepSeek-V3 (and Kimi K2, the same
//! architecture).

use super::*;

pub(super) static DEEPSEEK_V2: &[KeyInfo] = &[
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
    ignored("topk_method", NO_MEMORY),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("routed_scaling_factor", NO_MEMORY),
    ignored("scoring_func", NO_MEMORY),
    ignored("aux_loss_alpha", ROUTER),
    ignored("seq_aux", ROUTER),
    ignored("ep_size", "expert parallelism; total memory unchanged"),
    ignored("output_router_logits", ROUTER),
];

pub(super) static DEEPSEEK_V3: &[KeyInfo] = &[
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
    read("num_local_experts", "alias of n_routed_experts"),
    read("n_shared_experts", "default 1; null or 0: no shared experts"),
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
        "default 1: multi-token-prediction layers after the last one, each a decoder layer with its own embed_tokens, enorm, hnorm, eh_proj and shared_head (norm and head); held as weights only",
    ),
    read("num_mtp_layers", MTP_ALIAS),
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
