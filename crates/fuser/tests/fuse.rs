//! The grouping pass on small hand-made circuits: chains, keep, refusals, cycles through other
//! groups, uncovered nodes, placeholders, order and digests.

use circuit_ir::Circuit;
use fuser::{EdgeState, FuseError, FuseOptions, Rules, fuse};

/// a (copy) -> b (linear) -> c (residual_add, reads a's and b's outputs) -> output.
const DIAMOND: &str = r#"schema = 1
name = "diamond"
[[input]]
id = "x"
rows = "n"
width = 8
format = "bf16"
[[block]]
name = "main"
  [[block.node]]
  id = "a"
  op = "copy"
  in = ["x"]
  out = [{ edge = "ea", rows = "n", width = 8, format = "bf16" }]
  [[block.node]]
  id = "b"
  op = "linear"
  in = ["ea"]
  out = [{ edge = "eb", rows = "n", width = 8, format = "bf16" }]
  [[block.node]]
  id = "c"
  op = "residual_add"
  in = ["ea", "eb"]
  out = [{ edge = "ec", rows = "n", width = 8, format = "bf16" }]
[[output]]
edge = "main.ec"
"#;

fn rules(extra: &str) -> Rules {
    let text = format!(
        r#"schema = 1
[settings]
mode = "prefill"
{extra}
[[rule]]
id = "copy"
pattern = [{{ op = "copy" }}]
emitter = "torch"
[[rule]]
id = "linear"
pattern = [{{ op = "linear" }}]
kernels = ["gemm"]
emitter = "cuda"
[[rule]]
id = "add"
pattern = [{{ op = "residual_add" }}]
kernels = ["add"]
emitter = "cuda"
"#
    );
    Rules::from_toml(&text, "rules.toml", None).unwrap()
}

fn groups(circuit: &Circuit, rules: &Rules, n: u64) -> Vec<String> {
    let plan = fuse(circuit, rules, &rules.defaults(), n, FuseOptions::default()).unwrap();
    plan.groups()
        .iter()
        .map(|g| {
            let ids: Vec<&str> = g
                .nodes
                .iter()
                .map(|&n| circuit.nodes()[n].local.as_str())
                .collect();
            format!("{}:{}", g.rule.as_deref().unwrap_or("-"), ids.join("+"))
        })
        .collect()
}

#[test]
fn single_op_rules_cover_each_node() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    assert_eq!(groups(&c, &rules(""), 1), ["copy:a", "linear:b", "add:c"]);
}

#[test]
fn a_chain_through_readers_is_claimed() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    let r = rules(
        r#"[[rule]]
id = "gemm_add"
pattern = [{ op = "linear" }, { op = "residual_add" }]
kernels = ["gemm_add"]
emitter = "cuda"
priority = 5"#,
    );
    assert_eq!(groups(&c, &r, 1), ["copy:a", "gemm_add:b+c"]);
    let plan = fuse(&c, &r, &r.defaults(), 1, FuseOptions::default()).unwrap();
    let state = |id: &str| plan.edge_state(c.find_edge(id).unwrap());
    assert_eq!(state("main.eb"), EdgeState::Fused);
    assert_eq!(state("main.ea"), EdgeState::Materialized);
    assert_eq!(state("main.ec"), EdgeState::Materialized);
    assert_eq!(state("x"), EdgeState::Materialized);
}

#[test]
fn an_interior_output_read_outside_refuses_the_chain_unless_kept() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    // {a, b}: a's output is also read by c, outside the chain.
    let chain = |keep: bool| {
        rules(&format!(
            r#"[[rule]]
id = "copy_gemm"
pattern = [{{ op = "copy", keep = {keep} }}, {{ op = "linear" }}]
kernels = ["copy_gemm"]
emitter = "cuda"
priority = 5"#
        ))
    };
    assert_eq!(
        groups(&c, &chain(false), 1),
        ["copy:a", "linear:b", "add:c"]
    );
    assert_eq!(groups(&c, &chain(true), 1), ["copy_gemm:a+b", "add:c"]);
}

#[test]
fn a_chain_around_an_outside_node_is_refused_as_a_cycle() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    // {a, c} with b outside: a -> b -> c would make the group graph cyclic.
    let r = rules(
        r#"[[rule]]
id = "copy_add"
pattern = [{ op = "copy", keep = true }, { op = "residual_add" }]
kernels = ["copy_add"]
emitter = "cuda"
priority = 5"#,
    );
    assert_eq!(groups(&c, &r, 1), ["copy:a", "linear:b", "add:c"]);
}

/// a, b copies; c linear reads a and b; d residual_add reads a and b.
const CROSS: &str = r#"schema = 1
name = "cross"
[[input]]
id = "x"
rows = "n"
width = 8
format = "bf16"
[[block]]
name = "main"
  [[block.node]]
  id = "a"
  op = "copy"
  in = ["x"]
  out = [{ edge = "ea", rows = "n", width = 8, format = "bf16" }]
  [[block.node]]
  id = "b"
  op = "copy"
  in = ["x"]
  out = [{ edge = "eb", rows = "n", width = 8, format = "bf16" }]
  [[block.node]]
  id = "c"
  op = "linear"
  in = ["eb", "ea"]
  out = [{ edge = "ec", rows = "n", width = 8, format = "bf16" }]
  [[block.node]]
  id = "d"
  op = "residual_add"
  in = ["ea", "eb"]
  out = [{ edge = "ed", rows = "n", width = 8, format = "bf16" }]
