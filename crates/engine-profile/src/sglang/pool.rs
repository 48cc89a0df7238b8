//! SGLang's start-up predicted (docs/engines.md, "SGLang", the flow): the defaults from the
//! nvidia-smi tier, `mem_fraction_static`, the free memory F before loading and A before the
//! pool, the static pool's tokens per stage (split into full and sliding-window tokens for a
//! hybrid pool), `max_running_requests`, the context checks and SGLang's errors; and the budget
//! answers the pool gives directly.
//!
//! Invariants: the arithmetic follows SGLang's own types: F and A are GiB floats (through a
//! float32 tensor when the world's minimum is taken), the pool's bytes `int(rest x 2^30)`, the
//! tokens integer divisions; every byte count is checked u64; a refusal is a verdict with
//! SGLang's message, not an error, so the budget questions can ask around it.

use super::flow::{
    EstimateReads, FlowFacts, GetRope, HybridSplit, SplitMode, UnknownMemoryDecl, sizes_up_to,
};
use super::{SglangFlags, SglangStartup, SglangWorker};
use crate::facts::Where;
use crate::formula::Env;
use crate::kv_layout::{KvGroup, KvLayout, LayerKind, cache_layers, not_modelled};
use crate::{
    BudgetAnswers, CudaGraphEstimate, EncoderBytes, EngineDetail, EngineError, EngineFlags,
    EngineProfile, Execution, PeakSetBy, RunSettings, StageCircuit, Startup, Verdict, Worker,
};
use model_facts::{ModelFacts, RopeSet};

const GIB: f64 = (1u64 << 30) as f64;

fn overflow(what: &str) -> EngineError {
    EngineError::Overflow {
        what: what.to_owned(),
    }
}

/// Python's `round(x, decimals)` for the values SGLang rounds (ties to even, on the decimal
/// scaled value; a tie needs an exactly representable half, which these never are).
fn round_to(x: f64, decimals: u32) -> f64 {
    let scale = 10f64.powi(decimals as i32);
    (x * scale).round_ties_even() / scale
}

/// A free-memory figure as SGLang reads it: bytes over 2^30, through a float32 tensor when
/// the world's minimum is all-reduced (`utils/common.py` `get_available_gpu_memory`).
fn read_gib(bytes: u64, float32: bool) -> f64 {
    if float32 {
        f64::from(bytes as f32) / GIB
    } else {
        bytes as f64 / GIB
    }
}

/// What a stage of the layout holds.
struct Stage {
    stage: u64,
    weights: u64,
    after_load: u64,
    cell: u64,
    /// Per-token bytes and count of the full-attention and of the sliding-window layers.
    full: (u64, u64),
    sliding: (u64, u64),
    /// The sliding layers' window (the first one's), tokens.
    window: Option<u64>,
    /// One slot's state over the recurrent layers as the engine file sizes it, bytes.
    state_slot: u64,
}

/// A hybrid pool's two token counts.
#[derive(Debug, Clone, Copy)]
struct Split {
    full: u64,
    swa: u64,
}

/// The run's settings, settled against the device and the engine file.
struct Settled {
    tp: u64,
    pp: u64,
    gpu_mib: u64,
    chunked: u64,
    decode_sizes: Vec<u64>,
    prefill_sizes: Vec<u64>,
    mem_fraction: f64,
    mem_fraction_default: bool,
    reserved_kib: u64,
    context_len: u64,
    longest: u64,
    page: u64,
    mla: bool,
}

