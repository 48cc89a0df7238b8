//! The profiles of the vLLM releases after 0.19 (engines/vllm-0.20 ... engines/vllm-0.34): each
//! loads and predicts Llama-3.1-8B and Qwen3-30B-A3B at TP 1 and the hybrid Qwen3-Next-80B-A3B
//! at TP 4 on the H100, at the release's defaults with a max-model-len of 8,192. No start-up log
//! of these releases is at hand (docs/engines.md, "Releases after 0.19"): the tests assert the
//! mechanism-level quantities derived by hand from each release's source (the arithmetic is in
//! the comments), the identities each release's budget obeys, and pin the whole figures the
//! derivation gives (`FIGURES`), so a change to any of them is seen.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use circuit_hf::{ImportOptions, Parallel};
use circuit_ir::Circuit;
use engine_profile::{
    EngineError, ModelFacts, PeakSetBy, RunSettings, StageCircuit, Startup, Worker,
};

/// The folders after 0.19, oldest first, with the releases each stands for.
const FOLDERS: &[(&str, &[&str])] = &[
    ("vllm-0.20", &["0.20.0", "0.20.1", "0.20.2"]),
    ("vllm-0.21", &["0.21.0"]),
    ("vllm-0.22", &["0.22.0", "0.22.1"]),
    ("vllm-0.23", &["0.23.0"]),
    ("vllm-0.24", &["0.24.0"]),
    ("vllm-0.25", &["0.25.0", "0.25.1"]),
    ("vllm-0.26", &["0.26.0"]),
    ("vllm-0.27", &["0.27.0", "0.27.1"]),
    ("vllm-0.28", &["0.28.0"]),
    ("vllm-0.29", &["0.29.0", "0.30.0"]),
    ("vllm-0.31", &["0.31.0", "0.32.0"]),
    ("vllm-0.33", &["0.33.0"]),
    ("vllm-0.34", &["0.34.0"]),
];

const LLAMA: &str = "llama-3.1-8b";
const QWEN3_MOE: &str = "qwen3-30b-a3b";
const QWEN3_NEXT: &str = "qwen3-next-80b-a3b";
const GPT_OSS: &str = "gpt-oss-20b";

/// The H100's CUDA total (crates/kernel-families/devices.toml).
const H100_TOTAL: u64 = 85_032_697_856;

fn h100() -> kernel_families::Device {
    kernel_families::Devices::builtin()
        .unwrap()
        .get("h100-sxm")
        .unwrap()
        .clone()
}

struct Model {
    circuits: Vec<Circuit>,
    facts: ModelFacts,
    tp: u64,
}

fn import(name: &str) -> Model {
    let (text, tp) = match name {
        LLAMA => (
            include_str!("../../data/models/llama-3.1-8b/config.json"),
            1,
        ),
        QWEN3_MOE => (
            include_str!("../../data/models/qwen3-30b-a3b/config.json"),
            1,
        ),
        QWEN3_NEXT => (
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json"),
            4,
        ),
        GPT_OSS => (
            include_str!("../../data/checkpoints/gpt-oss-20b/config.json"),
            1,
        ),
        other => panic!("no model {other}"),
    };
    let mut options = ImportOptions::default();
    // Every profile here loads as 0.19 does ([load] is not restated after it).
    options.load = engines::profile("vllm-0.19").unwrap().load_rules();
    options.parallel = Parallel {
        tp,
        pp: 1,
        dp: 1,
        expert_parallel: false,
    };
    let sharded = circuit_hf::import_parallel(text, name, &options, &[]).unwrap();
    let facts = sharded.imports[0].facts.clone();
    Model {
        circuits: sharded.imports.into_iter().map(|i| i.circuit).collect(),
        facts,
        tp,
    }
}

fn model(name: &'static str) -> &'static Model {
    static MODELS: OnceLock<Mutex<HashMap<&'static str, &'static Model>>> = OnceLock::new();
    let mut map = MODELS.get_or_init(Default::default).lock().unwrap();
    map.entry(name)
        .or_insert_with(|| Box::leak(Box::new(import(name))))
}

/// The release's defaults on the H100 at a max-model-len of 8,192, with prefix caching as
/// `prefix_caching` asks (None: the release's default).
fn run(m: &Model, prefix_caching: Option<bool>) -> RunSettings {
    RunSettings {
        tensor_parallel_size: m.tp,
        max_model_len: Some(8192),
        enable_prefix_caching: prefix_caching,
        ..RunSettings::new(h100(), m.facts.clone())
    }
}

fn try_predict(
    folder: &str,
    name: &'static str,
    prefix_caching: Option<bool>,
) -> Result<Startup, EngineError> {
    let m = model(name);
    engines::profile(folder).unwrap().predict_layout(
        &StageCircuit::in_order(&m.circuits),
        &run(m, prefix_caching),
    )
}

/// The start-up of `name` under `folder`: the release's defaults, and prefix caching off for
/// the hybrid model (which 0.28 on turn on for it: its figures here are without it).
fn predict(folder: &'static str, name: &'static str) -> &'static Startup {
    static CACHE: OnceLock<Mutex<HashMap<(&'static str, &'static str), &'static Startup>>> =
        OnceLock::new();
    let key = (folder, name);
    if let Some(s) = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .get(&key)
    {
        return s;
    }
    let prefix = (name == QWEN3_NEXT).then_some(false);
    let s: &'static Startup = Box::leak(Box::new(try_predict(folder, name, prefix).unwrap()));
    CACHE.get().unwrap().lock().unwrap().insert(key, s);
    s
}

fn first(folder: &'static str, name: &'static str) -> &'static Worker {
    &predict(folder, name).workers[0]
}

