//! vLLM 0.10.1 through 0.18.1 (engines/vllm-0.10.1 ... engines/vllm-0.18): a release maps to
//! the profile that stands for it; the two real vLLM 0.10.1.1 start-ups on A100 80 GB of
//! data/vllm/cases-versions.json are within the bounds (weights 0.5%, KV tokens 2%);
//! and each mechanism that changes between releases gives, on one model, what its release's
//! source gives by hand (docs/engines.md, "Releases"): the sampler's top-k/top-p, the CUDA-graph
//! estimate, the start-up check, the MLA block size, the fused-MoE buffers, the cuBLAS
//! workspace, the non-torch memory, the encoder's padded outputs, chunked attention without the
//! hybrid manager, and the runs a release refuses.

use std::sync::Mutex;

use circuit_hf::{ImportOptions, Parallel};
use circuit_ir::Circuit;
use engine_profile::{
    EngineError, EngineProfile, LayerKind, ModelFacts, RunSettings, StageCircuit, Startup, Verdict,
};

const GIB: f64 = (1u64 << 30) as f64;
const MIB: u64 = 1 << 20;

/// Every release of the range and the folder that stands for it (docs/engines.md, "Releases").
const RELEASES: &[(&str, &str)] = &[
    ("0.10.1", "vllm-0.10.1"),
    ("0.10.1.1", "vllm-0.10.1"),
    ("0.10.2", "vllm-0.10.2"),
    ("0.11.0", "vllm-0.11.0"),
    ("0.11.1", "vllm-0.11.1"),
    ("0.11.2", "vllm-0.11.1"),
    ("0.12.0", "vllm-0.12"),
    ("0.13.0", "vllm-0.13"),
    ("0.14.0", "vllm-0.14"),
    ("0.14.1", "vllm-0.14"),
    ("0.15.0", "vllm-0.15"),
    ("0.15.1", "vllm-0.15"),
    ("0.16.0", "vllm-0.15"),
    ("0.17.0", "vllm-0.17"),
    ("0.17.1", "vllm-0.17"),
    ("0.18.0", "vllm-0.18"),
    ("0.18.1", "vllm-0.18"),
];

/// One release of each folder (the releases of a folder share its profile).
fn one_per_folder() -> impl Iterator<Item = &'static str> {
    RELEASES
        .iter()
        .enumerate()
        .filter(|&(i, (_, folder))| i == 0 || RELEASES[i - 1].1 != *folder)
        .map(|(_, (release, _))| *release)
}

fn device(name: &str) -> kernel_families::Device {
    kernel_families::Devices::builtin()
        .unwrap()
        .get(name)
        .unwrap()
        .clone()
}

fn config(path: &str) -> &'static str {
    match path {
        "models/qwen2-7b-instruct/config.json" => {
            include_str!("../../data/models/qwen2-7b-instruct/config.json")
        }
        "models/llama-3.1-8b/config.json" => {
            include_str!("../../data/models/llama-3.1-8b/config.json")
        }
        "models/mixtral-8x7b-v0.1/config.json" => {
            include_str!("../../data/models/mixtral-8x7b-v0.1/config.json")
        }
        "models/deepseek-v2-lite/config.json" => {
            include_str!("../../data/models/deepseek-v2-lite/config.json")
        }
        "checkpoints/gemma-3-1b-it/config.json" => {
            include_str!("../../data/checkpoints/gemma-3-1b-it/config.json")
        }
        "checkpoints/qwen3-next-80b-a3b-instruct/config.json" => {
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json")
        }
        "checkpoints/gpt-oss-20b/config.json" => {
            include_str!("../../data/checkpoints/gpt-oss-20b/config.json")
        }
        "tests/data/gemma-3-4b-it.config.json" => include_str!("data/gemma-3-4b-it.config.json"),
        other => panic!("no config {other}"),
    }
}

