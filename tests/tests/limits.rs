//! Limits (issue 7): sizes near `u64::MAX` are overflow errors that name the culprit, never a
//! wrap or a panic; a circuit of thousands of layers loads, fuses and plans in linear time.

use std::time::Instant;

use circuit_ir::Circuit;
use fuser::{FuseOptions, Rules, fuse};
use kernel_families::Families;
use memory_plan::{PlanConfig, Planner};

const MAX: u64 = u64::MAX;

/// One block, one node with one weight and one state; every size is a parameter.
fn circuit(
    dims: &str,
    rows: &str,
    width: &str,
    shape: &str,
    count: &str,
    repeat: &str,
    per_token: &str,
) -> String {
    format!(
        r#"schema = 1
name = "limits"
[dims]
h = 64
{dims}
[[input]]
id = "x"
rows = "n"
width = "h"
format = "bf16"
[[block]]
name = "b"
repeat = "{repeat}"
stream_in = "x"
stream_out = "y"
  [[block.node]]
  id = "p"
  op = "linear"
  in = ["x"]
  out = [{{ edge = "y", rows = "{rows}", width = "{width}", format = "i32" }}]
    [[block.node.weight]]
    name = "w"
    shape = [{shape}]
    count = "{count}"
    format = "bf16"
  [[block.node]]
  id = "c"
  op = "kv_write"
  in = ["y"]
  [[block.state]]
  id = "kv"
  per_token = "{per_token}"
  format = "f32"
  writer = "c"
[[output]]
edge = "b.0.y"
"#
    )
}

