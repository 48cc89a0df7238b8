//! `cargo xtask plan --hf-config ... --tensor-parallel-size N ...`: the parallel layout's
//! flags, the per-rank report (the table one row per distinct rank, the JSON every rank) and
//! the layout query (`--layouts`: KV tokens of each TP x PP side by side, the smallest that
//! fits).

use circuit_hf::{Parallel, ParallelImport};
use fuser::{Rules, Settings};
use kernel_families::Families;
use memory_plan::{LayoutSearch, PlanConfig, RankPlans, SearchInputs};

use crate::CliError;
use crate::out::outln;
use crate::plan::OutputFormat;

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

impl ParallelArgs {
    /// The layout asked for, `None` for a single rank without a layout query.
    pub fn layout(&self) -> Option<Parallel> {
        let p = Parallel {
            tp: self.tensor_parallel_size,
            pp: self.pipeline_parallel_size,
            dp: self.data_parallel_size,
            expert_parallel: self.enable_expert_parallel,
        };
        (p != Parallel::SINGLE || self.layouts).then_some(p)
    }
}

/// What planning a layout needs.
pub struct Context<'a> {
    pub families: &'a Families,
    pub rules: &'a Rules,
    pub settings: &'a Settings,
    pub config: &'a PlanConfig,
    pub rows: u64,
    pub budget: u64,
    pub device: &'a str,
    /// Imports the config for another layout (the `--layouts` query).
    pub import: &'a dyn Fn(Parallel) -> Result<ParallelImport, circuit_hf::HfError>,
    pub layouts: bool,
}

fn plan(sharded: &ParallelImport, ctx: &Context<'_>) -> Result<RankPlans, CliError> {
    let circuits: Vec<_> = sharded.imports.iter().map(|i| &i.circuit).collect();
    for c in &circuits {
        if let Some(first) = ctx.families.check(c).first() {
            return Err(first.to_string().into());
        }
    }
    Ok(RankPlans::plan(
        &circuits,
        &sharded.rank_shape,
        ctx.families,
        ctx.rules,
        ctx.settings,
        ctx.config,
        ctx.rows,
        ctx.budget,
    )?)
}

fn gib(bytes: u64) -> String {
    format!("{:.3}", bytes as f64 / (1u64 << 30) as f64)
}

fn tokens(t: Option<u64>) -> String {
    match t {
        None => "none".to_owned(),
        Some(u64::MAX) => "unbounded".to_owned(),
        Some(t) => t.to_string(),
    }
}

/// The `--layouts` query: TP x PP layouts side by side (memory-plan's layout search).
fn layouts(ctx: &Context<'_>, heads: u64) -> Result<LayoutSearch, CliError> {
    let inputs = SearchInputs {
        families: ctx.families,
        rules: ctx.rules,
        settings: ctx.settings,
        config: ctx.config,
        rows: ctx.rows,
        budget: ctx.budget,
        target_kv_tokens: ctx.config.kv_tokens,
    };
    Ok(LayoutSearch::run(heads, &inputs, |tp, pp| {
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
    let query = search.as_ref().map(|s| &s.layouts);
    let smallest_tp = search.as_ref().and_then(|s| s.smallest_tp);
    let smallest_tp_pp = search.as_ref().and_then(|s| s.smallest_tp_pp);
    let p = sharded.parallel;
    match format {
        OutputFormat::Json => {
            let ranks: Vec<_> = sharded
                .rank_shape
                .iter()
                .enumerate()
                .map(|(index, &s)| {
                    let rank = p.rank(index as u64);
                    let shape = sharded.shapes[s];
                    let plan = &plans.plans[s];
                    serde_json::json!({
                        "rank": index, "tp_rank": rank.tp, "pp_rank": rank.pp, "dp_rank": rank.dp,
                        "layers": [shape.layers.0, shape.layers.1],
                        "local_experts": shape.local_experts,
                        "totals": plan.plan.totals,
                        "kv": plan.kv,
                    })
                })
                .collect();
            let out = serde_json::json!({
                "device": ctx.device,
                "rows": ctx.rows,
                "budget": ctx.budget,
                "parallel": {"tp": p.tp, "pp": p.pp, "dp": p.dp, "expert_parallel": p.expert_parallel},
                "ranks": ranks,
                "kv_tokens": plans.kv_tokens(),
                "max_rank_total": plans.max_total(),
                "layouts": query,
                "smallest_tp": smallest_tp,
                "smallest_tp_pp": smallest_tp_pp.map(|(tp, pp)| serde_json::json!({"tp": tp, "pp": pp})),
            });
            outln!("{}", serde_json::to_string_pretty(&out)?);
        }
        OutputFormat::Jsonl | OutputFormat::Csv => return Err(crate::engine::one_record(format)),
        OutputFormat::Table => {
            outln!(
                "{} | tp {} x pp {} x dp {}{} | {} rows | budget {} GiB per rank",
                ctx.device,
                p.tp,
                p.pp,
                p.dp,
                if p.expert_parallel { " (EP)" } else { "" },
                ctx.rows,
                gib(ctx.budget)
            );
            outln!(
                "{:<16} {:>9} {:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12}",
                "ranks",
                "layers",
                "experts",
                "weights",
                "activations",
                "workspaces",
                "kv",
                "total",
                "kv tokens"
            );
            for (s, shape) in sharded.shapes.iter().enumerate() {
                let ranks: Vec<String> = sharded
                    .rank_shape
                    .iter()
                    .enumerate()
                    .filter(|&(_, &x)| x == s)
                    .map(|(r, _)| r.to_string())
                    .collect();
                let t = plans.plans[s].plan.totals;
                outln!(
                    "{:<16} {:>9} {:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12}",
                    ranks.join(","),
                    format!("{}..{}", shape.layers.0, shape.layers.1),
                    shape
                        .local_experts
                        .map_or("all".to_owned(), |e| e.to_string()),
                    gib(t.weights),
                    gib(t.activations),
                    gib(t.workspaces),
                    gib(t.states),
                    gib(t.total),
                    tokens(plans.plans[s].kv.max_kv_tokens),
                );
            }
            outln!(
                "(GiB) KV capacity of the layout, the minimum over ranks: {} tokens",
                tokens(plans.kv_tokens())
            );
            if let Some(q) = &query {
                outln!(
                    "\nlayouts (dp 1), KV tokens under the budget at {} rows:",
                    ctx.rows
                );
                outln!(
                    "{:>4} {:>4} {:>14} {:>14}",
                    "tp",
                    "pp",
                    "max rank GiB",
                    "kv tokens"
                );
                for r in q.iter() {
                    match &r.error {
                        Some(e) => outln!("{:>4} {:>4}  does not shard: {e}", r.tp, r.pp),
                        None => outln!(
                            "{:>4} {:>4} {:>14} {:>14}",
                            r.tp,
                            r.pp,
                            gib(r.max_rank_total.unwrap_or(0)),
                            tokens(r.kv_tokens)
                        ),
                    }
                }
                let kv = ctx.config.kv_tokens;
                match smallest_tp {
                    Some(tp) => outln!("smallest TP holding {kv} KV tokens: {tp}"),
                    None => outln!("no TP listed holds {kv} KV tokens"),
                }
                match smallest_tp_pp {
                    Some((tp, pp)) => {
                        outln!("smallest TP x PP holding {kv} KV tokens: tp {tp} x pp {pp}")
                    }
                    None => outln!("no TP x PP listed holds {kv} KV tokens"),
                }
            }
        }
    }
    Ok(())
}
