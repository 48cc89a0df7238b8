//! One start-up predicted, in four phases: the run's settings settled against the device, the
//! engine's defaults and the model ([`Settled`]); the KV-cache layout of the layout's cache
//! layers; each stage's worker (`worker.rs`), repeated over its tensor-parallel ranks; and the
//! layout's blocks, tokens, concurrency and verdict from the workers.
//!
//! Invariants: the KV blocks of a layout are the minimum over its workers, as the engine gives
//! every rank the smallest count; every sum is checked; a setting no engine run could have
//! (TP 0, a utilization outside (0, 1], no batched tokens) is refused naming it.

use circuit_ir::Circuit;
use kernel_families::Device;
use model_facts::{EncoderShape, ModelFacts};

use crate::formula::{Env, Formula};
use crate::kv_layout::KvLayout;
use crate::{EngineError, EngineProfile, Execution, ModelLen};

/// The memory a worker's process holds before an engine first measures the device's free
/// memory: its CUDA context and, in a world of more than one rank, the communicators set up
/// before the measurement (both figures an engine file's stated assumptions: vLLM 0.34's
/// `[kv_cache.measured]`, SGLang's `[startup.sglang.free_memory]`). None on overflow.
pub(crate) fn held_before_measuring(
    cuda_context: u64,
    communicators: u64,
    world: u64,
) -> Option<u64> {
    if world > 1 {
        cuda_context.checked_add(communicators)
    } else {
        Some(cuda_context)
    }
}

/// The CUDA-graph estimate of one worker (the default: none, nothing captured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaGraphEstimate {
    /// Sizes captured per mode, in the engine file's order.
    pub captures: Vec<(String, u64)>,
    /// The first capture's bytes.
    pub first_capture: u64,
    /// Each further capture's bytes.
    pub per_capture: u64,
    /// The estimate: the first capture (the modes share one pool, so once) plus every further
    /// capture of every mode.
    pub total: u64,
}

/// A start-up to predict, in the engine's own terms.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The device, from the device table (its CUDA total, product string, SMs and L2).
    pub device: Device,
    /// Tensor-parallel size.
    pub tensor_parallel_size: u64,
    /// Pipeline-parallel size.
    pub pipeline_parallel_size: u64,
    /// Fraction of the device's total the engine may use (None: the engine's default,
    /// [`EngineProfile::default_gpu_memory_utilization`]).
    pub gpu_memory_utilization: Option<f64>,
    /// Batched tokens of the profile run (None: the device's default).
    pub max_num_batched_tokens: Option<u64>,
    /// Sequences (None: the device's default).
    pub max_num_seqs: Option<u64>,
    /// Max model length (None: the engine's default for the model, [`EngineProfile::model_len`]).
    pub max_model_len: Option<u64>,
    /// The profile run leaves the multimodal encoder out (vLLM's `--skip-mm-profiling`): the
    /// only way a model with a vision encoder is predicted, as the encoder's profile is not
    /// modelled.
    pub skip_mm_profiling: bool,
    /// The forward runs eagerly and no CUDA graph is captured (vLLM's `--enforce-eager`):
    /// terms count by their `execution`, and the CUDA-graph estimate is none.
    pub enforce_eager: bool,
    /// Images per prompt (vLLM's `--limit-mm-per-prompt` image entry; None: the engine file's
    /// default). An image limit of 0 leaves images out of the encoder's profile; when every
    /// modality the model takes is limited to 0 there is no encoder: import the model without
    /// its tower instead.
    pub mm_limit_per_prompt: Option<u64>,
    /// Videos per prompt (its video entry; None: the engine file's default), for models whose
    /// tower also takes video ([`model_facts::EncoderShape::video`]); 0 leaves video out.
    pub mm_video_limit_per_prompt: Option<u64>,
    /// Tokens per KV-cache block (vLLM's `--block-size`; None: the engine file's
    /// `kv_cache.block_size`). A model with recurrent state raises it until an attention page
    /// holds a state, as for the default.
    pub block_size: Option<u64>,
    /// Prefix caching asked on (Some(true)) or off (Some(false)); None: the engine's default.
    /// No byte depends on it but for a model with recurrent state, whose per-block states
    /// under prefix caching are not modelled: such a run is refused.
    pub enable_prefix_caching: Option<bool>,
    /// The model's facts as its importer read them (config.json's values, or the class
    /// defaults it omits): this crate reads no model class and no config file.
    pub model: ModelFacts,
    /// Settings only one engine has (its own flags, `mechanisms.rs`); None: that engine's
    /// defaults. Refused by a profile of another engine.
    pub engine_flags: Option<crate::EngineFlags>,
}

