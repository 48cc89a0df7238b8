//! Large parts by time windows: the buffers are placed window by window in time order, each
//! window by the exact search against what earlier windows (and the base layer) left live
//! across it, pinned where it is.
//!
//! A workload of tens of thousands of buffers is a long chain of small, similar pieces of work
//! (layers) joined by a few buffers that cross them (residual streams, skip connections, kept
//! outputs). A window is a stretch of time cut where little crosses; its own buffers (those
//! that start in it, lifetimes clipped at its end) are free, the buffers already placed that
//! are live in it are pinned at their offsets (the search fills around them: see `Part` pins).
//! Pinned buffers live over the whole window that touch in address are one pin: a staircase of
//! thousands of kept buffers is one obstacle, so a window's search stays small however many
//! buffers cross it. A window is placed by its greedy placement in its own instance when that
//! fits within the target: after its search fails (its nodes are few), or, in a *quick* run,
//! before any search. When neither fits it (the pins left by the previous windows may make it
//! impossible, and the budget of one window is small), it is merged with the window before it and both are solved again, so a skip connection placed
//! badly a few layers back is moved; a merge stops at `max_merged` free buffers. A window that
//! still fails gets more room: the lowest that a few searches of the window alone find between
//! the room and the height of its greedy placement around its pins, else that greedy placement
//! (above the target either way: the run then reports no fit but returns a complete
//! placement), and the windows after it get that room.
//!
//! A free buffer rests above the base buffers only where it is clipped (after the window's
//! end, before its start): the base buffers live in the window are pins of its instance, so
//! the search and the greedy may put it in a hole between them (issue 35, fifth session;
//! before, it rested above the highest base top over its whole lifetime, and a hole in the
//! base layer at the peak could be used by no buffer live there).
//!
//! *Outwards from the peak* (asked for by the caller): the window holding the part's peak step
//! goes first, with every buffer live in it free (clipped to it on both sides), so that the
//! buffers live at the peak are placed by the one search that sees it; then the windows before
//! it in reverse time order (a pass in mirrored time, `t -> end - t`: each window places the
//! buffers that end in it, clipped at its start, around those placed after it), then the
//! windows after it in time order. Only buffers live in the peak window cross from one side to
//! the other, and each side sees them as carried into its first window, so the placements
//! agree. In time order, the windows before the peak fix the offsets of the buffers live at
//! the peak without seeing it (on `xla-30k` the peak window was proven impossible at the
//! bound with their pins).
//!
//! Invariants: the offsets returned are a valid placement of all buffers of the part (every
//! buffer placed once, pins never overlap what is placed around them, since the search and the
//! greedy both respect them); the run is sequential and a deterministic function of its input
//! and budget (a greedy placement costs search nodes too, and a window search is charged its
//! work where its nodes cost more than a window's usual); when the budget runs out, the
//! windows left are placed by one greedy pass around what is placed (a complete placement,
//! reported as no fit); when the interrupt fires it stops with no placement, and the caller
//! keeps its best one. Memory
//! is O(buffers + buffers live at once): base buffers are found through a [`TimeIndex`] over
//! them alone, carried ones from lists that only the windows a merge can still reach keep (a
//! run outwards also keeps a mirrored copy of the part's lifetimes during its pass back).

use crate::base::BaseLayer;
use crate::heuristic::{self, Fit, Order, UNPLACED};
use crate::interval::TimeIndex;
use crate::part::{FREE, Part};
use crate::race::{Interrupt, Outcome, race};
use crate::scale::Attempt;
use crate::search::{Branch, Search};
use crate::{Buffer, Params};

/// The window searches tried in parallel: static candidate order, branching section. On every
/// `synth` workload we measured (sizes 10k-50k, seeds 1-10) they reach the lower bound.
const PORTFOLIO: [(Order, Branch); 2] = [
    (Order::Lifetime, Branch::Rightmost),
    (Order::Size, Branch::Tightest),
];

/// What a run on a large part did.
pub(crate) struct LargeRun {
    /// `Found`, or `Aborted` (budget, stop, or no fit).
    pub(crate) outcome: Outcome,
    /// Search nodes used (deterministic for a given input and budget).
    pub(crate) steps: u64,
    /// The offset of each buffer of `ids`, in that order: within the capacity on `Found`;
    /// otherwise a complete placement above it, or empty.
    pub(crate) offsets: Vec<u64>,
    /// The windowed run ran out of nodes before its last window (the windows left were placed
    /// greedily): a looser target does not help it, more nodes do.
    pub(crate) out_of_nodes: bool,
}

