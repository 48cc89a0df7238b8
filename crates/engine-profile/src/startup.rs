//! One start-up predicted: the run's settings and the model's facts in, per worker the weights
//! as loaded, the profile run's activation peak (forward, sampler and multimodal encoder
//! phases), non-torch memory, KV-cache bytes and blocks, the CUDA-graph estimate, and a verdict.
//!
//! Invariants: the forward's live bytes come from planning the stage's circuit at the profile
//! run's rows (memory-plan), never from a closed formula; every sum is checked; the KV blocks of
//! a layout are the minimum over its workers, as the engine gives every rank the smallest count.

use circuit_ir::{Circuit, CircuitBuilder, EncoderShape, ExprText};
use memory_plan::{PlanConfig, Planner};

use crate::kv_layout::KvLayout;
use crate::{DeviceFacts, EngineError, EngineProfile, Execution, Term, Where};

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
    /// The device (a name of the engine file's devices).
    pub device: String,
    /// Tensor-parallel size.
    pub tensor_parallel_size: u64,
    /// Pipeline-parallel size.
    pub pipeline_parallel_size: u64,
    /// Fraction of the device's total the engine may use.
    pub gpu_memory_utilization: f64,
    /// Batched tokens of the profile run (None: the device's default).
    pub max_num_batched_tokens: Option<u64>,
    /// Sequences (None: the device's default).
    pub max_num_seqs: Option<u64>,
    /// Max model length (None: the model's `default_max_model_len`).
    pub max_model_len: Option<u64>,
    /// The profile run leaves the multimodal encoder out (vLLM's `--skip-mm-profiling`): the
    /// only way a model with a vision encoder is predicted, as the encoder's profile is not
    /// modelled.
    pub skip_mm_profiling: bool,
    /// The forward runs eagerly and no CUDA graph is captured (vLLM's `--enforce-eager`):
    /// terms count by their `execution`, and the CUDA-graph estimate is none.
    pub enforce_eager: bool,
    /// Multimodal items per prompt (vLLM's `--limit-mm-per-prompt` for the encoder's modality;
    /// None: the engine file's default). A limit of 0 means no encoder: import the model
    /// without its tower instead.
    pub mm_limit_per_prompt: Option<u64>,
    /// Tokens per KV-cache block (vLLM's `--block-size`; None: the engine file's
    /// `kv_cache.block_size`). A model with recurrent state raises it until an attention page
    /// holds a state, as for the default.
    pub block_size: Option<u64>,
    /// The model's sizes as its configuration class gives them (config.json's values, or the
    /// class defaults it omits): the importer knows them, this crate reads no model class and
    /// no config file.
    pub model: ModelFacts,
}

