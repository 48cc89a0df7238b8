//! Public models of the supported types beyond the five shared ones, each written as its
//! published `config.json` (the memory-relevant keys), against its parameter count.
//!
//! Two kinds of assertion, kept apart on purpose:
//! - `published_*`: the exact figure of the published checkpoint (`total_size` of
//!   `model.safetensors.index.json` / 2, or the exact count on the model page).
//! - `derived_*`: the count derived by hand from the architecture in the comment; the exact
//!   published figure was not at hand, so the test also checks that the count rounds to the
//!   headline size the model page shows, and says so.
//!
//! Every derivation counts: embed_tokens (vocab x hidden), lm_head (the same, unless tied),
//! the final norm (hidden), and per layer the attention, the MLP and the norms.

use circuit_hf::from_config_json;
use circuit_ir::Circuit;

fn import(name: &str, json: &str) -> Circuit {
    from_config_json(json, &format!("{name}/config.json")).unwrap_or_else(|e| panic!("{e}"))
}

/// Weights are exactly 2 bytes per parameter (4 for a checkpoint stored in float32, as the
/// Gemma 2 ones are, planned as transformers loads them); the KV cache holds `kv_per_token`
/// bytes per token at 2 bytes per element (twice that in float32) while no sliding window is
/// full.
fn check(name: &str, json: &str, params: u64, kv_per_token: u64) -> Circuit {
    let c = import(name, json);
    let per = if json.contains(r#""torch_dtype": "float32""#) {
        4
    } else {
        2
    };
    assert_eq!(c.weight_bytes(), per * params, "{name}: weights");
    assert_eq!(
        c.state_bytes(1, 1).unwrap(),
        kv_per_token * per / 2,
        "{name}: KV per token"
    );
    c
}

/// `params` rounds to `headline` (in units of `unit` parameters), as the model page shows it.
fn rounds_to(params: u64, unit: u64, headline: u64) {
    assert_eq!(
        (params + unit / 2) / unit,
        headline,
        "{params} vs the headline size"
    );
}

#[test]
fn published_mistral_7b_v0_1() {
    // embed + lm_head: 2 x 32000 x 4096 = 262,144,000; final norm 4,096.
    // Per layer (32): q 4096x4096 = 16,777,216; k, v 1024x4096 = 4,194,304 each;
    // o 16,777,216; gate, up, down 3 x 14336x4096 = 176,160,768; 2 norms 8,192
    // = 218,112,000. Total 262,144,000 + 4,096 + 32 x 218,112,000 = 7,241,732,096
    // (total_size 14,483,464,192).
    let c = check(
        "Mistral-7B-v0.1",
        r#"{
          "architectures": ["MistralForCausalLM"], "model_type": "mistral",
          "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
          "sliding_window": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
          "max_position_embeddings": 32768, "rope_theta": 10000.0, "rms_norm_eps": 1e-05,
          "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "use_cache": true,
          "initializer_range": 0.02, "transformers_version": "4.34.0.dev0"
        }"#,
        7_241_732_096,
        131_072,
    );
    // Every layer slides over 4096 tokens per sequence: K and V of 8 heads x 128 x 32 layers.
    assert_eq!(c.dim("window"), Some(4096));
    assert_eq!(c.state_bytes(10_000, 1).unwrap(), 4096 * 131_072);
    assert_eq!(c.state_bytes(10_000, 2).unwrap(), 8192 * 131_072);
    assert_eq!(c.state_bytes(10_000, 3).unwrap(), 10_000 * 131_072);
}

#[test]
fn published_llama_3_2_1b_tied() {
    // embed 128256 x 2048 = 262,668,288, stored once (tied); final norm 2,048.
    // Per layer (16): q 2048x2048 = 4,194,304; k, v 512x2048 = 1,048,576 each; o 4,194,304;
    // MLP 3 x 8192x2048 = 50,331,648; norms 4,096 = 60,821,504.
    // Total 262,668,288 + 2,048 + 16 x 60,821,504 = 1,235,814,400 (total_size 2,471,628,800).
    let c = check(
        "Llama-3.2-1B",
        r#"{
          "architectures": ["LlamaForCausalLM"], "model_type": "llama",
          "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
          "vocab_size": 128256, "tie_word_embeddings": true, "attention_bias": false,
          "mlp_bias": false, "torch_dtype": "bfloat16", "hidden_act": "silu",
          "max_position_embeddings": 131072, "rope_theta": 500000.0, "pretraining_tp": 1,
          "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                           "original_max_position_embeddings": 8192, "rope_type": "llama3"},
          "rms_norm_eps": 1e-05, "attention_dropout": 0.0, "initializer_range": 0.02,
          "bos_token_id": 128000, "eos_token_id": 128001, "use_cache": true
        }"#,
        1_235_814_400,
        32_768,
    );
    assert!(c.tensors().values().all(|t| t.name != "lm_head.weight"));
}

