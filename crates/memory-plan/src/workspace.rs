//! Workspace terms, with exactly the semantics docs/memory.md gives them ("Workspaces"):
//! every kernel family a plan group runs on ([`Families::of_group`]) with the workspaces it
//! declares, valued at the plan's rows. One buffer serves every launch of a family, so each
//! (family, workspace) is one term, attributed to every node whose group runs that family.
//!
//! Invariants:
//! - A term's bytes are the largest value over its nodes, each valued at `n`, its own `k` (its
//!   first input's width, 0 without input) and the device's `sm_count`; a failing expression is
//!   an error naming family, workspace, node and `n`, never 0.
//! - Terms are ordered by (family id, workspace name); a term's nodes are in plan order (groups
//!   in step order, members in pattern order), each once.
//! - Which nodes a term covers depends only on the fusion plan, so [`TermLayout`] is built once
//!   per row interval and only values are computed per `n` (once per distinct `k`).
//! - `widest` keeps, per (family, workspace), the term with the largest bytes; an equal later
//!   term does not replace the earlier one.

use std::collections::BTreeMap;
use std::sync::Arc;

use circuit_ir::{Circuit, NodeIdx};
use fuser::FusionPlan;
use kernel_families::{BoundFamilies, Families, FamilyIdx, WorkspaceErrorKind};
use serde::Serialize;

use crate::error::PlanError;

/// One workspace of one family in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceTerm {
    /// Family id.
    pub family: Arc<str>,
    /// Workspace name.
    pub name: Arc<str>,
    /// Bytes at the plan's rows: the largest value over the nodes.
    pub bytes: u64,
    /// Held inside the activation arena (transient at the steps that use it).
    pub arena: bool,
    /// The nodes whose groups run the family, in plan order.
    pub nodes: Arc<[NodeIdx]>,
    /// The first node (in plan order) whose value is `bytes`: the node that sets the term's
    /// size, and the owner its bytes are attributed to in the per-node table.
    pub owner: NodeIdx,
}

/// Per (family, workspace) terms over several plans: the largest bytes, with the nodes of the
/// plan that needed them; on equal bytes the earlier plan's term stays.
pub fn widest<I>(plans: I) -> Vec<WorkspaceTerm>
where
    I: IntoIterator,
    I::Item: IntoIterator<Item = WorkspaceTerm>,
{
    let mut by: BTreeMap<(Arc<str>, Arc<str>), WorkspaceTerm> = BTreeMap::new();
    for term in plans.into_iter().flatten() {
        let key = (term.family.clone(), term.name.clone());
        match by.get(&key) {
            Some(old) if old.bytes >= term.bytes => {}
            _ => {
                by.insert(key, term);
            }
        }
    }
    by.into_values().collect()
}

/// The terms of one fusion plan: which (family, workspace) pairs it needs and for which nodes.
#[derive(Debug, Clone)]
pub(crate) struct TermLayout {
    terms: Vec<TermShape>,
}

#[derive(Debug, Clone)]
pub(crate) struct TermShape {
    pub family: FamilyIdx,
    pub workspace: usize,
    pub family_id: Arc<str>,
    pub name: Arc<str>,
    pub arena: bool,
    pub nodes: Arc<[NodeIdx]>,
    /// `k` of each node, parallel to `nodes`.
    node_k: Vec<u64>,
    /// The distinct `k` values, ascending, each with the position in `nodes` of the first node
    /// with it: a term is valued once per distinct `k`.
    distinct_k: Vec<(u64, usize)>,
    /// The group steps running the family, ascending, each once.
    pub steps: Vec<usize>,
}

