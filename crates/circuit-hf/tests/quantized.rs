//! Quantized checkpoints, byte for byte: the three of `data/checkpoints` whose model types
//! the importer knows (their `expect.json` holds the bytes the published files store), and one
//! config per format and option, with the bytes derived by hand in the test from the format's
//! tensor layout (docs/quantization.md cites the code of each).

use circuit_hf::{Dtype, Import, ImportOptions, KvCacheDtype, RunDtype, SideFile, SideFileKind};
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

fn import(json: &str) -> Import {
    circuit_hf::import(json, "ckpt/config.json").unwrap_or_else(|e| panic!("{e}"))
}

fn err(json: &str) -> String {
    match circuit_hf::import(json, "config.json") {
        Ok(i) => panic!("expected an error, got {} bytes", i.circuit.weight_bytes()),
        Err(e) => e.to_string(),
    }
}

/// Asserts the checkpoint's weight bytes and KV bytes per token; returns the import.
fn exact(name: &str) -> Import {
    let (config, expect) = checkpoint(name);
    let imp = circuit_hf::import(&config, &format!("{name}/config.json"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        imp.circuit.weight_bytes(),
        expect["weights"].as_u64().unwrap(),
        "{name}: weights"
    );
    assert_eq!(
        imp.circuit.state_bytes(1, 1).unwrap(),
        expect["kv_per_token"].as_u64().unwrap(),
        "{name}: KV bytes per token"
    );
    imp
}

#[test]
fn llama_3_1_8b_fp8_dynamic_compressed_tensors() {
    // weight F8_E4M3 [out, in] + weight_scale BF16 [out, 1] on the 224 linears; lm_head in
    // `ignore`; dynamic per-token activations store nothing.
    let imp = exact("llama-3.1-8b-instruct-fp8-dynamic");
    let q = imp.quantization.unwrap();
    assert_eq!(q.method, "compressed-tensors");
    assert_eq!((q.quantized, q.linear), (224, 225));
    assert_eq!(imp.dtype, Dtype::Bfloat16);
}

#[test]
fn llama_3_1_8b_w4a16_gptq_with_autogptq_biases() {
    let imp = exact("llama-3.1-8b-instruct-w4a16");
    let q = imp.quantization.unwrap();
    assert_eq!(q.method, "gptq");
    assert_eq!((q.quantized, q.linear), (224, 225));
    let bias = imp
        .circuit
        .tensors()
        .values()
        .find(|t| t.name == "model.layers.0.mlp.down_proj.bias")
        .expect("AutoGPTQ's zero bias");
    assert_eq!(bias.bytes, 2 * 4096);
}

#[test]
fn qwen3_32b_awq_in_float16() {
    // torch_dtype float16: KV at 2 bytes; the checkpoint's 16-bit tensors are stored BF16,
    // the same bytes.
    let imp = exact("qwen3-32b-awq");
    assert_eq!(imp.dtype, Dtype::Float16);
    assert_eq!(imp.quantization.unwrap().method, "awq");
}

// --- One config per format, bytes derived by hand from the format's tensor layout. ---
//
// The small Llama below: vocab 1000, hidden 256, 2 layers, 4 heads of 64, 2 KV heads, MLP 512.
// Unquantized it has embed_tokens + lm_head 2 x 256,000, norms 2 x 2 x 256 + 256; per layer
// the seven linears (out x in) q 256x256, k 128x256, v 128x256, o 256x256, gate 512x256,
// up 512x256, down 256x512.

const LINEARS: [(u64, u64); 7] = [
    (256, 256),
    (128, 256),
    (128, 256),
    (256, 256),
    (512, 256),
    (512, 256),
    (256, 512),
];
const LAYERS: u64 = 2;
/// embed_tokens, the norms (bf16), and lm_head's 256,000 parameters.
const EMBED_NORMS: u64 = 2 * (256_000 + 2 * 2 * 256 + 256);
const LM_HEAD: u64 = 2 * 256_000;

fn llama(quant: &str) -> String {
    format!(
        r#"{{"model_type": "llama", "torch_dtype": "bfloat16", "vocab_size": 1000,
        "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "quantization_config": {quant}}}"#
    )
}

/// The sum over every linear of every layer of `per_module(out, in)`.
fn linears(per_module: impl Fn(u64, u64) -> u64) -> u64 {
    LAYERS * LINEARS.iter().map(|&(o, i)| per_module(o, i)).sum::<u64>()
}

fn tensor_bytes(imp: &Import, name: &str) -> u64 {
    imp.circuit
        .tensors()
        .values()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tensor {name}"))
        .bytes
}

#[test]
fn gptq_gptqmodel_8_bit_one_group_with_a_quantized_lm_head() {
    // vLLM gptq.py create_weights, group_size -1 (one group over the input): qweight i32
    // [in / 4, out], qzeros i32 [1, out / 4], scales f16 [1, out], g_idx i32 [in]; GPTQModel
    // (meta.quantizer) adds no bias; `lm_head: true` quantizes the head too.
    let imp = import(&llama(
        r#"{"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": false,
        "sym": true, "lm_head": true, "meta": {"quantizer": ["gptqmodel:2.2.0"]}}"#,
    ));
    let gptq8 = |o: u64, i: u64| i / 4 * o * 4 + o / 4 * 4 + 2 * o + 4 * i;
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + linears(gptq8) + gptq8(1000, 256)
    );
    // 8 bits: in x out bytes + 3 x out + 4 x in per module; 514,560 + 2 x 604,160 + 260,024.
    assert_eq!(imp.circuit.weight_bytes(), 1_982_904);
    let q = imp.quantization.unwrap();
    assert_eq!((q.quantized, q.linear), (15, 15));
    assert_eq!(
        q.summary,
        "8-bit, one group per output channel, GPTQModel layout"
    );
}

