//! A four-node circuit whose every byte is computed by hand: workspace terms at several `n` and
//! SM counts, the arena and its bounds, totals and the per-node table.

use circuit_ir::Circuit;
use fuser::{FuseOptions, Rules, fuse};
use kernel_families::Families;
use memory_plan::{FitLimit, PlanConfig, Planner, RowsFit, WorkspaceTerm, widest, workspace_terms};

const CIRCUIT: &str = r#"schema = 1
name = "small"
[dims]
hidden = 64
wide = 128
[[input]]
id = "x"
rows = "n"
width = "hidden"
format = "bf16"
[[block]]
name = "b"
  [[block.node]]
  id = "norm"
  op = "rms_norm"
  in = ["x"]
  out = [{ edge = "xn", rows = "n", width = "hidden", format = "bf16" }]
    [[block.node.weight]]
    name = "w"
    shape = ["hidden"]
    format = "bf16"
  [[block.node]]
  id = "proj"
  op = "linear"
  in = ["xn"]
  out = [{ edge = "y", rows = "n", width = "wide", format = "bf16" }]
    [[block.node.weight]]
    name = "w"
    shape = ["wide", "hidden"]
    format = "bf16"
  [[block.node]]
  id = "cache"
  op = "kv_write"
  in = ["y"]
  [[block.node]]
  id = "attn"
  op = "attention"
  in = ["y"]
  out = [{ edge = "out", rows = "n", width = "hidden", format = "bf16" }]
  [[block.state]]
  id = "kv"
  per_token = "hidden"
  format = "bf16"
  writer = "cache"
  readers = ["attn"]
[[output]]
edge = "b.out"
"#;

const FAMILIES: &str = r#"schema = 1
[[family]]
id = "gemm"
kernels = ["gemm"]
ops = ["linear"]
  [[family.workspace]]
  name = "fixed"
  bytes = ["1000"]
  arena = false
  why = "a fixed handle workspace"
  [[family.workspace]]
  name = "scratch"
  bytes = ["n * k * 4", "512"]
  arena = true
  why = "fp32 staging of the input, at least 512 bytes"
[[family]]
id = "attn"
kernels = ["fa"]
ops = ["attention"]
  [[family.workspace]]
  name = "split"
  bytes = ["ceil_div(2 * sm_count, n) * 16"]
  arena = false
  why = "per-split partials"
[[family]]
id = "plain"
kernels = ["norm", "cache"]
ops = ["rms_norm", "kv_write"]
"#;

const RULES: &str = r#"schema = 1
[settings]
mode = "prefill"
[[rule]]
id = "norm"
pattern = [{ op = "rms_norm" }]
kernels = ["norm"]
emitter = "cuda"
[[rule]]
id = "gemm"
pattern = [{ op = "linear" }]
kernels = ["gemm"]
emitter = "cuda"
[[rule]]
id = "cache"
pattern = [{ op = "kv_write" }]
kernels = ["cache"]
emitter = "cuda"
[[rule]]
id = "attn"
pattern = [{ op = "attention" }]
kernels = ["fa"]
emitter = "cuda"
"#;

struct Fixture {
    circuit: Circuit,
    families: Families,
    rules: Rules,
}

fn fixture() -> Fixture {
    let families = Families::from_toml(FAMILIES, "families.toml").unwrap();
    Fixture {
        circuit: Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap(),
        rules: Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap(),
        families,
    }
}

/// (family, name, bytes, arena, node ids, owner id) of each term at `n` on `sm` SMs.
fn terms(f: &Fixture, n: u64, sm: u64) -> Vec<(String, String, u64, bool, Vec<String>, String)> {
    let plan = fuse(
        &f.circuit,
        &f.rules,
        &f.rules.defaults(),
        n,
        FuseOptions::default(),
    )
    .unwrap();
    let bound = f.families.bind(&f.circuit, sm).unwrap();
    let id = |n: circuit_ir::NodeIdx| f.circuit.nodes()[n].id.clone();
    workspace_terms(&f.circuit, &plan, &f.families, &bound, n)
        .unwrap()
        .into_iter()
        .map(|t| {
            (
                t.family.to_string(),
                t.name.to_string(),
                t.bytes,
                t.arena,
                t.nodes.iter().map(|&n| id(n)).collect(),
                id(t.owner),
            )
        })
        .collect()
}

fn term(
    family: &str,
    name: &str,
    bytes: u64,
    arena: bool,
    node: &str,
) -> (String, String, u64, bool, Vec<String>, String) {
    (
        family.into(),
        name.into(),
        bytes,
        arena,
        vec![node.into()],
        node.into(),
    )
}

