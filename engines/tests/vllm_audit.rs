//! An audit of the vLLM start-up predictions off the logged cases: each test re-derives one
//! figure by hand from the release's Python sources (cited file:line in the comment, paths under
//! vllm/) where the audit found the profile wrong, and asserts the exact value the derivation
//! gives.

use circuit_hf::{ImportOptions, Parallel};
use circuit_ir::Circuit;
use engine_profile::{RunSettings, StageCircuit, Startup};

const GEMMA3_1B: &str = include_str!("../../data/checkpoints/gemma-3-1b-it/config.json");
const GPT_OSS_20B: &str = include_str!("../../data/checkpoints/gpt-oss-20b/config.json");

mod common;

fn h100() -> kernel_families::Device {
    common::device("h100-sxm")
}

/// `config` loaded by `spec`'s release at TP 1 over `pp` stages, started with the release's
/// defaults on the H100.
fn start(spec: &str, config: &str, origin: &str, pp: u64) -> Startup {
    let profile = engines::select(spec).unwrap();
    let mut options = ImportOptions::default();
    options.load = profile.load_rules();
    options.parallel = Parallel {
        tp: 1,
        pp,
        dp: 1,
        expert_parallel: false,
    };
    let sharded = circuit_hf::import_parallel(config, origin, &options, &[]).unwrap();
    let model = sharded.imports[0].facts.clone();
    let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let run = RunSettings {
        pipeline_parallel_size: pp,
        ..RunSettings::new(h100(), model)
    };
    profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap()
}

/// The figures vLLM prints from the per-request block count: concurrency = blocks / per
/// request, tokens = int(concurrency x max_model_len) (v1/core/kv_cache_utils.py 0.29
/// get_kv_cache_capacity L2011-2021; 0.30 L2373-2383).
fn assert_capacity(s: &Startup, per_request: u64) {
    assert_eq!(s.kv_layout.blocks_per_request, per_request);
    let concurrency = s.kv_blocks as f64 / per_request as f64;
    assert_eq!(s.max_concurrency, concurrency);
    assert_eq!(
        s.kv_cache_tokens,
        (concurrency * s.max_model_len as f64) as u64
    );
}

/// From 0.26 a sliding-window group holds the tokens of every batch in flight
/// (v1/kv_cache_interface.py 0.30 SlidingWindowSpec.max_admission_blocks_per_request
/// L835-842: one block more than cdiv(min(sliding_window - 1 + max_in_flight_tokens,
/// max_model_len), block_size)), max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens
/// (config/vllm.py 0.30 L589-610), and async scheduling is on by default (L1487), so two
/// batches are in flight with one stage.
///
/// Gemma-3-1B on 0.30.0, H100: max_num_batched_tokens 8192, max_model_len 32768, block 16;
/// 22 sliding layers (window 512) and 4 full ones make 6 sliding groups and 1 full group
/// (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: group size 4).
/// Sliding: cdiv(min(511 + 2 x 8192, 32768), 16) + 1 = cdiv(16895, 16) + 1 = 1057 blocks;
/// full: cdiv(32768, 16) = 2048 blocks; one request: 6 x 1057 + 2048 = 8390 blocks (one
/// step's tokens instead, as before this audit, gave 6 x 545 + 2048 = 5318).
#[test]
fn gemma3_sliding_groups_hold_two_batches_in_flight_from_0_26() {
    let s = start("vllm==0.30.0", GEMMA3_1B, "gemma-3-1b-it", 1);
    assert_eq!(s.max_num_batched_tokens, 8192);
    assert_eq!(s.max_model_len, 32768);
    assert_eq!(s.kv_layout.groups.len(), 7);
    assert_capacity(&s, 8390);
}

/// gpt-oss-20b on 0.33.0, H100 (12 sliding layers, window 128, and 12 full ones: two groups,
/// max_model_len 131072, block 16): sliding cdiv(min(127 + 2 x 8192, 131072), 16) + 1 =
/// cdiv(16511, 16) + 1 = 1033; full cdiv(131072, 16) = 8192; one request 9225 blocks
/// (v1/kv_cache_interface.py 0.33 L935-942, config/vllm.py 0.33 L588-608).
#[test]
fn gpt_oss_sliding_group_holds_two_batches_in_flight_on_0_33() {
    let s = start("vllm==0.33.0", GPT_OSS_20B, "gpt-oss-20b", 1);
    assert_eq!(s.kv_layout.groups.len(), 2);
    assert_capacity(&s, 9225);
}

