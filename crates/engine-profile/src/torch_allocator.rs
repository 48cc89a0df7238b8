//! PyTorch's CUDA caching allocator as it counts memory: `torch.cuda.memory_allocated()` sums
//! the sizes of the blocks handed out, not the bytes asked for, so a tensor can cost more than
//! its bytes. [`CachingAllocator`] replays a sequence of allocations (no frees in between: an
//! engine creating a model's parameters one by one) with the allocator's default settings
//! (no `PYTORCH_CUDA_ALLOC_CONF`: no expandable segments, no power-of-two rounding) or a split
//! limit (`max_split_size_mb`, [`CachingAllocator::with_max_split`]) and gives the allocated
//! bytes, or the bytes of the segments it took from the device for them (what the device's
//! free memory loses, `cudaMemGetInfo` after `empty_cache`: no segment is wholly free when
//! nothing was freed).
//!
//! The constants are torch 2.10's (`torch/include/c10/core/AllocatorConfig.h:17-27` in the
//! wheel): `kMinBlockSize` 512, `kSmallSize` 1 MiB, `kSmallBuffer` 2 MiB, `kLargeBuffer` 20
//! MiB, `kMinLargeAlloc` 10 MiB, `kRoundLarge` 2 MiB. The rules that use them are in
//! `c10/cuda/CUDACachingAllocator.cpp`, which the wheel does not ship (C++ source): a request
//! is rounded up to 512 bytes (`round_size`); one of at most 1 MiB is served from the small
//! pool, a larger one from the large pool; a pool's smallest free block that fits is taken
//! (`get_free_block`, best fit), else a new segment of 2 MiB (small pool), 20 MiB (requests
//! under 10 MiB) or the request rounded up to 2 MiB (`get_allocation_size`); the block is split
//! when what remains is at least 512 bytes in the small pool and more than 1 MiB in the large
//! pool (`should_split`), else the whole block is handed out and counted. Under a split limit
//! a large-pool request of at least the limit is never split (`should_split`: `size <
//! max_split_size`), a request below it takes no free block of the limit or more, and one of
//! the limit or more takes no free block 20 MiB or more larger than itself
//! (`get_free_block`). The rules are not
//! citable from the wheel: they are stated as PyTorch's behaviour (docs/engines.md, "The
//! caching allocator"), and four printed vLLM weights figures agree with them, none without.
//!
//! Invariants: the allocated bytes are the sum of the handed-out blocks' sizes, each at least
//! the request rounded up to 512 bytes; the reserved bytes are the sum of the segments' sizes,
//! at least the allocated bytes; a block is never handed out twice; the same requests in the
//! same order give the same bytes; every size is checked u64 (an overflow is `None`).

/// All sizes are rounded to at least this (`kMinBlockSize`).
const MIN_BLOCK: u64 = 512;
/// The largest request of the small pool (`kSmallSize`).
const SMALL_SIZE: u64 = 1 << 20;
/// A small-pool segment (`kSmallBuffer`).
const SMALL_BUFFER: u64 = 2 << 20;
/// The segment of a large-pool request under `MIN_LARGE_ALLOC` (`kLargeBuffer`).
const LARGE_BUFFER: u64 = 20 << 20;
/// Large-pool requests from this size get a segment of their own size (`kMinLargeAlloc`).
const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// Larger segments are the request rounded up to this (`kRoundLarge`).
const ROUND_LARGE: u64 = 2 << 20;

use std::collections::BTreeSet;

/// A free block: its size, its segment (creation order, standing for the address) and its
/// offset in the segment, ordered as the allocator's `BlockComparatorSize` orders them (size,
/// then address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Free {
    size: u64,
    segment: usize,
    offset: u64,
}

/// The caching allocator's state after a sequence of allocations.
#[derive(Debug, Clone, Default)]
pub(crate) struct CachingAllocator {
    /// Free blocks of the small pool.
    small: BTreeSet<Free>,
    /// Free blocks of the large pool.
    large: BTreeSet<Free>,
    segments: usize,
    allocated: u64,
    /// The bytes of every segment taken from the device.
    reserved: u64,
    /// `max_split_size` (None: no limit, PyTorch's default).
    max_split: Option<u64>,
}

