//! The solver entry point: greedy first, then the exact search where the greedy height is not
//! good enough, part by independent part.
//!
//! Invariants: the returned placement is always valid (the greedy one at worst); the proof
//! never claims more than was shown: `Optimal` only when the height equals the lower bound or
//! every part below it was shown impossible, `DoesNotFit` only when a search was exhausted.
//! Each exact attempt runs a portfolio of static orders in parallel with a shared node budget;
//! the winner is the lowest-indexed order that concludes, so results and step counts do not
//! depend on the thread count (only `stop` can make a run end differently).

use std::collections::HashMap;
use std::rc::Rc;

use crate::heuristic::{self, Order};
use crate::part::Part;
use crate::partition::{independent_parts, split};
use crate::race::{Outcome, race};
use crate::scale;
use crate::search::{Branch, Search};
use crate::{
    Buffer, PackError, Params, Placement, check_intervals, height_of, lower_bound, unshared,
};

/// What the solver is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Any placement whose height is at most `capacity`.
    Fit {
        /// The arena size to fit within.
        capacity: u64,
    },
    /// The lowest placement the limits allow.
    Minimize,
}

/// How much work the solver may do.
#[derive(Clone, Copy)]
pub struct Limits<'a> {
    /// Search nodes over the whole solve: the deterministic budget.
    pub max_steps: u64,
    /// Polled every ~1000 steps; `true` ends the search (the CLI passes a wall-clock deadline).
    pub stop: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl Default for Limits<'_> {
    fn default() -> Self {
        Limits {
            max_steps: 2_000_000,
            stop: None,
        }
    }
}

impl std::fmt::Debug for Limits<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("max_steps", &self.max_steps)
            .field("stop", &self.stop.map(|_| "fn"))
            .finish()
    }
}

/// What the solver could show about its placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Proof {
    /// The height is the smallest possible (it equals the lower bound, or lower was shown
    /// impossible).
    Optimal,
    /// The height is within the capacity asked for (`Goal::Fit`), not shown minimal.
    Fits,
    /// Nothing fits the capacity asked for: the exact search was exhausted. The placement is
    /// the best one found, above the capacity.
    DoesNotFit,
    /// A limit was hit first: the placement is the best found, with no claim.
    Unproven,
}

/// A valid placement and what is known about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// The best placement found (valid for every goal).
    pub placement: Placement,
    /// The largest sum of sizes live at one step.
    pub lower_bound: u64,
    /// What is known about the placement.
    pub proof: Proof,
    /// Search nodes used (deterministic for a given input and `max_steps`).
    pub steps: u64,
}

/// Places the buffers for `goal` within `limits`; the placement is always valid.
pub fn solve(buffers: &[Buffer], goal: Goal, limits: &Limits) -> Result<Solution, PackError> {
    solve_with(buffers, goal, limits, &Params::default())
}

/// [`solve`] with other tuning constants (see [`Params`]).
pub fn solve_with(
    buffers: &[Buffer],
    goal: Goal,
    limits: &Limits,
    params: &Params,
) -> Result<Solution, PackError> {
    check_intervals(buffers)?;
    let lower = lower_bound(buffers)?;
    let greedy = heuristic::greedy(buffers, params, limits.stop)?;
    // The search's tables add sizes up without checks, relying on the sum of all sizes to
    // fit; where it does not (sizes near `u64::MAX` in buffers that never share a step, whose
    // height fits), the greedy placement (checked) is the answer. Before, such a set was
    // refused as an overflow of the sum of all sizes.
    let steps_left = if unshared(buffers).is_ok() {
        limits.max_steps
    } else {
        0
    };
    let mut solver = Solver {
        buffers,
        params,
        groups: HashMap::new(),
        offsets: greedy.placement.offsets,
        steps_left,
        attempt_left: limits.max_steps,
        round_scale: 0,
        steps: 0,
        stop: limits.stop,
    };
    // Which side of time goes first: the one whose start-order sweep packed lower.
    let mirror_first = greedy.mirrored.is_some_and(|m| m < greedy.forward);
    let proof = match goal {
        Goal::Fit { capacity } => solver.fit(capacity, lower),
        Goal::Minimize => solver.minimize(lower, mirror_first),
    };
    let height = height_of(buffers, &solver.offsets)?;
    Ok(Solution {
        placement: Placement {
            offsets: solver.offsets,
            height,
        },
        lower_bound: lower,
        proof,
        steps: solver.steps,
    })
}

/// A group's search tables and the static ranks of its portfolio.
type Group = (Part, Vec<Vec<u32>>);

struct Solver<'a> {
    buffers: &'a [Buffer],
    params: &'a Params,
    /// The exact search's tables of each group met so far, by (first buffer, length): a
    /// group is a fixed subset of a part, whatever the capacity tried.
    groups: HashMap<(u32, usize), Rc<Group>>,
    offsets: Vec<u64>,
    steps_left: u64,
    /// What the current exact attempt may still spend (at most `steps_left`).
    attempt_left: u64,
    /// When above `attempt_left`, the budget whose rounds the current attempt follows (its
    /// first round is 1/64 of it, at most `Params::portfolio_first_round`).
    round_scale: u64,
    steps: u64,
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
}