impl RunSettings {
    /// A run of `model` on `device` on one GPU (TP 1, PP 1) with every other setting the
    /// engine's default: set what the run changes with struct update syntax,
    /// `RunSettings { max_model_len: Some(8192), ..RunSettings::new(device, model) }`.
    pub fn new(device: Device, model: ModelFacts) -> RunSettings {
        RunSettings {
            device,
            tensor_parallel_size: 1,
            pipeline_parallel_size: 1,
            gpu_memory_utilization: None,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            max_model_len: None,
            skip_mm_profiling: false,
            enforce_eager: false,
            mm_limit_per_prompt: None,
            mm_video_limit_per_prompt: None,
            block_size: None,
            enable_prefix_caching: None,
            model,
            engine_flags: None,
        }
    }
}

/// One pipeline stage's circuit: what each tensor-parallel rank of the stage holds (its
/// layers, its shard of every tensor).
#[derive(Debug, Clone, Copy)]
pub struct StageCircuit<'a> {
    /// The stage, 0-based.
    pub stage: u64,
    /// The circuit of one of its ranks.
    pub circuit: &'a Circuit,
}

impl<'a> StageCircuit<'a> {
    /// A layout's stages from its circuits in stage order (stage 0 first), as an importer
    /// returns them.
    pub fn in_order(circuits: &'a [Circuit]) -> Vec<StageCircuit<'a>> {
        circuits
            .iter()
            .zip(0u64..)
            .map(|(circuit, stage)| StageCircuit { stage, circuit })
            .collect()
    }
}

/// What one worker allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    /// Global rank, in vLLM's order (`pp_stage * tensor_parallel_size + tp_rank`).
    pub rank: u64,
    /// Tensor-parallel rank within the stage.
    pub tp_rank: u64,
    /// Pipeline stage.
    pub pp_stage: u64,
    /// Weights as loaded, bytes.
    pub weights: u64,
    /// Torch peak increase of the profile run, bytes.
    pub activation_peak: u64,
    /// Which part of the profile run sets it: the encoder's own peak (when above everything
    /// after it), or after it the forward's live and held bytes or the sampler's, whichever is
    /// larger (the forward on a tie); the persistent bytes and the encoder's inputs and
    /// outputs lie under the last two.
    pub peak_set_by: PeakSetBy,
    /// The forward's planned live bytes (the arena at the profile rows).
    pub forward_live: u64,
    /// Bytes held beside the arena at the forward's peak (`profile_run.forward_held`).
    pub forward_held: u64,
    /// The sampler's live bytes.
    pub sampler_live: u64,
    /// Persistent bytes (workspaces held across the run).
    pub persistent: u64,
    /// Buffers allocated after the engine's memory snapshot and before the profile run
    /// (`profile_run.resident`), outside the weights and the activation peak; counted only by a
    /// budget that measures the device's free memory (`kv_cache.budget`).
    pub resident: u64,
    /// The non-KV bytes the engine's budget counts against the requested memory: weights,
    /// activation peak and non-torch, with the CUDA-graph estimate where subtracted and what
    /// the file's `kv_cache.budget` adds (the resident buffers, a measured transient).
    pub counted_non_kv: u64,
    /// The multimodal encoder's run (all zero when the profile runs none).
    pub encoder: EncoderBytes,
    /// Non-torch increase, bytes.
    pub non_torch: u64,
    /// KV cache bytes (0 when the rest does not fit).
    pub kv_cache: u64,
    /// KV blocks its memory holds (the engine allocates the minimum over workers).
    pub blocks: u64,
    /// Bytes one KV block costs the worker: its layers' pages with one group, else the page
    /// times the most layers of one group it holds ([`KvLayout::stage_block_bytes`]).
    pub block_bytes: u64,
    /// Kernel launches of the planned forward (the fusion plan's launch groups that run a
    /// kernel; weights_only groups launch none).
    pub kernel_launches: u64,
    /// The CUDA-graph estimate the worker prints.
    pub cuda_graph: CudaGraphEstimate,
}

