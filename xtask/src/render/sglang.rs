//! SGLang's start-up as SGLang prints it (the table and its JSON), its budget answers, and
//! two engines' start-ups side by side (`--engine vllm,sglang`).
//!
//! Invariants: imports no command; reads the start-ups it is handed and the output format, and
//! writes through `out`.

use engine_profile::detail::{SglangStartup, SglangWorker};
use engine_profile::{EngineDetail, Startup, Verdict, Worker};

use crate::CliError;
use crate::inputs::flags::{OutputFormat, PlanArgs};
use crate::out::outln;
use crate::render::engine::{
    Budget, Setting, add_budget, csv_value, distinct_rows, gib, print_smallest_tp, reason,
    verdict_json,
};

/// SGLang's "GB", which is GiB (`utils/common.py`: `/ (1 << 30)`).
fn gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / (1u64 << 30) as f64)
}

pub fn detail(s: &Startup) -> Result<&SglangStartup, CliError> {
    match &s.detail {
        Some(EngineDetail::Sglang(d)) => Ok(d),
        None => Err(format!("{} {}: no SGLang start-up", s.engine, s.version).into()),
    }
}

pub fn print_table(
    origin: &str,
    quantization: &str,
    s: &Startup,
    d: &SglangStartup,
) -> Result<(), CliError> {
    outln!("engine    {} {}", s.engine, s.version);
    outln!("config    {origin}");
    outln!(
        "device    {}: nvidia-smi {} MiB (SGLang's defaults follow it), CUDA total {}",
        s.device,
        d.gpu_mib,
        gib(s.device_total)
    );
    if d.replicas > 1 {
        outln!(
            "replicas  --dp-size {}: {} GPUs, tp {} x pp {} each; every replica starts as the one below (SGLang prints each replica's figures)",
            d.replicas,
            d.gpus,
            s.workers.iter().filter(|w| w.pp_stage == 0).count(),
            s.workers.iter().map(|w| w.pp_stage).max().unwrap_or(0) + 1
        );
    }
    if d.ep_size > 1 {
        outln!(
            "experts   --ep-size {}: each rank holds 1/{} of the routed experts, each split over tp / {} ranks; shared experts split over tp",
            d.ep_size,
            d.ep_size,
            d.ep_size
        );
    }
    outln!(
        "run       context_len {}, chunked_prefill_size {}, page_size {}, quantization {quantization}",
        d.context_len,
        d.chunked_prefill_size,
        d.page_size
    );
    if d.mem_fraction_static_default && d.reserved_kib == 0 {
        // Releases 0.4.6 to 0.4.7 read a table on the parallel size, not a reserve.
        outln!(
            "mem_fraction_static {} (SGLang's default for {} MiB and this parallel size)",
            d.mem_fraction_static,
            d.gpu_mib
        );
    } else if d.mem_fraction_static_default {
        outln!(
            "mem_fraction_static {} (SGLang's default: {} MB reserved of {} MiB)",
            d.mem_fraction_static,
            d.reserved_kib as f64 / 1024.0,
            d.gpu_mib
        );
    } else {
        outln!("mem_fraction_static {} (given)", d.mem_fraction_static);
    }
    outln!(
        "memory    free before load {} (CUDA total less the assumed CUDA context{}), free before the pool {}, kept outside the pool {}",
        gib(d.free_before_load),
        if d.communicator_bound > 0 {
            " and communicators"
        } else {
            ""
        },
        gib(d.free_before_pool),
        gib(d.outside_pool)
    );
    if d.communicator_bound > 0 {
        outln!(
            "bound     the communicators' memory before loading is assumed (docs/engines.md): +-{} there moves the KV cache by up to {}",
            gib(d.communicator_bound),
            gib((d.communicator_bound as f64 * d.mem_fraction_static) as u64)
        );
    }
    outln!();
    outln!(
        "   ranks  stage     weights  after load     K size      V size  req_to_token  left for activations and graphs"
    );
    for (ranks, w) in distinct_rows(&s.workers) {
        let Some(own) = d.workers.iter().find(|o| o.rank == w.rank) else {
            continue;
        };
        outln!(
            "{:>8} {:>6} {:>11} {:>11} {:>10} {:>11} {:>13} {:>12}",
            ranks,
            w.pp_stage,
            gib(own.weights),
            gib(own.after_load),
            gib(own.k_bytes),
            gib(own.v_bytes),
            gib(own.req_to_token),
            gib(own.left_for_activations)
        );
    }
    outln!();
    if let Some(w) = d.workers.first() {
        outln!("Load weight end. ... mem usage={}.", gb(w.weights));
        if let Some(slots) = d.mamba_slots {
            outln!(
                "max_mamba_cache_size={slots} (recurrent-state pool {})",
                gb(w.recurrent_state)
            );
        }
        if let Some(swa) = d.swa_tokens.filter(|_| d.max_total_num_tokens > 0) {
            outln!(
                "Use Sliding window memory pool. full_layer_tokens={}, swa_layer_tokens={swa}",
                d.max_total_num_tokens
            );
        }
        if let (Some(swa), true) = (d.swa_tokens, d.max_total_num_tokens > 0) {
            // One line per pool (SGLang labels them `Full` and `SWA` from 0.5.17).
            let full_kv = (w.k_bytes + w.v_bytes).saturating_sub(w.swa_kv_bytes);
            for (tokens, bytes, layers) in [
                (d.max_total_num_tokens, full_kv, "full-attention"),
                (swa, w.swa_kv_bytes, "sliding-window"),
            ] {
                outln!(
                    "KV Cache is allocated. #tokens: {tokens}, K size: {}, V size: {}   ({layers} layers)",
                    gb(bytes / 2),
                    gb(bytes - bytes / 2)
                );
            }
        } else if d.max_total_num_tokens > 0 {
            if d.mla {
                outln!(
                    "KV Cache is allocated. #tokens: {}, KV size: {}",
                    d.max_total_num_tokens,
                    gb(w.k_bytes)
                );
            } else {
                outln!(
                    "KV Cache is allocated. #tokens: {}, K size: {}, V size: {}",
                    d.max_total_num_tokens,
                    gb(w.k_bytes),
                    gb(w.v_bytes)
                );
            }
        }
    }
    outln!(
        "max_total_num_tokens={}, chunked_prefill_size={}, max_running_requests={}, context_len={}",
        d.max_total_num_tokens,
        d.chunked_prefill_size,
        d.max_running_requests,
        d.context_len
    );
    if d.replicas > 1 {
        outln!(
            "over the {} replicas: max_total_num_tokens {}, max_running_requests {}",
            d.replicas,
            d.replicas_total_tokens,
            d.replicas_running_requests
        );
    }
    outln!("{}", graphs(d));
    match &d.refusal {
        None => outln!("verdict   starts"),
        Some(why) => outln!("verdict   does not start: {why}"),
    }
    Ok(())
}