impl LargeRun {
    /// No placement (stopped, or nothing placed): the caller keeps its best one.
    pub(crate) fn empty(steps: u64) -> LargeRun {
        LargeRun {
            outcome: Outcome::Aborted,
            steps,
            offsets: Vec::new(),
            out_of_nodes: false,
        }
    }
}

/// Places the buffers `ids` (live, sorted by start) window by window within `capacity`, in time
/// order or, with `outward`, outwards from the peak window (see the module header), spending
/// at most `budget` search nodes (each window `scale` times its usual nodes). `Found` when
/// everything fits; otherwise the offsets
/// (in the order of `ids`) are a complete valid placement above the capacity, or empty (when
/// the base layer `base` of `ids` alone exceeds it, or the budget or the interrupt ended the
/// run).
pub(crate) fn windowed(
    buffers: &[Buffer],
    ids: &[u32],
    base: &BaseLayer,
    attempt: &Attempt,
    outward: bool,
    interrupt: &Interrupt<'_>,
    params: &Params,
) -> LargeRun {
    let Attempt {
        capacity,
        budget,
        scale,
        ..
    } = *attempt;
    // The base layer and the cuts cost O(n log n) each before the first window's poll.
    if base.exceeds(buffers, capacity) || interrupt.fired() {
        return LargeRun::empty(0);
    }
    let free = &base.rest;
    let cuts = cut_points(buffers, free, params.window);
    // The last window ends where the part does, so buffers kept to the end span it.
    let part_end = ids
        .iter()
        .map(|&i| buffers[i as usize].end)
        .max()
        .unwrap_or(0);

    // Global offsets, per buffer of the instance (only those of `ids` are used).
    let mut at: Vec<u64> = vec![FREE; buffers.len()];
    for (&i, &o) in base.ids.iter().zip(&base.offsets) {
        at[i as usize] = o;
    }
    let base_index = BaseIndex::new(buffers, base);
    let mut run = Run {
        buffers,
        base,
        base_index: &base_index,
        steps: 0,
        budget,
        scale,
        quick: attempt.quick,
        interrupt,
        params,
        fits: true,
        room: capacity,
    };
    let peak = if outward {
        peak_window(buffers, ids, &cuts)
    } else {
        None
    };
    let ended = match peak {
        None => run.pass(free, &cuts, part_end, 0, Vec::new(), &mut at),
        Some(p) => outwards(&mut run, ids, &cuts, part_end, p, &mut at),
    };
    let out_of_nodes = match ended {
        None => return LargeRun::empty(run.steps.min(budget)),
        Some(done) => !done,
    };
    if out_of_nodes {
        // Out of nodes: the rest is placed by one greedy pass around everything placed
        // (before, the run returned nothing, and on a 20,000-buffer compiler-shaped set
        // whose failing windows spent the budget on merges, every attempt ended so).
        // Stopped: the caller keeps its best placement.
        let rest: Vec<u32> = free
            .iter()
            .copied()
            .filter(|&i| at[i as usize] == FREE)
            .collect();
        if interrupt.fired() || !complete(buffers, ids, &rest, &mut at, interrupt) {
            return LargeRun::empty(run.steps.min(budget));
        }
        run.fits = false;
    }
    let offsets: Vec<u64> = ids
        .iter()
        .map(|&i| {
            let o = at[i as usize];
            if o == FREE { 0 } else { o }
        })
        .collect();
    LargeRun {
        outcome: if run.fits {
            Outcome::Found
        } else {
            Outcome::Aborted
        },
        steps: run.steps.min(budget),
        offsets,
        out_of_nodes,
    }
}

/// The window holding the part's peak: the first step where the sizes of the buffers of `ids`
/// live add up to their most; `None` when it is the first window (time order is then the
/// same run).
fn peak_window(buffers: &[Buffer], ids: &[u32], cuts: &[u64]) -> Option<usize> {
    let when = crate::bounds::peak_step(buffers, ids);
    let p = cuts.partition_point(|&c| c <= when).checked_sub(1)?;
    (p > 0).then_some(p)
}

