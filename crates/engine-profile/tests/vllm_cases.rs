//! The vLLM 0.19 profile against the eight real H100 start-ups of data/vllm/cases.json:
//! weights within 0.5%, activation peak within 10%, KV tokens within 2% of what vLLM printed.
//! TP 2 / PP 2 wait for per-rank circuits (branch `parallel`); the fp8 case for on-the-fly
//! fp8 quantization in circuit-hf: both are asserted to be refused, not faked.

use engine_profile::{EngineError, EngineProfile, ProfileTexts, RunSettings, Verdict};

const GIB: f64 = (1u64 << 30) as f64;

fn profile() -> EngineProfile {
    EngineProfile::from_texts(&ProfileTexts {
        engine: (
            include_str!("../../../engines/vllm-0.19/engine.toml"),
            "engine.toml",
        ),
        families: (
            include_str!("../../../engines/vllm-0.19/families.toml"),
            "families.toml",
        ),
        rules: (
            include_str!("../../../engines/vllm-0.19/rules.toml"),
            "rules.toml",
        ),
    })
    .unwrap()
}

fn cases() -> Vec<serde_json::Value> {
    serde_json::from_str(include_str!("../../../data/vllm/cases.json")).unwrap()
}

fn config(path: &str) -> &'static str {
    match path {
        "models/llama-3.1-8b/config.json" => {
            include_str!("../../../data/models/llama-3.1-8b/config.json")
        }
        "models/qwen2.5-7b/config.json" => {
            include_str!("../../../data/models/qwen2.5-7b/config.json")
        }
        "models/qwen3-30b-a3b/config.json" => {
            include_str!("../../../data/models/qwen3-30b-a3b/config.json")
        }
        "models/deepseek-v2-lite/config.json" => {
            include_str!("../../../data/models/deepseek-v2-lite/config.json")
        }
        "models/mixtral-8x7b-v0.1/config.json" => {
            include_str!("../../../data/models/mixtral-8x7b-v0.1/config.json")
        }
        other => panic!("no config {other}"),
    }
}

fn run_of(case: &serde_json::Value) -> RunSettings {
    RunSettings {
        device: "h100-80gb".to_owned(),
        tensor_parallel_size: case["tensor_parallel_size"].as_u64().unwrap(),
        pipeline_parallel_size: case["pipeline_parallel_size"].as_u64().unwrap(),
        gpu_memory_utilization: case["gpu_memory_utilization"].as_f64().unwrap(),
        max_num_batched_tokens: None,
        max_num_seqs: None,
        max_model_len: case["max_model_len"].as_u64(),
    }
}

fn rel(predicted: f64, printed: f64) -> f64 {
    (predicted - printed) / printed
}

#[test]
fn tp1_bf16_cases_within_the_issue_bounds() {
    let profile = profile();
    let mut checked = 0;
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        if case["tensor_parallel_size"] != 1
            || case["pipeline_parallel_size"] != 1
            || !case["quantization"].is_null()
        {
            continue;
        }
        let path = case["config"].as_str().unwrap();
        let text = config(path);
        let circuit = circuit_hf::from_config_json(text, path).unwrap();
        let startup = profile
            .predict(&circuit, text, path, &run_of(&case))
            .unwrap();
        let w = &startup.workers[0];
        assert_eq!(
            startup.max_num_batched_tokens,
            case["max_num_batched_tokens"].as_u64().unwrap()
        );
        assert_eq!(startup.max_num_seqs, case["max_num_seqs"].as_u64().unwrap());
        let weights = rel(
            w.weights as f64 / GIB,
            case["weights_gib"].as_f64().unwrap(),
        );
        let peak = rel(
            w.activation_peak as f64 / GIB,
            case["activation_peak_gib"].as_f64().unwrap(),
        );
        let tokens = rel(
            startup.kv_cache_tokens as f64,
            case["kv_cache_tokens"].as_f64().unwrap(),
        );
        // Printed GiB have 2 decimals: allow their rounding (0.005 GiB) on top of the bound.
        let round = 0.005 / case["weights_gib"].as_f64().unwrap();
        eprintln!(
            "{name}: weights {weights:+.4} peak {peak:+.4} (forward {} sampler {} persistent {}) tokens {tokens:+.4} ({})",
            w.forward_live, w.sampler_live, w.persistent, startup.kv_cache_tokens
        );
        assert!(
            weights.abs() <= 0.005 + round,
            "{name}: weights {weights:+.4}"
        );
        assert!(peak.abs() <= 0.10, "{name}: activation peak {peak:+.4}");
        assert!(tokens.abs() <= 0.02, "{name}: KV tokens {tokens:+.4}");
        assert_eq!(startup.verdict, Verdict::Starts, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 4, "the four TP 1 bf16 cases");
}