/// The CUDA graphs SGLang captures, in a line.
fn graphs(d: &SglangStartup) -> String {
    let list = |sizes: &[u64]| match (sizes.first(), sizes.last()) {
        (Some(a), Some(b)) => format!("{} sizes, {a}..{b}", sizes.len()),
        _ => "none".to_owned(),
    };
    format!(
        "CUDA graphs: decode batch sizes {}; prefill token sizes {}",
        list(&d.decode_graph_sizes),
        list(&d.prefill_graph_sizes)
    )
}

pub fn print_budget(b: &Budget) -> Result<(), CliError> {
    if let Some(answer) = b.largest_max_model_len {
        match answer {
            Some(n) => outln!("largest context_length whose requests the pool holds whole: {n}"),
            None => outln!("largest context_length that starts: none (nothing starts)"),
        }
    }
    if let Some(tp) = &b.smallest_tp {
        print_smallest_tp("tp_size", tp)?;
    }
    if let Some((tokens, fraction)) = b.target {
        match fraction {
            Some(m) => outln!("mem_fraction_static for {tokens} KV tokens: {m}"),
            None => outln!(
                "mem_fraction_static for {tokens} KV tokens: none (more than the free memory, or above --max-total-tokens)"
            ),
        }
    }
    Ok(())
}

