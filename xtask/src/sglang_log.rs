//! `cargo xtask check-log --engine sglang==X LOG`: an SGLang start-up log beside its
//! prediction. SGLang prints its settings as `server_args={...}` (every field, resolved), no
//! release and no GPU name, so the release comes from `--engine` and the device from
//! `--device`; the figures are read with the release folder's `log.toml` (`inputs/log.rs`),
//! the settings through its `serve_flags.toml` (`inputs/serve_line.rs`), and the prediction is
//! the one `cargo xtask plan --engine sglang==X` makes (`sglang.rs`). Rendered as vLLM's
//! check-log is (`render/check_log.rs`).
//!
//! Invariants: the lines and flags are the folder's data; a setting the log gives that the
//! prediction does not follow is named in a note, never dropped silently; an error is
//! (predicted - printed) / printed from the unrounded prediction.

use crate::CliError;
use crate::check_log::{Overrides, config_of, error_of, not_printed, owner, plan_args};
use crate::inputs::log::{self, Figure, LogFormat, Py, StartupLog};
use crate::inputs::model::ModelSources;
use crate::inputs::serve_line::{ServeLine, read_flags};
use crate::inputs::serve_table::{Class, ServeTable, Takes};
use crate::inputs::sglang::is_sglang;
use crate::render::check_log::{Predicted, Report, Row};
use crate::render::sglang::detail;

/// Checks `text` as an SGLang log when `--engine` names SGLang, or when the log prints
/// SGLang's `server_args=` line (then without `--engine` it is one line asking for the
/// release); None: not SGLang's (the caller reads it as vLLM's).
pub fn check_if_sglang(
    text: &str,
    shown: &str,
    overrides: &Overrides,
    sources: &ModelSources,
) -> Option<Result<Report, CliError>> {
    match overrides.engine.as_deref() {
        Some(e) if is_sglang(e) => Some(check(text, shown, e, overrides, sources)),
        Some(_) => None,
        None => text.lines().any(|l| l.contains("] server_args=")).then(|| {
            Err(format!(
                "{shown}: an SGLang log (its `server_args=` line), and SGLang prints no release: give --engine sglang==X"
            )
            .into())
        }),
    }
}

fn check(
    text: &str,
    shown: &str,
    spec: &str,
    overrides: &Overrides,
    sources: &ModelSources,
) -> Result<Report, CliError> {
    let release = engines::resolve(spec).map_err(|e| format!("{shown}: {e}"))?;
    let version = spec
        .split_once("==")
        .map_or(release.version.clone(), |(_, v)| v.trim().to_owned());
    let format =
        LogFormat::of_folder(release.folder, &version).map_err(|e| format!("{shown}: {e}"))?;
    let table =
        ServeTable::of_folder(release.folder, &version).map_err(|e| format!("{shown}: {e}"))?;
    let printed = log::read(text, &format);
    if !printed.printed.iter().any(|p| p.figure != Figure::Args) {
        return Err(format!(
            "{shown}: none of the start-up lines {} lists (a log cut before the model loaded, or another engine's?)",
            format.origin
        )
        .into());
    }
    let args_line = printed.first(Figure::Args).ok_or_else(|| {
        format!(
            "{shown}: no `server_args=` line ({}), so the run's settings are unknown",
            format.printing(Figure::Args).map_or("", |p| p.at.as_str())
        )
    })?;
    let (tokens, notes) = arg_words(&args_line.text, &table)
        .map_err(|e| format!("{shown} line {}: server_args: {e}", args_line.line))?;
    let mut line = ServeLine {
        engine: table.engine.clone(),
        release: table.release.clone(),
        version: table.version.clone(),
        ..ServeLine::default()
    };
    read_flags(&tokens, false, &table, &mut line)
        .map_err(|e| format!("{shown} line {}: server_args: {e}", args_line.line))?;
    let (config, place) = config_of(overrides, &line, sources, shown)?;
    let device = overrides.device.clone().ok_or_else(|| {
        format!("{shown}: SGLang's log names no GPU (nor its memory): give --device NAME")
    })?;
    let device = kernel_families::Devices::builtin()?
        .get(&device)?
        .name
        .clone();
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
    let plan = plan_args(&words, &format!("{shown}: the run's settings"))?;
    crate::inputs::sglang::check(&plan).map_err(|e| format!("{shown}: {e}"))?;
    let name = plan.engine.engine.clone().unwrap_or_default();
    let options = crate::inputs::settings::import_options(&plan)?;
    let prepared = crate::sglang::prepare_sglang(&plan, &name, options)?;
    let layout = crate::inputs::sglang::layout(&plan);
    let mut report = Report {
        log: shown.to_owned(),
        lines: printed.lines,
        truncated: false,
        engine: release.engine.clone(),
        release: version,
        folder: release.folder.to_owned(),
        banner_line: None,
        // server_args is read whole (its settings are in `line`).
        args: crate::render::check_log::ArgsRead::default(),
        line,
        settings: Vec::new(),
        config: config.display().to_string(),
        place,
        device,
        device_from: "--device".to_owned(),
        rows: Vec::new(),
        printed_only: Vec::new(),
        not_printed: Vec::new(),
        notes,
        startup: prepared.startup,
        // SGLang's names of the figures (managers/scheduler.py's line, model_runner.py's
        // `mem usage`).
        labels: vec![
            (Figure::KvCacheTokens, "max_total_num_tokens"),
            (Figure::MaxNumBatchedTokens, "chunked_prefill_size"),
            (Figure::MaxNumSeqs, "max_running_requests"),
            (Figure::MaxModelLen, "context_len"),
            (Figure::KCache, "k_size"),
            (Figure::VCache, "v_size"),
            (Figure::KvCache, "kv_size"),
            (Figure::AvailableMemory, "available_gpu_mem"),
        ],
    };
    compare(&printed, &format, (layout.tp, layout.pp), &mut report)?;
    Ok(report)
}

