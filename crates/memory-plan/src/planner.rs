//! The planner: a circuit, its kernel registry and fusion rules, bound to a device and inputs,
//! planned at any number of row counts.
//!
//! Invariants:
//! - The plan at `n` is a function of `n` and the planner's inputs only: it never depends on
//!   which other row counts are planned with it, nor on the thread count. Everything shared
//!   between row counts is derived from the row interval holding `n` (fuser::intervals over all
//!   row counts), never from the rows requested.
//! - Per interval, the fusion plan, the workspace terms' nodes, the arena's lifetimes and a
//!   template placement (packed at the interval's first row count) are built once. At each `n`
//!   the template is re-stacked for the new sizes; only when that misses the lower bound are the
//!   heuristics, then the exact search (a deterministic step budget), run at `n`.
//! - total = weights + arena + non-arena workspaces + states, all checked u64.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use circuit_ir::Circuit;
use fuser::{FuseOptions, FusionPlan, Rules, Settings, fuse, intervals};
use kernel_families::{BoundFamilies, Families};
use rayon::prelude::*;
use serde::Serialize;

use crate::arena::{ArenaShape, BufferSlot};
use crate::error::PlanError;
use crate::workspace::{TermLayout, WorkspaceTerm};
use arena_pack::{self as pack, Buffer, Goal, Limits, Proof, Stacking};

/// The device and inputs a plan is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlanConfig {
    /// SMs of the device (read by workspace expressions as `sm_count`).
    pub sm_count: u64,
    /// Tokens held in the KV cache, over all sequences.
    pub kv_tokens: u64,
    /// Sequences (read by per-sequence and sliding-window states).
    pub sequences: u64,
    /// Arena alignment in bytes (at least 1).
    pub align: u64,
    /// Uncovered nodes get placeholder groups instead of failing.
    pub placeholders: bool,
    /// Search nodes the exact packer may spend per arena that the heuristics leave above its
    /// lower bound (a deterministic budget; 0 turns the search off).
    pub search_steps: u64,
}

impl PlanConfig {
    /// A device of `sm_count` SMs, no KV cache, one sequence, 256-byte alignment.
    pub fn new(sm_count: u64) -> PlanConfig {
        PlanConfig {
            sm_count,
            kv_tokens: 0,
            sequences: 1,
            align: 256,
            placeholders: false,
            search_steps: 20_000,
        }
    }
}

/// The byte totals of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Every stored weight tensor, once.
    pub weights: u64,
    /// The arena: activation buffers and arena workspaces, packed.
    pub activations: u64,
    /// Workspace terms outside the arena, each charged once.
    pub workspaces: u64,
    /// States (KV cache) at the configured tokens and sequences.
    pub states: u64,
    /// The sum of the four.
    pub total: u64,
}

/// The arena of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArenaSummary {
    /// Its size: the highest offset + size of the packing.
    pub bytes: u64,
    /// The largest aligned sum of buffers live at one step: no packing can be smaller.
    pub lower_bound: u64,
    /// The sum of all buffers (no reuse at all).
    pub unshared: u64,
    /// The packing is proven as small as possible (it reaches the lower bound, or the exact
    /// search exhausted every smaller height).
    pub optimal: bool,
    /// Buffers in the arena.
    pub buffers: usize,
}

/// Every byte one step needs at `rows` rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryPlan {
    /// The row count.
    pub rows: u64,
    /// The fusion plan's digest.
    pub digest: Arc<str>,
    /// Launch groups.
    pub groups: usize,
    /// Groups made for uncovered nodes (only with placeholders on).
    pub placeholders: usize,
    /// Byte totals.
    pub totals: Totals,
    /// The arena.
    pub arena: ArenaSummary,
    /// Workspace terms, by (family, workspace).
    pub workspaces: Vec<WorkspaceTerm>,
}

/// The arena at one row count: every buffer with its lifetime, offset and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArenaLayout {
    /// The row count.
    pub rows: u64,
    /// Steps (launch groups) of the plan.
    pub steps: usize,
    /// Buffers with their lifetimes and owners.
    pub slots: Vec<BufferSlot>,
    /// Offsets, parallel to `slots`.
    pub offsets: Vec<u64>,
    /// Aligned sizes, parallel to `slots`.
    pub sizes: Vec<u64>,
    /// The arena's summary.
    pub summary: ArenaSummary,
    /// The workspace terms (a workspace slot names its term by index).
    pub terms: Vec<WorkspaceTerm>,
}

