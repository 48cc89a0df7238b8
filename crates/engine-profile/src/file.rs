//! The engine file (`engines/<engine>-<version>/engine.toml`, format in docs/engines.md), typed
//! as written: the runtime facts kernel families and fusion rules cannot express, each a number,
//! a named mechanism or an expression over the run's names. A release that differs from another
//! in a few facts names it with `extends` and states only those ([`overlay`]).
//!
//! Invariants: every table denies unknown keys, so a misspelt fact is an error, not a default;
//! expressions stay text here and are compiled once by [`crate::EngineProfile::from_texts`]
//! (`formula.rs`); an overlay merges tables key by key and replaces every other value (an array
//! of terms is one fact), so the merged text is what a file stating every fact would hold.

use serde::Deserialize;

pub use crate::mechanisms::{
    BudgetMechanism, CudaGraphEstimateMechanism, KvLayoutMechanism, ModelLenMechanism,
    PrintedTokensMechanism, RotaryMechanism, StartupDecl,
};

/// The schema this crate reads.
pub const SCHEMA: u32 = 2;

/// A byte term: `bytes` (an expression) counted when its filters hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TermDecl {
    /// Name, for messages and output.
    pub name: String,
    /// Bytes: an expression.
    pub bytes: String,
    /// Tensors of `bytes` each, allocated one by one (an expression; default 1): what an
    /// allocator that rounds each block sees.
    #[serde(default)]
    pub count: Option<String>,
    /// Counted only for circuits that have this dim.
    #[serde(default)]
    pub when_dim: Option<String>,
    /// Counted only on these pipeline stages.
    #[serde(default)]
    pub stage: Option<StageFilter>,
    /// Counted only when the forward runs so.
    #[serde(default)]
    pub execution: Option<Execution>,
    /// A persistent term the forward allocates (not under a multimodal encoder's peak).
    #[serde(default)]
    pub from_forward: bool,
}

/// How the forward runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Compiled (torch.compile with piecewise graphs).
    Compiled,
    /// Eagerly, op by op.
    Eager,
}

/// The pipeline stages a term counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageFilter {
    /// The first stage.
    First,
    /// The last stage.
    Last,
    /// Every stage but the first.
    NotFirst,
    /// Every stage but the last.
    NotLast,
}

impl StageFilter {
    /// Whether stage `stage` of `stages` is one of these.
    pub fn holds(self, stage: u64, stages: u64) -> bool {
        let last = stage + 1 == stages;
        match self {
            StageFilter::First => stage == 0,
            StageFilter::Last => last,
            StageFilter::NotFirst => stage != 0,
            StageFilter::NotLast => !last,
        }
    }
}

/// The engine's defaults on a device: the first rule whose conditions hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsRule {
    /// Holds on devices of at least this CUDA total, bytes.
    #[serde(default)]
    pub min_total_bytes: Option<u64>,
    /// Holds on devices whose product string, lowercased, lacks this text.
    #[serde(default)]
    pub product_lacks: Option<String>,
    /// Batched tokens per step.
    pub max_num_batched_tokens: u64,
    /// Sequences per step.
    pub max_num_seqs: u64,
}

/// How the engine bounds a default it picked by the run's other settings (each an expression
/// over `max_num_batched_tokens`, `max_num_seqs` and `max_model_len`), applied to a setting
/// only when the run leaves it to the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsClampDecl {
    /// The batched tokens per step when defaulted (after the device's rule).
    pub max_num_batched_tokens: String,
    /// The sequences per step when defaulted (after the batched tokens are settled).
    pub max_num_seqs: String,
}

