//! SGLang's start-up as SGLang prints it (the table and its JSON), its budget answers, and
//! two engines' start-ups side by side (`--engine vllm,sglang`).
//!
//! Invariants: imports no command; reads the start-ups it is handed and the output format, and
//! writes through `out`.

use engine_profile::detail::SglangStartup;
use engine_profile::{EngineDetail, Startup, Verdict};

use crate::CliError;
use crate::inputs::flags::{OutputFormat, PlanArgs};
use crate::out::outln;
use crate::render::engine::{Budget, distinct_rows, gib, print_smallest_tp};

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
        if let Some(swa) = d.swa_tokens {
            outln!(
                "Use Sliding window memory pool. full_layer_tokens={}, swa_layer_tokens={swa}",
                d.max_total_num_tokens
            );
        }
        if d.max_total_num_tokens > 0 {
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

/// The refusal of a format SGLang's printout does not have: its start-up (and the side-by-side
/// columns) print as a table or JSON; vLLM's capacity-script rows are not written for it yet.
pub fn table_or_json(format: OutputFormat) -> CliError {
    let name = match format {
        OutputFormat::Jsonl => "jsonl",
        OutputFormat::Csv => "csv",
        OutputFormat::Table => "table",
        OutputFormat::Json => "json",
    };
    format!(
        "--format {name}: an SGLang start-up prints as a table or JSON (the CSV and JSON-lines rows are vLLM's so far); give --format table or json"
    )
    .into()
}
