//! Exact search for a placement within a capacity, after the ideas of MiniMalloc (Moffitt,
//! ASPLOS 2023), implemented here from the paper's description.
//!
//! Time is compressed to *sections* (maximal step ranges with a constant live set). The search
//! keeps a *skyline*: per section `s`, a level `floor[s]` below which everything is decided
//! (placed buffers or space given up), and `remaining[s]`, the sizes of the buffers not yet
//! placed that are live in `s`. Each node picks a *lowest point*: a section `s*` at the lowest
//! level `h` among the sections that still hold unplaced buffers (the leftmost, the rightmost
//! or the one with the most unplaced size: see [`Branch`]). In any solution that agrees with
//! the decisions so far, that point is either
//! 1. covered by an unplaced buffer `u`, which then sits exactly at `h`: every section of its
//!    lifetime is at level `h` (none is lower, by the choice of `h`; none higher, or `u` would
//!    overlap a decided region). These buffers are the node's candidates; or
//! 2. empty: then the lowest unplaced buffer of `s*` sits higher, at a level no lower than the
//!    bound of `raise_target` (it rests on a placed buffer, at its current floor, or on an
//!    unplaced one that is not live in `s*`), and the skyline of `s*` rises to that bound.
//!
//! These branches cover every solution, so a search that exhausts them proves that nothing
//! fits (a property test checks this against brute force on thousands of tiny instances).
//! Every placed buffer rests on the skyline: at 0 or on the end of a buffer below it.
//! Pruning, all sound:
//! - *cross-section inference*: in every section, `floor + remaining <= capacity` (checked in
//!   the sections a move changes, the only ones whose sums change);
//! - *stacking bound*: in a section, the unplaced buffers whose floor (highest level over their
//!   lifetime, kept per buffer on the trail) is at least `x` all lie between `x` and the
//!   capacity; checked in the sections of the buffers whose floor the move raised. This also
//!   catches gaps that no unplaced buffer can use (waste forced by higher neighbours);
//! - *interchangeable buffers* (same lifetime and size) are placed in index order;
//! - *conflict-directed backjumping*: every failure records the sections its proof depends on
//!   (a hull); an exhausted node jumps back over every decision that did not touch them,
//!   since those ancestors agree with it there and so have no completion either. The
//!   alternative rule jumps by the node's component (the sections joined to `s*` through
//!   unplaced buffers), which is what splitting into independent parts does, inside the search.
//!
//! Invariants: a search that exhausts its branches proves that nothing fits within the
//! capacity (every pruning is sound); a placement it finds is valid and within the capacity.
//! The search runs on an explicit stack (depth is bounded by memory, not by a thread's stack)
//! and counts nodes against a budget, so a run is a deterministic function of its input; the
//! interrupt (`stop`, or the success of a better-ranked run) only cuts it short.

mod min_tree;
mod moves;
#[cfg(test)]
mod tests;

use crate::part::{FREE, NONE, Part, hull};
use crate::race::{Interrupt, Outcome};
use min_tree::MinTree;

/// Marks a candidate placed at its floor above a lower part of the skyline.
const FLOAT: u32 = 1 << 31;

/// A decision, as recorded on the trail for undoing.
#[derive(Clone, Copy)]
enum Move {
    /// Buffer placed at a level (every section it covers was at that level).
    Place { buffer: u32, level: u64 },
    /// An unplaced buffer's floor raised from `old`.
    Floor { buffer: u32, old: u64 },
    /// A section's level raised from `old` (the space given up).
    Raise { section: u32, old: u64 },
}

/// One node of the search on the explicit stack.
struct Frame {
    section: u32,
    level: u64,
    /// Candidates `cands[from..to]`, tried from `next`; then the raise, once.
    from: u32,
    to: u32,
    next: u32,
    raised: bool,
    /// Trail length when the node was entered.
    mark: usize,
    /// Sections `[touched.0, touched.1)` changed by the move of the child being explored.
    touched: (u32, u32),
    /// Sections whose state the failures below this node depend on (a hull).
    conflict: (u32, u32),
}

