//! The moves of the search and their undo: placing a buffer, raising a section (space given
//! up), the floors they lift, and the checks that prune after each move (cross-section
//! capacity, the stacking bound).
//!
//! Invariant: every change goes on the trail, so `undo_to` restores any earlier state exactly;
//! a check moves nothing: it only decides whether to prune, recording the sections its failure
//! depends on.

use super::{Branch, Move, Search, key};
use crate::part::FREE;

impl Search<'_> {
    /// The level the lowest unplaced buffer of `section` reaches at least when the point
    /// (`section`, `level`) stays empty; `None` when no solution leaves it empty.
    ///
    /// That buffer `u` rests on the end of a buffer below it. A placed one ends at most at
    /// `u`'s current floor (the highest level over its lifetime), so if that floor is above
    /// `level` it is a bound. Otherwise every section of `u`'s lifetime is at `level`, so `u`
    /// starts in `section` (the leftmost lowest) and rests on an unplaced buffer `w` live with
    /// it but not in `section` (there `u` is the lowest): `w` starts in a later section `t`
    /// of `u`'s lifetime and ends at `floor[t] + size(w)` or above.
    pub(super) fn raise_target(&mut self, section: usize, level: u64) -> Option<u64> {
        let part = self.part;
        self.work = self
            .work
            .saturating_add(part.covering(section).len() as u64);
        // The space given up must leave room for the buffers of the section.
        let limit = self.capacity.checked_sub(self.remaining[section])?;
        if limit <= level {
            return None;
        }
        let mut target = u64::MAX;
        for &u in part.covering(section) {
            let u = u as usize;
            if self.placed[u] {
                continue;
            }
            if part.pin[u] != FREE {
                // It sits exactly at its pin (at or above `level`, since its floor is).
                target = target.min(part.pin[u]);
                continue;
            }
            let floor = self.bfloor[u];
            if floor > level {
                target = target.min(floor);
                continue;
            }
            self.work = self
                .work
                .saturating_add(part.graph.neighbours(u).len() as u64);
            for &w in part.graph.neighbours(u) {
                let w = w as usize;
                let (low, high) = part.span(w);
                if self.placed[w] || (low <= section && section < high) {
                    continue;
                }
                target = target.min(self.least_level(w).saturating_add(part.size[w]));
            }
        }
        (target <= limit).then_some(target)
    }

    /// Places `buffer` at `level` (every section it covers is at `level`); false when a
    /// section it covers can no longer hold its unplaced buffers (the caller undoes).
    pub(super) fn place(&mut self, buffer: usize, level: u64) -> bool {
        let part = self.part;
        let size = part.size[buffer];
        let top = level + size;
        let (low, high) = part.span(buffer);
        self.offsets[buffer] = level;
        self.placed[buffer] = true;
        self.trail.push(Move::Place {
            buffer: buffer as u32,
            level,
        });
        for c in &mut self.crossing[low..high - 1] {
            *c -= 1;
        }
        let mut fits = true;
        for s in low..high {
            self.floor[s] = top;
            self.remaining[s] -= size;
            self.count[s] -= 1;
            if fits && top + self.remaining[s] > self.capacity {
                fits = false;
                self.failed = (s as u32, s as u32 + 1);
            }
        }
        self.update_keys(low, high);
        self.lift_floors(part.graph.neighbours(buffer), top, (low, high), fits)
    }

    /// Raises to `level` the floor of every unplaced buffer of `ids` below it (on the trail)
    /// and sets `self.check` to `sections` widened by their spans. Returns `fits`, made false
    /// (with the failure recorded, unless it already was) when one of them is pinned below
    /// `level`: it can no longer sit at its pin.
    pub(super) fn lift_floors(
        &mut self,
        ids: &[u32],
        level: u64,
        sections: (usize, usize),
        mut fits: bool,
    ) -> bool {
        let part = self.part;
        let (mut from, mut to) = sections;
        self.work = self.work.saturating_add(ids.len() as u64);
        for &w in ids {
            let w = w as usize;
            if !self.placed[w] && self.bfloor[w] < level {
                self.trail.push(Move::Floor {
                    buffer: w as u32,
                    old: self.bfloor[w],
                });
                self.bfloor[w] = level;
                from = from.min(part.low[w] as usize);
                to = to.max(part.high[w] as usize);
                if fits && level > part.pin[w] {
                    fits = false;
                    self.failed = (part.low[w], part.high[w]);
                }
            }
        }
        self.check = (from, to);
        self.check_core = sections;
        fits
    }

    /// The lowest level an unplaced buffer can take: its floor, or its pin when pinned.
    pub(super) fn least_level(&self, buffer: usize) -> u64 {
        let pin = self.part.pin[buffer];
        if pin == FREE {
            self.bfloor[buffer]
        } else {
            pin.max(self.bfloor[buffer])
        }
    }

    /// The stacking bound in every section near `[low, high)` (the sections of the unplaced
    /// buffers live there, whose floors a move there can raise): in a section, the unplaced
    /// buffers whose floor is at least `x` all lie between `x` and the capacity.
    ///
    /// The sections the move itself changed come first, then the others; the check stops
    /// after `Params::stack_check_cells` (section, buffer) cells. A check is only a pruning,
    /// so stopping early is sound: it only prunes less.
    pub(super) fn stacks_fit(&mut self) -> bool {
        let part = self.part;
        let (from, to) = self.check;
        let (core_from, core_to) = self.check_core;
        let mut cells = 0usize;
        for t in (core_from..core_to)
            .chain(from..core_from)
            .chain(core_to..to)
        {
            if self.count[t] < 2 {
                continue;
            }
            cells += part.covering(t).len();
            self.work = self.work.saturating_add(part.covering(t).len() as u64);
            if cells > self.check_cells {
                return true;
            }
            let room = self.capacity.saturating_sub(self.remaining[t]);
            let mut highest = 0u64;
            let mut lowest = u64::MAX;
            for &w in part.covering(t) {
                let w = w as usize;
                if !self.placed[w] {
                    let least = self.least_level(w);
                    highest = highest.max(least);
                    lowest = lowest.min(least);
                }
            }
            if lowest > room {
                self.failed = part.reach[t];
                return false;
            }
            if highest <= room {
                continue;
            }
            // Only floors above `room` can fail (the sizes with a floor at least `x` never
            // exceed `remaining`), and only buffers with such floors count towards them.
            self.scratch.clear();
            let (mut stacked_all, mut least_above) = (0u64, u64::MAX);
            for &w in part.covering(t) {
                let w = w as usize;
                if !self.placed[w] {
                    let least = self.least_level(w);
                    if least > room {
                        self.scratch.push((least, part.size[w]));
                        stacked_all += part.size[w];
                        least_above = least_above.min(least);
                    }
                }
            }
            // The bound at the k-th highest floor is at most `highest + stacked_all` and, at
            // the lowest, exactly `least_above + stacked_all`: most sections are decided
            // without sorting.
            if least_above.saturating_add(stacked_all) > self.capacity {
                self.failed = part.reach[t];
                return false;
            }
            if highest.saturating_add(stacked_all) <= self.capacity {
                continue;
            }
            self.scratch.sort_unstable_by(|a, b| b.cmp(a));
            let mut stacked = 0u64;
            for &(floor, size) in &self.scratch {
                stacked += size;
                if floor + stacked > self.capacity {
                    self.failed = part.reach[t];
                    return false;
                }
            }
        }
        true
    }

    /// Raises `section` to `level` (checked by `raise_target` to leave room for the rest);
    /// false when a buffer pinned below `level` is live there (the caller undoes).
    pub(super) fn raise(&mut self, section: usize, level: u64) -> bool {
        self.trail.push(Move::Raise {
            section: section as u32,
            old: self.floor[section],
        });
        self.floor[section] = level;
        self.update_keys(section, section + 1);
        let part = self.part;
        self.lift_floors(part.covering(section), level, (section, section + 1), true)
    }

    /// Branch on the tightest lowest section instead of the leftmost (rebuilds the keys).
    pub(crate) fn set_mode(&mut self, mode: Branch) {
        self.mode = mode;
        let sections = self.part.sections();
        self.update_keys(0, sections);
    }

    pub(super) fn update_keys(&mut self, low: usize, high: usize) {
        let (floor, count, remaining, mode) =
            (&self.floor, &self.count, &self.remaining, self.mode);
        self.tree.update(low, high, |s| {
            key(mode, count[s], floor[s], remaining[s], s)
        });
    }

    pub(super) fn undo_to(&mut self, mark: usize) {
        let part = self.part;
        while self.trail.len() > mark {
            let Some(m) = self.trail.pop() else { break };
            let (low, high) = match m {
                Move::Place { buffer, level } => {
                    let buffer = buffer as usize;
                    let size = part.size[buffer];
                    let (low, high) = part.span(buffer);
                    self.placed[buffer] = false;
                    for c in &mut self.crossing[low..high - 1] {
                        *c += 1;
                    }
                    for s in low..high {
                        self.floor[s] = level;
                        self.remaining[s] += size;
                        self.count[s] += 1;
                    }
                    (low, high)
                }
                Move::Floor { buffer, old } => {
                    self.bfloor[buffer as usize] = old;
                    continue;
                }
                Move::Raise { section, old } => {
                    self.floor[section as usize] = old;
                    (section as usize, section as usize + 1)
                }
            };
            self.update_keys(low, high);
        }
    }
}
