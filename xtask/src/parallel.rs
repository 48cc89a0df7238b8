//! `cargo xtask plan --hf-config ... --tensor-parallel-size N ...`: every distinct rank of the
//! layout swept over `--rows` as a plain plan is (its table, JSON, JSON lines or CSV, with the
//! ranks it stands for), then the layout's answers (the largest row count every rank fits, the
//! KV tokens and sequences the layout holds there: the minimum over its ranks), the charts of
//! the rank with the largest total and, with `--layouts`, the layout search; the renderer
//! (`render/parallel.rs`) prints the layout's parts.
//!
//! Invariants: ranks that share a circuit are planned once; the layout's KV capacity is the
//! minimum over its ranks (memory-plan's), as an engine sizes one cache for all.

use std::io::{self, BufWriter, Write};

use circuit_hf::{Parallel, ParallelImport};
use memory_plan::{LayoutSearch, PlanReport, Planner, ReportQuery, SearchInputs};

use crate::inputs::flags::PlanArgs;
use crate::plan::{Outputs, sweep};
use crate::render::parallel::{DistinctRank, LayoutAnswers, RankReport};
use crate::render::plan::{self as report, LayoutRanks, Storage};
use crate::{CliError, out};

/// What planning a layout needs.
pub struct Context<'a> {
    /// The registries, settings, largest row count, per-rank budget and KV target each layout
    /// of the search is planned with (memory-plan's).
    pub plan: SearchInputs<'a>,
    /// The flags (format, pictures, per-node table, layout search).
    pub args: &'a PlanArgs,
    /// The row counts swept, ascending.
    pub rows: &'a [u64],
    /// The budget and context lengths the answers are for.
    pub query: ReportQuery,
    pub device: &'a str,
    pub device_memory: Option<u64>,
    /// Keys the config left out, with the defaults used.
    pub config_defaults: &'a [(String, String)],
    /// The dtypes the config is planned in.
    pub storage: Option<&'a Storage>,
    /// Imports the config for another layout (the `--layouts` query).
    pub import: &'a dyn Fn(Parallel) -> Result<ParallelImport, circuit_hf::HfError>,
}

/// The `--layouts` query: TP x PP layouts side by side (memory-plan's layout search).
fn layouts(ctx: &Context<'_>, heads: u64) -> Result<LayoutSearch, CliError> {
    Ok(LayoutSearch::run(heads, &ctx.plan, |tp, pp| {
        let layout = Parallel {
            tp,
            pp,
            dp: 1,
            expert_parallel: false,
        };
        (ctx.import)(layout)
            .map(|sharded| {
                let circuits = sharded.imports.into_iter().map(|i| i.circuit).collect();
                (circuits, sharded.rank_shape)
            })
            .map_err(|e| e.to_string())
    })?)
}

/// The global ranks of shape `index`, ascending.
pub fn ranks_of(sharded: &ParallelImport, index: usize) -> Vec<u64> {
    sharded
        .rank_shape
        .iter()
        .enumerate()
        .filter(|&(_, &s)| s == index)
        .map(|(r, _)| r as u64)
        .collect()
}

/// What the ranks of shape `index` hold, in words.
fn holds(sharded: &ParallelImport, index: usize) -> String {
    let shape = sharded.shapes[index];
    let experts = match shape.local_experts {
        Some(e) => format!(", {e} experts per sparse layer"),
        None => String::new(),
    };
    format!(
        "stage {} of {}, layers {}..{}{experts}",
        shape.stage, sharded.parallel.pp, shape.layers.0, shape.layers.1
    )
}

