//! Placement validation: every buffer within the capacity, no two buffers live at the same step
//! sharing an address.
//!
//! A sweep over start times keeps the buffers live at the current step in a map by address;
//! while the placement is valid their ranges are disjoint, so a new buffer conflicts with one
//! of them exactly when it overlaps its neighbour below or above in that map: O(n log n) time
//! and O(n) memory however many buffers are live at once.
//!
//! Invariant: a placement passes exactly when it is valid; otherwise the first conflict in start
//! order is reported (with the earliest-starting live buffer it meets), naming both buffers with
//! their lifetimes and address ranges.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::{Buffer, PlacementError};

/// Checks a placement and returns its height (`max(offset + size)`, 0 if empty).
///
/// `capacity: None` accepts any height. Inert buffers (zero size or empty lifetime) never
/// conflict, but they still count towards the height and the capacity check.
pub fn validate(
    buffers: &[Buffer],
    offsets: &[u64],
    capacity: Option<u64>,
) -> Result<u64, PlacementError> {
    if buffers.len() != offsets.len() {
        return Err(PlacementError::LengthMismatch {
            expected: buffers.len(),
            found: offsets.len(),
        });
    }
    let mut height = 0u64;
    for (index, (buffer, &offset)) in buffers.iter().zip(offsets).enumerate() {
        if buffer.start > buffer.end {
            return Err(PlacementError::InvertedInterval {
                index,
                start: buffer.start,
                end: buffer.end,
            });
        }
        let top = offset
            .checked_add(buffer.size)
            .ok_or(PlacementError::Overflow {
                index,
                offset,
                size: buffer.size,
            })?;
        if let Some(capacity) = capacity
            && top > capacity
        {
            return Err(PlacementError::AboveCapacity {
                index,
                offset,
                top,
                capacity,
            });
        }
        height = height.max(top);
    }

    let mut by_start: Vec<usize> = (0..buffers.len())
        .filter(|&i| buffers[i].is_live())
        .collect();
    by_start.sort_unstable_by_key(|&i| (buffers[i].start, i));
    // Live buffers: offset -> buffer, and their ends for expiry.
    let mut live: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ending: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let range = |i: usize| (offsets[i], offsets[i] + buffers[i].size);
    for &i in &by_start {
        let b = &buffers[i];
        while let Some(&Reverse((end, j))) = ending.peek() {
            if end > b.start {
                break;
            }
            ending.pop();
            live.remove(&offsets[j]);
        }
        let (low, high) = range(i);
        let below = live.range(..=low).next_back().map(|(_, &j)| j);
        let above = live.range(low..high).next().map(|(_, &j)| j);
        let clash = |j: usize| {
            let (a_low, a_high) = range(j);
            low < a_high && a_low < high
        };
        if below.is_some_and(clash) || above.is_some_and(clash) {
            // The earliest-starting live buffer it meets (ties by index).
            let a = live
                .values()
                .copied()
                .filter(|&j| clash(j))
                .min_by_key(|&j| (buffers[j].start, j))
                .unwrap_or(i);
            let (first, second) = (a.min(i), a.max(i));
            let (f, s) = (&buffers[first], &buffers[second]);
            return Err(PlacementError::Overlap {
                first,
                first_start: f.start,
                first_end: f.end,
                first_offset: offsets[first],
                first_top: offsets[first] + f.size,
                second,
                second_start: s.start,
                second_end: s.end,
                second_offset: offsets[second],
                second_top: offsets[second] + s.size,
            });
        }
        live.insert(low, i);
        ending.push(Reverse((b.end, i)));
    }
    Ok(height)
}
