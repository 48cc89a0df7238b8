//! Workspace values (the largest of a workspace's expressions over the circuit's dims, `n`, `k`
//! and `sm_count`), unknown names, `Families::check`, and evaluation faults.

use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl};
use circuit_ir::{Circuit, CircuitBuilder};
use kernel_families::{Families, FamiliesErrorKind, FamilyIdx, WorkspaceErrorKind};

/// A one-node circuit with the attention dims of Llama-3.1-8B.
fn circuit() -> Circuit {
    let mut b = CircuitBuilder::new("tiny");
    b.dim("hidden", 4096)
        .dim("heads", 32)
        .dim("kv_heads", 8)
        .dim("head_dim", 128)
        .input("x", "n", "hidden", "bf16")
        .block(
            BlockDecl::once("main").node(
                NodeDecl::new("norm", "rms_norm")
                    .reads(["x"])
                    .writes(OutDecl::new("y", "n", "hidden", "bf16")),
            ),
        )
        .output("main.y");
    b.build().unwrap()
}

const REGISTRY: &str = r#"
schema = 1

[[family]]
id = "attn"
kernels = ["attn_k"]
ops = ["attention"]

  [[family.workspace]]
  name = "partials"
  bytes = [
    "4 * n * heads * head_dim * min(ceil_div(2 * sm_count, n * kv_heads), 128)",
    "n * k * 2",
    1_000,
  ]
  arena = true
  why = "split-KV partials; or a bf16 copy of the input; never under 1000 bytes"

  [[family.workspace]]
  name = "fixed"
  bytes = [33554432, "4 * 1024 * 1024"]
  arena = false
  why = "32 MiB, or 4 MiB"

[[family]]
id = "plain"
kernels = ["plain_k"]
ops = ["rms_norm"]
"#;

fn families() -> Families {
    Families::from_toml(REGISTRY, "ws.toml").unwrap()
}

#[test]
fn the_value_is_the_largest_expression() {
    let f = families();
    let attn = f.find("attn").unwrap();
    let h100 = f.bind(&circuit(), 132).unwrap();
    let v = |n, k| h100.workspace_value(attn, 0, n, k).unwrap();
    // n = 1: 2*132 slots over 8 blocks = 33 splits; 4 * 32 * 128 * 33.
    assert_eq!(v(1, 4096), 540_672);
    // n = 64: 512 blocks fill the 264 slots, one split; 4 * 64 * 32 * 128.
    assert_eq!(v(64, 4096), 1_048_576);
    // n = 1000: one split, 16,384,000; the bf16 copy of a 14,336-wide input is larger.
    assert_eq!(v(1000, 4096), 16_384_000);
    assert_eq!(v(1000, 14336), 28_672_000);
    // Other devices: the split count follows the SM count, capped at 128.
    let small = f.bind(&circuit(), 8).unwrap();
    assert_eq!(small.workspace_value(attn, 0, 1, 4096).unwrap(), 32_768);
    let huge = f.bind(&circuit(), 1000).unwrap();
    assert_eq!(huge.workspace_value(attn, 0, 1, 4096).unwrap(), 2_097_152);
    assert_eq!(huge.sm_count(), 1000);
}

#[test]
fn constant_workspaces_are_folded() {
    let f = families();
    let attn = f.find("attn").unwrap();
    let b = f.bind(&circuit(), 132).unwrap();
    assert_eq!(b.workspace_value(attn, 1, 1, 4096).unwrap(), 33_554_432);
    assert_eq!(b.workspace_value(attn, 1, 8192, 0).unwrap(), 33_554_432);
    assert_eq!(b.constant_value(attn, 1), Some(33_554_432));
    assert_eq!(b.constant_value(attn, 0), None);
    assert_eq!(b.workspace_count(attn), 2);
    assert_eq!(b.workspace_count(f.find("plain").unwrap()), 0);
}

