//! The modes of `cargo xtask plan` and the flags each takes. *Plain*: a circuit (the embedded
//! example, `--circuit`, or `--hf-config` on one rank) swept over `--rows`. *Parallel*:
//! `--hf-config` with a layout (`--tp`, `--pp`, `--dp`, `--enable-expert-parallel` or
//! `--layouts`), each distinct rank swept over `--rows`. *Engine*: `--engine`, one start-up.
//!
//! Invariants: every flag given either changes the answer in its mode or is refused here, in
//! one line naming the flag as clap spells it, saying why and what to give instead; the flags
//! given are the ones clap saw on the command line ([`given`]), so a default is never mistaken
//! for a choice; a flag no rule names is taken everywhere (the flag-matrix test in
//! `xtask/tests/modes.rs` fails until a new flag is shown to change the output or be refused).

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use engine_profile::ModelFacts;

use crate::CliError;
use crate::inputs::flags::PlanArgs;

/// How a `plan` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One circuit on one device, over the rows.
    Plain,
    /// A parallel layout: every distinct rank over the rows.
    Parallel,
    /// An engine's start-up.
    Engine,
}

/// The ids of the arguments `matches` holds from the command line (not from a default).
pub fn given(matches: &ArgMatches) -> Vec<String> {
    matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// Flags only an engine reads, with what to give without one.
const ENGINE_ONLY: &[(&str, &str)] = &[
    (
        "max_num_batched_tokens",
        "without an engine the tokens one step processes are --rows",
    ),
    (
        "max_num_seqs",
        "without an engine the sequences the KV tokens belong to are --sequences",
    ),
    (
        "skip_mm_profiling",
        "only an engine runs a profile (without one a vision tower is its weights alone)",
    ),
    (
        "enforce_eager",
        "without an engine no CUDA graph is counted",
    ),
    (
        "block_size",
        "without an engine the KV cache is counted per token, not in blocks",
    ),
    (
        "enable_prefix_caching",
        "without an engine no byte depends on it",
    ),
    (
        "no_enable_prefix_caching",
        "without an engine no byte depends on it",
    ),
    (
        "largest_max_model_len",
        "without an engine the capacity line gives the longest context for --sequences",
    ),
    (
        "largest_max_num_seqs",
        "without an engine --max-model-len gives how many sequences of that length fit",
    ),
    (
        "smallest_tp",
        "without an engine --layouts names the smallest layout that holds --kv-tokens",
    ),
    (
        "target_kv_tokens",
        "without an engine the capacity line gives the most KV tokens that fit the --budget",
    ),
    (
        "devices",
        "without an engine plan one device at a time with --device NAME (--layouts gives the smallest layout on it)",
    ),
];

/// Flags an engine's start-up does not read, with why and what it reads instead.
const NOT_ENGINE: &[(&str, &str)] = &[
    (
        "rows",
        "an engine's profile run plans one row count, its --max-num-batched-tokens",
    ),
    (
        "budget",
        "an engine's budget is --gpu-memory-utilization of the device (--target-kv-tokens N finds the one whose KV cache holds N tokens)",
    ),
    (
        "kv_tokens",
        "an engine's KV cache is what remains of its budget; --target-kv-tokens N gives the --gpu-memory-utilization whose cache holds N tokens",
    ),
    ("sequences", "an engine's sequences are --max-num-seqs"),
    (
        "families",
        "an engine runs its own kernels (its folder's families.toml under engines/)",
    ),
    (
        "rules",
        "an engine fuses as its own rules say (its folder's rules.toml under engines/)",
    ),
    (
        "set",
        "an engine's profile run takes the settings its own rules declare",
    ),
    (
        "align",
        "an engine's forward is planned at the engine profile's own alignment",
    ),
    (
        "placeholders",
        "an engine plans every node with its own kernels, and a node they do not cover is an error in the engine folder, not a placeholder",
    ),
    (
        "sm_count",
        "an engine's prediction needs a device of the table (its memory as CUDA reports it): give --device NAME",
    ),
    (
        "layouts",
        "with an engine, --smallest-tp gives the smallest tensor-parallel size that starts",
    ),
    (
        "per_node",
        "an engine's forward is one planned arena, which --arena-svg draws buffer by buffer",
    ),
];

/// Flags that read a Hugging Face config, with why a circuit file has no use for them.
const NEEDS_HF: &[(&str, &str)] = &[
    ("dtype", "a circuit file gives each tensor's format"),
    ("kv_cache_dtype", "a circuit file gives its states' formats"),
    ("quantization", "a circuit file gives its weights' formats"),
    (
        "language_model_only",
        "it leaves a checkpoint's vision tower out",
    ),
    (
        "limit_mm_per_prompt",
        "it limits a checkpoint's multimodal inputs",
    ),
    (
        "tensor_parallel_size",
        "a layout shards a checkpoint as vLLM does, and a circuit file is one rank",
    ),
    (
        "pipeline_parallel_size",
        "a layout shards a checkpoint as vLLM does, and a circuit file is one rank",
    ),
    (
        "data_parallel_size",
        "a layout shards a checkpoint as vLLM does, and a circuit file is one rank",
    ),
    (
        "enable_expert_parallel",
        "a layout shards a checkpoint as vLLM does, and a circuit file is one rank",
    ),
    (
        "layouts",
        "a layout shards a checkpoint as vLLM does, and a circuit file is one rank",
    ),
    ("engine", "an engine loads a Hugging Face checkpoint"),
];

/// The flag as the user types it (`--max-num-seqs`), from clap.
pub fn flag(id: &str) -> String {
    let cli = crate::Cli::command();
    let long = cli
        .find_subcommand("plan")
        .and_then(|plan| plan.get_arguments().find(|a| a.get_id() == id))
        .and_then(|a| a.get_long().map(str::to_owned));
    format!("--{}", long.unwrap_or_else(|| id.replace('_', "-")))
}

impl PlanArgs {
    /// Whether the flag of clap id `id` was given on the command line.
    pub fn was_given(&self, id: &str) -> bool {
        self.given.iter().any(|g| g == id)
    }

    /// The mode the flags ask for (unchecked: [`check`] refuses what the mode cannot take).
    pub fn mode(&self) -> Mode {
        if self.engine.engine.is_some() {
            Mode::Engine
        } else if self.parallel.layout().is_some() {
            Mode::Parallel
        } else {
            Mode::Plain
        }
    }
}

/// The mode of `args`, every flag given checked against it (refused in one line otherwise).
pub fn check(args: &PlanArgs) -> Result<Mode, CliError> {
    let mode = args.mode();
    let refuse = |message: String| -> Result<Mode, CliError> { Err(message.into()) };
    if args.max_model_len == Some(0) {
        // vLLM would refuse 0 (and an engine started with no context serves nothing), never
        // a "0.00x" concurrency.
        return refuse(
            "--max-model-len 0: a sequence holds at least 1 token; write e.g. --max-model-len 8192"
                .to_owned(),
        );
    }
    if args.hf_config.is_none()
        && let Some((id, why)) = NEEDS_HF.iter().find(|(id, _)| args.was_given(id))
    {
        return refuse(format!("{} needs --hf-config: {why}", flag(id)));
    }
    if mode == Mode::Engine {
        if let Some((id, why)) = NOT_ENGINE.iter().find(|(id, _)| args.was_given(id)) {
            return refuse(format!(
                "{} does not apply with --engine: {why}; drop --engine to plan without an engine",
                flag(id)
            ));
        }
        for (id, value) in [
            ("max_num_seqs", args.engine.max_num_seqs),
            ("max_num_batched_tokens", args.engine.max_num_batched_tokens),
            ("target_kv_tokens", args.engine.target_kv_tokens),
        ] {
            if value == Some(0) {
                return refuse(format!(
                    "{} 0: an engine needs at least 1; give a positive count",
                    flag(id)
                ));
            }
        }
    } else if let Some((id, why)) = ENGINE_ONLY.iter().find(|(id, _)| args.was_given(id)) {
        return refuse(format!(
            "{} is an engine's flag (give --engine vllm with it); {why}",
            flag(id)
        ));
    }
    if mode != Mode::Engine && args.was_given("gpu_memory_utilization") {
        if args.budget.is_some() {
            return refuse(
                "--gpu-memory-utilization with --budget: both set the budget without an engine; give one of them".to_owned(),
            );
        }
        if args.sm_count.is_some() {
            return refuse(
                "--gpu-memory-utilization with --sm-count: a fraction needs the device's memory, and --sm-count names none; give --device NAME".to_owned(),
            );
        }
    }
    if mode != Mode::Engine && args.sm_count.is_some() && args.budget.is_none() {
        if mode == Mode::Parallel {
            return refuse(
                "--sm-count with a parallel layout: a layout's ranks are planned against a budget and --sm-count names no device memory, so give --budget (or --device NAME)".to_owned(),
            );
        }
        if args.max_model_len.is_some() {
            return refuse(
                "--max-model-len needs a budget: --sm-count names no device memory, so give --budget".to_owned(),
            );
        }
    }
    let limits = crate::inputs::settings::mm_limits(args)?;
    if mode != Mode::Engine && limits.image.is_some_and(|n| n > 0) {
        return refuse(
            "--limit-mm-per-prompt: without --engine only an image limit of 0 changes the plan (the language model alone); another limit caps the images an engine's profile run encodes, so give --engine vllm with it".to_owned(),
        );
    }
    if mode != Mode::Engine && limits.video.is_some_and(|n| n > 0) {
        return refuse(
            "--limit-mm-per-prompt: without --engine only a video limit of 0 changes the plan (with an image limit of 0, the language model alone); another limit caps the videos an engine's profile run encodes, so give --engine vllm with it".to_owned(),
        );
    }
    // Whether limits of 0 leave the tower out depends on the modalities it takes: checked with
    // the model (check_model).
    if args.engine.skip_mm_profiling && args.language_model_only {
        return refuse(
            "--skip-mm-profiling with --language-model-only: no vision tower is loaded, so there is no encoder profile to skip; give one of them".to_owned(),
        );
    }
    Ok(mode)
}

/// The checks that need the model: a multimodal flag on a model without a vision tower (`tower`:
/// the checkpoint has one, whether or not the flags leave it out), --skip-mm-profiling when the
/// flags leave the tower out, and expert parallelism on a model without routed experts, would
/// change nothing.
pub fn check_model(
    args: &PlanArgs,
    model: &ModelFacts,
    tower: bool,
    moe: bool,
) -> Result<(), CliError> {
    let name = &model.model_type;
    if !tower {
        let text_only = [
            ("language_model_only", args.language_model_only),
            ("limit_mm_per_prompt", args.limit_mm_per_prompt.is_some()),
            ("skip_mm_profiling", args.engine.skip_mm_profiling),
        ];
        if let Some((id, _)) = text_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "{}: the model ({name}) has no vision tower, so it changes nothing; drop it",
                flag(id)
            )
            .into());
        }
    }
    // Limits of 0 for every modality the tower takes leave it out, as vLLM does.
    if tower && !model.vision_encoder && args.engine.skip_mm_profiling {
        return Err(format!(
            "--skip-mm-profiling with {}: no vision tower is loaded, so there is no encoder profile to skip; give one of them",
            if args.language_model_only {
                "--language-model-only"
            } else if crate::inputs::settings::mm_limits(args)?.video == Some(0) {
                "limits of 0 for images and video"
            } else {
                "an image limit of 0"
            }
        )
        .into());
    }
    if args.parallel.enable_expert_parallel && !moe {
        return Err(format!(
            "--enable-expert-parallel: the model ({name}) has no routed experts to place, so it changes nothing; drop it"
        )
        .into());
    }
    Ok(())
}
