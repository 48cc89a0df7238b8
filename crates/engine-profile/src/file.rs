//! The engine file (`engines/<engine>/engine.toml`), typed: the runtime facts the kernel
//! families cannot express, each a number or an expression over the run's names.
//!
//! Invariants: every table denies unknown keys, so a misspelt fact is an error, not a default;
//! expressions stay text here and are parsed where they are evaluated, with the item's name for
//! messages (`EngineProfile::eval`).

use serde::Deserialize;

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
    pub(crate) fn holds(self, stage: u64, stages: u64) -> bool {
        let last = stage + 1 == stages;
        match self {
            StageFilter::First => stage == 0,
            StageFilter::Last => last,
            StageFilter::NotFirst => stage != 0,
            StageFilter::NotLast => !last,
        }
    }
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

/// How the KV cache is sized and laid out (see [`crate::kv_layout`]).
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
    /// importer gives ([`crate::ModelFacts::encoder`]); without it such a model is refused unless its
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
    /// updates), by the class the engine resolves ([`crate::ModelFacts::architecture`]).
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
