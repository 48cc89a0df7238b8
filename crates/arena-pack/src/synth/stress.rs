//! Many buffers live at once: `count` values produced one per step, each from a temporary of
//! its own, and all read by one final op (a concatenation or a reduction over a fan-in), so
//! at the last step every value is live: `count` co-live buffers among `2 x count`. Sizes are
//! 256 x 1..64 bytes, seeded. What this checks is that the packer's time and memory do not grow
//! with the `count^2 / 2` pairs of buffers that share a step.
//!
//! Invariants: a pure function of `(seed, count)`; the lower bound is reached by stacking the
//! values in production order with the temporaries on top.

use super::{SplitMix, Trace};
use crate::Buffer;

/// `count` values all live at the last step, each with a temporary (see the module docs).
pub fn co_live(seed: u64, count: usize) -> Vec<Buffer> {
    let mut random = SplitMix(seed);
    let mut trace = Trace::new(256);
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        trace.op();
        let temporary = trace.produce(256 * random.between(1, 64));
        trace.op();
        trace.read(temporary);
        values.push(trace.produce(256 * random.between(1, 64)));
    }
    trace.op();
    for &v in &values {
        trace.read(v);
    }
    trace.finish()
}
