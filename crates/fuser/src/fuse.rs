//! The grouping pass: a circuit at `n` rows under some settings becomes a [`FusionPlan`].
//!
//! Greedy and deterministic: the applicable rules run in priority order (ties by id); each scans
//! its first element's op in execution order and claims a chain of unclaimed nodes, growing it
//! through the readers of its members' outputs (candidates in execution order, backtracking over
//! them). A chain is refused when an interior output (of a non-last element without `keep`) is
//! read outside it or is a circuit output, or when merging it would make the group graph cyclic.
//!
//! Invariants:
//! - `pos` is a topological order of the current units (groups and unclaimed nodes): every
//!   dependency arc between two units goes from a lower to a higher position. A path that leaves
//!   a chain and comes back must therefore stay below the chain's highest position, which bounds
//!   the cycle search; merging reorders only the window the chain spans (Pearce-Kelly style), so
//!   the pass is linear in the circuit for local patterns, with no whole-graph search per chain.
//! - The final group order is the topological order that always takes the ready group whose
//!   first node comes first (ties by first member), independent of the claiming history.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use circuit_ir::{Circuit, NodeIdx};
use cranelift_entity::EntityRef;

use crate::intervals::interval_of;
use crate::plan::{EdgeState, FusionPlan, Group};
use crate::rules::{Rule, Rules, Settings};

/// Options of the pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FuseOptions {
    /// Give each node no rule covers a placeholder group (reported as such) instead of failing.
    pub placeholders: bool,
}

/// A circuit the rules cannot cover.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FuseError {
    /// A node no applicable rule covers.
    #[error(
        "{}: node `{node}` ({op}) is covered by no rule at n = {n} with {}; add a rule for `{op}` (or fuse with placeholders)",
        circuit_ir::one_line(.origin),
        circuit_ir::one_line(.settings)
    )]
    Uncovered {
        /// The rules' origin (file name).
        origin: String,
        /// The node's id.
        node: String,
        /// Its op.
        op: String,
        /// The rows.
        n: u64,
        /// The settings, rendered.
        settings: String,
    },
}

/// Most candidate chains tried from one start node; keeps pathological fan-out linear.
const MAX_TRIES_PER_START: usize = 4096;
const TOMB: u32 = u32::MAX;

/// Fuses `circuit` at `n` rows.
pub fn fuse(
    circuit: &Circuit,
    rules: &Rules,
    settings: &Settings,
    n: u64,
    options: FuseOptions,
) -> Result<FusionPlan, crate::FuseError> {
    let applicable = rules.applicable(n, settings);
    let mut state = Fusing::new(circuit);
    for rule in &applicable {
        state.claim_all(rule);
    }
    let mut placeholders = Vec::new();
    for node in circuit.nodes().keys() {
        if !state.claimed[node.index()] {
            if !options.placeholders {
                let op = circuit.nodes()[node].op;
                return Err(FuseError::Uncovered {
                    origin: rules.origin().to_owned(),
                    node: circuit.nodes()[node].id.clone(),
                    op: op.to_string(),
                    n,
                    settings: settings.to_string(),
                });
            }
            placeholders.push(node);
        }
    }
    let order = state.group_order();
    let mut groups = Vec::with_capacity(order.len());
    let mut group_of = vec![0u32; circuit.nodes().len()];
    for &rep in &order {
        let index = u32::try_from(groups.len()).expect("fewer groups than nodes");
        let members: Vec<NodeIdx> = state.members[rep as usize]
            .iter()
            .map(|&m| NodeIdx::new(m as usize))
            .collect();
        for m in &members {
            group_of[m.index()] = index;
        }
        let group = match state.rule_of[rep as usize] {
            Some(r) => {
                let rule: &Rule = applicable[r];
                Group {
                    rule: Some(rule.id.clone()),
                    kernels: rule.kernels.clone(),
                    emitter: rule.emitter.clone(),
                    nodes: members,
                }
            }
            None => Group::placeholder(members),
        };
        groups.push(group);
    }
    let edge_states = circuit
        .edges()
        .values()
        .map(|edge| match edge.producer {
            Some(p)
                if !edge.output
                    && !edge.readers.is_empty()
                    && edge
                        .readers
                        .iter()
                        .all(|r| group_of[r.index()] == group_of[p.index()]) =>
            {
                EdgeState::Fused
            }
            _ => EdgeState::Materialized,
        })
        .collect();
    Ok(FusionPlan::new(
        circuit,
        groups,
        group_of,
        edge_states,
        interval_of(rules, settings, n),
    ))
}

