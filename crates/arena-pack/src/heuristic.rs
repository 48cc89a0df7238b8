//! Greedy packing: several static orders, each placed buffer by buffer with best fit, keeping
//! the lowest result.
//!
//! A buffer goes into the tightest gap (or the lowest gap, in the second policy) left by the
//! already placed buffers that share a step with it; when no gap is tall enough it goes on top
//! of them.
//!
//! Invariants: every pass gives a valid placement in which every offset is 0 or the end of a
//! placed buffer below it, so no offset exceeds the sum of the sizes of its independent part;
//! that sum may exceed `u64::MAX` where the height does not (two buffers of `u64::MAX` bytes
//! that never share a step), so every top is checked: a pass that would overflow is dropped,
//! and the first pass reports the overflow as a [`PackError`]. Passes are independent (run in
//! parallel); ties between passes go to the lower pass index, so the result does not depend on
//! the thread count.
//!
//! Time runs both ways: a placement is valid for a set exactly when it is valid for the set's
//! *mirror* (every lifetime `[start, end)` turned into `[T - end, T - start)`, `T` the last
//! end), since two buffers share a step in one when they do in the other. So the start-order
//! sweep also runs on the mirror, which is the end-order sweep of the set: buffers that all
//! end together (a training step's new parameters and optimizer moments, its last gradients)
//! stack with no gap from the end, where the start-order sweep leaves them gaps it cannot
//! close. On `synth::compiler(5, 1000, Xla)` (1,476 buffers, the peak in the Adam step at the
//! end) the mirrored sweep reaches the bound, where every forward pass is 0.03% above it.
//!
//! Cost: the two passes in start order are a sweep with a free list (`sweep`), O(n log n)
//! whatever the overlaps, and always run. The others find a buffer's placed neighbours in a
//! [`TimeIndex`], O(overlapping pairs) each; they share a work cap of
//! [`Params::greedy_pairs`](crate::Params) pair visits, so as many of them run, in a fixed order,
//! as the pairs (counted first in O(n log n)) fit in it: a deterministic choice, and the first
//! placement costs a bounded share of the time before the search. Every pass polls the caller's `stop` as it goes and is dropped when it
//! fires, except the start-order tightest-fit pass, which starts first and, once started,
//! always runs to the end (one O(n log n) sweep), so a whole pass's placement exists however
//! early the stop comes (a stop already set gives the plain stacking, in O(n)).

use rayon::prelude::*;

use crate::interval::{TimeIndex, overlapping_pairs};
use crate::sweep::{sweep, sweep_until};
use crate::{Buffer, PackError, Params, Placement, check_intervals, unshared};

/// How a pass picks among the gaps a buffer fits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fit {
    /// The smallest gap that holds the buffer (lowest offset among equal gaps).
    Tightest,
    /// The lowest gap that holds the buffer.
    Lowest,
}

/// The static orders a pass may place buffers in; all ties end on the buffer index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Largest first (the TFLite / XLA order).
    Size,
    /// Longest lifetime first.
    Lifetime,
    /// Largest size x lifetime first.
    Area,
    /// Earliest start first (then largest).
    Start,
    /// MiniMalloc's preorder: by lifetime (W), area (A) and congestion (T), in that order of
    /// precedence.
    Wat,
    /// The permutation of [`Order::Wat`] by congestion, area, lifetime.
    Taw,
    /// Most congested lifetime first: the largest sum of sizes live at a step of its lifetime.
    Congestion,
}

pub(crate) const ORDERS: [Order; 5] = [
    Order::Size,
    Order::Congestion,
    Order::Area,
    Order::Lifetime,
    Order::Start,
];

/// Packs the buffers greedily and returns the lowest of several passes.
pub fn heuristic(buffers: &[Buffer]) -> Result<Placement, PackError> {
    Ok(greedy(buffers, &Params::default(), None)?.placement)
}

