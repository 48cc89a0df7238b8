//! Large parts (thousands of buffers in one connected lifetime graph): the windowed run of
//! `window` first, then, when the part is small enough for the exact search's tables,
//! whole-part runs of the exact search above the base layer.
//!
//! The windowed run goes with the plain base layer first, in time order; where it does not
//! fit, again with the peak layer (see `base`) and built outwards from the peak window (see
//! `window`), which the caller stops asking for once it did no better. Both runs' base layers
//! are compact at the peak (see `base`). Why outwards only in the second run: measured at 10
//! CPU-seconds on 28 compiler-shaped and training sets of 20,000-60,000 buffers, outwards in
//! both runs proved some sets in a tenth of the time but ended higher on three (a
//! compiler-shaped set 1.0099 x its bound where time order gives 1.0081, `somas-60k` 1.0012
//! where 1.0004); as the second run it is never higher on them (docs/packing.md).
//!
//! A whole-part run takes each section's space below the highest base buffer live in it and
//! lets the exact search place the other buffers above, within the capacity asked for, also
//! allowed to place a buffer at its floor over a lower part of the skyline (skip connections
//! need it).
//!
//! Invariants: the base layer is a heuristic choice, so a failure here proves nothing and the
//! caller keeps its best placement; a run found within the capacity is returned as found, and
//! otherwise the windowed run's complete placement (above it). The whole-part runs go in
//! parallel; the lower-indexed success of a round wins, so the result does not depend on the
//! thread count.

use crate::base::BaseLayer;
use crate::heuristic::Order;
use crate::interval::overlapping_pairs;
use crate::part::Part;
use crate::race::{Interrupt, Outcome, race};
use crate::search::{Branch, Search};
use crate::window::{LargeRun, windowed as windowed_run};
use crate::{Buffer, Params};

/// The whole-part runs tried in parallel: (base layer, static order, branching section). Each
/// reaches the lower bound of some `synth` workloads that the others miss in our measurements
/// (before the windowed run existed).
const RUNS: [(bool, Order, Branch); 4] = [
    (false, Order::Lifetime, Branch::Rightmost),
    (false, Order::Lifetime, Branch::Leftmost),
    (true, Order::Lifetime, Branch::Rightmost),
    (true, Order::Lifetime, Branch::Leftmost),
];

/// One layered attempt's terms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attempt {
    /// The height to fit within.
    pub(crate) capacity: u64,
    /// Search nodes it may spend.
    pub(crate) budget: u64,
    /// Each window of the windowed run gets this many times its usual nodes.
    pub(crate) scale: u64,
    /// A complete windowed placement lower than this ends the attempt (0 for a fit: no
    /// placement is).
    pub(crate) best: u64,
    /// Each window is placed by its greedy placement when that fits the room, and searched
    /// only when it does not (see `window`): a run of O(n log n) per window where the search
    /// costs a few nodes per buffer of each window (10M nodes at a million buffers).
    pub(crate) quick: bool,
    /// Where the windowed run does not fit, run it again with the peak layer (see `base`).
    pub(crate) peak: bool,
}

