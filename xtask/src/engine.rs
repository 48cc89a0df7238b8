//! `cargo xtask plan --engine vllm` and `cargo xtask bench engine`: loads the engine folder
//! (`engines/<name>-<version>/`, embedded), imports the config, asks engine-profile for the
//! start-up and prints what the engine would print, with the budget questions the flags ask
//! (one line, one JSON key each). I/O and flags only; the model is in the engine-profile crate
//! and the engine folder.

use std::path::Path;

use engine_profile::{
    EngineProfile, ModelFacts, RunSettings, StageCircuit, Startup, Verdict, Worker,
};

use crate::CliError;
use crate::input::{self, Input};
use crate::out::outln;
use crate::plan::{OutputFormat, PlanArgs};

const GIB: f64 = (1u64 << 30) as f64;

/// vLLM's own flags (`vllm serve`), taken by `cargo xtask plan --engine vllm`.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Predict an engine's start-up instead of the abstract plan: `vllm` (vLLM 0.19.0).
    ///
    /// Example: --engine vllm
    #[arg(long, value_name = "NAME", requires = "hf_config")]
    pub engine: Option<String>,

    /// With --engine: fraction of the device's total the engine may use [default: the
    /// engine release's own, 0.9 for vLLM 0.19].
    ///
    /// Example: --gpu-memory-utilization 0.85
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub gpu_memory_utilization: Option<f64>,

    /// With --engine: batched tokens per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-batched-tokens 16384
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub max_num_batched_tokens: Option<u64>,

    /// With --engine: sequences per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-seqs 256
    #[arg(long, value_name = "SEQS", allow_negative_numbers = true)]
    pub max_num_seqs: Option<u64>,

    /// With --engine: the profile run leaves a multimodal model's vision encoder out, as vLLM
    /// does with this flag. A multimodal checkpoint needs it: the encoder's profile (vLLM runs
    /// it on its largest dummy image batch and keeps its outputs) is not modelled.
    ///
    /// Example: --skip-mm-profiling
    #[arg(long, requires = "engine")]
    pub skip_mm_profiling: bool,

    /// With --engine: the forward runs eagerly, op by op, and no CUDA graph is captured (vLLM's
    /// flag): the profile run holds what an eager forward holds, and there is no CUDA-graph
    /// estimate.
    ///
    /// Example: --enforce-eager
    #[arg(long, requires = "engine")]
    pub enforce_eager: bool,

    /// With --engine: tokens per KV-cache block (vLLM's --block-size) [default: as the engine
    /// picks it, 16 for vLLM 0.19's FlashAttention]. A model with recurrent state raises it
    /// until an attention page holds a state, as vLLM does.
    ///
    /// Example: --block-size 32
    #[arg(
        long,
        value_name = "TOKENS",
        requires = "engine",
        allow_negative_numbers = true
    )]
    pub block_size: Option<u64>,

    /// With --engine: vLLM's prefix caching (on by default in vLLM 0.19 for attention-only
    /// models), accepted so a `vllm serve` command line can be given as it is. It changes no
    /// byte of the prediction: the profile run and the KV sizing do not depend on it. On a
    /// model with recurrent state (Qwen3-Next), where vLLM leaves it off by default, asking for
    /// it is refused: vLLM would then keep the state per block, which is not modelled.
    ///
    /// Example: --enable-prefix-caching
    #[arg(long, requires = "engine", overrides_with = "no_enable_prefix_caching")]
    pub enable_prefix_caching: bool,

    /// With --engine: vLLM's flag turning prefix caching off; no effect on the prediction
    /// (see --enable-prefix-caching).
    ///
    /// Example: --no-enable-prefix-caching
    #[arg(long, requires = "engine", overrides_with = "enable_prefix_caching")]
    pub no_enable_prefix_caching: bool,

    /// With --hf-config: quantization applied while loading an unquantized checkpoint (none or
    /// fp8, vLLM's on-the-fly FP8); a checkpoint's own quantization comes from its config.
    ///
    /// Example: --quantization fp8
    #[arg(
        long,
        value_name = "METHOD",
        default_value = "none",
        requires = "hf_config"
    )]
    pub quantization: String,

    /// With --engine: also print the largest --max-model-len that starts with the other flags
    /// (the KV tokens, at most the context the config allows: max_position_embeddings with its
    /// rope scaling, which vLLM will not exceed).
    ///
    /// Example: --largest-max-model-len
    #[arg(long, requires = "engine")]
    pub largest_max_model_len: bool,

    /// With --engine: also print the largest --max-num-seqs that starts with the other flags
    /// (at most --max-num-batched-tokens, as vLLM requires).
    ///
    /// Example: --largest-max-num-seqs
    #[arg(long, requires = "engine")]
    pub largest_max_num_seqs: bool,

    /// With --engine: also print the smallest --tensor-parallel-size that starts with the other
    /// flags, trying the sizes up to 8 that divide the attention heads.
    ///
    /// Example: --smallest-tp
    #[arg(long, requires = "engine")]
    pub smallest_tp: bool,

    /// With --engine: also print the --gpu-memory-utilization whose KV cache holds at least
    /// this many tokens with the other flags.
    ///
    /// Example: --target-kv-tokens 500000
    #[arg(
        long,
        value_name = "TOKENS",
        requires = "engine",
        allow_negative_numbers = true
    )]
    pub target_kv_tokens: Option<u64>,
}

