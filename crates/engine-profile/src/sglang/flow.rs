//! SGLang's start-up facts as an engine file gives them (`[startup.sglang]`,
//! docs/engines.md "SGLang"), and compiled ([`FlowFacts`]): the defaults per nvidia-smi
//! memory tier, the `mem_fraction_static` reserve, the CUDA-graph batch sizes, the
//! `max_running_requests` rule, the pool's extra rows, what grows after loading, the runtime
//! assumptions about free memory, and SGLang's own messages per release.
//!
//! Invariants: every table denies unknown keys; every expression is compiled once here; the
//! tiers are ordered by `below_mib` with exactly one last tier without it; a value no run could
//! use (a page of 0 tokens, a step of 0, more than 6 decimals) is refused naming the item.

use serde::Deserialize;

use super::mamba::{Mamba, MambaDecl};
use crate::EngineError;
use crate::file::SizeRange;
use crate::formula::{Env, Formula};

/// `[startup.sglang]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowDecl {
    /// Runtime assumptions about the free memory SGLang measures before loading.
    pub free_memory: FreeMemoryDecl,
    /// Defaults per nvidia-smi memory tier, in order; the last has no `below_mib`.
    pub tier: Vec<TierDecl>,
    /// The defaults when nvidia-smi's memory is not known.
    pub unknown_memory: TierValuesDecl,
    /// Whether a default decode max batch size is clamped to `--max-running-requests`.
    pub clamp_decode_max_bs_to_running_requests: bool,
    /// `mem_fraction_static`'s default.
    pub mem_fraction_static: MemFractionDecl,
    /// CUDA graphs.
    pub cuda_graph: GraphDecl,
    /// The pool.
    pub pool: PoolDecl,
    /// `max_running_requests`.
    pub max_running_requests: RunningDecl,
    /// The rotary caches' format and the classes that build theirs otherwise.
    pub rope: RopeDecl,
    /// Model classes SGLang gives a hybrid sliding-window pool: sized by `hybrid_swa_split`
    /// when the release gives it, else refused.
    pub hybrid_swa_architectures: Vec<String>,
    /// How those classes' pool is split into full and sliding-window tokens (SGLang
    /// 0.4.9.post3 to 0.5.6: from the all-layer token count); none: refused.
    #[serde(default)]
    pub hybrid_swa_split: Option<HybridSplitDecl>,
    /// How the state pool of a model with per-sequence recurrent state (Gated DeltaNet) is
    /// sized beside the KV cache; none, or a class it does not list: refused.
    #[serde(default)]
    pub mamba: Option<MambaDecl>,
    /// Whether a `--context-length` above the derived one is taken (with a warning, SGLang
    /// before 0.5.1) rather than refused.
    pub longer_context_allowed: bool,
    /// Model classes refused, with the reason.
    #[serde(default)]
    pub refuse: Vec<RefuseDecl>,
    /// SGLang's flags as this release parses them.
    pub flags: FlagsDecl,
    /// `--ep-size` and `--enable-ep-moe` (absent: refused).
    #[serde(default)]
    pub expert_parallel: Option<super::parallel::ExpertParallelDecl>,
    /// SGLang's messages.
    pub messages: MessagesDecl,
}

/// The free memory before loading: CUDA's total less what the process holds by then.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreeMemoryDecl {
    /// The CUDA context of one process (assumed; docs/engines.md says where it comes from).
    pub cuda_context_bytes: u64,
    /// What a rank of a world of more than one holds beyond it before the measurement (the
    /// communicators' set-up; assumed).
    pub communicator_bytes: u64,
    /// The bound on `communicator_bytes`, stated with every prediction at world > 1.
    pub communicator_bound_bytes: u64,
    /// Whether a world of more than one reduces free memory through a float32 tensor.
    pub float32_reduction: bool,
}

/// A tier of nvidia-smi's memory.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierDecl {
    /// Holds below this many MiB (none: every larger device).
    #[serde(default)]
    pub below_mib: Option<u64>,
    /// Chunked prefill size.
    pub chunked_prefill_size: u64,
    /// Decode CUDA-graph max batch size at TP < 4.
    pub decode_max_bs: u64,
    /// The same at TP >= 4.
    pub decode_max_bs_tp4: u64,
}

/// Defaults without a tier.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierValuesDecl {
    /// Chunked prefill size.
    pub chunked_prefill_size: u64,
    /// Decode CUDA-graph max batch size.
    pub decode_max_bs: u64,
}

