//! Every way a circuit file can be wrong, each with the exact message a user sees.

use circuit_ir::Circuit;

const GOOD: &str = r#"schema = 1
name = "tiny"

[dims]
hidden = 64
ffn = "2 * hidden"
layers = 2

[[input]]
id = "x"
rows = "n"
width = "hidden"
format = "bf16"

[[block]]
name = "layer"
repeat = "layers"
stream_in = "x"
stream_out = "y"

  [[block.node]]
  id = "norm"
  op = "rms_norm"
  in = ["x"]
  out = [{ edge = "xn", rows = "n", width = "hidden", format = "bf16" }]

    [[block.node.weight]]
    name = "w"
    shape = ["hidden"]
    format = "bf16"
    tensor = "layers.{i}.norm"

  [[block.node]]
  id = "up"
  op = "linear"
  in = ["xn"]
  out = [{ edge = "u", rows = "n", width = "ffn", format = "bf16" }]

    [[block.node.weight]]
    name = "w"
    shape = ["ffn", "hidden"]
    format = "bf16"

  [[block.node]]
  id = "cache"
  op = "kv_write"
  in = ["u"]

  [[block.node]]
  id = "down"
  op = "linear"
  in = ["u"]
  out = [{ edge = "y", rows = "n", width = "hidden", format = "bf16" }]

    [[block.node.weight]]
    name = "w"
    shape = ["hidden", "ffn"]
    format = "bf16"

  [[block.state]]
  id = "kv"
  per_token = "ffn"
  format = "bf16"
  writer = "cache"
  readers = ["down"]

[[output]]
edge = "layer.1.y"
"#;