/// Modelled flags whose printed value SGLang may have resolved itself (see `arg_words`).
const RESOLVED_BY_SGLANG: [&str; 2] = ["--quantization", "--disable-radix-cache"];

/// The words of the settings `server_args={...}` prints that the prediction reads (the flags
/// `serve_flags.toml` models, but not one printed at the default its `no_byte` gives, and the
/// model), and a note for each other setting that is not
/// its default and may change memory (a `refused` flag whose value is none of its `no_byte`
/// values): SGLang prints every field resolved, so such a value may be SGLang's own choice.
fn arg_words(text: &str, table: &ServeTable) -> Result<(Vec<String>, Vec<String>), String> {
    let Py::Dict(pairs) = log::parse_py(&as_dict(text)?)? else {
        return Err("not a dict".into());
    };
    let mut words = Vec::new();
    let mut notes = Vec::new();
    for (key, value) in pairs {
        let Py::Str(key) = key else {
            return Err(format!("a key {key:?} that is not a name"));
        };
        let Some((long, flag)) = table.flag(&format!("--{}", key.replace('_', "-"))) else {
            // A field without a flag (no_cli): set by SGLang, not by the command line.
            continue;
        };
        let is_default = match (&value, flag.takes) {
            (Py::None, _) | (Py::Bool(false), Takes::None) => true,
            (Py::List(l), _) if l.is_empty() => true,
            (Py::Dict(d), _) if d.is_empty() => true,
            (Py::Bool(b), _) => flag.no_byte.contains(&toml::Value::Boolean(*b)),
            (v, _) => {
                let words = v.words();
                flag.no_byte.iter().any(|nb| match nb {
                    toml::Value::String(s) => words == [s.clone()],
                    toml::Value::Integer(i) => words == [i.to_string()],
                    toml::Value::Float(x) => {
                        words.len() == 1 && words[0].parse::<f64>().ok() == Some(*x)
                    }
                    _ => false,
                })
            }
        };
        match flag.class {
            Class::Ignored => {}
            Class::Refused if is_default => {}
            // A modelled setting printed at its default (`no_byte`), which SGLang resolves
            // for every model: read as not given.
            Class::Modelled if is_default && !flag.no_byte.is_empty() => {}
            Class::Refused => notes.push(format!(
                "server_args sets {key}={} (SGLang's choice or the run's), which the prediction does not follow: {}",
                value.words().join(" "),
                flag.why.as_deref().unwrap_or("not modelled")
            )),
            // SGLang prints these resolved, and resolves them itself: the checkpoint's own
            // method (awq_marlin for an AWQ checkpoint, model_config.py _verify_quantization)
            // and the radix cache its hooks turn off for hybrid and recurrent models. A value
            // set is named, as a refused flag's is, never read as the line's own.
            Class::Modelled if RESOLVED_BY_SGLANG.contains(&long) && !is_default => notes.push(
                format!(
                    "server_args sets {key}={} (SGLang's choice or the run's), which the prediction does not read from a log: give it on a launcher line if the run set it",
                    value.words().join(" ")
                ),
            ),
            Class::Model | Class::Modelled => match (flag.takes, &value) {
                (_, Py::None) => {}
                (Takes::None, Py::Bool(true)) => words.push(long.to_owned()),
                (Takes::None, Py::Bool(false)) => {}
                (_, v) => {
                    words.push(long.to_owned());
                    words.extend(v.words());
                }
            },
        }
    }
    Ok((words, notes))
}

