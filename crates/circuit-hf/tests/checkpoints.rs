//! The unquantized checkpoints of `data/checkpoints` whose model types are newer than Llama's
//! family, byte for byte: their `expect.json` holds the bytes the published safetensors store
//! and the KV bytes per token; the layouts come from transformers' modeling code (see
//! docs/hf-import.md), never from these numbers.

use serde_json::Value;

fn checkpoint(name: &str) -> (String, Value) {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/checkpoints")
        .join(name);
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"))
    };
    (
        read("config.json"),
        serde_json::from_str(&read("expect.json")).unwrap(),
    )
}

/// Asserts the checkpoint's weight bytes and KV bytes per token; returns the import.
fn exact(name: &str) -> circuit_hf::Import {
    let (config, expect) = checkpoint(name);
    let imp = circuit_hf::import(&config, &format!("{name}/config.json"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        imp.circuit.weight_bytes(),
        expect["weights"].as_u64().unwrap(),
        "{name}: weights"
    );
    assert_eq!(
        imp.circuit.kv_bytes_per_token().unwrap(),
        expect["kv_per_token"].as_u64().unwrap(),
        "{name}: KV bytes per token"
    );
    imp
}

fn tensor_bytes(imp: &circuit_hf::Import, name: &str) -> u64 {
    imp.circuit
        .tensors()
        .values()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tensor {name}"))
        .bytes
}

#[test]
fn gemma_3_1b_head_dim_apart_q_k_norms_tied() {
    let imp = exact("gemma-3-1b-it");
    // head_dim 256 although 1152 / 4 = 288: q_proj is [4 x 256, 1152].
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.self_attn.q_proj.weight"),
        2 * 1024 * 1152
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.self_attn.q_norm.weight"),
        2 * 256
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.self_attn.k_norm.weight"),
        2 * 256
    );
    assert!(
        !imp.circuit
            .tensors()
            .values()
            .any(|t| t.name == "lm_head.weight")
    );
}

#[test]
fn deepseek_r1_fp8_block_with_its_mtp_layer() {
    let imp = exact("deepseek-r1");
    // The noaux_tc router bias in f32, on the 58 sparse layers and the MTP layer.
    assert_eq!(
        tensor_bytes(&imp, "model.layers.3.mlp.gate.e_score_correction_bias"),
        4 * 256
    );
    // The MTP layer (model.layers.61): its own embedding and head copies and eh_proj stay
    // bf16; its experts are FP8 with f32 128x128 block scales like the main layers'.
    assert_eq!(
        tensor_bytes(&imp, "model.layers.61.embed_tokens.weight"),
        2 * 129280 * 7168
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.61.shared_head.head.weight"),
        2 * 129280 * 7168
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.61.eh_proj.weight"),
        2 * 7168 * 14336
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.61.self_attn.kv_b_proj.weight"),
        128 * 256 * 512
    );
    // No KV for the MTP layer: 61 latents of (512 + 64) bf16 elements per token.
    assert_eq!(imp.circuit.kv_bytes_per_token().unwrap(), 61 * 576 * 2);
}

/// An engine that builds the main model alone (`LoadRules::mtp_layers = Skipped`, vLLM's and
/// SGLang's `[load]`) holds every tensor of the checkpoint but the MTP layer's.
#[test]
fn deepseek_r1_without_its_mtp_layer_when_the_engine_skips_it() {
    let (config, _) = checkpoint("deepseek-r1");
    let whole = exact("deepseek-r1");
    let mut options = circuit_hf::ImportOptions::default();
    options.load.mtp_layers = model_facts::MtpLayers::Skipped;
    let main = circuit_hf::import_with(&config, "deepseek-r1/config.json", &options, &[]).unwrap();
    let mtp: u64 = whole
        .circuit
        .tensors()
        .values()
        .filter(|t| t.name.starts_with("model.layers.61."))
        .map(|t| t.bytes)
        .sum();
    // 15.4 GB: its bf16 embedding and head copies (2 x 1,853,358,080 B), eh_proj, and 256
    // FP8 experts of 3 x 7168 x 2048 bytes with their block scales.
    assert_eq!(mtp, 15_424_227_552);
    assert_eq!(
        main.circuit.weight_bytes(),
        whole.circuit.weight_bytes() - mtp
    );
    assert!(
        !main
            .circuit
            .tensors()
            .values()
            .any(|t| t.name.starts_with("model.layers.61."))
    );
    assert_eq!(main.circuit.kv_bytes_per_token().unwrap(), 61 * 576 * 2);
}