/// Loads GOOD with `from` replaced by `to` (which must occur), returning the error message.
fn error_after(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "the base circuit has no `{from}`");
    let text = GOOD.replacen(from, to, 1);
    match Circuit::from_toml(&text, "bad.toml") {
        Ok(_) => panic!("`{from}` -> `{to}` loaded without error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_base_circuit_is_good() {
    let c = Circuit::from_toml(GOOD, "good.toml").unwrap();
    assert_eq!(c.nodes().len(), 8);
    // Two norms of 64, two up and two down projections of 128 x 64, in bf16.
    assert_eq!(c.weight_bytes(), 2 * (64 + 2 * 128 * 64) * 2);
    assert_eq!(c.state_bytes(10, 1).unwrap(), 2 * 10 * 128 * 2);
}

#[test]
fn toml_syntax_error_gives_the_line() {
    assert_eq!(
        error_after("layers = 2", "layers = = 2"),
        "bad.toml: line 7, column 10: extra `=`, expected nothing"
    );
}

#[test]
fn unknown_schema() {
    assert_eq!(
        error_after("schema = 1", "schema = 2"),
        "bad.toml: unknown schema 2; this version reads schema = 1"
    );
}

#[test]
fn unknown_key() {
    assert_eq!(
        error_after("repeat = \"layers\"", "rpeat = \"layers\""),
        "bad.toml: line 17, column 1: unknown field `rpeat`, expected one of `name`, `repeat`, `stream_in`, `stream_out`, `node`, `state`"
    );
}

#[test]
fn unknown_dim() {
    assert_eq!(
        error_after("width = \"ffn\"", "width = \"fnn\""),
        "bad.toml: block `layer` instance 0, node `up`, output `u`, width: unknown dim `fnn` in `fnn` (readable here: hidden, ffn, layers)"
    );
    assert_eq!(
        error_after("shape = [\"hidden\"]", "shape = [\"n\"]"),
        "bad.toml: block `layer` instance 0, node `norm`, weight `w`, shape[0]: unknown dim `n` in `n` (readable here: hidden, ffn, layers)"
    );
    assert_eq!(
        error_after("rows = \"n\"", "rows = \"m\""),
        "bad.toml: input `x`, rows: unknown dim `m` in `m` (readable here: n, hidden, ffn, layers)"
    );
}

#[test]
fn dim_using_a_later_dim() {
    assert_eq!(
        error_after("hidden = 64", "hidden = \"layers * 32\""),
        "bad.toml: dim `hidden`: `layers * 32` uses dim `layers`, which is declared later; declare `layers` first"
    );
}

#[test]
fn reserved_dim_name() {
    assert_eq!(
        error_after("layers = 2", "layers = 2\nn = 4"),
        "bad.toml: dim `n`: `n` cannot be a dim: `n`, `k` and `sm_count` are bound by the planner"
    );
}

#[test]
fn unknown_op() {
    assert_eq!(
        error_after("op = \"rms_norm\"", "op = \"rms_nrom\""),
        "bad.toml: block `layer` instance 0, node `norm`, op: unknown op `rms_nrom` (known: embed, rms_norm, layer_norm, linear, rope, kv_write, attention, silu_mul, gelu_mul, residual_add, router, top_k, expert_linear, moe_combine, lm_head, sample, copy, concat, split, scale, softcap, gelu, clamped_swiglu, sigmoid_mul, gated_rms_norm, causal_conv1d, gated_delta_net, all_reduce, all_gather, weights_only)"
    );
}

#[test]
fn duplicate_id() {
    assert_eq!(
        error_after("id = \"down\"", "id = \"up\""),
        "bad.toml: block `layer` instance 0, node `up`: duplicate node id `layer.0.up`"
    );
    assert_eq!(
        error_after(
            "name = \"layer\"",
            "name = \"layer\"\n[[block]]\nname = \"layer\""
        ),
        "bad.toml: block `layer`: duplicate block id `layer`"
    );
}

#[test]
fn edge_with_two_producers() {
    assert_eq!(
        error_after("edge = \"y\"", "edge = \"u\""),
        "bad.toml: block `layer` instance 0, node `down`, output `u`: edge `layer.0.u` is already produced by node `layer.0.up`"
    );
}

#[test]
fn edge_nobody_produces() {
    assert_eq!(
        error_after("in = [\"xn\"]", "in = [\"xm\"]"),
        "bad.toml: block `layer` instance 0, node `up`, input `xm`: edge `xm` is neither produced by a node nor a circuit input (edges of other block instances are read by their full id, e.g. `layer.0.x`)"
    );
}

#[test]
fn edge_read_before_it_is_produced() {
    assert_eq!(
        error_after("in = [\"xn\"]", "in = [\"y\"]"),
        "bad.toml: block `layer` instance 0, node `up`, input `y`: edge `layer.0.y` is read before node `layer.0.down` produces it; list nodes in execution order"
    );
}

#[test]
fn unread_edge() {
    assert_eq!(
        error_after("edge = \"layer.1.y\"", "edge = \"layer.1.u\""),
        "bad.toml: edge `layer.1.y` (produced by node `layer.1.down`) is never read; read it or declare it an [[output]]"
    );
}

#[test]
fn bad_format() {
    assert_eq!(
        error_after("format = \"bf16\" }]", "format = \"bf61\" }]"),
        "bad.toml: block `layer` instance 0, node `norm`, output `xn`, format: unknown format `bf61` (known: bf16, f16, f32, i32, i64, i8, u8, fp8, fp8/token, fp8/tensor, fp8/block<R>x<C>, int4/g<N>, nvfp4/g<N>)"
    );
}

#[test]
fn width_not_a_multiple_of_the_group() {
    assert_eq!(
        error_after(
            "shape = [\"ffn\", \"hidden\"]\n    format = \"bf16\"",
            "shape = [\"ffn\", \"hidden\"]\n    format = \"int4/g128\""
        ),
        "bad.toml: block `layer` instance 0, node `up`, weight `w`, format: width 64 is not a multiple of the group of int4/g128 (128 elements)"
    );
}

#[test]
fn overflow_in_a_dim_and_in_a_weight() {
    assert_eq!(
        error_after(
            "layers = 2",
            "layers = 2\nhuge = \"18446744073709551615 * 2\""
        ),
        "bad.toml: dim `huge`: expression `18446744073709551615 * 2`: overflow in `18446744073709551615 * 2`"
    );
    assert_eq!(
        error_after(
            "shape = [\"hidden\"]",
            "shape = [\"hidden\", 18446744073709551615]"
        ),
        "bad.toml: block `layer` instance 0, node `norm`, weight `w`: shape [64, 18446744073709551615] x 1 in bf16 overflows 64-bit bytes"
    );
}

#[test]
fn stream_in_with_nothing_to_bind() {
    assert_eq!(
        error_after("id = \"x\"\nrows", "id = \"tokens\"\nrows"),
        "bad.toml: block `layer` instance 0, stream_in: stream_in `x` has nothing to bind to: no block instance runs before it and there is no circuit input `x`"
    );
    assert_eq!(
        error_after(
            "[[block]]\nname = \"layer\"",
            "[[block]]\nname = \"pre\"\n  [[block.node]]\n  id = \"n\"\n  op = \"copy\"\n  in = [\"x\"]\n  out = [{ edge = \"c\", rows = \"n\", width = 1, format = \"i32\" }]\n[[block]]\nname = \"layer\""
        ),
        "bad.toml: block `layer` instance 0, stream_in: stream_in `x` has nothing to bind to: the block instance before it, `pre`, declares no stream_out"
    );
}

#[test]
fn one_tensor_with_two_shapes() {
    assert_eq!(
        error_after(
            "shape = [\"ffn\", \"hidden\"]\n    format = \"bf16\"\n",
            "shape = [\"ffn\", \"hidden\"]\n    format = \"bf16\"\n    tensor = \"layers.{i}.norm\"\n"
        ),
        "bad.toml: block `layer` instance 0, node `up`, weight `w`: tensor `layers.0.norm` was declared as [64] bf16 x1 by node `layer.0.norm`, here as [128, 64] bf16 x1"
    );
}

#[test]
fn state_errors() {
    assert_eq!(
        error_after("writer = \"cache\"", "writer = \"cash\""),
        "bad.toml: block `layer` instance 0, state `kv`, writer: writer `cash` is not a node of this block instance"
    );
    assert_eq!(
        error_after("readers = [\"down\"]", "readers = [\"up\"]"),
        "bad.toml: block `layer` instance 0, state `kv`, readers: reader `up` runs before writer `cache`; readers must come after the writer"
    );
    assert_eq!(
        error_after("writer = \"cache\"", "writer = \"up\""),
        "bad.toml: block `layer` instance 0, node `cache`: node has no output edge and writes no state"
    );
}

#[test]
fn unknown_output() {
    assert_eq!(
        error_after("edge = \"layer.1.y\"", "edge = \"y\""),
        "bad.toml: output `y`: output edge `y` does not exist (outputs use full ids, e.g. `head.logits`)"
    );
}

#[test]
fn expression_syntax_error_names_the_column() {
    assert_eq!(
        error_after("ffn = \"2 * hidden\"", "ffn = \"2 * * hidden\""),
        "bad.toml: dim `ffn`: expression `2 * * hidden`: syntax error at column 5: unexpected `*`: expected a number, a name or `(`"
    );
}

#[test]
fn too_many_instances() {
    assert_eq!(
        error_after("layers = 2", "layers = 1_000_000_000"),
        "bad.toml: block `layer`: 1000000000 instances of 4 nodes exceeds the limit of 1048576 nodes per circuit"
    );
    // One instance more than 2^18 x 4 nodes = 2^20.
    assert!(error_after("layers = 2", "layers = 262_145").contains("262145 instances of 4 nodes"));
}

#[test]
fn too_many_instances_of_an_empty_block() {
    // A block with no node used to be expanded u64::MAX times: the loader never returned.
    let text = "schema = 1\nname = \"e\"\n[[input]]\nid = \"x\"\nrows = \"n\"\nwidth = 8\n\
                format = \"bf16\"\n[[block]]\nname = \"nothing\"\nrepeat = \"18446744073709551615\"\n\
                [[output]]\nedge = \"x\"\n";
    assert_eq!(
        Circuit::from_toml(text, "empty.toml")
            .unwrap_err()
            .to_string(),
        "empty.toml: block `nothing`: 18446744073709551615 instances exceeds the limit of 1048576 block instances per circuit"
    );
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        "\0",
        "schema = 1",
        "schema = \"1\"",
        "[[block]]\nname = 3",
        "schema = 1\nname = \"x\"\n[[block]]\nname = \"b\"\nrepeat = -1",
    ] {
        assert!(
            Circuit::from_toml(text, "g.toml").is_err(),
            "{text:?} loaded"
        );
    }
}

