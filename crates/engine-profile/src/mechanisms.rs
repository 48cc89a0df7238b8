//! The registry of engine-named mechanisms: the one place that maps a mechanism's name in an
//! engine file (`kv_cache.layout = "vllm"`, `model_len.rule = "vllm"`, `kv_cache.budget`,
//! `kv_cache.printed_tokens`, `cuda_graph.estimate`, `weights.rotary_caches`, `[startup] flow =
//! "sglang"`) to the module that is that engine's own (`src/vllm/`, `src/sglang/`). A new
//! engine's mechanism is a module of its own and one variant here; the generic modules call the
//! functions below and never name an engine. Where an engine file names no budget,
//! printed-tokens or estimate mechanism, the generic rule of the module that calls here holds
//! (worker.rs, kv_layout.rs, cuda_graph.rs). The types only one engine has (its own flags,
//! [`EngineFlags`], and its own results, [`EngineDetail`]) are named here and exported through
//! [`detail`].
//!
//! Invariants: every variant names its module; a name an engine file gives that is not a
//! variant is refused when the file is read (serde), never defaulted; a start-up flow other
//! than the profile run is the whole prediction of its engine (the generic phases do not run
//! for it), and a profile refuses another engine's flags.

use model_facts::ModelFacts;
use serde::Deserialize;

use crate::facts::KvFacts;
use crate::kv_layout::{CacheLayer, KvLayout};
use crate::{
    BudgetAnswers, EngineError, EngineProfile, ModelLen, RunSettings, StageCircuit, Startup,
};

pub(crate) use vllm::{BudgetInputs, MeasuredFacts};

#[path = "sglang/mod.rs"]
mod sglang;
#[path = "vllm/mod.rs"]
mod vllm;

/// The types only one engine has: its own flags and its own start-up quantities.
pub mod detail {
    pub use super::sglang::{SglangFlags, SglangStartup, SglangWorker};
}

/// How an engine sizes its KV cache at start-up, as the engine file's `[startup]` gives it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartupDecl {
    /// The flow: `profile_run` (the default: a profile run measures the activations, the KV
    /// cache takes the rest of a fraction of the device) or `sglang` (SGLang's static pool).
    #[serde(default)]
    pub flow: FlowName,
    /// SGLang's facts (`[startup.sglang]`), with `flow = "sglang"`.
    #[serde(default)]
    pub sglang: Option<sglang::FlowDecl>,
}

/// A start-up flow's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowName {
    /// The generic profile run (`startup.rs`, `worker.rs`).
    #[default]
    ProfileRun,
    /// SGLang's static pool (`sglang/`).
    Sglang,
}

/// A start-up flow, compiled.
#[derive(Debug, Clone)]
pub(crate) enum StartupFlow {
    /// The generic profile run.
    ProfileRun,
    /// SGLang's static pool.
    Sglang(Box<sglang::FlowFacts>),
}

/// Compiles `[startup]` (`origin` names the engine file).
pub(crate) fn compile_startup(
    decl: &StartupDecl,
    origin: &str,
) -> Result<StartupFlow, EngineError> {
    let bad = |message: &str| EngineError::Toml {
        origin: origin.to_owned(),
        message: message.to_owned(),
    };
    match (decl.flow, &decl.sglang) {
        (FlowName::ProfileRun, None) => Ok(StartupFlow::ProfileRun),
        (FlowName::Sglang, Some(d)) => Ok(StartupFlow::Sglang(Box::new(
            sglang::FlowFacts::compile(d, origin)?,
        ))),
        (FlowName::Sglang, None) => Err(bad(
            "[startup] flow = \"sglang\" needs its facts in [startup.sglang]",
        )),
        (FlowName::ProfileRun, Some(_)) => Err(bad(
            "[startup.sglang] is given but [startup] flow is not \"sglang\"",
        )),
    }
}

/// Settings only one engine has, beside the generic [`RunSettings`].
#[derive(Debug, Clone, PartialEq)]
pub enum EngineFlags {
    /// SGLang's own flags.
    Sglang(detail::SglangFlags),
}

impl EngineFlags {
    /// The engine the flags are for.
    pub fn engine(&self) -> &'static str {
        match self {
            EngineFlags::Sglang(_) => "sglang",
        }
    }
}

/// What only one engine's start-up flow computes, beside the generic [`Startup`].
#[derive(Debug, Clone, PartialEq)]
pub enum EngineDetail {
    /// SGLang's static pool, per rank.
    Sglang(Box<detail::SglangStartup>),
}

/// The start-up of `stages` under `run` by the profile's own flow, or None for the profile
/// run (the generic phases).
pub(crate) fn predict(
    profile: &EngineProfile,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
) -> Option<Result<Startup, EngineError>> {
    match &profile.facts.flow {
        StartupFlow::ProfileRun => None,
        StartupFlow::Sglang(flow) => Some(sglang::predict(profile, flow, stages, run)),
    }
}

/// The budget answers by the profile's own flow, or None for the profile run.
pub(crate) fn budget_answers(
    profile: &EngineProfile,
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    target_kv_tokens: u64,
) -> Option<Result<BudgetAnswers, EngineError>> {
    match &profile.facts.flow {
        StartupFlow::ProfileRun => None,
        StartupFlow::Sglang(flow) => Some(sglang::budget_answers(
            profile,
            flow,
            stages,
            run,
            target_kv_tokens,
        )),
    }
}

/// How an engine lays its KV cache out in groups and blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvLayoutMechanism {
    /// vLLM's KV-cache groups (`vllm/kv_groups.rs`).
    Vllm,
}

/// How an engine derives the context lengths it accepts from a model's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelLenMechanism {
    /// vLLM's derivation (`vllm/max_model_len.rs`).
    Vllm,
    /// SGLang's derivation (`sglang/context_len.rs`).
    Sglang,
}