/// Per independent part: what is known about its height.
struct PartState {
    ids: Vec<u32>,
    /// Proven: no placement of the part is lower.
    low: u64,
    /// Height of the part's current placement.
    best: u64,
    /// The highest capacity a layered attempt gave up on (budget), if any.
    gave_up_at: Option<u64>,
    /// Exact attempts: whether the current bisection pass has made an attempt, the lowest
    /// target it may still try, and its node budget per attempt.
    pass_started: bool,
    pass_from: u64,
    pass_budget: u64,
    /// The gcd of the part's sizes: every height is a multiple of it.
    unit: u64,
    /// Whether a layered attempt was made on a part small enough for the exact search.
    tried_layered: bool,
    /// Whether the first exact attempt (at the part's lower bound) was made.
    opened: bool,
    /// Nodes spent so far by each phase of `Goal::Minimize` on an exact part (by [`Phase`]).
    spent: [u64; 3],
    /// Attempts of each phase that lowered the part's height.
    wins: [u64; 3],
    /// Passes of layered attempts on a large part that closed their room: each pass doubles
    /// the nodes of the next.
    large_pass: u32,
    /// Layered attempts whose windowed run ran out of nodes: each doubles the nodes of the
    /// next attempts (not those of each window).
    large_grow: u32,
    /// Whether the next layered attempt on a large part is quick (each window's greedy
    /// placement taken when it fits the room) or searches each window first.
    quick: bool,
    /// Whether the layered attempts still try the peak layer where the plain windowed run
    /// does not fit (until it does no better once).
    peak: bool,
    /// Where the capacity-style ladder of `Goal::Minimize` is.
    ladder: Ladder,
    /// The ladder's targets that ran out of nodes or were shown impossible.
    given_up: Vec<u64>,
}

/// The phases of `Goal::Minimize` on a part small enough for the exact search (see
/// [`Solver::exact_step`]), in their order on ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Layered = 0,
    Ladder = 1,
    Bisect = 2,
}

/// The ladder of `Goal::Minimize` (see [`PartState::next_rung`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ladder {
    /// The round capacities `unit x m x 2^k` (m odd), each once: the next rung is the
    /// greatest odd `m`, at most `m`, at scale `2^k` whose rung is below the best height (and
    /// at least the proven bound); `aborts` attempts ran out of nodes so far; `first` until
    /// the first rung is given out.
    Scan {
        k: u32,
        m: u64,
        aborts: u32,
        first: bool,
    },
    /// Halving the room between the highest rung given up on below the best height and the
    /// best height, with `Goal::Fit`'s first-pass budget, as a fit bisects below its capacity.
    Refine {
        aborts: u32,
    },
    /// Down from the best height at half the spacing of its own scale, each rung not given up
    /// on yet below `from` (the last one tried) and at least the proven bound.
    Descend {
        from: u64,
        aborts: u32,
    },
    Done,
}

impl Ladder {
    /// The descent's start: no rung tried yet, none of its attempts given up on.
    const DESCENT: Ladder = Ladder::Descend {
        from: u64::MAX,
        aborts: 0,
    };
}

/// How a layered attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layered {
    /// Within the capacity.
    Fits,
    /// Its windowed run ran out of nodes before the last window.
    Short,
    /// Every window was placed, some above the capacity (or the runs after it did not fit).
    Above,
}

/// What the ladder's next attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rung {
    target: u64,
    /// Whether it has `Goal::Fit`'s first-pass budget (the scan's first rung, the
    /// refinement) rather than whole rounds of it (`Params::ladder_rounds`).
    full: bool,
}

