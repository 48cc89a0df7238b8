//! SGLang 0.4.x (`engines/sglang-0.4.*`), each figure derived by hand from their sources
//! (docs/engines.md, "SGLang"; the arithmetic in each test's comments): 0.4.6 to 0.4.7's
//! `mem_fraction_static` as a table on the parallel size with unrounded rules for larger
//! devices, the request pool's extra row before 0.4.7, the device tiers, the TP > 1 refusal of
//! the releases that read the free memory through torch's NCCL group, the model classes a release
//! lacks, and 0.4.9.post3 to 0.4.10.post2's hybrid sliding-window pool for Gemma 3. No SGLang log
//! is in the repository: these check the derivation.

use circuit_hf::{ImportOptions, KvCacheDtype, Parallel};
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{
    EngineError, EngineFlags, ModelFacts, RunSettings, StageCircuit, Startup, Verdict,
};

mod common;
use common::{detail, release};

/// The H100's CUDA total (devices.toml) less the engine file's assumed CUDA context.
const F_TP1: u64 = 85_032_697_856 - 547_608_330;
/// Llama-3.1-8B's weights at TP 1 with the float32 rope cache, as the caching allocator's
/// segments (sglang_0_5_23.rs derives it).
const LLAMA_W_TP1: u64 = 16_129_196_032;

/// Llama-3.1-8B at TP `tp` on `dev` with SGLang's defaults, imported under `spec`'s load rules.
fn llama(spec: &str, tp: u64, dev: &str) -> (Vec<Circuit>, RunSettings) {
    let config = include_str!("../../data/models/llama-3.1-8b/config.json");
    let load = release(spec).load_rules();
    common::layout(
        load,
        config,
        "llama-3.1-8b/config.json",
        tp,
        KvCacheDtype::Auto,
        dev,
    )
}

fn predict(spec: &str, circuits: &[Circuit], run: &RunSettings) -> Result<Startup, EngineError> {
    release(spec).predict_layout(&StageCircuit::in_order(circuits), run)
}

/// mem_fraction_static's default for Llama-3.1-8B under `spec` at TP `tp` on `dev`.
fn default_fraction(spec: &str, tp: u64, dev: &str) -> f64 {
    let (circuits, run) = llama(spec, tp, dev);
    let s = predict(spec, &circuits, &run).unwrap();
    let d = detail(&s);
    assert!(d.mem_fraction_static_default);
    assert_eq!(d.reserved_kib, 0, "a table, not a reserve");
    d.mem_fraction_static
}

#[test]
fn the_releases_select_their_folders() {
    for (spec, folder) in [
        ("sglang==0.4.7", "0.4.7"),
        ("sglang==0.4.6.post5", "0.4.6.post5"),
        ("sglang==0.4.6.post4", "0.4.6.post4"),
        ("sglang==0.4.6.post3", "0.4.6.post3"),
        ("sglang==0.4.6.post2", "0.4.6.post3"),
        ("sglang==0.4.6.post1", "0.4.6"),
        ("sglang==0.4.6", "0.4.6"),
    ] {
        assert_eq!(release(spec).version(), folder, "{spec}");
    }
    assert_eq!(
        release("sglang==0.4.6.post2").releases(),
        ["0.4.6.post2", "0.4.6.post3"]
    );
}