#[test]
fn faults_name_family_workspace_and_expression() {
    let f = families();
    let attn = f.find("attn").unwrap();
    let b = f.bind(&circuit(), 132).unwrap();
    let e = b.workspace_value(attn, 0, 0, 4096).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ws.toml: family `attn`, workspace `partials` at n = 0, k = 4096: bytes[0]: expression `4 * n * heads * head_dim * min(ceil_div(2 * sm_count, n * kv_heads), 128)`: division by zero in `ceil_div(2 * sm_count, n * kv_heads)`"
    );
    assert!(matches!(
        e.kind(),
        WorkspaceErrorKind::Eval { index: 0, .. }
    ));
    assert_eq!(
        b.workspace_value(attn, 0, u64::MAX / 2, 4)
            .unwrap_err()
            .to_string(),
        "ws.toml: family `attn`, workspace `partials` at n = 9223372036854775807, k = 4: bytes[0]: expression `4 * n * heads * head_dim * min(ceil_div(2 * sm_count, n * kv_heads), 128)`: overflow in `4 * n`"
    );
    assert_eq!(
        b.workspace_value(attn, 2, 1, 1).unwrap_err().to_string(),
        "no workspace 2 in family index 0 (the family has 2)"
    );
    assert_eq!(
        b.workspace_value(FamilyIdx::from_u32(7), 0, 1, 1)
            .unwrap_err()
            .to_string(),
        "no workspace 0 in family index 7 (the family has 0)"
    );
}

const UNKNOWN: &str = r#"
schema = 1

[[family]]
id = "moe"
kernels = ["moe_k"]
ops = ["expert_linear"]

  [[family.workspace]]
  name = "sorted"
  bytes = ["n * 4", "n * top_k * experts"]
  arena = true
  why = "routing"

[[family]]
id = "gemm"
kernels = ["gemm_k"]
ops = ["linear"]

  [[family.workspace]]
  name = "w"
  bytes = ["sm_count * k * hiden"]
  arena = false
  why = "typo"
"#;

#[test]
fn an_unknown_name_is_an_error_naming_everything_never_zero() {
    let f = Families::from_toml(UNKNOWN, "families.toml").unwrap();
    let e = f.bind(&circuit(), 132).unwrap_err();
    assert_eq!(
        e.to_string(),
        "families.toml: family `moe`, workspace `sorted`: bytes[1]: expression `n * top_k * experts` reads `top_k`, which is neither a dim of circuit `tiny` nor `n`, `k` or `sm_count`"
    );
    assert!(matches!(
        *e.kind,
        FamiliesErrorKind::UnknownName { index: 1, .. }
    ));
}

#[test]
fn check_reports_every_undefined_name() {
    let c = circuit();
    let f = Families::from_toml(UNKNOWN, "families.toml").unwrap();
    let findings = f.check(&c);
    let short: Vec<_> = findings
        .iter()
        .map(|x| {
            (
                x.family.as_str(),
                x.workspace.as_str(),
                x.index,
                x.name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        short,
        [
            ("moe", "sorted", 1, "experts"),
            ("moe", "sorted", 1, "top_k"),
            ("gemm", "w", 0, "hiden"),
        ]
    );
    assert_eq!(
        findings[2].to_string(),
        "families.toml: family `gemm`, workspace `w`: bytes[0]: expression `sm_count * k * hiden` reads `hiden`, which is neither a dim of circuit `tiny` nor `n`, `k` or `sm_count`"
    );
    // Within one expression, findings list names sorted; `bind` stops at the first it compiles.
    assert_eq!(
        findings[1].to_error(),
        f.bind(&c, 132).unwrap_err(),
        "a finding is the error bind reports for the same name"
    );
    assert!(families().check(&c).is_empty());
}

#[test]
fn a_constant_part_that_fails_is_refused_at_bind() {
    let text = "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\"]\n[[family.workspace]]\nname = \"w\"\nbytes = [\"n + hidden * 18446744073709551615\"]\narena = false\nwhy = \"f\"\n";
    let f = Families::from_toml(text, "families.toml").unwrap();
    assert!(f.check(&circuit()).is_empty());
    assert_eq!(
        f.bind(&circuit(), 132).unwrap_err().to_string(),
        "families.toml: family `a`, workspace `w`: bytes[0]: expression `n + hidden * 18446744073709551615`: overflow in `hidden * 18446744073709551615`"
    );
}

#[test]
fn registries_are_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Families>();
    shared::<kernel_families::BoundFamilies>();
    shared::<kernel_families::Devices>();
}