/// The circuits of config `text` (named `origin`) at TP `tp` x PP `pp`, imported as `profile`
/// loads the model, and the model's facts.
fn imports(
    profile: &EngineProfile,
    text: &str,
    origin: &str,
    tp: u64,
    pp: u64,
) -> (Vec<Circuit>, ModelFacts) {
    let mut options = ImportOptions::default();
    options.load = profile.load_rules();
    options.parallel = Parallel {
        tp,
        pp,
        dp: 1,
        expert_parallel: false,
    };
    let sharded = circuit_hf::import_parallel(text, origin, &options, &[]).unwrap();
    let model = sharded.imports[0].facts.clone();
    (
        sharded.imports.into_iter().map(|i| i.circuit).collect(),
        model,
    )
}

/// A run on `device` at TP `tp` x PP `pp`, utilization `util`, 8,192 tokens of context, the
/// device's batch defaults.
fn run_on(device_name: &str, tp: u64, pp: u64, util: f64, model: ModelFacts) -> RunSettings {
    RunSettings {
        tensor_parallel_size: tp,
        pipeline_parallel_size: pp,
        gpu_memory_utilization: Some(util),
        max_model_len: Some(8192),
        ..RunSettings::new(device(device_name), model)
    }
}

/// The profile of `release`, loaded once per folder for the whole test binary.
fn profile_of(release: &str) -> EngineProfile {
    static LOADED: Mutex<Vec<(&'static str, EngineProfile)>> = Mutex::new(Vec::new());
    let folder = engines::resolve(&format!("vllm=={release}"))
        .unwrap()
        .folder;
    let mut loaded = LOADED.lock().unwrap();
    if let Some((_, p)) = loaded.iter().find(|(f, _)| *f == folder) {
        return p.clone();
    }
    let p = engines::profile(folder).unwrap();
    loaded.push((folder, p.clone()));
    p
}

/// The layout of `path` at TP `tp` x PP `pp`, imported once for the whole test binary (every
/// folder of the range loads a checkpoint alike: their `[load]` is 0.19's).
fn layout(path: &'static str, tp: u64, pp: u64) -> (Vec<Circuit>, ModelFacts) {
    type Key = (&'static str, u64, u64);
    static IMPORTED: Mutex<Vec<(Key, Vec<Circuit>, ModelFacts)>> = Mutex::new(Vec::new());
    let key = (path, tp, pp);
    let mut imported = IMPORTED.lock().unwrap();
    if let Some((_, c, m)) = imported.iter().find(|(k, _, _)| *k == key) {
        return (c.clone(), m.clone());
    }
    let (c, m) = imports(&profile_of("0.18.1"), config(path), path, tp, pp);
    imported.push((key, c.clone(), m.clone()));
    (c, m)
}

/// One start-up of `path` by `release` on `device_name`, with `edit` applied to the run.
fn start(
    release: &str,
    path: &'static str,
    device_name: &str,
    (tp, pp): (u64, u64),
    edit: impl Fn(&mut RunSettings),
) -> Result<Startup, EngineError> {
    let profile = profile_of(release);
    let (circuits, model) = layout(path, tp, pp);
    let mut run = run_on(device_name, tp, pp, 0.9, model);
    edit(&mut run);
    profile.predict_layout(&StageCircuit::in_order(&circuits), &run)
}

fn at_defaults(_: &mut RunSettings) {}

#[test]
fn every_release_of_the_range_has_its_profile() {
    for &(release, folder) in RELEASES {
        let found = engines::resolve(&format!("vllm=={release}")).unwrap();
        assert_eq!(found.folder, folder, "{release}");
        assert!(found.releases.iter().any(|r| r == release), "{release}");
        let profile = engines::profile(folder).unwrap();
        assert!(profile.releases().iter().any(|r| r == release));
        assert!(profile.releases().contains(&profile.version().to_owned()));
    }
    // Between the modelled releases nothing is missing: 0.10.0 and 0.9.2 are refused, with the
    // list, which starts at 0.10.1.
    for missing in ["0.10.0", "0.9.2", "0.18.2"] {
        let e = engines::resolve(&format!("vllm=={missing}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("release {missing} is not modelled"))
                && e.contains("the releases modelled are 0.10.1, 0.10.1.1, 0.10.2, 0.11.0, 0.11.1, 0.11.2, 0.12.0, 0.13.0, 0.14.0, 0.14.1, 0.15.0, 0.15.1, 0.16.0, 0.17.0, 0.17.1, 0.18.0, 0.18.1, 0.19.0"),
            "{e}"
        );
    }
}

/// The two vLLM 0.10.1.1 start-ups of Qwen2-7B-Instruct on an A100 80 GB (TP 1 and TP 2,
/// utilization 0.5, max_model_len 16,384; data/vllm/cases-versions.json, INFO logs: no
/// activation peak or non-torch figure printed). The A100's name holds "a100": 2,048 batched
/// tokens (printed) and 256 sequences. Weights are printed with four decimals; the prediction
/// counts each parameter's caching-allocator block (0.19's `weights.allocator`, inherited), the
/// rotary cache and the attention scalars, and gives both to the fourth decimal.
#[test]
fn the_two_vllm_0_10_1_1_start_ups_on_an_a100() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("../../data/vllm/cases-versions.json")).unwrap();
    assert_eq!(cases.len(), 2);
    let mut report = String::new();
    let mut failed = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let release = case["vllm_version"].as_str().unwrap();
        assert_eq!(
            engines::resolve(&format!("vllm=={release}"))
                .unwrap()
                .folder,
            "vllm-0.10.1"
        );
        let tp = case["tensor_parallel_size"].as_u64().unwrap();
        let qwen2 = "models/qwen2-7b-instruct/config.json";
        assert_eq!(case["config"].as_str().unwrap(), qwen2);
        let s = start(release, qwen2, "a100-80gb", (tp, 1), |r| {
            r.gpu_memory_utilization = case["gpu_memory_utilization"].as_f64();
            r.max_model_len = case["max_model_len"].as_u64();
        })
        .unwrap();
        assert_eq!(
            s.max_num_batched_tokens,
            case["max_num_batched_tokens"].as_u64().unwrap()
        );
        assert_eq!(s.max_num_seqs, 256);
        assert_eq!(s.kv_layout.token_block_size, 16);
        assert_eq!(s.verdict, Verdict::Starts);
        assert_eq!(s.cuda_graph_estimate, 0);
        let w = &s.workers[0];
        let printed = |k: &str| case[k].as_f64().unwrap();
        let weights = printed("weights_gib");
        // The caching allocator's blocks give the print's four decimals exactly.
        assert_eq!(
            format!("{:.4}", w.weights as f64 / GIB),
            format!("{weights:.4}"),
            "{name}"
        );
        let checks = [
            (
                "weights GiB",
                w.weights as f64 / GIB,
                weights,
                0.005 + 0.00005 / weights,
            ),
            (
                "KV cache GiB",
                w.kv_cache as f64 / GIB,
                printed("kv_cache_gib"),
                0.02,
            ),
            (
                "KV tokens",
                s.kv_cache_tokens as f64,
                printed("kv_cache_tokens"),
                0.02,
            ),
            (
                "concurrency",
                s.max_concurrency,
                printed("max_concurrency"),
                0.02,
            ),
        ];
        report.push_str(&format!(
            "{name}: peak {:.4} GiB (set by {}), non-torch {:.4} GiB\n",
            w.activation_peak as f64 / GIB,
            w.peak_set_by.name(),
            w.non_torch as f64 / GIB
        ));
        for (what, predicted, printed, bound) in checks {
            let error = (predicted - printed) / printed;
            report.push_str(&format!(
                "  {what:<14} {predicted:>14.4} / {printed:>14.4} {error:+.4} (bound {bound:.4})\n"
            ));
            if error.abs() > bound {
                failed.push(format!("{name}: {what}"));
            }
        }
    }
    eprintln!("{report}");
    assert!(failed.is_empty(), "out of bounds: {failed:?}\n{report}");
}

