//! Re-stacking: keep the vertical order of a placement and recompute the offsets for new sizes.
//!
//! Every pair of buffers that share a step is oriented once, by the offsets of the placement it
//! was built from (a buffer of size 0 counts as lying at the bottom, below every buffer it
//! shares a step with). The orientation is a total order restricted to those pairs, so it has no
//! cycle, and the longest path through it gives each buffer an offset above everything oriented
//! below it.
//!
//! The pairs are never listed. Buffers are taken bottom up while a map over time records, per
//! step, the highest buffer taken so far live there ("painting"); a buffer rests directly on
//! the buffers its lifetime finds painted, then paints its lifetime. Every buffer below it that
//! shares a step `t` with it reaches, by induction, the buffer painted at `t`, so the edges keep
//! every path of the full orientation and the longest paths are the same. Each paint removes
//! the pieces it covers and adds at most three, so building takes O(n log n) time and the
//! edges and the map O(n) memory, however many buffers are live at once.
//!
//! Invariants: a restack is a valid placement for any sizes. For the sizes it was built with, it
//! reproduces the placement exactly when every offset is 0 or the end of a buffer below it that
//! shares a step (as all placements from this module are, with size-0 buffers at 0); otherwise it
//! lowers buffers that were floating.

use std::collections::BTreeMap;

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
        let mut first = Vec::with_capacity(order.len() + 1);
        let mut supports: Vec<u32> = Vec::new();
        // Time pieces `start -> (end, buffer)`: the highest buffer taken so far at those steps.
        let mut painted: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
        let mut covered: Vec<(u64, u64, u32)> = Vec::new();
        let mut seen = vec![u32::MAX; buffers.len()];
        for &i in &order {
            first.push(supports.len() as u32);
            let b = &buffers[i as usize];
            if b.start >= b.end {
                continue;
            }
            covered.clear();
            if let Some((&start, &(end, j))) = painted.range(..b.start).next_back()
                && end > b.start
            {
                covered.push((start, end, j));
            }
            covered.extend(
                painted
                    .range(b.start..b.end)
                    .map(|(&start, &(end, j))| (start, end, j)),
            );
            for &(start, end, j) in &covered {
                painted.remove(&start);
                if start < b.start {
                    painted.insert(start, (b.start, j));
                }
                if end > b.end {
                    painted.insert(b.end, (end, j));
                }
                if seen[j as usize] != i {
                    seen[j as usize] = i;
                    supports.push(j);
                }
            }
            painted.insert(b.start, (b.end, i));
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
