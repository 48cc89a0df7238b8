//! The five configs in `data/models` against their published checkpoints: weights in
//! bf16 equal `total_size` of `model.safetensors.index.json` (2 bytes per parameter) and the
//! KV cache bytes per token equal the README's, exactly.

mod common;

use circuit_ir::Circuit;

fn load(name: &str) -> Circuit {
    let path = common::shared_path(name);
    circuit_hf::from_config_json(&common::shared(name), &path.display().to_string())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Weight bytes and KV bytes per token, as the README table publishes them.
fn check(name: &str, weights: u64, kv_per_token: u64) {
    let c = load(name);
    assert_eq!(c.name(), name);
    assert_eq!(c.weight_bytes(), weights, "{name}: weights");
    assert_eq!(
        c.state_bytes(1, 1).unwrap(),
        kv_per_token,
        "{name}: KV per token"
    );
    // No window in any of the five: the cache grows linearly with the tokens held.
    assert_eq!(
        c.state_bytes(100_000, 3).unwrap(),
        100_000 * kv_per_token,
        "{name}: KV at 100k tokens"
    );
}

#[test]
fn llama_3_1_8b() {
    check("llama-3.1-8b", 16_060_522_496, 131_072);
}

#[test]
fn qwen2_5_7b() {
    check("qwen2.5-7b", 15_231_233_024, 57_344);
}

#[test]
fn mixtral_8x7b() {
    check("mixtral-8x7b-v0.1", 93_405_585_408, 131_072);
}

#[test]
fn qwen3_30b_a3b() {
    check("qwen3-30b-a3b", 61_064_245_248, 98_304);
}

#[test]
fn deepseek_v2_lite() {
    check("deepseek-v2-lite", 31_412_968_448, 31_104);
}
