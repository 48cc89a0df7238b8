//! A second audit of the vLLM start-up predictions off the logged cases (releases, GPUs and
//! models the first audit, vllm_audit.rs, did not take): each test re-derives one figure by
//! hand from the release's Python sources (cited file:line in the comment, paths under vllm/)
//! where the audit found the profile wrong, and asserts the exact value the derivation gives.

mod common;

use circuit_hf::KvCacheDtype;
use engine_profile::{StageCircuit, Startup, Verdict};

const QWEN3_30B_A3B: &str = include_str!("../../data/models/qwen3-30b-a3b/config.json");

/// `config` loaded by `spec`'s release at TP `tp`, started with the release's defaults on the
/// device `dev`.
fn start(spec: &str, config: &str, origin: &str, tp: u64, dev: &str) -> Startup {
    let profile = common::release(spec);
    let (circuits, run) = common::layout(
        profile.load_rules(),
        config,
        origin,
        tp,
        KvCacheDtype::Auto,
        dev,
    );
    profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap()
}

/// Qwen3-30B-A3B at TP 1 on an L40S (vLLM 0.31.0): the weights alone exceed the card, so the
/// start-up stops while the model is built, never at the KV-cache check.
///
/// Weights by hand (config.json: hidden 2048, 48 layers, 32 heads and 4 KV heads of 128, 128
/// experts of 768, vocabulary 151,936 untied): per layer qkv (4096 + 1024) x 2048, o 4096 x
/// 2048, q/k norms 2 x 128, experts 128 x 3 x 2048 x 768, router 128 x 2048, two norms 2 x
/// 2048; embedding and lm_head 2 x 151,936 x 2048, final norm 2048: 30,532,122,624 bf16
/// parameters, 61,064,245,248 bytes, plus the rope cache 40,960 x 128 x 2 = 10,485,760
/// (61,074,731,008; the profile adds the attention scales and the allocator's rounding:
/// 61,075,976,192). The L40S's CUDA total is 47,803,596,800 bytes (data/devices).
///
/// vLLM allocates every parameter on the device as it builds the model, before reading any
/// weight (model_executor/model_loader/base_loader.py 0.31.0 L67-72: `with target_device:
/// self.create_model(...)`), so torch raises CUDA out of memory there; the profile run and
/// "No available memory for the cache blocks" (v1/core/kv_cache_utils.py 0.31.0 L904-906),
/// which the prediction named before this audit, are never reached.
#[test]
fn weights_above_the_device_fail_at_load_not_at_the_kv_check() {
    let s = start("vllm==0.31.0", QWEN3_30B_A3B, "qwen3-30b-a3b", 1, "l40s");
    assert_eq!(s.device_total, 47_803_596_800);
    assert_eq!(s.workers[0].weights, 61_075_976_192);
    assert_eq!(
        s.verdict,
        Verdict::WeightsAboveDevice {
            weights: 61_075_976_192,
            device_total: 47_803_596_800,
        }
    );
}

/// The same model at TP 1 on an H100 (85,032,697,856 bytes) with --gpu-memory-utilization 0.7
/// loads (61,075,976,192 bytes of weights fit the card) but requests ceil(0.7 x total) =
/// 59,522,888,500 bytes (v1/worker/utils.py 0.31.0 L543-545), below the weights: vLLM reaches
/// the KV check and refuses there ("No available memory for the cache blocks",
/// v1/core/kv_cache_utils.py 0.31.0 L904-906), the verdict before this audit.
#[test]
fn weights_below_the_device_keep_the_kv_check_verdict() {
    let profile = common::release("vllm==0.31.0");
    let (circuits, run) = common::layout(
        profile.load_rules(),
        QWEN3_30B_A3B,
        "qwen3-30b-a3b",
        1,
        KvCacheDtype::Auto,
        "h100-sxm",
    );
    let run = engine_profile::RunSettings {
        gpu_memory_utilization: Some(0.7),
        ..run
    };
    let s = profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap();
    assert_eq!(s.device_total, 85_032_697_856);
    assert_eq!(s.requested, 59_522_888_500);
    assert_eq!(s.workers[0].weights, 61_075_976_192);
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
}