/// The sampler's live bytes of Llama-3.1-8B on an H100 (8,192 tokens, 1,024 sequences, hidden
/// 4,096, vocabulary 128,256), with F = requests x vocab x 4: beside the hidden states, the
/// two last-token row tensors and the bf16 logits, vLLM 0.17 and 0.18 hold 0.19's three float32
/// temporaries and the Triton kernel's 132-row buffer; 0.11.1 to 0.16.0 the sort path, 9F (the
/// cast, the sort's values and int64 indices, torch's int64 iota and CUB's alternate keys and
/// values), 12F with 2 to 127 rows (by a full sort: two int2 buffers, the keys, CUB's
/// alternates); 0.10.1 to 0.11.0 FlashInfer's, 3F (the cast, the masked logits, the
/// probabilities).
#[test]
fn the_sampler_per_release() {
    let llama = "models/llama-3.1-8b/config.json";
    let fixed = 8192 * 4096 * 2 + 2 * 1024 * 4096 * 2 + 1024 * 128_256 * 2;
    let f = 1024 * 128_256 * 4;
    let sampler = |release: &str, seqs: Option<u64>| {
        start(release, llama, "h100-sxm", (1, 1), |r| {
            r.max_num_seqs = seqs
        })
        .unwrap()
        .workers[0]
            .sampler_live
    };
    for release in ["0.17.0", "0.18.1"] {
        assert_eq!(sampler(release, None), fixed + 3 * f + 132 * 128_256 * 4);
    }
    for release in ["0.11.1", "0.12.0", "0.13.0", "0.14.0", "0.15.1", "0.16.0"] {
        assert_eq!(sampler(release, None), fixed + 9 * f, "{release}");
    }
    for release in ["0.10.1", "0.10.2", "0.11.0"] {
        assert_eq!(sampler(release, None), fixed + 3 * f, "{release}");
    }
    let rows = |r: u64| 8192 * 4096 * 2 + 2 * r * 4096 * 2 + r * 128_256 * 2;
    assert_eq!(
        sampler("0.16.0", Some(64)),
        rows(64) + 12 * 64 * 128_256 * 4
    );
    assert_eq!(
        sampler("0.16.0", Some(128)),
        rows(128) + 9 * 128 * 128_256 * 4
    );
    assert_eq!(sampler("0.16.0", Some(1)), rows(1) + 9 * 128_256 * 4);
    // The "2.5 times larger two releases later": 0.16.0 against 0.18.1 on this model.
    let peak = |release: &str| {
        start(release, llama, "h100-sxm", (1, 1), at_defaults)
            .unwrap()
            .workers[0]
            .activation_peak
    };
    let ratio = peak("0.16.0") as f64 / peak("0.18.1") as f64;
    assert!((2.5..2.55).contains(&ratio), "{ratio}");
}

