//! The plan report: everything `cargo xtask plan` answers, computed by the library so a
//! downstream compiler gets the same answers without the command line. Given a planner, the
//! row counts and a [`ReportQuery`] (budget, context length), it plans every row, streams each
//! plan to a sink in row order, and then answers in serving terms: the widest workspaces, the
//! largest `n` that fits, the KV capacity at that `n`, the concurrency at a context length, the
//! longest context for the configured sequences, and a verdict naming the term that breaks the
//! budget.
//!
//! Invariants:
//! - Rows are planned in chunks of [`CHUNK_ROWS`], in parallel inside a chunk, and handed to the
//!   sink in the order given: the sink sees the same rows in the same order at any thread
//!   count, and memory is bounded by a chunk, never by the number of rows.
//! - Each row interval is fused and packed once ([`IntervalCache`]) and reused by the sweep,
//!   the fit query, the KV capacity and the concurrency answers.
//! - The workspace terms' node lists are a table built once per report ([`PlanReport::node_lists`]);
//!   a row refers to a list by its index, so output need not repeat them per row.
//! - An error at a row count the caller did not ask for (the fit query walks every row of the
//!   range) names that row count and the query that planned it.
//! - One planner, one report: a report per rank's circuit is how several ranks would be
//!   reported (nothing here assumes a single device beyond its planner).

use std::collections::HashMap;
use std::sync::Arc;

use circuit_ir::NodeIdx;
use serde::Serialize;

use crate::error::PlanError;
use crate::fit::{FIT_SCAN_PLANS, FitFailure, KvFit, RowsFit};
use crate::planner::{ArenaLayout, IntervalCache, MemoryPlan, Planner};
use crate::workspace::{WorkspaceTerm, widest};

/// Rows planned together before they are handed to the sink: large enough to keep every
/// thread busy, small enough that a chunk of plans stays a few MiB.
pub const CHUNK_ROWS: usize = 256;

/// What to answer besides the plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportQuery {
    /// The memory budget in bytes; `None`: no fit, headroom or serving answer.
    pub budget: Option<u64>,
    /// A context length (tokens per sequence) to answer the maximum concurrency for.
    pub max_model_len: Option<u64>,
    /// The longest sequence the model takes (its context window), when known: the context
    /// answer says when the cache holds more per sequence than the model reads.
    pub model_context: Option<u64>,
    /// Plans the fit query's downward scan may evaluate before it gives up.
    pub scan_plans: u64,
}

impl ReportQuery {
    /// A query with `budget`, no context length and the default scan limit.
    pub fn new(budget: Option<u64>) -> ReportQuery {
        ReportQuery {
            budget,
            max_model_len: None,
            model_context: None,
            scan_plans: FIT_SCAN_PLANS,
        }
    }
}

/// A report that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Planning a row count the caller asked for failed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A query planned a row count the caller did not ask for, and that failed.
    #[error(
        "{query} planned n = {n}, a row count not among the rows asked, and failed there: {error}"
    )]
    Unasked {
        /// The query and why it planned `n`.
        query: String,
        /// The row count.
        n: u64,
        /// The planner's error (boxed: it would make every `Result` of the report large).
        error: Box<PlanError>,
    },
    /// No row count to plan.
    #[error("no row count to plan")]
    NoRows,
    /// A context length of 0 tokens.
    #[error("a context length of 0 tokens: a sequence holds at least 1 token")]
    ZeroContext,
}

/// A term of the total, in the order the verdict adds them up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    /// The weights.
    Weights,
    /// The states (KV cache and per-sequence state).
    States,
    /// The workspaces outside the arena.
    Workspaces,
    /// The activation arena.
    Activations,
}

impl Term {
    /// The term's name as the reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Term::Weights => "weights",
            Term::States => "states",
            Term::Workspaces => "workspaces",
            Term::Activations => "activations",
        }
    }
}

/// Where a row count goes over the budget: adding weights, states, workspaces and activations
/// in that order, the first term that takes the sum above the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Breach {
    /// The row count.
    pub rows: u64,
    /// The term that takes the sum above the budget.
    pub term: Term,
    /// That term's bytes.
    pub term_bytes: u64,
    /// The total.
    pub total: u64,
    /// Bytes above the budget.
    pub over: u64,
}

