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

#![warn(missing_docs)]

pub mod kv_layout;

use circuit_ir::{Circuit, CircuitBuilder, Expr, ExprText};
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{PlanConfig, Planner};
use serde::Deserialize;

pub use kv_layout::{KvGroup, KvLayout, LayerKind};

/// What can go wrong reading an engine profile or predicting a start-up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine file is not valid TOML of the expected shape.
    #[error("{origin}: {message}")]
    Toml {
        /// The file.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// An expression of the engine file does not parse or evaluate.
    #[error("{origin}: {item} = {text:?}: {message}")]
    Expr {
        /// The file.
        origin: String,
        /// The item (e.g. `profile_run.sampler_live.logits`).
        item: String,
        /// The expression.
        text: String,
        /// What failed.
        message: String,
    },
    /// The families or rules of the profile do not load.
    #[error("{origin}: {message}")]
    Registry {
        /// The file.
        origin: String,
        /// The loader's message.
        message: String,
    },
    /// The circuit lacks a dim the profile needs.
    #[error("{circuit}: the circuit has no dim `{dim}` (the engine profile sizes {why} from it)")]
    MissingDim {
        /// The circuit.
        circuit: String,
        /// The dim.
        dim: &'static str,
        /// What the profile sizes from it.
        why: &'static str,
    },
    /// Planning the circuit failed.
    #[error("planning {circuit} at {rows} rows: {message}")]
    Plan {
        /// The circuit.
        circuit: String,
        /// The row count.
        rows: u64,
        /// The planner's message.
        message: String,
    },
    /// A cache layout the profile does not model, or one the engine refuses to build
    /// (docs/engines.md, "KV-cache layout").
    #[error(
        "{circuit}: {what}: the engine profile does not lay this KV cache out; plan it without --engine"
    )]
    NotModelled {
        /// The circuit.
        circuit: String,
        /// What is not modelled, with the value at fault.
        what: String,
    },
    /// A multimodal model whose encoder the profile run would run, for an encoder whose
    /// profile is not modelled (or an engine file without `profile_run.encoder`).
    #[error(
        "{circuit}: the engine's profile run also runs the multimodal encoder on its largest dummy batch and keeps its outputs (vLLM 0.19 gpu_model_runner.py profile_run), which is modelled for Llama 4's, Gemma 3's SigLIP and LLaVA's CLIP towers only; pass --skip-mm-profiling (vLLM's flag) to predict the start-up without it, --language-model-only to load no tower, or plan without --engine"
    )]
    EncoderProfileNotModelled {
        /// The circuit.
        circuit: String,
    },
    /// A size overflowed u64.
    #[error("{what} overflows u64")]
    Overflow {
        /// What was being computed.
        what: String,
    },
    /// A run setting out of range.
    #[error("{what} = {value}: {why}")]
    BadSetting {
        /// The setting.
        what: &'static str,
        /// Its value.
        value: String,
        /// The accepted range.
        why: &'static str,
    },
}

/// One named size expression of the engine file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// Its name.
    pub name: String,
    /// Bytes, an expression over the run's names (see docs/engines.md).
    pub bytes: String,
    /// Counted only for circuits with this dim (e.g. `experts_per_tok` for MoE workspaces).
    #[serde(default)]
    pub when_dim: Option<String>,
    /// Counted only on the pipeline stages it names (e.g. the sampler on the last).
    #[serde(default)]
    pub stage: Option<StageFilter>,
    /// Counted only when the forward runs so (e.g. a compiled graph's held piece inputs).
    #[serde(default)]
    pub execution: Option<Execution>,
    /// A persistent term the profile's forward allocates (a fused-MoE workspace at the first
    /// MoE layer): it is not yet held under the multimodal encoder's peak, which comes first.
    #[serde(default)]
    pub from_forward: bool,
}

/// How the engine runs the model's forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Compiled and captured in CUDA graphs (the engine's default).
    Compiled,
    /// Eager, op by op, with no CUDA graph (vLLM's `--enforce-eager`).
    Eager,
}