/// ceil(total x utilization), as vLLM computes it in doubles.
fn requested(utilization: f64) -> u64 {
    (H100_TOTAL as f64 * utilization).ceil() as u64
}

#[test]
fn every_release_maps_to_its_folder_and_plain_vllm_is_the_newest() {
    for (folder, releases) in FOLDERS {
        for r in *releases {
            assert_eq!(
                engines::resolve(&format!("vllm=={r}")).unwrap().folder,
                *folder
            );
        }
        let p = engines::profile(folder).unwrap();
        assert_eq!(p.releases(), *releases);
    }
    // 0.19.1 changes no file read (a MiniMax-only fusion, off unless asked for).
    assert_eq!(
        engines::resolve("vllm==0.19.1").unwrap().folder,
        "vllm-0.19"
    );
    let newest = engines::select("vllm").unwrap();
    assert_eq!(
        (newest.version(), newest.releases()),
        ("0.34.0", &["0.34.0".to_owned()][..])
    );
    let e = engines::resolve("vllm==0.35.0").unwrap_err().to_string();
    assert!(e.contains("release 0.35.0 is not modelled"), "{e}");
    assert!(
        e.contains("0.19.1, 0.20.0, 0.20.1")
            && e.ends_with("0.34.0 (a prediction for another release would be a wrong answer)"),
        "{e}"
    );
}

/// From 0.20 the default utilization is 0.92 (config/cache.py:66) and the CUDA-graph estimate
/// is subtracted (envs.py:1724-1726): KV = ceil(85,032,697,856 x 0.92) - (weights + peak +
/// non-torch + estimate) until 0.27 changes the budget.
#[test]
fn from_0_20_the_estimate_is_subtracted_at_0_92() {
    for folder in [
        "vllm-0.20",
        "vllm-0.21",
        "vllm-0.22",
        "vllm-0.23",
        "vllm-0.24",
        "vllm-0.25",
        "vllm-0.26",
    ] {
        for name in [LLAMA, QWEN3_MOE, QWEN3_NEXT] {
            let s = predict(folder, name);
            assert_eq!(s.gpu_memory_utilization, 0.92);
            assert_eq!(s.requested, requested(0.92));
            assert!(s.cuda_graph_subtracted);
            for w in &s.workers {
                let counted = w.weights + w.activation_peak + w.non_torch + w.cuda_graph.total;
                assert_eq!(w.counted_non_kv, counted, "{folder} {name}");
                assert_eq!(w.kv_cache, s.requested - counted, "{folder} {name}");
            }
        }
    }
    // 78,230,082,027.52 rounded up.
    assert_eq!(requested(0.92), 78_230_082_028);
}

/// Qwen3-30B-A3B in bf16 on Hopper runs FlashInfer's CUTLASS MoE in 0.20-0.22. vLLM's own
/// workspace is (M, K) = 8,192 x 2,048 x 2 = 33,554,432 B beside the 32 MiB cuBLAS workspace
/// (0.19's Triton pair was 2 x 8,192 x 8 x max(1,536, 2,048) x 2 = 536,870,912 B); FlashInfer's
/// per-call workspace is 8,192 x 8 x (max(2,048, 768) + max(1,536, 2,048)) x 2 = 536,870,912 B
/// of bf16 buffers plus 4 x 8,192 x (4 x 8 + 128) = 5,242,880 B of int32 maps: 542,113,792 B
/// held beside the forward. From 0.23 Triton is back (oracle/unquantized.py:73-75).
#[test]
fn flashinfer_cutlass_moe_from_0_20_to_0_22() {
    let cublas = 33_554_432;
    let triton_pair = 536_870_912;
    let old = first("vllm-0.19", QWEN3_MOE);
    assert_eq!(old.persistent, cublas + triton_pair);
    for folder in ["vllm-0.20", "vllm-0.21", "vllm-0.22"] {
        let w = first(folder, QWEN3_MOE);
        assert_eq!(w.persistent, cublas + 33_554_432, "{folder}");
        assert_eq!(w.forward_held, old.forward_held + 542_113_792, "{folder}");
        assert_eq!(w.forward_live, old.forward_live);
        // Dense Llama is untouched.
        assert_eq!(first(folder, LLAMA).persistent, cublas);
    }
    for folder in [
        "vllm-0.23",
        "vllm-0.24",
        "vllm-0.25",
        "vllm-0.26",
        "vllm-0.27",
        "vllm-0.28",
    ] {
        let w = first(folder, QWEN3_MOE);
        assert_eq!(
            (w.persistent, w.forward_held),
            (old.persistent, old.forward_held),
            "{folder}"
        );
    }
}

/// From 0.21 vLLM prints int(blocks / blocks per request x max_model_len)
/// (kv_cache_utils.py:1708-1710). With one full-attention group of 16-token blocks and 8,192
/// tokens per request that is blocks x 16, the older figure; the hybrid model's groups hold
/// fewer blocks per request than a token count per group would say.
#[test]
fn printed_tokens_follow_the_concurrency_from_0_21() {
    let old = predict("vllm-0.20", QWEN3_NEXT);
    // Before 0.21: blocks // groups x the smallest block size.
    let groups = old.kv_layout.groups.len() as u64;
    assert_eq!(
        old.kv_cache_tokens,
        old.kv_blocks / groups * old.kv_layout.token_block_size
    );
    for folder in ["vllm-0.21", "vllm-0.25", "vllm-0.29", "vllm-0.34"] {
        for name in [LLAMA, QWEN3_MOE, QWEN3_NEXT] {
            let s = predict(folder, name);
            let per = s.kv_layout.blocks_per_request as f64;
            assert_eq!(
                s.kv_cache_tokens,
                (s.kv_blocks as f64 / per * 8192.0) as u64,
                "{folder} {name}"
            );
        }
        let llama = predict(folder, LLAMA);
        assert_eq!(
            llama.kv_cache_tokens,
            llama.kv_blocks * llama.kv_layout.token_block_size
        );
    }
    // Qwen3-Next at 0.21: 12 full layers and 36 DeltaNet layers in 4 groups of 12; a request of 8,192 tokens takes
    // ceil(8,192 / 272) = 31 blocks of the full group and 1 of each of the 3 recurrent ones,
    // 34 in all, so the tokens are blocks / 34 x 8,192, where 0.20 printed blocks // 4 x 272.
    let s = predict("vllm-0.21", QWEN3_NEXT);
    assert_eq!(s.kv_layout.blocks_per_request, 34);
    assert_eq!(s.kv_layout.token_block_size, 272);
    assert_eq!(
        s.kv_cache_tokens,
        (s.kv_blocks as f64 / 34.0 * 8192.0) as u64
    );
}