/// Sweeps every distinct rank of `sharded` and prints the layout's answers.
pub fn report(sharded: &ParallelImport, ctx: &Context<'_>) -> Result<(), CliError> {
    let args = ctx.args;
    let p = sharded.parallel;
    let inputs = &ctx.plan;
    let planners = sharded
        .imports
        .iter()
        .map(|import| {
            if let Some(first) = inputs.families.check(&import.circuit).first() {
                return Err(CliError::from(first.to_string()));
            }
            Ok(Planner::new(
                &import.circuit,
                inputs.families,
                inputs.rules,
                inputs.settings.clone(),
                *inputs.config,
            )?)
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let search = if args.parallel.layouts {
        Some(layouts(ctx, sharded.imports[0].facts.num_attention_heads)?)
    } else {
        None
    };
    let budget = inputs.budget;
    let rank_report = RankReport {
        sharded,
        device: ctx.device,
        rows: ctx.rows,
        budget,
        kv_tokens: inputs.target_kv_tokens,
        search: search.as_ref(),
    };
    let format = args.format;
    let mut out = BufWriter::new(io::stdout().lock());
    rank_report.begin(&mut out, format).map_err(out::error)?;
    let mut ranks = Vec::new();
    let result = (|| -> Result<(), CliError> {
        for (index, planner) in planners.iter().enumerate() {
            let layout = LayoutRanks {
                tp: p.tp,
                pp: p.pp,
                dp: p.dp,
                ranks: ranks_of(sharded, index),
                holds: Some(holds(sharded, index)),
            };
            let report = PlanReport::new(planner, ctx.rows, ctx.query)?;
            let rctx = report::Context {
                planner,
                device: ctx.device.to_owned(),
                device_memory: ctx.device_memory,
                budget: Some(budget),
                max_model_len: ctx.query.max_model_len,
                model_context: ctx.query.model_context,
                config_defaults: ctx.config_defaults.to_vec(),
                storage: ctx.storage.cloned(),
                rows: ctx.rows,
                node_lists: report.node_lists().to_vec(),
                layout,
                placeholders_asked: args.placeholders,
            };
            rank_report
                .between(&mut out, format, index)
                .map_err(out::error)?;
            let mut render = report::renderer(format, &rctx);
            let mut outputs = Outputs::new(args, ctx.rows);
            // The pictures are of one rank, chosen once every rank is planned.
            outputs.wants_arena = false;
            let summary = sweep(report, &rctx, render.as_mut(), &mut out, &mut outputs)?;
            ranks.push(DistinctRank {
                index,
                summary,
                last: outputs.last,
                chart: outputs.chart,
            });
        }
        Ok(())
    })();
    if let Err(e) = result {
        // The document ends whole: each rank's renderer closed its own part.
        if !out::is_write_error(&e) {
            rank_report.failed(&mut out, format).map_err(out::error)?;
            out.flush().map_err(out::error)?;
        }
        return Err(e);
    }
    let answers = LayoutAnswers::of(&planners, &ranks, sharded, ctx.query, budget)?;
    rank_report
        .end(&mut out, format, &ranks, &answers)
        .map_err(out::error)?;
    out.flush().map_err(out::error)?;
    drop(out);

    // The pictures: the rank with the largest total, drawn as a plain plan's.
    let worst = &ranks[answers.worst];
    let planner = &planners[worst.index];
    if args.svg.is_some() || args.arena_svg.is_some() {
        let rctx = report::Context {
            planner,
            device: format!(
                "{} (ranks {} of tp {} x pp {} x dp {}, the largest total)",
                ctx.device,
                report::rank_runs(&ranks_of(sharded, worst.index)),
                p.tp,
                p.pp,
                p.dp
            ),
            device_memory: ctx.device_memory,
            budget: Some(budget),
            max_model_len: ctx.query.max_model_len,
            model_context: ctx.query.model_context,
            config_defaults: Vec::new(),
            storage: None,
            rows: ctx.rows,
            node_lists: Vec::new(),
            layout: LayoutRanks::SINGLE,
            placeholders_asked: false,
        };
        let arena = match &args.arena_svg {
            Some(_) => Some(planner.arena_layout(*ctx.rows.last().ok_or("no rows")?)?),
            None => None,
        };
        let outputs = Outputs {
            chart: worst.chart.clone(),
            wants_arena: arena.is_some(),
            arena,
            per_node: false,
            last: None,
        };
        outputs.write(args, &rctx, Some(&worst.summary))?;
    }
    Ok(())
}