#[test]
fn release_0_4_7_llama_3_1_8b_tp1_on_an_h100() {
    let spec = "sglang==0.4.7";
    let (circuits, run) = llama(spec, 1, "h100-sxm");
    let s = predict(spec, &circuits, &run).unwrap();
    let d = detail(&s);
    // nvidia-smi 81,559 MiB <= 81,920 and TP x PP = 1: mfs 0.88 (server_args.py:253-266), no
    // rule above (81,559 is not above 81,920).
    assert_eq!(d.gpu_mib, 81_559);
    assert_eq!(d.mem_fraction_static, 0.88);
    // Tiers: 8192 tokens (not below 25,000 MiB, not above 180,000, server_args.py:286-294); the
    // capture list [1, 2, 4, 8] + range(16, 161, 8): 4 + 19 = 23 sizes up to 160
    // (cuda_graph_runner.py:138; 256 only above 96 GiB).
    assert_eq!(d.chunked_prefill_size, 8192);
    assert_eq!(d.decode_graph_sizes.len(), 23);
    assert_eq!(d.decode_graph_sizes.last(), Some(&160));
    assert!(d.prefill_graph_sizes.is_empty());
    // Weights as 0.5.23's (the rope cache float32 on CUDA, layers/rotary_embedding.py:80-92),
    // no growth after the print.
    assert_eq!(s.workers[0].weights, LLAMA_W_TP1);
    assert_eq!(d.workers[0].after_load, 0);
    // F = 84,485,089,526 B = 78.682871 GiB; A = F - W = 68,355,893,494 B = 63.661387 GiB;
    // rest = 63.661387 - 78.682871 x (1 - 0.88) = 54.219442 GiB; int(rest x 2^30) =
    // 58,217,682,750 B; // 131,072 = 444,165 tokens (model_runner.py:832-835).
    assert_eq!(d.free_before_load, F_TP1);
    assert_eq!(d.pool_budget, 58_217_682_750);
    assert_eq!(s.kv_cache_tokens, 444_165);
    // The estimate clamp(int(444165 / 131072 x 512), 2048, 4096) = clamp(1735) = 2048 rows
    // (model_runner.py:862-871, 925-937); printed min(444165 // 2, 2048) = 2048
    // (managers/tp_worker.py:119-127); req_to_token 2048 x (131072 + 4) x 4 B.
    assert_eq!(d.max_running_requests, 2048);
    assert_eq!(d.workers[0].req_to_token, 2048 * 131_076 * 4);
    // K = V = 32 x (444,165 + 1) x 8 x 128 x 2 B.
    assert_eq!(d.workers[0].k_bytes, 29_108_862_976);
    assert_eq!(s.verdict, Verdict::Starts);
    // 0.4.7.post1 rounds a reserve instead: round((81559 - (9.5 + 1 / 2) x 1024) / 81559, 3) =
    // 0.874; rest = 63.661387 - 78.682871 x 0.126 = 53.747345 GiB: 440,298 tokens.
    let next = predict("sglang==0.4.7.post1", &circuits, &run).unwrap();
    assert_eq!(detail(&next).mem_fraction_static, 0.874);
    assert_eq!(next.kv_cache_tokens, 440_298);
}

#[test]
fn the_request_estimate_reads_the_tokens_before_the_cap_until_0_5_10() {
    // 0.4.7, --context-length 8192 --max-total-tokens 20000: the estimate reads the profiled
    // T = 444,165 (model_runner.py:859-871, the cap at :905): clamp(int(444165 / 8192 x 512) =
    // 27,760, 2048, 4096) = 4096 rows; printed min(20000 // 2, 4096) = 4096.
    let spec = "sglang==0.4.7";
    let (circuits, mut run) = llama(spec, 1, "h100-sxm");
    run.max_model_len = Some(8192);
    run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
        max_total_tokens: Some(20_000),
        ..SglangFlags::default()
    }));
    let s = predict(spec, &circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(s.kv_cache_tokens, 20_000);
    assert_eq!(d.max_running_requests, 4096);
    assert_eq!(d.workers[0].req_to_token, 4096 * (8192 + 4) * 4);
    // 0.5.10 reads the capped 20,000 (model_runner_kv_cache_mixin.py:875-887):
    // clamp(int(20000 / 8192 x 512) = 1250, 2048, 4096) = 2048; printed min(10000, 2048).
    let s = predict("sglang==0.5.10", &circuits, &run).unwrap();
    assert_eq!(s.kv_cache_tokens, 20_000);
    assert_eq!(detail(&s).max_running_requests, 2048);
}

