//! Large parts (thousands of buffers in one connected lifetime graph): the windowed run of
//! `window` first, then whole-part runs of the exact search above a heuristic base layer.
//!
//! Buffers live over a long stretch of the program (kept outputs) are what defeats a bottom-up
//! search: one can only sit where the skyline is level over its whole lifetime. Those live in
//! more than 1/16 of the sections (or reaching the part's first or last step) go first, to
//! the bottom, placed greedily earliest start first (for lifetimes that end together, as kept
//! outputs do, that is a staircase with no gap). Each section's space below the highest base
//! buffer live in it is then taken, and the exact search of `search` places the other buffers
//! above, within the capacity asked for, also allowed to place a buffer at its floor over a
//! lower part of the skyline (skip connections need it). The base layer is a heuristic choice,
//! so a failure here proves nothing; the caller keeps its best placement. The whole-part runs
//! go in parallel; the lower-indexed success of a round wins, so the result does not depend on
//! the thread count.

use crate::Buffer;
use crate::heuristic::{self, Fit, Order};
use crate::overlap::OverlapGraph;
use crate::search::{Branch, Interrupt, Outcome, Part, Search, race};
use crate::window;

/// A buffer joins the base layer when it is live in more than this fraction of the sections
/// (and in at least [`MIN_BASE_SECTIONS`]).
const BASE_FRACTION: usize = 16;
const MIN_BASE_SECTIONS: usize = 256;

/// The runs tried in parallel: (base layer, static order, branching section). Both also place
/// a buffer at its floor over a lower part of the skyline (a skip connection rarely finds its
/// whole lifetime level). Each reaches the lower bound of some `synth` workloads that the
/// others miss in our measurements.
const RUNS: [(bool, Order, Branch); 4] = [
    (false, Order::Lifetime, Branch::Rightmost),
    (false, Order::Lifetime, Branch::Leftmost),
    (true, Order::Lifetime, Branch::Rightmost),
    (true, Order::Lifetime, Branch::Leftmost),
];

/// The windowed run tried first (see `window`): the base layer, then windows searched by a
/// portfolio of two configurations in parallel. On every `synth` workload we measured (sizes
/// 10k-50k, seeds 1-10) it reaches the lower bound by itself.
const WINDOWED: window::Config = window::Config {
    with_base: true,
    portfolio: &[
        (Order::Lifetime, Branch::Rightmost),
        (Order::Size, Branch::Tightest),
    ],
    float: false,
};

/// The first round's node budget of each whole-part run; later rounds double it.
const FIRST_ROUND: u64 = 1 << 16;

/// What a layered attempt did.
pub(crate) struct Layered {
    /// `Found`, or `Aborted` (budget, stop, or no fit with this base layer).
    pub(crate) outcome: Outcome,
    /// Search nodes used (deterministic for a given input and budget).
    pub(crate) steps: u64,
    /// The offset of each buffer of `ids`, in that order: within the capacity on `Found`;
    /// otherwise a complete placement above it, or empty.
    pub(crate) offsets: Vec<u64>,
}

