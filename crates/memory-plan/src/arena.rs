//! The activation arena of a fusion plan: one buffer per materialized edge and per use of an
//! `arena = true` workspace, each live over a range of group steps, sized at `n`.
//!
//! Invariants:
//! - Lifetimes are half-open step ranges `[start, end)` over the plan's group order: an edge
//!   from its producer's step (0 for a circuit input) to its last reader's step inclusive (to the
//!   last step for a circuit output); an arena workspace at each step of a group running its
//!   family, one buffer per such step.
//! - Lifetimes depend only on the fusion plan, so an [`ArenaShape`] is built once per row
//!   interval; per `n` only sizes change, computed once per distinct (rows, width, format).
//! - Sizes are rounded up to the alignment, so the lower bound is the largest aligned sum live
//!   at one step, and (the packer's invariant) every offset is aligned too.

use std::collections::HashMap;

use circuit_ir::{Circuit, EdgeIdx, Format, NodeIdx};
use fuser::{EdgeState, FusionPlan};
use serde::Serialize;

use crate::error::PlanError;
use crate::workspace::TermLayout;
use arena_pack::Buffer;

/// What a buffer of the arena holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BufferKind {
    /// A materialized edge.
    Edge {
        /// The edge.
        edge: EdgeIdx,
    },
    /// An `arena = true` workspace term used by the group at `step`.
    Workspace {
        /// Index of the term in the plan's workspace terms.
        term: usize,
        /// The step of the group using it.
        step: usize,
    },
}

/// A buffer's lifetime and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferSlot {
    /// What it holds.
    pub kind: BufferKind,
    /// First step it is live.
    pub start: usize,
    /// One past the last step it is live.
    pub end: usize,
    /// The node its bytes are attributed to: an edge's producer (a circuit input's first
    /// reader), a workspace's first node in the using group.
    pub owner: NodeIdx,
}

/// Where a size class gets its bytes.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The size of this edge (the representative of its rows, width and format).
    Edge(EdgeIdx),
    /// The value of this workspace term.
    Term(usize),
}

/// Entries (class, count) the distinct live profiles may hold together before [`Live::Events`]
/// is used instead: profiles cost the sum over the steps of the classes live at each, which is
/// quadratic when many buffers of distinct sizes live together (a fan-in of 100,000 edges of
/// distinct widths into one node).
const PROFILE_ENTRIES: usize = 1 << 20;

/// What is live at each step of the arena, for its lower bound.
#[derive(Debug, Clone)]
enum Live {
    /// Distinct live profiles: (class, live count) pairs and the first step with the profile.
    /// The layers of a model repeat their profiles, so these are few and the lower bound at a
    /// new `n` costs a few sums.
    Profiles(Vec<(Vec<(u32, u64)>, usize)>),
    /// The slots' classes by start step and by end step: the lower bound at a new `n` sweeps
    /// the steps once, linear in the buffers.
    Events {
        /// (start step, class), ascending.
        starts: Vec<(usize, u32)>,
        /// (end step, class), ascending.
        ends: Vec<(usize, u32)>,
    },
}

/// The buffers of a fusion plan's arena, sized per `n`.
///
/// Buffers fall into few size classes (edges of equal rows, width and format; uses of one
/// workspace term), and the steps into few live profiles (how many buffers of each class are
/// live; the layers of a model repeat them), so a size at `n` is computed once per class and the
/// lower bound once per profile.
#[derive(Debug, Clone)]
pub(crate) struct ArenaShape {
    pub slots: Vec<BufferSlot>,
    /// Per slot: its size class.
    slot_class: Vec<u32>,
    classes: Vec<Source>,
    /// Slots per class.
    class_count: Vec<u64>,
    /// What is live at each step.
    live: Live,
    pub steps: usize,
    align: u64,
    /// The circuit's origin, which overflow errors name.
    origin: std::sync::Arc<str>,
    /// The kernel registry's origin, which an overflow the workspaces cause names.
    families_origin: std::sync::Arc<str>,
    /// Per workspace term (by index): `workspace `name` of family `id``, for messages.
    term_names: Vec<String>,
}