#[test]
fn workspace_terms_by_hand() {
    let f = fixture();
    // n = 1, 132 SMs: split = ceil(264 / 1) * 16; scratch = max(1 * 64 * 4, 512).
    assert_eq!(
        terms(&f, 1, 132),
        [
            term("attn", "split", 4224, false, "b.attn"),
            term("gemm", "fixed", 1000, false, "b.proj"),
            term("gemm", "scratch", 512, true, "b.proj"),
        ]
    );
    // n = 4: split = 66 * 16; scratch = max(4 * 64 * 4, 512).
    assert_eq!(
        terms(&f, 4, 132),
        [
            term("attn", "split", 1056, false, "b.attn"),
            term("gemm", "fixed", 1000, false, "b.proj"),
            term("gemm", "scratch", 1024, true, "b.proj"),
        ]
    );
    // 8 SMs at n = 4: split = ceil(16 / 4) * 16.
    assert_eq!(
        terms(&f, 4, 8)[0],
        term("attn", "split", 64, false, "b.attn")
    );
}

#[test]
fn a_term_is_the_largest_value_over_its_nodes() {
    // Two projections of different input widths run the same family: one term, both nodes in
    // plan order, the bytes of the wider k, owned by the node that sets them.
    let circuit = CIRCUIT.replace(
        "  [[block.node]]\n  id = \"cache\"",
        "  [[block.node]]\n  id = \"proj2\"\n  op = \"linear\"\n  in = [\"y\"]\n  out = [{ edge = \"y2\", rows = \"n\", width = \"hidden\", format = \"bf16\" }]\n  [[block.node]]\n  id = \"cache\"",
    ).replace("in = [\"y\"]\n  out = [{ edge = \"out\"", "in = [\"y\", \"y2\"]\n  out = [{ edge = \"out\"");
    let mut f = fixture();
    f.circuit = Circuit::from_toml(&circuit, "circuit.toml").unwrap();
    let scratch = &terms(&f, 4, 132)[2];
    assert_eq!(scratch.1, "scratch");
    assert_eq!(scratch.2, 4 * 128 * 4);
    assert_eq!(scratch.4, ["b.proj", "b.proj2"]);
    assert_eq!(scratch.5, "b.proj2");
    let fixed = &terms(&f, 4, 132)[1];
    assert_eq!((fixed.2, fixed.5.as_str()), (1000, "b.proj"));
}

#[test]
fn widest_keeps_the_largest_and_the_earlier_of_equals() {
    let t = |bytes: u64, owner: u32| WorkspaceTerm {
        family: "f".into(),
        name: "w".into(),
        bytes,
        arena: false,
        nodes: vec![circuit_ir::NodeIdx::from_u32(owner)].into(),
        owner: circuit_ir::NodeIdx::from_u32(owner),
    };
    let merged = widest([
        vec![t(10, 1)],
        vec![t(30, 2)],
        vec![t(30, 3)],
        vec![t(20, 4)],
    ]);
    assert_eq!(merged, [t(30, 2)]);
}

#[test]
fn totals_arena_and_owners_by_hand() {
    let f = fixture();
    let config = PlanConfig {
        kv_tokens: 10,
        ..PlanConfig::new(132)
    };
    let planner = Planner::new(
        &f.circuit,
        &f.families,
        &f.rules,
        f.rules.defaults(),
        config,
    )
    .unwrap();
    let plan = planner.plan(1).unwrap();
    // Steps: 0 norm, 1 proj, 2 cache, 3 attn. Buffers (256-aligned) at n = 1: x [0,1) 256,
    // xn [0,2) 256, y [1,4) 256, out [3,4) 256, the gemm scratch at step 1, 512.
    // Live: step 0: 512; step 1: 256 + 256 + 512 = 1024; step 2: 256; step 3: 512.
    assert_eq!(plan.arena.lower_bound, 1024);
    assert_eq!(plan.arena.bytes, 1024);
    assert_eq!(plan.arena.unshared, 1536);
    assert_eq!(plan.arena.buffers, 5);
    assert!(plan.arena.optimal);
    assert_eq!(plan.totals.weights, 64 * 2 + 128 * 64 * 2);
    assert_eq!(plan.totals.workspaces, 4224 + 1000);
    assert_eq!(plan.totals.states, 10 * 64 * 2);
    assert_eq!(plan.totals.total, 16_512 + 1024 + 5224 + 1280);

    let table = planner.per_node(1).unwrap();
    // Rows carry the node's id and op; the id is the circuit's for the row's index.
    let row = |id: &str| {
        let found = table.nodes.iter().find(|r| r.id == id).unwrap();
        assert_eq!(found.node, f.circuit.find_node(id).unwrap());
        found
    };
    assert_eq!(row("b.norm").op, circuit_ir::Op::RmsNorm);
    // Step 1 is the peak: xn (norm), y (proj), scratch (proj).
    assert_eq!(
        (row("b.norm").weights, row("b.norm").activations),
        (128, 256)
    );
    assert_eq!(
        (row("b.proj").activations, row("b.proj").workspaces),
        (768, 1000)
    );
    assert_eq!(row("b.attn").workspaces, 4224);
    assert_eq!(row("b.cache").states, 1280);
    assert_eq!(table.fragmentation, 0);
    let sum: u64 = table.nodes.iter().map(|r| r.total()).sum::<u64>() + table.fragmentation;
    assert_eq!(sum, plan.totals.total);
    assert_eq!(table.total, plan.totals.total);
}