/// How an engine sizes its KV budget from what it measures at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMechanism {
    /// vLLM from 0.27: the non-KV memory is the device memory consumed since the snapshot
    /// plus the profile run's transient peak (`vllm/budget.rs`).
    VllmTotalConsumed,
    /// vLLM from 0.34: the KV cache sized after warm-up and CUDA-graph capture from the
    /// memory measured then (`vllm/budget.rs`).
    VllmMeasured,
}

impl BudgetMechanism {
    /// The name an engine file gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BudgetMechanism::VllmTotalConsumed => "vllm_total_consumed",
            BudgetMechanism::VllmMeasured => "vllm_measured",
        }
    }

    /// Whether it reads `kv_cache.measured`'s margins.
    pub(crate) fn needs_measured_margins(self) -> bool {
        matches!(self, BudgetMechanism::VllmMeasured)
    }

    /// Whether the captured graphs' memory is taken from the KV budget whatever
    /// `kv_cache.subtract_cuda_graph_estimate` says (it is measured with the rest).
    pub(crate) fn counts_cuda_graphs(self) -> bool {
        matches!(self, BudgetMechanism::VllmMeasured)
    }
}

/// How an engine counts the KV tokens it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrintedTokensMechanism {
    /// vLLM from 0.21: the concurrency at max-model-len times max-model-len
    /// (`vllm/printed_tokens.rs`).
    VllmConcurrency,
}

/// How an engine forms its CUDA-graph estimate from the captures it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaGraphEstimateMechanism {
    /// The engine makes no estimate (0 bytes), though it captures graphs after sizing the KV
    /// cache.
    None,
    /// vLLM's model runner V2 from 0.29: every capture but FULL's measured, FULL extrapolated
    /// from its two largest (`vllm/cuda_graph_estimate.rs`).
    VllmCapturePiecewise,
}

/// The KV bytes a worker gets under `mechanism` and the non-KV bytes the engine counts, from
/// what the worker allocates (`inputs`).
pub(crate) fn kv_budget(mechanism: BudgetMechanism, inputs: &BudgetInputs) -> Option<(u64, u64)> {
    match mechanism {
        BudgetMechanism::VllmTotalConsumed => vllm::total_consumed(inputs),
        BudgetMechanism::VllmMeasured => vllm::measured(inputs),
    }
}

/// The KV tokens printed for `blocks` blocks of `layout` at `max_model_len`.
pub(crate) fn printed_tokens(
    mechanism: PrintedTokensMechanism,
    layout: &KvLayout,
    blocks: u64,
    max_model_len: u64,
) -> Option<u64> {
    match mechanism {
        PrintedTokensMechanism::VllmConcurrency => {
            vllm::concurrency_tokens(layout, blocks, max_model_len)
        }
    }
}

/// The fewest blocks of `layout` whose printed tokens reach `tokens` at `max_model_len`.
pub(crate) fn blocks_for_printed_tokens(
    mechanism: PrintedTokensMechanism,
    layout: &KvLayout,
    tokens: u64,
    max_model_len: u64,
) -> Option<u64> {
    match mechanism {
        PrintedTokensMechanism::VllmConcurrency => {
            vllm::blocks_for_concurrency_tokens(layout, tokens, max_model_len)
        }
    }
}

/// The CUDA-graph estimate `mechanism` forms from `captures` (per mode, its name and sizes
/// captured), a first capture of `first` bytes and further ones of `per` bytes each (`per`
/// already at least the engine's floor, `per_unfloored` before it).
pub(crate) fn cuda_graph_total(
    mechanism: CudaGraphEstimateMechanism,
    captures: &[(String, u64)],
    first: u64,
    per: u64,
    per_unfloored: u64,
) -> Option<u64> {
    match mechanism {
        CudaGraphEstimateMechanism::None => Some(0),
        CudaGraphEstimateMechanism::VllmCapturePiecewise => {
            vllm::capture_piecewise(captures, first, per, per_unfloored)
        }
    }
}

/// How an engine sizes the rotary cos/sin caches it builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RotaryMechanism {
    /// vLLM's `get_rope` classes (`vllm/rotary.rs`).
    Vllm,
    /// SGLang's `get_rope` classes (`sglang/rotary.rs`).
    Sglang,
}

/// The rows of the cos/sin cache `mechanism` builds for `set` of `model` (`Err`: what is not
/// modelled).
pub(crate) fn rotary_cache_rows(
    mechanism: RotaryMechanism,
    set: &model_facts::RopeSet,
    model: &ModelFacts,
) -> Result<u64, String> {
    match mechanism {
        RotaryMechanism::Vllm => vllm::cache_rows(set, model),
        RotaryMechanism::Sglang => sglang::cache_rows(set, model),
    }
}

/// The layout `kv.layout` gives `layers` (the cache layers of `stages`); `origin` names the
/// engine file.
pub(crate) fn kv_layout(
    kv: &KvFacts,
    origin: &str,
    stages: &[StageCircuit<'_>],
    layers: &[CacheLayer],
    block_size: u64,
    max_model_len: u64,
    tokens: u64,
) -> Result<KvLayout, EngineError> {
    match kv.layout {
        KvLayoutMechanism::Vllm => vllm::kv_groups(
            kv,
            origin,
            stages,
            layers,
            block_size,
            max_model_len,
            tokens,
        ),
    }
}

/// The context lengths `rule` derives for `model`.
pub(crate) fn model_len(rule: ModelLenMechanism, model: &ModelFacts) -> ModelLen {
    match rule {
        ModelLenMechanism::Vllm => vllm::max_model_len(model),
        ModelLenMechanism::Sglang => sglang::context_len(model),
    }
}
