//! The greedy pass in start order, as an online allocator: a sweep over time with a free list.
//!
//! Placed in start order, the buffers already placed that share a step with a new buffer are
//! exactly those live at its start, so the gaps among them are the free list at that time. A
//! buffer goes into the tightest gap (or the lowest) that holds it, else on top of the live
//! buffers: the same offsets as a best-fit pass over the overlap graph in that order, in
//! O(n log n) time and O(n) memory however many buffers are live at once.
//!
//! Invariants: every offset is 0 or the end of a live buffer below it, and no two buffers that
//! share a step overlap. A sweep cut short by `stop` has placed a prefix of its order, validly.
//! Offsets stay within the sum of the sizes of the buffers of one independent part, but that
//! sum may exceed `u64::MAX` where the height does not: every top is checked, and an overflow
//! ends the sweep ([`Cut::Overflow`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::Buffer;
use crate::heuristic::Fit;

/// The free space among the buffers live at one time: their ranges and the gaps between them.
#[derive(Default)]
struct FreeList {
    /// Live ranges: offset -> top (disjoint).
    occupied: BTreeMap<u64, u64>,
    /// Gaps below the highest live range: start -> length.
    gaps: BTreeMap<u64, u64>,
    /// The same gaps as (length, start), for the tightest fit.
    by_length: BTreeSet<(u64, u64)>,
}

impl FreeList {
    fn top(&self) -> u64 {
        self.occupied.last_key_value().map_or(0, |(_, &top)| top)
    }

    /// Where a buffer of `size` goes.
    fn find(&self, size: u64, fit: Fit) -> u64 {
        let gap = match fit {
            Fit::Tightest => self
                .by_length
                .range((size, 0)..)
                .next()
                .map(|&(_, start)| start),
            Fit::Lowest => self
                .gaps
                .iter()
                .find(|&(_, &length)| length >= size)
                .map(|(&start, _)| start),
        };
        gap.unwrap_or_else(|| self.top())
    }

    fn add_gap(&mut self, start: u64, length: u64) {
        if length > 0 {
            self.gaps.insert(start, length);
            self.by_length.insert((length, start));
        }
    }

    fn remove_gap(&mut self, start: u64) -> Option<u64> {
        let length = self.gaps.remove(&start)?;
        self.by_length.remove(&(length, start));
        Some(length)
    }

    /// Occupies `[offset, top)`, `top = offset + size`: the bottom of a gap, or the top
    /// (from `find`).
    fn occupy(&mut self, offset: u64, size: u64, top: u64) {
        if let Some(length) = self.remove_gap(offset) {
            self.add_gap(top, length - size);
        }
        self.occupied.insert(offset, top);
    }

    /// Frees the live range starting at `offset`; its gap merges with the gaps beside it.
    fn release(&mut self, offset: u64) {
        let Some(top) = self.occupied.remove(&offset) else {
            return;
        };
        let below = self
            .occupied
            .range(..offset)
            .next_back()
            .map_or(0, |(_, &t)| t);
        self.remove_gap(below);
        if let Some((&next, _)) = self.occupied.range(offset..).next() {
            self.remove_gap(top);
            self.add_gap(below, next - below);
        }
    }
}

/// Why a sweep ended before its last buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// `stop` fired: a prefix of the order has its offsets (a valid placement of those), the
    /// others are untouched.
    Stopped,
    /// A buffer's top would exceed `u64::MAX`.
    Overflow,
}

/// Places the buffers of `order` (live, sorted by start) one by one; returns the height, or
/// `None` when a top would exceed `u64::MAX`.
pub(crate) fn sweep(
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    offsets: &mut [u64],
) -> Option<u64> {
    sweep_until(buffers, order, fit, offsets, None).ok()
}

/// [`sweep`], polling `stop` every 1,024 buffers (before the first one too, so a stop already
/// set costs nothing).
pub(crate) fn sweep_until(
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    offsets: &mut [u64],
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<u64, Cut> {
    let mut free = FreeList::default();
    let mut ending: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut height = 0u64;
    for (k, &i) in order.iter().enumerate() {
        if k % 1024 == 0 && stop.is_some_and(|stop| stop()) {
            return Err(Cut::Stopped);
        }
        let b = &buffers[i as usize];
        while let Some(&Reverse((end, j))) = ending.peek() {
            if end > b.start {
                break;
            }
            ending.pop();
            free.release(offsets[j as usize]);
        }
        let offset = free.find(b.size, fit);
        let top = offset.checked_add(b.size).ok_or(Cut::Overflow)?;
        free.occupy(offset, b.size, top);
        offsets[i as usize] = offset;
        height = height.max(top);
        ending.push(Reverse((b.end, i)));
    }
    Ok(height)
}
