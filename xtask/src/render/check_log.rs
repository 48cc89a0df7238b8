//! `cargo xtask check-log` rendered: what the log said, what it was predicted from, and every
//! figure it printed beside the prediction with the error (a table, or one JSON object;
//! docs/output.md).
//!
//! Invariants: renders the [`Report`] it is handed and computes no prediction and no error; a
//! figure is shown as the log printed it (its text) and the prediction in the same unit and
//! precision; an error outside the bounds docs/engines.md checks is said on its own line,
//! with the request to send the output.

use engine_profile::Startup;

use crate::CliError;
use crate::inputs::log::{Figure, Printed};
use crate::inputs::serve_line::ServeLine;
use crate::out::outln;

const GIB: f64 = (1u64 << 30) as f64;

/// A prediction, in the unit the log prints the figure in.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicted {
    /// Bytes, printed in GiB.
    Bytes(u64),
    Count(u64),
    Ratio(f64),
    Text(String),
}

/// One printed figure beside its prediction.
#[derive(Debug, Clone)]
pub struct Row {
    pub figure: Figure,
    /// The worker's rank (None: one figure for the engine).
    pub rank: Option<u64>,
    pub printed: Printed,
    pub predicted: Predicted,
    /// (predicted - printed) / printed, in percent; None for text, or a printed zero.
    pub error: Option<f64>,
}

/// A setting of the run predicted, and where it comes from (the non-default args, another
/// line of the log, or the flag given).
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// `plan`'s flag.
    pub flag: String,
    /// Its value(s), space-separated (empty for a switch).
    pub value: String,
    pub from: String,
}

/// How much of the non-default args line was read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArgsRead {
    /// Its line (None: the log has none).
    pub line: Option<usize>,
    /// Read whole: every setting the run changed is in it.
    pub whole: bool,
    /// The keys read whole, in order.
    pub keys: Vec<String>,
    /// The key whose value the line is cut in, when its key was read.
    pub cut_in: Option<String>,
}

/// The log against the prediction.
#[derive(Debug, Clone)]
pub struct Report {
    pub log: String,
    /// Lines read, and whether the log went on beyond the bytes read.
    pub lines: usize,
    pub truncated: bool,
    pub engine: String,
    pub release: String,
    pub folder: String,
    /// The banner's line (None: the release came from `--engine`).
    pub banner_line: Option<usize>,
    /// The non-default args line, as read.
    pub args: ArgsRead,
    /// The run's flags, read from the non-default args.
    pub line: ServeLine,
    /// Every setting given to the prediction (`plan`'s flags), with its source.
    pub settings: Vec<Setting>,
    pub config: String,
    pub place: String,
    pub device: String,
    pub device_from: String,
    pub rows: Vec<Row>,
    /// Printed figures with no prediction to set beside (CUDA graphs' actual size).
    pub printed_only: Vec<Printed>,
    /// Figures the release prints that this log lacks, with the level that prints them.
    pub not_printed: Vec<(Figure, Option<String>)>,
    /// Printed figures set aside, and why.
    pub notes: Vec<String>,
    pub startup: Startup,
    /// The engine's own name of a figure where it prints it under another (SGLang's
    /// `max_total_num_tokens` is the KV tokens): the table shows it, the JSON adds it.
    pub labels: Vec<(Figure, &'static str)>,
}

impl Report {
    /// A figure's name as the engine prints it.
    pub fn label(&self, figure: Figure) -> &'static str {
        self.labels
            .iter()
            .find(|(f, _)| *f == figure)
            .map_or(figure.name(), |(_, l)| l)
    }
}

/// The bounds docs/engines.md checks the logs of data/vllm against (issue 16), in percent.
pub fn bound(figure: Figure) -> Option<f64> {
    match figure {
        Figure::Weights => Some(0.5),
        Figure::ActivationPeak => Some(10.0),
        Figure::KvCacheTokens => Some(2.0),
        _ => None,
    }
}

/// Whether a text figure printed is its prediction (the CUDA-graph captures compare their
/// `MODE=n` counts: the largest size each mode captured is not predicted).
pub fn text_matches(figure: Figure, predicted: &str, printed: &str) -> bool {
    match figure {
        Figure::CudaGraphCaptures => counts(predicted) == counts(printed),
        _ => predicted == printed,
    }
}

