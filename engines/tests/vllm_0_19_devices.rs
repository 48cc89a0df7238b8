//! The vLLM 0.19 profile on every device of the table (crates/kernel-families/devices.toml):
//! each prediction's device total and defaults exact, each refusal exact, and the per-device
//! rules of the engine file (the cuBLAS workspace per compute capability, MLA's block size on
//! Blackwell, gpt-oss's MXFP4 layout, ROCm) where they change the answer. The figures are the
//! engine's rules (engine/arg_utils.py, platforms/cuda.py, torch's libtorch_cuda.so; cited in
//! engines/vllm-0.19/engine.toml) applied to the table's figures.

use circuit_hf::{ImportOptions, Parallel};
use circuit_ir::Circuit;
use engine_profile::{EngineError, EngineProfile, ModelFacts, RunSettings, StageCircuit, Startup};
use kernel_families::{Device, Devices};

const GIB: u64 = 1 << 30;

fn profile() -> EngineProfile {
    engines::profile("vllm-0.19").unwrap()
}

fn device(name: &str) -> Device {
    Devices::builtin().unwrap().get(name).unwrap().clone()
}

/// The model of `text` at TP `tp`, as vLLM 0.19 loads it.
fn import(text: &str, origin: &str, tp: u64) -> (Vec<Circuit>, ModelFacts) {
    let mut options = ImportOptions::default();
    options.load = profile().load_rules();
    options.parallel = Parallel {
        tp,
        pp: 1,
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

fn llama() -> (Vec<Circuit>, ModelFacts) {
    import(
        include_str!("../../data/models/llama-3.1-8b/config.json"),
        "llama-3.1-8b/config.json",
        1,
    )
}

fn run_on(device: Device, model: ModelFacts, max_model_len: Option<u64>) -> RunSettings {
    RunSettings {
        max_model_len,
        ..RunSettings::new(device, model)
    }
}

fn predict(circuits: &[Circuit], run: &RunSettings) -> Result<Startup, EngineError> {
    profile().predict_layout(&StageCircuit::in_order(circuits), run)
}

/// Every device with the figures a prediction reads gets its own CUDA total and vLLM 0.19's
/// defaults there: 8192 tokens and 1024 sequences on 70 GiB or more without "a100" in the
/// name, else 2048 and 256 (engine/arg_utils.py:2053).
#[test]
fn every_device_gets_its_total_and_its_defaults() {
    let (circuits, model) = llama();
    let expect: [(&str, u64, u64, u64); 16] = [
        ("h100-sxm", 85_032_697_856, 8192, 1024),
        ("h100-nvl", 99_861_594_112, 8192, 1024),
        ("h200", 150_109_945_856, 8192, 1024),
        ("b200", 191_514_017_792, 8192, 1024),
        ("a100-80gb", 85_100_068_864, 2048, 256),
        ("a100-40gb", 42_298_834_944, 2048, 256),
        ("a100-pcie-80gb", 84_986_036_224, 2048, 256),
        ("a100-pcie-40gb", 42_406_903_808, 2048, 256),
        ("l40s", 47_803_596_800, 2048, 256),
        ("l4", 23_570_219_008, 2048, 256),
        ("a40", 47_608_692_736, 2048, 256),
        ("rtx4090", 25_386_352_640, 2048, 256),
        ("rtx3090", 25_327_697_920, 2048, 256),
        ("rtx6000-ada", 51_002_867_712, 2048, 256),
        ("rtx5090", 33_677_180_928, 2048, 256),
        // H20 only eagerly (below): its L2 is not in the table.
        ("h20", 102_010_716_160, 8192, 1024),
    ];
    for (name, total, tokens, seqs) in expect {
        let mut run = run_on(device(name), model.clone(), Some(8192));
        run.enforce_eager = name == "h20";
        let s = predict(&circuits, &run).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.device, name);
        assert_eq!(s.device_total, total, "{name}");
        assert_eq!(
            s.requested,
            (total as f64 * 0.9).ceil() as u64,
            "{name}: 0.9 of the total"
        );
        assert_eq!(
            (s.max_num_batched_tokens, s.max_num_seqs),
            (tokens, seqs),
            "{name}"
        );
        assert!(s.max_num_batched_tokens_defaulted && s.max_num_seqs_defaulted);
        assert_eq!(s.device_figures.name, name);
        assert_eq!(s.kv_layout.token_block_size, 16, "{name}");
    }
}

/// A device without a figure the prediction reads is refused with one line naming the device
/// and the figure (or the engine rule that stops it), never predicted from a guess.
#[test]
fn devices_without_the_figures_are_refused_naming_what_is_missing() {
    let (circuits, model) = llama();
    let refusal = |name: &str| {
        predict(&circuits, &run_on(device(name), model.clone(), Some(8192)))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refusal("h100-pcie"),
        "device h100-pcie: its total memory as CUDA reports it is not in the device table; the engine prediction is refused rather than guessed"
    );
    assert_eq!(
        refusal("gh200"),
        "device gh200: its compute capability is not in the device table, and the engine file's variant `cublas-sm90` depends on it; the engine prediction is refused rather than guessed"
    );
    assert_eq!(
        refusal("h20"),
        "device h20: its L2 cache size (torch.compile's autotuning flushes it; --enforce-eager runs without it) is not in the device table, and the engine file's profile_run.forward_held.autotune_l2_flush reads it; the engine prediction is refused rather than guessed"
    );
    assert_eq!(
        refusal("mi300x"),
        "device mi300x: vLLM 0.19 on ROCm holds torch's hipBLASLt workspace, whose default size is in torch's ROCm build (not served by PyPI, not read here), and its non-torch memory is measured on CUDA only (the engine file's variant `rocm`); the engine prediction is refused rather than guessed"
    );
    // Devices the table names without an SM count or memory never reach the engine.
    for name in ["gb200", "l40", "a10g", "a10", "mi325x"] {
        let e = Devices::builtin()
            .unwrap()
            .get(name)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "kernel-families/devices.toml: device `{name}`: the table names this device without its "
            )),
            "{e}"
        );
    }
    // A product string the defaults rule needs, absent from the table, is refused too.
    let mut anonymous = device("a100-80gb");
    anonymous.product = None;
    assert_eq!(
        predict(&circuits, &run_on(anonymous, model.clone(), Some(8192)))
            .unwrap_err()
            .to_string(),
        "device a100-80gb: its product string is not in the device table, and the defaults rules of engines/vllm-0.19/engine.toml depend on it; the engine prediction is refused rather than guessed"
    );
    // Below compute capability 8.0 vLLM 0.19 runs no bf16 and another attention backend.
    let mut turing = device("l4");
    turing.compute_capability = Some("7.5".to_owned());
    assert_eq!(
        predict(&circuits, &run_on(turing, model, Some(8192)))
            .unwrap_err()
            .to_string(),
        "device l4: compute capability below 8.0: vLLM 0.19 runs no bf16 there (platforms/cuda.py:462-480) and picks another attention backend than FlashAttention (flash_attn.py:179-180), which is not modelled (the engine file's variant `below-sm80`); the engine prediction is refused rather than guessed"
    );
}