#[test]
fn no_request_and_no_request_length_raise_their_own_assertions() {
    // 0.4.7, --max-total-tokens 1: T = 1, max_running_requests = min(1 // 2, 4096) = 0, which
    // managers/tp_worker.py:131 asserts first.
    let spec = "sglang==0.4.7";
    let (circuits, mut run) = llama(spec, 1, "h100-sxm");
    let flags = |cap: u64| {
        Some(EngineFlags::Sglang(SglangFlags {
            max_total_tokens: Some(cap),
            ..SglangFlags::default()
        }))
    };
    run.engine_flags = flags(1);
    let s = predict(spec, &circuits, &run).unwrap();
    assert_eq!(detail(&s).max_running_requests, 0);
    assert_eq!(s.verdict, Verdict::NoKvMemory { short_by: 1 });
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some("AssertionError: max_running_request is zero")
    );
    // --max-total-tokens 6: 3 requests, but the longest input, min(131072, 6) - 1 - 5 = 0, is
    // asserted positive (tp_worker.py:129-136); 7 tokens start.
    run.engine_flags = flags(6);
    let s = predict(spec, &circuits, &run).unwrap();
    assert_eq!(detail(&s).max_running_requests, 3);
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some("AssertionError: Memory pool size is too small")
    );
    run.engine_flags = flags(7);
    let s = predict(spec, &circuits, &run).unwrap();
    assert_eq!(s.verdict, Verdict::Starts);
    // 0.5.14 asserts only the longest request, min(131072, 2) - 1 = 1 > 0 (0.5.23
    // tp_worker.py:421-425): 2 tokens start.
    run.engine_flags = flags(2);
    let s = predict("sglang==0.5.23", &circuits, &run).unwrap();
    assert_eq!(detail(&s).max_running_requests, 1);
    assert_eq!(s.verdict, Verdict::Starts);
}

#[test]
fn release_0_4_6_post5_holds_one_request_row_more() {
    let spec = "sglang==0.4.6.post5";
    let (circuits, run) = llama(spec, 1, "h100-sxm");
    let s = predict(spec, &circuits, &run).unwrap();
    let d = detail(&s);
    // The same pool as 0.4.7 (mfs 0.88, 444,165 tokens), but the request pool holds
    // max_num_reqs + 1 = 2049 rows (model_runner.py:901-907), and the printed value is
    // min(444165 // 2, 2049) = 2049 (managers/tp_worker.py:119-127).
    assert_eq!(d.mem_fraction_static, 0.88);
    assert_eq!(s.kv_cache_tokens, 444_165);
    assert_eq!(d.max_running_requests, 2049);
    assert_eq!(d.workers[0].req_to_token, 2049 * 131_076 * 4);
    // A given --max-running-requests 100: 101 rows, printed min(444165 // 2, 100... as given)
    // = 100.
    let mut given = run.clone();
    given.max_num_seqs = Some(100);
    let g = predict(spec, &circuits, &given).unwrap();
    assert_eq!(detail(&g).max_running_requests, 100);
    assert_eq!(detail(&g).workers[0].req_to_token, 101 * 131_076 * 4);
    // 0.4.7 holds exactly the rows given.
    let g7 = predict("sglang==0.4.7", &circuits, &given).unwrap();
    assert_eq!(detail(&g7).workers[0].req_to_token, 100 * 131_076 * 4);
}