/// vLLM computes no CUDA-graph estimate before 0.18.0: the graphs are captured after the KV
/// cache, from what is left; which sizes and modes it captures still changes (PIECEWISE only
/// up to 0.10.2, steps of 16 above 256 from 0.11.1).
#[test]
fn no_cuda_graph_estimate_before_0_18() {
    let llama = "models/llama-3.1-8b/config.json";
    for release in one_per_folder() {
        let s = start(release, llama, "h100-sxm", (1, 1), at_defaults).unwrap();
        let estimated = release.starts_with("0.18");
        assert_eq!(s.cuda_graph_estimate > 0, estimated, "{release}");
        assert!(
            s.workers
                .iter()
                .all(|w| (w.cuda_graph.total > 0) == estimated)
        );
        // 1,024 sequences: sizes up to 512.
        let expect: Vec<(String, u64)> = match release {
            "0.10.1" | "0.10.2" => vec![("PIECEWISE".to_owned(), 3 + 64)],
            "0.11.0" => vec![("PIECEWISE".to_owned(), 67), ("FULL".to_owned(), 67)],
            _ => vec![("PIECEWISE".to_owned(), 51), ("FULL".to_owned(), 51)],
        };
        assert_eq!(s.workers[0].cuda_graph.captures, expect, "{release}");
    }
}