/// vLLM compares its own memory figure (NVML's total, nvidia-smi's) with 70 GiB; the engine
/// file's rule reads CUDA's total, which is a few hundred MiB lower. The two decide alike on
/// every device of the table: none lies in between.
#[test]
fn cuda_total_and_driver_total_decide_the_defaults_alike() {
    let bar = 70 * GIB;
    for d in Devices::builtin().unwrap().all() {
        if let Some(cuda) = d.cuda_total_bytes {
            assert_eq!(cuda >= bar, d.memory_bytes >= bar, "{}", d.name);
        }
    }
}

/// A default is bounded by the other settings as vLLM bounds it (engine/arg_utils.py:
/// 2226-2240): batched tokens by sequences x max_model_len, then sequences by the tokens; a
/// value the run gives is kept.
#[test]
fn defaults_are_bounded_by_the_sequences_and_the_context() {
    let (circuits, model) = llama();
    let batch = |name: &str, len: u64, tokens: Option<u64>, seqs: Option<u64>| {
        let mut run = run_on(device(name), model.clone(), Some(len));
        run.max_num_batched_tokens = tokens;
        run.max_num_seqs = seqs;
        let s = predict(&circuits, &run).unwrap();
        assert_eq!(
            (s.max_num_batched_tokens, s.max_num_seqs),
            profile().batch(&run).unwrap()
        );
        (s.max_num_batched_tokens, s.max_num_seqs)
    };
    // 1024 x 4 = 4096 < 8192.
    assert_eq!(batch("h100-sxm", 4, None, None), (4096, 1024));
    // The user's 100 sequences x 2 = 200 < 2048; the sequences stay the user's.
    assert_eq!(batch("a100-80gb", 2, None, Some(100)), (200, 100));
    // 256 x 1: the tokens fall to 256, the sequences stay 256.
    assert_eq!(batch("a100-80gb", 1, None, None), (256, 256));
    // The user's 64 tokens bound the default sequences: min(1024, 64).
    assert_eq!(batch("h100-sxm", 8192, Some(64), None), (64, 64));
    // Both given: kept, whatever the context.
    assert_eq!(batch("h100-sxm", 1, Some(512), Some(700)), (512, 700));
}