fn base() -> [&'static str; 7] {
    ["", "n", "h", r#""h", "h""#, "1", "1", "h"]
}

fn load(parts: [&str; 7]) -> Result<Circuit, String> {
    let [dims, rows, width, shape, count, repeat, per_token] = parts;
    Circuit::from_toml(
        &circuit(dims, rows, width, shape, count, repeat, per_token),
        "limits.toml",
    )
    .map_err(|e| e.to_string())
}

const FAMILIES: &str = r#"schema = 1
[[family]]
id = "gemm"
kernels = ["gemm"]
ops = ["linear"]
  [[family.workspace]]
  name = "scratch"
  bytes = ["n * k * WS"]
  arena = true
  why = "test"
[[family]]
id = "cache"
kernels = ["cache"]
ops = ["kv_write"]
"#;

const RULES: &str = r#"schema = 1
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
"#;

/// Plans `circuit` at `n` with workspace factor `ws`, KV tokens and alignment.
fn plan(circuit: &Circuit, ws: u64, n: u64, kv_tokens: u64, align: u64) -> Result<u64, String> {
    let families = Families::from_toml(&FAMILIES.replace("WS", &ws.to_string()), "f.toml").unwrap();
    let rules = Rules::from_toml(RULES, "r.toml", Some(&families)).unwrap();
    let config = PlanConfig {
        kv_tokens,
        align,
        ..PlanConfig::new(132)
    };
    let planner = Planner::new(circuit, &families, &rules, rules.defaults(), config)
        .map_err(|e| e.to_string())?;
    planner
        .plan(n)
        .map(|p| p.totals.total)
        .map_err(|e| e.to_string())
}

#[test]
fn the_base_circuit_plans_exactly() {
    let c = load(base()).unwrap();
    assert_eq!(c.weight_bytes(), 64 * 64 * 2);
    // weights 8192 + arena (x: 64 x 2 = 128 -> 256, y: 64 x 4 = 256, scratch 64 x 4 = 256; x
    // and y and scratch live together at the linear's step: 768) + KV 10 x 64 x 4.
    assert_eq!(plan(&c, 4, 1, 10, 256).unwrap(), 8192 + 768 + 2560);
}

#[test]
fn dims_near_the_limit_overflow_at_load() {
    let mut p = base();
    p[0] = "big = 18446744073709551615\nbigger = \"big + 1\"";
    assert_eq!(
        load(p).unwrap_err(),
        "limits.toml: dim `bigger`: expression `big + 1`: overflow in `big + 1`"
    );
}

#[test]
fn weights_near_the_limit_overflow_at_load() {
    let mut p = base();
    p[3] = r#""18446744073709551615", "2""#;
    assert_eq!(
        load(p).unwrap_err(),
        "limits.toml: block `b` instance 0, node `p`, weight `w`: shape [18446744073709551615, 2] x 1 in bf16 overflows 64-bit bytes"
    );
    let mut p = base();
    p[4] = "9223372036854775807";
    assert_eq!(
        load(p).unwrap_err(),
        "limits.toml: block `b` instance 0, node `p`, weight `w`: shape [64, 64] x 9223372036854775807 in bf16 overflows 64-bit bytes"
    );
    // Each instance's tensor fits; their sum does not.
    let mut p = base();
    p[3] = r#""4611686018427387904""#;
    p[5] = "2";
    assert_eq!(
        load(p).unwrap_err(),
        "limits.toml: the sum of the weights overflows 64-bit bytes"
    );
}

#[test]
fn repeats_near_the_limit_are_refused_before_expansion() {
    let mut p = base();
    p[5] = "18446744073709551615";
    let started = Instant::now();
    assert_eq!(
        load(p).unwrap_err(),
        "limits.toml: block `b`: 18446744073709551615 instances of 2 nodes exceeds the limit of 1048576 nodes per circuit"
    );
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn widths_and_rows_near_the_limit_overflow_at_planning() {
    let mut p = base();
    p[2] = "4611686018427387904";
    let c = load(p).unwrap();
    assert_eq!(
        plan(&c, 0, 1, 0, 1).unwrap_err(),
        "limits.toml: edge `b.0.y` at n = 1: 1 x 4611686018427387904 elements in i32 overflow 64-bit bytes"
    );
    let mut p = base();
    p[1] = "n * 4611686018427387904";
    let c = load(p).unwrap();
    assert_eq!(
        plan(&c, 0, 1, 0, 1).unwrap_err(),
        "limits.toml: edge `b.0.y` at n = 1: 4611686018427387904 x 64 elements in i32 overflow 64-bit bytes"
    );
    let c = load(base()).unwrap();
    // Every step is checked, even one whose product is then multiplied by 0.
    assert_eq!(
        plan(&c, 0, MAX, 0, 1).unwrap_err(),
        "f.toml: family `gemm`, workspace `scratch`, node `b.0.p` at n = 18446744073709551615: \
         bytes[0]: expression `n * k * 0`: overflow in `n * k`"
    );
}

#[test]
fn workspaces_states_and_alignment_near_the_limit_overflow_at_planning() {
    let c = load(base()).unwrap();
    assert_eq!(
        plan(&c, MAX, 1, 0, 1).unwrap_err(),
        "f.toml: family `gemm`, workspace `scratch`, node `b.0.p` at n = 1: bytes[0]: expression \
         `n * k * 18446744073709551615`: overflow in `n * k * 18446744073709551615`"
    );
    assert_eq!(
        plan(&c, 0, 1, MAX, 1).unwrap_err(),
        "limits.toml: states at 18446744073709551615 KV tokens and 1 sequences: state `b.0.kv`: \
         18446744073709551615 x 64 elements in f32 overflow 64-bit bytes"
    );
    assert_eq!(
        plan(&c, 0, 1, 0, MAX).unwrap_err(),
        "limits.toml: the sum of the arena's buffers at n = 1 overflows 64-bit bytes"
    );
    let mut p = base();
    p[6] = "4611686018427387904";
    let c = load(p).unwrap();
    assert_eq!(
        plan(&c, 0, 1, 1, 1).unwrap_err(),
        "limits.toml: states at 1 KV tokens and 1 sequences: state `b.0.kv`: 1 x 4611686018427387904 \
         elements in f32 overflow 64-bit bytes"
    );
    // Two states that fit alone but not together.
    let mut p = base();
    p[5] = "2";
    p[6] = "2305843009213693952";
    let c = load(p).unwrap();
    assert_eq!(
        plan(&c, 0, 1, 1, 1).unwrap_err(),
        "limits.toml: states at 1 KV tokens and 1 sequences: the sum of the states overflows 64-bit bytes"
    );
}

#[test]
fn fit_queries_reach_the_top_of_u64() {
    let c = load(base()).unwrap();
    let families = Families::from_toml(&FAMILIES.replace("WS", "4"), "f.toml").unwrap();
    let rules = Rules::from_toml(RULES, "r.toml", Some(&families)).unwrap();
    let planner = Planner::new(
        &c,
        &families,
        &rules,
        rules.defaults(),
        PlanConfig::new(132),
    )
    .unwrap();
    // Total at even n: weights 8192 + x (128 n) + y (256 n) + scratch (256 n), all live at once.
    let budget = 8192 + 640 * (1 << 40);
    let fit = planner.max_rows(1..=1 << 50, budget).unwrap();
    assert_eq!(
        (fit.max_rows, fit.total_at_max_rows),
        (Some(1 << 40), Some(budget))
    );
    assert!(fit.totals_monotone);
    // At n = u64::MAX the workspace overflows: the query fails naming it (it does not wrap
    // into a small total that would "fit").
    assert_eq!(
        planner.max_rows(1..=MAX, MAX).unwrap_err().to_string(),
        "f.toml: family `gemm`, workspace `scratch`, node `b.0.p` at n = 18446744073709551615: \
         bytes[0]: expression `n * k * 4`: overflow in `n * k`"
    );
    // 256 bytes per token (64 x f32); fixed: weights 8192 + arena 768 at n = 1.
    let kv = planner.max_kv_tokens(1, MAX).unwrap();
    assert_eq!(kv.bytes_per_token, Some(256));
    assert_eq!(kv.max_kv_tokens, Some((MAX - 8960) / 256));
}

/// The example's layer block repeated `layers` times.
fn llama(layers: u64) -> Circuit {
    let text = include_str!("../../examples/llama-3.1-8b/circuit.toml")
        .replace("\nlayers = 32\n", &format!("\nlayers = {layers}\n"));
    Circuit::from_toml(&text, "llama.toml").unwrap()
}

#[test]
fn two_thousand_layers_load_fuse_and_plan() {
    let started = Instant::now();
    let layers = 2000;
    let c = llama(layers);
    assert_eq!(c.nodes().len() as u64, 15 * layers + 3);
    let hidden = 4096u64;
    let layer = 2 * (hidden * hidden * 2 + 1024 * hidden * 2 + 3 * 14336 * hidden + 2 * hidden);
    let fixed = 2 * (2 * 128_256 * hidden + hidden);
    assert_eq!(c.weight_bytes(), fixed + layers * layer);
    let families = Families::from_toml(
        include_str!("../../examples/llama-3.1-8b/families.toml"),
        "f",
    )
    .unwrap();
    let rules = Rules::from_toml(
        include_str!("../../examples/llama-3.1-8b/rules.toml"),
        "r",
        Some(&families),
    )
    .unwrap();
    let settings = rules.defaults();
    let fused = fuse(&c, &rules, &settings, 1, FuseOptions::default()).unwrap();
    let config = PlanConfig {
        kv_tokens: 1000,
        ..PlanConfig::new(132)
    };
    let planner = Planner::new(&c, &families, &rules, settings, config).unwrap();
    let plans = planner.sweep(&[1, 64, 4096], &|| {}).unwrap();
    assert_eq!(plans[0].groups, fused.groups().len());
    assert_eq!(plans[0].groups as u64, 12 * layers + 3);
    // KV: 2 x 8 heads x 128 x 2 bytes per token per layer.
    assert_eq!(plans[2].totals.states, 1000 * layers * 4096);
    assert_eq!(plans[2].totals.weights, c.weight_bytes());
    // Layers run one after another: the arena's peak is the 32-layer example's.
    let peaks = |plans: &[memory_plan::MemoryPlan]| {
        plans
            .iter()
            .map(|p| (p.arena.bytes, p.arena.lower_bound, p.arena.optimal))
            .collect::<Vec<_>>()
    };
    let small = llama(32);
    let example = Planner::new(&small, &families, &rules, rules.defaults(), config).unwrap();
    let expected = example.sweep(&[1, 64, 4096], &|| {}).unwrap();
    assert_eq!(peaks(&plans), peaks(&expected));
    assert_eq!(
        peaks(&plans),
        [
            (4_590_080, 4_590_080, true),
            (21_266_432, 21_266_432, true),
            (1_084_227_584, 1_084_227_584, true)
        ]
    );
    // Buffers: 22 per layer at decode sizes (split-K and split-KV scratch), 14 from 65 rows.
    assert_eq!(
        plans
            .iter()
            .map(|p| p.arena.buffers as u64)
            .collect::<Vec<_>>(),
        [22 * layers + 4, 22 * layers + 4, 14 * layers + 3]
    );
    eprintln!("2000 layers: {:?}", started.elapsed());
}
