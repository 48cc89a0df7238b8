//! `cargo xtask plan --engine vllm` and `cargo xtask bench engine`: chooses the engine folder
//! (the `engines` crate), imports the config with the engine's load rules, asks engine-profile
//! for the start-up on the device named (or, with `--devices`, the smallest TP on each) and
//! the budget questions the flags ask, and hands them to the renderer (`render/engine.rs`).
//!
//! Invariants: the model of the engine is in engine-profile and the engine folder, never here;
//! an error of the profile that a flag's value caused names the flag.

use std::collections::BTreeMap;
use std::path::Path;

use engine_profile::{EngineError, EngineProfile, ModelFacts, RunSettings, StageCircuit, Startup};
use kernel_families::FamiliesErrorKind;

use crate::CliError;
use crate::inputs::files::{self, HfFiles, Input};
use crate::inputs::flags::{EngineArgs, OutputFormat, PlanArgs};
use crate::out::outln;
use crate::render::engine::{
    Budget, DeviceRow, DevicesQuestion, Prediction, Setting, devices_json, print_devices,
};
use crate::render::svg;

const GIB: f64 = (1u64 << 30) as f64;

/// What the engine profile predicts from: one circuit per pipeline stage, the model's sizes,
/// and the quantization the weights are loaded in, in a few words.
pub(crate) struct Stages {
    pub(crate) circuits: Vec<circuit_ir::Circuit>,
    pub(crate) model: ModelFacts,
    pub(crate) quantization: String,
    /// The KV cache's storage format (`bf16`, `fp8`).
    pub(crate) kv_cache: String,
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
    let kv_cache = first.kv_cache_format.clone();
    Ok(Stages {
        circuits: sharded.imports.into_iter().map(|i| i.circuit).collect(),
        model,
        quantization,
        kv_cache,
    })
}

fn predict(
    profile: &EngineProfile,
    circuits: &[circuit_ir::Circuit],
    run: &RunSettings,
) -> Result<Startup, CliError> {
    Ok(profile.predict_layout(&StageCircuit::in_order(circuits), run)?)
}

/// An engine start-up predicted from the plan's flags, with what it was predicted from.
pub struct Predicted {
    pub profile: EngineProfile,
    pub files: HfFiles,
    pub options: circuit_hf::ImportOptions,
    pub circuits: Vec<circuit_ir::Circuit>,
    pub run: RunSettings,
    pub startup: Startup,
    /// The quantization the weights are loaded in, in a few words.
    pub quantization: String,
    /// The KV cache's storage format (`bf16`, `fp8`).
    pub kv_cache: String,
}

/// `cargo xtask plan --hf-config FILE --engine NAME ...`.
pub fn run_plan(
    args: &PlanArgs,
    engine: &EngineArgs,
    name: &str,
    options: circuit_hf::ImportOptions,
) -> Result<(), CliError> {
    let (profile, files, options, stages) = load(args, name, args.parallel.parallel(), options)?;
    if let Some(names) = &engine.devices {
        let at = (&files, &options);
        let asked = Devices {
            names,
            tp_flag: "--tensor-parallel-size",
        };
        return run_devices(
            args,
            engine,
            &profile,
            at,
            &asked,
            (stages.circuits, stages.model),
            &Ok,
        );
    }
    let Predicted {
        profile,
        files,
        options,
        circuits,
        run,
        startup,
        quantization,
        kv_cache,
    } = predict_loaded(args, engine, (profile, files, options, stages), Ok)?;
    let budget = budget(&profile, engine, &circuits, (&files, &options), &run)
        .map_err(|e| with_flags(e, engine, args))?;
    let inputs = settings_used(
        args,
        name,
        &profile,
        &startup,
        &run,
        (&quantization, &kv_cache),
    )?;
    let prediction = Prediction {
        origin: &files.origin,
        quantization: &quantization,
        startup: &startup,
        budget: &budget,
        inputs: &inputs,
        serve: args.serve.as_ref(),
    };
    prediction.print(args.format)?;
    if let Some(path) = &args.svg {
        svg::write_engine_chart(path, &startup)?;
    }
    if let Some(path) = &args.arena_svg {
        // The worker whose activation peak is the largest (the first on a tie): its stage's
        // forward and what the run holds beside it.
        let worker = startup
            .workers
            .iter()
            .rev()
            .max_by_key(|w| w.activation_peak)
            .ok_or("the start-up has no worker")?;
        let stages = StageCircuit::in_order(&circuits);
        let map = profile
            .profile_run_map(&stages, &run, worker.pp_stage)
            .map_err(|e| with_flags(e.into(), engine, args))?;
        svg::write_profile_arena(path, &map, worker, &startup)?;
    }
    Ok(())
}

