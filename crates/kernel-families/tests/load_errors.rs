//! Every way a families file is refused, with its exact message: each names the file, the
//! family and (where it applies) the workspace.

use kernel_families::{Families, FamiliesErrorKind};

fn err(text: &str) -> String {
    Families::from_toml(text, "families.toml")
        .expect_err("the registry should be refused")
        .to_string()
}

/// A valid family `a` with workspace `w` whose workspace table ends in `extra` lines.
fn with_workspace(extra: &str) -> String {
    format!(
        "schema = 1\n\n[[family]]\nid = \"a\"\nkernels = [\"ka\"]\nops = [\"linear\"]\n\n  [[family.workspace]]\n  name = \"w\"\n{extra}"
    )
}

#[test]
fn a_valid_file_loads() {
    let f = Families::from_toml(
        &with_workspace("  bytes = [\"n * k\", 64]\n  arena = false\n  why = \"fact\"\n"),
        "families.toml",
    )
    .unwrap();
    assert_eq!(f.len(), 1);
    let fam = &f.families()[f.find("a").unwrap()];
    assert_eq!(fam.workspaces[0].bytes.len(), 2);
    assert_eq!(fam.workspaces[0].bytes[1].source(), "64");
}

#[test]
fn not_toml() {
    assert_eq!(
        err("schema = 1\n[[family]\n"),
        "families.toml: line 2, column 10: unclosed array table, expected `]`"
    );
}

#[test]
fn schema_first() {
    assert_eq!(
        err("schema = 2\n[[family]]\nidd = 3\n"),
        "families.toml: unknown schema 2; this version reads schema = 1"
    );
    assert_eq!(
        err("[[family]]\nid = \"a\"\n"),
        "families.toml: line 1, column 1: missing field `schema`"
    );
}

#[test]
fn unknown_keys() {
    assert_eq!(
        err("schema = 1\nfamilies = []\n"),
        "families.toml: line 2, column 1: unknown field `families`, expected `schema` or `family`"
    );
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nops = [\"linear\"]\nkernels = [\"k\"]\nkernel = \"k\"\n"
        ),
        "families.toml: family `a`: line 6, column 1: unknown field `kernel`, expected one of `id`, `description`, `kernels`, `emitters`, `ops`, `workspace`"
    );
    assert_eq!(
        err(&with_workspace(
            "  byts = [\"n\"]\n  arena = false\n  why = \"fact\"\n"
        )),
        "families.toml: family `a`, workspace `w`: line 10, column 3: unknown field `byts`, expected one of `name`, `bytes`, `arena`, `why`"
    );
}

#[test]
fn missing_and_mistyped_keys() {
    assert_eq!(
        err("schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\n"),
        "families.toml: family `a`: line 2, column 1: missing field `ops`"
    );
    assert_eq!(
        err(&with_workspace("  bytes = [\"n\"]\n  arena = false\n")),
        "families.toml: family `a`, workspace `w`: line 8, column 3: missing field `why`"
    );
    assert_eq!(
        err(&with_workspace(
            "  bytes = \"n\"\n  arena = false\n  why = \"f\"\n"
        )),
        "families.toml: family `a`, workspace `w`: line 10, column 11: invalid type: string \"n\", expected a sequence"
    );
    assert_eq!(
        err(&with_workspace(
            "  bytes = [-4]\n  arena = false\n  why = \"f\"\n"
        )),
        "families.toml: family `a`, workspace `w`: line 10, column 12: -4 is negative; sizes are non-negative integers"
    );
    assert_eq!(
        err(&with_workspace(
            "  bytes = [\"n\"]\n  arena = \"no\"\n  why = \"f\"\n"
        )),
        "families.toml: family `a`, workspace `w`: line 11, column 11: invalid type: string \"no\", expected a boolean"
    );
}

#[test]
fn a_family_without_id_is_named_by_position() {
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\"]\n[[family]]\nkernels = [\"j\"]\nops = [\"linear\"]\n"
        ),
        "families.toml: family #2: line 6, column 1: missing field `id`"
    );
    assert_eq!(
        err("schema = 1\n[[family]]\nid = \"\"\nkernels = [\"k\"]\nops = [\"linear\"]\n"),
        "families.toml: family #1: `id` is empty"
    );
}

