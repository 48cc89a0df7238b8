//! Exact search for a placement within a capacity (the ideas of MiniMalloc, Moffitt, ASPLOS
//! 2023, implemented from the paper's description).
//!
//! The search builds *canonical* solutions only: buffers are placed in increasing order of
//! (offset, start), each at its *floor* (the highest end among the placed buffers sharing a step
//! with it). Any valid placement can be lowered into such a form without growing, and the form
//! also satisfies the dominance rule below, so exhausting this space proves that nothing fits.
//! Pruning, all sound for that space:
//! - *dominance*: the next offset must stay below `floor(u) + size(u)` for every unplaced `u`,
//!   else `u` fits in a gap under it that nothing else can use (a better solution places it
//!   there first);
//! - *cross-section inference*: in every time section, the unplaced buffers must fit between
//!   max(section floor, last offset) and the capacity;
//! - *forced moves*: when the lowest candidate shares no step with any unplaced buffer, placing
//!   it first loses nothing, so it is not branched on;
//! - *interchangeable buffers* (same lifetime and size) are tried once per node;
//! - *decomposition*: when the unplaced buffers split into groups no lifetime joins, each group
//!   is searched alone and a failure in one fails the node without retrying the others.
//!
//! Candidates are tried in increasing (floor, static rank). The budget counts search nodes, so a
//! run is a deterministic function of its input; `stop` and the cancel flag only cut it short.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::Buffer;
use super::overlap::OverlapGraph;

/// One independent part of an instance, in local indices (sorted by start time).
pub(crate) struct Part {
    /// Global index of each local buffer.
    pub(crate) ids: Vec<u32>,
    start: Vec<u64>,
    end: Vec<u64>,
    size: Vec<u64>,
    /// Each buffer covers the sections `[section_low, section_high)`.
    section_low: Vec<u32>,
    section_high: Vec<u32>,
    /// Sum of the sizes live in each section.
    totals: Vec<u64>,
    graph: OverlapGraph,
}

impl Part {
    /// The part made of `ids` (live buffers, sorted by start).
    pub(crate) fn new(buffers: &[Buffer], ids: &[u32]) -> Part {
        let local: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
        let mut points: Vec<u64> = local.iter().flat_map(|b| [b.start, b.end]).collect();
        points.sort_unstable();
        points.dedup();
        let section_of = |t: u64| points.partition_point(|&p| p < t) as u32;
        let section_low: Vec<u32> = local.iter().map(|b| section_of(b.start)).collect();
        let section_high: Vec<u32> = local.iter().map(|b| section_of(b.end)).collect();
        let mut totals = vec![0u64; points.len().saturating_sub(1)];
        for (k, b) in local.iter().enumerate() {
            for total in &mut totals[section_low[k] as usize..section_high[k] as usize] {
                // Callers check `lower_bound` first, so section sums cannot overflow.
                *total += b.size;
            }
        }
        Part {
            ids: ids.to_vec(),
            start: local.iter().map(|b| b.start).collect(),
            end: local.iter().map(|b| b.end).collect(),
            size: local.iter().map(|b| b.size).collect(),
            section_low,
            section_high,
            totals,
            graph: OverlapGraph::new(&local),
            // `local` is in start order, so local index order is start order.
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn buffer(&self, local: usize) -> Buffer {
        Buffer::new(self.start[local], self.end[local], self.size[local])
    }

    /// The largest section sum: no placement of the part is lower.
    pub(crate) fn lower_bound(&self) -> u64 {
        self.totals.iter().copied().max().unwrap_or(0)
    }
}

/// How a search run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every buffer placed within the capacity.
    Found,
    /// The whole space was explored: nothing fits.
    Exhausted,
    /// The budget ran out, `stop` returned true, or a better-ranked run succeeded.
    Aborted,
}

/// Cuts a run short from outside: `stop` (wall clock) and a shared cancel flag that holds the
/// lowest index of a run that already succeeded (runs with a higher index give up).
pub(crate) struct Interrupt<'a> {
    pub(crate) stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    pub(crate) cancel: Option<(&'a AtomicUsize, usize)>,
}

impl Interrupt<'_> {
    fn fired(&self) -> bool {
        if let Some((flag, index)) = self.cancel
            && flag.load(Ordering::Relaxed) < index
        {
            return true;
        }
        self.stop.is_some_and(|stop| stop())
    }
}

enum Undo {
    BufferFloor(u32, u64),
    SectionFloor(u32, u64),
    Placed(u32),
}

