//! Large parts by time windows: the buffers are placed window by window in time order, each
//! window by the exact search against what earlier windows (and the base layer) left live
//! across it, pinned where it is.
//!
//! A workload of tens of thousands of buffers is a long chain of small, similar pieces of work
//! (layers) joined by a few buffers that cross them (residual streams, skip connections, kept
//! outputs). A window is a stretch of time cut where little crosses; its own buffers (those
//! that start in it, lifetimes clipped at its end) are free, the buffers already placed that
//! are live in it are pinned at their offsets (the search fills around them: see `Part` pins).
//! When a window cannot be fitted within the target (the pins left by the previous windows
//! may make it impossible, and the budget of one window is small), it is merged with the
//! window before it and both are solved again, so a skip connection placed badly a few layers
//! back is moved; a merge stops at [`MAX_MERGED`] buffers. A window that still fails is placed
//! greedily around its pins (above the target: the run then reports no fit but returns a
//! complete placement), and the windows after it get room up to the highest pinned buffer.
//!
//! Invariants: the offsets returned are a valid placement of all buffers of the part (every
//! buffer placed once, pins never overlap what is placed around them, since the search and the
//! greedy both respect them); the run is sequential and a deterministic function of its input
//! and budget (the interrupt only cuts it short, and then the rest is placed greedily).

use crate::Buffer;
use crate::heuristic::{self, Fit, Order};
use crate::overlap::OverlapGraph;
use crate::scale::{Layered, base_layer};
use crate::search::{Branch, FREE, Interrupt, Outcome, Part, Search, race};

/// Free buffers a window aims at (cut where the least size crosses, within half of it).
const WINDOW: usize = 64;

/// A merged window stops growing at this many free buffers.
const MAX_MERGED: usize = 640;

/// Search nodes per free buffer of one window attempt (and at least [`MIN_NODES`]).
const NODES_PER_BUFFER: u64 = 48;
const MIN_NODES: u64 = 2_000;

/// One configuration of a windowed run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Long-lived buffers first as a base layer at the bottom (pinned in every window).
    pub(crate) with_base: bool,
    /// The window searches tried in parallel: static candidate order, branching section.
    pub(crate) portfolio: &'static [(Order, Branch)],
    /// Allow floating placements (a buffer at its floor over a lower part of the skyline).
    pub(crate) float: bool,
}