/// A search of one part within a capacity.
pub(crate) struct Search<'a> {
    part: &'a Part,
    capacity: u64,
    budget: u64,
    interrupt: &'a Interrupt<'a>,
    /// Nodes visited.
    pub(crate) steps: u64,
    /// Work done: buffers read at each node's lowest point and by its raise, buffers whose
    /// floor a move examined and (section, buffer) cells the stacking checks read; a node of
    /// a part with long-lived buffers (or among hundreds of pins) costs thousands.
    pub(crate) work: u64,
    /// When not 0, the run also ends (aborted) once `work` passes `budget` times this: on
    /// whole-part runs a node can cost a thousand times another, and the caller shares out
    /// nodes as a measure of time.
    pub(crate) work_per_node: u64,
    /// On `Found`, the offset of every local buffer.
    pub(crate) offsets: Vec<u64>,
    placed: Vec<bool>,
    floor: Vec<u64>,
    remaining: Vec<u64>,
    count: Vec<u32>,
    tree: MinTree,
    /// Per unplaced buffer: its floor, the highest level over its lifetime.
    bfloor: Vec<u64>,
    /// Sections whose stacking bound the last move may have changed.
    check: (usize, usize),
    /// The sections the last move changed itself (checked first).
    check_core: (usize, usize),
    /// The most (section, buffer) cells one stacking check reads.
    pub(crate) check_cells: usize,
    /// The sections the last failed check depends on.
    failed: (u32, u32),
    trail: Vec<Move>,
    frames: Vec<Frame>,
    cands: Vec<u32>,
    /// Also branch on buffers that start at the lowest point but rest higher elsewhere in
    /// their lifetime, placed at their floor with the space below given up (after the level
    /// candidates, before the raise). Extra branches: the search stays complete.
    pub(crate) float_long: bool,
    /// Try first the candidates whose top meets a neighbouring section's level.
    pub(crate) prefer_flush: bool,
    /// Backjump by the component of unplaced buffers instead of by conflict hulls.
    pub(crate) by_component: bool,
    /// Per boundary `b` (between sections `b` and `b + 1`): unplaced buffers live on both sides.
    crossing: Vec<u32>,
    /// Among the lowest sections, branch on the one with the least room to spare (else the
    /// leftmost).
    mode: Branch,
    rank: Vec<u32>,
    scratch: Vec<(u64, u64)>,
}

