//! How a compiler with its own IR embeds the planner: build a small transformer circuit, its
//! kernel families and fusion rules in code (no files), fuse it, and plan it at several row
//! counts, printing the workspace terms.
//!
//! Run: `cargo run -p memory-plan --example embed`

use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, StateDecl, WeightDecl};
use circuit_ir::{Circuit, CircuitBuilder};
use fuser::rules::{ElementDecl, RuleDecl};
use fuser::{FuseOptions, Rules, RulesBuilder, fuse};
use kernel_families::decl::{FamilyDecl, WorkspaceDecl};
use kernel_families::{Families, FamiliesBuilder};
use memory_plan::{PlanConfig, Planner};

/// A 4-layer decoder: norm, fused QKV projection, RoPE + KV write, attention, output
/// projection, residual add, norm, gate-up projection, SwiGLU, down projection, residual add.
fn transformer() -> Circuit {
    let act = |edge: &str, width: &str| OutDecl::new(edge, "n", width, "bf16");
    let weight = |shape: [&str; 2]| WeightDecl::new("w", shape, "bf16");
    let norm_weight = || WeightDecl::new("w", ["hidden"], "bf16");
    let layer = BlockDecl::repeated("layer", "layers")
        .stream(Some("x"), Some("y"))
        .node(
            NodeDecl::new("attn_norm", "rms_norm")
                .reads(["x"])
                .writes(act("xn", "hidden"))
                .weight(norm_weight()),
        )
        .node(
            NodeDecl::new("qkv_proj", "linear")
                .reads(["xn"])
                .writes(act("qkv", "qkv_width"))
                .weight(weight(["qkv_width", "hidden"])),
        )
        .node(
            NodeDecl::new("rope", "rope")
                .reads(["qkv"])
                .writes(act("q", "q_width"))
                .writes(act("k", "kv_width")),
        )
        .node(NodeDecl::new("kv_write", "kv_write").reads(["k", "qkv"]))
        .node(
            NodeDecl::new("attention", "attention")
                .reads(["q"])
                .writes(act("attn", "q_width")),
        )
        .node(
            NodeDecl::new("o_proj", "linear")
                .reads(["attn"])
                .writes(act("o", "hidden"))
                .weight(weight(["hidden", "q_width"])),
        )
        .node(
            NodeDecl::new("attn_add", "residual_add")
                .reads(["x", "o"])
                .writes(act("h", "hidden")),
        )
        .node(
            NodeDecl::new("mlp_norm", "rms_norm")
                .reads(["h"])
                .writes(act("hn", "hidden"))
                .weight(norm_weight()),
        )
        .node(
            NodeDecl::new("gate_up", "linear")
                .reads(["hn"])
                .writes(act("gu", "2 * ffn"))
                .weight(weight(["2 * ffn", "hidden"])),
        )
        .node(
            NodeDecl::new("act", "silu_mul")
                .reads(["gu"])
                .writes(act("a", "ffn")),
        )
        .node(
            NodeDecl::new("down", "linear")
                .reads(["a"])
                .writes(act("d", "hidden"))
                .weight(weight(["hidden", "ffn"])),
        )
        .node(
            NodeDecl::new("mlp_add", "residual_add")
                .reads(["h", "d"])
                .writes(act("y", "hidden")),
        )
        .state(
            StateDecl::per_token("kv", "2 * kv_width", "bf16", "kv_write").read_by(["attention"]),
        );
    let mut b = CircuitBuilder::new("tiny-decoder");
    b.dim("hidden", 2048)
        .dim("heads", 16)
        .dim("kv_heads", 4)
        .dim("head_dim", 128)
        .dim("q_width", "heads * head_dim")
        .dim("kv_width", "kv_heads * head_dim")
        .dim("qkv_width", "q_width + 2 * kv_width")
        .dim("ffn", 5632)
        .dim("layers", 4)
        .input("x", "n", "hidden", "bf16")
        .block(layer)
        .output("layer.3.y");
    b.build().expect("the decoder is a valid circuit")
}