/// The budget questions asked on the command line, answered.
#[derive(Debug, Default)]
struct Budget {
    largest_max_model_len: Option<Option<u64>>,
    largest_max_num_seqs: Option<Option<u64>>,
    smallest_tp: Option<engine_profile::SmallestTp>,
    target: Option<(u64, Option<f64>)>,
}

/// What the engine profile predicts from: one circuit per pipeline stage, the model's sizes,
/// and the quantization the weights are loaded in, in a few words.
struct Stages {
    circuits: Vec<circuit_ir::Circuit>,
    model: ModelFacts,
    quantization: String,
}

/// The per-stage circuits of `text` under `options` (its layout), for the engine profile.
fn stage_circuits(
    text: &str,
    origin: &str,
    options: &circuit_hf::ImportOptions,
    side: &[circuit_hf::SideFile<'_>],
) -> Result<Stages, CliError> {
    let sharded = circuit_hf::import_parallel(text, origin, options, side)?;
    let p = options.parallel;
    // The engine profile takes one circuit per stage: ranks of a stage must hold the same
    // shapes. Data parallelism makes an engine per replica with all-to-all MoE kernels
    // (fused_moe/config.py use_all2all_kernels: dp_size > 1 and use_ep), which are not
    // modelled. Expert parallelism alone keeps the tokens on every rank, each rank running its
    // own experts before the all-reduce, so its ranks are alike when the experts divide.
    if p.dp != 1 {
        return Err(format!(
            "{origin}: --engine with --data-parallel-size {}: the engine profile models tensor- and pipeline-parallel layouts (with --enable-expert-parallel), not data-parallel replicas and their all-to-all kernels; give --data-parallel-size 1",
            p.dp
        )
        .into());
    }
    if sharded.imports.len() as u64 != p.pp {
        return Err(format!(
            "{origin}: --engine with --enable-expert-parallel over {} ranks: the experts do not divide evenly, so the ranks of a stage hold different experts, and the engine profile models ranks of a stage that are alike; give a tensor-parallel size that divides the experts",
            p.tp
        )
        .into());
    }
    // The model's facts as its class gives them, which config.json may omit (Gemma 3's text
    // config gives neither its vocabulary nor its context length).
    let first = &sharded.imports[0];
    let model = first.facts.clone();
    let quantization = match &first.quantization {
        None => "none".to_owned(),
        Some(q) if q.at_load => format!("{} (--quantization, at load)", q.method),
        Some(q) => format!("{} (the checkpoint's)", q.method),
    };
    Ok(Stages {
        circuits: sharded.imports.into_iter().map(|i| i.circuit).collect(),
        model,
        quantization,
    })
}

fn predict(
    profile: &EngineProfile,
    circuits: &[circuit_ir::Circuit],
    run: &RunSettings,
) -> Result<Startup, CliError> {
    Ok(profile.predict_layout(&StageCircuit::in_order(circuits), run)?)
}

/// `cargo xtask plan --hf-config FILE --engine NAME ...`.
pub fn run_plan(
    args: &PlanArgs,
    engine: &EngineArgs,
    name: &str,
    mut options: circuit_hf::ImportOptions,
) -> Result<(), CliError> {
    options.parallel = circuit_hf::Parallel {
        tp: args.parallel.tensor_parallel_size,
        pp: args.parallel.pipeline_parallel_size,
        dp: args.parallel.data_parallel_size,
        expert_parallel: args.parallel.enable_expert_parallel,
    };
    let profile = engines::select(name)?;
    options.load = profile.load_rules();
    let path = args
        .hf_config
        .as_deref()
        .ok_or("--engine needs --hf-config")?;
    let files = crate::plan::HfFiles::read(path)?;
    let Stages {
        circuits,
        model,
        quantization,
    } = stage_circuits(&files.text, &files.origin, &options, &files.side())?;
    let device = kernel_families::Devices::builtin()?
        .get(args.device.as_deref().unwrap_or("h100-sxm"))?
        .clone();
    let run = RunSettings {
        device,
        tensor_parallel_size: options.parallel.tp,
        pipeline_parallel_size: options.parallel.pp,
        gpu_memory_utilization: engine.gpu_memory_utilization,
        max_num_batched_tokens: engine.max_num_batched_tokens,
        max_num_seqs: engine.max_num_seqs,
        max_model_len: args.max_model_len,
        skip_mm_profiling: engine.skip_mm_profiling,
        enforce_eager: engine.enforce_eager,
        mm_limit_per_prompt: crate::plan::image_limit(args)?,
        block_size: engine.block_size,
        model,
    };
    let startup = predict(&profile, &circuits, &run).map_err(|e| with_flags(e, engine, args))?;
    // Asked for explicitly, prefix caching on a model with recurrent state switches vLLM's
    // Mamba cache to per-block states (models/config.py: mamba_cache_mode "all" or "align",
    // mamba_block_size = block_size), a layout not modelled; by default vLLM leaves it off for
    // such models (config/model.py is_prefix_caching_supported).
    let recurrent = startup
        .kv_layout
        .groups
        .iter()
        .any(|g| g.kind == engine_profile::LayerKind::Recurrent);
    if engine.enable_prefix_caching && recurrent {
        return Err(format!(
            "{}: --enable-prefix-caching on a model with recurrent state: vLLM then keeps the state per block (mamba_cache_mode \"align\" or \"all\"), which is not modelled; drop the flag (vLLM's default leaves prefix caching off for this model)",
            files.origin
        )
        .into());
    }
    let budget = budget(&profile, engine, &circuits, (&files, &options), &run)
        .map_err(|e| with_flags(e, engine, args))?;
    match args.format {
        OutputFormat::Table => {
            print_table(&files.origin, &quantization, &startup)?;
            print_budget(&budget)?;
        }
        OutputFormat::Json => {
            let mut j = json(&startup);
            add_budget(&mut j["engine"], &budget);
            outln!("{}", serde_json::to_string_pretty(&j)?)
        }
        OutputFormat::Jsonl | OutputFormat::Csv => {
            return Err(one_record(args.format));
        }
    }
    Ok(())
}

/// An error of the engine profile, which knows sizes but not the flags that set them, with
/// the sizing flags given appended (a huge `--block-size` overflows a page's bytes, a huge
/// `--max-num-batched-tokens` a plan's rows), unless it names a flag already.
fn with_flags(e: CliError, engine: &EngineArgs, args: &PlanArgs) -> CliError {
    let text = e.to_string();
    let given: Vec<String> = [
        ("--max-num-batched-tokens", engine.max_num_batched_tokens),
        ("--max-num-seqs", engine.max_num_seqs),
        ("--block-size", engine.block_size),
        ("--max-model-len", args.max_model_len),
        ("--target-kv-tokens", engine.target_kv_tokens),
    ]
    .into_iter()
    // A message naming the setting (`block_size = 0`) names its flag already.
    .filter(|(flag, _)| !text.contains(&flag[2..].replace('-', "_")))
    .filter_map(|(flag, value)| value.map(|v| format!("{flag} {v}")))
    .collect();
    if given.is_empty() || text.contains("--") {
        return e;
    }
    format!("{text} (with {})", given.join(", ")).into()
}

/// Answers the budget flags given (each is a few more predictions of the same layout, or of
/// other TP sizes for `--smallest-tp`).
fn budget(
    profile: &EngineProfile,
    engine: &EngineArgs,
    circuits: &[circuit_ir::Circuit],
    (files, options): (&crate::plan::HfFiles, &circuit_hf::ImportOptions),
    run: &RunSettings,
) -> Result<Budget, CliError> {
    let stages = StageCircuit::in_order(circuits);
    let (text, origin) = (files.text.as_str(), files.origin.as_str());
    let mut out = Budget::default();
    if engine.largest_max_model_len || engine.target_kv_tokens.is_some() {
        let target = engine.target_kv_tokens.unwrap_or(0);
        let answers = profile.budget_answers(&stages, run, target)?;
        if engine.largest_max_model_len {
            out.largest_max_model_len = Some(answers.largest_max_model_len);
        }
        if let Some(t) = engine.target_kv_tokens {
            out.target = Some((t, answers.utilization_for_target));
        }
    }
    if engine.largest_max_num_seqs {
        out.largest_max_num_seqs = Some(profile.largest_max_num_seqs(&stages, run)?);
    }
    if engine.smallest_tp {
        // A size the importer refuses (a dim it does not divide) is one the model cannot be
        // sharded to: skipped, as vLLM would refuse it too. With --enable-expert-parallel, a
        // size the experts do not divide is skipped as well: vLLM runs it, but its ranks
        // differ, which the engine profile does not model.
        let side = files.side();
        let stages_for = |tp: u64| {
            let mut at = *options;
            at.parallel.tp = tp;
            stage_circuits(text, origin, &at, &side)
                .ok()
                .map(|stages| stages.circuits)
        };
        out.smallest_tp = Some(profile.smallest_tp(run, memory_plan::NODE_GPUS, stages_for)?);
    }
    Ok(out)
}

fn print_budget(b: &Budget) -> Result<(), CliError> {
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
        let tried = tp
            .tried
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        match &tp.found {
            Some((n, s)) => outln!(
                "smallest tensor_parallel_size that starts: {n} ({} KV tokens; tried {tried})",
                s.kv_cache_tokens
            ),
            None => outln!("smallest tensor_parallel_size that starts: none of {tried}"),
        }
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

fn add_budget(engine: &mut serde_json::Value, b: &Budget) {
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

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / GIB)
}

/// The workers as rows: consecutive workers that allocate alike share one row, named by their
/// rank range (every TP rank of a stage, in practice).
fn distinct_rows(workers: &[Worker]) -> Vec<(String, &Worker)> {
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

fn print_table(origin: &str, quantization: &str, s: &Startup) -> Result<(), CliError> {
    outln!("engine    {} {}", s.engine, s.version);
    outln!("config    {origin}");
    outln!(
        "run       max_num_batched_tokens {}, max_num_seqs {}, max_model_len {}, quantization {quantization}",
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
            "Encoder profile: {} dummy items encoded first; inputs {} and outputs {} kept to the end, {} at its own peak (worker {})",
            w.encoder.items,
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
    Ok(())
}

/// The layout's groups, consecutive alike ones counted together: "7 groups: 6 x sliding window
/// 512 (4, 4, 4, 4, 3, 3 layers), 1 x full attention (4 layers)".
fn kv_groups(layout: &engine_profile::KvLayout) -> String {
    let mut runs: Vec<(String, u64, Vec<u64>)> = Vec::new();
    for g in &layout.groups {
        let kind = kind_name(g.kind, g.block_size);
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

fn kind_name(kind: engine_profile::LayerKind, block_size: u64) -> String {
    use engine_profile::LayerKind;
    match kind {
        LayerKind::Full => format!("full attention, {block_size}-token blocks"),
        LayerKind::Sliding { window } => {
            format!("sliding window {window}, {block_size}-token blocks")
        }
        LayerKind::Chunked { chunk } => {
            format!("chunked attention {chunk}, {block_size}-token blocks")
        }
        LayerKind::Recurrent => "recurrent state, one block per sequence".to_owned(),
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
                "activation_peak_set_by": w.peak_set_by.name(),
                "non_torch": w.non_torch,
                "kv_cache": w.kv_cache,
                "kv_blocks": w.blocks,
                "kv_block_bytes": w.block_bytes,
                "cuda_graph_estimate": w.cuda_graph.total,
                "encoder": (w.encoder.items > 0).then(|| serde_json::json!({
                    "items": w.encoder.items,
                    "inputs": w.encoder.held,
                    "outputs": w.encoder.outputs,
                    "peak": w.encoder.peak,
                })),
            })).collect::<Vec<_>>(),
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

/// `cargo xtask bench engine`: predicted vs printed on data/vllm/cases.json, one line per case
/// (its first worker, the figures the case's fields hold) and one per further printed worker
/// (`per_worker_profile`: each pipeline stage).
pub fn bench() -> Result<(), CliError> {
    let profile = engines::profile("vllm-0.19")?;
    let h100 = kernel_families::Devices::builtin()?
        .get("h100-sxm")?
        .clone();
    let cases_path = Path::new("data/vllm/cases.json");
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&input::read(cases_path, Input::HfConfig)?)?;
    outln!(
        "{:<64} {:>22} {:>22} {:>28} {:>22}",
        "case (worker)",
        "weights GiB",
        "act. peak GiB",
        "KV tokens",
        "CUDA-graph est. GiB"
    );
    let cell = |p: f64, q: f64, d: usize| format!("{p:.d$}/{q:.d$} {:+.2}%", (p - q) / q * 100.0);
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let config = case["config"].as_str().ok_or("case without config")?;
        let path = Path::new("data").join(config);
        let text = input::read(&path, Input::HfConfig)?;
        let origin = path.display().to_string();
        let field = |k: &str| case[k].as_u64().ok_or(format!("{name}: no {k}"));
        let mut options = circuit_hf::ImportOptions::default();
        options.load = profile.load_rules();
        if let Some(q) = case["quantization"].as_str() {
            options.online_quantization = q
                .parse()
                .map_err(|e| format!("{name}: quantization: {e}"))?;
        }
        options.parallel = circuit_hf::Parallel {
            tp: field("tensor_parallel_size")?,
            pp: field("pipeline_parallel_size")?,
            dp: 1,
            expert_parallel: false,
        };
        let Stages {
            circuits, model, ..
        } = stage_circuits(&text, &origin, &options, &[])?;
        let run = RunSettings {
            device: h100.clone(),
            tensor_parallel_size: options.parallel.tp,
            pipeline_parallel_size: options.parallel.pp,
            gpu_memory_utilization: case["gpu_memory_utilization"].as_f64(),
            max_num_batched_tokens: None,
            max_num_seqs: None,
            max_model_len: case["max_model_len"].as_u64(),
            skip_mm_profiling: false,
            enforce_eager: false,
            mm_limit_per_prompt: None,
            block_size: None,
            model,
        };
        let s = predict(&profile, &circuits, &run)?;
        let printed = |k: &str| case[k].as_f64().unwrap_or(f64::NAN);
        let w = &s.workers[0];
        outln!(
            "{name:<64} {:>22} {:>22} {:>28} {:>22}",
            cell(w.weights as f64 / GIB, printed("weights_gib"), 2),
            cell(
                w.activation_peak as f64 / GIB,
                printed("activation_peak_gib"),
                2
            ),
            cell(s.kv_cache_tokens as f64, printed("kv_cache_tokens"), 0),
            cell(
                w.cuda_graph.total as f64 / GIB,
                printed("cuda_graph_estimated_gib"),
                2
            ),
        );
        let tp = options.parallel.tp;
        for (stage, worker) in case["per_worker_profile"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(0u64..)
            .map(|(p, stage)| (stage, p))
        {
            let Some(w) = s.workers.iter().find(|w| w.rank == stage * tp) else {
                continue;
            };
            let label = format!("  {}", worker["worker"].as_str().unwrap_or("?"));
            let num = |k: &str| worker[k].as_f64().unwrap_or(f64::NAN);
            outln!(
                "{label:<64} {:>22} {:>22}",
                cell(w.weights as f64 / GIB, num("weights_gib"), 2),
                cell(
                    w.activation_peak as f64 / GIB,
                    num("activation_peak_gib"),
                    2
                ),
            );
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