impl<'a> Search<'a> {
    /// A search of `part` within `capacity`, trying candidates by increasing `rank` (one entry
    /// per local buffer), for at most `budget` nodes, from an empty arena.
    pub(crate) fn new(
        part: &'a Part,
        capacity: u64,
        rank: &[u32],
        budget: u64,
        interrupt: &'a Interrupt<'a>,
    ) -> Search<'a> {
        Search::with_floors(part, capacity, rank, budget, interrupt, None)
    }

    /// Like [`Search::new`], with each section's space below `floors[s]` already taken.
    pub(crate) fn with_floors(
        part: &'a Part,
        capacity: u64,
        rank: &[u32],
        budget: u64,
        interrupt: &'a Interrupt<'a>,
        floors: Option<&[u64]>,
    ) -> Search<'a> {
        let n = part.len();
        let sections = part.sections();
        let floor: Vec<u64> = match floors {
            Some(f) if f.len() == sections => f.to_vec(),
            _ => vec![0; sections],
        };
        let count: Vec<u32> = (0..sections)
            .map(|s| part.cover_first[s + 1] - part.cover_first[s])
            .collect();
        let keys: Vec<u128> = (0..sections)
            .map(|s| key(Branch::Leftmost, count[s], floor[s], 0, s))
            .collect();
        Search {
            part,
            capacity,
            budget,
            interrupt,
            steps: 0,
            work: 0,
            work_per_node: 0,
            offsets: vec![0; n],
            placed: vec![false; n],
            remaining: part.totals.clone(),
            count,
            tree: MinTree::new(&keys),
            bfloor: match floors {
                // A buffer's floor is the highest level over its lifetime.
                Some(_) => (0..n)
                    .map(|k| {
                        let (low, high) = part.span(k);
                        let floor = floor[low..high].iter().copied().max().unwrap_or(0);
                        floor.max(part.least[k])
                    })
                    .collect(),
                None => part.least.clone(),
            },
            check: (0, 0),
            check_core: (0, 0),
            check_cells: usize::MAX,
            failed: (0, 0),
            floor,
            trail: Vec::new(),
            frames: Vec::new(),
            cands: Vec::new(),
            by_component: false,
            prefer_flush: false,
            float_long: false,
            crossing: part.crossing.clone(),
            mode: Branch::Leftmost,
            rank: (0..n).map(|k| rank.get(k).copied().unwrap_or(0)).collect(),
            scratch: Vec::new(),
        }
    }

    /// Runs the search; on `Found`, `offsets` holds a placement within the capacity.
    pub(crate) fn run(&mut self) -> Outcome {
        let part = self.part;
        if (0..part.sections()).any(|s| {
            self.floor[s]
                .checked_add(self.remaining[s])
                .is_none_or(|top| top > self.capacity)
        }) {
            return Outcome::Exhausted;
        }
        // A pinned buffer must fit below the capacity and above the initial floors.
        if (0..part.len()).any(|k| {
            let pin = part.pin[k];
            pin != FREE
                && (pin < self.bfloor[k]
                    || pin
                        .checked_add(part.size[k])
                        .is_none_or(|top| top > self.capacity))
        }) {
            return Outcome::Exhausted;
        }
        match self.enter() {
            Entered::Node => {}
            Entered::Done => return Outcome::Found,
            Entered::Aborted => return Outcome::Aborted,
        }
        loop {
            let Some(frame) = self.frames.last() else {
                return Outcome::Exhausted;
            };
            let (section, level, mark) = (frame.section, frame.level, frame.mark);
            self.undo_to(mark);
            let frame = self.frames.last_mut().expect("a frame is on the stack");
            let moved = if frame.next < frame.to {
                let entry = self.cands[frame.next as usize];
                frame.next += 1;
                let buffer = (entry & !FLOAT) as usize;
                let (low, high) = part.span(buffer);
                frame.touched = (low as u32, high as u32);
                let mut fits = true;
                let at = if entry & FLOAT != 0 {
                    let at = self.bfloor[buffer];
                    for s in low..high {
                        if fits && self.floor[s] < at {
                            fits = self.raise(s, at);
                        }
                    }
                    at
                } else {
                    level
                };
                fits && self.place(buffer, at) && self.stacks_fit()
            } else if !frame.raised {
                frame.raised = true;
                frame.touched = (section, section + 1);
                match self.raise_target(section as usize, level) {
                    Some(target) => self.raise(section as usize, target) && self.stacks_fit(),
                    None => {
                        self.failed = (section, section + 1);
                        false
                    }
                }
            } else {
                self.backjump();
                continue;
            };
            if !moved {
                let failed = self.failed;
                let frame = self.frames.last_mut().expect("a frame is on the stack");
                frame.conflict = hull(frame.conflict, failed);
                continue;
            }
            match self.enter() {
                Entered::Node => {}
                Entered::Done => return Outcome::Found,
                Entered::Aborted => return Outcome::Aborted,
            }
        }
    }

    /// Pops an exhausted frame and every ancestor whose decision did not touch the sections
    /// its failure depends on (conflict-directed backjumping): those ancestors' states agree
    /// with it there, so they have no completion either.
    fn backjump(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        self.cands.truncate(frame.from as usize);
        let (low, high) = if self.by_component {
            self.component(frame.section as usize)
        } else {
            frame.conflict
        };
        while let Some(parent) = self.frames.last_mut() {
            let (a, b) = parent.touched;
            if a < high && low < b {
                parent.conflict = hull(parent.conflict, frame.conflict);
                break;
            }
            self.cands.truncate(parent.from as usize);
            self.frames.pop();
        }
    }

    /// The sections joined to `section` through unplaced buffers: a node's failure depends
    /// only on them (the state restored to the node's, so this is the node's component).
    fn component(&self, section: usize) -> (u32, u32) {
        let mut low = section;
        while low > 0 && self.crossing[low - 1] > 0 {
            low -= 1;
        }
        let mut high = section;
        while high < self.crossing.len() && self.crossing[high] > 0 {
            high += 1;
        }
        (low as u32, high as u32 + 1)
    }

    /// Opens a node at the current state: its leftmost lowest point and its candidates.
    fn enter(&mut self) -> Entered {
        self.steps += 1;
        if self.steps > self.budget
            || (self.work_per_node > 0
                && self.work > self.budget.saturating_mul(self.work_per_node))
            || (self.steps.is_multiple_of(1024) && self.interrupt.fired())
        {
            return Entered::Aborted;
        }
        let (section, key) = self.tree.leftmost_min();
        if key == u128::MAX {
            return Entered::Done;
        }
        let level = self.floor[section];
        let part = self.part;
        let from = self.cands.len() as u32;
        // The buffers live at the lowest point are read below (twice with floating
        // placements): among hundreds of pins that is most of a node's time.
        let reads = part.covering(section).len() as u64;
        self.work = self
            .work
            .saturating_add(if self.float_long { 2 * reads } else { reads });
        // A buffer pinned at this point covers it in every solution: the only branch.
        let forced = part.covering(section).iter().copied().find(|&u| {
            let u = u as usize;
            !self.placed[u] && part.pin[u] == level && self.bfloor[u] == level
        });
        if let Some(u) = forced {
            self.cands.push(u);
            self.frames.push(Frame {
                section: section as u32,
                level,
                from,
                to: from + 1,
                next: from,
                raised: true,
                mark: self.trail.len(),
                touched: (0, 0),
                conflict: part.reach2[section],
            });
            return Entered::Node;
        }
        // The buffers live here whose whole lifetime is at the lowest level.
        for &u in part.covering(section) {
            let u = u as usize;
            if self.placed[u] || part.pin[u] != FREE {
                continue;
            }
            let twin = part.twin_prev[u];
            if twin != NONE && !self.placed[twin as usize] {
                continue;
            }
            if self.bfloor[u] == level {
                self.cands.push(u as u32);
            }
        }
        let rank = &self.rank;
        if self.prefer_flush {
            let (floor, count, size) = (&self.floor, &self.count, &part.size);
            let flush = |u: usize| {
                let (low, high) = part.span(u);
                let top = level + size[u];
                let left = low > 0 && count[low - 1] > 0 && floor[low - 1] == top;
                let right = high < floor.len() && count[high] > 0 && floor[high] == top;
                u8::from(!left) + u8::from(!right)
            };
            self.cands[from as usize..]
                .sort_unstable_by_key(|&u| (flush(u as usize), rank[u as usize], u));
        } else {
            self.cands[from as usize..].sort_unstable_by_key(|&u| (rank[u as usize], u));
        }
        if self.float_long {
            // Buffers starting here that rest higher over part of their lifetime: placed at
            // their floor, the space below given up (extra branches: nothing is lost).
            let floats_from = self.cands.len();
            for &u in part.covering(section) {
                let u = u as usize;
                let twin = part.twin_prev[u];
                if self.placed[u]
                    || part.pin[u] != FREE
                    || part.low[u] as usize != section
                    || self.bfloor[u] == level
                    || (twin != NONE && !self.placed[twin as usize])
                {
                    continue;
                }
                self.cands.push(u as u32 | FLOAT);
            }
            self.cands[floats_from..].sort_unstable_by_key(|&u| (rank[(u & !FLOAT) as usize], u));
        }
        let to = self.cands.len() as u32;
        self.frames.push(Frame {
            section: section as u32,
            level,
            from,
            to,
            next: from,
            raised: false,
            mark: self.trail.len(),
            touched: (0, 0),
            conflict: part.reach2[section],
        });
        Entered::Node
    }
}

/// Which of the lowest sections a node branches on (every choice is complete).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Branch {
    /// The leftmost (MiniMalloc's rule).
    Leftmost,
    /// The one with the most unplaced size (the least room to spare), leftmost on ties.
    Tightest,
    /// The rightmost.
    Rightmost,
}

/// The branching key of a section: its level (lowest first), then the tie rule of `mode`;
/// `u128::MAX` when no unplaced buffer is live there.
fn key(mode: Branch, count: u32, level: u64, remaining: u64, section: usize) -> u128 {
    let second = match mode {
        Branch::Leftmost => 0,
        Branch::Tightest => u64::MAX - remaining,
        Branch::Rightmost => u64::MAX - section as u64,
    };
    if count == 0 {
        u128::MAX
    } else {
        (u128::from(level) << 64) | u128::from(second)
    }
}

/// What opening a node found.
enum Entered {
    /// A node was pushed.
    Node,
    /// Every buffer is placed.
    Done,
    /// The budget ran out or the run was interrupted.
    Aborted,
}
