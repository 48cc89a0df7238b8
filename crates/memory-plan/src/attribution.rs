//! Who owns each byte: the per-node table of a plan, which sums exactly to its total.
//!
//! Attribution rules (docs/memory.md):
//! - a weight tensor to the first node declaring it (a shared tensor is counted once);
//! - a state to its writer;
//! - a workspace term outside the arena to its owner, the first node (plan order) whose value
//!   sets the term's size;
//! - the arena: the buffers live at its peak step (the first step whose live sum is the lower
//!   bound) to their owners (an edge to its producer, a circuit input to its first reader, an
//!   arena workspace to the first node of the group using it); what the packing adds above the
//!   lower bound is the named line "arena fragmentation".
//!
//! Invariants: the rows and the fragmentation line sum exactly to the plan's total. Every sum
//! is checked: an overflow is [`PlanError::Overflow`] naming the column, never a wrap
//! (the unchecked sums panicked in debug builds and gave a wrong total in release). Each row's
//! parts are disjoint shares of the plan's checked total, so a row's [`NodeRow::total`] cannot
//! overflow.

use circuit_ir::{NodeIdx, Op};
use cranelift_entity::EntityRef;
use serde::{Serialize, Serializer};

use crate::error::PlanError;
use crate::planner::{Planner, Scratch};

/// The bytes one node owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeRow {
    /// The node.
    pub node: NodeIdx,
    /// The node's instance id (`layer.3.q_proj`), as the circuit names it.
    pub id: String,
    /// Its operation.
    #[serde(serialize_with = "op_name")]
    pub op: Op,
    /// Weight tensors it declares first.
    pub weights: u64,
    /// Its buffers live at the arena's peak step.
    pub activations: u64,
    /// Workspace terms whose size it sets (outside the arena).
    pub workspaces: u64,
    /// States it writes.
    pub states: u64,
}

impl NodeRow {
    /// The row's sum. (Rows from [`Planner::per_node`] are shares of a checked total, so this
    /// cannot overflow; it saturates rather than wrap for a row built by hand.)
    pub fn total(&self) -> u64 {
        self.weights
            .saturating_add(self.activations)
            .saturating_add(self.workspaces)
            .saturating_add(self.states)
    }
}

/// An op as its name (`rms_norm`), as circuit files write it.
fn op_name<S: Serializer>(op: &Op, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(op.name())
}

/// The per-node table at one row count. Its `Display` prints one line per node (id, op and
/// the four columns in bytes), the fragmentation line and the total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeTable {
    /// The row count.
    pub rows: u64,
    /// One row per node, in execution order.
    pub nodes: Vec<NodeRow>,
    /// Arena bytes above the lower bound ("arena fragmentation").
    pub fragmentation: u64,
    /// The plan's total: the sum of every row and the fragmentation.
    pub total: u64,
}

impl Planner<'_> {
    /// The per-node table at `n` rows.
    pub fn per_node(&self, n: u64) -> Result<NodeTable, PlanError> {
        let interval = self.interval_plan(n)?;
        let mut scratch = Scratch::default();
        let packed = self.pack_at(&interval, n, &mut scratch)?;
        let circuit = self.circuit;
        let mut rows: Vec<NodeRow> = circuit
            .nodes()
            .iter()
            .map(|(node, decl)| NodeRow {
                node,
                id: decl.id.clone(),
                op: decl.op,
                weights: 0,
                activations: 0,
                workspaces: 0,
                states: 0,
            })
            .collect();
        let overflow = |what: &'static str| PlanError::Overflow {
            origin: circuit.origin().into(),
            what,
            n,
        };
        let add = |slot: &mut u64, bytes: u64, what: &'static str| {
            *slot = slot.checked_add(bytes).ok_or_else(|| overflow(what))?;
            Ok::<(), PlanError>(())
        };
        for tensor in circuit.tensors().values() {
            add(
                &mut rows[tensor.owner.index()].weights,
                tensor.bytes,
                "a node's weights",
            )?;
        }
        for state in circuit.states().values() {
            let bytes = state
                .bytes(self.config.kv_tokens, self.config.sequences)
                .map_err(|e| PlanError::States {
                    origin: circuit.origin().into(),
                    kv_tokens: self.config.kv_tokens,
                    sequences: self.config.sequences,
                    detail: format!("state `{}`: {e}", state.id),
                })?;
            add(
                &mut rows[state.writer.index()].states,
                bytes,
                "a node's states",
            )?;
        }
        let terms = interval
            .terms
            .terms(&scratch.term_values, &scratch.term_owners);
        let mut charged = 0u64;
        for t in terms.iter().filter(|t| !t.arena) {
            add(
                &mut rows[t.owner.index()].workspaces,
                t.bytes,
                "a node's workspaces",
            )?;
            add(&mut charged, t.bytes, "the workspaces")?;
        }
        let peak = packed.peak_step;
        for (slot, &size) in interval.arena.slots.iter().zip(&scratch.sizes) {
            if slot.start <= peak && peak < slot.end {
                add(
                    &mut rows[slot.owner.index()].activations,
                    size,
                    "a node's activations",
                )?;
            }
        }
        let totals = self.totals(packed.summary.bytes, charged, n)?;
        for row in &rows {
            [row.activations, row.workspaces, row.states]
                .iter()
                .try_fold(row.weights, |acc, &b| acc.checked_add(b))
                .ok_or_else(|| overflow("a node's row"))?;
        }
        Ok(NodeTable {
            rows: n,
            nodes: rows,
            fragmentation: packed.summary.bytes - packed.summary.lower_bound,
            total: totals.total,
        })
    }
}