/// The sampler's warm-up, per runner, for Llama-3.1-8B at 8,192 tokens and 1,024 requests
/// (hidden 4,096, vocabulary 128,256, bf16):
/// - V1 from 0.21: 0.19's terms (hidden states 67,108,864 + last-token rows 2 x 1,024 x 4,096 x
///   2 = 16,777,216 + logits 1,024 x 128,256 x 2 = 262,668,288 + three float32 temporaries
///   1,576,009,728 + the Triton buffer 132 x 128,256 x 4 = 67,719,168) and FlashInfer's cached
///   1 MiB row states: 1,991,331,840 B;
/// - V2 (Llama from 0.23) before 0.27: hidden states 67,108,864 + gathered rows 1,024 x 4,096 x
///   2 = 8,388,608 + logits 262,668,288 + the float32 copy 525,336,576 + gumbel's partials
///   1,024 x ceil(128,256 / 1,024) x 12 = 1,548,288: 865,050,624 B;
/// - V2 from 0.26 (0.26 applies the parameters to the model-dtype logits in place; 0.27 copies
///   again, but not when no request needs processing): 339,714,048 B;
/// - V2 from 0.33 (the warm-up-param pass copies again): 865,050,624 B.
#[test]
fn the_sampler_warm_up_per_runner_and_release() {
    let v1 = 1_991_331_840;
    assert_eq!(first("vllm-0.19", LLAMA).sampler_live, v1 - 1_048_576);
    for folder in ["vllm-0.21", "vllm-0.22"] {
        assert_eq!(first(folder, LLAMA).sampler_live, v1, "{folder}");
    }
    for folder in ["vllm-0.23", "vllm-0.24", "vllm-0.25"] {
        assert_eq!(first(folder, LLAMA).sampler_live, 865_050_624, "{folder}");
    }
    for folder in [
        "vllm-0.26",
        "vllm-0.27",
        "vllm-0.28",
        "vllm-0.29",
        "vllm-0.31",
    ] {
        assert_eq!(first(folder, LLAMA).sampler_live, 339_714_048, "{folder}");
    }
    for folder in ["vllm-0.33", "vllm-0.34"] {
        assert_eq!(first(folder, LLAMA).sampler_live, 865_050_624, "{folder}");
    }
    // On V2 the forward sets Llama's peak: the sampler is below its 0.92 GiB forward.
    for folder in ["vllm-0.23", "vllm-0.27", "vllm-0.34"] {
        let w = first(folder, LLAMA);
        assert_eq!(w.peak_set_by, PeakSetBy::Forward, "{folder}");
        assert_eq!(
            w.activation_peak,
            w.persistent + w.forward_live + w.forward_held
        );
    }
    // Qwen3-30B-A3B stays on V1 until 0.29 (MoE), then V2: vocabulary 151,936, hidden 2,048:
    // 33,554,432 + 4,194,304 + 311,164,928 + 622,329,856 + 1,024 x 149 x 12 = 1,830,912:
    // 973,074,432 B from 0.33.
    assert_eq!(
        first("vllm-0.28", QWEN3_MOE).sampler_live,
        first("vllm-0.21", QWEN3_MOE).sampler_live
    );
    assert_eq!(first("vllm-0.33", QWEN3_MOE).sampler_live, 973_074_432);
}

/// The V2 runner makes no estimate before 0.29 (its profile_cudagraph_memory returns 0), so
/// nothing is subtracted for it; from 0.29 it captures every PIECEWISE graph and extrapolates
/// FULL from two: with 387 launches x 23,227 B = 8,988,849 B per capture (above the 1 MiB
/// floor) and 51 sizes in each mode, 51 x 8,988,849 + 8,988,849 + 50 x 8,988,849 = 102 x
/// 8,988,849 = 916,862,598 B, one capture more than V1's 101.
#[test]
fn the_cuda_graph_estimate_per_runner() {
    let per = 387 * 23_227;
    assert_eq!(first("vllm-0.22", LLAMA).cuda_graph.total, 101 * per);
    for folder in [
        "vllm-0.23",
        "vllm-0.24",
        "vllm-0.25",
        "vllm-0.26",
        "vllm-0.27",
        "vllm-0.28",
    ] {
        let w = first(folder, LLAMA);
        assert_eq!(w.cuda_graph.total, 0, "{folder}");
        assert_eq!(
            w.cuda_graph.captures,
            vec![("PIECEWISE".to_owned(), 51), ("FULL".to_owned(), 51)]
        );
    }
    for folder in ["vllm-0.29", "vllm-0.31", "vllm-0.33", "vllm-0.34"] {
        assert_eq!(first(folder, LLAMA).cuda_graph.total, 102 * per, "{folder}");
    }
}

