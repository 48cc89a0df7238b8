//! The Llama-3.1-8B example: exact totals, an arena at its lower bound, sweeps identical to
//! single plans at any thread count, and fit queries against brute force.

mod checker;

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{MemoryPlan, PlanConfig, Planner};

const CIRCUIT: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../../examples/llama-3.1-8b/families.toml");
const RULES: &str = include_str!("../../../examples/llama-3.1-8b/rules.toml");

struct Example {
    circuit: Circuit,
    families: Families,
    rules: Rules,
}

fn example() -> Example {
    let families = Families::from_toml(FAMILIES, "families.toml").unwrap();
    Example {
        circuit: Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap(),
        rules: Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap(),
        families,
    }
}

fn planner<'a>(e: &'a Example, mode: &str, config: PlanConfig) -> Planner<'a> {
    let settings = e.rules.settings([("mode", mode)], "--set").unwrap();
    Planner::new(&e.circuit, &e.families, &e.rules, settings, config).unwrap()
}

const H100_SMS: u64 = 132;

fn powers_of_two() -> Vec<u64> {
    (0..=13).map(|p| 1u64 << p).collect()
}

#[test]
fn the_arena_reaches_its_lower_bound_at_every_power_of_two() {
    let e = example();
    for mode in ["decode", "prefill"] {
        let p = planner(&e, mode, PlanConfig::new(H100_SMS));
        for plan in p.sweep(&powers_of_two(), &|| {}).unwrap() {
            assert_eq!(
                plan.arena.bytes, plan.arena.lower_bound,
                "{mode} n = {}: arena above its lower bound",
                plan.rows
            );
            assert!(plan.arena.optimal);
        }
    }
}

#[test]
fn exact_totals_at_one_row_decoding() {
    let e = example();
    let config = PlanConfig {
        kv_tokens: 1000,
        ..PlanConfig::new(H100_SMS)
    };
    let plan = planner(&e, "decode", config).plan(1).unwrap();
    let t = plan.totals;
    assert_eq!(t.weights, 16_060_522_496);
    assert_eq!(t.states, 131_072_000);
    assert_eq!(
        (plan.arena.bytes, plan.arena.lower_bound),
        (ARENA_1, ARENA_1)
    );
    assert_eq!(t.workspaces, 0);
    assert_eq!(t.total, 16_060_522_496 + ARENA_1 + 131_072_000);
    let terms: Vec<(&str, &str, u64, bool)> = plan
        .workspaces
        .iter()
        .map(|w| (&*w.family, &*w.name, w.bytes, w.arena))
        .collect();
    assert_eq!(terms, TERMS_1);
}

#[test]
fn exact_totals_at_4096_rows_prefilling() {
    let e = example();
    let config = PlanConfig {
        kv_tokens: 1000,
        ..PlanConfig::new(H100_SMS)
    };
    let plan = planner(&e, "prefill", config).plan(4096).unwrap();
    let t = plan.totals;
    assert_eq!(t.weights, 16_060_522_496);
    assert_eq!(t.states, 131_072_000);
    assert_eq!(
        (plan.arena.bytes, plan.arena.lower_bound),
        (ARENA_4096, ARENA_4096)
    );
    // cuBLASLt's 32 MiB workspace, charged once.
    assert_eq!(t.workspaces, 33_554_432);
    assert_eq!(
        t.total,
        16_060_522_496 + ARENA_4096 + 33_554_432 + 131_072_000
    );
    let terms: Vec<(&str, &str, u64, bool)> = plan
        .workspaces
        .iter()
        .map(|w| (&*w.family, &*w.name, w.bytes, w.arena))
        .collect();
    assert_eq!(terms, TERMS_4096);
}

/// At n = 1 the peak is the lm_head step: its logits (128,256 x 2 bytes = 256,512), the final
/// norm's output (8,192) and the split-K partials term (4 x 64 x 128 x 132 SMs = 4,325,376; an
/// arena workspace is placed at its term's size wherever the family runs).
const ARENA_1: u64 = 4_590_080;
/// Split-KV decode: 33 splits (ceil(2 x 132 / 8 KV heads)) x 32 heads x (128 + 1) x 4 bytes.
const TERMS_1: &[(&str, &str, u64, bool)] = &[
    ("flash_decode", "lse_accum", 33 * 32 * 4, true),
    ("flash_decode", "out_accum", 33 * 32 * 128 * 4, true),
    ("splitk_gemm", "partials", 4 * 64 * 128 * 132, true),
];
/// At n = 4096 the peak is again the lm_head step: 4096 x 128,256 x 2 bytes of logits and the
/// 4096 x 4096 x 2 of its input.
const ARENA_4096: u64 = 4096 * 128_256 * 2 + 4096 * 4096 * 2;
const TERMS_4096: &[(&str, &str, u64, bool)] = &[
    ("cublaslt_gemm", "cublaslt_workspace", 32 << 20, false),
    ("flash_attn_varlen", "softmax_lse", 4096 * 32 * 4, true),
];