/// What the profile needs of the model beyond its circuits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFacts {
    /// The class the engine resolves the config to (`architectures`: `LlamaForCausalLM`,
    /// `Llama4ForConditionalGeneration`); the engine file keys per-class settings by it.
    pub architecture: String,
    /// `max_position_embeddings`: the default max model length, and the rotary cache's rows.
    pub max_position_embeddings: u64,
    /// The longest max model length the engine accepts: `max_position_embeddings` extended by
    /// the rope scaling (vLLM's derived max_model_len, config/model.py
    /// `_get_and_verify_max_len`; circuit-hf's `ContextLimits`).
    pub longest_max_model_len: u64,
    /// The max model length the engine takes when none is given (the longest, except under
    /// longrope scaling: the original context).
    pub default_max_model_len: u64,
    /// The whole vocabulary (the sampler sees every rank's logits gathered).
    pub vocab_size: u64,
    /// Attention heads (the tensor-parallel sizes that shard them evenly).
    pub num_attention_heads: u64,
    /// `attention_chunk_size` when the windowed layers attend within chunks (Llama 4's chunked
    /// local attention), None when a window is a sliding window.
    pub attention_chunk_size: Option<u64>,
    /// Bytes per element of the rotary cos/sin cache (the model dtype's, unless the model's
    /// class builds the cache in a dtype of its own).
    pub rotary_cache_dtype_bytes: u64,
    /// Whether the model has a multimodal encoder (a vision tower), which vLLM's profile run
    /// also runs (gpu_model_runner.py `profile_run`: `embed_multimodal` on the largest dummy
    /// batch, its outputs kept in the encoder cache through the forward and the sampler).
    pub vision_encoder: bool,
    /// The encoder's dummy item and shape, for the encoders whose profile is modelled.
    pub encoder: Option<EncoderShape>,
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
    /// The device total as CUDA reports it.
    pub device_total: u64,
    /// ceil(total x utilization).
    pub requested: u64,
    /// Batched tokens of the profile run.
    pub max_num_batched_tokens: u64,
    /// Sequences.
    pub max_num_seqs: u64,
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
    /// Whether the engine takes the estimate from the KV budget.
    pub cuda_graph_subtracted: bool,
    /// The verdict.
    pub verdict: Verdict,
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
        let (tp, pp) = (run.tensor_parallel_size, run.pipeline_parallel_size);
        if tp == 0 || pp == 0 {
            return Err(EngineError::BadSetting {
                what: "tensor_parallel_size / pipeline_parallel_size",
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
                why: "one circuit per pipeline stage, stages 0..pipeline_parallel_size in order",
            });
        }
        if !(run.gpu_memory_utilization > 0.0 && run.gpu_memory_utilization <= 1.0) {
            return Err(EngineError::BadSetting {
                what: "gpu_memory_utilization",
                value: run.gpu_memory_utilization.to_string(),
                why: "must be in (0, 1]",
            });
        }
        let encoder_runs = run.model.vision_encoder && !run.skip_mm_profiling;
        let encoder_facts = match (
            encoder_runs,
            run.model.encoder,
            &self.file.profile_run.encoder,
        ) {
            (false, _, _) => None,
            (true, Some(facts), Some(profile)) => Some((facts, profile.default_limit_per_prompt)),
            (true, _, _) => {
                return Err(EngineError::EncoderProfileNotModelled {
                    circuit: stages[0].circuit.name().to_owned(),
                });
            }
        };
        let device = self.device(&run.device)?;
        let tokens = run
            .max_num_batched_tokens
            .unwrap_or(device.max_num_batched_tokens);
        let seqs = run.max_num_seqs.unwrap_or(device.max_num_seqs);
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
        let cfg = &run.model;
        let max_model_len = run.max_model_len.unwrap_or(cfg.default_max_model_len);
        let requested = (device.cuda_total_bytes as f64 * run.gpu_memory_utilization).ceil() as u64;
        let facts = &self.file.non_torch;
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
        let shape = Shape {
            tokens,
            seqs,
            requests: tokens.min(seqs),
            stages: pp,
            requested,
            non_torch,
            execution: if run.enforce_eager {
                Execution::Eager
            } else {
                Execution::Compiled
            },
            encoder: encoder_facts.map(|(facts, default_limit)| EncoderRun {
                facts,
                max_model_len,
                limit_per_prompt: run.mm_limit_per_prompt.unwrap_or(default_limit),
                tp,
            }),
        };
        let layout = self.kv_layout(stages, cfg, self.block_size(run)?, max_model_len, tokens)?;
        let mut workers = Vec::new();
        for (stage, &block_bytes) in stages.iter().zip(&layout.stage_block_bytes) {
            let one = self.stage_worker(stage, cfg, &shape, device, block_bytes)?;
            for tp_rank in 0..tp {
                let rank = stage
                    .stage
                    .checked_mul(tp)
                    .and_then(|r| r.checked_add(tp_rank))
                    .ok_or_else(|| overflow("rank"))?;
                workers.push(Worker {
                    rank,
                    tp_rank,
                    ..one.clone()
                });
            }
        }
        // vLLM gives every worker the smallest block count of all (kv_cache_utils.py
        // get_kv_cache_configs: "the smallest among all ranks").
        let blocks = workers.iter().map(|w| w.blocks).min().unwrap_or(0);
        let kv_cache_tokens = layout.tokens(blocks).ok_or_else(|| overflow("KV tokens"))?;
        // kv_cache_utils.py get_max_concurrency_for_kv_cache_config: num_blocks over the blocks
        // one request of max-model-len takes in every group.
        let max_concurrency = if layout.blocks_per_request == 0 {
            0.0
        } else {
            blocks as f64 / layout.blocks_per_request as f64
        };
        let short = workers
            .iter()
            .map(|w| w.non_kv().map(|n| n.saturating_sub(requested)))
            .try_fold(0u64, |acc, n| n.map(|n| acc.max(n)))
            .ok_or_else(|| overflow("non-KV bytes"))?;
        let verdict = if max_model_len > cfg.longest_max_model_len {
            Verdict::MaxModelLenAboveModel {
                max_model_len,
                longest: cfg.longest_max_model_len,
            }
        } else if workers.iter().any(|w| w.kv_cache == 0) {
            Verdict::NoKvMemory { short_by: short }
        } else if blocks < layout.blocks_per_request {
            // kv_cache_utils.py _check_enough_kv_cache_memory: a worker's memory must hold one
            // request of max-model-len in every group.
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
            engine: self.file.name.clone(),
            version: self.file.version.clone(),
            device_total: device.cuda_total_bytes,
            requested,
            max_num_batched_tokens: tokens,
            max_num_seqs: seqs,
            max_model_len,
            workers,
            kv_cache_tokens,
            max_concurrency,
            kv_blocks: blocks,
            kv_layout: layout,
            cuda_graph_estimate,
            cuda_graph_subtracted: self.file.kv_cache.subtract_cuda_graph_estimate,
            verdict,
        })
    }

    /// What a worker of `stage` allocates (rank fields 0: the caller sets them).
    fn stage_worker(
        &self,
        stage: &StageCircuit<'_>,
        cfg: &ModelFacts,
        shape: &Shape,
        device: &DeviceFacts,
        block_bytes: u64,
    ) -> Result<Worker, EngineError> {
        let circuit = stage.circuit;
        let at = Where {
            stage: stage.stage,
            stages: shape.stages,
            execution: shape.execution,
        };
        let dim = |name: &str| circuit.dim(name);
        let need = |name: &'static str, why: &'static str| {
            dim(name).ok_or_else(|| EngineError::MissingDim {
                circuit: circuit.name().to_owned(),
                dim: name,
                why,
            })
        };
        let hidden = need("hidden", "the engine file's activation terms")?;
        let vocab = need("vocab", "the logits")?;
        let head_dim = need("head_dim", "the rotary cache")?;
        let rotary_dim = dim("qk_rope_head_dim").unwrap_or(head_dim);
        let dtype_bytes = model_dtype_bytes(circuit);
        let mut names: Vec<(&str, u64)> = vec![
            ("tokens", shape.tokens),
            ("max_num_seqs", shape.seqs),
            ("requests", shape.requests),
            ("hidden", hidden),
            ("vocab", vocab),
            ("vocab_size", cfg.vocab_size),
            ("dtype_bytes", dtype_bytes),
            ("rotary_dim", rotary_dim),
            ("rotary_dtype_bytes", cfg.rotary_cache_dtype_bytes),
            ("max_position_embeddings", cfg.max_position_embeddings),
            ("l2_cache_bytes", device.l2_cache_bytes),
            ("sm_count", device.sm_count),
        ];
        for (n, v) in circuit.dims() {
            if !names.iter().any(|(k, _)| k == n) {
                names.push((n.as_str(), *v));
            }
        }
        let overflow = |what: &str| EngineError::Overflow {
            what: what.to_owned(),
        };

        let created = self.sum_terms(
            "weights.created",
            &self.file.weights.created,
            &names,
            circuit,
            at,
        )?;
        let weights = circuit
            .weight_bytes()
            .checked_add(created)
            .ok_or_else(|| overflow("weights"))?;

        let logits_rows = self.eval(
            "profile_run.logits_rows",
            &self.file.profile_run.logits_rows,
            &names,
        )?;
        let (forward_live, kernel_launches) =
            self.forward_live(circuit, shape.tokens, logits_rows, device.sm_count)?;
        let profile_run = &self.file.profile_run;
        let sampler_live = self.sum_terms(
            "profile_run.sampler_live",
            &profile_run.sampler_live,
            &names,
            circuit,
            at,
        )?;
        // Persistent terms held before the forward (under a multimodal encoder's peak too), and
        // all of them (from the forward on).
        let persistent_of = |from_forward: bool| {
            self.sum_terms(
                "profile_run.persistent",
                profile_run
                    .persistent
                    .iter()
                    .filter(|t| t.from_forward == from_forward),
                &names,
                circuit,
                at,
            )
        };
        let persistent_before_forward = persistent_of(false)?;
        let persistent = persistent_before_forward
            .checked_add(persistent_of(true)?)
            .ok_or_else(|| overflow("persistent bytes"))?;
        let forward_held = self.sum_terms(
            "profile_run.forward_held",
            &profile_run.forward_held,
            &names,
            circuit,
            at,
        )?;
        let forward = forward_live
            .checked_add(forward_held)
            .ok_or_else(|| overflow("forward bytes"))?;
        let encoder = self.encoder_run(shape, &names, circuit, at)?;
        // The encoder runs first, beside its inputs; its outputs stay, with its inputs, through
        // the forward and the sampler (profile_run keeps both until it returns).
        let after_encoder = encoder
            .held
            .checked_add(encoder.outputs)
            .and_then(|v| v.checked_add(forward.max(sampler_live)))
            .ok_or_else(|| overflow("activation peak"))?;
        let during_encoder = persistent_before_forward
            .checked_add(encoder.held)
            .and_then(|v| v.checked_add(encoder.peak))
            .ok_or_else(|| overflow("activation peak"))?;
        let after_encoder = persistent
            .checked_add(after_encoder)
            .ok_or_else(|| overflow("activation peak"))?;
        let activation_peak = after_encoder.max(during_encoder);
        // The part that sets the peak: the encoder only when above all after it, else the
        // forward (on a tie) or the sampler.
        let peak_set_by = if during_encoder > after_encoder {
            PeakSetBy::Encoder
        } else if forward >= sampler_live {
            PeakSetBy::Forward
        } else {
            PeakSetBy::Sampler
        };

        let non_kv = weights
            .checked_add(activation_peak)
            .and_then(|v| v.checked_add(shape.non_torch))
            .ok_or_else(|| overflow("non-KV bytes"))?;
        names.push(("kernel_launches", kernel_launches));
        let cuda_graph = match shape.execution {
            Execution::Compiled => self.cuda_graph(&cfg.architecture, &names)?,
            // vLLM's --enforce-eager sets cudagraph_mode NONE and profiles no capture
            // (config/vllm.py; gpu_worker.py determine_available_memory skips
            // profile_cudagraph_memory under enforce_eager).
            Execution::Eager => CudaGraphEstimate::default(),
        };
        let mut kv_cache = shape.requested.saturating_sub(non_kv);
        if self.file.kv_cache.subtract_cuda_graph_estimate {
            kv_cache = kv_cache.saturating_sub(cuda_graph.total);
        }
        let blocks = kv_cache.checked_div(block_bytes).unwrap_or(0);
        Ok(Worker {
            rank: 0,
            tp_rank: 0,
            pp_stage: stage.stage,
            weights,
            activation_peak,
            peak_set_by,
            forward_live,
            forward_held,
            sampler_live,
            persistent,
            encoder,
            non_torch: shape.non_torch,
            kv_cache,
            blocks,
            block_bytes,
            kernel_launches,
            cuda_graph,
        })
    }

    /// The encoder's run on a worker: the items its budget allows and the bytes of the engine
    /// file's encoder terms, over the run's names and the encoder's (all zero when the
    /// profile runs no encoder).
    fn encoder_run(
        &self,
        shape: &Shape,
        names: &[(&str, u64)],
        circuit: &Circuit,
        at: Where,
    ) -> Result<EncoderBytes, EngineError> {
        let (Some(run), Some(facts)) = (shape.encoder, &self.file.profile_run.encoder) else {
            return Ok(EncoderBytes::default());
        };
        let e = run.facts;
        let mut names = names.to_vec();
        names.extend([
            ("max_model_len", run.max_model_len),
            ("tp", run.tp),
            ("mm_limit_per_prompt", run.limit_per_prompt),
            ("mm_tokens_per_item", e.tokens_per_item),
            ("mm_tiles_per_item", e.tiles_per_item),
            ("mm_rows_per_tile", e.rows_per_tile),
            ("mm_pixels_per_tile", e.pixels_per_tile),
            ("mm_output_hidden", e.output_hidden),
            ("vision_hidden", e.hidden),
            ("vision_heads", e.heads),
            ("vision_head_dim", e.head_dim),
            ("vision_ffn", e.ffn),
            ("vision_complex_rotary", u64::from(e.complex_rotary)),
            ("vision_activation_tensors", e.activation_tensors),
        ]);
        let items = self.eval("profile_run.encoder.items", &facts.items, &names)?;
        names.push(("mm_items", items));
        let sum =
            |section: &str, terms: &[Term]| self.sum_terms(section, terms, &names, circuit, at);
        Ok(EncoderBytes {
            items,
            held: sum("profile_run.encoder.held", &facts.held)?,
            outputs: sum("profile_run.encoder.outputs", &facts.outputs)?,
            peak: sum("profile_run.encoder.peak", &facts.peak)?,
        })
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
            None => Ok(self.file.kv_cache.block_size),
        }
    }

    /// The CUDA-graph estimate: the capture sizes of each mode (the engine file's ranges
    /// clipped at the largest captured size, the model class's own when the file gives one,
    /// and at the mode's largest), then the first capture once plus each further capture of
    /// every mode.
    fn cuda_graph(
        &self,
        architecture: &str,
        names: &[(&str, u64)],
    ) -> Result<CudaGraphEstimate, EngineError> {
        let facts = &self.file.cuda_graph;
        let overflow = || EngineError::Overflow {
            what: "CUDA-graph estimate".to_owned(),
        };
        let max = match facts.architecture.iter().find(|a| a.name == architecture) {
            Some(own) => self.eval(
                &format!("cuda_graph.architecture.{}.max_capture_size", own.name),
                &own.max_capture_size,
                names,
            )?,
            None => self.eval(
                "cuda_graph.max_capture_size",
                &facts.max_capture_size,
                names,
            )?,
        };
        let mut sizes: Vec<u64> = Vec::new();
        for r in &facts.capture_sizes {
            if r.step == 0 {
                return Err(EngineError::Toml {
                    origin: self.origin.clone(),
                    message: format!(
                        "cuda_graph.capture_sizes: range from {} has step 0: must be positive",
                        r.start
                    ),
                });
            }
            let stop = r.stop.map_or(max, |s| s.min(max));
            // A bound on the work: an engine captures tens of sizes, not millions.
            if stop.saturating_sub(r.start) / r.step > 1 << 16 {
                return Err(EngineError::Toml {
                    origin: self.origin.clone(),
                    message: format!(
                        "cuda_graph.capture_sizes: range from {} to {stop} step {} holds more than 65536 sizes",
                        r.start, r.step
                    ),
                });
            }
            let mut size = r.start;
            while size <= stop {
                sizes.push(size);
                size = size.checked_add(r.step).ok_or_else(overflow)?;
            }
        }
        sizes.sort_unstable();
        sizes.dedup();
        let mut captures = Vec::new();
        for mode in &facts.mode {
            let item = format!("cuda_graph.mode.{}.largest", mode.name);
            let largest = self.eval(&item, &mode.largest, names)?;
            let count = sizes.iter().filter(|&&s| s <= largest).count() as u64;
            captures.push((mode.name.clone(), count));
        }
        let first = self.eval(
            "cuda_graph.first_capture_bytes",
            &facts.first_capture_bytes,
            names,
        )?;
        let per = self
            .eval(
                "cuda_graph.per_capture_bytes",
                &facts.per_capture_bytes,
                names,
            )?
            .max(facts.min_per_capture_bytes);
        let mut total = if captures.iter().any(|(_, n)| *n > 0) {
            first
        } else {
            0
        };
        for (_, n) in &captures {
            let further = n.saturating_sub(1).checked_mul(per).ok_or_else(overflow)?;
            total = total.checked_add(further).ok_or_else(overflow)?;
        }
        Ok(CudaGraphEstimate {
            captures,
            first_capture: first,
            per_capture: per,
            total,
        })
    }

    /// The forward's live bytes at `tokens` rows with the head at `logits_rows` rows (the
    /// planned activation arena of the circuit as the profile run shapes it), and its kernel
    /// launches (the fusion plan's groups that run a kernel).
    fn forward_live(
        &self,
        circuit: &Circuit,
        tokens: u64,
        logits_rows: u64,
        sm_count: u64,
    ) -> Result<(u64, u64), EngineError> {
        let plan_err = |message: String| EngineError::Plan {
            circuit: circuit.name().to_owned(),
            rows: tokens,
            message,
        };
        let shaped = profile_circuit(circuit, logits_rows).map_err(plan_err)?;
        let planner = Planner::new(
            &shaped,
            &self.families,
            &self.rules,
            self.rules.defaults(),
            PlanConfig::new(sm_count),
        )
        .map_err(|e| plan_err(e.to_string()))?;
        let plan = planner.plan(tokens).map_err(|e| plan_err(e.to_string()))?;
        // The kernel-less groups (weights_only nodes: a vision tower, MTP layers; the engine
        // plans with no other placeholder) launch nothing a graph would record.
        let launches = plan.groups - plan.placeholders;
        Ok((plan.totals.activations, launches as u64))
    }
}