fn predicted_text(p: &Predicted) -> String {
    match p {
        Predicted::Bytes(b) => format!("{:.2} GiB", *b as f64 / GIB),
        Predicted::Count(n) => n.to_string(),
        Predicted::Ratio(x) => format!("{x:.2}x"),
        Predicted::Text(t) => t.clone(),
    }
}

fn printed_text(r: &Row) -> String {
    match r.predicted {
        Predicted::Bytes(_) => format!("{} GiB", r.printed.text),
        Predicted::Ratio(_) => format!("{}x", r.printed.text),
        Predicted::Count(_) => r.printed.text.replace(',', ""),
        // The table shows the counts compared (the JSON the whole text).
        Predicted::Text(_) if r.figure == Figure::CudaGraphCaptures => counts(&r.printed.text),
        Predicted::Text(_) => r.printed.text.clone(),
    }
}

/// `PIECEWISE=51 (largest=512), FULL=51 (largest=512)` as `PIECEWISE=51, FULL=51`.
fn counts(text: &str) -> String {
    text.split(", ")
        .map(|m| m.split(" (").next().unwrap_or(m).trim())
        .collect::<Vec<_>>()
        .join(", ")
}

fn error_text(r: &Row) -> String {
    match (&r.predicted, r.error) {
        (Predicted::Text(t), _) => {
            if text_matches(r.figure, t, &r.printed.text) {
                "same".into()
            } else {
                "differs".into()
            }
        }
        (_, Some(e)) => format!("{e:+.2}%"),
        (_, None) => "n/a".into(),
    }
}

/// The rows whose error is outside their bound.
fn outside(report: &Report) -> Vec<&Row> {
    report
        .rows
        .iter()
        .filter(|r| matches!((bound(r.figure), r.error), (Some(b), Some(e)) if e.abs() > b))
        .collect()
}

fn worker(rank: Option<u64>) -> String {
    rank.map_or("-".to_owned(), |r| r.to_string())
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(" ")
    }
}

pub fn print(report: &Report) -> Result<(), CliError> {
    let release = match report.banner_line {
        Some(line) => format!("line {line}"),
        None => "--engine".to_owned(),
    };
    outln!(
        "log       {}: {} lines{}; {} {} ({release}), engines/{}",
        report.log,
        report.lines,
        if report.truncated {
            " (the first 64 MiB)"
        } else {
            ""
        },
        crate::inputs::serve_table::engine_title(&report.engine),
        report.release,
        report.folder
    );
    outln!(
        "model     {}{}: {}, {}",
        report.line.model,
        if report.line.default_model {
            " (the engine's default: the args name no model)"
        } else {
            ""
        },
        report.config,
        report.place
    );
    outln!("device    {} (from {})", report.device, report.device_from);
    // Each source once, with the settings it gave, in the order they first appear.
    let mut sources: Vec<(&str, Vec<String>)> = Vec::new();
    for s in &report.settings {
        let word = if s.value.is_empty() {
            s.flag.clone()
        } else {
            format!("{} {}", s.flag, s.value)
        };
        match sources.iter_mut().find(|(from, _)| *from == s.from) {
            Some((_, words)) => words.push(word),
            None => sources.push((&s.from, vec![word])),
        }
    }
    let settings: Vec<String> = sources
        .iter()
        .map(|(from, words)| format!("{}: {from}", words.join(" ")))
        .collect();
    // A log read whole by its own launcher table (SGLang's server_args) lists its flags.
    outln!(
        "flags     {}",
        if settings.is_empty() {
            list(&report.line.flags)
        } else {
            settings.join("; ")
        }
    );
    outln!("ignored   {}", list(&report.line.ignored));
    outln!();
    outln!(
        "{:<24} {:>6} {:>22} {:>22} {:>9} {:>6}",
        "figure",
        "worker",
        "predicted",
        "printed",
        "error",
        "line"
    );
    for r in &report.rows {
        outln!(
            "{:<24} {:>6} {:>22} {:>22} {:>9} {:>6}",
            report.label(r.figure),
            worker(r.rank),
            predicted_text(&r.predicted),
            printed_text(r),
            error_text(r),
            r.printed.line
        );
    }
    outln!();
    let estimated = report
        .rows
        .iter()
        .any(|r| r.figure == Figure::CudaGraphEstimate);
    for p in &report.printed_only {
        outln!(
            "printed   {} {} GiB ({}, line {}): not predicted{}",
            report.label(p.figure),
            p.text,
            p.process.as_deref().unwrap_or("?"),
            p.line,
            if p.figure == Figure::CudaGraphActual && estimated {
                " (the prediction is the estimate)"
            } else {
                ""
            }
        );
    }
    if !report.not_printed.is_empty() {
        let names: Vec<String> = report
            .not_printed
            .iter()
            .map(|(f, level)| match level {
                Some(l) => format!("{} ({l} only)", f.name()),
                None => f.name().to_owned(),
            })
            .collect();
        outln!("absent    {}: not in the log", names.join(", "));
    }
    for note in &report.notes {
        outln!("note      {note}");
    }
    let out = outside(report);
    if out.is_empty() {
        outln!(
            "bounds    every figure within the bounds docs/engines.md checks (weights 0.5%, activation peak 10%, KV tokens 2%)"
        );
    } else {
        let named: Vec<String> = out
            .iter()
            .map(|r| {
                format!(
                    "{} of worker {} {:+.2}% (bound {}%)",
                    report.label(r.figure),
                    worker(r.rank),
                    r.error.unwrap_or(f64::NAN),
                    bound(r.figure).unwrap_or(f64::NAN)
                )
            })
            .collect();
        outln!(
            "bounds    outside: {}; please send this output (--format json) and the log (docs/engines.md, \"Checking a start-up log\")",
            named.join(", ")
        );
    }
    Ok(())
}