[[output]]
edge = "main.ec"
[[output]]
edge = "main.ed"
"#;

#[test]
fn a_cycle_through_an_earlier_group_is_refused() {
    let c = Circuit::from_toml(CROSS, "c.toml").unwrap();
    // First {a, d}; then {b, c} would need b before {a, d} (b -> d) and {a, d} before c
    // (a -> c): a cycle between the two groups, though each is fine alone.
    let r = rules(
        r#"[[rule]]
id = "ad"
pattern = [{ op = "copy", node = "a", keep = true }, { op = "residual_add" }]
kernels = ["ad"]
emitter = "cuda"
priority = 9
[[rule]]
id = "bc"
pattern = [{ op = "copy", node = "b", keep = true }, { op = "linear" }]
kernels = ["bc"]
emitter = "cuda"
priority = 8"#,
    );
    assert_eq!(groups(&c, &r, 1), ["copy:b", "ad:a+d", "linear:c"]);
    // Alone, {b, c} is fine.
    let only_bc = rules(
        r#"[[rule]]
id = "bc"
pattern = [{ op = "copy", node = "b", keep = true }, { op = "linear" }]
kernels = ["bc"]
emitter = "cuda"
priority = 8"#,
    );
    assert_eq!(groups(&c, &only_bc, 1), ["copy:a", "bc:b+c", "add:d"]);
}

#[test]
fn a_circuit_output_cannot_be_an_interior_edge() {
    let text = DIAMOND.replace(
        "edge = \"main.ec\"",
        "edge = \"main.ec\"\n[[output]]\nedge = \"main.eb\"",
    );
    let c = Circuit::from_toml(&text, "d.toml").unwrap();
    let r = rules(
        r#"[[rule]]
id = "gemm_add"
pattern = [{ op = "linear" }, { op = "residual_add" }]
kernels = ["gemm_add"]
emitter = "cuda"
priority = 5"#,
    );
    assert_eq!(groups(&c, &r, 1), ["copy:a", "linear:b", "add:c"]);
}

#[test]
fn row_ranges_and_settings_select_rules() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    let r = rules(
        r#"[[rule]]
id = "gemm_add"
pattern = [{ op = "linear" }, { op = "residual_add" }]
kernels = ["gemm_add"]
emitter = "cuda"
rows = [1, 16]
when = { mode = "decode" }
priority = 5"#,
    );
    let decode = r.settings([("mode", "decode")], "--set").unwrap();
    let g = |n| {
        fuse(&c, &r, &decode, n, FuseOptions::default())
            .unwrap()
            .groups()
            .len()
    };
    assert_eq!((g(16), g(17)), (2, 3));
    assert_eq!(
        fuse(&c, &r, &r.defaults(), 16, FuseOptions::default())
            .unwrap()
            .groups()
            .len(),
        3
    );
}

#[test]
fn an_uncovered_node_is_an_error_or_a_placeholder() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    let r = Rules::from_toml(
        "schema = 1\n[settings]\nmode = \"decode\"\n[[rule]]\nid = \"copy\"\npattern = [{ op = \"copy\" }]\nemitter = \"torch\"\n",
        "rules.toml",
        None,
    )
    .unwrap();
    let err = fuse(&c, &r, &r.defaults(), 7, FuseOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rules.toml: node `main.b` (linear) is covered by no rule at n = 7 with mode=decode; add a rule for `linear` (or fuse with placeholders)"
    );
    assert!(matches!(err, FuseError::Uncovered { .. }));
    let plan = fuse(&c, &r, &r.defaults(), 7, FuseOptions { placeholders: true }).unwrap();
    assert_eq!(plan.placeholders(), 2);
    assert_eq!(plan.groups()[1].emitter, "placeholder");
    assert!(plan.groups()[1].is_placeholder());
}

#[test]
fn the_digest_ignores_rule_ids_and_follows_kernels() {
    let c = Circuit::from_toml(DIAMOND, "d.toml").unwrap();
    let plan = |extra: &str| {
        let r = rules(extra);
        fuse(&c, &r, &r.defaults(), 1, FuseOptions::default()).unwrap()
    };
    let base = plan("");
    let renamed = {
        let text = r#"schema = 1
[settings]
mode = "prefill"
[[rule]]
id = "host"
pattern = [{ op = "copy" }]
emitter = "torch"
[[rule]]
id = "mm"
pattern = [{ op = "linear" }]
kernels = ["gemm"]
emitter = "cuda"
[[rule]]
id = "plus"
pattern = [{ op = "residual_add" }]
kernels = ["add"]
emitter = "cuda"
"#;
        let r = Rules::from_toml(text, "r.toml", None).unwrap();
        fuse(&c, &r, &r.defaults(), 1, FuseOptions::default()).unwrap()
    };
    assert_eq!(base.digest(), renamed.digest());
    assert_eq!(base.digest().len(), 64);
    let fused = plan(
        r#"[[rule]]
id = "gemm_add"
pattern = [{ op = "linear" }, { op = "residual_add" }]
kernels = ["gemm_add"]
emitter = "cuda"
priority = 5"#,
    );
    assert_ne!(base.digest(), fused.digest());
}