/// Places the buffers `ids` (live, sorted by start) window by window within `capacity`,
/// spending at most `budget` search nodes. `Found` when everything fits; otherwise the offsets
/// (in the order of `ids`) are still a complete valid placement, above the capacity, unless the
/// base layer alone exceeds it (then they are empty).
pub(crate) fn windowed(
    buffers: &[Buffer],
    ids: &[u32],
    capacity: u64,
    budget: u64,
    interrupt: &Interrupt<'_>,
    config: Config,
) -> Layered {
    let (base, free, base_offsets) = if config.with_base {
        base_layer(buffers, ids)
    } else {
        (Vec::new(), ids.to_vec(), Vec::new())
    };
    let top_of = |i: u32, offset: u64| offset.saturating_add(buffers[i as usize].size);
    if base
        .iter()
        .zip(&base_offsets)
        .any(|(&i, &o)| top_of(i, o) > capacity)
    {
        return Layered {
            outcome: Outcome::Aborted,
            steps: 0,
            offsets: Vec::new(),
        };
    }
    let cuts = cut_points(buffers, &free);
    // `first[k]`: the position in `free` of window k's first buffer; one past the end last.
    let mut first: Vec<usize> = cuts
        .iter()
        .map(|&t| free.partition_point(|&i| buffers[i as usize].start < t))
        .collect();
    first.push(free.len());
    let windows = cuts.len();

    // Global offsets, per buffer of the instance (only those of `ids` are used).
    let mut at: Vec<u64> = vec![FREE; buffers.len()];
    for (&i, &o) in base.iter().zip(&base_offsets) {
        at[i as usize] = o;
    }
    // Every other buffer lies above the base buffers its lifetime meets (as in the layered
    // attempt), even where a window clips that lifetime.
    let mut least: Vec<u64> = vec![0; buffers.len()];
    if !base.is_empty() {
        let mut by_start: Vec<(u64, u64, u64)> = base
            .iter()
            .zip(&base_offsets)
            .map(|(&i, &o)| {
                let b = &buffers[i as usize];
                (b.start, b.end, top_of(i, o))
            })
            .collect();
        by_start.sort_unstable();
        for &i in &free {
            let b = &buffers[i as usize];
            let reach = by_start.partition_point(|&(start, _, _)| start < b.end);
            least[i as usize] = by_start[..reach]
                .iter()
                .filter(|&&(_, end, _)| end > b.start)
                .map(|&(_, _, top)| top)
                .max()
                .unwrap_or(0);
        }
    }
    // `carried[k]`: placed free buffers from windows before k still live at its start.
    let mut carried: Vec<Vec<u32>> = vec![Vec::new(); windows + 1];
    let mut run = Run {
        buffers,
        base: &base,
        least: &least,
        steps: 0,
        budget,
        interrupt,
        config,
        fits: true,
        room: capacity,
    };
    let mut k = 0;
    while k < windows {
        let mut a = k;
        loop {
            let end = cuts.get(k + 1).copied().unwrap_or(u64::MAX);
            let window = Window {
                start: cuts[a],
                end,
                free: &free[first[a]..first[k + 1]],
                carried: &carried[a],
            };
            if run.solve(&window, &mut at) {
                break;
            }
            let merged = first[k + 1] - first[a.saturating_sub(1)];
            if a > 0 && merged <= MAX_MERGED && !run.out_of_time() {
                a -= 1;
                continue;
            }
            run.fallback(&window, &mut at);
            break;
        }
        for j in a..=k {
            let next = cuts.get(j + 1).copied().unwrap_or(u64::MAX);
            let live: Vec<u32> = carried[j]
                .iter()
                .chain(&free[first[j]..first[j + 1]])
                .copied()
                .filter(|&i| buffers[i as usize].end > next)
                .collect();
            carried[j + 1] = live;
        }
        k += 1;
    }
    let offsets: Vec<u64> = ids
        .iter()
        .map(|&i| {
            let o = at[i as usize];
            if o == FREE { 0 } else { o }
        })
        .collect();
    Layered {
        outcome: if run.fits {
            Outcome::Found
        } else {
            Outcome::Aborted
        },
        steps: run.steps.min(budget),
        offsets,
    }
}

/// The start of every window: the first buffer's start, then one cut per about [`WINDOW`]
/// buffers, at the start time (among those of the next half to one and a half windows of
/// buffers) that the least size of free buffers crosses, earliest on ties.
fn cut_points(buffers: &[Buffer], free: &[u32]) -> Vec<u64> {
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
        let from = position + WINDOW / 2;
        let to = (position + WINDOW * 3 / 2).min(free.len());
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
    base: &'r [u32],
    /// Per buffer: the lowest offset it may take (above the base buffers it meets).
    least: &'r [u64],
    steps: u64,
    budget: u64,
    interrupt: &'r Interrupt<'r>,
    config: Config,
    /// Every window so far fitted within the capacity.
    fits: bool,
    /// The height windows are fitted within: the capacity, or higher after a fallback left a
    /// buffer above it.
    room: u64,
}

/// A window's instance: its buffers clipped to its time range, pinned ones with their offset.
struct Instance {
    /// Global index of each local buffer.
    global: Vec<u32>,
    clipped: Vec<Buffer>,
    /// Per local buffer: its pin, or [`FREE`].
    pins: Vec<u64>,
    /// Local indices sorted by (start, index).
    order: Vec<u32>,
}