/// The pipeline stages a term counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageFilter {
    /// Stage 0 (it embeds the tokens).
    First,
    /// The last stage (it runs the head and the sampler).
    Last,
    /// Every stage but the first (it receives the previous stage's tensors).
    NotFirst,
    /// Every stage but the last.
    NotLast,
}

impl StageFilter {
    fn holds(self, stage: u64, stages: u64) -> bool {
        let last = stage + 1 == stages;
        match self {
            StageFilter::First => stage == 0,
            StageFilter::Last => last,
            StageFilter::NotFirst => stage != 0,
            StageFilter::NotLast => !last,
        }
    }
}

/// Where a worker's terms are summed: its pipeline stage of `stages`, run as `execution` says.
#[derive(Debug, Clone, Copy)]
struct Where {
    stage: u64,
    stages: u64,
    execution: Execution,
}

/// A device as CUDA reports it, with the engine's defaults for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceFacts {
    /// The planner's device name.
    pub name: String,
    /// The name CUDA reports.
    pub cuda_name: String,
    /// Total memory as CUDA reports it, bytes.
    pub cuda_total_bytes: u64,
    /// The engine's default `max_num_batched_tokens` on it.
    pub max_num_batched_tokens: u64,
    /// The engine's default `max_num_seqs` on it.
    pub max_num_seqs: u64,
    /// Streaming multiprocessors (`multi_processor_count`): the `sm_count` of the kernel
    /// families' workspaces, and of terms that size a buffer per SM.
    pub sm_count: u64,
    /// L2 cache size as CUDA reports it (`cudaDeviceProp::l2CacheSize`), bytes: the buffer
    /// a compiled kernel's first-launch autotuning clears between timings.
    pub l2_cache_bytes: u64,
}

/// How the KV cache is sized and laid out (see [`kv_layout`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvCacheFacts {
    /// Tokens per block.
    pub block_size: u64,
    /// Whether the CUDA-graph estimate is subtracted from the KV budget.
    pub subtract_cuda_graph_estimate: bool,
    /// Whether cache layers of different kinds get groups of their own (vLLM's hybrid
    /// KV-cache manager); false: windowed layers beside full ones are kept as full.
    pub hybrid_manager: bool,
    /// The groups hold as many layers as the most numerous kind when it has fewer than this
    /// times the layers of the least numerous one, else as many as the least numerous.
    pub group_size_slack: f64,
    /// Blocks one request of max-model-len takes in a group, per kind.
    pub blocks_per_request: BlocksPerRequest,
    /// Block sizes beside recurrent state.
    pub recurrent: RecurrentFacts,
}

/// Blocks one request of max-model-len takes in a group of each kind: expressions over
/// `max_model_len`, `tokens` (max_num_batched_tokens), `block_size` (the group's) and, for the
/// windowed kinds, `window` (the window or the chunk).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlocksPerRequest {
    /// Full attention.
    pub full: String,
    /// Sliding-window attention.
    pub sliding: String,
    /// Chunked local attention.
    pub chunked: String,
    /// A recurrent state.
    pub recurrent: String,
}

/// Block sizes when the model has recurrent layers: expressions over `block_size` (the
/// default), `max_model_len`, `tokens`, `recurrent_page` (bytes of one layer's recurrent
/// states) and `attention_page_per_token` (bytes per token of one attention layer).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecurrentFacts {
    /// Tokens per attention block (its page must hold `recurrent_page`; the recurrent page is
    /// padded to it).
    pub attention_block_size: String,
    /// Tokens per recurrent block.
    pub block_size: String,
}

/// The profile run's shape and its non-circuit live bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRunFacts {
    /// Rows the lm_head computes (an expression).
    pub logits_rows: String,
    /// Bytes held across the run.
    pub persistent: Vec<Term>,
    /// Bytes the compiled forward holds beside its planned arena at its peak (e.g. a
    /// piecewise-compiled graph's piece inputs, which the caller keeps until the piece returns).
    #[serde(default)]
    pub forward_held: Vec<Term>,
    /// Bytes live at the sampler, after the forward.
    pub sampler_live: Vec<Term>,
    /// The multimodal encoder's run before the forward, for models whose encoder shape the
    /// importer gives ([`ModelFacts::encoder`]); without it such a model is refused unless its
    /// encoder's profile is skipped.
    #[serde(default)]
    pub encoder: Option<EncoderProfileFacts>,
}