#[test]
fn parallel_and_fp8_cases_are_refused_not_faked() {
    let profile = profile();
    for case in cases() {
        let (tp, pp) = (
            case["tensor_parallel_size"].as_u64().unwrap(),
            case["pipeline_parallel_size"].as_u64().unwrap(),
        );
        if tp == 1 && pp == 1 {
            continue;
        }
        let path = case["config"].as_str().unwrap();
        let text = config(path);
        let circuit = circuit_hf::from_config_json(text, path).unwrap();
        let err = profile
            .predict(&circuit, text, path, &run_of(&case))
            .unwrap_err();
        assert!(matches!(err, EngineError::Unsupported { .. }), "{err}");
    }
}

#[test]
fn bad_engine_file_is_a_typed_error() {
    let err = EngineProfile::from_texts(&ProfileTexts {
        engine: ("schema = 2", "e.toml"),
        families: (
            include_str!("../../../engines/vllm-0.19/families.toml"),
            "families.toml",
        ),
        rules: (
            include_str!("../../../engines/vllm-0.19/rules.toml"),
            "rules.toml",
        ),
    })
    .unwrap_err();
    assert!(matches!(err, EngineError::Toml { .. }));
    assert!(err.to_string().starts_with("e.toml: "), "{err}");
}

#[test]
fn budget_answers_are_consistent_with_predictions() {
    let profile = profile();
    let path = "models/llama-3.1-8b/config.json";
    let text = config(path);
    let circuit = circuit_hf::from_config_json(text, path).unwrap();
    let mut run = RunSettings {
        device: "h100-80gb".to_owned(),
        tensor_parallel_size: 1,
        pipeline_parallel_size: 1,
        gpu_memory_utilization: 0.95,
        max_num_batched_tokens: None,
        max_num_seqs: None,
        max_model_len: Some(8192),
    };
    let answers = profile
        .budget_answers(&circuit, text, path, &run, 100_000)
        .unwrap();
    assert_eq!(answers.largest_max_model_len, 476_032);
    // At the largest max-model-len it starts; one block beyond, it does not.
    run.max_model_len = Some(476_032);
    assert_eq!(
        profile.predict(&circuit, text, path, &run).unwrap().verdict,
        Verdict::Starts
    );
    run.max_model_len = Some(476_033);
    assert!(matches!(
        profile.predict(&circuit, text, path, &run).unwrap().verdict,
        Verdict::MaxModelLenTooLong {
            kv_tokens: 476_032,
            max_model_len: 476_033
        }
    ));
    // The utilization found gives at least the target; a hair less gives fewer tokens.
    run.max_model_len = Some(8192);
    let util = answers.utilization_for_target.unwrap();
    run.gpu_memory_utilization = util;
    assert!(
        profile
            .predict(&circuit, text, path, &run)
            .unwrap()
            .kv_cache_tokens
            >= 100_000
    );
    run.gpu_memory_utilization = util - 1e-4;
    assert!(
        profile
            .predict(&circuit, text, path, &run)
            .unwrap()
            .kv_cache_tokens
            < 100_000
    );
    // A target beyond the device: no utilization.
    let none = profile
        .budget_answers(&circuit, text, path, &run, 10_000_000)
        .unwrap();
    assert_eq!(none.utilization_for_target, None);
}