impl Breach {
    fn of(plan: &MemoryPlan, budget: u64) -> Option<Breach> {
        let t = &plan.totals;
        if t.total <= budget {
            return None;
        }
        let terms = [
            (Term::Weights, t.weights),
            (Term::States, t.states),
            (Term::Workspaces, t.workspaces),
            (Term::Activations, t.activations),
        ];
        let mut sum = 0u64;
        let (term, term_bytes) = terms
            .into_iter()
            .find(|&(_, bytes)| {
                sum = sum.saturating_add(bytes);
                sum > budget
            })
            .unwrap_or(terms[3]);
        Some(Breach {
            rows: plan.rows,
            term,
            term_bytes,
            total: t.total,
            over: t.total - budget,
        })
    }
}

/// The verdict on the rows asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The budget.
    pub budget: u64,
    /// Row counts planned.
    pub rows: u64,
    /// Row counts whose total fits.
    pub fitting: u64,
    /// The first row count (in the order asked) that does not fit, and why.
    pub first_breach: Option<Breach>,
}

impl Verdict {
    /// Every row count asked fits.
    pub fn fits(&self) -> bool {
        self.fitting == self.rows
    }
}

/// The maximum concurrency at a context length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Concurrency {
    /// The row count it is answered at (the largest that fits).
    pub rows: u64,
    /// Tokens per sequence.
    pub context: u64,
    /// Sequences of `context` tokens whose states fit; 0 when not one does; `u64::MAX` when
    /// the states never fill the budget.
    pub max_sequences: u64,
}

/// The longest context for the configured sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContextFit {
    /// The row count it is answered at (the largest that fits).
    pub rows: u64,
    /// Sequences.
    pub sequences: u64,
    /// Tokens per sequence that fit; `None` when not even an empty cache fits; `u64::MAX`
    /// when the states stop growing below the budget.
    pub max_context: Option<u64>,
    /// The longest sequence the model takes, when known ([`ReportQuery::model_context`]): a
    /// sequence is at most this long however many tokens the cache holds.
    pub model_context: Option<u64>,
}

/// What one row leaves for the KV cache under the budget: the serving answers of the whole
/// report, at this row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RowServing {
    /// KV tokens that fit beside the row's weights, activations and workspaces, over the
    /// configured sequences; `None` when not even an empty cache fits; `u64::MAX` when the
    /// states never fill the budget.
    pub kv_tokens: Option<u64>,
    /// Sequences of the queried context length whose states fit beside them; 0 when not one
    /// does, `u64::MAX` when the states never fill the budget; `None` without a context length.
    pub max_sequences: Option<u64>,
}

/// One planned row as the sink sees it.
#[derive(Debug, Clone, Copy)]
pub struct RowReport<'r> {
    /// The plan.
    pub plan: &'r MemoryPlan,
    /// `budget - total`: negative when the row does not fit; `None` without a budget.
    pub headroom: Option<i128>,
    /// For each of the plan's workspace terms, the index of its nodes in
    /// [`PlanReport::node_lists`].
    pub node_lists: &'r [usize],
    /// The KV capacity and concurrency at this row; `None` without a budget.
    pub serving: Option<RowServing>,
}

/// The answers after every row is planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSummary {
    /// Row counts planned.
    pub rows: u64,
    /// The largest groups made for uncovered nodes in one plan.
    pub placeholders: usize,
    /// Per (family, workspace) the term with the largest bytes over the rows planned.
    pub widest: Vec<WorkspaceTerm>,
    /// For each widest term, the index of its nodes in [`PlanReport::node_lists`].
    pub widest_lists: Vec<usize>,
    /// The largest total planned, with its row count (the first on a tie).
    pub largest_total: Option<(u64, u64)>,
    /// The largest `n` in the range of the rows asked that fits the budget.
    pub fit: Option<RowsFit>,
    /// Whether the fit's [`RowsFit::why_not_monotone`] changes an answer: a row planned below
    /// the largest `n` that fits does not fit, so the fitting rows are not all the rows up to
    /// it.
    pub note_matters: bool,
    /// The KV capacity at the largest `n` that fits.
    pub kv: Option<KvFit>,
    /// The maximum concurrency at the queried context length, at the largest `n` that fits.
    pub concurrency: Option<Concurrency>,
    /// The longest context for the configured sequences, at the largest `n` that fits.
    pub context: Option<ContextFit>,
    /// The verdict on the rows asked.
    pub verdict: Option<Verdict>,
}

