//! Arena packing: give every buffer an offset so that buffers live at the same time never share
//! an address (2-D packing, time x address).
//!
//! Invariants shared by every algorithm below:
//! - A buffer is live on the half-open step interval `[start, end)`. A buffer with `size == 0` or
//!   an empty interval (`start == end`) is *inert*: it sits at offset 0 and conflicts with nothing.
//! - Every offset produced here is 0 or the end (`offset + size`) of another buffer placed below
//!   it, so when all sizes are multiples of an alignment `A`, all offsets are too.
//! - Size arithmetic is checked `u64`: an overflow is a [`PackError`], never a wrap or a panic.
//! - Nothing reads files, the environment or a clock; the same input gives the same output
//!   whatever the thread count (the only non-deterministic input is the caller's `stop` poll).

mod bounds;
pub mod csv;

mod heuristic;
mod overlap;
mod partition;
mod scale;
mod search;
mod solve;
mod stacking;
pub mod synth;

mod validate;

pub use bounds::{lower_bound, unshared};
pub use heuristic::heuristic;
pub use solve::{Goal, Limits, Proof, Solution, solve};
pub use stacking::Stacking;
pub use validate::validate;

/// A buffer live on the half-open step interval `[start, end)`, needing `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    pub start: u64,
    pub end: u64,
    pub size: u64,
}

impl Buffer {
    pub fn new(start: u64, end: u64, size: u64) -> Buffer {
        Buffer { start, end, size }
    }

    /// Whether the buffer occupies memory at some step (nonzero size, nonempty lifetime).
    pub fn is_live(&self) -> bool {
        self.size > 0 && self.start < self.end
    }

    /// Whether both buffers occupy memory at a common step.
    pub fn overlaps(&self, other: &Buffer) -> bool {
        self.is_live() && other.is_live() && self.start < other.end && other.start < self.end
    }
}

/// Offsets, one per buffer (same order as the input), and the height = max(offset + size)
/// over the buffers (0 if there are none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub offsets: Vec<u64>,
    pub height: u64,
}

/// Why a packing computation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PackError {
    #[error("size overflow: {what} exceeds u64::MAX bytes")]
    Overflow { what: &'static str },
    #[error("length mismatch: {what} has {found} entries but there are {expected} buffers")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("buffer {index} ends before it starts ([{start}, {end})): give it end >= start")]
    InvertedInterval { index: usize, start: u64, end: u64 },
}

/// Why a placement is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    #[error("{found} offsets for {expected} buffers: give exactly one offset per buffer")]
    LengthMismatch { expected: usize, found: usize },
    #[error(
        "buffers {first} and {second} overlap: buffer {first} lives on [{first_start}, {first_end}) at \
         bytes [{first_offset}, {first_top}), buffer {second} lives on [{second_start}, {second_end}) at \
         bytes [{second_offset}, {second_top})"
    )]
    Overlap {
        first: usize,
        first_start: u64,
        first_end: u64,
        first_offset: u64,
        first_top: u64,
        second: usize,
        second_start: u64,
        second_end: u64,
        second_offset: u64,
        second_top: u64,
    },
    #[error("buffer {index} at bytes [{offset}, {top}) exceeds the capacity of {capacity} bytes")]
    AboveCapacity {
        index: usize,
        offset: u64,
        top: u64,
        capacity: u64,
    },
    #[error("buffer {index}: offset {offset} + size {size} overflows u64")]
    Overflow {
        index: usize,
        offset: u64,
        size: u64,
    },
    #[error("buffer {index} ends before it starts ([{start}, {end})): give it end >= start")]
    InvertedInterval { index: usize, start: u64, end: u64 },
}

/// Rejects inverted intervals, the one malformed shape of a [`Buffer`].
fn check_intervals(buffers: &[Buffer]) -> Result<(), PackError> {
    match buffers.iter().position(|b| b.start > b.end) {
        Some(index) => Err(PackError::InvertedInterval {
            index,
            start: buffers[index].start,
            end: buffers[index].end,
        }),
        None => Ok(()),
    }
}

/// `max(offset + size)` with overflow as a typed error.
fn height_of(buffers: &[Buffer], offsets: &[u64]) -> Result<u64, PackError> {
    let mut height = 0u64;
    for (buffer, &offset) in buffers.iter().zip(offsets) {
        let top = offset.checked_add(buffer.size).ok_or(PackError::Overflow {
            what: "offset + size of a buffer",
        })?;
        height = height.max(top);
    }
    Ok(height)
}
