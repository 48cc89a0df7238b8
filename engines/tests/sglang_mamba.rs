//! Qwen3-Next's recurrent-state ("mamba") pool across SGLang releases
//! (`[startup.sglang.mamba]`, docs/engines.md "Recurrent state"), each figure derived by hand
//! from the release's source (the arithmetic in each test's comments): the rule of 0.5.17 to
//! 0.5.23 (K = int((budget - slot) // slot), the rest loses K + 1 slots, 5 slots a request),
//! 0.5.13's (K = int(budget // slot), the rest loses K slots, 3 a request), 0.5.7's (5 a
//! request again), `--mamba-full-memory-ratio` and `--max-mamba-cache-size`, and the
//! refusals. Qwen3-Next-80B-A3B at TP 4 on H100s throughout.

use circuit_hf::KvCacheDtype;
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{
    EngineError, EngineFlags, EngineProfile, RunSettings, StageCircuit, Startup, Verdict,
};

mod common;
use common::detail;

/// One slot over the 36 Gated DeltaNet layers at TP 4 (configs/mamba_utils.py:116-125; the
/// Qwen3-Next config): conv (2 x 16 x 128 + 32 x 128) / 4 = 2048 channels x (4 - 1) x 2 B
/// (bfloat16) + temporal 32 / 4 = 8 heads x 128 x 128 x 4 B (float32) = 536,576 B a layer.
const SLOT: u64 = 36 * (2048 * 3 * 2 + 8 * 128 * 128 * 4);
/// The request table's row: int32 over context_len 262,144 + 4.
const ROW: u64 = (262_144 + 4) * 4;

fn release(r: &str) -> EngineProfile {
    engines::select(&format!("sglang=={r}")).unwrap()
}

fn config(name: &str) -> &'static str {
    match name {
        "qwen3-next" => {
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json")
        }
        "llama-3.1-8b" => include_str!("../../data/models/llama-3.1-8b/config.json"),
        other => panic!("no config {other}"),
    }
}

/// `name` at TP `tp` as `profile` loads it, and a run of SGLang's defaults on an H100.
fn layout(profile: &EngineProfile, name: &str, tp: u64) -> (Vec<Circuit>, RunSettings) {
    let origin = format!("{name}/config.json");
    common::layout(
        profile.load_rules(),
        config(name),
        &origin,
        tp,
        KvCacheDtype::Auto,
        "h100-sxm",
    )
}

/// Qwen3-Next at TP 4 under release `r` with `flags`.
fn qwen3_next(r: &str, flags: SglangFlags) -> Result<Startup, EngineError> {
    let p = release(r);
    let (circuits, mut run) = layout(&p, "qwen3-next", 4);
    run.engine_flags = Some(EngineFlags::Sglang(flags));
    p.predict_layout(&StageCircuit::in_order(&circuits), &run)
}

#[test]
fn the_newer_rule_holds_from_0_5_17_to_0_5_23() {
    // 0.5.23's figures (engines/tests/sglang_0_5_23.rs): weights 40,011,563,008 B a rank (the
    // MTP block not built, the tensors held as the caching allocator's segments), mfs 0.819,
    // rest 26.342160 GiB, K = int((rest x 0.9 / 1.9 GiB - slot) // slot) = 692, the rest less
    // 693 slots leaves 14,898,180,358 B: 1,212,417 tokens of 12,288 B; requests min(2368,
    // T // 2, 692 // 5 = 138).
    for r in ["0.5.17", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"] {
        let s = qwen3_next(r, SglangFlags::default()).unwrap();
        let d = detail(&s);
        assert_eq!(d.mamba_slots, Some(692), "{r}");
        assert_eq!(d.workers[0].recurrent_state, 693 * SLOT, "{r}");
        assert_eq!(s.kv_cache_tokens, 1_212_417, "{r}");
        assert_eq!(d.max_running_requests, 138, "{r}");
    }
    // 0.5.16 (kv_cache_configurator.py:1789, 1808-1813) keeps no slot back and charges K:
    // K = int(budget // slot) = 693, the rest loses 693 slots (the same bytes as 692 + 1 above,
    // so the same 1,212,417 tokens), the pool holds 694 (memory_pool.py:499, 522); 693 // 5 =
    // 138 requests.
    let s = qwen3_next("0.5.16", SglangFlags::default()).unwrap();
    let d = detail(&s);
    assert_eq!(d.mamba_slots, Some(693));
    assert_eq!(d.workers[0].recurrent_state, 694 * SLOT);
    assert_eq!(s.kv_cache_tokens, 1_212_417);
    assert_eq!(d.max_running_requests, 138);
}

