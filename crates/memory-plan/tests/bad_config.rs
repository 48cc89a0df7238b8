//! Planner inputs that must be refused with one clear message (issue 7).

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{PlanConfig, PlanError, Planner};

const CIRCUIT: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../../examples/llama-3.1-8b/families.toml");
const RULES: &str = include_str!("../../../examples/llama-3.1-8b/rules.toml");

fn load(families: &str) -> (Circuit, Families, Rules) {
    let circuit = Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap();
    let families = Families::from_toml(families, "families.toml").unwrap();
    let rules = Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap();
    (circuit, families, rules)
}

#[test]
fn a_device_without_sms_is_refused() {
    let (circuit, families, rules) = load(FAMILIES);
    let settings = rules.defaults();
    let err = Planner::new(&circuit, &families, &rules, settings, PlanConfig::new(0))
        .err()
        .unwrap();
    assert_eq!(err, PlanError::ZeroSmCount);
    assert_eq!(err.to_string(), "sm_count 0: a device has at least one SM");
}

#[test]
fn no_sequences_is_refused_not_an_empty_cache() {
    let (circuit, families, rules) = load(FAMILIES);
    let settings = rules.defaults();
    let mut config = PlanConfig::new(132);
    config.kv_tokens = 131_072;
    config.sequences = 0;
    let err = Planner::new(&circuit, &families, &rules, settings, config)
        .err()
        .unwrap();
    assert_eq!(err, PlanError::ZeroSequences);
    assert_eq!(
        err.to_string(),
        "sequences 0: the KV tokens belong to at least one sequence (a sliding window holds \
         window x sequences tokens)"
    );
}

#[test]
fn a_failing_workspace_is_named_once() {
    let families = FAMILIES.replacen(
        r#"bytes = ["32 * 1024 * 1024"]"#,
        r#"bytes = ["1024 - n"]"#,
        1,
    );
    let (circuit, families, rules) = load(&families);
    let settings = rules.defaults();
    let planner =
        Planner::new(&circuit, &families, &rules, settings, PlanConfig::new(132)).unwrap();
    assert_eq!(planner.plan(1024).unwrap().totals.workspaces, 0);
    assert_eq!(
        planner.plan(4096).unwrap_err().to_string(),
        "families.toml: family `cublaslt_gemm`, workspace `cublaslt_workspace`, node \
         `layer.0.q_proj` at \
         n = 4096: bytes[0]: expression `1024 - n`: negative result in `1024 - n`"
    );
}

#[test]
fn a_family_id_with_a_newline_stays_on_one_line() {
    let families = FAMILIES
        .replacen(r#"id = "cublaslt_gemm""#, r#"id = "cublaslt\ngemm""#, 1)
        .replacen(
            r#"bytes = ["32 * 1024 * 1024"]"#,
            r#"bytes = ["1024 -\n n"]"#,
            1,
        );
    let (circuit, families, rules) = load(&families);
    let settings = rules.defaults();
    let planner =
        Planner::new(&circuit, &families, &rules, settings, PlanConfig::new(132)).unwrap();
    assert_eq!(
        planner.plan(4096).unwrap_err().to_string(),
        "families.toml: family `cublaslt\\ngemm`, workspace `cublaslt_workspace`, node \
         `layer.0.q_proj` at \
         n = 4096: bytes[0]: expression `1024 -\\n n`: negative result in `1024 - n`"
    );
}
