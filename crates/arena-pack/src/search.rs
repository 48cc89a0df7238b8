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
//! The search runs on an explicit stack (depth is bounded by memory, not by a thread's stack)
//! and counts nodes against a budget, so a run is a deterministic function of its input; the
//! interrupt (`stop`, or the success of a better-ranked run) only cuts it short.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::Buffer;
use crate::heuristic::{self, Order};
use crate::overlap::OverlapGraph;

/// Marks "no buffer" in index arrays.
const NONE: u32 = u32::MAX;

/// Marks a candidate placed at its floor above a lower part of the skyline.
const FLOAT: u32 = 1 << 31;

/// Marks a buffer that is not pinned (any offset allowed).
pub(crate) const FREE: u64 = u64::MAX;

/// One independent part of an instance, in local indices (sorted by start time).
pub(crate) struct Part {
    /// Global index of each local buffer.
    pub(crate) ids: Vec<u32>,
    start: Vec<u64>,
    end: Vec<u64>,
    size: Vec<u64>,
    /// Section `s` is the step range `[points[s], points[s + 1])`.
    points: Vec<u64>,
    /// Each buffer covers the sections `[low, high)`.
    low: Vec<u32>,
    high: Vec<u32>,
    /// Sum of the sizes live in each section (saturating; callers check overflow first).
    totals: Vec<u64>,
    /// `covering[cover_first[s]..cover_first[s + 1]]`: the buffers live in section `s`.
    cover_first: Vec<u32>,
    covering: Vec<u32>,
    /// The previous buffer with the same lifetime, size and pin, or `NONE`.
    twin_prev: Vec<u32>,
    /// Per buffer: the offset it is pinned at, or [`FREE`].
    pin: Vec<u64>,
    /// Per buffer: the lowest offset it may take (0 unless set).
    least: Vec<u64>,
    graph: OverlapGraph,
    /// Per section: the hull of the lifetimes of the buffers live there (the sections whose
    /// levels set those buffers' floors).
    reach: Vec<(u32, u32)>,
    /// Per section: the hull of `reach` over the sections of its own `reach`.
    reach2: Vec<(u32, u32)>,
}

impl Part {
    /// The part made of `ids` (live buffers, sorted by start).
    pub(crate) fn new(buffers: &[Buffer], ids: &[u32]) -> Part {
        Part::with_pins(buffers, ids, &[])
    }

    /// Like [`Part::new`], with buffer `ids[k]` pinned at offset `pins[k]` (its only allowed
    /// offset) where `pins[k] != FREE`; missing entries are free.
    pub(crate) fn with_pins(buffers: &[Buffer], ids: &[u32], pins: &[u64]) -> Part {
        let pin: Vec<u64> = (0..ids.len())
            .map(|k| pins.get(k).copied().unwrap_or(FREE))
            .collect();
        let local: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
        let mut points: Vec<u64> = local.iter().flat_map(|b| [b.start, b.end]).collect();
        points.sort_unstable();
        points.dedup();
        let section_of = |t: u64| points.partition_point(|&p| p < t) as u32;
        let low: Vec<u32> = local.iter().map(|b| section_of(b.start)).collect();
        let high: Vec<u32> = local.iter().map(|b| section_of(b.end)).collect();
        let sections = points.len().saturating_sub(1);
        let mut totals = vec![0u64; sections];
        let mut cover_count = vec![0u32; sections + 1];
        for (k, b) in local.iter().enumerate() {
            for s in low[k] as usize..high[k] as usize {
                totals[s] = totals[s].saturating_add(b.size);
                cover_count[s] += 1;
            }
        }
        let mut cover_first = Vec::with_capacity(sections + 1);
        let mut total = 0u32;
        for &c in &cover_count[..sections] {
            cover_first.push(total);
            total += c;
        }
        cover_first.push(total);
        let mut fill = cover_first.clone();
        let mut covering = vec![0u32; total as usize];
        for k in 0..local.len() {
            for s in low[k] as usize..high[k] as usize {
                covering[fill[s] as usize] = k as u32;
                fill[s] += 1;
            }
        }
        let mut twin_prev = vec![NONE; local.len()];
        let mut by_shape: Vec<u32> = (0..local.len() as u32).collect();
        by_shape.sort_unstable_by_key(|&k| {
            let b = &local[k as usize];
            (b.start, b.end, b.size, pin[k as usize], k)
        });
        for pair in by_shape.windows(2) {
            let (a, b) = (&local[pair[0] as usize], &local[pair[1] as usize]);
            let (pa, pb) = (pin[pair[0] as usize], pin[pair[1] as usize]);
            if (a.start, a.end, a.size, pa) == (b.start, b.end, b.size, pb) {
                twin_prev[pair[1] as usize] = pair[0];
            }
        }
        let reach: Vec<(u32, u32)> = (0..sections)
            .map(|s| {
                let mut hull = (s as u32, s as u32 + 1);
                for &k in &covering[cover_first[s] as usize..cover_first[s + 1] as usize] {
                    hull = (hull.0.min(low[k as usize]), hull.1.max(high[k as usize]));
                }
                hull
            })
            .collect();
        // Range hulls of `reach` by a sparse table: O(S log S), whatever the lifetimes.
        let mut table: Vec<Vec<(u32, u32)>> = vec![reach.clone()];
        let mut width = 1;
        while width * 2 <= sections {
            let previous = &table[table.len() - 1];
            let next: Vec<(u32, u32)> = (0..=sections - width * 2)
                .map(|i| hull(previous[i], previous[i + width]))
                .collect();
            table.push(next);
            width *= 2;
        }
        let range_hull = |a: usize, b: usize| {
            let level = (usize::BITS - 1 - (b - a).leading_zeros()) as usize;
            hull(table[level][a], table[level][b - (1 << level)])
        };
        let reach2: Vec<(u32, u32)> = reach
            .iter()
            .map(|&(a, b)| hull((a, b), range_hull(a as usize, b as usize)))
            .collect();
        Part {
            points,
            reach,
            reach2,
            ids: ids.to_vec(),
            start: local.iter().map(|b| b.start).collect(),
            end: local.iter().map(|b| b.end).collect(),
            size: local.iter().map(|b| b.size).collect(),
            low,
            high,
            totals,
            cover_first,
            covering,
            twin_prev,
            pin,
            least: vec![0; ids.len()],
            graph: OverlapGraph::new(&local),
        }
    }

