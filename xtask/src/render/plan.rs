//! Rendering a [`PlanReport`](memory_plan::PlanReport) as it streams: the human table, one
//! JSON object, JSON lines or CSV (docs/output.md gives the schemas).
//!
//! Invariants: a renderer writes a header before any row, each row as it arrives (nothing per
//! row is kept), then the summary; JSON and JSONL carry exact bytes with a stable key order
//! (struct field order) and refer to nodes and node lists by index into tables written once;
//! the table shows MiB or GiB with one decimal and folds repeated block instances into
//! `layer.*.q_proj x32`; the per-node table sums to the plan's total.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use circuit_ir::{Circuit, NodeIdx};
use memory_plan::{
    Breach, NodeTable, Planner, ReportSummary, RowReport, Term, Totals, Verdict, WorkspaceTerm,
};
use serde::Serialize;

use crate::inputs::flags::OutputFormat;

/// JSON and JSONL schema version: 2 added the node tables, `schema`, headroom, serving answers
/// and the verdict (1 repeated every node list in every row).
pub const SCHEMA: u32 = 2;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// Bytes in MiB below 1 GiB, GiB above, one decimal.
pub fn human(bytes: u64) -> String {
    if bytes >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

/// Small sizes too: KiB below 1 MiB.
fn human_small(bytes: u64) -> String {
    if bytes < MIB {
        format!("{:.1} KiB", bytes as f64 / KIB as f64)
    } else {
        human(bytes)
    }
}

/// Everything a renderer needs besides the rows: what was planned, where, against what.
pub struct Context<'a> {
    /// The planner.
    pub planner: &'a Planner<'a>,
    /// The device's name (or `N SMs`).
    pub device: String,
    /// The device's memory, when known.
    pub device_memory: Option<u64>,
    /// The budget in bytes.
    pub budget: Option<u64>,
    /// The context length asked for the concurrency answer.
    pub max_model_len: Option<u64>,
    /// The longest sequence the model takes, when known (the circuit's `context`, or an
    /// imported config's).
    pub model_context: Option<u64>,
    /// Keys an imported config.json left out, with the defaults used for them.
    pub config_defaults: Vec<(String, String)>,
    /// What an imported config is planned in: dtype, KV cache, quantization.
    pub storage: Option<Storage>,
    /// The rows asked (ascending).
    pub rows: &'a [u64],
    /// The node lists table of the report.
    pub node_lists: Vec<Arc<[NodeIdx]>>,
    /// The layout the plan is a rank of (TP 1 x PP 1 x DP 1 for a plain plan), and which of its
    /// ranks this circuit is.
    pub layout: LayoutRanks,
    /// Whether `--placeholders` was given (the table says when no node needed one).
    pub placeholders_asked: bool,
}

/// Where a planned circuit sits in a parallel layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutRanks {
    /// Tensor-parallel size.
    pub tp: u64,
    /// Pipeline-parallel size.
    pub pp: u64,
    /// Data-parallel size.
    pub dp: u64,
    /// The global ranks (vLLM's order) that hold this circuit, ascending.
    pub ranks: Vec<u64>,
    /// What the ranks hold, in words (`stage 0, layers 0..16, all experts`); None for a plain
    /// plan.
    pub holds: Option<String>,
}

impl LayoutRanks {
    /// A plain plan: one rank of a layout of one.
    pub const SINGLE: LayoutRanks = LayoutRanks {
        tp: 1,
        pp: 1,
        dp: 1,
        ranks: Vec::new(),
        holds: None,
    };

    /// The first rank (0 for a plain plan).
    pub fn first(&self) -> u64 {
        self.ranks.first().copied().unwrap_or(0)
    }

    /// The ranks as runs, `0-1 4-5` (`0` for a plain plan).
    pub fn runs(&self) -> String {
        rank_runs(&self.ranks)
    }
}

/// Ranks written as runs of consecutive ones: `0-1 4-5`; `0` when empty (a plain plan).
pub fn rank_runs(ranks: &[u64]) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &r in ranks {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == r => *hi = r,
            _ => runs.push((r, r)),
        }
    }
    if runs.is_empty() {
        return "0".to_owned();
    }
    runs.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Context<'_> {
    fn circuit(&self) -> &Circuit {
        self.planner.circuit()
    }
}