#[test]
fn gpt_oss_20b_mxfp4_experts_sinks_and_biases() {
    let imp = exact("gpt-oss-20b");
    let q = imp.quantization.clone().unwrap();
    assert_eq!(q.method, "mxfp4");
    assert_eq!(tensor_bytes(&imp, "model.layers.0.self_attn.sinks"), 2 * 64);
    assert_eq!(tensor_bytes(&imp, "model.layers.0.mlp.router.bias"), 2 * 32);
    // e2m1 in blocks of 32 with a byte scale: [32, 5760, 90, 16] u8.
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.mlp.experts.gate_up_proj_blocks"),
        32 * 5760 * 90 * 16
    );
    // Every other layer slides over 128 tokens: 12 windowed caches.
    let windowed = imp
        .circuit
        .states()
        .values()
        .filter(|s| s.window.is_some())
        .count();
    assert_eq!(windowed, 12);
}

#[test]
fn kimi_k2_reads_as_deepseek_v3_and_mtp_layers_are_counted_per_layer() {
    let (config, expect) = checkpoint("deepseek-r1");
    let weights = |text: &str| {
        circuit_hf::import(text, "k/config.json")
            .unwrap_or_else(|e| panic!("{e}"))
            .circuit
            .weight_bytes()
    };
    let kimi = config.replace(
        r#""model_type": "deepseek_v3""#,
        r#""model_type": "kimi_k2""#,
    );
    assert_ne!(kimi, config);
    assert_eq!(weights(&kimi), expect["weights"].as_u64().unwrap());
    // One MTP layer by hand: a sparse MLA layer in FP8 with f32 128x128 block scales, plus
    // bf16 embed_tokens and shared_head.head [129280, 7168], eh_proj [7168, 14336] and three
    // [7168] norms.
    let fp8 = |o: u64, i: u64| o * i + 4 * o.div_ceil(128) * i.div_ceil(128);
    let (h, e) = (7168, 256);
    let attn = fp8(1536, h)
        + 2 * 1536
        + fp8(128 * 192, 1536)
        + fp8(576, h)
        + 2 * 512
        + fp8(128 * 256, 512)
        + fp8(h, 128 * 128);
    let expert = 2 * fp8(2048, h) + fp8(h, 2048);
    let layer = attn + 2 * 2 * h + (e + 1) * expert + 2 * e * h + 4 * e;
    let mtp = layer + 2 * (2 * 129280 * h) + 2 * h * 2 * h + 3 * 2 * h;
    let none = config.replace(
        r#""num_nextn_predict_layers": 1"#,
        r#""num_nextn_predict_layers": 0"#,
    );
    let two = config.replace(
        r#""num_nextn_predict_layers": 1"#,
        r#""num_nextn_predict_layers": 2"#,
    );
    assert_ne!(none, config);
    assert_eq!(weights(&none) + mtp, expect["weights"].as_u64().unwrap());
    assert_eq!(weights(&two), expect["weights"].as_u64().unwrap() + mtp);
}

#[test]
fn llama_4_scout_moe_every_layer_chunked_nope_and_vision_tower() {
    let imp = exact("llama-4-scout-17b-16e-instruct");
    // All 16 experts in one tensor each: gate_up [16, 5120, 2 x 8192], down [16, 8192, 5120].
    assert_eq!(
        tensor_bytes(
            &imp,
            "language_model.model.layers.0.feed_forward.experts.gate_up_proj"
        ),
        2 * 16 * 5120 * 16384
    );
    assert_eq!(
        tensor_bytes(
            &imp,
            "language_model.model.layers.47.feed_forward.shared_expert.down_proj.weight"
        ),
        2 * 5120 * 8192
    );
    // The vision tower and projector, counted from vision_config: 871,932,416 parameters
    // (108,641,793,536 in all less the language model's 107,769,861,120).
    let vision: u64 = imp
        .circuit
        .tensors()
        .values()
        .filter(|t| {
            t.name.starts_with("vision_model.") || t.name.starts_with("multi_modal_projector.")
        })
        .map(|t| t.bytes)
        .sum();
    assert_eq!(vision, 2 * 871_932_416);
    // 36 chunked layers hold at most 8,192 tokens per sequence; the 12 NoPE layers all.
    let per_layer = 2 * 8 * 128 * 2;
    assert_eq!(
        imp.circuit.state_bytes(100_000, 1).unwrap(),
        per_layer * (36 * 8192 + 12 * 100_000)
    );
    assert!(imp.keys_read.contains(&"text_config.moe_layers".to_owned()));
    assert!(imp.keys_ignored.contains(&"boi_token_index".to_owned()));

    // As its language model alone (vLLM's --language-model-only): the checkpoint less the
    // tower, which is still read and checked.
    let (config, expect) = checkpoint("llama-4-scout-17b-16e-instruct");
    let mut options = circuit_hf::ImportOptions::default();
    options.language_model_only = true;
    let text = circuit_hf::import_with(&config, "scout", &options, &[]).unwrap();
    assert!(imp.facts.vision_encoder && !text.facts.vision_encoder);
    assert_eq!(
        text.circuit.weight_bytes(),
        expect["weights"].as_u64().unwrap() - 2 * 871_932_416
    );
    assert_eq!(text.keys_read, imp.keys_read);
    let bad = config.replace("\"patch_size\": 14", "\"patch_size\": 0");
    assert_ne!(bad, config);
    assert!(circuit_hf::import_with(&bad, "scout", &options, &[]).is_err());
}