/// A report in the making: a planner, its rows and query, and the interval plans built for
/// them.
pub struct PlanReport<'p, 'r> {
    planner: &'p Planner<'p>,
    rows: &'r [u64],
    query: ReportQuery,
    cache: IntervalCache,
    node_lists: Vec<Arc<[NodeIdx]>>,
    list_index: HashMap<usize, usize>,
}

impl<'p, 'r> PlanReport<'p, 'r> {
    /// Checks the inputs and builds the interval plans of `rows` (in parallel), so the node
    /// lists table is complete before the first row is planned.
    pub fn new(
        planner: &'p Planner<'p>,
        rows: &'r [u64],
        query: ReportQuery,
    ) -> Result<PlanReport<'p, 'r>, ReportError> {
        if rows.is_empty() {
            return Err(ReportError::NoRows);
        }
        if query.max_model_len == Some(0) {
            return Err(ReportError::ZeroContext);
        }
        let mut cache = IntervalCache::new(planner);
        cache.ensure(planner, rows)?;
        let mut node_lists: Vec<Arc<[NodeIdx]>> = Vec::new();
        let mut by_content: HashMap<Arc<[NodeIdx]>, usize> = HashMap::new();
        let mut list_index = HashMap::new();
        for interval in cache.built() {
            for shape in interval.terms.shapes() {
                let index = *by_content.entry(shape.nodes.clone()).or_insert_with(|| {
                    node_lists.push(shape.nodes.clone());
                    node_lists.len() - 1
                });
                list_index.insert(Arc::as_ptr(&shape.nodes) as *const NodeIdx as usize, index);
            }
        }
        Ok(PlanReport {
            planner,
            rows,
            query,
            cache,
            node_lists,
            list_index,
        })
    }

    /// The planner.
    pub fn planner(&self) -> &'p Planner<'p> {
        self.planner
    }

    /// The query.
    pub fn query(&self) -> &ReportQuery {
        &self.query
    }

    /// The distinct node lists of the workspace terms of every row interval planned, each once;
    /// rows and widest terms refer to them by index.
    pub fn node_lists(&self) -> &[Arc<[NodeIdx]>] {
        &self.node_lists
    }

    fn list_of(&self, term: &WorkspaceTerm) -> usize {
        self.list_index
            .get(&(Arc::as_ptr(&term.nodes) as *const NodeIdx as usize))
            .copied()
            .unwrap_or(usize::MAX)
    }