/// A renderer: a header, each row as it comes, then the summary.
pub trait Render {
    /// Before the first row.
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()>;
    /// One planned row.
    fn row(&mut self, out: &mut dyn Write, row: &RowReport<'_>) -> io::Result<()>;
    /// After the last row.
    fn summary(
        &mut self,
        out: &mut dyn Write,
        summary: &ReportSummary,
        per_node: Option<&NodeTable>,
    ) -> io::Result<()>;
    /// After the header (and maybe some rows), instead of the summary: the run failed with
    /// `message` (also printed on stderr). The document ends complete, holding the error, so a
    /// reader never gets half a JSON object; the table and CSV end where they stopped.
    fn failed(&mut self, out: &mut dyn Write, message: &str) -> io::Result<()> {
        let _ = (out, message);
        Ok(())
    }
}

/// The renderer of `format`.
pub fn renderer<'a>(format: OutputFormat, ctx: &'a Context<'a>) -> Box<dyn Render + 'a> {
    match format {
        OutputFormat::Table => Box::new(Table { ctx }),
        OutputFormat::Json => Box::new(Json { ctx, rows: 0 }),
        OutputFormat::Jsonl => Box::new(Jsonl { ctx }),
        OutputFormat::Csv => Box::new(Csv {
            ctx,
            header: ctx.layout.first() == 0,
        }),
    }
}

/// A node's id with the numbers of its block instance replaced by `*`: `layer.*.q_proj` for
/// `layer.7.q_proj`, `layer_*.q_proj` for `layer_7.q_proj` (importers that give each layer its
/// own block), `head.lm_head` unchanged.
pub fn fold_key(circuit: &Circuit, node: NodeIdx) -> String {
    let node = &circuit.nodes()[node];
    let instance = circuit.instances()[node.instance].id();
    let mut pattern = String::with_capacity(instance.len());
    let mut in_digits = false;
    for c in instance.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                pattern.push('*');
            }
            in_digits = true;
        } else {
            pattern.push(c);
            in_digits = false;
        }
    }
    format!("{pattern}.{}", node.local)
}

/// Node ids with repeated blocks folded: `layer.*.q_proj x32`, in first-seen order; a key seen
/// once keeps the node's own id.
pub fn fold_nodes(circuit: &Circuit, nodes: &[NodeIdx]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, (usize, NodeIdx)> = BTreeMap::new();
    for &n in nodes {
        let key = fold_key(circuit, n);
        let entry = counts.entry(key.clone()).or_insert((0, n));
        if entry.0 == 0 {
            order.push(key);
        }
        entry.0 += 1;
    }
    order
        .into_iter()
        .map(|key| match counts[&key] {
            (1, first) => circuit.nodes()[first].id.clone(),
            (count, _) => format!("{key} x{count}"),
        })
        .collect()
}

fn fold_short(circuit: &Circuit, nodes: &[NodeIdx], max: usize) -> String {
    let folded = fold_nodes(circuit, nodes);
    if folded.len() <= max {
        folded.join(", ")
    } else {
        format!(
            "{}, ... ({} more)",
            folded[..max].join(", "),
            folded.len() - max
        )
    }
}

/// The human table.
struct Table<'a> {
    ctx: &'a Context<'a>,
}

/// `budget - total` as the table shows it.
fn signed_human(headroom: i128) -> String {
    let bytes = u64::try_from(headroom.unsigned_abs()).unwrap_or(u64::MAX);
    if headroom >= 0 {
        human(bytes)
    } else {
        format!("-{}", human(bytes))
    }
}

