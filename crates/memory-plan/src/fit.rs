//! Fit queries: the largest row count whose total fits a budget, and the largest KV cache that
//! fits at a given row count.
//!
//! Invariants: an answer is exact for the planner's own totals, or says it is not
//! ([`RowsFit::answer_may_be_in`]); no query assumes a total grows with `n`, and each has a
//! bound on its work.
//!
//! Totals need not grow with `n`: the plan changes at row-interval edges (other kernels, other
//! fusions), and a workspace may shrink as `n` grows (split-KV partials: fewer splits at larger
//! batches). So `max_rows` never assumes monotonicity. It walks the row intervals from the top;
//! inside one it binary-searches a lower bound of the total that is provably nondecreasing
//! (weights + states + the arena's lower bound + the workspaces whose expressions only grow with
//! `n`, each checked by `Expr::trend_in`), then evaluates real totals downward from there. The
//! answer is exact for the planner's own totals; the result says whether the totals were found
//! monotone over the range.
//!
//! Every query has a bound on its work, counted in deterministic units so the answer does not
//! depend on the machine: at most [`FIT_SCAN_PLANS`] plans (by default) in the walk over the
//! intervals and the downward scan, and at most [`FIT_SEARCH_STEPS`] steps of the exact packing
//! search over every plan and interval it builds (a plan whose arena the heuristics leave
//! above its lower bound may spend up to `PlanConfig::search_steps` of them: a few hundred such
//! plans would otherwise take minutes). When either runs out the result says which
//! ([`RowsFit::limit_reached`], [`FitLimit`]) and where the answer may still be
//! ([`RowsFit::answer_may_be_in`]), and gives the largest `n` it found to fit by galloping down
//! (at most 66 more plans and a quarter of the step budget more), never a hang. The binary
//! searches take at most 64 steps each.
//!
//! `max_kv_tokens` solves `fixed + states(kv) <= budget` in closed form when every state grows
//! linearly with tokens, and by bisection over the (always nondecreasing) state bytes otherwise
//! (sliding windows, block-scaled formats).

use std::ops::RangeInclusive;

use circuit_ir::{Format, Trend};
use serde::Serialize;

use crate::error::PlanError;
use crate::planner::{IntervalCache, IntervalPlan, Planner, Scratch, state_bytes};

/// Plans [`Planner::max_rows`] may evaluate (in its walk over the intervals and its downward
/// scan) before it gives up.
pub const FIT_SCAN_PLANS: u64 = 1024;

/// Exact-search steps [`Planner::max_rows`] may spend over all its plans and interval builds
/// before it gives up (a few seconds of packing at most: 1.5 s for a 200-buffer arena in the dev
/// profile on this project's 2-core machine).
pub const FIT_SEARCH_STEPS: u64 = 1_000_000;

/// The bound a fit query reached before it could be sure of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitLimit {
    /// It evaluated this many plans, its limit.
    Plans(u64),
    /// Its exact packing searches spent this many steps, its limit.
    SearchSteps(u64),
}

impl std::fmt::Display for FitLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitLimit::Plans(p) => write!(f, "its limit of {p} plans"),
            FitLimit::SearchSteps(s) => {
                write!(f, "its limit of {s} exact packing search steps")
            }
        }
    }
}

