//! Engine profiles as data: an engine's runtime facts (`engines/<engine>-<version>/engine.toml`,
//! handed in as text with the folder's kernel families and fusion rules) compiled into typed
//! values, and the start-up an engine of that profile performs for a layout of circuits: per
//! worker the weights as loaded, the profile run's activation peak, non-torch memory, KV-cache
//! bytes and blocks, the CUDA-graph estimate; the layout's KV tokens, concurrency and verdict;
//! and the budget questions answered by repeated predictions (largest max-model-len and
//! max-num-seqs, smallest TP, utilization for a KV target).
//!
//! Invariants: the generic modules read no engine by name: every number and expression comes
//! from the engine file, the families or the rules, and a mechanism that is one engine's own
//! (its KV-cache groups, how it derives a context length) lives in the module named after that
//! engine (`vllm/`), chosen by the engine file; the forward's live bytes come from planning the
//! circuit (memory-plan), never from a closed formula; every expression is compiled once when
//! the profile loads; sizes are checked u64; it reads no file (callers hand it the texts).
//! docs/engines.md describes the format and the prediction.
//!
//! The profiles themselves are data in the `engines` crate: `engines::select("vllm==0.19.0")`
//! gives one. A start-up predicted, on the configuration and settings of one of the H100
//! start-ups the profiles are checked against (docs/engines.md):
//!
//! ```
//! use engine_profile::{RunSettings, Verdict};
//!
//! let profile = engines::select("vllm==0.19.0").unwrap();
//! let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
//!   "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
//!   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
//!   "tie_word_embeddings": false, "torch_dtype": "bfloat16", "max_position_embeddings": 131072,
//!   "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
//!   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}}"#;
//! // The importer holds the weights as the engine loads them.
//! let mut options = circuit_hf::ImportOptions::default();
//! options.load = profile.load_rules();
//! let model = circuit_hf::import_with(config, "Llama-3.1-8B/config.json", &options, &[]).unwrap();
//! let h100 = kernel_families::Devices::builtin().unwrap().get("h100-sxm").unwrap().clone();
//! // One GPU, and the engine's defaults (batched tokens, sequences on the device) but for these.
//! let run = RunSettings {
//!     gpu_memory_utilization: Some(0.95),
//!     max_model_len: Some(8192),
//!     enable_prefix_caching: Some(false),
//!     ..RunSettings::new(h100, model.facts)
//! };
//! let startup = profile.predict(&model.circuit, &run).unwrap();
//! assert_eq!(startup.verdict, Verdict::Starts);
//! assert_eq!((startup.max_num_batched_tokens, startup.max_num_seqs), (8192, 1024));
//! // vLLM 0.19.0 printed, for this start-up (data/vllm/cases.json): weights 14.99 GiB,
//! // 476,016 KV-cache tokens (one 16-token block fewer than predicted), concurrency 58.11x.
//! assert_eq!(startup.workers[0].weights, 16_094_191_616);
//! assert_eq!((startup.kv_cache_tokens, startup.kv_blocks), (476_032, 29_752));
//! assert_eq!(startup.max_concurrency, 58.109375);
//! ```
//!
//! Modules: `file` types the engine file as written and overlays a release on the one it
//! extends; `facts` compiles it; `formula` holds the compiled expressions; `startup` predicts a
//! layout, `worker` one worker of it, `encoder` and `cuda_graph` two of its terms; `budget`
//! answers the questions; [`kv_layout`] reads the circuits' cache layers and holds the layout
//! types; `mechanisms` maps an engine file's mechanism names to the modules named after their
//! engines (`vllm/`); `torch_allocator` models PyTorch's CUDA caching allocator, whose blocks
//! an engine running on torch counts.

#![warn(missing_docs)]

mod budget;
mod cuda_graph;
mod encoder;
mod error;
mod facts;
pub mod file;
mod formula;
pub mod kv_layout;
mod mechanisms;
mod rotary;
mod startup;
mod torch_allocator;
mod variant;
mod worker;

