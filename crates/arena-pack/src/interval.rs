//! Interval structures over time that replace an all-pairs overlap graph: memory O(buffers),
//! whatever the number of buffers live at once.
//!
//! - [`TimeIndex`]: which of the *entered* buffers share a step with a time range. Buffers sorted
//!   by start; a segment tree over that order holds per node the latest end of its entered
//!   buffers. A query visits the buffers starting before the range's end and descends only into
//!   nodes whose latest end is after its start: O((k + 1) log n) for k buffers reported.
//! - [`MaxOverTime`]: the highest of some values, each held over a time range, over any range:
//!   a segment tree of range-max updates and range-max queries over compressed time points.
//! - [`overlapping_pairs`]: how many pairs of live buffers share a step, counted by a sweep in
//!   O(n log n) without listing them (the greedy decides from it which passes it can afford).
//!
//! Invariants: no structure lists pairs of buffers; a [`TimeIndex`] query reports every entered
//! live buffer sharing a step with the range exactly once and nothing else (a buffer of size 0
//! or with an empty lifetime is never indexed); [`MaxOverTime::max`] is exactly the highest value
//! held at some step of the range, 0 where none is.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::Buffer;

/// Which entered buffers share a step with a time range (see the module docs).
pub(crate) struct TimeIndex {
    /// Starts of the indexed buffers, sorted.
    starts: Vec<u64>,
    /// The buffer at each position of `starts`.
    ids: Vec<u32>,
    /// Per buffer: its position, or `u32::MAX` when it is not indexed.
    position: Vec<u32>,
    /// Per buffer: its end.
    ends: Vec<u64>,
    leaves: usize,
    /// `latest[node]`: the latest end of the entered buffers below `node` (0 when none).
    latest: Vec<u64>,
}

impl TimeIndex {
    /// An index of the live buffers (nonzero size, nonempty lifetime), none entered yet.
    pub(crate) fn new(buffers: &[Buffer]) -> TimeIndex {
        let mut order: Vec<u32> = (0..buffers.len() as u32)
            .filter(|&i| buffers[i as usize].is_live())
            .collect();
        order.sort_unstable_by_key(|&i| (buffers[i as usize].start, i));
        let mut position = vec![u32::MAX; buffers.len()];
        for (p, &i) in order.iter().enumerate() {
            position[i as usize] = p as u32;
        }
        let leaves = order.len().max(1).next_power_of_two();
        TimeIndex {
            starts: order.iter().map(|&i| buffers[i as usize].start).collect(),
            ids: order,
            position,
            ends: buffers.iter().map(|b| b.end).collect(),
            leaves,
            latest: vec![0; 2 * leaves],
        }
    }

    /// Enters `buffer` (no effect on a buffer that is not live).
    pub(crate) fn enter(&mut self, buffer: usize) {
        let p = self.position[buffer];
        if p == u32::MAX {
            return;
        }
        let end = self.ends[buffer];
        let mut node = self.leaves + p as usize;
        while node >= 1 && self.latest[node] < end {
            self.latest[node] = end;
            node /= 2;
        }
    }

    /// Calls `visit` with every entered buffer live at some step of `[start, end)`.
    pub(crate) fn overlapping(&self, start: u64, end: u64, mut visit: impl FnMut(u32)) {
        let before = self.starts.partition_point(|&s| s < end);
        if before > 0 {
            self.descend(1, 0, self.leaves, before, start, &mut visit);
        }
    }

    fn descend(
        &self,
        node: usize,
        low: usize,
        high: usize,
        before: usize,
        start: u64,
        visit: &mut impl FnMut(u32),
    ) {
        if low >= before || self.latest[node] <= start {
            return;
        }
        if high - low == 1 {
            visit(self.ids[low]);
            return;
        }
        let middle = (low + high) / 2;
        self.descend(2 * node, low, middle, before, start, visit);
        self.descend(2 * node + 1, middle, high, before, start, visit);
    }
}

/// The highest value held over any time range (see the module docs).
pub(crate) struct MaxOverTime {
    /// Segment `s` is `[points[s], points[s + 1])`.
    points: Vec<u64>,
    leaves: usize,
    /// `tag[node]`: a value held over the node's whole range.
    tag: Vec<u64>,
    /// `best[node]`: the highest value held anywhere in the node's range.
    best: Vec<u64>,
}

