//! SGLang's own start-up, which an engine file selects with `[startup] flow = "sglang"`
//! (docs/engines.md, "SGLang"): no profile run; the free memory F measured before loading,
//! the weights' drop W, and a static pool: the KV cache takes what is free once the weights are
//! in, less F x (1 - mem_fraction_static), which stays outside the pool for activations and
//! CUDA graphs (`srt/mem_cache/kv_cache_configurator.py` `_profile_available_bytes`,
//! `srt/model_executor/pool_configurator.py` `calculate_pool_sizes`, SGLang 0.5.23). The
//! defaults (chunked prefill, CUDA-graph batch sizes, `mem_fraction_static`) follow the
//! memory nvidia-smi reports, the device table's `memory_bytes`. Also the context length
//! SGLang derives (`context_len`).
//!
//! Invariants: every number that differs between releases is the engine file's
//! (`flow.rs`); the weights, the cache layers and the expressions are the generic crate's
//! (circuit weights and `weights.created`, `kv_layout::cache_layers`, `formula`); the two
//! runtime figures the source cannot give (the CUDA context and the communicators' memory
//! before F) are the engine file's stated assumptions, never fitted to a log; a layout SGLang
//! sizes in a way not modelled here (a hybrid sliding-window pool without the release's split,
//! a recurrent pool the release's engine file does not size, multimodal models) is refused
//! naming the model; every size is checked u64.

mod context_len;
mod flow;
mod mamba;
mod parallel;
mod pool;
mod quantization;
mod rotary;

pub(crate) use context_len::context_len;
pub(crate) use flow::{FlowDecl, FlowFacts};
pub(crate) use pool::{budget_answers, predict};
pub(crate) use rotary::cache_rows;

/// SGLang's own flags (`python -m sglang.launch_server`), beside the generic settings: the
/// generic `RunSettings` carries `--tp-size`, `--pp-size`, `--chunked-prefill-size`
/// (`max_num_batched_tokens`), `--max-running-requests` (`max_num_seqs`), `--context-length`
/// (`max_model_len`), `--page-size` (`block_size`) and `--disable-cuda-graph`
/// (`enforce_eager`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SglangFlags {
    /// `--mem-fraction-static` (None: SGLang's default for the device and layout).
    pub mem_fraction_static: Option<f64>,
    /// `--max-total-tokens`: a cap on the pool's tokens.
    pub max_total_tokens: Option<u64>,
    /// `--cuda-graph-max-bs`: the largest decode batch captured.
    pub cuda_graph_max_bs: Option<u64>,
    /// `--dp-size` without attention data parallelism: replicas, each a TP x PP group of
    /// GPUs of its own that starts as one alone does (None: 1).
    pub dp_size: Option<u64>,
    /// `--ep-size`: expert-parallel groups of this many ranks inside the TP group (None: 1).
    /// The stage circuits must be imported with them (circuit-hf's `ExpertSplit::Groups`).
    pub ep_size: Option<u64>,
    /// `--enable-ep-moe` (the releases that take it): ep_size set to the TP size.
    pub enable_ep_moe: bool,
    /// `--disable-radix-cache`: no byte of a model whose every layer keeps a full cache
    /// depends on it (the radix tree indexes the pool's slots, its nodes are host objects);
    /// with a hybrid sliding-window or recurrent-state pool it is refused (pool.rs).
    pub disable_radix_cache: bool,
    /// `--mamba-full-memory-ratio`: the state pool's share of the rest against the KV cache's
    /// (None: the release's default; refused where the release holds a fixed count).
    pub mamba_full_memory_ratio: Option<f64>,
    /// `--max-mamba-cache-size`: the state pool's slots K, in place of the release's rule.
    pub max_mamba_cache_size: Option<u64>,
    /// `--swa-full-tokens-ratio`: a hybrid sliding-window pool's SWA tokens per full token
    /// (None: the release's default); another than the default is refused for a model without
    /// a hybrid pool.
    pub swa_full_tokens_ratio: Option<f64>,
    /// `--disable-hybrid-swa-memory`: a full KV cache for every layer of a hybrid
    /// sliding-window class (any other model has one already, as SGLang's overrides of Gemma
    /// 2/3 set it).
    pub disable_hybrid_swa_memory: bool,
    /// `--quantization METHOD` (None: not given, or `none`): taken where it names the
    /// checkpoint's own method, refused otherwise (`quantization.rs`).
    pub quantization: Option<String>,
}

