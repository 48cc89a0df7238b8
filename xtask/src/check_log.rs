//! `cargo xtask check-log LOG`: reads an engine's start-up log (`inputs/log.rs`), takes the
//! release from its banner, the run's flags from its non-default args (read as a serve line is,
//! `inputs/serve_line.rs`), the model they name (`inputs/model.rs`) and the device it printed,
//! predicts that start-up (`engine.rs`) and sets every figure the log printed beside the
//! prediction with its error (`render/check_log.rs`).
//!
//! A log may lack what the prediction needs: a non-default args line cut short (a shared or
//! pasted log), no such line, a release that prints no device. The args read whole are every
//! setting the run changed; from a cut line only the pairs before the cut are known, and the
//! settings come from the log's other lines (the max model len, the chunked-prefill batch, the
//! layout the worker names give) and from the flags the user gives (`plan`'s names).
//!
//! Invariants: every setting comes from the log or from a flag given, and the report says
//! which (a cut line is said, with the keys it gave); a flag that contradicts what the log
//! printed (its banner, a value its args or lines give, args read whole that leave the setting
//! at its default, the device it names) is refused in one line; a setting the check needs
//! that neither gives (the model, the device, the layout, the memory fraction) is one line
//! naming the flag to pass; the settings a cut line hides that are not needed are the
//! release's defaults, said in a note. The prediction is the one `cargo xtask plan` makes with
//! those settings; an error is computed as `cargo xtask bench engine` computes it,
//! (predicted - printed) / printed, from the unrounded prediction; a log the command cannot
//! read, or a release, model or device it does not model, is one line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;

use crate::CliError;
use crate::inputs::files::{self, Input};
use crate::inputs::flags::PlanArgs;
use crate::inputs::log::{self, Figure, LogFormat, Py, StartupLog};
use crate::inputs::model::{ModelSources, resolve};
use crate::inputs::serve_line::{PlanCommand, ServeLine, read_flags};
use crate::inputs::serve_table::{ServeTable, Takes, engine_title};
use crate::inputs::settings::import_options;
use crate::render::check_log::{ArgsRead, Predicted, Report, Row, Setting};

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

    /// The device, for a log that names none (refused when it contradicts the device the log
    /// names: its CUDA total (DEBUG) or the fused-MoE config's device name; an SGLang log
    /// names none).
    ///
    /// Example: --device a100-80gb
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// The engine release, for a log without its banner (refused when it contradicts the
    /// banner; an SGLang log names none: give sglang==X).
    ///
    /// Example: --engine vllm==0.19.0
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,

    /// As `plan`'s, for a log whose non-default args are cut short or missing: the fraction
    /// of the device the run was given (refused when the log's args give it or, read whole,
    /// leave it at the release's default).
    ///
    /// Example: --gpu-memory-utilization 0.5
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub gpu_memory_utilization: Option<f64>,

    /// As `plan`'s (aliases --tp, -tp), for a log that shows no layout: no worker named by its
    /// rank and no args giving it (refused when it contradicts them).
    ///
    /// Example: --tensor-parallel-size 2
    #[arg(
        long,
        visible_alias = "tp",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub tensor_parallel_size: Option<u64>,

    /// As `plan`'s (aliases --pp, -pp), like --tensor-parallel-size.
    ///
    /// Example: --pipeline-parallel-size 2
    #[arg(
        long,
        visible_alias = "pp",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub pipeline_parallel_size: Option<u64>,

    /// As `plan`'s, for a log that prints no max model len (refused when it contradicts one).
    ///
    /// Example: --max-model-len 16384
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub max_model_len: Option<u64>,

    /// As `plan`'s, for a log that prints no batch size (refused when it contradicts one).
    ///
    /// Example: --max-num-batched-tokens 2048
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub max_num_batched_tokens: Option<u64>,

    /// As `plan`'s, for a log that does not show it (refused when it contradicts the log).
    ///
    /// Example: --max-num-seqs 256
    #[arg(long, value_name = "SEQS", allow_negative_numbers = true)]
    pub max_num_seqs: Option<u64>,

    /// As `plan`'s, for a log whose args are cut before it (refused when it contradicts them).
    ///
    /// Example: --dtype bfloat16
    #[arg(long, value_name = "DTYPE")]
    pub dtype: Option<String>,

    /// As `plan`'s, like --dtype.
    ///
    /// Example: --kv-cache-dtype fp8
    #[arg(long, value_name = "DTYPE")]
    pub kv_cache_dtype: Option<String>,

    /// As `plan`'s, like --dtype.
    ///
    /// Example: --quantization fp8
    #[arg(long, value_name = "METHOD")]
    pub quantization: Option<String>,

    /// As `plan`'s, like --dtype.
    ///
    /// Example: --block-size 32
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub block_size: Option<u64>,

    /// As `plan`'s, like --dtype.
    ///
    /// Example: --enforce-eager
    #[arg(long)]
    pub enforce_eager: bool,

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

