//! Plans of a parallel layout: one [`MemoryPlan`] per distinct rank circuit (the circuits a
//! sharded import emits, see circuit-hf's `import_parallel`) and the layout's KV capacity.
//!
//! Invariants: every rank maps to exactly one distinct plan (`rank_plan[r] < plans.len()`);
//! ranks sharing a circuit share its plan (planned once); the KV capacity of the layout is the
//! minimum over its ranks, as engines size one cache for all ranks (vLLM takes the minimum of
//! the workers' available KV memory, `v1/engine/core.py`), and `None` when some rank fits none.

use circuit_ir::Circuit;
use fuser::{Rules, Settings};
use kernel_families::Families;

use crate::error::PlanError;
use crate::fit::KvFit;
use crate::planner::{MemoryPlan, PlanConfig, Planner};

/// The plan of one distinct rank circuit.
#[derive(Debug, Clone)]
pub struct RankPlan {
    /// The plan at the requested row count.
    pub plan: MemoryPlan,
    /// Its KV fit under the per-rank budget.
    pub kv: KvFit,
}

/// The plans of every distinct rank of a layout.
#[derive(Debug, Clone)]
pub struct RankPlans {
    /// One per distinct circuit, in the order given.
    pub plans: Vec<RankPlan>,
    /// For each global rank, the index of its plan.
    pub rank_plan: Vec<usize>,
}

/// A rank map pointing past the circuits given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rank {rank} maps to circuit {index}, but only {count} circuits were given")]
pub struct RankMapError {
    /// The rank.
    pub rank: usize,
    /// Its circuit index.
    pub index: usize,
    /// Circuits given.
    pub count: usize,
}

/// Why a layout cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RankPlanError {
    /// The rank map is inconsistent.
    #[error(transparent)]
    Map(#[from] RankMapError),
    /// A distinct rank could not be planned.
    #[error("distinct rank circuit {index} (`{name}`): {source}")]
    Plan {
        /// The circuit index.
        index: usize,
        /// Its name.
        name: String,
        /// Why.
        #[source]
        source: Box<PlanError>,
    },
}

impl RankPlans {
    /// Plans each of `circuits` at `rows` rows and fits its KV cache under `budget` bytes per
    /// rank; `rank_circuit` maps every global rank to its circuit.
    #[allow(clippy::too_many_arguments)]
    pub fn plan(
        circuits: &[&Circuit],
        rank_circuit: &[usize],
        families: &Families,
        rules: &Rules,
        settings: &Settings,
        config: &PlanConfig,
        rows: u64,
        budget: u64,
    ) -> Result<RankPlans, RankPlanError> {
        for (rank, &index) in rank_circuit.iter().enumerate() {
            if index >= circuits.len() {
                return Err(RankMapError {
                    rank,
                    index,
                    count: circuits.len(),
                }
                .into());
            }
        }
        let plans = circuits
            .iter()
            .enumerate()
            .map(|(index, circuit)| {
                let fail = |source| RankPlanError::Plan {
                    index,
                    name: circuit.name().to_owned(),
                    source: Box::new(source),
                };
                let planner = Planner::new(circuit, families, rules, settings.clone(), *config)
                    .map_err(fail)?;
                let plan = planner.plan(rows).map_err(fail)?;
                let kv = planner.max_kv_tokens(rows, budget).map_err(fail)?;
                Ok(RankPlan { plan, kv })
            })
            .collect::<Result<_, RankPlanError>>()?;
        Ok(RankPlans {
            plans,
            rank_plan: rank_circuit.to_vec(),
        })
    }

    /// The KV tokens the layout holds: the minimum over its ranks (`None` when a rank fits
    /// none; `u64::MAX` when no rank's cache grows).
    pub fn kv_tokens(&self) -> Option<u64> {
        self.rank_plan
            .iter()
            .map(|&p| self.plans[p].kv.max_kv_tokens)
            .try_fold(u64::MAX, |min, t| t.map(|t| min.min(t)))
    }

    /// The largest total of any rank (what the budget must hold).
    pub fn max_total(&self) -> u64 {
        self.plans
            .iter()
            .map(|p| p.plan.totals.total)
            .max()
            .unwrap_or(0)
    }
}
