//! The whole pipeline, TOML text to memory plans. The input is up to three texts separated by
//! lines `%%`: circuit, families, rules; a missing or empty part is the example's file. Its
//! first byte picks the device and inputs. Whatever loads is planned at a few row counts with
//! small limits; every plan must agree with a serial plan, its per-node table and its arena.
#![no_main]

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::Families;
use libfuzzer_sys::fuzz_target;
use memory_plan::{PlanConfig, Planner, pack, widest};

#[path = "common.rs"]
mod common;
#[path = "../../crates/memory-plan/tests/checker/mod.rs"]
mod checker;

const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../examples/llama-3.1-8b/families.toml");
const RULES: &str = include_str!("../../examples/llama-3.1-8b/rules.toml");

/// Circuits above this many nodes are loaded but not planned (a large repeat is legal input;
/// planning it in every fuzz iteration would only make the fuzzer slow).
const MAX_PLANNED_NODES: usize = 2_000;

fuzz_target!(|data: &[u8]| {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut parts = text.split("\n%%\n");
    let mut part = |example: &'static str| match parts.next() {
        Some(p) if !p.trim().is_empty() => p.to_owned(),
        _ => example.to_owned(),
    };
    let (c, f, r) = (part(CIRCUIT), part(FAMILIES), part(RULES));

    let circuit = match Circuit::from_toml(&c, "circuit.toml") {
        Err(e) => return common::one_line("circuit", &e.to_string()),
        Ok(c) => c,
    };
    let families = match Families::from_toml(&f, "families.toml") {
        Err(e) => return common::one_line("families", &e.to_string()),
        Ok(f) => f,
    };
    for finding in families.check(&circuit) {
        common::one_line("finding", &finding.to_string());
    }
    let rules = match Rules::from_toml(&r, "rules.toml", Some(&families)) {
        Err(e) => return common::one_line("rules", &e.to_string()),
        Ok(r) => r,
    };
    let overrides: &[(&str, &str)] = if knob & 1 == 1 {
        &[("mode", "decode")]
    } else {
        &[]
    };
    let settings = match rules.settings(overrides.iter().copied(), "--set") {
        Err(e) => return common::one_line("settings", &e.to_string()),
        Ok(s) => s,
    };
    if circuit.nodes().len() > MAX_PLANNED_NODES {
        return;
    }
    let config = PlanConfig {
        kv_tokens: [0, 1, 131_072, u64::MAX][usize::from(knob >> 1 & 3)],
        sequences: [1, 0, 64, u64::MAX][usize::from(knob >> 3 & 3)],
        align: [256, 1, 3, 1 << 40][usize::from(knob >> 5 & 3)],
        placeholders: knob & 0x80 != 0,
        search_steps: 500,
        ..PlanConfig::new(if knob & 0x40 != 0 { 1 } else { 132 })
    };
    let planner = match Planner::new(&circuit, &families, &rules, settings, config) {
        Err(e) => return common::one_line("planner", &e.to_string()),
        Ok(p) => p,
    };
    let rows = [1u64, 64, 4096];
    let swept = match planner.sweep(&rows, &|| {}) {
        Err(e) => {
            common::one_line("sweep", &e.to_string());
            // A sweep fails exactly when some row count fails alone.
            assert!(
                rows.iter().any(|&n| planner.plan(n).is_err()),
                "sweep fails alone: {e}"
            );
            return;
        }
        Ok(p) => p,
    };
    for (plan, &n) in swept.iter().zip(&rows) {
        let alone = planner
            .plan(n)
            .expect("a row count of a good sweep plans alone");
        assert_eq!(plan, &alone, "sweep differs from a serial plan at n = {n}");
        let t = plan.totals;
        assert_eq!(t.total, t.weights + t.activations + t.workspaces + t.states);
        assert!(plan.arena.lower_bound <= plan.arena.bytes);
        assert!(plan.arena.bytes <= plan.arena.unshared);

        let table = planner
            .per_node(n)
            .unwrap_or_else(|e| panic!("per_node({n}): {e}"));
        let sum = table
            .nodes
            .iter()
            .map(|r| {
                u128::from(r.weights)
                    + u128::from(r.activations)
                    + u128::from(r.workspaces)
                    + u128::from(r.states)
            })
            .sum::<u128>()
            + u128::from(table.fragmentation);
        assert_eq!(
            sum,
            u128::from(t.total),
            "per-node rows do not sum to the total at n = {n}"
        );

        let layout = planner
            .arena_layout(n)
            .unwrap_or_else(|e| panic!("arena_layout({n}): {e}"));
        let buffers: Vec<pack::Buffer> = layout
            .slots
            .iter()
            .zip(&layout.sizes)
            .map(|(s, &size)| pack::Buffer::new(s.start as u64, s.end as u64, size))
            .collect();
        let height = pack::validate(&buffers, &layout.offsets, None)
            .unwrap_or_else(|e| panic!("arena at n = {n} invalid: {e}"));
        assert_eq!(height, plan.arena.bytes);
        let fusion = planner
            .fusion(n)
            .unwrap_or_else(|e| panic!("fusion({n}): {e}"));
        checker::check(&circuit, &fusion, &layout)
            .unwrap_or_else(|e| panic!("checker at n = {n}: {e}"));
    }
    let w = widest(swept.iter().map(|p| p.workspaces.clone()));
    let w_rev = widest(swept.iter().rev().map(|p| p.workspaces.clone()));
    let bytes = |w: &[memory_plan::WorkspaceTerm]| {
        let mut b: Vec<_> = w
            .iter()
            .map(|t| (t.family.clone(), t.name.clone(), t.bytes))
            .collect();
        b.sort();
        b
    };
    assert_eq!(
        bytes(&w),
        bytes(&w_rev),
        "widest depends on the order of plans"
    );

    let budget = swept[1].totals.total;
    match planner.max_rows(1..=4096, budget) {
        Err(e) => common::one_line("max_rows", &e.to_string()),
        Ok(fit) => {
            if let Some(m) = fit.max_rows {
                let total = planner
                    .plan(m)
                    .expect("the fitting row count plans")
                    .totals
                    .total;
                assert!(total <= budget, "max_rows {m} has total {total} > {budget}");
                assert_eq!(fit.total_at_max_rows, Some(total));
            }
        }
    }
    if let Err(e) = planner.max_kv_tokens(64, budget) {
        common::one_line("max_kv_tokens", &e.to_string());
    }
});