/// With pipeline stages the batches in flight follow the runner (config/vllm.py 0.26
/// max_concurrent_batches L512-521): the V2 runner keeps pp + 1, the V1 runner max(pp, 2).
/// Gemma-3-1B (not MoE: the V2 runner in 0.26, config/vllm.py _is_default_v2_model_runner_model)
/// at PP 2: cdiv(min(511 + 3 x 8192, 32768), 16) + 1 = cdiv(25087, 16) + 1 = 1569 a sliding
/// group; 6 x 1569 + 2048 = 11462. gpt-oss-20b (MoE, unlisted: the V1 runner) at PP 3:
/// cdiv(min(127 + 3 x 8192, 131072), 16) + 1 = cdiv(24703, 16) + 1 = 1545; 1545 + 8192 = 9737.
#[test]
fn batches_in_flight_follow_the_runner_with_pipeline_stages_on_0_26() {
    let gemma = start("vllm==0.26.0", GEMMA3_1B, "gemma-3-1b-it", 2);
    assert_eq!(gemma.kv_layout.blocks_per_request, 11462);
    let oss = start("vllm==0.26.0", GPT_OSS_20B, "gpt-oss-20b", 3);
    assert_eq!(oss.kv_layout.blocks_per_request, 9737);
}

/// Before 0.26 the window held one step's tokens (v1/kv_cache_interface.py 0.25
/// SlidingWindowSpec.max_memory_usage_bytes: min(sliding_window - 1 + max_num_batched_tokens,
/// max_model_len)): gpt-oss-20b on 0.25.0, cdiv(127 + 8192, 16) + 1 = 521; 521 + 8192 = 8713.
#[test]
fn before_0_26_a_sliding_group_holds_one_step() {
    let s = start("vllm==0.25.0", GPT_OSS_20B, "gpt-oss-20b", 1);
    assert_eq!(s.kv_layout.blocks_per_request, 8713);
}

const DEEPSEEK_V2_LITE: &str = include_str!("../../data/models/deepseek-v2-lite/config.json");

fn b200() -> kernel_families::Device {
    kernel_families::Devices::builtin()
        .unwrap()
        .get("b200")
        .unwrap()
        .clone()
}

/// The KV block size of DeepSeek-V2-Lite (MLA, qk_nope_head_dim 128) on a B200 under `spec`.
fn mla_block_on_b200(spec: &str) -> u64 {
    mla_config_block_on_b200(spec, DEEPSEEK_V2_LITE)
}

/// The KV block size of the MLA model `config` on a B200 under `spec`.
fn mla_config_block_on_b200(spec: &str, config: &str) -> u64 {
    let profile = engines::select(spec).unwrap();
    let mut options = ImportOptions::default();
    options.load = profile.load_rules();
    let sharded = circuit_hf::import_parallel(config, "deepseek-v2-lite", &options, &[]).unwrap();
    let model = sharded.imports[0].facts.clone();
    let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let run = RunSettings::new(b200(), model);
    profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap()
        .kv_layout
        .token_block_size
}

/// MLA on Blackwell takes FLASHINFER_MLA first (platforms/cuda.py 0.34 L119-129; qk_nope_head_dim
/// 128 passes its supports_combination, flashinfer_mla.py:228-250), whose kernel blocks are
/// [32, 64] (:204-205). The block size is the default when the backend supports it, else its
/// smallest (v1/attention/backend.py get_preferred_block_size, 0.34 L158-166; supports_block_size
/// L125-141 tests block_size % size == 0). 0.33's default 16 (config/cache.py 0.33:185) is not
/// supported: 32. 0.34's default 64 (config/cache.py:185) is: 64. 0.14 forces CUTLASS_MLA and 128
/// on Blackwell (platforms/cuda.py 0.14 L185-215).
#[test]
fn mla_block_size_on_blackwell_by_release() {
    assert_eq!(mla_block_on_b200("vllm==0.14.0"), 128);
    assert_eq!(mla_block_on_b200("vllm==0.24.0"), 32);
    assert_eq!(mla_block_on_b200("vllm==0.33.0"), 32);
    assert_eq!(mla_block_on_b200("vllm==0.34.0"), 64);
}

/// 0.15.0-0.17.1 pick the MLA backend on Blackwell by qk_nope_head_dim (platforms/cuda.py
/// 0.17.0 L205-226): FlashInfer MLA when it is 128, which forces the default 16 to 64
/// (L255-263); else CUTLASS MLA, forcing 128 (L249-253). DeepSeek-V2-Lite (128): 64 on 0.15.0,
/// 0.16.0 and 0.17.0; the same config with qk_nope_head_dim 64: 128. 0.14.0 forces CUTLASS MLA
/// whatever the dim (platforms/cuda.py 0.14 L185-215): 128 for both.
#[test]
fn mla_block_size_on_blackwell_follows_qk_nope_head_dim_in_0_15_to_0_17() {
    let nope64 = DEEPSEEK_V2_LITE.replace("\"qk_nope_head_dim\": 128", "\"qk_nope_head_dim\": 64");
    assert_ne!(nope64, DEEPSEEK_V2_LITE);
    for spec in ["vllm==0.15.0", "vllm==0.16.0", "vllm==0.17.0"] {
        assert_eq!(mla_block_on_b200(spec), 64, "{spec}");
        assert_eq!(mla_config_block_on_b200(spec, &nope64), 128, "{spec}");
    }
    assert_eq!(mla_config_block_on_b200("vllm==0.14.0", &nope64), 128);
}