struct Fusing<'c> {
    circuit: &'c Circuit,
    /// Successors of each node in the dependency graph, deduplicated.
    succ: Vec<Vec<u32>>,
    /// Node -> its unit's representative (its first node in execution order).
    unit: Vec<u32>,
    /// Representative -> member nodes in pattern order.
    members: Vec<Vec<u32>>,
    /// Representative -> index into the applicable rules (None: unclaimed or placeholder).
    rule_of: Vec<Option<usize>>,
    claimed: Vec<bool>,
    /// Position -> representative (TOMB for slots freed by merges).
    order: Vec<u32>,
    /// Representative -> position.
    pos: Vec<u32>,
    /// Stamps for "in the candidate chain" and "reached by the cycle search".
    in_chain: Vec<u32>,
    reached: Vec<u32>,
    stamp: u32,
    rule_index: usize,
}

impl<'c> Fusing<'c> {
    fn new(circuit: &'c Circuit) -> Self {
        let n = circuit.nodes().len();
        let graph = circuit.graph();
        let succ = (0..n)
            .map(|i| {
                let mut s: Vec<u32> = graph
                    .neighbors(circuit.graph_node(NodeIdx::new(i)))
                    .map(|w| w.index() as u32)
                    .collect();
                s.sort_unstable();
                s.dedup();
                s
            })
            .collect();
        let all: Vec<u32> = (0..n as u32).collect();
        Fusing {
            circuit,
            succ,
            unit: all.clone(),
            members: all.iter().map(|&i| vec![i]).collect(),
            rule_of: vec![None; n],
            claimed: vec![false; n],
            order: all.clone(),
            pos: all,
            in_chain: vec![0; n],
            reached: vec![0; n],
            stamp: 0,
            rule_index: 0,
        }
    }

    fn claim_all(&mut self, rule: &Rule) {
        let first = &rule.pattern[0];
        let nodes = self.circuit.nodes();
        for (node, data) in nodes.iter() {
            let v = node.index();
            if self.claimed[v] || !first.matches(data.op, &data.local) {
                continue;
            }
            let mut chain = vec![v as u32];
            let mut tries = 0;
            if self.grow(rule, &mut chain, &mut tries) {
                // The last search stamped this chain and what it reaches: commit reads them.
                self.commit(&chain);
            }
        }
        self.rule_index += 1;
    }

    /// Extends `chain` to the whole pattern; true when a valid chain was found.
    fn grow(&mut self, rule: &Rule, chain: &mut Vec<u32>, tries: &mut usize) -> bool {
        let j = chain.len();
        if j == rule.pattern.len() {
            *tries += 1;
            return self.valid(rule, chain);
        }
        if *tries >= MAX_TRIES_PER_START {
            return false;
        }
        let element = &rule.pattern[j];
        let nodes = self.circuit.nodes();
        let edges = self.circuit.edges();
        let mut candidates: Vec<u32> = chain
            .iter()
            .flat_map(|&m| nodes[NodeIdx::new(m as usize)].outputs.iter())
            .flat_map(|&e| edges[e].readers.iter())
            .map(|r| r.index() as u32)
            .filter(|&r| {
                let data = &nodes[NodeIdx::new(r as usize)];
                !self.claimed[r as usize]
                    && !chain.contains(&r)
                    && element.matches(data.op, &data.local)
            })
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for c in candidates {
            chain.push(c);
            if self.grow(rule, chain, tries) {
                return true;
            }
            chain.pop();
        }
        false
    }

    fn valid(&mut self, rule: &Rule, chain: &[u32]) -> bool {
        let nodes = self.circuit.nodes();
        let edges = self.circuit.edges();
        let last = chain.len() - 1;
        for (i, &m) in chain.iter().enumerate() {
            if i == last || rule.pattern[i].keep {
                continue;
            }
            for &e in &nodes[NodeIdx::new(m as usize)].outputs {
                let edge = &edges[e];
                if edge.output
                    || edge
                        .readers
                        .iter()
                        .any(|r| !chain.contains(&(r.index() as u32)))
                {
                    return false;
                }
            }
        }
        self.acyclic(chain)
    }