impl Render for Table<'_> {
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()> {
        let ctx = self.ctx;
        let config = ctx.planner.config();
        let memory = ctx
            .device_memory
            .map_or(String::new(), |m| format!(", {}", human(m)));
        writeln!(out, "circuit   {}", ctx.circuit().name())?;
        if let Some(holds) = &ctx.layout.holds {
            let l = &ctx.layout;
            writeln!(
                out,
                "ranks     {} of tp {} x pp {} x dp {} ({holds})",
                l.runs(),
                l.tp,
                l.pp,
                l.dp
            )?;
        }
        writeln!(
            out,
            "device    {} ({} SMs{memory})",
            ctx.device, config.sm_count
        )?;
        writeln!(out, "settings  {}", ctx.planner.settings())?;
        if let Some(s) = &ctx.storage {
            let quant = s
                .quantization
                .as_ref()
                .map_or(String::new(), |q| format!("; quantized: {q}"));
            writeln!(
                out,
                "dtype     {} ({}); KV cache {}{quant}",
                s.planned, s.source, s.kv_cache
            )?;
        }
        if !ctx.config_defaults.is_empty() {
            let keys: Vec<String> = ctx
                .config_defaults
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            writeln!(
                out,
                "defaults  {} (absent from the config: the model type's transformers defaults)",
                keys.join(", ")
            )?;
        }
        writeln!(
            out,
            "budget    {}",
            ctx.budget.map_or("none (give --budget)".to_owned(), human)
        )?;
        writeln!(
            out,
            "kv cache  {} tokens over {} sequence{}; arena alignment {} bytes",
            config.kv_tokens,
            config.sequences,
            if config.sequences == 1 { "" } else { "s" },
            config.align
        )?;
        // A recurrent model's per-sequence state is not KV: it is reported apart.
        if let Some(per) = fixed_state_per_sequence(ctx) {
            let all = ctx
                .circuit()
                .fixed_state_bytes(config.sequences)
                .map_or("too many bytes to count".to_owned(), human);
            writeln!(
                out,
                "state     {} per sequence of recurrent and convolution state, not per token: {all} for {} sequence{}",
                human_small(per),
                config.sequences,
                if config.sequences == 1 { "" } else { "s" },
            )?;
        }
        let (first, last) = (ctx.rows[0], ctx.rows[ctx.rows.len() - 1]);
        let count = match ctx.rows.len() {
            1 => "1 row count".to_owned(),
            c => format!("{c} row counts from {first} to {last}"),
        };
        writeln!(
            out,
            "rows      n = tokens one step processes (batch x tokens per sequence); {count}"
        )?;
        writeln!(out)?;
        write!(
            out,
            "{:>8} {:>7} {:>10} {:>24} {:>11} {:>10} {:>10}",
            "rows",
            "groups",
            "weights",
            "activations (lower bound)",
            "workspaces",
            "states",
            "total"
        )?;
        if ctx.budget.is_some() {
            write!(out, " {:>11}", "headroom")?;
        }
        writeln!(out)
    }

    fn row(&mut self, out: &mut dyn Write, row: &RowReport<'_>) -> io::Result<()> {
        let p = row.plan;
        let acts = format!(
            "{} ({})",
            human(p.totals.activations),
            human(p.arena.lower_bound)
        );
        write!(
            out,
            "{:>8} {:>7} {:>10} {:>24} {:>11} {:>10} {:>10}",
            p.rows,
            p.groups,
            human(p.totals.weights),
            acts,
            human(p.totals.workspaces),
            human(p.totals.states),
            human(p.totals.total)
        )?;
        if let Some(room) = row.headroom {
            write!(out, " {:>11}", signed_human(room))?;
        }
        writeln!(out)
    }

    fn summary(
        &mut self,
        out: &mut dyn Write,
        s: &ReportSummary,
        per_node: Option<&NodeTable>,
    ) -> io::Result<()> {
        let ctx = self.ctx;
        let circuit = ctx.circuit();
        // weights_only nodes always take a kernel-less group (fusion.md): say so apart from
        // the nodes that --placeholders let through without a rule.
        let held = circuit
            .nodes()
            .values()
            .filter(|n| n.op == circuit_ir::Op::WeightsOnly)
            .count();
        if held > 0 {
            writeln!(
                out,
                "note: {held} weights_only nodes (weights held, nothing run: a vision tower, multi-token-prediction layers) are kernel-less groups"
            )?;
        }
        let uncovered = s.placeholders.saturating_sub(held);
        if uncovered > 0 {
            writeln!(
                out,
                "note: up to {uncovered} nodes no rule covers were planned as placeholder groups"
            )?;
        } else if ctx.placeholders_asked {
            writeln!(
                out,
                "note: --placeholders: every node is covered by a rule, so no placeholder group was made"
            )?;
        }
        writeln!(out)?;
        writeln!(out, "widest workspaces (largest over the rows planned)")?;
        writeln!(
            out,
            "  {:<20} {:<20} {:<6} {:>10}  nodes",
            "family", "workspace", "arena", "bytes"
        )?;
        for t in &s.widest {
            writeln!(
                out,
                "  {:<20} {:<20} {:<6} {:>10}  {}",
                t.family,
                t.name,
                if t.arena { "yes" } else { "no" },
                human(t.bytes),
                fold_short(circuit, &t.nodes, 4)
            )?;
        }
        if s.widest.is_empty() {
            writeln!(out, "  (no family declares a workspace for this plan)")?;
        }
        writeln!(out)?;
        for line in serving_lines(s) {
            writeln!(out, "{line}")?;
        }
        if let Some(table) = per_node {
            writeln!(out)?;
            write!(out, "{}", per_node_table(circuit, table))?;
        }
        Ok(())
    }
}