#[test]
fn the_fraction_tables_per_device_and_release() {
    // An H100 NVL (95,830 MiB): 0.4.6 takes (95830 - 13312) / 95830 = 0.8610873421684232 above
    // 81,920 MiB (server_args.py:236-238; at any TP, but it is refused at TP > 1); 0.4.6.post2
    // on take 0.88 there (the 96 GiB rule needs more than 98,304 MiB).
    assert_eq!(
        default_fraction("sglang==0.4.6", 1, "h100-nvl"),
        0.861_087_342_168_423_2
    );
    assert_eq!(default_fraction("sglang==0.4.6.post3", 1, "h100-nvl"), 0.88);
    assert_eq!(default_fraction("sglang==0.4.7", 2, "h100-nvl"), 0.88);
    // An H200 (143,771 MiB): 0.4.6 (143771 - 13312) / 143771 = 0.9074083090470262; 0.4.6.post2
    // on min(0.88 + 49152 x 0.12 / 143771, (143771 - 18432) / 143771) = min(0.92102...,
    // 0.8717961202189594) (0.4.6.post5 server_args.py:262-268).
    assert_eq!(
        default_fraction("sglang==0.4.6", 1, "h200"),
        0.907_408_309_047_026_2
    );
    assert_eq!(
        default_fraction("sglang==0.4.6.post5", 1, "h200"),
        0.871_796_120_218_959_4
    );
    assert_eq!(
        default_fraction("sglang==0.4.7", 1, "h200"),
        0.871_796_120_218_959_4
    );
    // A B200 (183,359 MiB): 0.4.7 takes 0.79 above 180,000 MiB on CUDA (server_args.py:
    // 269-270), 0.4.6.post5 the 96 GiB rule: min(0.88 + 49152 x 0.12 / 183359, (183359 -
    // 18432) / 183359) = 0.8994758915570003.
    assert_eq!(default_fraction("sglang==0.4.7", 1, "b200"), 0.79);
    assert_eq!(
        default_fraction("sglang==0.4.6.post5", 1, "b200"),
        0.899_475_891_557_000_3
    );
    // An A100 80GB reports 81,920 MiB, inside the rows: 0.88 at TP 1, 0.85 at TP 4, 0.81 at TP
    // 8 (the rows read TP alone in 0.4.6 and TP x PP after; PP > 1 is refused by all of them,
    // TP > 1 by 0.4.6 to 0.4.6.post3).
    assert_eq!(default_fraction("sglang==0.4.6", 1, "a100-80gb"), 0.88);
    for spec in ["sglang==0.4.6.post4", "sglang==0.4.7"] {
        assert_eq!(default_fraction(spec, 4, "a100-80gb"), 0.85, "{spec}");
        assert_eq!(default_fraction(spec, 8, "a100-80gb"), 0.81, "{spec}");
    }
}

#[test]
fn the_device_tiers_per_release() {
    // A B200: 0.4.7 chunks 16,384 tokens and captures up to 512 (server_args.py:287-288,
    // cuda_graph_runner.py:150-153: 23 + 12 (168..256 by 8) + 16 (272..512 by 16) = 51
    // sizes); 0.4.6.post5 8192 and up to 256 (35 sizes).
    let at = |spec: &str, dev: &str| {
        let (circuits, run) = llama(spec, 1, dev);
        let s = predict(spec, &circuits, &run).unwrap();
        let d = detail(&s);
        (
            d.chunked_prefill_size,
            d.decode_graph_sizes.len(),
            d.decode_graph_sizes.last().copied(),
        )
    };
    assert_eq!(at("sglang==0.4.7", "b200"), (16_384, 51, Some(512)));
    assert_eq!(at("sglang==0.4.6.post5", "b200"), (8192, 35, Some(256)));
    // An H100 NVL (95,830 MiB): 0.4.6 captures up to 256 above 81,920 MiB
    // (cuda_graph_runner.py:137-139), 0.4.6.post2 on only above 96 GiB.
    assert_eq!(at("sglang==0.4.6", "h100-nvl"), (8192, 35, Some(256)));
    assert_eq!(at("sglang==0.4.6.post3", "h100-nvl"), (8192, 23, Some(160)));
    // An L4 (23,034 MiB, below 25,000): 2048 tokens and graphs up to 8 at TP < 4
    // (server_args.py:260-266): [1, 2, 4, 8].
    assert_eq!(at("sglang==0.4.6", "l4"), (2048, 4, Some(8)));
}