/// `x` rounded up to a multiple of `to` (`None` on overflow).
fn round_up(x: u64, to: u64) -> Option<u64> {
    x.checked_next_multiple_of(to)
}

impl CachingAllocator {
    /// An allocator whose large-pool blocks of `bytes` or more are never split
    /// (`PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N`, `bytes` = N MiB).
    pub(crate) fn with_max_split(bytes: u64) -> Self {
        Self {
            max_split: Some(bytes),
            ..Self::default()
        }
    }

    /// Allocates `bytes` (nothing for 0, as `torch.empty` of no element allocates nothing) and
    /// returns the size of the block handed out (`None` on overflow).
    pub(crate) fn malloc(&mut self, bytes: u64) -> Option<u64> {
        if bytes == 0 {
            return Some(0);
        }
        let size = round_up(bytes, MIN_BLOCK)?;
        let small = size <= SMALL_SIZE;
        let pool = if small {
            &mut self.small
        } else {
            &mut self.large
        };
        // The smallest free block that fits; on a tie the lower address.
        let fits = Free {
            size,
            segment: 0,
            offset: 0,
        };
        let max_split = self.max_split;
        let found = pool.range(fits..).next().copied().filter(|b| {
            // get_free_block under a split limit: no oversize block for a request below it,
            // none 20 MiB (kLargeBuffer) or more beyond a request at or above it.
            small
                || max_split.is_none_or(|m| {
                    if size < m {
                        b.size < m
                    } else {
                        b.size - size < LARGE_BUFFER
                    }
                })
        });
        let block = match found {
            Some(b) => {
                pool.remove(&b);
                b
            }
            None => {
                let segment = if small {
                    SMALL_BUFFER
                } else if size < MIN_LARGE_ALLOC {
                    LARGE_BUFFER
                } else {
                    round_up(size, ROUND_LARGE)?
                };
                self.segments += 1;
                self.reserved = self.reserved.checked_add(segment)?;
                Free {
                    size: segment,
                    segment: self.segments - 1,
                    offset: 0,
                }
            }
        };
        let remaining = block.size - size;
        let split = if small {
            remaining >= MIN_BLOCK
        } else {
            self.max_split.is_none_or(|m| size < m) && remaining > SMALL_SIZE
        };
        let handed = if split {
            pool.insert(Free {
                size: remaining,
                segment: block.segment,
                offset: block.offset.checked_add(size)?,
            });
            size
        } else {
            block.size
        };
        self.allocated = self.allocated.checked_add(handed)?;
        Some(handed)
    }

    /// The bytes of every block handed out (`torch.cuda.memory_allocated()`).
    pub(crate) fn allocated(&self) -> u64 {
        self.allocated
    }

    /// The bytes of every segment taken from the device (`torch.cuda.memory_reserved()`; with
    /// no frees, what `empty_cache` leaves and the device's free memory no longer holds).
    pub(crate) fn reserved(&self) -> u64 {
        self.reserved
    }
}

#[cfg(test)]
mod tests {
    use super::CachingAllocator;

    const MIB: u64 = 1 << 20;

    fn allocated(requests: &[u64]) -> u64 {
        let mut a = CachingAllocator::default();
        for &r in requests {
            a.malloc(r).unwrap();
        }
        a.allocated()
    }

    #[test]
    fn small_requests_cost_their_size_rounded_to_512() {
        // A 4-byte scalar takes a 512-byte block; 8,192 bytes are a multiple already.
        assert_eq!(allocated(&[4]), 512);
        assert_eq!(allocated(&[8192, 4, 1]), 8192 + 512 + 512);
        // Nothing for an empty tensor.
        assert_eq!(allocated(&[0]), 0);
    }

