//! Plans of a parallel layout: distinct rank circuits planned once each, the layout's KV
//! capacity the minimum over ranks.

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{PlanConfig, RankMapError, RankPlanError, RankPlans};

const CIRCUIT: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../../examples/llama-3.1-8b/families.toml");
const RULES: &str = include_str!("../../../examples/llama-3.1-8b/rules.toml");

#[test]
fn kv_capacity_is_the_minimum_over_ranks() {
    let families = Families::from_toml(FAMILIES, "families.toml").unwrap();
    let rules = Rules::from_toml(RULES, "rules.toml", Some(&families)).unwrap();
    let settings = rules.settings([("mode", "decode")], "--set").unwrap();
    // Two rank shapes: the example, and one caching 4 KV heads instead of 8 (half the KV
    // bytes per token and smaller k/v projections).
    let wide = Circuit::from_toml(CIRCUIT, "wide.toml").unwrap();
    let narrow_text = CIRCUIT.replacen("kv_heads = 8", "kv_heads = 4", 1);
    let narrow = Circuit::from_toml(&narrow_text, "narrow.toml").unwrap();
    let config = PlanConfig::new(132);
    let budget = 20u64 << 30;
    let plans = RankPlans::plan(
        &[&wide, &narrow],
        &[1, 0, 1],
        &families,
        &rules,
        &settings,
        &config,
        1,
        budget,
    )
    .unwrap();
    let kv: Vec<_> = plans.plans.iter().map(|p| p.kv.max_kv_tokens).collect();
    assert_eq!(plans.plans[0].kv.bytes_per_token, Some(131_072));
    assert_eq!(plans.plans[1].kv.bytes_per_token, Some(65_536));
    // The wide rank caches fewer tokens; the layout holds what its tightest rank holds.
    assert!(kv[0].unwrap() < kv[1].unwrap());
    assert_eq!(plans.kv_tokens(), kv[0]);
    let fixed = plans.plans[0].plan.totals.total - plans.plans[0].plan.totals.states;
    assert_eq!(kv[0], Some((budget - fixed) / 131_072));
    assert_eq!(
        plans.max_total(),
        plans
            .plans
            .iter()
            .map(|p| p.plan.totals.total)
            .max()
            .unwrap()
    );
    // Only the ranks mapped count: without the wide rank, the narrow one decides.
    let narrow_only = RankPlans::plan(
        &[&wide, &narrow],
        &[1, 1],
        &families,
        &rules,
        &settings,
        &config,
        1,
        budget,
    )
    .unwrap();
    assert_eq!(narrow_only.kv_tokens(), kv[1]);
    let bad = RankPlans::plan(
        &[&wide],
        &[0, 1],
        &families,
        &rules,
        &settings,
        &config,
        1,
        budget,
    );
    assert_eq!(
        bad.unwrap_err(),
        RankPlanError::Map(RankMapError {
            rank: 1,
            index: 1,
            count: 1
        })
    );
}
