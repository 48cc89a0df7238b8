//! `cargo xtask check-log LOG`: reads an engine's start-up log (`inputs/log.rs`), takes the
//! release from its banner, the run's flags from its non-default args (read as a serve line is,
//! `inputs/serve_line.rs`), the model they name (`inputs/model.rs`) and the device it printed,
//! predicts that start-up (`engine.rs`) and sets every figure the log printed beside the
//! prediction with its error (`render/check_log.rs`).
//!
//! Invariants: the settings come from the log alone (or the flags that stand in for what it
//! does not print: `--hf-config`, `--device`, `--engine`); the prediction is the one `cargo
//! xtask plan` makes with those settings; an error is computed as `cargo xtask bench engine`
//! computes it, (predicted - printed) / printed, from the unrounded prediction; a log the
//! command cannot read, or a release, model or device it does not model, is one line.

use std::path::PathBuf;

use clap::Parser;

use crate::CliError;
use crate::inputs::files::{self, Input};
use crate::inputs::log::{self, Figure, LogFormat, Py, StartupLog};
use crate::inputs::model::{ModelSources, resolve};
use crate::inputs::serve_line::{PlanCommand, ServeLine, read_flags};
use crate::inputs::serve_table::{ServeTable, Takes};
use crate::inputs::settings::import_options;
use crate::render::check_log::{Predicted, Report, Row};

/// Arguments of `cargo xtask check-log`.
#[derive(Debug, clap::Args)]
pub struct CheckLogArgs {
    /// A vLLM or SGLang start-up log (DEBUG or INFO level; its first 64 MiB are read).
    ///
    /// Example: check-log vllm.log
    #[arg(value_name = "LOG")]
    pub log: PathBuf,

    /// The model's config.json [default: the model the log's non-default args name, found
    /// as a local folder, in the Hugging Face cache or as the repository's copy].
    ///
    /// Example: --hf-config data/models/llama-3.1-8b/config.json
    #[arg(long, value_name = "FILE")]
    pub hf_config: Option<PathBuf>,

    /// The device [default: the one the log names: its CUDA total (DEBUG) or the fused-MoE
    /// config's device name; an SGLang log names none].
    ///
    /// Example: --device h100-sxm
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// The engine release [default: the one the log's banner names; an SGLang log names none:
    /// give sglang==X].
    ///
    /// Example: --engine vllm==0.19.0
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,

    /// Output: a table, or one JSON object (docs/output.md).
    ///
    /// Example: --format json
    #[arg(long, value_enum, default_value_t = CheckFormat::Table)]
    pub format: CheckFormat,
}

/// How `check-log` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// Aligned columns.
    Table,
    /// One JSON object.
    Json,
}

/// What the settings and the device do not come from the log alone.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub hf_config: Option<PathBuf>,
    pub device: Option<String>,
    pub engine: Option<String>,
}

/// `cargo xtask check-log`.
pub fn run(args: &CheckLogArgs) -> Result<(), CliError> {
    let (text, truncated) = files::read_prefix(&args.log, Input::Log)?;
    let overrides = Overrides {
        hf_config: args.hf_config.clone(),
        device: args.device.clone(),
        engine: args.engine.clone(),
    };
    let shown = args.log.display().to_string();
    let sources = ModelSources::from_env(&[]);
    let mut report = match crate::sglang_log::check_if_sglang(&text, &shown, &overrides, &sources) {
        Some(sglang) => sglang?,
        None => check(&text, &shown, &overrides, &sources)?,
    };
    report.truncated = truncated;
    match args.format {
        CheckFormat::Table => crate::render::check_log::print(&report),
        CheckFormat::Json => crate::render::check_log::print_json(&report),
    }
}

/// The error of a prediction against a printed figure, in percent, as `cargo xtask bench
/// engine` reports it.
pub fn error_percent(predicted: f64, printed: f64) -> f64 {
    (predicted - printed) / printed * 100.0
}

const GIB: f64 = (1u64 << 30) as f64;

