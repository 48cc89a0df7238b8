//! Re-stacking: keep the vertical order of a placement and recompute the offsets for new sizes.
//!
//! Every pair of buffers that share a step is oriented once, by the offsets of the placement it
//! was built from (a buffer of size 0 counts as lying at the bottom, below every buffer it
//! shares a step with). The orientation is a total order restricted to those pairs, so it has no
//! cycle, and the longest path through it gives each buffer an offset above everything oriented
//! below it: valid for any sizes. Edges implied by a longer path are dropped when the stacking
//! is built, so a restack touches only the few buffers each one directly rests on.
//! For the sizes it was built with, a restack reproduces the placement exactly when every offset
//! is 0 or the end of a buffer below it that shares a step (as all placements from this module
//! are, with size-0 buffers at 0); otherwise it lowers buffers that were floating.

use crate::overlap::OverlapGraph;
use crate::{Buffer, PackError, Placement};

/// The vertical order of a placement, to recompute offsets for new sizes (see the module docs).
#[derive(Clone, Debug)]
pub struct Stacking {
    /// Buffers from the bottom up: every buffer comes after all the buffers it rests on.
    order: Vec<u32>,
    /// `supports[first[k]..first[k + 1]]` are the buffers `order[k]` rests on directly.
    first: Vec<u32>,
    supports: Vec<u32>,
    buffer_count: usize,
}

impl Stacking {
    /// Orients every pair of time-overlapping buffers by the offsets in `placement`.
    ///
    /// `placement.offsets` shorter than `buffers` counts the missing offsets as 0; the order
    /// is still acyclic, so `restack` stays valid.
    pub fn new(buffers: &[Buffer], placement: &Placement) -> Stacking {
        let offset_of = |i: usize| placement.offsets.get(i).copied().unwrap_or(0);
        let key = |i: usize| {
            if buffers[i].size == 0 {
                (0, false, i)
            } else {
                (offset_of(i), true, i)
            }
        };
        let mut order: Vec<u32> = (0..buffers.len() as u32).collect();
        order.sort_unstable_by_key(|&i| key(i as usize));
        let graph = OverlapGraph::by_time(buffers);
        let mut first = Vec::with_capacity(order.len() + 1);
        let mut supports: Vec<u32> = Vec::new();
        let mut below: Vec<u32> = Vec::new();
        let mut covered = IntervalUnion::default();
        for &i in &order {
            first.push(supports.len() as u32);
            let i = i as usize;
            below.clear();
            below.extend(
                graph
                    .neighbours(i)
                    .iter()
                    .copied()
                    .filter(|&n| key(n as usize) < key(i)),
            );
            // From the top down: a buffer that shares a step with a higher support lies below
            // that support, so its edge to `i` is implied by a longer path.
            below.sort_unstable_by_key(|&n| std::cmp::Reverse(key(n as usize)));
            covered.clear();
            for &n in &below {
                let b = &buffers[n as usize];
                if !covered.intersects(b.start, b.end) {
                    supports.push(n);
                }
                covered.insert(b.start, b.end);
            }
        }
        first.push(supports.len() as u32);
        Stacking {
            order,
            first,
            supports,
            buffer_count: buffers.len(),
        }
    }

    /// Offsets for new sizes (one per buffer, in input order), written into `offsets`; returns
    /// the height. Allocates nothing when `offsets` already has the capacity.
    pub fn restack(&self, sizes: &[u64], offsets: &mut Vec<u64>) -> Result<u64, PackError> {
        if sizes.len() != self.buffer_count {
            return Err(PackError::LengthMismatch {
                what: "sizes",
                expected: self.buffer_count,
                found: sizes.len(),
            });
        }
        offsets.clear();
        offsets.resize(self.buffer_count, 0);
        let mut height = 0u64;
        for (k, &i) in self.order.iter().enumerate() {
            let mut offset = 0u64;
            for &s in &self.supports[self.first[k] as usize..self.first[k + 1] as usize] {
                let s = s as usize;
                offset = offset.max(offsets[s].checked_add(sizes[s]).ok_or(
                    PackError::Overflow {
                        what: "offset + size of a restacked buffer",
                    },
                )?);
            }
            let i = i as usize;
            offsets[i] = offset;
            height = height.max(offset.checked_add(sizes[i]).ok_or(PackError::Overflow {
                what: "offset + size of a restacked buffer",
            })?);
        }
        // Size-0 buffers conflict with nothing; they were needed above only as links of the
        // paths that carry other buffers' offsets.
        for (offset, &size) in offsets.iter_mut().zip(sizes) {
            if size == 0 {
                *offset = 0;
            }
        }
        Ok(height)
    }

    /// How many support edges a restack follows (for benchmarks).
    pub fn edge_count(&self) -> usize {
        self.supports.len()
    }
}

/// A union of half-open intervals, kept as sorted disjoint runs.
#[derive(Default)]
struct IntervalUnion {
    runs: Vec<(u64, u64)>,
}

impl IntervalUnion {
    fn clear(&mut self) {
        self.runs.clear();
    }

    fn intersects(&self, start: u64, end: u64) -> bool {
        // The first run that ends after `start` is the only candidate.
        let k = self.runs.partition_point(|&(_, e)| e <= start);
        self.runs.get(k).is_some_and(|&(s, _)| s < end)
    }

    fn insert(&mut self, start: u64, end: u64) {
        let low = self.runs.partition_point(|&(_, e)| e < start);
        let high = self.runs.partition_point(|&(s, _)| s <= end);
        if low == high {
            self.runs.insert(low, (start, end));
        } else {
            let merged = (start.min(self.runs[low].0), end.max(self.runs[high - 1].1));
            self.runs.drain(low + 1..high);
            self.runs[low] = merged;
        }
    }
}
