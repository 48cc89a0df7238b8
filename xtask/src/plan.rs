//! `cargo xtask plan`: loads a circuit, its kernel families and fusion rules (files, or the
//! embedded Llama-3.1-8B example), plans it at every requested row count and streams the rows
//! to the renderer (`render/plan.rs`, `render/svg.rs`); hands a parallel layout to
//! `parallel.rs` and an engine start-up to `engine.rs`.
//!
//! Invariants: every input comes through `inputs`; the rows are planned in parallel and
//! printed in order, identical at any thread count.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use circuit_ir::Circuit;
use fuser::Rules;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kernel_families::Families;
use memory_plan::{
    MemoryPlan, PlanConfig, PlanError, PlanReport, Planner, ReportQuery, ReportSummary,
};

use crate::inputs::files::Input;
use crate::inputs::files::{HfFiles, source};
use crate::inputs::flags::PlanArgs;
use crate::inputs::settings::import_options;
use crate::inputs::values::{parse_align, parse_budget, parse_rows, parse_set};
use crate::render::plan::Storage;
use crate::render::{plan as report, svg};
use crate::{CliError, example, out};

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

    let (device, sm_count, device_memory) = match args.sm_count {
        Some(sm) => (format!("{sm} SMs"), sm, None),
        None => {
            let d = crate::inputs::settings::device(args)?;
            (d.name, d.sm_count, Some(d.memory_bytes))
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
            plan: memory_plan::SearchInputs {
                families: &families,
                rules: &rules,
                settings: &settings,
                config: &config,
                rows: largest,
                budget,
                target_kv_tokens: config.kv_tokens,
            },
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