/// The answers print themselves from the figures checked by hand above.
#[test]
fn plans_tables_and_fits_display_their_exact_bytes() {
    let f = fixture();
    let config = PlanConfig {
        kv_tokens: 10,
        ..PlanConfig::new(132)
    };
    let planner = Planner::new(
        &f.circuit,
        &f.families,
        &f.rules,
        f.rules.defaults(),
        config,
    )
    .unwrap();
    // The totals, arena and owners of `totals_arena_and_owners_by_hand`.
    assert_eq!(
        planner.plan(1).unwrap().to_string(),
        "n = 1: 24040 bytes = weights 16512 + activations 1024 + workspaces 5224 + states 1280
  4 launch groups; arena 1024 bytes, lower bound 1024 (optimal), 5 buffers
  workspace attn/split: 4224 bytes, held for the step, 1 node
  workspace gemm/fixed: 1000 bytes, held for the step, 1 node
  workspace gemm/scratch: 512 bytes, in the arena, 1 node"
    );
    assert_eq!(
        planner.per_node(1).unwrap().to_string(),
        "per node at n = 1 (bytes)
  node                  op         weights  activations  workspaces  states  total
  b.norm                rms_norm       128          256           0       0    384
  b.proj                linear       16384          768        1000       0  18152
  b.cache               kv_write         0            0           0    1280   1280
  b.attn                attention        0            0        4224       0   4224
  (arena fragmentation)                               0                          0
  total                                                                      24040"
    );
    // The split-KV workspace may shrink as n grows, so the answer says not every smaller n
    // need fit.
    let not_monotone = "\n  totals are not monotone in n, so not every smaller n need fit: workspace `split` of family `attn` is not nondecreasing in n on rows 1..=18446744073709551615";
    assert_eq!(
        planner.max_rows(1..=1, 24040).unwrap().to_string(),
        format!("largest n in 1..=1 that fits 24040 bytes: 1 (total 24040 bytes){not_monotone}")
    );
    assert_eq!(
        planner.max_rows(1..=1, 24039).unwrap().to_string(),
        format!("no n in 1..=1 fits 24039 bytes{not_monotone}")
    );
    // The states are 10 tokens of 128 bytes: the budget of the plan at 10 tokens fits 10.
    assert_eq!(
        planner.max_kv_tokens(1, 24040).unwrap().to_string(),
        "at n = 1: 10 KV tokens over 1 sequence fit 24040 bytes (128 bytes each)"
    );
    // A query that ran out of work: where the answer may still be, and what was found to fit.
    let gave_up = RowsFit {
        budget: 1000,
        rows_searched: 1..=4096,
        max_rows: Some(100),
        total_at_max_rows: Some(900),
        totals_monotone: true,
        why_not_monotone: None,
        answer_may_be_in: Some(101..=200),
        plans_evaluated: 1024,
        search_steps_spent: 5,
        limit_reached: Some(FitLimit::Plans(1024)),
    };
    assert_eq!(
        gave_up.to_string(),
        "gave up at its limit of 1024 plans (1024 plans, 5 search steps): the largest n in 1..=4096 that fits 1000 bytes is in 100..=200 (100 fits)"
    );
    let none_found = RowsFit {
        max_rows: None,
        total_at_max_rows: None,
        answer_may_be_in: Some(1..=200),
        ..gave_up
    };
    assert_eq!(
        none_found.to_string(),
        "gave up at its limit of 1024 plans (1024 plans, 5 search steps): the largest n in 1..=4096 that fits 1000 bytes is in 1..=200 or none"
    );
}

#[test]
fn max_kv_tokens_is_exact() {
    let f = fixture();
    let planner = Planner::new(
        &f.circuit,
        &f.families,
        &f.rules,
        f.rules.defaults(),
        PlanConfig::new(132),
    )
    .unwrap();
    let fixed = planner.plan(1).unwrap().totals.total;
    // 128 bytes per token.
    let fit = planner.max_kv_tokens(1, fixed + 1000).unwrap();
    assert_eq!(fit.max_kv_tokens, Some(7));
    assert_eq!(fit.bytes_per_token, Some(128));
    assert_eq!(
        planner.max_kv_tokens(1, fixed - 1).unwrap().max_kv_tokens,
        None
    );
}

#[test]
fn a_fit_up_to_u64_max_is_an_error_not_a_panic() {
    let f = fixture();
    let planner = Planner::new(
        &f.circuit,
        &f.families,
        &f.rules,
        f.rules.defaults(),
        PlanConfig::new(132),
    )
    .unwrap();
    // The search's bracket once began at `hi + 1`, which overflowed at u64::MAX.
    assert_eq!(
        planner
            .max_rows(1..=u64::MAX, u64::MAX)
            .unwrap_err()
            .to_string(),
        "families.toml: family `gemm`, workspace `scratch`, node `b.proj` at \
         n = 18446744073709551615: bytes[0]: expression `n * k * 4`: overflow in `n * k`"
    );
}