/// The fit, capacity and verdict lines of the table.
fn serving_lines(s: &ReportSummary) -> Vec<String> {
    let mut lines = Vec::new();
    let (Some(fit), Some(verdict)) = (&s.fit, &s.verdict) else {
        lines.push("fit       no budget: give --budget or a --device with memory".to_owned());
        return lines;
    };
    let range = format!(
        "{}..={}",
        fit.rows_searched.start(),
        fit.rows_searched.end()
    );
    let budget = human(fit.budget);
    lines.push(match (fit.max_rows, &fit.answer_may_be_in) {
        (Some(n), None) => format!(
            "fit       largest n in {range} that fits {budget}: {n} (total {})",
            human(fit.total_at_max_rows.unwrap_or(0))
        ),
        (None, None) => format!("fit       no n in {range} fits {budget}"),
        (found, Some(open)) => format!(
            "fit       gave up at {} ({} plans, {} search steps): the largest n in {range} that fits {budget} is in {}..={}{}",
            fit.limit_reached
                .map_or("its limit".to_owned(), |why| why.to_string()),
            fit.plans_evaluated,
            fit.search_steps_spent,
            found.map_or(*open.start(), |n| n),
            open.end(),
            found.map_or(" or none".to_owned(), |n| format!(" ({n} fits)"))
        ),
    });
    if s.note_matters
        && let Some(note) = &fit.why_not_monotone
    {
        lines.push(format!(
            "          not every n below it fits (totals are not monotone in n): {note}"
        ));
    }
    if let Some(kv) = &s.kv {
        let tokens = match kv.max_kv_tokens {
            Some(u64::MAX) => "the KV cache never fills the budget".to_owned(),
            Some(t) => match kv.bytes_per_token {
                Some(per) if per > 0 => format!("{t} KV tokens ({} each)", human_small(per)),
                _ => format!("{t} KV tokens"),
            },
            None => "no KV cache fits".to_owned(),
        };
        let mut line = format!("capacity  at n = {}: {tokens}", kv.rows);
        if let Some(c) = &s.context
            && c.max_context.is_some_and(|t| t != u64::MAX)
        {
            let held = c.max_context.unwrap_or(0);
            // A sequence is never longer than the model's context, however much the cache holds.
            let (context, cap) = match c.model_context {
                Some(m) if m < held => {
                    (m, format!(" (the model's context; the cache holds {held})"))
                }
                _ => (held, String::new()),
            };
            line.push_str(&match c.sequences {
                1 => format!(", so 1 sequence of up to {context} tokens{cap}"),
                n => format!(", so {n} sequences of up to {context} tokens each{cap}"),
            });
        }
        lines.push(line);
    }
    if let Some(c) = &s.concurrency {
        let many = match c.max_sequences {
            u64::MAX => "any number of sequences (the states never fill the budget)".to_owned(),
            1 => "1 sequence".to_owned(),
            n => format!("{n} sequences"),
        };
        lines.push(format!(
            "          or at {} tokens per sequence (--max-model-len): {many}",
            c.context
        ));
    }
    lines.push(format!("verdict   {}", verdict_text(verdict, s)));
    lines
}

/// One sentence: fits or not, and the term that breaks it.
fn verdict_text(v: &Verdict, s: &ReportSummary) -> String {
    let budget = human(v.budget);
    let rows = match v.rows {
        1 => "the row count".to_owned(),
        n => format!("all {n} row counts"),
    };
    let breach = |b: &Breach| {
        format!(
            "at n = {} the {} ({}) take the total to {}, {} over",
            b.rows,
            b.term.name(),
            human(b.term_bytes),
            human(b.total),
            human(b.over)
        )
    };
    match &v.first_breach {
        None => {
            let (n, total) = s.largest_total.unwrap_or((0, 0));
            format!(
                "fits: {rows} planned fit {budget} (the largest total: {} at n = {n})",
                human(total)
            )
        }
        Some(b) if v.fitting > 0 => format!(
            "fits {} of {} row counts planned: {}",
            v.fitting,
            v.rows,
            breach(b)
        ),
        Some(b) => {
            let what = match b.term {
                Term::Weights => "the weights alone exceed it".to_owned(),
                _ => breach(b),
            };
            format!("does not fit {budget}: {what}")
        }
    }
}