/// `mem_fraction_static`'s default: round((gpu_mib x 1024 - reserved_kib) / (gpu_mib x 1024),
/// decimals), or, when `table` is given, that table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemFractionDecl {
    /// The reserve, KiB: an expression over `gpu_mib`, `chunked`, `tp`, `pp`, `decode_graph`,
    /// `decode_max_bs`, `prefill_graph`, `prefill_graph_sizes`, `mla`.
    pub reserved_kib: String,
    /// Decimals kept.
    pub decimals: u32,
    /// The value when nvidia-smi's memory is not known.
    pub unknown_memory: f64,
    /// The default as a table on the parallel size (SGLang 0.4.6 to 0.4.7); when given it is
    /// the default, and `reserved_kib`, `decimals` and `unknown_memory` (which a folder
    /// extending a newer one inherits) are not read.
    #[serde(default)]
    pub table: Option<FractionTableDecl>,
}

/// `mem_fraction_static`'s default as a table: the fraction of the first row whose `at_least`
/// the parallel size reaches, then each rule of `large` whose `above_mib` the device exceeds,
/// in order, over the value before it. Every fraction is unrounded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FractionTableDecl {
    /// The size the rows read: an expression over `tp` and `pp`.
    pub parallel: String,
    /// The rows, `at_least` falling, the last at 1.
    pub rows: Vec<FractionRowDecl>,
    /// Rules for larger devices, applied in order, each that holds.
    #[serde(default)]
    pub large: Vec<LargeRuleDecl>,
    /// Without nvidia-smi's memory: the fraction, or the error the release raises comparing
    /// the missing memory.
    pub unknown_memory: UnknownMemoryDecl,
}

/// The default without nvidia-smi's memory.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum UnknownMemoryDecl {
    /// The fraction taken.
    Fraction(f64),
    /// SGLang's error, as it prints it.
    Error(String),
}

/// A row of the table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FractionRowDecl {
    /// Holds when the parallel size is at least this.
    pub at_least: u64,
    /// The fraction.
    pub fraction: f64,
}

/// A rule for devices above a size: with `g` their MiB and `m` the value before the rule,
/// `fraction`, or `(g - reserved_mib) / g`, or with `grow_mib` `min(m + grow_mib x (1 - m) /
/// g, (g - reserved_mib) / g)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LargeRuleDecl {
    /// Holds on devices of more than this many MiB.
    pub above_mib: u64,
    /// A fixed fraction.
    #[serde(default)]
    pub fraction: Option<f64>,
    /// MiB kept out of the device.
    #[serde(default)]
    pub reserved_mib: Option<u64>,
    /// MiB of growth over the value before the rule (with `reserved_mib` only).
    #[serde(default)]
    pub grow_mib: Option<u64>,
}

/// A rule, compiled.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FractionRule {
    Fixed(f64),
    Reserve { reserved_mib: u64 },
    Grow { reserved_mib: u64, grow_mib: u64 },
}

impl FractionRule {
    fn compile(l: &LargeRuleDecl, item: &str) -> Result<FractionRule, String> {
        match (l.fraction, l.reserved_mib, l.grow_mib) {
            (Some(f), None, None) if f > 0.0 && f <= 1.0 => Ok(FractionRule::Fixed(f)),
            (Some(f), None, None) => Err(format!("{item}: fraction {f} must be in (0, 1]")),
            (None, Some(r), None) if r < l.above_mib => {
                Ok(FractionRule::Reserve { reserved_mib: r })
            }
            (None, Some(r), Some(grow_mib)) if r < l.above_mib => Ok(FractionRule::Grow {
                reserved_mib: r,
                grow_mib,
            }),
            (None, Some(r), _) => Err(format!(
                "{item}: reserved_mib {r} must be below above_mib, or the fraction is not positive"
            )),
            _ => Err(format!(
                "{item}: give fraction, or reserved_mib (with grow_mib or without)"
            )),
        }
    }

    /// The fraction on a device of `g` MiB (g > 0) over the value `m` before the rule, in
    /// SGLang's order of float operations (0.4.6.post2 server_args.py:240-245).
    fn apply(self, g: u64, m: f64) -> f64 {
        let g = g as f64;
        match self {
            FractionRule::Fixed(f) => f,
            FractionRule::Reserve { reserved_mib } => (g - reserved_mib as f64) / g,
            FractionRule::Grow {
                reserved_mib,
                grow_mib,
            } => (m + grow_mib as f64 * (1.0 - m) / g).min((g - reserved_mib as f64) / g),
        }
    }
}

