//! The engine prediction rendered: the table vLLM's start-up lines mirror, the JSON `engine`
//! object, JSON lines (a `run` record with the inputs, one `worker` record per worker, a
//! `summary`) and CSV (one line per worker with the run's inputs), with the budget questions'
//! answers (one line, one key, one column each) and the settings used with where each came
//! from; and the answers of `--devices`, one row (one array element) per device.
//!
//! Invariants: renders what it is handed (a `Startup`, the `Budget` answers and the settings)
//! and computes no prediction; every figure printed is one of the start-up's; the CSV's input
//! columns are the settings' names, in their order, so a setting added is a column added.

use engine_profile::{SmallestTp, Startup, Verdict, Worker};
use kernel_families::{Device, Precision};

use crate::CliError;
use crate::inputs::flags::OutputFormat;
use crate::out::outln;

/// A setting the prediction used: its name (vLLM's, as `vllm serve` spells the flag with
/// underscores), its value, and where it came from (a flag, a default and whose).
#[derive(Debug, Clone)]
pub struct Setting {
    pub name: &'static str,
    pub value: serde_json::Value,
    pub source: String,
}

impl Setting {
    pub fn new(name: &'static str, value: serde_json::Value, source: String) -> Setting {
        Setting {
            name,
            value,
            source,
        }
    }

    /// Whether a flag gave it (its source names one).
    fn given(&self) -> bool {
        self.source.starts_with("--")
    }
}

/// A start-up predicted, with what it was asked and answered.
pub struct Prediction<'a> {
    /// The config's path.
    pub origin: &'a str,
    /// The weights' quantization, in words.
    pub quantization: &'a str,
    pub startup: &'a Startup,
    pub budget: &'a Budget,
    /// Every setting used.
    pub inputs: &'a [Setting],
    /// The serve line the prediction was read from, if any (render/serve_line.rs).
    pub serve: Option<&'a crate::inputs::serve_line::ServeNote>,
}

/// The verdict as keys: `starts`, and when it does not, `reason` and the figures of it.
pub(crate) fn verdict_json(v: &Verdict) -> serde_json::Value {
    match v {
        Verdict::Starts => serde_json::json!({ "starts": true }),
        Verdict::WeightsAboveDevice {
            weights,
            device_total,
        } => serde_json::json!({
            "starts": false,
            "reason": "weights_above_device",
            "weights": weights,
            "device_total": device_total,
        }),
        Verdict::NoKvMemory { short_by } => serde_json::json!({
            "starts": false,
            "reason": "no_kv_memory",
            "short_by": short_by,
        }),
        Verdict::MaxModelLenTooLong {
            kv_tokens,
            max_model_len,
        } => serde_json::json!({
            "starts": false,
            "reason": "max_model_len_too_long",
            "kv_tokens": kv_tokens,
            "max_model_len": max_model_len,
        }),
        Verdict::MaxModelLenAboveModel {
            max_model_len,
            longest,
        } => serde_json::json!({
            "starts": false,
            "reason": "max_model_len_above_model",
            "max_model_len": max_model_len,
            "longest": longest,
        }),
    }
}

/// The reason's key (empty when it starts).
pub(crate) fn reason(v: &Verdict) -> &'static str {
    match v {
        Verdict::Starts => "",
        Verdict::WeightsAboveDevice { .. } => "weights_above_device",
        Verdict::NoKvMemory { .. } => "no_kv_memory",
        Verdict::MaxModelLenTooLong { .. } => "max_model_len_too_long",
        Verdict::MaxModelLenAboveModel { .. } => "max_model_len_above_model",
    }
}

/// One worker's figures, bytes.
fn worker_json(w: &Worker) -> serde_json::Value {
    serde_json::json!({
        "rank": w.rank,
        "tp_rank": w.tp_rank,
        "pp_stage": w.pp_stage,
        "weights": w.weights,
        "activation_peak": w.activation_peak,
        "activation_peak_set_by": w.peak_set_by.name(),
        "non_torch": w.non_torch,
        "resident": w.resident,
        "counted_non_kv": w.counted_non_kv,
        "kv_cache": w.kv_cache,
        "kv_blocks": w.blocks,
        "kv_block_bytes": w.block_bytes,
        "cuda_graph_estimate": w.cuda_graph.total,
        "encoder": (w.encoder.items > 0).then(|| serde_json::json!({
            "items": w.encoder.items,
            "modality": if w.encoder.video { "video" } else { "image" },
            "inputs": w.encoder.held,
            "outputs": w.encoder.outputs,
            "peak": w.encoder.peak,
        })),
    })
}