impl PartState {
    /// The next attempt of the ladder below `high` (the best height). First the scan of the
    /// round capacities, coarsest first, descending within a scale: `unit x m x 2^k` with `m`
    /// odd are every multiple of the unit once, so each scale halves the spacing of the one
    /// before. Coarse rungs are the capacities a caller of `Goal::Fit` asks for (1 MiB on
    /// MiniMalloc's files, then 992 KiB, ...), and whether the search succeeds at a capacity
    /// does not follow its distance to the bound (on D a fit at 1,007,616 takes 44,893 nodes,
    /// at 1,024,000 none in 2M), so the scan visits round capacities at every scale rather
    /// than closing in on one point. Once `Params::ladder_aborts` scan attempts ran out of
    /// nodes, the refinement: the middle of the room between the highest rung given up on
    /// below the best height and the best height, as `Goal::Fit` bisects below its capacity
    /// (J's 1,044,480 lies between the rung 1,040,384 and 1 MiB), until one succeeds or as
    /// many refining attempts ran out of nodes. Last the descent: from the best height
    /// `unit x m x 2^k` (m odd) down in steps of `unit x 2^(k-1)` (of `unit` when k is 0),
    /// the rungs of the next finer scale near the best with the ones of its own, each rung
    /// not tried yet, until as many attempts ran out of nodes: once the refinement has found
    /// a placement, the room it bisects is a few units wide, while a fit may succeed several
    /// rungs lower (J: 1,034,240, four rungs of 2 KiB below 1,044,480, where the scan would
    /// get only after 17 failed rungs).
    fn next_rung(&mut self, low: u64, high: u64) -> Option<Rung> {
        let unit = self.unit;
        match self.ladder {
            Ladder::Scan {
                mut k,
                mut m,
                aborts,
                first,
            } => loop {
                // unit x 2^k, or the scale is above every height: go down.
                let step = 1u64.checked_shl(k).and_then(|s| s.checked_mul(unit));
                if let Some(step) = step
                    && high > 0
                {
                    // The greatest odd multiple of `step` below `high`, at most `m`.
                    let top = (high - 1) / step;
                    let odd = m.min(if top.is_multiple_of(2) {
                        top.saturating_sub(1)
                    } else {
                        top
                    });
                    if !odd.is_multiple_of(2)
                        && let Some(target) = odd.checked_mul(step).filter(|&t| t >= low)
                    {
                        self.ladder = Ladder::Scan {
                            k,
                            m: odd.saturating_sub(2),
                            aborts,
                            first: false,
                        };
                        return Some(Rung {
                            target,
                            full: first,
                        });
                    }
                }
                if k == 0 {
                    self.ladder = Ladder::Refine { aborts: 0 };
                    return self.next_rung(low, high);
                }
                k -= 1;
                m = u64::MAX;
            },
            Ladder::Refine { .. } => {
                let from = self
                    .given_up
                    .iter()
                    .copied()
                    .filter(|&t| t < high)
                    .max()
                    .map(|floor| {
                        floor
                            .saturating_add(1)
                            .max(low)
                            .div_ceil(unit)
                            .saturating_mul(unit)
                    })
                    .filter(|&from| from < high);
                let Some(from) = from else {
                    self.ladder = Ladder::DESCENT;
                    return self.next_rung(low, high);
                };
                Some(Rung {
                    target: from + (high - 1 - from) / unit / 2 * unit,
                    full: true,
                })
            }
            Ladder::Descend { from, aborts } => {
                // `unit x 2^(k-1)` for a best height `unit x m x 2^k` (m odd), at most `high`.
                let zeros = (high / unit).trailing_zeros().clamp(1, 63) - 1;
                let step = unit
                    .checked_shl(zeros)
                    .filter(|&s| s <= high)
                    .unwrap_or(unit);
                let mut target = (from.min(high).saturating_sub(1) / step).saturating_mul(step);
                while target >= low && target > 0 && self.given_up.contains(&target) {
                    target = target.saturating_sub(step);
                }
                if target < low || target == 0 {
                    self.ladder = Ladder::Done;
                    return None;
                }
                self.ladder = Ladder::Descend {
                    from: target,
                    aborts,
                };
                Some(Rung {
                    target,
                    full: false,
                })
            }
            Ladder::Done => None,
        }
    }

    /// Records how the ladder's attempt at `target` ended.
    fn rung_ended(&mut self, target: u64, outcome: Outcome, max_aborts: u32) {
        match outcome {
            Outcome::Found => {
                if let Ladder::Refine { .. } = self.ladder {
                    self.ladder = Ladder::DESCENT;
                }
            }
            Outcome::Exhausted => {
                self.low = self.low.max(target + self.unit);
                self.given_up.push(target);
            }
            Outcome::Aborted => {
                self.given_up.push(target);
                self.ladder = match self.ladder {
                    Ladder::Scan { aborts, .. } if aborts + 1 >= max_aborts => {
                        Ladder::Refine { aborts: 0 }
                    }
                    Ladder::Scan {
                        k,
                        m,
                        aborts,
                        first,
                    } => Ladder::Scan {
                        k,
                        m,
                        aborts: aborts + 1,
                        first,
                    },
                    Ladder::Refine { aborts } if aborts + 1 >= max_aborts => Ladder::DESCENT,
                    Ladder::Refine { aborts } => Ladder::Refine { aborts: aborts + 1 },
                    Ladder::Descend { aborts, .. } if aborts + 1 >= max_aborts => Ladder::Done,
                    Ladder::Descend { from, aborts } => Ladder::Descend {
                        from,
                        aborts: aborts + 1,
                    },
                    Ladder::Done => Ladder::Done,
                };
            }
        }
    }
}