/// What SGLang's start-up computes beyond the generic `Startup`.
#[derive(Debug, Clone, PartialEq)]
pub struct SglangStartup {
    /// The memory nvidia-smi reports, MiB (SGLang's `gpu_mem`, which its defaults follow).
    pub gpu_mib: u64,
    /// `mem_fraction_static` as SGLang resolves it.
    pub mem_fraction_static: f64,
    /// Whether it is SGLang's default (not `--mem-fraction-static`).
    pub mem_fraction_static_default: bool,
    /// The reserve the default leaves outside the static pool, KiB (0 when given, and when the
    /// release's default is a table on the parallel size rather than a reserve).
    pub reserved_kib: u64,
    /// F: free memory before loading as SGLang reads it (the minimum over the world), bytes.
    pub free_before_load: u64,
    /// A: free memory before the pool is sized (the minimum over the world), bytes.
    pub free_before_pool: u64,
    /// F x (1 - mem_fraction_static): what stays outside the pool, bytes.
    pub outside_pool: u64,
    /// A - F x (1 - mem_fraction_static), bytes (0 when it is not positive).
    pub pool_budget: u64,
    /// Bytes per token of each stage's cache layers (the cell).
    pub cell_bytes: Vec<u64>,
    /// Tokens per page.
    pub page_size: u64,
    /// `max_total_num_tokens` as printed (0 when none fit).
    pub max_total_num_tokens: u64,
    /// A hybrid sliding-window pool's SWA tokens ("Use Sliding window memory pool.
    /// full_layer_tokens=max_total_num_tokens, swa_layer_tokens=this"); none without one.
    pub swa_tokens: Option<u64>,
    /// The recurrent-state pool's slots (`max_mamba_cache_size`), none without one.
    pub mamba_slots: Option<u64>,
    /// `max_running_requests` as printed.
    pub max_running_requests: u64,
    /// `context_len` as printed.
    pub context_len: u64,
    /// The longest request served whole: min(context_len - 1, max_total_num_tokens - 1).
    pub max_req_len: u64,
    /// `chunked_prefill_size`.
    pub chunked_prefill_size: u64,
    /// Decode CUDA-graph batch sizes (empty with `--disable-cuda-graph`).
    pub decode_graph_sizes: Vec<u64>,
    /// Prefill CUDA-graph token sizes (empty when prefill graphs are off).
    pub prefill_graph_sizes: Vec<u64>,
    /// Whether the model's attention is MLA (one latent cache, "KV size").
    pub mla: bool,
    /// Per rank.
    pub workers: Vec<SglangWorker>,
    /// The error SGLang raises, as it prints it (None: it starts).
    pub refusal: Option<String>,
    /// `--dp-size`: the replicas, each starting as this one does (each scheduler prints its
    /// own figures, so the ones above are one replica's).
    pub replicas: u64,
    /// The expert-parallel size (`--ep-size`; 1 without expert parallelism): each rank holds
    /// experts / ep routed experts, each split over tp / ep ranks.
    pub ep_size: u64,
    /// The GPUs the start-up takes: tp x pp x replicas.
    pub gpus: u64,
    /// `max_total_num_tokens` over the replicas (SGLang prints it per replica).
    pub replicas_total_tokens: u64,
    /// `max_running_requests` over the replicas (each scheduler runs its own).
    pub replicas_running_requests: u64,
    /// The bound on the free memory's assumed communicator bytes (world > 1), bytes: the
    /// prediction moves by up to mem_fraction_static x this.
    pub communicator_bound: u64,
}

/// What one SGLang rank holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SglangWorker {
    /// Global rank (`pp_stage * tp + tp_rank`).
    pub rank: u64,
    /// Pipeline stage.
    pub pp_stage: u64,
    /// Its free memory before loading, bytes.
    pub free_before_load: u64,
    /// "Load weight end ... mem usage", bytes.
    pub weights: u64,
    /// Allocated after that print and before the pool (the RoPE cache grown to the context).
    pub after_load: u64,
    /// "K size" (MHA) or "KV size" (MLA), bytes.
    pub k_bytes: u64,
    /// "V size" (0 for MLA), bytes.
    pub v_bytes: u64,
    /// The request-to-token table, bytes.
    pub req_to_token: u64,
    /// A hybrid pool's full-to-SWA index map, allocated with the pool, bytes (0 without one).
    pub swa_index_map: u64,
    /// Of `k_bytes` + `v_bytes`, a hybrid pool's sliding-window layers' K and V, bytes (0
    /// without one; SGLang prints that pool on a line of its own).
    pub swa_kv_bytes: u64,
    /// The recurrent-state pool, bytes (0 without one).
    pub recurrent_state: u64,
    /// Left for activations and CUDA graphs after the pool ("Memory pool end. avail mem").
    pub left_for_activations: u64,
}
