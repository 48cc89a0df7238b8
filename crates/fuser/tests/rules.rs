//! Rule files that must be refused, each with its exact message; settings and overrides.

use fuser::{Rules, parse_setting};

const GOOD: &str = r#"schema = 1

[settings]
mode = "prefill"
tp = 1

[[rule]]
id = "norm_gemv"
pattern = [{ op = "rms_norm" }, { op = "linear", node = "q_*" }]
kernels = ["rmsnorm_gemv_bf16"]
emitter = "cuda"
rows = [1, 16]
when = { mode = "decode" }
priority = 100

[[rule]]
id = "linear"
pattern = [{ op = "linear" }]
kernels = ["gemm"]
emitter = "cuda"
"#;

fn error_after(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "no `{from}` in the base rules");
    match Rules::from_toml(&GOOD.replacen(from, to, 1), "rules.toml", None) {
        Ok(_) => panic!("`{from}` -> `{to}` loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_rules_load() {
    let r = Rules::from_toml(GOOD, "rules.toml", None).unwrap();
    assert_eq!(r.rules().len(), 2);
    assert_eq!(r.rules()[0].rows, (1, 16));
    assert_eq!(r.rules()[1].rows, (1, u64::MAX));
    assert_eq!(r.defaults().to_string(), "mode=prefill, tp=1");
    let decode = r.settings([("mode", "decode")], "--set").unwrap();
    assert_eq!(decode.get("mode"), Some("decode"));
    assert_eq!(r.applicable(8, &decode).len(), 2);
    assert_eq!(r.applicable(17, &decode).len(), 1);
    assert_eq!(r.applicable(8, &r.defaults()).len(), 1);
    assert!(r.rules()[0].pattern[1].matches(circuit_ir::Op::Linear, "q_proj"));
    assert!(!r.rules()[0].pattern[1].matches(circuit_ir::Op::Linear, "k_proj"));
}

#[test]
fn unknown_key() {
    assert_eq!(
        error_after("priority = 100", "priorty = 100"),
        "rules.toml: line 14, column 1: unknown field `priorty`, expected one of `id`, `pattern`, `kernels`, `emitter`, `rows`, `when`, `priority`"
    );
    assert_eq!(
        error_after("{ op = \"rms_norm\" }", "{ op = \"rms_norm\", kep = true }"),
        "rules.toml: line 9, column 31: unknown field `kep`, expected one of `op`, `node`, `keep`"
    );
}

#[test]
fn unknown_schema() {
    assert_eq!(
        error_after("schema = 1", "schema = 3"),
        "rules.toml: unknown schema 3; this version reads schema = 1"
    );
}

#[test]
fn duplicate_id() {
    assert_eq!(
        error_after("id = \"linear\"", "id = \"norm_gemv\""),
        "rules.toml: rule `norm_gemv`: duplicate rule id `norm_gemv`"
    );
}

#[test]
fn bad_rows() {
    assert_eq!(
        error_after("rows = [1, 16]", "rows = [0, 16]"),
        "rules.toml: rule `norm_gemv`: rows = [0, 16] is empty or starts at 0; write [lo, hi] with 1 <= lo <= hi"
    );
    assert_eq!(
        error_after("rows = [1, 16]", "rows = [17, 16]"),
        "rules.toml: rule `norm_gemv`: rows = [17, 16] is empty or starts at 0; write [lo, hi] with 1 <= lo <= hi"
    );
    assert!(error_after("rows = [1, 16]", "rows = [-1, 16]").starts_with("rules.toml: line 12"));
}

#[test]
fn empty_pattern() {
    assert_eq!(
        error_after("pattern = [{ op = \"linear\" }]", "pattern = []"),
        "rules.toml: rule `linear`: empty pattern; a rule fuses at least one op"
    );
}

#[test]
fn unknown_op() {
    assert!(
        error_after("op = \"rms_norm\"", "op = \"rmsnorm\"").starts_with(
            "rules.toml: rule `norm_gemv`: pattern[0]: unknown op `rmsnorm` (known: embed, rms_norm,"
        )
    );
}

#[test]
fn undeclared_when_key() {
    assert_eq!(
        error_after(
            "when = { mode = \"decode\" }",
            "when = { phase = \"decode\" }"
        ),
        "rules.toml: rule `norm_gemv`: when: setting `phase` is not declared in [settings] (declared: mode, tp)"
    );
}

#[test]
fn undeclared_set_key() {
    let r = Rules::from_toml(GOOD, "rules.toml", None).unwrap();
    assert_eq!(
        r.settings([("moed", "decode")], "--set")
            .unwrap_err()
            .to_string(),
        "--set: setting `moed` is not declared in [settings] (declared: mode, tp)"
    );
    assert_eq!(parse_setting("mode=decode").unwrap(), ("mode", "decode"));
    assert_eq!(
        parse_setting("mode").unwrap_err().to_string(),
        "`mode` is not KEY=VALUE"
    );
}

#[test]
fn empty_emitter() {
    assert_eq!(
        error_after(
            "kernels = [\"gemm\"]\nemitter = \"cuda\"",
            "kernels = [\"gemm\"]\nemitter = \"\""
        ),
        "rules.toml: rule `linear`: `emitter` is empty"
    );
}

#[test]
fn declarations_round_trip() {
    let r = Rules::from_toml(GOOD, "rules.toml", None).unwrap();
    let again = Rules::from_toml(&r.to_toml().unwrap(), "written", None).unwrap();
    assert_eq!(again, r);
}

#[test]
fn rows_are_exactly_two_whole_numbers() {
    // `[1, 2, 4]` was read as `[1, 2]`, and any junk after two numbers was dropped unread.
    assert_eq!(
        error_after("rows = [1, 16]", "rows = [1, 2, 4]"),
        "rules.toml: line 12, column 8: rows has 3 elements; write [lo, hi], two whole numbers"
    );
    assert_eq!(
        error_after("rows = [1, 16]", "rows = [1, 16, \"junk\"]"),
        "rules.toml: line 12, column 16: invalid type: string \"junk\", expected u64"
    );
    assert_eq!(
        error_after("rows = [1, 16]", "rows = [16]"),
        "rules.toml: line 12, column 8: rows has 1 element; write [lo, hi], two whole numbers"
    );
    assert_eq!(
        error_after("rows = [1, 16]", "rows = []"),
        "rules.toml: line 12, column 8: rows has 0 elements; write [lo, hi], two whole numbers"
    );
}

#[test]
fn a_set_value_a_setting_does_not_allow() {
    // Without declared values, a setting some `when` tests allows its default and the values
    // tested: `decod` matched no rule and planned as if every decode rule were absent.
    let r = Rules::from_toml(GOOD, "rules.toml", None).unwrap();
    assert_eq!(
        r.settings([("mode", "decod")], "--set")
            .unwrap_err()
            .to_string(),
        "--set: setting `mode` = `decod` is neither its default nor a value a rule's `when` tests (allowed: decode, prefill); a typo would match no rule. To allow it, list the values: mode = { default = \"prefill\", values = [...] }"
    );
    // A setting no `when` tests takes any value (every value plans alike).
    assert_eq!(
        r.settings([("tp", "8")], "--set").unwrap().to_string(),
        "mode=prefill, tp=8"
    );
    // Declared values are the ones allowed, in `--set` and in `when`.
    let declared = GOOD.replacen(
        "mode = \"prefill\"",
        "mode = { default = \"prefill\", values = [\"prefill\", \"decode\", \"chunked\"] }",
        1,
    );
    let r = Rules::from_toml(&declared, "rules.toml", None).unwrap();
    assert_eq!(
        r.settings([("mode", "chunked")], "--set")
            .unwrap()
            .to_string(),
        "mode=chunked, tp=1"
    );
    assert_eq!(
        r.settings([("mode", "decod")], "--set")
            .unwrap_err()
            .to_string(),
        "--set: setting `mode` has no value `decod` (its values: chunked, decode, prefill)"
    );
    assert_eq!(
        Rules::from_toml(
            &declared.replacen(
                "when = { mode = \"decode\" }",
                "when = { mode = \"decod\" }",
                1
            ),
            "rules.toml",
            None
        )
        .unwrap_err()
        .to_string(),
        "rules.toml: rule `norm_gemv`: when: setting `mode` has no value `decod` (its values: chunked, decode, prefill)"
    );
    assert_eq!(
        Rules::from_toml(
            &declared.replacen("default = \"prefill\"", "default = \"prefil\"", 1),
            "rules.toml",
            None
        )
        .unwrap_err()
        .to_string(),
        "rules.toml: [settings]: setting `mode`: default `prefil` is not among its values (chunked, decode, prefill)"
    );
    // Declared values survive a round trip through TOML.
    let again = Rules::from_toml(&r.to_toml().unwrap(), "again.toml", None).unwrap();
    assert_eq!(again, r);
    assert!(
        again.settings([("mode", "decod")], "--set").is_err(),
        "{}",
        r.to_toml().unwrap()
    );
}