/// Checks the log `text` (named `shown` in messages).
pub fn check(
    text: &str,
    shown: &str,
    overrides: &Overrides,
    sources: &ModelSources,
) -> Result<Report, CliError> {
    // The release: the banner's, or --engine's.
    let banner = log::banner_release(text);
    let (spec, banner_line) = match (&overrides.engine, &banner) {
        (Some(e), _) => (e.clone(), None),
        (None, Some((v, line))) => (format!("vllm=={v}"), Some(*line)),
        (None, None) => {
            return Err(format!(
                "{shown}: no vLLM release found (the banner `vLLM server version X`, its logo's `version X` line, or `vLLM API server version X`); give --engine vllm==X"
            )
            .into());
        }
    };
    let release = engines::resolve(&spec).map_err(|e| match (&e, &banner) {
        (engines::EnginesError::UnknownRelease { known, .. }, Some((v, line)))
            if overrides.engine.is_none() =>
        {
            format!(
                "{shown}: the log is vLLM {v} (line {line}), a release the planner does not model; the releases modelled are {known}"
            )
        }
        _ => format!("{shown}: {e}"),
    })?;
    // The release exactly (a folder may stand for several): the banner's or --engine's.
    let version = spec
        .split_once("==")
        .map_or(release.version.clone(), |(_, v)| v.trim().to_owned());
    let format =
        LogFormat::of_folder(release.folder, &version).map_err(|e| format!("{shown}: {e}"))?;
    let table =
        ServeTable::of_folder(release.folder, &version).map_err(|e| format!("{shown}: {e}"))?;
    let printed = log::read(text, &format);
    let figures = printed
        .printed
        .iter()
        .filter(|p| !matches!(p.figure, Figure::Args | Figure::Architecture))
        .count();
    if figures == 0 {
        return Err(format!(
            "{shown}: none of the start-up lines {} lists (a log cut before the model loaded, or another engine's?)",
            format.origin
        )
        .into());
    }
    // The run's flags, from the non-default args, read as a serve line is.
    let args_line = printed.first(Figure::Args).ok_or_else(|| {
        format!(
            "{shown}: no `non-default args:` line ({}), so the run's flags are unknown",
            format.printing(Figure::Args).map_or("", |p| p.at.as_str())
        )
    })?;
    let tokens = arg_words(&args_line.text, &table)
        .map_err(|e| format!("{shown} line {}: the non-default args: {e}", args_line.line))?;
    let mut line = ServeLine {
        engine: table.engine.clone(),
        release: table.release.clone(),
        version: table.version.clone(),
        ..ServeLine::default()
    };
    read_flags(&tokens, false, &table, &mut line)
        .map_err(|e| format!("{shown} line {}: the non-default args: {e}", args_line.line))?;
    let (config, place) = match &overrides.hf_config {
        Some(path) => (path.clone(), "--hf-config".to_owned()),
        None => {
            let found = resolve(
                &line.model,
                line.revision.as_deref(),
                line.download_dir.as_deref(),
                sources,
            )
            .map_err(|e| format!("{shown}: {e}"))?;
            (found.config, found.place)
        }
    };
    let (device, device_from) = device_of(&printed, overrides.device.as_deref(), shown)?;
    let mut words: Vec<String> = vec![
        "plan".into(),
        "--hf-config".into(),
        config.display().to_string(),
        "--engine".into(),
        format!("{}=={version}", release.engine),
        "--device".into(),
        device.clone(),
    ];
    words.extend(line.flags.iter().cloned());
    let plan = PlanCommand::try_parse_from(&words)
        .map_err(|e| {
            let text = e.to_string();
            format!(
                "{shown}: the run's flags: {}",
                text.lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
            )
        })?
        .args;
    let name = plan.engine.engine.clone().unwrap_or_default();
    let prediction =
        crate::engine::predict_run(&plan, &plan.engine, &name, import_options(&plan)?)?;
    let tp = plan.parallel.tensor_parallel_size;
    let pp = plan.parallel.pipeline_parallel_size;
    let mut report = Report {
        log: shown.to_owned(),
        lines: printed.lines,
        truncated: false,
        engine: release.engine.clone(),
        release: version.clone(),
        folder: release.folder.to_owned(),
        banner_line,
        line,
        config: config.display().to_string(),
        place,
        device,
        device_from,
        rows: Vec::new(),
        printed_only: Vec::new(),
        not_printed: Vec::new(),
        notes: Vec::new(),
        startup: prediction.startup,
        labels: Vec::new(),
    };
    compare(
        &printed,
        &format,
        &prediction.run.model.architecture,
        (tp, pp),
        &mut report,
    );
    Ok(report)
}