#[test]
fn tp2_reads_the_world_through_gloo_from_0_4_6_post4_and_is_refused_before() {
    // 0.4.7 at TP 2: mfs 0.87 (TP x PP = 2). Per rank 8,101,298,176 B of weights, the
    // allocator's segments (sglang_0_5_23.rs). F = 83,389,872,866 B through float32 =
    // 77.662872 GiB; A through float32 = 70.117950 GiB; rest = 70.117950 - 77.662872 x 0.13 =
    // 60.021777 GiB: // 65,536 B (4 KV heads x 128 x 32 x 2 x 2 B) = 983,396 tokens.
    let spec = "sglang==0.4.7";
    let (circuits, run) = llama(spec, 2, "h100-sxm");
    let s = predict(spec, &circuits, &run).unwrap();
    assert_eq!(detail(&s).mem_fraction_static, 0.87);
    assert_eq!(s.workers[0].weights, 8_101_298_176);
    assert_eq!(detail(&s).cell_bytes, vec![65_536]);
    assert_eq!(s.kv_cache_tokens, 983_396);
    assert_eq!(
        predict("sglang==0.4.6.post4", &circuits, &run)
            .unwrap()
            .kv_cache_tokens,
        983_396
    );
    // 0.4.6 to 0.4.6.post3: F and A through an all-reduce on torch's NCCL group, whose
    // communicator is created between the reads: refused.
    for spec in ["sglang==0.4.6.post3", "sglang==0.4.6"] {
        let e = predict(spec, &circuits, &run).unwrap_err().to_string();
        assert!(e.contains("torch's NCCL group"), "{spec}: {e}");
    }
}

#[test]
fn the_capture_flag_is_refused_with_each_release_s_reason() {
    let (circuits, run) = llama("sglang==0.4.6", 1, "h100-sxm");
    let mut run = run;
    run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
        cuda_graph_max_bs: Some(64),
        ..SglangFlags::default()
    }));
    let e = predict("sglang==0.4.6", &circuits, &run)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--cuda-graph-max-bs: SGLang 0.4.6 to 0.4.6.post3 only filter"),
        "{e}"
    );
    let e = predict("sglang==0.4.7", &circuits, &run)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--cuda-graph-max-bs: SGLang 0.4.6.post4 to 0.4.7 extend"),
        "{e}"
    );
}

#[test]
fn classes_a_release_lacks_are_refused() {
    // The refusal reads the model's class alone: Llama-3.1-8B's layout under another class's
    // name. models/ gains phi.py in 0.4.9.post3 and glm4_moe.py in 0.4.9.post5.
    let (circuits, run) = llama("sglang==0.4.7", 1, "h100-sxm");
    let named = |class: &str| {
        let mut r = run.clone();
        r.model.architecture = class.to_owned();
        r
    };
    let refused = |spec: &str, class: &str| {
        predict(spec, &circuits, &named(class))
            .err()
            .map(|e| e.to_string())
    };
    for spec in ["sglang==0.4.6", "sglang==0.4.7", "sglang==0.4.9.post2"] {
        let e = refused(spec, "PhiForCausalLM").unwrap();
        assert!(e.contains("PhiForCausalLM under sglang"), "{spec}: {e}");
        assert!(refused(spec, "Glm4MoeForCausalLM").is_some(), "{spec}");
    }
    assert_eq!(refused("sglang==0.4.9.post3", "PhiForCausalLM"), None);
    assert!(refused("sglang==0.4.9.post4", "Glm4MoeForCausalLM").is_some());
    assert_eq!(refused("sglang==0.4.9.post5", "Glm4MoeForCausalLM"), None);
}

/// Gemma-3-1B-it (data/checkpoints) on an H100 at TP 1 under `spec`, with `flags`.
fn gemma(spec: &str, flags: SglangFlags, page: Option<u64>) -> (Vec<Circuit>, RunSettings) {
    let mut options = ImportOptions::default();
    options.load = release(spec).load_rules();
    let config = include_str!("../../data/checkpoints/gemma-3-1b-it/config.json");
    let sharded =
        circuit_hf::import_parallel(config, "gemma-3-1b-it/config.json", &options, &[]).unwrap();
    let model: ModelFacts = sharded.imports[0].facts.clone();
    let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let (_, mut run) = llama(spec, 1, "h100-sxm");
    run.model = model;
    run.block_size = page;
    run.engine_flags = Some(EngineFlags::Sglang(flags));
    (circuits, run)
}

