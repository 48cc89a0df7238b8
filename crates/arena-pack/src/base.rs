//! The base layer of a large part: its long-lived buffers, placed first at the bottom.
//!
//! Buffers live over a long stretch of the program (kept outputs, saved activations) are what
//! defeats a bottom-up search: one can only sit where the skyline is level over its whole
//! lifetime. Those live in more than 1/`base_fraction` of the part's sections (or in a quarter
//! of the minimum and reaching its first or last step) go first, placed by the start-order
//! sweep at the lowest gap, earliest start first and longest first on ties: for lifetimes that
//! end together, as kept outputs do, that is a staircase with no gap. A heuristic choice: a
//! search above a base layer proves nothing when it fails.
//!
//! The *peak layer* (asked for by `peak`) adds the buffers live at a peak section of the part
//! (where the live sizes add up to its bound) that span more sections than a window holds
//! buffers (`Params::window`): the peak decides the height, and at a unique peak there is no
//! byte to spare, but the windows before it fix these buffers' offsets without seeing it
//! (on a million-buffer training step with recomputation, 64 saved activations live at the
//! peak were placed by windows up to 7,000 steps earlier, and the peak's window failed at the
//! bound with every merge back). Placed first, the nested saved activations of a training
//! step stack with no gap, and the windows fill around and above them.
//!
//! *Compact at the peak* (asked for by `compact`; issue 35, fifth session): the base buffers
//! live at the part's peak step are swept first, among themselves, and the others are placed
//! around them (start order, lowest gap). The start-order sweep alone places a buffer at the
//! lowest gap when it starts, which can be above a base buffer that ends before the peak: on
//! `synth::training(1, 40_000, true)` the base buffers at the peak held 757 MB under a top of
//! 833 MB, and a window's buffers rest above the base tops over their lifetimes outside the
//! window, so no buffer live at the peak could use the 75 MB of holes and the peak did not fit
//! at the bound. Compact, they fill `[0, their sum)` there whenever they nest (a training
//! step's saved activations do).
//!
//! Invariants: the base buffers' placement is valid (the sweep never overlaps two buffers that
//! share a step); [`BaseLayer::least`] over a lifetime is the highest top of the base buffers
//! live in it, so every other buffer placed at or above it overlaps no base buffer.

use crate::heuristic::{self, Fit, UNPLACED};
use crate::interval::MaxOverTime;
use crate::sweep::sweep;
use crate::{Buffer, Params};

/// A part split into its base layer (placed) and the rest.
pub(crate) struct BaseLayer {
    /// The base buffers, in the order of the part's `ids`.
    pub(crate) ids: Vec<u32>,
    /// Their offsets.
    pub(crate) offsets: Vec<u64>,
    /// The other buffers, in the order of the part's `ids`.
    pub(crate) rest: Vec<u32>,
    /// The highest top of the base buffers live at each step.
    tops: MaxOverTime,
}

impl BaseLayer {
    /// Splits the buffers `ids` (live, sorted by start) and places the base layer; with
    /// `peak`, the *peak layer* joins it, with `compact` those live at the peak step are placed
    /// first (see the module header).
    pub(crate) fn new(
        buffers: &[Buffer],
        ids: &[u32],
        params: &Params,
        peak: bool,
        compact: bool,
    ) -> BaseLayer {
        let mut points: Vec<u64> = ids
            .iter()
            .flat_map(|&i| [buffers[i as usize].start, buffers[i as usize].end])
            .collect();
        points.sort_unstable();
        points.dedup();
        let section_of = |t: u64| points.partition_point(|&p| p < t);
        let sections = points.len().saturating_sub(1);
        let threshold = (sections / params.base_fraction.max(1)).max(params.min_base_sections);
        let (first, last) = (points.first().copied(), points.last().copied());
        // `peaks_before[s]`: the peak sections before section `s` (none without `peak`).
        let peaks_before = if peak {
            peak_sections(buffers, ids, sections, &section_of)
        } else {
            vec![0; sections + 1]
        };
        let is_base = |i: u32| {
            let b = &buffers[i as usize];
            let (low, high) = (section_of(b.start), section_of(b.end));
            let span = high - low;
            span > threshold
                || (span > params.min_base_sections / 4
                    && (Some(b.start) == first || Some(b.end) == last))
                || (span > params.window && peaks_before[high] > peaks_before[low])
        };
        let (base, rest): (Vec<u32>, Vec<u32>) = ids.iter().partition(|&&i| is_base(i));
        let local: Vec<Buffer> = base.iter().map(|&i| buffers[i as usize]).collect();
        let mut order: Vec<u32> = (0..base.len() as u32).collect();
        order.sort_unstable_by_key(|&k| {
            let b = &local[k as usize];
            (b.start, std::cmp::Reverse(b.end), k)
        });
        let mut offsets = vec![0u64; base.len()];
        if !(compact && compact_at_peak(buffers, ids, &local, &order, &mut offsets)) {
            sweep(&local, &order, Fit::Lowest, &mut offsets);
        }
        let held: Vec<(u64, u64, u64)> = local
            .iter()
            .zip(&offsets)
            .map(|(b, &o)| (b.start, b.end, o + b.size))
            .collect();
        BaseLayer {
            ids: base,
            offsets,
            rest,
            tops: MaxOverTime::new(&held),
        }
    }

