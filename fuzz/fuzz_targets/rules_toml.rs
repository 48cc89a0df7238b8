//! Fusion rules TOML: any text loads or gives one clear line; loaded rules round-trip through
//! their TOML, cut row intervals that tile the range, and fuse the example circuit.
#![no_main]

use circuit_ir::Circuit;
use fuser::{FuseOptions, Rules, fuse, intervals};
use kernel_families::Families;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../examples/llama-3.1-8b/families.toml");

thread_local! {
    static EXAMPLE: (Circuit, Families) = (
        Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap(),
        Families::from_toml(FAMILIES, "families.toml").unwrap(),
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    EXAMPLE.with(|(circuit, families)| {
        let unchecked = Rules::from_toml(text, "fuzz.toml", None);
        let rules = match Rules::from_toml(text, "fuzz.toml", Some(families)) {
            Err(e) => return common::one_line("rules", &e.to_string()),
            Ok(r) => r,
        };
        assert!(
            unchecked.is_ok(),
            "rules load with a registry but not without"
        );
        let toml = rules.to_toml().expect("loaded rules serialize");
        let again = Rules::from_toml(&toml, "round-trip.toml", Some(families))
            .unwrap_or_else(|e| panic!("round trip fails: {e}\n{toml}"));
        assert_eq!(again.rules().len(), rules.rules().len());
        for overrides in [&[][..], &[("mode", "decode")][..], &[("nope", "x")][..]] {
            let settings = match rules.settings(overrides.iter().copied(), "--set") {
                Err(e) => {
                    common::one_line("settings", &e.to_string());
                    continue;
                }
                Ok(s) => s,
            };
            let cut = intervals(&rules, &settings, 1..=u64::MAX);
            assert_eq!(*cut.first().unwrap().start(), 1);
            assert_eq!(*cut.last().unwrap().end(), u64::MAX);
            for pair in cut.windows(2) {
                assert_eq!(pair[0].end() + 1, *pair[1].start(), "intervals {cut:?}");
            }
            for range in cut.iter().take(4) {
                for placeholders in [false, true] {
                    let n = *range.start();
                    match fuse(circuit, &rules, &settings, n, FuseOptions { placeholders }) {
                        Err(e) => {
                            assert!(!placeholders, "placeholders still fail: {e}");
                            common::one_line("fuse", &e.to_string());
                        }
                        Ok(plan) => {
                            let mut seen: Vec<_> =
                                plan.groups().iter().flat_map(|g| g.nodes.clone()).collect();
                            seen.sort_unstable();
                            let all: Vec<_> = circuit.nodes().keys().collect();
                            assert_eq!(seen, all, "every node in exactly one group");
                            assert!(plan.rows().contains(&n), "{:?} misses {n}", plan.rows());
                        }
                    }
                }
            }
        }
    });
});
