//! `cargo xtask plan`: loads a circuit, its kernel families and fusion rules (files, or the
//! embedded Llama-3.1-8B example), plans it at every requested row count and reports the bytes.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use circuit_ir::Circuit;
use fuser::Rules;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kernel_families::{Devices, Families};
use memory_plan::{
    MemoryPlan, PlanConfig, PlanError, PlanReport, Planner, ReportQuery, ReportSummary,
};

use crate::args::{parse_align, parse_budget, parse_rows, parse_set};
use crate::input::{self, Input};
use crate::{CliError, example, out, report, svg};

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
    #[arg(
        long,
        value_name = "DTYPE",
        default_value = "auto",
        requires = "hf_config"
    )]
    pub dtype: String,

    /// With --hf-config: the KV cache's storage: auto (the planned dtype) or fp8 (one byte
    /// per element, half a 16-bit cache).
    ///
    /// Example: --kv-cache-dtype fp8
    #[arg(
        long,
        value_name = "DTYPE",
        default_value = "auto",
        requires = "hf_config"
    )]
    pub kv_cache_dtype: String,

    /// With --hf-config: a multimodal checkpoint is loaded as its language model alone,
    /// without its vision tower and projector (vLLM's flag; vLLM then builds no tower and runs
    /// no encoder in its profile).
    ///
    /// Example: --language-model-only
    #[arg(long, requires = "hf_config")]
    pub language_model_only: bool,

    /// With --hf-config: vLLM's per-prompt limits of multimodal items, a JSON object of
    /// modality -> count (or -> {"count": N, ...}); an image limit of 0 is --language-model-only
    /// (the modelled multimodal models take images only); with --engine another image limit
    /// caps the images the profile run's encoder batch may hold.
    ///
    /// Example: --limit-mm-per-prompt '{"image": 0}'
    #[arg(long, value_name = "JSON", requires = "hf_config")]
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

    /// Also print the per-node table at the largest row count (folded by block).
    #[arg(long)]
    pub per_node: bool,

    /// Draw the total and each term against rows (log2 axis) as an SVG chart.
    ///
    /// Example: --svg plan.svg
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Draw the arena of the largest row count as an SVG memory map.
    ///
    /// Example: --arena-svg arena.svg
    #[arg(long, value_name = "FILE")]
    pub arena_svg: Option<PathBuf>,

    /// Give nodes no rule covers placeholder groups (reported) instead of failing.
    #[arg(long)]
    pub placeholders: bool,

    /// With --hf-config: the parallel layout (vLLM's flags), planned per rank.
    #[command(flatten)]
    pub parallel: crate::parallel::ParallelArgs,

    /// An engine's start-up (`--engine vllm`) with the engine's own flags.
    #[command(flatten)]
    pub engine: crate::engine::EngineArgs,
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

/// A config.json with the quantization side files next to it (the library reads no file),
/// read once and handed to every import of the run.
pub(crate) struct HfFiles {
    pub(crate) text: String,
    pub(crate) origin: String,
    /// Kind, path and text of each side file that exists.
    side: Vec<(circuit_hf::SideFileKind, String, String)>,
}

impl HfFiles {
    pub(crate) fn read(config: &Path) -> Result<HfFiles, CliError> {
        let dir = config.parent().unwrap_or(Path::new(""));
        let mut side = Vec::new();
        for kind in circuit_hf::SideFileKind::ALL {
            let path = dir.join(kind.file_name());
            if path.is_file() {
                side.push((
                    kind,
                    path.display().to_string(),
                    input::read(&path, Input::HfConfig)?,
                ));
            }
        }
        Ok(HfFiles {
            text: input::read(config, Input::HfConfig)?,
            origin: config.display().to_string(),
            side,
        })
    }

    pub(crate) fn side(&self) -> Vec<circuit_hf::SideFile<'_>> {
        self.side
            .iter()
            .map(|(kind, origin, text)| circuit_hf::SideFile {
                kind: *kind,
                origin,
                text,
            })
            .collect()
    }
}

