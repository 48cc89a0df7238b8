//! The plan's reports: the human table and the JSON object (SPEC section 8).
//!
//! Invariants: JSON carries exact bytes with a stable key order (struct field order); the
//! table shows MiB or GiB with one decimal; node lists fold repeated block instances into
//! `layer.*.q_proj x32`; the per-node table sums to the plan's total.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use circuit_ir::{Circuit, NodeIdx};
use memory_plan::{MemoryPlan, NodeTable, WorkspaceTerm};
use serde::Serialize;

use crate::CliError;
use crate::plan::{Outcome, settings_map};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// Bytes in MiB below 1 GiB, GiB above, one decimal.
pub fn human(bytes: u64) -> String {
    if bytes >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
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

/// The human report.
pub fn table(o: &Outcome<'_>, per_node: Option<&NodeTable>) -> String {
    let circuit = o.planner.circuit();
    let config = o.planner.config();
    let mut out = String::new();
    let memory = o
        .device_memory
        .map_or(String::new(), |m| format!(", {}", human(m)));
    let _ = writeln!(out, "circuit   {}", circuit.name());
    let _ = writeln!(
        out,
        "device    {} ({} SMs{memory})",
        o.device, config.sm_count
    );
    let _ = writeln!(out, "settings  {}", o.planner.settings());
    if let Some(s) = &o.storage {
        let quant = s
            .quantization
            .as_ref()
            .map_or(String::new(), |q| format!("; quantized: {q}"));
        let _ = writeln!(
            out,
            "dtype     {} ({}); KV cache {}{quant}",
            s.planned, s.source, s.kv_cache
        );
    }
    if !o.config_defaults.is_empty() {
        let keys: Vec<String> = o
            .config_defaults
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let _ = writeln!(
            out,
            "defaults  {} (absent from the config: the model type's transformers defaults)",
            keys.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "budget    {}",
        o.budget.map_or("none (give --budget)".to_owned(), human)
    );
    let _ = writeln!(
        out,
        "kv cache  {} tokens over {} sequence{}; arena alignment {} bytes",
        config.kv_tokens,
        config.sequences,
        if config.sequences == 1 { "" } else { "s" },
        config.align
    );
    let _ = writeln!(out);
    let headroom = o.budget.is_some();
    let _ = write!(
        out,
        "{:>8} {:>7} {:>10} {:>24} {:>11} {:>10} {:>10}",
        "rows", "groups", "weights", "activations (lower bound)", "workspaces", "states", "total"
    );
    if headroom {
        let _ = write!(out, " {:>11}", "headroom");
    }
    let _ = writeln!(out);
    for p in &o.plans {
        let acts = format!(
            "{} ({})",
            human(p.totals.activations),
            human(p.arena.lower_bound)
        );
        let _ = write!(
            out,
            "{:>8} {:>7} {:>10} {:>24} {:>11} {:>10} {:>10}",
            p.rows,
            p.groups,
            human(p.totals.weights),
            acts,
            human(p.totals.workspaces),
            human(p.totals.states),
            human(p.totals.total)
        );
        if let Some(b) = o.budget {
            let room = if b >= p.totals.total {
                human(b - p.totals.total)
            } else {
                format!("-{}", human(p.totals.total - b))
            };
            let _ = write!(out, " {room:>11}");
        }
        let _ = writeln!(out);
    }
    let placeholders: usize = o.plans.iter().map(|p| p.placeholders).max().unwrap_or(0);
    if placeholders > 0 {
        let _ = writeln!(
            out,
            "note: up to {placeholders} nodes no rule covers were planned as placeholder groups"
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "widest workspaces (largest over the rows planned)");
    let _ = writeln!(
        out,
        "  {:<20} {:<20} {:<6} {:>10}  nodes",
        "family", "workspace", "arena", "bytes"
    );
    for t in &o.widest {
        let _ = writeln!(
            out,
            "  {:<20} {:<20} {:<6} {:>10}  {}",
            t.family,
            t.name,
            if t.arena { "yes" } else { "no" },
            human(t.bytes),
            fold_short(circuit, &t.nodes, 4)
        );
    }
    if o.widest.is_empty() {
        let _ = writeln!(out, "  (no family declares a workspace for this plan)");
    }
    let _ = writeln!(out);
    match (&o.fit_rows, &o.fit_kv) {
        (Some(rows), Some(kv)) => {
            let largest = match rows.max_rows {
                Some(n) => format!(
                    "largest n in {}..={} that fits {}: {n} (total {})",
                    rows.range.start(),
                    rows.range.end(),
                    human(rows.budget),
                    human(rows.total.unwrap_or(0))
                ),
                None => format!(
                    "no n in {}..={} fits {}",
                    rows.range.start(),
                    rows.range.end(),
                    human(rows.budget)
                ),
            };
            let tokens = match kv.max_kv_tokens {
                Some(u64::MAX) => "the KV cache never fills it".to_owned(),
                Some(t) => format!("{t} KV tokens fit"),
                None => "no KV cache fits".to_owned(),
            };
            let _ = writeln!(out, "fit       {largest}; at n = {}, {tokens}", kv.rows);
            if let Some(note) = &rows.note {
                let _ = writeln!(out, "          totals are not monotone in n: {note}");
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "fit       no budget: give --budget or a --device with memory"
            );
        }
    }
    if let Some(table) = per_node {
        out.push('\n');
        out.push_str(&per_node_table(circuit, table));
    }
    out
}

/// The per-node table folded by block.
pub fn per_node_table(circuit: &Circuit, table: &NodeTable) -> String {
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

#[derive(Serialize)]
struct Json<'a> {
    circuit: &'a str,
    device: &'a str,
    sm_count: u64,
    memory: Option<u64>,
    settings: BTreeMap<String, String>,
    kv_tokens: u64,
    sequences: u64,
    align: u64,
    plans: Vec<PlanJson<'a>>,
    widest: Vec<TermJson>,
    fit: FitJson,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    config_defaults: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<&'a crate::plan::Storage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_node: Option<PerNodeJson>,
}

#[derive(Serialize)]
struct PlanJson<'a> {
    rows: u64,
    digest: &'a str,
    groups: usize,
    placeholders: usize,
    totals: memory_plan::Totals,
    arena: ArenaJson,
    workspaces: Vec<TermJson>,
}

#[derive(Serialize)]
struct ArenaJson {
    bytes: u64,
    lower_bound: u64,
    unshared: u64,
    optimal: bool,
    buffers: usize,
}

#[derive(Serialize)]
struct TermJson {
    family: String,
    name: String,
    bytes: u64,
    arena: bool,
    nodes: Vec<String>,
    owner: String,
}

#[derive(Serialize)]
struct FitJson {
    budget: Option<u64>,
    max_rows: Option<u64>,
    total_at_max_rows: Option<u64>,
    monotone: Option<bool>,
    note: Option<String>,
    kv_rows: Option<u64>,
    max_kv_tokens: Option<u64>,
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
    node: String,
    op: String,
    weights: u64,
    activations: u64,
    workspaces: u64,
    states: u64,
}

fn term_json(circuit: &Circuit, t: &WorkspaceTerm) -> TermJson {
    TermJson {
        family: t.family.to_string(),
        name: t.name.to_string(),
        bytes: t.bytes,
        arena: t.arena,
        nodes: t
            .nodes
            .iter()
            .map(|&n| circuit.nodes()[n].id.clone())
            .collect(),
        owner: circuit.nodes()[t.owner].id.clone(),
    }
}

fn plan_json<'a>(circuit: &Circuit, p: &'a MemoryPlan) -> PlanJson<'a> {
    PlanJson {
        rows: p.rows,
        digest: &p.digest,
        groups: p.groups,
        placeholders: p.placeholders,
        totals: p.totals,
        arena: ArenaJson {
            bytes: p.arena.bytes,
            lower_bound: p.arena.lower_bound,
            unshared: p.arena.unshared,
            optimal: p.arena.optimal,
            buffers: p.arena.buffers,
        },
        workspaces: p.workspaces.iter().map(|t| term_json(circuit, t)).collect(),
    }
}