#[test]
fn gptq_3_bit_packs_across_words() {
    // 3 bits: qweight [in * 3 / 32, out], qzeros [in / 64, out * 3 / 32]: the widths must be
    // multiples of 32 (256 and 512 are; 128-wide k and v out too). AutoGPTQ's f16 bias.
    let imp = import(&llama(
        r#"{"quant_method": "gptq", "bits": 3, "group_size": 64, "desc_act": false}"#,
    ));
    let gptq3 = |o: u64, i: u64| {
        i * 3 / 32 * o * 4 + i / 64 * (o * 3 / 32) * 4 + i / 64 * o * 2 + 4 * i + 2 * o
    };
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(gptq3)
    );
    // A width that does not divide is refused, naming the module.
    let e = err(&llama(
        r#"{"quant_method": "gptq", "bits": 4, "group_size": 100, "desc_act": false}"#,
    ));
    assert_eq!(
        e,
        "config.json: gptq (4-bit, group 100, AutoGPTQ layout (an f16 bias on every quantized linear)) cannot store `model.layers.0.self_attn.q_proj`: `hidden` = 256 is not a multiple of 100"
    );
}

#[test]
fn awq_gemm_with_biases_and_skipped_modules() {
    // vLLM awq.py: qweight i32 [in, out / 8], qzeros i32 [in / g, out / 8], scales f16
    // [in / g, out]. Qwen2's q/k/v biases stay (f16, as AutoAWQ's WQLinear stores them: the
    // same 2 bytes). `down_proj` is a substring of both layers' down projections: skipped.
    let json = r#"{"model_type": "qwen2", "torch_dtype": "float16", "vocab_size": 1000,
      "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": false,
      "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 64,
        "zero_point": true, "version": "gemm", "modules_to_not_convert": ["down_proj"]}}"#;
    let imp = import(json);
    let awq = |o: u64, i: u64| i * (o / 8) * 4 + i / 64 * (o / 8) * 4 + i / 64 * o * 2;
    let biases = LAYERS * 2 * (256 + 128 + 128);
    let down = LAYERS * 2 * 256 * 512;
    let quantized = linears(awq) - LAYERS * awq(256, 512);
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + quantized + down + biases
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.1.self_attn.k_proj.bias"),
        2 * 128
    );
    assert_eq!(imp.quantization.unwrap().quantized, 12);
}

#[test]
fn fp8_block_scales_on_deepseek_v2_round_up() {
    // transformers' FP8Linear: weight e4m3 [out, in], weight_scale_inv f32
    // [ceil(out / 128), ceil(in / 128)]. The router (mlp.gate) is not an nn.Linear and stays
    // bf16, as do embed_tokens, norms and (the default skip) lm_head.
    let json = r#"{"model_type": "deepseek_v2", "torch_dtype": "bfloat16", "vocab_size": 1000,
      "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 512, "hidden_act": "silu", "q_lora_rank": null,
      "kv_lora_rank": 128, "qk_nope_head_dim": 32, "qk_rope_head_dim": 32, "v_head_dim": 32,
      "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
      "moe_intermediate_size": 128, "first_k_dense_replace": 1,
      "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
        "fmt": "e4m3", "weight_block_size": [128, 128]}}"#;
    let imp = import(json);
    let fp8 = |o: u64, i: u64| o * i + o.div_ceil(128) * i.div_ceil(128) * 4;
    // MLA (out x in): q_proj 256x256, kv_a_proj_with_mqa 160x256 (two scale rows: 160 rounds
    // up), kv_b_proj 256x128, o_proj 256x128.
    let mla = fp8(256, 256) + fp8(160, 256) + fp8(256, 128) + fp8(256, 128);
    // Norms: attn, mlp 256 each, kv_a_layernorm 128: 640 per layer, + final 256.
    let norms = 2 * (2 * 640 + 256);
    let dense = fp8(512, 256) * 2 + fp8(256, 512);
    let experts = 4 * (fp8(128, 256) * 2 + fp8(256, 128));
    let shared = fp8(128, 256) * 2 + fp8(256, 128);
    let router = 2 * 4 * 256;
    assert_eq!(
        imp.circuit.weight_bytes(),
        2 * 2 * 256_000 + norms + 2 * mla + dense + experts + shared + router
    );
    assert_eq!(
        tensor_bytes(
            &imp,
            "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv"
        ),
        2 * 2 * 4
    );
    // The MLA latent cache is unchanged: (128 + 32) x 2 layers x 2 bytes.
    assert_eq!(imp.circuit.state_bytes(1, 1).unwrap(), 640);
}

