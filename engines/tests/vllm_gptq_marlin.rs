//! GPTQ's linears as vLLM holds them per device (`[load] gptq_linears` of
//! engines/vllm-0.19/engine.toml): Machete's layout (the stored tensors) on compute capability
//! 9.0 when Machete implements the group size, Marlin's elsewhere from 7.5 (qzeros dropped, an
//! act-order sort index per fused module); AWQ's (`awq_linears`) likewise from 0.19. Every figure is derived from the checkpoint's shapes
//! in the comments; the stored bytes are the checkpoints' `expect.json`.

use circuit_hf::ImportOptions;
use kernel_families::Devices;

const LLAMA_W4A16: &str =
    include_str!("../../data/checkpoints/llama-3.1-8b-instruct-w4a16/config.json");
const QWEN3_AWQ: &str = include_str!("../../data/checkpoints/qwen3-32b-awq/config.json");

/// The weight bytes of `text` as release `folder` holds it on `device` (TP 1), with the load
/// rules of that device.
fn held(folder: &str, text: &str, device: &str) -> u64 {
    let profile = engines::profile(folder).unwrap();
    let device = Devices::builtin().unwrap().get(device).unwrap().clone();
    let mut options = ImportOptions::default();
    options.load = profile.load_rules_on(&device).unwrap();
    circuit_hf::import_with(text, "config.json", &options, &[])
        .unwrap()
        .circuit
        .weight_bytes()
}

/// The checkpoint's bytes, as stored.
fn stored(text: &str) -> u64 {
    circuit_hf::import_with(text, "config.json", &ImportOptions::default(), &[])
        .unwrap()
        .circuit
        .weight_bytes()
}

// Llama-3.1-8B, per decoder layer (32): q 4096x4096, k and v 1024x4096, o 4096x4096, gate and up
// 14336x4096, down 4096x14336; sum of out x in = 218,103,808.
// Marlin drops qzeros (i32 [in/128, out/8]: out x in / 256 bytes) = 851,968 per layer,
// 27,262,976 in all. Act order (desc_act): the checkpoint stores g_idx (i32 [in]) per module,
// (6 x 4096 + 14336) x 4 = 155,648 per layer; vLLM holds one sorted g_idx and one sort index per
// fused module (qkv, o, gate_up, down: 4096 x 3 + 14336 = 26,624 rows), 2 x 26,624 x 4 = 212,992:
// +57,344 per layer, +1,835,008 in all. Held: 5,735,587,840 - 27,262,976 + 1,835,008.
const LLAMA_STORED: u64 = 5_735_587_840;
const LLAMA_MARLIN: u64 = 5_710_159_872;

#[test]
fn gptq_llama_is_held_in_marlin_layout_on_a100_and_l40s_and_as_stored_on_h100() {
    assert_eq!(stored(LLAMA_W4A16), LLAMA_STORED);
    assert_eq!(LLAMA_STORED - 27_262_976 + 1_835_008, LLAMA_MARLIN);
    for release in ["vllm-0.19", "vllm-0.10.1", "vllm-0.23"] {
        assert_eq!(
            held(release, LLAMA_W4A16, "a100-80gb"),
            LLAMA_MARLIN,
            "{release}"
        );
        assert_eq!(
            held(release, LLAMA_W4A16, "l40s"),
            LLAMA_MARLIN,
            "{release}"
        );
        assert_eq!(
            held(release, LLAMA_W4A16, "h100-sxm"),
            LLAMA_STORED,
            "{release}"
        );
    }
    // From 0.24 Marlin pads odd shapes and later drops act order's g_idx: held as stored.
    assert_eq!(held("vllm-0.24", LLAMA_W4A16, "a100-80gb"), LLAMA_STORED);
    assert_eq!(held("vllm-0.34", LLAMA_W4A16, "a100-80gb"), LLAMA_STORED);
    // Below 7.5 (a T4 is 7.5: Marlin; no device of the table is below) and on AMD: as stored.
    assert_eq!(held("vllm-0.19", LLAMA_W4A16, "mi300x"), LLAMA_STORED);
}