/// The engine profile, the model's files and its circuits, as the plan's flags name them,
/// with the flags checked against the model.
pub(crate) fn load(
    args: &PlanArgs,
    name: &str,
    parallel: circuit_hf::Parallel,
    mut options: circuit_hf::ImportOptions,
) -> Result<(EngineProfile, HfFiles, circuit_hf::ImportOptions, Stages), CliError> {
    options.parallel = parallel;
    let profile = engines::select(name)?;
    // The layouts the engine loads into depend on the device (GPTQ's kernel library).
    options.load = profile.load_rules_on(&crate::inputs::settings::device(args)?)?;
    let path = args
        .hf_config
        .as_deref()
        .ok_or("--engine needs --hf-config")?;
    let files = HfFiles::read(path)?;
    let stages = stage_circuits(&files.text, &files.origin, &options, &files.side())?;
    let moe = stages
        .circuits
        .iter()
        .any(|c| c.dim("experts_per_tok").is_some());
    let tower = circuit_hf::has_vision_tower(&files.text, &files.origin)?;
    crate::inputs::modes::check_model(args, &stages.model, tower, moe)?;
    Ok((profile, files, options, stages))
}

/// The start-up the plan's flags ask for (`--engine NAME`, one device), predicted.
pub fn predict_run(
    args: &PlanArgs,
    engine: &EngineArgs,
    name: &str,
    options: circuit_hf::ImportOptions,
) -> Result<Predicted, CliError> {
    let loaded = load(args, name, args.parallel.parallel(), options)?;
    predict_loaded(args, engine, loaded, Ok)
}

/// Loads the config for engine `name` at the layout `parallel` and predicts its start-up, the
/// generic run turned into the engine's by `own` (SGLang's flags, `inputs/sglang.rs`).
pub(crate) fn prepare(
    args: &PlanArgs,
    engine: &EngineArgs,
    name: &str,
    parallel: circuit_hf::Parallel,
    options: circuit_hf::ImportOptions,
    own: impl FnOnce(RunSettings) -> Result<RunSettings, CliError>,
) -> Result<Predicted, CliError> {
    let loaded = load(args, name, parallel, options)?;
    predict_loaded(args, engine, loaded, own)
}