impl MaxOverTime {
    /// Values `(start, end, value)`, each held on `[start, end)`.
    pub(crate) fn new(held: &[(u64, u64, u64)]) -> MaxOverTime {
        let mut points: Vec<u64> = held.iter().flat_map(|&(s, e, _)| [s, e]).collect();
        points.sort_unstable();
        points.dedup();
        let segments = points.len().saturating_sub(1);
        let leaves = segments.max(1).next_power_of_two();
        let mut tree = MaxOverTime {
            points,
            leaves,
            tag: vec![0; 2 * leaves],
            best: vec![0; 2 * leaves],
        };
        for &(start, end, value) in held {
            let (low, high) = tree.segments(start, end);
            tree.raise(1, 0, leaves, low, high, value);
        }
        tree
    }

    /// The segments `[low, high)` that share a step with `[start, end)`.
    fn segments(&self, start: u64, end: u64) -> (usize, usize) {
        let segments = self.points.len().saturating_sub(1);
        let low = self
            .points
            .partition_point(|&p| p <= start)
            .saturating_sub(1);
        let high = self.points.partition_point(|&p| p < end).min(segments);
        (low, high)
    }

    fn raise(&mut self, node: usize, low: usize, high: usize, from: usize, to: usize, value: u64) {
        if to <= low || high <= from {
            return;
        }
        self.best[node] = self.best[node].max(value);
        if from <= low && high <= to {
            self.tag[node] = self.tag[node].max(value);
            return;
        }
        let middle = (low + high) / 2;
        self.raise(2 * node, low, middle, from, to, value);
        self.raise(2 * node + 1, middle, high, from, to, value);
    }

    /// The highest value held at some step of `[start, end)` (0 when none is).
    pub(crate) fn max(&self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let (low, high) = self.segments(start, end);
        if low >= high {
            return 0;
        }
        self.query(1, 0, self.leaves, low, high)
    }

    fn query(&self, node: usize, low: usize, high: usize, from: usize, to: usize) -> u64 {
        if to <= low || high <= from {
            return 0;
        }
        if from <= low && high <= to {
            return self.best[node];
        }
        let middle = (low + high) / 2;
        self.tag[node]
            .max(self.query(2 * node, low, middle, from, to))
            .max(self.query(2 * node + 1, middle, high, from, to))
    }
}

/// The number of pairs of live buffers that share a step (saturating).
pub(crate) fn overlapping_pairs(buffers: &[Buffer]) -> u64 {
    let mut order: Vec<&Buffer> = buffers.iter().filter(|b| b.is_live()).collect();
    order.sort_unstable_by_key(|b| b.start);
    let mut ending: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut pairs = 0u64;
    for b in order {
        while ending.peek().is_some_and(|&Reverse(end)| end <= b.start) {
            ending.pop();
        }
        pairs = pairs.saturating_add(ending.len() as u64);
        ending.push(Reverse(b.end));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The index reports exactly the entered live buffers that share a step with the
        /// range, and the pair count is the brute-force count.
        #[test]
        fn index_and_pairs_match_brute_force(
            raw in prop::collection::vec((0u64..30, 0u64..8, 0u64..3), 0..40),
            entered in prop::collection::vec(any::<bool>(), 40),
            (start, len) in (0u64..35, 0u64..10),
        ) {
            let buffers: Vec<Buffer> =
                raw.iter().map(|&(s, l, size)| Buffer::new(s, s + l, size)).collect();
            let mut index = TimeIndex::new(&buffers);
            for (i, _) in buffers.iter().enumerate().filter(|&(i, _)| entered[i]) {
                index.enter(i);
            }
            let mut found = Vec::new();
            index.overlapping(start, start + len, |i| found.push(i as usize));
            found.sort_unstable();
            let expected: Vec<usize> = (0..buffers.len())
                .filter(|&i| {
                    let b = &buffers[i];
                    entered[i] && b.is_live() && b.start < start + len && start < b.end
                })
                .collect();
            prop_assert_eq!(found, expected);
            let pairs = (0..buffers.len())
                .flat_map(|i| (0..i).map(move |j| (i, j)))
                .filter(|&(i, j)| buffers[i].overlaps(&buffers[j]))
                .count() as u64;
            prop_assert_eq!(overlapping_pairs(&buffers), pairs);
        }

        /// The highest value over a range is the brute-force maximum.
        #[test]
        fn max_over_time_matches_brute_force(
            held in prop::collection::vec((0u64..30, 1u64..8, 0u64..100), 0..20),
            (start, len) in (0u64..35, 0u64..10),
        ) {
            let held: Vec<(u64, u64, u64)> = held.iter().map(|&(s, l, v)| (s, s + l, v)).collect();
            let tree = MaxOverTime::new(&held);
            let end = start + len;
            let expected = held
                .iter()
                .filter(|&&(s, e, _)| start < end && s < end && start < e)
                .map(|&(_, _, v)| v)
                .max()
                .unwrap_or(0);
            prop_assert_eq!(tree.max(start, end), expected);
        }
    }
}