/// Tries to fit the buffers `ids` (live, sorted by start) within `attempt.capacity`, spending
/// at most `attempt.budget` search nodes. The windowed run goes first (with all of the budget:
/// before, half, and on a 20,000-buffer compiler-shaped set it ran out of nodes at its 325th
/// window of 380 where it needs 1.37M of the attempt's 2.59M); where it does not fit and
/// `attempt.peak` asks for it, it runs again with the peak layer, outwards from the peak
/// window, with what it left of the
/// budget, and the lower complete placement of the two is kept (the second value returned:
/// whether the peak layer's run was kept, `None` when it was not made). If that neither fits nor returns a complete placement lower than `attempt.best`, the
/// runs of [`RUNS`] go in parallel on the whole part in rounds of growing budgets (so that a
/// later run's quick success does not wait for an earlier run to spend a large budget), the
/// lowest-indexed success of a round winning (its nodes and those of the runs before it are
/// counted). When nothing fits, the windowed run's complete placement (above the capacity) is
/// returned.
pub(crate) fn layered(
    buffers: &[Buffer],
    ids: &[u32],
    attempt: Attempt,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    params: &Params,
) -> (LargeRun, Option<bool>) {
    let Attempt {
        capacity,
        budget,
        best,
        ..
    } = attempt;
    let interrupt = Interrupt {
        stop,
        cancel: None,
        outer: None,
    };
    let base = BaseLayer::new(buffers, ids, params, false, true);
    let mut windowed = windowed_run(buffers, ids, &base, &attempt, false, &interrupt, params);
    // The peak layer (see `base`): where the plain run does not fit, the same attempt again
    // with the long buffers live at the part's peak placed first and the windows built
    // outwards from the peak, with what the plain run left of the budget; the lower complete
    // placement of the two is kept.
    let mut peak_won = None;
    if attempt.peak && windowed.outcome != Outcome::Found && !interrupt.fired() {
        let peak = BaseLayer::new(buffers, ids, params, true, true);
        let left = budget.saturating_sub(windowed.steps);
        if peak.differs(&base) && left > 0 {
            let second = Attempt {
                budget: left,
                ..attempt
            };
            let run = windowed_run(buffers, ids, &peak, &second, true, &interrupt, params);
            let steps = windowed.steps.saturating_add(run.steps);
            let won = run.outcome == Outcome::Found || lower(buffers, ids, &run, &windowed);
            if won {
                windowed = run;
            }
            peak_won = Some(won);
            windowed.steps = steps;
        }
    }
    // A complete windowed placement below `best` is an improvement already: the caller's next
    // attempt (a looser target) comes before the whole-part runs, which cost up to the other
    // half of the budget and hundreds of MiB at 30,000 buffers and are made when the windowed
    // run does not improve.
    let improves = windowed.offsets.len() == ids.len()
        && ids
            .iter()
            .zip(&windowed.offsets)
            .map(|(&i, &o)| o.saturating_add(buffers[i as usize].size))
            .max()
            .is_some_and(|height| height < best);
    if windowed.outcome == Outcome::Found
        || improves
        || interrupt.fired()
        || !affordable(buffers, ids, params)
    {
        return (windowed, peak_won);
    }
    let mut steps = windowed.steps;
    let mut round = params.whole_part_first_round;
    loop {
        let left = budget.saturating_sub(steps) / RUNS.len() as u64;
        let per_run = round.min(left);
        if per_run < ids.len() as u64 || interrupt.fired() {
            break;
        }
        // A run ends `Found` or `Aborted`, so the run that decides is the first success.
        let race = race(RUNS.len(), stop, None, |index, interrupt| {
            let run = run_one(
                buffers,
                ids,
                capacity,
                per_run,
                interrupt,
                RUNS[index],
                params,
            );
            (run.outcome, run.steps, run.offsets)
        });
        steps += race.counted;
        if let Some((outcome, _, offsets)) = race.decided.and_then(|w| race.runs.into_iter().nth(w))
        {
            return (
                LargeRun {
                    outcome,
                    steps,
                    offsets,
                    out_of_nodes: false,
                },
                peak_won,
            );
        }
        if per_run < round {
            break;
        }
        round = round.saturating_mul(4);
    }
    (
        LargeRun {
            outcome: Outcome::Aborted,
            steps,
            offsets: windowed.offsets,
            out_of_nodes: windowed.out_of_nodes,
        },
        peak_won,
    )
}