/// The per-node table folded by block.
pub fn per_node_table(circuit: &Circuit, table: &NodeTable) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "per node at n = {} (folded by block)", table.rows);
    let _ = writeln!(
        out,
        "  {:<28} {:<13} {:>10} {:>11} {:>11} {:>10} {:>10}",
        "node", "op", "weights", "activations", "workspaces", "states", "total"
    );
    let mut order: Vec<(String, String)> = Vec::new();
    let mut sums: BTreeMap<(String, String), [u64; 5]> = BTreeMap::new();
    let mut counts: BTreeMap<(String, String), (usize, NodeIdx)> = BTreeMap::new();
    for row in &table.nodes {
        let key = (
            fold_key(circuit, row.node),
            circuit.nodes()[row.node].op.to_string(),
        );
        let sum = sums.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            [0; 5]
        });
        for (s, v) in sum.iter_mut().zip([
            row.weights,
            row.activations,
            row.workspaces,
            row.states,
            row.total(),
        ]) {
            *s += v;
        }
        counts.entry(key).or_insert((0, row.node)).0 += 1;
    }
    for key in order {
        let s = sums[&key];
        let label = match counts[&key] {
            (1, node) => circuit.nodes()[node].id.clone(),
            (c, _) => format!("{} x{c}", key.0),
        };
        let _ = writeln!(
            out,
            "  {:<28} {:<13} {:>10} {:>11} {:>11} {:>10} {:>10}",
            label,
            key.1,
            human(s[0]),
            human(s[1]),
            human(s[2]),
            human(s[3]),
            human(s[4])
        );
    }
    let _ = writeln!(
        out,
        "  {:<28} {:<13} {:>10} {:>11} {:>11} {:>10} {:>10}",
        "(arena fragmentation)",
        "",
        "",
        human(table.fragmentation),
        "",
        "",
        human(table.fragmentation)
    );
    let _ = writeln!(
        out,
        "  {:<28} {:<13} {:>10} {:>11} {:>11} {:>10} {:>10}",
        "total",
        "",
        "",
        "",
        "",
        "",
        human(table.total)
    );
    out
}

/// The bytes one sequence holds in per-sequence states (recurrent, convolution), when the
/// circuit has any.
fn fixed_state_per_sequence(ctx: &Context<'_>) -> Option<u64> {
    ctx.circuit().fixed_state_bytes(1).ok().filter(|&b| b > 0)
}

// ---- JSON and JSON lines -------------------------------------------------------------------

/// The fields before the plans: what was planned, where, and the node tables.
#[derive(Serialize)]
struct HeaderJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'static str>,
    schema: u32,
    circuit: &'a str,
    device: &'a str,
    sm_count: u64,
    memory: Option<u64>,
    settings: BTreeMap<String, String>,
    kv_tokens: u64,
    sequences: u64,
    align: u64,
    budget: Option<u64>,
    max_model_len: Option<u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    config_defaults: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<&'a Storage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fixed_state_per_sequence: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    placeholders: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_context: Option<u64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    ranks: Option<RanksJson>,
    nodes: Vec<&'a str>,
    node_lists: Vec<Vec<u32>>,
}

fn header_json<'a>(ctx: &'a Context<'a>, record: Option<&'static str>) -> HeaderJson<'a> {
    let circuit = ctx.circuit();
    let config = ctx.planner.config();
    HeaderJson {
        record,
        schema: SCHEMA,
        circuit: circuit.name(),
        device: &ctx.device,
        sm_count: config.sm_count,
        memory: ctx.device_memory,
        settings: ctx
            .planner
            .settings()
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        kv_tokens: config.kv_tokens,
        sequences: config.sequences,
        align: config.align,
        budget: ctx.budget,
        max_model_len: ctx.max_model_len,
        config_defaults: ctx
            .config_defaults
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        dtype: ctx.storage.as_ref(),
        fixed_state_per_sequence: fixed_state_per_sequence(ctx),
        placeholders: ctx.placeholders_asked,
        model_context: ctx.model_context,
        ranks: ranks_json(ctx),
        nodes: circuit.nodes().values().map(|n| n.id.as_str()).collect(),
        node_lists: ctx
            .node_lists
            .iter()
            .map(|l| l.iter().map(|n| n.as_u32()).collect())
            .collect(),
    }
}

