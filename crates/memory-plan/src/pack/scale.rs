//! Large parts (thousands of buffers in one connected lifetime graph): cut time into windows
//! and pack each window on its own.
//!
//! Cuts go where little memory is live across them (the residual stream between layers); the
//! buffers that cross a cut form a bottom layer placed first, with the greedy passes. Each
//! window then packs its own buffers around that layer, and since windows share no buffer
//! beyond the bottom layer, each keeps the best of all greedy passes for itself (a global pass
//! must use one order everywhere). Windows run in parallel and are combined in time order, so
//! the result does not depend on the thread count. The caller keeps the previous placement
//! when this one is not lower.

use rayon::prelude::*;

use super::Buffer;
use super::heuristic::{self, Fit, ORDERS, Order, UNPLACED};
use super::overlap::OverlapGraph;

/// Buffers per window the cuts aim at: small enough that every greedy pass per window is
/// cheap, large enough that the bottom layer stays thin.
const WINDOW_BUFFERS: usize = 400;

/// A placement of the buffers `ids` (live, sorted by start) cut into windows; returns its
/// height and the offsets in the order of `ids`.
pub(crate) fn windowed(buffers: &[Buffer], ids: &[u32]) -> (u64, Vec<u64>) {
    let local: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
    let cuts = choose_cuts(&local);
    let crosses = |b: &Buffer| {
        let k = cuts.partition_point(|&c| c <= b.start);
        k < cuts.len() && cuts[k] < b.end
    };

    // The bottom layer: every buffer that crosses a cut.
    let bottom: Vec<usize> = (0..local.len()).filter(|&k| crosses(&local[k])).collect();
    let bottom_buffers: Vec<Buffer> = bottom.iter().map(|&k| local[k]).collect();
    let mut offsets = vec![UNPLACED; local.len()];
    // Longest first: buffers live across many windows end at the bottom, where they do not
    // split the room each window has above them.
    let bottom_graph = OverlapGraph::new(&bottom_buffers);
    let longest_first = heuristic::rank(&bottom_buffers, Order::Lifetime, &[]);
    let bottom_placement =
        heuristic::best_fit(&bottom_buffers, &bottom_graph, &longest_first, Fit::Lowest);
    for (&k, &offset) in bottom.iter().zip(&bottom_placement.offsets) {
        offsets[k] = offset;
    }

    // Windows between consecutive cuts (and before the first / after the last).
    let mut bounds = Vec::with_capacity(cuts.len() + 2);
    bounds.push(u64::MIN);
    bounds.extend_from_slice(&cuts);
    bounds.push(u64::MAX);
    let windows: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let placed: Vec<Vec<(usize, u64)>> = windows
        .par_iter()
        .map(|&(from, to)| pack_window(&local, &offsets, from, to))
        .collect();
    for window in placed {
        for (k, offset) in window {
            offsets[k] = offset;
        }
    }
    let height = local
        .iter()
        .zip(&offsets)
        .map(|(b, &o)| o + b.size)
        .max()
        .unwrap_or(0);
    (height, offsets)
}

/// Packs the buffers living inside `[from, to)` around the bottom-layer buffers already in
/// `offsets`; returns (local index, offset) for the window's buffers.
fn pack_window(local: &[Buffer], offsets: &[u64], from: u64, to: u64) -> Vec<(usize, u64)> {
    // The window's own buffers, then the bottom-layer buffers live in it.
    let inside: Vec<usize> = (0..local.len())
        .filter(|&k| offsets[k] == UNPLACED && local[k].start >= from && local[k].end <= to)
        .collect();
    if inside.is_empty() {
        return Vec::new();
    }
    let fixed: Vec<usize> = (0..local.len())
        .filter(|&k| offsets[k] != UNPLACED && local[k].start < to && local[k].end > from)
        .collect();
    let members: Vec<Buffer> = inside.iter().chain(&fixed).map(|&k| local[k]).collect();
    let graph = OverlapGraph::new(&members);
    let own: Vec<Buffer> = members[..inside.len()].to_vec();
    let congestion = heuristic::congestion(&own).unwrap_or_else(|_| vec![0; own.len()]);
    let mut best: Option<(u64, Vec<u64>)> = None;
    for &order in &ORDERS {
        let ranked = heuristic::rank(&own, order, &congestion);
        for fit in [Fit::Tightest, Fit::Lowest] {
            let mut trial: Vec<u64> = vec![UNPLACED; inside.len()];
            trial.extend(fixed.iter().map(|&k| offsets[k]));
            let height = heuristic::best_fit_onto(&members, &graph, &ranked, fit, &mut trial);
            if best.as_ref().is_none_or(|(h, _)| height < *h) {
                best = Some((height, trial));
            }
        }
    }
    let (_, trial) = best.unwrap_or_default();
    inside.iter().copied().zip(trial).collect()
}

/// Cut points (in increasing time) so that about [`WINDOW_BUFFERS`] buffers start between
/// consecutive cuts, each at the step with the least memory live across it in its range.
fn choose_cuts(local: &[Buffer]) -> Vec<u64> {
    let mut starts: Vec<(u64, u64)> = local.iter().map(|b| (b.start, b.size)).collect();
    let mut ends: Vec<(u64, u64)> = local.iter().map(|b| (b.end, b.size)).collect();
    starts.sort_unstable();
    ends.sort_unstable();
    // Prefix sums of sizes (u128: the sum of all sizes fits u64, but keep it obviously safe).
    let prefix = |v: &[(u64, u64)]| {
        let mut sums = Vec::with_capacity(v.len() + 1);
        let mut total = 0u128;
        sums.push(0);
        for &(_, size) in v {
            total += u128::from(size);
            sums.push(total);
        }
        sums
    };
    let (start_sums, end_sums) = (prefix(&starts), prefix(&ends));
    // Memory live across `t`: started before `t` and not ended by `t`.
    let crossing = |t: u64| {
        let started = starts.partition_point(|&(s, _)| s < t);
        let ended = ends.partition_point(|&(e, _)| e <= t);
        start_sums[started] - end_sums[ended]
    };
    let points: Vec<u64> = {
        let mut p: Vec<u64> = starts.iter().map(|&(s, _)| s).collect();
        p.dedup();
        p
    };
    let started_before = |t: u64| starts.partition_point(|&(s, _)| s < t);
    let mut cuts = Vec::new();
    let mut last = 0usize; // buffers started before the last cut
    let mut k = 0usize;
    while k < points.len() {
        // Candidate points with between half and a full window of buffers since the last cut.
        let mut best: Option<(u128, usize)> = None;
        let mut j = k;
        while j < points.len() {
            let count = started_before(points[j]) - last;
            if count > WINDOW_BUFFERS {
                break;
            }
            if count >= WINDOW_BUFFERS / 2 {
                let cost = crossing(points[j]);
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, j));
                }
            }
            j += 1;
        }
        match best {
            Some((_, chosen)) => {
                cuts.push(points[chosen]);
                last = started_before(points[chosen]);
                k = chosen + 1;
            }
            None if j < points.len() && j > k => {
                // A burst of starts overshoots the window: cut right before it.
                cuts.push(points[j]);
                last = started_before(points[j]);
                k = j + 1;
            }
            None if j < points.len() => {
                cuts.push(points[j]);
                last = started_before(points[j]);
                k = j + 1;
            }
            None => break,
        }
    }
    cuts
}
