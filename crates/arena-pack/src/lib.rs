//! Arena packing (dynamic storage allocation): give every buffer an offset so that buffers live
//! at the same time never share an address (2-D packing, time x address). No dependency on the
//! planner: a compiler that only needs a packer takes this crate alone (docs/packing.md).
//!
//! Invariants shared by every algorithm below:
//! - A buffer is live on the half-open step interval `[start, end)`. A buffer with `size == 0` or
//!   an empty interval (`start == end`) is *inert*: it sits at offset 0 and conflicts with nothing.
//! - Every offset produced here is 0 or the end (`offset + size`) of another buffer placed below
//!   it, so when all sizes are multiples of an alignment `A`, all offsets are too.
//! - Size arithmetic is checked `u64`: an overflow is a [`PackError`], never a wrap or a panic.
//! - Nothing reads files, the environment or a clock; the same input gives the same output
//!   whatever the thread count (the only non-deterministic input is the caller's `stop` poll).
//!
//! ```
//! use arena_pack::{Buffer, Goal, Limits, Proof, lower_bound, solve, unshared, validate};
//!
//! // Four buffers of a five-step program: (first step, step after its last, bytes).
//! let buffers = [
//!     Buffer::new(0, 2, 64),
//!     Buffer::new(1, 3, 32),
//!     Buffer::new(2, 4, 64),
//!     Buffer::new(3, 5, 32),
//! ];
//! // Without reuse they take 192 bytes; at most 96 are live at one step, so no arena is
//! // smaller than 96 bytes ...
//! assert_eq!((unshared(&buffers).unwrap(), lower_bound(&buffers).unwrap()), (192, 96));
//! // ... and the packer reaches it, proven optimal: the third buffer reuses the first one's
//! // bytes, the fourth the second one's.
//! let solution = solve(&buffers, Goal::Minimize, &Limits::default()).unwrap();
//! assert_eq!((solution.placement.height, solution.proof), (96, Proof::Optimal));
//! assert_eq!(solution.placement.offsets[0], solution.placement.offsets[2]);
//! // An independent validator checks any placement and returns its height.
//! assert_eq!(validate(&buffers, &solution.placement.offsets, Some(96)).unwrap(), 96);
//! ```

#![warn(missing_docs)]

mod bounds;
/// The MiniMalloc CSV format: parse problems, write solutions.
pub mod csv;

mod base;
mod heuristic;
mod interval;
mod params;
mod part;
mod partition;
mod race;
mod scale;
mod search;
mod solve;
mod stacking;
mod sweep;
pub mod synth;

mod validate;
mod window;

pub use bounds::{lower_bound, unshared};
pub use heuristic::heuristic;
pub use params::Params;
pub use solve::{Goal, Limits, Proof, Solution, solve, solve_with};
pub use stacking::Stacking;
pub use validate::validate;

/// A buffer live on the half-open step interval `[start, end)`, needing `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// First step the buffer is live at.
    pub start: u64,
    /// First step after its lifetime (exclusive).
    pub end: u64,
    /// Bytes it needs.
    pub size: u64,
}

impl Buffer {
    /// A buffer live on `[start, end)` needing `size` bytes.
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

    /// The buffer in time mirrored at `horizon` (at or after its end): `[start, end)` becomes
    /// `[horizon - end, horizon - start)`. Two buffers share a step exactly when their mirrors
    /// do, so a placement valid for a set is valid for its mirror, at the same height.
    pub(crate) fn mirrored(&self, horizon: u64) -> Buffer {
        Buffer::new(
            horizon.saturating_sub(self.end),
            horizon.saturating_sub(self.start),
            self.size,
        )
    }
}

/// Offsets, one per buffer (same order as the input), and the height = max(offset + size)
/// over the buffers (0 if there are none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// The offset of each buffer, in input order.
    pub offsets: Vec<u64>,
    /// `max(offset + size)`: the arena size this placement needs.
    pub height: u64,
}

/// Why a packing computation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PackError {
    /// A sum of sizes (or an offset + size) does not fit in `u64`.
    #[error("size overflow: {what} exceeds u64::MAX bytes")]
    Overflow {
        /// Which sum overflowed.
        what: &'static str,
    },
    /// An input slice has the wrong length.
    #[error("length mismatch: {what} has {found} entries but there are {expected} buffers")]
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The number of buffers.
        expected: usize,
        /// Its length.
        found: usize,
    },
    /// A buffer with `start > end`.
    #[error("buffer {index} ends before it starts ([{start}, {end})): give it end >= start")]
    InvertedInterval {
        /// The buffer's index.
        index: usize,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
    },
}

/// Why a placement is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Not one offset per buffer.
    #[error("{found} offsets for {expected} buffers: give exactly one offset per buffer")]
    LengthMismatch {
        /// The number of buffers.
        expected: usize,
        /// The number of offsets.
        found: usize,
    },
    /// Two buffers live at a common step share an address.
    #[error(
        "buffers {first} and {second} overlap: buffer {first} lives on [{first_start}, {first_end}) at \
         bytes [{first_offset}, {first_top}), buffer {second} lives on [{second_start}, {second_end}) at \
         bytes [{second_offset}, {second_top})"
    )]
    Overlap {
        /// The lower index of the pair.
        first: usize,
        /// Its lifetime's start.
        first_start: u64,
        /// Its lifetime's end.
        first_end: u64,
        /// Its offset.
        first_offset: u64,
        /// Its offset + size.
        first_top: u64,
        /// The higher index of the pair.
        second: usize,
        /// Its lifetime's start.
        second_start: u64,
        /// Its lifetime's end.
        second_end: u64,
        /// Its offset.
        second_offset: u64,
        /// Its offset + size.
        second_top: u64,
    },
    /// A buffer ends above the capacity.
    #[error("buffer {index} at bytes [{offset}, {top}) exceeds the capacity of {capacity} bytes")]
    AboveCapacity {
        /// The buffer's index.
        index: usize,
        /// Its offset.
        offset: u64,
        /// Its offset + size.
        top: u64,
        /// The capacity asked for.
        capacity: u64,
    },
    /// A buffer's offset + size does not fit in `u64`.
    #[error("buffer {index}: offset {offset} + size {size} overflows u64")]
    Overflow {
        /// The buffer's index.
        index: usize,
        /// Its offset.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// A buffer with `start > end`.
    #[error("buffer {index} ends before it starts ([{start}, {end})): give it end >= start")]
    InvertedInterval {
        /// The buffer's index.
        index: usize,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
    },
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