#[test]
fn release_0_5_13_charges_k_slots_and_three_a_request() {
    let s = qwen3_next("0.5.13", SglangFlags::default()).unwrap();
    let d = detail(&s);
    // Reserve (0.5.13 server_args.py:1592-1630): 512 + 8192 x 1.5 + 512 x 2 (decode max_bs at
    // TP 4) + 4 / 8 x 1024 = 14,336 MB, no prefill graphs for Qwen3-Next; mfs = round((81559 -
    // 14336) / 81559, 3) = 0.824.
    assert_eq!(d.mem_fraction_static, 0.824);
    assert_eq!(d.reserved_kib, 14_336 * 1024);
    // F and A through float32: 77.662872 and 40.399139 GiB (A after 0.5.23's weights of
    // 40,011,563,008 B and the 65,536 B the rope cache grows by); rest = 40.399139 - 77.662872
    // x 0.176 = 26.730474 GiB; K = int(rest x 0.9 / 1.9 x 2^30 // 19,316,736) = 703
    // (model_runner_kv_cache_mixin.py:161); the rest loses 703 slots (:179-184): 14.083425 GiB,
    // int(x 2^30) = 15,121,962,369 B // 12,288 = 1,230,628 tokens; the pool holds 704 slots.
    assert_eq!(d.mamba_slots, Some(703));
    assert_eq!(d.pool_budget, 15_121_962_369);
    assert_eq!(s.kv_cache_tokens, 1_230_628);
    assert_eq!(d.workers[0].recurrent_state, 704 * SLOT);
    // Requests: min(clamp(int(1,230,628 / 262,144 x 512) = 2403), T // 2) capped at K // 3 =
    // 234 (no_buffer, server_args.py:1225-1228; _calculate_mamba_ratio :233-253), and the
    // request table 235 rows.
    assert_eq!(d.max_running_requests, 234);
    assert_eq!(d.workers[0].req_to_token, 235 * ROW);
    assert_eq!(s.verdict, Verdict::Starts);
    // 0.5.8 to 0.5.12.post1 size alike (no error checks there, none raised here); 0.5.8's
    // request table is sized by the capped count first (model_runner_kv_cache_mixin.py:268-281,
    // `state_cap`): 234 rows, no padding row before 0.5.11.
    for r in ["0.5.12", "0.5.9", "0.5.8"] {
        let s = qwen3_next(r, SglangFlags::default()).unwrap();
        assert_eq!(s.kv_cache_tokens, 1_230_628, "{r}");
        assert_eq!(detail(&s).max_running_requests, 234, "{r}");
    }
    let s = qwen3_next("0.5.8", SglangFlags::default()).unwrap();
    assert_eq!(detail(&s).workers[0].req_to_token, 234 * ROW);
    // 0.5.7 caps at K // 5 (model_runner_kv_cache_mixin.py:290-304 adds the overlap's 2 even
    // under no_buffer): 703 // 5 = 140 requests and rows.
    let s = qwen3_next("0.5.7", SglangFlags::default()).unwrap();
    assert_eq!(s.kv_cache_tokens, 1_230_628);
    assert_eq!(detail(&s).max_running_requests, 140);
    assert_eq!(detail(&s).workers[0].req_to_token, 140 * ROW);
}