/// The settings as a dict literal: a dict as printed (0.5.19 on, `resolved_dict()`), or the
/// dataclass's repr `ServerArgs(model_path='m', tp_size=1, ...)` (before 0.5.19,
/// `f"{server_args=}"`) rewritten key by key (`'model_path': 'm', ...`).
fn as_dict(text: &str) -> Result<String, String> {
    let Some(open) = text.trim().strip_prefix("ServerArgs(") else {
        return Ok(text.to_owned());
    };
    let inner = open
        .strip_suffix(')')
        .ok_or("ServerArgs(...) is not closed (a line cut short?)")?;
    // The fields, split at the commas outside quotes and brackets.
    let mut fields = Vec::new();
    let (mut depth, mut quote, mut escaped, mut start) = (0usize, None, false, 0);
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{' | '<') => depth += 1,
            (None, ')' | ']' | '}' | '>') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                fields.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() || depth > 0 {
        return Err("ServerArgs(...) is not closed (a line cut short?)".into());
    }
    fields.push(&inner[start..]);
    let mut out = Vec::new();
    for f in fields.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
        let (key, value) = f
            .split_once('=')
            .ok_or_else(|| format!("`{f}` is not a field=value"))?;
        out.push(format!("'{}': {}", key.trim(), value.trim()));
    }
    Ok(format!("{{{}}}", out.join(", ")))
}