/// From 0.27 the non-KV memory is what the device lost since the snapshot plus the run's
/// transient peak (utils/mem_utils.py:317-326), which adds the runner's buffers allocated
/// before the run. V2 (Llama): output_bin_counts 1,024 x 128,256 x 4 = 525,336,576 +
/// prompt_bin_mask and grammar bitmask 2 x 1,024 x ceil(128,256 / 32) x 4 = 32,833,536:
/// 558,170,112 B. V1 (Qwen3-30B-A3B until 0.29): inputs_embeds 8,192 x 2,048 x 2 =
/// 33,554,432 + the block table 1,024 x ceil(8,192 / 16) x 4 = 2,097,152: 35,651,584 B; on V2
/// from 0.29: 1,024 x 151,936 x 4 + 2 x 1,024 x 4,748 x 4 = 661,225,472 B.
#[test]
fn from_0_27_the_budget_counts_the_runner_buffers() {
    for folder in ["vllm-0.23", "vllm-0.26"] {
        assert_eq!(first(folder, LLAMA).resident, 0, "{folder}");
    }
    for folder in [
        "vllm-0.27",
        "vllm-0.28",
        "vllm-0.29",
        "vllm-0.31",
        "vllm-0.33",
    ] {
        assert_eq!(first(folder, LLAMA).resident, 558_170_112, "{folder}");
        for name in [LLAMA, QWEN3_MOE, QWEN3_NEXT] {
            let s = predict(folder, name);
            for w in &s.workers {
                let counted =
                    w.weights + w.resident + w.activation_peak + w.non_torch + w.cuda_graph.total;
                assert_eq!(w.counted_non_kv, counted, "{folder} {name}");
                assert_eq!(w.kv_cache, s.requested - counted, "{folder} {name}");
            }
        }
    }
    assert_eq!(first("vllm-0.27", QWEN3_MOE).resident, 35_651_584);
    assert_eq!(first("vllm-0.28", QWEN3_MOE).resident, 35_651_584);
    assert_eq!(first("vllm-0.29", QWEN3_MOE).resident, 661_225_472);
}

/// Qwen3-Next at TP 4 on `device` under `folder` at 8,192 tokens, prefix caching as
/// `prefix_caching` asks (None: the release's default).
fn next_on(
    folder: &str,
    device: &str,
    prefix_caching: Option<bool>,
) -> Result<Startup, EngineError> {
    let m = model(QWEN3_NEXT);
    let at = RunSettings {
        device: kernel_families::Devices::builtin()
            .unwrap()
            .get(device)
            .unwrap()
            .clone(),
        ..run(m, prefix_caching)
    };
    engines::profile(folder)
        .unwrap()
        .predict_layout(&StageCircuit::in_order(&m.circuits), &at)
}

/// (kind, block size, blocks per request) of each KV-cache group, in order.
fn groups(s: &Startup) -> Vec<(String, u64, u64)> {
    s.kv_layout
        .groups
        .iter()
        .map(|g| (format!("{:?}", g.kind), g.block_size, g.blocks_per_request))
        .collect()
}