/// The start-up of a loaded config with the generic flags; `own` turns the generic run into
/// the engine's (its own flags, `inputs/sglang.rs`).
pub(crate) fn predict_loaded(
    args: &PlanArgs,
    engine: &EngineArgs,
    (profile, files, options, stages): (EngineProfile, HfFiles, circuit_hf::ImportOptions, Stages),
    own: impl FnOnce(RunSettings) -> Result<RunSettings, CliError>,
) -> Result<Predicted, CliError> {
    let limits = crate::inputs::settings::mm_limits_of(args, &files.text)?;
    let Stages {
        circuits,
        model,
        quantization,
        kv_cache,
    } = stages;
    let device = crate::inputs::settings::device(args)?;
    let run = own(RunSettings {
        device,
        tensor_parallel_size: options.parallel.tp,
        pipeline_parallel_size: options.parallel.pp,
        gpu_memory_utilization: engine.gpu_memory_utilization,
        max_num_batched_tokens: engine.max_num_batched_tokens,
        max_num_seqs: engine.max_num_seqs,
        max_model_len: args.max_model_len,
        skip_mm_profiling: engine.skip_mm_profiling,
        enforce_eager: engine.enforce_eager,
        mm_limit_per_prompt: limits.image,
        mm_video_limit_per_prompt: limits.video,
        block_size: engine.block_size,
        enable_prefix_caching: prefix_caching(engine),
        model,
        engine_flags: None,
    })?;
    let startup = profile
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .map_err(|e| match e {
            // A refusal is about the device or the release, whatever the sizing flags.
            e @ (EngineError::DeviceNotModelled { .. } | EngineError::Refused { .. }) => e.into(),
            e => with_flags(e.into(), engine, args),
        })?;
    Ok(Predicted {
        profile,
        files,
        options,
        circuits,
        run,
        startup,
        quantization,
        kv_cache,
    })
}

/// Prefix caching as the flags ask for it (None: the engine's default).
fn prefix_caching(engine: &EngineArgs) -> Option<bool> {
    if engine.enable_prefix_caching {
        Some(true)
    } else if engine.no_enable_prefix_caching {
        Some(false)
    } else {
        None
    }
}

/// What `--devices` asks: the devices named, and the engine's own name of the TP flag (for
/// refusing a TP given with it).
pub(crate) struct Devices<'a> {
    pub(crate) names: &'a [String],
    pub(crate) tp_flag: &'a str,
}

