//! The README's "Use the crates" example: everything below this header is the README's code
//! block, byte for byte (tests/tests/readme.rs checks it; written compactly by hand to stay a
//! short page, so not formatted by rustfmt). A circuit built in code, planned with the
//! standard kernel families and fusion rules at three row counts, with the owner of every byte
//! and the largest row count that fits 4 GiB.

use memory_plan::circuit_ir::{CircuitBuilder, decl::{BlockDecl, NodeDecl, OutDecl, WeightDecl}};
use memory_plan::{PlanConfig, Planner, fuser, kernel_families};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two bf16 MLP layers: RMSNorm, gate-up projection, SwiGLU, down projection.
    let node = |id: &str, op: &str, input: &str, out: &str, width: &str| {
        NodeDecl::new(id, op).reads([input]).writes(OutDecl::new(out, "n", width, "bf16"))
    };
    let w = |shape: &[&str]| WeightDecl::new("w", shape.to_vec(), "bf16");
    let layer = BlockDecl::repeated("layer", "layers").stream(Some("x"), Some("y"))
        .node(node("norm", "rms_norm", "x", "xn", "hidden").weight(w(&["hidden"])))
        .node(node("up_proj", "linear", "xn", "gu", "2 * ffn").weight(w(&["2 * ffn", "hidden"])))
        .node(node("act", "silu_mul", "gu", "a", "ffn"))
        .node(node("down_proj", "linear", "a", "y", "hidden").weight(w(&["hidden", "ffn"])));
    let mut b = CircuitBuilder::new("mlp");
    // The layer's dims, then those the standard families read (kernel_families::standard).
    for (dim, value) in [("layers", "2"), ("ffn", "14336"), ("hidden", "4096"), ("vocab", "128256"),
        ("heads", "32"), ("kv_heads", "8"), ("head_dim", "128"), ("q_width", "heads * head_dim")] {
        b.dim(dim, value);
    }
    let circuit = b.input("x", "n", "hidden", "bf16").block(layer).output("layer.1.y").build()?;
    let (families, rules) = (kernel_families::standard::families()?, fuser::standard::rules()?);
    let planner = Planner::new(&circuit, &families, &rules, rules.defaults(), PlanConfig::new(132))?;
    for plan in planner.sweep(&[1, 64, 4096], &|| {})? { println!("{plan}"); }
    println!("{}", planner.per_node(4096)?); // who owns each byte at n = 4096
    println!("{}", planner.max_rows(1..=1 << 20, 4 << 30)?); // the largest n that fits 4 GiB
    Ok(())
}