/// From 0.28 vLLM turns prefix caching on for hybrid models by default (engine/arg_utils.py
/// 0.28), which sets mamba_cache_mode "align" (model_executor/models/config.py 0.28
/// L602-609). Qwen3-Next at TP 4 on the H100, 8,192 tokens: one attention page per token is
/// 2 x 1 KV head x 256 x 2 = 1,024 B, the recurrent page (3 x 2,048 x 2 conv + 8 x 128 x 128
/// x 2 state) 274,432 B; 12 full layers and 36 DeltaNet layers in 4 groups of 12.
/// - 0.28-0.32: the attention block is unchanged, 16 x ceil(274,432 / 16,384) = 272
///   (platforms/interface.py 0.28 L904-916); the recurrent block becomes it (L917-918) instead
///   of max_model_len; a request holds 2 state pages per recurrent group
///   (v1/kv_cache_interface.py 0.28 L687-696), so ceil(8,192 / 272) = 31 + 3 x 2 = 37 blocks,
///   against 31 + 3 x 1 = 34 without prefix caching. The budget is the same: the blocks are
///   too, and the printed tokens are blocks / 37 x 8,192.
/// - 0.33 on compute capability 9.0: GDN's FlashInfer prefill exports a checkpoint page
///   (qwen_gdn_linear_attn.py 0.33 L685-700, L740-750: 3 pages) and the blocks align to 64
///   (interface.py 0.33 L1089-1095): lcm(16, 64) x ceil(274,432 / 65,536) = 320, 26 + 3 x 3 = 35
///   (prefix caching off: 272 and 31 + 3 = 34).
/// - 0.34 (64-token default blocks): 320 either way, 26 + 3 x 3 = 35 (off: 26 + 3 = 29); on
///   the A100 (8.0, Triton prefill: no checkpoint page) 26 + 3 x 2 = 32.
///
/// Up to 0.27 the default is off; asked for there, or on Blackwell from 0.33 (the backend
/// needs the CUDA runtime), it is refused.
#[test]
fn prefix_caching_keeps_the_recurrent_state_per_block_from_0_28() {
    for folder in ["vllm-0.27", "vllm-0.26", "vllm-0.25"] {
        assert!(try_predict(folder, QWEN3_NEXT, None).is_ok(), "{folder}");
    }
    for (folder, block, recurrent_pages, attention_blocks) in [
        ("vllm-0.28", 272, 2, 31),
        ("vllm-0.29", 272, 2, 31),
        ("vllm-0.31", 272, 2, 31),
        ("vllm-0.33", 320, 3, 26),
        ("vllm-0.34", 320, 3, 26),
    ] {
        let on = try_predict(folder, QWEN3_NEXT, None).unwrap();
        let off = predict(folder, QWEN3_NEXT);
        let full = ("Full".to_owned(), block, attention_blocks);
        let state = ("Recurrent".to_owned(), block, recurrent_pages);
        assert_eq!(
            groups(&on),
            vec![state.clone(), state.clone(), state, full],
            "{folder}"
        );
        let per = attention_blocks + 3 * recurrent_pages;
        assert_eq!(on.kv_layout.blocks_per_request, per, "{folder}");
        assert_eq!(on.kv_layout.token_block_size, block, "{folder}");
        if off.kv_layout.token_block_size == block {
            // Same pages, same budget: the same blocks, fewer requests.
            assert_eq!(on.kv_blocks, off.kv_blocks, "{folder}");
        }
        assert_eq!(
            on.kv_cache_tokens,
            (on.kv_blocks as f64 / per as f64 * 8192.0) as u64,
            "{folder}"
        );
        // Asked for, the same.
        let asked = try_predict(folder, QWEN3_NEXT, Some(true)).unwrap();
        assert_eq!(asked.kv_blocks, on.kv_blocks, "{folder}");
    }
    assert_eq!(
        predict("vllm-0.33", QWEN3_NEXT).kv_layout.token_block_size,
        272
    );
    assert_eq!(
        predict("vllm-0.33", QWEN3_NEXT)
            .kv_layout
            .blocks_per_request,
        34
    );
    assert_eq!(
        predict("vllm-0.34", QWEN3_NEXT)
            .kv_layout
            .blocks_per_request,
        29
    );
    // The A100 (8.0): Triton's GDN prefill, no checkpoint page.
    let a100 = next_on("vllm-0.34", "a100-80gb", None).unwrap();
    assert_eq!(a100.kv_layout.token_block_size, 320);
    assert_eq!(a100.kv_layout.blocks_per_request, 26 + 3 * 2);
    // Blackwell: FlashInfer's prefill only with a CUDA runtime of 13: refused from 0.33, not
    // before (no checkpoint page then).
    let e = next_on("vllm-0.33", "b200", None).unwrap_err().to_string();
    assert!(e.contains("a CUDA runtime of 13 or more"), "{e}");
    assert!(e.contains("recurrent-align-gdn-sm100"), "{e}");
    assert!(next_on("vllm-0.31", "b200", None).is_ok());
    assert!(next_on("vllm-0.33", "b200", Some(false)).is_ok());
    // Before 0.28 prefix caching asked for on a hybrid model is not laid out: refused.
    for folder in ["vllm-0.25", "vllm-0.27"] {
        let e = try_predict(folder, QWEN3_NEXT, Some(true))
            .unwrap_err()
            .to_string();
        assert!(e.contains("(asked for)"), "{e}");
        assert!(e.ends_with("turn prefix caching off (--no-enable-prefix-caching): the engine profile does not lay this KV cache out; plan it without --engine"), "{e}");
    }
    // Attention-only models do not care.
    assert!(try_predict("vllm-0.34", LLAMA, Some(true)).is_ok());
}

/// 0.34 sizes the extensible KV cache after warm-up (extensible_kv_cache.py:592-618) at a
/// default utilization of 1.0, with 64-token blocks (config/cache.py:185): used = weights +
/// resident + what the run leaves allocated + non-torch + the graphs' pool; the transient is
/// the run's peak over what it leaves; the margin max(1 GiB, 0.75 x transient); the memory in
/// use at the snapshot the assumed CUDA context (547,608,330 B), plus the communicators
/// (1,095,216,660 B) in a world of more than one (Qwen3-Next at TP 4); KV =
/// min(total - used, total - in_use - used - margin) - transient = total - in_use - used -
/// margin - transient (engines/tests/vllm_0_34.rs has the figures at TP 1 and 2).
#[test]
fn the_extensible_kv_cache_of_0_34() {
    for name in [LLAMA, QWEN3_MOE, QWEN3_NEXT] {
        let s = predict("vllm-0.34", name);
        assert_eq!((s.gpu_memory_utilization, s.requested), (1.0, H100_TOTAL));
        let in_use = if model(name).tp > 1 {
            547_608_330 + 1_095_216_660
        } else {
            547_608_330
        };
        for w in &s.workers {
            let used = w.weights + w.resident + w.persistent + w.non_torch + w.cuda_graph.total;
            let transient = w.activation_peak - w.persistent;
            let margin = (1u64 << 30).max((transient as f64 * 0.75) as u64);
            assert_eq!(
                w.kv_cache,
                H100_TOTAL - in_use - used - margin - transient,
                "{name}"
            );
            assert_eq!(w.counted_non_kv, used + transient);
        }
    }
    // Llama: 64-token blocks, 8,192 / 64 = 128 per request, so tokens = blocks x 64.
    let s = predict("vllm-0.34", LLAMA);
    assert_eq!(s.kv_layout.token_block_size, 64);
    assert_eq!(s.kv_layout.blocks_per_request, 128);
    assert_eq!(s.kv_cache_tokens, s.kv_blocks * 64);
    // Qwen3-Next: the attention block is 64 x the fewest 64-token pages (1,024 B a token at
    // TP 4) that hold the recurrent page (262,144 < page <= 327,680 B): 64 x 5 = 320 tokens.
    let s = predict("vllm-0.34", QWEN3_NEXT);
    assert_eq!(s.kv_layout.token_block_size, 320);
    // An explicit utilization below 1 binds through the request: 0.92 x total - used -
    // transient.
    let m = model(LLAMA);
    let at = RunSettings {
        gpu_memory_utilization: Some(0.92),
        ..run(m, None)
    };
    let s = engines::profile("vllm-0.34")
        .unwrap()
        .predict_layout(&StageCircuit::in_order(&m.circuits), &at)
        .unwrap();
    let w = &s.workers[0];
    assert_eq!(w.kv_cache, requested(0.92) - w.counted_non_kv);
}