#[test]
fn fp8_per_tensor_with_static_activations() {
    // vLLM fp8.py without weight_block_size: weight e4m3, weight_scale f32 [1], input_scale
    // f32 [1] (static).
    let imp = import(&llama(
        r#"{"quant_method": "fp8", "activation_scheme": "static"}"#,
    ));
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(|o, i| o * i + 8)
    );
}

#[test]
fn fbgemm_per_channel_skipping_the_first_layer_unrolls_it() {
    // transformers' FbgemmFp8Linear: weight e4m3 [out, in], weight_scale f32 [out, 1]. The
    // list names layer 0's modules (as Llama-3.1-405B-FP8's does for its first and last
    // layers) and lm_head: layer 0 stays bf16, so the layers become blocks of their own.
    let imp = import(&llama(
        r#"{"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
        "modules_to_not_convert": ["model.layers.0.self_attn.q_proj",
          "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj",
          "model.layers.0.self_attn.o_proj", "model.layers.0.mlp.gate_proj",
          "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj", "lm_head"]}"#,
    ));
    let bf16 = linears(|o, i| 2 * o * i) / LAYERS;
    let fp8 = linears(|o, i| o * i + 4 * o) / LAYERS;
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + bf16 + fp8
    );
    assert!(imp.circuit.find_node("layer_0.q_proj").is_some());
    assert!(imp.circuit.find_node("layer_1.q_proj").is_some());
    assert_eq!(
        tensor_bytes(&imp, "model.layers.1.mlp.down_proj.weight_scale"),
        4 * 256
    );
    assert_eq!(imp.quantization.unwrap().quantized, 7);
}

/// A compressed-tensors block with one group targeting `Linear`.
fn compressed(weights: &str, input: &str, format: &str, ignore: &str) -> String {
    llama(&format!(
        r#"{{"quant_method": "compressed-tensors", "format": "{format}",
        "quantization_status": "compressed", "kv_cache_scheme": null,
        "config_groups": {{"group_0": {{"targets": ["Linear"], "weights": {weights},
          "input_activations": {input}, "output_activations": null}}}},
        "ignore": {ignore}}}"#
    ))
}

#[test]
fn compressed_tensors_int8_w8a8() {
    // int-quantized (IntQuantizationCompressor): weight i8 [out, in], weight_scale bf16
    // [out, 1] (channel); dynamic per-token inputs store nothing.
    let imp = import(&compressed(
        r#"{"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel", "dynamic": false}"#,
        r#"{"num_bits": 8, "type": "int", "symmetric": true, "strategy": "token", "dynamic": true}"#,
        "int-quantized",
        r#"["lm_head"]"#,
    ));
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(|o, i| o * i + 2 * o)
    );
    // Static per-tensor inputs add input_scale bf16 [1]; asymmetric ones an i8 zero point.
    let imp = import(&compressed(
        r#"{"num_bits": 8, "type": "int", "symmetric": true, "strategy": "tensor"}"#,
        r#"{"num_bits": 8, "type": "int", "symmetric": false, "strategy": "tensor", "dynamic": false}"#,
        "int-quantized",
        r#"["lm_head"]"#,
    ));
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(|o, i| o * i + 2 + 2 + 1)
    );
}

