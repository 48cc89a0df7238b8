//! A state declaring both a per-token and a per-sequence size holds their sum, as the circuit
//! format says (`tests/circuits/attention-sinks.toml`: a sliding window beside four sink tokens
//! per sequence): exact bytes in the circuit and in the plan, and the same bytes as the two parts
//! declared as two states.

use circuit_ir::{Circuit, StateKind};
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{PlanConfig, Planner};

const SINKS: &str = include_str!("../circuits/attention-sinks.toml");

const FAMILIES: &str = r#"schema = 1
[[family]]
id = "attn"
kernels = ["fa"]
ops = ["attention"]
[[family]]
id = "cache"
kernels = ["cache"]
ops = ["kv_write"]
"#;

const RULES: &str = r#"schema = 1
[settings]
mode = "decode"
[[rule]]
id = "cache"
pattern = [{ op = "kv_write" }]
kernels = ["cache"]
emitter = "cuda"
[[rule]]
id = "attn"
pattern = [{ op = "attention" }]
kernels = ["fa"]
emitter = "cuda"
"#;

/// The same layers with the state declared as two: the window and the sinks.
fn two_states() -> String {
    let split = SINKS.replace("  per_sequence = \"sinks * 2 * kv_width\"\n", "");
    let sinks = r#"
  [[block.state]]
  id = "sinks"
  per_sequence = "sinks * 2 * kv_width"
  format = "bf16"
  writer = "write"
  readers = ["attend"]
"#;
    split.replace("\n[[output]]", &format!("{sinks}\n[[output]]"))
}

fn load(text: &str) -> Circuit {
    Circuit::from_toml(text, "attention-sinks.toml").unwrap()
}

#[test]
fn a_state_with_both_sizes_is_its_two_parts() {
    let c = load(SINKS);
    let parts: Vec<_> = c
        .states()
        .values()
        .map(|s| (s.id.as_str(), s.kind, s.per_token, s.per_sequence, s.window))
        .collect();
    assert_eq!(
        parts,
        [
            ("layer.0.kv", StateKind::PerToken, 32, 0, Some(8)),
            ("layer.0.kv", StateKind::PerSequence, 0, 128, None),
            ("layer.1.kv", StateKind::PerToken, 32, 0, Some(8)),
            ("layer.1.kv", StateKind::PerSequence, 0, 128, None),
        ]
    );
    let writer = &c.nodes()[c.find_node("layer.0.write").unwrap()];
    assert_eq!(writer.writes.len(), 2);
    let reader = &c.nodes()[c.find_node("layer.0.attend").unwrap()];
    assert_eq!(reader.reads, writer.writes);
}

#[test]
fn it_holds_per_token_times_tokens_plus_per_sequence_times_sequences() {
    let c = load(SINKS);
    // Per layer: 32 bf16 elements per token (64 bytes), 128 per sequence (256 bytes).
    assert_eq!(c.kv_bytes_per_token().unwrap(), 2 * 64);
    assert_eq!(c.fixed_state_bytes(3).unwrap(), 2 * 3 * 256);
    // 100 tokens over 3 sequences: the window holds min(100, 8 x 3) = 24 tokens per layer.
    assert_eq!(c.kv_bytes(100, 3).unwrap(), 2 * 24 * 64);
    assert_eq!(c.state_bytes(100, 3).unwrap(), 2 * (24 * 64 + 3 * 256));
    assert_eq!(c.state_bytes(10, 3).unwrap(), 2 * (10 * 64 + 3 * 256));
    assert_eq!(c.state_bytes(0, 1).unwrap(), 2 * 256);
    let layer0: u64 = c
        .states()
        .values()
        .filter(|s| s.id == "layer.0.kv")
        .map(|s| s.bytes(100, 3).unwrap())
        .sum();
    assert_eq!(layer0, 24 * 64 + 3 * 256);
}

#[test]
fn it_takes_the_bytes_of_its_parts_declared_apart() {
    let one = load(SINKS);
    let two = load(&two_states());
    assert_eq!(two.states().len(), one.states().len());
    for (tokens, sequences) in [
        (0, 1),
        (1, 1),
        (7, 1),
        (100, 3),
        (5000, 64),
        (1 << 40, 1 << 20),
    ] {
        assert_eq!(
            one.state_bytes(tokens, sequences).unwrap(),
            two.state_bytes(tokens, sequences).unwrap(),
            "{tokens} tokens, {sequences} sequences"
        );
        assert_eq!(
            one.kv_bytes(tokens, sequences).unwrap(),
            two.kv_bytes(tokens, sequences).unwrap()
        );
    }
}

#[test]
fn it_round_trips_as_written() {
    let c = load(SINKS);
    let text = c.to_toml().unwrap();
    assert_eq!(text.matches("[[block.state]]").count(), 1);
    assert_eq!(Circuit::from_toml(&text, "again").unwrap(), c);
}

fn planner_for<'a>(
    circuit: &'a Circuit,
    families: &'a Families,
    rules: &'a Rules,
    config: PlanConfig,
) -> Planner<'a> {
    Planner::new(circuit, families, rules, rules.defaults(), config).unwrap()
}

#[test]
fn the_plan_counts_both_parts() {
    let families = Families::from_toml(FAMILIES, "families.toml").unwrap();
    let rules = Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap();
    let c = load(SINKS);
    let config = PlanConfig {
        kv_tokens: 100,
        sequences: 3,
        ..PlanConfig::new(132)
    };
    let planner = planner_for(&c, &families, &rules, config);
    let plan = planner.plan(1).unwrap();
    assert_eq!(plan.totals.states, 2 * (24 * 64 + 3 * 256));
    let table = planner.per_node(1).unwrap();
    let states = |id: &str| {
        let n = c.find_node(id).unwrap();
        table.nodes.iter().find(|r| r.node == n).unwrap().states
    };
    assert_eq!(states("layer.0.write"), 24 * 64 + 3 * 256);
    assert_eq!(states("layer.1.write"), 24 * 64 + 3 * 256);
    assert_eq!(states("layer.0.attend"), 0);

    // Without the window the states are linear in the tokens: 128 bytes per token over
    // 2 x 3 x 256 = 1536 bytes of sinks, so 10_000 bytes beside the rest hold
    // (10_000 - 1536) / 128 = 66 tokens.
    let unwindowed = load(&SINKS.replace("  window = \"8\"\n", ""));
    let config = PlanConfig {
        sequences: 3,
        ..PlanConfig::new(132)
    };
    let planner = planner_for(&unwindowed, &families, &rules, config);
    let fixed = planner.plan(1).unwrap().totals.total;
    assert_eq!(planner.plan(1).unwrap().totals.states, 1536);
    let fit = planner.max_kv_tokens(1, fixed - 1536 + 10_000).unwrap();
    assert_eq!(fit.bytes_per_token, Some(128));
    assert_eq!(fit.max_kv_tokens, Some(66));
}
