//! `cargo xtask plan --hf-config ... --tensor-parallel-size N ...`: plans every distinct rank
//! of the layout (memory-plan's `RankPlans`) and, with `--layouts`, the layout search; the
//! renderer (`render/parallel.rs`) prints them.
//!
//! Invariants: ranks that share a circuit are planned once; the layout's KV capacity is the
//! minimum over its ranks (memory-plan's).

use circuit_hf::{Parallel, ParallelImport};
use memory_plan::{LayoutSearch, RankPlans, SearchInputs};

use crate::CliError;
use crate::inputs::flags::OutputFormat;
use crate::render::parallel::{RankReport, print};

/// What planning a layout needs.
pub struct Context<'a> {
    /// The registries, settings, rows, per-rank budget and KV target each layout is planned
    /// with (memory-plan's, shared with the layout search).
    pub plan: SearchInputs<'a>,
    pub device: &'a str,
    /// Imports the config for another layout (the `--layouts` query).
    pub import: &'a dyn Fn(Parallel) -> Result<ParallelImport, circuit_hf::HfError>,
    pub layouts: bool,
}

fn plan(sharded: &ParallelImport, ctx: &Context<'_>) -> Result<RankPlans, CliError> {
    let circuits: Vec<_> = sharded.imports.iter().map(|i| &i.circuit).collect();
    for c in &circuits {
        if let Some(first) = ctx.plan.families.check(c).first() {
            return Err(first.to_string().into());
        }
    }
    Ok(RankPlans::plan(
        &circuits,
        &sharded.rank_shape,
        ctx.plan.families,
        ctx.plan.rules,
        ctx.plan.settings,
        ctx.plan.config,
        ctx.plan.rows,
        ctx.plan.budget,
    )?)
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

/// Prints the per-rank report of `sharded` (and the layout query when asked).
pub fn report(
    sharded: &ParallelImport,
    ctx: &Context<'_>,
    format: OutputFormat,
) -> Result<(), CliError> {
    let plans = plan(sharded, ctx)?;
    let search = if ctx.layouts {
        Some(layouts(ctx, sharded.imports[0].facts.num_attention_heads)?)
    } else {
        None
    };
    print(
        &RankReport {
            sharded,
            plans: &plans,
            device: ctx.device,
            rows: ctx.plan.rows,
            budget: ctx.plan.budget,
            kv_tokens: ctx.plan.target_kv_tokens,
            search: search.as_ref(),
        },
        format,
    )
}