/// Whether `run` is a complete placement of `ids` lower than `than` (or `than` is not
/// complete).
fn lower(buffers: &[Buffer], ids: &[u32], run: &LargeRun, than: &LargeRun) -> bool {
    let height = |r: &LargeRun| {
        (r.offsets.len() == ids.len()).then(|| {
            ids.iter()
                .zip(&r.offsets)
                .map(|(&i, &o)| o.saturating_add(buffers[i as usize].size))
                .max()
                .unwrap_or(0)
        })
    };
    match (height(run), height(than)) {
        (Some(h), Some(t)) => h < t,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Whether the exact search's tables for the whole part are small enough: its (buffer,
/// section) cells and its overlapping pairs within the bounds of `params`.
fn affordable(buffers: &[Buffer], ids: &[u32], params: &Params) -> bool {
    if cells(buffers, ids) > params.whole_part_cells {
        return false;
    }
    let part: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
    overlapping_pairs(&part) <= params.greedy_pairs
}

/// The (buffer, section) cells the buffers `ids` cover.
fn cells(buffers: &[Buffer], ids: &[u32]) -> u64 {
    let mut points: Vec<u64> = ids
        .iter()
        .flat_map(|&i| [buffers[i as usize].start, buffers[i as usize].end])
        .collect();
    points.sort_unstable();
    points.dedup();
    let section_of = |t: u64| points.partition_point(|&p| p < t) as u64;
    ids.iter()
        .map(|&i| {
            let b = &buffers[i as usize];
            section_of(b.end) - section_of(b.start)
        })
        .fold(0u64, u64::saturating_add)
}

/// One run: the base layer (if asked for), then the search above it with one order and
/// branching rule; the offsets are in the order of `ids`.
fn run_one(
    buffers: &[Buffer],
    ids: &[u32],
    capacity: u64,
    budget: u64,
    interrupt: &Interrupt<'_>,
    (with_base, order, branch): (bool, Order, Branch),
    params: &Params,
) -> LargeRun {
    let aborted = |steps| LargeRun {
        outcome: Outcome::Aborted,
        steps,
        offsets: Vec::new(),
        out_of_nodes: false,
    };
    // Each table below costs up to O(whole_part_cells) before the search's first poll: the
    // interrupt is polled between them.
    let base = with_base.then(|| BaseLayer::new(buffers, ids, params, false, false));
    if base.as_ref().is_some_and(|b| b.exceeds(buffers, capacity)) || interrupt.fired() {
        return aborted(0);
    }
    // Where each buffer of `ids` is (they are sorted by start, then index).
    let position = |i: u32| {
        ids.binary_search_by_key(&(buffers[i as usize].start, i), |&j| {
            (buffers[j as usize].start, j)
        })
    };
    let mut offsets = vec![0u64; ids.len()];
    if let Some(base) = &base {
        for (&i, &o) in base.ids.iter().zip(&base.offsets) {
            if let Ok(p) = position(i) {
                offsets[p] = o;
            }
        }
    }
    let rest = base.as_ref().map_or(ids, |b| &b.rest[..]);
    if rest.is_empty() {
        return LargeRun {
            outcome: Outcome::Found,
            steps: 0,
            offsets,
            out_of_nodes: false,
        };
    }

    // Each section of the rest starts above the highest base buffer live in it.
    let part = Part::new(buffers, rest);
    if interrupt.fired() {
        return aborted(0);
    }
    let starts = part.section_starts();
    let floors: Vec<u64> = (0..part.sections())
        .map(|s| {
            base.as_ref()
                .map_or(0, |b| b.least(starts[s], starts[s + 1]))
        })
        .collect();

    let rank = part.ranks([order]).swap_remove(0);
    if interrupt.fired() {
        return aborted(0);
    }
    let mut search = Search::with_floors(&part, capacity, &rank, budget, interrupt, Some(&floors));
    search.check_cells = params.stack_check_cells;
    search.set_mode(branch);
    search.float_long = true;
    search.work_per_node = params.whole_part_work_per_node;
    let outcome = search.run();
    // Charged by its work where that is more than its nodes: the caller shares time out in
    // nodes (on a 4,000-buffer training step the runs cost 40,000-50,000 units a node, where
    // those that succeed on compiler-shaped parts cost 2,000-3,000).
    let charged = search
        .steps
        .max(search.work / params.whole_part_work_per_node.max(1));
    let steps = charged.min(budget);
    if outcome != Outcome::Found {
        return aborted(steps);
    }
    for (k, &i) in part.ids.iter().enumerate() {
        if let Ok(p) = position(i) {
            offsets[p] = search.offsets[k];
        }
    }
    LargeRun {
        outcome: Outcome::Found,
        steps,
        offsets,
        out_of_nodes: false,
    }
}