/// The start-up check counted as each release counts one request of Gemma 3 1B (4 full and 22
/// sliding layers, window 512, a 16,384-byte page per layer, 7 groups of 4, the first sliding)
/// at max_model_len 32,768 and 8,192 batched tokens: a full layer takes 2,048 blocks, a sliding
/// one ceil((511 + 8192) / 16) + 1 = 545. 0.19 sums every group's blocks over the pools, 4 x
/// page x (2,048 + 6 x 545); 0.14 to 0.18 count the first group's only, 4 x page x 545; up to
/// 0.13 each layer's own pages, page x (4 x 2,048 + 22 x 545).
#[test]
fn the_start_up_check_per_release() {
    let gemma = "checkpoints/gemma-3-1b-it/config.json";
    let request = |release: &str| {
        let s = start(release, gemma, "h100-sxm", (1, 1), |r| {
            r.max_model_len = Some(32_768)
        })
        .unwrap();
        assert_eq!(s.kv_layout.groups.len(), 7, "{release}");
        s.kv_layout.stage_request_bytes.clone()
    };
    assert_eq!(request("0.19.0"), [4 * 16_384 * (2048 + 6 * 545)]);
    for release in ["0.14.0", "0.16.0", "0.17.1", "0.18.0"] {
        assert_eq!(request(release), [4 * 16_384 * 545], "{release}");
    }
    for release in ["0.10.1", "0.11.0", "0.11.2", "0.12.0", "0.13.0"] {
        assert_eq!(
            request(release),
            [16_384 * (4 * 2048 + 22 * 545)],
            "{release}"
        );
    }
}

/// 0.14 to 0.16 compare the smallest worker's KV memory with one request on the whole model;
/// 0.17 each worker with its own stage. Llama-3.1-8B at PP 2 (16 layers a stage) on an H100 at
/// utilization 0.2: the longest max-model-len that starts is, by 0.17, 16 x the fewest blocks
/// of a worker, and by 0.16, 16 x the smallest KV memory over both stages' block bytes.
#[test]
fn the_whole_model_check_before_0_17() {
    let llama = "models/llama-3.1-8b/config.json";
    let largest = |release: &str| {
        let profile = profile_of(release);
        let (circuits, model) = layout(llama, 1, 2);
        let run = run_on("h100-sxm", 1, 2, 0.2, model);
        let stages = StageCircuit::in_order(&circuits);
        let s = profile.predict_layout(&stages, &run).unwrap();
        let answer = profile.budget_answers(&stages, &run, 0).unwrap();
        (s, answer.largest_max_model_len.unwrap())
    };
    let (s17, len17) = largest("0.17.1");
    let fewest = s17
        .workers
        .iter()
        .map(|w| w.kv_cache / w.block_bytes)
        .min()
        .unwrap();
    assert_eq!(len17, 16 * fewest);
    let (s16, len16) = largest("0.16.0");
    let smallest = s16.workers.iter().map(|w| w.kv_cache).min().unwrap();
    let both: u64 = s16.kv_layout.stage_block_bytes.iter().sum();
    assert_eq!(len16, 16 * (smallest / both));
    assert!(len16 < len17 / 2 + 16, "{len16} {len17}");
    // A length between the two starts on 0.17.1 and is refused on 0.16.0.
    let between = |release: &str| {
        start(release, llama, "h100-sxm", (1, 2), |r| {
            r.gpu_memory_utilization = Some(0.2);
            r.max_model_len = Some(len16 + 16);
        })
        .unwrap()
        .verdict
    };
    assert_eq!(between("0.17.1"), Verdict::Starts);
    assert!(matches!(
        between("0.16.0"),
        Verdict::MaxModelLenTooLong { .. }
    ));
}

/// DeepSeek-V2-Lite's MLA cache: FlashMLA forces 64-token blocks on Hopper up to 0.17; 0.18
/// takes the backend's preferred 16 (FlashAttention MLA); an A100 runs Triton MLA at 16 in
/// every release.
#[test]
fn mla_block_size_per_release_and_device() {
    let deepseek = "models/deepseek-v2-lite/config.json";
    let block = |release: &str, device_name: &str| {
        start(release, deepseek, device_name, (1, 1), at_defaults)
            .unwrap()
            .kv_layout
            .token_block_size
    };
    for release in [
        "0.10.1", "0.11.0", "0.12.0", "0.13.0", "0.14.1", "0.16.0", "0.17.1",
    ] {
        assert_eq!(block(release, "h100-sxm"), 64, "{release}");
        assert_eq!(block(release, "a100-80gb"), 16, "{release}");
    }
    assert_eq!(block("0.18.0", "h100-sxm"), 16);
}