#[test]
fn compressed_tensors_w4a16_pack_quantized_with_actorder_and_zero_points() {
    // PackedQuantizationCompressor: weight_packed i32 [out, ceil(in / 8)], weight_scale bf16
    // [out, in / 128], weight_shape i64 [2]; asymmetric: weight_zero_point i32
    // [ceil(out / 8), in / 128]; vLLM's wNa16 reads weight_g_idx i32 [in] with actorder
    // "group". lm_head is quantized here (not ignored; a Linear).
    let imp = import(&compressed(
        r#"{"num_bits": 4, "type": "int", "symmetric": false, "strategy": "group",
          "group_size": 128, "actorder": "group", "dynamic": false}"#,
        "null",
        "pack-quantized",
        "[]",
    ));
    let w4 = |o: u64, i: u64| o * i / 2 + o * (i / 128) * 2 + 16 + o / 8 * (i / 128) * 4 + 4 * i;
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + linears(w4) + w4(1000, 256)
    );
    // Symmetric with "weight" actorder: no zero point, no g_idx.
    let imp = import(&compressed(
        r#"{"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
          "group_size": 128, "actorder": "weight"}"#,
        "null",
        "pack-quantized",
        r#"["lm_head"]"#,
    ));
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(|o, i| o * i / 2 + o * (i / 128) * 2 + 16)
    );
}

#[test]
fn compressed_tensors_fp8_block() {
    // float-quantized with strategy block [128, 128]: weight e4m3, weight_scale bf16
    // [ceil(out / 128), ceil(in / 128)] (initialize_qparams: the weight's dtype).
    let imp = import(&compressed(
        r#"{"num_bits": 8, "type": "float", "symmetric": true, "strategy": "block",
          "block_structure": [128, 128]}"#,
        r#"{"num_bits": 8, "type": "float", "symmetric": true, "strategy": "group",
          "group_size": 128, "dynamic": true}"#,
        "float-quantized",
        r#"["lm_head"]"#,
    ));
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(|o, i| o * i + o.div_ceil(128) * i.div_ceil(128) * 2)
    );
}

#[test]
fn compressed_tensors_ignoring_one_layer_by_regex_unrolls_it() {
    // `re:model.layers.0.mlp.*` (Python re.match, anchored at the start) keeps layer 0's MLP
    // in bf16; FP8 per channel elsewhere.
    let imp = import(&compressed(
        r#"{"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel"}"#,
        r#"{"num_bits": 8, "type": "float", "symmetric": true, "strategy": "token", "dynamic": true}"#,
        "float-quantized",
        r#"["lm_head", "re:model.layers.0.mlp.*"]"#,
    ));
    let fp8 = |o: u64, i: u64| o * i + 2 * o;
    let mlp0 = 2 * (2 * 512 * 256 + 256 * 512);
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(fp8) - fp8(512, 256) * 2 - fp8(256, 512) + mlp0
    );
    assert_eq!(imp.quantization.unwrap().quantized, 11);
}

/// A small Qwen3-MoE: 2 layers, both sparse, 8 experts of 128, hidden 256.
fn qwen3_moe(quant: &str) -> String {
    format!(
        r#"{{"model_type": "qwen3_moe", "torch_dtype": "bfloat16", "vocab_size": 1000,
        "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "num_experts": 8, "num_experts_per_tok": 2,
        "moe_intermediate_size": 128, "quantization_config": {quant}}}"#
    )
}

/// Qwen3-MoE's attention linears (out x in) and the parameters left in bf16 besides the
/// router: embed, lm_head, norms and q/k norms.
const MOE_ATTN: [(u64, u64); 4] = [(256, 256), (128, 256), (128, 256), (256, 256)];
const MOE_BF16: u64 = 2 * (2 * 256_000 + 2 * (2 * 256 + 2 * 64) + 256);

#[test]
fn compressed_tensors_nvfp4_on_experts_with_the_router_ignored() {
    // NVFP4PackedCompressor: weight_packed u8 [out, in / 2], weight_scale e4m3 [out, in / 16],
    // weight_global_scale f32 [1]; NVFP4's "local" dynamic inputs keep input_global_scale f32
    // [1]. The routers match `re:.*mlp.gate$` and stay bf16.
    let imp = import(&qwen3_moe(
        r#"{"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"],
          "weights": {"num_bits": 4, "type": "float", "symmetric": true,
            "strategy": "tensor_group", "group_size": 16, "dynamic": false},
          "input_activations": {"num_bits": 4, "type": "float", "symmetric": true,
            "strategy": "tensor_group", "group_size": 16, "dynamic": "local"}}},
        "ignore": ["lm_head", "re:.*mlp.gate$"]}"#,
    ));
    let nvfp4 = |o: u64, i: u64| o * i / 2 + o * i / 16 + 4 + 4;
    let attn: u64 = MOE_ATTN.iter().map(|&(o, i)| nvfp4(o, i)).sum();
    let experts = 8 * (2 * nvfp4(128, 256) + nvfp4(256, 128));
    let router = 2 * 8 * 256;
    assert_eq!(
        imp.circuit.weight_bytes(),
        MOE_BF16 + 2 * (attn + experts + router)
    );
    assert_eq!(
        tensor_bytes(&imp, "model.layers.1.mlp.experts.*.down_proj.weight_scale"),
        8 * 256 * 8
    );
}

