//! The example compiled into the binary, so `cargo xtask plan` runs from any directory.

/// The Llama-3.1-8B circuit.
pub const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");
/// The name errors in the embedded circuit point at.
pub const CIRCUIT_ORIGIN: &str = "examples/llama-3.1-8b/circuit.toml (embedded)";