/// The run's shape shared by every stage.
struct Shape {
    tokens: u64,
    seqs: u64,
    requests: u64,
    stages: u64,
    requested: u64,
    non_torch: u64,
    execution: Execution,
    /// The encoder's run, when the profile runs one.
    encoder: Option<EncoderRun>,
}

/// The run's settings the encoder's terms read.
#[derive(Debug, Clone, Copy)]
struct EncoderRun {
    facts: EncoderShape,
    max_model_len: u64,
    limit_per_prompt: u64,
    tp: u64,
}

impl Worker {
    /// Weights + activation peak + non-torch (`None` on overflow).
    pub fn non_kv(&self) -> Option<u64> {
        self.weights
            .checked_add(self.activation_peak)?
            .checked_add(self.non_torch)
    }
}

/// The circuit as the profile run computes it: the head's nodes after the final norm (lm_head,
/// soft-cap) at `min(n, logits_rows)` rows, the last token of each request.
fn profile_circuit(circuit: &Circuit, logits_rows: u64) -> Result<Circuit, String> {
    let mut decl = circuit.decl().clone();
    for block in decl.blocks.iter_mut().filter(|b| b.name == "head") {
        for node in block.nodes.iter_mut().filter(|n| n.op != "rms_norm") {
            for out in &mut node.outputs {
                out.rows = ExprText::from(format!("min({}, {logits_rows})", out.rows.as_str()));
            }
        }
    }
    CircuitBuilder::from_decl(decl, circuit.name())
        .build()
        .map_err(|e| e.to_string())
}

/// Bytes per element of the circuit's model dtype: the format of its first input's consumer
/// output, i.e. the embedding's activations.
fn model_dtype_bytes(circuit: &Circuit) -> u64 {
    let format = circuit
        .decl()
        .blocks
        .iter()
        .flat_map(|b| b.nodes.iter())
        .flat_map(|n| n.outputs.iter())
        .next()
        .map(|o| o.format.as_str())
        .unwrap_or("bf16");
    match format {
        "f32" => 4,
        _ => 2,
    }
}