/// The table, compiled.
#[derive(Debug, Clone)]
pub(crate) struct FractionTable {
    parallel: Formula,
    rows: Vec<(u64, f64)>,
    last: f64,
    large: Vec<(u64, FractionRule)>,
    pub(crate) unknown_memory: UnknownMemoryDecl,
}

impl FractionTable {
    fn compile(decl: &FractionTableDecl, origin: &str) -> Result<FractionTable, EngineError> {
        let item = "startup.sglang.mem_fraction_static.table";
        let bad = |message: String| EngineError::Toml {
            origin: origin.to_owned(),
            message,
        };
        let falling = decl.rows.windows(2).all(|w| w[0].at_least > w[1].at_least);
        let Some(last) = decl.rows.last().filter(|r| falling && r.at_least == 1) else {
            return Err(bad(format!(
                "{item}.rows: at_least must fall from row to row and the last be 1"
            )));
        };
        if let Some(r) = decl
            .rows
            .iter()
            .find(|r| !(r.fraction > 0.0 && r.fraction <= 1.0))
        {
            return Err(bad(format!(
                "{item}.rows: fraction {} at at_least {}: must be in (0, 1]",
                r.fraction, r.at_least
            )));
        }
        if let UnknownMemoryDecl::Fraction(f) = decl.unknown_memory
            && !(f > 0.0 && f <= 1.0)
        {
            return Err(bad(format!(
                "{item}.unknown_memory = {f}: must be in (0, 1] (or SGLang's error)"
            )));
        }
        let large = decl
            .large
            .iter()
            .map(|l| {
                FractionRule::compile(l, &format!("{item}.large above_mib = {}", l.above_mib))
                    .map(|r| (l.above_mib, r))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        Ok(FractionTable {
            parallel: Formula::compile(origin, &format!("{item}.parallel"), &decl.parallel)?,
            rows: decl.rows.iter().map(|r| (r.at_least, r.fraction)).collect(),
            last: last.fraction,
            large,
            unknown_memory: decl.unknown_memory.clone(),
        })
    }

    /// The default on a device of `gpu_mib` MiB (> 0); `env` binds `tp` and `pp`.
    pub(crate) fn fraction(&self, gpu_mib: u64, env: &Env<'_>) -> Result<f64, EngineError> {
        let parallel = self.parallel.eval(env)?;
        // The last row is at 1, so only a parallel size of 0 (refused before) misses them all.
        let mut m = self
            .rows
            .iter()
            .find(|(at_least, _)| parallel >= *at_least)
            .map_or(self.last, |r| r.1);
        for (above, rule) in &self.large {
            if gpu_mib > *above {
                m = rule.apply(gpu_mib, m);
            }
        }
        Ok(m)
    }
}

/// CUDA graphs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphDecl {
    /// Decode batch sizes, clipped at the max batch size.
    pub decode_sizes: Vec<SizeRange>,
    /// Whether the max batch size is appended to the decode sizes when they miss it (SGLang
    /// 0.5.10 on); before, a max batch size between two sizes is never captured.
    pub decode_append_max: bool,
    /// Whether prefill graphs are captured by default (off at PP > 1 when
    /// `prefill_off_with_pipeline`).
    pub prefill_default: bool,
    /// Prefill graphs are off by default at PP > 1.
    pub prefill_off_with_pipeline: bool,
    /// Prefill graphs are off by default for MLA attention.
    pub prefill_off_with_mla: bool,
    /// `--disable-cuda-graph` turns prefill graphs off too (before 0.5.14 it leaves SGLang's
    /// piecewise graphs on, which have a flag of their own).
    pub prefill_off_with_disable_cuda_graph: bool,
    /// Model classes whose prefill graphs are off by default.
    pub prefill_off_architectures: Vec<String>,
    /// The largest prefill size: an expression over `chunked`, `mla`, `max_total_tokens` and
    /// `context_length` (the flags; the largest u64 when not given).
    pub prefill_max: String,
    /// Prefill sizes, clipped at the largest.
    pub prefill_sizes: Vec<SizeRange>,
}

/// The pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolDecl {
    /// Tokens per page by default.
    pub page_size: u64,
    /// The page sizes the attention backend SGLang picks takes (empty: any): a page outside
    /// them, given by `--page-size` or the default, becomes `page_size` (SGLang snaps it, as
    /// trtllm_mha does to 64, arg_groups/overrides.py:1174-1187 in 0.5.23).
    #[serde(default)]
    pub backend_page_sizes: Vec<u64>,
    /// Rows the KV buffers hold beyond the tokens: an expression over `page_size`.
    pub extra_rows: String,
    /// Bytes the request-to-token table takes: over `max_running_requests` (as printed),
    /// `requested` (`--max-running-requests`, 0 when not given), `estimate` and `context_len`.
    pub req_to_token_bytes: String,
    /// Bytes one rotary cos/sin cache grows by after the weights print and before the pool
    /// is sized (grown to the context), summed over the caches: an expression over
    /// `context_len`, that cache's `rotary_rows` and `rotary_dim`, and the circuit's dims.
    pub rope_growth_bytes: String,
    /// The longest request, `min(context_len, tokens) - 1`, must exceed this (SGLang 0.5.13
    /// and older also assert the longest input, 5 tokens shorter, is positive; 0 after).
    pub request_len_margin: u64,
    /// Whether a free-memory rest at or below 0 is refused before the tokens are counted
    /// (SGLang 0.5.14 on), rather than by the token count.
    pub refuse_nonpositive_rest: bool,
    /// Whether the pipeline stages take the smallest token count of all (SGLang 0.5.2 on);
    /// before, each stage sizes its own pool, which is not modelled: PP > 1 is refused.
    pub pipeline_min: bool,
}