#[test]
fn a_sweep_equals_single_plans_at_any_thread_count() {
    let e = example();
    let p = planner(&e, "decode", PlanConfig::new(H100_SMS));
    let rows: Vec<u64> = (1..=300).chain([4096, 8192]).collect();
    let single: Vec<MemoryPlan> = rows.iter().map(|&n| p.plan(n).unwrap()).collect();
    for threads in [1, 2, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let swept = pool.install(|| p.sweep(&rows, &|| {})).unwrap();
        assert_eq!(swept, single, "{threads} threads");
    }
}

#[test]
fn max_rows_matches_brute_force() {
    let e = example();
    let p = planner(&e, "decode", PlanConfig::new(H100_SMS));
    let rows: Vec<u64> = (1..=600).collect();
    let totals: Vec<u64> = p
        .sweep(&rows, &|| {})
        .unwrap()
        .iter()
        .map(|p| p.totals.total)
        .collect();
    for budget in [
        totals[0] - 1,
        totals[0],
        totals[63],
        totals[64] + 1,
        totals[200],
        totals[599] + 7,
    ] {
        let brute = rows
            .iter()
            .zip(&totals)
            .filter(|(_, t)| **t <= budget)
            .map(|(n, _)| *n)
            .max();
        let fit = p.max_rows(1..=600, budget).unwrap();
        assert_eq!(fit.max_rows, brute, "budget {budget}");
        if let Some(n) = brute {
            assert_eq!(fit.total_at_max_rows, Some(totals[n as usize - 1]));
        }
    }
}

#[test]
fn max_kv_tokens_fills_the_budget_to_the_token() {
    let e = example();
    let p = planner(&e, "prefill", PlanConfig::new(H100_SMS));
    let budget = 85_520_809_984; // an H100's 81,559 MiB
    let fit = p.max_kv_tokens(4096, budget).unwrap();
    let kv = fit.max_kv_tokens.unwrap();
    let total_at = |kv: u64| {
        let config = PlanConfig {
            kv_tokens: kv,
            ..PlanConfig::new(H100_SMS)
        };
        planner(&e, "prefill", config)
            .plan(4096)
            .unwrap()
            .totals
            .total
    };
    assert!(total_at(kv) <= budget);
    assert!(total_at(kv + 1) > budget);
    assert_eq!(fit.bytes_per_token, Some(131_072));
}

#[test]
fn the_layout_of_the_arena_agrees_with_the_plan() {
    let e = example();
    for mode in ["decode", "prefill"] {
        let p = planner(&e, mode, PlanConfig::new(H100_SMS));
        for n in [1, 2, 7, 63, 64, 65, 1000, 4096, 8192] {
            let layout = p.arena_layout(n).unwrap();
            let fusion = p.fusion(n).unwrap();
            checker::check(p.circuit(), &fusion, &layout)
                .unwrap_or_else(|e| panic!("{mode} n = {n}: {e}"));
            let plan = p.plan(n).unwrap();
            assert_eq!(layout.summary, plan.arena, "{mode} n = {n}");
            let top = layout
                .offsets
                .iter()
                .zip(&layout.sizes)
                .map(|(o, s)| o + s)
                .max()
                .unwrap();
            assert_eq!(top, plan.arena.bytes, "{mode} n = {n}");
        }
    }
}

#[test]
fn the_checker_finds_a_shortened_lifetime_and_a_shared_address() {
    let e = example();
    let p = planner(&e, "prefill", PlanConfig::new(H100_SMS));
    let fusion = p.fusion(4096).unwrap();
    let layout = p.arena_layout(4096).unwrap();
    let edge = layout
        .slots
        .iter()
        .position(|s| matches!(s.kind, memory_plan::BufferKind::Edge { .. }) && s.end - s.start > 1)
        .unwrap();
    let mut short = layout.clone();
    short.slots[edge].end -= 1;
    let err = checker::check(p.circuit(), &fusion, &short).unwrap_err();
    assert!(
        err.contains("lives over") && err.contains("but its buffer over"),
        "{err}"
    );
    let mut shared = layout.clone();
    let (a, b) = (0..shared.slots.len())
        .flat_map(|i| (i + 1..shared.slots.len()).map(move |j| (i, j)))
        .find(|&(i, j)| {
            let (x, y) = (&layout.slots[i], &layout.slots[j]);
            x.start < y.end && y.start < x.end && layout.sizes[i] > 0 && layout.sizes[j] > 0
        })
        .unwrap();
    shared.offsets[b] = shared.offsets[a];
    assert_eq!(
        checker::check(p.circuit(), &fusion, &shared).unwrap_err(),
        format!("buffers {a} and {b} are live together and share bytes")
    );
}