/// The KV cache.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvCacheDecl {
    /// The `gpu_memory_utilization` the engine takes when none is given.
    pub default_gpu_memory_utilization: f64,
    /// The mechanism that lays the cache layers out in groups and blocks.
    pub layout: KvLayoutMechanism,
    /// Tokens per block.
    pub block_size: u64,
    /// Whether the CUDA-graph estimate is taken from the KV budget.
    pub subtract_cuda_graph_estimate: bool,
    /// Whether layers of different kinds get groups of their own.
    pub hybrid_manager: bool,
    /// The grouping's slack (see docs/engines.md).
    pub group_size_slack: f64,
    /// Whether layers of different page sizes are unified (a smaller page's block grows by
    /// the ratio); false: pages that differ are refused, as the release raises.
    #[serde(default = "yes")]
    pub unify_page_sizes: bool,
    /// The start-up check that one request of max-model-len fits.
    #[serde(default)]
    pub startup_check: StartupCheckDecl,
    /// Blocks one request of max-model-len takes, per kind.
    pub blocks_per_request: BlocksPerRequestDecl,
    /// Recurrent layers' block sizes.
    pub recurrent: RecurrentDecl,
    /// How the engine sizes the KV budget from what it measures (absent: the requested memory
    /// less weights, activation peak and non-torch memory, and the CUDA-graph estimate where
    /// subtracted).
    #[serde(default)]
    pub budget: Option<BudgetMechanism>,
    /// The margins of a KV cache sized after warm-up (`budget = "vllm_measured"`).
    #[serde(default)]
    pub measured: Option<MeasuredDecl>,
    /// How the engine counts the KV tokens it prints (absent: the blocks over the groups,
    /// times the smallest block size).
    #[serde(default)]
    pub printed_tokens: Option<PrintedTokensMechanism>,
}

/// The margins of a KV cache sized from the memory measured after warm-up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredDecl {
    /// The least memory kept free below the device's headroom.
    pub margin_floor_bytes: u64,
    /// The margin as a fraction of the transient peak, when above the floor.
    pub margin_fraction: f64,
    /// The CUDA context a worker's process holds before the engine's first snapshot, which
    /// the measured headroom leaves out (assumed: a device-and-driver figure the engine's
    /// source cannot give; the file says where it was measured).
    pub cuda_context_bytes: u64,
    /// What a rank of a world of more than one holds beyond the context before the snapshot
    /// (the communicators' set-up; assumed).
    pub communicator_bytes: u64,
}

/// The start-up check that the KV memory holds one request of max-model-len: where the
/// memory is compared, and how the request's bytes are counted (docs/engines.md).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartupCheckDecl {
    /// Where the request's bytes are compared with the KV memory.
    #[serde(default)]
    pub scope: CheckScope,
    /// How the request's bytes are counted.
    #[serde(default)]
    pub request_bytes: RequestBytes,
}

/// Where the start-up check compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckScope {
    /// Each worker's KV memory against the request's bytes on its own layers.
    #[default]
    Worker,
    /// The smallest worker's KV memory against the request's bytes on the whole model's
    /// layers (every pipeline stage's).
    WholeModel,
}

/// How the start-up check counts one request's bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestBytes {
    /// The groups' pools: the most layers of one group x the page x the blocks the request
    /// takes in every group.
    #[default]
    Groups,
    /// The groups' pools, with the blocks the request takes in the first group only.
    FirstGroup,
    /// Each layer's own page x the blocks the request takes in a layer of its kind (no
    /// group padding).
    Layers,
}

/// Blocks per request, per layer kind (expressions).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlocksPerRequestDecl {
    /// Full attention.
    pub full: String,
    /// Sliding window.
    pub sliding: String,
    /// Chunked local attention.
    pub chunked: String,
    /// Recurrent state.
    pub recurrent: String,
}

/// Block sizes beside recurrent state (expressions).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecurrentDecl {
    /// Tokens per attention block.
    pub attention_block_size: String,
    /// Tokens per recurrent block.
    pub block_size: String,
    /// Whether the engine turns prefix caching on by default for a model with recurrent state
    /// (it then keeps the state per block: such a run is refused unless it turns prefix
    /// caching off, or these facts are the per-block layout's, `align`).
    #[serde(default)]
    pub prefix_caching_by_default: bool,
    /// Whether these facts lay the recurrent state out per block, as vLLM's mamba_cache_mode
    /// "align" does under prefix caching (a variant with `when.prefix_caching = true` sets
    /// them); false: a run with prefix caching on a model with recurrent state is refused.
    #[serde(default)]
    pub align: bool,
}

/// The profile run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRunDecl {
    /// Rows the logits nodes compute (expression).
    pub logits_rows: String,
    /// Terms held across the run.
    pub persistent: Vec<TermDecl>,
    /// Terms held beside the planned forward at its peak.
    #[serde(default)]
    pub forward_held: Vec<TermDecl>,
    /// Terms live at the sampler.
    pub sampler_live: Vec<TermDecl>,
    /// Buffers the engine allocates after its memory snapshot and before the profile run
    /// (outside the weights and the run's peak), which a budget that measures the device's
    /// free memory counts.
    #[serde(default)]
    pub resident: Vec<TermDecl>,
    /// The multimodal encoder's profile.
    #[serde(default)]
    pub encoder: Option<EncoderDecl>,
}

