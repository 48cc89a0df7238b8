//! `cargo xtask plan --engine vllm` and `cargo xtask bench engine`: loads the engine folder
//! (`engines/<name>-<version>/`, embedded), imports the config, asks engine-profile for the
//! start-up and prints what the engine would print. I/O and flags only; the model is in the
//! engine-profile crate and the engine folder.

use std::path::Path;

use engine_profile::{EngineProfile, ProfileTexts, RunSettings, Startup, Verdict};

use crate::CliError;
use crate::out::outln;
use crate::plan::{OutputFormat, PlanArgs, read_file};

const GIB: f64 = (1u64 << 30) as f64;

/// vLLM's own flags (`vllm serve`), taken by `cargo xtask plan --engine vllm`.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Predict an engine's start-up instead of the abstract plan: `vllm` (vLLM 0.19.0).
    ///
    /// Example: --engine vllm
    #[arg(long, value_name = "NAME", requires = "hf_config")]
    pub engine: Option<String>,

    /// With --engine: fraction of the device's total the engine may use.
    ///
    /// Example: --gpu-memory-utilization 0.85
    #[arg(long, value_name = "FRACTION", default_value_t = 0.9)]
    pub gpu_memory_utilization: f64,

    /// With --engine: batched tokens per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-batched-tokens 16384
    #[arg(long, value_name = "TOKENS")]
    pub max_num_batched_tokens: Option<u64>,

    /// With --engine: sequences per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-seqs 256
    #[arg(long, value_name = "SEQS")]
    pub max_num_seqs: Option<u64>,

    /// With --engine: on-the-fly quantization (none; fp8 is not modelled yet).
    ///
    /// Example: --quantization none
    #[arg(long, value_name = "METHOD", default_value = "none")]
    pub quantization: String,
}

fn vllm_profile() -> Result<EngineProfile, CliError> {
    Ok(EngineProfile::from_texts(&ProfileTexts {
        engine: (
            include_str!("../../engines/vllm-0.19/engine.toml"),
            "engines/vllm-0.19/engine.toml",
        ),
        families: (
            include_str!("../../engines/vllm-0.19/families.toml"),
            "engines/vllm-0.19/families.toml",
        ),
        rules: (
            include_str!("../../engines/vllm-0.19/rules.toml"),
            "engines/vllm-0.19/rules.toml",
        ),
    })?)
}

fn profile_named(name: &str) -> Result<EngineProfile, CliError> {
    match name {
        "vllm" | "vllm-0.19" => vllm_profile(),
        other => Err(format!("--engine {other}: known engines: vllm (0.19.0)").into()),
    }
}

/// `cargo xtask plan --hf-config FILE --engine NAME ...`.
pub fn run_plan(args: &PlanArgs, engine: &EngineArgs, name: &str) -> Result<(), CliError> {
    if engine.quantization != "none" {
        return Err(format!(
            "--quantization {}: on-the-fly quantization is not modelled by the engine profile yet",
            engine.quantization
        )
        .into());
    }
    let profile = profile_named(name)?;
    let path = args
        .hf_config
        .as_deref()
        .ok_or("--engine needs --hf-config")?;
    let origin = path.display().to_string();
    let text = read_file(path)?;
    let circuit = circuit_hf::from_config_json(&text, &origin)?;
    let run = RunSettings {
        device: "h100-80gb".to_owned(),
        tensor_parallel_size: args.parallel.tensor_parallel_size,
        pipeline_parallel_size: args.parallel.pipeline_parallel_size,
        gpu_memory_utilization: engine.gpu_memory_utilization,
        max_num_batched_tokens: engine.max_num_batched_tokens,
        max_num_seqs: engine.max_num_seqs,
        max_model_len: args.max_model_len,
    };
    let startup = profile.predict(&circuit, &text, &origin, &run)?;
    match args.format {
        OutputFormat::Table => print_table(&origin, &startup)?,
        OutputFormat::Json => outln!("{}", serde_json::to_string_pretty(&json(&startup))?),
        OutputFormat::Jsonl | OutputFormat::Csv => {
            return Err(one_record(args.format));
        }
    }
    Ok(())
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / GIB)
}