    /// Whether some buffer is in the base layer with `peak` and not without it.
    pub(crate) fn differs(&self, other: &BaseLayer) -> bool {
        self.ids.len() != other.ids.len()
    }

    /// The same base layer with time mirrored (`t -> horizon - t`, `horizon` at or after every
    /// end), for a windowed run that goes back in time from the peak; its `rest` is empty (that
    /// run is given its own buffers).
    pub(crate) fn mirrored(&self, buffers: &[Buffer], horizon: u64) -> BaseLayer {
        let held: Vec<(u64, u64, u64)> = self
            .ids
            .iter()
            .zip(&self.offsets)
            .map(|(&i, &o)| {
                let b = buffers[i as usize].mirrored(horizon);
                (b.start, b.end, o + b.size)
            })
            .collect();
        BaseLayer {
            ids: self.ids.clone(),
            offsets: self.offsets.clone(),
            rest: Vec::new(),
            tops: MaxOverTime::new(&held),
        }
    }

    /// The lowest offset a buffer live on `[start, end)` can take above the base layer.
    pub(crate) fn least(&self, start: u64, end: u64) -> u64 {
        self.tops.max(start, end)
    }

    /// Whether some base buffer ends above `capacity`.
    pub(crate) fn exceeds(&self, buffers: &[Buffer], capacity: u64) -> bool {
        self.ids
            .iter()
            .zip(&self.offsets)
            .any(|(&i, &o)| o.saturating_add(buffers[i as usize].size) > capacity)
    }
}

/// The base buffers `local` placed with those live at the part's peak step first (the first
/// step where the sizes of the buffers of `ids` live add up to their most), by the start-order
/// sweep among themselves, then the others around them (start order, lowest gap); false, with
/// nothing written, when no base buffer is live there or a top would overflow.
fn compact_at_peak(
    buffers: &[Buffer],
    ids: &[u32],
    local: &[Buffer],
    order: &[u32],
    offsets: &mut [u64],
) -> bool {
    let when = crate::bounds::peak_step(buffers, ids);
    let (first, then): (Vec<u32>, Vec<u32>) = order.iter().partition(|&&k| {
        let b = &local[k as usize];
        b.start <= when && when < b.end
    });
    if first.is_empty() || then.is_empty() {
        return false;
    }
    let mut placed = vec![UNPLACED; local.len()];
    if sweep(local, &first, Fit::Lowest, &mut placed).is_none()
        || heuristic::best_fit_onto(local, &then, Fit::Lowest, &mut placed, &[], None).is_none()
    {
        return false;
    }
    offsets.copy_from_slice(&placed);
    true
}

