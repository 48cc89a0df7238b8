//! `Display` for the planner's answers, so a compiler can print them without reading their
//! fields: a plan ([`MemoryPlan`]), the per-node table ([`NodeTable`]), and the fit answers
//! ([`RowsFit`], [`KvFit`]). Every figure is in bytes, exact (no rounding to MiB or GiB).
//!
//! Invariant: what is printed is a function of the value alone (no terminal width, locale or
//! clock); a plan prints its terms in its own order, a table its nodes in execution order.
//! (`cargo xtask plan` prints its own tables, folded by block and in GiB; these are the
//! library's plain renderings.)

use std::fmt;

use crate::attribution::NodeTable;
use crate::fit::{KvFit, RowsFit};
use crate::planner::MemoryPlan;

impl fmt::Display for MemoryPlan {
    /// ```text
    /// n = 64: 33818624 bytes = weights 231 + activations 262144 + workspaces 33554432 + states 0
    ///   5 launch groups; arena 262144 bytes, lower bound 262144 (optimal), 4 buffers
    ///   workspace cublaslt_gemm/cublaslt_workspace: 33554432 bytes, held for the step, 2 nodes
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.totals;
        writeln!(
            f,
            "n = {}: {} bytes = weights {} + activations {} + workspaces {} + states {}",
            self.rows, t.total, t.weights, t.activations, t.workspaces, t.states
        )?;
        let a = &self.arena;
        write!(
            f,
            "  {} launch group{}",
            self.groups,
            if self.groups == 1 { "" } else { "s" }
        )?;
        if self.placeholders > 0 {
            write!(f, " ({} placeholders)", self.placeholders)?;
        }
        write!(
            f,
            "; arena {} bytes, lower bound {} ({}), {} buffer{}",
            a.bytes,
            a.lower_bound,
            if a.optimal {
                "optimal"
            } else {
                "not proven optimal"
            },
            a.buffers,
            if a.buffers == 1 { "" } else { "s" }
        )?;
        for term in &self.workspaces {
            write!(
                f,
                "\n  workspace {}/{}: {} bytes, {}, {} node{}",
                term.family,
                term.name,
                term.bytes,
                if term.arena {
                    "in the arena"
                } else {
                    "held for the step"
                },
                term.nodes.len(),
                if term.nodes.len() == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for NodeTable {
    /// ```text
    /// per node at n = 64 (bytes)
    ///   node                   op         weights  activations  workspaces  states     total
    ///   b.norm                 rms_norm      8192       524288           0       0    532480
    ///   (arena fragmentation)                                0                             0
    ///   total                                                                         532480
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const FRAGMENTATION: &str = "(arena fragmentation)";
        let id_width = self
            .nodes
            .iter()
            .map(|r| r.id.chars().count())
            .chain([FRAGMENTATION.len()])
            .max()
            .unwrap_or(0);
        let op_width = self
            .nodes
            .iter()
            .map(|r| r.op.name().len())
            .chain([2])
            .max()
            .unwrap_or(0);
        let heads = ["weights", "activations", "workspaces", "states", "total"];
        let digits = |v: u64| v.to_string().len();
        let mut widths = heads.map(str::len);
        for row in &self.nodes {
            let values = [
                row.weights,
                row.activations,
                row.workspaces,
                row.states,
                row.total(),
            ];
            for (w, v) in widths.iter_mut().zip(values) {
                *w = (*w).max(digits(v));
            }
        }
        widths[1] = widths[1].max(digits(self.fragmentation));
        widths[4] = widths[4].max(digits(self.total));
        writeln!(f, "per node at n = {} (bytes)", self.rows)?;
        write!(f, "  {:<id_width$} {:<op_width$}", "node", "op")?;
        for (head, w) in heads.iter().zip(widths) {
            write!(f, "  {head:>w$}")?;
        }
        for row in &self.nodes {
            write!(f, "\n  {:<id_width$} {:<op_width$}", row.id, row.op.name())?;
            let values = [
                row.weights,
                row.activations,
                row.workspaces,
                row.states,
                row.total(),
            ];
            for (v, w) in values.iter().zip(widths) {
                write!(f, "  {v:>w$}")?;
            }
        }
        let blank = |w: usize| " ".repeat(w + 2);
        write!(
            f,
            "\n  {FRAGMENTATION:<id_width$} {:<op_width$}{}  {:>w1$}{}{}  {:>w4$}",
            "",
            blank(widths[0]),
            self.fragmentation,
            blank(widths[2]),
            blank(widths[3]),
            self.fragmentation,
            w1 = widths[1],
            w4 = widths[4],
        )?;
        let before_total: usize = widths[..4].iter().map(|w| w + 2).sum();
        write!(
            f,
            "\n  {:<id_width$} {:<op_width$}{}  {:>w4$}",
            "total",
            "",
            " ".repeat(before_total),
            self.total,
            w4 = widths[4],
        )
    }
}

impl fmt::Display for RowsFit {
    /// `largest n in 1..=4096 that fits 85520809984 bytes: 4096 (total 30279974912 bytes)`,
    /// `no n in 1..=4096 fits 1024 bytes`, or, when a work limit ran out, where the answer may
    /// be; a second line says why totals are not monotone, when they are not.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let range = format!(
            "{}..={}",
            self.rows_searched.start(),
            self.rows_searched.end()
        );
        match (self.max_rows, &self.answer_may_be_in) {
            (Some(n), None) => {
                write!(
                    f,
                    "largest n in {range} that fits {} bytes: {n}",
                    self.budget
                )?;
                // Always set with `max_rows` by the query; a value built by hand may lack it.
                if let Some(total) = self.total_at_max_rows {
                    write!(f, " (total {total} bytes)")?;
                }
            }
            (None, None) => write!(f, "no n in {range} fits {} bytes", self.budget)?,
            (found, Some(open)) => {
                write!(f, "gave up at ")?;
                match self.limit_reached {
                    Some(limit) => write!(f, "{limit}")?,
                    None => write!(f, "its limit")?,
                }
                write!(
                    f,
                    " ({} plans, {} search steps): the largest n in {range} that fits {} bytes is in {}..={}",
                    self.plans_evaluated,
                    self.search_steps_spent,
                    self.budget,
                    found.unwrap_or(*open.start()),
                    open.end()
                )?;
                match found {
                    Some(n) => write!(f, " ({n} fits)")?,
                    None => write!(f, " or none")?,
                }
            }
        }
        if let Some(why) = &self.why_not_monotone {
            write!(
                f,
                "\n  totals are not monotone in n, so not every smaller n need fit: {why}"
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for KvFit {
    /// `at n = 4096: 521411 KV tokens over 1 sequence fit 85520809984 bytes (131072 bytes
    /// each)`, or that none fits, or that the states never fill the budget.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sequences = match self.sequences {
            1 => "1 sequence".to_owned(),
            s => format!("{s} sequences"),
        };
        match self.max_kv_tokens {
            None => write!(
                f,
                "at n = {}: no KV cache over {sequences} fits {} bytes",
                self.rows, self.budget
            ),
            Some(u64::MAX) => write!(
                f,
                "at n = {}: the KV cache over {sequences} never fills {} bytes (every state stops growing)",
                self.rows, self.budget
            ),
            Some(tokens) => {
                write!(
                    f,
                    "at n = {}: {tokens} KV tokens over {sequences} fit {} bytes",
                    self.rows, self.budget
                )?;
                match self.bytes_per_token {
                    Some(per) => write!(f, " ({per} bytes each)"),
                    None => Ok(()),
                }
            }
        }
    }
}
