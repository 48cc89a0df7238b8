//! Engine profiles as data: an engine's runtime facts (`engines/<engine>/engine.toml`) parsed
//! into typed values, and the start-up an engine of that profile performs for a circuit:
//! weights as loaded, the profile run's activation peak, non-torch memory, KV-cache bytes,
//! blocks, tokens, concurrency at max-model-len, the CUDA-graph estimate and a verdict, per
//! worker of a tensor- and pipeline-parallel layout (one circuit per stage; the KV blocks are
//! the minimum over workers, laid out by [`kv_layout`] as the engine groups the cache layers);
//! and the budget questions answered by repeated predictions (largest max-model-len and
//! max-num-seqs, smallest TP, utilization for a KV target).
//!
//! Invariants: the core is engine-agnostic (every engine-specific number or expression comes
//! from the engine file, the families or the rules); the forward's live bytes come from
//! planning the circuit (memory-plan), never from a closed formula; sizes are checked u64;
//! it reads no file (callers hand it the texts). docs/engines.md describes the format.
//!
//! Modules: `file` types the engine file; `startup` predicts one start-up; `budget` answers the
//! questions by repeated predictions; [`kv_layout`] groups the cache layers into blocks.

#![warn(missing_docs)]

mod budget;
mod error;
mod file;
pub mod kv_layout;
mod startup;

use circuit_ir::{Circuit, Expr};
use fuser::Rules;
use kernel_families::Families;

pub use budget::{BudgetAnswers, SmallestTp};
pub use error::EngineError;
pub use file::{
    ArchitectureCaptureSize, BlocksPerRequest, CaptureMode, CudaGraphFacts, DeviceFacts,
    EncoderProfileFacts, EngineFile, Execution, KvCacheFacts, NonTorchFacts, ProfileRunFacts,
    RecurrentFacts, SizeRange, StageFilter, Term, WeightFacts,
};
pub use kv_layout::{KvGroup, KvLayout, LayerKind};
pub use startup::{
    CudaGraphEstimate, EncoderBytes, ModelFacts, PeakSetBy, RunSettings, StageCircuit, Startup,
    Verdict, Worker,
};

/// Where a worker's terms are summed: its pipeline stage of `stages`, run as `execution` says.
#[derive(Debug, Clone, Copy)]
struct Where {
    stage: u64,
    stages: u64,
    execution: Execution,
}

/// An engine profile: its file, kernel families and fusion rules, loaded.
#[derive(Debug)]
pub struct EngineProfile {
    /// The engine file.
    pub file: EngineFile,
    origin: String,
    families: Families,
    rules: Rules,
}

/// The texts of an engine folder, with their names for messages.
pub struct ProfileTexts<'a> {
    /// engine.toml: (text, origin).
    pub engine: (&'a str, &'a str),
    /// families.toml.
    pub families: (&'a str, &'a str),
    /// rules.toml.
    pub rules: (&'a str, &'a str),
}

impl EngineProfile {
    /// Loads an engine profile from the texts of its folder.
    pub fn from_texts(texts: &ProfileTexts<'_>) -> Result<EngineProfile, EngineError> {
        let (text, origin) = texts.engine;
        let file: EngineFile = toml::from_str(text).map_err(|e| EngineError::Toml {
            origin: origin.to_owned(),
            message: e.to_string(),
        })?;
        if file.schema != 1 {
            return Err(EngineError::Toml {
                origin: origin.to_owned(),
                message: format!("schema = {}: only schema 1 is known", file.schema),
            });
        }
        let slack = file.kv_cache.group_size_slack;
        if !(slack.is_finite() && slack >= 1.0) {
            return Err(EngineError::Toml {
                origin: origin.to_owned(),
                message: format!(
                    "kv_cache.group_size_slack = {slack}: must be a finite number of at least 1"
                ),
            });
        }
        if file.kv_cache.block_size == 0 {
            return Err(EngineError::Toml {
                origin: origin.to_owned(),
                message: "kv_cache.block_size = 0: must be positive".to_owned(),
            });
        }
        let families = Families::from_toml(texts.families.0, texts.families.1).map_err(|e| {
            EngineError::Registry {
                origin: texts.families.1.to_owned(),
                message: e.to_string(),
            }
        })?;
        let rules =
            Rules::from_toml(texts.rules.0, texts.rules.1, Some(&families)).map_err(|e| {
                EngineError::Registry {
                    origin: texts.rules.1.to_owned(),
                    message: e.to_string(),
                }
            })?;
        Ok(EngineProfile {
            file,
            origin: origin.to_owned(),
            families,
            rules,
        })
    }

    /// The device facts named `name`.
    pub fn device(&self, name: &str) -> Result<&DeviceFacts, EngineError> {
        self.file
            .device
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| EngineError::BadSetting {
                what: "device",
                value: name.to_owned(),
                why: "not a device of the engine file",
            })
    }

    /// Evaluates the engine file's expression `text` (item `item`) with `names`.
    fn eval(&self, item: &str, text: &str, names: &[(&str, u64)]) -> Result<u64, EngineError> {
        let fail = |message: String| EngineError::Expr {
            origin: self.origin.clone(),
            item: item.to_owned(),
            text: text.to_owned(),
            message,
        };
        let expr = Expr::parse(text).map_err(|e| fail(e.to_string()))?;
        expr.eval_with(|name| names.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
            .map_err(|e| fail(e.to_string()))
    }

    fn sum_terms<'t>(
        &self,
        section: &str,
        terms: impl IntoIterator<Item = &'t Term>,
        names: &[(&str, u64)],
        circuit: &Circuit,
        at: Where,
    ) -> Result<u64, EngineError> {
        let applies = |t: &&Term| {
            t.when_dim
                .as_deref()
                .is_none_or(|d| circuit.dim(d).is_some())
                && t.stage.is_none_or(|f| f.holds(at.stage, at.stages))
                && t.execution.is_none_or(|e| e == at.execution)
        };
        terms.into_iter().filter(applies).try_fold(0u64, |acc, t| {
            let v = self.eval(&format!("{section}.{}", t.name), &t.bytes, names)?;
            acc.checked_add(v).ok_or_else(|| EngineError::Overflow {
                what: format!("{section} total"),
            })
        })
    }
}