/// Which ranks of a layout a record is about (parallel plans only).
#[derive(Serialize)]
struct RanksJson {
    rank: u64,
    ranks: Vec<u64>,
}

fn ranks_json(ctx: &Context<'_>) -> Option<RanksJson> {
    ctx.layout.holds.as_ref().map(|_| RanksJson {
        rank: ctx.layout.first(),
        ranks: ctx.layout.ranks.clone(),
    })
}

#[derive(Serialize)]
struct PlanJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u64>,
    rows: u64,
    digest: &'a str,
    groups: usize,
    placeholders: usize,
    totals: &'a Totals,
    headroom: Option<i128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    serving: Option<RowServingJson>,
    arena: &'a memory_plan::ArenaSummary,
    workspaces: Vec<TermJson<'a>>,
}

/// What the row leaves for the KV cache (with a budget).
#[derive(Serialize)]
struct RowServingJson {
    kv_tokens: Option<u64>,
    max_concurrency: Option<u64>,
}

#[derive(Serialize)]
struct TermJson<'a> {
    family: &'a str,
    name: &'a str,
    bytes: u64,
    arena: bool,
    /// Index into `node_lists`.
    nodes: usize,
    /// Index into `nodes`.
    owner: u32,
}

fn term_json(t: &WorkspaceTerm, list: usize) -> TermJson<'_> {
    TermJson {
        family: &t.family,
        name: &t.name,
        bytes: t.bytes,
        arena: t.arena,
        nodes: list,
        owner: t.owner.as_u32(),
    }
}

fn plan_json<'a>(
    ctx: &Context<'_>,
    row: &'a RowReport<'a>,
    record: Option<&'static str>,
) -> PlanJson<'a> {
    let p = row.plan;
    PlanJson {
        record,
        rank: ctx.layout.holds.as_ref().map(|_| ctx.layout.first()),
        rows: p.rows,
        digest: &p.digest,
        groups: p.groups,
        placeholders: p.placeholders,
        totals: &p.totals,
        headroom: row.headroom,
        serving: row.serving.map(|s| RowServingJson {
            kv_tokens: s.kv_tokens,
            max_concurrency: s.max_sequences,
        }),
        arena: &p.arena,
        workspaces: p
            .workspaces
            .iter()
            .zip(row.node_lists)
            .map(|(t, &l)| term_json(t, l))
            .collect(),
    }
}

#[derive(Serialize)]
struct FitJson {
    budget: Option<u64>,
    range: Option<[u64; 2]>,
    max_rows: Option<u64>,
    total_at_max_rows: Option<u64>,
    monotone: Option<bool>,
    note: Option<String>,
    note_changes_answer: bool,
    unresolved: Option<[u64; 2]>,
    scan_plans: Option<u64>,
    search_steps: Option<u64>,
    gave_up: Option<memory_plan::FitLimit>,
    kv_rows: Option<u64>,
    max_kv_tokens: Option<u64>,
    bytes_per_token: Option<u64>,
}

#[derive(Serialize)]
struct ServingJson {
    rows: Option<u64>,
    sequences: u64,
    max_context: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_context: Option<u64>,
    max_model_len: Option<u64>,
    max_concurrency: Option<u64>,
}

#[derive(Serialize)]
struct VerdictJson {
    fits: bool,
    rows: u64,
    fitting: u64,
    first_breach: Option<Breach>,
}

#[derive(Serialize)]
struct PerNodeJson {
    rows: u64,
    nodes: Vec<NodeJson>,
    fragmentation: u64,
    total: u64,
}

#[derive(Serialize)]
struct NodeJson {
    node: u32,
    op: String,
    weights: u64,
    activations: u64,
    workspaces: u64,
    states: u64,
}

/// The fields after the plans.
#[derive(Serialize)]
struct SummaryJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u64>,
    widest: Vec<TermJson<'a>>,
    fit: FitJson,
    serving: ServingJson,
    verdict: Option<VerdictJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_node: Option<PerNodeJson>,
}

