//! Every flag of the commands that take a model (`plan`'s), as clap declares them: the plain
//! planner's, the parallel layout's (vLLM's names) and an engine's (vLLM's `vllm serve` names).
//! Values clap cannot parse alone are parsed in `values.rs`; what a command builds from the
//! flags (import options, the layout, the device) in `settings.rs`.
//!
//! Invariants: one struct per group of flags, each flag documented with an example of its
//! value (a test in main.rs checks `--help`); no command logic here.

use std::path::PathBuf;

/// Arguments of `cargo xtask plan`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "With no arguments: the embedded Llama-3.1-8B example (circuit, kernel \
families and fusion rules) on an h100-sxm, at rows 1, 2, 4, ..., 8192."
)]
pub struct PlanArgs {
    /// Circuit TOML file [default: the embedded Llama-3.1-8B example].
    ///
    /// Example: --circuit examples/llama-3.1-8b/circuit.toml
    #[arg(long, value_name = "FILE", conflicts_with = "hf_config")]
    pub circuit: Option<PathBuf>,

    /// A Hugging Face config.json to import as the circuit (llama, granite, mistral, qwen2,
    /// qwen3, qwen3_moe, qwen2_moe, mixtral, phi3, phi, gemma, gemma2, gemma3_text,
    /// deepseek_v2, deepseek_v3, kimi_k2, gpt_oss, glm4_moe, llama4_text, qwen3_next, and the
    /// multimodal llama4, gemma3, mistral3 and llava with their vision towers held as
    /// weights);
    /// families and rules default to a set covering every op the importer emits.
    ///
    /// Example: --hf-config data/models/qwen2.5-7b/config.json
    #[arg(long, value_name = "FILE")]
    pub hf_config: Option<PathBuf>,

    /// With --hf-config: the dtype of unquantized weights, activations and the KV cache:
    /// auto (the config's torch_dtype), bfloat16, float16 or float32. Quantized tensors keep
    /// their format's storage.
    ///
    /// Example: --dtype bfloat16
    #[arg(long, value_name = "DTYPE", default_value = "auto")]
    pub dtype: String,

    /// With --hf-config: the KV cache's storage: auto (the planned dtype) or fp8 (one byte
    /// per element, half a 16-bit cache).
    ///
    /// Example: --kv-cache-dtype fp8
    #[arg(long, value_name = "DTYPE", default_value = "auto")]
    pub kv_cache_dtype: String,

    /// With --hf-config: a multimodal checkpoint is loaded as its language model alone,
    /// without its vision tower and projector (vLLM's flag; vLLM then builds no tower and runs
    /// no encoder in its profile).
    ///
    /// Example: --language-model-only
    #[arg(long)]
    pub language_model_only: bool,

    /// With --hf-config: vLLM's per-prompt limits of multimodal items, a JSON object of
    /// modality -> count (or -> {"count": N, ...}) for `image` and `video` (Qwen2.5-VL's and
    /// Qwen3-VL's towers take both); 0 for every modality the tower takes is
    /// --language-model-only; with --engine a modality limited to 0 is not profiled, and
    /// another limit caps the items the profile run's encoder batch may hold.
    ///
    /// Example: --limit-mm-per-prompt '{"image": 0}'
    #[arg(long, value_name = "JSON")]
    pub limit_mm_per_prompt: Option<String>,

    /// Kernel families TOML file [default: the example's registry].
    ///
    /// Example: --families examples/llama-3.1-8b/families.toml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,

    /// Fusion rules TOML file [default: the example's rules].
    ///
    /// Example: --rules examples/llama-3.1-8b/rules.toml
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,

    /// Device from the built-in table (its SM count and memory), any case, or an alias such
    /// as h100 [default: h100-sxm].
    ///
    /// Example: --device a100-80gb
    #[arg(long, value_name = "NAME", conflicts_with = "sm_count")]
    pub device: Option<String>,

    /// An SM count instead of a named device (no memory known: give --budget in bytes).
    ///
    /// Example: --sm-count 108
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub sm_count: Option<u64>,

    /// Row counts to plan: a list, an inclusive range, or a range with a factor or step.
    ///
    /// Examples: --rows 1,2,8   --rows 1..=4096   --rows 1..=8192:x2   --rows 64..=1024:+64
    #[arg(long, value_name = "LIST", default_value = "1..=8192:x2")]
    pub rows: String,

    /// Overrides a setting the rules declare; repeatable.
    ///
    /// Example: --set mode=decode
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// Tokens held in the KV cache, over all sequences.
    ///
    /// Example: --kv-tokens 131072
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub kv_tokens: u64,

    /// Sequences the KV tokens belong to (sliding-window layers hold at most window x
    /// sequences tokens); at least 1 when tokens are cached or a state holds bytes per
    /// sequence.
    ///
    /// Example: --sequences 64
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub sequences: u64,