    /// Gives every buffer a lowest offset (`least[k]` for local buffer `k`; missing entries
    /// are 0). Buffers with the same shape and pin but different lowest offsets are no longer
    /// interchangeable.
    pub(crate) fn set_least(&mut self, least: &[u64]) {
        for (k, l) in self.least.iter_mut().enumerate() {
            *l = least.get(k).copied().unwrap_or(0);
        }
        let least = &self.least;
        for k in 0..self.twin_prev.len() {
            let twin = self.twin_prev[k];
            if twin != NONE && least[twin as usize] != least[k] {
                self.twin_prev[k] = NONE;
            }
        }
    }

    /// Number of buffers.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Number of sections.
    pub(crate) fn sections(&self) -> usize {
        self.totals.len()
    }

    /// The first step of each section, then the end of the last one.
    pub(crate) fn section_starts(&self) -> &[u64] {
        &self.points
    }

    /// The local buffer `local`.
    pub(crate) fn buffer(&self, local: usize) -> Buffer {
        Buffer::new(self.start[local], self.end[local], self.size[local])
    }

    /// For each of `orders`, the static rank of every local buffer for [`Search::new`]: its
    /// position in that order of [`heuristic::rank`] (0 for inert buffers, which it leaves
    /// out).
    pub(crate) fn ranks(&self, orders: impl IntoIterator<Item = Order>) -> Vec<Vec<u32>> {
        let local: Vec<Buffer> = (0..self.len()).map(|k| self.buffer(k)).collect();
        let congestion = heuristic::congestion(&local).unwrap_or_else(|_| vec![0; local.len()]);
        orders
            .into_iter()
            .map(|order| {
                let mut rank = vec![0u32; local.len()];
                for (position, &k) in heuristic::rank(&local, order, &congestion)
                    .iter()
                    .enumerate()
                {
                    rank[k as usize] = position as u32;
                }
                rank
            })
            .collect()
    }

    /// The sections `[low, high)` buffer `local` is live in.
    pub(crate) fn span(&self, local: usize) -> (usize, usize) {
        (self.low[local] as usize, self.high[local] as usize)
    }