fn summary_json<'a>(
    ctx: &Context<'_>,
    s: &'a ReportSummary,
    per_node: Option<&NodeTable>,
    record: Option<&'static str>,
) -> SummaryJson<'a> {
    let fit = s.fit.as_ref();
    let circuit = ctx.circuit();
    SummaryJson {
        record,
        rank: ctx.layout.holds.as_ref().map(|_| ctx.layout.first()),
        widest: s
            .widest
            .iter()
            .zip(&s.widest_lists)
            .map(|(t, &l)| term_json(t, l))
            .collect(),
        fit: FitJson {
            budget: ctx.budget,
            range: fit.map(|f| [*f.rows_searched.start(), *f.rows_searched.end()]),
            max_rows: fit.and_then(|f| f.max_rows),
            total_at_max_rows: fit.and_then(|f| f.total_at_max_rows),
            monotone: fit.map(|f| f.totals_monotone),
            note: fit.and_then(|f| f.why_not_monotone.clone()),
            note_changes_answer: s.note_matters,
            unresolved: fit
                .and_then(|f| f.answer_may_be_in.as_ref().map(|r| [*r.start(), *r.end()])),
            scan_plans: fit.map(|f| f.plans_evaluated),
            search_steps: fit.map(|f| f.search_steps_spent),
            gave_up: fit.and_then(|f| f.limit_reached),
            kv_rows: s.kv.as_ref().map(|k| k.rows),
            max_kv_tokens: s.kv.as_ref().and_then(|k| k.max_kv_tokens),
            bytes_per_token: s.kv.as_ref().and_then(|k| k.bytes_per_token),
        },
        serving: ServingJson {
            rows: s.kv.as_ref().map(|k| k.rows),
            sequences: ctx.planner.config().sequences,
            max_context: s.context.and_then(|c| c.max_context),
            model_context: s.context.and_then(|c| c.model_context),
            max_model_len: ctx.max_model_len,
            max_concurrency: s.concurrency.map(|c| c.max_sequences),
        },
        verdict: s.verdict.map(|v| VerdictJson {
            fits: v.fits(),
            rows: v.rows,
            fitting: v.fitting,
            first_breach: v.first_breach,
        }),
        per_node: per_node.map(|t| PerNodeJson {
            rows: t.rows,
            nodes: t
                .nodes
                .iter()
                .map(|r| NodeJson {
                    node: r.node.as_u32(),
                    op: circuit.nodes()[r.node].op.to_string(),
                    weights: r.weights,
                    activations: r.activations,
                    workspaces: r.workspaces,
                    states: r.states,
                })
                .collect(),
            fragmentation: t.fragmentation,
            total: t.total,
        }),
    }
}

/// Writes `value` as compact JSON.
fn compact(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)
}

/// Writes the fields of a JSON object `value` (without its braces), one `"key": value` per
/// line, each value compact.
fn fields(out: &mut dyn Write, value: &impl Serialize, last: bool) -> io::Result<()> {
    let serde_json::Value::Object(map) = serde_json::to_value(value).map_err(io::Error::from)?
    else {
        return Ok(());
    };
    let count = map.len();
    for (i, (key, v)) in map.into_iter().enumerate() {
        compact(out, &key)?;
        write!(out, ": ")?;
        match (&key[..], v) {
            // The node lists are long: one per line.
            ("node_lists", serde_json::Value::Array(lists)) if !lists.is_empty() => {
                writeln!(out, "[")?;
                let n = lists.len();
                for (j, l) in lists.into_iter().enumerate() {
                    write!(out, "    ")?;
                    compact(out, &l)?;
                    writeln!(out, "{}", if j + 1 < n { "," } else { "" })?;
                }
                write!(out, "  ]")?;
            }
            (_, v) => compact(out, &v)?,
        }
        if i + 1 < count || !last {
            writeln!(out, ",")?;
            write!(out, "  ")?;
        }
    }
    Ok(())
}

/// One JSON object: the header's fields, `plans` with one compact plan per line, the summary.
struct Json<'a> {
    ctx: &'a Context<'a>,
    rows: usize,
}