/// The distinct live profiles of the steps, built by one sweep over the steps (each slot
/// entering at its start and leaving at its end), or [`Live::Events`] when they would hold
/// more than [`PROFILE_ENTRIES`] entries.
fn live_profiles(slots: &[BufferSlot], slot_class: &[u32], steps: usize) -> Live {
    let mut starts: Vec<(usize, u32)> = slots
        .iter()
        .zip(slot_class)
        .filter(|(s, _)| s.start < steps.min(s.end))
        .map(|(s, &c)| (s.start, c))
        .collect();
    let mut ends: Vec<(usize, u32)> = slots
        .iter()
        .zip(slot_class)
        .filter(|(s, _)| s.start < steps.min(s.end))
        .map(|(s, &c)| (s.end.min(steps), c))
        .collect();
    starts.sort_unstable();
    ends.sort_unstable();
    let mut counts: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    let mut seen: HashMap<Vec<(u32, u64)>, usize> = HashMap::new();
    let mut profiles = Vec::new();
    let (mut s, mut e, mut entries) = (0, 0, 0usize);
    for step in 0..steps {
        while let Some(&(_, class)) = ends.get(e).filter(|(end, _)| *end <= step) {
            if let Some(count) = counts.get_mut(&class) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&class);
                }
            }
            e += 1;
        }
        while let Some(&(_, class)) = starts.get(s).filter(|(start, _)| *start <= step) {
            *counts.entry(class).or_insert(0) += 1;
            s += 1;
        }
        entries += counts.len();
        if entries > PROFILE_ENTRIES {
            return Live::Events { starts, ends };
        }
        let profile: Vec<(u32, u64)> = counts.iter().map(|(&c, &n)| (c, n)).collect();
        if !seen.contains_key(&profile) {
            seen.insert(profile.clone(), step);
            profiles.push((profile, step));
        }
    }
    Live::Profiles(profiles)
}

impl ArenaShape {
    pub(crate) fn new(
        circuit: &Circuit,
        plan: &FusionPlan,
        terms: &TermLayout,
        align: u64,
        families_origin: &str,
    ) -> ArenaShape {
        let steps = plan.groups().len();
        let mut slots = Vec::new();
        let mut slot_class = Vec::new();
        let mut classes = Vec::new();
        let mut class_index: HashMap<(String, u64, Format), u32> = HashMap::new();
        for (e, edge) in circuit.edges().iter() {
            if plan.edge_state(e) != EdgeState::Materialized {
                continue;
            }
            let start = edge.producer.map_or(0, |p| plan.step_of(p));
            let last_read = edge.readers.iter().map(|&r| plan.step_of(r)).max();
            let end = if edge.output {
                steps
            } else {
                last_read.unwrap_or(start) + 1
            };
            let owner = edge
                .producer
                .or_else(|| edge.readers.first().copied())
                .unwrap_or_else(|| NodeIdx::from_u32(0));
            let key = (edge.rows.expr().canonical(), edge.width, edge.format);
            let next = u32::try_from(classes.len()).expect("fewer classes than edges");
            let class = *class_index.entry(key).or_insert_with(|| {
                classes.push(Source::Edge(e));
                next
            });
            slots.push(BufferSlot {
                kind: BufferKind::Edge { edge: e },
                start,
                end,
                owner,
            });
            slot_class.push(class);
        }
        for (t, shape) in terms.shapes().iter().enumerate() {
            if !shape.arena {
                continue;
            }
            let class = u32::try_from(classes.len()).expect("fewer classes than slots");
            classes.push(Source::Term(t));
            // `nodes` and `steps` are both in plan order: one walk finds each step's first node
            // (a search from the start per step was quadratic in the layers of a model).
            let mut next = 0;
            for &step in &shape.steps {
                while next < shape.nodes.len() && plan.step_of(shape.nodes[next]) < step {
                    next += 1;
                }
                let owner = shape
                    .nodes
                    .get(next)
                    .copied()
                    .filter(|&n| plan.step_of(n) == step)
                    .unwrap_or(shape.nodes[0]);
                slots.push(BufferSlot {
                    kind: BufferKind::Workspace { term: t, step },
                    start: step,
                    end: step + 1,
                    owner,
                });
                slot_class.push(class);
            }
        }
        let mut class_count = vec![0u64; classes.len()];
        for &class in &slot_class {
            class_count[class as usize] += 1;
        }
        let live = live_profiles(&slots, &slot_class, steps);
        ArenaShape {
            slots,
            slot_class,
            classes,
            class_count,
            live,
            steps,
            align,
            origin: circuit.origin().into(),
            families_origin: families_origin.into(),
            term_names: terms
                .shapes()
                .iter()
                .map(|t| format!("workspace `{}` of family `{}`", t.name, t.family_id))
                .collect(),
        }
    }