/// The non-default args dict (`{'model_tag': 'm', 'max_model_len': 8192, ...}`) as the
/// command-line words that give it: each key is its flag's destination (`max_model_len` is
/// `--max-model-len`); `model` is what the engine served (`model_tag`, the positional it came
/// from, repeats it, or is ignored by a launcher that reads `--model` only).
fn arg_words(text: &str, table: &ServeTable) -> Result<Vec<String>, String> {
    let Py::Dict(pairs) = log::parse_py(text)? else {
        return Err("not a dict".into());
    };
    let mut words = Vec::new();
    for (key, value) in pairs {
        let Py::Str(key) = key else {
            return Err(format!("a key {key:?} that is not a name"));
        };
        if key == "model_tag" {
            continue;
        }
        let flag_name = format!("--{}", key.replace('_', "-"));
        let Some((long, flag)) = table.flag(&flag_name) else {
            return Err(format!(
                "`{key}` is not a flag of {} (a log of another release? give --engine)",
                table.release
            ));
        };
        match (flag.takes, &value) {
            (_, Py::None) => {}
            (Takes::Bool, Py::Bool(true)) | (Takes::None, Py::Bool(true)) => {
                words.push(long.to_owned());
            }
            (Takes::Bool, Py::Bool(false)) => {
                words.push(format!("--no-{}", long.trim_start_matches("--")));
            }
            (Takes::None, Py::Bool(false)) => {}
            (Takes::Bool | Takes::None, other) => {
                return Err(format!("`{key}` is {other:?}, not True or False"));
            }
            (Takes::Optional, Py::Bool(true)) => words.push(long.to_owned()),
            (_, v) => {
                words.push(long.to_owned());
                words.extend(v.words());
            }
        }
    }
    Ok(words)
}