#[test]
fn duplicate_family_id() {
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\"]\n[[family]]\nid = \"a\"\nkernels = [\"j\"]\nops = [\"linear\"]\n"
        ),
        "families.toml: family `a`: duplicate family id `a` (families #1 and #2 in file order)"
    );
}

#[test]
fn kernel_in_two_families() {
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\"]\n[[family]]\nid = \"b\"\nkernels = [\"j\", \"k\"]\nops = [\"rope\"]\n"
        ),
        "families.toml: family `b`: kernel `k` is already listed by family `a`; a kernel belongs to one family"
    );
}

#[test]
fn duplicate_entries_and_empty_names() {
    assert_eq!(
        err("schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\", \"k\"]\nops = [\"linear\"]\n"),
        "families.toml: family `a`: `kernels` lists `k` twice"
    );
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nemitters = [\"torch\", \"\"]\nops = [\"linear\"]\n"
        ),
        "families.toml: family `a`: emitters[1] is empty"
    );
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\", \"linear\"]\n"
        ),
        "families.toml: family `a`: `ops` lists `linear` twice"
    );
}

#[test]
fn kernels_or_emitters_and_ops_are_required() {
    assert_eq!(
        err("schema = 1\n[[family]]\nid = \"a\"\nops = [\"linear\"]\n"),
        "families.toml: family `a`: lists neither `kernels` nor `emitters`; a family needs one of them"
    );
    assert_eq!(
        err("schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = []\n"),
        "families.toml: family `a`: `ops` is empty; a family implements at least one op"
    );
}

#[test]
fn unknown_op() {
    let e = Families::from_toml(
        "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\", \"rms_nrom\"]\n",
        "families.toml",
    )
    .unwrap_err();
    assert!(matches!(*e.kind, FamiliesErrorKind::Op { index: 1, .. }));
    assert_eq!(
        e.to_string(),
        "families.toml: family `a`: ops[1]: unknown op `rms_nrom` (known: embed, rms_norm, layer_norm, linear, rope, kv_write, attention, silu_mul, gelu_mul, residual_add, router, top_k, expert_linear, moe_combine, lm_head, sample, copy, concat, split, scale, softcap, gelu, clamped_swiglu, sigmoid_mul, gated_rms_norm, causal_conv1d, gated_delta_net, all_reduce, all_gather, weights_only)"
    );
}

#[test]
fn two_workspaces_of_one_name() {
    assert_eq!(
        err(&with_workspace(
            "  bytes = [\"n\"]\n  arena = false\n  why = \"f\"\n\n  [[family.workspace]]\n  name = \"w\"\n  bytes = [\"k\"]\n  arena = true\n  why = \"g\"\n"
        )),
        "families.toml: family `a`, workspace `w`: duplicate workspace name `w`"
    );
}

#[test]
fn empty_bytes_why_and_name() {
    assert_eq!(
        err(&with_workspace(
            "  bytes = []\n  arena = false\n  why = \"f\"\n"
        )),
        "families.toml: family `a`, workspace `w`: `bytes` is empty; give at least one expression (the workspace is the largest)"
    );
    assert_eq!(
        err(&with_workspace(
            "  bytes = [\"n\"]\n  arena = false\n  why = \"  \"\n"
        )),
        "families.toml: family `a`, workspace `w`: `why` is empty; say which fact the size rests on"
    );
    assert_eq!(
        err(
            "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"linear\"]\n[[family.workspace]]\nname = \"\"\nbytes = [\"n\"]\narena = false\nwhy = \"f\"\n"
        ),
        "families.toml: family `a`, workspace #1: `name` is empty"
    );
}

#[test]
fn expression_that_does_not_parse_gives_its_column() {
    let text = "schema = 1\n[[family]]\nid = \"flash_decode\"\nkernels = [\"flash_decode_bf16\"]\nops = [\"attention\"]\n\n  [[family.workspace]]\n  name = \"split_partials\"\n  bytes = [\"n*heads*4\", \"n*heads*\"]\n  arena = false\n  why = \"partials\"\n";
    assert_eq!(
        err(text),
        "families.toml: family `flash_decode`, workspace `split_partials`: bytes[1]: expression `n*heads*`: syntax error at column 9: unexpected end: expected a number, a name or `(`"
    );
}