/// The windowed run built outwards from the peak window `p`: the peak window first, with every
/// buffer live in it free (lifetimes clipped to it on both sides), then the windows before it
/// in reverse time order (a pass in mirrored time: each window places the buffers that end in
/// it, clipped at its start, around those placed after it), then the windows after it in time
/// order. Only the peak window's buffers cross from one side to the other, and each side sees
/// them as buffers carried into its first window, so the three placements are valid together.
/// `None` when the interrupt fired, `Some(false)` when the nodes ran out (buffers are left
/// unplaced), `Some(true)` when every buffer is placed.
fn outwards(
    run: &mut Run<'_>,
    ids: &[u32],
    cuts: &[u64],
    part_end: u64,
    p: usize,
    at: &mut [u64],
) -> Option<bool> {
    let buffers = run.buffers;
    let free = &run.base.rest;
    let (from, to) = (cuts[p], cuts.get(p + 1).copied().unwrap_or(part_end));
    let inside: Vec<u32> = free
        .iter()
        .copied()
        .filter(|&i| buffers[i as usize].start < to && buffers[i as usize].end > from)
        .collect();
    let window = Window {
        start: from,
        end: to,
        free: &inside,
        carried: &[],
    };
    if run.out_of_time() {
        return if run.interrupt.fired() {
            None
        } else {
            Some(false)
        };
    }
    run.place_alone(&window, at)?;
    // The windows before the peak, in mirrored time: window `p - 1 - j` is mirrored window j.
    let mut mirrored: Vec<Buffer> = buffers.to_vec();
    for &i in ids {
        mirrored[i as usize] = buffers[i as usize].mirrored(part_end);
    }
    let mut before: Vec<u32> = free
        .iter()
        .copied()
        .filter(|&i| buffers[i as usize].end <= from)
        .collect();
    before.sort_unstable_by_key(|&i| (mirrored[i as usize].start, i));
    let mirrored_cuts: Vec<u64> = cuts[1..=p].iter().rev().map(|&c| part_end - c).collect();
    let carried: Vec<u32> = inside
        .iter()
        .copied()
        .filter(|&i| buffers[i as usize].start < from)
        .collect();
    let base = run.base.mirrored(buffers, part_end);
    let base_index = BaseIndex::new(&mirrored, &base);
    let mut back = Run {
        buffers: &mirrored,
        base: &base,
        base_index: &base_index,
        ..*run
    };
    let done = back.pass(&before, &mirrored_cuts, part_end - cuts[0], 0, carried, at);
    (run.steps, run.fits, run.room) = (back.steps, back.fits, back.room);
    if done != Some(true) {
        return done;
    }
    drop(mirrored);
    // The windows after the peak, in time order.
    let carried: Vec<u32> = inside
        .iter()
        .copied()
        .filter(|&i| buffers[i as usize].end > to)
        .collect();
    run.pass(free, cuts, part_end, p + 1, carried, at)
}

/// Places the buffers `rest` (free, not placed yet) of the part `ids` by one greedy pass (start
/// order, lowest gap) around the part's buffers placed so far (`at[i] != FREE`); false when
/// the interrupt fired first (nothing is written then).
fn complete(
    buffers: &[Buffer],
    ids: &[u32],
    rest: &[u32],
    at: &mut [u64],
    interrupt: &Interrupt<'_>,
) -> bool {
    let whole: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
    let mut offsets: Vec<u64> = ids
        .iter()
        .map(|&i| match at[i as usize] {
            FREE => UNPLACED,
            o => o,
        })
        .collect();
    // `ids` and `rest` are both sorted by (start, index): the positions of `rest` in `ids`.
    let position = |i: u32| {
        ids.binary_search_by_key(&(buffers[i as usize].start, i), |&j| {
            (buffers[j as usize].start, j)
        })
    };
    let order: Vec<u32> = rest
        .iter()
        .filter_map(|&i| position(i).ok().map(|p| p as u32))
        .collect();
    let stop = move || interrupt.fired();
    if heuristic::best_fit_onto(&whole, &order, Fit::Lowest, &mut offsets, &[], Some(&stop))
        .is_none()
    {
        return false;
    }
    for &p in &order {
        let o = offsets[p as usize];
        at[ids[p as usize] as usize] = if o == UNPLACED { 0 } else { o };
    }
    true
}

