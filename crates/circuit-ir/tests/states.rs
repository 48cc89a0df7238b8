//! States of two kinds (issue 14 item 4): a per-token cache (KV, optionally windowed) and a
//! fixed per-sequence state (recurrent and convolution states). The KV bytes per token count
//! only the first kind; the fixed state is reported apart; `state_bytes` is their sum. And
//! `weights_only` nodes: weights held, nothing run.

use circuit_ir::{Circuit, StateKind};

/// Two layers: a windowed KV cache of 8 elements per token, and a recurrent state of 100
/// elements per sequence plus a convolution state of 6 (f32).
const HYBRID: &str = r#"schema = 1
name = "hybrid"
[dims]
w = 8
[[input]]
id = "x"
rows = "n"
width = "w"
format = "bf16"
[[block]]
name = "attn"
stream_in = "x"
stream_out = "y"
  [[block.node]]
  id = "write"
  op = "kv_write"
  in = ["x"]
  [[block.node]]
  id = "attend"
  op = "attention"
  in = ["x"]
  out = [{ edge = "y", rows = "n", width = "w", format = "bf16" }]
  [[block.state]]
  id = "kv"
  per_token = "w"
  window = "16"
  format = "bf16"
  writer = "write"
  readers = ["attend"]
[[block]]
name = "linear"
stream_in = "x"
stream_out = "y"
  [[block.node]]
  id = "conv"
  op = "causal_conv1d"
  in = ["x"]
  out = [{ edge = "c", rows = "n", width = "w", format = "bf16" }]
  [[block.node]]
  id = "delta"
  op = "gated_delta_net"
  in = ["c"]
  out = [{ edge = "y", rows = "n", width = "w", format = "bf16" }]
  [[block.state]]
  id = "conv_state"
  per_sequence = "6"
  format = "f32"
  writer = "conv"
  [[block.state]]
  id = "recurrent"
  per_token = "0"
  per_sequence = "100"
  format = "bf16"
  writer = "delta"
[[block]]
name = "vision"
  [[block.node]]
  id = "tower"
  op = "weights_only"
    [[block.node.weight]]
    name = "w"
    shape = ["w", "w"]
    format = "bf16"
[[output]]
edge = "linear.y"
"#;

fn load(text: &str) -> Result<Circuit, String> {
    Circuit::from_toml(text, "s.toml").map_err(|e| e.to_string())
}

#[test]
fn kinds_are_derived_from_the_sizes() {
    let c = load(HYBRID).unwrap();
    let kinds: Vec<(&str, StateKind)> = c
        .states()
        .values()
        .map(|s| (s.id.as_str(), s.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("attn.kv", StateKind::PerToken),
            ("linear.conv_state", StateKind::PerSequence),
            ("linear.recurrent", StateKind::PerSequence),
        ]
    );
}

#[test]
fn kv_per_token_and_the_fixed_state_are_apart() {
    let c = load(HYBRID).unwrap();
    // 8 bf16 elements per token; the per-sequence states add nothing per token.
    assert_eq!(c.kv_bytes_per_token().unwrap(), 16);
    // Per sequence: 6 f32 + 100 bf16 = 224 bytes, whatever the tokens.
    assert_eq!(c.fixed_state_bytes(1).unwrap(), 224);
    assert_eq!(c.fixed_state_bytes(3).unwrap(), 672);
    assert_eq!(c.fixed_state_bytes(0).unwrap(), 0);
    // 100 tokens over 3 sequences: the window holds min(100, 16 x 3) = 48 tokens.
    assert_eq!(c.kv_bytes(100, 3).unwrap(), 48 * 16);
    assert_eq!(c.kv_bytes(10, 3).unwrap(), 10 * 16);
    assert_eq!(c.state_bytes(100, 3).unwrap(), 48 * 16 + 672);
    assert_eq!(c.state_bytes(0, 2).unwrap(), 448);
    // A state's own bytes follow its kind.
    let rec = &c.states()[c.nodes()[c.find_node("linear.delta").unwrap()].writes[0]];
    assert_eq!(rec.bytes(1_000_000, 2).unwrap(), 400);
}