    /// Memory budget for the fit, headroom and serving answers: a size with a unit, or a
    /// fraction of the device's memory with a decimal point [default: the device's memory].
    ///
    /// Examples: --budget 80GiB   --budget 141GB   --budget 85899345920B   --budget 0.9
    #[arg(long, value_name = "SIZE")]
    pub budget: Option<String>,

    /// A context length (tokens per sequence): also answer how many sequences of it fit
    /// beside the plan (the maximum concurrency) at the largest n that fits.
    ///
    /// Example: --max-model-len 8192
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub max_model_len: Option<u64>,

    /// Alignment of every buffer in the activation arena, in bytes.
    ///
    /// Example: --align 512
    #[arg(long, value_name = "BYTES", default_value = "256")]
    pub align: String,

    /// Output: a human table, one JSON object with exact bytes, JSON lines (a header, one
    /// line per row count, a summary) or CSV (one line per row count); docs/output.md.
    ///
    /// Example: --format jsonl
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,

    /// Also print the per-node table at the largest row count (folded by block); with a
    /// parallel layout, one per distinct rank.
    #[arg(long)]
    pub per_node: bool,

    /// Draw an SVG chart: each term and the total against rows (with a layout, of the rank
    /// with the largest total); with --engine, each worker's weights, activation peak,
    /// non-torch memory and KV cache against the memory requested.
    ///
    /// Example: --svg plan.svg
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Draw an SVG memory map of the activation arena at the largest row count (with a
    /// layout, of the rank with the largest total); with --engine, of the profile run's
    /// forward on the worker with the largest activation peak, with what the run holds
    /// beside it.
    ///
    /// Example: --arena-svg arena.svg
    #[arg(long, value_name = "FILE")]
    pub arena_svg: Option<PathBuf>,

    /// Give nodes no rule covers placeholder groups (reported) instead of failing.
    #[arg(long)]
    pub placeholders: bool,

    /// With --hf-config: the parallel layout (vLLM's flags), planned per rank.
    #[command(flatten)]
    pub parallel: ParallelArgs,

    /// An engine's start-up (`--engine vllm`) with the engine's own flags.
    #[command(flatten)]
    pub engine: EngineArgs,

    /// The ids (clap's) of the flags given on the command line, defaults left out: the modes
    /// check them (`inputs::modes`). Filled by `main` from clap's matches.
    #[arg(skip)]
    pub given: Vec<String>,

    /// An engine's command line, after `--`, as a deployment runs it (`vllm serve MODEL ...`
    /// or `python -m vllm.entrypoints.openai.api_server --model MODEL ...`; one quoted text
    /// is split as a shell splits it): predicts that start-up. The model is found as a local
    /// folder, in the Hugging Face cache or as the repository's copy (nothing is
    /// downloaded); flags that change no byte are listed on an `ignored` line, flags that
    /// change memory and are not modelled are refused (docs/engines.md, "A serve line").
    ///
    /// Example: -- vllm serve Qwen/Qwen2.5-7B-Instruct -tp 2 --max-model-len 32k --port 8000
    #[arg(last = true, value_name = "SERVE LINE")]
    pub serve_line: Vec<String>,

    /// The serve line as read (set from `serve_line`, not a flag).
    #[arg(skip)]
    pub serve: Option<crate::inputs::serve_line::ServeNote>,

    /// SGLang's own flags (`--engine sglang`).
    #[command(flatten)]
    pub sglang: crate::inputs::sglang::SglangArgs,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns in MiB and GiB.
    Table,
    /// One JSON object with exact bytes.
    Json,
    /// JSON lines: a header record, one record per row count, a summary record.
    Jsonl,
    /// CSV: a header line and one line per row count.
    Csv,
}

/// vLLM's own flags (`vllm serve`), taken by `cargo xtask plan --engine vllm`.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Predict an engine's start-up instead of the abstract plan: `vllm` (the newest release
    /// modelled, 0.34.0) or `vllm==RELEASE` (pip's spelling; an unmodelled release is refused
    /// with the list).
    ///
    /// Example: --engine vllm
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,

    /// With --engine: fraction of the device's total the engine may use [default: the
    /// engine release's own: 0.9 for vLLM 0.19, 0.92 for 0.20-0.33, 1.0 for 0.34]. Without
    /// --engine: the budget, that fraction of the device (as --budget 0.9).
    ///
    /// Example: --gpu-memory-utilization 0.85
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub gpu_memory_utilization: Option<f64>,

    /// With --engine: batched tokens per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-batched-tokens 16384
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub max_num_batched_tokens: Option<u64>,

    /// With --engine: sequences per step [default: as the engine picks for the device].
    ///
    /// Example: --max-num-seqs 256
    #[arg(long, value_name = "SEQS", allow_negative_numbers = true)]
    pub max_num_seqs: Option<u64>,

    /// With --engine, on a model with a vision tower: the profile run leaves the encoder out, as
    /// vLLM does with this flag. Without it the encoder's profile is predicted (Llama 4's,
    /// Gemma 3's and LLaVA's towers; another tower is refused and needs this flag).
    ///
    /// Example: --skip-mm-profiling
    #[arg(long)]
    pub skip_mm_profiling: bool,