/// Mixtral-8x7B at TP 2 on an H100 (a rank's experts: moe_ffn 7,168, hidden 4,096, top 2): from
/// 0.14 the workspace manager holds workspace1 (M, 2, max(7168, 4096)) and workspace2 (M, 2,
/// max(14336, 4096)) for the process, M the tokens up to 16,384 before 0.18 and a separate
/// [tokens, hidden] output beyond them; up to 0.13 the caches live inside each call (the plan's
/// expert edges) beside the hidden states the output is written into.
#[test]
fn the_fused_moe_buffers_per_release() {
    let mixtral = "models/mixtral-8x7b-v0.1/config.json";
    let worker = |release: &str, tokens: u64| {
        start(release, mixtral, "h100-sxm", (2, 1), |r| {
            r.max_num_batched_tokens = Some(tokens);
        })
        .unwrap()
        .workers[0]
            .clone()
    };
    let workspaces = |m: u64| m * 2 * 7168 * 2 + m * 2 * 14_336 * 2;
    let cublas = 32 * MIB;
    assert_eq!(worker("0.18.1", 8192).persistent, cublas + workspaces(8192));
    assert_eq!(worker("0.17.1", 8192).persistent, cublas + workspaces(8192));
    assert_eq!(worker("0.14.0", 8192).persistent, cublas + workspaces(8192));
    assert_eq!(
        worker("0.18.1", 32_768).persistent,
        cublas + workspaces(32_768)
    );
    assert_eq!(
        worker("0.17.1", 32_768).persistent,
        cublas + workspaces(16_384) + 32_768 * 4096 * 2
    );
    let (old, new) = (worker("0.13.0", 8192), worker("0.14.0", 8192));
    assert_eq!(old.persistent, cublas);
    assert_eq!(old.forward_held, new.forward_held + 8192 * 4096 * 2);
    // The per-call caches, planned: at least workspace2 + the activation more than the fused
    // group's forward, which holds neither.
    assert!(old.forward_live >= new.forward_live + 8192 * 2 * 14_336 * 2);
}

/// torch's cuBLAS workspace: 32 MiB on capability 9.0, 8,519,680 bytes elsewhere.
#[test]
fn the_cublas_workspace_follows_the_device() {
    let llama = "models/llama-3.1-8b/config.json";
    for release in one_per_folder() {
        let h100 = start(release, llama, "h100-sxm", (1, 1), at_defaults).unwrap();
        let a100 = start(release, llama, "a100-80gb", (1, 1), at_defaults).unwrap();
        assert_eq!(h100.workers[0].persistent, 32 * MIB, "{release}");
        assert_eq!(a100.workers[0].persistent, 8_519_680, "{release}");
        assert_eq!(
            (a100.max_num_batched_tokens, a100.max_num_seqs),
            (2048, 256)
        );
        assert_eq!(
            (h100.max_num_batched_tokens, h100.max_num_seqs),
            (8192, 1024)
        );
    }
}

/// Non-torch memory of Llama-3.1-8B at TP 1 and TP 2: 0.19's measured figures from 0.17 on;
/// before 0.17 no FlashInfer all-reduce fusion workspace (538,968,064 bytes at TP 2 on an
/// H100); before 0.11 the communicators' set-up after the snapshot; below capability 9.0 no
/// NVLS buffers (docs/engines.md, "Non-torch memory per release").
#[test]
fn non_torch_per_release_and_device() {
    let llama = "models/llama-3.1-8b/config.json";
    let non_torch = |release: &str, device_name: &str, tp: u64| {
        start(release, llama, device_name, (tp, 1), at_defaults)
            .unwrap()
            .workers[0]
            .non_torch
    };
    let measured_tp = 2 * 1024 * MIB;
    let after_snapshot = 75_161_928;
    for release in one_per_folder() {
        assert_eq!(non_torch(release, "h100-sxm", 1), 256 * MIB, "{release}");
        assert_eq!(non_torch(release, "a100-80gb", 1), 256 * MIB, "{release}");
    }
    assert_eq!(
        non_torch("0.18.1", "h100-sxm", 2),
        after_snapshot + measured_tp
    );
    assert_eq!(
        non_torch("0.17.0", "h100-sxm", 2),
        after_snapshot + measured_tp
    );
    let without_fusion = measured_tp - 538_968_064;
    for release in ["0.11.0", "0.13.0", "0.16.0"] {
        assert_eq!(
            non_torch(release, "h100-sxm", 2),
            after_snapshot + without_fusion
        );
        assert_eq!(non_torch(release, "a100-80gb", 2), after_snapshot);
    }
    for release in ["0.10.1", "0.10.2"] {
        assert_eq!(
            non_torch(release, "h100-sxm", 2),
            878_455_030 + without_fusion
        );
        assert_eq!(non_torch(release, "a100-80gb", 2), 256 * MIB + 16 * MIB);
        assert_eq!(non_torch(release, "rtx5090", 2), 256 * MIB + 16 * MIB);
    }
    // No NVSwitch, so no NVLS: an A100 PCIe or an RTX 5090 (capability 12.0) keeps no measured
    // figure, and the FlashInfer fusion workspace is allocated on capability 9.0 and 10.0 only.
    for release in ["0.17.0", "0.18.1"] {
        assert_eq!(non_torch(release, "a100-pcie-80gb", 2), after_snapshot);
        assert_eq!(non_torch(release, "rtx5090", 2), after_snapshot);
        assert_eq!(
            non_torch(release, "h100-nvl", 2),
            after_snapshot + 538_968_064
        );
    }
    assert_eq!(non_torch("0.16.0", "rtx5090", 2), after_snapshot);
    assert_eq!(non_torch("0.16.0", "h100-nvl", 2), after_snapshot);
}