#[test]
fn modelopt_nvfp4_from_hf_quant_config_json() {
    // vLLM modelopt.py ModelOptNvFp4LinearMethod: weight u8 [out, in / 2], weight_scale e4m3
    // [out, in / 16], weight_scale_2 f32, input_scale f32. exclude_modules are wildcards and
    // substrings: `*mlp.gate` catches the routers, `lm_head` the head.
    let config = qwen3_moe("null");
    let side = r#"{"producer": {"name": "modelopt", "version": "0.29.0"},
      "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": null, "group_size": 16,
        "exclude_modules": ["lm_head", "*mlp.gate"]}}"#;
    let imp = circuit_hf::import_with(
        &config,
        "m/config.json",
        &ImportOptions::default(),
        &[SideFile {
            kind: SideFileKind::HfQuantConfig,
            origin: "m/hf_quant_config.json",
            text: side,
        }],
    )
    .unwrap();
    let nvfp4 = |o: u64, i: u64| o * i / 2 + o * i / 16 + 4 + 4;
    let attn: u64 = MOE_ATTN.iter().map(|&(o, i)| nvfp4(o, i)).sum();
    let experts = 8 * (2 * nvfp4(128, 256) + nvfp4(256, 128));
    assert_eq!(
        imp.circuit.weight_bytes(),
        MOE_BF16 + 2 * (attn + experts + 2 * 8 * 256)
    );
    let q = imp.quantization.unwrap();
    assert_eq!(
        (q.method.as_str(), q.source.as_str()),
        ("modelopt", "m/hf_quant_config.json")
    );
}

/// ModelOpt's usual NVFP4 export also calibrates the KV cache in FP8 (`kv_cache_quant_algo:
/// FP8` in hf_quant_config.json, `kv_cache_scheme` {float, 8 bits} in config.json): it stores an
/// f32 scalar `self_attn.k_proj.k_scale` and `self_attn.v_proj.v_scale` per attention layer,
/// and vLLM runs the cache in fp8 (e4m3) unless --kv-cache-dtype says otherwise.
#[test]
fn modelopt_nvfp4_with_fp8_kv_cache_scales() {
    let config = qwen3_moe("null");
    let side = r#"{"producer": {"name": "modelopt", "version": "0.29.0"},
      "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
        "exclude_modules": ["lm_head", "*mlp.gate"]}}"#;
    let file = SideFile {
        kind: SideFileKind::HfQuantConfig,
        origin: "m/hf_quant_config.json",
        text: side,
    };
    let imp = circuit_hf::import_with(&config, "m/config.json", &ImportOptions::default(), &[file])
        .unwrap();
    let nvfp4 = |o: u64, i: u64| o * i / 2 + o * i / 16 + 4 + 4;
    let attn: u64 = MOE_ATTN.iter().map(|&(o, i)| nvfp4(o, i)).sum();
    let experts = 8 * (2 * nvfp4(128, 256) + nvfp4(256, 128));
    // Two layers, each with the two 4-byte scales more than without kv_cache_quant_algo.
    assert_eq!(
        imp.circuit.weight_bytes(),
        MOE_BF16 + 2 * (attn + experts + 2 * 8 * 256) + 2 * (4 + 4)
    );
    let scale = |name: &str| {
        imp.circuit
            .tensors()
            .values()
            .find(|t| t.name == name)
            .map(|t| (t.bytes, t.format.to_string()))
    };
    assert_eq!(
        scale("model.layers.1.self_attn.k_proj.k_scale"),
        Some((4, "f32".to_owned()))
    );
    assert_eq!(
        scale("model.layers.0.self_attn.v_proj.v_scale"),
        Some((4, "f32".to_owned()))
    );
    // The cache in fp8 by default: 2 layers x 2 (K and V) x 2 KV heads x 64, one byte each.
    assert_eq!(imp.kv_cache_format, "fp8");
    assert_eq!(imp.circuit.kv_bytes_per_token().unwrap(), 2 * 2 * 2 * 64);
    // config.json's form of the same: kv_cache_scheme of 8-bit floats.
    let inline = qwen3_moe(
        r#"{"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
        "ignore": ["lm_head", "*mlp.gate"],
        "kv_cache_scheme": {"type": "float", "num_bits": 8, "dynamic": false, "symmetric": true}}"#,
    );
    let same = import(&inline);
    assert_eq!(same.circuit.weight_bytes(), imp.circuit.weight_bytes());
    assert_eq!(same.kv_cache_format, "fp8");
    // Another KV-cache algorithm stores scales of unknown bytes: refused.
    let e = circuit_hf::import_with(
        &config,
        "m/config.json",
        &ImportOptions::default(),
        &[SideFile {
            kind: SideFileKind::HfQuantConfig,
            origin: "m/hf_quant_config.json",
            text: &side.replace(
                r#""kv_cache_quant_algo": "FP8""#,
                r#""kv_cache_quant_algo": "NVFP4""#,
            ),
        }],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "m/hf_quant_config.json: `quantization.kv_cache_quant_algo` declares a KV-cache quantization other than FP8 (8-bit floats), whose stored scales are not modelled"
    );
}

