//! The Llama example's fusion plans: golden text at n = 1 (decode) and n = 4096 (prefill),
//! coverage at every n, and interval invariance.

use std::path::PathBuf;

use circuit_ir::Circuit;
use fuser::{EdgeState, FuseOptions, Rules, Settings, fuse, intervals};
use proptest::prelude::*;

const CIRCUIT: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");
const RULES: &str = include_str!("../../../examples/llama-3.1-8b/rules.toml");

fn load() -> (Circuit, Rules) {
    (
        Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap(),
        Rules::from_toml(RULES, "rules.toml", None).unwrap(),
    )
}

fn settings(rules: &Rules, mode: &str) -> Settings {
    rules.settings([("mode", mode)], "--set").unwrap()
}

/// Compares with the checked-in golden file; `UPDATE_GOLDEN=1` rewrites it instead.
fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        expected == actual,
        "{} differs from the plan; if the change is intended, run UPDATE_GOLDEN=1 cargo test -p fuser",
        path.display()
    );
}

#[test]
fn golden_plan_at_one_row_decode() {
    let (c, r) = load();
    let plan = fuse(&c, &r, &settings(&r, "decode"), 1, FuseOptions::default()).unwrap();
    assert_eq!(plan.groups().len(), 1 + 32 * 12 + 2);
    assert_eq!(plan.rows(), 1..=64);
    golden("llama-n1-decode.txt", &plan.render(&c));
}

#[test]
fn golden_plan_at_4096_rows_prefill() {
    let (c, r) = load();
    let plan = fuse(
        &c,
        &r,
        &settings(&r, "prefill"),
        4096,
        FuseOptions::default(),
    )
    .unwrap();
    assert_eq!(plan.groups().len(), 1 + 32 * 11 + 2);
    assert_eq!(plan.rows(), 65..=1_048_576);
    golden("llama-n4096-prefill.txt", &plan.render(&c));
}

#[test]
fn fused_edges_never_leave_their_group() {
    let (c, r) = load();
    let plan = fuse(
        &c,
        &r,
        &settings(&r, "prefill"),
        4096,
        FuseOptions::default(),
    )
    .unwrap();
    let fused: Vec<&str> = c
        .edges()
        .iter()
        .filter(|(e, _)| plan.edge_state(*e) == EdgeState::Fused)
        .map(|(_, edge)| edge.id.as_str())
        .collect();
    // Per layer: the rotated keys (rope + kv_write) and the up projection (GEMM epilogue);
    // and the last layer's output, read only by the fused final norm.
    assert_eq!(fused.len(), 32 * 2 + 1);
    assert!(fused.contains(&"layer.5.k_rot"));
    assert!(fused.contains(&"layer.5.up"));
    assert!(fused.contains(&"layer.31.y"));
    assert!(!fused.contains(&"layer.30.y"));
}

#[test]
fn covered_at_every_row_count_up_to_65536_in_both_modes() {
    let (c, r) = load();
    for mode in ["decode", "prefill"] {
        let s = settings(&r, mode);
        let cuts = intervals(&r, &s, 1..=65_536);
        assert_eq!(cuts, vec![1..=64, 65..=65_536]);
        // One plan per interval serves every n in it (the property test below checks that).
        for interval in cuts {
            for n in [*interval.start(), *interval.end()] {
                fuse(&c, &r, &s, n, FuseOptions::default()).unwrap();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn plan_of_the_interval_equals_a_fresh_plan(n in 1u64..2_000_000, decode in any::<bool>()) {
        let (c, r) = load();
        let s = settings(&r, if decode { "decode" } else { "prefill" });
        let interval = intervals(&r, &s, 1..=u64::MAX)
            .into_iter()
            .find(|i| i.contains(&n))
            .unwrap();
        let at_start = fuse(&c, &r, &s, *interval.start(), FuseOptions { placeholders: true }).unwrap();
        let at_n = fuse(&c, &r, &s, n, FuseOptions { placeholders: true }).unwrap();
        prop_assert_eq!(at_start.rows(), interval);
        prop_assert_eq!(at_n, at_start);
    }
}

#[test]
fn every_kernel_of_the_rules_is_in_the_example_registry() {
    let families = kernel_families::Families::from_toml(
        include_str!("../../../examples/llama-3.1-8b/families.toml"),
        "families.toml",
    )
    .unwrap();
    Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap();
    let err = Rules::from_toml(
        &RULES.replace("\"rope_bf16\"", "\"rope_fp8\""),
        "rules.toml",
        Some(&families),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rules.toml: rule `rope`: kernels: kernel `rope_fp8` is not listed by any family of the registry"
    );
}