/// Everything shared by the row counts of one interval.
pub(crate) struct IntervalPlan {
    pub rows: RangeInclusive<u64>,
    pub fusion: FusionPlan,
    pub digest: Arc<str>,
    pub placeholders: usize,
    pub terms: TermLayout,
    pub arena: ArenaShape,
    template: Stacking,
}

/// Scratch buffers reused across the row counts one thread plans.
#[derive(Default)]
pub(crate) struct Scratch {
    pub term_values: Vec<u64>,
    pub term_owners: Vec<usize>,
    pub class_sizes: Vec<u64>,
    pub sizes: Vec<u64>,
    pub offsets: Vec<u64>,
    pub buffers: Vec<Buffer>,
    /// Exact-search steps the packings made with this scratch have spent (the fit query's
    /// work bound counts them).
    pub search_steps: u64,
}

/// A plan's arena packed at one `n`.
pub(crate) struct Packed {
    pub summary: ArenaSummary,
    pub peak_step: usize,
}

/// The interval plans of one planner, each built once, when a query first needs it, and kept
/// for every later query (a sweep, the fit queries, the KV capacity): no interval is fused or
/// packed twice. The row intervals themselves (`fuser::intervals` over all row counts) are cut
/// once. Memory grows with the intervals built, which the rules bound, never with the rows.
pub(crate) struct IntervalCache {
    /// Every row interval over `1..=u64::MAX`, ascending.
    cuts: Vec<RangeInclusive<u64>>,
    /// The interval plans built so far, keyed by interval start.
    built: BTreeMap<u64, IntervalPlan>,
}

impl IntervalCache {
    pub(crate) fn new(planner: &Planner<'_>) -> IntervalCache {
        IntervalCache {
            cuts: intervals(planner.rules, &planner.settings, 1..=u64::MAX),
            built: BTreeMap::new(),
        }
    }

    /// The row interval holding `n` (`n..=n` if the cuts miss it, which they never should).
    pub(crate) fn cut_of(&self, n: u64) -> RangeInclusive<u64> {
        let at = self.cuts.partition_point(|c| *c.end() < n);
        match self.cuts.get(at) {
            Some(c) if c.contains(&n) => c.clone(),
            _ => n..=n,
        }
    }

    /// The row intervals meeting `range`, each clipped to it, highest first.
    pub(crate) fn cuts_in(&self, range: RangeInclusive<u64>) -> Vec<RangeInclusive<u64>> {
        let (lo, hi) = (*range.start(), *range.end());
        if lo > hi {
            return Vec::new();
        }
        let first = self.cuts.partition_point(|c| *c.end() < lo);
        let mut out: Vec<RangeInclusive<u64>> = self.cuts[first..]
            .iter()
            .take_while(|c| *c.start() <= hi)
            .map(|c| (*c.start()).max(lo)..=(*c.end()).min(hi))
            .collect();
        if out.is_empty() {
            out.push(range);
        }
        out.reverse();
        out
    }

    /// The interval plans built so far, by interval start.
    pub(crate) fn built(&self) -> impl Iterator<Item = &IntervalPlan> {
        self.built.values()
    }

    /// The built interval plan holding `n`, if any.
    pub(crate) fn get(&self, n: u64) -> Option<&IntervalPlan> {
        self.built
            .range(..=n)
            .next_back()
            .map(|(_, ip)| ip)
            .filter(|ip| ip.rows.contains(&n))
    }

    /// Builds, in parallel, the interval plans of `rows` not built yet. Each is built at the
    /// first of `rows` in it, so an error (an uncovered node, say) names a row count the
    /// caller asked for.
    pub(crate) fn ensure(&mut self, planner: &Planner<'_>, rows: &[u64]) -> Result<(), PlanError> {
        if rows.contains(&0) {
            return Err(PlanError::ZeroRows);
        }
        let mut needed: BTreeMap<u64, u64> = BTreeMap::new();
        for &n in rows {
            if self.get(n).is_none() {
                let start = *self.cut_of(n).start();
                let first = needed.entry(start).or_insert(n);
                *first = (*first).min(n);
            }
        }
        let built: Vec<Result<IntervalPlan, PlanError>> = needed
            .into_values()
            .collect::<Vec<u64>>()
            .par_iter()
            .map(|&n| planner.build_interval(n))
            .collect();
        for ip in built {
            let ip = ip?;
            self.built.insert(*ip.rows.start(), ip);
        }
        Ok(())
    }

