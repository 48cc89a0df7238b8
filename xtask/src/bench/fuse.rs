//! Fusing speed: the 32-layer Llama example, decode at n = 1 and prefill at n = 4096.

use std::hint::black_box;
use std::time::Duration;

use circuit_ir::Circuit;
use fuser::{FuseOptions, Rules, fuse};

use crate::CliError;
use crate::example;
use crate::out::outln;

pub fn run() -> Result<(), CliError> {
    let circuit = Circuit::from_toml(example::CIRCUIT, example::CIRCUIT_ORIGIN)?;
    let rules = Rules::from_toml(example::RULES, example::RULES_ORIGIN, None)?;
    let nodes = circuit.nodes().len();
    outln!("circuit      {} ({nodes} nodes)", circuit.name());
    for (mode, n) in [("decode", 1), ("prefill", 4096)] {
        let settings = rules.settings([("mode", mode)], "bench")?;
        let plan = fuse(&circuit, &rules, &settings, n, FuseOptions::default())?;
        let per_call = super::median_per_call(5, Duration::from_millis(400), |_| {
            black_box(fuse(
                black_box(&circuit),
                &rules,
                &settings,
                black_box(n),
                FuseOptions::default(),
            ))
            .ok();
        });
        outln!(
            "{mode:<8} n={n:<5} {} groups in {:.3} ms: {:.0} ns per node (target < 1000)",
            plan.groups().len(),
            per_call.as_secs_f64() * 1e3,
            per_call.as_secs_f64() * 1e9 / nodes as f64
        );
    }
    Ok(())
}
