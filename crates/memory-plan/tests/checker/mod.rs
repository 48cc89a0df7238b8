//! An independent checker of a plan's arena (issue 17 item 5), in the manner of regalloc2's
//! checker: it trusts neither the fusion plan's `step_of`/`edge_state` tables nor the arena's
//! lifetimes. From the circuit and the fusion plan's group list alone it re-derives each node's
//! step, checks the group order (every input is produced at an earlier or the same step), which
//! edges must live in memory and over which steps, and then checks the layout against that:
//! one buffer per materialized edge covering its derived lifetime and at least its bytes, every
//! arena workspace live at its group's step, and no two buffers live at one step sharing bytes
//! (a plain pairwise scan sharing no code with the packer's validator).
//!
//! Shared by the tests and the fuzz targets (`#[path]`), so it uses only public API.

use circuit_ir::{Circuit, NodeIdx};
use cranelift_entity::EntityRef;
use fuser::FusionPlan;
use memory_plan::{ArenaLayout, BufferKind};

/// Checks `layout` (the arena at `layout.rows`) against `circuit` and `fusion`.
pub fn check(circuit: &Circuit, fusion: &FusionPlan, layout: &ArenaLayout) -> Result<(), String> {
    let nodes = circuit.nodes();
    let mut step: Vec<Option<usize>> = vec![None; nodes.len()];
    for (g, group) in fusion.groups().iter().enumerate() {
        for &node in &group.nodes {
            let slot = step.get_mut(node.index()).ok_or_else(|| {
                format!("group {g} names node {} outside the circuit", node.index())
            })?;
            if slot.replace(g).is_some() {
                return Err(format!("node `{}` is in two groups", nodes[node].id));
            }
        }
    }
    let step_of = |node: NodeIdx| step[node.index()];
    for (idx, node) in nodes.iter() {
        let s = step_of(idx).ok_or_else(|| format!("node `{}` is in no group", node.id))?;
        for &e in &node.inputs {
            if let Some(p) = circuit.edges()[e].producer {
                let ps = step_of(p).unwrap_or(usize::MAX);
                if ps > s {
                    return Err(format!(
                        "node `{}` at step {s} reads `{}`, produced at step {ps}",
                        node.id,
                        circuit.edges()[e].id
                    ));
                }
            }
        }
    }
    let steps = fusion.groups().len();
    if layout.steps != steps {
        return Err(format!("{} steps, {steps} groups", layout.steps));
    }
    let mut edge_slot = vec![None; circuit.edges().len()];
    for (i, slot) in layout.slots.iter().enumerate() {
        if slot.start >= slot.end || slot.end > steps {
            return Err(format!(
                "buffer {i}: lifetime [{}, {})",
                slot.start, slot.end
            ));
        }
        match slot.kind {
            BufferKind::Edge { edge } => {
                if edge_slot[edge.index()].replace(i).is_some() {
                    return Err(format!(
                        "edge `{}` has two buffers",
                        circuit.edges()[edge].id
                    ));
                }
            }
            BufferKind::Workspace { step, .. } => {
                if !(slot.start <= step && step < slot.end) {
                    return Err(format!(
                        "workspace buffer {i} is not live at its step {step}"
                    ));
                }
            }
        }
    }
    for (e, edge) in circuit.edges().iter() {
        let start = edge.producer.map_or(0, |p| step_of(p).unwrap_or(0));
        let cross = edge.readers.iter().any(|&r| {
            Some(step_of(r).unwrap_or(0)) != edge.producer.map(|p| step_of(p).unwrap_or(0))
        });
        let needed = edge.producer.is_none() || edge.output || cross;
        match (needed, edge_slot[e.index()]) {
            (false, None) => {}
            (false, Some(_)) => {
                return Err(format!(
                    "edge `{}` never leaves its group but has a buffer",
                    edge.id
                ));
            }
            (true, None) => {
                return Err(format!(
                    "edge `{}` crosses groups without a buffer",
                    edge.id
                ));
            }
            (true, Some(i)) => {
                let last = edge
                    .readers
                    .iter()
                    .map(|&r| step_of(r).unwrap_or(0))
                    .max()
                    .unwrap_or(start);
                let end = if edge.output { steps } else { last + 1 };
                let slot = &layout.slots[i];
                if slot.start > start || slot.end < end {
                    return Err(format!(
                        "edge `{}` lives over [{start}, {end}) but its buffer over [{}, {})",
                        edge.id, slot.start, slot.end
                    ));
                }
                let bytes = edge.bytes_at(layout.rows).map_err(|e| e.to_string())?;
                if layout.sizes[i] < bytes {
                    return Err(format!(
                        "edge `{}` needs {bytes} bytes, its buffer has {}",
                        edge.id, layout.sizes[i]
                    ));
                }
            }
        }
    }
    let slots = &layout.slots;
    for i in 0..slots.len() {
        for j in i + 1..slots.len() {
            let live = slots[i].start < slots[j].end && slots[j].start < slots[i].end;
            let (oi, oj) = (layout.offsets[i] as u128, layout.offsets[j] as u128);
            let (si, sj) = (layout.sizes[i] as u128, layout.sizes[j] as u128);
            if live && si > 0 && sj > 0 && oi < oj + sj && oj < oi + si {
                return Err(format!(
                    "buffers {i} and {j} are live together and share bytes"
                ));
            }
        }
    }
    Ok(())
}
