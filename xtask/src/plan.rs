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
    PlanConfig, PlanError, PlanReport, Planner, ReportQuery, ReportSummary, RowReport, RowServing,
    Totals,
};

use crate::inputs::files::Input;
use crate::inputs::files::{HfFiles, source};
use crate::inputs::flags::PlanArgs;
use crate::inputs::modes::{self, Mode};
use crate::inputs::settings::import_options;
use crate::inputs::values::{parse_align, parse_budget, parse_rows, parse_set};
use crate::render::plan::{LayoutRanks, Storage};
use crate::render::{plan as report, svg};
use crate::{CliError, example, out};

pub fn run(args: &PlanArgs) -> Result<(), CliError> {
    crate::inputs::sglang::check(args)?;
    let mode = modes::check(args)?;
    if let (Mode::Engine, Some(name)) = (mode, &args.engine.engine) {
        if let Some(done) = crate::sglang::run_plan(args, name, import_options(args)?) {
            return done;
        }
        return crate::engine::run_plan(args, &args.engine, name, import_options(args)?);
    }
    let rows = parse_rows(&args.rows)?;
    let align = parse_align(&args.align)?;
    let budget = match (args.budget.as_deref(), args.engine.gpu_memory_utilization) {
        (Some(text), _) => Some(parse_budget(text)?),
        // vLLM's fraction of the device, as a serve line gives it: the budget without an
        // engine (the modes refuse it beside --budget).
        (None, Some(fraction)) => Some(utilization_budget(fraction)?),
        (None, None) => None,
    };
    let overrides = args
        .set
        .iter()
        .map(|s| parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;

    // The circuit, the families and rules that cover it by default, and the keys an imported
    // config left out (their defaults are reported, never applied silently).
    let mut parallel_import = None;
    let model_context;
    let (circuit, registry, config_defaults, storage) = match &args.hf_config {
        Some(path) => {
            let files = HfFiles::read(path)?;
            crate::inputs::settings::mm_limits_of(args, &files.text)?;
            let mut options = import_options(args)?;
            let import =
                circuit_hf::import_with(&files.text, &files.origin, &options, &files.side())?;
            modes::check_model(
                args,
                &import.facts,
                circuit_hf::has_vision_tower(&files.text, &files.origin)?,
                import.circuit.dim("experts_per_tok").is_some(),
            )?;
            let registry = [
                (example::HF_FAMILIES, example::HF_FAMILIES_ORIGIN),
                (example::HF_RULES, example::HF_RULES_ORIGIN),
            ];
            let storage = Storage::of(&import, &options);
            // The model's context as the newest vLLM derives it from the config
            // (max_position_embeddings with its rope scaling): what a serving engine allows.
            let newest = engines::select("vllm")?;
            model_context = Some(newest.model_len(&import.facts).longest);
            if let Some(layout) = args.parallel.layout() {
                options.parallel = layout;
                // A parallel layout without --engine is planned as the newest vLLM holds each
                // rank once loaded (its `[load]` rules: e.g. MXFP4 experts re-laid out), as
                // docs/parallel.md says.
                options.load = newest.load_rules_on(&crate::inputs::settings::device(args)?)?;
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
            let circuit = Circuit::from_toml(&text, &origin)?;
            model_context = circuit.context();
            (circuit, registry, Vec::new(), None)
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
    let query = ReportQuery {
        max_model_len: args.max_model_len,
        model_context,
        ..ReportQuery::new(budget)
    };
    if let Some((sharded, files, options)) = &parallel_import {
        let budget = budget.ok_or("a parallel plan needs a budget: --budget or a --device")?;
        let import = |layout| {
            let mut options = *options;
            options.parallel = layout;
            circuit_hf::import_parallel(&files.text, &files.origin, &options, &files.side())
        };
        let ctx = crate::parallel::Context {
            import: &import,
            args,
            plan: memory_plan::SearchInputs {
                families: &families,
                rules: &rules,
                settings: &settings,
                config: &config,
                rows: *rows.last().ok_or("--rows lists no row count")?,
                budget,
                target_kv_tokens: config.kv_tokens,
            },
            rows: &rows,
            query,
            device: &device,
            device_memory,
            config_defaults: &config_defaults,
            storage: storage.as_ref(),
        };
        return crate::parallel::report(sharded, &ctx);
    }
    let planner =
        Planner::new(&circuit, &families, &rules, settings, config).map_err(sequences_flag)?;
    let report = PlanReport::new(&planner, &rows, query)?;
    let ctx = report::Context {
        planner: &planner,
        device,
        device_memory,
        budget,
        max_model_len: args.max_model_len,
        model_context,
        config_defaults,
        storage,
        rows: &rows,
        node_lists: report.node_lists().to_vec(),
        layout: LayoutRanks::SINGLE,
        placeholders_asked: args.placeholders,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut render = report::renderer(args.format, &ctx);
    let mut outputs = Outputs::new(args, &rows);
    let summary = sweep(report, &ctx, render.as_mut(), &mut out, &mut outputs)?;
    outputs.write(args, &ctx, Some(&summary))
}

/// `--gpu-memory-utilization F` without an engine: the budget is F of the device, as with
/// `--budget F`; F is in (0, 1] as vLLM requires.
fn utilization_budget(fraction: f64) -> Result<crate::inputs::values::Budget, CliError> {
    let bad = || {
        format!(
            "--gpu-memory-utilization {fraction}: a fraction of the device above 0 and at most 1 (e.g. 0.9)"
        )
    };
    if !(fraction.is_finite() && fraction > 0.0 && fraction <= 1.0) {
        return Err(bad().into());
    }
    // Debug prints the shortest decimal that reads back as `fraction`, with its point.
    parse_budget(&format!("{fraction:?}")).map_err(|_| bad().into())
}

/// What a sweep keeps besides its rows: the chart's points, the arena at the largest row
/// count, and whether the per-node table is printed.
pub struct Outputs {
    /// The chart's points, when `--svg` is asked.
    pub chart: Option<svg::ChartPoints>,
    /// Whether to lay the arena of the largest row count out (`--arena-svg`).
    pub wants_arena: bool,
    /// The arena at the largest row count, once laid out.
    pub arena: Option<memory_plan::ArenaLayout>,
    /// Whether the summary carries the per-node table (`--per-node`).
    pub per_node: bool,
    /// The totals and serving answers of the last row planned (the largest).
    pub last: Option<(Totals, Option<RowServing>)>,
}

impl Outputs {
    pub fn new(args: &PlanArgs, rows: &[u64]) -> Outputs {
        Outputs {
            chart: args.svg.as_ref().map(|_| svg::ChartPoints::new(rows)),
            wants_arena: args.arena_svg.is_some(),
            arena: None,
            per_node: args.per_node,
            last: None,
        }
    }

    /// Draws what was asked (the sweep's summary, when it finished).
    pub fn write(
        &self,
        args: &PlanArgs,
        ctx: &report::Context<'_>,
        summary: Option<&ReportSummary>,
    ) -> Result<(), CliError> {
        if let (Some(path), Some(points), Some(summary)) = (&args.svg, &self.chart, summary) {
            svg::write_chart(path, ctx, points, summary)?;
        }
        if let (Some(path), Some(layout)) = (&args.arena_svg, &self.arena) {
            svg::write_arena(path, layout, ctx.planner.circuit())?;
        }
        Ok(())
    }
}

/// Plans every row of `report` through `render` into `out`, with the per-node table at the
/// largest row count when asked, keeping what the pictures need in `outputs`. A failure after
/// the header ends the document with the error, never half of it.
pub fn sweep(
    mut report: PlanReport<'_, '_>,
    ctx: &report::Context<'_>,
    render: &mut dyn report::Render,
    out: &mut dyn Write,
    outputs: &mut Outputs,
) -> Result<ReportSummary, CliError> {
    let planner = report.planner();
    let largest = ctx.rows[ctx.rows.len() - 1];
    let bar = Progress::new(ctx.rows.len());
    let mut header_written = false;
    let chart = &mut outputs.chart;
    let last = &mut outputs.last;
    let per_node_asked = outputs.per_node;
    let result = (|| -> Result<ReportSummary, CliError> {
        let summary = stream(
            &mut report,
            render,
            out,
            &mut header_written,
            &|| bar.tick(),
            |row| {
                if let Some(points) = chart.as_mut() {
                    points.add(row.plan);
                }
                *last = Some((row.plan.totals, row.serving));
            },
        );
        bar.finish();
        let summary = summary?;
        let per_node = if per_node_asked {
            Some(planner.per_node(largest)?)
        } else {
            None
        };
        render
            .summary(out, &summary, per_node.as_ref())
            .map_err(out::error)?;
        out.flush().map_err(out::error)?;
        Ok(summary)
    })();
    // A failure after the header ends the document with the error, never half of it.
    if let Err(e) = &result
        && header_written
        && !out::is_write_error(e)
    {
        let text = e.to_string();
        let message = circuit_ir::one_line(&text);
        render.failed(out, &message).map_err(out::error)?;
        out.flush().map_err(out::error)?;
    }
    let summary = result?;
    if outputs.wants_arena {
        outputs.arena = Some(report.arena_layout(largest)?);
    }
    Ok(summary)
}

/// Plans every row of `report`, writing the header and each row to `out` as it comes (`each`
/// sees every plan too); returns the summary, not yet written.
pub fn stream(
    report: &mut PlanReport<'_, '_>,
    render: &mut dyn report::Render,
    out: &mut dyn Write,
    header_written: &mut bool,
    progress: &(dyn Fn() + Sync),
    mut each: impl FnMut(&RowReport<'_>),
) -> Result<ReportSummary, CliError> {
    render.header(out).map_err(out::error)?;
    *header_written = true;
    report.run(progress, |row| -> Result<(), CliError> {
        render.row(out, row).map_err(out::error)?;
        each(row);
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
