//! Fusion: which nodes of a circuit run together in one launch group, at a given number of
//! rows `n` and under given settings, decided by declarative rules (SPEC section 6).
//!
//! This crate knows circuits (circuit-ir) and the kernel registry (kernel-families, only to
//! check that rules name known kernels); it knows nothing of bytes, buffers or memory plans.

pub mod fuse;
pub mod intervals;
pub mod plan;
pub mod rules;

pub use fuse::{FuseError, FuseOptions, fuse};
pub use intervals::intervals;
pub use plan::{EdgeState, FusionPlan, Group};
pub use rules::{Rule, Rules, RulesError, RulesErrorKind, Settings, parse_setting};