impl Solver<'_> {
    fn part_height(&self, ids: &[u32]) -> u64 {
        ids.iter()
            .map(|&i| self.offsets[i as usize] + self.buffers[i as usize].size)
            .max()
            .unwrap_or(0)
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|stop| stop())
    }

    fn parts(&self) -> Vec<PartState> {
        independent_parts(self.buffers)
            .into_iter()
            .map(|ids| self.part_state(ids))
            .collect()
    }

    /// A part's state before any attempt: `ids` its buffers, sorted by start.
    fn part_state(&self, ids: Vec<u32>) -> PartState {
        let best = self.part_height(&ids);
        let unit = ids
            .iter()
            .fold(0, |g, &i| gcd(g, self.buffers[i as usize].size))
            .max(1);
        PartState {
            ids,
            low: 0,
            best,
            gave_up_at: None,
            pass_started: false,
            pass_from: 0,
            pass_budget: self.params.minimize_first_pass_steps,
            unit,
            tried_layered: false,
            opened: false,
            spent: [0; 3],
            wins: [0; 3],
            large_pass: 0,
            large_grow: 0,
            quick: true,
            peak: true,
            ladder: Ladder::Scan {
                k: 63,
                m: u64::MAX,
                aborts: 0,
                first: true,
            },
            given_up: Vec::new(),
        }
    }

    fn fit(&mut self, capacity: u64, lower: u64) -> Proof {
        let height = self.part_height_all();
        if height <= capacity {
            return if height == lower {
                Proof::Optimal
            } else {
                Proof::Fits
            };
        }
        if lower > capacity {
            return Proof::DoesNotFit;
        }
        if self.steps_left == 0 || self.stopped() {
            return Proof::Unproven;
        }
        let mut parts = self.parts();
        for state in parts.iter_mut().filter(|s| s.best > capacity) {
            if state.ids.len() > self.params.max_exact_buffers {
                // The layered attempt proves nothing when it fails.
                let budget = (state.ids.len() as u64)
                    .saturating_mul(self.params.layered_nodes_per_buffer)
                    .min(self.steps_left);
                let attempt = scale::Attempt {
                    capacity,
                    budget,
                    scale: 1,
                    best: 0,
                    quick: false,
                    peak: true,
                };
                if self.layered(state, attempt) != Layered::Fits {
                    return Proof::Unproven;
                }
                continue;
            }
            match self.fit_part(state, capacity) {
                Outcome::Found => {}
                Outcome::Exhausted => return Proof::DoesNotFit,
                Outcome::Aborted => return Proof::Unproven,
            }
        }
        if self.part_height_all() == lower {
            Proof::Optimal
        } else {
            Proof::Fits
        }
    }

    /// Fits one part (of at most `max_exact_buffers` buffers) within `capacity`, in passes
    /// with a node budget per attempt that doubles from pass to pass. A pass tries the
    /// capacity, then the part's lower bound, then the middle of the targets between the last
    /// one it gave up on and the capacity, until they meet: any placement at or below the
    /// capacity will do, and the search is often much faster at a tighter target (its
    /// pruning is strongest there) than at the capacity itself. `Exhausted` only when the
    /// capacity itself was shown impossible.
    fn fit_part(&mut self, state: &mut PartState, capacity: u64) -> Outcome {
        let subset: Vec<Buffer> = state
            .ids
            .iter()
            .map(|&i| self.buffers[i as usize])
            .collect();
        // A subset of buffers whose full set did not overflow cannot overflow.
        let mut low = lower_bound(&subset).unwrap_or(0);
        let unit = state.unit;
        let mut budget = self.params.fit_first_pass_steps;
        loop {
            // The capacity first, then the lower bound, then bisection below the capacity.
            let mut target = capacity;
            let mut from = low;
            let mut first = true;
            loop {
                if self.steps_left == 0 || self.stopped() {
                    return Outcome::Aborted;
                }
                self.attempt_left = budget.min(self.steps_left).max(1);
                match self.attempt(state, target) {
                    Outcome::Found => return Outcome::Found,
                    Outcome::Exhausted if target == capacity => return Outcome::Exhausted,
                    Outcome::Exhausted => {
                        low = target + unit;
                        from = low;
                    }
                    Outcome::Aborted if target == capacity => {}
                    Outcome::Aborted => from = target + unit,
                }
                if from >= capacity {
                    break;
                }
                target = if first {
                    from
                } else {
                    from + (capacity - 1 - from) / unit / 2 * unit
                };
                first = false;
            }
            if budget >= self.steps_left {
                return Outcome::Aborted;
            }
            budget = budget.saturating_mul(2);
        }
    }

    fn minimize(&mut self, lower: u64, mirror_first: bool) -> Proof {
        // The part tables below cost O(n log n) more: a stop that came during the greedy
        // ends the run here.
        if self.part_height_all() <= lower {
            return Proof::Optimal;
        }
        if self.steps_left == 0 || self.stopped() {
            return Proof::Unproven;
        }
        let mut parts = self.parts();
        for state in &mut parts {
            let subset: Vec<Buffer> = state
                .ids
                .iter()
                .map(|&i| self.buffers[i as usize])
                .collect();
            // A subset of buffers whose full set did not overflow cannot overflow.
            state.low = lower_bound(&subset).unwrap_or(0);
        }
        // The same parts in the mirror of time (see `heuristic::mirrored`): a large part's
        // attempts alternate between the two, the side that has spent fewer nodes on the part
        // going next; on ties, the side whose start-order sweep packed lower (the greedy's
        // sweeps, one cheap probe of each direction). The layered attempt's windows go in
        // time order, each around the pins of the windows before it, and the base layer
        // stacks from the first step, so a set can be placed from the wrong side: on
        // `synth::training(13, 2000, true)` (8,663 buffers) the forward attempts stay 0.14%
        // above the bound after 1.32M nodes, the mirrored one proves it in 10,333.
        // Only the large parts have a mirrored state (see below), and without one no mirror
        // is built: the planner's calls, on sets of exact parts, pay nothing for it.
        let is_large = |state: &PartState| state.ids.len() > self.params.max_exact_buffers;
        let any_large = parts.iter().any(is_large);
        let mirror_buffers = if any_large {
            heuristic::mirrored(self.buffers)
        } else {
            Vec::new()
        };
        let mut mirror = Solver {
            buffers: &mirror_buffers,
            params: self.params,
            groups: HashMap::new(),
            offsets: if any_large {
                self.offsets.clone()
            } else {
                Vec::new()
            },
            steps_left: self.steps_left,
            attempt_left: self.attempt_left,
            round_scale: 0,
            steps: 0,
            stop: self.stop,
        };
        let mut mirror_parts: Vec<Option<PartState>> = parts
            .iter()
            .map(|state| {
                is_large(state).then(|| {
                    let mut ids = state.ids.clone();
                    ids.sort_unstable_by_key(|&i| (mirror_buffers[i as usize].start, i));
                    let mut mirrored = mirror.part_state(ids);
                    mirrored.low = state.low;
                    mirrored
                })
            })
            .collect();
        // Nodes spent on each part by each side.
        let mut spent = vec![[0u64; 2]; parts.len()];
        let proof = loop {
            let low = parts.iter().map(|s| s.low).max().unwrap_or(0).max(lower);
            let high = parts.iter().map(|s| s.best).max().unwrap_or(0);
            if high <= low {
                break Proof::Optimal;
            }
            if self.steps_left == 0 || self.stopped() {
                break Proof::Unproven;
            }
            // The part that sets the height; lowest index on ties.
            let Some(index) = parts.iter().position(|s| s.best == high) else {
                break Proof::Unproven;
            };
            // Only large parts: the exact search's portfolio already branches from either
            // end (its rightmost-section runs), and halving its nodes there doubles the nodes
            // MiniMalloc's D and J need to reach their best heights.
            let mirrored = mirror_parts[index].is_some()
                && match spent[index][1].cmp(&spent[index][0]) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => mirror_first,
                    std::cmp::Ordering::Greater => false,
                };
            let (next, used) = match &mut mirror_parts[index] {
                Some(mirror_state) if mirrored => {
                    mirror.steps_left = self.steps_left;
                    let step = mirror.part_step(mirror_state, low, high);
                    self.steps_left = mirror.steps_left;
                    mirror.share(mirror_state, self, &mut parts[index]);
                    step
                }
                mirror_state => {
                    let step = self.part_step(&mut parts[index], low, high);
                    if let Some(mirror_state) = mirror_state {
                        mirror.steps_left = self.steps_left;
                        self.share(&parts[index], &mut mirror, mirror_state);
                    }
                    step
                }
            };
            spent[index][usize::from(mirrored)] += used;
            if next.is_none() {
                break Proof::Unproven;
            }
        };
        self.steps += mirror.steps;
        proof
    }

    /// One attempt of `Goal::Minimize` on a part, by its size; the nodes it used, and `None`
    /// when the budget is spent.
    fn part_step(&mut self, state: &mut PartState, low: u64, high: u64) -> (Option<()>, u64) {
        let before = self.steps;
        let next = if state.ids.len() > self.params.max_exact_buffers {
            self.large_step(state, low, high)
        } else {
            self.exact_step(state, low, high)
        };
        (next, self.steps - before)
    }

    /// Gives the other side of time what this side found on a part: its placement when lower
    /// (valid in both orientations) and its proven bound.
    fn share(&self, state: &PartState, other: &mut Solver, other_state: &mut PartState) {
        if state.best < other_state.best {
            for &i in &state.ids {
                other.offsets[i as usize] = self.offsets[i as usize];
            }
            other_state.best = state.best;
        }
        other_state.low = other_state.low.max(state.low);
    }

    /// Whether an attempt with a scheduled budget of `budget` nodes can run. An attempt whose
    /// budget is more than what is left is not made (the run ends instead), so that a run
    /// with a budget of `N` nodes makes exactly the attempts that a run with `2N` makes first,
    /// with the same nodes each: the height never rises with the budget.
    fn affords(&self, budget: u64) -> bool {
        budget <= self.steps_left
    }

    /// One attempt of `Goal::Minimize` on a large part: a layered attempt (which proves
    /// nothing when it fails) at the lower bound, then at the middle of the room between the
    /// last target given up on and the best height; when that room is closed, a new pass
    /// starts from the lower bound with twice the nodes (each window searched with twice as
    /// many), so that more time is never idle. An attempt whose windowed run ran out of nodes
    /// before its last window is made again at the same target with twice the nodes (each
    /// window searched with as many as before): its windows left were placed greedily, which
    /// no looser target changes. Before, such an attempt loosened the target, and on a
    /// 20,000-buffer compiler-shaped set every attempt of a 10-CPU-second run ran out at the
    /// same window and answered the greedy height. Quick attempts (each window's greedy
    /// placement first) and searching ones alternate, starting quick, the kind that lowered
    /// the height going again: at a million buffers the search costs a pass of 10M nodes where
    /// the quick run costs 1.3-1.9M, and on compiler-shaped sets the search packs the tight
    /// windows lower. `None` when the budget is spent.
    fn large_step(&mut self, state: &mut PartState, low: u64, high: u64) -> Option<()> {
        let target = match state.gave_up_at {
            None => low,
            // More room than the attempt that ran out of budget.
            Some(gave_up) => gave_up + (high - gave_up).div_ceil(2),
        };
        if target >= high {
            state.gave_up_at = None;
            state.large_pass += 1;
            return Some(());
        }
        let scale = 1u64 << state.large_pass.min(20);
        let budget = (state.ids.len() as u64)
            .saturating_mul(self.params.layered_nodes_per_buffer)
            .saturating_mul(scale)
            .saturating_mul(1u64 << state.large_grow.min(20));
        if !self.affords(budget) {
            return None;
        }
        // A layered attempt proves nothing when it fails: only the room above the attempt's
        // target narrows (and its complete placement is kept if lower).
        let best = state.best;
        let attempt = scale::Attempt {
            capacity: target,
            budget,
            scale,
            best,
            quick: state.quick,
            peak: state.peak,
        };
        match self.layered(state, attempt) {
            Layered::Fits => {}
            Layered::Short => state.large_grow += 1,
            Layered::Above => state.gave_up_at = Some(target),
        }
        // The kind of run that lowered the height goes again; one that did not gives the
        // turn to the other.
        if state.best >= best {
            state.quick = !state.quick;
        }
        Some(())
    }

    /// One attempt of `Goal::Minimize` on a part small enough for the exact search. The first
    /// is an exact attempt at the part's lower bound; after it, three phases share the nodes:
    /// the next attempt is made by the phase that has spent the fewest nodes so far, so that
    /// none starves the others (before, the ladder ran until it ended, and on compiler-shaped
    /// parts of 1,000-1,500 buffers its rungs took seconds while the layered attempt that
    /// reaches the bound in a tenth of the nodes waited). The phases, in this order on ties:
    /// - the layered attempt at the bound (once, on parts of more than `4 x window` buffers):
    ///   long-lived buffers (saved activations) defeat the bottom-up search, and the layered
    ///   attempt often places them;
    /// - the ladder of round capacities (see [`PartState::next_rung`]): the bisection's
    ///   cheap attempts at loose targets fail where one fit at such a height succeeds
    ///   (MiniMalloc's D and J at 1 MiB);
    /// - passes of bisection with a node budget per attempt that doubles from pass to pass: a
    ///   pass tries the lower bound, then the middle of the targets between the last one it
    ///   gave up on (or proved impossible) and the best height found, until they meet. The
    ///   search is fast at some capacities and slow at others close by, so many cheap attempts
    ///   first find what one expensive attempt might not. Every height is a sum of sizes, so
    ///   a multiple of their gcd: targets between two multiples are the same target.
    ///
    /// Every budget is fixed by the schedule (never a share of what is left). `None` when
    /// the budget is spent.
    fn exact_step(&mut self, state: &mut PartState, low: u64, high: u64) -> Option<()> {
        let len = state.ids.len();
        let unit = state.unit;
        let layered = !state.tried_layered && len > 4 * self.params.window;
        let ladder = state.ladder != Ladder::Done;
        let phase = if !state.opened {
            Phase::Bisect
        } else {
            [
                (layered, Phase::Layered),
                (ladder, Phase::Ladder),
                (true, Phase::Bisect),
            ]
            .into_iter()
            .filter(|&(runnable, _)| runnable)
            .min_by_key(|&(_, phase)| {
                state.spent[phase as usize] / (1 + state.wins[phase as usize])
            })
            .map_or(Phase::Bisect, |(_, phase)| phase)
        };
        let (before, best) = (self.steps, state.best);
        match phase {
            Phase::Layered => {
                let budget =
                    (len as u64).saturating_mul(self.params.layered_first_nodes_per_buffer);
                if !self.affords(budget) {
                    return None;
                }
                state.tried_layered = true;
                let attempt = scale::Attempt {
                    capacity: low,
                    budget,
                    scale: 1,
                    best: state.best,
                    quick: false,
                    peak: true,
                };
                self.layered(state, attempt);
            }
            Phase::Ladder => {
                let Some(Rung { target, full }) = state.next_rung(low, high) else {
                    return Some(());
                };
                // A scan's rung after the first has fewer nodes than a fit's first pass, in
                // the same rounds: a fit there that succeeds within them succeeds here with
                // the same nodes, and a rung that fails costs less. The first (1 MiB on
                // MiniMalloc's files; K needs 182,734 nodes there) and the refinement get a
                // fit's first-pass budget.
                let budget = if full {
                    self.params.fit_first_pass_steps
                } else {
                    // Whole rounds of a fit's first pass (see `search_group`).
                    let first = first_round(self.params.fit_first_pass_steps, self.params);
                    let rounds = 1u64
                        .checked_shl(self.params.ladder_rounds)
                        .map_or(u64::MAX, |r| r - 1);
                    first
                        .saturating_mul(PORTFOLIO.len() as u64)
                        .saturating_mul(rounds)
                };
                if !self.affords(budget) {
                    return None;
                }
                self.attempt_left = budget.max(1);
                self.round_scale = self.params.fit_first_pass_steps;
                let outcome = self.attempt(state, target);
                self.round_scale = 0;
                state.rung_ended(target, outcome, self.params.ladder_aborts);
            }
            Phase::Bisect => {
                let from = if state.pass_started {
                    state.pass_from.max(low).div_ceil(unit).saturating_mul(unit)
                } else {
                    low
                };
                if from >= high {
                    // The next pass retries from the lower bound with twice the budget, so
                    // that a target one attempt gave up on gets as many nodes as `Goal::Fit`
                    // would spend on it, given time.
                    state.pass_budget = state.pass_budget.saturating_mul(2);
                    state.pass_started = false;
                    return Some(());
                }
                let target = if state.pass_started {
                    from + (high - 1 - from) / unit / 2 * unit
                } else {
                    low
                };
                if !self.affords(state.pass_budget) {
                    return None;
                }
                state.pass_started = true;
                state.opened = true;
                self.attempt_left = state.pass_budget.max(1);
                match self.attempt(state, target) {
                    Outcome::Found => {}
                    Outcome::Exhausted => {
                        state.low = target + unit;
                        state.pass_from = target + unit;
                    }
                    Outcome::Aborted => state.pass_from = target + 1,
                }
            }
        }
        state.spent[phase as usize] += self.steps - before;
        if state.best < best {
            state.wins[phase as usize] += 1;
        }
        Some(())
    }

    /// One layered attempt (large parts) to fit `state`'s part within `capacity`: whether it
    /// did. Its placement is kept when it fits, or when it is complete and lower than the
    /// part's current one. A complete windowed placement below `attempt.best` ends the
    /// attempt (see `scale::layered`).
    fn layered(&mut self, state: &mut PartState, attempt: scale::Attempt) -> Layered {
        let (run, peak_won) =
            scale::layered(self.buffers, &state.ids, attempt, self.stop, self.params);
        // A peak layer that did no better is not tried again on this part.
        if peak_won == Some(false) {
            state.peak = false;
        }
        self.steps += run.steps;
        self.steps_left = self.steps_left.saturating_sub(run.steps.max(1));
        let height = state
            .ids
            .iter()
            .zip(&run.offsets)
            .map(|(&i, &o)| o.saturating_add(self.buffers[i as usize].size))
            .max();
        let complete = run.offsets.len() == state.ids.len();
        if complete && height.is_some_and(|h| h < state.best || run.outcome == Outcome::Found) {
            for (&i, &offset) in state.ids.iter().zip(&run.offsets) {
                self.offsets[i as usize] = offset;
            }
            state.best = self.part_height(&state.ids);
        }
        if run.outcome == Outcome::Found {
            Layered::Fits
        } else if run.out_of_nodes {
            Layered::Short
        } else {
            Layered::Above
        }
    }

    fn part_height_all(&self) -> u64 {
        self.buffers
            .iter()
            .zip(&self.offsets)
            .map(|(b, &o)| o + b.size)
            .max()
            .unwrap_or(0)
    }

    /// One exact attempt to fit `state`'s part within `capacity`. On `Found`, the part's
    /// offsets and `best` are updated.
    fn attempt(&mut self, state: &mut PartState, capacity: u64) -> Outcome {
        let mut placed: Vec<(u32, u64)> = Vec::with_capacity(state.ids.len());
        let outcome = self.fit_group(&state.ids, 0, capacity, &mut placed);
        if outcome == Outcome::Found {
            for (i, offset) in placed {
                self.offsets[i as usize] = offset;
            }
            state.best = self.part_height(&state.ids);
        }
        outcome
    }

    /// Fits the buffers `ids` (live, sorted by start, no lifetime crossing their time range's
    /// ends) between `base` and `capacity`, pushing (buffer, offset) pairs to `placed`.
    ///
    /// Buffers live over the group's whole time range go to the bottom first: in any placement
    /// every other buffer of the group lies wholly below or above such a buffer `u` (they share
    /// a step), so lifting everything below `u` by `size(u)` and putting `u` at the bottom
    /// keeps it valid at the same height. Without them the rest often splits into independent
    /// groups, each fitted alone (recursively); a group with no such buffer goes to the exact
    /// search.
    fn fit_group(
        &mut self,
        ids: &[u32],
        mut base: u64,
        capacity: u64,
        placed: &mut Vec<(u32, u64)>,
    ) -> Outcome {
        let buffers = self.buffers;
        let first = ids.iter().map(|&i| buffers[i as usize].start).min();
        let last = ids.iter().map(|&i| buffers[i as usize].end).max();
        let (Some(first), Some(last)) = (first, last) else {
            return Outcome::Found;
        };
        let spans_all = |i: u32| {
            let b = &buffers[i as usize];
            b.start == first && b.end == last
        };
        let rest: Vec<u32> = ids.iter().copied().filter(|&i| !spans_all(i)).collect();
        if rest.len() == ids.len() {
            return self.search_group(ids, base, capacity, placed);
        }
        for &i in ids.iter().filter(|&&i| spans_all(i)) {
            let top = base.saturating_add(buffers[i as usize].size);
            if top > capacity {
                return Outcome::Exhausted;
            }
            placed.push((i, base));
            base = top;
        }
        for group in split(buffers, &rest) {
            match self.fit_group(&group, base, capacity, placed) {
                Outcome::Found => {}
                failed => return failed,
            }
        }
        Outcome::Found
    }

    /// The exact search on one group: a portfolio of configurations in rounds of doubling
    /// budgets, the lowest-indexed conclusive run deciding.
    fn search_group(
        &mut self,
        ids: &[u32],
        base: u64,
        capacity: u64,
        placed: &mut Vec<(u32, u64)>,
    ) -> Outcome {
        let Some(room) = capacity.checked_sub(base) else {
            return Outcome::Exhausted;
        };
        // Every attempt on a part meets the same groups: their tables are built once.
        let key = (ids[0], ids.len());
        let cached = match self.groups.get(&key) {
            Some(group) => Rc::clone(group),
            None => {
                // Bounded: at most a few parts' tables are kept.
                let held: usize = self.groups.keys().map(|&(_, len)| len).sum();
                if held + ids.len() > 4 * self.params.max_exact_buffers {
                    self.groups.clear();
                }
                let part = Part::new(self.buffers, ids);
                let ranks = part.ranks(PORTFOLIO.iter().map(|config| config.order));
                let group = Rc::new((part, ranks));
                self.groups.insert(key, Rc::clone(&group));
                group
            }
        };
        let (part, ranks) = &*cached;
        let mut round_budget = first_round(self.attempt_left.max(self.round_scale), self.params);
        loop {
            if self.attempt_left == 0 {
                return Outcome::Aborted;
            }
            let per_order = round_budget
                .min(self.attempt_left / ranks.len() as u64)
                .max(1);
            let race = race(ranks.len(), self.stop, None, |index, interrupt| {
                let mut search = Search::new(part, room, &ranks[index], per_order, interrupt);
                search.check_cells = self.params.stack_check_cells;
                let config = PORTFOLIO[index];
                search.set_mode(config.branch);
                search.by_component = config.by_component;
                search.prefer_flush = config.prefer_flush;
                let outcome = search.run();
                (outcome, search.steps.min(per_order), search.offsets)
            });
            let used = race.counted;
            self.steps += used;
            self.steps_left = self.steps_left.saturating_sub(used);
            self.attempt_left = self.attempt_left.saturating_sub(used).min(self.steps_left);
            match race.decided {
                Some(w) => {
                    let (outcome, _, offsets) = &race.runs[w];
                    if *outcome == Outcome::Found {
                        for (k, &i) in part.ids.iter().enumerate() {
                            placed.push((i, base + offsets[k]));
                        }
                    }
                    return *outcome;
                }
                None => {
                    if self.stopped() || per_order < round_budget {
                        return Outcome::Aborted;
                    }
                    round_budget = round_budget.saturating_mul(2);
                }
            }
        }
    }
}

