//! The fusion plan: launch groups in execution order, the state of every edge, a digest and a
//! text rendering.
//!
//! Invariants: every node is in exactly one group; groups are in a topological order of the
//! dependency graph; an edge is fused exactly when it has a producer, is not a circuit output,
//! and all its readers are in its producer's group. The digest covers groups (kernels, emitter,
//! members, placeholder or not) and edge states, not rule ids, so renaming a rule keeps it.

use std::fmt::Write as _;
use std::ops::RangeInclusive;

use circuit_ir::{Circuit, EdgeIdx, NodeIdx};
use cranelift_entity::EntityRef;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// One launch group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The rule that formed it; `None` for a placeholder group of an uncovered node.
    pub rule: Option<String>,
    /// Kernels it runs (empty: host work or a placeholder).
    pub kernels: Vec<String>,
    /// Its emitter (`placeholder` for placeholder groups).
    pub emitter: String,
    /// Member nodes in pattern order.
    pub nodes: Vec<NodeIdx>,
}

/// The emitter of placeholder groups.
pub const PLACEHOLDER_EMITTER: &str = "placeholder";

impl Group {
    pub(crate) fn placeholder(nodes: Vec<NodeIdx>) -> Group {
        Group {
            rule: None,
            kernels: Vec::new(),
            emitter: PLACEHOLDER_EMITTER.to_owned(),
            nodes,
        }
    }

    /// A group made for a node no rule covers.
    pub fn is_placeholder(&self) -> bool {
        self.rule.is_none()
    }
}

/// Whether an edge needs a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeState {
    /// Produced and read only inside one group: it never leaves the kernel.
    Fused,
    /// Needs a buffer: read across groups, a circuit input or a circuit output.
    Materialized,
}

/// A circuit covered by launch groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FusionPlan {
    groups: Vec<Group>,
    group_of: Vec<u32>,
    edge_states: Vec<EdgeState>,
    rows: RangeInclusive<u64>,
    digest: String,
}

impl FusionPlan {
    pub(crate) fn new(
        circuit: &Circuit,
        groups: Vec<Group>,
        group_of: Vec<u32>,
        edge_states: Vec<EdgeState>,
        rows: RangeInclusive<u64>,
    ) -> FusionPlan {
        let digest = digest(circuit, &groups, &edge_states);
        FusionPlan {
            groups,
            group_of,
            edge_states,
            rows,
            digest,
        }
    }

    /// Groups in execution order (a group's index is its step).
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The step (group index) a node runs in.
    pub fn step_of(&self, node: NodeIdx) -> usize {
        self.group_of[node.index()] as usize
    }

    /// Whether an edge is fused or materialized.
    pub fn edge_state(&self, edge: EdgeIdx) -> EdgeState {
        self.edge_states[edge.index()]
    }

    /// Every edge's state, by edge index.
    pub fn edge_states(&self) -> &[EdgeState] {
        &self.edge_states
    }

    /// The row counts this same plan serves (the rule interval holding the `n` it was fused at).
    pub fn rows(&self) -> RangeInclusive<u64> {
        self.rows.clone()
    }

    /// SHA-256 (hex) of the canonical text of groups and edge states.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Groups formed for uncovered nodes.
    pub fn placeholders(&self) -> usize {
        self.groups.iter().filter(|g| g.is_placeholder()).count()
    }

    /// One line per group under a header per block instance.
    pub fn render(&self, circuit: &Circuit) -> String {
        let nodes = circuit.nodes();
        let materialized = self
            .edge_states
            .iter()
            .filter(|s| **s == EdgeState::Materialized)
            .count();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {} groups ({} placeholders), {} of {} edges materialized, rows {}..={}",
            circuit.name(),
            self.groups.len(),
            self.placeholders(),
            materialized,
            self.edge_states.len(),
            self.rows.start(),
            self.rows.end()
        );
        let _ = writeln!(out, "digest {}", self.digest);
        let mut instance = None;
        for (step, g) in self.groups.iter().enumerate() {
            let first = &nodes[g.nodes[0]];
            if instance != Some(first.instance) {
                instance = Some(first.instance);
                let _ = writeln!(out, "# {}", circuit.instances()[first.instance].id());
            }
            let members: Vec<&str> = g
                .nodes
                .iter()
                .map(|&n| {
                    let node = &nodes[n];
                    if node.instance == first.instance {
                        node.local.as_str()
                    } else {
                        node.id.as_str()
                    }
                })
                .collect();
            let kernels = if g.kernels.is_empty() {
                "-".to_owned()
            } else {
                g.kernels.join(",")
            };
            let _ = writeln!(
                out,
                "  g{step:<5} {:<24} {kernels} @{}: {}",
                g.rule.as_deref().unwrap_or("(placeholder)"),
                g.emitter,
                members.join(" + ")
            );
        }
        out
    }
}

fn digest(circuit: &Circuit, groups: &[Group], edge_states: &[EdgeState]) -> String {
    let nodes = circuit.nodes();
    let mut text = String::new();
    for g in groups {
        let members: Vec<&str> = g.nodes.iter().map(|&n| nodes[n].id.as_str()).collect();
        let _ = writeln!(
            text,
            "group {} {} {} {}",
            if g.is_placeholder() {
                "placeholder"
            } else {
                "rule"
            },
            g.kernels.join(","),
            g.emitter,
            members.join(",")
        );
    }
    for (edge, state) in circuit.edges().values().zip(edge_states) {
        let _ = writeln!(text, "edge {} {:?}", edge.id, state);
    }
    format!("{:x}", Sha256::digest(text.as_bytes()))
}