/// Predicts SGLang's start-up of `stages` under `run` (`flow` is the profile's compiled
/// `[startup.sglang]`).
pub(crate) fn predict(
    profile: &EngineProfile,
    flow: &FlowFacts,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
) -> Result<Startup, EngineError> {
    let flags = flags_of(run)?;
    super::quantization::check(flags.quantization.as_deref(), &run.model)?;
    refuse_unmodelled(profile, flow, stages, run, &flags)?;
    let settled = settle(profile, flow, stages, run, &flags)?;
    let stage_facts = stage_facts(profile, flow, stages, run, &settled, &flags)?;
    refuse_radix_off(profile, flow, run, &flags, &stage_facts)?;
    super::mamba::check_flags(
        flow.mamba.as_ref(),
        stage_facts.first().is_some_and(|s| s.state_slot > 0),
        &flags,
        &format!("{} {}", profile.engine(), profile.version()),
        &run.model.architecture,
    )?;
    // A class of `hybrid_swa_architectures` reaches here only when the release's split is
    // given (refuse_unmodelled).
    let hybrid = hybrid_of(profile, flow, run, &flags)?;
    if let Some(h) = hybrid
        && let Some(pool_page) = h.page_size
        && settled.page != pool_page
    {
        return Err(EngineError::FlagRefused {
            flag: "--page-size".to_owned(),
            why: format!(
                "{} {} builds a hybrid sliding-window pool with a page of {} token(s) while its allocator pages by --page-size {}, which is not modelled",
                profile.engine(),
                profile.version(),
                pool_page,
                settled.page
            ),
        });
    }
    let world = settled
        .tp
        .checked_mul(settled.pp)
        .ok_or_else(|| overflow("world size"))?;
    let replicas = data_parallel_replicas(profile, flow, &flags, settled.pp)?;
    let ep_size = super::parallel::expert_parallel_size(
        profile,
        &flow.expert_parallel,
        &flags,
        settled.tp,
        stages,
        &run.model.architecture,
    )?;
    let gpus = world
        .checked_mul(replicas)
        .ok_or_else(|| overflow("GPUs (tp x pp x dp)"))?;
    let device_total = crate::cuda_total(&run.device)?;
    let f = &flow.free;
    let held =
        crate::startup::held_before_measuring(f.cuda_context_bytes, f.communicator_bytes, world)
            .ok_or_else(|| overflow("memory held before loading"))?;
    let free_bytes = device_total
        .checked_sub(held)
        .ok_or_else(|| EngineError::DeviceNotModelled {
            device: run.device.name.clone(),
            why: format!(
                "its CUDA total ({device_total} B) is below the {held} B the engine file assumes a process holds before loading"
            ),
        })?;
    let reduce = f.float32_reduction && world > 1;
    let free_gib = read_gib(free_bytes, reduce);
    // Loading larger than the free memory is torch's out-of-memory error while loading.
    let mut refusal = None;
    let mut short_by = 0u64;
    let loaded = stage_facts
        .iter()
        .map(|s| s.weights.checked_add(s.after_load))
        .try_fold(0u64, |acc, n| n.map(|n| acc.max(n)))
        .ok_or_else(|| overflow("weights"))?;
    let available_bytes = match free_bytes.checked_sub(loaded) {
        Some(a) => a,
        None => {
            short_by = loaded - free_bytes;
            refusal = Some(format!(
                "torch.OutOfMemoryError while loading: a rank loads {:.2} GB with {:.2} GB free",
                loaded as f64 / GIB,
                free_bytes as f64 / GIB
            ));
            0
        }
    };
    let available_gib = read_gib(available_bytes, reduce);
    let outside_gib = free_gib * (1.0 - settled.mem_fraction);
    let mut rest_gib = available_gib - outside_gib;
    let messages = &flow.messages;
    // The recurrent-state pool comes out of the rest first (kv_cache_configurator.py
    // _handle_max_mamba_cache, before the rest is checked).
    let state_slot = stage_facts.first().map_or(0, |s| s.state_slot);
    let mamba = flow.mamba.as_ref().filter(|_| state_slot > 0);
    let mut state_slots = None;
    if let Some(m) = mamba {
        let held = super::mamba::hold(
            m,
            rest_gib,
            state_slot,
            &flags,
            run.max_num_seqs,
            stages[0].circuit.name(),
        )?;
        if let Some((why, short)) = held.refusal {
            if refusal.is_none() {
                short_by = short;
                refusal = Some(why);
            }
        } else {
            rest_gib -= held.bytes as f64 / GIB;
        }
        state_slots = Some(held.slots);
    }
    if refusal.is_none() && rest_gib <= 0.0 && flow.refuse_nonpositive_rest {
        let minimum = 1.0 - available_gib / free_gib;
        let suggested = (minimum * 1000.0).ceil() / 1000.0;
        short_by = (-rest_gib * GIB).ceil() as u64;
        refusal = Some(
            messages
                .no_rest
                .replace("{mfs}", &format_fraction(settled.mem_fraction))
                .replace("{suggested}", &format!("{suggested:.3}"))
                .replace("{minimum}", &format!("{minimum:.4}")),
        );
    }
    // int(rest_memory * (1 << 30)), then // cell // page * page per stage.
    let pool_budget = if rest_gib > 0.0 {
        (rest_gib * GIB).floor() as u64
    } else {
        0
    };
    let page = settled.page;
    let mut per_stage = Vec::new();
    for s in &stage_facts {
        per_stage.push(pool_budget / s.cell / page * page);
    }
    // One stage, or the minimum over the stages (a release without it is refused at PP > 1).
    let mut tokens = per_stage.iter().copied().min().unwrap_or(0);
    if let Some(cap) = flags.max_total_tokens {
        tokens = tokens.min(cap / page * page);
    }
    let split = match (hybrid, stage_facts.first()) {
        (Some(h), Some(s)) => {
            let sp = split_hybrid(h, &flags, s, pool_budget, tokens, page)?;
            tokens = sp.full;
            // validate_swa_pool_size: the sliding pool must hold a window and a page.
            let less_one = h.window_less_one.contains(&run.model.architecture);
            if let (Some(message), Some(window)) = (
                &h.swa_too_small,
                s.window.map(|w| w.saturating_sub(u64::from(less_one))),
            ) && refusal.is_none()
                && window.saturating_add(page) >= sp.swa
            {
                short_by = 1;
                refusal = Some(
                    message
                        .replace("{swa}", &sp.swa.to_string())
                        .replace("{window}", &window.to_string())
                        .replace("{page}", &page.to_string()),
                );
            }
            Some(sp)
        }
        _ => None,
    };
    if refusal.is_none() && tokens == 0 {
        let cell = stage_facts.iter().map(|s| s.cell).max().unwrap_or(0);
        short_by = cell.saturating_mul(page).saturating_sub(pool_budget).max(1);
        refusal = Some(
            messages
                .no_tokens
                .replace("{mfs}", &format_fraction(settled.mem_fraction)),
        );
    }
    let ctx = settled.context_len;
    let names_at = |kv_tokens: u64, requested: u64| {
        Env::names_only(
            vec![
                ("kv_tokens", kv_tokens),
                ("context_len", ctx),
                ("requested", requested),
                ("page_size", page),
            ],
            stages[0].circuit.name(),
        )
    };
    let names = |requested: u64| names_at(tokens, requested);
    let estimate_at = |kv_tokens: u64| flow.estimate.eval(&names_at(kv_tokens, 0));
    let estimate = match flow.estimate_reads {
        // The count after the cap, the page and a hybrid pool's split (its full tokens).
        EstimateReads::Capped => estimate_at(tokens)?,
        // Each stage reads its own profiled count, int(rest x 2^30) // cell, before the cap,
        // the page rounding and the stages agreeing on the smallest: stages whose estimates
        // differ hold request pools of different rows, which is not modelled.
        EstimateReads::Profiled => {
            let mut first = None;
            for s in &stage_facts {
                let e = estimate_at(pool_budget / s.cell)?;
                match first {
                    None => first = Some(e),
                    Some(f) if f != e => {
                        return Err(not_modelled(
                            stages[0].circuit,
                            "pipeline stages whose request-pool estimates differ (each reads its own profiled token count)".to_owned(),
                        ));
                    }
                    Some(_) => {}
                }
            }
            first.map_or_else(|| estimate_at(tokens), Ok)?
        }
    };
    let running = match run.max_num_seqs {
        Some(r) => flow
            .running_user
            .eval(&names(r).with("estimate", estimate))?,
        None => flow
            .running_default
            .eval(&names(0).with("estimate", estimate))?,
    };
    // The state pool caps the requests (resolve_max_num_reqs).
    let running = match (mamba, state_slots) {
        (Some(m), Some(k)) if refusal.is_none() => {
            let (capped, why) = super::mamba::cap_requests(m, running, k);
            if why.is_some() {
                short_by = 1;
                refusal = why;
            }
            capped
        }
        _ => running,
    };
    let state_bytes = match (mamba, state_slots) {
        (Some(m), Some(k)) if k > 0 => {
            super::mamba::pool_bytes(m, k, state_slot, running, stages[0].circuit.name())?
        }
        _ => 0,
    };
    let max_req_len = ctx.min(tokens).saturating_sub(1);
    // tp_worker.py asserts the request count first, then the longest request.
    if refusal.is_none() && running == 0 {
        short_by = 1;
        refusal = Some(messages.running_zero.clone());
    } else if refusal.is_none() && max_req_len <= flow.request_len_margin {
        short_by = 1;
        refusal = Some(messages.pool_too_small.clone());
    }
    // The requests the state pool leaves (K // slots a request; unbounded without one), for the
    // releases that size the request table before the cap is printed.
    let state_cap = match (mamba, state_slots) {
        (Some(m), Some(k)) => super::mamba::request_cap(m, k),
        _ => u64::MAX,
    };
    let env = names(run.max_num_seqs.unwrap_or(0))
        .with("estimate", estimate)
        .with("max_running_requests", running)
        .with("state_cap", state_cap);
    let req_to_token = flow.req_to_token.eval(&env)?;
    let extra_rows = flow.extra_rows.eval(&env)?;
    let rows = tokens
        .checked_add(extra_rows)
        .ok_or_else(|| overflow("KV rows"))?;
    // A hybrid pool: the full layers hold full + extra rows, the sliding layers swa + extra,
    // and the allocator's index map follows.
    let hybrid_rows = match (hybrid, split) {
        (Some(h), Some(sp)) => {
            let env = names(run.max_num_seqs.unwrap_or(0))
                .with("full_tokens", sp.full)
                .with("swa_tokens", sp.swa);
            let extra = h.extra_rows.eval(&env)?;
            let rows_of = |t: u64| t.checked_add(extra).ok_or_else(|| overflow("KV rows"));
            Some((rows_of(sp.full)?, rows_of(sp.swa)?, h.index_map.eval(&env)?))
        }
        _ => None,
    };
    let mut workers = Vec::new();
    let mut details = Vec::new();
    for s in &stage_facts {
        let (kv, index_map, swa_kv) = match hybrid_rows {
            Some((full_rows, swa_rows, map)) => {
                let swa_kv = swa_rows
                    .checked_mul(s.sliding.0)
                    .ok_or_else(|| overflow("KV pool bytes"))?;
                (
                    full_rows
                        .checked_mul(s.full.0)
                        .and_then(|a| a.checked_add(swa_kv))
                        .ok_or_else(|| overflow("KV pool bytes"))?,
                    map,
                    swa_kv,
                )
            }
            None => (
                rows.checked_mul(s.cell)
                    .ok_or_else(|| overflow("KV pool bytes"))?,
                0,
                0,
            ),
        };
        let (k, v) = if settled.mla {
            (kv, 0)
        } else {
            (kv / 2, kv - kv / 2)
        };
        let used = s
            .weights
            .checked_add(s.after_load)
            .and_then(|u| u.checked_add(kv))
            .and_then(|u| u.checked_add(req_to_token))
            .and_then(|u| u.checked_add(index_map))
            .and_then(|u| u.checked_add(state_bytes))
            .ok_or_else(|| overflow("bytes of a rank"))?;
        for tp_rank in 0..settled.tp {
            let rank = s
                .stage
                .checked_mul(settled.tp)
                .and_then(|r| r.checked_add(tp_rank))
                .ok_or_else(|| overflow("rank"))?;
            workers.push(Worker {
                rank,
                tp_rank,
                pp_stage: s.stage,
                weights: s.weights,
                activation_peak: 0,
                peak_set_by: PeakSetBy::Forward,
                forward_live: 0,
                forward_held: 0,
                sampler_live: 0,
                persistent: 0,
                resident: 0,
                counted_non_kv: used.saturating_sub(kv),
                encoder: EncoderBytes::default(),
                non_torch: 0,
                kv_cache: kv,
                blocks: tokens / page,
                block_bytes: s.cell.saturating_mul(page),
                kernel_launches: 0,
                cuda_graph: CudaGraphEstimate::default(),
            });
            details.push(SglangWorker {
                rank,
                pp_stage: s.stage,
                free_before_load: free_bytes,
                weights: s.weights,
                after_load: s.after_load,
                k_bytes: k,
                v_bytes: v,
                req_to_token,
                swa_index_map: index_map,
                swa_kv_bytes: swa_kv,
                recurrent_state: state_bytes,
                left_for_activations: free_bytes.saturating_sub(used),
            });
        }
    }
    let verdict = if ctx > settled.longest && !flow.longer_context_allowed {
        // Raised while the configuration is read, before anything loads.
        refusal = Some(
            messages
                .context_above
                .replace("{context}", &ctx.to_string())
                .replace("{derived}", &settled.longest.to_string()),
        );
        Verdict::MaxModelLenAboveModel {
            max_model_len: ctx,
            longest: settled.longest,
        }
    } else if refusal.is_some() {
        Verdict::NoKvMemory { short_by }
    } else {
        Verdict::Starts
    };
    let layers: u64 = stages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            cache_layers(s.circuit, i, &run.model)
                .map(|l| l.iter().filter(|l| l.kind != LayerKind::Recurrent).count() as u64)
        })
        .sum::<Result<u64, _>>()?;
    let per_request = ctx.div_ceil(page);
    let groups = match (split, stage_facts.first()) {
        (Some(_), Some(s)) => {
            let window = s.window.unwrap_or(0);
            vec![
                KvGroup {
                    kind: LayerKind::Full,
                    block_size: page,
                    layers: s.full.1,
                    blocks_per_request: per_request,
                },
                KvGroup {
                    kind: LayerKind::Sliding { window },
                    block_size: page,
                    layers: s.sliding.1,
                    blocks_per_request: per_request.min(window.div_ceil(page)),
                },
            ]
        }
        _ => vec![KvGroup {
            kind: LayerKind::Full,
            block_size: page,
            layers,
            blocks_per_request: per_request,
        }],
    };
    let kv_layout = KvLayout {
        groups,
        stage_block_bytes: stage_facts
            .iter()
            .map(|s| s.cell.saturating_mul(page))
            .collect(),
        token_block_size: page,
        blocks_per_request: per_request,
        // One request of context_len on each stage's cells (SGLang checks none at start-up:
        // a shorter pool caps requests instead).
        // With a hybrid pool the sliding layers hold a window of a request, not all of it.
        stage_request_bytes: stage_facts
            .iter()
            .map(|s| match split {
                Some(_) => {
                    let window = s.window.unwrap_or(0).div_ceil(page).min(per_request);
                    s.full
                        .0
                        .saturating_mul(per_request.saturating_mul(page))
                        .saturating_add(s.sliding.0.saturating_mul(window.saturating_mul(page)))
                }
                None => s.cell.saturating_mul(per_request.saturating_mul(page)),
            })
            .collect(),
    };
    let detail = SglangStartup {
        gpu_mib: settled.gpu_mib,
        mem_fraction_static: settled.mem_fraction,
        mem_fraction_static_default: settled.mem_fraction_default,
        reserved_kib: settled.reserved_kib,
        free_before_load: (free_gib * GIB) as u64,
        free_before_pool: (available_gib * GIB) as u64,
        outside_pool: (outside_gib.max(0.0) * GIB) as u64,
        pool_budget,
        cell_bytes: stage_facts.iter().map(|s| s.cell).collect(),
        page_size: page,
        max_total_num_tokens: tokens,
        swa_tokens: split.map(|sp| sp.swa),
        mamba_slots: state_slots,
        max_running_requests: running,
        context_len: ctx,
        max_req_len,
        chunked_prefill_size: settled.chunked,
        decode_graph_sizes: settled.decode_sizes,
        prefill_graph_sizes: settled.prefill_sizes,
        mla: settled.mla,
        workers: details,
        refusal,
        replicas,
        ep_size,
        gpus,
        replicas_total_tokens: tokens
            .checked_mul(replicas)
            .ok_or_else(|| overflow("max_total_num_tokens over the replicas"))?,
        replicas_running_requests: running
            .checked_mul(replicas)
            .ok_or_else(|| overflow("max_running_requests over the replicas"))?,
        communicator_bound: if world > 1 {
            f.communicator_bound_bytes
        } else {
            0
        },
    };
    Ok(Startup {
        engine: profile.engine().to_owned(),
        version: profile.version().to_owned(),
        device: run.device.name.clone(),
        device_figures: run.device.clone(),
        device_total,
        gpu_memory_utilization: settled.mem_fraction,
        requested: (free_gib * settled.mem_fraction * GIB).max(0.0) as u64,
        max_num_batched_tokens: settled.chunked,
        max_num_batched_tokens_defaulted: run.max_num_batched_tokens.is_none(),
        max_num_seqs: running,
        max_num_seqs_defaulted: run.max_num_seqs.is_none(),
        max_model_len: ctx,
        workers,
        kv_cache_tokens: tokens,
        max_concurrency: if ctx == 0 {
            0.0
        } else {
            tokens as f64 / ctx as f64
        },
        kv_blocks: tokens / page,
        kv_layout,
        cuda_graph_estimate: 0,
        cuda_graph_subtracted: false,
        verdict,
        releases: profile.releases().to_vec(),
        unsettled: profile.facts.unsettled.clone(),
        detail: Some(EngineDetail::Sglang(Box::new(detail))),
    })
}

