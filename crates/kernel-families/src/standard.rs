//! The standard kernel families: the registry `cargo xtask plan --hf-config` plans imported
//! circuits with (H100-class GPU, sm90, bf16 throughout; `standard-families.toml` beside this
//! crate's manifest, compiled in). It covers every op circuit-hf emits, and its fusion rules
//! are `fuser::standard`. Each workspace's size and source is explained in the file and in
//! docs/families.md.
//!
//! Invariants: [`FAMILIES`] is the file's text, byte for byte; [`REQUIRED_DIMS`] is exactly
//! what [`Families::dims_read`] finds in it (a test keeps the two and the table below equal).
//!
//! The dims its workspace expressions read, which a circuit must define to be bound (every
//! circuit circuit-hf imports defines them; a circuit built in code must too, even when it
//! runs no family reading them, since binding compiles every expression):
//!
//! | dim | meaning | read by |
//! | --- | --- | --- |
//! | `head_dim` | width of one attention head | `flash_decode` |
//! | `heads` | query heads | `flash_decode`, `flash_attn_varlen` |
//! | `hidden` | the residual stream's width | `splitk_gemm` |
//! | `kv_heads` | key-value heads | `flash_decode` |
//! | `q_width` | the query projection's width (`heads * head_dim`) | `splitk_gemm` |
//! | `vocab` | the vocabulary (the LM head's output width) | `splitk_gemm` |
//!
//! A circuit without one of them is refused by [`Families::bind`] (and listed by
//! [`Families::check`]) with the dim and the family that reads it:
//!
//! ```
//! use circuit_ir::CircuitBuilder;
//! use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl};
//!
//! let families = kernel_families::standard::families().unwrap();
//! let mut b = CircuitBuilder::new("no-vocab");
//! for (dim, value) in [("hidden", 4096u64), ("heads", 32), ("kv_heads", 8), ("head_dim", 128)] {
//!     b.dim(dim, value);
//! }
//! b.dim("q_width", "heads * head_dim").input("x", "n", "hidden", "bf16").block(
//!     BlockDecl::once("b").node(
//!         NodeDecl::new("norm", "rms_norm")
//!             .reads(["x"])
//!             .writes(OutDecl::new("y", "n", "hidden", "bf16")),
//!     ),
//! );
//! b.output("b.y");
//! let circuit = b.build().unwrap();
//! let missing = &families.check(&circuit)[0];
//! assert_eq!((missing.name.as_str(), missing.family.as_str()), ("vocab", "splitk_gemm"));
//! let error = families.bind(&circuit, 132).unwrap_err().to_string();
//! assert!(error.starts_with("kernel-families/standard-families.toml: family `splitk_gemm`, workspace `partials`: bytes[0]: expression `"));
//! assert!(error.ends_with("reads `vocab`, which is neither a dim of circuit `no-vocab` nor `n`, `k` or `sm_count`"));
//! ```

use crate::error::FamiliesError;
use crate::families::Families;

/// The standard registry's text (`standard-families.toml`).
pub const FAMILIES: &str = include_str!("../standard-families.toml");

/// The name its errors carry.
pub const ORIGIN: &str = "kernel-families/standard-families.toml";

/// The dims the standard families read, in name order, each with the families reading it (the
/// table of this module's documentation).
pub const REQUIRED_DIMS: &[(&str, &[&str])] = &[
    ("head_dim", &["flash_decode"]),
    ("heads", &["flash_decode", "flash_attn_varlen"]),
    ("hidden", &["splitk_gemm"]),
    ("kv_heads", &["flash_decode"]),
    ("q_width", &["splitk_gemm"]),
    ("vocab", &["splitk_gemm"]),
];

/// The standard families, loaded from [`FAMILIES`]. (It loads: a test says so; the `Result`
/// keeps a library call from panicking.)
pub fn families() -> Result<Families, FamiliesError> {
    Families::from_toml(FAMILIES, ORIGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_required_dims_are_what_the_families_read() {
        let found = families().unwrap().dims_read();
        let listed: Vec<(String, Vec<String>)> = REQUIRED_DIMS
            .iter()
            .map(|(d, f)| (d.to_string(), f.iter().map(|s| s.to_string()).collect()))
            .collect();
        assert_eq!(found, listed);
    }

    #[test]
    fn the_documented_table_lists_the_required_dims() {
        // The rows of the table in this module's documentation: `//! | `dim` | ... | `f`, `g` |`.
        let rows: Vec<(String, Vec<String>)> = include_str!("standard.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").collect();
                let dim = cells[0].trim_end_matches('`').to_owned();
                let readers = cells[2]
                    .trim_end_matches(" |")
                    .split(", ")
                    .map(|f| f.trim_matches('`').to_owned())
                    .collect();
                (dim, readers)
            })
            .collect();
        let listed: Vec<(String, Vec<String>)> = REQUIRED_DIMS
            .iter()
            .map(|(d, f)| (d.to_string(), f.iter().map(|s| s.to_string()).collect()))
            .collect();
        assert_eq!(rows, listed);
    }
}