/// The answer of [`Planner::max_rows`]: the largest row count whose total fits a budget, and
/// how sure it is. Its `Display` says it in one or two lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowsFit {
    /// The budget in bytes.
    pub budget: u64,
    /// The row counts searched.
    pub rows_searched: RangeInclusive<u64>,
    /// The largest `n` in the range whose total fits; `None` when none does. When a work limit
    /// ran out (`answer_may_be_in` is set), the largest `n` found to fit, below that range.
    pub max_rows: Option<u64>,
    /// The total at `max_rows`, in bytes.
    pub total_at_max_rows: Option<u64>,
    /// Whether totals were found nondecreasing in `n` over the range: when true, every `n`
    /// below `max_rows` fits too.
    pub totals_monotone: bool,
    /// Why `totals_monotone` is false: a drop at an interval edge (where the fusion plan
    /// changes), a workspace that may shrink as `n` grows, or intervals the query stopped
    /// before checking. Then some `n` below `max_rows` may not fit.
    pub why_not_monotone: Option<String>,
    /// Set when a work limit ran out before the answer was certain: the largest `n` that fits
    /// is in this range (whose row counts were not all examined) or is `max_rows`; no `n`
    /// above it fits.
    pub answer_may_be_in: Option<RangeInclusive<u64>>,
    /// Plans evaluated in the walk and the scan when the answer was found or the query gave
    /// up (the gallop after giving up is not counted).
    pub plans_evaluated: u64,
    /// Exact packing search steps spent, all plans and interval builds counted.
    pub search_steps_spent: u64,
    /// The work limit that ran out, when one did (then `answer_may_be_in` is set, or, when the
    /// answer was already found, `totals_monotone` is false: the intervals below were not all
    /// checked).
    pub limit_reached: Option<FitLimit>,
}

/// The largest KV cache that fits at one row count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KvFit {
    /// The row count.
    pub rows: u64,
    /// The budget in bytes.
    pub budget: u64,
    /// Sequences the tokens are spread over.
    pub sequences: u64,
    /// The most KV tokens (over all sequences) that fit; `None` when even none fits;
    /// `u64::MAX` when the states stop growing (every state is windowed) below the budget.
    pub max_kv_tokens: Option<u64>,
    /// Bytes per cached token when the states grow linearly (the closed form's slope).
    pub bytes_per_token: Option<u64>,
}

/// A fit query that failed: the row count it was planning, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FitFailure {
    /// The row count being planned.
    pub n: u64,
    /// The planner's error.
    pub error: Box<PlanError>,
}

/// Attaches the row count being planned to an error.
pub(crate) fn at(n: u64) -> impl Fn(PlanError) -> FitFailure {
    move |error| FitFailure {
        n,
        error: Box::new(error),
    }
}