/// The JSON report.
pub fn json(o: &Outcome<'_>, per_node: Option<&NodeTable>) -> Result<String, CliError> {
    let circuit = o.planner.circuit();
    let config = o.planner.config();
    let report = Json {
        circuit: circuit.name(),
        device: &o.device,
        sm_count: config.sm_count,
        memory: o.device_memory,
        settings: settings_map(o.planner),
        kv_tokens: config.kv_tokens,
        sequences: config.sequences,
        align: config.align,
        plans: o.plans.iter().map(|p| plan_json(circuit, p)).collect(),
        widest: o.widest.iter().map(|t| term_json(circuit, t)).collect(),
        fit: FitJson {
            budget: o.budget,
            max_rows: o.fit_rows.as_ref().and_then(|f| f.max_rows),
            total_at_max_rows: o.fit_rows.as_ref().and_then(|f| f.total),
            monotone: o.fit_rows.as_ref().map(|f| f.monotone),
            note: o.fit_rows.as_ref().and_then(|f| f.note.clone()),
            kv_rows: o.fit_kv.as_ref().map(|f| f.rows),
            max_kv_tokens: o.fit_kv.as_ref().and_then(|f| f.max_kv_tokens),
        },
        config_defaults: o.config_defaults.iter().cloned().collect(),
        dtype: o.storage.as_ref(),
        per_node: per_node.map(|t| PerNodeJson {
            rows: t.rows,
            nodes: t
                .nodes
                .iter()
                .map(|r| NodeJson {
                    node: circuit.nodes()[r.node].id.clone(),
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
    };
    Ok(serde_json::to_string_pretty(&report)?)
}