use std::borrow::Cow;
use std::sync::Arc;

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::{Device, Families};

pub use budget::{BudgetAnswers, SmallestTp};
pub use error::EngineError;
pub use file::{Execution, StageFilter};
pub use kv_layout::{KvGroup, KvLayout, LayerKind};
pub use mechanisms::{EngineDetail, EngineFlags, detail};
pub use model_facts::{EncoderShape, LoadRules, ModelFacts, VideoShape};
pub use startup::{
    CudaGraphEstimate, EncoderBytes, PeakSetBy, RunSettings, StageCircuit, Startup, Verdict, Worker,
};
pub use worker::ProfileRunMap;

use facts::Facts;

/// An engine profile: its file compiled, with its kernel families and fusion rules, and the
/// variants that apply to some runs only.
#[derive(Debug, Clone)]
pub struct EngineProfile {
    facts: Facts,
    origin: String,
    families: Arc<Families>,
    rules: Arc<Rules>,
    /// The engine file without its variants, merged (what a variant overlays).
    base: toml::Table,
    variants: Vec<variant::Variant>,
}

/// The texts of an engine folder, with their names for messages.
pub struct ProfileTexts<'a> {
    /// The engine files, the profile's own last and each one it extends before it (the
    /// release it overlays first): (text, origin).
    pub engine: Vec<(&'a str, &'a str)>,
    /// families.toml: (text, origin).
    pub families: (&'a str, &'a str),
    /// rules.toml: (text, origin).
    pub rules: (&'a str, &'a str),
}

/// The context lengths an engine allows a model: the longest max-model-len it accepts and the
/// one it takes when none is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLen {
    /// The longest max-model-len the engine accepts (it refuses a longer one before loading).
    pub longest: u64,
    /// The max-model-len it takes when none is given.
    pub default: u64,
}

/// The defaults an engine picks on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceDefaults {
    /// Batched tokens per step.
    pub max_num_batched_tokens: u64,
    /// Sequences per step.
    pub max_num_seqs: u64,
}