/// `max_running_requests`: expressions over `kv_tokens`, `context_len`, `estimate`,
/// `requested`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunningDecl {
    /// The estimate.
    pub estimate: String,
    /// Which token count the estimate's `kv_tokens` is.
    pub estimate_reads: EstimateReads,
    /// Without `--max-running-requests`.
    pub default: String,
    /// With it (`requested`).
    pub user: String,
}

/// The rotary cos/sin caches `get_rope` builds (their rows: `weights.rotary_caches`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeDecl {
    /// Bytes of one element of a cache.
    pub cache_element_bytes: u64,
    /// Model classes whose layers do not pass the config's rope to `get_rope`.
    #[serde(default)]
    pub class: Vec<RopeClassDecl>,
}

/// A model class's own rotary embedding.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeClassDecl {
    /// The classes (`architectures`).
    pub architectures: Vec<String>,
    /// What its layers ask `get_rope` for.
    pub get_rope: GetRope,
    /// Bytes of the rotary modules the class builds itself: an expression over `rotary_dim`
    /// (the first configuration's) and the circuit's dims.
    pub own_bytes: String,
}

/// What a class's layers ask `get_rope` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GetRope {
    /// Nothing: the class's own module computes cos and sin, no cache is built.
    None,
    /// An unscaled rope (`{"rope_type": "default"}`) for each configuration, whatever the
    /// config's scaling.
    Unscaled,
}

/// A class's rotary embedding, compiled.
#[derive(Debug, Clone)]
pub(crate) struct RopeClass {
    pub(crate) architectures: Vec<String>,
    pub(crate) get_rope: GetRope,
    pub(crate) own_bytes: Formula,
}

/// The token count the request-pool estimate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateReads {
    /// The profiled count, `int(rest x 2^30) // cell`, before `--max-total-tokens` caps it
    /// and before the page rounding and any split (SGLang 0.4.6 to 0.5.9).
    Profiled,
    /// The count after the cap and the page rounding (SGLang 0.5.10 on).
    Capped,
}