/// The profile run's multimodal encoder run: how many dummy items it encodes, and what it
/// holds (docs/engines.md, "The multimodal encoder's profile").
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderProfileFacts {
    /// Items encoded at once (an expression over `tokens`, `max_num_seqs`, `max_model_len`,
    /// `mm_tokens_per_item`, `mm_limit_per_prompt`).
    pub items: String,
    /// Items per prompt when the run gives no limit.
    pub default_limit_per_prompt: u64,
    /// Bytes held from before the encoder runs to the end of the profile run (its inputs).
    pub held: Vec<Term>,
    /// Bytes held from the encoder's end to the end of the profile run (its outputs).
    pub outputs: Vec<Term>,
    /// The encoder's own live bytes at its peak, beside `held`.
    pub peak: Vec<Term>,
}

/// Weights as loaded beyond the circuit's tensors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightFacts {
    /// Tensors the engine creates beyond the checkpoint's (rotary caches, absorbed MLA
    /// projections), per rank.
    pub created: Vec<Term>,
}

/// Memory outside torch's allocator that grows between the engine's init snapshot and the
/// end of the profile run (what vLLM prints as the non-torch increase).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonTorchFacts {
    /// A worker alone (world size 1): no communicator was created before the snapshot.
    pub single_process_bytes: u64,
    /// A worker of a world of more than one rank: the communicators (and the CUDA libraries
    /// they load) exist at the snapshot already.
    pub distributed_bytes: u64,
    /// Added on every rank of a tensor-parallel group of more than one rank: the buffers the
    /// collective library allocates at the group's first large all-reduce.
    pub tensor_parallel_bytes: u64,
}

/// The CUDA-graph memory estimate: the engine captures a few graphs, measures how much device
/// memory the first and the second capture of each mode took, and extrapolates over the sizes
/// it will capture (docs/engines.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaGraphFacts {
    /// The largest captured size, an expression (over `tokens`, `max_num_seqs`, ...).
    pub max_capture_size: String,
    /// Models whose class sets its own largest captured size (vLLM's per-class config
    /// updates), by the class the engine resolves ([`ModelFacts::architecture`]).
    #[serde(default)]
    pub architecture: Vec<ArchitectureCaptureSize>,
    /// The candidate sizes, as ranges, each clipped at `max_capture_size`.
    pub capture_sizes: Vec<SizeRange>,
    /// The modes captured, each with the sizes it keeps.
    pub mode: Vec<CaptureMode>,
    /// Memory the first (largest) capture of a mode takes, an expression.
    pub first_capture_bytes: String,
    /// Memory each further capture takes, an expression.
    pub per_capture_bytes: String,
    /// The smallest per-capture figure the engine uses.
    pub min_per_capture_bytes: u64,
}

/// A model class's own largest captured size.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureCaptureSize {
    /// The class, as `architectures` names it (`GptOssForCausalLM`).
    pub name: String,
    /// Its largest captured size, an expression replacing `max_capture_size`.
    pub max_capture_size: String,
}

/// Sizes `start, start + step, ...` up to `stop` (None: up to the largest captured size).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRange {
    /// The first size.
    pub start: u64,
    /// The last size, inclusive.
    #[serde(default)]
    pub stop: Option<u64>,
    /// The step (default 1).
    #[serde(default = "one")]
    pub step: u64,
}

fn one() -> u64 {
    1
}

/// A capture mode and the sizes it captures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureMode {
    /// Its name (`PIECEWISE`, `FULL`).
    pub name: String,
    /// The largest size of this mode, an expression (sizes above it are not captured).
    pub largest: String,
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

