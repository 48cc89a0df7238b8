//! The registry of engine-named mechanisms: the one place that maps a mechanism's name in an
//! engine file (`kv_cache.layout = "vllm"`, `model_len.rule = "vllm"`) to the module that is
//! that engine's own (`src/vllm/`). A new engine's mechanism is a module of its own and one
//! variant here; the generic modules call [`kv_layout`] and [`model_len`] and never name an
//! engine.
//!
//! Invariants: every variant names its module; a name an engine file gives that is not a
//! variant is refused when the file is read (serde), never defaulted.

use model_facts::ModelFacts;
use serde::Deserialize;

use crate::facts::KvFacts;
use crate::kv_layout::{CacheLayer, KvLayout};
use crate::{EngineError, ModelLen, StageCircuit};

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