/// How a hybrid sliding-window pool is split into the full-attention layers' tokens (`full`,
/// the printed `max_total_num_tokens`) and the sliding layers' (`swa`), with `r` the ratio
/// (`--swa-full-tokens-ratio`), `F` and `S` the full and sliding layers' bytes per token
/// (summed over their layers) and `T` the all-layer token count an all-layer cell gives:
/// - `layers` (`set_num_token_hybrid`, SGLang 0.4.9.post3 to 0.5.8): `full = int(T x L / (r x
///   L_swa + L_full))`, the layers counted by kind;
/// - `memory` (0.5.9, 0.5.10): `full = int(T x (F + S) / (F + r x S))`;
/// - `bytes` (`HybridSWAPoolConfigurator`, 0.5.11 on): no all-layer count: `full =
///   int(budget // (F + r x S))`, which `--max-total-tokens` then caps;
///
/// then `swa = int(full x r)` (from `full` before or after its page rounding,
/// `swa_from_paged_full`), each rounded down to the page.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HybridSplitDecl {
    /// `--swa-full-tokens-ratio`'s default.
    pub swa_full_tokens_ratio: f64,
    /// How the tokens are split (none: `layers`).
    #[serde(default)]
    pub mode: Option<SplitMode>,
    /// Whether `swa` is taken from `full` after its page rounding (none: false).
    #[serde(default)]
    pub swa_from_paged_full: Option<bool>,
    /// Rows each of the two pools holds beyond its tokens: an expression over `page_size`.
    pub extra_rows: String,
    /// Bytes the allocator's full-to-SWA index map takes after the pool is sized: an
    /// expression over `full_tokens`, `swa_tokens` and `page_size`.
    pub index_map_bytes: String,
    /// The page size the two pools are built with, another `--page-size` refused (none: the
    /// run's page).
    #[serde(default)]
    pub page_size: Option<u64>,
    /// SGLang's error when the sliding pool cannot hold one request, `window + page >= swa`
    /// (`validate_swa_pool_size`, 0.5.16 on; `{swa}`, `{window}`, `{page}` filled in); "" (or
    /// none): not checked.
    #[serde(default)]
    pub swa_too_small: Option<String>,
    /// Classes whose model reports its window one token short (`get_attention_sliding_window_size`
    /// returning `sliding_window - 1`), the window that check reads.
    #[serde(default)]
    pub window_less_one: Vec<String>,
}

/// How a hybrid pool's tokens are split (see [`HybridSplitDecl`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitMode {
    /// By layer counts, from the all-layer token count.
    Layers,
    /// By bytes, from the all-layer token count's bytes.
    Memory,
    /// By bytes, from the pool's budget.
    Bytes,
}

/// The split, compiled.
#[derive(Debug, Clone)]
pub(crate) struct HybridSplit {
    pub(crate) ratio: f64,
    pub(crate) mode: SplitMode,
    pub(crate) swa_from_paged_full: bool,
    pub(crate) extra_rows: Formula,
    pub(crate) index_map: Formula,
    pub(crate) page_size: Option<u64>,
    pub(crate) swa_too_small: Option<String>,
    pub(crate) window_less_one: Vec<String>,
}

/// A refused model class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefuseDecl {
    /// The class.
    pub architecture: String,
    /// Why.
    pub why: String,
}

/// Flags as the release parses them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagsDecl {
    /// What `--cuda-graph-max-bs` does: `decode` (sets the decode max batch size) or a message
    /// saying why the release refuses it.
    pub cuda_graph_max_bs: String,
    /// Where DataParallelController starts each `--dp-size` replica: `tp_pp` (replica r from
    /// GPU r x tp x pp, its stages on GPUs of their own) or `tp` (from GPU r x tp, so with
    /// `--pp-size` above 1 the replicas' stages share GPUs: refused).
    pub dp_replica_stride: String,
}

/// SGLang's messages ({mfs}, {minimum}, {suggested}, {context}, {derived} filled in).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesDecl {
    /// Weights leave no memory for the KV cache.
    pub no_rest: String,
    /// Fewer tokens than a page.
    pub no_tokens: String,
    /// A context above the derived one.
    pub context_above: String,
    /// `max_running_requests` is 0.
    pub running_zero: String,
    /// No request fits: the longest request, `min(context, tokens) - 1`, is 0.
    pub pool_too_small: String,
}

/// A tier, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Tier {
    pub(crate) below_mib: Option<u64>,
    pub(crate) chunked: u64,
    pub(crate) decode_max_bs: u64,
    pub(crate) decode_max_bs_tp4: u64,
}