/// [`heuristic`] with the caller's parameters and `stop` poll. A placement is always
/// returned: the start-order tightest-fit pass runs first (beside the others) and is not cut
/// short by `stop` once started.
pub(crate) fn greedy(
    buffers: &[Buffer],
    params: &Params,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<Greedy, PackError> {
    check_intervals(buffers)?;
    let passes: Vec<(Order, Fit)> = ORDERS
        .iter()
        .flat_map(|&order| [(order, Fit::Tightest), (order, Fit::Lowest)])
        .collect();
    // The mirrored start-order sweeps come after every pass above, so ties keep those.
    let mirrored_passes = [Fit::Tightest, Fit::Lowest];
    // The pass index breaks ties between equal heights, as when every pass ran in one loop.
    let first = passes
        .iter()
        .position(|&pass| pass == (Order::Start, Fit::Tightest))
        .unwrap_or(0);
    let stopped = || stop.is_some_and(|stop| stop());
    let (first_placement, others) = rayon::join(
        || first_pass(buffers, stop),
        || -> Result<Option<(Ranked, [u64; 2])>, PackError> {
            if stopped() {
                return Ok(None);
            }
            // Each best-fit pass visits every overlapping pair: they share a fixed amount of
            // that work, `greedy_pairs` in all, in the order of `passes` (all eight on the
            // MiniMalloc files; one at 30,000 compiler-shaped buffers with 11 million pairs,
            // where the eight took four seconds of a five-second limit before the search
            // started; none above the cap).
            let pairs = overlapping_pairs(buffers).max(1);
            let allowed = usize::try_from(params.greedy_pairs / pairs).unwrap_or(usize::MAX);
            let affordable = allowed > 0;
            let congestion = if affordable && !stopped() {
                congestion(buffers)?
            } else {
                Vec::new()
            };
            // The best-fit passes, by index, that fit the shared work.
            let chosen: Vec<usize> = passes
                .iter()
                .enumerate()
                .filter(|&(_, &(order, _))| order != Order::Start)
                .map(|(index, _)| index)
                .take(allowed)
                .collect();
            let mirror = mirrored(buffers);
            Ok(passes
                .par_iter()
                .copied()
                .map(|pass| (pass, false))
                .chain(
                    mirrored_passes
                        .par_iter()
                        .map(|&fit| ((Order::Start, fit), true)),
                )
                .enumerate()
                .filter(|&(index, _)| index != first)
                .filter_map(|(index, ((order, fit), mirror_pass))| {
                    // Ranking and indexing cost O(n log n) before a pass's first poll.
                    if stopped() {
                        return None;
                    }
                    let placement = if mirror_pass {
                        // Valid for `buffers` as it is for their mirror.
                        let ranked = rank(&mirror, order, &[]);
                        let mut offsets = vec![0; buffers.len()];
                        let height = sweep_until(&mirror, &ranked, fit, &mut offsets, stop).ok()?;
                        Placement { offsets, height }
                    } else if order == Order::Start {
                        let ranked = rank(buffers, order, &[]);
                        let mut offsets = vec![0; buffers.len()];
                        let height = sweep_until(buffers, &ranked, fit, &mut offsets, stop).ok()?;
                        Placement { offsets, height }
                    } else if chosen.contains(&index) && !congestion.is_empty() {
                        let ranked = rank(buffers, order, &congestion);
                        best_fit(buffers, &ranked, fit, stop)?
                    } else {
                        return None;
                    };
                    let mut sides = [u64::MAX; 2];
                    if order == Order::Start {
                        sides[usize::from(mirror_pass)] = placement.height;
                    }
                    Some(((placement.height, index, placement), sides))
                })
                .reduce_with(|(a, a_sides), (b, b_sides)| {
                    let sides = [a_sides[0].min(b_sides[0]), a_sides[1].min(b_sides[1])];
                    if (b.0, b.1) < (a.0, a.1) {
                        (b, sides)
                    } else {
                        (a, sides)
                    }
                }))
        },
    );
    let guaranteed = first_placement?;
    let mut sides = [guaranteed.height, u64::MAX];
    let mut best = (guaranteed.height, first, guaranteed);
    if let Some((other, other_sides)) = others? {
        sides = [sides[0].min(other_sides[0]), other_sides[1]];
        if (other.0, other.1) < (best.0, best.1) {
            best = other;
        }
    }
    Ok(Greedy {
        placement: best.2,
        forward: sides[0],
        mirrored: (sides[1] != u64::MAX).then_some(sides[1]),
    })
}

/// A pass's height, its index (ties go to the lower) and its placement.
type Ranked = (u64, usize, Placement);

/// The greedy portfolio's answer, and how its start-order sweeps did on each side of time.
pub(crate) struct Greedy {
    /// The lowest pass's placement.
    pub(crate) placement: Placement,
    /// The lower height of the two start-order sweeps.
    pub(crate) forward: u64,
    /// The lower height of the two sweeps of the mirror, if either ran to the end.
    pub(crate) mirrored: Option<u64>,
}

/// The start-order pass at the tightest gap. A `stop` already set when it starts gives the
/// plain stacking (every live buffer above the one before, in index order, in O(n)); otherwise it
/// runs to the end whatever `stop` says, so a placement exists however early the stop comes
/// and it is that of a whole pass. The pass is one sweep with a free list, O(n log n) (a
/// 0.01 s limit answers after 0.03-0.05 s on the 100,000-buffer sets of `bench pack`, load
/// average 1.5 on 2 cores); once `stop` fires, the other passes drop at their next poll and
/// leave it the machine. Before, a pass cut short stacked the buffers it had not
/// reached above the others: 148-303 x the bound at 0.1 s on a 100,000-buffer training set.
fn first_pass(
    buffers: &[Buffer],
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<Placement, PackError> {
    let mut offsets = vec![0; buffers.len()];
    // The plain stacking needs the sum of all sizes to fit; where it does not (buffers that
    // never share a step may add up to more than `u64::MAX` while the height fits), the
    // sweep runs instead.
    if stop.is_some_and(|stop| stop())
        && let Ok(_) = unshared(buffers)
    {
        // No overflow: the total is the unshared sum, which fits.
        let mut top = 0u64;
        for (offset, buffer) in offsets.iter_mut().zip(buffers) {
            if buffer.is_live() {
                *offset = top;
                top += buffer.size;
            }
        }
        return Ok(Placement {
            offsets,
            height: top,
        });
    }
    let ranked = rank(buffers, Order::Start, &[]);
    let height =
        sweep(buffers, &ranked, Fit::Tightest, &mut offsets).ok_or(PackError::Overflow {
            what: "a buffer's offset + size in the greedy placement",
        })?;
    Ok(Placement { offsets, height })
}

/// The mirror of `buffers` in time: `[start, end)` becomes `[T - end, T - start)`, `T` the
/// last end of a live buffer; inert buffers stay inert. Two buffers share a step in the mirror
/// exactly when they do in `buffers`, so a placement is valid for one when it is for the other
/// and has the same height.
pub(crate) fn mirrored(buffers: &[Buffer]) -> Vec<Buffer> {
    let last = buffers
        .iter()
        .filter(|b| b.is_live())
        .map(|b| b.end)
        .max()
        .unwrap_or(0);
    buffers
        .iter()
        .map(|b| {
            if b.is_live() {
                b.mirrored(last)
            } else {
                Buffer::new(0, 0, b.size)
            }
        })
        .collect()
}

/// The live buffers in the given order.
pub(crate) fn rank(buffers: &[Buffer], order: Order, congestion: &[u64]) -> Vec<u32> {
    let mut ranked: Vec<u32> = (0..buffers.len() as u32)
        .filter(|&i| buffers[i as usize].is_live())
        .collect();
    let key = |i: u32| {
        let b = &buffers[i as usize];
        let life = b.end - b.start;
        let area = u128::from(b.size) * u128::from(life);
        let (size, life128) = (u128::from(b.size), u128::from(life));
        match order {
            Order::Size => (u128::MAX - size, u128::MAX - life128, 0, i),
            Order::Lifetime => (u128::MAX - life128, u128::MAX - size, 0, i),
            Order::Area => (u128::MAX - area, u128::MAX - size, 0, i),
            Order::Start => (u128::from(b.start), u128::MAX - size, 0, i),
            Order::Wat => (
                u128::MAX - life128,
                u128::MAX - area,
                u128::MAX - u128::from(congestion.get(i as usize).copied().unwrap_or(0)),
                i,
            ),
            Order::Taw => (
                u128::MAX - u128::from(congestion.get(i as usize).copied().unwrap_or(0)),
                u128::MAX - area,
                u128::MAX - life128,
                i,
            ),
            Order::Congestion => (
                u128::MAX - u128::from(congestion.get(i as usize).copied().unwrap_or(0)),
                u128::MAX - size,
                u128::MAX - life128,
                i,
            ),
        }
    };
    ranked.sort_unstable_by_key(|&i| key(i));
    ranked
}

/// Per buffer, the largest sum of sizes live at one step of its lifetime (0 for inert ones).
pub(crate) fn congestion(buffers: &[Buffer]) -> Result<Vec<u64>, PackError> {
    let mut points: Vec<u64> = buffers
        .iter()
        .filter(|b| b.is_live())
        .flat_map(|b| [b.start, b.end])
        .collect();
    points.sort_unstable();
    points.dedup();
    let section_of = |t: u64| points.partition_point(|&p| p < t);
    // Difference array over sections, then a sparse table for range maxima.
    let mut delta = vec![0i128; points.len() + 1];
    for b in buffers.iter().filter(|b| b.is_live()) {
        delta[section_of(b.start)] += i128::from(b.size);
        delta[section_of(b.end)] -= i128::from(b.size);
    }
    let mut live = 0i128;
    let mut totals: Vec<u64> = Vec::with_capacity(points.len());
    for d in &delta[..points.len()] {
        live += d;
        totals.push(u64::try_from(live).map_err(|_| PackError::Overflow {
            what: "the sum of sizes live at one step",
        })?);
    }
    let table = SparseMax::new(&totals);
    Ok(buffers
        .iter()
        .map(|b| {
            if b.is_live() {
                table.max(section_of(b.start), section_of(b.end))
            } else {
                0
            }
        })
        .collect())
}

/// Range maximum in O(1) after O(n log n) preparation.
struct SparseMax {
    levels: Vec<Vec<u64>>,
}

impl SparseMax {
    fn new(values: &[u64]) -> SparseMax {
        let mut levels = vec![values.to_vec()];
        let mut width = 1;
        while width * 2 <= values.len() {
            let previous = levels.last().expect("level 0 exists");
            let next: Vec<u64> = (0..=values.len() - width * 2)
                .map(|i| previous[i].max(previous[i + width]))
                .collect();
            levels.push(next);
            width *= 2;
        }
        SparseMax { levels }
    }

    /// The maximum over `[low, high)`; 0 when the range is empty.
    fn max(&self, low: usize, high: usize) -> u64 {
        if low >= high {
            return 0;
        }
        let level = (usize::BITS - 1 - (high - low).leading_zeros()) as usize;
        let width = 1 << level;
        self.levels[level][low].max(self.levels[level][high - width])
    }
}

/// One greedy pass: buffers in `order` (live ones only), each into the best gap among the
/// placed buffers that share a step with it; `None` when `stop` fired first.
fn best_fit(
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Option<Placement> {
    let mut offsets = vec![UNPLACED; buffers.len()];
    let height = best_fit_onto(buffers, order, fit, &mut offsets, &[], stop)?;
    for offset in offsets.iter_mut().filter(|o| **o == UNPLACED) {
        *offset = 0;
    }
    Some(Placement { offsets, height })
}

/// Neighbours visited (plus buffers placed) between two polls of `stop` in [`best_fit_onto`]:
/// well under a millisecond of work.
const POLL_WORK: usize = 1 << 14;

/// Marks a buffer not placed yet in [`best_fit_onto`].
pub(crate) const UNPLACED: u64 = u64::MAX;

/// Places the buffers of `order` around those already placed (`offsets[i] != UNPLACED`, kept
/// where they are), each at or above its entry of `floors` when there is one (the top of a
/// buffer below it that is not in `buffers`, so offsets stay ends of buffers below); returns
/// the height of the buffers it placed, or `None` when `stop` fired or a top would exceed
/// `u64::MAX` (polled before the first buffer and after every [`POLL_WORK`] neighbours
/// visited).
pub(crate) fn best_fit_onto(
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    offsets: &mut [u64],
    floors: &[u64],
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Option<u64> {
    let mut index = TimeIndex::new(buffers);
    for (i, _) in offsets.iter().enumerate().filter(|(_, o)| **o != UNPLACED) {
        index.enter(i);
    }
    let mut below: Vec<(u64, u64)> = Vec::new();
    let mut height = 0u64;
    // A buffer costs its placed neighbours (thousands each among long-lived buffers), so the
    // poll comes after a fixed amount of that work, not after a fixed count of buffers.
    let mut work = POLL_WORK;
    for &i in order {
        if work >= POLL_WORK {
            if stop.is_some_and(|stop| stop()) {
                return None;
            }
            work = 0;
        }
        let i = i as usize;
        let b = &buffers[i];
        below.clear();
        index.overlapping(b.start, b.end, |n| {
            let n = n as usize;
            below.push((offsets[n], offsets[n].saturating_add(buffers[n].size)));
        });
        if let Some(&floor) = floors.get(i).filter(|&&f| f > 0) {
            below.push((0, floor));
        }
        below.sort_unstable();
        work += below.len() + 1;
        let offset = pick_gap(&below, b.size, fit);
        // Checked: the sizes of a part may add up to more than `u64::MAX` where the height
        // fits; such a pass is dropped.
        let top = offset.checked_add(b.size)?;
        offsets[i] = offset;
        index.enter(i);
        height = height.max(top);
    }
    Some(height)
}

/// The offset a buffer of `size` gets among the sorted occupied ranges `below`.
fn pick_gap(below: &[(u64, u64)], size: u64, fit: Fit) -> u64 {
    let mut floor = 0u64;
    let mut best: Option<(u64, u64)> = None; // (gap size, offset)
    for &(low, high) in below {
        if low > floor {
            let gap = low - floor;
            if gap >= size {
                match fit {
                    Fit::Lowest => return floor,
                    Fit::Tightest => {
                        if best.is_none_or(|(best_gap, _)| gap < best_gap) {
                            best = Some((gap, floor));
                        }
                    }
                }
            }
        }
        floor = floor.max(high);
    }
    best.map_or(floor, |(_, offset)| offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[start, end)` becomes `[T - end, T - start)` with `T` the last end of a live buffer;
    /// an inert buffer (here an empty lifetime past `T`) stays inert.
    #[test]
    fn the_mirror_reverses_time() {
        let buffers = [
            Buffer::new(0, 2, 5),
            Buffer::new(1, 4, 3),
            Buffer::new(9, 9, 7),
        ];
        assert_eq!(
            mirrored(&buffers),
            [
                Buffer::new(2, 4, 5),
                Buffer::new(0, 3, 3),
                Buffer::new(0, 0, 7)
            ]
        );
    }

    /// A floor is a buffer below that the pass does not see (a window's greedy placement
    /// keeps each buffer above the base buffers after the window's end): the buffer goes to
    /// the lowest gap at or above it, and a buffer with no floor still takes the gap below.
    #[test]
    fn floors_keep_buffers_above_them() {
        let buffers = [
            Buffer::new(0, 10, 4),
            Buffer::new(0, 10, 2),
            Buffer::new(2, 8, 1),
        ];
        let mut offsets = vec![0, UNPLACED, UNPLACED];
        let height = best_fit_onto(
            &buffers,
            &[1, 2],
            Fit::Lowest,
            &mut offsets,
            &[0, 6, 0],
            None,
        );
        assert_eq!(offsets, [0, 6, 4]);
        assert_eq!(height, Some(8));
        // Without the floor, the second buffer rests on the first.
        let mut offsets = vec![0, UNPLACED, UNPLACED];
        best_fit_onto(&buffers, &[1, 2], Fit::Lowest, &mut offsets, &[], None);
        assert_eq!(offsets, [0, 4, 6]);
    }
}
