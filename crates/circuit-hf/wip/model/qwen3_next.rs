//! Key table of Qwen3-Next: gated DeltaNet layers and gated full attention, routed and gated
//! shared experts.

use super::*;

pub(super) static QWEN3_NEXT: &[KeyInfo] = &[
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
        "default false; true adds q/k/v/o_proj biases",
    ),
    read(
        "layer_types",
        "linear_attention (gated DeltaNet) or full_attention per layer; default (and null): from full_attention_interval",
    ),
    read(
        "full_attention_interval",
        "default 4: layer i is full attention when (i + 1) % interval == 0, gated DeltaNet otherwise; read only when layer_types is absent",
    ),
    read("linear_num_key_heads", "default 16"),
    read("linear_num_value_heads", "default 32"),
    read("linear_key_head_dim", "default 128"),
    read("linear_value_head_dim", "default 128"),
    read(
        "linear_conv_kernel_dim",
        "default 4; the convolution state keeps kernel - 1 inputs per sequence",
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
        "default 512: the shared expert's width, gated by shared_expert_gate; read only when a layer is sparse",
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
        "default 1 (vLLM's Qwen3NextMTP; no config key announces the block the checkpoints carry): mtp.fc, mtp.layers.<i> (full attention and the MLP of layer i), mtp.norm, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden; held as weights only",
    ),
    ignored(
        "partial_rotary_factor",
        "rotary embedding applies to part of each head; no weight or cache effect",
    ),
    ignored(
        "use_sliding_window",
        "transformers' and vLLM's Qwen3-Next attend to every token",
    ),
    ignored(
        "sliding_window",
        "transformers' and vLLM's Qwen3-Next attend to every token",
    ),
    ignored(
        "max_window_layers",
        "transformers' and vLLM's Qwen3-Next attend to every token",
    ),
    ignored("norm_topk_prob", NO_MEMORY),
    ignored("output_router_logits", ROUTER),
    ignored("router_aux_loss_coef", ROUTER),
];