/// What the profile run's multimodal encoder run holds on a worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncoderBytes {
    /// Items encoded.
    pub items: u64,
    /// Whether they are videos (the modality with the most tokens per item), else images.
    pub video: bool,
    /// Its inputs, held from before it runs to the end of the profile run.
    pub held: u64,
    /// Its outputs, held from its end to the end of the profile run.
    pub outputs: u64,
    /// Its own live bytes at its peak, beside the inputs.
    pub peak: u64,
}

/// The part of the profile run whose live bytes set a worker's activation peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakSetBy {
    /// The multimodal encoder's run, before the forward.
    Encoder,
    /// The model's forward (the planned arena and what is held beside it).
    Forward,
    /// The sampler after the forward (on the last pipeline stage).
    Sampler,
}

impl PeakSetBy {
    /// The lowercase name the CLI prints.
    pub fn name(self) -> &'static str {
        match self {
            PeakSetBy::Encoder => "encoder",
            PeakSetBy::Forward => "forward",
            PeakSetBy::Sampler => "sampler",
        }
    }
}

/// Whether the engine starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It starts.
    Starts,
    /// One worker's weights alone exceed the device's memory: the engine stops while it
    /// builds the model, every parameter being allocated on the device before any weight is
    /// read (vLLM: model_loader/base_loader.py `with target_device: create_model`), with
    /// torch's CUDA out-of-memory error, before any profile run or KV-cache check.
    WeightsAboveDevice {
        /// The largest worker's weights as loaded, bytes.
        weights: u64,
        /// The device's memory as CUDA reports it, bytes.
        device_total: u64,
    },
    /// Weights, activations and non-torch exceed the requested memory.
    NoKvMemory {
        /// Bytes short.
        short_by: u64,
    },
    /// The KV cache cannot hold one sequence of max-model-len.
    MaxModelLenTooLong {
        /// Tokens the cache holds.
        kv_tokens: u64,
        /// The max model length.
        max_model_len: u64,
    },
    /// The max model length is above the longest the model allows, which the engine refuses
    /// before it loads anything (vLLM: "User-specified max_model_len ... is greater than the
    /// derived max_model_len").
    MaxModelLenAboveModel {
        /// The max model length asked for.
        max_model_len: u64,
        /// The longest the model allows.
        longest: u64,
    },
}

/// A predicted start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Startup {
    /// The engine's name.
    pub engine: String,
    /// Its version.
    pub version: String,
    /// The device's name (the device table's).
    pub device: String,
    /// The device as the table gives it (its product string, figures, their precision and
    /// sources), for reports.
    pub device_figures: Device,
    /// The device total as CUDA reports it.
    pub device_total: u64,
    /// The fraction of it the engine may use.
    pub gpu_memory_utilization: f64,
    /// ceil(total x utilization).
    pub requested: u64,
    /// Batched tokens of the profile run.
    pub max_num_batched_tokens: u64,
    /// Whether the batched tokens are the engine's default on the device (the run gave none).
    pub max_num_batched_tokens_defaulted: bool,
    /// Sequences.
    pub max_num_seqs: u64,
    /// Whether the sequences are the engine's default on the device (the run gave none).
    pub max_num_seqs_defaulted: bool,
    /// Max model length.
    pub max_model_len: u64,
    /// Per worker.
    pub workers: Vec<Worker>,
    /// KV tokens as the engine prints them: the blocks (the minimum over workers) over the
    /// groups, times the smallest block size.
    pub kv_cache_tokens: u64,
    /// Requests of max-model-len the cache holds: the blocks over the blocks one request
    /// takes in every group.
    pub max_concurrency: f64,
    /// The KV blocks every worker gets (the minimum over workers).
    pub kv_blocks: u64,
    /// The cache's layout: its groups and block sizes.
    pub kv_layout: KvLayout,
    /// The CUDA-graph estimate, bytes: the largest over the workers.
    pub cuda_graph_estimate: u64,
    /// Whether the engine takes the estimate (or the graphs' measured pool) from the KV
    /// budget.
    pub cuda_graph_subtracted: bool,
    /// The verdict.
    pub verdict: Verdict,
    /// Every release the profile stands for.
    pub releases: Vec<String>,
    /// What the engine file says the prediction leaves out, and its effect (for this run's
    /// variants).
    pub unsettled: Vec<crate::file::UnsettledDecl>,
    /// What only this engine's start-up flow has (its own quantities, per worker where they
    /// differ); None for the profile-run flow.
    pub detail: Option<crate::EngineDetail>,
}