#[test]
fn many_dims_load_in_linear_time() {
    // Each dim reads the one before: a scan of the dims per name read was quadratic (50,000
    // dims took 6.5 s in release); with a look-up 100,000 take well under a second.
    let count = 100_000;
    let mut text = String::from("schema = 1\nname = \"dims\"\n[dims]\nd0 = 1\n");
    for i in 1..count {
        text.push_str(&format!("d{i} = \"d{} + 1\"\n", i - 1));
    }
    text.push_str(
        "[[input]]\nid = \"x\"\nrows = \"n\"\nwidth = \"d99999\"\nformat = \"bf16\"\n\
         [[output]]\nedge = \"x\"\n",
    );
    let started = std::time::Instant::now();
    let circuit = Circuit::from_toml(&text, "dims.toml").unwrap();
    let elapsed = started.elapsed();
    assert_eq!(circuit.dim("d99999"), Some(count));
    assert_eq!(circuit.dims().len() as u64, count);
    assert!(elapsed.as_secs() < 10, "{elapsed:?}");
}

#[test]
fn a_node_listing_one_output_twice() {
    // These panicked in the builder (an index past the nodes built so far).
    assert_eq!(
        error_after(
            "out = [{ edge = \"xn\", rows = \"n\", width = \"hidden\", format = \"bf16\" }]",
            "out = [{ edge = \"xn\", rows = \"n\", width = \"hidden\", format = \"bf16\" }, { edge = \"xn\", rows = \"n\", width = \"hidden\", format = \"bf16\" }]"
        ),
        "bad.toml: block `layer` instance 0, node `norm`, output `xn`: `out` lists edge `xn` twice; list each output once"
    );
    assert_eq!(
        error_after(
            "out = [{ edge = \"xn\", rows = \"n\", width = \"hidden\", format = \"bf16\" }]",
            "out = [{ edge = \"xn{i}\", rows = \"n\", width = \"hidden\", format = \"bf16\" }, { edge = \"xn0\", rows = \"n\", width = \"hidden\", format = \"bf16\" }]"
        ),
        "bad.toml: block `layer` instance 0, node `norm`, output `xn0`: `out` lists `xn{i}` and `xn0`, which both name edge `layer.0.xn0`; list each output once"
    );
}