/// The CSV columns of a worker's figures (after the inputs' columns).
const WORKER_COLUMNS: &str = "rank,tp_rank,pp_stage,weights,activation_peak,activation_peak_set_by,non_torch,resident,counted_non_kv,kv_cache,kv_blocks,kv_block_bytes,cuda_graph_estimate";

/// The CSV columns of the start-up's answers (after the worker's).
const ANSWER_COLUMNS: &str = "requested,kv_cache_tokens,max_concurrency,starts,reason,largest_max_model_len,largest_max_num_seqs,smallest_tp,gpu_memory_utilization_for_target";

/// A value as a CSV field: a number or word as is, text with a comma or quote quoted, null
/// blank.
pub(crate) fn csv_value(v: &serde_json::Value) -> String {
    let text = match v {
        serde_json::Value::Null => return String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

impl Prediction<'_> {
    /// The settings as `{name: {value, source}}`, in order.
    fn inputs_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .inputs
            .iter()
            .map(|i| {
                (
                    i.name.to_owned(),
                    serde_json::json!({ "value": i.value, "source": i.source }),
                )
            })
            .collect();
        serde_json::Value::Object(map)
    }

    /// The answers of the budget questions, as JSON values (null when not asked).
    fn answers(&self) -> [serde_json::Value; 4] {
        let b = self.budget;
        [
            serde_json::json!(b.largest_max_model_len.flatten()),
            serde_json::json!(b.largest_max_num_seqs.flatten()),
            serde_json::json!(
                b.smallest_tp
                    .as_ref()
                    .and_then(|t| t.found.as_ref().map(|(n, _)| *n))
            ),
            serde_json::json!(
                b.target
                    .and_then(|(_, u)| u.map(|u| (u * 1e4).ceil() / 1e4))
            ),
        ]
    }

    /// Prints the prediction as `format` asks.
    pub fn print(&self, format: OutputFormat) -> Result<(), CliError> {
        let s = self.startup;
        match format {
            OutputFormat::Table => {
                if let Some(serve) = self.serve {
                    crate::render::serve_line::print(serve)?;
                }
                print_table(self.origin, self.quantization, s, self.inputs)?;
                print_budget(self.budget)?;
            }
            OutputFormat::Json => {
                let mut j = json(s);
                add_budget(&mut j["engine"], self.budget);
                j["engine"]["verdict"] = verdict_json(&s.verdict);
                j["engine"]["inputs"] = self.inputs_json();
                if let Some(serve) = self.serve {
                    j["serve_line"] = crate::render::serve_line::json(serve);
                }
                outln!("{}", serde_json::to_string_pretty(&j)?);
            }
            OutputFormat::Jsonl => {
                let mut run = serde_json::json!({
                    "record": "run",
                    "engine": s.engine,
                    "version": s.version,
                    "releases": s.releases,
                    "config": self.origin,
                    "inputs": self.inputs_json(),
                });
                if let Some(serve) = self.serve {
                    run["serve_line"] = crate::render::serve_line::json(serve);
                }
                outln!("{run}");
                for w in &s.workers {
                    let mut record = worker_json(w);
                    record["record"] = serde_json::json!("worker");
                    outln!("{record}");
                }
                let mut summary = json(s)["engine"].clone();
                if let Some(map) = summary.as_object_mut() {
                    for key in ["name", "version", "releases", "workers"] {
                        map.remove(key);
                    }
                }
                add_budget(&mut summary, self.budget);
                summary["verdict"] = verdict_json(&s.verdict);
                summary["record"] = serde_json::json!("summary");
                outln!("{summary}");
            }
            OutputFormat::Csv => {
                let names: Vec<&str> = self.inputs.iter().map(|i| i.name).collect();
                outln!("{},{WORKER_COLUMNS},{ANSWER_COLUMNS}", names.join(","));
                let inputs: Vec<String> = self.inputs.iter().map(|i| csv_value(&i.value)).collect();
                let answers: Vec<String> = self.answers().iter().map(csv_value).collect();
                for w in &s.workers {
                    let j = worker_json(w);
                    let worker: Vec<String> = WORKER_COLUMNS
                        .split(',')
                        .map(|k| csv_value(&j[k]))
                        .collect();
                    outln!(
                        "{},{},{},{},{},{},{},{}",
                        inputs.join(","),
                        worker.join(","),
                        s.requested,
                        s.kv_cache_tokens,
                        s.max_concurrency,
                        s.verdict == Verdict::Starts,
                        reason(&s.verdict),
                        answers.join(",")
                    );
                }
            }
        }
        Ok(())
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// The budget questions asked on the command line, answered.
#[derive(Debug, Default)]
pub struct Budget {
    pub largest_max_model_len: Option<Option<u64>>,
    pub largest_max_num_seqs: Option<Option<u64>>,
    pub smallest_tp: Option<engine_profile::SmallestTp>,
    pub target: Option<(u64, Option<f64>)>,
}

pub fn print_budget(b: &Budget) -> Result<(), CliError> {
    if let Some(answer) = b.largest_max_model_len {
        match answer {
            Some(n) => outln!("largest max_model_len that starts: {n}"),
            None => outln!("largest max_model_len that starts: none (nothing starts)"),
        }
    }
    if let Some(answer) = b.largest_max_num_seqs {
        match answer {
            Some(n) => outln!("largest max_num_seqs that starts: {n}"),
            None => outln!("largest max_num_seqs that starts: none (not even 1 starts)"),
        }
    }
    if let Some(tp) = &b.smallest_tp {
        print_smallest_tp("tensor_parallel_size", tp)?;
    }
    if let Some((tokens, util)) = b.target {
        match util {
            Some(u) => outln!(
                "gpu_memory_utilization for {tokens} KV tokens: {:.4}",
                // Rounded up, so the printed figure still holds the target.
                (u * 1e4).ceil() / 1e4
            ),
            None => outln!(
                "gpu_memory_utilization for {tokens} KV tokens: none (more than the whole device)"
            ),
        }
    }
    Ok(())
}

/// The smallest-TP answer, under the engine's own name for the flag (`flag`).
pub(crate) fn print_smallest_tp(flag: &str, tp: &SmallestTp) -> Result<(), CliError> {
    let tried = tp
        .tried
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match &tp.found {
        Some((n, s)) => outln!(
            "smallest {flag} that starts: {n} ({} KV tokens; tried {tried})",
            s.kv_cache_tokens
        ),
        None => outln!("smallest {flag} that starts: none of {tried}"),
    }
    Ok(())
}

pub fn add_budget(engine: &mut serde_json::Value, b: &Budget) {
    if let Some(answer) = b.largest_max_model_len {
        engine["largest_max_model_len"] = serde_json::json!(answer);
    }
    if let Some(answer) = b.largest_max_num_seqs {
        engine["largest_max_num_seqs"] = serde_json::json!(answer);
    }
    if let Some(tp) = &b.smallest_tp {
        engine["smallest_tp"] = match &tp.found {
            Some((n, s)) => serde_json::json!({
                "tensor_parallel_size": n,
                "kv_cache_tokens": s.kv_cache_tokens,
                "tried": tp.tried,
            }),
            None => serde_json::json!({ "tensor_parallel_size": null, "tried": tp.tried }),
        };
    }
    if let Some((tokens, util)) = b.target {
        engine["gpu_memory_utilization_for_target"] = serde_json::json!({
            "target_kv_tokens": tokens,
            "gpu_memory_utilization": util.map(|u| (u * 1e4).ceil() / 1e4),
        });
    }
}

pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / GIB)
}