impl Planner<'_> {
    /// The largest `n` in `range` whose total is at most `budget`, scanning at most
    /// [`FIT_SCAN_PLANS`] plans.
    pub fn max_rows(&self, range: RangeInclusive<u64>, budget: u64) -> Result<RowsFit, PlanError> {
        self.max_rows_within(range, budget, FIT_SCAN_PLANS)
    }

    /// [`Planner::max_rows`] with the scan limited to `scan_plans` plans.
    pub fn max_rows_within(
        &self,
        range: RangeInclusive<u64>,
        budget: u64,
        scan_plans: u64,
    ) -> Result<RowsFit, PlanError> {
        let mut cache = IntervalCache::new(self);
        self.max_rows_cached(&mut cache, range, budget, scan_plans)
            .map_err(|f| *f.error)
    }

    /// The largest `n` in `range` that fits, with the interval plans of `cache` (built there
    /// when missing, kept for later queries).
    pub(crate) fn max_rows_cached(
        &self,
        cache: &mut IntervalCache,
        range: RangeInclusive<u64>,
        budget: u64,
        scan_plans: u64,
    ) -> Result<RowsFit, FitFailure> {
        let mut fit = RowsFit {
            budget,
            rows_searched: range.clone(),
            max_rows: None,
            total_at_max_rows: None,
            totals_monotone: true,
            why_not_monotone: None,
            answer_may_be_in: None,
            plans_evaluated: 0,
            search_steps_spent: 0,
            limit_reached: None,
        };
        if range.is_empty() {
            return Ok(fit);
        }
        if *range.start() == 0 {
            return Err(at(0)(PlanError::ZeroRows));
        }
        let mut scratch = Scratch::default();
        // The limit that has run out, if any, checked before each plan or build.
        let limit = |plans: u64, scratch: &Scratch| {
            if plans >= scan_plans {
                Some(FitLimit::Plans(scan_plans))
            } else if scratch.search_steps >= FIT_SEARCH_STEPS {
                Some(FitLimit::SearchSteps(FIT_SEARCH_STEPS))
            } else {
                None
            }
        };
        let mut above: Option<(u64, u64)> = None; // (n, total) at the start of the interval above
        let mut gave_up_at: Option<u64> = None;
        for clipped in cache.cuts_in(range.clone()) {
            let (lo, hi) = (*clipped.start(), *clipped.end());
            if let Some(why) = limit(fit.plans_evaluated, &scratch) {
                fit.limit_reached = Some(why);
                if fit.max_rows.is_none() {
                    // Nothing at or below `hi` examined yet.
                    gave_up_at = Some(hi);
                } else {
                    fit.totals_monotone = false;
                    fit.why_not_monotone = Some(format!(
                        "not checked for n up to {hi}: the query stopped at {why}"
                    ));
                }
                break;
            }
            let interval = cache
                .get_or_build_counted(self, lo, &mut scratch.search_steps)
                .map_err(at(lo))?;
            let shrinking = self.shrinking_term(interval);
            if let Some(why) = &shrinking {
                fit.totals_monotone = false;
                fit.why_not_monotone.get_or_insert_with(|| why.clone());
            }
            // Interval edge: the plan above starts at `above.0 = hi + 1`.
            fit.plans_evaluated += 1;
            let top = self.total_at(interval, hi, &mut scratch)?;
            if let Some((n_above, t_above)) = above
                && top > t_above
            {
                fit.totals_monotone = false;
                fit.why_not_monotone.get_or_insert_with(|| {
                    format!(
                        "the total drops from {top} bytes at n = {hi} to {t_above} at n = {n_above}, where the fusion plan changes"
                    )
                });
            }
            if top <= budget && fit.max_rows.is_none() {
                fit.max_rows = Some(hi);
                fit.total_at_max_rows = Some(top);
            }
            let bottom = if lo == hi {
                top
            } else {
                fit.plans_evaluated += 1;
                self.total_at(interval, lo, &mut scratch)?
            };
            above = Some((lo, bottom));
            if fit.max_rows.is_some() {
                continue;
            }
            // Largest n whose nondecreasing lower bound fits; nothing above it can fit.
            let mut start_scan = hi;
            if self.rows_grow(interval) {
                let bound =
                    |n: u64, s: &mut Scratch| self.total_lower_bound(interval, n, s).map_err(at(n));
                if bound(lo, &mut scratch)? > budget {
                    continue;
                }
                if bound(hi, &mut scratch)? > budget {
                    let (mut ok, mut bad) = (lo, hi);
                    while bad - ok > 1 {
                        let mid = ok + (bad - ok) / 2;
                        if bound(mid, &mut scratch)? <= budget {
                            ok = mid;
                        } else {
                            bad = mid;
                        }
                    }
                    start_scan = ok;
                }
            }
            // `hi` was planned above; the scan goes down from the first n not planned.
            let mut n = if start_scan == hi {
                match hi.checked_sub(1).filter(|&m| m >= lo) {
                    Some(m) => m,
                    None => continue,
                }
            } else {
                start_scan
            };
            loop {
                if let Some(why) = limit(fit.plans_evaluated, &scratch) {
                    fit.limit_reached = Some(why);
                    gave_up_at = Some(n);
                    break;
                }
                fit.plans_evaluated += 1;
                let total = if n == lo {
                    bottom
                } else {
                    self.total_at(interval, n, &mut scratch)?
                };
                if total <= budget {
                    fit.max_rows = Some(n);
                    fit.total_at_max_rows = Some(total);
                    break;
                }
                if n == lo {
                    break;
                }
                n -= 1;
            }
            if gave_up_at.is_some() {
                break;
            }
        }
        if let Some(stop) = gave_up_at {
            self.gallop_down(cache, &mut fit, *range.start(), stop, &mut scratch)?;
        }
        fit.search_steps_spent = scratch.search_steps;
        Ok(fit)
    }

    /// After the query gave up at `stop` (not examined; everything above it failed or could not
    /// fit): tries `stop`, `stop - 1`, `stop - 2`, `stop - 4`, ... down to `first` and keeps the
    /// first `n` that fits, so the answer is bracketed by at most 66 more plans; these may spend
    /// a quarter of [`FIT_SEARCH_STEPS`] more, after which the bracket is left as it is.
    fn gallop_down(
        &self,
        cache: &mut IntervalCache,
        fit: &mut RowsFit,
        first: u64,
        stop: u64,
        scratch: &mut Scratch,
    ) -> Result<(), FitFailure> {
        fit.answer_may_be_in = Some(first..=stop);
        let allowance = scratch.search_steps.saturating_add(FIT_SEARCH_STEPS / 4);
        let mut back = 0u64;
        loop {
            if scratch.search_steps >= allowance {
                break;
            }
            let n = stop.saturating_sub(back).max(first);
            let interval = cache
                .get_or_build_counted(self, n, &mut scratch.search_steps)
                .map_err(at(n))?;
            let total = self.total_at(interval, n, scratch)?;
            if total <= fit.budget {
                fit.max_rows = Some(n);
                fit.total_at_max_rows = Some(total);
                // Found at `stop` itself, the answer is exact: everything above failed.
                fit.answer_may_be_in = (n < stop).then(|| n + 1..=stop);
                break;
            }
            if n == first {
                // Nothing from `first` up fits, but the n between the probes were not planned.
                break;
            }
            back = back.saturating_mul(2).max(1);
        }
        Ok(())
    }

    /// The most KV tokens that fit at `n` rows within `budget` (sequences as configured).
    pub fn max_kv_tokens(&self, n: u64, budget: u64) -> Result<KvFit, PlanError> {
        let plan = self.plan(n)?;
        let fixed = plan.totals.total - plan.totals.states;
        Ok(self.kv_fit(n, fixed, budget, self.config.sequences))
    }

    /// The most KV tokens that fit beside `fixed` bytes (everything but the states, at `n`)
    /// within `budget`, over `sequences` sequences.
    pub(crate) fn kv_fit(&self, n: u64, fixed: u64, budget: u64, sequences: u64) -> KvFit {
        let states = |kv: u64| state_bytes(self.circuit, kv, sequences).ok();
        let slope = self.linear_slope(sequences);
        let mut fit = KvFit {
            rows: n,
            budget,
            sequences,
            max_kv_tokens: None,
            bytes_per_token: slope.map(|(per_token, _)| per_token),
        };
        let Some(avail) = budget.checked_sub(fixed) else {
            return fit;
        };
        let fits = |kv: u64| states(kv).is_some_and(|s| s <= avail);
        if !fits(0) {
            return fit;
        }
        fit.max_kv_tokens = Some(match slope {
            Some((0, _)) => u64::MAX,
            // Linear states: bytes(kv) = per_token * kv + at_zero.
            Some((per_token, at_zero)) => (avail - at_zero) / per_token,
            None => largest_true(0, &fits),
        });
        fit
    }

    /// The most sequences of `context` tokens each whose states fit beside `fixed` bytes within
    /// `budget`: `None` when not even one does, `Some(u64::MAX)` when the states never fill it.
    pub(crate) fn max_sequences(&self, fixed: u64, context: u64, budget: u64) -> Option<u64> {
        let avail = budget.checked_sub(fixed)?;
        let fits = |s: u64| {
            s.checked_mul(context)
                .and_then(|kv| state_bytes(self.circuit, kv, s).ok())
                .is_some_and(|b| b <= avail)
        };
        // States never shrink as sequences (and their tokens) grow: a bisection is exact.
        match largest_true(0, &fits) {
            0 => None,
            s => Some(s),
        }
    }

    /// `(bytes per token, bytes at zero tokens)` when every state's bytes are linear in the
    /// tokens it holds and no state is windowed.
    fn linear_slope(&self, sequences: u64) -> Option<(u64, u64)> {
        let mut per_token = 0u64;
        for state in self.circuit.states().values() {
            let linear = !matches!(state.format, Format::Fp8Block { .. } | Format::Fp8PerTensor);
            if state.window.is_some() || !linear {
                return None;
            }
            per_token = per_token.checked_add(state.format.bytes(1, state.per_token).ok()?)?;
        }
        let at_zero = state_bytes(self.circuit, 0, sequences).ok()?;
        Some((per_token, at_zero))
    }

    fn total_at(
        &self,
        interval: &IntervalPlan,
        n: u64,
        scratch: &mut Scratch,
    ) -> Result<u64, FitFailure> {
        Ok(self
            .plan_in(interval, n, scratch)
            .map_err(at(n))?
            .totals
            .total)
    }

    /// weights + states + the arena's lower bound + the non-arena workspaces that only grow:
    /// a lower bound of the total, nondecreasing in `n` when [`Self::rows_grow`] holds.
    fn total_lower_bound(
        &self,
        interval: &IntervalPlan,
        n: u64,
        scratch: &mut Scratch,
    ) -> Result<u64, PlanError> {
        interval.terms.values(
            self.circuit,
            &self.bound,
            n,
            &mut scratch.term_values,
            &mut scratch.term_owners,
        )?;
        // Terms that may shrink count as 0 in the bound (and in the arena's sizes).
        for (value, shape) in scratch.term_values.iter_mut().zip(interval.terms.shapes()) {
            if self.term_trend(shape.family, shape.workspace) != Trend::Nondecreasing
                && self.term_trend(shape.family, shape.workspace) != Trend::Constant
            {
                *value = 0;
            }
        }
        interval.arena.sizes(
            self.circuit,
            n,
            &scratch.term_values,
            &mut scratch.class_sizes,
            &mut scratch.sizes,
        )?;
        let (_, lower_bound, _) = interval.arena.bounds(&scratch.class_sizes, n)?;
        let charged: u64 = scratch
            .term_values
            .iter()
            .zip(interval.terms.shapes())
            .filter(|(_, s)| !s.arena)
            .map(|(v, _)| *v)
            .fold(0u64, u64::saturating_add);
        Ok([self.weights, self.states, lower_bound, charged]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b)))
    }

    /// Whether every materialized edge's rows grow with `n` (so the arena's lower bound does).
    fn rows_grow(&self, interval: &IntervalPlan) -> bool {
        interval.arena.slots.iter().all(|slot| match slot.kind {
            crate::arena::BufferKind::Edge { edge } => matches!(
                self.circuit.edges()[edge].rows.expr().trend_in("n"),
                Trend::Nondecreasing | Trend::Constant
            ),
            crate::arena::BufferKind::Workspace { .. } => true,
        })
    }

    fn term_trend(&self, family: kernel_families::FamilyIdx, workspace: usize) -> Trend {
        let ws = &self.families.families()[family].workspaces[workspace];
        ws.bytes
            .iter()
            .fold(Trend::Constant, |acc, e| match (acc, e.trend_in("n")) {
                (Trend::Constant, t) | (t, Trend::Constant) => t,
                (a, b) if a == b => a,
                _ => Trend::Unknown,
            })
    }

    /// A workspace of the interval that may shrink as `n` grows, described.
    fn shrinking_term(&self, interval: &IntervalPlan) -> Option<String> {
        interval.terms.shapes().iter().find_map(|s| {
            let trend = self.term_trend(s.family, s.workspace);
            (!matches!(trend, Trend::Nondecreasing | Trend::Constant)).then(|| {
                format!(
                    "workspace `{}` of family `{}` is not nondecreasing in n on rows {}..={}",
                    s.name,
                    s.family_id,
                    interval.rows.start(),
                    interval.rows.end()
                )
            })
        })
    }
}

/// The largest `x >= lo` with `holds(x)`, given `holds(lo)` and that `holds` never turns true
/// again once false: at most 64 probes.
fn largest_true(lo: u64, holds: &dyn Fn(u64) -> bool) -> u64 {
    if holds(u64::MAX) {
        return u64::MAX;
    }
    let (mut ok, mut bad) = (lo, u64::MAX);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if holds(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    ok
}