#[test]
fn a_library_caller_gets_errors_not_panics() {
    use circuit_ir::CircuitBuilder;
    use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, StateDecl, WeightDecl};
    let build = |node: NodeDecl, state: Option<StateDecl>| {
        let mut b = CircuitBuilder::new("lib");
        let mut block = BlockDecl::once("b")
            .node(node)
            .node(NodeDecl::new("w", "kv_write").reads(["x"]));
        if let Some(s) = state {
            block = block.state(s);
        }
        b.input("x", "n", 8, "bf16").block(block).output("b.y");
        b.build().unwrap_err().to_string()
    };
    let y = || OutDecl::new("y", "n", 8, "bf16");
    assert_eq!(
        build(
            NodeDecl::new("a", "copy")
                .reads(["x"])
                .writes(y())
                .writes(y()),
            None
        ),
        "circuit `lib`: block `b`, node `a`, output `y`: `out` lists edge `y` twice; list each output once"
    );
    // Two weights of one node naming one tensor with different shapes.
    assert_eq!(
        build(
            NodeDecl::new("a", "linear")
                .reads(["x"])
                .writes(y())
                .weight(WeightDecl::new("w1", [8, 8], "bf16").tensor("t"))
                .weight(WeightDecl::new("w2", [8, 4], "bf16").tensor("t")),
            None
        ),
        "circuit `lib`: block `b`, node `a`, weight `w2`: tensor `t` was declared as [8, 8] bf16 x1 by node `b.a`, here as [8, 4] bf16 x1"
    );
    assert_eq!(
        build(
            NodeDecl::new("a", "copy").reads(["x", "y"]).writes(y()),
            None
        ),
        "circuit `lib`: block `b`, node `a`, input `y`: edge `b.y` is an output of this node; a node cannot read its own output"
    );
    let node = || NodeDecl::new("a", "copy").reads(["x"]).writes(y());
    assert_eq!(
        build(
            node(),
            Some(StateDecl::per_token("kv", 8, "bf16", "w").read_by(["w"]))
        ),
        "circuit `lib`: block `b`, state `kv`, readers: node `w` writes this state; its readers must be later nodes of the block instance"
    );
}