/// Tries to fit the buffers `ids` (live, sorted by start) within `capacity`, spending at most
/// `budget` search nodes. The windowed run goes first (with at most half the budget); if it
/// fails, the runs of [`RUNS`] go in parallel on the whole part in rounds of doubling budgets
/// (from [`FIRST_ROUND`], so that a later run's quick success does not wait for an earlier run
/// to spend a large budget), the lowest-indexed success of a round winning (its nodes and
/// those of the runs before it are counted). When nothing fits, the windowed run's complete
/// placement (above the capacity) is returned.
pub(crate) fn layered(
    buffers: &[Buffer],
    ids: &[u32],
    capacity: u64,
    budget: u64,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Layered {
    let interrupt = Interrupt {
        stop,
        cancel: None,
        outer: None,
    };
    let windowed = window::windowed(buffers, ids, capacity, budget / 2, &interrupt, WINDOWED);
    if windowed.outcome == Outcome::Found {
        return windowed;
    }
    let mut steps = windowed.steps;
    let mut round = FIRST_ROUND;
    loop {
        let left = budget.saturating_sub(steps) / RUNS.len() as u64;
        let per_run = round.min(left);
        if per_run < ids.len() as u64 || interrupt.fired() {
            break;
        }
        // A run ends `Found` or `Aborted`, so the run that decides is the first success.
        let race = race(RUNS.len(), stop, None, |index, interrupt| {
            let (with_base, order, branch) = RUNS[index];
            let run = run_one(
                buffers, ids, capacity, per_run, interrupt, with_base, order, branch,
            );
            (run.outcome, run.steps, run.offsets)
        });
        steps += race.counted;
        if let Some((outcome, _, offsets)) = race.decided.and_then(|w| race.runs.into_iter().nth(w))
        {
            return Layered {
                outcome,
                steps,
                offsets,
            };
        }
        if per_run < round {
            break;
        }
        round = round.saturating_mul(4);
    }
    Layered {
        outcome: Outcome::Aborted,
        steps,
        offsets: windowed.offsets,
    }
}

/// One run: the base layer (if `with_base`), then the search above it with one order and
/// branching rule; the offsets are in the order of `ids`.
#[allow(clippy::too_many_arguments)]
fn run_one(
    buffers: &[Buffer],
    ids: &[u32],
    capacity: u64,
    budget: u64,
    interrupt: &Interrupt<'_>,
    with_base: bool,
    order: Order,
    branch: Branch,
) -> Layered {
    let aborted = |steps| Layered {
        outcome: Outcome::Aborted,
        steps,
        offsets: Vec::new(),
    };
    let (base, rest, base_offsets) = if with_base {
        base_layer(buffers, ids)
    } else {
        (Vec::new(), ids.to_vec(), Vec::new())
    };
    let base_buffers: Vec<Buffer> = base.iter().map(|&i| buffers[i as usize]).collect();
    if base_buffers
        .iter()
        .zip(&base_offsets)
        .any(|(b, &o)| o.saturating_add(b.size) > capacity)
    {
        return aborted(0);
    }
    // Where each buffer of `ids` is (they are sorted by start, then index).
    let position = |i: u32| {
        ids.binary_search_by_key(&(buffers[i as usize].start, i), |&j| {
            (buffers[j as usize].start, j)
        })
    };
    let mut offsets = vec![0u64; ids.len()];
    for (k, &i) in base.iter().enumerate() {
        if let Ok(p) = position(i) {
            offsets[p] = base_offsets[k];
        }
    }
    if rest.is_empty() {
        return Layered {
            outcome: Outcome::Found,
            steps: 0,
            offsets,
        };
    }

    // Each section of the rest starts above the highest base buffer live in it.
    let part = Part::new(buffers, &rest);
    let starts = part.section_starts();
    let mut floors = vec![0u64; part.sections()];
    for (b, &offset) in base_buffers.iter().zip(&base_offsets) {
        let top = offset + b.size;
        // Sections of the rest whose time range meets the base buffer's lifetime.
        let first = starts.partition_point(|&t| t <= b.start).saturating_sub(1);
        let last = starts.partition_point(|&t| t < b.end).min(floors.len());
        for floor in &mut floors[first.min(last)..last] {
            *floor = (*floor).max(top);
        }
    }

    let rank = part.ranks([order]).swap_remove(0);
    let mut search = Search::with_floors(&part, capacity, &rank, budget, interrupt, Some(&floors));
    search.set_mode(branch);
    search.float_long = true;
    let outcome = search.run();
    let steps = search.steps.min(budget);
    if outcome != Outcome::Found {
        return aborted(steps);
    }
    for (k, &i) in part.ids.iter().enumerate() {
        if let Ok(p) = position(i) {
            offsets[p] = search.offsets[k];
        }
    }
    Layered {
        outcome: Outcome::Found,
        steps,
        offsets,
    }
}

/// The base layer of the buffers `ids` (live, sorted by start): those live in more than
/// 1/[`BASE_FRACTION`] of the sections (and in at least [`MIN_BASE_SECTIONS`]), or in a quarter
/// of that and reaching the first or last step, placed at the lowest gap earliest start first
/// (longest first on ties). Returns the base buffers (in the order of `ids`), the others, and
/// the base buffers' offsets.
pub(crate) fn base_layer(buffers: &[Buffer], ids: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
    let mut points: Vec<u64> = ids
        .iter()
        .flat_map(|&i| [buffers[i as usize].start, buffers[i as usize].end])
        .collect();
    points.sort_unstable();
    points.dedup();
    let section_of = |t: u64| points.partition_point(|&p| p < t);
    let sections = points.len().saturating_sub(1);
    let threshold = (sections / BASE_FRACTION).max(MIN_BASE_SECTIONS);
    let (first, last) = (points.first().copied(), points.last().copied());
    let is_base = |i: u32| {
        let b = &buffers[i as usize];
        let (low, high) = (section_of(b.start), section_of(b.end));
        high - low > threshold
            || (high - low > MIN_BASE_SECTIONS / 4
                && (Some(b.start) == first || Some(b.end) == last))
    };
    let base: Vec<u32> = ids.iter().copied().filter(|&i| is_base(i)).collect();
    let rest: Vec<u32> = ids.iter().copied().filter(|&i| !is_base(i)).collect();
    let base_buffers: Vec<Buffer> = base.iter().map(|&i| buffers[i as usize]).collect();
    let mut by_start: Vec<u32> = (0..base.len() as u32).collect();
    by_start.sort_unstable_by_key(|&k| {
        let b = &base_buffers[k as usize];
        (b.start, std::cmp::Reverse(b.end), k)
    });
    let graph = OverlapGraph::new(&base_buffers);
    let placement = heuristic::best_fit(&base_buffers, &graph, &by_start, Fit::Lowest);
    (base, rest, placement.offsets)
}
