//! Placement validation: every buffer within the capacity, no two buffers live at the same step
//! sharing an address.
//!
//! A sweep over start times compares each buffer only with the buffers still live when it
//! starts, so the cost is O(n log n + overlapping pairs). The first conflict in start order is
//! reported, naming both buffers with their lifetimes and address ranges.

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
    let mut active: Vec<usize> = Vec::new();
    for &i in &by_start {
        let b = &buffers[i];
        active.retain(|&a| buffers[a].end > b.start);
        let (low, high) = (offsets[i], offsets[i] + b.size);
        for &a in &active {
            let (a_low, a_high) = (offsets[a], offsets[a] + buffers[a].size);
            if low < a_high && a_low < high {
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
        }
        active.push(i);
    }
    Ok(height)
}