#[test]
fn published_qwen2_5_0_5b_tied_with_biases() {
    // embed 151936 x 896 = 136,134,656 (tied, once); final norm 896.
    // Per layer (24): q 896x896 = 802,816 + bias 896; k, v 128x896 = 114,688 + bias 128 each;
    // o 802,816 (no bias); MLP 3 x 4864x896 = 13,074,432; norms 1,792 = 14,912,384.
    // Total 136,134,656 + 896 + 24 x 14,912,384 = 494,032,768.
    check(
        "Qwen2.5-0.5B",
        r#"{
          "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
          "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
          "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
          "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_sliding_window": false,
          "sliding_window": 32768, "max_window_layers": 24, "max_position_embeddings": 32768,
          "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "hidden_act": "silu",
          "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
          "initializer_range": 0.02, "use_cache": true, "transformers_version": "4.40.1"
        }"#,
        494_032_768,
        // 2 x 24 layers x 2 KV heads x 64 x 2 bytes.
        12_288,
    );
}

#[test]
fn published_phi_3_mini_4k_fused_projections() {
    // embed, lm_head 2 x 32064 x 3072 = 197,001,216; final norm 3,072.
    // Per layer (32): qkv_proj (3072 + 2 x 3072) x 3072 = 28,311,552; o 9,437,184;
    // gate_up_proj 2 x 8192 x 3072 = 50,331,648; down 25,165,824; norms 6,144 = 113,252,352.
    // Total 197,001,216 + 3,072 + 32 x 113,252,352 = 3,821,079,552 (total_size 7,642,159,104).
    let c = check(
        "Phi-3-mini-4k-instruct",
        r#"{
          "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
          "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config",
                       "AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM"},
          "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
          "sliding_window": 2047, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
          "attention_bias": false, "attention_dropout": 0.0, "embd_pdrop": 0.0,
          "resid_pdrop": 0.0, "hidden_act": "silu", "max_position_embeddings": 4096,
          "original_max_position_embeddings": 4096, "rope_scaling": null,
          "rope_theta": 10000.0, "rms_norm_eps": 1e-05, "initializer_range": 0.02,
          "bos_token_id": 1, "eos_token_id": 32000, "pad_token_id": 32000, "use_cache": true
        }"#,
        3_821_079_552,
        // 2 x 32 layers x 32 heads x 96 x 2 bytes.
        393_216,
    );
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"model.layers.0.self_attn.qkv_proj.weight"));
    assert!(names.contains(&"model.layers.31.mlp.gate_up_proj.weight"));
    assert_eq!(c.state_bytes(5000, 1).unwrap(), 2047 * 393_216);
}

#[test]
fn derived_qwen3_8b_qk_norms() {
    // embed, lm_head 2 x 151936 x 4096 = 1,244,659,712; final norm 4,096.
    // Per layer (36): q 4096x4096 = 16,777,216; k, v 1024x4096 = 4,194,304 each;
    // o 16,777,216; q_norm, k_norm 128 each; MLP 3 x 12288x4096 = 150,994,944;
    // norms 8,192 = 192,946,432. Total 1,244,659,712 + 4,096 + 36 x 192,946,432
    // = 8,190,735,360. The model page shows 8.19B.
    let params = 8_190_735_360;
    check(
        "Qwen3-8B",
        r#"{
          "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
          "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
          "vocab_size": 151936, "tie_word_embeddings": false, "attention_bias": false,
          "torch_dtype": "bfloat16", "use_sliding_window": false, "sliding_window": null,
          "max_window_layers": 36, "max_position_embeddings": 40960, "rope_scaling": null,
          "rope_theta": 1000000, "rms_norm_eps": 1e-06, "hidden_act": "silu",
          "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
          "initializer_range": 0.02, "use_cache": true, "transformers_version": "4.51.0"
        }"#,
        params,
        // 2 x 36 layers x 8 KV heads x 128 x 2 bytes.
        147_456,
    );
    rounds_to(params, 10_000_000, 819);
}

#[test]
fn derived_qwen3_0_6b_tied() {
    // embed 151936 x 1024 = 155,582,464 (tied, counted once); final norm 1,024.
    // Per layer (28): q 2048x1024 = 2,097,152; k, v 1024x1024 = 1,048,576 each;
    // o 1024x2048 = 2,097,152; q_norm, k_norm 128 each; MLP 3 x 3072x1024 = 9,437,184;
    // norms 2,048 = 15,730,944. Total 155,582,464 + 1,024 + 28 x 15,730,944 = 596,049,920.
    // Only derived: whether the published file also stores lm_head was not checked.
    check(
        "Qwen3-0.6B",
        r#"{
          "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
          "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
          "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
          "vocab_size": 151936, "tie_word_embeddings": true, "attention_bias": false,
          "torch_dtype": "bfloat16", "use_sliding_window": false, "sliding_window": null,
          "max_window_layers": 28
        }"#,
        596_049_920,
        // 2 x 28 layers x 8 KV heads x 128 x 2 bytes.
        114_688,
    );
}