/// The start of every window: the first buffer's start, then one cut per about `window`
/// buffers, at the start time (among those of the next half to one and a half windows of
/// buffers) that the least size of free buffers crosses, earliest on ties.
fn cut_points(buffers: &[Buffer], free: &[u32], window: usize) -> Vec<u64> {
    let Some(&head) = free.first() else {
        return Vec::new();
    };
    // Size crossing each start time t (live at t - 1 and at t): by a sweep over the events.
    let mut events: Vec<(u64, u64, bool)> = Vec::with_capacity(free.len() * 2);
    for &i in free {
        let b = &buffers[i as usize];
        events.push((b.start, b.size, true));
        events.push((b.end, b.size, false));
    }
    events.sort_unstable();
    let mut crossing: Vec<(u64, u64)> = Vec::new(); // (time, size crossing it)
    let mut live = 0u64;
    let mut e = 0;
    while e < events.len() {
        let t = events[e].0;
        let mut started = 0u64;
        while e < events.len() && events[e].0 == t {
            let (_, size, is_start) = events[e];
            if is_start {
                live = live.saturating_add(size);
                started = started.saturating_add(size);
            } else {
                live = live.saturating_sub(size);
            }
            e += 1;
        }
        crossing.push((t, live.saturating_sub(started)));
    }
    let crossing_at = |t: u64| {
        crossing
            .binary_search_by_key(&t, |&(time, _)| time)
            .map_or(u64::MAX, |p| crossing[p].1)
    };
    let mut cuts = vec![buffers[head as usize].start];
    let mut position = 0;
    loop {
        let from = position + window / 2;
        let to = (position + window * 3 / 2).min(free.len());
        if from >= free.len() || from >= to {
            break;
        }
        let current = *cuts.last().unwrap_or(&0);
        let mut best: Option<(u64, u64, usize)> = None; // (crossing, time, position)
        for p in from..to {
            let t = buffers[free[p] as usize].start;
            if t <= current || (p > 0 && buffers[free[p - 1] as usize].start == t) {
                continue;
            }
            let c = crossing_at(t);
            if best.is_none_or(|(bc, bt, _)| (c, t) < (bc, bt)) {
                best = Some((c, t, p));
            }
        }
        let Some((_, t, p)) = best else { break };
        cuts.push(t);
        position = p;
    }
    cuts
}

/// One window (or a run of merged windows) to place.
struct Window<'w> {
    /// Its time range `[start, end)`.
    start: u64,
    end: u64,
    /// Its own buffers (those starting in it).
    free: &'w [u32],
    /// Buffers placed earlier that are live at `start`.
    carried: &'w [u32],
}

/// The state of one windowed run.
struct Run<'r> {
    buffers: &'r [Buffer],
    base: &'r BaseLayer,
    /// The base buffers, by time.
    base_index: &'r BaseIndex,
    steps: u64,
    budget: u64,
    /// Each window's nodes are this many times the usual.
    scale: u64,
    /// Each window takes its greedy placement when that fits, before any search.
    quick: bool,
    interrupt: &'r Interrupt<'r>,
    params: &'r Params,
    /// Every window so far fitted within the capacity.
    fits: bool,
    /// The height windows are fitted within: the capacity, or higher after a fallback left a
    /// buffer above it.
    room: u64,
}

/// A greedy placement of a window's free buffers: their global indices and offsets.
struct Greedy {
    global: Vec<u32>,
    offsets: Vec<u64>,
}

/// A window's instance: pins (clipped to the window, those over all of it that touch merged)
/// and then the free buffers (clipped).
struct Instance {
    clipped: Vec<Buffer>,
    /// Per local buffer: its pin, or [`FREE`].
    pins: Vec<u64>,
    /// Per local buffer: the global index of a free buffer, `u32::MAX` for a pin.
    global: Vec<u32>,
    /// Local indices sorted by (start, index).
    order: Vec<u32>,
}