impl Render for Json<'_> {
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{{\n  ")?;
        fields(out, &header_json(self.ctx, None), false)?;
        write!(out, "\"plans\": [")
    }

    fn row(&mut self, out: &mut dyn Write, row: &RowReport<'_>) -> io::Result<()> {
        write!(out, "{}\n    ", if self.rows == 0 { "" } else { "," })?;
        self.rows += 1;
        compact(out, &plan_json(self.ctx, row, None))
    }

    fn summary(
        &mut self,
        out: &mut dyn Write,
        s: &ReportSummary,
        per_node: Option<&NodeTable>,
    ) -> io::Result<()> {
        write!(out, "\n  ],\n  ")?;
        fields(out, &summary_json(self.ctx, s, per_node, None), true)?;
        writeln!(out, "\n}}")
    }

    fn failed(&mut self, out: &mut dyn Write, message: &str) -> io::Result<()> {
        write!(out, "\n  ],\n  \"error\": ")?;
        compact(out, &message)?;
        writeln!(out, "\n}}")
    }
}

/// JSON lines: a header record, one plan record per row, a summary record.
struct Jsonl<'a> {
    ctx: &'a Context<'a>,
}

impl Render for Jsonl<'_> {
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()> {
        compact(out, &header_json(self.ctx, Some("header")))?;
        writeln!(out)
    }

    fn row(&mut self, out: &mut dyn Write, row: &RowReport<'_>) -> io::Result<()> {
        compact(out, &plan_json(self.ctx, row, Some("plan")))?;
        writeln!(out)
    }

    fn summary(
        &mut self,
        out: &mut dyn Write,
        s: &ReportSummary,
        per_node: Option<&NodeTable>,
    ) -> io::Result<()> {
        compact(out, &summary_json(self.ctx, s, per_node, Some("summary")))?;
        writeln!(out)
    }

    fn failed(&mut self, out: &mut dyn Write, message: &str) -> io::Result<()> {
        compact(
            out,
            &serde_json::json!({"record": "error", "message": message}),
        )?;
        writeln!(out)
    }
}

/// CSV: a header line and one line per row; the summary is not part of it. In a parallel
/// plan each distinct rank's rows follow the one header line.
struct Csv<'a> {
    ctx: &'a Context<'a>,
    /// Whether to write the header line (the first distinct rank of a layout only).
    header: bool,
}

/// The CSV columns: the plan's bytes, then (after `fits`, since schema 2's first columns) the
/// KV tokens and sequences the row leaves room for, the device, the budget and the layout.
pub const CSV_COLUMNS: &str = "rows,groups,placeholders,digest,weights,activations,lower_bound,unshared,optimal,buffers,workspaces,states,total,headroom,fits,kv_tokens,max_concurrency,device,budget,tp,pp,dp,rank,ranks";

/// A count for CSV: blank when not applicable (`None`) or unbounded (`u64::MAX`).
fn csv_count(v: Option<u64>) -> String {
    match v {
        Some(u64::MAX) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

impl Render for Csv<'_> {
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.header {
            writeln!(out, "{CSV_COLUMNS}")?;
        }
        Ok(())
    }

    fn row(&mut self, out: &mut dyn Write, row: &RowReport<'_>) -> io::Result<()> {
        let p = row.plan;
        let (t, a) = (&p.totals, &p.arena);
        let (headroom, fits) = match row.headroom {
            Some(h) => (h.to_string(), (h >= 0).to_string()),
            None => (String::new(), String::new()),
        };
        // No KV token fits beside a row over the budget: 0, not blank (blank is "no budget").
        let kv = row.serving.map(|s| s.kv_tokens.unwrap_or(0));
        let sequences = row.serving.and_then(|s| s.max_sequences);
        let l = &self.ctx.layout;
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{headroom},{fits},{},{},{},{},{},{},{},{},{}",
            p.rows,
            p.groups,
            p.placeholders,
            p.digest,
            t.weights,
            t.activations,
            a.lower_bound,
            a.unshared,
            a.optimal,
            a.buffers,
            t.workspaces,
            t.states,
            t.total,
            csv_count(kv),
            csv_count(sequences),
            csv_field(&self.ctx.device),
            self.ctx.budget.map_or(String::new(), |b| b.to_string()),
            l.tp,
            l.pp,
            l.dp,
            l.first(),
            l.runs()
        )
    }

    fn summary(
        &mut self,
        _: &mut dyn Write,
        _: &ReportSummary,
        _: Option<&NodeTable>,
    ) -> io::Result<()> {
        Ok(())
    }
}

/// The dtypes and quantization an imported config is planned with.
#[derive(Debug, Clone, serde::Serialize)]
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
    pub fn of(import: &circuit_hf::Import, asked: &circuit_hf::ImportOptions) -> Storage {
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