impl EngineProfile {
    /// Loads an engine profile from the texts of its folder (and the folders it extends).
    pub fn from_texts(texts: &ProfileTexts<'_>) -> Result<EngineProfile, EngineError> {
        let Some(&(_, origin)) = texts.engine.last() else {
            return Err(EngineError::Toml {
                origin: "engine profile".to_owned(),
                message: "no engine file given".to_owned(),
            });
        };
        let mut merged = toml::Table::new();
        let mut variants: Option<toml::Value> = None;
        let mut classes: Option<toml::Value> = None;
        for &(text, file_origin) in &texts.engine {
            let mut table: toml::Table = toml::from_str(text).map_err(|e| EngineError::Toml {
                origin: file_origin.to_owned(),
                message: e.to_string(),
            })?;
            // A release's variants replace the one's it extends, except those marked
            // `inherit = true` that it does not restate by name (the device rules).
            if let Some(own) = table.remove("variant") {
                variants = Some(variant::inherit(variants.take(), own));
            }
            // A release's per-class encoder entries replace only the classes they name.
            if let Some(own) = file::take_encoder_classes(&mut table) {
                classes = Some(file::merge_encoder_classes(classes.take(), own));
            }
            file::overlay(&mut merged, table);
        }
        if let Some(v) = variants {
            merged.insert("variant".to_owned(), v);
        }
        if let Some(c) = classes
            && let Some(toml::Value::Table(encoder)) = merged
                .get_mut("profile_run")
                .and_then(|p| p.as_table_mut())
                .and_then(|p| p.get_mut("encoder"))
        {
            encoder.insert("architecture".to_owned(), c);
        }
        let variants = variant::Variant::take_all(&mut merged, origin)?;
        let facts = compile(&merged, origin)?;
        // Every variant must give a file that compiles, so a broken one fails at load.
        for v in &variants {
            let mut with = merged.clone();
            file::overlay(&mut with, v.overlay.clone());
            compile(&with, origin).map_err(|e| EngineError::Toml {
                origin: origin.to_owned(),
                message: format!("variant `{}`: {e}", v.name),
            })?;
        }
        for u in &facts.unsettled {
            if let Some(v) = &u.unless_variant
                && !variants.iter().any(|x| x.name == *v)
            {
                return Err(EngineError::Toml {
                    origin: origin.to_owned(),
                    message: format!(
                        "unsettled `{}`: unless_variant = {v:?}: the file has no variant of that name",
                        u.name
                    ),
                });
            }
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
            facts,
            origin: origin.to_owned(),
            families: Arc::new(families),
            rules: Arc::new(rules),
            base: merged,
            variants,
        })
    }

    /// Whether the release turns prefix caching on for a model with recurrent state unless the
    /// run says (`kv_cache.recurrent.prefix_caching_by_default`; false for an engine whose
    /// start-up has no profile run, which has no such fact).
    pub fn prefix_caching_by_default(&self) -> bool {
        self.facts
            .run()
            .is_ok_and(|r| r.kv.recurrent_prefix_caching_by_default)
    }

    /// The profile as it holds for a run of `model` over `circuits` (one per pipeline stage)
    /// on `device` at `tensor_parallel_size`: the file with every variant whose conditions
    /// hold applied, in file order (itself when none does).
    pub(crate) fn resolve(
        &self,
        subject: &variant::Subject<'_>,
    ) -> Result<Cow<'_, EngineProfile>, EngineError> {
        let device = subject.device;
        let mut table = None;
        for v in &self.variants {
            if v.holds(subject)? {
                if let Some(why) = &v.refuse {
                    let why = format!("{why} (the engine file's variant `{}`)", v.name);
                    // A refusal that does not depend on the device is not blamed on it.
                    return Err(if v.tests_device() {
                        EngineError::DeviceNotModelled {
                            device: device.name.clone(),
                            why,
                        }
                    } else {
                        EngineError::Refused {
                            engine: self.facts.engine.clone(),
                            version: self.facts.version.clone(),
                            why,
                        }
                    });
                }
                let t = table.get_or_insert_with(|| self.base.clone());
                file::overlay(t, v.overlay.clone());
            }
        }
        match table {
            None => Ok(Cow::Borrowed(self)),
            Some(t) => Ok(Cow::Owned(EngineProfile {
                facts: compile(&t, &self.origin)?,
                origin: self.origin.clone(),
                families: Arc::clone(&self.families),
                rules: Arc::clone(&self.rules),
                base: t,
                variants: Vec::new(),
            })),
        }
    }

    /// The names of the variants that hold for a run (the variants a prediction applies), for
    /// reports.
    pub fn variants_applied(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Vec<String>, EngineError> {
        let circuits: Vec<&Circuit> = stages.iter().map(|s| s.circuit).collect();
        let subject = variant::Subject::of(run, &circuits, self.prefix_caching_by_default());
        let mut names = Vec::new();
        for v in &self.variants {
            if v.holds(&subject)? {
                names.push(v.name.clone());
            }
        }
        Ok(names)
    }

    /// The `gpu_memory_utilization` the engine takes when none is given (None: the engine
    /// sizes its cache by a flow of its own, without a profile run).
    pub fn default_gpu_memory_utilization(&self) -> Option<f64> {
        self.facts
            .run()
            .ok()
            .map(|r| r.kv.default_gpu_memory_utilization)
    }

    /// The engine's name (`vllm`).
    pub fn engine(&self) -> &str {
        &self.facts.engine
    }

    /// The release the facts were read from (`0.19.0`).
    pub fn version(&self) -> &str {
        &self.facts.version
    }

    /// Every release (pip's spelling) the profile stands for.
    pub fn releases(&self) -> &[String] {
        &self.facts.releases
    }

    /// The engine file's name, as handed in.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// How the engine holds a checkpoint after loading, on no device in particular: the
    /// layouts its `[load]` chooses by device (GPTQ's linears) stay as stored. Hand these to
    /// the importer when no device is known; [`EngineProfile::load_rules_on`] otherwise.
    pub fn load_rules(&self) -> LoadRules {
        self.facts.load
    }

    /// How the engine holds a checkpoint after loading on `device`: [`EngineProfile::load_rules`]
    /// with the layouts chosen by device (`[load] gptq_linears` and `awq_linears`, the first rule whose
    /// conditions hold). An error when a rule reads a fact the device table does not give.
    pub fn load_rules_on(&self, device: &Device) -> Result<LoadRules, EngineError> {
        let mut rules = self.facts.load;
        let first = |list: &[(variant::Conditions, model_facts::LinearKernel)], key: &str| {
            for (i, (when, kernel)) in list.iter().enumerate() {
                if when.holds_on_device(device, &format!("load.{key}[{i}]"))? {
                    return Ok(*kernel);
                }
            }
            Ok::<_, EngineError>(model_facts::LinearKernel::Stored)
        };
        rules.gptq_linears = first(&self.facts.gptq_linears, "gptq_linears")?;
        rules.awq_linears = first(&self.facts.awq_linears, "awq_linears")?;
        Ok(rules)
    }

    /// The context lengths the engine allows `model`.
    pub fn model_len(&self, model: &ModelFacts) -> ModelLen {
        mechanisms::model_len(self.facts.model_len, model)
    }

    /// Whether the engine file gives batch defaults per device (`[[defaults]]`); an engine
    /// whose start-up flow derives its batch itself (running requests from its pool) gives
    /// none, and [`EngineProfile::batch`] is not its question.
    pub fn has_batch_defaults(&self) -> bool {
        !self.facts.defaults.is_empty()
    }

    /// The defaults the engine picks on `device`: its file's first rule that holds, or an
    /// error when no rule holds or the device's CUDA total is not known.
    pub fn defaults_on(&self, device: &Device) -> Result<DeviceDefaults, EngineError> {
        let total = cuda_total(device)?;
        // A rule on the product string is not taken as holding (or failing) for a device whose
        // product string the table does not give.
        let product = |rule: &file::DefaultsRule| match (&rule.product_lacks, &device.product) {
            (None, _) => Ok(String::new()),
            (Some(_), Some(p)) => Ok(p.to_lowercase()),
            (Some(_), None) => Err(EngineError::DeviceNotModelled {
                device: device.name.clone(),
                why: format!(
                    "its product string is not in the device table, and the defaults rules of {} depend on it",
                    self.origin
                ),
            }),
        };
        let mut found = None;
        for rule in &self.facts.defaults {
            let product = product(rule)?;
            if rule.min_total_bytes.is_none_or(|min| total >= min)
                && rule
                    .product_lacks
                    .as_deref()
                    .is_none_or(|text| !product.contains(text))
            {
                found = Some(rule);
                break;
            }
        }
        found
            .map(|r| DeviceDefaults {
                max_num_batched_tokens: r.max_num_batched_tokens,
                max_num_seqs: r.max_num_seqs,
            })
            .ok_or_else(|| EngineError::DeviceNotModelled {
                device: device.name.clone(),
                why: format!("no defaults rule of {} holds for it", self.origin),
            })
    }
}

/// The device's total memory as CUDA reports it, which an engine's budget is a fraction of.
pub(crate) fn cuda_total(device: &Device) -> Result<u64, EngineError> {
    device
        .cuda_total_bytes
        .ok_or_else(|| EngineError::DeviceNotModelled {
            device: device.name.clone(),
            why: "its total memory as CUDA reports it is not in the device table".to_owned(),
        })
}

/// Deserializes and compiles a merged engine file.
fn compile(table: &toml::Table, origin: &str) -> Result<Facts, EngineError> {
    let file: file::EngineFile =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| EngineError::Toml {
                origin: origin.to_owned(),
                message: e.to_string(),
            })?;
    Facts::compile(file, origin)
}