#[test]
fn qwen3_next_80b_hybrid_layers_gated_shared_expert_and_its_unannounced_mtp() {
    let imp = exact("qwen3-next-80b-a3b-instruct");
    let c = &imp.circuit;
    let (h, e, f) = (2048, 512, 512);
    // Layer 3 is the first full-attention layer (full_attention_interval 4): q_proj holds the
    // query and the output gate, [2 x 16 x 256, 2048]; q_norm and k_norm are [head_dim].
    assert_eq!(
        tensor_bytes(&imp, "model.layers.3.self_attn.q_proj.weight"),
        2 * (2 * 16 * 256) * h
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.3.self_attn.k_norm.weight"),
        2 * 256
    );
    // Layer 0 is Gated DeltaNet: key_dim 16 x 128, value_dim 32 x 128, conv_dim 2 x 2048 +
    // 4096 = 8192.
    let la = "model.layers.0.linear_attn";
    for (tensor, elements) in [
        ("in_proj_qkvz.weight", (2 * 2048 + 2 * 4096) * h),
        ("in_proj_ba.weight", 2 * 32 * h),
        ("conv1d.weight", 8192 * 4),
        ("dt_bias", 32),
        ("A_log", 32),
        ("norm.weight", 128),
        ("out_proj.weight", h * 4096),
    ] {
        assert_eq!(
            tensor_bytes(&imp, &format!("{la}.{tensor}")),
            2 * elements,
            "{tensor}"
        );
    }
    assert!(
        !c.tensors()
            .values()
            .any(|t| t.name.starts_with("model.layers.0.self_attn"))
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.mlp.shared_expert_gate.weight"),
        2 * h
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.0.mlp.shared_expert.down_proj.weight"),
        2 * h * 512
    );
    // The MTP block: mtp.fc [2048, 4096], three norms and one full-attention sparse layer,
    // 1,650,471,424 parameters (expect.json's notes) that config.json does not announce.
    let attn = 2 * 16 * 256 * h + 2 * (2 * 256 * h) + h * 16 * 256 + 2 * 256;
    let moe = e * h + e * 3 * f * h + 3 * 512 * h + h;
    let mtp = h * 2 * h + 3 * h + attn + 2 * h + moe;
    assert_eq!(mtp, 1_650_471_424);
    let held: u64 = c
        .tensors()
        .values()
        .filter(|t| t.name.starts_with("mtp."))
        .map(|t| t.bytes)
        .sum();
    assert_eq!(held, 2 * mtp);
    assert!(
        imp.defaults
            .contains(&("num_nextn_predict_layers".to_owned(), "1".to_owned()))
    );
    // KV: 12 full-attention layers x 2 x 2 KV heads x 256 x bf16 per token. Per sequence, each
    // of the 36 DeltaNet layers holds its convolution's last 3 inputs of 8192 channels and a
    // 32 x 128 x 128 recurrent state, bf16 as vLLM 0.19 keeps them by default.
    assert_eq!(c.kv_bytes_per_token().unwrap(), 12 * 2 * 2 * 256 * 2);
    let per_layer = 2 * (3 * 8192) + 2 * (32 * 128 * 128);
    assert_eq!(per_layer, 1_097_728);
    assert_eq!(c.fixed_state_bytes(1).unwrap(), 36 * per_layer);
    assert_eq!(c.fixed_state_bytes(1).unwrap(), 39_518_208);
    assert_eq!(c.fixed_state_bytes(7).unwrap(), 7 * 39_518_208);
    assert_eq!(
        c.state_bytes(1000, 7).unwrap(),
        1000 * 24_576 + 7 * 39_518_208
    );
}

/// Llama 4's windows are chunks (chunked local attention over `attention_chunk_size`), which an
/// engine's block accounting tells apart from sliding windows: the import names the chunk
/// exactly when some layer is chunked, and never for a model whose windows slide.
#[test]
fn only_chunked_attention_names_its_chunk() {
    let chunk = |name: &str| {
        let (config, _) = checkpoint(name);
        circuit_hf::import(&config, &format!("{name}/config.json"))
            .unwrap()
            .facts
            .attention_chunk_size
    };
    assert_eq!(chunk("llama-4-scout-17b-16e-instruct"), Some(8192));
    assert_eq!(chunk("gemma-3-1b-it"), None);
    assert_eq!(chunk("gpt-oss-20b"), None);
    assert_eq!(chunk("qwen3-next-80b-a3b-instruct"), None);
}