const GEMMA_2_2B: &str = r#"{
  "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
  "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
  "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
  "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
  "query_pre_attn_scalar": 256, "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh", "cache_implementation": "hybrid",
  "attention_bias": false, "attention_dropout": 0.0, "max_position_embeddings": 8192,
  "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "torch_dtype": "float32",
  "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0, "initializer_range": 0.02,
  "use_cache": true, "transformers_version": "4.42.4"
}"#;

#[test]
fn derived_gemma_2_2b_four_norms_alternating_windows() {
    // embed 256000 x 2304 = 589,824,000 (tied: Gemma2Config's default); final norm 2,304.
    // Per layer (26): q 2048x2304 = 4,718,592; k, v 1024x2304 = 2,359,296 each;
    // o 2304x2048 = 4,718,592; MLP 3 x 9216x2304 = 63,700,992; four norms 9,216
    // = 77,865,984. Total 589,824,000 + 2,304 + 26 x 77,865,984 = 2,614,341,888.
    // The model page shows 2.61B (the checkpoint is stored in float32).
    let params = 2_614_341_888;
    let c = check(
        "gemma-2-2b",
        GEMMA_2_2B,
        params,
        // 26 layers x 2 x 4 KV heads x 256 x 2 bytes.
        106_496,
    );
    rounds_to(params, 10_000_000, 261);
    // 13 sliding layers (0, 2, ..., 24) hold at most 4096 tokens per sequence, 13 full ones
    // all of them: 4,096 bytes per token per layer.
    // float32: 4 bytes per element.
    let per_layer = 2 * 4 * 256 * 4;
    assert_eq!(
        c.state_bytes(10_000, 1).unwrap(),
        13 * per_layer * 4096 + 13 * per_layer * 10_000
    );
    assert_eq!(c.state_bytes(10_000, 4).unwrap(), 26 * per_layer * 10_000);
}

#[test]
fn derived_gemma_2_9b() {
    // embed 256000 x 3584 = 917,504,000 (tied); final norm 3,584.
    // Per layer (42): q 4096x3584 = 14,680,064; k, v 2048x3584 = 7,340,032 each;
    // o 14,680,064; MLP 3 x 14336x3584 = 154,140,672; four norms 14,336 = 198,195,200.
    // Total 917,504,000 + 3,584 + 42 x 198,195,200 = 9,241,705,984. The page shows 9.24B.
    let params = 9_241_705_984;
    check(
        "gemma-2-9b",
        r#"{
          "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
          "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
          "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
          "vocab_size": 256000, "sliding_window": 4096, "sliding_window_size": 4096,
          "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
          "query_pre_attn_scalar": 256, "hidden_activation": "gelu_pytorch_tanh",
          "hidden_act": "gelu_pytorch_tanh", "cache_implementation": "hybrid",
          "torch_dtype": "float32"
        }"#,
        params,
        // 42 layers x 2 x 8 KV heads x 256 x 2 bytes.
        344_064,
    );
    rounds_to(params, 10_000_000, 924);
}

#[test]
fn derived_gemma_2_27b() {
    // embed 256000 x 4608 = 1,179,648,000 (tied); final norm 4,608.
    // Per layer (46): q 4096x4608 = 18,874,368; k, v 2048x4608 = 9,437,184 each;
    // o 18,874,368; MLP 3 x 36864x4608 = 509,607,936; four norms 18,432 = 566,249,472.
    // Total 1,179,648,000 + 4,608 + 46 x 566,249,472 = 27,227,128,320. The page shows 27.2B.
    let params = 27_227_128_320;
    check(
        "gemma-2-27b",
        r#"{
          "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
          "hidden_size": 4608, "intermediate_size": 36864, "num_hidden_layers": 46,
          "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
          "vocab_size": 256000, "sliding_window": 4096, "query_pre_attn_scalar": 144,
          "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
          "hidden_activation": "gelu_pytorch_tanh", "torch_dtype": "bfloat16"
        }"#,
        params,
        // 46 layers x 2 x 16 KV heads x 128 x 2 bytes.
        376_832,
    );
    rounds_to(params, 100_000_000, 272);
}