/// The multimodal encoder's profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderDecl {
    /// Whether the profile run runs the encoder at all (false: it profiles the language model
    /// alone, as with `skip_mm_profiling`).
    #[serde(default = "yes")]
    pub profiled: bool,
    /// Where the engine's source runs it, for messages.
    pub source: String,
    /// Items encoded (expression).
    pub items: String,
    /// Items per prompt when the run gives no limit.
    pub default_limit_per_prompt: u64,
    /// Its inputs, held to the end.
    pub held: Vec<TermDecl>,
    /// Its outputs, held from its end to the end.
    pub outputs: Vec<TermDecl>,
    /// Its own peak beside its inputs.
    pub peak: Vec<TermDecl>,
    /// Per model class: the terms of a tower whose layers hold other tensors, and its dummy
    /// video. A folder that extends another keeps the base's entries but those whose classes
    /// an entry of its own names ([`merge_encoder_classes`]).
    #[serde(default)]
    pub architecture: Vec<EncoderArchitectureDecl>,
}

/// A model class's own encoder terms.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderArchitectureDecl {
    /// The classes (`architectures`) the entry is for.
    pub names: Vec<String>,
    /// Replace the base's `held`, when given.
    #[serde(default)]
    pub held: Option<Vec<TermDecl>>,
    /// Replace the base's `outputs`, when given.
    #[serde(default)]
    pub outputs: Option<Vec<TermDecl>>,
    /// Replace the base's `peak`, when given.
    #[serde(default)]
    pub peak: Option<Vec<TermDecl>>,
    /// The dummy video, for a tower that takes video as well as images; absent, the engine
    /// profiles no video (such a tower is then refused unless its videos are limited to 0).
    #[serde(default)]
    pub video: Option<VideoDecl>,
    /// Why the release's profile of this tower is not modelled (its source changed in a way
    /// the terms do not follow): a run that profiles the tower is refused with this reason.
    #[serde(default)]
    pub refuse: Option<String>,
}

/// How the engine's profile makes and chooses a dummy video.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoDecl {
    /// Temporal groups of frames of the dummy video (expression over `max_model_len`,
    /// `mm_video_group_tokens`, `mm_video_frames_per_group`).
    pub groups: String,
    /// The modality profiled when an image and the video give as many tokens (`image` or
    /// `video`); otherwise the one with more tokens is.
    pub tie: String,
}

/// Weights as loaded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsDecl {
    /// Tensors the engine creates beyond the checkpoint's.
    pub created: Vec<TermDecl>,
    /// The mechanism sizing one rotary cos/sin cache per distinct rotary configuration of
    /// the model (absent: none beyond `created`).
    #[serde(default)]
    pub rotary_caches: Option<RotaryMechanism>,
    /// The allocator whose blocks the weights figure counts (absent: the tensors' bytes).
    #[serde(default)]
    pub allocator: Option<Allocator>,
    /// The allocator's split limit while the weights are loaded, in MiB
    /// (`max_split_size_mb`; absent: none). Needs `allocator`.
    #[serde(default)]
    pub allocator_max_split_mib: Option<u64>,
    /// Checkpoint tensors the engine holds as one parameter (allocated as one).
    #[serde(default)]
    pub stacked: Vec<StackedDecl>,
    /// Endings of checkpoint tensor names the engine reads and then frees while loading
    /// (not in the weights held).
    #[serde(default)]
    pub released: Vec<String>,
    /// Per model class: the dtype the rotary cos/sin cache is built in when not the model's.
    #[serde(default)]
    pub architecture: Vec<ArchitectureWeightsDecl>,
}

/// An allocator whose blocks a memory figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Allocator {
    /// PyTorch's CUDA caching allocator with its default settings (`torch_allocator.rs`).
    TorchCaching,
    /// The same allocator's segments: the bytes it took from the device for the blocks, what
    /// a figure read from the device's free memory after `empty_cache` counts (SGLang's
    /// "Load weight end ... mem usage").
    TorchCachingSegments,
}

