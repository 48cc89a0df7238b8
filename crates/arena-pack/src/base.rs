//! The base layer of a large part: its long-lived buffers, placed first at the bottom.
//!
//! Buffers live over a long stretch of the program (kept outputs, saved activations) are what
//! defeats a bottom-up search: one can only sit where the skyline is level over its whole
//! lifetime. Those live in more than 1/`base_fraction` of the part's sections (or in a quarter
//! of the minimum and reaching its first or last step) go first, placed by the start-order
//! sweep at the lowest gap, earliest start first and longest first on ties: for lifetimes that
//! end together, as kept outputs do, that is a staircase with no gap. A heuristic choice: a
//! search above a base layer proves nothing when it fails.
//!
//! Invariants: the base buffers' placement is valid (the sweep never overlaps two buffers that
//! share a step); [`BaseLayer::least`] over a lifetime is the highest top of the base buffers
//! live in it, so every other buffer placed at or above it overlaps no base buffer.

use crate::heuristic::Fit;
use crate::interval::MaxOverTime;
use crate::sweep::sweep;
use crate::{Buffer, Params};

/// A part split into its base layer (placed) and the rest.
pub(crate) struct BaseLayer {
    /// The base buffers, in the order of the part's `ids`.
    pub(crate) ids: Vec<u32>,
    /// Their offsets.
    pub(crate) offsets: Vec<u64>,
    /// The other buffers, in the order of the part's `ids`.
    pub(crate) rest: Vec<u32>,
    /// The highest top of the base buffers live at each step.
    tops: MaxOverTime,
}

impl BaseLayer {
    /// Splits the buffers `ids` (live, sorted by start) and places the base layer.
    pub(crate) fn new(buffers: &[Buffer], ids: &[u32], params: &Params) -> BaseLayer {
        let mut points: Vec<u64> = ids
            .iter()
            .flat_map(|&i| [buffers[i as usize].start, buffers[i as usize].end])
            .collect();
        points.sort_unstable();
        points.dedup();
        let section_of = |t: u64| points.partition_point(|&p| p < t);
        let sections = points.len().saturating_sub(1);
        let threshold = (sections / params.base_fraction.max(1)).max(params.min_base_sections);
        let (first, last) = (points.first().copied(), points.last().copied());
        let is_base = |i: u32| {
            let b = &buffers[i as usize];
            let span = section_of(b.end) - section_of(b.start);
            span > threshold
                || (span > params.min_base_sections / 4
                    && (Some(b.start) == first || Some(b.end) == last))
        };
        let (base, rest): (Vec<u32>, Vec<u32>) = ids.iter().partition(|&&i| is_base(i));
        let local: Vec<Buffer> = base.iter().map(|&i| buffers[i as usize]).collect();
        let mut order: Vec<u32> = (0..base.len() as u32).collect();
        order.sort_unstable_by_key(|&k| {
            let b = &local[k as usize];
            (b.start, std::cmp::Reverse(b.end), k)
        });
        let mut offsets = vec![0u64; base.len()];
        sweep(&local, &order, Fit::Lowest, &mut offsets);
        let held: Vec<(u64, u64, u64)> = local
            .iter()
            .zip(&offsets)
            .map(|(b, &o)| (b.start, b.end, o + b.size))
            .collect();
        BaseLayer {
            ids: base,
            offsets,
            rest,
            tops: MaxOverTime::new(&held),
        }
    }

    /// The lowest offset a buffer live on `[start, end)` can take above the base layer.
    pub(crate) fn least(&self, start: u64, end: u64) -> u64 {
        self.tops.max(start, end)
    }

    /// Whether some base buffer ends above `capacity`.
    pub(crate) fn exceeds(&self, buffers: &[Buffer], capacity: u64) -> bool {
        self.ids
            .iter()
            .zip(&self.offsets)
            .any(|(&i, &o)| o.saturating_add(buffers[i as usize].size) > capacity)
    }
}
