//! Every message is one line, whatever the input quotes (issue 7). The first test loads the
//! input on which the `circuit_toml` fuzz target found a two-line error: the example with
//! `shape = ["q_width", "hidd\n"]` (a TOML escape), among other mutations.

use circuit_ir::{Circuit, Expr, one_line};

#[test]
fn the_fuzzers_newline_in_an_expression_is_escaped() {
    let text = include_str!("data/fuzz-newline-in-expression.toml");
    let err = Circuit::from_toml(text, "crash.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "crash.toml: block `layer` instance 0, node `q_proj`, weight `w`, shape[1]: unknown dim \
         `hidd` in `hidd\\n` (readable here: hidden, ffn, heads, kv_heads, head_dim, q_width, \
         kv_width, layers, vocab)"
    );
}

#[test]
fn ids_ops_and_file_names_are_escaped() {
    let text = "schema = 1\nname = \"c\"\n[[input]]\nid = \"x\"\nrows = \"n\"\nwidth = 8\n\
                format = \"bf16\"\n[[block]]\nname = \"b\"\n  [[block.node]]\n  id = \"p\"\n\
                op = \"co\\npy\"\n  in = [\"x\"]\n";
    assert_eq!(
        Circuit::from_toml(text, "dir\nname.toml")
            .unwrap_err()
            .to_string(),
        "dir\\nname.toml: block `b`, node `p`, op: unknown op `co\\npy` (known: embed, rms_norm, \
         layer_norm, linear, rope, kv_write, attention, silu_mul, gelu_mul, residual_add, \
         router, top_k, expert_linear, moe_combine, lm_head, sample, copy, concat, split, scale, \
         softcap, gelu, clamped_swiglu, sigmoid_mul, gated_rms_norm, causal_conv1d, \
         gated_delta_net, all_reduce, all_gather, weights_only)"
    );
}

#[test]
fn expression_errors_are_one_line() {
    assert_eq!(
        Expr::parse("2 *\r\n").unwrap_err().to_string(),
        "expression `2 *\\r\\n`: syntax error at column 6: unexpected end: expected a number, a \
         name or `(`"
    );
    let e = Expr::parse("18446744073709551615\n+ 1").unwrap();
    assert_eq!(
        e.eval_with(|_| None).unwrap_err().to_string(),
        "expression `18446744073709551615\\n+ 1`: overflow in `18446744073709551615 + 1`"
    );
}

#[test]
fn one_line_escapes_line_breaks_and_control_characters_only() {
    assert_eq!(
        one_line("plain `text`, tabs\tstay"),
        "plain `text`, tabs\tstay"
    );
    assert_eq!(one_line("a\nb\rc\u{7f}d\u{0}e"), "a\\nb\\rc\\u{7f}d\\0e");
    assert_eq!(
        one_line("x\u{2028}y\u{2029}z\u{85}"),
        "x\\u{2028}y\\u{2029}z\\u{85}"
    );
    assert_eq!(one_line("é ü 中"), "é ü 中");
}
