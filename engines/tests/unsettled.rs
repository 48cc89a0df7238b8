//! The `[[unsettled]]` notes an engine file prints under a prediction are those whose `when`
//! holds for the run (the conditions `[[variant]]` tests, docs/engines.md "Variants"): the
//! vision towers' note under a vision-language model and not under Llama-3.1-8B, the compiled
//! forward's and the CUDA graphs' notes not under an eager run, the MoE chunk's under an MoE
//! model only, the communicators' under a world of more than one worker only, and a note a
//! variant's facts replace (`unless_variant`) not where that variant applies.

use circuit_hf::KvCacheDtype;
use engine_profile::{EngineProfile, ProfileTexts, RunSettings, StageCircuit};

mod common;

fn config(name: &str) -> String {
    let path = format!(
        "{}/../data/models/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The names of the notes printed under `model` at TP `tp` on an H100 under `folder`, at a
/// max-model-len of 8,192, the run changed by `edit`.
fn notes(folder: &str, model: &str, tp: u64, edit: impl Fn(&mut RunSettings)) -> Vec<String> {
    let profile = engines::profile(folder).unwrap();
    let config = config(model);
    let (circuits, mut run) = common::layout(
        profile.load_rules(),
        &config,
        model,
        tp,
        KvCacheDtype::Auto,
        "h100-sxm",
    );
    run.max_model_len = Some(8192);
    edit(&mut run);
    profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap_or_else(|e| panic!("{folder} {model}: {e}"))
        .unsettled
        .into_iter()
        .map(|u| u.name)
        .collect()
}

const LLAMA: &str = "llama-3.1-8b";
const QWEN_VL: &str = "qwen2.5-vl-7b-instruct";

#[test]
fn the_vision_note_prints_for_a_vision_language_model_only() {
    let all = [
        "cublas_workspace",
        "memory_in_use_at_start",
        "sizing_steps",
        "cuda_graph_pool",
        "sampler_warmup_top_k_top_p",
        "inductor_forward",
        "vision_tower_forwards",
    ];
    let without = |names: &[&str]| -> Vec<String> {
        all.iter()
            .filter(|n| !names.contains(n))
            .map(|n| (*n).to_owned())
            .collect()
    };
    assert_eq!(
        notes("vllm-0.34", LLAMA, 1, |_| {}),
        without(&["vision_tower_forwards"])
    );
    assert_eq!(notes("vllm-0.34", QWEN_VL, 1, |_| {}), without(&[]));
    // A run that leaves the encoder out of its profile is not concerned by its forwards.
    assert_eq!(
        notes("vllm-0.34", QWEN_VL, 1, |r| r.skip_mm_profiling = true),
        without(&["vision_tower_forwards"])
    );
    // A world of two also holds the communicators before the snapshot: their assumption's
    // note follows the context's.
    assert_eq!(notes("vllm-0.34", LLAMA, 2, |_| {}), {
        let mut v = without(&["vision_tower_forwards"]);
        v.insert(2, "communicators_at_start".to_owned());
        v
    });
    // An eager run compiles no forward and captures no graph.
    assert_eq!(
        notes("vllm-0.34", LLAMA, 1, |r| r.enforce_eager = true),
        without(&[
            "vision_tower_forwards",
            "cuda_graph_pool",
            "inductor_forward"
        ])
    );
}

#[test]
fn the_moe_and_the_world_notes_print_where_they_apply() {
    // vLLM 0.10.1: the communicators' set-up and the fusion workspace concern a larger world
    // (on Hopper, where NVLS is charged), the MoE chunk an MoE model.
    assert_eq!(
        notes("vllm-0.10.1", LLAMA, 1, |_| {}),
        [
            "non_torch_measured",
            "sampler_install",
            "inductor_forward",
            "cublas_workspace"
        ]
    );
    assert_eq!(
        notes("vllm-0.10.1", LLAMA, 2, |_| {}),
        [
            "non_torch_measured",
            "communicators_setup",
            "no_fusion_workspace",
            "sampler_install",
            "inductor_forward",
            "cublas_workspace"
        ]
    );
    assert_eq!(
        notes("vllm-0.10.1", "mixtral-8x7b-v0.1", 2, |_| {}),
        [
            "non_torch_measured",
            "communicators_setup",
            "no_fusion_workspace",
            "sampler_install",
            "inductor_forward",
            "moe_chunk",
            "cublas_workspace"
        ]
    );
    // An H100 NVL has no NVSwitch: the `nccl_without_nvswitch_nvl` variant counts no NCCL
    // growth at TP > 1, so nothing is taken off it and the fusion workspace's note does not
    // concern the run (the table lacks the H100 PCIe's CUDA total, so that card is refused).
    let nvl = kernel_families::Devices::builtin()
        .unwrap()
        .get("h100-nvl-94gb")
        .unwrap()
        .clone();
    assert_eq!(
        notes("vllm-0.10.1", LLAMA, 2, |run| run.device = nvl.clone()),
        [
            "non_torch_measured",
            "communicators_setup",
            "sampler_install",
            "inductor_forward",
            "cublas_workspace"
        ]
    );
}

/// vLLM 0.23's sampler note concerns the V1 runner's models: not Llama-3.1-8B, which its
/// `model_runner_v2` variant moves to the V2 runner, but an MoE model, which stays on V1.
#[test]
fn a_note_a_variant_replaces_is_left_out_where_it_applies() {
    assert_eq!(
        notes("vllm-0.23", LLAMA, 1, |_| {}),
        ["cublas_workspace", "inductor_forward"]
    );
    assert_eq!(
        notes("vllm-0.23", "qwen3-30b-a3b", 1, |_| {}),
        ["cublas_workspace", "inductor_forward", "v1_sampler"]
    );
}

/// A note's conditions are checked when the file loads, as a variant's are.
#[test]
fn a_notes_bad_condition_is_refused_when_the_file_loads() {
    let load = |extra: &str| {
        EngineProfile::from_texts(&ProfileTexts {
            engine: vec![(
                &format!("{}\n{extra}", include_str!("../vllm-0.19/engine.toml")),
                "engine.toml",
            )],
            families: (include_str!("../vllm-0.19/families.toml"), "families.toml"),
            rules: (include_str!("../vllm-0.19/rules.toml"), "rules.toml"),
        })
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        load(
            "[[unsettled]]\nname = \"bad\"\neffect = \"x\"\nwhen = { min_compute_capability = \"nine\" }\n"
        ),
        "engine.toml: unsettled `bad`: when.min_compute_capability = \"nine\": write major.minor, e.g. \"9.0\""
    );
    assert_eq!(
        load("[[unsettled]]\nname = \"bad\"\neffect = \"x\"\nunless_variant = \"nope\"\n"),
        "engine.toml: unsettled `bad`: unless_variant = \"nope\": the file has no variant of that name"
    );
    let unknown =
        load("[[unsettled]]\nname = \"bad\"\neffect = \"x\"\nwhen = { colour = \"red\" }\n");
    assert!(unknown.contains("unknown field `colour`"), "{unknown}");
}