/// torch 2.10's cuBLAS workspace is 32 MiB on compute capability 9.0 only, 8,519,680 bytes
/// elsewhere (Blackwell included): the persistent bytes of the profile run follow.
#[test]
fn the_cublas_workspace_follows_the_compute_capability() {
    let (circuits, model) = llama();
    for (name, bytes) in [
        ("h100-sxm", 33_554_432),
        ("h200", 33_554_432),
        ("h100-nvl", 33_554_432),
        ("a100-80gb", 8_519_680),
        ("l40s", 8_519_680),
        ("b200", 8_519_680),
        ("rtx5090", 8_519_680),
    ] {
        let s = predict(&circuits, &run_on(device(name), model.clone(), Some(8192))).unwrap();
        assert_eq!(s.workers[0].persistent, bytes, "{name}");
    }
}

/// MLA's KV block: 16 tokens on Ampere, Ada and Hopper (TRITON_MLA, FLASH_ATTN_MLA), 32 on
/// Blackwell (FLASHINFER_MLA's smallest kernel block).
#[test]
fn mla_blocks_are_32_tokens_on_blackwell() {
    let (circuits, model) = import(
        include_str!("../../data/models/deepseek-v2-lite/config.json"),
        "deepseek-v2-lite/config.json",
        1,
    );
    for (name, block) in [("h100-sxm", 16), ("a100-80gb", 16), ("b200", 32)] {
        let s = predict(&circuits, &run_on(device(name), model.clone(), Some(8192))).unwrap();
        assert_eq!(s.kv_layout.token_block_size, block, "{name}");
        assert_eq!(s.kv_cache_tokens % block, 0, "{name}");
    }
    let variants = |name: &str| {
        profile()
            .variants_applied(
                &StageCircuit::in_order(&circuits),
                &run_on(device(name), model.clone(), Some(8192)),
            )
            .unwrap()
    };
    assert_eq!(variants("b200"), ["mla-sm100"]);
    assert_eq!(variants("h100-sxm"), ["cublas-sm90"]);
    assert_eq!(variants("a100-80gb"), ["nccl_without_nvls"]);
}

/// NCCL's growth at TP > 1: the 2 GiB measured on H100 SXM (NVLS and the all-reduce fusion
/// workspace) on an NVSwitch system of capability 9.0; the fusion workspace alone on a card
/// without an NVSwitch; nothing known below 9.0 (no NVLS, no fusion).
#[test]
fn tensor_parallel_non_torch_follows_nvls_and_the_fusion() {
    let (circuits, model) = import(
        include_str!("../../data/models/llama-3.1-8b/config.json"),
        "llama-3.1-8b/config.json",
        2,
    );
    for (name, bytes) in [
        ("h100-sxm", 75_161_928 + 2_147_483_648),
        ("h100-nvl", 75_161_928 + 538_968_064),
        ("a100-80gb", 75_161_928),
        ("l40s", 75_161_928),
    ] {
        let mut run = run_on(device(name), model.clone(), Some(8192));
        run.tensor_parallel_size = 2;
        let s = predict(&circuits, &run).unwrap();
        for w in &s.workers {
            assert_eq!(w.non_torch, bytes, "{name} rank {}", w.rank);
        }
    }
}

