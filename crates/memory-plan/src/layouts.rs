//! The layout search: the tensor- x pipeline-parallel layouts a model is planned over, each
//! planned with [`RankPlans`], and the smallest that holds a KV target. The candidate rule
//! ([`tp_candidates`]) is the one every "smallest TP" question uses, here and in an engine
//! profile's start-up search.
//!
//! Invariants: candidates come in increasing order; a layout the model cannot be sharded to is
//! a row with its reason, never a plan; the smallest layout is the fewest ranks, then the
//! fewest stages, among those that hold the target.

use circuit_ir::Circuit;
use fuser::{Rules, Settings};
use kernel_families::Families;
use serde::Serialize;

use crate::planner::PlanConfig;
use crate::ranks::{RankPlanError, RankPlans};

/// The GPUs of one node, the largest tensor-parallel size a search tries.
pub const NODE_GPUS: u64 = 8;

/// The pipeline-parallel sizes a layout search tries.
pub const PP_CANDIDATES: [u64; 3] = [1, 2, 4];

/// The tensor-parallel sizes a search tries: those from 1 to `limit` that divide the model's
/// attention heads (every rank holds whole heads; engines refuse the others).
pub fn tp_candidates(heads: u64, limit: u64) -> impl Iterator<Item = u64> {
    (1..=limit).filter(move |tp| heads.is_multiple_of(*tp))
}

/// One layout of a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutRow {
    /// Tensor-parallel size.
    pub tp: u64,
    /// Pipeline-parallel size.
    pub pp: u64,
    /// Why the model cannot be sharded so, when it cannot.
    pub error: Option<String>,
    /// The largest total of any rank.
    pub max_rank_total: Option<u64>,
    /// The KV tokens the layout holds (the minimum over its ranks).
    pub kv_tokens: Option<u64>,
    /// Whether it holds the target.
    pub fits: bool,
}

/// A layout search's rows and answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutSearch {
    /// Every layout tried, TP outer, PP inner.
    pub layouts: Vec<LayoutRow>,
    /// The smallest TP at PP 1 that holds the target.
    pub smallest_tp: Option<u64>,
    /// The smallest TP x PP (fewest ranks, then fewest stages) that holds it.
    pub smallest_tp_pp: Option<(u64, u64)>,
}

/// What planning each layout needs.
pub struct SearchInputs<'a> {
    /// The families.
    pub families: &'a Families,
    /// The rules.
    pub rules: &'a Rules,
    /// The settings.
    pub settings: &'a Settings,
    /// The plan configuration.
    pub config: &'a PlanConfig,
    /// Rows planned.
    pub rows: u64,
    /// The budget per rank, bytes.
    pub budget: u64,
    /// The KV tokens a layout must hold.
    pub target_kv_tokens: u64,
}

/// A layout's circuits: one per distinct rank and each global rank's index into them, or why
/// the model cannot be sharded so.
pub type LayoutCircuits = Result<(Vec<Circuit>, Vec<usize>), String>;

impl LayoutSearch {
    /// Plans the layouts of [`tp_candidates`]`(heads, NODE_GPUS)` x [`PP_CANDIDATES`], each from
    /// the circuits `import(tp, pp)` gives.
    pub fn run(
        heads: u64,
        inputs: &SearchInputs<'_>,
        mut import: impl FnMut(u64, u64) -> LayoutCircuits,
    ) -> Result<LayoutSearch, RankPlanError> {
        let mut layouts = Vec::new();
        for tp in tp_candidates(heads, NODE_GPUS) {
            for pp in PP_CANDIDATES {
                let row = match import(tp, pp) {
                    Err(error) => LayoutRow {
                        tp,
                        pp,
                        error: Some(error),
                        max_rank_total: None,
                        kv_tokens: None,
                        fits: false,
                    },
                    Ok((circuits, rank_circuit)) => {
                        let refs: Vec<&Circuit> = circuits.iter().collect();
                        let plans = RankPlans::plan(
                            &refs,
                            &rank_circuit,
                            inputs.families,
                            inputs.rules,
                            inputs.settings,
                            inputs.config,
                            inputs.rows,
                            inputs.budget,
                        )?;
                        let kv = plans.kv_tokens();
                        LayoutRow {
                            tp,
                            pp,
                            error: None,
                            max_rank_total: Some(plans.max_total()),
                            kv_tokens: kv,
                            fits: kv.is_some_and(|t| t >= inputs.target_kv_tokens),
                        }
                    }
                };
                layouts.push(row);
            }
        }
        let smallest_tp = layouts.iter().find(|r| r.pp == 1 && r.fits).map(|r| r.tp);
        let smallest_tp_pp = layouts
            .iter()
            .filter(|r| r.fits)
            .min_by_key(|r| (r.tp * r.pp, r.pp))
            .map(|r| (r.tp, r.pp));
        Ok(LayoutSearch {
            layouts,
            smallest_tp,
            smallest_tp_pp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::tp_candidates;

    #[test]
    fn candidates_divide_the_heads() {
        assert_eq!(tp_candidates(64, 8).collect::<Vec<_>>(), [1, 2, 4, 8]);
        assert_eq!(tp_candidates(28, 8).collect::<Vec<_>>(), [1, 2, 4, 7]);
        assert_eq!(tp_candidates(40, 8).collect::<Vec<_>>(), [1, 2, 4, 5, 8]);
        assert_eq!(tp_candidates(1, 8).collect::<Vec<_>>(), [1]);
    }
}