impl TermLayout {
    pub(crate) fn new(circuit: &Circuit, plan: &FusionPlan, families: &Families) -> TermLayout {
        let mut by: BTreeMap<(String, String), (TermShape, Vec<NodeIdx>)> = BTreeMap::new();
        for (step, group) in plan.groups().iter().enumerate() {
            for &node in &group.nodes {
                let op = circuit.nodes()[node].op;
                let Some(fidx) = families.of_group(&group.kernels, &group.emitter, op) else {
                    continue;
                };
                let family = &families.families()[fidx];
                let k = circuit.node_k(node);
                for (w, ws) in family.workspaces.iter().enumerate() {
                    let (shape, nodes) = by
                        .entry((family.id.clone(), ws.name.clone()))
                        .or_insert_with(|| {
                            let shape = TermShape {
                                family: fidx,
                                workspace: w,
                                family_id: family.id.as_str().into(),
                                name: ws.name.as_str().into(),
                                arena: ws.arena,
                                nodes: Arc::from([]),
                                node_k: Vec::new(),
                                distinct_k: Vec::new(),
                                steps: Vec::new(),
                            };
                            (shape, Vec::new())
                        });
                    nodes.push(node);
                    shape.node_k.push(k);
                    if shape.steps.last() != Some(&step) {
                        shape.steps.push(step);
                    }
                }
            }
        }
        let terms = by
            .into_values()
            .map(|(mut t, nodes)| {
                t.nodes = nodes.into();
                let mut first: BTreeMap<u64, usize> = BTreeMap::new();
                for (i, &k) in t.node_k.iter().enumerate() {
                    first.entry(k).or_insert(i);
                }
                t.distinct_k = first.into_iter().collect();
                t
            })
            .collect();
        TermLayout { terms }
    }

    pub(crate) fn shapes(&self) -> &[TermShape] {
        &self.terms
    }

    /// Each term's bytes at `n` into `bytes`, and the position (in the term's nodes) of its
    /// owner, the first node whose value is the term's, into `owners`; in term order.
    pub(crate) fn values(
        &self,
        circuit: &Circuit,
        bound: &BoundFamilies,
        n: u64,
        bytes: &mut Vec<u64>,
        owners: &mut Vec<usize>,
    ) -> Result<(), PlanError> {
        bytes.clear();
        owners.clear();
        for t in &self.terms {
            let (mut most, mut owner) = (0, 0);
            for (i, &(k, first)) in t.distinct_k.iter().enumerate() {
                let v = t.value(circuit, bound, n, k)?;
                if i == 0 || v > most || (v == most && first < owner) {
                    (most, owner) = (v, first);
                }
            }
            bytes.push(most);
            owners.push(owner);
        }
        Ok(())
    }

    /// The terms, given their values and owners from [`TermLayout::values`].
    pub(crate) fn terms(&self, bytes: &[u64], owners: &[usize]) -> Vec<WorkspaceTerm> {
        self.terms
            .iter()
            .zip(bytes.iter().zip(owners))
            .map(|(t, (&bytes, &owner))| WorkspaceTerm {
                family: t.family_id.clone(),
                name: t.name.clone(),
                bytes,
                arena: t.arena,
                nodes: t.nodes.clone(),
                owner: t.nodes[owner],
            })
            .collect()
    }
}

impl TermShape {
    fn value(
        &self,
        circuit: &Circuit,
        bound: &BoundFamilies,
        n: u64,
        k: u64,
    ) -> Result<u64, PlanError> {
        bound
            .workspace_value(self.family, self.workspace, n, k)
            .map_err(|e| {
                let node = self.nodes[self.node_k.iter().position(|&x| x == k).unwrap_or(0)];
                PlanError::Workspace {
                    origin: bound.origin().into(),
                    family: self.family_id.to_string(),
                    workspace: self.name.to_string(),
                    node: circuit.nodes()[node].id.clone(),
                    n,
                    // The variant already names the family and workspace.
                    detail: match e.kind() {
                        WorkspaceErrorKind::Eval { index, error, .. } => {
                            format!("bytes[{index}]: {error}")
                        }
                        _ => e.to_string(),
                    },
                }
            })
    }
}

/// The workspace terms of `plan` at `n` rows, with `bound` the registry bound to `circuit` and
/// the device.
pub fn workspace_terms(
    circuit: &Circuit,
    plan: &FusionPlan,
    families: &Families,
    bound: &BoundFamilies,
    n: u64,
) -> Result<Vec<WorkspaceTerm>, PlanError> {
    let layout = TermLayout::new(circuit, plan, families);
    let (mut bytes, mut owners) = (Vec::new(), Vec::new());
    layout.values(circuit, bound, n, &mut bytes, &mut owners)?;
    Ok(layout.terms(&bytes, &owners))
}