#[test]
fn derived_deepseek_v2_q_lora_dense_first_shared_experts() {
    // embed, lm_head 2 x 102400 x 5120 = 1,048,576,000; final norm 5,120.
    // Attention per layer (60): q_a_proj 1536x5120 = 7,864,320; q_a_layernorm 1,536;
    // q_b_proj 128 x 192 x 1536 = 37,748,736; kv_a_proj_with_mqa 576x5120 = 2,949,120;
    // kv_a_layernorm 512; kv_b_proj 128 x 256 x 512 = 16,777,216; o 5120 x 128x128
    // = 83,886,080; two norms 10,240: 149,237,760.
    // Layer 0 dense MLP: 3 x 12288x5120 = 188,743,680.
    // Layers 1-59 sparse: router 160x5120 = 819,200; 160 experts x 3 x 1536x5120
    // = 3,774,873,600; 2 shared experts 3 x 3072x5120 = 47,185,920: 3,822,878,720.
    // Total 1,048,576,000 + 5,120 + 60 x 149,237,760 + 188,743,680 + 59 x 3,822,878,720
    // = 235,741,434,880. The model page shows 236B.
    let params = 235_741_434_880;
    let c = check(
        "DeepSeek-V2",
        r#"{
          "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
          "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV2Config"},
          "hidden_size": 5120, "intermediate_size": 12288, "moe_intermediate_size": 1536,
          "num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 128,
          "vocab_size": 102400, "kv_lora_rank": 512, "q_lora_rank": 1536,
          "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
          "n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6,
          "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 8, "topk_group": 3,
          "topk_method": "group_limited_greedy", "routed_scaling_factor": 16.0,
          "scoring_func": "softmax", "norm_topk_prob": false, "aux_loss_alpha": 0.001,
          "seq_aux": true, "ep_size": 1, "attention_bias": false, "hidden_act": "silu",
          "tie_word_embeddings": false, "torch_dtype": "bfloat16",
          "max_position_embeddings": 163840, "rope_theta": 10000, "rms_norm_eps": 1e-06,
          "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                           "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                           "type": "yarn"}
        }"#,
        params,
        // One latent per token and layer: (512 + 64) x 60 layers x 2 bytes.
        69_120,
    );
    rounds_to(params, 1_000_000_000, 236);
    assert_eq!(c.dim("q_lora_rank"), Some(1536));
}

#[test]
fn derived_mixtral_8x22b() {
    // embed, lm_head 2 x 32000 x 6144 = 393,216,000; final norm 6,144.
    // Per layer (56): q 6144x6144 = 37,748,736; k, v 1024x6144 = 6,291,456 each;
    // o 37,748,736; router 8x6144 = 49,152; 8 experts x 3 x 16384x6144 = 2,415,919,104;
    // norms 12,288 = 2,504,060,928. Total 393,216,000 + 6,144 + 56 x 2,504,060,928
    // = 140,620,634,112. The page shows 141B. (The vocabulary of 32000 is that of
    // Mixtral-8x22B-v0.1 as recalled, not re-checked; with 32768 the total is 140,630,071,296.)
    let params = 140_620_634_112;
    check(
        "Mixtral-8x22B-v0.1",
        r#"{
          "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
          "hidden_size": 6144, "intermediate_size": 16384, "num_hidden_layers": 56,
          "num_attention_heads": 48, "num_key_value_heads": 8, "vocab_size": 32000,
          "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null,
          "tie_word_embeddings": false, "torch_dtype": "bfloat16",
          "max_position_embeddings": 65536, "rope_theta": 1000000, "rms_norm_eps": 1e-05,
          "router_aux_loss_coef": 0.001, "output_router_logits": false
        }"#,
        params,
        // 2 x 56 layers x 8 KV heads x 128 x 2 bytes.
        229_376,
    );
    rounds_to(params, 1_000_000_000, 141);
}

#[test]
fn derived_mistral_nemo_head_dim_given() {
    // head_dim 128 although hidden / heads = 160.
    // embed, lm_head 2 x 131072 x 5120 = 1,342,177,280; final norm 5,120.
    // Per layer (40): q 4096x5120 = 20,971,520; k, v 1024x5120 = 5,242,880 each;
    // o 5120x4096 = 20,971,520; MLP 3 x 14336x5120 = 220,200,960; norms 10,240
    // = 272,640,000. Total 1,342,177,280 + 5,120 + 40 x 272,640,000 = 12,247,782,400.
    // The page shows 12.2B.
    let params = 12_247_782_400;
    let c = check(
        "Mistral-Nemo-Base-2407",
        r#"{
          "architectures": ["MistralForCausalLM"], "model_type": "mistral",
          "hidden_size": 5120, "intermediate_size": 14336, "num_hidden_layers": 40,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
          "vocab_size": 131072, "sliding_window": null, "tie_word_embeddings": false,
          "torch_dtype": "bfloat16", "max_position_embeddings": 1024000,
          "rope_theta": 1000000.0, "rms_norm_eps": 1e-05
        }"#,
        params,
        // 2 x 40 layers x 8 KV heads x 128 x 2 bytes.
        163_840,
    );
    rounds_to(params, 100_000_000, 122);
    assert_eq!(c.dim("window"), None);
}