pub fn json(s: &Startup, d: &SglangStartup) -> serde_json::Value {
    serde_json::json!({
        "engine": {
            "name": s.engine,
            "version": s.version,
            "workers": s.workers.iter().zip(&d.workers).map(|(w, o)| serde_json::json!({
                "rank": w.rank,
                "pp_stage": w.pp_stage,
                "weights": w.weights,
                "kv_cache": w.kv_cache,
                "kv_blocks": w.blocks,
                "kv_block_bytes": w.block_bytes,
                "sglang": {
                    "free_before_load": o.free_before_load,
                    "after_load": o.after_load,
                    "k_size": o.k_bytes,
                    "v_size": o.v_bytes,
                    "req_to_token": o.req_to_token,
                    "swa_index_map": o.swa_index_map,
                    "swa_kv_bytes": o.swa_kv_bytes,
                    "recurrent_state": o.recurrent_state,
                    "left_for_activations_and_graphs": o.left_for_activations,
                },
            })).collect::<Vec<_>>(),
            "kv_cache_tokens": s.kv_cache_tokens,
            "kv_blocks": s.kv_blocks,
            "kv_block_size": s.kv_layout.token_block_size,
            "max_concurrency": s.max_concurrency,
            "starts": s.verdict == Verdict::Starts,
            "sglang": {
                "gpu_mib": d.gpu_mib,
                "mem_fraction_static": d.mem_fraction_static,
                "mem_fraction_static_default": d.mem_fraction_static_default,
                "reserved_kib": d.reserved_kib,
                "free_before_load": d.free_before_load,
                "free_before_pool": d.free_before_pool,
                "outside_pool": d.outside_pool,
                "pool_budget": d.pool_budget,
                "cell_bytes": d.cell_bytes,
                "page_size": d.page_size,
                "max_total_num_tokens": d.max_total_num_tokens,
                "swa_layer_tokens": d.swa_tokens,
                "max_mamba_cache_size": d.mamba_slots,
                "max_running_requests": d.max_running_requests,
                "context_len": d.context_len,
                "max_req_len": d.max_req_len,
                "chunked_prefill_size": d.chunked_prefill_size,
                "decode_cuda_graph_bs": d.decode_graph_sizes,
                "prefill_cuda_graph_tokens": d.prefill_graph_sizes,
                "communicator_bound": d.communicator_bound,
                "dp_size": d.replicas,
                "ep_size": d.ep_size,
                "gpus": d.gpus,
                "max_total_num_tokens_over_replicas": d.replicas_total_tokens,
                "max_running_requests_over_replicas": d.replicas_running_requests,
                "error": d.refusal,
            },
        }
    })
}

/// Both engines' predictions for one model, device and layout.
pub fn print_side_by_side(args: &PlanArgs, columns: &[Startup]) -> Result<(), CliError> {
    let name = |s: &Startup| format!("{} {}", s.engine, s.version);
    let verdict = |s: &Startup| -> String {
        match (&s.verdict, &s.detail) {
            (Verdict::Starts, _) => "starts".to_owned(),
            (_, Some(EngineDetail::Sglang(d))) => d
                .refusal
                .as_deref()
                .and_then(|r| r.split(':').next())
                .map_or("does not start".to_owned(), |e| {
                    format!("does not start ({e})")
                }),
            _ => "does not start".to_owned(),
        }
    };
    let max_weights = |s: &Startup| s.workers.iter().map(|w| w.weights).max().unwrap_or(0);
    let max_kv = |s: &Startup| s.workers.iter().map(|w| w.kv_cache).min().unwrap_or(0);
    if args.format == OutputFormat::Json {
        let j: Vec<serde_json::Value> = columns
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.engine,
                    "version": s.version,
                    "weights_per_rank": max_weights(s),
                    "kv_cache_per_rank": max_kv(s),
                    "kv_cache_tokens": s.kv_cache_tokens,
                    "max_sequences": s.max_num_seqs,
                    "context": s.max_model_len,
                    "starts": s.verdict == Verdict::Starts,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "engines": j }))?
        );
        return Ok(());
    }
    if !matches!(args.format, OutputFormat::Table) {
        return Err(table_or_json(args.format));
    }
    let first = &columns[0];
    outln!(
        "device    {}, tp {} x pp {}",
        first.device,
        first.workers.iter().filter(|w| w.pp_stage == 0).count(),
        first.workers.iter().map(|w| w.pp_stage).max().unwrap_or(0) + 1
    );
    let cells = |f: &dyn Fn(&Startup) -> String| columns.iter().map(f).collect::<Vec<_>>();
    let fraction = |s: &Startup| match &s.detail {
        Some(EngineDetail::Sglang(_)) => {
            format!("{} of free (mem_fraction_static)", s.gpu_memory_utilization)
        }
        None => format!(
            "{} of total (gpu_memory_utilization)",
            s.gpu_memory_utilization
        ),
    };
    let rows = [
        ("engine", cells(&name)),
        ("weights per rank", cells(&|s| gib(max_weights(s)))),
        ("KV cache per rank", cells(&|s| gib(max_kv(s)))),
        ("KV tokens", cells(&|s| s.kv_cache_tokens.to_string())),
        ("max sequences", cells(&|s| s.max_num_seqs.to_string())),
        ("context", cells(&|s| s.max_model_len.to_string())),
        ("memory fraction", cells(&fraction)),
        ("verdict", cells(&verdict)),
    ];
    for (label, row) in &rows {
        let row: Vec<String> = row.iter().map(|c| format!("{c:>40}")).collect();
        outln!("{label:<18}{}", row.join(""));
    }
    let (a, b) = (&columns[0], &columns[1]);
    if a.kv_cache_tokens != b.kv_cache_tokens {
        let (more, less) = if a.kv_cache_tokens > b.kv_cache_tokens {
            (a, b)
        } else {
            (b, a)
        };
        outln!(
            "{} holds {} more KV tokens than {}",
            more.engine,
            more.kv_cache_tokens - less.kv_cache_tokens,
            less.engine
        );
    }
    Ok(())
}