#[test]
fn a_state_of_both_sizes_holds_their_sum() {
    // The format's `per_token x tokens + per_sequence x sequences`: 2 f32 per token beside the
    // 6 per sequence, as two entries (one per kind) under the one id.
    let both = HYBRID.replace(
        "per_sequence = \"6\"",
        "per_sequence = \"6\"\n  per_token = \"2\"",
    );
    let c = load(&both).unwrap();
    let conv: Vec<_> = c
        .states()
        .values()
        .filter(|s| s.id == "linear.conv_state")
        .map(|s| (s.kind, s.per_token, s.per_sequence))
        .collect();
    assert_eq!(
        conv,
        [(StateKind::PerToken, 2, 0), (StateKind::PerSequence, 0, 6)]
    );
    // 16 bytes per token from the window, 8 from the new part.
    assert_eq!(c.kv_bytes_per_token().unwrap(), 16 + 8);
    assert_eq!(c.fixed_state_bytes(3).unwrap(), 672);
    assert_eq!(c.state_bytes(100, 3).unwrap(), 48 * 16 + 100 * 8 + 672);
}

#[test]
fn a_window_needs_a_per_token_part() {
    let windowed = HYBRID.replace(
        "per_sequence = \"6\"",
        "per_sequence = \"6\"\n  window = \"4\"",
    );
    assert_eq!(
        load(&windowed).unwrap_err(),
        "s.toml: block `linear`, state `conv_state`, window: state holds a fixed 6 elements per \
         sequence and no tokens, so a window means nothing; remove `window`"
    );
}

#[test]
fn weights_only_nodes_hold_weights_and_nothing_else() {
    let c = load(HYBRID).unwrap();
    assert_eq!(c.weight_bytes(), 8 * 8 * 2);
    let tower = &c.nodes()[c.find_node("vision.tower").unwrap()];
    assert!(tower.inputs.is_empty() && tower.outputs.is_empty());
    let reading = HYBRID.replace(
        "op = \"weights_only\"",
        "op = \"weights_only\"\n  in = [\"x\", \"attn.y\"]",
    );
    assert_eq!(
        load(&reading).unwrap_err(),
        "s.toml: block `vision`, node `tower`: node is `weights_only` (weights held, not run) but \
         reads 2 edges; a weights_only node has weights only"
    );
    // Any other op without an output still needs a state to write.
    let copy = HYBRID.replace("op = \"weights_only\"", "op = \"copy\"");
    assert_eq!(
        load(&copy).unwrap_err(),
        "s.toml: block `vision`, node `tower`: node has no output edge and writes no state"
    );
}

#[test]
fn it_round_trips() {
    let c = load(HYBRID).unwrap();
    let again = Circuit::from_toml(&c.to_toml().unwrap(), "again").unwrap();
    assert_eq!(again, c);
    assert_eq!(again.fixed_state_bytes(5), c.fixed_state_bytes(5));
}

#[test]
fn the_builder_declares_a_per_sequence_state() {
    use circuit_ir::CircuitBuilder;
    use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, StateDecl};
    let mut b = CircuitBuilder::new("recurrent");
    b.dim("w", 8).input("x", "n", "w", "bf16");
    b.block(
        BlockDecl::once("linear")
            .node(
                NodeDecl::new("delta", "gated_delta_net")
                    .reads(["x"])
                    .writes(OutDecl::new("y", "n", "w", "bf16")),
            )
            .state(StateDecl::per_sequence(
                "recurrent",
                "w * w",
                "f32",
                "delta",
            )),
    );
    b.output("linear.y");
    let c = b.build().unwrap();
    let s = c.states().values().next().unwrap();
    assert_eq!(
        (s.kind, s.per_token, s.per_sequence),
        (StateKind::PerSequence, 0, 64)
    );
    assert_eq!(c.kv_bytes_per_token().unwrap(), 0);
    assert_eq!(c.fixed_state_bytes(3).unwrap(), 3 * 64 * 4);
}
