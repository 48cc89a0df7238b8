//! Kernel families TOML: any text loads or gives one clear line; a loaded registry answers
//! `of_group`, checks and binds against the example circuit, and values every workspace.
#![no_main]

use circuit_ir::Circuit;
use kernel_families::{Devices, Families};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The same text read as a device table must not panic either.
    if let Err(e) = Devices::from_toml(text, "devices.toml") {
        common::one_line("devices", &e.to_string());
    }
    let families = match Families::from_toml(text, "fuzz.toml") {
        Err(e) => return common::one_line("families", &e.to_string()),
        Ok(f) => f,
    };
    for op in [
        circuit_ir::Op::Linear,
        circuit_ir::Op::Attention,
        circuit_ir::Op::Sample,
    ] {
        for kernels in [&[][..], &["gemm_bf16_sm90"][..], &["a", "b"][..]] {
            let _ = families.of_group(kernels, "torch", op);
        }
    }
    thread_local! {
        static EXAMPLE: Circuit = Circuit::from_toml(CIRCUIT, "circuit.toml").unwrap();
    }
    EXAMPLE.with(|circuit| {
        for finding in families.check(circuit) {
            common::one_line("finding", &finding.to_string());
        }
        for sm in [1, 132, u64::MAX] {
            let bound = match families.bind(circuit, sm) {
                Err(e) => {
                    common::one_line("bind", &e.to_string());
                    continue;
                }
                Ok(b) => b,
            };
            for (idx, _) in families.families().iter() {
                for w in 0..bound.workspace_count(idx) {
                    let _ = bound.constant_value(idx, w);
                    for (n, k) in [(1, 4096), (4096, 14336), (u64::MAX, u64::MAX), (0, 0)] {
                        if let Err(e) = bound.workspace_value(idx, w, n, k) {
                            common::one_line("workspace value", &e.to_string());
                        }
                    }
                }
            }
        }
    });
});