impl Run<'_> {
    /// The windows `from..` of `cuts` (window k is `[cuts[k], cuts[k + 1])`, the last ends at
    /// `end`) in time order, each placing the buffers of `free` (sorted by start) that start in
    /// it around `carried` (placed buffers live at `cuts[from]`) and those placed by the
    /// windows before it; a merge reaches back to window `from` at most. `None` when the
    /// interrupt fired, `Some(false)` when the nodes ran out first (buffers are left
    /// unplaced), `Some(true)` when every buffer of the windows is placed.
    fn pass(
        &mut self,
        free: &[u32],
        cuts: &[u64],
        end: u64,
        from: usize,
        carried_in: Vec<u32>,
        at: &mut [u64],
    ) -> Option<bool> {
        let buffers = self.buffers;
        let params = self.params;
        let quick = self.quick;
        // `first[k]`: the position in `free` of window k's first buffer; one past the end last.
        let mut first: Vec<usize> = cuts
            .iter()
            .map(|&t| free.partition_point(|&i| buffers[i as usize].start < t))
            .collect();
        first.push(free.len());
        let windows = cuts.len();
        let end_of = |k: usize| cuts.get(k + 1).copied().unwrap_or(end);
        // `carried[k]`: placed buffers from before window k still live at its start; only
        // the windows a merge can still reach keep theirs.
        let mut carried: Vec<Vec<u32>> = vec![Vec::new(); windows + 1];
        if let Some(c) = carried.get_mut(from) {
            *c = carried_in;
        }
        let mut k = from;
        while k < windows {
            if self.out_of_time() {
                return if self.interrupt.fired() {
                    None
                } else {
                    Some(false)
                };
            }
            let mut a = k;
            loop {
                let window = Window {
                    start: cuts[a],
                    end: end_of(k),
                    free: &free[first[a]..first[k + 1]],
                    carried: &carried[a],
                };
                // The window alone: its greedy placement in its own instance is taken when
                // it fits the room, before the search in a quick run, after it otherwise.
                // Before, a window that the search could not place within its nodes was
                // merged with the windows before it, one more at a time up to `max_merged`
                // free buffers, each merge a larger search: on a 20,000-buffer
                // compiler-shaped set the search failed on windows whose pins end 36% below
                // the room, and the merges took the run's nodes by its 98th window of 380.
                let fitted = if a == k && quick {
                    self.greedy_within(&window, at)
                } else {
                    Some(false)
                };
                let fitted = match fitted {
                    Some(false) if self.solve(&window, at) => Some(true),
                    Some(false) if a == k && !quick => self.greedy_within(&window, at),
                    other => other,
                };
                match fitted {
                    None => return None,
                    Some(true) => break,
                    Some(false) => {}
                }
                let merged = first[k + 1] - first[a.saturating_sub(1)];
                if a > from && merged <= params.max_merged && !self.out_of_time() {
                    a -= 1;
                    continue;
                }
                // More room for the window alone (the windows merged into it keep their
                // placements: a failed search writes nothing), or the greedy placement of
                // the window alone or of the merge, whichever is lower.
                let single = Window {
                    start: cuts[k],
                    end: end_of(k),
                    free: &free[first[k]..first[k + 1]],
                    carried: &carried[k],
                };
                let merge = (a < k).then_some(&window);
                if !self.raise(&single, merge, at)? {
                    a = k;
                }
                break;
            }
            for j in a..=k {
                let next = end_of(j);
                let live: Vec<u32> = carried[j]
                    .iter()
                    .chain(&free[first[j]..first[j + 1]])
                    .copied()
                    .filter(|&i| buffers[i as usize].end > next)
                    .collect();
                carried[j + 1] = live;
            }
            // A merge from window k + 1 on never reaches back past `max_merged` free buffers.
            for j in from..k {
                if first[k + 1] - first[j + 1] > 2 * params.max_merged {
                    carried[j] = Vec::new();
                } else {
                    break;
                }
            }
            k += 1;
        }
        Some(true)
    }

    /// Places one window with no merge (the peak window of a run built outwards): its greedy
    /// placement or its search within the room as in [`Run::pass`], else more room. `None`
    /// when the interrupt fired (nothing is written then).
    fn place_alone(&mut self, window: &Window<'_>, at: &mut [u64]) -> Option<()> {
        let fitted = if self.quick {
            self.greedy_within(window, at)?
        } else {
            false
        };
        if fitted || self.solve(window, at) || (!self.quick && self.greedy_within(window, at)?) {
            return Some(());
        }
        self.raise(window, None, at).map(|_| ())
    }

    /// The lowest offset of the free buffer `g` of `window` that keeps it clear of the base
    /// buffers it meets outside the window, where it is clipped: the highest top of those
    /// after the window's end or before its start over its lifetime. The base buffers live in
    /// the window are pins of its instance, which the search and the greedy place around.
    fn floor_outside(&self, window: &Window<'_>, g: u32) -> u64 {
        let b = &self.buffers[g as usize];
        let after = if b.end > window.end {
            self.base.least(window.end, b.end)
        } else {
            0
        };
        let before = if b.start < window.start {
            self.base.least(b.start, window.start)
        } else {
            0
        };
        after.max(before)
    }

    fn out_of_time(&self) -> bool {
        self.steps >= self.budget || self.interrupt.fired()
    }

    /// The placed buffers live at some step of `[start, end)`: the base buffers there and the
    /// carried ones.
    fn placed_in(&self, window: &Window<'_>, start: u64, end: u64) -> Vec<u32> {
        let mut placed: Vec<u32> = Vec::new();
        self.base_index.index.overlapping(start, end, |k| {
            placed.push(self.base_index.ids[k as usize]);
        });
        placed.sort_unstable();
        placed.extend(
            window
                .carried
                .iter()
                .copied()
                .filter(|&i| self.buffers[i as usize].end > start),
        );
        placed
    }

    fn instance(&self, window: &Window<'_>, at: &[u64]) -> Instance {
        let buffers = self.buffers;
        let clip =
            |b: &Buffer| Buffer::new(b.start.max(window.start), b.end.min(window.end), b.size);
        let mut clipped: Vec<Buffer> = Vec::new();
        let mut pins: Vec<u64> = Vec::new();
        let mut global: Vec<u32> = Vec::new();
        // Pins over the whole window, by offset, merged where they touch.
        let mut whole: Vec<(u64, u64)> = Vec::new();
        for i in self.placed_in(window, window.start, window.end) {
            let b = clip(&buffers[i as usize]);
            let offset = at[i as usize];
            if b.start == window.start && b.end == window.end {
                whole.push((offset, b.size));
            } else {
                clipped.push(b);
                pins.push(offset);
                global.push(u32::MAX);
            }
        }
        whole.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (offset, size) in whole {
            match merged.last_mut() {
                Some((o, s)) if *o + *s == offset => *s += size,
                _ => merged.push((offset, size)),
            }
        }
        for (offset, size) in merged {
            clipped.push(Buffer::new(window.start, window.end, size));
            pins.push(offset);
            global.push(u32::MAX);
        }
        for &i in window.free {
            clipped.push(clip(&buffers[i as usize]));
            pins.push(FREE);
            global.push(i);
        }
        let mut order: Vec<u32> = (0..clipped.len() as u32).collect();
        order.sort_unstable_by_key(|&k| (clipped[k as usize].start, k));
        Instance {
            clipped,
            pins,
            global,
            order,
        }
    }

    /// The exact search on the window; on success its free buffers get their offsets.
    fn solve(&mut self, window: &Window<'_>, at: &mut [u64]) -> bool {
        if self.out_of_time() {
            return false;
        }
        let instance = self.instance(window, at);
        let pins: Vec<u64> = instance
            .order
            .iter()
            .map(|&k| instance.pins[k as usize])
            .collect();
        let mut part = Part::with_pins(&instance.clipped, &instance.order, &pins);
        let least: Vec<u64> = instance
            .order
            .iter()
            .map(|&k| {
                let g = instance.global[k as usize];
                if g == u32::MAX {
                    0
                } else {
                    self.floor_outside(window, g)
                }
            })
            .collect();
        part.set_least(&least);
        let ranks = part.ranks(PORTFOLIO.iter().map(|&(order, _)| order));
        let nodes = (window.free.len() as u64)
            .saturating_mul(self.params.window_nodes_per_buffer)
            .max(self.params.window_min_nodes)
            .saturating_mul(self.scale)
            .min(self.budget - self.steps.min(self.budget))
            .max(1);
        // The portfolio in parallel; the lowest-indexed conclusive run decides, so the outcome
        // and the nodes counted do not depend on the thread count.
        let room = self.room;
        let race = race(
            ranks.len(),
            None,
            Some(self.interrupt),
            |index, interrupt| {
                let mut search = Search::new(&part, room, &ranks[index], nodes, interrupt);
                search.check_cells = self.params.stack_check_cells;
                search.set_mode(PORTFOLIO[index].1);
                search.work_per_node = self.params.window_work_per_node;
                let outcome = search.run();
                // Charged its work where a node reads more than a window's usual (among
                // hundreds of pins): the budget then follows the time, and a tail of
                // failing merges cannot take the attempt's time for few nodes.
                let charged = search
                    .steps
                    .max(search.work / self.params.window_work_per_node.max(1));
                (outcome, charged.min(nodes), search.offsets)
            },
        );
        self.steps = self.steps.saturating_add(race.counted);
        let Some(w) = race.decided.filter(|&w| race.runs[w].0 == Outcome::Found) else {
            return false;
        };
        let offsets = &race.runs[w].2;
        for (position, &k) in part.ids.iter().enumerate() {
            let g = instance.global[k as usize];
            if g != u32::MAX {
                at[g as usize] = offsets[position];
            }
        }
        true
    }

    /// Places a window that does not fit within the room (`single`, after the merge `merge`
    /// of it with the windows before it failed too): the lowest room found by
    /// `Params::raise_tries` searches of `single` that halve the space between the room and
    /// the height of the lower greedy placement around the pins (of `single`, or of the whole
    /// merge), else that greedy placement. Before, the greedy placement of the merge was taken
    /// at once, and its height (1.6% above the bound on a 30,000-buffer compiler-shaped set
    /// where one window in 500 failed) was the room of every window after it, so the run's
    /// answer was worse than the greedy's over the whole part; the greedy placement of the
    /// window alone is lower on some sets, that of the merge on others. `Some(true)` when the
    /// merge's greedy placement was taken (its windows were placed again), `Some(false)` when
    /// only `single` was placed, `None` when the interrupt fired first (nothing is written
    /// then).
    fn raise(
        &mut self,
        single: &Window<'_>,
        merge: Option<&Window<'_>>,
        at: &mut [u64],
    ) -> Option<bool> {
        let top = |greedy: &Greedy| {
            greedy
                .offsets
                .iter()
                .zip(&greedy.global)
                .map(|(&o, &i)| o.saturating_add(self.buffers[i as usize].size))
                .max()
                .unwrap_or(0)
        };
        // The merge's placement unless the window's alone needs less room: within the room
        // they are as good, and the merge places the windows before it again around the
        // failing one.
        let room = self.room;
        let alone = self.greedy(single, at)?;
        let mut greedy = (top(&alone), false, alone);
        if let Some(merge) = merge {
            let merged = self.greedy(merge, at)?;
            if top(&merged).max(room) <= greedy.0.max(room) {
                greedy = (top(&merged), true, merged);
            }
        }
        let (top, merged, greedy) = greedy;
        // Bisection between the room (failed) and the greedy height (fits); the search
        // writes the free buffers' offsets only when it fits, so the last success (the lowest)
        // is what `at` holds at the end.
        let (mut failed, mut fitted) = (self.room, None);
        let mut fits_at = top;
        for _ in 0..self.params.raise_tries {
            let Some(gap) = fits_at.checked_sub(failed).filter(|&g| g > 1) else {
                break;
            };
            let target = failed + gap / 2;
            let room = std::mem::replace(&mut self.room, target);
            let fits = self.solve(single, at);
            self.room = room;
            if fits {
                fitted = Some(target);
                fits_at = target;
            } else {
                failed = target;
            }
        }
        if let Some(target) = fitted {
            self.room = self.room.max(target);
            self.fits = false;
            return Some(false);
        }
        for (&i, &o) in greedy.global.iter().zip(&greedy.offsets) {
            at[i as usize] = o;
        }
        if top > self.room {
            self.room = top;
            self.fits = false;
        }
        Some(merged)
    }

    /// The window's free buffers placed greedily (lowest gap, longest and largest first) in
    /// the window's own instance, the one its search sees (pins, free buffers clipped at its
    /// end, each above the base buffers live after the window's end over its lifetime: those
    /// in the window are pins; the same argument as the search's makes it valid), and written to `at` when every one ends within the room:
    /// `Some(true)` then, `Some(false)` when not (nothing is written), `None` when the
    /// interrupt fired first. Its cost is that of the instance, a few hundred buffers, where
    /// [`Run::greedy`] meets every placed buffer the free buffers' whole lifetimes meet.
    fn greedy_within(&mut self, window: &Window<'_>, at: &mut [u64]) -> Option<bool> {
        let instance = self.instance(window, at);
        let mut offsets: Vec<u64> = instance
            .pins
            .iter()
            .map(|&p| if p == FREE { UNPLACED } else { p })
            .collect();
        let floors: Vec<u64> = instance
            .global
            .iter()
            .map(|&g| {
                if g == u32::MAX {
                    0
                } else {
                    self.floor_outside(window, g)
                }
            })
            .collect();
        let congestion = heuristic::congestion(&instance.clipped).unwrap_or_default();
        let order: Vec<u32> = heuristic::rank(&instance.clipped, Order::Lifetime, &congestion)
            .into_iter()
            .filter(|&k| instance.global[k as usize] != u32::MAX)
            .collect();
        self.steps = self.steps.saturating_add(instance.clipped.len() as u64);
        let interrupt = self.interrupt;
        let stop = move || interrupt.fired();
        let height = heuristic::best_fit_onto(
            &instance.clipped,
            &order,
            Fit::Lowest,
            &mut offsets,
            &floors,
            Some(&stop),
        )?;
        let within = height <= self.room;
        if within {
            for &k in &order {
                at[instance.global[k as usize] as usize] = offsets[k as usize];
            }
        }
        Some(within)
    }

    /// The window's free buffers placed greedily (lowest gap, longest and largest first)
    /// around every placed buffer their whole lifetimes meet: the base buffers there and the
    /// buffers carried into the window; nothing is written. `None` when the interrupt fired
    /// first.
    fn greedy(&mut self, window: &Window<'_>, at: &[u64]) -> Option<Greedy> {
        let buffers = self.buffers;
        let reach = window
            .free
            .iter()
            .map(|&i| buffers[i as usize].end)
            .max()
            .unwrap_or(window.end);
        // A window's buffers start in it, but the peak window's may start before it.
        let from = window
            .free
            .iter()
            .map(|&i| buffers[i as usize].start)
            .min()
            .unwrap_or(window.start)
            .min(window.start);
        let placed = self.placed_in(window, from, reach);
        let global: Vec<u32> = placed.iter().chain(window.free).copied().collect();
        let whole: Vec<Buffer> = global.iter().map(|&i| buffers[i as usize]).collect();
        let mut offsets: Vec<u64> = global
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                if k < placed.len() {
                    at[i as usize]
                } else {
                    UNPLACED
                }
            })
            .collect();
        let congestion = heuristic::congestion(&whole).unwrap_or_default();
        let order: Vec<u32> = heuristic::rank(&whole, Order::Lifetime, &congestion)
            .into_iter()
            .filter(|&k| k as usize >= placed.len())
            .collect();
        // Charged to the budget like search nodes: a run whose windows keep failing among
        // thousands of live buffers stops instead of running long.
        self.steps = self
            .steps
            .saturating_add(whole.len() as u64)
            .saturating_add(placed.len() as u64);
        let interrupt = self.interrupt;
        let stop = move || interrupt.fired();
        heuristic::best_fit_onto(&whole, &order, Fit::Lowest, &mut offsets, &[], Some(&stop))?;
        let skip = placed.len();
        Some(Greedy {
            global: global[skip..].to_vec(),
            offsets: offsets[skip..]
                .iter()
                .map(|&o| if o == UNPLACED { 0 } else { o })
                .collect(),
        })
    }
}