impl Run<'_> {
    fn out_of_time(&self) -> bool {
        self.steps >= self.budget || self.interrupt.fired()
    }

    fn instance(&self, window: &Window<'_>, at: &[u64]) -> Instance {
        let buffers = self.buffers;
        let clip = |i: u32| {
            let b = &buffers[i as usize];
            Buffer::new(b.start.max(window.start), b.end.min(window.end), b.size)
        };
        let mut global: Vec<u32> = Vec::new();
        let mut pins: Vec<u64> = Vec::new();
        let pinned = self
            .base
            .iter()
            .chain(window.carried)
            .copied()
            .filter(|&i| {
                let b = &buffers[i as usize];
                b.start < window.end && b.end > window.start
            });
        for i in pinned {
            global.push(i);
            pins.push(at[i as usize]);
        }
        for &i in window.free {
            global.push(i);
            pins.push(FREE);
        }
        let clipped: Vec<Buffer> = global.iter().map(|&i| clip(i)).collect();
        let mut order: Vec<u32> = (0..global.len() as u32).collect();
        order.sort_unstable_by_key(|&k| (clipped[k as usize].start, k));
        Instance {
            global,
            clipped,
            pins,
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
                let k = k as usize;
                if instance.pins[k] == FREE {
                    self.least[instance.global[k] as usize]
                } else {
                    0
                }
            })
            .collect();
        part.set_least(&least);
        let ranks = part.ranks(self.config.portfolio.iter().map(|&(order, _)| order));
        let nodes = (window.free.len() as u64)
            .saturating_mul(NODES_PER_BUFFER)
            .max(MIN_NODES)
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
                search.set_mode(self.config.portfolio[index].1);
                search.float_long = self.config.float;
                let outcome = search.run();
                (outcome, search.steps.min(nodes), search.offsets)
            },
        );
        self.steps = self.steps.saturating_add(race.counted);
        let Some(w) = race.decided.filter(|&w| race.runs[w].0 == Outcome::Found) else {
            return false;
        };
        let offsets = &race.runs[w].2;
        for (position, &k) in part.ids.iter().enumerate() {
            if instance.pins[k as usize] == FREE {
                at[instance.global[k as usize] as usize] = offsets[position];
            }
        }
        true
    }

    /// Places the window's free buffers greedily (lowest gap, longest and largest first)
    /// around every buffer placed so far that their whole lifetimes meet: the base layer and
    /// the buffers carried into the window. Later windows get room up to the highest of them.
    fn fallback(&mut self, window: &Window<'_>, at: &mut [u64]) {
        let buffers = self.buffers;
        let global: Vec<u32> = self
            .base
            .iter()
            .chain(window.carried)
            .chain(window.free)
            .copied()
            .collect();
        let whole: Vec<Buffer> = global.iter().map(|&i| buffers[i as usize]).collect();
        let placed = self.base.len() + window.carried.len();
        let graph = OverlapGraph::new(&whole);
        let mut offsets: Vec<u64> = global
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                if k < placed {
                    at[i as usize]
                } else {
                    heuristic::UNPLACED
                }
            })
            .collect();
        let congestion = heuristic::congestion(&whole).unwrap_or_else(|_| vec![0; whole.len()]);
        let order: Vec<u32> = heuristic::rank(&whole, Order::Lifetime, &congestion)
            .into_iter()
            .filter(|&k| k as usize >= placed)
            .collect();
        heuristic::best_fit_onto(&whole, &graph, &order, Fit::Lowest, &mut offsets);
        for (k, &i) in global.iter().enumerate().skip(placed) {
            let o = offsets[k];
            let o = if o == heuristic::UNPLACED { 0 } else { o };
            at[i as usize] = o;
            let top = o.saturating_add(buffers[i as usize].size);
            if top > self.room {
                self.room = top;
                self.fits = false;
            }
        }
    }
}
