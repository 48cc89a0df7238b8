//! A parallel layout's report rendered around its distinct ranks' sweeps (each a plain plan's
//! table, JSON object, JSON lines or CSV lines, `render/plan.rs`): what comes before the first
//! rank, between two, and after the last (the layout's answers and the layout search).
//!
//! Invariants: renders what it is handed and plans nothing; the layout's answers are the
//! minimum over its ranks, computed once (`LayoutAnswers::of`) for every format; a JSON
//! document ends whole even when a rank's sweep fails.

use std::io::{self, Write};

use circuit_hf::ParallelImport;
use memory_plan::{LayoutSearch, Planner, ReportQuery, ReportSummary, RowServing, Totals};

use crate::CliError;
use crate::inputs::flags::OutputFormat;
use crate::render::plan::{human, rank_runs};
use crate::render::svg::ChartPoints;

/// What the report prints around the ranks.
pub struct RankReport<'a> {
    /// The layout's import (shapes and the rank map).
    pub sharded: &'a ParallelImport,
    /// The device's name.
    pub device: &'a str,
    /// Rows planned, ascending.
    pub rows: &'a [u64],
    /// The budget per rank, bytes.
    pub budget: u64,
    /// The KV tokens a layout must hold (the search's target).
    pub kv_tokens: u64,
    /// The layout search, when asked (`--layouts`).
    pub search: Option<&'a LayoutSearch>,
}

/// One distinct rank, swept.
pub struct DistinctRank {
    /// Its shape's index in the import.
    pub index: usize,
    /// Its report's answers.
    pub summary: ReportSummary,
    /// Its totals and serving answers at the largest row count.
    pub last: Option<(Totals, Option<RowServing>)>,
    /// Its chart's points, when `--svg` is asked.
    pub chart: Option<ChartPoints>,
}

/// The layout's answers: the minimum over its ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutAnswers {
    /// The index (into the ranks swept) of the rank with the largest total.
    pub worst: usize,
    /// The largest total of any rank at the largest row count.
    pub max_rank_total: u64,
    /// KV tokens the layout holds at the largest row count (`None`: some rank fits none).
    pub kv_tokens_at_largest: Option<u64>,
    /// The largest row count that fits on every rank (`None`: not every rank fits one).
    pub rows: Option<u64>,
    /// At `rows`: the KV tokens the layout holds, and the first global rank that limits them.
    pub kv_tokens: Option<(Option<u64>, u64)>,
    /// At `rows`: the sequences of --max-model-len tokens the layout holds.
    pub max_concurrency: Option<u64>,
}