/// `--devices A,B,...`: per device, the smallest TP that starts (every other flag as given),
/// its KV tokens and concurrency, or why the prediction is refused there. `own` turns the
/// generic run into the engine's (its own flags), as for one start-up.
pub(crate) fn run_devices(
    args: &PlanArgs,
    engine: &EngineArgs,
    profile: &EngineProfile,
    (files, options): (&HfFiles, &circuit_hf::ImportOptions),
    asked: &Devices<'_>,
    (circuits, model): (Vec<circuit_ir::Circuit>, ModelFacts),
    own: &dyn Fn(RunSettings) -> Result<RunSettings, CliError>,
) -> Result<(), CliError> {
    let names = asked.names;
    // The question is the smallest TP per device: a flag that fixes the TP, or asks another
    // question of one start-up, has no answer here.
    let one_startup = [
        (engine.largest_max_model_len, "--largest-max-model-len"),
        (engine.largest_max_num_seqs, "--largest-max-num-seqs"),
        (engine.target_kv_tokens.is_some(), "--target-kv-tokens"),
    ];
    if let Some((_, flag)) = one_startup.iter().find(|(given, _)| *given) {
        return Err(format!(
            "{flag} with --devices: it is a question of one start-up; ask it with --device NAME (--devices answers the smallest TP per device)"
        )
        .into());
    }
    if let Some(flag) = [
        (args.svg.is_some(), "--svg"),
        (args.arena_svg.is_some(), "--arena-svg"),
    ]
    .iter()
    .find_map(|(given, flag)| given.then_some(flag))
    {
        return Err(format!(
            "{flag} with --devices: a picture is of one start-up; draw it with --device NAME"
        )
        .into());
    }
    if engine.smallest_tp {
        return Err("--smallest-tp with --devices: --devices answers it for each device already; drop --smallest-tp".into());
    }
    if options.parallel.tp != 1 {
        return Err(format!(
            "{} {} with --devices: --devices finds the smallest TP that starts on each device itself; drop the flag (or ask one device with --device)",
            asked.tp_flag, options.parallel.tp
        )
        .into());
    }
    if let Some(f) = match args.format {
        OutputFormat::Jsonl => Some("jsonl"),
        OutputFormat::Csv => Some("csv"),
        _ => None,
    } {
        return Err(format!(
            "--format {f} with --devices: the devices' answers are one table; give --format table or json"
        )
        .into());
    }
    if names.iter().any(|n| n.trim().is_empty()) {
        return Err(
            "--devices: a device name is empty; name devices comma-separated (--devices h100,l40s)"
                .into(),
        );
    }
    let table = kernel_families::Devices::builtin()?;
    let limits = crate::inputs::settings::mm_limits_of(args, &files.text)?;
    let side = files.side();
    // Each TP size is imported once, whatever the number of devices.
    let mut imported: BTreeMap<u64, Option<Vec<circuit_ir::Circuit>>> = BTreeMap::new();
    imported.insert(1, Some(circuits));
    let mut rows = Vec::with_capacity(names.len());
    // The context asked, as the engine's own flags give it.
    let mut asked_len = args.max_model_len;
    for name in names {
        let device = match table.get(name) {
            Ok(d) => d.clone(),
            Err(e) if matches!(*e.kind, FamiliesErrorKind::FiguresUnknown { .. }) => {
                rows.push(DeviceRow::Refused {
                    name: name.trim().to_owned(),
                    why: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let run = own(RunSettings {
            device: device.clone(),
            tensor_parallel_size: 1,
            pipeline_parallel_size: options.parallel.pp,
            gpu_memory_utilization: engine.gpu_memory_utilization,
            max_num_batched_tokens: engine.max_num_batched_tokens,
            max_num_seqs: engine.max_num_seqs,
            max_model_len: args.max_model_len,
            skip_mm_profiling: engine.skip_mm_profiling,
            enforce_eager: engine.enforce_eager,
            mm_limit_per_prompt: limits.image,
            mm_video_limit_per_prompt: limits.video,
            block_size: engine.block_size,
            enable_prefix_caching: prefix_caching(engine),
            model: model.clone(),
            engine_flags: None,
        })?;
        asked_len = run.max_model_len;
        // A size the importer refuses is skipped, as with --smallest-tp.
        let mut stages_for = |tp: u64| {
            imported
                .entry(tp)
                .or_insert_with(|| {
                    let mut at = *options;
                    at.parallel.tp = tp;
                    stage_circuits(&files.text, &files.origin, &at, &side)
                        .ok()
                        .map(|stages| stages.circuits)
                })
                .clone()
        };
        match profile.smallest_tp(&run, memory_plan::NODE_GPUS, &mut stages_for) {
            Ok(answer) => {
                let batch = match &answer.found {
                    Some((_, s)) => (s.max_num_batched_tokens, s.max_num_seqs),
                    None if profile.has_batch_defaults() => profile.batch(&run)?,
                    // An engine that derives its batch from the pool (SGLang's running
                    // requests) shows the run of the largest size tried.
                    None => {
                        let Some((tp, stages)) = answer
                            .tried
                            .iter()
                            .rev()
                            .find_map(|&tp| stages_for(tp).map(|s| (tp, s)))
                        else {
                            return Err(format!(
                                "--devices: {} shards to none of the TP sizes tried",
                                files.origin
                            )
                            .into());
                        };
                        let at = RunSettings {
                            tensor_parallel_size: tp,
                            ..run.clone()
                        };
                        let s = profile.predict_layout(&StageCircuit::in_order(&stages), &at)?;
                        (s.max_num_batched_tokens, s.max_num_seqs)
                    }
                };
                rows.push(DeviceRow::Answered {
                    device: Box::new(device),
                    batch,
                    answer: Box::new(answer),
                });
            }
            Err(e @ EngineError::DeviceNotModelled { .. }) => rows.push(DeviceRow::Refused {
                name: device.name.clone(),
                why: e.to_string(),
            }),
            // The release does not run the model on any device.
            Err(e @ EngineError::Refused { .. }) => return Err(e.into()),
            Err(e) => return Err(with_flags(e.into(), engine, args)),
        }
    }
    let question = DevicesQuestion {
        engine: profile.engine(),
        version: profile.version(),
        origin: &files.origin,
        max_model_len: asked_len.unwrap_or(profile.model_len(&model).default),
        heads: model.num_attention_heads,
        tp_limit: memory_plan::NODE_GPUS,
    };
    match args.format {
        OutputFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&devices_json(&question, &rows))?
        ),
        _ => print_devices(&question, &rows)?,
    }
    Ok(())
}

/// Every setting the prediction used, with its value and where it came from (a flag, the
/// engine release's default, the device's, the model's): the `inputs` of the JSON, JSON lines
/// and CSV outputs, and the table's `given` and `defaults` lines.
fn settings_used(
    args: &PlanArgs,
    name: &str,
    profile: &EngineProfile,
    s: &Startup,
    run: &RunSettings,
    (quantization, kv_cache): (&str, &str),
) -> Result<Vec<Setting>, CliError> {
    let release = format!("{} {}", s.engine, s.version);
    let given = |id: &str| args.was_given(id).then(|| crate::inputs::modes::flag(id));
    let from = |id: &str, default: &str| given(id).unwrap_or_else(|| default.to_owned());
    let on_device = format!("default of {release} on {}", s.device);
    let engine_default = format!("default of {release}");
    let mut out = vec![
        Setting::new(
            "engine",
            serde_json::json!(format!("{}=={}", s.engine, s.version)),
            format!(
                "--engine {name}{}",
                if name.contains("==") {
                    ""
                } else {
                    ": the newest release modelled"
                }
            ),
        ),
        Setting::new(
            "device",
            serde_json::json!(s.device),
            from("device", "default"),
        ),
        Setting::new(
            "tensor_parallel_size",
            serde_json::json!(run.tensor_parallel_size),
            from("tensor_parallel_size", "default"),
        ),
        Setting::new(
            "pipeline_parallel_size",
            serde_json::json!(run.pipeline_parallel_size),
            from("pipeline_parallel_size", "default"),
        ),
        Setting::new(
            "enable_expert_parallel",
            serde_json::json!(args.parallel.enable_expert_parallel),
            from("enable_expert_parallel", "default"),
        ),
        Setting::new(
            "gpu_memory_utilization",
            serde_json::json!(s.gpu_memory_utilization),
            from("gpu_memory_utilization", &engine_default),
        ),
        Setting::new(
            "max_num_batched_tokens",
            serde_json::json!(s.max_num_batched_tokens),
            from("max_num_batched_tokens", &on_device),
        ),
        Setting::new(
            "max_num_seqs",
            serde_json::json!(s.max_num_seqs),
            from("max_num_seqs", &on_device),
        ),
        Setting::new(
            "max_model_len",
            serde_json::json!(s.max_model_len),
            from(
                "max_model_len",
                &format!(
                    "default of {release} for the model (max_position_embeddings with its rope scaling; the longest it allows: {})",
                    profile.model_len(&run.model).longest
                ),
            ),
        ),
        Setting::new(
            "block_size",
            serde_json::json!(s.kv_layout.token_block_size),
            from("block_size", &engine_default),
        ),
        Setting::new(
            "dtype",
            serde_json::json!(run.model.dtype.to_string()),
            from("dtype", "the config's torch_dtype"),
        ),
        Setting::new(
            "kv_cache_dtype",
            serde_json::json!(kv_cache),
            from("kv_cache_dtype", "default: the model dtype"),
        ),
        Setting::new(
            "quantization",
            serde_json::json!(quantization),
            from("quantization", "the checkpoint's config"),
        ),
        Setting::new(
            "enforce_eager",
            serde_json::json!(run.enforce_eager),
            from("enforce_eager", "default"),
        ),
        Setting::new(
            "enable_prefix_caching",
            serde_json::json!(run.enable_prefix_caching),
            given("enable_prefix_caching")
                .or_else(|| given("no_enable_prefix_caching"))
                .unwrap_or_else(|| {
                    // Only a model with recurrent state changes bytes with it (the state
                    // kept per block): say which way the release's default goes there.
                    let recurrent = s
                        .kv_layout
                        .groups
                        .iter()
                        .any(|g| g.kind == engine_profile::LayerKind::Recurrent);
                    match (recurrent, profile.prefix_caching_by_default()) {
                        (false, _) => format!("{engine_default} (no byte depends on it here)"),
                        (true, true) => format!(
                            "{engine_default}: on for a model with recurrent state, which is then kept per block"
                        ),
                        (true, false) => {
                            format!("{engine_default}: off for a model with recurrent state")
                        }
                    }
                }),
        ),
    ];
    if run.model.vision_encoder || args.language_model_only {
        out.extend([
            Setting::new(
                "skip_mm_profiling",
                serde_json::json!(run.skip_mm_profiling),
                from("skip_mm_profiling", "default"),
            ),
            Setting::new(
                "language_model_only",
                serde_json::json!(args.language_model_only),
                from("language_model_only", "default"),
            ),
            Setting::new(
                "limit_mm_per_prompt",
                serde_json::json!(run.mm_limit_per_prompt),
                from("limit_mm_per_prompt", &engine_default),
            ),
        ]);
    }
    Ok(out)
}

/// An error of the engine profile, which knows sizes but not the flags that set them, with
/// the sizing flags given appended (a huge `--block-size` overflows a page's bytes, a huge
/// `--max-num-batched-tokens` a plan's rows), unless it names a flag already.
pub(crate) fn with_flags(e: CliError, engine: &EngineArgs, args: &PlanArgs) -> CliError {
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
pub(crate) fn budget(
    profile: &EngineProfile,
    engine: &EngineArgs,
    circuits: &[circuit_ir::Circuit],
    (files, options): (&HfFiles, &circuit_hf::ImportOptions),
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

/// The case files of data/vllm/: real start-ups, each naming its vLLM release (`vllm_version`).
const CASE_FILES: &[&str] = &["data/vllm/cases.json", "data/vllm/cases-versions.json"];

/// The device-table entry of a case's GPU, as its `gpu` field describes it (the logs print the
/// product, or their file names say it: data/vllm/README.md).
fn case_device(name: &str, gpu: &str) -> Result<&'static str, CliError> {
    if gpu.contains("H100 80GB HBM3") {
        Ok("h100-sxm")
    } else if gpu.contains("A100 80GB") {
        Ok("a100-80gb")
    } else {
        Err(format!("{name}: gpu {gpu:?} is not a device this bench knows").into())
    }
}

/// `cargo xtask bench engine`: predicted vs printed on every case of data/vllm/ (each by the
/// profile of its own release, on its own device), one line per case (its first worker, the
/// figures the case's fields hold; `-` where its log prints none) and one per further printed
/// worker (`per_worker_profile`: each pipeline stage); then which releases the cases check.
pub fn bench() -> Result<(), CliError> {
    let devices = kernel_families::Devices::builtin()?;
    outln!(
        "{:<64} {:>9} {:>22} {:>22} {:>28} {:>22}",
        "case (worker)",
        "release",
        "weights GiB",
        "act. peak GiB",
        "KV tokens",
        "CUDA-graph est. GiB"
    );
    let mut all = Vec::new();
    for file in CASE_FILES {
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&files::read(Path::new(file), Input::HfConfig)?)?;
        for case in &cases {
            bench_case(case, devices)?;
        }
        all.extend(cases);
    }
    print_checked_releases(&all)?;
    Ok(())
}

/// Predicted against printed: `-` where the log prints no figure.
fn cell(predicted: f64, printed: f64, decimals: usize) -> String {
    let d = decimals;
    if printed.is_nan() {
        format!("{predicted:.d$}/-")
    } else {
        format!(
            "{predicted:.d$}/{printed:.d$} {:+.2}%",
            crate::check_log::error_percent(predicted, printed)
        )
    }
}

/// One case of [`bench()`], by the profile of its release on its device.
fn bench_case(
    case: &serde_json::Value,
    devices: &kernel_families::Devices,
) -> Result<(), CliError> {
    let name = case["name"].as_str().unwrap_or("?");
    let (release, s) = case_startup(case, devices, Path::new("data"))?;
    let printed = |k: &str| case[k].as_f64().unwrap_or(f64::NAN);
    let w = &s.workers[0];
    outln!(
        "{name:<64} {release:>9} {:>22} {:>22} {:>28} {:>22}",
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
    let tp = case["tensor_parallel_size"].as_u64().unwrap_or(1);
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
            "{label:<64} {:>9} {:>22} {:>22}",
            "",
            cell(w.weights as f64 / GIB, num("weights_gib"), 2),
            cell(
                w.activation_peak as f64 / GIB,
                num("activation_peak_gib"),
                2
            ),
        );
    }
    Ok(())
}

/// The start-up of one case of data/vllm/ (its config under `data`, the settings its fields
/// give), by the profile of its release on its device, as `cargo xtask bench engine` predicts
/// it; with the release.
pub fn case_startup(
    case: &serde_json::Value,
    devices: &kernel_families::Devices,
    data: &Path,
) -> Result<(String, Startup), CliError> {
    let name = case["name"].as_str().unwrap_or("?");
    let release = case["vllm_version"]
        .as_str()
        .ok_or(format!("{name}: no vllm_version"))?;
    let profile = engines::select(&format!("vllm=={release}"))?;
    let device = devices
        .get(case_device(name, case["gpu"].as_str().unwrap_or(""))?)?
        .clone();
    let config = case["config"].as_str().ok_or("case without config")?;
    let path = data.join(config);
    let text = files::read(&path, Input::HfConfig)?;
    let origin = path.display().to_string();
    let field = |k: &str| case[k].as_u64().ok_or(format!("{name}: no {k}"));
    let mut options = circuit_hf::ImportOptions::default();
    options.load = profile.load_rules_on(&device)?;
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
    // A logged case states its layout, memory fraction and max model len; the rest is the
    // release's default.
    let run = RunSettings {
        tensor_parallel_size: options.parallel.tp,
        pipeline_parallel_size: options.parallel.pp,
        gpu_memory_utilization: case["gpu_memory_utilization"].as_f64(),
        max_model_len: case["max_model_len"].as_u64(),
        ..RunSettings::new(device, model)
    };
    Ok((release.to_owned(), predict(&profile, &circuits, &run)?))
}

/// Which modelled releases a start-up log checks (a case of data/vllm/ names its
/// `vllm_version`) and which are derived from the source only, one line per engine folder.
fn print_checked_releases(cases: &[serde_json::Value]) -> Result<(), CliError> {
    outln!();
    outln!(
        "releases  checked: a start-up log of the release is among the cases; derived: from the source only"
    );
    for folder in engines::catalogue()? {
        let logs = |r: &str| {
            cases
                .iter()
                .filter(|c| c["vllm_version"].as_str() == Some(r))
                .count()
        };
        let (checked, derived): (Vec<&String>, Vec<&String>) =
            folder.releases.iter().partition(|r| logs(r) > 0);
        let mut parts: Vec<String> = checked
            .iter()
            .map(|r| format!("{r} checked ({} logs)", logs(r)))
            .collect();
        if !derived.is_empty() {
            let list: Vec<&str> = derived.iter().map(|r| r.as_str()).collect();
            parts.push(format!("{} derived only", list.join(", ")));
        }
        outln!("  {:<12} {}", folder.folder, parts.join("; "));
    }
    Ok(())
}