/// The refusal of a format the side-by-side columns do not have: two engines' start-ups are
/// one table or one JSON object (each engine's rows are its own prediction's).
pub fn table_or_json(format: OutputFormat) -> CliError {
    let name = match format {
        OutputFormat::Jsonl => "jsonl",
        OutputFormat::Csv => "csv",
        OutputFormat::Table => "table",
        OutputFormat::Json => "json",
    };
    format!(
        "--format {name} with two engines: the side-by-side columns print as a table or JSON; give --format table or json, or one engine for its rows"
    )
    .into()
}

/// A worker's figures: the keys vLLM's worker rows have where the quantity is the same
/// (`rank`, `tp_rank`, `pp_stage`, `weights`, `kv_cache`, `kv_blocks`, `kv_block_bytes`),
/// then SGLang's own.
fn worker_record(w: &Worker, o: &SglangWorker) -> serde_json::Value {
    serde_json::json!({
        "rank": w.rank,
        "tp_rank": w.tp_rank,
        "pp_stage": w.pp_stage,
        "weights": w.weights,
        "kv_cache": w.kv_cache,
        "kv_blocks": w.blocks,
        "kv_block_bytes": w.block_bytes,
        "k_size": o.k_bytes,
        "v_size": o.v_bytes,
        "req_to_token": o.req_to_token,
        "left_for_activations_and_graphs": o.left_for_activations,
    })
}

/// The CSV columns of a worker's figures (after the inputs').
const WORKER_COLUMNS: &str = "rank,tp_rank,pp_stage,weights,kv_cache,kv_blocks,kv_block_bytes,k_size,v_size,req_to_token,left_for_activations_and_graphs";

/// The CSV columns of the start-up's answers (after the worker's): vLLM's names where the
/// quantity is the same, then SGLang's.
const ANSWER_COLUMNS: &str = "kv_cache_tokens,max_concurrency,starts,reason,max_total_num_tokens,max_running_requests,context_len,chunked_prefill_size,largest_context_length,smallest_tp,mem_fraction_static_for_target";

/// The settings the prediction used, SGLang's names, each with where it came from (the flag
/// given, or the release's default on the device, or the model's).
pub fn inputs(args: &PlanArgs, d: &SglangStartup, s: &Startup) -> Vec<Setting> {
    let on_device = format!("default of {} {} on {}", s.engine, s.version, s.device);
    let given = |ids: &[&str]| {
        ids.iter()
            .find(|id| args.was_given(id))
            .map(|id| crate::inputs::modes::flag(id))
    };
    let from = |ids: &[&str]| given(ids).unwrap_or_else(|| on_device.clone());
    let a = &args.sglang;
    let tp = s.workers.iter().filter(|w| w.pp_stage == 0).count();
    let pp = s.workers.iter().map(|w| w.pp_stage).max().unwrap_or(0) + 1;
    let one = |name, value, source| Setting::new(name, value, source);
    vec![
        one(
            "engine",
            serde_json::json!(format!("{}=={}", s.engine, s.version)),
            from(&["engine"]),
        ),
        one(
            "device",
            serde_json::json!(s.device),
            given(&["device"]).unwrap_or_else(|| "the planner's default".into()),
        ),
        one(
            "tp_size",
            serde_json::json!(tp),
            from(&["tp_size", "tensor_parallel_size"]),
        ),
        one(
            "pp_size",
            serde_json::json!(pp),
            from(&["pp_size", "pipeline_parallel_size"]),
        ),
        one("dp_size", serde_json::json!(d.replicas), from(&["dp_size"])),
        one(
            "ep_size",
            serde_json::json!(d.ep_size),
            from(&["ep_size", "enable_ep_moe"]),
        ),
        one(
            "mem_fraction_static",
            serde_json::json!(d.mem_fraction_static),
            from(&["mem_fraction_static"]),
        ),
        one(
            "context_length",
            serde_json::json!(d.context_len),
            given(&["context_length"])
                .unwrap_or_else(|| "the model's, as SGLang derives it".into()),
        ),
        one(
            "chunked_prefill_size",
            serde_json::json!(d.chunked_prefill_size),
            from(&["chunked_prefill_size"]),
        ),
        one(
            "max_running_requests",
            serde_json::json!(d.max_running_requests),
            given(&["max_running_requests"])
                .unwrap_or_else(|| "derived from the pool, as SGLang derives it".into()),
        ),
        one(
            "max_total_tokens",
            serde_json::json!(a.max_total_tokens),
            from(&["max_total_tokens"]),
        ),
        one(
            "page_size",
            serde_json::json!(d.page_size),
            from(&["page_size"]),
        ),
        one(
            "cuda_graph_max_bs",
            serde_json::json!(d.decode_graph_sizes.last()),
            from(&["cuda_graph_max_bs", "disable_cuda_graph"]),
        ),
        one(
            "kv_cache_dtype",
            serde_json::json!(args.kv_cache_dtype),
            from(&["kv_cache_dtype"]),
        ),
        one(
            "dtype",
            serde_json::json!(args.dtype),
            given(&["dtype"]).unwrap_or_else(|| "the config's torch_dtype".into()),
        ),
    ]
}