/// An engine file, typed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFile {
    /// Schema version (1).
    pub schema: u32,
    /// The engine's name (`vllm`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// KV sizing.
    pub kv_cache: KvCacheFacts,
    /// Devices.
    pub device: Vec<DeviceFacts>,
    /// The profile run.
    pub profile_run: ProfileRunFacts,
    /// Weights as loaded.
    pub weights: WeightFacts,
    /// Non-torch memory.
    pub non_torch: NonTorchFacts,
    /// The CUDA-graph estimate.
    pub cuda_graph: CudaGraphFacts,
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
    pub encoder: Option<EncoderFacts>,
}

/// What the profile run feeds a multimodal encoder and gets back (the importer's reading of
/// the model and its processor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderFacts {
    /// Embeddings one item of the largest size gives the language model.
    pub tokens_per_item: u64,
    /// Encoder sequences (tiles) one item is cut into.
    pub tiles_per_item: u64,
    /// Rows of one tile's sequence.
    pub rows_per_tile: u64,
    /// Input values of one tile.
    pub pixels_per_tile: u64,
    /// The encoder's hidden size (whole on every rank).
    pub hidden: u64,
    /// Its attention heads, before tensor parallelism.
    pub heads: u64,
    /// The size of one head.
    pub head_dim: u64,
    /// Its MLP width, before tensor parallelism.
    pub ffn: u64,
    /// The width of the embeddings it writes (the language model's hidden size).
    pub output_hidden: u64,
    /// Whether its attention rotates q and k through float32 complex copies (Llama 4's).
    pub complex_rotary: bool,
    /// Tensors of the MLP's width live at its activation (fc1's output and the activation's).
    pub activation_tensors: u64,
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
    fn block_size(&self, run: &RunSettings) -> Result<u64, EngineError> {
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

/// The largest `x` in 1..=`top` that `passes`, None when 1 does not (or `top` is 0), by
/// bisection: `passes` must hold on a prefix of 1..=`top` (what fits at some size fits at every
/// smaller one), so it runs about log2(top) times.
fn largest_passing(
    top: u64,
    mut passes: impl FnMut(u64) -> Result<bool, EngineError>,
) -> Result<Option<u64>, EngineError> {
    if top == 0 || !passes(1)? {
        return Ok(None);
    }
    if passes(top)? {
        return Ok(Some(top));
    }
    // passes(lo), !passes(hi).
    let (mut lo, mut hi) = (1u64, top);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo))
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
    facts: EncoderFacts,
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

/// Answers to questions the engine cannot answer before booting, from one prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetAnswers {
    /// The largest max-model-len that starts (None: nothing starts): the KV tokens of the
    /// start-up (the profile run does not depend on max-model-len), at most the model's
    /// `longest_max_model_len`, above which vLLM refuses the length.
    pub largest_max_model_len: Option<u64>,
    /// The smallest gpu-memory-utilization whose KV cache holds `target_kv_tokens` (None when
    /// even 1.0 does not).
    pub utilization_for_target: Option<f64>,
}

/// The smallest tensor-parallel size that starts, with its start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct SmallestTp {
    /// The sizes tried, in order: those dividing the attention heads, up to the limit.
    pub tried: Vec<u64>,
    /// The first that starts, with its start-up (None: none does).
    pub found: Option<(u64, Startup)>,
}

impl EngineProfile {
    /// The largest max-model-len that starts under `run`, and the utilization needed for a KV
    /// cache of `target_kv_tokens` tokens.
    pub fn budget_answers(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
        target_kv_tokens: u64,
    ) -> Result<BudgetAnswers, EngineError> {
        let startup = self.predict_layout(stages, run)?;
        let overflow = || EngineError::Overflow {
            what: "bytes for the target KV tokens".to_owned(),
        };
        // Blocks are whole and the printed tokens count a block per group: the target needs
        // ceil(target / block size) x groups of them on every worker, and the worker that
        // needs the most memory sets the utilization. The CUDA-graph estimate counts where the
        // engine subtracts it.
        let blocks = startup
            .kv_layout
            .blocks_for_tokens(target_kv_tokens)
            .ok_or_else(overflow)?;
        let graphs = |w: &Worker| {
            if self.file.kv_cache.subtract_cuda_graph_estimate {
                w.cuda_graph.total
            } else {
                0
            }
        };
        let needed = startup
            .workers
            .iter()
            .map(|w| {
                w.non_kv()?
                    .checked_add(graphs(w))?
                    .checked_add(blocks.checked_mul(w.block_bytes)?)
            })
            .try_fold(0u64, |acc, n| n.map(|n| acc.max(n)))
            .ok_or_else(overflow)?;
        let utilization = needed as f64 / startup.device_total as f64;
        let fits = !matches!(
            startup.verdict,
            Verdict::NoKvMemory { .. } | Verdict::MaxModelLenAboveModel { .. }
        ) && startup.kv_cache_tokens > 0;
        let largest_max_model_len = if fits {
            self.largest_len(stages, run, &startup)?
        } else {
            None
        };
        Ok(BudgetAnswers {
            largest_max_model_len,
            utilization_for_target: (utilization <= 1.0).then_some(utilization),
        })
    }