/// Group size 32: Machete implements -1, 64 and 128 only, so the H100 runs Marlin too.
/// qzeros at group 32: out x in / 64 bytes per module, 218,103,808 / 64 x 32 = 109,051,904;
/// the act-order indices do not depend on the group (+1,835,008).
#[test]
fn gptq_group_32_is_held_in_marlin_layout_on_h100_too() {
    let g32 = LLAMA_W4A16.replace("\"group_size\": 128", "\"group_size\": 32");
    assert_ne!(g32, LLAMA_W4A16);
    let stored = stored(&g32);
    let marlin = stored - 109_051_904 + 1_835_008;
    assert_eq!(held("vllm-0.19", &g32, "h100-sxm"), marlin);
    assert_eq!(held("vllm-0.19", &g32, "a100-80gb"), marlin);
}

/// AWQ's Marlin layout keeps every stored byte (awq_marlin.py: qweight and qzeros repacked to
/// the same int32 counts, scales permuted, no g_idx): Qwen3-32B-AWQ is held as stored
/// (19,325,298,688, expect.json) on the A100 in every release, and on the H100 before 0.19
/// (AWQMarlinLinearMethod calls Marlin directly).
/// From 0.19 the H100 runs Machete, which holds each module's zero points unpacked and
/// pre-scaled, `[in / 128, out]` f16 instead of i32 `[in / 128, out / 8]`: +1.5 bytes per
/// group x out. Per layer (64): q 40 x 8192, k and v 40 x 1024, o 64 x 5120, gate and up
/// 40 x 25600, down 200 x 5120 = 3,809,280 group-columns, x 1.5 = 5,713,920; 365,690,880 in all.
#[test]
fn awq_qwen3_is_held_as_stored_on_a100_and_with_machete_zero_points_on_h100() {
    const STORED: u64 = 19_325_298_688;
    const MACHETE: u64 = STORED + 365_690_880;
    assert_eq!(stored(QWEN3_AWQ), STORED);
    for release in ["vllm-0.10.1", "vllm-0.18", "vllm-0.19", "vllm-0.34"] {
        assert_eq!(held(release, QWEN3_AWQ, "a100-80gb"), STORED, "{release}");
    }
    for release in ["vllm-0.10.1", "vllm-0.18"] {
        assert_eq!(held(release, QWEN3_AWQ, "h100-sxm"), STORED, "{release}");
    }
    for release in ["vllm-0.19", "vllm-0.34"] {
        assert_eq!(held(release, QWEN3_AWQ, "h100-sxm"), MACHETE, "{release}");
    }
}

/// A `[load] gptq_linears` rule with an unknown kernel, or a condition on anything but the
/// device (the rules are resolved before the model is read), is refused when the profile loads.
#[test]
fn a_bad_gptq_linears_rule_is_refused_at_load() {
    let base = include_str!("../vllm-0.19/engine.toml");
    let load = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        engine_profile::EngineProfile::from_texts(&engine_profile::ProfileTexts {
            engine: vec![(&base.replacen(from, to, 1), "engine.toml")],
            families: (include_str!("../vllm-0.19/families.toml"), "families.toml"),
            rules: (include_str!("../vllm-0.19/rules.toml"), "rules.toml"),
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(
        load("kernel = \"machete\"", "kernel = \"exllama\""),
        Err("engine.toml: load.gptq_linears[0].kernel = \"exllama\": write \"stored\", \"machete\" or \"marlin\"".to_owned())
    );
    assert_eq!(
        load(
            "{ vendor = \"nvidia\", min_compute_capability = \"7.5\" }",
            "{ vendor = \"nvidia\", moe = true }"
        ),
        Err("engine.toml: load.gptq_linears[1].when: only device conditions (compute capability, vendor, total, product) may choose a load layout, which is fixed before the model is read".to_owned())
    );
    assert_eq!(
        load("min_compute_capability = \"7.5\"", "min_compute_capability = \"7\""),
        Err("engine.toml: load.gptq_linears[1].when.min_compute_capability = \"7\": write major.minor, e.g. \"9.0\"".to_owned())
    );
}