/// `[startup.sglang]`, compiled.
#[derive(Debug, Clone)]
pub(crate) struct FlowFacts {
    pub(crate) free: FreeMemoryDecl,
    pub(crate) tiers: Vec<Tier>,
    pub(crate) unknown: TierValuesDecl,
    pub(crate) clamp_decode_max_bs: bool,
    pub(crate) reserved_kib: Formula,
    pub(crate) decimals: u32,
    pub(crate) unknown_mem_fraction: f64,
    /// The default as a table (SGLang 0.4.6 to 0.4.7), which replaces the reserve.
    pub(crate) fraction_table: Option<FractionTable>,
    pub(crate) decode_sizes: Vec<SizeRange>,
    pub(crate) decode_append_max: bool,
    pub(crate) prefill_default: bool,
    pub(crate) prefill_off_with_pipeline: bool,
    pub(crate) prefill_off_with_mla: bool,
    pub(crate) prefill_off_with_disable_cuda_graph: bool,
    pub(crate) prefill_off_architectures: Vec<String>,
    pub(crate) prefill_max: Formula,
    pub(crate) prefill_sizes: Vec<SizeRange>,
    pub(crate) page_size: u64,
    pub(crate) backend_page_sizes: Vec<u64>,
    pub(crate) extra_rows: Formula,
    pub(crate) req_to_token: Formula,
    pub(crate) rope_growth: Formula,
    pub(crate) rope_element_bytes: u64,
    pub(crate) rope_classes: Vec<RopeClass>,
    pub(crate) request_len_margin: u64,
    pub(crate) refuse_nonpositive_rest: bool,
    pub(crate) pipeline_min: bool,
    pub(crate) estimate: Formula,
    pub(crate) estimate_reads: EstimateReads,
    pub(crate) running_default: Formula,
    pub(crate) running_user: Formula,
    pub(crate) hybrid_swa: Vec<String>,
    pub(crate) hybrid_split: Option<HybridSplit>,
    pub(crate) mamba: Option<Mamba>,
    pub(crate) longer_context_allowed: bool,
    pub(crate) refuse: Vec<RefuseDecl>,
    /// None: `--cuda-graph-max-bs` sets the decode max batch size; else why it is refused.
    pub(crate) cuda_graph_max_bs_refused: Option<String>,
    /// Whether each `--dp-size` replica's first GPU steps by tp x pp (else by tp).
    pub(crate) dp_stride_covers_pp: bool,
    /// `--ep-size` and `--enable-ep-moe`.
    pub(crate) expert_parallel: super::parallel::ExpertParallel,
    pub(crate) messages: MessagesDecl,
}