#[test]
fn derived_phi_3_medium_grouped_fused_qkv() {
    // embed, lm_head 2 x 32064 x 5120 = 328,335,360; final norm 5,120.
    // Per layer (40): qkv_proj (5120 + 2 x 1280) x 5120 = 39,321,600; o 26,214,400;
    // gate_up_proj 2 x 17920 x 5120 = 183,500,800; down 91,750,400; norms 10,240
    // = 340,797,440. Total 328,335,360 + 5,120 + 40 x 340,797,440 = 13,960,238,080.
    // The page shows 14B.
    let params = 13_960_238_080;
    check(
        "Phi-3-medium-4k-instruct",
        r#"{
          "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
          "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40,
          "num_attention_heads": 40, "num_key_value_heads": 10, "vocab_size": 32064,
          "sliding_window": 2047, "tie_word_embeddings": false, "torch_dtype": "bfloat16"
        }"#,
        params,
        // 2 x 40 layers x 10 KV heads x 128 x 2 bytes.
        204_800,
    );
    rounds_to(params, 1_000_000_000, 14);
}

#[test]
fn derived_phi_2_parallel_block_layer_norms_biases() {
    // embed 51200 x 2560 = 131,072,000; lm_head the same plus its bias 51,200; final
    // LayerNorm (weight and bias) 5,120.
    // Per layer (32): input LayerNorm 5,120; q, k, v 2560x2560 + 2560 each = 19,668,480;
    // dense 6,556,160; fc1 2560x10240 + 10240 = 26,224,640; fc2 10240x2560 + 2560 =
    // 26,216,960 = 78,671,360. Total 131,072,000 + 131,123,200 + 5,120 + 32 x 78,671,360
    // = 2,779,683,840 (page: 2.78B); stored in float16, 2 bytes each.
    let c = check(
        "phi-2",
        r#"{
          "architectures": ["PhiForCausalLM"], "model_type": "phi",
          "attention_dropout": 0.0, "bos_token_id": 50256, "embd_pdrop": 0.0,
          "eos_token_id": 50256, "hidden_act": "gelu_new", "hidden_size": 2560,
          "initializer_range": 0.02, "intermediate_size": 10240, "layer_norm_eps": 1e-05,
          "max_position_embeddings": 2048, "num_attention_heads": 32, "num_hidden_layers": 32,
          "num_key_value_heads": 32, "partial_rotary_factor": 0.4, "qk_layernorm": false,
          "resid_pdrop": 0.1, "rope_scaling": null, "rope_theta": 10000.0,
          "tie_word_embeddings": false, "torch_dtype": "float16", "use_cache": true,
          "vocab_size": 51200
        }"#,
        2_779_683_840,
        // 32 layers x 32 heads x 80 x 2 (K and V) x 2 bytes.
        327_680,
    );
    rounds_to(2_779_683_840, 10_000_000, 278);
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "model.layers.0.self_attn.dense.bias",
        "model.layers.31.input_layernorm.bias",
        "model.layers.5.mlp.fc1.weight",
        "model.final_layernorm.bias",
        "lm_head.bias",
    ] {
        assert!(names.contains(&name), "{name}");
    }
}

#[test]
fn derived_gemma_7b_and_2b() {
    // Gemma-7B: embed 256000 x 3072 = 786,432,000 (tied); final norm 3,072. Per layer (28):
    // q, k, v, o 4 x 4096x3072 = 50,331,648 (16 heads of 256); gate, up, down
    // 3 x 24576x3072 = 226,492,416; 2 norms 6,144 = 276,830,208. Total 786,432,000 + 3,072
    // + 28 x 276,830,208 = 8,537,680,896 (page: 8.54B).
    let c = check(
        "gemma-7b",
        r#"{
          "architectures": ["GemmaForCausalLM"], "model_type": "gemma",
          "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 2,
          "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072,
          "initializer_range": 0.02, "intermediate_size": 24576,
          "max_position_embeddings": 8192, "num_attention_heads": 16, "num_hidden_layers": 28,
          "num_key_value_heads": 16, "pad_token_id": 0, "rms_norm_eps": 1e-06,
          "rope_scaling": null, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
          "use_cache": true, "vocab_size": 256000
        }"#,
        8_537_680_896,
        // 28 layers x 16 heads x 256 x 2 x 2 bytes.
        458_752,
    );
    rounds_to(8_537_680_896, 10_000_000, 854);
    assert!(c.find_node("embed.scale").is_some());
    // Gemma-2B: embed 256000 x 2048 = 524,288,000; final norm 2,048. Per layer (18): q and o
    // 2 x 2048x2048, k and v 2 x 256x2048 (one KV head) = 9,437,184; MLP 3 x 16384x2048 =
    // 100,663,296; norms 4,096 = 110,104,576. Total 2,506,172,416 (page: 2.51B).
    check(
        "gemma-2b",
        r#"{
          "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "head_dim": 256,
          "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2048,
          "intermediate_size": 16384, "num_attention_heads": 8, "num_hidden_layers": 18,
          "num_key_value_heads": 1, "torch_dtype": "bfloat16", "vocab_size": 256000
        }"#,
        2_506_172_416,
        18_432,
    );
    rounds_to(2_506_172_416, 10_000_000, 251);
}