    #[test]
    fn a_large_request_keeps_a_remainder_of_at_most_1_mib() {
        // Qwen2.5-7B's qkv_proj, [3584 + 2 x 512, 3584] bf16 = 31.5 MiB: a 32 MiB segment,
        // 0.5 MiB left, not split: the block is the segment.
        assert_eq!(allocated(&[4608 * 3584 * 2]), 32 * MIB);
        // Its gate_up_proj, 259 MiB: 1 MiB left, not split (the split needs more than 1 MiB).
        assert_eq!(allocated(&[2 * 18944 * 3584 * 2]), 260 * MIB);
        // Its o_proj, 24.5 MiB: 1.5 MiB left in the 26 MiB segment, split off.
        assert_eq!(allocated(&[3584 * 3584 * 2]), 3584 * 3584 * 2);
    }

    #[test]
    fn requests_between_1_and_10_mib_share_20_mib_segments() {
        // 8 + 8 MiB in one 20 MiB segment (4 MiB left after the first, split; then 4 MiB > 1
        // MiB left again, split); the third 3.5 MiB leaves 0.5 MiB: it takes the rest.
        assert_eq!(allocated(&[8 * MIB, 8 * MIB]), 16 * MIB);
        assert_eq!(allocated(&[8 * MIB, 8 * MIB, 3 * MIB + MIB / 2]), 20 * MIB);
        // A 1.5 MiB request is served from the 1.5 MiB a 24.5 MiB tensor left in its segment:
        // 0 left, exactly its size.
        assert_eq!(allocated(&[24 * MIB + MIB / 2, MIB + MIB / 2]), 26 * MIB);
    }

    fn reserved(requests: &[u64]) -> u64 {
        let mut a = CachingAllocator::default();
        for &r in requests {
            a.malloc(r).unwrap();
        }
        a.reserved()
    }

    #[test]
    fn segments_hold_what_the_blocks_leave() {
        // Qwen2.5-7B's o_proj, 24.5 MiB: its block is 24.5 MiB but its segment 26 MiB, which
        // the device's free memory loses whole.
        assert_eq!(reserved(&[3584 * 3584 * 2]), 26 * MIB);
        // Two 8 MiB requests share one 20 MiB segment; a third does not fit the 4 MiB left and
        // takes a second: 40 MiB reserved for 24 MiB allocated.
        assert_eq!(reserved(&[8 * MIB, 8 * MIB]), 20 * MIB);
        assert_eq!(reserved(&[8 * MIB, 8 * MIB, 8 * MIB]), 40 * MIB);
        // 65 norms of 8 KiB share one 2 MiB small segment.
        assert_eq!(reserved(&[8192; 65]), 2 * MIB);
        // A 2 MiB multiple of 10 MiB or more is its own segment, exactly.
        assert_eq!(reserved(&[48 * MIB, 224 * MIB]), 272 * MIB);
        assert_eq!(reserved(&[]), 0);
    }

    #[test]
    fn under_a_split_limit_a_block_at_or_above_it_keeps_its_whole_segment() {
        let with_limit = |requests: &[u64]| {
            let mut a = CachingAllocator::with_max_split(20 * MIB);
            for &r in requests {
                a.malloc(r).unwrap();
            }
            a.allocated()
        };
        // Qwen2.5-7B's o_proj, 24.5 MiB: at or above the 20 MiB limit, its 26 MiB segment is not
        // split, where without a limit the 1.5 MiB rest is; the 1.5 MiB request then gets a
        // segment of its own (20 MiB, split: its size).
        assert_eq!(with_limit(&[3584 * 3584 * 2]), 26 * MIB);
        assert_eq!(
            with_limit(&[24 * MIB + MIB / 2, MIB + MIB / 2]),
            26 * MIB + MIB + MIB / 2
        );
        // Below the limit the rules are the default's: 12.5 MiB in a 14 MiB segment, 1.5 MiB
        // split off; 8 + 8 MiB share a 20 MiB segment.
        assert_eq!(with_limit(&[12 * MIB + MIB / 2]), 12 * MIB + MIB / 2);
        assert_eq!(with_limit(&[8 * MIB, 8 * MIB]), 16 * MIB);
        // A request below the limit takes no free block at or above it: none arises without
        // frees, so the 8 MiB request leaves the 12 MiB rest it would split for the next.
        assert_eq!(
            with_limit(&[8 * MIB, 12 * MIB, 12 * MIB + MIB / 2]),
            8 * MIB + 12 * MIB + 12 * MIB + MIB / 2
        );
    }
}