impl FlowFacts {
    /// Compiles `decl` (`origin` names the engine file).
    pub(crate) fn compile(decl: &FlowDecl, origin: &str) -> Result<FlowFacts, EngineError> {
        let bad = |message: String| EngineError::Toml {
            origin: origin.to_owned(),
            message,
        };
        let f = |item: &str, text: &str| {
            Formula::compile(origin, &format!("startup.sglang.{item}"), text)
        };
        let Some((last, ordered)) = decl.tier.split_last() else {
            return Err(bad("startup.sglang.tier = []: give the tiers".to_owned()));
        };
        if last.below_mib.is_some() || ordered.iter().any(|t| t.below_mib.is_none()) {
            return Err(bad(
                "startup.sglang.tier: every tier but the last gives below_mib, the last none"
                    .to_owned(),
            ));
        }
        if ordered.windows(2).any(|w| w[0].below_mib >= w[1].below_mib) {
            return Err(bad(
                "startup.sglang.tier: below_mib must grow from tier to tier".to_owned(),
            ));
        }
        if decl.pool.page_size == 0 {
            return Err(bad(
                "startup.sglang.pool.page_size = 0: must be positive".to_owned()
            ));
        }
        let pages = &decl.pool.backend_page_sizes;
        if !pages.is_empty() && !pages.contains(&decl.pool.page_size) {
            return Err(bad(format!(
                "startup.sglang.pool.backend_page_sizes = {pages:?}: must hold page_size ({}), the page another snaps to",
                decl.pool.page_size
            )));
        }
        if decl.mem_fraction_static.decimals > 6 {
            return Err(bad(format!(
                "startup.sglang.mem_fraction_static.decimals = {}: at most 6",
                decl.mem_fraction_static.decimals
            )));
        }
        let g = &decl.cuda_graph;
        if let Some(r) = g
            .decode_sizes
            .iter()
            .chain(&g.prefill_sizes)
            .find(|r| r.step == 0)
        {
            return Err(bad(format!(
                "startup.sglang.cuda_graph: range from {} has step 0: must be positive",
                r.start
            )));
        }
        let refused = match decl.flags.cuda_graph_max_bs.as_str() {
            "decode" => None,
            why => Some(why.to_owned()),
        };
        let dp_stride_covers_pp = match decl.flags.dp_replica_stride.as_str() {
            "tp_pp" => true,
            "tp" => false,
            other => {
                return Err(bad(format!(
                    "startup.sglang.flags.dp_replica_stride: `{other}`: expected tp_pp or tp"
                )));
            }
        };
        Ok(FlowFacts {
            free: decl.free_memory.clone(),
            tiers: decl
                .tier
                .iter()
                .map(|t| Tier {
                    below_mib: t.below_mib,
                    chunked: t.chunked_prefill_size,
                    decode_max_bs: t.decode_max_bs,
                    decode_max_bs_tp4: t.decode_max_bs_tp4,
                })
                .collect(),
            unknown: decl.unknown_memory.clone(),
            clamp_decode_max_bs: decl.clamp_decode_max_bs_to_running_requests,
            reserved_kib: f(
                "mem_fraction_static.reserved_kib",
                &decl.mem_fraction_static.reserved_kib,
            )?,
            decimals: decl.mem_fraction_static.decimals,
            unknown_mem_fraction: decl.mem_fraction_static.unknown_memory,
            fraction_table: decl
                .mem_fraction_static
                .table
                .as_ref()
                .map(|t| FractionTable::compile(t, origin))
                .transpose()?,
            decode_sizes: g.decode_sizes.clone(),
            decode_append_max: g.decode_append_max,
            prefill_default: g.prefill_default,
            prefill_off_with_pipeline: g.prefill_off_with_pipeline,
            prefill_off_with_mla: g.prefill_off_with_mla,
            prefill_off_with_disable_cuda_graph: g.prefill_off_with_disable_cuda_graph,
            prefill_off_architectures: g.prefill_off_architectures.clone(),
            prefill_max: f("cuda_graph.prefill_max", &g.prefill_max)?,
            prefill_sizes: g.prefill_sizes.clone(),
            page_size: decl.pool.page_size,
            backend_page_sizes: decl.pool.backend_page_sizes.clone(),
            extra_rows: f("pool.extra_rows", &decl.pool.extra_rows)?,
            req_to_token: f("pool.req_to_token_bytes", &decl.pool.req_to_token_bytes)?,
            rope_growth: f("pool.rope_growth_bytes", &decl.pool.rope_growth_bytes)?,
            rope_element_bytes: decl.rope.cache_element_bytes,
            rope_classes: decl
                .rope
                .class
                .iter()
                .map(|c| {
                    Ok(RopeClass {
                        architectures: c.architectures.clone(),
                        get_rope: c.get_rope,
                        own_bytes: f("rope.class.own_bytes", &c.own_bytes)?,
                    })
                })
                .collect::<Result<_, EngineError>>()?,
            request_len_margin: decl.pool.request_len_margin,
            refuse_nonpositive_rest: decl.pool.refuse_nonpositive_rest,
            pipeline_min: decl.pool.pipeline_min,
            estimate: f(
                "max_running_requests.estimate",
                &decl.max_running_requests.estimate,
            )?,
            estimate_reads: decl.max_running_requests.estimate_reads,
            running_default: f(
                "max_running_requests.default",
                &decl.max_running_requests.default,
            )?,
            running_user: f("max_running_requests.user", &decl.max_running_requests.user)?,
            hybrid_swa: decl.hybrid_swa_architectures.clone(),
            hybrid_split: match &decl.hybrid_swa_split {
                None => None,
                Some(h) => {
                    if !(h.swa_full_tokens_ratio > 0.0 && h.swa_full_tokens_ratio <= 1.0) {
                        return Err(bad(format!(
                            "startup.sglang.hybrid_swa_split.swa_full_tokens_ratio = {}: must be in (0, 1]",
                            h.swa_full_tokens_ratio
                        )));
                    }
                    if h.page_size == Some(0) {
                        return Err(bad(
                            "startup.sglang.hybrid_swa_split.page_size = 0: must be positive"
                                .to_owned(),
                        ));
                    }
                    Some(HybridSplit {
                        ratio: h.swa_full_tokens_ratio,
                        mode: h.mode.unwrap_or(SplitMode::Layers),
                        swa_from_paged_full: h.swa_from_paged_full.unwrap_or(false),
                        extra_rows: f("hybrid_swa_split.extra_rows", &h.extra_rows)?,
                        index_map: f("hybrid_swa_split.index_map_bytes", &h.index_map_bytes)?,
                        page_size: h.page_size,
                        swa_too_small: h.swa_too_small.clone().filter(|m| !m.is_empty()),
                        window_less_one: h.window_less_one.clone(),
                    })
                }
            },
            mamba: decl
                .mamba
                .as_ref()
                .map(|m| Mamba::compile(m, origin))
                .transpose()?,
            longer_context_allowed: decl.longer_context_allowed,
            refuse: decl.refuse.clone(),
            cuda_graph_max_bs_refused: refused,
            dp_stride_covers_pp,
            expert_parallel: super::parallel::ExpertParallel::compile(
                decl.expert_parallel.as_ref(),
            ),
            messages: decl.messages.clone(),
        })
    }
}

/// The most sizes a capture list may hold (SGLang captures tens).
const MAX_SIZES: usize = 1 << 16;

