//! The registry of engine-named mechanisms: the one place that maps a mechanism's name in an
//! engine file (`kv_cache.layout = "vllm"`, `model_len.rule = "vllm"`, `kv_cache.budget`,
//! `kv_cache.printed_tokens`, `cuda_graph.estimate`, `weights.rotary_caches`) to the module that is that engine's own
//! (`src/vllm/`). A new engine's mechanism is a module of its own and one variant here; the
//! generic modules call the functions below and never name an engine. Where an engine file
//! names no budget, printed-tokens or estimate mechanism, the generic rule of the module that
//! calls here holds (worker.rs, kv_layout.rs, cuda_graph.rs).
//!
//! Invariants: every variant names its module; a name an engine file gives that is not a
//! variant is refused when the file is read (serde), never defaulted.

use model_facts::ModelFacts;
use serde::Deserialize;

use crate::facts::KvFacts;
use crate::kv_layout::{CacheLayer, KvLayout};
use crate::{EngineError, ModelLen, StageCircuit};

pub(crate) use vllm::BudgetInputs;

#[path = "vllm/mod.rs"]
mod vllm;

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
    }
}