#[test]
fn derived_granite_3_1_8b_multipliers_change_no_byte() {
    // embed 49155 x 4096 = 201,338,880 (tied); final norm 4,096. Per layer (40): q and o
    // 2 x 4096x4096, k and v 2 x 1024x4096 = 41,943,040; gate, up, down 3 x 12800x4096 =
    // 157,286,400; 2 norms 8,192 = 199,237,632. Total 201,338,880 + 4,096 + 40 x 199,237,632
    // = 8,170,848,256 (page: 8.17B).
    let json = r#"{
      "architectures": ["GraniteForCausalLM"], "model_type": "granite",
      "attention_bias": false, "attention_dropout": 0.1, "attention_multiplier": 0.0078125,
      "bos_token_id": 0, "embedding_multiplier": 12.0, "eos_token_id": 0, "hidden_act": "silu",
      "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12800,
      "logits_scaling": 16.0, "max_position_embeddings": 131072, "mlp_bias": false,
      "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
      "pad_token_id": 0, "residual_multiplier": 0.22, "rms_norm_eps": 1e-05,
      "rope_scaling": null, "rope_theta": 10000000.0, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 49155
    }"#;
    let c = check("granite-3.1-8b-instruct", json, 8_170_848_256, 163_840);
    rounds_to(8_170_848_256, 10_000_000, 817);
    // The same model as Llama: the same bytes; Granite adds the two scaling nodes.
    let llama = import(
        "as-llama",
        &json
            .replace(r#""model_type": "granite""#, r#""model_type": "llama""#)
            .replace("GraniteForCausalLM", "LlamaForCausalLM")
            .replace(r#""attention_multiplier": 0.0078125,"#, "")
            .replace(r#""embedding_multiplier": 12.0,"#, "")
            .replace(r#""logits_scaling": 16.0,"#, "")
            .replace(r#""residual_multiplier": 0.22,"#, ""),
    );
    assert_eq!(llama.weight_bytes(), c.weight_bytes());
    assert_eq!(c.nodes().len(), llama.nodes().len() + 2);
    assert!(c.find_node("head.logits_scale").is_some());
}

#[test]
fn published_gemma_3_4b_it_with_its_siglip_tower() {
    // Language model (gemma3_text): embed 262208 x 2560 = 671,252,480 (tied); final norm
    // 2,560. Per layer (34): q and o 2 x 2048x2560, k and v 2 x 1024x2560 = 15,728,640; q/k
    // norms 512; MLP 3 x 10240x2560 = 78,643,200; four norms 10,240 = 94,382,592. Text
    // 3,880,263,168.
    // SigLIP (27 layers of 1152, MLP 4304, 896 / 14 = 64 patches a side): patch conv
    // 1152 x 3 x 14 x 14 + 1152 = 678,528; positions 4096 x 1152 = 4,718,592; per layer two
    // LayerNorms 4,608, q/k/v/out 4 x (1152^2 + 1152) = 5,313,024, fc1 4304 x 1152 + 4304
    // = 4,962,512, fc2 1152 x 4304 + 1152 = 4,959,360 = 15,239,504; post LayerNorm 2,304.
    // Vision 416,866,032. Projector: 1152 x 2560 + 1152 = 2,950,272.
    // Total 4,300,079,472: the published count of gemma-3-4b-it.
    let c = check(
        "gemma-3-4b-it",
        r#"{
          "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
          "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
          "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
          "text_config": {
            "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
            "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            "sliding_window": 1024
          },
          "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
          "vision_config": {
            "hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
            "model_type": "siglip_vision_model", "num_attention_heads": 16,
            "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false
          }
        }"#,
        4_300_079_472,
        // 34 layers x 4 KV heads x 256 x 2 x 2 bytes.
        139_264,
    );
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "language_model.model.embed_tokens.weight",
        "language_model.model.layers.33.mlp.down_proj.weight",
        "vision_tower.vision_model.encoder.layers.26.mlp.fc2.bias",
        "multi_modal_projector.mm_input_projection_weight",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    // Tied: no separate lm_head.
    assert!(!names.iter().any(|n| n.contains("lm_head")));
}

#[test]
fn published_mistral_small_3_1_24b_with_its_pixtral_tower() {
    // Language model (mistral): embed and lm_head 2 x 131072 x 5120 = 1,342,177,280; final
    // norm 5,120. Per layer (40): q and o 2 x 4096x5120, k and v 2 x 1024x5120 = 52,428,800;
    // MLP 3 x 32768x5120 = 503,316,480; norms 10,240 = 555,755,520. Text 23,572,403,200.
    // Pixtral (24 layers of 1024, MLP 4096, patch 14): patch conv 1024 x 3 x 14 x 14 =
    // 602,112; ln_pre 1,024; per layer two norms 2,048, q/k/v/o 4 x 1024^2 = 4,194,304,
    // SwiGLU 3 x 4096 x 1024 = 12,582,912 = 16,779,264. Vision 403,305,472. Projector: norm
    // 1,024, patch merger 1024 x 4096 = 4,194,304, linear_1 5120 x 1024 = 5,242,880,
    // linear_2 5120 x 5120 = 26,214,400 = 35,652,608.
    // Total 24,011,361,280: the published count of Mistral-Small-3.1-24B-Instruct-2503.
    let c = check(
        "Mistral-Small-3.1-24B-Instruct-2503",
        r#"{
          "architectures": ["Mistral3ForConditionalGeneration"], "image_token_index": 10,
          "model_type": "mistral3", "multimodal_projector_bias": false,
          "projector_hidden_act": "gelu", "spatial_merge_size": 2,
          "text_config": {
            "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu",
            "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 32768,
            "max_position_embeddings": 131072, "model_type": "mistral",
            "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
            "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": null,
            "use_cache": true, "vocab_size": 131072
          },
          "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
          "vision_config": {
            "attention_dropout": 0.0, "head_dim": 64, "hidden_act": "silu",
            "hidden_size": 1024, "image_size": 1540, "initializer_range": 0.02,
            "intermediate_size": 4096, "model_type": "pixtral", "num_attention_heads": 16,
            "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14, "rope_theta": 10000.0
          },
          "vision_feature_layer": -1
        }"#,
        24_011_361_280,
        // 40 layers x 8 KV heads x 128 x 2 x 2 bytes.
        163_840,
    );
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "language_model.lm_head.weight",
        "language_model.model.layers.39.mlp.down_proj.weight",
        "vision_tower.transformer.layers.23.feed_forward.down_proj.weight",
        "multi_modal_projector.patch_merger.merging_layer.weight",
    ] {
        assert!(names.contains(&name), "{name}");
    }
}

#[test]
fn published_llava_1_5_7b_with_its_clip_tower() {
    // Language model (llama, LlamaConfig's 7B defaults, vocabulary 32064): embed and lm_head
    // 2 x 32064 x 4096 = 262,668,288; final norm 4,096. Per layer (32): q/k/v/o 4 x 4096^2
    // = 67,108,864; MLP 3 x 11008x4096 = 135,266,304; norms 8,192 = 202,383,360. Text
    // 6,738,939,904.
    // CLIP ViT-L/14 at 336 (24 layers of 1024, MLP 4096; 24^2 patches + the class token):
    // class embedding 1,024; patch conv 1024 x 3 x 14 x 14 = 602,112; positions 577 x 1024 =
    // 590,848; pre and post LayerNorms 4,096; per layer two LayerNorms 4,096, q/k/v/out
    // 4 x (1024^2 + 1024) = 4,198,400, fc1 4096 x 1024 + 4096 = 4,198,400, fc2 1024 x 4096
    // + 1024 = 4,195,328 = 12,596,224. Vision 303,507,456. Projector: linear_1 4096 x 1024 +
    // 4096 = 4,198,400, linear_2 4096^2 + 4096 = 16,781,312.
    // Total 7,063,427,072: the published count of llava-1.5-7b-hf (stored in float16).
    let c = check(
        "llava-1.5-7b-hf",
        r#"{
          "architectures": ["LlavaForConditionalGeneration"], "ignore_index": -100,
          "image_token_index": 32000, "model_type": "llava", "pad_token_id": 32001,
          "projector_hidden_act": "gelu",
          "text_config": {
            "_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
            "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
            "torch_dtype": "float16", "vocab_size": 32064
          },
          "tie_word_embeddings": false, "torch_dtype": "float16",
          "transformers_version": "4.36.0.dev0",
          "vision_config": {
            "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
            "model_type": "clip_vision_model", "num_attention_heads": 16,
            "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768,
            "vocab_size": 32000
          },
          "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
          "vocab_size": 32064
        }"#,
        7_063_427_072,
        // 32 layers x 32 heads x 128 x 2 x 2 bytes.
        524_288,
    );
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "language_model.lm_head.weight",
        "vision_tower.vision_model.pre_layrnorm.bias",
        "vision_tower.vision_model.encoder.layers.23.self_attn.out_proj.bias",
        "multi_modal_projector.linear_2.bias",
    ] {
        assert!(names.contains(&name), "{name}");
    }
}

