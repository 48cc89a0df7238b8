//! Completeness of the search with pinned buffers, against brute force.
//!
//! Invariant: the brute force tries every integer offset up to the sum of the sizes for every
//! free buffer, so it is the true optimum; the instances stay tiny (a few buffers of small
//! sizes) so that enumeration is fast.

use super::*;
use crate::Buffer;
use proptest::prelude::*;

/// The lowest height over every placement of the free buffers (integer offsets) around the
/// pinned ones, or `None` when the pins overlap. Only for tiny inputs.
fn brute_force(buffers: &[Buffer], pins: &[u64]) -> Option<u64> {
    fn go(
        buffers: &[Buffer],
        offsets: &mut Vec<u64>,
        k: usize,
        limit: u64,
        best: &mut Option<u64>,
    ) {
        if k == buffers.len() {
            let height = buffers
                .iter()
                .zip(offsets.iter())
                .map(|(b, &o)| o + b.size)
                .max()
                .unwrap_or(0);
            *best = Some(best.map_or(height, |h: u64| h.min(height)));
            return;
        }
        let fixed = offsets[k] != FREE;
        let range = if fixed {
            offsets[k]..offsets[k] + 1
        } else {
            0..limit
        };
        for o in range {
            let clash = (0..k).any(|j| {
                buffers[j].overlaps(&buffers[k])
                    && o < offsets[j] + buffers[j].size
                    && offsets[j] < o + buffers[k].size
            });
            if !clash {
                let keep = offsets[k];
                offsets[k] = o;
                go(buffers, offsets, k + 1, limit, best);
                offsets[k] = keep;
            }
        }
    }
    let limit: u64 = buffers.iter().map(|b| b.size).sum::<u64>()
        + pins
            .iter()
            .filter(|&&p| p != FREE)
            .max()
            .copied()
            .unwrap_or(0);
    let mut best = None;
    go(buffers, &mut pins.to_vec(), 0, limit + 1, &mut best);
    best
}

fn run(part: &Part, capacity: u64) -> (Outcome, Vec<u64>) {
    let interrupt = Interrupt {
        stop: None,
        cancel: None,
        outer: None,
    };
    let rank: Vec<u32> = (0..part.len() as u32).collect();
    let mut search = Search::new(part, capacity, &rank, 1_000_000, &interrupt);
    let outcome = search.run();
    (outcome, search.offsets)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// With some buffers pinned (at offsets where they do not overlap), the search fits
    /// at the brute-force optimum, keeps every pin and never overlaps; one below it, it
    /// proves that nothing fits.
    #[test]
    fn pinned_search_is_complete(
        raw in prop::collection::vec((0u64..6, 1u64..4, 1u64..4, 0u64..6, any::<bool>()), 1..6)
    ) {
        let mut buffers: Vec<Buffer> = raw
            .iter()
            .map(|&(start, len, size, _, _)| Buffer::new(start, start + len, size))
            .collect();
        buffers.sort_by_key(|b| b.start);
        let mut pins: Vec<u64> = raw
            .iter()
            .map(|&(_, _, _, at, pinned)| if pinned { at } else { FREE })
            .collect();
        // Drop pins that overlap an earlier pin.
        for k in 0..buffers.len() {
            if pins[k] == FREE {
                continue;
            }
            let clash = (0..k).any(|j| {
                pins[j] != FREE
                    && buffers[j].overlaps(&buffers[k])
                    && pins[k] < pins[j] + buffers[j].size
                    && pins[j] < pins[k] + buffers[k].size
            });
            if clash {
                pins[k] = FREE;
            }
        }
        let optimum = brute_force(&buffers, &pins).expect("pins do not overlap");
        let ids: Vec<u32> = (0..buffers.len() as u32).collect();
        let part = Part::with_pins(&buffers, &ids, &pins);
        let (outcome, offsets) = run(&part, optimum);
        prop_assert_eq!(outcome, Outcome::Found);
        for k in 0..buffers.len() {
            prop_assert!(offsets[k] + buffers[k].size <= optimum);
            if pins[k] != FREE {
                prop_assert_eq!(offsets[k], pins[k]);
            }
            for j in 0..k {
                prop_assert!(
                    !(buffers[j].overlaps(&buffers[k])
                        && offsets[k] < offsets[j] + buffers[j].size
                        && offsets[j] < offsets[k] + buffers[k].size),
                    "buffers {} and {} overlap", j, k
                );
            }
        }
        let (below, _) = run(&part, optimum - 1);
        prop_assert_eq!(below, Outcome::Exhausted);
    }
}