    /// Plans every row, handing each to `sink` in the order asked, then answers the queries.
    /// `progress` is called once per planned row, from any thread.
    pub fn run<E: From<ReportError>>(
        &mut self,
        progress: &(dyn Fn() + Sync),
        mut sink: impl FnMut(&RowReport<'_>) -> Result<(), E>,
    ) -> Result<ReportSummary, E> {
        let budget = self.query.budget;
        let mut summary = ReportSummary {
            rows: 0,
            placeholders: 0,
            widest: Vec::new(),
            widest_lists: Vec::new(),
            largest_total: None,
            fit: None,
            note_matters: false,
            kv: None,
            concurrency: None,
            context: None,
            verdict: budget.map(|budget| Verdict {
                budget,
                rows: 0,
                fitting: 0,
                first_breach: None,
            }),
        };
        let mut lists = Vec::new();
        for chunk in self.rows.chunks(CHUNK_ROWS) {
            let plans = self
                .planner
                .plan_rows(&self.cache, chunk, progress)
                .map_err(ReportError::from)?;
            for plan in &plans {
                lists.clear();
                lists.extend(plan.workspaces.iter().map(|t| self.list_of(t)));
                let row = RowReport {
                    plan,
                    headroom: budget.map(|b| i128::from(b) - i128::from(plan.totals.total)),
                    node_lists: &lists,
                    serving: budget
                        .map(|b| self.planner.row_serving(plan, b, self.query.max_model_len)),
                };
                sink(&row)?;
                summary.rows += 1;
                summary.placeholders = summary.placeholders.max(plan.placeholders);
                if summary
                    .largest_total
                    .is_none_or(|(_, t)| plan.totals.total > t)
                {
                    summary.largest_total = Some((plan.rows, plan.totals.total));
                }
                if let Some(v) = &mut summary.verdict {
                    v.rows += 1;
                    match Breach::of(plan, v.budget) {
                        None => v.fitting += 1,
                        Some(b) => {
                            v.first_breach.get_or_insert(b);
                        }
                    }
                }
            }
            let merged = widest(
                [std::mem::take(&mut summary.widest)]
                    .into_iter()
                    .chain(plans.into_iter().map(|p| p.workspaces)),
            );
            summary.widest = merged;
        }
        summary.widest_lists = summary.widest.iter().map(|t| self.list_of(t)).collect();
        if let Some(budget) = budget {
            self.answer(&mut summary, budget)?;
        }
        Ok(summary)
    }

    /// The fit query over the range of the rows, then the serving answers at its `n`.
    fn answer(&mut self, summary: &mut ReportSummary, budget: u64) -> Result<(), ReportError> {
        let (lo, hi) = self
            .rows
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &n| (lo.min(n), hi.max(n)));
        let fit = self
            .planner
            .max_rows_cached(&mut self.cache, lo..=hi, budget, self.query.scan_plans)
            .map_err(|f| {
                let query =
                    format!("the fit query (the largest n in {lo}..={hi} within {budget} bytes)");
                query_error(self.rows, query, f)
            })?;
        summary.note_matters = fit.why_not_monotone.is_some()
            && matches!(
                (fit.max_rows, summary.verdict.and_then(|v| v.first_breach)),
                (Some(n), Some(b)) if b.rows < n
            );
        let at = fit.max_rows;
        summary.fit = Some(fit);
        let Some(n) = at else {
            return Ok(());
        };
        let planner = self.planner;
        let why = || format!("the KV capacity at n = {n}, the largest n that fits");
        let interval = self
            .cache
            .get_or_build(planner, n)
            .map_err(|error| query_error(self.rows, why(), crate::fit::at(n)(error)))?;
        let plan = planner
            .plan_in(interval, n, &mut Default::default())
            .map_err(|error| query_error(self.rows, why(), crate::fit::at(n)(error)))?;
        let fixed = plan.totals.total - plan.totals.states;
        let sequences = planner.config().sequences;
        summary.kv = Some(planner.kv_fit(n, fixed, budget, sequences));
        summary.concurrency = self.query.max_model_len.map(|context| Concurrency {
            rows: n,
            context,
            max_sequences: planner.max_sequences(fixed, context, budget).unwrap_or(0),
        });
        if sequences > 0 {
            let tokens = planner.kv_fit(n, fixed, budget, sequences).max_kv_tokens;
            summary.context = Some(ContextFit {
                rows: n,
                sequences,
                max_context: tokens.map(|t| if t == u64::MAX { t } else { t / sequences }),
                model_context: self.query.model_context,
            });
        }
        Ok(())
    }

    /// The arena at `n`, with the interval plans already built (the rows' intervals and those
    /// the fit query walked).
    pub fn arena_layout(&mut self, n: u64) -> Result<ArenaLayout, ReportError> {
        let interval = self.cache.get_or_build(self.planner, n)?;
        Ok(self.planner.arena_layout_in(interval, n)?)
    }
}

impl Planner<'_> {
    /// The KV tokens and the sequences of `max_model_len` tokens that fit beside `plan` (one of
    /// this planner's) within `budget`: the report's serving answers at the plan's row.
    pub fn row_serving(
        &self,
        plan: &MemoryPlan,
        budget: u64,
        max_model_len: Option<u64>,
    ) -> RowServing {
        let fixed = plan.totals.total - plan.totals.states;
        let kv = self.kv_fit(plan.rows, fixed, budget, self.config().sequences);
        RowServing {
            kv_tokens: kv.max_kv_tokens,
            max_sequences: max_model_len
                .map(|context| self.max_sequences(fixed, context, budget).unwrap_or(0)),
        }
    }
}

/// An error of a query: the planner's own when `n` was asked, else one naming the query.
fn query_error(rows: &[u64], query: String, f: FitFailure) -> ReportError {
    if rows.contains(&f.n) {
        ReportError::Plan(*f.error)
    } else {
        ReportError::Unasked {
            query,
            n: f.n,
            error: f.error,
        }
    }
}
