//! vLLM 0.34's extensible KV cache and the memory in use before vLLM's first snapshot
//! (engines/vllm-0.34/engine.toml `[kv_cache.measured]`): the headroom `free + committed` after
//! warm-up is `init_free - non_kv_used` (v1/worker/extensible_kv_cache.py:613-616), and
//! `init_free` is the snapshot taken after the CUDA context, the communicators and the cuBLAS
//! handles exist (v1/worker/gpu_worker.py:498-549). At the default utilization 1.0 the
//! headroom binds, so the KV bytes are those the device would leave less exactly the assumed
//! context (0.51 GiB = 547,608,330 B) and, in a world of more than one worker, the assumed
//! communicators (1.02 GiB = 1,095,216,660 B). The assumption is vLLM 0.19's H100 start-up logs'
//! measured figure (data/vllm/cases.json), the one SGLang's profile states too.

use circuit_hf::KvCacheDtype;
use engine_profile::{StageCircuit, Startup};

mod common;

/// The H100's CUDA total (crates/kernel-families/devices.toml).
const H100_TOTAL: u64 = 85_032_697_856;
const CONTEXT: u64 = 547_608_330;
const COMMUNICATORS: u64 = 1_095_216_660;
const GIB: f64 = (1u64 << 30) as f64;

fn config(name: &str) -> String {
    let path = format!(
        "{}/../data/models/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// 0.34's start-up of `model` at TP `tp` on an H100, at its defaults and a max-model-len of
/// 8,192.
fn predict(model: &str, tp: u64) -> Startup {
    let profile = engines::profile("vllm-0.34").unwrap();
    let (circuits, mut run) = common::layout(
        profile.load_rules(),
        &config(model),
        model,
        tp,
        KvCacheDtype::Auto,
        "h100-sxm",
    );
    run.max_model_len = Some(8192);
    profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap_or_else(|e| panic!("{model} TP {tp}: {e}"))
}

/// The KV bytes, the blocks and the tokens of Llama-3.1-8B and Qwen3-30B-A3B at TP 1 and 2.
/// Before the assumption (the memory in use at start taken as 0) the first worker's KV bytes
/// were 65,129,343,354 (Llama TP 1), 71,140,014,766 (Llama TP 2), 18,924,359,578 (Qwen3 TP 1)
/// and 47,255,728,270 (Qwen3 TP 2): 496,896, 1,085,504, 192,448 and 961,408 tokens. Now each
/// is less the context (547,608,330) at TP 1, less context and communicators (1,642,824,990)
/// at TP 2; blocks = floor(KV / block bytes) (64 tokens: 8 MiB Llama TP 1, 4 MiB TP 2, 6 MiB
/// Qwen3 TP 1, 3 MiB TP 2), tokens = blocks x 64:
/// - Llama TP 1: 64,581,735,024 B, 7,698 blocks, 492,672 tokens (-0.85%);
/// - Llama TP 2: 69,497,189,776 B, 16,569 blocks, 1,060,416 tokens (-2.31%);
/// - Qwen3 TP 1: 18,376,751,248 B, 2,920 blocks, 186,880 tokens (-2.89%);
/// - Qwen3 TP 2: 45,612,903,280 B, 14,499 blocks, 927,936 tokens (-3.48%).
#[test]
fn the_memory_in_use_at_start_comes_off_the_kv_cache() {
    for (model, tp, kv, blocks, tokens) in [
        ("llama-3.1-8b", 1, 64_581_735_024, 7_698, 492_672),
        ("llama-3.1-8b", 2, 69_497_189_776, 16_569, 1_060_416),
        ("qwen3-30b-a3b", 1, 18_376_751_248, 2_920, 186_880),
        ("qwen3-30b-a3b", 2, 45_612_903_280, 14_499, 927_936),
    ] {
        let s = predict(model, tp);
        let w = &s.workers[0];
        let at = format!("{model} TP {tp}");
        assert_eq!(
            (w.kv_cache, s.kv_blocks, s.kv_cache_tokens),
            (kv, blocks, tokens),
            "{at}"
        );
        // The identity: KV = total - in use at start - used - margin - transient, the
        // headroom binding at utilization 1.0 (requested = total).
        assert_eq!(s.requested, H100_TOTAL, "{at}");
        let in_use = if tp > 1 {
            CONTEXT + COMMUNICATORS
        } else {
            CONTEXT
        };
        let used = w.weights + w.resident + w.persistent + w.non_torch + w.cuda_graph.total;
        let transient = w.activation_peak - w.persistent;
        let margin = (1u64 << 30).max((transient as f64 * 0.75) as u64);
        assert_eq!(
            w.kv_cache,
            H100_TOTAL - in_use - used - margin - transient,
            "{at}"
        );
    }
}

/// The assumption is the logs' figure, not a fit: every 0.19 H100 case at TP 1 prints "Free
/// memory on device (78.68/79.19 GiB) on startup" (two decimals of GiB), 0.51 GiB in use; the
/// Llama TP 2 case 77.66, 1.02 GiB more. The stated bytes are those figures within the
/// printed rounding (+-0.01 GiB for a difference of two rounded numbers).
#[test]
fn the_assumption_is_the_0_19_logs_figure() {
    let text = std::fs::read_to_string(format!(
        "{}/../data/vllm/cases.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let free_at_start = |case: &serde_json::Value| -> (f64, f64) {
        let line = case["log_lines"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str())
            .find(|l| l.contains(" GiB) on startup"))
            .unwrap();
        let figures = line.split("Free memory on device (").nth(1).unwrap();
        let (free, rest) = figures.split_once('/').unwrap();
        let total = rest.split_once(' ').unwrap().0;
        (free.parse().unwrap(), total.parse().unwrap())
    };
    let mut tp1 = 0;
    for case in cases.as_array().unwrap() {
        let (tp, pp) = (
            case["tensor_parallel_size"].as_u64().unwrap(),
            case["pipeline_parallel_size"].as_u64().unwrap(),
        );
        let (free, total) = free_at_start(case);
        if tp * pp == 1 {
            tp1 += 1;
            assert_eq!((free, total), (78.68, 79.19), "{}", case["name"]);
        }
        if case["name"] == "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192" {
            assert_eq!((free, total), (77.66, 79.19));
        }
    }
    assert_eq!(tp1, 5);
    assert!((CONTEXT as f64 / GIB - (79.19 - 78.68)).abs() < 0.01);
    assert!((COMMUNICATORS as f64 / GIB - (78.68 - 77.66)).abs() < 0.01);
}

/// One figure for one device: the vLLM profile states the same context and communicators as
/// SGLang's (engines/sglang-0.5.23/engine.toml `[startup.sglang.free_memory]`), so the two
/// cannot drift apart.
#[test]
fn the_figures_are_sglangs() {
    let stated = |folder: &str, key: &str| -> u64 {
        let text = engines::folders()
            .iter()
            .find(|f| f.name == folder)
            .unwrap()
            .engine;
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{folder}: no {key}"));
        line.split_once(" = ")
            .unwrap()
            .1
            .replace('_', "")
            .parse()
            .unwrap()
    };
    for (key, value) in [
        ("cuda_context_bytes", CONTEXT),
        ("communicator_bytes", COMMUNICATORS),
    ] {
        assert_eq!(stated("vllm-0.34", key), value);
        assert_eq!(stated("sglang-0.5.23", key), value);
    }
}