/// Checkpoint tensors one parameter holds: a tensor whose name contains one of `shards` is
/// part of the parameter named with `param` in its place; the tensors of one parameter are
/// allocated as one, where the first of them is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackedDecl {
    /// The parameter's name part (`.qkv_proj.`).
    pub param: String,
    /// The checkpoint's name parts it stacks (`.q_proj.`, `.k_proj.`, `.v_proj.`).
    pub shards: Vec<String>,
}

/// A model class's own weight facts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureWeightsDecl {
    /// The class (`architectures`).
    pub name: String,
    /// The rotary cache's format (`f32`).
    pub rotary_dtype: String,
}

/// Memory outside torch's allocator.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonTorchDecl {
    /// Growth of a worker alone.
    pub single_process_bytes: u64,
    /// Growth of a worker of a larger world.
    pub distributed_bytes: u64,
    /// Added on every rank when TP > 1.
    pub tensor_parallel_bytes: u64,
}

/// The CUDA-graph estimate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaGraphDecl {
    /// The largest captured size (expression).
    pub max_capture_size: String,
    /// Per model class: its own largest captured size.
    #[serde(default)]
    pub architecture: Vec<ArchitectureCaptureDecl>,
    /// Candidate sizes.
    pub capture_sizes: Vec<SizeRange>,
    /// Sizes appended to the candidates when at most the largest captured size
    /// (expressions).
    #[serde(default)]
    pub extra_sizes: Vec<String>,
    /// Modes captured.
    pub mode: Vec<CaptureModeDecl>,
    /// How the estimate is formed from the captures (absent: the two largest sizes of each
    /// mode captured and the rest extrapolated).
    #[serde(default)]
    pub estimate: Option<CudaGraphEstimateMechanism>,
    /// The first capture's bytes (expression).
    pub first_capture_bytes: String,
    /// Each further capture's bytes (expression).
    pub per_capture_bytes: String,
    /// The floor on the per-capture figure.
    pub min_per_capture_bytes: u64,
}

/// A model class's own largest captured size.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureCaptureDecl {
    /// The class.
    pub name: String,
    /// The largest captured size (expression).
    pub max_capture_size: String,
}

/// A range of candidate capture sizes, `start..=stop` by `step` (no `stop`: up to the largest).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRange {
    /// First size.
    pub start: u64,
    /// Last size, at most.
    #[serde(default)]
    pub stop: Option<u64>,
    /// Step.
    #[serde(default = "one")]
    pub step: u64,
}

fn one() -> u64 {
    1
}

fn yes() -> bool {
    true
}

/// A mode captured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureModeDecl {
    /// Name (`PIECEWISE`, `FULL`).
    pub name: String,
    /// Its largest size (expression).
    pub largest: String,
}

/// How the engine holds a checkpoint after loading (model-facts' `LoadRules`, as written).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadDecl {
    /// MXFP4 routed experts' layout.
    #[serde(default)]
    pub mxfp4_experts: Option<Mxfp4Decl>,
    /// `whole` or `read_by_projector`.
    #[serde(default)]
    pub vision_tower: Option<String>,
    /// `held` or `skipped`: whether the engine builds the multi-token-prediction layers.
    #[serde(default)]
    pub mtp_layers: Option<String>,
    /// The kernel library GPTQ's linears are held for, per device: the first rule whose
    /// `when` (device conditions only) holds; none holding keeps the stored layout.
    #[serde(default)]
    pub gptq_linears: Vec<LinearKernelDecl>,
    /// The same for AWQ's linears.
    #[serde(default)]
    pub awq_linears: Vec<LinearKernelDecl>,
}

/// One device rule of `[load] gptq_linears` (or `awq_linears`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearKernelDecl {
    /// The devices it holds on (device conditions only).
    pub(crate) when: crate::variant::Conditions,
    /// `stored`, `machete` or `marlin`.
    pub kernel: String,
}

/// An MXFP4 expert layout.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mxfp4Decl {
    /// `triton_hopper`.
    pub layout: String,
    /// The multiple a rank's expert intermediate size is rounded up to.
    pub expert_ffn_multiple: u64,
    /// The multiple the scales' reduction width is padded to before they are swizzled
    /// (none: 32, no padding).
    #[serde(default)]
    pub scale_in_multiple: Option<u64>,
}

/// The model length section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelLenDecl {
    /// The mechanism deriving the longest and default max model length from the rope scaling.
    pub rule: ModelLenMechanism,
}