    /// Whether merging `chain` keeps the unit graph acyclic. Stamps the chain (`in_chain`) and
    /// the units reachable from it below its highest position (`reached`): on a merge those
    /// must move after the merged unit.
    fn acyclic(&mut self, chain: &[u32]) -> bool {
        self.stamp += 1;
        let stamp = self.stamp;
        for &m in chain {
            self.in_chain[m as usize] = stamp;
        }
        let hi = chain
            .iter()
            .map(|&m| self.pos[m as usize])
            .max()
            .unwrap_or(0);
        let mut stack: Vec<u32> = Vec::new();
        let visit = |u: u32, this: &mut Self, stack: &mut Vec<u32>| {
            if this.pos[u as usize] < hi && this.reached[u as usize] != stamp {
                this.reached[u as usize] = stamp;
                stack.push(u);
            }
        };
        for &m in chain {
            for i in 0..self.succ[m as usize].len() {
                let w = self.succ[m as usize][i];
                if self.in_chain[w as usize] != stamp {
                    visit(self.unit[w as usize], self, &mut stack);
                }
            }
        }
        while let Some(u) = stack.pop() {
            for mi in 0..self.members[u as usize].len() {
                let m = self.members[u as usize][mi];
                for si in 0..self.succ[m as usize].len() {
                    let w = self.succ[m as usize][si];
                    if self.in_chain[w as usize] == stamp {
                        return false;
                    }
                    let uw = self.unit[w as usize];
                    if uw != u {
                        visit(uw, self, &mut stack);
                    }
                }
            }
        }
        true
    }

    /// Merges `chain` into one unit; `in_chain` and `reached` carry the stamps of the search
    /// that validated it.
    fn commit(&mut self, chain: &[u32]) {
        let rep = *chain.iter().min().expect("non-empty chain");
        let lo = chain
            .iter()
            .map(|&m| self.pos[m as usize])
            .min()
            .expect("non-empty");
        let hi = chain
            .iter()
            .map(|&m| self.pos[m as usize])
            .max()
            .expect("non-empty");
        let stamp = self.stamp;
        for &m in chain {
            self.unit[m as usize] = rep;
            self.claimed[m as usize] = true;
        }
        self.members[rep as usize] = chain.to_vec();
        self.rule_of[rep as usize] = Some(self.rule_index);
        // `reached` is stamped; order the window: units that stay before, the merged unit, the
        // units reachable from it, then freed slots.
        let window: Vec<u32> = self.order[lo as usize..=hi as usize]
            .iter()
            .copied()
            .filter(|&u| u != TOMB && self.in_chain[u as usize] != stamp)
            .collect();
        let (after, before): (Vec<u32>, Vec<u32>) = window
            .into_iter()
            .partition(|&u| self.reached[u as usize] == stamp);
        let mut next = lo as usize;
        for u in before.into_iter().chain([rep]).chain(after) {
            self.order[next] = u;
            self.pos[u as usize] = next as u32;
            next += 1;
        }
        for slot in next..=hi as usize {
            self.order[slot] = TOMB;
        }
    }

    /// Representatives in final order: topological, the ready unit with the smallest first
    /// node first.
    fn group_order(&mut self) -> Vec<u32> {
        let n = self.unit.len();
        let mut indegree = vec![0u32; n];
        for v in 0..n {
            for &w in &self.succ[v] {
                if self.unit[w as usize] != self.unit[v] {
                    indegree[self.unit[w as usize] as usize] += 1;
                }
            }
        }
        let mut ready: BinaryHeap<Reverse<u32>> = (0..n as u32)
            .filter(|&v| self.unit[v as usize] == v && indegree[v as usize] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::new();
        while let Some(Reverse(u)) = ready.pop() {
            order.push(u);
            for &m in &self.members[u as usize] {
                for &w in &self.succ[m as usize] {
                    let uw = self.unit[w as usize];
                    if uw != u {
                        indegree[uw as usize] -= 1;
                        if indegree[uw as usize] == 0 {
                            ready.push(Reverse(uw));
                        }
                    }
                }
            }
        }
        order
    }
}