/// Gemma 3 4B's encoder profile (32 images of 256 soft tokens, hidden 2,560): 0.11.0 to 0.11.2
/// also keep each output padded to the encoder budget of 8,192 rows.
#[test]
fn the_encoder_outputs_padded_in_0_11() {
    let gemma = "tests/data/gemma-3-4b-it.config.json";
    let outputs = |release: &str| {
        start(release, gemma, "h100-sxm", (1, 1), |r| {
            r.max_model_len = None
        })
        .unwrap()
        .workers[0]
            .encoder
            .outputs
    };
    let returned = 32 * 256 * 2560 * 2;
    for release in ["0.10.2", "0.12.0", "0.18.1"] {
        assert_eq!(outputs(release), returned, "{release}");
    }
    for release in ["0.11.0", "0.11.2"] {
        assert_eq!(
            outputs(release),
            returned + 32 * 8192 * 2560 * 2,
            "{release}"
        );
    }
}

/// Llama 4 Scout's language model at TP 8: its 36 chunked layers are kept as full attention
/// (one group of 48) up to 0.13, where a model with attention_chunk_size turns the hybrid
/// manager off by default; from 0.14 they are groups of their own.
#[test]
fn chunked_attention_without_the_hybrid_manager_before_0_14() {
    let whole: serde_json::Value = serde_json::from_str(include_str!(
        "../../data/checkpoints/llama-4-scout-17b-16e-instruct/config.json"
    ))
    .unwrap();
    let text = whole["text_config"].to_string();
    let kinds = |release: &str| {
        let profile = profile_of(release);
        let (circuits, model) = imports(&profile, &text, "scout/config.json", 8, 1);
        let run = run_on("h100-sxm", 8, 1, 0.9, model);
        let s = profile
            .predict_layout(&StageCircuit::in_order(&circuits), &run)
            .unwrap();
        s.kv_layout
            .groups
            .iter()
            .map(|g| (g.kind, g.layers))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds("0.13.0"), [(LayerKind::Full, 48)]);
    assert_eq!(kinds("0.10.1"), [(LayerKind::Full, 48)]);
    let chunked = LayerKind::Chunked { chunk: 8192 };
    let mut split = vec![(chunked, 12); 3];
    split.push((LayerKind::Full, 12));
    assert_eq!(kinds("0.14.0"), split);
}