#[test]
fn derived_qwen1_5_moe_a2_7b_gated_shared_expert() {
    // embed and lm_head 2 x 151936 x 2048 = 622,329,856; final norm 2,048. Per layer (24):
    // q, k, v 3 x (2048^2 + 2048) = 12,589,056 and o 2048^2 = 4,194,304; router 60 x 2048 =
    // 122,880; 60 experts 3 x 1408x2048 each = 519,045,120; shared expert 3 x 5632x2048 =
    // 34,603,008 and its gate 2,048; two norms 4,096 = 570,560,512. Total 622,329,856 + 2,048
    // + 24 x 570,560,512 = 14,315,784,192 (page: 14.3B).
    let c = check(
        "Qwen1.5-MoE-A2.7B",
        r#"{
          "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0,
          "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
          "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
          "max_position_embeddings": 8192, "max_window_layers": 21, "model_type": "qwen2_moe",
          "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
          "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
          "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
          "use_sliding_window": false, "vocab_size": 151936, "decoder_sparse_step": 1,
          "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
          "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": false,
          "output_router_logits": false, "router_aux_loss_coef": 0.001
        }"#,
        14_315_784_192,
        // 24 layers x 16 heads x 128 x 2 x 2 bytes.
        196_608,
    );
    rounds_to(14_315_784_192, 100_000_000, 143);
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "model.layers.0.mlp.shared_expert_gate.weight",
        "model.layers.23.mlp.shared_expert.down_proj.weight",
        "model.layers.5.self_attn.q_proj.bias",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    assert!(!names.contains(&"model.layers.5.self_attn.o_proj.bias"));
}