/// The hybrid sliding-window split the run's model gets, if any: a class of the release's
/// `hybrid_swa_architectures` with its split given, unless `--disable-hybrid-swa-memory`.
/// `--swa-full-tokens-ratio` other than the release's default is refused when no hybrid pool
/// is built (it would change no byte); `--disable-hybrid-swa-memory` is taken for any model,
/// as SGLang takes it: on a class without a hybrid pool it is what SGLang's own overrides set
/// (Gemma 2/3's, which a log's `server_args` prints) and the pool is the same.
fn hybrid_of<'f>(
    profile: &EngineProfile,
    flow: &'f FlowFacts,
    run: &RunSettings,
    flags: &SglangFlags,
) -> Result<Option<&'f HybridSplit>, EngineError> {
    let listed = flow.hybrid_swa.contains(&run.model.architecture);
    let built = listed && !flags.disable_hybrid_swa_memory;
    if let Some(r) = flags.swa_full_tokens_ratio {
        if !(r > 0.0 && r <= 1.0) {
            return Err(EngineError::BadSetting {
                what: "swa_full_tokens_ratio",
                value: r.to_string(),
                why: "must be in (0, 1] (SGLang: \"--swa-full-tokens-ratio should be in range (0, 1.0].\")",
            });
        }
        let default = flow.hybrid_split.as_ref().map(|h| h.ratio);
        if !built && default != Some(r) {
            return Err(EngineError::FlagRefused {
                flag: format!("--swa-full-tokens-ratio {r}"),
                why: format!(
                    "{} {} builds {} no hybrid sliding-window pool{} (its windows get a full KV cache), so the ratio changes no byte",
                    profile.engine(),
                    profile.version(),
                    run.model.architecture,
                    if listed {
                        " under --disable-hybrid-swa-memory"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    Ok(if built {
        flow.hybrid_split.as_ref()
    } else {
        None
    })
}

/// Python's `a // b` on floats (`float_floor_div`: the quotient of `a - fmod(a, b)`, floored,
/// rounded to the nearer integer when within a half), for positive operands.
fn py_floordiv(a: f64, b: f64) -> f64 {
    let m = a % b;
    let div = (a - m) / b;
    let floor = div.floor();
    if div - floor > 0.5 {
        floor + 1.0
    } else {
        floor
    }
}

/// The full and sliding token counts of a hybrid pool (`HybridSplit`'s modes): `all_layer` is
/// the all-layer count T (after `--max-total-tokens` and the page), `budget` the pool's bytes.
fn split_hybrid(
    h: &HybridSplit,
    flags: &SglangFlags,
    s: &Stage,
    budget: u64,
    all_layer: u64,
    page: u64,
) -> Result<Split, EngineError> {
    let ratio = flags.swa_full_tokens_ratio.unwrap_or(h.ratio);
    let (full_bytes, n_full) = s.full;
    let (swa_bytes, n_swa) = s.sliding;
    let alike = |bytes: u64, n: u64| n == 0 || bytes.is_multiple_of(n);
    if !(alike(full_bytes, n_full) && alike(swa_bytes, n_swa)) {
        return Err(EngineError::BadSetting {
            what: "hybrid sliding-window layers",
            value: format!(
                "{full_bytes} B over {n_full} full and {swa_bytes} B over {n_swa} sliding layers"
            ),
            why: "SGLang prices every layer of a kind alike (one per-token size each); layers of one kind that differ are not modelled",
        });
    }
    if n_full == 0 || n_swa == 0 {
        return Err(EngineError::BadSetting {
            what: "hybrid sliding-window layers",
            value: format!("{n_full} full and {n_swa} sliding"),
            why: "a hybrid pool of one kind of layer alone (all sliding: SGLang's all-SWA pool) is not modelled",
        });
    }
    // F + r x S in 0.5.23's order, the ratio times the sliding layers' bytes
    // (pool_configurator.py:786-803; earlier releases multiply r by one layer's bytes first,
    // which can differ in the last bit).
    let denominator_bytes = full_bytes as f64 + ratio * swa_bytes as f64;
    let raw = match h.mode {
        SplitMode::Layers => {
            // int(T x L / (r x L_swa + L_full)) (0.5.8 model_runner_kv_cache_mixin.py:217-236).
            let total = n_full
                .checked_add(n_swa)
                .and_then(|layers| all_layer.checked_mul(layers))
                .ok_or_else(|| overflow("tokens across layers"))?;
            (total as f64 / (ratio * n_swa as f64 + n_full as f64)).floor()
        }
        SplitMode::Memory => {
            // int(T x (F + S) / (F + r x S)) (0.5.10 model_runner_kv_cache_mixin.py:349-365).
            let total = full_bytes
                .checked_add(swa_bytes)
                .and_then(|cell| all_layer.checked_mul(cell))
                .ok_or_else(|| overflow("bytes of the all-layer tokens"))?;
            (total as f64 / denominator_bytes).floor()
        }
        SplitMode::Bytes => {
            // int(budget // (F + r x S)), then --max-total-tokens caps it (0.5.23
            // pool_configurator.py:907-916, kv_cache_configurator.py:3090-3117).
            let n = py_floordiv(budget as f64, denominator_bytes);
            flags.max_total_tokens.map_or(n, |cap| n.min(cap as f64))
        }
    };
    let raw = if raw.is_finite() && raw > 0.0 {
        raw as u64
    } else {
        0
    };
    let full = raw / page * page;
    let from = if h.swa_from_paged_full { full } else { raw };
    let swa = (from as f64 * ratio).floor() as u64 / page * page;
    Ok(Split { full, swa })
}

/// `mem_fraction_static` as SGLang prints a float.
fn format_fraction(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

/// The run's SGLang flags, refusing the generic settings SGLang has no flag for.
/// `--disable-radix-cache` on a model with a hybrid sliding-window or recurrent-state pool:
/// SGLang sizes those pools' requests by it in some releases (0.5.23
/// model_executor/pool_configurator.py:992, mem_cache/kv_cache_configurator.py:3063), which is
/// not followed. Every other model starts with the same bytes either way: the radix cache
/// only indexes the pool's slots (mem_cache/kv_cache_builder.py:365-390 picks the tree).
fn refuse_radix_off(
    profile: &EngineProfile,
    flow: &FlowFacts,
    run: &RunSettings,
    flags: &SglangFlags,
    stage_facts: &[Stage],
) -> Result<(), EngineError> {
    if !flags.disable_radix_cache {
        return Ok(());
    }
    let hybrid = flow.hybrid_split.is_some() && flow.hybrid_swa.contains(&run.model.architecture);
    let recurrent = flow.mamba.is_some() && stage_facts.first().is_some_and(|s| s.state_slot > 0);
    if hybrid || recurrent {
        return Err(EngineError::FlagRefused {
            flag: "--disable-radix-cache".to_owned(),
            why: format!(
                "{} {} sizes the {} pool's requests by whether the radix cache is on, which is not modelled (a model whose every layer keeps a full cache starts with the same bytes either way)",
                profile.engine(),
                profile.version(),
                if hybrid {
                    "hybrid sliding-window"
                } else {
                    "recurrent-state"
                }
            ),
        });
    }
    Ok(())
}

fn flags_of(run: &RunSettings) -> Result<SglangFlags, EngineError> {
    let refuse = |what: &'static str, why: &'static str| EngineError::BadSetting {
        what,
        value: "given".to_owned(),
        why,
    };
    if run.gpu_memory_utilization.is_some() {
        return Err(refuse(
            "gpu_memory_utilization",
            "SGLang sizes its pool from --mem-fraction-static (a fraction of the free memory before loading), not from a fraction of the device",
        ));
    }
    if run.enable_prefix_caching.is_some() {
        return Err(refuse(
            "enable_prefix_caching",
            "SGLang's radix cache lives inside its pool, so prefix caching changes no byte of its start-up",
        ));
    }
    if run.skip_mm_profiling || run.mm_limit_per_prompt.is_some() {
        return Err(refuse(
            "multimodal profiling settings",
            "SGLang runs no profile, so they change nothing; multimodal models are not modelled for SGLang",
        ));
    }
    Ok(match &run.engine_flags {
        None => SglangFlags::default(),
        Some(EngineFlags::Sglang(f)) => f.clone(),
    })
}

/// `--dp-size` without attention data parallelism: the replicas. DataParallelController
/// starts one scheduler group per replica on GPUs of its own (0.5.23
/// managers/data_parallel_controller.py:420-449 launch_dp_schedulers, each replica's first GPU
/// stepping by tp x pp x gpu_id_step), each with the same server_args: no per-GPU default
/// reads dp_size unless attention data parallelism is on (arg_groups/memory_hook.py:363-378
/// adds max_bs x attn_dp_size x 3 MB only then; model_executor/pool_configurator.py:954-956
/// and 0.4.6 managers/tp_worker.py:111-116 divide --max-running-requests by the attention DP
/// size only, 1 without it; 0.4.6
/// server_args.py:289-296 and 0.5.9 server_args.py:2108-2117 divide chunked_prefill_size only
/// then), and each replica's world (its communicators, the free memory's reduction) is its own
/// tp x pp, so a replica starts as one alone does. Releases up to 0.5.2 step the first GPU by
/// tp only (0.5.2 data_parallel_controller.py:156, while its stages sit pp_rank x tp above it,
/// :241-246): with pp above 1 two replicas' stages share GPUs, which is refused.
fn data_parallel_replicas(
    profile: &EngineProfile,
    flow: &FlowFacts,
    flags: &SglangFlags,
    pp: u64,
) -> Result<u64, EngineError> {
    let replicas = flags.dp_size.unwrap_or(1);
    let refused = |why: String| EngineError::FlagRefused {
        flag: format!("--dp-size {replicas}"),
        why,
    };
    if replicas == 0 {
        return Err(refused(
            "SGLang starts no replica; give 1 or more".to_owned(),
        ));
    }
    if replicas > 1 && pp > 1 && !flow.dp_stride_covers_pp {
        return Err(refused(format!(
            "SGLang {} starts replica r at GPU r x tp, not r x tp x pp, so with --pp-size {pp} the replicas' stages share GPUs, which is not modelled",
            profile.version()
        )));
    }
    Ok(replicas)
}

/// Refuses what SGLang sizes in a way not modelled here.
fn refuse_unmodelled(
    profile: &EngineProfile,
    flow: &FlowFacts,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    flags: &SglangFlags,
) -> Result<(), EngineError> {
    let Some(first) = stages.first() else {
        return Err(EngineError::BadSetting {
            what: "stage circuits",
            value: "none".to_owned(),
            why: "give one circuit per pipeline stage",
        });
    };
    let named = first.circuit;
    let model = &run.model;
    let who = format!("{} {}", profile.engine(), profile.version());
    if model.vision_encoder {
        return Err(not_modelled(
            named,
            format!(
                "a multimodal model: {who} scales mem_fraction_static by the vision tower's size and reserves memory for its features, which is not modelled"
            ),
        ));
    }
    if let Some(r) = flow
        .refuse
        .iter()
        .find(|r| r.architecture == model.architecture)
    {
        return Err(not_modelled(
            named,
            format!("{} under {who}: {}", r.architecture, r.why),
        ));
    }
    let hybrid = flow.hybrid_swa.contains(&model.architecture) && !flags.disable_hybrid_swa_memory;
    if hybrid && flow.hybrid_split.is_some() && stages.len() > 1 {
        return Err(not_modelled(
            named,
            format!(
                "{}: {who} splits a hybrid sliding-window pool over the whole model's layers, and at more than one pipeline stage that is not modelled",
                model.architecture
            ),
        ));
    }
    if hybrid && flow.hybrid_split.is_none() {
        return Err(not_modelled(
            named,
            format!(
                "{}: {who} gives it a hybrid sliding-window pool (full and SWA tokens split by --swa-full-tokens-ratio), which is not modelled",
                model.architecture
            ),
        ));
    }
    if stages.len() > 1 && !flow.pipeline_min {
        return Err(not_modelled(
            named,
            format!(
                "{} pipeline stages: {who} sizes each stage's pool alone (no minimum over the stages), and what each stage prints is not modelled",
                stages.len()
            ),
        ));
    }
    let sized = flow
        .mamba
        .as_ref()
        .is_some_and(|m| m.architectures.contains(&model.architecture));
    if sized && stages.len() > 1 {
        return Err(not_modelled(
            named,
            format!(
                "{}: {who} charges each pipeline stage its share of the recurrent layers' state, which is not modelled",
                model.architecture
            ),
        ));
    }
    for (i, s) in stages.iter().enumerate() {
        for layer in cache_layers(s.circuit, i, model)? {
            if layer.kind == LayerKind::Recurrent && !sized {
                return Err(not_modelled(
                    s.circuit,
                    format!(
                        "per-sequence recurrent state: {who} sizes a mamba state pool beside the KV cache for {}, which its engine file does not describe",
                        model.architecture
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The defaults, `mem_fraction_static` and the context, settled.
fn settle(
    profile: &EngineProfile,
    flow: &FlowFacts,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    flags: &SglangFlags,
) -> Result<Settled, EngineError> {
    let (tp, pp) = crate::startup::checked_layout(
        stages,
        run,
        "tp_size / pp_size",
        "one circuit per pipeline stage, stages 0..pp_size in order",
    )?;
    let positive = |what: &'static str, v: Option<u64>| match v {
        Some(0) => Err(EngineError::BadSetting {
            what,
            value: "0".to_owned(),
            why: "must be positive",
        }),
        _ => Ok(()),
    };
    positive("chunked_prefill_size", run.max_num_batched_tokens)?;
    positive("max_running_requests", run.max_num_seqs)?;
    positive("max_total_tokens", flags.max_total_tokens)?;
    positive("cuda_graph_max_bs", flags.cuda_graph_max_bs)?;
    positive("context_length", run.max_model_len)?;
    positive("page_size", run.block_size)?;
    if let (Some(_), Some(why)) = (flags.cuda_graph_max_bs, &flow.cuda_graph_max_bs_refused) {
        return Err(EngineError::FlagRefused {
            flag: "--cuda-graph-max-bs".to_owned(),
            why: why.clone(),
        });
    }
    // nvidia-smi's memory.total, MiB (utils/common.py get_nvgpu_memory_capacity).
    let gpu_mib = run.device.memory_bytes >> 20;
    let tier = flow
        .tiers
        .iter()
        .find(|t| t.below_mib.is_none_or(|b| gpu_mib < b));
    let (chunked_default, max_bs_default) = match tier {
        Some(t) => (
            t.chunked,
            if tp < 4 {
                t.decode_max_bs
            } else {
                t.decode_max_bs_tp4
            },
        ),
        None => (
            flow.unknown.chunked_prefill_size,
            flow.unknown.decode_max_bs,
        ),
    };
    let chunked = run.max_num_batched_tokens.unwrap_or(chunked_default);
    let mut decode_max_bs = flags.cuda_graph_max_bs.unwrap_or(max_bs_default);
    if flags.cuda_graph_max_bs.is_none()
        && flow.clamp_decode_max_bs
        && let Some(r) = run.max_num_seqs
    {
        decode_max_bs = decode_max_bs.min(r);
    }
    let mla = stages
        .iter()
        .any(|s| s.circuit.dim("kv_lora_rank").is_some());
    let graphs = !run.enforce_eager;
    let prefill_graph = (graphs || !flow.prefill_off_with_disable_cuda_graph)
        && flow.prefill_default
        && !(pp > 1 && flow.prefill_off_with_pipeline)
        && !(mla && flow.prefill_off_with_mla)
        && !flow
            .prefill_off_architectures
            .contains(&run.model.architecture);
    let named = stages[0].circuit.name();
    let env = Env::names_only(
        vec![
            ("chunked", chunked),
            ("mla", u64::from(mla)),
            (
                "max_total_tokens",
                flags.max_total_tokens.unwrap_or(u64::MAX),
            ),
            ("context_length", run.max_model_len.unwrap_or(u64::MAX)),
        ],
        named,
    );
    let too_many = |what: &'static str| EngineError::BadSetting {
        what,
        value: "its capture list".to_owned(),
        why: "would hold more than 65,536 sizes",
    };
    let prefill_sizes = if prefill_graph {
        let max = flow.prefill_max.eval(&env)?;
        sizes_up_to(&flow.prefill_sizes, max).ok_or_else(|| too_many("chunked_prefill_size"))?
    } else {
        Vec::new()
    };
    let decode_sizes = if graphs {
        let mut sizes = sizes_up_to(&flow.decode_sizes, decode_max_bs)
            .ok_or_else(|| too_many("cuda_graph_max_bs"))?;
        if flow.decode_append_max && !sizes.contains(&decode_max_bs) {
            sizes.push(decode_max_bs);
        }
        sizes
    } else {
        Vec::new()
    };
    let (mem_fraction, mem_fraction_default, reserved_kib) = match flags.mem_fraction_static {
        Some(m) if m > 0.0 && m <= 1.0 => (m, false, 0),
        Some(m) => {
            return Err(EngineError::BadSetting {
                what: "mem_fraction_static",
                value: m.to_string(),
                why: "must be in (0, 1]",
            });
        }
        None => match &flow.fraction_table {
            // A release whose default is a table on the parallel size (0.4.6 to 0.4.7): no
            // reserve is computed.
            Some(table) if gpu_mib == 0 => match &table.unknown_memory {
                UnknownMemoryDecl::Fraction(m) => (*m, true, 0),
                UnknownMemoryDecl::Error(e) => {
                    return Err(EngineError::DeviceNotModelled {
                        device: run.device.name.clone(),
                        why: format!(
                            "nvidia-smi's memory is not known, and {} {} fails on it: {e}",
                            profile.engine(),
                            profile.version()
                        ),
                    });
                }
            },
            Some(table) => {
                let env = Env::names_only(vec![("tp", tp), ("pp", pp)], named);
                (table.fraction(gpu_mib, &env)?, true, 0)
            }
            None if gpu_mib == 0 => (flow.unknown_mem_fraction, true, 0),
            None => {
                let env = Env::names_only(
                    vec![
                        ("gpu_mib", gpu_mib),
                        ("chunked", chunked),
                        ("tp", tp),
                        ("pp", pp),
                        ("decode_graph", u64::from(graphs)),
                        ("decode_max_bs", decode_max_bs),
                        ("prefill_graph", u64::from(prefill_graph)),
                        ("prefill_graph_sizes", prefill_sizes.len() as u64),
                        ("mla", u64::from(mla)),
                    ],
                    named,
                );
                let reserved = flow.reserved_kib.eval(&env)?;
                let kib = (gpu_mib as f64) * 1024.0;
                (
                    round_to((kib - reserved as f64) / kib, flow.decimals),
                    true,
                    reserved,
                )
            }
        },
    };
    let model_len = profile.model_len(&run.model);
    Ok(Settled {
        tp,
        pp,
        gpu_mib,
        chunked,
        decode_sizes,
        prefill_sizes,
        mem_fraction,
        mem_fraction_default,
        reserved_kib,
        context_len: run.max_model_len.unwrap_or(model_len.default),
        longest: model_len.longest,
        page: backend_page(flow, run.block_size),
        mla,
    })
}

/// The page the pool is built with: `--page-size` or the default, snapped to the default
/// when the attention backend SGLang picks does not take it (`pool.backend_page_sizes`:
/// trtllm_mha's 16, 32, 64 or 128, else 64, arg_groups/overrides.py:1174-1187 in 0.5.23).
fn backend_page(flow: &FlowFacts, given: Option<u64>) -> u64 {
    let page = given.unwrap_or(flow.page_size);
    if flow.backend_page_sizes.is_empty() || flow.backend_page_sizes.contains(&page) {
        page
    } else {
        flow.page_size
    }
}

/// Each stage's weights as loaded, what grows after, and its cell.
fn stage_facts(
    profile: &EngineProfile,
    flow: &FlowFacts,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    settled: &Settled,
    flags: &SglangFlags,
) -> Result<Vec<Stage>, EngineError> {
    let model = &run.model;
    let dtype_bytes = model
        .dtype
        .bytes(1, 1)
        .map_err(|_| EngineError::BadSetting {
            what: "model dtype",
            value: model.dtype.to_string(),
            why: "a model dtype is a float format of whole bytes (bf16, f16, f32)",
        })?;
    let mut out = Vec::new();
    for (i, s) in stages.iter().enumerate() {
        let circuit = s.circuit;
        let env = Env::new(
            vec![
                ("max_position_embeddings", model.max_position_embeddings),
                ("dtype_bytes", dtype_bytes),
                ("context_len", settled.context_len),
                ("vocab_size", model.vocab_size),
            ],
            circuit,
        );
        let at = Where {
            stage: s.stage,
            stages: settled.pp,
            execution: if run.enforce_eager {
                Execution::Eager
            } else {
                Execution::Compiled
            },
        };
        // The rotary caches, the tensors the engine creates and the parameters, one allocation
        // each in that order, held as `weights.allocator` counts them.
        let (mut allocations, after_load) = rope_caches(profile, flow, circuit, model, settled)?;
        for term in profile
            .facts
            .created
            .iter()
            .filter(|t| t.applies(circuit, at))
        {
            let (bytes, count) = term.tensors(&env)?;
            let count = usize::try_from(count).map_err(|_| overflow("created tensors"))?;
            allocations
                .try_reserve(count)
                .map_err(|_| overflow("created tensors"))?;
            allocations.extend(std::iter::repeat_n(bytes, count));
        }
        let f = &profile.facts;
        allocations.extend(
            crate::worker::parameters(circuit, &f.stacked, &f.released)
                .ok_or_else(|| overflow("weights"))?,
        );
        let weights = crate::worker::held_bytes(f.allocator, f.allocator_max_split, &allocations)
            .ok_or_else(|| overflow("weights"))?;
        let layers = cache_layers(circuit, i, model)?;
        // A recurrent layer's bytes are per sequence: SGLang's cell reads the attention layers
        // alone (pool_configurator.py:229-236); its state goes to the state pool.
        let cell = layers
            .iter()
            .filter(|l| l.kind != LayerKind::Recurrent)
            .try_fold(0u64, |acc, l| acc.checked_add(l.bytes))
            .ok_or_else(|| overflow("cell bytes"))?;
        let recurrent = layers
            .iter()
            .filter(|l| l.kind == LayerKind::Recurrent)
            .count() as u64;
        let state_slot = match &flow.mamba {
            Some(m) if recurrent > 0 && m.architectures.contains(&model.architecture) => m
                .state_bytes_per_layer
                .eval(&env)?
                .checked_mul(recurrent)
                .ok_or_else(|| overflow("recurrent state of a slot"))?,
            _ => 0,
        };
        let mut full = (0u64, 0u64);
        let mut sliding = (0u64, 0u64);
        let mut window = None;
        for l in &layers {
            let (bytes, count) = match l.kind {
                LayerKind::Full => (&mut full.0, &mut full.1),
                LayerKind::Sliding { window: w } => {
                    window.get_or_insert(w);
                    (&mut sliding.0, &mut sliding.1)
                }
                // Chunked layers (Llama 4) and recurrent states are refused for a hybrid
                // pool below; they are not counted in either part.
                LayerKind::Chunked { .. } | LayerKind::Recurrent => continue,
            };
            *bytes = bytes
                .checked_add(l.bytes)
                .ok_or_else(|| overflow("cell bytes"))?;
            *count += 1;
        }
        if flow.hybrid_split.is_some()
            && flow.hybrid_swa.contains(&model.architecture)
            && !flags.disable_hybrid_swa_memory
            && full.1 + sliding.1 != layers.len() as u64
        {
            return Err(not_modelled(
                circuit,
                "a hybrid sliding-window pool over layers that are neither full attention nor a sliding window".to_owned(),
            ));
        }
        if cell == 0 {
            return Err(not_modelled(
                circuit,
                "a pipeline stage without KV-cache layers".to_owned(),
            ));
        }
        out.push(Stage {
            stage: s.stage,
            weights,
            after_load,
            cell,
            full,
            sliding,
            window,
            state_slot,
        });
    }
    Ok(out)
}

/// The allocations of the rotary caches and modules a stage's weights hold, and what the
/// caches grow by after the weights print: one `get_rope` cache per distinct rotary
/// configuration of the model (its rows by `weights.rotary_caches`, `cache_element_bytes` each
/// of rotary_dim), as the class asks for them, and the class's own modules.
fn rope_caches(
    profile: &EngineProfile,
    flow: &FlowFacts,
    circuit: &circuit_ir::Circuit,
    model: &ModelFacts,
    settled: &Settled,
) -> Result<(Vec<u64>, u64), EngineError> {
    let class = flow
        .rope_classes
        .iter()
        .find(|c| c.architectures.contains(&model.architecture));
    let dims = |rotary_dim: u64, rows: u64| {
        Env::new(
            vec![
                ("context_len", settled.context_len),
                ("rotary_dim", rotary_dim),
                ("rotary_rows", rows),
            ],
            circuit,
        )
    };
    let mut bytes = match (class, model.rotary.first()) {
        (Some(c), Some(r)) => vec![c.own_bytes.eval(&dims(r.rotary_dim, 0))?],
        _ => Vec::new(),
    };
    let mut growth = 0u64;
    let Some(mechanism) = profile.facts.rotary_caches else {
        return Ok((bytes, growth));
    };
    let unscaled = match class.map(|c| c.get_rope) {
        Some(GetRope::None) => return Ok((bytes, growth)),
        Some(GetRope::Unscaled) => true,
        None => false,
    };
    let default_set = RopeSet {
        rope_type: "default".to_owned(),
        factor: None,
        factor_null: false,
        original_max_position_embeddings: None,
        mrope_section: false,
    };
    for r in &model.rotary {
        let set = if unscaled { &default_set } else { &r.set };
        let rows = crate::mechanisms::rotary_cache_rows(mechanism, set, model)
            .map_err(|what| not_modelled(circuit, format!("the rotary cache of {what}")))?;
        let cache = rows
            .checked_mul(r.rotary_dim)
            .and_then(|b| b.checked_mul(flow.rope_element_bytes))
            .ok_or_else(|| overflow("the rotary cache"))?;
        let grown = flow.rope_growth.eval(&dims(r.rotary_dim, rows))?;
        bytes.push(cache);
        growth = growth
            .checked_add(grown)
            .ok_or_else(|| overflow("the rotary caches' growth"))?;
    }
    Ok((bytes, growth))
}

/// The budget answers from one prediction: the longest context a request fills whole
/// (SGLang starts at any context up to the derived one, and caps requests at the pool), and
/// the `mem_fraction_static` whose pool holds `target_kv_tokens`.
pub(crate) fn budget_answers(
    profile: &EngineProfile,
    flow: &FlowFacts,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    target_kv_tokens: u64,
) -> Result<BudgetAnswers, EngineError> {
    let mut startup = predict(profile, flow, stages, run)?;
    // A context above the model's is refused before anything loads, but the question is the
    // largest that starts: answered from the start-up at the longest the model allows.
    if let Verdict::MaxModelLenAboveModel { longest, .. } = startup.verdict {
        let at = RunSettings {
            max_model_len: Some(longest),
            ..run.clone()
        };
        startup = predict(profile, flow, stages, &at)?;
    }
    let Some(EngineDetail::Sglang(d)) = &startup.detail else {
        // predict above always gives its detail.
        return Ok(BudgetAnswers {
            largest_max_model_len: None,
            utilization_for_target: None,
        });
    };
    // A release that takes any context caps the answer at the pool alone.
    let longest = if flow.longer_context_allowed {
        u64::MAX
    } else {
        profile.model_len(&run.model).longest
    };
    let largest = (startup.verdict == Verdict::Starts).then(|| longest.min(d.max_total_num_tokens));
    // rest >= ceil(target / page) x page x the largest cell, with rest = A - F x (1 - m).
    let page = d.page_size;
    let cell = d.cell_bytes.iter().copied().max().unwrap_or(0);
    let needed = match d.swa_tokens {
        // A hybrid pool prints its full tokens: the least pool budget whose split reaches the
        // target (the split is monotone in the budget).
        Some(_) => {
            let flags = flags_of(run)?;
            let settled = settle(profile, flow, stages, run, &flags)?;
            let facts = stage_facts(profile, flow, stages, run, &settled, &flags)?;
            match (hybrid_of(profile, flow, run, &flags)?, facts.first()) {
                (Some(h), Some(s)) => {
                    let full_at = |budget: u64| -> Result<u64, EngineError> {
                        let all_layer = budget / s.cell / page * page;
                        let unflagged = SglangFlags {
                            max_total_tokens: None,
                            ..flags.clone()
                        };
                        Ok(split_hybrid(h, &unflagged, s, budget, all_layer, page)?.full)
                    };
                    // A pebibyte bounds the search (no device holds more).
                    const MOST: u64 = 1 << 50;
                    let (mut lo, mut hi) = (0u64, 1u64);
                    while hi < MOST && full_at(hi)? < target_kv_tokens {
                        hi *= 2;
                    }
                    if full_at(hi)? < target_kv_tokens {
                        lo = u64::MAX;
                    }
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if full_at(mid)? >= target_kv_tokens {
                            hi = mid;
                        } else {
                            lo = mid + 1;
                        }
                    }
                    lo
                }
                _ => 0,
            }
        }
        None => target_kv_tokens
            .div_ceil(page)
            .checked_mul(page)
            .and_then(|t| t.checked_mul(cell))
            .ok_or_else(|| overflow("bytes for the target KV tokens"))?,
    };
    let flags = flags_of(run)?;
    let capped = flags
        .max_total_tokens
        .is_some_and(|cap| cap < target_kv_tokens);
    let free = d.free_before_load as f64 / GIB;
    let available = d.free_before_pool as f64 / GIB;
    let fraction = 1.0 - (available - needed as f64 / GIB) / free;
    let scale = 10f64.powi(flow.decimals as i32);
    let fraction = (fraction * scale).ceil() / scale;
    let fits = !capped && d.free_before_pool > 0 && fraction <= 1.0;
    if d.mamba_slots.is_some() {
        // The state pool takes its share of the rest first, in whole slots: no closed form;
        // the least fraction (in SGLang's decimals) whose start-up holds the target.
        let steps = 10u64.pow(flow.decimals);
        let tokens_at = |k: u64| -> Result<u64, EngineError> {
            let mut f = flags.clone();
            f.mem_fraction_static = Some(k as f64 / steps as f64);
            let at = RunSettings {
                engine_flags: Some(EngineFlags::Sglang(f)),
                ..run.clone()
            };
            let s = predict(profile, flow, stages, &at)?;
            Ok(if s.verdict == Verdict::Starts {
                s.kv_cache_tokens
            } else {
                0
            })
        };
        let least = if capped || tokens_at(steps)? < target_kv_tokens {
            None
        } else {
            let (mut lo, mut hi) = (1u64, steps);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if tokens_at(mid)? >= target_kv_tokens {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            Some(lo as f64 / steps as f64)
        };
        return Ok(BudgetAnswers {
            largest_max_model_len: largest,
            utilization_for_target: least,
        });
    }
    Ok(BudgetAnswers {
        largest_max_model_len: largest,
        utilization_for_target: fits.then_some(fraction.max(1.0 / scale)),
    })
}