    /// The largest max-model-len, at most `longest_max_model_len`, one request of which the
    /// start-up's blocks hold in every group (vLLM's check, kv_cache_utils.py
    /// _check_enough_kv_cache_memory). The blocks do not depend on the length (the profile run
    /// and the pages do not), the blocks a request takes grow with it: a bisection.
    fn largest_len(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
        startup: &Startup,
    ) -> Result<Option<u64>, EngineError> {
        let tokens = startup.max_num_batched_tokens;
        let block_size = self.block_size(run)?;
        let fits = |len: u64| -> Result<bool, EngineError> {
            let layout = self.kv_layout(stages, &run.model, block_size, len, tokens)?;
            Ok(layout.blocks_per_request <= startup.kv_blocks)
        };
        largest_passing(run.model.longest_max_model_len, fits)
    }

    /// The largest max-num-seqs that starts under `run` (its `max_num_seqs` is ignored), None
    /// when even one sequence does not. vLLM refuses more sequences than batched tokens
    /// (config/scheduler.py: max_num_batched_tokens >= max_num_seqs), so the search is over
    /// 1..=max_num_batched_tokens; more sequences never need less memory (the sampler's rows
    /// grow), so it bisects, about log2(tokens) predictions.
    pub fn largest_max_num_seqs(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Option<u64>, EngineError> {
        let tokens = match run.max_num_batched_tokens {
            Some(t) => t,
            None => self.device(&run.device)?.max_num_batched_tokens,
        };
        let starts = |seqs: u64| -> Result<bool, EngineError> {
            let at = RunSettings {
                max_num_seqs: Some(seqs),
                ..run.clone()
            };
            let s = self.predict_layout(stages, &at)?;
            Ok(s.verdict == Verdict::Starts)
        };
        largest_passing(tokens, starts)
    }

    /// The smallest tensor-parallel size that starts under `run` (its tensor-parallel size is
    /// ignored): the sizes from 1 to `limit` that divide the model's `num_attention_heads`,
    /// in order. `stages_for(tp)` gives the layout's per-stage circuits at that size (the
    /// caller imports them); a size whose import fails is skipped, as one the model cannot be
    /// sharded to.
    pub fn smallest_tp<F>(
        &self,
        run: &RunSettings,
        limit: u64,
        mut stages_for: F,
    ) -> Result<SmallestTp, EngineError>
    where
        F: FnMut(u64) -> Option<Vec<Circuit>>,
    {
        let heads = run.model.num_attention_heads;
        let mut tried = Vec::new();
        for tp in (1..=limit).filter(|tp| heads.is_multiple_of(*tp)) {
            tried.push(tp);
            let Some(circuits) = stages_for(tp) else {
                continue;
            };
            let stages = StageCircuit::in_order(&circuits);
            let at = RunSettings {
                tensor_parallel_size: tp,
                ..run.clone()
            };
            let startup = self.predict_layout(&stages, &at)?;
            if startup.verdict == Verdict::Starts {
                return Ok(SmallestTp {
                    tried,
                    found: Some((tp, startup)),
                });
            }
        }
        Ok(SmallestTp { tried, found: None })
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
