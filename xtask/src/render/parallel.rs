//! A parallel layout's report rendered: the table one row per distinct rank, the JSON every
//! rank, and the layout search's rows and answers.
//!
//! Invariants: renders what it is handed; computes no plan.

use circuit_hf::ParallelImport;
use memory_plan::{LayoutSearch, RankPlans};

use crate::CliError;
use crate::inputs::flags::OutputFormat;
use crate::out::outln;

/// What the report prints.
pub struct RankReport<'a> {
    /// The layout's import (shapes and the rank map).
    pub sharded: &'a ParallelImport,
    /// One plan per distinct rank.
    pub plans: &'a RankPlans,
    /// The device's name.
    pub device: &'a str,
    /// Rows planned.
    pub rows: u64,
    /// The budget per rank, bytes.
    pub budget: u64,
    /// The KV tokens a layout must hold (the search's target).
    pub kv_tokens: u64,
    /// The layout search, when asked (`--layouts`).
    pub search: Option<&'a LayoutSearch>,
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

/// Prints `r` as `format` asks.
pub fn print(r: &RankReport<'_>, format: OutputFormat) -> Result<(), CliError> {
    let (sharded, plans) = (r.sharded, r.plans);
    let query = r.search.map(|s| &s.layouts);
    let smallest_tp = r.search.and_then(|s| s.smallest_tp);
    let smallest_tp_pp = r.search.and_then(|s| s.smallest_tp_pp);
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
                "device": r.device,
                "rows": r.rows,
                "budget": r.budget,
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
        OutputFormat::Jsonl | OutputFormat::Csv => return Err(super::one_record(format)),
        OutputFormat::Table => {
            outln!(
                "{} | tp {} x pp {} x dp {}{} | {} rows | budget {} GiB per rank",
                r.device,
                p.tp,
                p.pp,
                p.dp,
                if p.expert_parallel { " (EP)" } else { "" },
                r.rows,
                gib(r.budget)
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
                    r.rows
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
                let kv = r.kv_tokens;
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