    /// Aligned sizes at `n`, given the terms' values at `n`: per class into `class_sizes`,
    /// per slot into `out`.
    pub(crate) fn sizes(
        &self,
        circuit: &Circuit,
        n: u64,
        term_values: &[u64],
        class_sizes: &mut Vec<u64>,
        out: &mut Vec<u64>,
    ) -> Result<(), PlanError> {
        class_sizes.clear();
        for source in &self.classes {
            let bytes = match *source {
                Source::Edge(e) => {
                    circuit.edges()[e]
                        .bytes_at(n)
                        .map_err(|err| PlanError::EdgeSize {
                            origin: circuit.origin().into(),
                            edge: circuit.edges()[e].id.clone(),
                            n,
                            detail: err.to_string(),
                        })?
                }
                Source::Term(t) => {
                    let bytes = term_values[t];
                    // A workspace's bytes are the kernel registry's numbers: it is named.
                    class_sizes.push(self.aligned(bytes, n).map_err(|_| {
                        PlanError::WorkspaceOverflow {
                            origin: self.families_origin.clone(),
                            detail: format!(
                                "{} ({bytes} bytes) aligned to {} bytes",
                                self.term_names[t], self.align
                            ),
                            n,
                        }
                    })?);
                    continue;
                }
            };
            class_sizes.push(self.aligned(bytes, n)?);
        }
        out.clear();
        out.extend(self.slot_class.iter().map(|&c| class_sizes[c as usize]));
        Ok(())
    }

    fn aligned(&self, bytes: u64, n: u64) -> Result<u64, PlanError> {
        bytes
            .div_ceil(self.align)
            .checked_mul(self.align)
            .ok_or_else(|| PlanError::Overflow {
                origin: self.origin.clone(),
                what: "an aligned buffer size",
                n,
            })
    }

    /// The unshared sum, the lower bound (largest sum live at one step) and the first step
    /// reaching it, from the class sizes of [`ArenaShape::sizes`].
    pub(crate) fn bounds(
        &self,
        class_sizes: &[u64],
        n: u64,
    ) -> Result<(u64, u64, usize), PlanError> {
        let unshared = self
            .class_count
            .iter()
            .zip(class_sizes)
            .try_fold(0u64, |acc, (&count, &size)| {
                count.checked_mul(size).and_then(|b| acc.checked_add(b))
            })
            .ok_or_else(|| self.sum_overflow(class_sizes, n))?;
        // No step's sum exceeds `unshared`, which did not overflow.
        let mut peak = (0u64, 0usize);
        match &self.live {
            Live::Profiles(profiles) => {
                for (profile, first_step) in profiles {
                    let live: u64 = profile
                        .iter()
                        .map(|&(c, count)| count * class_sizes[c as usize])
                        .sum();
                    if live > peak.0 || (live == peak.0 && *first_step < peak.1) {
                        peak = (live, *first_step);
                    }
                }
            }
            Live::Events { starts, ends } => {
                let (mut s, mut e, mut live) = (0, 0, 0u64);
                for step in 0..self.steps {
                    while let Some(&(_, class)) = ends.get(e).filter(|(end, _)| *end <= step) {
                        live -= class_sizes[class as usize];
                        e += 1;
                    }
                    while let Some(&(_, class)) = starts.get(s).filter(|(start, _)| *start <= step)
                    {
                        live += class_sizes[class as usize];
                        s += 1;
                    }
                    if live > peak.0 {
                        peak = (live, step);
                    }
                }
            }
        }
        Ok((unshared, peak.0, peak.1))
    }

    /// The overflow of the arena's sum: the circuit's, unless its edges alone fit and the
    /// workspaces placed in the arena (the kernel registry's numbers) take it past 64 bits.
    #[cold]
    fn sum_overflow(&self, class_sizes: &[u64], n: u64) -> PlanError {
        let edges_fit = self
            .classes
            .iter()
            .zip(&self.class_count)
            .zip(class_sizes)
            .filter(|((source, _), _)| matches!(source, Source::Edge(_)))
            .try_fold(0u64, |acc, ((_, &count), &size)| {
                count.checked_mul(size).and_then(|b| acc.checked_add(b))
            })
            .is_some();
        let largest_term = self
            .classes
            .iter()
            .zip(class_sizes)
            .filter_map(|(source, &size)| match source {
                Source::Term(t) => Some((size, *t)),
                Source::Edge(_) => None,
            })
            .max_by_key(|&(size, t)| (size, std::cmp::Reverse(t)));
        match largest_term {
            Some((size, t)) if edges_fit => PlanError::WorkspaceOverflow {
                origin: self.families_origin.clone(),
                detail: format!(
                    "the arena's buffers with the workspaces placed in it (the largest: {}, {size} bytes at each step running it)",
                    self.term_names[t]
                ),
                n,
            },
            _ => PlanError::Overflow {
                origin: self.origin.clone(),
                what: "the sum of the arena's buffers",
                n,
            },
        }
    }

    /// The buffers with the given sizes, for the packer.
    pub(crate) fn buffers(&self, sizes: &[u64], out: &mut Vec<Buffer>) {
        out.clear();
        out.extend(
            self.slots
                .iter()
                .zip(sizes)
                .map(|(s, &size)| Buffer::new(s.start as u64, s.end as u64, size)),
        );
    }
}