/// The whole figures of each release (weights, activation peak, KV tokens, CUDA-graph
/// estimate; the first worker), as the derivation gives them: no log checks them (docs/engines.md).
/// From 0.21 the weights load under a 20 MiB split limit (`weights.allocator_max_split_mib`):
/// Qwen3-Next's parameters of 20 MiB or more whose 2 MiB-rounded segment leaves more than 1 MiB
/// keep it (3,407,872 bytes a rank more than 0.19 and 0.20); the other two models' large
/// parameters are 2 MiB multiples.
const FIGURES: &[(&str, &str, u64, u64, u64, u64)] = &[
    (
        "vllm-0.19",
        "llama-3.1-8b",
        16094191616,
        2023837696,
        443584,
        907873749,
    ),
    (
        "vllm-0.19",
        "qwen3-30b-a3b",
        61075976192,
        2870745088,
        125264,
        1470896229,
    ),
    (
        "vllm-0.19",
        "qwen3-next-80b-a3b",
        39959379968,
        3004962816,
        637568,
        2348272927,
    ),
    (
        "vllm-0.20",
        "llama-3.1-8b",
        16094191616,
        2023837696,
        449632,
        907873749,
    ),
    (
        "vllm-0.20",
        "qwen3-30b-a3b",
        61075976192,
        2367428608,
        132720,
        1470896229,
    ),
    (
        "vllm-0.20",
        "qwen3-next-80b-a3b",
        39959379968,
        2367428608,
        637296,
        2348272927,
    ),
    (
        "vllm-0.21",
        "llama-3.1-8b",
        16094191616,
        2024886272,
        449632,
        907873749,
    ),
    (
        "vllm-0.21",
        "qwen3-30b-a3b",
        61075976192,
        2368477184,
        132704,
        1470896229,
    ),
    (
        "vllm-0.21",
        "qwen3-next-80b-a3b",
        39962787840,
        2368477184,
        2258341,
        2348272927,
    ),
    (
        "vllm-0.22",
        "llama-3.1-8b",
        16094191616,
        2024886272,
        449632,
        907873749,
    ),
    (
        "vllm-0.22",
        "qwen3-30b-a3b",
        61075976192,
        2368477184,
        132704,
        1470896229,
    ),
    (
        "vllm-0.22",
        "qwen3-next-80b-a3b",
        39962787840,
        2368477184,
        2258341,
        2348272927,
    ),
    (
        "vllm-0.23",
        "llama-3.1-8b",
        16094191616,
        991952896,
        464432,
        0,
    ),
    (
        "vllm-0.23",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127584,
        1470896229,
    ),
    (
        "vllm-0.23",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2212321,
        2348272927,
    ),
    (
        "vllm-0.24",
        "llama-3.1-8b",
        16094191616,
        991952896,
        464432,
        0,
    ),
    (
        "vllm-0.24",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127584,
        1470896229,
    ),
    (
        "vllm-0.24",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2212321,
        2348272927,
    ),
    (
        "vllm-0.25",
        "llama-3.1-8b",
        16094191616,
        991952896,
        464432,
        0,
    ),
    (
        "vllm-0.25",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127584,
        1470896229,
    ),
    (
        "vllm-0.25",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2212321,
        2348272927,
    ),
    (
        "vllm-0.26",
        "llama-3.1-8b",
        16094191616,
        991952896,
        464432,
        0,
    ),
    (
        "vllm-0.26",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127584,
        1470896229,
    ),
    (
        "vllm-0.26",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2212321,
        2348272927,
    ),
    (
        "vllm-0.27",
        "llama-3.1-8b",
        16094191616,
        991952896,
        460176,
        0,
    ),
    (
        "vllm-0.27",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127216,
        1470896229,
    ),
    (
        "vllm-0.27",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2209671,
        2348272927,
    ),
    (
        "vllm-0.28",
        "llama-3.1-8b",
        16094191616,
        991952896,
        460176,
        0,
    ),
    (
        "vllm-0.28",
        "qwen3-30b-a3b",
        61075976192,
        2871793664,
        127216,
        1470896229,
    ),
    (
        "vllm-0.28",
        "qwen3-next-80b-a3b",
        39962787840,
        3006011392,
        2209671,
        2348272927,
    ),
    (
        "vllm-0.29",
        "llama-3.1-8b",
        16094191616,
        991952896,
        453184,
        916862598,
    ),
    (
        "vllm-0.29",
        "qwen3-30b-a3b",
        61075976192,
        1068236800,
        139056,
        1485459558,
    ),
    (
        "vllm-0.29",
        "qwen3-next-80b-a3b",
        39962787840,
        1196359680,
        2293278,
        2371523154,
    ),
    (
        "vllm-0.31",
        "llama-3.1-8b",
        16094191616,
        991952896,
        453184,
        916862598,
    ),
    (
        "vllm-0.31",
        "qwen3-30b-a3b",
        61075976192,
        1068236800,
        139056,
        1485459558,
    ),
    (
        "vllm-0.31",
        "qwen3-next-80b-a3b",
        39962787840,
        1196359680,
        2293278,
        2371523154,
    ),
    (
        "vllm-0.33",
        "llama-3.1-8b",
        16094191616,
        991952896,
        453184,
        916862598,
    ),
    (
        "vllm-0.33",
        "qwen3-30b-a3b",
        61075976192,
        1543499776,
        134224,
        1485459558,
    ),
    (
        "vllm-0.33",
        "qwen3-next-80b-a3b",
        39962787840,
        1677717504,
        2258582,
        2371523154,
    ),
    (
        "vllm-0.34",
        "llama-3.1-8b",
        16094191616,
        991952896,
        492672,
        916862598,
    ),
    (
        "vllm-0.34",
        "qwen3-30b-a3b",
        61075976192,
        1543499776,
        186880,
        1485459558,
    ),
    (
        "vllm-0.34",
        "qwen3-next-80b-a3b",
        39962787840,
        1677717504,
        2544322,
        2371523154,
    ),
];

