//! `Families::of_group` (docs/families.md): the first family in file order whose kernels include
//! one of the group's (or, for a kernel-less group, whose emitters include the group's emitter)
//! and whose ops include the node's op.

use circuit_ir::Op;
use kernel_families::{Families, FamilyIdx};

const REGISTRY: &str = r#"
schema = 1

[[family]]
id = "gemm"
kernels = ["gemm_a", "gemm_b"]
ops = ["linear", "lm_head"]

[[family]]
id = "norm_gemm"
kernels = ["norm_gemm_k"]
ops = ["rms_norm", "linear"]

[[family]]
id = "host"
emitters = ["torch"]
ops = ["embed", "sample"]

[[family]]
id = "host_late"
emitters = ["torch", "triton"]
ops = ["sample", "copy", "silu_mul"]

[[family]]
id = "mixed"
kernels = ["mixed_k"]
emitters = ["cuda"]
ops = ["rope"]
"#;

fn registry() -> Families {
    Families::from_toml(REGISTRY, "of_group.toml").unwrap()
}

/// The id of the family `of_group` picks.
fn pick(f: &Families, kernels: &[&str], emitter: &str, op: Op) -> Option<String> {
    f.of_group(kernels, emitter, op)
        .map(|i| f.families()[i].id.clone())
}

#[test]
fn kernels_decide_and_the_first_family_in_file_order_wins() {
    let f = registry();
    // Both families implement `linear`: the earlier one, whatever the order of the kernels.
    assert_eq!(
        pick(&f, &["norm_gemm_k", "gemm_a"], "cuda", Op::Linear).as_deref(),
        Some("gemm")
    );
    assert_eq!(
        pick(&f, &["gemm_a", "norm_gemm_k"], "cuda", Op::Linear).as_deref(),
        Some("gemm")
    );
    // Only the later one implements `rms_norm`.
    assert_eq!(
        pick(&f, &["gemm_a", "norm_gemm_k"], "cuda", Op::RmsNorm).as_deref(),
        Some("norm_gemm")
    );
    assert_eq!(
        pick(&f, &["norm_gemm_k"], "cuda", Op::Linear).as_deref(),
        Some("norm_gemm")
    );
    assert_eq!(
        pick(&f, &["gemm_b"], "", Op::LmHead).as_deref(),
        Some("gemm")
    );
}

#[test]
fn a_family_that_does_not_implement_the_op_is_not_chosen() {
    let f = registry();
    assert_eq!(pick(&f, &["gemm_a"], "cuda", Op::RmsNorm), None);
    assert_eq!(pick(&f, &["mixed_k"], "cuda", Op::Linear), None);
}

#[test]
fn unknown_kernels_contribute_nothing_and_do_not_fall_back_to_the_emitter() {
    let f = registry();
    assert_eq!(
        pick(&f, &["no_such", "gemm_b"], "cuda", Op::Linear).as_deref(),
        Some("gemm")
    );
    assert_eq!(pick(&f, &["no_such"], "cuda", Op::Linear), None);
    // The group has kernels, so the emitter `torch` (which covers `sample`) is not consulted.
    assert_eq!(pick(&f, &["no_such"], "torch", Op::Sample), None);
}

#[test]
fn kernel_less_groups_go_through_emitters() {
    let f = registry();
    assert_eq!(pick(&f, &[], "torch", Op::Sample).as_deref(), Some("host"));
    assert_eq!(
        pick(&f, &[], "triton", Op::Sample).as_deref(),
        Some("host_late")
    );
    assert_eq!(
        pick(&f, &[], "torch", Op::Copy).as_deref(),
        Some("host_late")
    );
    assert_eq!(pick(&f, &[], "torch", Op::Embed).as_deref(), Some("host"));
    assert_eq!(pick(&f, &[], "cuda", Op::Rope).as_deref(), Some("mixed"));
    assert_eq!(
        pick(&f, &["mixed_k"], "other", Op::Rope).as_deref(),
        Some("mixed")
    );
    assert_eq!(pick(&f, &[], "torch", Op::Linear), None);
    assert_eq!(pick(&f, &[], "no_such", Op::Sample), None);
    assert_eq!(pick(&f, &[], "", Op::Sample), None);
}

#[test]
fn owned_strings_and_indexes() {
    let f = registry();
    let kernels: Vec<String> = vec!["norm_gemm_k".into()];
    let idx = f.of_group(&kernels, "cuda", Op::RmsNorm).unwrap();
    assert_eq!(idx, FamilyIdx::from_u32(1));
    assert_eq!(f.find("norm_gemm"), Some(idx));
    assert_eq!(f.of_kernel("norm_gemm_k"), Some(idx));
    assert_eq!(f.of_kernel("no_such"), None);
    assert_eq!(f.get(idx).unwrap().ops, [Op::RmsNorm, Op::Linear]);
    assert_eq!(f.get(FamilyIdx::from_u32(99)), None);
    assert_eq!(f.len(), 5);
    assert_eq!(f.origin(), "of_group.toml");
}

#[test]
fn an_empty_registry_has_no_family_for_anything() {
    let f = Families::from_toml("schema = 1\n", "empty.toml").unwrap();
    assert!(f.is_empty());
    assert_eq!(pick(&f, &["gemm_a"], "cuda", Op::Linear), None);
    assert_eq!(pick(&f, &[], "torch", Op::Sample), None);
}