/// gpt-oss's MXFP4 experts are modelled in the layout vLLM 0.19 uses on sm90 only.
#[test]
fn gpt_oss_is_refused_off_hopper() {
    let (circuits, model) = import(
        include_str!("../../data/checkpoints/gpt-oss-20b/config.json"),
        "gpt-oss-20b/config.json",
        1,
    );
    assert!(
        predict(
            &circuits,
            &run_on(device("h100-sxm"), model.clone(), Some(8192))
        )
        .is_ok()
    );
    let refusal = |name: &str| {
        predict(&circuits, &run_on(device(name), model.clone(), Some(8192)))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refusal("a100-80gb"),
        "device a100-80gb: gpt-oss's MXFP4 experts run in vLLM's MARLIN layout below compute capability 9.0 (fused_moe/oracle/mxfp4.py), which is not modelled (the engine file's variant `mxfp4-below-sm90`); the engine prediction is refused rather than guessed"
    );
    assert_eq!(
        refusal("b200"),
        "device b200: gpt-oss's MXFP4 experts run in a FlashInfer or Marlin layout from compute capability 10.0 (fused_moe/oracle/mxfp4.py), which is not modelled (the engine file's variant `mxfp4-sm100`); the engine prediction is refused rather than guessed"
    );
}

/// A refusing variant that also overlays facts, or whose reason is not a string, is refused when
/// the profile loads.
#[test]
fn a_refusing_variant_is_checked_at_load() {
    let load = |extra: &str| {
        engine_profile::EngineProfile::from_texts(&engine_profile::ProfileTexts {
            engine: vec![(
                &format!("{}\n{extra}", include_str!("../vllm-0.19/engine.toml")),
                "engine.toml",
            )],
            families: (include_str!("../vllm-0.19/families.toml"), "families.toml"),
            rules: (include_str!("../vllm-0.19/rules.toml"), "rules.toml"),
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(
        load("[[variant]]\nname = \"x\"\nrefuse = \"why\"\n[variant.kv_cache]\nblock_size = 32\n"),
        Err(
            "engine.toml: variant `x`: a variant that refuses overlays nothing (found kv_cache)"
                .to_owned()
        )
    );
    assert_eq!(
        load("[[variant]]\nname = \"x\"\nrefuse = 3\n"),
        Err("engine.toml: variant `x`: refuse: write the reason the runs it holds for are refused, as a string".to_owned())
    );
}

/// Budget questions across devices: the smallest TP that starts Llama-3.1-8B at its full
/// 131,072-token context, per device.
#[test]
fn the_smallest_tp_differs_by_device() {
    let text = include_str!("../../data/models/llama-3.1-8b/config.json");
    let (_, model) = llama();
    let smallest = |name: &str| {
        let run = run_on(device(name), model.clone(), None);
        let answer = profile()
            .smallest_tp(&run, 8, |tp| {
                Some(import(text, "llama-3.1-8b/config.json", tp).0)
            })
            .unwrap();
        answer
            .found
            .map(|(tp, s)| (tp, s.max_num_batched_tokens, s.max_num_seqs))
    };
    assert_eq!(smallest("h100-sxm"), Some((1, 8192, 1024)));
    assert_eq!(smallest("a100-80gb"), Some((1, 2048, 256)));
    // 24 GiB: 15 GiB of weights leave less than one 131,072-token request of KV.
    assert_eq!(smallest("rtx4090").map(|a| a.0), Some(2));
}

/// The device rules are `inherit = true`: every later release that extends 0.19 keeps them
/// (its own variants replace 0.19's others), so no release predicts on a device 0.19 refuses;
/// the releases before 0.19 restate the refusals in their own words.
#[test]
fn every_release_keeps_the_device_rules() {
    let (circuits, model) = llama();
    let stages = StageCircuit::in_order(&circuits);
    // vLLM's folders: SGLang's have device rules of their own (engines/tests/sglang_0_5_23.rs).
    for folder in engines::folders()
        .iter()
        .filter(|f| f.name.starts_with("vllm-"))
    {
        let p = engines::profile(folder.name).unwrap();
        let on = |name: &str| run_on(device(name), model.clone(), Some(8192));
        let applied = p.variants_applied(&stages, &on("h100-sxm")).unwrap();
        assert_eq!(
            applied.first().map(String::as_str),
            Some("cublas-sm90"),
            "{}",
            folder.name
        );
        let refused = p
            .predict_layout(&stages, &on("mi300x"))
            .unwrap_err()
            .to_string();
        // The folders before 0.19 restate the refusal for their own sources.
        let minor: u32 = p.version().split('.').nth(1).unwrap().parse().unwrap();
        let which = if minor < 19 { "before 0.19" } else { "0.19" };
        assert!(
            refused.starts_with(&format!("device mi300x: vLLM {which} on ROCm")),
            "{}: {refused}",
            folder.name
        );
    }
}