/// A whole engine file (after any overlay).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFile {
    /// Format version.
    pub schema: u32,
    /// The profile this one overlays (its folder name), resolved by the caller.
    #[serde(default)]
    pub extends: Option<String>,
    /// The engine (`vllm`).
    pub engine: String,
    /// The release the facts were read from.
    pub version: String,
    /// Every release (pip's spelling) this profile stands for.
    pub releases: Vec<String>,
    /// How the engine holds a checkpoint after loading.
    #[serde(default)]
    pub load: LoadDecl,
    /// The context lengths it accepts.
    pub model_len: ModelLenDecl,
    /// How the engine sizes its KV cache at start-up (`[startup] flow`): a profile run (the
    /// default, which needs the four tables below) or an engine's own flow, whose facts are
    /// its mechanism's (`mechanisms.rs`).
    #[serde(default)]
    pub startup: StartupDecl,
    /// Defaults per device, first match wins (the profile-run flow's).
    #[serde(default)]
    pub defaults: Vec<DefaultsRule>,
    /// How a default is bounded by the run's other settings.
    #[serde(default)]
    pub defaults_clamp: Option<DefaultsClampDecl>,
    /// Named byte figures of the engine's runtime (its libraries) that terms read by name,
    /// set per device by `[[variant]]`s (the GEMM library's workspace).
    #[serde(default)]
    pub runtime: std::collections::BTreeMap<String, u64>,
    /// The KV cache (the profile-run flow's).
    #[serde(default)]
    pub kv_cache: Option<KvCacheDecl>,
    /// The profile run (the profile-run flow's).
    #[serde(default)]
    pub profile_run: Option<ProfileRunDecl>,
    /// Weights as loaded.
    pub weights: WeightsDecl,
    /// Memory outside torch (the profile-run flow's).
    #[serde(default)]
    pub non_torch: Option<NonTorchDecl>,
    /// The CUDA-graph estimate (the profile-run flow's).
    #[serde(default)]
    pub cuda_graph: Option<CudaGraphDecl>,
    /// Terms the engine's source does not give, left out of the prediction: each says what
    /// is missing and which way it moves the answer.
    #[serde(default)]
    pub unsettled: Vec<UnsettledDecl>,
}

/// A quantity the prediction leaves out, stated so the answer is read with it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnsettledDecl {
    /// Short name.
    pub name: String,
    /// What is left out and its effect on the predicted figures, one line.
    pub effect: String,
    /// The runs the note concerns (the conditions a `[[variant]]` tests); none: every run.
    #[serde(default)]
    pub(crate) when: crate::variant::Conditions,
    /// A `[[variant]]` of the file whose runs the note does not concern (it states what that
    /// variant's facts replace): the note is left out where the variant applies.
    #[serde(default)]
    pub(crate) unless_variant: Option<String>,
}

/// Takes the `profile_run.encoder.architecture` value out of an engine file's `table`, if it
/// gives one.
pub fn take_encoder_classes(table: &mut toml::Table) -> Option<toml::Value> {
    table
        .get_mut("profile_run")?
        .as_table_mut()?
        .get_mut("encoder")?
        .as_table_mut()?
        .remove("architecture")
}

/// The `profile_run.encoder.architecture` array of a release that states `own` over the
/// entries it extends (`base`): the base's entries that name none of `own`'s classes, in the
/// base's order, then `own`'s, so a release restates only the towers whose profile it changes.
/// Anything that is not an array of tables is left for the parser to refuse.
pub fn merge_encoder_classes(base: Option<toml::Value>, own: toml::Value) -> toml::Value {
    let (Some(toml::Value::Array(base)), toml::Value::Array(own_items)) = (base, &own) else {
        return own;
    };
    let names = |v: &toml::Value| -> Vec<String> {
        v.get("names")
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(toml::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let restated: Vec<String> = own_items.iter().flat_map(names).collect();
    let mut out: Vec<toml::Value> = base
        .into_iter()
        .filter(|v| !names(v).iter().any(|n| restated.contains(n)))
        .collect();
    out.extend(own_items.iter().cloned());
    toml::Value::Array(out)
}

/// Merges `over` into `base`: tables key by key, recursively; every other value of `over`
/// replaces `base`'s. `extends` itself is not inherited.
pub fn overlay(base: &mut toml::Table, over: toml::Table) {
    base.remove("extends");
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => overlay(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