    fn covering(&self, section: usize) -> &[u32] {
        &self.covering[self.cover_first[section] as usize..self.cover_first[section + 1] as usize]
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

/// One run of a [`race`]: how it ended, the nodes it used (within its budget), its offsets.
pub(crate) type RaceRun = (Outcome, u64, Vec<u64>);

/// The runs of a [`race`] and which one decided.
pub(crate) struct Race {
    /// Every run, in index order.
    pub(crate) runs: Vec<RaceRun>,
    /// The lowest-indexed run that concluded (any outcome but `Aborted`).
    pub(crate) decided: Option<usize>,
    /// The nodes counted: those of the runs up to the deciding one, or of all runs.
    pub(crate) counted: u64,
}

/// Runs `count` configurations in parallel; the lowest-indexed one that concludes decides.
/// Each run gets an interrupt that carries `stop` and `outer` and fires when a lower-indexed
/// run has concluded, and nothing else cancels a run, so which run decides and the nodes
/// counted do not depend on the thread count.
pub(crate) fn race(
    count: usize,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    outer: Option<&Interrupt<'_>>,
    run: impl Fn(usize, &Interrupt<'_>) -> RaceRun + Sync,
) -> Race {
    let winner = AtomicUsize::new(usize::MAX);
    let runs: Vec<RaceRun> = (0..count)
        .into_par_iter()
        .map(|index| {
            let interrupt = Interrupt {
                stop,
                cancel: Some((&winner, index)),
                outer,
            };
            let result = run(index, &interrupt);
            if result.0 != Outcome::Aborted {
                winner.fetch_min(index, Ordering::Relaxed);
            }
            result
        })
        .collect();
    let decided = runs.iter().position(|r| r.0 != Outcome::Aborted);
    let counted = runs[..decided.map_or(runs.len(), |w| w + 1)]
        .iter()
        .map(|r| r.1)
        .fold(0u64, u64::saturating_add);
    Race {
        runs,
        decided,
        counted,
    }
}

/// Cuts a run short from outside: `stop` (wall clock) and a shared cancel flag that holds the
/// lowest index of a run that already succeeded (runs with a higher index give up).
pub(crate) struct Interrupt<'a> {
    pub(crate) stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    pub(crate) cancel: Option<(&'a AtomicUsize, usize)>,
    /// The interrupt of the run this one is part of (it fires this one too).
    pub(crate) outer: Option<&'a Interrupt<'a>>,
}

impl Interrupt<'_> {
    pub(crate) fn fired(&self) -> bool {
        if let Some((flag, index)) = self.cancel
            && flag.load(Ordering::Relaxed) < index
        {
            return true;
        }
        if self.outer.is_some_and(Interrupt::fired) {
            return true;
        }
        self.stop.is_some_and(|stop| stop())
    }
}

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

/// Leftmost minimum over the sections' keys (see [`key`]; `u128::MAX` when a section
/// has no unplaced buffer), as a bottom-up segment tree.
struct MinTree {
    leaves: usize,
    tree: Vec<u128>,
}

impl MinTree {
    fn new(keys: &[u128]) -> MinTree {
        let leaves = keys.len().max(1).next_power_of_two();
        let mut tree = vec![u128::MAX; 2 * leaves];
        tree[leaves..leaves + keys.len()].copy_from_slice(keys);
        for k in (1..leaves).rev() {
            tree[k] = tree[2 * k].min(tree[2 * k + 1]);
        }
        MinTree { leaves, tree }
    }

    /// Sets the keys of `[low, high)` (the caller's `key` function) and repairs the parents.
    fn update(&mut self, low: usize, high: usize, key: impl Fn(usize) -> u128) {
        if low >= high {
            return;
        }
        for s in low..high {
            self.tree[self.leaves + s] = key(s);
        }
        let (mut a, mut b) = ((self.leaves + low) / 2, (self.leaves + high - 1) / 2);
        while a >= 1 {
            for k in a..=b {
                self.tree[k] = self.tree[2 * k].min(self.tree[2 * k + 1]);
            }
            a /= 2;
            b /= 2;
        }
    }

    /// The leftmost section with the smallest key, and that key (`u128::MAX` if none).
    fn leftmost_min(&self) -> (usize, u128) {
        let best = self.tree[1];
        let mut k = 1;
        while k < self.leaves {
            k = if self.tree[2 * k] == best {
                2 * k
            } else {
                2 * k + 1
            };
        }
        (k - self.leaves, best)
    }
}

/// A search of one part within a capacity.
pub(crate) struct Search<'a> {
    part: &'a Part,
    capacity: u64,
    budget: u64,
    interrupt: &'a Interrupt<'a>,
    /// Nodes visited.
    pub(crate) steps: u64,
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
    /// The sections the last failed check depends on.
    failed: (u32, u32),
    trail: Vec<Move>,
    frames: Vec<Frame>,
    cands: Vec<u32>,
    /// Also branch on buffers that start at the lowest point but rest higher elsewhere in
    /// their lifetime, placed at their floor with the space below given up (after the level
    /// candidates, before the raise). Extra branches: the search stays complete.
    pub(crate) float_long: bool,
    /// Try those floating placements before the level candidates.
    pub(crate) floats_first: bool,
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
    /// After each move, check the stacking bound in the sections it can affect.
    pub(crate) stack_check: bool,
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
        let mut crossing = vec![0u32; sections.saturating_sub(1)];
        for k in 0..n {
            let (low, high) = part.span(k);
            for c in &mut crossing[low..high - 1] {
                *c += 1;
            }
        }
        let keys: Vec<u128> = (0..sections)
            .map(|s| key(Branch::Leftmost, count[s], floor[s], 0, s))
            .collect();
        Search {
            part,
            capacity,
            budget,
            interrupt,
            steps: 0,
            offsets: vec![0; n],
            placed: vec![false; n],
            remaining: part.totals.clone(),
            count,
            tree: MinTree::new(&keys),
            bfloor: (0..n)
                .map(|k| {
                    let (low, high) = part.span(k);
                    let floor = floor[low..high].iter().copied().max().unwrap_or(0);
                    floor.max(part.least[k])
                })
                .collect(),
            check: (0, 0),
            failed: (0, 0),
            floor,
            trail: Vec::new(),
            frames: Vec::new(),
            cands: Vec::new(),
            by_component: false,
            prefer_flush: false,
            float_long: false,
            floats_first: false,
            crossing,
            mode: Branch::Leftmost,
            rank: (0..n).map(|k| rank.get(k).copied().unwrap_or(0)).collect(),
            stack_check: true,
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
                fits && self.place(buffer, at) && (!self.stack_check || self.stacks_fit())
            } else if !frame.raised {
                frame.raised = true;
                frame.touched = (section, section + 1);
                match self.raise_target(section as usize, level) {
                    Some(target) => {
                        self.raise(section as usize, target)
                            && (!self.stack_check || self.stacks_fit())
                    }
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
        if self.steps > self.budget || (self.steps.is_multiple_of(1024) && self.interrupt.fired()) {
            return Entered::Aborted;
        }
        let (section, key) = self.tree.leftmost_min();
        if key == u128::MAX {
            return Entered::Done;
        }
        let level = self.floor[section];
        let part = self.part;
        let from = self.cands.len() as u32;
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
            if self.floats_first {
                self.cands[from as usize..].rotate_left(floats_from - from as usize);
            }
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

    /// The level the lowest unplaced buffer of `section` reaches at least when the point
    /// (`section`, `level`) stays empty; `None` when no solution leaves it empty.
    ///
    /// That buffer `u` rests on the end of a buffer below it. A placed one ends at most at
    /// `u`'s current floor (the highest level over its lifetime), so if that floor is above
    /// `level` it is a bound. Otherwise every section of `u`'s lifetime is at `level`, so `u`
    /// starts in `section` (the leftmost lowest) and rests on an unplaced buffer `w` live with
    /// it but not in `section` (there `u` is the lowest): `w` starts in a later section `t`
    /// of `u`'s lifetime and ends at `floor[t] + size(w)` or above.
    fn raise_target(&self, section: usize, level: u64) -> Option<u64> {
        let part = self.part;
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
    fn place(&mut self, buffer: usize, level: u64) -> bool {
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
    fn lift_floors(
        &mut self,
        ids: &[u32],
        level: u64,
        sections: (usize, usize),
        mut fits: bool,
    ) -> bool {
        let part = self.part;
        let (mut from, mut to) = sections;
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
        fits
    }

    /// The lowest level an unplaced buffer can take: its floor, or its pin when pinned.
    fn least_level(&self, buffer: usize) -> u64 {
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
    fn stacks_fit(&mut self) -> bool {
        let part = self.part;
        let (from, to) = self.check;
        for t in from..to {
            if self.count[t] < 2 {
                continue;
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
            for &w in part.covering(t) {
                let w = w as usize;
                if !self.placed[w] {
                    let least = self.least_level(w);
                    if least > room {
                        self.scratch.push((least, part.size[w]));
                    }
                }
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
    fn raise(&mut self, section: usize, level: u64) -> bool {
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

    fn update_keys(&mut self, low: usize, high: usize) {
        let (floor, count, remaining, mode) =
            (&self.floor, &self.count, &self.remaining, self.mode);
        self.tree.update(low, high, |s| {
            key(mode, count[s], floor[s], remaining[s], s)
        });
    }

    fn undo_to(&mut self, mark: usize) {
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

/// The smallest section range holding both ranges.
fn hull(a: (u32, u32), b: (u32, u32)) -> (u32, u32) {
    (a.0.min(b.0), a.1.max(b.1))
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

#[cfg(test)]
mod pin_tests {
    use super::*;
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
}