impl LayoutAnswers {
    /// The answers of the ranks swept (`planners` in shape order).
    pub fn of(
        planners: &[Planner<'_>],
        ranks: &[DistinctRank],
        sharded: &ParallelImport,
        query: ReportQuery,
        budget: u64,
    ) -> Result<LayoutAnswers, CliError> {
        let total_at_largest = |r: &DistinctRank| r.last.map_or(0, |(t, _)| t.total);
        let worst = (0..ranks.len())
            .max_by_key(|&i| (total_at_largest(&ranks[i]), std::cmp::Reverse(i)))
            .unwrap_or(0);
        let kv_at_largest = ranks
            .iter()
            .map(|r| r.last.and_then(|(_, s)| s).and_then(|s| s.kv_tokens))
            .try_fold(u64::MAX, |min, t| t.map(|t| min.min(t)));
        let rows = ranks
            .iter()
            .map(|r| r.summary.fit.as_ref().and_then(|f| f.max_rows))
            .try_fold(u64::MAX, |min, n| n.map(|n| min.min(n)));
        let mut kv_tokens = None;
        let mut max_concurrency = None;
        if let Some(n) = rows {
            let mut least: Option<(Option<u64>, u64)> = None;
            for r in ranks {
                let plan = planners[r.index].plan(n)?;
                let s = planners[r.index].row_serving(&plan, budget, query.max_model_len);
                let first = crate::parallel::ranks_of(sharded, r.index)[0];
                let smaller = match least {
                    None => true,
                    Some((held, _)) => s.kv_tokens.unwrap_or(0) < held.unwrap_or(0),
                };
                if smaller {
                    least = Some((s.kv_tokens, first));
                }
                if let Some(m) = s.max_sequences {
                    max_concurrency = Some(max_concurrency.map_or(m, |c: u64| c.min(m)));
                }
            }
            kv_tokens = least;
        }
        Ok(LayoutAnswers {
            worst,
            max_rank_total: ranks.iter().map(total_at_largest).max().unwrap_or(0),
            kv_tokens_at_largest: kv_at_largest,
            rows,
            kv_tokens,
            max_concurrency,
        })
    }
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

impl RankReport<'_> {
    fn parallel_json(&self) -> serde_json::Value {
        let p = self.sharded.parallel;
        serde_json::json!({"tp": p.tp, "pp": p.pp, "dp": p.dp, "expert_parallel": p.expert_parallel})
    }

    /// Before the first rank.
    pub fn begin(&self, out: &mut dyn Write, format: OutputFormat) -> io::Result<()> {
        let p = self.sharded.parallel;
        match format {
            OutputFormat::Table => {
                writeln!(
                    out,
                    "layout    tp {} x pp {} x dp {}{} on {}: {} ranks, {} distinct; budget {} per rank",
                    p.tp,
                    p.pp,
                    p.dp,
                    if p.expert_parallel { " (EP)" } else { "" },
                    self.device,
                    self.sharded.rank_shape.len(),
                    self.sharded.shapes.len(),
                    human(self.budget)
                )?;
                writeln!(
                    out,
                    "          each distinct rank below is planned over the rows as one device; the layout's answers follow them"
                )
            }
            OutputFormat::Json => {
                let head = serde_json::json!({
                    "schema": super::plan::SCHEMA,
                    "device": self.device,
                    "budget": self.budget,
                    "parallel": self.parallel_json(),
                });
                let serde_json::Value::Object(map) = head else {
                    return Ok(());
                };
                writeln!(out, "{{")?;
                for (k, v) in map {
                    writeln!(out, "  {}: {},", serde_json::to_string(&k)?, v)?;
                }
                writeln!(out, "  \"distinct\": [")
            }
            OutputFormat::Jsonl => {
                let record = serde_json::json!({
                    "record": "layout",
                    "schema": super::plan::SCHEMA,
                    "device": self.device,
                    "budget": self.budget,
                    "parallel": self.parallel_json(),
                    "rank_shape": self.sharded.rank_shape,
                });
                writeln!(out, "{record}")
            }
            OutputFormat::Csv => Ok(()),
        }
    }

    /// Before the rank of shape `index` (after the previous one).
    pub fn between(
        &self,
        out: &mut dyn Write,
        format: OutputFormat,
        index: usize,
    ) -> io::Result<()> {
        match format {
            OutputFormat::Table => writeln!(out),
            OutputFormat::Json if index > 0 => writeln!(out, ","),
            _ => Ok(()),
        }
    }

    /// After a rank's sweep failed (its own part already ended): the document's end.
    pub fn failed(&self, out: &mut dyn Write, format: OutputFormat) -> io::Result<()> {
        match format {
            OutputFormat::Json => writeln!(out, "  ]\n}}"),
            _ => Ok(()),
        }
    }

    /// Every global rank: its coordinates, what it holds, and its totals and KV fit at the
    /// largest row count.
    fn ranks_json(&self, ranks: &[DistinctRank]) -> Vec<serde_json::Value> {
        let p = self.sharded.parallel;
        self.sharded
            .rank_shape
            .iter()
            .enumerate()
            .map(|(index, &s)| {
                let rank = p.rank(index as u64);
                let shape = self.sharded.shapes[s];
                let last = ranks.iter().find(|r| r.index == s).and_then(|r| r.last);
                serde_json::json!({
                    "rank": index, "tp_rank": rank.tp, "pp_rank": rank.pp, "dp_rank": rank.dp,
                    "distinct": s,
                    "layers": [shape.layers.0, shape.layers.1],
                    "local_experts": shape.local_experts,
                    "totals": last.map(|(t, _)| t),
                    "kv_tokens": last.and_then(|(_, s)| s).and_then(|s| s.kv_tokens),
                })
            })
            .collect()
    }

    fn answers_json(&self, a: &LayoutAnswers) -> serde_json::Value {
        serde_json::json!({
            "rows": a.rows,
            "kv_tokens": a.kv_tokens.and_then(|(t, _)| t),
            "limited_by_rank": a.kv_tokens.map(|(_, r)| r),
            "max_concurrency": a.max_concurrency,
        })
    }

    /// After the last rank: the ranks, the layout's answers and the layout search.
    pub fn end(
        &self,
        out: &mut dyn Write,
        format: OutputFormat,
        ranks: &[DistinctRank],
        a: &LayoutAnswers,
    ) -> io::Result<()> {
        let largest = self.rows.last().copied().unwrap_or(0);
        let search = self.search;
        let smallest_tp_pp = search
            .and_then(|s| s.smallest_tp_pp)
            .map(|(tp, pp)| serde_json::json!({"tp": tp, "pp": pp}));
        match format {
            OutputFormat::Json => {
                let tail = serde_json::json!({
                    "ranks": self.ranks_json(ranks),
                    "layout": self.answers_json(a),
                    "rows": largest,
                    "kv_tokens": a.kv_tokens_at_largest,
                    "max_rank_total": a.max_rank_total,
                    "layouts": search.map(|s| &s.layouts),
                    "smallest_tp": search.and_then(|s| s.smallest_tp),
                    "smallest_tp_pp": smallest_tp_pp,
                });
                write!(out, "\n  ]")?;
                if let serde_json::Value::Object(map) = tail {
                    for (k, v) in map {
                        write!(out, ",\n  {}: {}", serde_json::to_string(&k)?, v)?;
                    }
                }
                writeln!(out, "\n}}")
            }
            OutputFormat::Jsonl => {
                let mut record = serde_json::json!({
                    "record": "layout_summary",
                    "ranks": self.ranks_json(ranks),
                    "layout": self.answers_json(a),
                    "rows": largest,
                    "kv_tokens": a.kv_tokens_at_largest,
                    "max_rank_total": a.max_rank_total,
                });
                if let Some(s) = search {
                    record["layouts"] = serde_json::json!(s.layouts);
                    record["smallest_tp"] = serde_json::json!(s.smallest_tp);
                    record["smallest_tp_pp"] = serde_json::json!(smallest_tp_pp);
                }
                writeln!(out, "{record}")
            }
            // The CSV is the ranks' rows; the layout's answers are the minimum over them.
            OutputFormat::Csv => Ok(()),
            OutputFormat::Table => self.end_table(out, ranks, a, largest),
        }
    }

    fn end_table(
        &self,
        out: &mut dyn Write,
        ranks: &[DistinctRank],
        a: &LayoutAnswers,
        largest: u64,
    ) -> io::Result<()> {
        let sharded = self.sharded;
        writeln!(out)?;
        writeln!(out, "layout    every distinct rank at n = {largest} (GiB):")?;
        writeln!(
            out,
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
        )?;
        for r in ranks {
            let shape = sharded.shapes[r.index];
            let Some((t, serving)) = r.last else { continue };
            writeln!(
                out,
                "{:<16} {:>9} {:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12}",
                rank_runs(&crate::parallel::ranks_of(sharded, r.index)),
                format!("{}..{}", shape.layers.0, shape.layers.1),
                shape
                    .local_experts
                    .map_or("all".to_owned(), |e| e.to_string()),
                gib(t.weights),
                gib(t.activations),
                gib(t.workspaces),
                gib(t.states),
                gib(t.total),
                tokens(serving.and_then(|s| s.kv_tokens)),
            )?;
        }
        writeln!(
            out,
            "KV capacity of the layout at n = {largest}, the minimum over ranks: {} tokens",
            tokens(a.kv_tokens_at_largest)
        )?;
        match (a.rows, a.kv_tokens) {
            (Some(n), Some((kv, rank))) => {
                let mut line = format!(
                    "fit       the largest n every rank fits: {n}; there the layout holds {} KV tokens (rank {rank} holds the fewest)",
                    tokens(kv)
                );
                if let Some(c) = a.max_concurrency {
                    let many = match c {
                        u64::MAX => "any number of".to_owned(),
                        c => c.to_string(),
                    };
                    line.push_str(&format!(
                        ", or {many} sequences at --max-model-len tokens each"
                    ));
                }
                writeln!(out, "{line}")?;
            }
            _ => writeln!(
                out,
                "fit       no n in {}..={largest} fits on every rank",
                self.rows.first().copied().unwrap_or(0)
            )?,
        }
        if let Some(search) = self.search {
            writeln!(
                out,
                "\nlayouts (dp 1), KV tokens under the budget at {largest} rows:"
            )?;
            writeln!(
                out,
                "{:>4} {:>4} {:>14} {:>14}",
                "tp", "pp", "max rank GiB", "kv tokens"
            )?;
            for r in &search.layouts {
                match &r.error {
                    Some(e) => writeln!(out, "{:>4} {:>4}  does not shard: {e}", r.tp, r.pp)?,
                    None => writeln!(
                        out,
                        "{:>4} {:>4} {:>14} {:>14}",
                        r.tp,
                        r.pp,
                        gib(r.max_rank_total.unwrap_or(0)),
                        tokens(r.kv_tokens)
                    )?,
                }
            }
            let kv = self.kv_tokens;
            match search.smallest_tp {
                Some(tp) => writeln!(out, "smallest TP holding {kv} KV tokens: {tp}")?,
                None => writeln!(out, "no TP listed holds {kv} KV tokens")?,
            }
            match search.smallest_tp_pp {
                Some((tp, pp)) => writeln!(
                    out,
                    "smallest TP x PP holding {kv} KV tokens: tp {tp} x pp {pp}"
                )?,
                None => writeln!(out, "no TP x PP listed holds {kv} KV tokens")?,
            }
        }
        Ok(())
    }
}