#[test]
fn state_readers_and_windows() {
    assert_eq!(
        error_after("readers = [\"down\"]", "readers = [\"down\", \"down\"]"),
        "bad.toml: block `layer` instance 0, state `kv`, readers: duplicate state reader id `down`"
    );
    // A window of 0 planned a KV cache of no bytes.
    assert_eq!(
        error_after(
            "per_token = \"ffn\"",
            "per_token = \"ffn\"\n  window = \"hidden - 64\""
        ),
        "bad.toml: block `layer` instance 0, state `kv`, window: `hidden - 64` is 0 tokens: a sliding window holds at least 1 token per sequence (omit `window` to hold every cached token)"
    );
}

#[test]
fn too_many_output_edges() {
    // One node with 100 outputs in 50,000 instances is 5,000,000 edges from a small file.
    let outs: Vec<String> = (0..100)
        .map(|i| format!("{{ edge = \"o{i}\", rows = \"n\", width = 8, format = \"bf16\" }}"))
        .collect();
    let text = format!(
        "schema = 1\nname = \"wide\"\n[[input]]\nid = \"x\"\nrows = \"n\"\nwidth = 8\nformat = \"bf16\"\n\
         [[block]]\nname = \"b\"\nrepeat = 50_000\n[[block.node]]\nid = \"a\"\nop = \"copy\"\nin = [\"x\"]\nout = [{}]\n",
        outs.join(", ")
    );
    assert_eq!(
        Circuit::from_toml(&text, "wide.toml")
            .unwrap_err()
            .to_string(),
        "wide.toml: block `b`: 50000 instances of 100 output edges, weights and states exceeds the limit of 4194304 output edges, weights and states per circuit"
    );
}

#[test]
fn toml_messages_place_what_the_reader_does_not() {
    // The reader's dotted-key limit has no position (it was reported at line 1, column 1).
    let key = vec!["a"; 81].join(".");
    assert_eq!(
        error_after("layers = 2", &format!("layers = 2\n{key} = 1")),
        "bad.toml: line 8, column 1: a dotted key of 81 parts; keys and table headers nest at most 80 parts deep"
    );
    let header = vec!["t"; 90].join(".");
    assert_eq!(
        error_after("[[output]]", &format!("[{header}]\n[[output]]")),
        "bad.toml: line 67, column 2: a dotted key of 90 parts; keys and table headers nest at most 80 parts deep"
    );
    // An integer beyond 64 bits is said so, not as an i128.
    assert_eq!(
        error_after("layers = 2", "layers = 18446744073709551616"),
        "bad.toml: line 7, column 10: integer `18446744073709551616` is above 2^64 - 1 (18446744073709551615), the largest 64-bit integer; expected an expression: a string such as \"2*hidden\" or a non-negative integer"
    );
}

#[test]
fn a_byte_order_mark() {
    // At the very start it is skipped (editors write one), and columns do not count it.
    let with_bom = format!("\u{feff}{GOOD}");
    assert_eq!(
        Circuit::from_toml(&with_bom, "bom.toml").unwrap(),
        Circuit::from_toml(GOOD, "good.toml").unwrap()
    );
    assert_eq!(
        Circuit::from_toml(
            &with_bom.replacen("schema = 1", "schema = \"1\"", 1),
            "bom.toml"
        )
        .unwrap_err()
        .to_string(),
        "bom.toml: line 1, column 10: invalid type: string \"1\", expected u32"
    );
    // Anywhere else it is named.
    assert_eq!(
        error_after("layers = 2", "\u{feff}layers = 2"),
        "bad.toml: line 7, column 1: invalid unquoted key, expected letters, numbers, `-`, `_` (a byte-order mark, U+FEFF, is there: only one at the very start of the file is allowed; remove it)"
    );
}

#[test]
fn a_huge_expression_is_quoted_in_part() {
    // A 400 KB expression made a 400 KB error line; the quote keeps its two ends.
    let huge = format!("max({}, n)", vec!["ffn"; 100_000].join(", "));
    let msg = error_after("layers = 2", &format!("layers = \"{huge}\""));
    assert_eq!(
        msg,
        format!(
            "bad.toml: dim `layers`: unknown dim `n` in `{}[... {} characters ...]{}` (readable here: hidden, ffn)",
            &huge[..106],
            huge.len() - 146,
            &huge[huge.len() - 40..]
        )
    );
    assert!(msg.len() < 400, "{} bytes", msg.len());
}
