//! Circuit TOML: any text loads or gives one clear line; a loaded circuit round-trips through
//! its TOML and sizes every edge and state without a panic.
#![no_main]

use circuit_ir::Circuit;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Circuit::from_toml(text, "fuzz.toml") {
        Err(e) => common::one_line("circuit", &e.to_string()),
        Ok(circuit) => {
            let toml = circuit.to_toml().expect("a loaded circuit serializes");
            let again = Circuit::from_toml(&toml, "round-trip.toml")
                .unwrap_or_else(|e| panic!("round trip fails: {e}\n{toml}"));
            assert!(again == circuit, "round trip differs:\n{toml}");
            assert_eq!(again.weight_bytes(), circuit.weight_bytes());
            for n in [1, 4096, u64::MAX] {
                for edge in circuit.edges().values() {
                    if let Err(e) = edge.bytes_at(n) {
                        common::one_line("edge size", &e.to_string());
                    }
                }
            }
            for (tokens, seqs) in [(0, 0), (1, 1), (131_072, 64), (u64::MAX, u64::MAX)] {
                if let Err(e) = circuit.state_bytes(tokens, seqs) {
                    common::one_line("state size", &e.to_string());
                }
            }
            for node in circuit.nodes().keys() {
                let _ = circuit.node_k(node);
            }
        }
    }
});