pub fn json(report: &Report) -> serde_json::Value {
    let number = |t: &str| t.replace(',', "").parse::<f64>().ok();
    let figures: Vec<serde_json::Value> = report
        .rows
        .iter()
        .map(|r| {
            let (predicted, bytes) = match &r.predicted {
                Predicted::Bytes(b) => (serde_json::json!(*b as f64 / GIB), Some(*b)),
                Predicted::Count(n) => (serde_json::json!(n), None),
                Predicted::Ratio(x) => (serde_json::json!(x), None),
                Predicted::Text(t) => (serde_json::json!(t), None),
            };
            let unit = match r.predicted {
                Predicted::Bytes(_) => "GiB",
                Predicted::Count(_) => "count",
                Predicted::Ratio(_) => "ratio",
                Predicted::Text(_) => "text",
            };
            let same = match &r.predicted {
                Predicted::Text(t) => Some(text_matches(r.figure, t, &r.printed.text)),
                _ => None,
            };
            serde_json::json!({
                "figure": r.figure.name(),
                "label": report.label(r.figure),
                "worker": r.rank,
                "process": r.printed.process,
                "line": r.printed.line,
                "unit": unit,
                "printed": r.printed.text,
                "printed_value": if unit == "text" { None } else { number(&r.printed.text) },
                "predicted": predicted,
                "predicted_bytes": bytes,
                "error_percent": r.error,
                "same": same,
                "bound_percent": bound(r.figure),
            })
        })
        .collect();
    serde_json::json!({
        "schema": 1,
        "log": { "file": report.log, "lines": report.lines, "truncated": report.truncated },
        "engine": {
            "name": report.engine,
            "release": report.release,
            "folder": report.folder,
            "banner_line": report.banner_line,
        },
        "model": {
            "name": report.line.model,
            "engine_default": report.line.default_model,
            "config": report.config,
            "found_in": report.place,
        },
        "device": { "name": report.device, "from": report.device_from },
        "args": {
            "line": report.args.line,
            "whole": report.args.whole,
            "keys": report.args.keys,
            "cut_in": report.args.cut_in,
        },
        "flags": report.line.flags,
        "settings": report.settings.iter().map(|s| serde_json::json!({
            "flag": s.flag,
            "value": s.value,
            "from": s.from,
        })).collect::<Vec<_>>(),
        "ignored": report.line.ignored,
        "figures": figures,
        "printed_only": report.printed_only.iter().map(|p| serde_json::json!({
            "figure": p.figure.name(),
            "process": p.process,
            "line": p.line,
            "printed": p.text,
        })).collect::<Vec<_>>(),
        "not_printed": report.not_printed.iter().map(|(f, level)| serde_json::json!({
            "figure": f.name(),
            "level": level,
        })).collect::<Vec<_>>(),
        "notes": report.notes,
        "outside_bounds": outside(report).iter().map(|r| serde_json::json!({
            "figure": r.figure.name(),
            "worker": r.rank,
            "error_percent": r.error,
            "bound_percent": bound(r.figure),
        })).collect::<Vec<_>>(),
    })
}

pub fn print_json(report: &Report) -> Result<(), CliError> {
    outln!("{}", serde_json::to_string_pretty(&json(report))?);
    Ok(())
}