/// Each printed figure beside SGLang's prediction of it.
fn compare(
    log: &StartupLog,
    format: &LogFormat,
    (tp, pp): (u64, u64),
    report: &mut Report,
) -> Result<(), CliError> {
    use Figure::*;
    let s = &report.startup;
    let d = detail(s)?;
    let mut rows = Vec::new();
    for p in &log.printed {
        let engine_wide = matches!(
            p.figure,
            Args | KvCacheTokens | MaxNumBatchedTokens | MaxNumSeqs | MaxModelLen
        );
        let Some((rank, own)) = owner(
            p,
            engine_wide,
            false,
            (tp, pp),
            &d.workers,
            |w| w.rank,
            &mut report.notes,
        ) else {
            continue;
        };
        let predicted = match (p.figure, own) {
            (Args, _) => continue,
            // A hybrid pool prints a line per pool, the sliding one first up to 0.5.16 and the
            // full one first from 0.5.17 (mem_cache/swa_memory_pool.py): shown, not compared.
            (KCache | VCache, _) if d.swa_tokens.is_some() => {
                report.printed_only.push(p.clone());
                continue;
            }
            (KvCacheTokens, _) => Predicted::Count(d.max_total_num_tokens),
            (MaxNumBatchedTokens, _) => Predicted::Count(d.chunked_prefill_size),
            (MaxNumSeqs, _) => Predicted::Count(d.max_running_requests),
            (MaxModelLen, _) => Predicted::Count(d.context_len),
            (Weights, Some(w)) => Predicted::Bytes(w.weights),
            (KCache, Some(w)) => Predicted::Bytes(w.k_bytes),
            (VCache, Some(w)) => Predicted::Bytes(w.v_bytes),
            // MLA's one pool is printed as the K size (render/sglang.rs).
            (KvCache, Some(w)) => Predicted::Bytes(w.k_bytes),
            _ => {
                report.printed_only.push(p.clone());
                continue;
            }
        };
        let error = error_of(&predicted, &p.text);
        rows.push(Row {
            figure: p.figure,
            rank,
            printed: p.clone(),
            predicted,
            error,
        });
    }
    report.rows = rows;
    not_printed(
        log,
        format,
        &[Weights, KvCacheTokens, MaxNumSeqs, MaxModelLen],
        report,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SYNTHETIC SGLang 0.5.23 log: each line is a format string of engines/sglang-0.5.23/
    /// log.toml filled by hand (no real SGLang start-up exists on this machine). Its printed
    /// figures are invented: the test checks the parsing and the prediction, and no error it
    /// computes is a measured one.
    const SYNTHETIC: &str = "[2026-12-01 10:00:00] server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'trust_remote_code': False, 'context_length': None, 'dtype': 'auto', 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.83, 'max_running_requests': None, 'chunked_prefill_size': 8192, 'page_size': 1, 'tp_size': 1, 'port': 30000, 'disable_radix_cache': False, 'mamba_full_memory_ratio': 0.9, 'max_mamba_cache_size': None, 'attention_backend': 'fa3', 'lora_paths': None, 'json_model_override_args': '{}'}\n\
[2026-12-01 10:00:20 TP0] Load weight end. elapsed=14.20 s, type=LlamaForCausalLM, avail mem=63.40 GB, mem usage=15.10 GB.\n\
[2026-12-01 10:00:21 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB\n\
[2026-12-01 10:00:40 TP0] Capture cuda graph end. bs=[1, 2, 4, 8], elapsed=18.50 s, mem usage=0.42 GB, avail mem=13.48 GB.\n\
[2026-12-01 10:00:41 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=131072, available_gpu_mem=13.40 GB";

    fn overrides(engine: Option<&str>, device: Option<&str>) -> Overrides {
        Overrides {
            hf_config: None,
            device: device.map(str::to_owned),
            engine: engine.map(str::to_owned),
            run: Vec::new(),
        }
    }

    fn sources() -> ModelSources {
        ModelSources {
            cwd: std::env::temp_dir(),
            hub: None,
            data: crate::inputs::model::repository_data(),
        }
    }

    /// A SYNTHETIC 0.5.23 log of gpt-oss-20b (format strings of log.toml filled by hand, the
    /// figures invented): the ratio in `server_args` is followed, and the pools' K and V are
    /// shown, not compared (the two lines' order changed in 0.5.17).
    const SYNTHETIC_SWA: &str = "[2026-12-01 10:00:00] server_args={'model_path': 'openai/gpt-oss-20b', 'dtype': 'bfloat16', 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.83, 'page_size': 1, 'tp_size': 1, 'swa_full_tokens_ratio': 0.8, 'disable_hybrid_swa_memory': False}\n\
[2026-12-01 10:00:20 TP0] Load weight end. elapsed=14.20 s, type=GptOssForCausalLM, avail mem=65.00 GB, mem usage=13.60 GB.\n\
[2026-12-01 10:00:21 TP0] Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1250000, K size: 14.30 GB, V size: 14.30 GB\n\
[2026-12-01 10:00:21 TP0] SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000000, K size: 11.40 GB, V size: 11.40 GB\n\
[2026-12-01 10:00:41 TP0] max_total_num_tokens=1250000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=11.00 GB";

    #[test]
    fn a_hybrid_pool_s_two_kv_lines_are_shown_not_compared() {
        let o = overrides(Some("sglang==0.5.23"), Some("h100-sxm"));
        let report = check_if_sglang(SYNTHETIC_SWA, "s.log", &o, &sources())
            .unwrap()
            .unwrap();
        assert!(
            report
                .line
                .flags
                .windows(2)
                .any(|w| w == ["--swa-full-tokens-ratio", "0.8"]),
            "{:?}",
            report.line.flags
        );
        assert!(
            report
                .rows
                .iter()
                .all(|r| !matches!(r.figure, Figure::KCache | Figure::VCache))
        );
        let kv_lines = report
            .printed_only
            .iter()
            .filter(|p| matches!(p.figure, Figure::KCache | Figure::VCache))
            .count();
        // The reader keeps each figure as a rank first prints it (inputs/log.rs): one line's K
        // and V.
        assert_eq!(kv_lines, 2);
        let tokens = report
            .rows
            .iter()
            .find(|r| r.figure == Figure::KvCacheTokens)
            .unwrap();
        // engines/tests/sglang_swa.rs derives the 1,247,907 full tokens.
        assert_eq!(tokens.predicted, Predicted::Count(1_247_907));
    }

    #[test]
    fn a_synthetic_sglang_log_reads_its_figures_and_predicts_them() {
        let o = overrides(Some("sglang==0.5.23"), Some("h100-sxm"));
        let report = check_if_sglang(SYNTHETIC, "s.log", &o, &sources())
            .unwrap()
            .unwrap();
        assert_eq!(
            report.line.flags,
            [
                "--dtype",
                "auto",
                "--kv-cache-dtype",
                "auto",
                "--mem-fraction-static",
                "0.83",
                "--chunked-prefill-size",
                "8192",
                "--page-size",
                "1",
                "--tp-size",
                "1"
            ]
        );
        let rows: Vec<(Figure, Option<u64>, &str, Predicted)> = report
            .rows
            .iter()
            .map(|r| {
                (
                    r.figure,
                    r.rank,
                    r.printed.text.as_str(),
                    r.predicted.clone(),
                )
            })
            .collect();
        let w = &detail(&report.startup).unwrap().workers[0];
        assert_eq!(
            rows,
            [
                (
                    Figure::Weights,
                    Some(0),
                    "15.10",
                    Predicted::Bytes(w.weights)
                ),
                (
                    Figure::KCache,
                    Some(0),
                    "24.41",
                    Predicted::Bytes(w.k_bytes)
                ),
                (
                    Figure::VCache,
                    Some(0),
                    "24.41",
                    Predicted::Bytes(w.v_bytes)
                ),
                (
                    Figure::KvCacheTokens,
                    None,
                    "400000",
                    Predicted::Count(411_936)
                ),
                (
                    Figure::MaxNumBatchedTokens,
                    None,
                    "8192",
                    Predicted::Count(8192)
                ),
                (Figure::MaxNumSeqs, None, "2048", Predicted::Count(2048)),
                (
                    Figure::MaxModelLen,
                    None,
                    "131072",
                    Predicted::Count(131_072)
                ),
            ]
        );
        // Llama-3.1-8B's K half: 32 layers x 8 heads x 128 x 2 B a token, over the 411,936
        // tokens and the one padding page (page_size 1) the pool allocates beside them.
        assert_eq!(w.k_bytes, (411_936 + 1) * 32 * 8 * 128 * 2);
        let printed_only: Vec<(Figure, &str)> = report
            .printed_only
            .iter()
            .map(|p| (p.figure, p.text.as_str()))
            .collect();
        assert_eq!(
            printed_only,
            [
                (Figure::CudaGraphActual, "0.42"),
                (Figure::AvailableMemory, "13.40")
            ]
        );
        assert_eq!(
            report.notes,
            [
                "server_args sets attention_backend=fa3 (SGLang's choice or the run's), which the prediction does not follow: the attention backend is chosen as SGLang chooses it by default; another one's workspaces are not modelled"
            ]
        );
    }

    /// A SYNTHETIC SGLang 0.5.9 log: `server_args=` is the dataclass's repr before 0.5.19
    /// (engines/sglang-0.5.9/log.toml); the other lines are 0.5.23's format strings, which
    /// 0.5.9 prints alike (without the K/V line's `dtype:`).
    #[test]
    fn a_synthetic_0_5_9_log_reads_its_settings_from_the_dataclass_repr() {
        let text = "[2026-12-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tokenizer_path='meta-llama/Llama-3.1-8B-Instruct', context_length=None, mem_fraction_static=0.85, chunked_prefill_size=4096, tp_size=2, cuda_graph_max_bs=64, host='0.0.0.0', port=30000, api_key=None, disable_radix_cache=False, speculative_algorithm=None, lora_paths=None, json_model_override_args='{}', random_seed=12345)\n\
[2026-12-01 10:00:20 TP1] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.00 GB, mem usage=7.51 GB.\n\
[2026-12-01 10:00:21 TP1] KV Cache is allocated. #tokens: 900000, K size: 27.47 GB, V size: 27.47 GB\n\
[2026-12-01 10:00:41 TP0] max_total_num_tokens=900000, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=10.00 GB";
        let o = overrides(Some("sglang==0.5.9"), Some("h100-sxm"));
        let report = check_if_sglang(text, "s.log", &o, &sources())
            .unwrap()
            .unwrap();
        assert_eq!(
            report.line.flags,
            [
                "--mem-fraction-static",
                "0.85",
                "--chunked-prefill-size",
                "4096",
                "--tp-size",
                "2",
                "--cuda-graph-max-bs",
                "64"
            ]
        );
        assert!(report.notes.is_empty(), "{:?}", report.notes);
        let d = detail(&report.startup).unwrap();
        let got: Vec<(Figure, Option<u64>, Predicted)> = report
            .rows
            .iter()
            .map(|r| (r.figure, r.rank, r.predicted.clone()))
            .collect();
        let w1 = d.workers.iter().find(|w| w.rank == 1).unwrap();
        assert_eq!(
            got,
            [
                (Figure::Weights, Some(1), Predicted::Bytes(w1.weights)),
                (Figure::KCache, Some(1), Predicted::Bytes(w1.k_bytes)),
                (Figure::VCache, Some(1), Predicted::Bytes(w1.v_bytes)),
                (
                    Figure::KvCacheTokens,
                    None,
                    Predicted::Count(d.max_total_num_tokens)
                ),
                (Figure::MaxNumBatchedTokens, None, Predicted::Count(4096)),
                (
                    Figure::MaxNumSeqs,
                    None,
                    Predicted::Count(d.max_running_requests)
                ),
                (Figure::MaxModelLen, None, Predicted::Count(131_072)),
            ]
        );
        assert_eq!(
            as_dict("ServerArgs(a='x, y)', b=[1, 2], c=Cfg(d=1, e='f'))").unwrap(),
            "{'a': 'x, y)', 'b': [1, 2], 'c': Cfg(d=1, e='f')}"
        );
        assert_eq!(
            as_dict("ServerArgs(a='x").unwrap_err(),
            "ServerArgs(...) is not closed (a line cut short?)"
        );
    }

    #[test]
    fn what_an_sglang_log_does_not_say_is_asked_for_in_one_line() {
        let e = |engine: Option<&str>, device: Option<&str>, text: &str| {
            check_if_sglang(text, "s.log", &overrides(engine, device), &sources())
                .unwrap()
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e(None, None, SYNTHETIC),
            "s.log: an SGLang log (its `server_args=` line), and SGLang prints no release: give --engine sglang==X"
        );
        assert_eq!(
            e(Some("sglang==0.5.23"), None, SYNTHETIC),
            "s.log: SGLang's log names no GPU (nor its memory): give --device NAME"
        );
        // A release no folder claims: the list is the catalogue's.
        assert!(
            e(Some("sglang==0.3.0"), Some("h100-sxm"), SYNTHETIC).starts_with(
                "s.log: --engine sglang==0.3.0: release 0.3.0 is not modelled; the releases modelled are "
            )
        );
        // A vLLM log without --engine is not SGLang's.
        assert!(
            check_if_sglang(
                "vLLM server version 0.19.0",
                "v.log",
                &overrides(None, None),
                &sources()
            )
            .is_none()
        );
    }
}