/// The sizes of `ranges` up to `max` (each range's `stop` clipped at it), sorted, once each;
/// None when they would be more than [`MAX_SIZES`] (a huge flag value).
pub(crate) fn sizes_up_to(ranges: &[SizeRange], max: u64) -> Option<Vec<u64>> {
    let mut sizes = Vec::new();
    for r in ranges {
        let stop = r.stop.map_or(max, |s| s.min(max));
        let mut size = r.start;
        while size <= stop {
            if sizes.len() >= MAX_SIZES {
                return None;
            }
            sizes.push(size);
            match size.checked_add(r.step) {
                Some(next) => size = next,
                None => break,
            }
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    Some(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<FractionTable, EngineError> {
        let decl: FractionTableDecl = toml::from_str(text).unwrap();
        FractionTable::compile(&decl, "test.toml")
    }

    /// SGLang 0.4.7's table (server_args.py:253-283).
    const RELEASE_0_4_7: &str = r#"
        parallel = "tp * pp"
        rows = [
          { at_least = 16, fraction = 0.79 },
          { at_least = 8, fraction = 0.81 },
          { at_least = 4, fraction = 0.85 },
          { at_least = 2, fraction = 0.87 },
          { at_least = 1, fraction = 0.88 },
        ]
        large = [
          { above_mib = 81920, fraction = 0.88 },
          { above_mib = 98304, reserved_mib = 18432, grow_mib = 49152 },
          { above_mib = 180000, fraction = 0.79 },
        ]
        unknown_memory = 0.88
    "#;

    #[test]
    fn the_table_reads_rows_then_each_large_rule_in_order() {
        let t = table(RELEASE_0_4_7).unwrap();
        let at = |gpu_mib: u64, tp: u64, pp: u64| {
            t.fraction(
                gpu_mib,
                &Env::names_only(vec![("tp", tp), ("pp", pp)], "test"),
            )
            .unwrap()
        };
        // Rows: TP x PP = 8 reads 0.81, 3 reads 0.87 (at least 2), 20 reads 0.79.
        assert_eq!(at(81_920, 4, 2), 0.81);
        assert_eq!(at(81_920, 3, 1), 0.87);
        assert_eq!(at(81_920, 20, 1), 0.79);
        // 95,830 MiB: above 81,920 only: 0.88 at any size.
        assert_eq!(at(95_830, 8, 1), 0.88);
        // 143,771 MiB: min(0.88 + 49152 x 0.12 / 143771, 125339 / 143771) = 0.8717961202189594.
        assert_eq!(at(143_771, 1, 1), 0.871_796_120_218_959_4);
        // 183,359 MiB: the last rule wins, 0.79.
        assert_eq!(at(183_359, 1, 1), 0.79);
    }

    #[test]
    fn a_table_no_run_could_read_is_refused_naming_the_item() {
        let e = |text: &str| table(text).err().map(|e| e.to_string()).unwrap_or_default();
        let rows_not_falling = RELEASE_0_4_7.replace("at_least = 8,", "at_least = 20,");
        assert!(e(&rows_not_falling).contains("table.rows: at_least must fall"));
        let no_last_row = RELEASE_0_4_7.replace("at_least = 1,", "at_least = 2,");
        assert!(e(&no_last_row).contains("the last be 1"));
        let both = RELEASE_0_4_7.replace(
            "{ above_mib = 180000, fraction = 0.79 }",
            "{ above_mib = 180000, fraction = 0.79, reserved_mib = 1 }",
        );
        assert!(e(&both).contains("large above_mib = 180000: give fraction, or reserved_mib"));
        let grow_alone = RELEASE_0_4_7.replace("reserved_mib = 18432, ", "");
        assert!(e(&grow_alone).contains("large above_mib = 98304"));
        let reserve_above = RELEASE_0_4_7.replace("reserved_mib = 18432", "reserved_mib = 98304");
        assert!(e(&reserve_above).contains("must be below above_mib"));
        let bad_unknown = RELEASE_0_4_7.replace("unknown_memory = 0.88", "unknown_memory = 1.5");
        assert!(e(&bad_unknown).contains("unknown_memory = 1.5"));
        // The release's error in place of a fraction is taken as written.
        let error =
            RELEASE_0_4_7.replace("unknown_memory = 0.88", "unknown_memory = \"TypeError\"");
        assert!(matches!(
            table(&error).unwrap().unknown_memory,
            UnknownMemoryDecl::Error(ref m) if m == "TypeError"
        ));
    }
}