#[test]
fn releases_0_4_9_post3_to_0_4_10_post2_split_gemma_3_s_pool() {
    let spec = "sglang==0.4.10.post2";
    let (circuits, run) = gemma(spec, SglangFlags::default(), None);
    let s = predict(spec, &circuits, &run).unwrap();
    let d = detail(&s);
    // Weights: 1,999,771,904 B of parameters; no rope cache, as no layer calls get_rope
    // (models/gemma3_causal.py:270 commented out): the two Gemma3RotaryEmbedding modules
    // (:491, :498) hold inv_freq, 256 / 2 float32 each (:371-388): 2 x 512 B; 1,999,772,928 B
    // of tensors, held as the allocator's segments: those of 10 MiB or more rounded up to 2 MiB
    // (gate_up_proj 30.375 MiB in 32, down_proj 15.1875 in 16, on 26 layers), the 1-10 MiB
    // ones (qkv_proj 3.375, o_proj 2.25 MiB a layer) and the small ones in 20 MiB and 2 MiB
    // segments (the rules replayed in order): 2,086,666,240 B. mfs 0.874 (0.4.10.post2's
    // reserve at TP 1 on 81,559 MiB).
    assert_eq!(circuits[0].weight_bytes(), 1_999_771_904);
    assert_eq!(s.workers[0].weights, 2_086_666_240);
    assert_eq!(d.workers[0].after_load, 0);
    assert_eq!(d.mem_fraction_static, 0.874);
    // rest = (F - W) / 2^30 - F / 2^30 x 0.126 GiB = 71,753,302,005 B; the all-layer cell 1 KV
    // head x 256 x 26 layers x 2 x 2 B = 26,624 B: T = 2,695,060 (model_runner.py:955-990).
    assert_eq!(d.cell_bytes, vec![26_624]);
    assert_eq!(d.pool_budget, 71_753_302_005);
    // Layers 5, 11, 17, 23 full (layer_types: every sixth), 22 sliding (window 511 in SGLang,
    // 512 as the config gives it): full = int(2,695,060 x 26 / (0.8 x 22 + 4)) = 3,244,053,
    // swa = int(3,244,053 x 0.8) = 2,595,242 (model_runner.py:1047-1067).
    assert_eq!(s.kv_layout.groups.len(), 2);
    assert_eq!(s.kv_layout.groups[0].layers, 4);
    assert_eq!(s.kv_layout.groups[1].layers, 22);
    assert_eq!(d.max_total_num_tokens, 3_244_053);
    assert_eq!(s.kv_cache_tokens, 3_244_053);
    assert_eq!(d.swa_tokens, Some(2_595_242));
    // K = V = 512 B a layer and token x (4 x (3,244,053 + 1) + 22 x (2,595,242 + 1)) rows
    // (SWAKVPool's page of 1, mem_cache/memory_pool.py:441): 35,876,639,744 B each, 12,288 B
    // below one pool of T + 1 rows over every layer.
    assert_eq!(d.workers[0].k_bytes, 35_876_639_744);
    assert_eq!(d.workers[0].v_bytes, 35_876_639_744);
    assert_eq!((2_695_060 + 1) * 26 * 512 - 35_876_639_744_u64, 12_288);
    // The index map: (3,244,053 + 2,595,242 + 1) x 8 B (mem_cache/allocator.py:190-193).
    assert_eq!(d.workers[0].swa_index_map, 46_714_368);
    // The estimate reads T: clamp(int(2,695,060 / 32768 x 512) = 42,110, 2048, 4096) = 4096
    // rows; printed min(3,244,053 // 2, 4096) = 4096.
    assert_eq!(d.max_running_requests, 4096);
    assert_eq!(d.workers[0].req_to_token, 4096 * (32_768 + 4) * 4);
    // left = F - W - K - V - req_to_token - the map.
    assert_eq!(
        d.workers[0].left_for_activations,
        F_TP1 - 2_086_666_240 - 2 * 35_876_639_744 - 536_936_448 - 46_714_368
    );
    assert_eq!(s.verdict, Verdict::Starts);
    // 0.4.10 and 0.4.9.post3 (Gemma 2 hybrid too) split the same way.
    for older in ["sglang==0.4.10", "sglang==0.4.9.post3"] {
        let o = predict(older, &circuits, &run).unwrap();
        assert_eq!(detail(&o).swa_tokens, Some(2_595_242), "{older}");
        assert_eq!(o.kv_cache_tokens, 3_244_053, "{older}");
    }
    // 0.4.9.post2 has no hybrid pool: one pool of T over every layer.
    let whole = predict("sglang==0.4.9.post2", &circuits, &run).unwrap();
    assert_eq!(whole.kv_cache_tokens, 2_695_060);
    assert_eq!(detail(&whole).swa_tokens, None);
}