/// The workers as rows: consecutive workers that allocate alike share one row, named by their
/// rank range (every TP rank of a stage, in practice).
pub(crate) fn distinct_rows(workers: &[Worker]) -> Vec<(String, &Worker)> {
    let same = |a: &Worker, b: &Worker| {
        (
            a.pp_stage,
            a.weights,
            a.activation_peak,
            a.non_torch,
            a.kv_cache,
        ) == (
            b.pp_stage,
            b.weights,
            b.activation_peak,
            b.non_torch,
            b.kv_cache,
        )
    };
    let mut rows: Vec<(u64, u64, &Worker)> = Vec::new();
    for w in workers {
        match rows.last_mut() {
            Some((_, last, first)) if same(first, w) && *last + 1 == w.rank => *last = w.rank,
            _ => rows.push((w.rank, w.rank, w)),
        }
    }
    rows.into_iter()
        .map(|(lo, hi, w)| {
            let ranks = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            };
            (ranks, w)
        })
        .collect()
}

/// Printed under the table when a worker's peak is its forward's: the one such log is the one
/// figure outside issue 16's bounds (docs/engines.md, "The PP 2 gap").
const FORWARD_SET_PEAK_NOTE: &str = "note      a peak set by the forward is the least checked figure: on the one vLLM log of such a peak (Llama-3.1-8B, PP 2, stage 0) it was 16% below what vLLM printed (docs/engines.md, \"The PP 2 gap\")";