#[test]
fn the_whole_figures_are_pinned() {
    let mut got = Vec::new();
    // 0.19 first, at its own defaults, for the comparison docs/engines.md makes.
    let folders = std::iter::once("vllm-0.19").chain(FOLDERS.iter().map(|(f, _)| *f));
    for folder in folders {
        for name in [LLAMA, QWEN3_MOE, QWEN3_NEXT] {
            let s = predict(folder, name);
            let w = &s.workers[0];
            got.push((
                folder,
                name,
                w.weights,
                w.activation_peak,
                s.kv_cache_tokens,
                w.cuda_graph.total,
            ));
        }
    }
    assert_eq!(got, FIGURES);
}

/// gpt-oss-20b (hidden 2,880, 4 experts per token, an expert FFN of 2,880, a multiple of 64 so
/// unpadded, vocabulary 201,088, bf16) at TP 1 on the H100, 8,192 tokens in 1,024 requests.
/// Its MXFP4 experts run OAITritonMxfp4ExpertsMonolithic in every release after 0.19 as in
/// 0.19 (engines/vllm-0.20 and vllm-0.29, variant `mxfp4-moe-triton-monolithic`): no
/// TritonExperts workspace persists, only the 32 MiB cuBLAS workspace, where the base lists
/// would add 8,192 x 4 x (5,760 + 2,880) x 2 = 566,231,040 B.
/// - 0.20: the peak is 0.19's (vllm_0_19.rs, gpt_oss_alternating_layers_make_two_groups),
///   3,081,508,864 B: the cuBLAS workspace and 0.19's sampler, hidden states 8,192 x 2,880 x 2 =
///   47,185,920 + last-token rows 2 x 1,024 x 2,880 x 2 = 11,796,480 + logits 1,024 x 201,088
///   x 2 = 411,828,224 + three f32 temporaries 3 x 823,656,448 + the top-k/top-p buffer 132 x
///   201,088 x 4 = 106,174,464 = 3,047,954,432.
/// - 0.34: the V2 runner's sampler, which keeps one row copy (-5,898,240), one f32 copy of the
///   logits, not three (-1,647,312,896), no top-k/top-p buffer (-106,174,464) and the gumbel
///   partials 1,024 x 197 x 12 = 2,420,736 (+): 1,756,964,864 B below 0.19's, 1,324,544,000 B.
///   The forward (613,679,104 live + 166,723,584 held + the cuBLAS workspace) stays below it.
///
/// Without the variant both peaks would be 566,231,040 B higher (3,647,739,904 and
/// 1,890,775,040).
#[test]
fn gpt_oss_mxfp4_experts_hold_no_moe_workspace_after_0_19() {
    let cublas = 33_554_432;
    let moe_pair = 8192 * 4 * (5760 + 2880) * 2;
    assert_eq!(moe_pair, 566_231_040);
    let m = model(GPT_OSS);
    assert_eq!(m.facts.model_type, "gpt_oss");
    for &(folder, _) in FOLDERS {
        let variants = engines::profile(folder)
            .unwrap()
            .variants_applied(&StageCircuit::in_order(&m.circuits), &run(m, None))
            .unwrap();
        assert_eq!(
            variants,
            ["cublas-sm90", "mxfp4-moe-triton-monolithic"],
            "{folder}"
        );
        assert_eq!(first(folder, GPT_OSS).persistent, cublas, "{folder}");
    }

    let old = first("vllm-0.19", GPT_OSS);
    let w = first("vllm-0.20", GPT_OSS);
    let sampler_0_19 = 47_185_920 + 11_796_480 + 411_828_224 + 3 * 823_656_448 + 106_174_464;
    assert_eq!(sampler_0_19, 3_047_954_432);
    assert_eq!(w.peak_set_by, PeakSetBy::Sampler);
    assert_eq!(w.sampler_live, sampler_0_19);
    assert_eq!(w.activation_peak, cublas + sampler_0_19);
    assert_eq!(w.activation_peak, old.activation_peak);
    assert_eq!(w.activation_peak, 3_081_508_864);

    // 0.29-0.32: V2's sampler before the second pass (1,024 x 201,088 x 2 logits, no f32
    // copy) stays below the forward, 613,679,104 live + 166,723,584 held + the cuBLAS
    // workspace.
    for folder in ["vllm-0.29", "vllm-0.31"] {
        let w = first(folder, GPT_OSS);
        assert_eq!(w.peak_set_by, PeakSetBy::Forward, "{folder}");
        assert_eq!(
            w.activation_peak,
            613_679_104 + 166_723_584 + cublas,
            "{folder}"
        );
        assert_eq!(w.activation_peak, 813_957_120, "{folder}");
    }

    let w = first("vllm-0.34", GPT_OSS);
    let sampler_0_34 = sampler_0_19 - 5_898_240 - 2 * 823_656_448 - 106_174_464 + 1024 * 197 * 12;
    assert_eq!(sampler_0_34, 1_290_989_568);
    assert_eq!(w.peak_set_by, PeakSetBy::Sampler);
    assert_eq!(w.sampler_live, sampler_0_34);
    assert_eq!((w.forward_live, w.forward_held), (613_679_104, 166_723_584));
    assert_eq!(old.activation_peak - w.activation_peak, 1_756_964_864);
    assert_eq!(w.activation_peak, 1_324_544_000);
}

