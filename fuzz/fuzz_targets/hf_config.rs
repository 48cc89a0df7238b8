//! Hugging Face config.json: any text imports or gives one clear line; an imported circuit
//! round-trips through circuit-ir's TOML.
#![no_main]

use circuit_ir::Circuit;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match circuit_hf::from_config_json(text, "fuzz/config.json") {
        Err(e) => common::one_line("hf", &e.to_string()),
        Ok(circuit) => {
            let toml = circuit.to_toml().expect("an imported circuit serializes");
            let again = Circuit::from_toml(&toml, "round-trip.toml")
                .unwrap_or_else(|e| panic!("round trip fails: {e}"));
            assert!(again == circuit);
            assert_eq!(again.weight_bytes(), circuit.weight_bytes());
            for (tokens, seqs) in [(1, 1), (u64::MAX, 1)] {
                if let Err(e) = circuit.state_bytes(tokens, seqs) {
                    common::one_line("state size", &e.to_string());
                }
            }
        }
    }
});