/// What the user gives beside the log.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub hf_config: Option<PathBuf>,
    pub device: Option<String>,
    pub engine: Option<String>,
    /// The run's settings as `plan`'s flags (`--gpu-memory-utilization 0.5`), in order.
    pub run: Vec<String>,
}

impl CheckLogArgs {
    /// The run's settings given, as `plan`'s words.
    fn run_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        let mut push = |flag: &str, value: Option<String>| {
            if let Some(v) = value {
                words.push(flag.to_owned());
                words.push(v);
            }
        };
        push(
            "--gpu-memory-utilization",
            self.gpu_memory_utilization.map(|x| x.to_string()),
        );
        push(
            "--tensor-parallel-size",
            self.tensor_parallel_size.map(|x| x.to_string()),
        );
        push(
            "--pipeline-parallel-size",
            self.pipeline_parallel_size.map(|x| x.to_string()),
        );
        push("--max-model-len", self.max_model_len.map(|x| x.to_string()));
        push(
            "--max-num-batched-tokens",
            self.max_num_batched_tokens.map(|x| x.to_string()),
        );
        push("--max-num-seqs", self.max_num_seqs.map(|x| x.to_string()));
        push("--dtype", self.dtype.clone());
        push("--kv-cache-dtype", self.kv_cache_dtype.clone());
        push("--quantization", self.quantization.clone());
        push("--block-size", self.block_size.map(|x| x.to_string()));
        if self.enforce_eager {
            words.push("--enforce-eager".to_owned());
        }
        words
    }
}

/// `cargo xtask check-log`.
pub fn run(args: &CheckLogArgs) -> Result<(), CliError> {
    let (text, truncated) = files::read_prefix(&args.log, Input::Log)?;
    let overrides = Overrides {
        hf_config: args.hf_config.clone(),
        device: args.device.clone(),
        engine: args.engine.clone(),
        run: args.run_words(),
    };
    let shown = args.log.display().to_string();
    let sources = ModelSources::from_env(&[]);
    let mut report = match crate::sglang_log::check_if_sglang(&text, &shown, &overrides, &sources) {
        // The run's flags stand in for what a vLLM log lacks; SGLang's server_args is whole.
        Some(_) if !overrides.run.is_empty() => {
            return Err(format!(
                "{shown}: {}: an SGLang log's settings are its server_args, printed whole; these flags are for a vLLM log that lacks them",
                overrides.run.join(" ")
            )
            .into());
        }
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

/// The settings a vLLM log's other lines give when its args do not (the figure, `plan`'s flag).
const PRINTED_SETTINGS: [(Figure, &str); 3] = [
    (Figure::MaxModelLen, "--max-model-len"),
    (Figure::MaxNumBatchedTokens, "--max-num-batched-tokens"),
    (Figure::MaxNumSeqs, "--max-num-seqs"),
];

/// The settings a check of a vLLM start-up cannot take as the release's default when the args
/// do not give them: the layout shards every figure, and the memory fraction sets the KV
/// budget the figures measure (a wrong default would be reported as the model's error).
const NEEDED_SETTINGS: [(&str, &str, &str); 2] = [
    ("--tensor-parallel-size", "N", "layout"),
    (
        "--gpu-memory-utilization",
        "FRACTION",
        "gpu_memory_utilization",
    ),
];

/// The settings a cut line may hide that the check takes as the release's defaults (said in
/// a note, each a flag the user may give).
const DEFAULTED_SETTINGS: [&str; 8] = [
    "--pipeline-parallel-size",
    "--dtype",
    "--kv-cache-dtype",
    "--quantization",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--block-size",
    "--enforce-eager",
];

/// The model config a checked log is predicted with, and where it was found: `--hf-config`
/// when given, else the model the log's arguments name, resolved as a serve line's is.
pub(crate) fn config_of(
    overrides: &Overrides,
    line: &ServeLine,
    sources: &ModelSources,
    shown: &str,
) -> Result<(PathBuf, String), String> {
    match &overrides.hf_config {
        Some(path) => Ok((path.clone(), "--hf-config".to_owned())),
        None => {
            let found = resolve(
                &line.model,
                line.revision.as_deref(),
                line.download_dir.as_deref(),
                sources,
            )
            .map_err(|e| format!("{shown}: {e}"))?;
            Ok((found.config, found.place))
        }
    }
}

/// The planner's arguments for the words a log gave, or the first line of clap's complaint
/// after `what` (the log and which of its settings).
pub(crate) fn plan_args(words: &[String], what: &str) -> Result<PlanArgs, String> {
    PlanCommand::try_parse_from(words)
        .map(|c| c.args)
        .map_err(|e| {
            let text = e.to_string();
            format!(
                "{what}: {}",
                text.lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
            )
        })
}

/// A flag's words as (flag, values): each `--flag` with the words after it up to the next.
fn groups(words: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for w in words {
        match out.last_mut() {
            Some((_, values)) if !w.starts_with("--") => values.push(w.clone()),
            _ => out.push((w.clone(), Vec::new())),
        }
    }
    out
}

/// Whether two values of a flag say the same (numbers by value: `0.5` is `0.50`).
fn same_values(a: &[String], b: &[String]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x == y || matches!((x.parse::<f64>(), y.parse::<f64>()), (Ok(p), Ok(q)) if p == q)
        })
}

