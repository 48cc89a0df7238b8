//! Row intervals: the row counts over which the fusion plan cannot change.
//!
//! A plan depends on `n` only through which rules apply, and a rule applies on `lo..=hi`; so
//! cutting a range at every applicable rule's `lo` and `hi + 1` leaves intervals inside which
//! every `n` gets the same plan. Sweeps fuse once per interval.
//!
//! Invariant: the intervals are non-empty, sorted, disjoint and cover the range exactly.

use std::ops::RangeInclusive;

use crate::rules::{Rules, Settings};

/// The intervals of `range` inside which the applicable rules, hence the plan, do not change.
pub fn intervals(
    rules: &Rules,
    settings: &Settings,
    range: RangeInclusive<u64>,
) -> Vec<RangeInclusive<u64>> {
    let (start, end) = (*range.start(), *range.end());
    if start > end {
        return Vec::new();
    }
    let mut cuts: Vec<u64> = rules
        .rules()
        .iter()
        .filter(|r| r.holds(settings))
        .flat_map(|r| [Some(r.rows.0), r.rows.1.checked_add(1)])
        .flatten()
        .filter(|&c| c > start && c <= end)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = start;
    for c in cuts {
        out.push(lo..=c - 1);
        lo = c;
    }
    out.push(lo..=end);
    out
}

/// The interval of all row counts (1..=u64::MAX) that holds `n`.
pub(crate) fn interval_of(rules: &Rules, settings: &Settings, n: u64) -> RangeInclusive<u64> {
    let mut lo = 1;
    let mut hi = u64::MAX;
    for r in rules.rules().iter().filter(|r| r.holds(settings)) {
        for cut in [Some(r.rows.0), r.rows.1.checked_add(1)]
            .into_iter()
            .flatten()
        {
            if cut <= n {
                lo = lo.max(cut);
            } else {
                hi = hi.min(cut - 1);
            }
        }
    }
    lo..=hi
}