/// The first round's node budget of each portfolio run in an attempt that follows the rounds
/// of a `scale`-node budget: 1/64 of it, at most `Params::portfolio_first_round`.
fn first_round(scale: u64, params: &Params) -> u64 {
    (scale / 64).clamp(1, params.portfolio_first_round)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The portfolio of an exact attempt: (static candidate order, branching section, backjump by
/// component instead of by conflict hull) per run. Every run is complete, so any exhausted run
/// proves that nothing fits; they differ in which solutions they reach first. Chosen on the
/// MiniMalloc benchmark (each configuration solves a different subset quickly).
const PORTFOLIO: [Config; 10] = [
    Config::new(Order::Wat, Branch::Tightest),
    Config::new(Order::Taw, Branch::Tightest),
    Config::new(Order::Size, Branch::Leftmost),
    Config::new(Order::Taw, Branch::Leftmost),
    Config {
        by_component: true,
        ..Config::new(Order::Wat, Branch::Tightest)
    },
    Config::new(Order::Lifetime, Branch::Tightest),
    Config::new(Order::Area, Branch::Tightest),
    Config::new(Order::Congestion, Branch::Tightest),
    Config::new(Order::Size, Branch::Rightmost),
    Config {
        prefer_flush: true,
        ..Config::new(Order::Size, Branch::Rightmost)
    },
];

/// One run of the portfolio.
#[derive(Clone, Copy)]
struct Config {
    /// Static candidate order.
    order: Order,
    /// Which lowest section to branch on.
    branch: Branch,
    /// Backjump by component instead of by conflict hull.
    by_component: bool,
    /// Try first the candidates whose top meets a neighbouring level.
    prefer_flush: bool,
}

impl Config {
    const fn new(order: Order, branch: Branch) -> Config {
        Config {
            order,
            branch,
            by_component: false,
            prefer_flush: false,
        }
    }
}