#[test]
fn published_glm_4_5_air_with_its_mtp_layer() {
    // embed and lm_head 2 x 151552 x 4096 = 1,241,513,984; final norm 4,096. Attention per
    // layer: q 12288 x 4096 + 12,288 bias, k and v 1024 x 4096 + 1,024 bias each, o
    // 4096 x 12288 = 109,066,240; two norms 8,192. Layer 0 dense (3 x 10944 x 4096 =
    // 134,479,872): 243,554,304. Layers 1-45 sparse: router 128 x 4096 = 524,288, 128 experts
    // 3 x 1408 x 4096 each = 2,214,592,512, one shared expert 17,301,504 = 2,341,492,736, and
    // the router's float32 score-correction bias, 128. The MTP layer (model.layers.46): a
    // sparse layer, eh_proj 4096 x 8192 = 33,554,432, enorm, hnorm, shared_head.norm 12,288,
    // its own embed_tokens and shared_head.head 1,241,513,984 = 3,616,573,440 (and its bias).
    // bf16 parameters 110,468,818,944 and 46 x 128 = 5,888 f32 ones: 110,468,824,832, the
    // published count.
    let json = r#"{
      "architectures": ["Glm4MoeForCausalLM"], "attention_bias": true,
      "attention_dropout": 0.0, "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338],
      "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "partial_rotary_factor": 0.5,
      "initializer_range": 0.02, "intermediate_size": 10944, "max_position_embeddings": 131072,
      "model_type": "glm4_moe", "moe_intermediate_size": 1408, "norm_topk_prob": true,
      "num_attention_heads": 96, "n_group": 1, "topk_group": 1, "n_routed_experts": 128,
      "n_shared_experts": 1, "routed_scaling_factor": 1.0, "num_experts_per_tok": 8,
      "first_k_dense_replace": 1, "num_hidden_layers": 46, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 1000000,
      "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "use_cache": true, "use_qk_norm": false, "vocab_size": 151552
    }"#;
    let c = import("GLM-4.5-Air", json);
    assert_eq!(c.weight_bytes(), 2 * 110_468_818_944 + 4 * 5_888);
    // 46 layers x 8 KV heads x 128 x 2 x 2 bytes; the MTP layer caches nothing here.
    assert_eq!(c.state_bytes(1, 1).unwrap(), 188_416);
    let names: Vec<&str> = c.tensors().values().map(|t| t.name.as_str()).collect();
    for name in [
        "model.layers.0.mlp.down_proj.weight",
        "model.layers.1.mlp.gate.e_score_correction_bias",
        "model.layers.45.mlp.shared_experts.down_proj.weight",
        "model.layers.3.self_attn.q_proj.bias",
        "model.layers.46.eh_proj.weight",
        "model.layers.46.shared_head.head.weight",
    ] {
        assert!(names.contains(&name), "{name}");
    }
}