pub fn print_table(
    origin: &str,
    quantization: &str,
    s: &Startup,
    inputs: &[Setting],
) -> Result<(), CliError> {
    outln!(
        "engine    {} {} (the profile of releases {})",
        s.engine,
        s.version,
        s.releases.join(", ")
    );
    outln!("config    {origin}");
    let d = &s.device_figures;
    outln!(
        "device    {} ({}; compute capability {}, {} SMs)",
        d.name,
        d.product.as_deref().unwrap_or("product string not known"),
        d.compute_capability.as_deref().unwrap_or("not known"),
        d.sm_count
    );
    let default = |yes: bool| {
        if yes {
            " (the engine's default here)"
        } else {
            ""
        }
    };
    outln!(
        "run       max_num_batched_tokens {}{}, max_num_seqs {}{}, max_model_len {}, quantization {quantization}",
        s.max_num_batched_tokens,
        default(s.max_num_batched_tokens_defaulted),
        s.max_num_seqs,
        default(s.max_num_seqs_defaulted),
        s.max_model_len
    );
    let caveat = d
        .cuda_total_precision
        .map(Precision::caveat)
        .filter(|c| !c.is_empty())
        .map_or(String::new(), |c| format!("; {c}"));
    outln!(
        "memory    total {} (as CUDA reports{caveat}), requested {}",
        gib(s.device_total),
        gib(s.requested)
    );
    let shown = |i: &Setting| match &i.value {
        serde_json::Value::String(text) => format!("{} {text}", i.name),
        serde_json::Value::Null => format!("{} unset", i.name),
        v => format!("{} {v}", i.name),
    };
    let given: Vec<String> = inputs
        .iter()
        .filter(|i| i.given() && i.name != "engine")
        .map(shown)
        .collect();
    if !given.is_empty() {
        outln!("given     {}", given.join(", "));
    }
    // Defaults grouped by where they come from, in the order first met.
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for i in inputs.iter().filter(|i| !i.given() && i.name != "engine") {
        match groups.iter_mut().find(|(source, _)| *source == i.source) {
            Some((_, names)) => names.push(shown(i)),
            None => groups.push((&i.source, vec![shown(i)])),
        }
    }
    let defaults: Vec<String> = groups
        .iter()
        .map(|(source, names)| format!("{} ({source})", names.join(", ")))
        .collect();
    if !defaults.is_empty() {
        outln!("defaults  {}", defaults.join("; "));
    }
    outln!();
    outln!(
        "   ranks  stage     weights  activation peak  (set by)   non-torch    KV cache  CUDA graphs (est.)"
    );
    for (ranks, w) in distinct_rows(&s.workers) {
        outln!(
            "{:>8} {:>6} {:>11} {:>16} {:>9} {:>11} {:>11} {:>19}",
            ranks,
            w.pp_stage,
            gib(w.weights),
            gib(w.activation_peak),
            w.peak_set_by.name(),
            gib(w.non_torch),
            gib(w.kv_cache),
            gib(w.cuda_graph.total)
        );
    }
    outln!();
    if s.workers.len() > 1 {
        outln!("(KV blocks: the smallest count over the workers, as vLLM allocates them)");
    }
    if s.workers
        .iter()
        .any(|w| w.peak_set_by == engine_profile::PeakSetBy::Forward)
    {
        outln!("{FORWARD_SET_PEAK_NOTE}");
    }
    outln!(
        "KV layout {} blocks, {}",
        s.kv_blocks,
        kv_groups(&s.kv_layout)
    );
    if let Some(w) = s.workers.iter().find(|w| w.encoder.items > 0) {
        outln!(
            "Encoder profile: {} dummy {} encoded first; inputs {} and outputs {} kept to the end, {} at its own peak (worker {})",
            w.encoder.items,
            match (w.encoder.video, w.encoder.items) {
                (true, 1) => "video",
                (true, _) => "videos",
                (false, 1) => "image",
                (false, _) => "images",
            },
            gib(w.encoder.held),
            gib(w.encoder.outputs),
            gib(w.encoder.peak),
            w.rank
        );
    }
    outln!("GPU KV cache size: {} tokens", s.kv_cache_tokens);
    outln!(
        "Maximum concurrency for {} tokens per request: {:.2}x",
        s.max_model_len,
        s.max_concurrency
    );
    let captures = s.workers.first().map_or(String::new(), |w| {
        w.cuda_graph
            .captures
            .iter()
            .map(|(mode, n)| format!("{mode}={n}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    if captures.is_empty() {
        outln!("CUDA graphs: none captured (--enforce-eager)");
    } else if s.cuda_graph_estimate == 0 {
        outln!(
            "CUDA graph memory: not estimated by this release's model runner ({captures} captured after the KV cache is sized)"
        );
    } else {
        outln!(
            "Estimated CUDA graph memory: {} total ({captures}; {} the KV cache)",
            gib(s.cuda_graph_estimate),
            if s.cuda_graph_subtracted {
                "subtracted from"
            } else {
                "printed, not subtracted from"
            }
        );
    }
    match &s.verdict {
        Verdict::Starts => outln!("verdict   starts"),
        Verdict::WeightsAboveDevice {
            weights,
            device_total,
        } => outln!(
            "verdict   does not start: on some worker the weights alone ({}) exceed the device's {}; loading the model fails with CUDA out of memory, before any KV-cache sizing",
            gib(*weights),
            gib(*device_total)
        ),
        Verdict::NoKvMemory { short_by } => outln!(
            "verdict   does not start: on some worker, weights, activation peak and non-torch exceed the requested memory by {}",
            gib(*short_by)
        ),
        Verdict::MaxModelLenTooLong {
            kv_tokens,
            max_model_len,
        } => outln!(
            "verdict   does not start: the KV cache holds {kv_tokens} tokens, fewer than max_model_len {max_model_len}"
        ),
        Verdict::MaxModelLenAboveModel {
            max_model_len,
            longest,
        } => outln!(
            "verdict   does not start: max_model_len {max_model_len} is above the {longest} tokens the model allows (max_position_embeddings with its rope scaling); vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
        ),
    }
    for u in &s.unsettled {
        outln!("unsettled {}: {}", u.name, u.effect);
    }
    Ok(())
}

/// The layout's groups, consecutive alike ones counted together: "7 groups: 6 x sliding window
/// 512 (4, 4, 4, 4, 3, 3 layers), 1 x full attention (4 layers)".
fn kv_groups(layout: &engine_profile::KvLayout) -> String {
    let mut runs: Vec<(String, u64, Vec<u64>)> = Vec::new();
    for g in &layout.groups {
        let kind = kind_name(g.kind, g.block_size, g.blocks_per_request);
        match runs.last_mut() {
            Some((k, n, layers)) if *k == kind => {
                *n += 1;
                layers.push(g.layers);
            }
            _ => runs.push((kind, 1, vec![g.layers])),
        }
    }
    let parts: Vec<String> = runs
        .iter()
        .map(|(kind, n, layers)| {
            let layers: Vec<String> = layers.iter().map(u64::to_string).collect();
            let noun = if layers.len() == 1 && layers[0] == "1" {
                "layer"
            } else {
                "layers"
            };
            format!("{n} x {kind} ({} {noun})", layers.join(", "))
        })
        .collect();
    let groups = layout.groups.len();
    format!(
        "{groups} group{}: {}",
        if groups == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// A group's kind as the layout line names it; a recurrent group says how many state pages a
/// sequence holds (one, or more when prefix caching keeps them per block).
fn kind_name(kind: engine_profile::LayerKind, block_size: u64, per_request: u64) -> String {
    use engine_profile::LayerKind;
    match kind {
        LayerKind::Full => format!("full attention, {block_size}-token blocks"),
        LayerKind::Sliding { window } => {
            format!("sliding window {window}, {block_size}-token blocks")
        }
        LayerKind::Chunked { chunk } => {
            format!("chunked attention {chunk}, {block_size}-token blocks")
        }
        LayerKind::Recurrent if per_request == 1 => {
            "recurrent state, one block per sequence".to_owned()
        }
        LayerKind::Recurrent => format!(
            "recurrent state, {per_request} blocks per sequence ({block_size}-token blocks: prefix caching)"
        ),
    }
}

fn kind_json(kind: engine_profile::LayerKind) -> serde_json::Value {
    use engine_profile::LayerKind;
    match kind {
        LayerKind::Full => serde_json::json!({ "kind": "full" }),
        LayerKind::Sliding { window } => serde_json::json!({ "kind": "sliding", "window": window }),
        LayerKind::Chunked { chunk } => serde_json::json!({ "kind": "chunked", "chunk": chunk }),
        LayerKind::Recurrent => serde_json::json!({ "kind": "recurrent" }),
    }
}

pub fn json(s: &Startup) -> serde_json::Value {
    let defaulted: Vec<&str> = [
        ("max_num_batched_tokens", s.max_num_batched_tokens_defaulted),
        ("max_num_seqs", s.max_num_seqs_defaulted),
    ]
    .into_iter()
    .filter(|(_, d)| *d)
    .map(|(n, _)| n)
    .collect();
    serde_json::json!({
        "engine": {
            "name": s.engine,
            "version": s.version,
            "releases": s.releases,
            "unsettled": s.unsettled.iter().map(|u| serde_json::json!({
                "name": u.name,
                "effect": u.effect,
            })).collect::<Vec<_>>(),
            "device": device_json(&s.device_figures),
            "device_total": s.device_total,
            "gpu_memory_utilization": s.gpu_memory_utilization,
            "requested": s.requested,
            "max_num_batched_tokens": s.max_num_batched_tokens,
            "max_num_seqs": s.max_num_seqs,
            "max_model_len": s.max_model_len,
            "defaulted": defaulted,
            "workers": s.workers.iter().map(worker_json).collect::<Vec<_>>(),
            "cuda_graph_estimate": s.cuda_graph_estimate,
            "kv_cache_tokens": s.kv_cache_tokens,
            "kv_blocks": s.kv_blocks,
            "kv_block_size": s.kv_layout.token_block_size,
            "kv_blocks_per_request": s.kv_layout.blocks_per_request,
            "kv_groups": s.kv_layout.groups.iter().map(|g| {
                let mut j = kind_json(g.kind);
                j["block_size"] = serde_json::json!(g.block_size);
                j["layers"] = serde_json::json!(g.layers);
                j["blocks_per_request"] = serde_json::json!(g.blocks_per_request);
                j
            }).collect::<Vec<_>>(),
            "max_concurrency": s.max_concurrency,
            "starts": s.verdict == Verdict::Starts,
        }
    })
}

/// The device as the JSON names it: the table's figures, their precision and sources.
fn device_json(d: &Device) -> serde_json::Value {
    serde_json::json!({
        "name": d.name,
        "product": d.product,
        "vendor": d.vendor,
        "compute_capability": d.compute_capability,
        "sm_count": d.sm_count,
        "cuda_total_bytes": d.cuda_total_bytes,
        "cuda_total_precision": d.cuda_total_precision.map(Precision::name),
        "l2_cache_bytes": d.l2_cache_bytes,
        "l2_cache_precision": d.l2_cache_precision.map(Precision::name),
        "source": d.source,
    })
}

/// One device's answer to `--devices`.
pub enum DeviceRow {
    /// The prediction ran: the smallest TP that starts (or none).
    Answered {
        device: Box<Device>,
        /// (batched tokens, sequences) the engine runs with there.
        batch: (u64, u64),
        answer: Box<SmallestTp>,
    },
    /// The prediction is refused on the device, with the one-line reason.
    Refused { name: String, why: String },
}

/// What `--devices` asked, for its header.
pub struct DevicesQuestion<'a> {
    pub engine: &'a str,
    pub version: &'a str,
    pub origin: &'a str,
    pub max_model_len: u64,
    pub heads: u64,
    pub tp_limit: u64,
}

/// `--devices` as a table: a header, one row per device, a note for totals that are not exact.
pub fn print_devices(q: &DevicesQuestion<'_>, rows: &[DeviceRow]) -> Result<(), CliError> {
    outln!("engine    {} {}", q.engine, q.version);
    outln!("config    {}", q.origin);
    outln!(
        "question  the smallest tensor_parallel_size that starts on each device (sizes up to {} that divide {} attention heads), at max_model_len {}",
        q.tp_limit,
        q.heads,
        q.max_model_len
    );
    outln!();
    outln!(
        "{:<16} {:>14} {:>8} {:>6} {:>12} {:>12} {:>12}",
        "device",
        "total (CUDA)",
        "tokens",
        "seqs",
        "smallest TP",
        "KV tokens",
        "concurrency"
    );
    for row in rows {
        outln!("{}", row.line());
    }
    let inexact: Vec<String> = rows
        .iter()
        .filter_map(|r| match r {
            DeviceRow::Answered { device, .. } => device
                .cuda_total_precision
                .filter(|p| *p != Precision::Exact)
                .map(|p| format!("{}: {}", device.name, p.caveat())),
            DeviceRow::Refused { .. } => None,
        })
        .collect();
    if !inexact.is_empty() {
        outln!();
        outln!(
            "note      totals that are not exact: {}",
            inexact.join("; ")
        );
    }
    Ok(())
}

/// `--devices` as JSON: the `engine` object with a `devices` array.
pub fn devices_json(q: &DevicesQuestion<'_>, rows: &[DeviceRow]) -> serde_json::Value {
    serde_json::json!({
        "engine": {
            "name": q.engine,
            "version": q.version,
            "max_model_len": q.max_model_len,
            "devices": rows.iter().map(DeviceRow::json).collect::<Vec<_>>(),
        }
    })
}

impl DeviceRow {
    fn line(&self) -> String {
        match self {
            DeviceRow::Answered {
                device,
                batch,
                answer,
            } => {
                let total = device.cuda_total_bytes.map_or("?".to_owned(), gib);
                let (tp, tokens, concurrency) = match &answer.found {
                    Some((tp, s)) => (
                        tp.to_string(),
                        s.kv_cache_tokens.to_string(),
                        format!("{:.2}x", s.max_concurrency),
                    ),
                    None => {
                        let tried = answer
                            .tried
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ");
                        (format!("none of {tried}"), "-".to_owned(), "-".to_owned())
                    }
                };
                format!(
                    "{:<16} {:>14} {:>8} {:>6} {:>12} {:>12} {:>12}",
                    device.name, total, batch.0, batch.1, tp, tokens, concurrency
                )
            }
            DeviceRow::Refused { name, why } => format!("{name:<16} refused: {why}"),
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            DeviceRow::Answered {
                device,
                batch,
                answer,
            } => serde_json::json!({
                "device": device_json(device),
                "max_num_batched_tokens": batch.0,
                "max_num_seqs": batch.1,
                "smallest_tp": match &answer.found {
                    Some((tp, s)) => serde_json::json!({
                        "tensor_parallel_size": tp,
                        "kv_cache_tokens": s.kv_cache_tokens,
                        "max_concurrency": s.max_concurrency,
                        "tried": answer.tried,
                    }),
                    None => serde_json::json!({
                        "tensor_parallel_size": null,
                        "tried": answer.tried,
                    }),
                },
                "refused": null,
            }),
            DeviceRow::Refused { name, why } => serde_json::json!({
                "device": { "name": name },
                "refused": why,
            }),
        }
    }
}