pub(crate) struct Search<'a> {
    part: &'a Part,
    capacity: u64,
    rank: &'a [u32],
    budget: u64,
    interrupt: &'a Interrupt<'a>,
    pub(crate) steps: u64,
    pub(crate) offsets: Vec<u64>,
    placed: Vec<bool>,
    floor: Vec<u64>,
    section_floor: Vec<u64>,
    section_total: Vec<u64>,
    section_count: Vec<u32>,
    trail: Vec<Undo>,
    /// Stack of member lists (each node's unplaced buffers, in start order).
    lists: Vec<u32>,
    candidates: Vec<(u64, u32, u32)>,
    /// Scratch for the section bound: sizes stacked so far per section, members by floor.
    section_stack: Vec<u64>,
    by_floor: Vec<(u64, u32)>,
    /// Branch only on the buffers at the lowest floor of all unplaced ones (MiniMalloc's
    /// rule). Not shown complete here, so exhausting it proves nothing; it reaches tight
    /// solutions much sooner.
    pub(crate) lowest_only: bool,
}

impl<'a> Search<'a> {
    /// A search of `part` within `capacity`, trying candidates by increasing `rank` (one entry
    /// per local buffer), for at most `budget` nodes.
    pub(crate) fn new(
        part: &'a Part,
        capacity: u64,
        rank: &'a [u32],
        budget: u64,
        interrupt: &'a Interrupt<'a>,
    ) -> Search<'a> {
        let n = part.len();
        let mut section_count = vec![0u32; part.totals.len()];
        for k in 0..n {
            for count in
                &mut section_count[part.section_low[k] as usize..part.section_high[k] as usize]
            {
                *count += 1;
            }
        }
        Search {
            part,
            capacity,
            rank,
            budget,
            interrupt,
            steps: 0,
            offsets: vec![0; n],
            placed: vec![false; n],
            floor: vec![0; n],
            section_floor: vec![0; part.totals.len()],
            section_total: part.totals.clone(),
            section_count,
            trail: Vec::new(),
            lists: Vec::new(),
            candidates: Vec::new(),
            section_stack: vec![0; part.totals.len()],
            by_floor: Vec::new(),
            lowest_only: false,
        }
    }

    /// Runs the search; on `Found`, `offsets` holds a placement within the capacity.
    pub(crate) fn run(&mut self) -> Outcome {
        let n = self.part.len();
        if (0..n).any(|k| self.part.size[k] > self.capacity)
            || self.part.lower_bound() > self.capacity
        {
            return Outcome::Exhausted;
        }
        self.lists.clear();
        self.lists.extend(0..n as u32);
        self.solve_groups(0, n, 0, None)
    }

    /// Searches the members `lists[from..to]`, split into the groups no lifetime joins; each
    /// group must succeed. `last` is the (offset, start) of the last placed buffer.
    fn solve_groups(
        &mut self,
        from: usize,
        to: usize,
        last_offset: u64,
        last_start: Option<u64>,
    ) -> Outcome {
        let mark = self.trail.len();
        let mut group_start = from;
        let mut reach = 0u64;
        for k in from..=to {
            let split = k == to || {
                let m = self.lists[k] as usize;
                k > group_start && self.part.start[m] >= reach
            };
            if split && k > group_start {
                match self.node(group_start, k, last_offset, last_start) {
                    Outcome::Found => {}
                    failed => {
                        self.undo_to(mark);
                        return failed;
                    }
                }
                group_start = k;
            }
            if k < to {
                let m = self.lists[k] as usize;
                reach = if k == group_start {
                    self.part.end[m]
                } else {
                    reach.max(self.part.end[m])
                };
            }
        }
        Outcome::Found
    }

    /// One search node over a group of members `lists[from..to]` (nonempty, one group).
    fn node(
        &mut self,
        from: usize,
        to: usize,
        last_offset: u64,
        last_start: Option<u64>,
    ) -> Outcome {
        self.steps += 1;
        if self.steps > self.budget || (self.steps.is_multiple_of(1024) && self.interrupt.fired()) {
            return Outcome::Aborted;
        }
        let part = self.part;
        let capacity = self.capacity;

        // Dominance cutoff and the section range of the group.
        let mut cutoff = u64::MAX;
        let mut highest_top = 0u64;
        let mut section_high = 0u32;
        let mut lowest_floor = u64::MAX;
        for &m in &self.lists[from..to] {
            let m = m as usize;
            lowest_floor = lowest_floor.min(self.floor[m]);
            let top = self.floor[m] + part.size[m];
            cutoff = cutoff.min(top);
            highest_top = highest_top.max(top);
            section_high = section_high.max(part.section_high[m]);
        }
        // Floors only rise: a buffer that no longer fits below the capacity never will.
        if cutoff <= last_offset || highest_top > capacity {
            return Outcome::Exhausted;
        }
        // In every section the unplaced buffers stack above their own floors (and above the
        // last offset): stacking them by increasing floor is the lowest they can reach, and
        // that top is the largest `floor + sizes of the buffers with a floor at least as high`.
        let section_low = part.section_low[self.lists[from] as usize] as usize;
        let section_high = section_high as usize;
        self.section_stack[section_low..section_high].fill(0);
        self.by_floor.clear();
        for &m in &self.lists[from..to] {
            self.by_floor
                .push((self.floor[m as usize].max(last_offset), m));
        }
        self.by_floor.sort_unstable_by(|a, b| b.cmp(a));
        for &(floor, m) in &self.by_floor {
            let m = m as usize;
            let size = part.size[m];
            for stacked in
                &mut self.section_stack[part.section_low[m] as usize..part.section_high[m] as usize]
            {
                *stacked += size;
                if floor + *stacked > capacity {
                    return Outcome::Exhausted;
                }
            }
        }

        let candidates_from = self.candidates.len();
        let mut lowest: Option<(u64, u64, u32)> = None; // (floor, start, member)
        for k in from..to {
            let m = self.lists[k];
            let mu = m as usize;
            let floor = self.floor[mu];
            if floor < last_offset
                || floor >= cutoff
                || floor + part.size[mu] > capacity
                || (self.lowest_only && floor != lowest_floor)
            {
                continue;
            }
            if floor == last_offset && last_start.is_some_and(|s| part.start[mu] <= s) {
                continue;
            }
            self.candidates.push((floor, self.rank[mu], m));
            let key = (floor, part.start[mu], m);
            if lowest.is_none_or(|l| key < l) {
                lowest = Some(key);
            }
        }
        let Some(lowest) = lowest else {
            return Outcome::Exhausted;
        };
        let forced = part
            .graph
            .neighbours(lowest.2 as usize)
            .iter()
            .all(|&n| self.placed[n as usize]);
        if forced {
            self.candidates.truncate(candidates_from);
            self.candidates.push((lowest.0, 0, lowest.2));
        } else {
            self.candidates[candidates_from..].sort_unstable();
        }

        let candidates_to = self.candidates.len();
        let mut outcome = Outcome::Exhausted;
        for c in candidates_from..candidates_to {
            let (offset, _, chosen) = self.candidates[c];
            let chosen = chosen as usize;
            let twin_tried = self.candidates[candidates_from..c]
                .iter()
                .any(|&(_, _, t)| {
                    let t = t as usize;
                    part.size[t] == part.size[chosen]
                        && part.start[t] == part.start[chosen]
                        && part.end[t] == part.end[chosen]
                });
            if twin_tried {
                continue;
            }
            let mark = self.trail.len();
            if !self.place(chosen, offset) {
                self.undo_to(mark);
                continue;
            }
            let child_from = self.lists.len();
            for k in from..to {
                let m = self.lists[k];
                if m as usize != chosen {
                    self.lists.push(m);
                }
            }
            let child_to = self.lists.len();
            // Removing `chosen` can split the group only where it leaves a section empty.
            let may_split = (part.section_low[chosen]..part.section_high[chosen])
                .any(|s| self.section_count[s as usize] == 0);
            let last_start = Some(part.start[chosen]);
            let result = if child_from == child_to {
                Outcome::Found
            } else if may_split {
                self.solve_groups(child_from, child_to, offset, last_start)
            } else {
                self.node(child_from, child_to, offset, last_start)
            };
            self.lists.truncate(child_from);
            match result {
                Outcome::Found => {
                    outcome = Outcome::Found;
                    break;
                }
                Outcome::Aborted => {
                    self.undo_to(mark);
                    outcome = Outcome::Aborted;
                    break;
                }
                Outcome::Exhausted => self.undo_to(mark),
            }
        }
        self.candidates.truncate(candidates_from);
        outcome
    }

    /// Places `chosen` at `offset`; false when a section it covers can no longer hold its
    /// unplaced buffers (the caller undoes the partial update).
    fn place(&mut self, chosen: usize, offset: u64) -> bool {
        let part = self.part;
        let top = offset + part.size[chosen];
        self.offsets[chosen] = offset;
        self.placed[chosen] = true;
        self.trail.push(Undo::Placed(chosen as u32));
        let mut fits = true;
        for s in part.section_low[chosen]..part.section_high[chosen] {
            let su = s as usize;
            self.trail
                .push(Undo::SectionFloor(s, self.section_floor[su]));
            self.section_floor[su] = top;
            self.section_total[su] -= part.size[chosen];
            self.section_count[su] -= 1;
            if top + self.section_total[su] > self.capacity {
                fits = false;
            }
        }
        if !fits {
            return false;
        }
        for &n in part.graph.neighbours(chosen) {
            let nu = n as usize;
            if !self.placed[nu] && self.floor[nu] < top {
                self.trail.push(Undo::BufferFloor(n, self.floor[nu]));
                self.floor[nu] = top;
            }
        }
        true
    }

    fn undo_to(&mut self, mark: usize) {
        let part = self.part;
        while self.trail.len() > mark {
            match self.trail.pop().expect("trail is longer than mark") {
                Undo::BufferFloor(b, old) => self.floor[b as usize] = old,
                Undo::SectionFloor(s, old) => self.section_floor[s as usize] = old,
                Undo::Placed(b) => {
                    let b = b as usize;
                    self.placed[b] = false;
                    for s in part.section_low[b] as usize..part.section_high[b] as usize {
                        self.section_total[s] += part.size[b];
                        self.section_count[s] += 1;
                    }
                }
            }
        }
    }
}
