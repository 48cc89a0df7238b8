//! Every message is one line, whatever the registry quotes (issue 7): ids, kernels and
//! expressions may hold a newline (a TOML escape).

use circuit_ir::Circuit;
use kernel_families::Families;

const CIRCUIT: &str = "schema = 1\nname = \"c\"\n[dims]\nh = 8\n[[input]]\nid = \"x\"\n\
                       rows = \"n\"\nwidth = \"h\"\nformat = \"bf16\"\n[[output]]\nedge = \"x\"\n";

#[test]
fn load_errors_escape_newlines() {
    let text = "schema = 1\n[[family]]\nid = \"a\\nb\"\nkernels = [\"k\"]\nops = [\"li\\nnear\"]\n";
    assert_eq!(
        Families::from_toml(text, "f.toml").unwrap_err().to_string(),
        "f.toml: family `a\\nb`: ops[0]: unknown op `li\\nnear` (known: embed, rms_norm, \
         layer_norm, linear, rope, kv_write, attention, silu_mul, gelu_mul, residual_add, router, \
         top_k, expert_linear, moe_combine, lm_head, sample, copy, concat, split, scale, softcap, \
         gelu, clamped_swiglu, sigmoid_mul, gated_rms_norm, causal_conv1d, gated_delta_net, \
         all_reduce, all_gather, weights_only)"
    );
}

#[test]
fn findings_and_workspace_values_escape_newlines() {
    let circuit = Circuit::from_toml(CIRCUIT, "c.toml").unwrap();
    let text = "schema = 1\n[[family]]\nid = \"a\\nb\"\nkernels = [\"k\"]\nops = [\"linear\"]\n\
                [[family.workspace]]\nname = \"w\\r\"\nbytes = [\"n *\\n hh\"]\narena = false\n\
                why = \"t\"\n";
    let families = Families::from_toml(text, "f.toml").unwrap();
    let findings = families.check(&circuit);
    assert_eq!(
        findings[0].to_string(),
        "f.toml: family `a\\nb`, workspace `w\\r`: bytes[0]: expression `n *\\n hh` reads `hh`, \
         which is neither a dim of circuit `c` nor `n`, `k` or `sm_count`"
    );
    let text = text.replace("hh", "18446744073709551615");
    let families = Families::from_toml(&text, "f.toml").unwrap();
    let bound = families.bind(&circuit, 132).unwrap();
    let family = families.find("a\nb").unwrap();
    assert_eq!(
        bound
            .workspace_value(family, 0, 2, 8)
            .unwrap_err()
            .to_string(),
        "f.toml: family `a\\nb`, workspace `w\\r` at n = 2, k = 8: bytes[0]: expression `n *\\n 18446744073709551615`: \
         overflow in `n * 18446744073709551615`"
    );
}