/// The device: `--device`, or the one the log names (the fused-MoE config's device name, or
/// the CUDA total a DEBUG log prints, matched against the device table's).
fn device_of(
    log: &StartupLog,
    given: Option<&str>,
    shown: &str,
) -> Result<(String, String), CliError> {
    let table = kernel_families::Devices::builtin()?;
    if let Some(name) = given {
        return Ok((table.get(name)?.name.clone(), "--device".to_owned()));
    }
    if let Some(p) = log.first(Figure::DeviceName) {
        let found = table.all().iter().find(|d| {
            d.product
                .as_deref()
                .is_some_and(|product| product.replace(' ', "_").eq_ignore_ascii_case(&p.text))
        });
        if let Some(d) = found {
            return Ok((
                d.name.clone(),
                format!("device_name={} (line {})", p.text, p.line),
            ));
        }
    }
    if let Some(p) = log.first(Figure::DeviceTotal) {
        let printed: f64 = p.text.parse().map_err(|_| {
            format!(
                "{shown} line {}: total_memory={} is not a number",
                p.line, p.text
            )
        })?;
        let hundredths = |x: f64| (x * 100.0).round() as i64;
        let matches: Vec<&kernel_families::Device> = table
            .all()
            .iter()
            .filter(|d| {
                d.cuda_total_bytes
                    .is_some_and(|t| hundredths(t as f64 / GIB) == hundredths(printed))
            })
            .collect();
        return match matches.as_slice() {
            [d] => Ok((
                d.name.clone(),
                format!("total_memory={}GiB (line {})", p.text, p.line),
            )),
            [] => Err(format!(
                "{shown} line {}: total_memory={}GiB is the CUDA total of no device the table knows it for; give --device NAME",
                p.line, p.text
            )
            .into()),
            several => Err(format!(
                "{shown} line {}: total_memory={}GiB is the CUDA total of {}; give --device NAME",
                p.line,
                p.text,
                several
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
            .into()),
        };
    }
    Err(format!(
        "{shown}: the log names no device (a DEBUG log prints its CUDA total, an MoE model's its name); give --device NAME"
    )
    .into())
}

/// The rank a process name gives (`Worker_PP1_TP0` is stage 1, TP rank 0; vLLM 0.19
/// v1/executor/multiproc_executor.py:978-993), or rank 0 for a world of one worker.
pub(crate) fn rank_of(process: Option<&str>, tp: u64, pp: u64) -> Option<u64> {
    let name = process?;
    let part = |prefix: &str| {
        name.split(['_', ' '])
            .find_map(|t| t.strip_prefix(prefix).and_then(|n| n.parse::<u64>().ok()))
    };
    let (tp_rank, pp_rank) = (part("TP"), part("PP"));
    if tp_rank.is_none() && pp_rank.is_none() {
        return (tp * pp == 1).then_some(0);
    }
    Some(pp_rank.unwrap_or(0) * tp + tp_rank.unwrap_or(0))
}

/// Each printed figure beside its prediction.
fn compare(
    log: &StartupLog,
    format: &LogFormat,
    architecture: &str,
    (tp, pp): (u64, u64),
    report: &mut Report,
) {
    use Figure::*;
    let s = &report.startup;
    for p in &log.printed {
        let engine_wide = matches!(
            p.figure,
            Args | Architecture
                | DeviceName
                | MaxNumBatchedTokens
                | MaxNumSeqs
                | MaxModelLen
                | KvCacheTokens
                | MaxConcurrency
        );
        // Every worker is given the same device and request: a figure of a worker not yet
        // named by rank is any worker's.
        let same_on_all = matches!(p.figure, DeviceTotal | Requested);
        let rank = if engine_wide {
            None
        } else {
            match rank_of(p.process.as_deref(), tp, pp) {
                Some(r) => Some(r),
                None if same_on_all => Some(0),
                None => {
                    report.notes.push(format!(
                        "{} on line {} is set aside: printed by {}, whose rank the log does not say",
                        p.figure.name(),
                        p.line,
                        p.process.as_deref().unwrap_or("a process")
                    ));
                    continue;
                }
            }
        };
        let worker = rank.and_then(|r| s.workers.iter().find(|w| w.rank == r));
        if rank.is_some() && worker.is_none() {
            report.notes.push(format!(
                "{} on line {} is set aside: printed by {}, a rank the layout does not have",
                p.figure.name(),
                p.line,
                p.process.as_deref().unwrap_or("?")
            ));
            continue;
        }
        let predicted = match (p.figure, worker) {
            (Args | DeviceName, _) => continue,
            (CudaGraphActual | AvailableMemory | KCache | VCache, _) => {
                report.printed_only.push(p.clone());
                continue;
            }
            (Architecture, _) => Predicted::Text(architecture.to_owned()),
            (MaxNumBatchedTokens, _) => Predicted::Count(s.max_num_batched_tokens),
            (MaxNumSeqs, _) => Predicted::Count(s.max_num_seqs),
            (MaxModelLen, _) => Predicted::Count(s.max_model_len),
            (KvCacheTokens, _) => Predicted::Count(s.kv_cache_tokens),
            (MaxConcurrency, _) => Predicted::Ratio(s.max_concurrency),
            (DeviceTotal, _) => Predicted::Bytes(s.device_total),
            (Requested, _) => Predicted::Bytes(s.requested),
            (_, None) => continue,
            (Weights, Some(w)) => Predicted::Bytes(w.weights),
            (ActivationPeak, Some(w)) => Predicted::Bytes(w.activation_peak),
            (NonTorch, Some(w)) => Predicted::Bytes(w.non_torch),
            (NonKv, Some(w)) => Predicted::Bytes(
                w.weights
                    .saturating_add(w.activation_peak)
                    .saturating_add(w.non_torch),
            ),
            (KvCache, Some(w)) => Predicted::Bytes(w.kv_cache),
            (CudaGraphEstimate, Some(w)) => Predicted::Bytes(w.cuda_graph.total),
            (CudaGraphCaptures, Some(w)) => Predicted::Text(
                w.cuda_graph
                    .captures
                    .iter()
                    .map(|(m, n)| format!("{m}={n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        };
        let number = |t: &str| t.replace(',', "").parse::<f64>().ok();
        let error = match &predicted {
            Predicted::Bytes(b) => number(&p.text).map(|q| error_percent(*b as f64 / GIB, q)),
            Predicted::Count(n) => number(&p.text).map(|q| error_percent(*n as f64, q)),
            Predicted::Ratio(x) => number(&p.text).map(|q| error_percent(*x, q)),
            Predicted::Text(_) => None,
        }
        .filter(|e| e.is_finite());
        report.rows.push(Row {
            figure: p.figure,
            rank,
            printed: p.clone(),
            predicted,
            error,
        });
    }
    for figure in [
        Weights,
        ActivationPeak,
        NonTorch,
        KvCache,
        KvCacheTokens,
        MaxConcurrency,
        CudaGraphEstimate,
    ] {
        if log.first(figure).is_none() {
            report.not_printed.push((
                figure,
                format.printing(figure).and_then(|p| p.level.clone()),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> PathBuf {
        crate::inputs::model::repository_data()
    }

    fn sources() -> ModelSources {
        ModelSources {
            cwd: std::env::temp_dir(),
            hub: None,
            data: data(),
        }
    }

    fn cases() -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(data().join("vllm/cases.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn log_of(case: &serde_json::Value) -> String {
        case["log_lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Each shared case, read from its log lines alone, gives the errors `cargo xtask bench
    /// engine` reports from the case's fields: the same prediction, the same printed figures.
    #[test]
    fn check_log_on_each_case_reproduces_the_bench_errors() {
        let devices = kernel_families::Devices::builtin().unwrap();
        for case in cases() {
            let name = case["name"].as_str().unwrap();
            let report = check(&log_of(&case), name, &Overrides::default(), &sources())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(report.release, "0.19.0", "{name}");
            assert_eq!(report.device, "h100-sxm", "{name}");
            assert_eq!(
                report.config,
                data()
                    .join(case["config"].as_str().unwrap())
                    .display()
                    .to_string(),
                "{name}"
            );
            let (release, bench) = crate::engine::case_startup(&case, devices, &data()).unwrap();
            assert_eq!(release, "0.19.0", "{name}");
            let tp = case["tensor_parallel_size"].as_u64().unwrap();
            // The prediction itself is bench's (the settings read from the log are the case's).
            assert_eq!(
                report.startup.kv_cache_tokens, bench.kv_cache_tokens,
                "{name}"
            );
            let err = |figure: Figure, stage: u64| -> f64 {
                let row = report
                    .rows
                    .iter()
                    .find(|r| r.figure == figure && r.rank.is_none_or(|k| k / tp == stage))
                    .unwrap_or_else(|| panic!("{name}: no {figure:?} of stage {stage}"));
                row.error.unwrap()
            };
            let w = &bench.workers[0];
            let gib = |b: u64| b as f64 / GIB;
            let f = |k: &str| case[k].as_f64().unwrap();
            assert_eq!(
                err(Figure::Weights, 0),
                error_percent(gib(w.weights), f("weights_gib")),
                "{name}"
            );
            assert_eq!(
                err(Figure::ActivationPeak, 0),
                error_percent(gib(w.activation_peak), f("activation_peak_gib")),
                "{name}"
            );
            assert_eq!(
                err(Figure::KvCacheTokens, 0),
                error_percent(bench.kv_cache_tokens as f64, f("kv_cache_tokens")),
                "{name}"
            );
            assert_eq!(
                err(Figure::CudaGraphEstimate, 0),
                error_percent(gib(w.cuda_graph.total), f("cuda_graph_estimated_gib")),
                "{name}"
            );
            for (stage, p) in case["per_worker_profile"]
                .as_array()
                .into_iter()
                .flatten()
                .zip(0u64..)
                .map(|(p, s)| (s, p))
            {
                let w = bench.workers.iter().find(|w| w.rank == stage * tp).unwrap();
                assert_eq!(
                    err(Figure::ActivationPeak, stage),
                    error_percent(
                        gib(w.activation_peak),
                        p["activation_peak_gib"].as_f64().unwrap()
                    ),
                    "{name} stage {stage}"
                );
                assert_eq!(
                    err(Figure::Weights, stage),
                    error_percent(gib(w.weights), p["weights_gib"].as_f64().unwrap()),
                    "{name} stage {stage}"
                );
            }
        }
    }

    /// The shared cases of vLLM 0.10.1.1 on an A100 (data/vllm/cases-versions.json): its log
    /// lines are read (engines/vllm-0.10.1/log.toml) and so is its command line
    /// (engines/vllm-0.10.1/serve_flags.toml), but the cases' `non-default args` line is cut
    /// short, so they are refused in one line saying so.
    #[test]
    fn a_case_whose_args_line_is_cut_short_is_one_line() {
        let text = std::fs::read_to_string(data().join("vllm/cases-versions.json")).unwrap();
        let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(cases.len(), 2);
        for case in cases {
            let name = case["name"].as_str().unwrap();
            assert_eq!(
                check(&log_of(&case), name, &Overrides::default(), &sources())
                    .unwrap_err()
                    .to_string(),
                format!(
                    "{name} line 2: the non-default args: a string is not closed (a line cut short?)"
                )
            );
        }
    }

    /// The 0.10.1.1 cases print the lines their own release's log.toml reads
    /// (engines/vllm-0.10.1/log.toml; the logger calls it cites are the ones their prefixes
    /// name: scheduler.py:222, gpu_model_runner.py:2007, gpu_worker.py:276, kv_cache_utils.py
    /// :849/:853, gpu_model_runner.py:2708). Their `non-default args` line is cut short, so
    /// even with that release's command line read, check-log would refuse it in one line.
    #[test]
    fn the_0_10_1_1_cases_print_the_lines_their_release_reads() {
        let text = std::fs::read_to_string(data().join("vllm/cases-versions.json")).unwrap();
        let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        let format = crate::inputs::log::LogFormat::of_folder("vllm-0.10.1", "0.10.1.1").unwrap();
        let printed = |case: &serde_json::Value| -> Vec<(Figure, Option<String>, String)> {
            crate::inputs::log::read(&log_of(case), &format)
                .printed
                .into_iter()
                .filter(|p| p.figure != Figure::Args)
                .map(|p| (p.figure, p.process, p.text))
                .collect()
        };
        let s = |x: &str| x.to_owned();
        let api = Some(s("APIServer"));
        let core = Some(s("EngineCore_0"));
        assert_eq!(
            printed(&cases[0]),
            [
                (Figure::MaxNumBatchedTokens, api.clone(), s("2048")),
                (Figure::Weights, core.clone(), s("14.2488")),
                (Figure::KvCache, core.clone(), s("24.83")),
                (Figure::KvCacheTokens, core.clone(), s("464,848")),
                (Figure::MaxModelLen, core.clone(), s("16,384")),
                (Figure::MaxConcurrency, core.clone(), s("28.37")),
                (Figure::CudaGraphActual, core.clone(), s("0.50")),
            ]
        );
        let (tp0, tp1) = (Some(s("VllmWorker TP0")), Some(s("VllmWorker TP1")));
        assert_eq!(
            printed(&cases[1]),
            [
                (Figure::MaxNumBatchedTokens, api, s("2048")),
                (Figure::Weights, tp1.clone(), s("7.1217")),
                (Figure::Weights, tp0.clone(), s("7.1217")),
                (Figure::KvCache, tp1.clone(), s("31.83")),
                (Figure::KvCache, tp0.clone(), s("31.83")),
                (Figure::KvCacheTokens, core.clone(), s("1,192,160")),
                (Figure::MaxModelLen, core.clone(), s("16,384")),
                (Figure::MaxConcurrency, core, s("72.76")),
                (Figure::CudaGraphActual, tp1, s("0.65")),
                (Figure::CudaGraphActual, tp0, s("0.65")),
            ]
        );
    }

    #[test]
    fn process_names_give_ranks() {
        assert_eq!(rank_of(Some("Worker_TP1"), 2, 1), Some(1));
        assert_eq!(rank_of(Some("Worker_PP1"), 1, 2), Some(1));
        assert_eq!(rank_of(Some("Worker_PP1_TP1"), 2, 2), Some(3));
        assert_eq!(rank_of(Some("VllmWorker TP1"), 2, 1), Some(1));
        assert_eq!(rank_of(Some("EngineCore"), 1, 1), Some(0));
        assert_eq!(rank_of(Some("Worker"), 2, 1), None);
        assert_eq!(rank_of(None, 1, 1), None);
    }

    #[test]
    fn a_log_it_cannot_check_is_one_line() {
        let e = |text: &str| {
            check(text, "l.log", &Overrides::default(), &sources())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("nothing"),
            "l.log: no vLLM release found (the banner `vLLM server version X`, its logo's `version X` line, or `vLLM API server version X`); give --engine vllm==X"
        );
        // A release no engine folder claims (the V0 engine's).
        let v0 = e(
            "(APIServer pid=2739) INFO 09-04 01:28:28 [api_server.py:1805] vLLM API server version 0.6.3",
        );
        let (head, list) = v0.split_once("; the releases modelled are ").unwrap();
        assert_eq!(
            head,
            "l.log: the log is vLLM 0.6.3 (line 1), a release the planner does not model"
        );
        assert!(list.split(", ").any(|r| r == "0.19.0"), "{v0}");
        // A release before 0.18 is read by its own folder (its command line too).
        assert_eq!(
            e("INFO [utils.py:279] vLLM server version 0.17.0, serving model m"),
            "l.log: none of the start-up lines engines/vllm-0.17/log.toml lists (a log cut before the model loaded, or another engine's?)"
        );
        assert_eq!(
            e("INFO [utils.py:279] vLLM server version 0.19.0, serving model m"),
            "l.log: none of the start-up lines engines/vllm-0.19/log.toml lists (a log cut before the model loaded, or another engine's?)"
        );
        let head = "INFO [utils.py:279] vLLM server version 0.19.0, serving model m\n(EngineCore pid=1) INFO 04-22 00:04:20 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 476,016 tokens\n";
        assert_eq!(
            e(head),
            "l.log: no `non-default args:` line (entrypoints/utils.py:233), so the run's flags are unknown"
        );
        assert_eq!(
            e(&format!(
                "{head}(APIServer pid=1) INFO 04-22 00:03:35 [entrypoints/utils.py:233] non-default args: {{'model_tag': 'Qwen2-7B-Instruct', 'port': 8081, 'model': 'Qwe"
            )),
            "l.log line 3: the non-default args: a string is not closed (a line cut short?)"
        );
        assert_eq!(
            e(&format!(
                "{head}(APIServer pid=1) INFO 04-22 00:03:35 [entrypoints/utils.py:233] non-default args: {{'model': 'meta-llama/Llama-3.1-8B-Instruct', 'speculative_config': {{'method': 'ngram'}}}}"
            )),
            r#"l.log line 3: the non-default args: `--speculative-config '{"method":"ngram"}'` is refused: speculative decoding's draft model and its KV cache are not modelled (vLLM 0.19.0, engine/arg_utils.py:1303)"#
        );
        assert_eq!(
            e(&format!(
                "{head}(APIServer pid=1) INFO 04-22 00:03:35 [entrypoints/utils.py:233] non-default args: {{'model': 'meta-llama/Llama-3.1-8B-Instruct'}}"
            )),
            "l.log: the log names no device (a DEBUG log prints its CUDA total, an MoE model's its name); give --device NAME"
        );
    }
}