    /// The interval plan holding `n`, built at `n` if it is not built yet.
    pub(crate) fn get_or_build(
        &mut self,
        planner: &Planner<'_>,
        n: u64,
    ) -> Result<&IntervalPlan, PlanError> {
        self.get_or_build_counted(planner, n, &mut 0)
    }

    /// [`Self::get_or_build`], adding the exact-search steps of a build to `steps`.
    pub(crate) fn get_or_build_counted(
        &mut self,
        planner: &Planner<'_>,
        n: u64,
        steps: &mut u64,
    ) -> Result<&IntervalPlan, PlanError> {
        if self.get(n).is_none() {
            let ip = planner.build_interval_counted(n, steps)?;
            self.built.insert(*ip.rows.start(), ip);
        }
        self.get(n).ok_or(PlanError::ZeroRows)
    }
}

/// Plans one circuit on one device with one rule set and settings.
pub struct Planner<'a> {
    pub(crate) circuit: &'a Circuit,
    pub(crate) families: &'a Families,
    rules: &'a Rules,
    settings: Settings,
    pub(crate) config: PlanConfig,
    pub(crate) bound: BoundFamilies,
    pub(crate) weights: u64,
    pub(crate) states: u64,
}

impl<'a> Planner<'a> {
    /// Binds the registry to the circuit and device, and sizes weights and states.
    pub fn new(
        circuit: &'a Circuit,
        families: &'a Families,
        rules: &'a Rules,
        settings: Settings,
        config: PlanConfig,
    ) -> Result<Planner<'a>, PlanError> {
        if config.align == 0 {
            return Err(PlanError::BadAlign);
        }
        if config.sm_count == 0 {
            return Err(PlanError::ZeroSmCount);
        }
        if config.sequences == 0 {
            // A sliding-window state holds window x sequences tokens: 0 would plan no cache.
            return Err(PlanError::ZeroSequences);
        }
        let bound = families.bind(circuit, config.sm_count)?;
        let states = state_bytes(circuit, config.kv_tokens, config.sequences)?;
        Ok(Planner {
            circuit,
            families,
            rules,
            settings,
            config,
            bound,
            weights: circuit.weight_bytes(),
            states,
        })
    }

    /// The circuit.
    pub fn circuit(&self) -> &Circuit {
        self.circuit
    }

    /// The configuration.
    pub fn config(&self) -> &PlanConfig {
        &self.config
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The fusion plan at `n`.
    pub fn fusion(&self, n: u64) -> Result<FusionPlan, PlanError> {
        if n == 0 {
            return Err(PlanError::ZeroRows);
        }
        Ok(fuse(
            self.circuit,
            self.rules,
            &self.settings,
            n,
            FuseOptions {
                placeholders: self.config.placeholders,
            },
        )?)
    }

    /// The plan at `n` rows.
    pub fn plan(&self, n: u64) -> Result<MemoryPlan, PlanError> {
        let interval = self.interval_plan(n)?;
        self.plan_in(&interval, n, &mut Scratch::default())
    }

    /// Plans at every row count of `rows`, in parallel; the result is in the order of `rows`
    /// and identical to planning each alone. `done` is called once per finished plan (for
    /// progress), from any thread.
    pub fn sweep(
        &self,
        rows: &[u64],
        done: &(dyn Fn() + Sync),
    ) -> Result<Vec<MemoryPlan>, PlanError> {
        let mut cache = IntervalCache::new(self);
        cache.ensure(self, rows)?;
        self.plan_rows(&cache, rows, done)
    }

    /// Plans `rows` in parallel with the interval plans of `cache` (which must hold every
    /// interval of `rows`), in the order of `rows`.
    pub(crate) fn plan_rows(
        &self,
        cache: &IntervalCache,
        rows: &[u64],
        done: &(dyn Fn() + Sync),
    ) -> Result<Vec<MemoryPlan>, PlanError> {
        let results: Vec<Result<MemoryPlan, PlanError>> = rows
            .par_iter()
            .map_init(Scratch::default, |scratch, &n| {
                let interval = cache.get(n).ok_or(PlanError::ZeroRows)?;
                let plan = self.plan_in(interval, n, scratch);
                done();
                plan
            })
            .collect();
        results.into_iter().collect()
    }

    /// The interval plan of the row interval holding `n`.
    pub(crate) fn interval_plan(&self, n: u64) -> Result<IntervalPlan, PlanError> {
        self.build_interval(n)
    }

    /// The row interval (over all row counts) holding `n`: the plan is the same inside it.
    pub fn interval_of(&self, n: u64) -> Result<RangeInclusive<u64>, PlanError> {
        if n == 0 {
            return Err(PlanError::ZeroRows);
        }
        Ok(intervals(self.rules, &self.settings, 1..=u64::MAX)
            .into_iter()
            .find(|i| i.contains(&n))
            .unwrap_or(n..=n))
    }

    /// Builds the shared parts of the row interval holding `n`, with the template packed at
    /// the interval's first row count (whichever `n` of the interval asks).
    pub(crate) fn build_interval(&self, n: u64) -> Result<IntervalPlan, PlanError> {
        self.build_interval_counted(n, &mut 0)
    }

    /// [`Self::build_interval`], adding the template's exact-search steps to `steps`.
    pub(crate) fn build_interval_counted(
        &self,
        n: u64,
        steps: &mut u64,
    ) -> Result<IntervalPlan, PlanError> {
        let fusion = self.fusion(n)?;
        let start = *fusion.rows().start();
        let terms = TermLayout::new(self.circuit, &fusion, self.families);
        let arena = ArenaShape::new(
            self.circuit,
            &fusion,
            &terms,
            self.config.align,
            self.families.origin(),
        );
        let mut scratch = Scratch::default();
        let size_at = |n: u64, scratch: &mut Scratch| -> Result<u64, PlanError> {
            terms.values(
                self.circuit,
                &self.bound,
                n,
                &mut scratch.term_values,
                &mut scratch.term_owners,
            )?;
            arena.sizes(
                self.circuit,
                n,
                &scratch.term_values,
                &mut scratch.class_sizes,
                &mut scratch.sizes,
            )?;
            Ok(arena.bounds(&scratch.class_sizes, n)?.1)
        };
        let lower_bound = match size_at(start, &mut scratch) {
            Ok(bound) => bound,
            // The caller asked for `n`, not `start`: its own error when it fails too, else the
            // failure at `start` with why `start` was sized at all.
            Err(error) if n != start => {
                size_at(n, &mut scratch)?;
                return Err(PlanError::TemplateRow {
                    start,
                    end: *fusion.rows().end(),
                    asked: n,
                    error: Box::new(error),
                });
            }
            Err(error) => return Err(error),
        };
        arena.buffers(&scratch.sizes, &mut scratch.buffers);
        let placement = self
            .best_packing(&scratch.buffers, lower_bound, start, steps)?
            .0;
        let template = Stacking::new(&scratch.buffers, &placement);
        Ok(IntervalPlan {
            rows: fusion.rows(),
            digest: fusion.digest().into(),
            placeholders: fusion.placeholders(),
            fusion,
            terms,
            arena,
            template,
        })
    }

    /// The heuristic placement, then the exact search when it misses the lower bound.
    /// The exact search's steps are added to `steps`.
    fn best_packing(
        &self,
        buffers: &[Buffer],
        lower_bound: u64,
        n: u64,
        steps: &mut u64,
    ) -> Result<(pack::Placement, bool), PlanError> {
        let pack_err = |error| PlanError::Pack {
            origin: self.circuit.origin().into(),
            n,
            error,
        };
        let heuristic = pack::heuristic(buffers).map_err(pack_err)?;
        if heuristic.height <= lower_bound || self.config.search_steps == 0 {
            return Ok((heuristic.clone(), heuristic.height <= lower_bound));
        }
        let solution = pack::solve(
            buffers,
            Goal::Minimize,
            &Limits {
                max_steps: self.config.search_steps,
                stop: None,
            },
        )
        .map_err(pack_err)?;
        *steps = steps.saturating_add(solution.steps);
        let proven = solution.proof == Proof::Optimal;
        if solution.placement.height < heuristic.height {
            Ok((solution.placement, proven))
        } else {
            Ok((heuristic, proven))
        }
    }

    /// Packs the arena of `interval` at `n`: sizes into `scratch.sizes`, offsets into
    /// `scratch.offsets`.
    pub(crate) fn pack_at(
        &self,
        interval: &IntervalPlan,
        n: u64,
        scratch: &mut Scratch,
    ) -> Result<Packed, PlanError> {
        interval.terms.values(
            self.circuit,
            &self.bound,
            n,
            &mut scratch.term_values,
            &mut scratch.term_owners,
        )?;
        interval.arena.sizes(
            self.circuit,
            n,
            &scratch.term_values,
            &mut scratch.class_sizes,
            &mut scratch.sizes,
        )?;
        let (unshared, lower_bound, peak_step) = interval.arena.bounds(&scratch.class_sizes, n)?;
        let mut height = interval
            .template
            .restack(&scratch.sizes, &mut scratch.offsets)
            .map_err(|error| PlanError::Pack {
                origin: self.circuit.origin().into(),
                n,
                error,
            })?;
        let mut optimal = height == lower_bound;
        if !optimal {
            interval.arena.buffers(&scratch.sizes, &mut scratch.buffers);
            let (placement, proven) =
                self.best_packing(&scratch.buffers, lower_bound, n, &mut scratch.search_steps)?;
            if placement.height < height {
                height = placement.height;
                scratch.offsets.clone_from(&placement.offsets);
            }
            optimal = height == lower_bound || proven;
        }
        Ok(Packed {
            summary: ArenaSummary {
                bytes: height,
                lower_bound,
                unshared,
                optimal,
                buffers: scratch.sizes.len(),
            },
            peak_step,
        })
    }

    pub(crate) fn plan_in(
        &self,
        interval: &IntervalPlan,
        n: u64,
        scratch: &mut Scratch,
    ) -> Result<MemoryPlan, PlanError> {
        let packed = self.pack_at(interval, n, scratch)?;
        let workspaces = interval
            .terms
            .terms(&scratch.term_values, &scratch.term_owners);
        let charged = workspaces
            .iter()
            .filter(|t| !t.arena)
            .try_fold(0u64, |acc, t| acc.checked_add(t.bytes))
            // The workspaces' bytes come from the kernel registry: it is the file to name.
            .ok_or_else(|| PlanError::Overflow {
                origin: self.families.origin().into(),
                what: "the sum of the workspaces outside the arena",
                n,
            })?;
        let totals = self.totals(packed.summary.bytes, charged, n)?;
        Ok(MemoryPlan {
            rows: n,
            digest: interval.digest.clone(),
            groups: interval.fusion.groups().len(),
            placeholders: interval.placeholders,
            totals,
            arena: packed.summary,
            workspaces,
        })
    }

    pub(crate) fn totals(
        &self,
        activations: u64,
        workspaces: u64,
        n: u64,
    ) -> Result<Totals, PlanError> {
        let total = [self.weights, activations, workspaces, self.states]
            .iter()
            .try_fold(0u64, |acc, &b| acc.checked_add(b))
            .ok_or_else(|| PlanError::Overflow {
                origin: self.circuit.origin().into(),
                what: "the total",
                n,
            })?;
        Ok(Totals {
            weights: self.weights,
            activations,
            workspaces,
            states: self.states,
            total,
        })
    }

    /// The arena at `n`: every buffer's lifetime, offset and size.
    pub fn arena_layout(&self, n: u64) -> Result<ArenaLayout, PlanError> {
        self.arena_layout_in(&self.interval_plan(n)?, n)
    }

    /// The arena at `n`, in the interval plan holding `n`.
    pub(crate) fn arena_layout_in(
        &self,
        interval: &IntervalPlan,
        n: u64,
    ) -> Result<ArenaLayout, PlanError> {
        let mut scratch = Scratch::default();
        let packed = self.pack_at(interval, n, &mut scratch)?;
        let terms = interval
            .terms
            .terms(&scratch.term_values, &scratch.term_owners);
        Ok(ArenaLayout {
            rows: n,
            steps: interval.arena.steps,
            slots: interval.arena.slots.clone(),
            offsets: scratch.offsets,
            sizes: scratch.sizes,
            summary: packed.summary,
            terms,
        })
    }
}

/// Bytes of every state of `circuit`; an overflow names the state (or the sum).
pub(crate) fn state_bytes(
    circuit: &Circuit,
    kv_tokens: u64,
    sequences: u64,
) -> Result<u64, PlanError> {
    let err = |detail: String| PlanError::States {
        origin: circuit.origin().into(),
        kv_tokens,
        sequences,
        detail,
    };
    let mut total = 0u64;
    for state in circuit.states().values() {
        let bytes = state
            .bytes(kv_tokens, sequences)
            .map_err(|e| err(format!("state `{}`: {e}", state.id)))?;
        total = total
            .checked_add(bytes)
            .ok_or_else(|| err("the sum of the states overflows 64-bit bytes".to_owned()))?;
    }
    Ok(total)
}
