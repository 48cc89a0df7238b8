//! Independent parts: the live buffers split at every step that no buffer's lifetime spans.
//!
//! Invariants: buffers in different parts never share a step, so each part can be packed alone
//! and the height is the largest part height. Parts come in time order; each part lists its
//! buffers in increasing start order (ties by index); every live buffer is in exactly one part.

use crate::Buffer;

/// The live buffers grouped into parts that no lifetime crosses.
pub(crate) fn independent_parts(buffers: &[Buffer]) -> Vec<Vec<u32>> {
    let mut by_start: Vec<u32> = (0..buffers.len() as u32)
        .filter(|&i| buffers[i as usize].is_live())
        .collect();
    by_start.sort_unstable_by_key(|&i| (buffers[i as usize].start, i));
    split(buffers, &by_start)
}

/// The buffers `ids` (sorted by start) grouped where no lifetime crosses, in time order.
pub(crate) fn split(buffers: &[Buffer], ids: &[u32]) -> Vec<Vec<u32>> {
    let mut parts: Vec<Vec<u32>> = Vec::new();
    let mut reach = 0u64;
    for &i in ids {
        let b = &buffers[i as usize];
        match parts.last_mut() {
            Some(part) if b.start < reach => part.push(i),
            _ => parts.push(vec![i]),
        }
        reach = reach.max(b.end);
    }
    parts
}