/// Off Hopper every release after 0.19 refuses gpt-oss with 0.19's device rules, which every
/// folder inherits: below 9.0 MarlinExperts runs (neither TRITON nor FlashInfer's CUTLASS
/// backend holds there), on 10.0 FlashInfer's TRT-LLM backend comes first, on 12.0 FlashInfer's
/// CUTLASS backend or Marlin (TRITON's gate ends below 11.0 until 0.31; 0.32-0.34 order it
/// after Marlin on 12.x): no layout the importer gives (engines/vllm-0.19, the comment of
/// `mxfp4-below-sm90`).
#[test]
fn gpt_oss_is_refused_off_hopper_in_every_release() {
    let m = model(GPT_OSS);
    let devices = kernel_families::Devices::builtin().unwrap();
    for &(folder, _) in FOLDERS {
        let profile = engines::profile(folder).unwrap();
        for (device, variant) in [
            ("a100-80gb", "mxfp4-below-sm90"),
            ("b200", "mxfp4-sm100"),
            ("rtx5090", "mxfp4-sm100"),
        ] {
            let settings = RunSettings {
                device: devices.get(device).unwrap().clone(),
                ..run(m, None)
            };
            let e = profile
                .predict_layout(&StageCircuit::in_order(&m.circuits), &settings)
                .unwrap_err();
            assert!(
                matches!(&e, EngineError::DeviceNotModelled { device: d, why } if d == device
                    && why.contains(&format!("(the engine file's variant `{variant}`)"))),
                "{folder} {device}: {e}"
            );
        }
    }
}

/// gpt-oss-20b at PP 2: the second stage receives the first's hidden states and residual, 2 x
/// 8,192 x 2,880 x 2 = 94,371,840 B. The V1 runner allocates them inside the profile run, so
/// 0.20-0.28's variant keeps them among the persistent terms beside the cuBLAS workspace; the
/// V2 runner (0.29 on) allocates them when it loads the model (resident), and 0.29's variant,
/// restated by name, lists the cuBLAS workspace alone, so they are counted once.
#[test]
fn gpt_oss_receive_buffers_follow_the_runner_at_pp_2() {
    let text = include_str!("../../data/checkpoints/gpt-oss-20b/config.json");
    let mut options = ImportOptions::default();
    options.load = engines::profile("vllm-0.19").unwrap().load_rules();
    options.parallel = Parallel {
        tp: 1,
        pp: 2,
        dp: 1,
        expert_parallel: false,
    };
    let sharded = circuit_hf::import_parallel(text, GPT_OSS, &options, &[]).unwrap();
    let facts = sharded.imports[0].facts.clone();
    let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let m = Model {
        circuits,
        facts,
        tp: 1,
    };
    let settings = RunSettings {
        pipeline_parallel_size: 2,
        ..run(&m, None)
    };
    let stage = |folder: &str| {
        let s = engines::profile(folder)
            .unwrap()
            .predict_layout(&StageCircuit::in_order(&m.circuits), &settings)
            .unwrap();
        let w = &s.workers[1];
        assert_eq!(w.pp_stage, 1);
        (w.persistent, w.resident)
    };
    let cublas = 33_554_432;
    let receive = 2 * 8192 * 2880 * 2;
    assert_eq!(receive, 94_371_840);
    assert_eq!(stage("vllm-0.20"), (cublas + receive, 0));
    assert_eq!(stage("vllm-0.28").0, cublas + receive);
    for folder in ["vllm-0.29", "vllm-0.34"] {
        let (persistent, resident) = stage(folder);
        assert_eq!(persistent, cublas, "{folder}");
        // The last stage's sampler state: penalty counts 1,024 x 201,088 x 4 = 823,656,448,
        // the prompt mask and the grammar bitmask 1,024 x 6,284 x 4 = 25,739,264 each.
        assert_eq!(resident, 823_656_448 + 2 * 25_739_264 + receive, "{folder}");
    }
}

/// From 0.20 the Triton MXFP4 path is gpt-oss's alone (GptOssMxfp4Config checks
/// `model_type == "gpt_oss"`); an MXFP4 MoE checkpoint of any other type takes Mxfp4MoEMethod,
/// which is not modelled, and every release after 0.19 refuses it (variant
/// `mxfp4-moe-not-gpt-oss`, inherited); 0.19, whose path takes every MXFP4 MoE checkpoint,
/// still predicts it. The same gpt-oss-20b circuit stands in for such a checkpoint: only the
/// model type the variant reads differs.
#[test]
fn an_mxfp4_moe_checkpoint_other_than_gpt_oss_is_refused_after_0_19() {
    let m = model(GPT_OSS);
    let other = RunSettings {
        model: ModelFacts {
            model_type: "not_gpt_oss".to_owned(),
            ..m.facts.clone()
        },
        ..run(m, None)
    };
    let stages = StageCircuit::in_order(&m.circuits);
    for &(folder, _) in FOLDERS {
        let e = engines::profile(folder)
            .unwrap()
            .predict_layout(&stages, &other)
            .unwrap_err();
        assert!(
            matches!(&e, EngineError::Refused { why, .. }
                if why.ends_with("(the engine file's variant `mxfp4-moe-not-gpt-oss`)")),
            "{folder}: {e}"
        );
    }
    let s19 = engines::profile("vllm-0.19")
        .unwrap()
        .predict_layout(&stages, &other)
        .unwrap();
    assert_eq!(s19.workers[0].activation_peak, 3_081_508_864);
}
