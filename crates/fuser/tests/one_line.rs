//! Every message is one line, whatever the rules or `--set` quote (issue 7).

use circuit_ir::Circuit;
use fuser::{FuseOptions, Rules, fuse};

#[test]
fn rule_errors_escape_newlines() {
    let text = "schema = 1\n[[rule]]\nid = \"r\\n1\"\npattern = [{ op = \"li\\nnear\" }]\n\
                emitter = \"cuda\"\n";
    assert_eq!(
        Rules::from_toml(text, "r.toml", None)
            .unwrap_err()
            .to_string(),
        "r.toml: rule `r\\n1`: pattern[0]: unknown op `li\\nnear` (known: embed, rms_norm, \
         layer_norm, linear, rope, kv_write, attention, silu_mul, gelu_mul, residual_add, router, \
         top_k, expert_linear, moe_combine, lm_head, sample, copy, concat, split, scale, softcap, \
         gelu, clamped_swiglu, sigmoid_mul, gated_rms_norm, causal_conv1d, gated_delta_net, \
         all_reduce, all_gather, weights_only)"
    );
}

#[test]
fn settings_from_the_command_line_are_escaped() {
    let rules = Rules::from_toml(
        "schema = 1\n[settings]\nmode = \"prefill\"\n",
        "r.toml",
        None,
    )
    .unwrap();
    assert_eq!(
        rules
            .settings([("mo\nde", "x")], "--set")
            .unwrap_err()
            .to_string(),
        "--set: setting `mo\\nde` is not declared in [settings] (declared: mode)"
    );
    let circuit = Circuit::from_toml(
        "schema = 1\nname = \"c\"\n[[input]]\nid = \"x\"\nrows = \"n\"\nwidth = 8\n\
         format = \"bf16\"\n[[block]]\nname = \"b\"\n  [[block.node]]\n  id = \"p\"\n\
         op = \"copy\"\n  in = [\"x\"]\n  out = [{ edge = \"y\", rows = \"n\", width = 8, \
         format = \"bf16\" }]\n[[output]]\nedge = \"b.y\"\n",
        "c.toml",
    )
    .unwrap();
    let settings = rules.settings([("mode", "de\ncode")], "--set").unwrap();
    assert_eq!(
        fuse(&circuit, &rules, &settings, 1, FuseOptions::default())
            .unwrap_err()
            .to_string(),
        "r.toml: node `b.p` (copy) is covered by no rule at n = 1 with mode=de\\ncode; add a rule for \
         `copy` (or fuse with placeholders)"
    );
}