#[test]
fn gptq_from_quantize_config_json_and_config_json_first() {
    let plain = llama("null");
    let side = r#"{"bits": 4, "group_size": 128, "desc_act": false, "sym": true,
      "true_sequential": true, "damp_percent": 0.01, "static_groups": false,
      "model_name_or_path": null, "model_file_base_name": null}"#;
    let file = SideFile {
        kind: SideFileKind::QuantizeConfig,
        origin: "m/quantize_config.json",
        text: side,
    };
    let imp = circuit_hf::import_with(&plain, "m/config.json", &ImportOptions::default(), &[file])
        .unwrap();
    let gptq4 =
        |o: u64, i: u64| i / 8 * o * 4 + i / 128 * (o / 8) * 4 + i / 128 * o * 2 + 4 * i + 2 * o;
    assert_eq!(
        imp.circuit.weight_bytes(),
        EMBED_NORMS + LM_HEAD + linears(gptq4)
    );
    // With a block in config.json, it wins and the side file is reported unread.
    let fp8 = llama(r#"{"quant_method": "fp8", "activation_scheme": "dynamic"}"#);
    let imp =
        circuit_hf::import_with(&fp8, "m/config.json", &ImportOptions::default(), &[file]).unwrap();
    assert_eq!(imp.quantization.unwrap().method, "fp8");
    assert_eq!(imp.side_files_ignored, vec!["m/quantize_config.json"]);
    // Two side files and no block: which one holds is unknown.
    let awq = SideFile {
        kind: SideFileKind::QuantConfig,
        origin: "m/quant_config.json",
        text: r#"{"w_bit": 4, "q_group_size": 128, "zero_point": true, "version": "GEMM"}"#,
    };
    let e = circuit_hf::import_with(
        &plain,
        "m/config.json",
        &ImportOptions::default(),
        &[file, awq],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "m/config.json: the config has no quantization_config but two quantization side files sit next to it (m/quantize_config.json and m/quant_config.json); which one the checkpoint follows cannot be told"
    );
}