/// SGLang's start-up as JSON lines (a `run` record with the inputs, a `worker` record per
/// worker, a `summary`) or CSV (a line per worker), the shapes vLLM's have.
pub fn print_rows(
    format: OutputFormat,
    origin: &str,
    s: &Startup,
    d: &SglangStartup,
    budget: &Budget,
    settings: &[Setting],
    serve: Option<&crate::inputs::serve_line::ServeNote>,
) -> Result<(), CliError> {
    let answers = [
        serde_json::json!(budget.largest_max_model_len.flatten()),
        serde_json::json!(
            budget
                .smallest_tp
                .as_ref()
                .and_then(|t| t.found.as_ref().map(|(n, _)| *n))
        ),
        serde_json::json!(budget.target.and_then(|(_, m)| m)),
    ];
    match format {
        OutputFormat::Jsonl => {
            let map: serde_json::Map<String, serde_json::Value> = settings
                .iter()
                .map(|i| {
                    (
                        i.name.to_owned(),
                        serde_json::json!({ "value": i.value, "source": i.source }),
                    )
                })
                .collect();
            let mut run = serde_json::json!({
                "record": "run",
                "engine": s.engine,
                "version": s.version,
                "releases": s.releases,
                "config": origin,
                "inputs": map,
            });
            if let Some(serve) = serve {
                run["serve_line"] = crate::render::serve_line::json(serve);
            }
            outln!("{run}");
            for (w, o) in s.workers.iter().zip(&d.workers) {
                let mut record = worker_record(w, o);
                record["record"] = serde_json::json!("worker");
                outln!("{record}");
            }
            let mut summary = json(s, d)["engine"].clone();
            if let Some(map) = summary.as_object_mut() {
                for key in ["name", "version", "workers"] {
                    map.remove(key);
                }
            }
            add_budget(&mut summary, budget);
            summary["verdict"] = verdict_json(&s.verdict);
            summary["record"] = serde_json::json!("summary");
            outln!("{summary}");
        }
        OutputFormat::Csv => {
            let names: Vec<&str> = settings.iter().map(|i| i.name).collect();
            outln!("{},{WORKER_COLUMNS},{ANSWER_COLUMNS}", names.join(","));
            let inputs: Vec<String> = settings.iter().map(|i| csv_value(&i.value)).collect();
            let answers: Vec<String> = answers.iter().map(csv_value).collect();
            for (w, o) in s.workers.iter().zip(&d.workers) {
                let j = worker_record(w, o);
                let worker: Vec<String> = WORKER_COLUMNS
                    .split(',')
                    .map(|k| csv_value(&j[k]))
                    .collect();
                outln!(
                    "{},{},{},{},{},{},{},{},{},{},{}",
                    inputs.join(","),
                    worker.join(","),
                    s.kv_cache_tokens,
                    s.max_concurrency,
                    s.verdict == Verdict::Starts,
                    reason(&s.verdict),
                    d.max_total_num_tokens,
                    d.max_running_requests,
                    d.context_len,
                    d.chunked_prefill_size,
                    answers.join(",")
                );
            }
        }
        OutputFormat::Table | OutputFormat::Json => {}
    }
    Ok(())
}
