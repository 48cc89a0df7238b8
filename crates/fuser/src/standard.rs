//! The standard fusion rules: the rules `cargo xtask plan --hf-config` plans imported circuits
//! with (`standard-rules.toml` beside this crate's manifest, compiled in), over the kernels of
//! `kernel_families::standard`. They cover every op circuit-hf emits at every `n` in
//! 1..=1,048,576, in both values of their one setting, `mode` (`prefill`, the default, or
//! `decode`): split-K projections up to 64 rows and cuBLASLt above, the residual add fused with
//! the RMSNorm after it, RoPE with the KV write, the SwiGLU activation in the epilogue of a
//! node named `*up_proj` from 65 rows, split-KV attention in decode and varlen attention in
//! prefill; docs/fusion.md describes the format.
//!
//! Invariant: [`RULES`] is the file's text, byte for byte, and every kernel it names is listed
//! by the standard families (a test loads it against them).
//!
//! ```
//! let rules = fuser::standard::rules().unwrap();
//! let settings = rules.settings([("mode", "decode")], "example").unwrap();
//! assert_eq!(
//!     fuser::intervals(&rules, &settings, 1..=4096),
//!     vec![1..=64, 65..=4096]
//! );
//! ```

use crate::rules::{Rules, RulesError};

/// The standard rules' text (`standard-rules.toml`).
pub const RULES: &str = include_str!("../standard-rules.toml");

/// The name their errors carry.
pub const ORIGIN: &str = "fuser/standard-rules.toml";

/// The standard rules, loaded from [`RULES`] (without a kernel registry to check against:
/// [`Rules::from_toml`] with `Some(&kernel_families::standard::families()?)` checks them too).
/// (They load: a test says so; the `Result` keeps a library call from panicking.)
pub fn rules() -> Result<Rules, RulesError> {
    Rules::from_toml(RULES, ORIGIN, None)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_standard_rules_name_only_standard_kernels() {
        let families = kernel_families::standard::families().unwrap();
        let checked = super::Rules::from_toml(super::RULES, super::ORIGIN, Some(&families));
        assert_eq!(checked.unwrap(), super::rules().unwrap());
    }
}
