//! Bounds on the arena height: the largest sum of sizes live at one step (no packing can do
//! better) and the sum of all sizes (no reuse at all); and the step where a subset's live sizes
//! peak, which the large parts' runs build around.
//!
//! Invariant: `lower_bound <= height of any valid placement <= unshared`, for every input;
//! both sums are checked and report an overflow instead of wrapping.

use crate::{Buffer, PackError, check_intervals};

/// The largest sum of sizes live at one step: no valid placement is lower.
pub fn lower_bound(buffers: &[Buffer]) -> Result<u64, PackError> {
    check_intervals(buffers)?;
    // Ends sort before starts at the same step: lifetimes are half-open.
    let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(buffers.len() * 2);
    for buffer in buffers.iter().filter(|b| b.is_live()) {
        events.push((buffer.start, true, buffer.size));
        events.push((buffer.end, false, buffer.size));
    }
    events.sort_unstable();
    let mut live = 0u64;
    let mut peak = 0u64;
    for (_, is_start, size) in events {
        if is_start {
            live = live.checked_add(size).ok_or(PackError::Overflow {
                what: "the sum of sizes live at one step",
            })?;
            peak = peak.max(live);
        } else {
            live -= size;
        }
    }
    Ok(peak)
}

/// The sum of all sizes: the arena height when nothing is shared.
pub fn unshared(buffers: &[Buffer]) -> Result<u64, PackError> {
    check_intervals(buffers)?;
    buffers
        .iter()
        .filter(|b| b.is_live())
        .try_fold(0u64, |sum, b| sum.checked_add(b.size))
        .ok_or(PackError::Overflow {
            what: "the sum of all sizes",
        })
}

/// The first step where the sizes of the buffers `ids` of `buffers` live add up to their most
/// (summed in u128: no subset of u64 sizes overflows it); 0 when `ids` is empty.
pub(crate) fn peak_step(buffers: &[Buffer], ids: &[u32]) -> u64 {
    let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(ids.len() * 2);
    for &i in ids {
        let b = &buffers[i as usize];
        // Ends before starts at a time (`false` sorts first): a buffer ending at t is not
        // live there.
        events.push((b.start, true, b.size));
        events.push((b.end, false, b.size));
    }
    events.sort_unstable();
    let (mut live, mut most, mut when) = (0u128, 0u128, 0u64);
    for &(t, starts, size) in &events {
        if starts {
            live += u128::from(size);
            if live > most {
                (most, when) = (live, t);
            }
        } else {
            live -= u128::from(size);
        }
    }
    when
}