/// The import options the flags ask for (`--dtype`, `--kv-cache-dtype`, `--quantization`),
/// one rank.
fn import_options(args: &PlanArgs) -> Result<circuit_hf::ImportOptions, CliError> {
    let mut options = circuit_hf::ImportOptions::default();
    options.dtype = args.dtype.parse().map_err(|e| format!("--dtype: {e}"))?;
    options.kv_cache_dtype =
        (args.kv_cache_dtype.parse()).map_err(|e| format!("--kv-cache-dtype: {e}"))?;
    options.online_quantization =
        (args.engine.quantization.parse()).map_err(|e| format!("--quantization: {e}"))?;
    options.language_model_only = args.language_model_only || image_limit(args)? == Some(0);
    Ok(options)
}

/// The images per prompt `--limit-mm-per-prompt` gives (None: the flag or its image entry is
/// absent, vLLM's default). The modelled multimodal wrappers (llama4, gemma3, mistral3, llava)
/// take images only, so a limit of 0 leaves them text-only.
pub(crate) fn image_limit(args: &PlanArgs) -> Result<Option<u64>, CliError> {
    match &args.limit_mm_per_prompt {
        Some(json) => {
            Ok(images_per_prompt(json).map_err(|e| format!("--limit-mm-per-prompt: {e}"))?)
        }
        None => Ok(None),
    }
}

/// The image limit of vLLM's `--limit-mm-per-prompt` JSON. Each limit is a count or an object
/// with a `count` (vLLM 0.19 `config/multimodal.py`, `limit_per_prompt`); an absent modality
/// keeps vLLM's default.
fn images_per_prompt(json: &str) -> Result<Option<u64>, String> {
    let expected = r#"expected a JSON object of modality -> count, such as {"image": 0}"#;
    let limits: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| format!("{expected} ({e})"))?;
    let mut image = None;
    for (modality, limit) in &limits {
        let count = limit
            .get("count")
            .unwrap_or(limit)
            .as_u64()
            .ok_or_else(|| format!("`{modality}`: {limit} is not a count; {expected}"))?;
        if modality != "image" {
            // vLLM 0.19 keeps a limit only for the modalities the model's processor supports
            // (multimodal/processing/context.py:408-428, allowed_mm_limits), so another
            // modality's limit would change nothing: refused rather than dropped.
            return Err(format!(
                "`{}`: the modelled multimodal models (llama4, gemma3, mistral3, llava) take images only, and vLLM ignores a limit for a modality the model does not take; give limits for `image` only",
                circuit_ir::one_line(modality)
            ));
        }
        image = Some(count);
    }
    Ok(image)
}

/// A text from a file, or the embedded default, with the name errors should use.
fn source(
    path: Option<&PathBuf>,
    kind: Input,
    text: &'static str,
    origin: &'static str,
) -> Result<(String, String), CliError> {
    match path {
        Some(p) => Ok((input::read(p, kind)?, p.display().to_string())),
        None => Ok((text.to_owned(), origin.to_owned())),
    }
}

/// The dtypes and quantization an imported config is planned with.
#[derive(serde::Serialize)]
pub struct Storage {
    /// The dtype of unquantized tensors, activations and the KV cache unless fp8.
    pub planned: String,
    /// Where it comes from: `torch_dtype`, the default, or `--dtype`.
    pub source: String,
    /// The KV cache's format.
    pub kv_cache: String,
    /// The quantization, in one line, when the checkpoint is quantized.
    pub quantization: Option<String>,
}

impl Storage {
    fn of(import: &circuit_hf::Import, asked: &circuit_hf::ImportOptions) -> Storage {
        let source = if asked.dtype.0.is_some() && import.dtype != import.stored_dtype {
            format!(
                "--dtype, converted from the checkpoint's {}",
                import.stored_dtype
            )
        } else if import.defaults.iter().any(|(k, _)| k == "torch_dtype") {
            "torch_dtype absent: assumed".to_owned()
        } else {
            "torch_dtype".to_owned()
        };
        Storage {
            planned: import.dtype.to_string(),
            source,
            kv_cache: import.kv_cache_format.clone(),
            quantization: import.quantization.as_ref().map(|q| {
                format!(
                    "{} ({}) on {} of {} linear weights, from {}",
                    q.method, q.summary, q.quantized, q.linear, q.source
                )
            }),
        }
    }
}

