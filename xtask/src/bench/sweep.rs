//! Sweep speed: every row count 1..=8192 of the Llama-3.1-8B example and of a Llama-3.1-70B-sized
//! circuit (the example with 70B's dims: 80 layers, hidden 8192, ffn 28672, 64 heads, 8 KV
//! heads), against the time of one plan made alone.

use std::hint::black_box;
use std::time::{Duration, Instant};

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::Families;
use memory_plan::{PlanConfig, Planner};

use crate::CliError;
use crate::example;
use crate::out::outln;

pub fn run() -> Result<(), CliError> {
    let families = Families::from_toml(example::FAMILIES, example::FAMILIES_ORIGIN)?;
    let rules = Rules::from_toml(example::RULES, example::RULES_ORIGIN, Some(&families))?;
    let rows: Vec<u64> = (1..=8192).collect();
    outln!("threads      {} (rayon)", rayon_threads());
    for (name, text) in [
        ("llama-3.1-8b", example::CIRCUIT.to_owned()),
        ("llama-3.1-70b", example::llama_70b()),
    ] {
        let circuit = Circuit::from_toml(&text, name)?;
        for mode in ["prefill", "decode"] {
            let settings = rules.settings([("mode", mode)], "bench")?;
            let planner =
                Planner::new(&circuit, &families, &rules, settings, PlanConfig::new(132))?;
            let one = super::median_per_call(5, Duration::from_millis(300), |_| {
                black_box(planner.plan(black_box(4096)).ok());
            });
            let mut sweeps = Vec::new();
            let mut optimal = 0;
            for _ in 0..3 {
                let start = Instant::now();
                let plans = planner.sweep(&rows, &|| {})?;
                sweeps.push(start.elapsed());
                optimal = plans.iter().filter(|p| p.arena.optimal).count();
            }
            sweeps.sort();
            let sweep = sweeps[1];
            outln!(
                "{name:<14} {mode:<8} {} nodes: one plan {:>7.2} ms, sweep of 8192 plans {:>7.1} ms, ratio {:>5.1} (target < 20); {optimal}/8192 arenas proven optimal",
                circuit.nodes().len(),
                one.as_secs_f64() * 1e3,
                sweep.as_secs_f64() * 1e3,
                sweep.as_secs_f64() / one.as_secs_f64()
            );
        }
    }
    Ok(())
}

fn rayon_threads() -> usize {
    rayon::current_num_threads()
}