#[test]
fn dtype_options_convert_what_the_format_leaves_open() {
    // float32 plans the unquantized tensors and the cache at 4 bytes; the GPTQ tensors keep
    // their storage; fp8 halves a 16-bit cache.
    let json = llama(r#"{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true}"#);
    let gptq4 =
        |o: u64, i: u64| i / 8 * o * 4 + i / 128 * (o / 8) * 4 + i / 128 * o * 2 + 4 * i + 2 * o;
    let mut options = ImportOptions::default();
    options.dtype = "float32".parse::<RunDtype>().unwrap();
    let imp = circuit_hf::import_with(&json, "c.json", &options, &[]).unwrap();
    assert_eq!(imp.dtype, Dtype::Float32);
    assert_eq!(imp.stored_dtype, Dtype::Bfloat16);
    assert_eq!(
        imp.circuit.weight_bytes(),
        2 * (EMBED_NORMS + LM_HEAD) + linears(gptq4)
    );
    // 2 layers x 2 x 2 KV heads x 64 x 4 bytes.
    assert_eq!(imp.circuit.state_bytes(1, 1).unwrap(), 2048);
    options.dtype = RunDtype::default();
    options.kv_cache_dtype = "fp8".parse::<KvCacheDtype>().unwrap();
    let imp = circuit_hf::import_with(&json, "c.json", &options, &[]).unwrap();
    assert_eq!(imp.circuit.state_bytes(1, 1).unwrap(), 512);
    assert_eq!(imp.kv_cache_format, "fp8");
    assert_eq!(
        "half".parse::<RunDtype>().unwrap_err().to_string(),
        "unknown dtype `half` (expected one of: auto, bfloat16, float16, float32)"
    );
}

#[test]
fn what_is_not_modelled_is_refused_by_name() {
    let cases = [
        (
            r#"{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemv"}"#,
            "config.json: `quantization_config.version` is `gemv`: only AutoAWQ's GEMM layout is modelled (GEMV pads its zeros and scales; exllama, marlin and ipex repack at load)",
        ),
        (
            r#"{"quant_method": "hqq"}"#,
            "config.json: `quantization_config.quant_method` is `hqq`, which is not modelled (modelled: gptq, awq, fp8, fbgemm_fp8, mxfp4, compressed-tensors, modelopt)",
        ),
        (
            r#"{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "frobnicate": 1}"#,
            "config.json: `quantization_config.frobnicate` is not a GPTQ setting the importer knows: it might change the stored tensors, so it is refused (docs/quantization.md lists the settings read and ignored)",
        ),
        (
            r#"{"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128], "scale_fmt": "ue8m0"}"#,
            "config.json: `quantization_config.scale_fmt` is `ue8m0`: only float (f32) block scales are modelled; transformers stores `ue8m0` in one byte while DeepSeek-V3.1's files keep f32, so its bytes are not certain",
        ),
        (
            r#"{"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {}, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}"#,
            "config.json: `quantization_config.kv_cache_scheme` stores FP8 KV-cache scales, which are not modelled; remove it and plan with --kv-cache-dtype fp8",
        ),
        (
            r#"{"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {}, "ignore": ["re:(?<!x)lm_head"]}"#,
            "config.json: `quantization_config.ignore` entry `re:(?<!x)lm_head` is not a regular expression the importer can evaluate exactly (error: look-around, including look-ahead and look-behind, is not supported)",
        ),
    ];
    for (quant, message) in cases {
        assert_eq!(err(&llama(quant)), message);
    }
    // MXFP4 as transformers writes it covers gpt-oss's fused experts only.
    assert_eq!(
        err(&qwen3_moe(
            r#"{"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}"#
        )),
        "config.json: mxfp4 stores the fused expert tensors of gpt-oss (`<parameter>_blocks`, `<parameter>_scales`); `model.layers.0.mlp.experts.*.gate_proj` is a per-expert `.weight`, which the format as transformers writes it does not cover"
    );
    assert_eq!(
        err(&qwen3_moe(r#"{"quant_method": "fbgemm_fp8"}"#)),
        "config.json: `quantization_config` cannot plan `model.layers.0.mlp.experts.*.gate_proj`: transformers 5 converts no routed experts but Llama 4's to fbgemm_fp8 (its fused experts are not nn.Linear) while older writers converted each expert's linears, so the experts' bytes are not certain"
    );
    // A quantized head tied to the embedding.
    let tied = llama(r#"{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "lm_head": true}"#)
        .replace(r#""torch_dtype""#, r#""tie_word_embeddings": true, "torch_dtype""#);
    assert_eq!(
        err(&tied),
        "config.json: `quantization_config` quantizes lm_head, which is tied to model.embed_tokens (4-bit, group 128, AutoGPTQ layout (an f16 bias on every quantized linear)); a quantized tied head is not modelled"
    );
    // Some experts but not others.
    let e = err(&qwen3_moe(
        r#"{"quant_method": "fp8", "activation_scheme": "dynamic",
        "modules_to_not_convert": ["lm_head", "model.layers.0.mlp.experts.3.up_proj"]}"#,
    ));
    assert_eq!(
        e,
        "config.json: `quantization_config` quantizes some experts of `model.layers.0.mlp.experts.*.up_proj` and not others (expert 0 and expert 3 differ); per-expert choices are not modelled"
    );
}

fn model(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/models")
        .join(name)
        .join("config.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn online_fp8() -> ImportOptions {
    let mut options = ImportOptions::default();
    options.online_quantization = "fp8".parse().unwrap();
    options
}

#[test]
fn online_fp8_quantizes_every_decoder_linear_per_tensor() {
    // vLLM's Fp8OnlineLinearMethod keeps an e4m3 [out, in] weight and one f32 weight_scale per
    // linear; embed_tokens, lm_head and the norms stay bf16 (layers/quantization/fp8.py).
    let config = model("llama-3.1-8b");
    let bf16 = circuit_hf::import(&config, "llama/config.json").unwrap();
    let fp8 = circuit_hf::import_with(&config, "llama/config.json", &online_fp8(), &[]).unwrap();
    let (hidden, kv, ffn, layers) = (4096u64, 8 * 128, 14336u64, 32u64);
    let per_layer = hidden * hidden * 2 + kv * hidden * 2 + ffn * hidden * 3;
    let linear_params = per_layer * layers;
    // Each linear drops one byte per parameter and gains its 4-byte scale.
    assert_eq!(
        fp8.circuit.weight_bytes(),
        bf16.circuit.weight_bytes() - linear_params + layers * 7 * 4
    );
    let q = fp8.quantization.unwrap();
    assert_eq!(q.method, "fp8");
    assert_eq!((q.quantized, q.linear), (224, 225));
    // The KV cache stays in the model dtype (--kv-cache-dtype auto).
    assert_eq!(
        fp8.circuit.state_bytes(1, 1).unwrap(),
        bf16.circuit.state_bytes(1, 1).unwrap()
    );
}

#[test]
fn online_fp8_quantizes_routed_experts_per_expert() {
    // vLLM's Fp8OnlineMoEMethod (layers/quantization/fp8.py) quantizes each expert's fused
    // w13 and w2 into e4m3 with one f32 scale per expert for each; the router (the MoE gate)
    // is built without a quant config and stays bf16. Qwen3-30B-A3B, 48 layers: q 4096 x 2048,
    // k and v 512 x 2048, o 2048 x 4096 (18,874,368) and 128 experts of gate, up and down
    // 768 x 2048 (603,979,776) drop a byte per parameter; each of the 4 attention linears
    // and the 3 x 128 expert modules gains a 4-byte scale (the checkpoint stores gate and up
    // apart: one scale per expert more than vLLM's fused w13, 512 bytes a layer).
    let config = model("qwen3-30b-a3b");
    let bf16 = circuit_hf::import(&config, "qwen3/config.json").unwrap();
    let fp8 = circuit_hf::import_with(&config, "qwen3/config.json", &online_fp8(), &[]).unwrap();
    let layers = 48u64;
    let params_per_layer = 18_874_368 + 603_979_776;
    let scales_per_layer = 4 + 3 * 128;
    assert_eq!(
        fp8.circuit.weight_bytes(),
        bf16.circuit.weight_bytes() - layers * params_per_layer + layers * scales_per_layer * 4
    );
    let q = fp8.quantization.unwrap();
    assert_eq!(q.method, "fp8");
    // Quantized: 48 x (4 attention linears + 3 expert modules); left: the 48 routers and
    // lm_head.
    assert_eq!((q.quantized, q.linear), (48 * 7, 48 * 8 + 1));
}

/// Llama 4 stores each layer's experts as two fused parameters, `feed_forward.experts.
/// gate_up_proj` [16, 5120, 16384] and `down_proj` [16, 8192, 5120]: on-the-fly fp8 keeps them
/// e4m3 under their own names with a companion `<param>_scale` of one f32 per expert, as
/// vLLM's w13_weight_scale and w2_weight_scale [16]. Scout's language model, 48 layers: q and
/// o 5120 x 5120, k and v 1024 x 5120, the shared expert's gate, up and down 8192 x 5120 and
/// the 16 experts' 3 x 8192 x 5120 each, 2,202,009,600 parameters, drop a byte each; the
/// layer gains 4 + 3 + 2 x 16 f32 scales. The router stays bf16.
#[test]
fn online_fp8_keeps_fused_expert_parameters_under_their_names() {
    let (config, _) = checkpoint("llama-4-scout-17b-16e-instruct");
    let mut text_only = ImportOptions::default();
    text_only.language_model_only = true;
    let mut fp8_options = online_fp8();
    fp8_options.language_model_only = true;
    let bf16 = circuit_hf::import_with(&config, "scout/config.json", &text_only, &[]).unwrap();
    let fp8 = circuit_hf::import_with(&config, "scout/config.json", &fp8_options, &[]).unwrap();
    let layers = 48u64;
    assert_eq!(
        fp8.circuit.weight_bytes(),
        bf16.circuit.weight_bytes() - layers * 2_202_009_600 + layers * (4 + 3 + 2 * 16) * 4
    );
    let names: Vec<&str> = fp8
        .circuit
        .tensors()
        .values()
        .map(|t| t.name.as_str())
        .collect();
    for name in [
        "language_model.model.layers.0.feed_forward.experts.gate_up_proj",
        "language_model.model.layers.0.feed_forward.experts.gate_up_proj_scale",
        "language_model.model.layers.0.feed_forward.experts.down_proj_scale",
        "language_model.model.layers.0.self_attn.q_proj.weight_scale",
    ] {
        assert!(names.contains(&name), "{name}");
    }
}

#[test]
fn online_fp8_refuses_what_it_does_not_model() {
    let (w4a16, _) = checkpoint("llama-3.1-8b-instruct-w4a16");
    let other = circuit_hf::import_with(&w4a16, "w4a16/config.json", &online_fp8(), &[])
        .unwrap_err()
        .to_string();
    assert!(
        other.starts_with(
            "w4a16/config.json: --quantization fp8 asked, but the checkpoint is quantized as `gptq`"
        ),
        "{other}"
    );
    // compressed-tensors FP8 is another method to vLLM (config/model.py
    // _verify_quantization refuses a --quantization that is not the checkpoint's).
    let (fp8_ckpt, _) = checkpoint("llama-3.1-8b-instruct-fp8-dynamic");
    let ct = circuit_hf::import_with(&fp8_ckpt, "fp8/config.json", &online_fp8(), &[])
        .unwrap_err()
        .to_string();
    assert!(ct.contains("quantized as `compressed-tensors`"), "{ct}");
}