/// Per section `s` (and one past the last), the number of *peak* sections before it: those
/// where the sizes of the buffers of `ids` live add up to their most (the part's bound).
fn peak_sections(
    buffers: &[Buffer],
    ids: &[u32],
    sections: usize,
    section_of: &impl Fn(u64) -> usize,
) -> Vec<u32> {
    // Sizes entering and leaving at each section; i128 since no sum can overflow it (at most
    // 2^32 buffers of less than 2^64 bytes).
    let mut delta = vec![0i128; sections + 1];
    for &i in ids {
        let b = &buffers[i as usize];
        delta[section_of(b.start)] += i128::from(b.size);
        delta[section_of(b.end)] -= i128::from(b.size);
    }
    let mut live = 0i128;
    let lives: Vec<i128> = delta[..sections]
        .iter()
        .map(|d| {
            live += d;
            live
        })
        .collect();
    let most = lives.iter().copied().max().unwrap_or(0);
    let mut before = vec![0u32; sections + 1];
    for (s, &l) in lives.iter().enumerate() {
        before[s + 1] = before[s] + u32::from(l == most);
    }
    before
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six nested saved activations (each started later ends earlier, as a training step's
    /// forward saves them for its backward) under a stream of one-step temporaries: none is
    /// long enough for the plain base layer; live at the peak and longer than a window's
    /// sections, they form the peak layer, stacked in start order with no gap, and the
    /// temporaries at the peak rest on top of it.
    #[test]
    fn the_long_buffers_live_at_the_peak_form_the_peak_layer() {
        let mut buffers: Vec<Buffer> = (0..6)
            .map(|k| Buffer::new(5 + 10 * k, 195 - 10 * k, 4))
            .collect();
        buffers.extend((0..200).map(|t| Buffer::new(t, t + 1, 1)));
        let mut ids: Vec<u32> = (0..buffers.len() as u32).collect();
        ids.sort_by_key(|&i| (buffers[i as usize].start, i));
        let params = Params::default();
        let plain = BaseLayer::new(&buffers, &ids, &params, false, false);
        assert!(plain.ids.is_empty());
        let peak = BaseLayer::new(&buffers, &ids, &params, true, false);
        assert_eq!(peak.ids, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(peak.offsets, vec![0, 4, 8, 12, 16, 20]);
        assert_eq!(peak.rest.len(), 200);
        assert!(peak.differs(&plain));
        // At the peak (steps 55-144) the temporaries sit on the six; before it, lower.
        assert_eq!(peak.least(100, 101), 24);
        assert_eq!(peak.least(10, 11), 4);
        // Compact at the peak changes nothing here: every base buffer is live at the peak.
        let compact = BaseLayer::new(&buffers, &ids, &params, true, true);
        assert_eq!(compact.offsets, peak.offsets);
        // A buffer live at the peak but no longer than a window's sections stays out.
        buffers.push(Buffer::new(60, 70, 2));
        ids.push(buffers.len() as u32 - 1);
        ids.sort_by_key(|&i| (buffers[i as usize].start, i));
        let peak = BaseLayer::new(&buffers, &ids, &params, true, false);
        assert_eq!(peak.ids.len(), 6);
    }

    /// A base buffer from the first step that ends before the peak (`x`) and a long one live at
    /// the peak that starts after it (`y`), under one-step temporaries and a bump at step 150
    /// (the peak): the start-order sweep puts `y` on `x` (a hole under `y` at the peak);
    /// compact at the peak puts `y` at the bottom and `x` on it.
    #[test]
    fn compact_at_the_peak_leaves_no_hole_under_the_peak() {
        let mut buffers = vec![Buffer::new(0, 100, 1), Buffer::new(10, 195, 4)];
        buffers.extend((0..200).map(|t| Buffer::new(t, t + 1, 1)));
        buffers.push(Buffer::new(150, 151, 3));
        let mut ids: Vec<u32> = (0..buffers.len() as u32).collect();
        ids.sort_by_key(|&i| (buffers[i as usize].start, i));
        let params = Params::default();
        let swept = BaseLayer::new(&buffers, &ids, &params, true, false);
        assert_eq!(swept.ids, vec![0, 1]);
        assert_eq!(swept.offsets, vec![0, 1]);
        assert_eq!(swept.least(150, 151), 5);
        let compact = BaseLayer::new(&buffers, &ids, &params, true, true);
        assert_eq!(compact.ids, vec![0, 1]);
        assert_eq!(compact.offsets, vec![4, 0]);
        assert_eq!(compact.least(150, 151), 4);
        assert_eq!(compact.least(5, 6), 5);
        // Mirrored in time, the same tops over the mirrored steps.
        let mirrored = compact.mirrored(&buffers, 200);
        assert_eq!(mirrored.least(49, 50), 4);
        assert_eq!(mirrored.least(150, 151), 5);
        assert!(mirrored.rest.is_empty());
    }
}
