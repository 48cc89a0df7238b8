//! Circuits, registries and rule sets written back to TOML load as equal values: every example,
//! the standard families and rules, and every shared Hugging Face model. And the builders
//! refuse what the loaders refuse, with the same errors.

use std::path::PathBuf;

use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl};
use circuit_ir::{Circuit, CircuitBuilder};
use fuser::rules::{ElementDecl, RuleDecl};
use fuser::{Rules, RulesBuilder};
use kernel_families::decl::FamilyDecl;
use kernel_families::{Families, FamiliesBuilder};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn circuit_round_trip(circuit: &Circuit) {
    let text = circuit.to_toml().unwrap();
    let again = Circuit::from_toml(&text, "written.toml").unwrap();
    assert_eq!(&again, circuit, "{}", circuit.name());
    assert_eq!(again.weight_bytes(), circuit.weight_bytes());
    assert_eq!(again.nodes().len(), circuit.nodes().len());
    assert_eq!(again.to_toml().unwrap(), text);
}

#[test]
fn examples_round_trip() {
    let dir = root().join("examples/llama-3.1-8b");
    let circuit = Circuit::from_toml(&read(dir.join("circuit.toml")), "circuit.toml").unwrap();
    circuit_round_trip(&circuit);
    let standard = (
        kernel_families::standard::FAMILIES.to_owned(),
        fuser::standard::RULES.to_owned(),
    );
    let example = (
        read(dir.join("families.toml")),
        read(dir.join("rules.toml")),
    );
    for (families, rules) in [example, standard] {
        let families = Families::from_toml(&families, "families.toml").unwrap();
        let again = Families::from_toml(&families.to_toml().unwrap(), "written.toml").unwrap();
        assert_eq!(again, families);
        assert_eq!(again.decl(), families.decl());
        let rules = Rules::from_toml(&rules, "rules.toml", Some(&families)).unwrap();
        let again =
            Rules::from_toml(&rules.to_toml().unwrap(), "written.toml", Some(&families)).unwrap();
        assert_eq!(again, rules);
    }
}

#[test]
fn shared_models_round_trip() {
    let models = root().join("data/models");
    for name in [
        "llama-3.1-8b",
        "qwen2.5-7b",
        "mixtral-8x7b-v0.1",
        "qwen3-30b-a3b",
        "deepseek-v2-lite",
    ] {
        let path = models.join(name).join("config.json");
        let circuit =
            circuit_hf::from_config_json(&read(path), &format!("{name}/config.json")).unwrap();
        circuit_round_trip(&circuit);
    }
}

#[test]
fn builders_refuse_what_loaders_refuse() {
    // A circuit with an unknown op: the same place and fault, only the origin differs.
    let mut b = CircuitBuilder::new("c");
    b.input("x", "n", 8, "bf16")
        .block(
            BlockDecl::once("b").node(
                NodeDecl::new("a", "copy")
                    .reads(["x"])
                    .writes(OutDecl::new("y", "n", 8, "bf16")),
            ),
        )
        .block(BlockDecl::once("more").node(NodeDecl::new("z", "cpoy").reads(["b.y"])))
        .output("b.y");
    let from_builder = b.build().unwrap_err();
    let text = r#"schema = 1
name = "c"
[[input]]
id = "x"
rows = "n"
width = 8
format = "bf16"
[[block]]
name = "b"
  [[block.node]]
  id = "a"
  op = "copy"
  in = ["x"]
  out = [{ edge = "y", rows = "n", width = 8, format = "bf16" }]
[[block]]
name = "more"
  [[block.node]]
  id = "z"
  op = "cpoy"
  in = ["b.y"]
[[output]]
edge = "b.y"
"#;
    let from_file = Circuit::from_toml(text, "c.toml").unwrap_err();
    assert_eq!(
        (&from_builder.place, &from_builder.kind),
        (&from_file.place, &from_file.kind)
    );
    assert_eq!(from_builder.origin, "circuit `c`");

    // Two families listing one kernel.
    let mut b = FamiliesBuilder::new("families.toml");
    b.family(FamilyDecl::new("a", ["linear"]).kernels(["gemm"]))
        .family(FamilyDecl::new("b", ["linear"]).kernels(["gemm"]));
    let from_builder = b.build().unwrap_err();
    let from_file = Families::from_toml(
        "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"gemm\"]\nops = [\"linear\"]\n[[family]]\nid = \"b\"\nkernels = [\"gemm\"]\nops = [\"linear\"]\n",
        "families.toml",
    )
    .unwrap_err();
    assert_eq!(from_builder, from_file);

    // A rule whose rows are empty.
    let mut b = RulesBuilder::new("rules.toml");
    b.rule(
        RuleDecl::new("r", "cuda")
            .element(ElementDecl::op("linear"))
            .rows(9, 8),
    );
    let from_builder = b.build(None).unwrap_err();
    let from_file = Rules::from_toml(
        "schema = 1\n[[rule]]\nid = \"r\"\npattern = [{ op = \"linear\" }]\nemitter = \"cuda\"\nrows = [9, 8]\n",
        "rules.toml",
        None,
    )
    .unwrap_err();
    assert_eq!(from_builder, from_file);
    assert_eq!(
        from_file.to_string(),
        "rules.toml: rule `r`: rows = [9, 8] is empty or starts at 0; write [lo, hi] with 1 <= lo <= hi"
    );
}