    /// With --engine: the forward runs eagerly, op by op, and no CUDA graph is captured (vLLM's
    /// flag): the profile run holds what an eager forward holds, and there is no CUDA-graph
    /// estimate.
    ///
    /// Example: --enforce-eager
    #[arg(long)]
    pub enforce_eager: bool,

    /// With --engine: tokens per KV-cache block (vLLM's --block-size) [default: as the engine
    /// picks it, 16 for FlashAttention up to vLLM 0.33, 64 from 0.34]. A model with recurrent state raises it
    /// until an attention page holds a state, as vLLM does.
    ///
    /// Example: --block-size 32
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub block_size: Option<u64>,

    /// With --engine: vLLM's prefix caching (on by default for attention-only models),
    /// accepted so a `vllm serve` command line can be given as it is. It changes no byte of an
    /// attention-only model's prediction. On a model with recurrent state (Qwen3-Next) vLLM
    /// then keeps the state per block ("align"): from 0.28, where it is the default for such a
    /// model, that layout is predicted (more state pages a request, so less concurrency);
    /// before 0.28, and on Blackwell from 0.33, it is refused.
    ///
    /// Example: --enable-prefix-caching
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    pub enable_prefix_caching: bool,

    /// With --engine: vLLM's flag turning prefix caching off; no effect on the prediction but
    /// for a model with recurrent state, whose state is then kept one page a sequence (see
    /// --enable-prefix-caching).
    ///
    /// Example: --no-enable-prefix-caching
    #[arg(long, overrides_with = "enable_prefix_caching")]
    pub no_enable_prefix_caching: bool,

    /// With --hf-config: quantization applied while loading an unquantized checkpoint (none or
    /// fp8, vLLM's on-the-fly FP8); a checkpoint's own quantization comes from its config.
    /// With --engine sglang alone, SGLang's method: taken where it names the checkpoint's own
    /// (fp8, compressed-tensors, mxfp4), refused in one line otherwise.
    ///
    /// Example: --quantization fp8
    #[arg(long, value_name = "METHOD", default_value = "none")]
    pub quantization: String,

    /// With --engine: also print the largest --max-model-len that starts with the other flags
    /// (the KV tokens, at most the context the config allows: max_position_embeddings with its
    /// rope scaling, which vLLM will not exceed).
    ///
    /// Example: --largest-max-model-len
    #[arg(long)]
    pub largest_max_model_len: bool,

    /// With --engine: also print the largest --max-num-seqs that starts with the other flags
    /// (at most --max-num-batched-tokens, as vLLM requires).
    ///
    /// Example: --largest-max-num-seqs
    #[arg(long)]
    pub largest_max_num_seqs: bool,

    /// With --engine: also print the smallest --tensor-parallel-size that starts with the other
    /// flags, trying the sizes up to 8 that divide the attention heads.
    ///
    /// Example: --smallest-tp
    #[arg(long)]
    pub smallest_tp: bool,

    /// With --engine: for each of these devices (names of the device table, comma-separated),
    /// the smallest --tensor-parallel-size that starts with the other flags, its KV tokens and
    /// its concurrency at --max-model-len, one row each; a device the engine prediction is
    /// refused on says why in its row.
    ///
    /// Example: --devices h100,h200,a100-80gb,l40s
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        conflicts_with = "device"
    )]
    pub devices: Option<Vec<String>>,

    /// With --engine: also print the --gpu-memory-utilization whose KV cache holds at least
    /// this many tokens with the other flags.
    ///
    /// Example: --target-kv-tokens 500000
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub target_kv_tokens: Option<u64>,
}

/// vLLM's parallel flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ParallelArgs {
    /// With --hf-config: tensor-parallel size (aliases --tp and, as vLLM spells it, -tp).
    ///
    /// Example: --tensor-parallel-size 4
    #[arg(
        long,
        visible_alias = "tp",
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub tensor_parallel_size: u64,

    /// With --hf-config: pipeline-parallel size (aliases --pp and -pp).
    ///
    /// Example: --pipeline-parallel-size 2
    #[arg(
        long,
        visible_alias = "pp",
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub pipeline_parallel_size: u64,

    /// With --hf-config: data-parallel size (aliases --dp and -dp).
    ///
    /// Example: --data-parallel-size 2
    #[arg(
        long,
        visible_alias = "dp",
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub data_parallel_size: u64,

    /// With --hf-config: place whole MoE experts over the TP x DP ranks.
    #[arg(long)]
    pub enable_expert_parallel: bool,

    /// With --hf-config: also list the TP sizes up to 8 that divide the attention heads x PP 1,
    /// 2, 4 with the KV tokens each holds under the budget, and the smallest TP and TP x PP
    /// that fit --kv-tokens.
    #[arg(long)]
    pub layouts: bool,
}