#[test]
fn a_hybrid_pool_under_a_token_cap_a_page_and_a_target() {
    let spec = "sglang==0.4.10.post2";
    // --max-total-tokens 1,000,000 caps T before the split: full = int(1,000,000 x 26 / 21.6)
    // = 1,203,703, more than the cap, swa = int(1,203,703 x 0.8) = 962,962, as SGLang prints.
    let capped = SglangFlags {
        max_total_tokens: Some(1_000_000),
        ..SglangFlags::default()
    };
    let (circuits, run) = gemma(spec, capped, None);
    let s = predict(spec, &circuits, &run).unwrap();
    assert_eq!(s.kv_cache_tokens, 1_203_703);
    assert_eq!(detail(&s).swa_tokens, Some(962_962));
    // --page-size 16: SWAKVPool pages by 1 while the allocator would page by 16: refused.
    let (circuits, run) = gemma(spec, SglangFlags::default(), Some(16));
    let e = predict(spec, &circuits, &run).unwrap_err().to_string();
    assert!(
        e.starts_with("--page-size: sglang 0.4.10.post2 builds a hybrid"),
        "{e}"
    );
    // The mem_fraction_static for 3,244,053 full tokens: the least T whose split reaches it is
    // 2,695,060 (2,695,059 gives 3,244,052), 71,753,277,440 B: 1 - (A - that) / F =
    // 0.8739997..., 0.874 to SGLang's 3 decimals.
    let (circuits, run) = gemma(spec, SglangFlags::default(), None);
    let answers = release(spec)
        .budget_answers(&StageCircuit::in_order(&circuits), &run, 3_244_053)
        .unwrap();
    assert_eq!(answers.utilization_for_target, Some(0.874));
}

#[test]
fn replicas_share_gpus_with_pipeline_stages_until_0_5_3() {
    // --pp-size 2 --dp-size 2: 0.5.2 starts replica 1 at GPU 1 x tp = 1
    // (managers/data_parallel_controller.py:156) while replica 0's second stage sits at GPU
    // 1 x tp = 1 (:241-246): refused. 0.5.3 steps by tp x pp (:212-214): replica 1 from GPU 2,
    // 1 x 2 x 2 = 4 GPUs.
    let pp2 = |spec: &str| {
        let mut options = ImportOptions::default();
        options.load = release(spec).load_rules();
        options.parallel = Parallel {
            tp: 1,
            pp: 2,
            dp: 1,
            expert_parallel: false,
        };
        let config = include_str!("../../data/models/llama-3.1-8b/config.json");
        let sharded =
            circuit_hf::import_parallel(config, "llama-3.1-8b/config.json", &options, &[]).unwrap();
        let (_, mut run) = llama(spec, 1, "h100-sxm");
        run.pipeline_parallel_size = 2;
        run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
            dp_size: Some(2),
            ..SglangFlags::default()
        }));
        let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
        predict(spec, &circuits, &run)
    };
    assert_eq!(
        pp2("sglang==0.5.2").unwrap_err().to_string(),
        "--dp-size 2: SGLang 0.5.2 starts replica r at GPU r x tp, not r x tp x pp, so with --pp-size 2 the replicas' stages share GPUs, which is not modelled"
    );
    let s = pp2("sglang==0.5.3").unwrap();
    assert_eq!((detail(&s).replicas, detail(&s).gpus), (2, 4));
}