impl EngineProfile {
    /// Predicts the start-up of `circuit` (the model `run.model` describes) on one rank: `run`
    /// must ask for tensor- and pipeline-parallel size 1 (use [`EngineProfile::predict_layout`]
    /// for a parallel layout).
    pub fn predict(&self, circuit: &Circuit, run: &RunSettings) -> Result<Startup, EngineError> {
        // A whole-model circuit read as one rank's shard would be planned silently wrong.
        if (run.tensor_parallel_size, run.pipeline_parallel_size) != (1, 1) {
            return Err(EngineError::BadSetting {
                what: "tensor_parallel_size / pipeline_parallel_size",
                value: format!(
                    "{} / {}",
                    run.tensor_parallel_size, run.pipeline_parallel_size
                ),
                why: "predict takes the whole model on one rank; give predict_layout one circuit per stage",
            });
        }
        self.predict_layout(&[StageCircuit { stage: 0, circuit }], run)
    }

    /// Predicts the start-up of a layout of `run.tensor_parallel_size` x
    /// `run.pipeline_parallel_size` workers, given one circuit per pipeline stage (stages
    /// 0, 1, ... in order; every TP rank of a stage holds the same shapes).
    pub fn predict_layout(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Startup, EngineError> {
        let mut startup = self
            .resolve_for(stages, run)?
            .predict_resolved(stages, run)?;
        // The notes printed under a prediction are those that concern its run.
        let circuits: Vec<&Circuit> = stages.iter().map(|s| s.circuit).collect();
        let subject = crate::variant::Subject::of(run, &circuits, self.prefix_caching_by_default());
        let applied = self.variants_applied(stages, run)?;
        let mut kept = Vec::with_capacity(startup.unsettled.len());
        for u in std::mem::take(&mut startup.unsettled) {
            // A note on what a variant's facts replace does not concern the runs it applies to.
            let replaced = u
                .unless_variant
                .as_ref()
                .is_some_and(|v| applied.contains(v));
            if !replaced
                && u.when
                    .holds(&subject, &format!("unsettled note `{}`", u.name))?
            {
                kept.push(u);
            }
        }
        startup.unsettled = kept;
        Ok(startup)
    }

    /// The profile with the variants that hold for `run` applied.
    pub(crate) fn resolve_for(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<std::borrow::Cow<'_, EngineProfile>, EngineError> {
        let circuits: Vec<&Circuit> = stages.iter().map(|s| s.circuit).collect();
        self.resolve(&crate::variant::Subject::of(
            run,
            &circuits,
            self.prefix_caching_by_default(),
        ))
    }

    /// [`EngineProfile::predict_layout`] on a profile whose variants are applied.
    fn predict_resolved(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Startup, EngineError> {
        // The one dispatch: an engine whose start-up has no profile run predicts by its own
        // flow (`[startup] flow`, mechanisms.rs).
        if let Some(startup) = crate::mechanisms::predict(self, stages, run) {
            return startup;
        }
        if let Some(flags) = &run.engine_flags {
            return Err(EngineError::BadSetting {
                what: "engine flags",
                value: flags.engine().to_owned(),
                why: "these are another engine's own flags; this profile's engine does not take them",
            });
        }
        let settled = self.settle(stages, run)?;
        let layout = self.kv_layout(
            stages,
            &run.model,
            settled.block_size,
            settled.max_model_len,
            settled.tokens,
        )?;
        let workers = self.workers(stages, &settled, &layout)?;
        self.assemble(settled, layout, workers)
    }

    /// Phase 1: the run's settings checked and settled (defaults from the device and the
    /// model, the requested bytes, the non-torch bytes, the encoder's run).
    pub(crate) fn settle(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Settled, EngineError> {
        let (tp, pp) = checked_layout(
            stages,
            run,
            "tensor_parallel_size / pipeline_parallel_size",
            "one circuit per pipeline stage, stages 0..pipeline_parallel_size in order",
        )?;
        let utilization = run
            .gpu_memory_utilization
            .unwrap_or(self.facts.run()?.kv.default_gpu_memory_utilization);
        if !(utilization > 0.0 && utilization <= 1.0) {
            return Err(EngineError::BadSetting {
                what: "gpu_memory_utilization",
                value: utilization.to_string(),
                why: "must be in (0, 1]",
            });
        }
        // An engine whose profile run skips the encoder (`profile_run.encoder.profiled =
        // false`) measures the language model alone, as `skip_mm_profiling` does.
        let profiled = self
            .facts
            .run()?
            .profile_run
            .encoder
            .as_ref()
            .is_none_or(|e| e.profiled);
        let encoder_runs = run.model.vision_encoder && !run.skip_mm_profiling && profiled;
        // A tower the release's file marks as not modelled is refused with its reason.
        if encoder_runs
            && run.model.encoder.is_some()
            && let Some(why) = (self.facts.run()?.profile_run.encoder.as_ref())
                .and_then(|p| p.for_class(&run.model.architecture).refuse)
        {
            return Err(EngineError::EncoderClassRefused {
                circuit: stages[0].circuit.name().to_owned(),
                engine: format!("{} {}", self.facts.engine, self.facts.version),
                class: run.model.architecture.clone(),
                why: why.to_owned(),
            });
        }
        let encoder = match (
            encoder_runs,
            run.model.encoder,
            &self.facts.run()?.profile_run.encoder,
        ) {
            (false, _, _) => None,
            (true, Some(shape), Some(profile))
                if profile.for_class(&run.model.architecture).video.is_some()
                    || shape.video.is_none()
                    || run.mm_video_limit_per_prompt == Some(0) =>
            {
                Some((shape, profile.default_limit_per_prompt))
            }
            (true, _, profile) => {
                return Err(EngineError::EncoderProfileNotModelled {
                    circuit: stages[0].circuit.name().to_owned(),
                    runs_it: profile.as_ref().map_or_else(
                        || format!("{} {}", self.facts.engine, self.facts.version),
                        |p| p.source.clone(),
                    ),
                });
            }
        };
        let recurrent = stages
            .iter()
            .any(|s| s.circuit.states().values().any(|st| st.per_sequence > 0));
        let kv = &self.facts.run()?.kv;
        let prefix_caching = run
            .enable_prefix_caching
            .unwrap_or(kv.recurrent_prefix_caching_by_default);
        // A release whose variant lays the state out per block under prefix caching
        // (`kv_cache.recurrent.align`) predicts it; any other refuses.
        if recurrent && prefix_caching && !kv.recurrent_align {
            return Err(EngineError::NotModelled {
                circuit: stages[0].circuit.name().to_owned(),
                what: format!(
                    "prefix caching on a model with recurrent state ({}): the engine then keeps the state per block (mamba_cache_mode \"align\" or \"all\"), which is not modelled; turn prefix caching off (--no-enable-prefix-caching)",
                    if run.enable_prefix_caching.is_some() {
                        "asked for".to_owned()
                    } else {
                        format!(
                            "{} {}'s default for such a model",
                            self.facts.engine, self.facts.version
                        )
                    }
                ),
            });
        }
        let device_total = crate::cuda_total(&run.device)?;
        let model_len = self.model_len(&run.model);
        let max_model_len = run.max_model_len.unwrap_or(model_len.default);
        let (tokens, seqs) = self.batch(run)?;
        if tokens == 0 || seqs == 0 {
            return Err(EngineError::BadSetting {
                what: "max_num_batched_tokens / max_num_seqs",
                value: format!("{tokens} / {seqs}"),
                why: "must be positive",
            });
        }
        let overflow = |what: &str| EngineError::Overflow {
            what: what.to_owned(),
        };
        let world = tp.checked_mul(pp).ok_or_else(|| overflow("world size"))?;
        let requested = (device_total as f64 * utilization).ceil() as u64;
        let facts = &self.facts.run()?.non_torch;
        let mut non_torch = if world == 1 {
            facts.single_process_bytes
        } else {
            facts.distributed_bytes
        };
        if tp > 1 {
            non_torch = non_torch
                .checked_add(facts.tensor_parallel_bytes)
                .ok_or_else(|| overflow("non-torch bytes"))?;
        }
        let rotary_dtype = self
            .facts
            .rotary_dtype
            .iter()
            .find(|(class, _)| *class == run.model.architecture)
            .map_or(run.model.dtype, |(_, format)| *format);
        Ok(Settled {
            device: run.device.clone(),
            device_total,
            utilization,
            tokens,
            tokens_defaulted: run.max_num_batched_tokens.is_none(),
            seqs,
            seqs_defaulted: run.max_num_seqs.is_none(),
            requests: tokens.min(seqs),
            tp,
            stages: pp,
            requested,
            non_torch,
            max_model_len,
            model_len,
            block_size: self.block_size(run)?,
            dtype_bytes: bytes_per_element(run.model.dtype)?,
            rotary_dtype_bytes: bytes_per_element(rotary_dtype)?,
            execution: if run.enforce_eager {
                Execution::Eager
            } else {
                Execution::Compiled
            },
            encoder: encoder.map(|(shape, default_limit)| EncoderRun {
                shape,
                max_model_len,
                limit_per_prompt: run.mm_limit_per_prompt.unwrap_or(default_limit),
                video_limit_per_prompt: match shape.video {
                    Some(_) => run.mm_video_limit_per_prompt.unwrap_or(default_limit),
                    None => 0,
                },
                tp,
            }),
            model: run.model.clone(),
        })
    }

    /// The batched tokens and sequences of `run`: each as given, or the engine's default on
    /// the device (its `[[defaults]]` rule), bounded as the engine bounds a default by the
    /// other settings (`[defaults_clamp]`): the tokens first, from the sequences as given or
    /// defaulted and the max model length (as given, else the model's default), then the
    /// sequences from the tokens. The profile's variants are not applied: call it on a profile
    /// whose variants hold for the run (a prediction does).
    pub fn batch(&self, run: &RunSettings) -> Result<(u64, u64), EngineError> {
        let max_model_len = run
            .max_model_len
            .unwrap_or(self.model_len(&run.model).default);
        let defaults = self.defaults_on(&run.device)?;
        let seqs_asked = run.max_num_seqs.unwrap_or(defaults.max_num_seqs);
        let clamp = |formula: Option<&Formula>, tokens: u64, seqs: u64| match formula {
            None => Ok(None),
            Some(f) => f
                .eval(&Env::names_only(
                    vec![
                        ("max_num_batched_tokens", tokens),
                        ("max_num_seqs", seqs),
                        ("max_model_len", max_model_len),
                    ],
                    "the run's defaults",
                ))
                .map(Some),
        };
        let bounds = self.facts.defaults_clamp.as_ref();
        let tokens = match run.max_num_batched_tokens {
            Some(t) => t,
            None => clamp(
                bounds.map(|b| &b.0),
                defaults.max_num_batched_tokens,
                seqs_asked,
            )?
            .unwrap_or(defaults.max_num_batched_tokens),
        };
        let seqs = match run.max_num_seqs {
            Some(s) => s,
            None => clamp(bounds.map(|b| &b.1), tokens, defaults.max_num_seqs)?
                .unwrap_or(defaults.max_num_seqs),
        };
        Ok((tokens, seqs))
    }

    /// Phase 3: each stage's worker, repeated over the stage's tensor-parallel ranks (every
    /// rank of a stage holds the same shapes), in rank order.
    fn workers(
        &self,
        stages: &[StageCircuit<'_>],
        settled: &Settled,
        layout: &KvLayout,
    ) -> Result<Vec<Worker>, EngineError> {
        let tp = settled.tp;
        let mut workers = Vec::new();
        for (stage, &block_bytes) in stages.iter().zip(&layout.stage_block_bytes) {
            let one = self.stage_worker(stage, settled, block_bytes)?;
            for tp_rank in 0..tp {
                let rank = stage
                    .stage
                    .checked_mul(tp)
                    .and_then(|r| r.checked_add(tp_rank))
                    .ok_or_else(|| EngineError::Overflow {
                        what: "rank".to_owned(),
                    })?;
                workers.push(Worker {
                    rank,
                    tp_rank,
                    ..one.clone()
                });
            }
        }
        Ok(workers)
    }

    /// Phase 4: the layout's blocks (the minimum over the workers), tokens, concurrency and
    /// verdict.
    fn assemble(
        &self,
        settled: Settled,
        layout: KvLayout,
        workers: Vec<Worker>,
    ) -> Result<Startup, EngineError> {
        let overflow = |what: &str| EngineError::Overflow {
            what: what.to_owned(),
        };
        // vLLM gives every worker the smallest block count of all (kv_cache_utils.py
        // get_kv_cache_configs: "the smallest among all ranks"); the engines modelled agree.
        let blocks = workers.iter().map(|w| w.blocks).min().unwrap_or(0);
        let kv_cache_tokens = self
            .printed_tokens(&layout, blocks, settled.max_model_len)
            .ok_or_else(|| overflow("KV tokens"))?;
        // Requests of max-model-len the blocks hold: the blocks over those one takes in every
        // group (vLLM's get_max_concurrency_for_kv_cache_config).
        let max_concurrency = if layout.blocks_per_request == 0 {
            0.0
        } else {
            blocks as f64 / layout.blocks_per_request as f64
        };
        let requested = settled.requested;
        let short = workers
            .iter()
            .map(|w| w.counted_non_kv.saturating_sub(requested))
            .max()
            .unwrap_or(0);
        let longest = settled.model_len.longest;
        let max_model_len = settled.max_model_len;
        let most_weights = workers.iter().map(|w| w.weights).max().unwrap_or(0);
        let verdict = if max_model_len > longest {
            Verdict::MaxModelLenAboveModel {
                max_model_len,
                longest,
            }
        } else if most_weights > settled.device_total {
            // Loading fails before the profile run: no "No available memory for the cache
            // blocks" is ever reached (the model's parameters are allocated on the device as it
            // is built, model_loader/base_loader.py, vLLM 0.31.0 L67-72, 0.10.1.1 L43-44).
            Verdict::WeightsAboveDevice {
                weights: most_weights,
                device_total: settled.device_total,
            }
        } else if workers.iter().any(|w| w.kv_cache == 0) {
            Verdict::NoKvMemory { short_by: short }
        } else if !layout.holds_one_request(&workers) {
            // The KV memory must hold one request of max-model-len, compared where and
            // counted as the engine's start-up check does (KvLayout::stage_request_bytes).
            Verdict::MaxModelLenTooLong {
                kv_tokens: kv_cache_tokens,
                max_model_len,
            }
        } else {
            Verdict::Starts
        };
        let cuda_graph_estimate = workers
            .iter()
            .map(|w| w.cuda_graph.total)
            .max()
            .unwrap_or(0);
        Ok(Startup {
            engine: self.facts.engine.clone(),
            version: self.facts.version.clone(),
            device: settled.device.name.clone(),
            device_figures: settled.device.clone(),
            device_total: settled.device_total,
            gpu_memory_utilization: settled.utilization,
            requested,
            max_num_batched_tokens: settled.tokens,
            max_num_batched_tokens_defaulted: settled.tokens_defaulted,
            max_num_seqs: settled.seqs,
            max_num_seqs_defaulted: settled.seqs_defaulted,
            max_model_len,
            workers,
            kv_cache_tokens,
            max_concurrency,
            kv_blocks: blocks,
            kv_layout: layout,
            cuda_graph_estimate,
            cuda_graph_subtracted: self.facts.run()?.kv.subtract_cuda_graph_estimate
                || self
                    .facts
                    .run()?
                    .kv
                    .budget
                    .is_some_and(|b| b.counts_cuda_graphs()),
            verdict,
            releases: self.facts.releases.clone(),
            unsettled: self.facts.unsettled.clone(),
            detail: None,
        })
    }

    /// The KV tokens the engine prints for `blocks` blocks of `layout`: the file's
    /// `kv_cache.printed_tokens` mechanism, else the blocks over the groups times the smallest
    /// block size.
    pub(crate) fn printed_tokens(
        &self,
        layout: &KvLayout,
        blocks: u64,
        max_model_len: u64,
    ) -> Option<u64> {
        match self.facts.run().ok().and_then(|r| r.kv.printed_tokens) {
            Some(m) => crate::mechanisms::printed_tokens(m, layout, blocks, max_model_len),
            None => layout.tokens(blocks),
        }
    }

    /// The fewest blocks of `layout` whose printed tokens reach `tokens`.
    pub(crate) fn blocks_for_printed_tokens(
        &self,
        layout: &KvLayout,
        tokens: u64,
        max_model_len: u64,
    ) -> Option<u64> {
        match self.facts.run().ok().and_then(|r| r.kv.printed_tokens) {
            Some(m) => {
                crate::mechanisms::blocks_for_printed_tokens(m, layout, tokens, max_model_len)
            }
            None => layout.blocks_for_tokens(tokens),
        }
    }

    /// Tokens per KV-cache block for `run`: its `--block-size`, else the engine file's.
    pub(crate) fn block_size(&self, run: &RunSettings) -> Result<u64, EngineError> {
        match run.block_size {
            Some(0) => Err(EngineError::BadSetting {
                what: "block_size",
                value: "0".to_owned(),
                why: "a KV-cache block holds at least one token",
            }),
            Some(b) => Ok(b),
            None => Ok(self.facts.run()?.kv.block_size),
        }
    }
}

/// Bytes per element of a model dtype.
fn bytes_per_element(format: circuit_ir::Format) -> Result<u64, EngineError> {
    format.bytes(1, 1).map_err(|_| EngineError::BadSetting {
        what: "model dtype",
        value: format.to_string(),
        why: "a model dtype is a float format of whole bytes (bf16, f16, f32)",
    })
}

/// The run's settings, settled: what every stage's worker is predicted from.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    pub(crate) device: Device,
    pub(crate) device_total: u64,
    pub(crate) utilization: f64,
    pub(crate) tokens: u64,
    pub(crate) tokens_defaulted: bool,
    pub(crate) seqs: u64,
    pub(crate) seqs_defaulted: bool,
    pub(crate) requests: u64,
    pub(crate) tp: u64,
    pub(crate) stages: u64,
    pub(crate) requested: u64,
    pub(crate) non_torch: u64,
    pub(crate) max_model_len: u64,
    pub(crate) model_len: ModelLen,
    pub(crate) block_size: u64,
    pub(crate) dtype_bytes: u64,
    pub(crate) rotary_dtype_bytes: u64,
    pub(crate) execution: Execution,
    /// The encoder's run, when the profile runs one.
    pub(crate) encoder: Option<EncoderRun>,
    pub(crate) model: ModelFacts,
}

/// The run's settings the encoder's terms read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EncoderRun {
    pub(crate) shape: EncoderShape,
    pub(crate) max_model_len: u64,
    /// Images per prompt.
    pub(crate) limit_per_prompt: u64,
    /// Videos per prompt (0 for a tower without video).
    pub(crate) video_limit_per_prompt: u64,
    pub(crate) tp: u64,
}

impl Worker {
    /// Weights + activation peak + non-torch (`None` on overflow).
    pub fn non_kv(&self) -> Option<u64> {
        self.weights
            .checked_add(self.activation_peak)?
            .checked_add(self.non_torch)
    }
}

/// The run's TP and PP sizes, each at least 1, with one stage circuit per pipeline stage in
/// order; the errors name the sizes as the engine names them (`sizes`, `stages_why`).
pub(crate) fn checked_layout(
    stages: &[StageCircuit<'_>],
    run: &RunSettings,
    sizes: &'static str,
    stages_why: &'static str,
) -> Result<(u64, u64), EngineError> {
    let (tp, pp) = (run.tensor_parallel_size, run.pipeline_parallel_size);
    if tp == 0 || pp == 0 {
        return Err(EngineError::BadSetting {
            what: sizes,
            value: format!("{tp} / {pp}"),
            why: "must be at least 1",
        });
    }
    let in_order = stages.iter().enumerate().all(|(i, s)| s.stage == i as u64);
    if stages.len() as u64 != pp || !in_order {
        return Err(EngineError::BadSetting {
            what: "stage circuits",
            value: format!(
                "stages {:?}",
                stages.iter().map(|s| s.stage).collect::<Vec<_>>()
            ),
            why: stages_why,
        });
    }
    Ok((tp, pp))
}