pub fn run(args: &PlanArgs) -> Result<(), CliError> {
    // Before the engine's branch too: vLLM would refuse 0 (and an engine started with no
    // context serves nothing), never a "0.00x" concurrency.
    if args.max_model_len == Some(0) {
        return Err(
            "--max-model-len 0: a sequence holds at least 1 token; write e.g. --max-model-len 8192"
                .into(),
        );
    }
    if let Some(name) = &args.engine.engine {
        return crate::engine::run_plan(args, &args.engine, name, import_options(args)?);
    }
    let rows = parse_rows(&args.rows)?;
    let align = parse_align(&args.align)?;
    let budget = args.budget.as_deref().map(parse_budget).transpose()?;
    let overrides = args
        .set
        .iter()
        .map(|s| parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;

    // The circuit, the families and rules that cover it by default, and the keys an imported
    // config left out (their defaults are reported, never applied silently).
    let mut parallel_import = None;
    if args.parallel.layout().is_some() && args.hf_config.is_none() {
        return Err("--tensor-parallel-size, --pipeline-parallel-size, --data-parallel-size and --enable-expert-parallel need --hf-config".into());
    }
    let (circuit, registry, config_defaults, storage) = match &args.hf_config {
        Some(path) => {
            let files = HfFiles::read(path)?;
            let mut options = import_options(args)?;
            let import =
                circuit_hf::import_with(&files.text, &files.origin, &options, &files.side())?;
            let registry = [
                (example::HF_FAMILIES, example::HF_FAMILIES_ORIGIN),
                (example::HF_RULES, example::HF_RULES_ORIGIN),
            ];
            let storage = Storage::of(&import, &options);
            if let Some(layout) = args.parallel.layout() {
                options.parallel = layout;
                // A parallel layout without --engine is planned as the newest vLLM holds each
                // rank once loaded (its `[load]` rules: e.g. MXFP4 experts re-laid out), as
                // docs/parallel.md says.
                options.load = engines::select("vllm")?.load_rules();
                let sharded = circuit_hf::import_parallel(
                    &files.text,
                    &files.origin,
                    &options,
                    &files.side(),
                )?;
                parallel_import = Some((sharded, files, options));
            }
            (import.circuit, registry, import.defaults, Some(storage))
        }
        None => {
            let (text, origin) = source(
                args.circuit.as_ref(),
                Input::Circuit,
                example::CIRCUIT,
                example::CIRCUIT_ORIGIN,
            )?;
            let registry = [
                (example::FAMILIES, example::FAMILIES_ORIGIN),
                (example::RULES, example::RULES_ORIGIN),
            ];
            (
                Circuit::from_toml(&text, &origin)?,
                registry,
                Vec::new(),
                None,
            )
        }
    };
    let (text, origin) = source(
        args.families.as_ref(),
        Input::Families,
        registry[0].0,
        registry[0].1,
    )?;
    let families = Families::from_toml(&text, &origin)?;
    if let Some(first) = families.check(&circuit).first() {
        return Err(first.to_string().into());
    }
    let (text, origin) = source(
        args.rules.as_ref(),
        Input::Rules,
        registry[1].0,
        registry[1].1,
    )?;
    let rules = Rules::from_toml(&text, &origin, Some(&families))?;
    let settings = rules.settings(
        overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        "--set",
    )?;

    let (device, sm_count, device_memory) = match (args.sm_count, &args.device) {
        (Some(sm), _) => (format!("{sm} SMs"), sm, None),
        (None, name) => {
            let name = name.as_deref().unwrap_or("h100-sxm");
            let d = Devices::builtin()?.get(name)?;
            (d.name.clone(), d.sm_count, Some(d.memory_bytes))
        }
    };
    let budget = match budget {
        Some(b) => Some(b.bytes(device_memory)?),
        None => device_memory,
    };
    let config = PlanConfig {
        kv_tokens: args.kv_tokens,
        sequences: args.sequences,
        align,
        placeholders: args.placeholders,
        ..PlanConfig::new(sm_count)
    };
    if let Some((sharded, files, options)) = &parallel_import {
        let largest = *rows.last().ok_or("--rows lists no row count")?;
        let budget = budget.ok_or("a parallel plan needs a budget: --budget or a --device")?;
        let import = |layout| {
            let mut options = *options;
            options.parallel = layout;
            circuit_hf::import_parallel(&files.text, &files.origin, &options, &files.side())
        };
        let ctx = crate::parallel::Context {
            import: &import,
            layouts: args.parallel.layouts,
            families: &families,
            rules: &rules,
            settings: &settings,
            config: &config,
            rows: largest,
            budget,
            device: &device,
        };
        return crate::parallel::report(sharded, &ctx, args.format);
    }
    let planner =
        Planner::new(&circuit, &families, &rules, settings, config).map_err(sequences_flag)?;
    let query = ReportQuery {
        max_model_len: args.max_model_len,
        ..ReportQuery::new(budget)
    };
    let mut report = PlanReport::new(&planner, &rows, query)?;
    let ctx = report::Context {
        planner: &planner,
        device,
        device_memory,
        budget,
        max_model_len: args.max_model_len,
        config_defaults,
        storage,
        rows: &rows,
        node_lists: report.node_lists().to_vec(),
    };
    let largest = rows[rows.len() - 1];
    let mut chart = args.svg.as_ref().map(|_| svg::ChartPoints::new(&rows));
    let mut render = report::renderer(args.format, &ctx);
    let mut out = BufWriter::new(io::stdout().lock());
    let bar = Progress::new(rows.len());
    let mut header_written = false;
    let result = (|| -> Result<(), CliError> {
        let summary = stream(
            &mut report,
            render.as_mut(),
            &mut out,
            &mut header_written,
            &|| bar.tick(),
            |plan| {
                if let Some(points) = &mut chart {
                    points.add(plan);
                }
            },
        );
        bar.finish();
        let summary = summary?;
        let per_node = if args.per_node {
            Some(planner.per_node(largest)?)
        } else {
            None
        };
        if let (Some(path), Some(points)) = (&args.svg, &chart) {
            svg::write_chart(path, &ctx, points, &summary)?;
        }
        if let Some(path) = &args.arena_svg {
            svg::write_arena(path, &report.arena_layout(largest)?, planner.circuit())?;
        }
        render
            .summary(&mut out, &summary, per_node.as_ref())
            .map_err(out::error)?;
        out.flush().map_err(out::error)
    })();
    // A failure after the header ends the document with the error, never half of it.
    if let Err(e) = &result
        && header_written
        && !out::is_write_error(e)
    {
        let text = e.to_string();
        let message = circuit_ir::one_line(&text);
        render.failed(&mut out, &message).map_err(out::error)?;
        out.flush().map_err(out::error)?;
    }
    result
}

/// Plans every row of `report`, writing the header and each row to `out` as it comes (`each`
/// sees every plan too); returns the summary, not yet written.
pub fn stream(
    report: &mut PlanReport<'_, '_>,
    render: &mut dyn report::Render,
    out: &mut dyn Write,
    header_written: &mut bool,
    progress: &(dyn Fn() + Sync),
    mut each: impl FnMut(&MemoryPlan),
) -> Result<ReportSummary, CliError> {
    render.header(out).map_err(out::error)?;
    *header_written = true;
    report.run(progress, |row| -> Result<(), CliError> {
        render.row(out, row).map_err(out::error)?;
        each(row.plan);
        Ok(())
    })
}

/// The planner's refusal of zero sequences, in terms of the flag that set them.
fn sequences_flag(e: PlanError) -> CliError {
    match e {
        PlanError::ZeroSequences => format!("{e}; give --sequences 1 or more").into(),
        e => e.into(),
    }
}

/// A progress bar on stderr, shown only on a terminal and only once planning has run for a
/// second.
struct Progress {
    bar: ProgressBar,
    on_terminal: bool,
    shown: AtomicBool,
    start: Instant,
}

impl Progress {
    fn new(rows: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(rows as u64), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("planning {pos}/{len} row counts {wide_bar} {eta} left")
                .expect("a valid progress template"),
        );
        Progress {
            bar,
            on_terminal: std::io::stderr().is_terminal(),
            shown: AtomicBool::new(false),
            start: Instant::now(),
        }
    }

    fn tick(&self) {
        self.bar.inc(1);
        if self.on_terminal
            && self.start.elapsed() > Duration::from_secs(1)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
