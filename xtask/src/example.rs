//! The example compiled into the binary, so `cargo xtask plan` runs from any directory, and
//! the standard families and rules (kernel-families', fuser's) that `--hf-config` plans with.

/// The Llama-3.1-8B circuit.
pub const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");
/// The name errors in the embedded circuit point at.
pub const CIRCUIT_ORIGIN: &str = "examples/llama-3.1-8b/circuit.toml (embedded)";
/// Its fusion rules.
pub const RULES: &str = include_str!("../../examples/llama-3.1-8b/rules.toml");
/// The name errors in the embedded rules point at.
pub const RULES_ORIGIN: &str = "examples/llama-3.1-8b/rules.toml (embedded)";
/// Its kernel families.
pub const FAMILIES: &str = include_str!("../../examples/llama-3.1-8b/families.toml");
/// The name errors in the embedded families point at.
pub const FAMILIES_ORIGIN: &str = "examples/llama-3.1-8b/families.toml (embedded)";

/// The example circuit with Llama-3.1-70B's dims (80 layers, hidden 8192, ffn 28672, 64 heads,
/// 8 KV heads): the same architecture at 70B scale, for benchmarks.
pub fn llama_70b() -> String {
    CIRCUIT
        .replace("name = \"llama-3.1-8b\"", "name = \"llama-3.1-70b\"")
        .replace("hidden = 4096", "hidden = 8192")
        .replace("ffn = 14336", "ffn = 28672")
        .replace("heads = 32", "heads = 64")
        .replace("layers = 32", "layers = 80")
}

/// Kernel families for circuits imported with `--hf-config`: the standard families.
pub const HF_FAMILIES: &str = kernel_families::standard::FAMILIES;
/// The name errors in them point at.
pub const HF_FAMILIES_ORIGIN: &str = "kernel-families/standard-families.toml (embedded)";
/// Fusion rules for circuits imported with `--hf-config`: the standard rules.
pub const HF_RULES: &str = fuser::standard::RULES;
/// The name errors in them point at.
pub const HF_RULES_ORIGIN: &str = "fuser/standard-rules.toml (embedded)";

#[cfg(test)]
mod tests {
    #[test]
    fn the_70b_variant_weighs_the_published_checkpoint() {
        let c = circuit_ir::Circuit::from_toml(&super::llama_70b(), "70b").unwrap();
        // meta-llama/Llama-3.1-70B: 70,553,706,496 parameters, in bf16.
        assert_eq!(c.weight_bytes(), 141_107_412_992);
        assert_eq!(c.state_bytes(1, 0).unwrap(), 2 * 8 * 128 * 80 * 2);
    }
}