/// A setting as stated: its values and where they come from.
type Stated = BTreeMap<String, (Vec<String>, String)>;

/// Checks the log `text` (named `shown` in messages).
pub fn check(
    text: &str,
    shown: &str,
    overrides: &Overrides,
    sources: &ModelSources,
) -> Result<Report, CliError> {
    // The release: the banner's, or --engine's for a log without one.
    let banner = log::banner_release(text);
    let (spec, banner_line) = match (&overrides.engine, &banner) {
        (Some(e), Some((v, line))) => {
            if e.split_once("==").map(|(_, g)| g.trim()) != Some(v.as_str()) {
                return Err(format!(
                    "{shown}: --engine {e} contradicts the log: line {line} is the banner of vLLM {v}; leave --engine out"
                )
                .into());
            }
            (e.clone(), Some(*line))
        }
        (Some(e), None) => (e.clone(), None),
        (None, Some((v, line))) => (format!("vllm=={v}"), Some(*line)),
        (None, None) => {
            return Err(format!(
                "{shown}: no vLLM release found (the banner `vLLM server version X`, its logo's `version X` line, or `vLLM API server version X`); give --engine vllm==X"
            )
            .into());
        }
    };
    let release = engines::resolve(&spec).map_err(|e| match (&e, &banner) {
        (engines::EnginesError::UnknownRelease { known, .. }, Some((v, line))) => {
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
    let title = format!("{} {version}", engine_title(&release.engine));
    let format =
        LogFormat::of_folder(release.folder, &version).map_err(|e| format!("{shown}: {e}"))?;
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
    let args_at = format.printing(Figure::Args).map_or("", |p| p.at.as_str());
    let mut line = ServeLine {
        engine: release.engine.clone(),
        release: title.clone(),
        version: version.clone(),
        ..ServeLine::default()
    };
    let mut notes = Vec::new();
    // The run's flags, from the non-default args, read as a serve line is.
    let args_line = printed.first(Figure::Args);
    let args = match args_line {
        Some(p) => Some((
            p.line,
            log::parse_args(&p.text)
                .map_err(|e| format!("{shown} line {}: the non-default args: {e}", p.line))?,
        )),
        None => None,
    };
    let whole = args.as_ref().is_some_and(|(_, a)| a.cut.is_none());
    let mut model_named = false;
    if let Some((at, a)) = &args {
        let name = |k: &str| match a.get(k) {
            Some(Py::Str(s)) => Some(s.clone()),
            _ => None,
        };
        if let Some(cut) = &a.cut {
            let keys: Vec<String> = a
                .pairs
                .iter()
                .map(|(k, _)| match k {
                    Py::Str(s) => format!("`{s}`"),
                    other => format!("{other:?}"),
                })
                .collect();
            notes.push(format!(
                "the non-default args (line {at}) are cut short: read {}{}; the rest is unknown",
                if keys.is_empty() {
                    "no key whole".to_owned()
                } else {
                    keys.join(", ")
                },
                cut.as_ref()
                    .map(|k| format!(", `{k}` with its value cut"))
                    .unwrap_or_default()
            ));
        }
        match ServeTable::of_folder(release.folder, &version) {
            Ok(table) => {
                let mut tokens = arg_words(&a.pairs, &table)
                    .map_err(|e| format!("{shown} line {at}: the non-default args: {e}"))?;
                // A cut line may hold the positional model (`model_tag`) and not `model`.
                if a.get("model").is_none()
                    && let Some(tag) = name("model_tag")
                {
                    tokens.extend(["--model".to_owned(), tag]);
                }
                read_flags(&tokens, false, &table, &mut line)
                    .map_err(|e| format!("{shown} line {at}: the non-default args: {e}"))?;
                model_named = whole || !line.default_model;
            }
            Err(_) if whole => {
                return Err(format!(
                    "{shown} line {at}: the non-default args cannot be read as the run's flags: engines/{} has no flag table read from {title}'s source",
                    release.folder
                )
                .into());
            }
            Err(_) => {
                // A cut line of a release whose flags are not classified: only the model is
                // read from it, the rest is unknown like the part cut off.
                if let Some(m) = name("model").or_else(|| name("model_tag")) {
                    line.model = m;
                    model_named = true;
                }
                let others: Vec<String> = a
                    .pairs
                    .iter()
                    .filter_map(|(k, _)| match k {
                        Py::Str(s) if s != "model" && s != "model_tag" => Some(format!("`{s}`")),
                        _ => None,
                    })
                    .collect();
                if !others.is_empty() {
                    notes.push(format!(
                        "the non-default args (line {at}) give {}, not read: engines/{} has no flag table read from {title}'s source, so what they do to memory is unknown",
                        others.join(", "),
                        release.folder
                    ));
                }
            }
        }
    } else {
        notes.push(format!(
            "the log has no `non-default args:` line ({args_at}): the run's flags are unknown"
        ));
    }
    // Each setting the run had, with where it comes from.
    let from_args = args
        .as_ref()
        .map(|(at, _)| format!("the non-default args (line {at})"))
        .unwrap_or_default();
    let mut stated: Stated = groups(&line.flags)
        .into_iter()
        .map(|(flag, values)| (flag, (values, from_args.clone())))
        .collect();
    // What the args do not say whole, the log's other lines may.
    let mut taken: Vec<Figure> = Vec::new();
    if !whole {
        for (figure, flag) in PRINTED_SETTINGS {
            if stated.contains_key(flag) {
                continue;
            }
            if let Some(p) = printed.first(figure) {
                stated.insert(
                    flag.to_owned(),
                    (vec![p.text.replace(',', "")], format!("line {}", p.line)),
                );
                taken.push(figure);
            }
        }
        if let Some((tp, pp, from)) = layout_from_names(&printed) {
            for (flag, n) in [
                ("--tensor-parallel-size", tp),
                ("--pipeline-parallel-size", pp),
            ] {
                stated
                    .entry(flag.to_owned())
                    .or_insert_with(|| (vec![n.to_string()], from.clone()));
            }
        }
    }
    // The flags given: what the log states must agree; what it leaves unknown they give.
    for (flag, values) in groups(&overrides.run) {
        let shown_flag = std::iter::once(flag.clone())
            .chain(values.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        match stated.get(&flag) {
            Some((theirs, from)) => {
                if !same_values(theirs, &values) {
                    return Err(format!(
                        "{shown}: {shown_flag} contradicts the log: {} from {from}",
                        if theirs.is_empty() {
                            flag.clone()
                        } else {
                            theirs.join(" ")
                        }
                    )
                    .into());
                }
            }
            None if whole => {
                return Err(format!(
                    "{shown}: {shown_flag} contradicts the log: {from_args} are whole and do not set it, so the run had {title}'s default; leave the flag out"
                )
                .into());
            }
            None => {
                stated.insert(flag.clone(), (values, "given".to_owned()));
            }
        }
    }
    let device = device_of(&printed, overrides.device.as_deref(), shown)?;
    // What the check needs and neither the log nor a flag gives: one line naming the flags.
    let mut missing: Vec<(String, &str)> = Vec::new();
    if overrides.hf_config.is_none() && !model_named {
        missing.push(("--hf-config FILE".to_owned(), "model"));
    }
    if device.is_none() {
        missing.push(("--device NAME".to_owned(), "device"));
    }
    if !whole {
        for (flag, value, what) in NEEDED_SETTINGS {
            if !stated.contains_key(flag) {
                missing.push((format!("{flag} {value}"), what));
            }
        }
    }
    let device = match device {
        Some(d) if missing.is_empty() => d,
        _ => {
            let (flags, whats): (Vec<String>, Vec<&str>) = missing.into_iter().unzip();
            return Err(match &args {
                Some((_, a)) if a.cut.is_none() => format!(
                    "{shown}: the log names no device (a DEBUG log prints its CUDA total, an MoE model's its name); give --device NAME"
                ),
                Some((at, _)) => format!(
                    "{shown}: the non-default args (line {at}) are cut short and the log gives no {}: give {} as the run had them",
                    whats.join(", no "),
                    flags.join(" ")
                ),
                None => format!(
                    "{shown}: the log has no `non-default args:` line ({args_at}) and gives no {}: give {} as the run had them",
                    whats.join(", no "),
                    flags.join(" ")
                ),
            }
            .into());
        }
    };
    let (device, device_from) = device;
    if !whole {
        let defaulted: Vec<&str> = DEFAULTED_SETTINGS
            .into_iter()
            .filter(|f| !stated.contains_key(*f))
            .collect();
        if !defaulted.is_empty() {
            notes.push(format!(
                "what the log does not show is {title}'s default; give {} if the run set one",
                defaulted.join(", ")
            ));
        }
    }
    let (config, place) = config_of(overrides, &line, sources, shown)?;
    let mut words: Vec<String> = vec![
        "plan".into(),
        "--hf-config".into(),
        config.display().to_string(),
        "--engine".into(),
        format!("{}=={version}", release.engine),
        "--device".into(),
        device.clone(),
    ];
    let mut settings = Vec::new();
    for (flag, (values, from)) in &stated {
        words.push(flag.clone());
        words.extend(values.iter().cloned());
        settings.push(Setting {
            flag: flag.clone(),
            value: values.join(" "),
            from: from.clone(),
        });
    }
    let plan = plan_args(&words, &format!("{shown}: the run's flags"))?;
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
        args: ArgsRead {
            line: args.as_ref().map(|(at, _)| *at),
            whole,
            keys: args
                .as_ref()
                .map(|(_, a)| {
                    a.pairs
                        .iter()
                        .map(|(k, _)| match k {
                            Py::Str(s) => s.clone(),
                            other => format!("{other:?}"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            cut_in: args.as_ref().and_then(|(_, a)| a.cut.clone().flatten()),
        },
        line,
        settings,
        config: config.display().to_string(),
        place,
        device,
        device_from,
        rows: Vec::new(),
        printed_only: Vec::new(),
        not_printed: Vec::new(),
        notes,
        startup: prediction.startup,
        labels: Vec::new(),
    };
    compare(
        &printed,
        &format,
        &prediction.run.model.architecture,
        (tp, pp),
        &taken,
        &mut report,
    );
    Ok(report)
}

/// The non-default args (`{'model_tag': 'm', 'max_model_len': 8192, ...}`) as the
/// command-line words that give them: each key is its flag's destination (`max_model_len` is
/// `--max-model-len`); `model` is what the engine served (`model_tag`, the positional it came
/// from, repeats it, or is ignored by a launcher that reads `--model` only).
fn arg_words(pairs: &[(Py, Py)], table: &ServeTable) -> Result<Vec<String>, String> {
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
        match (flag.takes, value) {
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

/// The layout the worker processes' names give (vLLM names a worker by its ranks only in a
/// larger world: `VllmWorker TP1` in 0.10.1, v1/executor/multiproc_executor.py:382-391;
/// `Worker_PP1_TP0` in 0.19, :978-993), with the line it was read from: the largest TP and PP
/// ranks named, plus one; a world of one when a worker's figure is printed by a process named
/// without ranks (the engine core running the worker). None when no worker figure is printed,
/// and when every rank named is 0: vLLM names workers by rank only in a larger world, so a
/// paste that kept rank 0's lines alone says the world is larger than one but not how large.
fn layout_from_names(log: &StartupLog) -> Option<(u64, u64, String)> {
    let workers: Vec<&log::Printed> = log
        .printed
        .iter()
        .filter(|p| worker_figure(p.figure))
        .collect();
    let first = workers.first()?;
    let (mut tp, mut pp, mut named) = (0u64, 0u64, None);
    for p in &workers {
        let (t, s) = ranks_named(p.process.as_deref());
        if t.is_some() || s.is_some() {
            named.get_or_insert(p.line);
        }
        tp = tp.max(t.map_or(0, |r| r.saturating_add(1)));
        pp = pp.max(s.map_or(0, |r| r.saturating_add(1)));
    }
    match named {
        Some(_) if tp <= 1 && pp <= 1 => None,
        Some(line) => Some((
            tp.max(1),
            pp.max(1),
            format!("the worker names (line {line} on)"),
        )),
        None => Some((
            1,
            1,
            format!(
                "line {} (a worker's figure printed by {}, named without ranks)",
                first.line,
                first.process.as_deref().unwrap_or("a process")
            ),
        )),
    }
}

/// A figure each worker prints of itself.
fn worker_figure(figure: Figure) -> bool {
    use Figure::*;
    matches!(
        figure,
        Weights
            | NonKv
            | ActivationPeak
            | NonTorch
            | KvCache
            | CudaGraphEstimate
            | CudaGraphActual
            | CudaGraphCaptures
    )
}

/// The TP and PP ranks a process name gives (`Worker_PP1_TP0`: TP 0, PP 1).
fn ranks_named(process: Option<&str>) -> (Option<u64>, Option<u64>) {
    let Some(name) = process else {
        return (None, None);
    };
    let part = |prefix: &str| {
        name.split(['_', ' '])
            .find_map(|t| t.strip_prefix(prefix).and_then(|n| n.parse::<u64>().ok()))
    };
    (part("TP"), part("PP"))
}

/// The device the log names (the fused-MoE config's device name, or the CUDA total a DEBUG
/// log prints, matched against the device table's), or `--device` for a log that names none;
/// `--device` naming another device than the log's is refused. None: neither.
fn device_of(
    log: &StartupLog,
    given: Option<&str>,
    shown: &str,
) -> Result<Option<(String, String)>, CliError> {
    let table = kernel_families::Devices::builtin()?;
    let given = given
        .map(|name| table.get(name).map(|d| d.name.clone()))
        .transpose()?;
    let contradicts = |theirs: &str, from: &str| -> CliError {
        format!(
            "{shown}: --device {} contradicts the log: {from} is the {theirs}",
            given.as_deref().unwrap_or_default()
        )
        .into()
    };
    if let Some(p) = log.first(Figure::DeviceName) {
        let found = table.all().iter().find(|d| {
            d.product
                .as_deref()
                .is_some_and(|product| product.replace(' ', "_").eq_ignore_ascii_case(&p.text))
        });
        if let Some(d) = found {
            let from = format!("device_name={} (line {})", p.text, p.line);
            if given.as_ref().is_some_and(|g| *g != d.name) {
                return Err(contradicts(&d.name, &from));
            }
            return Ok(Some((d.name.clone(), from)));
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
        let from = format!("total_memory={}GiB (line {})", p.text, p.line);
        if let Some(g) = &given {
            return if matches.iter().any(|d| d.name == *g) {
                Ok(Some((g.clone(), format!("--device, as {from}"))))
            } else {
                Err(format!(
                    "{shown}: --device {g} contradicts the log: {from} is not its CUDA total"
                )
                .into())
            };
        }
        return match matches.as_slice() {
            [d] => Ok(Some((d.name.clone(), from))),
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
    Ok(given.map(|g| (g, "--device".to_owned())))
}

/// The rank a process name gives (`Worker_PP1_TP0` is stage 1, TP rank 0; vLLM 0.19
/// v1/executor/multiproc_executor.py:978-993), or rank 0 for a world of one worker.
pub(crate) fn rank_of(process: Option<&str>, tp: u64, pp: u64) -> Option<u64> {
    process?;
    let (tp_rank, pp_rank) = ranks_named(process);
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
    taken: &[Figure],
    report: &mut Report,
) {
    use Figure::*;
    let s = &report.startup;
    for p in &log.printed {
        // A figure taken as a setting is the prediction's input, not compared with it.
        if taken.contains(&p.figure) {
            continue;
        }
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
        let Some((rank, worker)) = owner(
            p,
            engine_wide,
            same_on_all,
            (tp, pp),
            &s.workers,
            |w| w.rank,
            &mut report.notes,
        ) else {
            continue;
        };
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
        let error = error_of(&predicted, &p.text);
        report.rows.push(Row {
            figure: p.figure,
            rank,
            printed: p.clone(),
            predicted,
            error,
        });
    }
    not_printed(
        log,
        format,
        &[
            Weights,
            ActivationPeak,
            NonTorch,
            KvCache,
            KvCacheTokens,
            MaxConcurrency,
            CudaGraphEstimate,
        ],
        report,
    );
}

/// Whose figure `p` is: `(None, None)` for an engine-wide figure, else its rank and that
/// rank's worker. A figure whose line names no rank (where the layout has more than one) or a
/// rank the layout does not have is set aside with a note, never compared with another
/// rank's prediction; one the same on every worker (`same_on_all`) is rank 0's.
pub(crate) fn owner<'w, W>(
    p: &log::Printed,
    engine_wide: bool,
    same_on_all: bool,
    (tp, pp): (u64, u64),
    workers: &'w [W],
    rank_of_worker: impl Fn(&W) -> u64,
    notes: &mut Vec<String>,
) -> Option<(Option<u64>, Option<&'w W>)> {
    if engine_wide {
        return Some((None, None));
    }
    let by = p.process.as_deref().unwrap_or("a line naming no process");
    let Some(rank) = rank_of(p.process.as_deref(), tp, pp).or(same_on_all.then_some(0)) else {
        notes.push(format!(
            "{} on line {} is set aside: printed by {by}, whose rank the log does not say",
            p.figure.name(),
            p.line
        ));
        return None;
    };
    let Some(worker) = workers.iter().find(|w| rank_of_worker(w) == rank) else {
        notes.push(format!(
            "{} on line {} is set aside: printed by {by}, rank {rank}, which the layout does not have",
            p.figure.name(),
            p.line
        ));
        return None;
    };
    Some((Some(rank), Some(worker)))
}

/// The prediction's error against the printed `text`, percent (none for a text, or a
/// printed figure that is not a number).
pub(crate) fn error_of(predicted: &Predicted, text: &str) -> Option<f64> {
    let printed = text.replace(',', "").parse::<f64>().ok()?;
    let predicted = match predicted {
        Predicted::Bytes(b) => *b as f64 / GIB,
        Predicted::Count(n) => *n as f64,
        Predicted::Ratio(x) => *x,
        Predicted::Text(_) => return None,
    };
    Some(error_percent(predicted, printed)).filter(|e| e.is_finite())
}

/// Notes each of `figures` the log did not print, with the level that prints it.
pub(crate) fn not_printed(
    log: &StartupLog,
    format: &LogFormat,
    figures: &[Figure],
    report: &mut Report,
) {
    for &figure in figures {
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

    fn old_cases() -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(data().join("vllm/cases-versions.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// What the 0.10.1.1 A100 logs do not print, given as a user would (`plan`'s flags).
    fn a100_half(case: &serde_json::Value) -> Overrides {
        Overrides {
            hf_config: Some(data().join(case["config"].as_str().unwrap())),
            device: Some("a100-80gb".into()),
            engine: None,
            run: vec!["--gpu-memory-utilization".into(), "0.5".into()],
        }
    }

    /// The two vLLM 0.10.1.1 A100 cases (data/vllm/cases-versions.json), whose non-default
    /// args line is cut short and which print no device: read with the device and the memory
    /// fraction given, the rest from their lines (the max model len, the chunked-prefill batch,
    /// the layout the worker names give), they give the errors `cargo xtask bench engine`
    /// reports from the cases' fields; the cut is said, with the keys it let through.
    #[test]
    fn check_log_on_the_0_10_1_1_cases_reproduces_the_bench_errors() {
        let devices = kernel_families::Devices::builtin().unwrap();
        let cases = old_cases();
        assert_eq!(cases.len(), 2);
        for (case, (tp, tokens, layout_from)) in cases.iter().zip([
            (
                1u64,
                460_544u64,
                "line 5 (a worker's figure printed by EngineCore_0, named without ranks)",
            ),
            (2, 1_187_424, "the worker names (line 5 on)"),
        ]) {
            let name = case["name"].as_str().unwrap();
            let report = check(&log_of(case), name, &a100_half(case), &sources())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(report.release, "0.10.1.1", "{name}");
            assert_eq!(report.device, "a100-80gb", "{name}");
            assert_eq!(report.line.model, "Qwen2-7B-Instruct", "{name}");
            // The keys read whole are read as 0.10.1.1's flags (serve_flags.toml).
            assert_eq!(report.line.ignored.join(" "), "--port 8081", "{name}");
            let set = |f: &str, v: &str, from: &str| Setting {
                flag: f.into(),
                value: v.into(),
                from: from.into(),
            };
            let tp = tp.to_string();
            assert_eq!(
                report.settings,
                [
                    set("--gpu-memory-utilization", "0.5", "given"),
                    set("--max-model-len", "16384", "line 3"),
                    set("--max-num-batched-tokens", "2048", "line 4"),
                    set("--pipeline-parallel-size", "1", layout_from),
                    set("--tensor-parallel-size", &tp, layout_from),
                ],
                "{name}"
            );
            assert_eq!(
                report.args,
                ArgsRead {
                    line: Some(2),
                    whole: false,
                    keys: vec!["model_tag".into(), "port".into()],
                    cut_in: Some("model".into()),
                },
                "{name}"
            );
            assert_eq!(report.notes.len(), 2, "{name}: {:?}", report.notes);
            assert_eq!(
                report.notes[0],
                "the non-default args (line 2) are cut short: read `model_tag`, `port`, `model` with its value cut; the rest is unknown",
                "{name}"
            );
            assert_eq!(
                report.notes.last().unwrap(),
                "what the log does not show is vLLM 0.10.1.1's default; give --dtype, --kv-cache-dtype, --quantization, --max-num-seqs, --block-size, --enforce-eager if the run set one",
                "{name}"
            );
            let (release, bench) = crate::engine::case_startup(case, devices, &data()).unwrap();
            assert_eq!(release, "0.10.1.1", "{name}");
            assert_eq!(report.startup.kv_cache_tokens, tokens, "{name}");
            assert_eq!(
                report.startup.kv_cache_tokens, bench.kv_cache_tokens,
                "{name}"
            );
            let err = |figure: Figure| -> Vec<f64> {
                report
                    .rows
                    .iter()
                    .filter(|r| r.figure == figure)
                    .map(|r| r.error.unwrap())
                    .collect()
            };
            let gib = |b: u64| b as f64 / GIB;
            let f = |k: &str| case[k].as_f64().unwrap();
            let workers = report.startup.workers.len();
            assert_eq!(
                err(Figure::Weights),
                vec![error_percent(gib(bench.workers[0].weights), f("weights_gib")); workers],
                "{name}"
            );
            assert_eq!(
                err(Figure::KvCacheTokens),
                [error_percent(
                    bench.kv_cache_tokens as f64,
                    f("kv_cache_tokens")
                )],
                "{name}"
            );
            // The settings taken from the log are inputs, not figures compared.
            assert!(err(Figure::MaxModelLen).is_empty(), "{name}");
            assert!(err(Figure::MaxNumBatchedTokens).is_empty(), "{name}");
        }
        // Today's errors (the base note's table): KV tokens -0.93% and -0.40%.
        let kv = |case: &serde_json::Value| {
            let name = case["name"].as_str().unwrap();
            let r = check(&log_of(case), name, &a100_half(case), &sources()).unwrap();
            let row = r.rows.iter().find(|r| r.figure == Figure::KvCacheTokens);
            format!("{:+.2}", row.unwrap().error.unwrap())
        };
        assert_eq!(kv(&cases[0]), "-0.93");
        assert_eq!(kv(&cases[1]), "-0.40");
    }

    /// A setting the check needs that the log does not give is one line naming the flags to
    /// pass; a flag that contradicts what the log printed is one line saying what it printed.
    #[test]
    fn what_a_log_lacks_is_asked_for_and_what_it_printed_is_kept() {
        let cases = old_cases();
        let (tp1, tp2) = (&cases[0], &cases[1]);
        let e = |case: &serde_json::Value,
                 extra: &[&str],
                 device: Option<&str>,
                 engine: Option<&str>| {
            let mut o = a100_half(case);
            o.device = device.map(str::to_owned);
            o.engine = engine.map(str::to_owned);
            o.run.extend(extra.iter().map(|w| (*w).to_owned()));
            check(&log_of(case), "a.log", &o, &sources())
                .unwrap_err()
                .to_string()
        };
        let bare = check(&log_of(tp1), "a.log", &Overrides::default(), &sources())
            .unwrap_err()
            .to_string();
        assert_eq!(
            bare,
            "a.log: the non-default args (line 2) are cut short and the log gives no device, no gpu_memory_utilization: give --device NAME --gpu-memory-utilization FRACTION as the run had them"
        );
        // The model the cut line names is looked for as vLLM would; no --hf-config: not found.
        let mut no_config = a100_half(tp1);
        no_config.hf_config = None;
        assert_eq!(
            check(&log_of(tp1), "a.log", &no_config, &sources())
                .unwrap_err()
                .to_string(),
            format!(
                "a.log: model Qwen2-7B-Instruct not found: no folder {}; nothing is downloaded: give its config.json with --hf-config FILE",
                std::env::temp_dir().join("Qwen2-7B-Instruct").display()
            )
        );
        assert_eq!(
            e(
                tp2,
                &["--tensor-parallel-size", "1"],
                Some("a100-80gb"),
                None
            ),
            "a.log: --tensor-parallel-size 1 contradicts the log: 2 from the worker names (line 5 on)"
        );
        // The TP 2 log with the TP 1 worker's lines cut: the names say a larger world, not
        // its size, so the layout is asked for rather than read as TP 1.
        let rank0_only: String = log_of(tp2)
            .lines()
            .filter(|l| !l.contains("TP1"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            check(&rank0_only, "a.log", &a100_half(tp2), &sources())
                .unwrap_err()
                .to_string(),
            "a.log: the non-default args (line 2) are cut short and the log gives no layout: give --tensor-parallel-size N as the run had them"
        );
        assert_eq!(
            e(tp1, &["--max-model-len", "8192"], Some("a100-80gb"), None),
            "a.log: --max-model-len 8192 contradicts the log: 16384 from line 3"
        );
        // A value the log gives, given again, is the same setting.
        let mut same = a100_half(tp1);
        same.run
            .extend(["--max-num-batched-tokens".into(), "2048".into()]);
        assert!(check(&log_of(tp1), "a.log", &same, &sources()).is_ok());
        assert_eq!(
            e(tp1, &[], Some("a100-80gb"), Some("vllm==0.19.0")),
            "a.log: --engine vllm==0.19.0 contradicts the log: line 1 is the banner of vLLM 0.10.1.1; leave --engine out"
        );
        // A log whose args are read whole: every setting it does not set is the default.
        let qwen = &cases_named("qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192");
        let whole = |run: &[&str], device: Option<&str>| {
            let o = Overrides {
                device: device.map(str::to_owned),
                run: run.iter().map(|w| (*w).to_owned()).collect(),
                ..Overrides::default()
            };
            check(&log_of(qwen), "q.log", &o, &sources())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            whole(&["--max-num-seqs", "128"], None),
            "q.log: --max-num-seqs 128 contradicts the log: the non-default args (line 2) are whole and do not set it, so the run had vLLM 0.19.0's default; leave the flag out"
        );
        assert_eq!(
            whole(&["--gpu-memory-utilization", "0.9"], None),
            "q.log: --gpu-memory-utilization 0.9 contradicts the log: 0.95 from the non-default args (line 2)"
        );
        assert_eq!(
            whole(&[], Some("a100-80gb")),
            "q.log: --device a100-80gb contradicts the log: total_memory=79.19GiB (line 7) is not its CUDA total"
        );
        // The device an MoE config's file name gives (a line added to a log of the case).
        let named = format!(
            "{}\n(EngineCore pid=9) INFO 04-22 01:00:40 [model_executor/layers/fused_moe/fused_moe.py:1029] Using default MoE config. Performance might be sub-optimal! Config file not found at /x/E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json",
            log_of(qwen)
        );
        let o = Overrides {
            device: Some("h200".into()),
            ..Overrides::default()
        };
        assert_eq!(
            check(&named, "n.log", &o, &sources())
                .unwrap_err()
                .to_string(),
            format!(
                "n.log: --device h200 contradicts the log: device_name=NVIDIA_H100_80GB_HBM3 (line {}) is the h100-sxm",
                log_of(qwen).lines().count() + 1
            )
        );
    }

    fn cases_named(name: &str) -> serde_json::Value {
        cases().into_iter().find(|c| c["name"] == name).unwrap()
    }

    /// The 0.10.1.1 cases print the lines their own release's log.toml reads
    /// (engines/vllm-0.10.1/log.toml; the logger calls it cites are the ones their prefixes
    /// name: __init__.py:1750, scheduler.py:222, gpu_model_runner.py:2007, gpu_worker.py:276,
    /// kv_cache_utils.py:849/:853, gpu_model_runner.py:2708).
    #[test]
    fn the_0_10_1_1_cases_print_the_lines_their_release_reads() {
        let cases = old_cases();
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
                (Figure::MaxModelLen, api.clone(), s("16384")),
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
                (Figure::MaxModelLen, api.clone(), s("16384")),
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
            "l.log: the log has no `non-default args:` line (entrypoints/utils.py:233) and gives no model, no device, no layout, no gpu_memory_utilization: give --hf-config FILE --device NAME --tensor-parallel-size N --gpu-memory-utilization FRACTION as the run had them"
        );
        assert_eq!(
            e(&format!(
                "{head}(APIServer pid=1) INFO 04-22 00:03:35 [entrypoints/utils.py:233] non-default args: {{'model_tag': 'Qwen2-7B-Instruct', 'port': 8081, 'model': 'Qwe"
            )),
            "l.log: the non-default args (line 3) are cut short and the log gives no device, no layout, no gpu_memory_utilization: give --device NAME --tensor-parallel-size N --gpu-memory-utilization FRACTION as the run had them"
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