fn print_table(origin: &str, s: &Startup) -> Result<(), CliError> {
    outln!("engine    {} {}", s.engine, s.version);
    outln!("config    {origin}");
    outln!(
        "run       max_num_batched_tokens {}, max_num_seqs {}, max_model_len {}",
        s.max_num_batched_tokens,
        s.max_num_seqs,
        s.max_model_len
    );
    outln!(
        "memory    total {} (as CUDA reports), requested {}",
        gib(s.device_total),
        gib(s.requested)
    );
    outln!();
    outln!("    rank  stage     weights  activation peak   non-torch    KV cache");
    for w in &s.workers {
        outln!(
            "{:>8} {:>6} {:>11} {:>16} {:>11} {:>11}",
            w.rank,
            w.pp_stage,
            gib(w.weights),
            gib(w.activation_peak),
            gib(w.non_torch),
            gib(w.kv_cache)
        );
    }
    outln!();
    outln!("GPU KV cache size: {} tokens", s.kv_cache_tokens);
    outln!(
        "Maximum concurrency for {} tokens per request: {:.2}x",
        s.max_model_len,
        s.max_concurrency
    );
    outln!(
        "CUDA graph estimate: not modelled (printed by vLLM 0.19, not subtracted from the KV cache)"
    );
    match &s.verdict {
        Verdict::Starts => outln!("verdict   starts"),
        Verdict::NoKvMemory { short_by } => outln!(
            "verdict   does not start: weights, activation peak and non-torch exceed the requested memory by {}",
            gib(*short_by)
        ),
        Verdict::MaxModelLenTooLong {
            kv_tokens,
            max_model_len,
        } => outln!(
            "verdict   does not start: the KV cache holds {kv_tokens} tokens, fewer than max_model_len {max_model_len}"
        ),
    }
    Ok(())
}

fn json(s: &Startup) -> serde_json::Value {
    serde_json::json!({
        "engine": {
            "name": s.engine,
            "version": s.version,
            "workers": s.workers.iter().map(|w| serde_json::json!({
                "rank": w.rank,
                "pp_stage": w.pp_stage,
                "weights": w.weights,
                "activation_peak": w.activation_peak,
                "non_torch": w.non_torch,
                "kv_cache": w.kv_cache,
            })).collect::<Vec<_>>(),
            "kv_cache_tokens": s.kv_cache_tokens,
            "max_concurrency": s.max_concurrency,
            "starts": s.verdict == Verdict::Starts,
        }
    })
}

/// `cargo xtask bench engine`: predicted vs printed on data/vllm/cases.json.
pub fn bench() -> Result<(), CliError> {
    let profile = vllm_profile()?;
    let cases_path = Path::new("data/vllm/cases.json");
    let cases: Vec<serde_json::Value> = serde_json::from_str(&read_file(cases_path)?)?;
    outln!(
        "{:<58} {:>17} {:>17} {:>23}",
        "case",
        "weights GiB",
        "act. peak GiB",
        "KV tokens"
    );
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let config = case["config"].as_str().ok_or("case without config")?;
        let path = Path::new("data").join(config);
        let text = read_file(&path)?;
        let origin = path.display().to_string();
        let circuit = circuit_hf::from_config_json(&text, &origin)?;
        let field = |k: &str| case[k].as_u64().ok_or(format!("{name}: no {k}"));
        if !case["quantization"].is_null() {
            outln!("{name:<58} pending: on-the-fly --quantization fp8 not modelled");
            continue;
        }
        let run = RunSettings {
            device: "h100-80gb".to_owned(),
            tensor_parallel_size: field("tensor_parallel_size")?,
            pipeline_parallel_size: field("pipeline_parallel_size")?,
            gpu_memory_utilization: case["gpu_memory_utilization"].as_f64().unwrap_or(0.9),
            max_num_batched_tokens: None,
            max_num_seqs: None,
            max_model_len: case["max_model_len"].as_u64(),
        };
        match profile.predict(&circuit, &text, &origin, &run) {
            Ok(s) => {
                let w = &s.workers[0];
                let printed = |k: &str| case[k].as_f64().unwrap_or(f64::NAN);
                let cell = |p: f64, q: f64, d: usize| {
                    format!("{p:.d$}/{q:.d$} {:+.2}%", (p - q) / q * 100.0)
                };
                outln!(
                    "{name:<58} {:>17} {:>17} {:>23}",
                    cell(w.weights as f64 / GIB, printed("weights_gib"), 2),
                    cell(
                        w.activation_peak as f64 / GIB,
                        printed("activation_peak_gib"),
                        2
                    ),
                    cell(s.kv_cache_tokens as f64, printed("kv_cache_tokens"), 0),
                );
            }
            Err(e) => outln!("{name:<58} pending: {e}"),
        }
    }
    Ok(())
}

/// `--format jsonl` and `csv` are one record per row of a sweep; an engine start-up is one
/// record.
pub fn one_record(format: OutputFormat) -> CliError {
    format!(
        "--format {}: JSON lines and CSV are for sweeps of --rows; this report is one record: give --format json or table",
        match format {
            OutputFormat::Jsonl => "jsonl",
            _ => "csv",
        }
    )
    .into()
}