#[test]
fn the_ratio_flag_moves_the_split() {
    // --mamba-full-memory-ratio 0.5 on 0.5.23: budget = 26.342160 x 0.5 / 1.5 GiB, K =
    // int((budget - slot) // slot) = 487; the rest less 488 slots = 17.562985 GiB =
    // 18,858,111,238 B: 1,534,677 tokens; requests min(2997, T // 2, 487 // 5 = 97).
    let s = qwen3_next(
        "0.5.23",
        SglangFlags {
            mamba_full_memory_ratio: Some(0.5),
            ..SglangFlags::default()
        },
    )
    .unwrap();
    let d = detail(&s);
    assert_eq!(d.mamba_slots, Some(487));
    assert_eq!(d.workers[0].recurrent_state, 488 * SLOT);
    assert_eq!(d.pool_budget, 18_858_111_238);
    assert_eq!(s.kv_cache_tokens, 1_534_677);
    assert_eq!(d.max_running_requests, 97);
    // A ratio that is not positive is refused; 0.5.6 and older size no pool (refused), so
    // the flag is judged where the model is.
    for bad in [0.0, -1.0, f64::NAN] {
        let e = qwen3_next(
            "0.5.23",
            SglangFlags {
                mamba_full_memory_ratio: Some(bad),
                ..SglangFlags::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                EngineError::BadSetting {
                    what: "mamba_full_memory_ratio",
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn the_cache_size_flag_sets_k() {
    // --max-mamba-cache-size 600 on 0.5.23 is K (kv_cache_configurator.py:3303-3309): the rest
    // loses 601 slots, 26.342160 - 601 x 19,316,736 / 2^30 = 15.530102 GiB = 16,675,320,070 B:
    // 1,357,041 tokens; requests min(2650, T // 2, 600 // 5 = 120).
    let flags = SglangFlags {
        max_mamba_cache_size: Some(600),
        ..SglangFlags::default()
    };
    let s = qwen3_next("0.5.23", flags.clone()).unwrap();
    let d = detail(&s);
    assert_eq!(d.mamba_slots, Some(600));
    assert_eq!(d.workers[0].recurrent_state, 601 * SLOT);
    assert_eq!(d.pool_budget, 16_675_320_070);
    assert_eq!(s.kv_cache_tokens, 1_357_041);
    assert_eq!(d.max_running_requests, 120);
    // On 0.5.13 the rest loses 600 slots: 26.730474 - 600 x slot / 2^30 = 15.936406 GiB =
    // 17,111,586,177 B: 1,392,544 tokens; requests min(2719, T // 2, 600 // 3 = 200).
    let s = qwen3_next("0.5.13", flags).unwrap();
    let d = detail(&s);
    assert_eq!(d.pool_budget, 17_111_586_177);
    assert_eq!(s.kv_cache_tokens, 1_392_544);
    assert_eq!(d.max_running_requests, 200);
    assert_eq!(d.workers[0].recurrent_state, 601 * SLOT);
    // Two slots serve no request at 3 a request: 0.5.13 raises its own error
    // (model_runner_kv_cache_mixin.py:895-903), 0.5.12 checks nothing and tp_worker's
    // assertion follows.
    let two = SglangFlags {
        max_mamba_cache_size: Some(2),
        ..SglangFlags::default()
    };
    let s = qwen3_next("0.5.13", two.clone()).unwrap();
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some(
            "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. max_mamba_cache_size=2, mamba_ratio=3, resulting max_num_reqs=0. Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with more memory."
        )
    );
    let s = qwen3_next("0.5.12", two).unwrap();
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some("AssertionError: max_running_request is zero")
    );
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
}

#[test]
fn what_is_refused() {
    // 0.5.6 and older: three rules within one folder's releases (a fixed 512, a ratio of 0.2,
    // a ratio that overwrites --max-mamba-cache-size): Qwen3-Next is refused.
    let e = qwen3_next("0.5.6", SglangFlags::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "per-sequence recurrent state: sglang 0.5.6 sizes a mamba state pool beside the KV cache for Qwen3NextForCausalLM, which its engine file does not describe"
        ),
        "{e}"
    );
    // A model without recurrent state: the flags change nothing, refused by name.
    let p = release("0.5.23");
    let (circuits, mut run) = layout(&p, "llama-3.1-8b", 1);
    for (flags, flag) in [
        (
            SglangFlags {
                mamba_full_memory_ratio: Some(0.9),
                ..SglangFlags::default()
            },
            "--mamba-full-memory-ratio",
        ),
        (
            SglangFlags {
                max_mamba_cache_size: Some(100),
                ..SglangFlags::default()
            },
            "--max-mamba-cache-size",
        ),
    ] {
        run.engine_flags = Some(EngineFlags::Sglang(flags));
        let e = p
            .predict_layout(&StageCircuit::in_order(&circuits), &run)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{flag}: LlamaForCausalLM has no recurrent state that sglang 0.5.23 sizes a mamba pool for, so the flag changes nothing; drop it"
            )
        );
    }
}

#[test]
fn release_0_5_2_holds_a_fixed_count() {
    // 0.5.2 (model_runner.py:308-326): the radix cache off for Qwen3-Next and K = 512 without
    // --max-mamba-cache-size or --max-running-requests; the rest loses 512 slots (:1126-1131);
    // the requests are min(estimate, K) = 512 (:1262-1263); the pool holds 513 slots and a 512
    // int32 index (memory_pool.py:117-126, 243-245); the request table 512 rows.
    let s = qwen3_next("0.5.2", SglangFlags::default()).unwrap();
    let d = detail(&s);
    assert_eq!(d.mamba_slots, Some(512));
    assert_eq!(d.max_running_requests, 512);
    assert_eq!(d.workers[0].recurrent_state, 513 * SLOT + 512 * 4);
    assert_eq!(d.workers[0].req_to_token, 512 * ROW);
    // mfs (server_args.py:451-498): (81559 - (9.5 + 4 / 2) x 1024) / 81559 = 0.856; F and A
    // through float32 77.662872 and 40.399200 GiB (the weights 40,011,563,008 B, no RoPE
    // growth); rest = 40.399200 - 77.662872 x 0.144 = 29.215747 GiB, less 512 x 19,316,736 B =
    // 20.004809 GiB = 21,480,000,454 B: 1,748,046 tokens of 12,288 B.
    assert_eq!(d.mem_fraction_static, 0.856);
    assert_eq!(d.pool_budget, 21_480_000_454);
    assert_eq!(s.kv_cache_tokens, 1_748_046);
    // --max-running-requests 64 is K as well: 64 slots charged, 65 held.
    let p = release("0.5.2");
    let (circuits, mut run) = layout(&p, "qwen3-next", 4);
    run.max_num_seqs = Some(64);
    let s = p
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap();
    assert_eq!(detail(&s).mamba_slots, Some(64));
    assert_eq!(detail(&s).max_running_requests, 64);
    assert_eq!(detail(&s).workers[0].recurrent_state, 65 * SLOT + 64 * 4);
    // 0.5.2 has no --mamba-full-memory-ratio.
    let e = qwen3_next(
        "0.5.2",
        SglangFlags {
            mamba_full_memory_ratio: Some(0.5),
            ..SglangFlags::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "--mamba-full-memory-ratio: sglang 0.5.2 has no such flag: it holds a fixed count of state slots (--max-mamba-cache-size, else --max-running-requests, else 512)"
    );
}