/// The base buffers by time: a [`TimeIndex`] over them alone (O(base) memory, not O(part)),
/// reporting their indices in the instance.
struct BaseIndex {
    index: TimeIndex,
    ids: Vec<u32>,
}

impl BaseIndex {
    fn new(buffers: &[Buffer], base: &BaseLayer) -> BaseIndex {
        let local: Vec<Buffer> = base.ids.iter().map(|&i| buffers[i as usize]).collect();
        let mut index = TimeIndex::new(&local);
        for k in 0..local.len() {
            index.enter(k);
        }
        BaseIndex {
            index,
            ids: base.ids.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lower_bound, synth, validate};

    /// The run outwards from the peak places every buffer validly: the peak window's buffers
    /// (clipped on both sides), the windows before it in mirrored time and those after it meet
    /// only through buffers live in the peak window. On a training step with recomputation
    /// whose peak is in the backward, at the bound with the compact base and the peak layer,
    /// both orders end 2 MiB above the bound (1.0015 x) with complete placements, outwards in
    /// a seventh of the nodes.
    #[test]
    fn the_run_outwards_from_the_peak_is_a_valid_placement() {
        let buffers = synth::training(1, 3_000, true);
        let mut ids: Vec<u32> = (0..buffers.len() as u32)
            .filter(|&i| buffers[i as usize].is_live())
            .collect();
        ids.sort_by_key(|&i| (buffers[i as usize].start, i));
        let params = Params::default();
        let base = BaseLayer::new(&buffers, &ids, &params, true, true);
        let bound = lower_bound(&buffers).unwrap();
        let attempt = Attempt {
            capacity: bound,
            budget: 1 << 22,
            scale: 1,
            best: 0,
            quick: false,
            peak: true,
        };
        let interrupt = Interrupt {
            stop: None,
            cancel: None,
            outer: None,
        };
        let cuts = cut_points(&buffers, &base.rest, params.window);
        let peak = peak_window(&buffers, &ids, &cuts).unwrap();
        assert!(
            peak > 0 && peak + 1 < cuts.len(),
            "{peak} of {}",
            cuts.len()
        );
        let mut heights = Vec::new();
        let mut steps = Vec::new();
        let mut placements = Vec::new();
        for outward in [false, true] {
            let run = windowed(
                &buffers, &ids, &base, &attempt, outward, &interrupt, &params,
            );
            assert_eq!(run.offsets.len(), ids.len());
            let mut offsets = vec![0u64; buffers.len()];
            for (&i, &o) in ids.iter().zip(&run.offsets) {
                offsets[i as usize] = o;
            }
            heights.push(validate(&buffers, &offsets, None).unwrap());
            placements.push(offsets);
            assert_eq!(run.outcome, Outcome::Aborted);
            assert!(!run.out_of_nodes);
            steps.push(run.steps);
        }
        assert_eq!(bound, 1_417_805_824);
        assert_eq!(heights, [bound + (2 << 20), bound + (2 << 20)]);
        assert_eq!(steps, [460_104, 70_032]);
        assert_ne!(placements[0], placements[1]);
    }
}