/// A release refuses, in one line, what it does not run as modelled: vLLM 0.10.1 has no
/// Qwen3-Next class (0.10.2 has), a refusal of the release's, not of the device; gpt-oss's MXFP4
/// experts run Marlin below capability 9.0 in every release, and before 0.12 (triton_kernels not
/// vendored) on Hopper too unless an optional package is installed; below capability 8.0 every
/// release refuses, 0.10.1 for its V0 engine and the later ones for bf16 (0.19's rule restated
/// by name, which 0.10.1 restates again); ROCm in every release.
#[test]
fn what_a_release_refuses() {
    let qwen3_next = "checkpoints/qwen3-next-80b-a3b-instruct/config.json";
    let e = start("0.10.1.1", qwen3_next, "h100-sxm", (4, 1), at_defaults).unwrap_err();
    assert!(matches!(e, EngineError::Refused { .. }));
    assert_eq!(
        e.to_string(),
        "vllm 0.10.1.1: vLLM 0.10.1 has no Qwen3NextForCausalLM (model_executor/models/registry.py; it comes in 0.10.2) (the engine file's variant `no_qwen3_next`); the prediction is refused rather than guessed"
    );
    for release in one_per_folder().skip(1) {
        let s = start(release, qwen3_next, "h100-sxm", (4, 1), at_defaults).unwrap();
        assert_eq!(s.kv_layout.token_block_size, 272, "{release}");
    }
    let gpt_oss = "checkpoints/gpt-oss-20b/config.json";
    for release in one_per_folder() {
        let on = |device_name: &str| start(release, gpt_oss, device_name, (1, 1), at_defaults);
        let refused = |r: Result<Startup, EngineError>| {
            matches!(
                r,
                Err(EngineError::Refused { .. } | EngineError::DeviceNotModelled { .. })
            )
        };
        assert!(refused(on("a100-80gb")), "{release}");
        let vendored = !matches!(release, "0.10.1" | "0.10.2" | "0.11.0" | "0.11.1");
        assert_eq!(refused(on("h100-sxm")), !vendored, "{release}");
    }
    let llama = "models/llama-3.1-8b/config.json";
    let refusal = |release: &str, device: kernel_families::Device| {
        let profile = profile_of(release);
        let (circuits, model) = layout(llama, 1, 1);
        let mut run = run_on("a100-80gb", 1, 1, 0.9, model);
        run.device = device;
        profile
            .predict_layout(&StageCircuit::in_order(&circuits), &run)
            .unwrap_err()
            .to_string()
    };
    let mut t4 = device("a100-80gb");
    t4.name = "sm75".to_owned();
    t4.compute_capability = Some("7.5".to_owned());
    assert_eq!(
        refusal("0.10.1", t4.clone()),
        "device sm75: vLLM 0.10.1 runs a device below compute capability 8.0 on its V0 engine (engine/arg_utils.py _is_v1_supported_oracle), whose start-up is not modelled (the engine file's variant `below-sm80`); the engine prediction is refused rather than guessed"
    );
    for release in one_per_folder().skip(1) {
        assert_eq!(
            refusal(release, t4.clone()),
            "device sm75: compute capability below 8.0: vLLM before 0.19 runs no bf16 there (platforms/cuda.py check_if_supports_dtype) and picks another attention backend than FlashAttention, which is not modelled (the engine file's variant `below-sm80`); the engine prediction is refused rather than guessed",
            "{release}"
        );
        assert!(
            refusal(release, device("mi300x"))
                .starts_with("device mi300x: vLLM before 0.19 on ROCm"),
            "{release}"
        );
    }
}

/// A defaulted batch: from 0.11.1 the batched tokens are bounded by the sequences x
/// max_model_len (engine/arg_utils.py); up to 0.11.0 they are the device's figure as is. Both
/// bound the sequences by the tokens. On an A100 (2,048 tokens, 256 sequences) at a
/// max_model_len of 4: 1,024 tokens from 0.11.1, 2,048 before; 256 sequences in both.
#[test]
fn defaulted_batch_bounds_per_release() {
    let llama = "models/llama-3.1-8b/config.json";
    let batch = |release: &str, max_model_len: u64| {
        let (_, model) = layout(llama, 1, 1);
        let mut run = run_on("a100-80gb", 1, 1, 0.9, model);
        run.max_model_len = Some(max_model_len);
        profile_of(release).batch(&run).unwrap()
    };
    for release in ["0.10.1", "0.10.2", "0.11.0"] {
        assert_eq!(batch(release, 4), (2048, 256), "{release}");
    }
    for release in ["0.11.1", "0.13.0", "0.16.0", "0.18.1"] {
        assert_eq!(batch(release, 4), (1024, 256), "{release}");
    }
    assert_eq!(batch("0.10.1", 8192), (2048, 256));
}