/// A cuBLASLt-style GEMM family with a fixed workspace, split-KV decode attention with fp32
/// partials, and workspace-free families for the rest.
fn families() -> Families {
    let mut b = FamiliesBuilder::new("embedded registry");
    b.family(
        FamilyDecl::new("gemm", ["linear"])
            .kernels(["gemm_bf16"])
            .workspace(WorkspaceDecl::new(
                "handle",
                ["32 * 1024 * 1024"],
                false,
                "cuBLAS: 32 MiB on Hopper",
            )),
    )
    .family(
        FamilyDecl::new("decode_attention", ["attention"])
            .kernels(["flash_decode_bf16"])
            .workspace(WorkspaceDecl::new(
                "partials",
                ["4 * n * heads * (head_dim + 1) * min(ceil_div(2 * sm_count, n * kv_heads), 128)"],
                true,
                "fp32 split-KV partial outputs and log-sum-exp",
            )),
    )
    .family(
        FamilyDecl::new(
            "row_kernels",
            ["rms_norm", "residual_add", "rope", "kv_write", "silu_mul"],
        )
        .kernels([
            "rms_norm_bf16",
            "add_rms_norm_bf16",
            "rope_kv_bf16",
            "silu_mul_bf16",
            "add_bf16",
        ]),
    );
    b.build().expect("the registry is valid")
}

/// Single-op rules plus two production fusions: residual add + RMSNorm, RoPE + KV write.
fn rules(families: &Families) -> Rules {
    let single = |id: &str, op: &str, kernel: &str| {
        RuleDecl::new(id, "cuda")
            .element(ElementDecl::op(op))
            .kernels([kernel])
    };
    let mut b = RulesBuilder::new("embedded rules");
    b.setting("mode", "decode")
        .rule(
            RuleDecl::new("add_rms_norm", "cuda")
                .element(ElementDecl::op("residual_add").keep())
                .element(ElementDecl::op("rms_norm"))
                .kernels(["add_rms_norm_bf16"])
                .priority(10),
        )
        .rule(
            RuleDecl::new("rope_kv_write", "cuda")
                .element(ElementDecl::op("rope").keep())
                .element(ElementDecl::op("kv_write"))
                .kernels(["rope_kv_bf16"])
                .priority(10),
        )
        .rule(single("norm", "rms_norm", "rms_norm_bf16"))
        .rule(single("linear", "linear", "gemm_bf16"))
        .rule(single("attention", "attention", "flash_decode_bf16"))
        .rule(single("act", "silu_mul", "silu_mul_bf16"))
        .rule(single("add", "residual_add", "add_bf16"));
    b.build(Some(families)).expect("the rules are valid")
}

fn main() {
    let circuit = transformer();
    let families = families();
    let rules = rules(&families);
    let settings = rules.defaults();

    let plan = fuse(&circuit, &rules, &settings, 1, FuseOptions::default())
        .expect("every node is covered");
    println!("{}", plan.render(&circuit));

    let config = PlanConfig {
        kv_tokens: 4096,
        ..PlanConfig::new(132)
    };
    let planner = Planner::new(&circuit, &families, &rules, settings, config)
        .expect("the registry binds to the circuit");
    let rows = [1, 8, 64, 512];
    for p in planner.sweep(&rows, &|| {}).expect("every row count plans") {
        println!(
            "n = {:>3}: total {:>10} bytes (weights {}, arena {} with lower bound {}, workspaces {}, KV {})",
            p.rows,
            p.totals.total,
            p.totals.weights,
            p.arena.bytes,
            p.arena.lower_bound,
            p.totals.workspaces,
            p.totals.states
        );
        for t in &p.workspaces {
            println!(
                "         {}/{}: {} bytes{} over {} nodes, set by {}",
                t.family,
                t.name,
                t.bytes,
                if t.arena { " in the arena" } else { "" },
                t.nodes.len(),
                circuit.nodes()[t.owner].id
            );
        }
    }
}
