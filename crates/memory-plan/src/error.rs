//! The planner's errors: each names the file it comes from (the circuit's, the kernel
//! registry's or the rules' origin), what failed (node, edge, family and workspace, term) and
//! the row count at which it failed.
//!
//! Invariant: every message is one line and opens with the origin: what the user wrote (origins,
//! ids, details) passes through circuit-ir's `one_line`, and the families and fusion errors it
//! wraps are one line themselves.

use circuit_ir::one_line;
use fuser::FuseError;
use kernel_families::FamiliesError;

use arena_pack::PackError;

/// A plan that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The kernel registry does not bind to the circuit (e.g. an unknown name).
    #[error(transparent)]
    Families(Box<FamiliesError>),
    /// The rules leave a node uncovered.
    #[error(transparent)]
    Fuse(#[from] FuseError),
    /// A workspace expression failed at some node and row count.
    #[error(
        "{}: family `{}`, workspace `{}`, node `{}` at n = {}: {}",
        one_line(.origin),
        one_line(.family),
        one_line(.workspace),
        one_line(.node),
        .n,
        one_line(.detail)
    )]
    Workspace {
        /// The kernel registry's origin (file name).
        origin: std::sync::Arc<str>,
        /// Family id.
        family: String,
        /// Workspace name.
        workspace: String,
        /// The node whose `k` was used.
        node: String,
        /// Rows.
        n: u64,
        /// The expression's fault.
        detail: String,
    },
    /// An edge's size failed (rows expression fault or overflow).
    #[error(
        "{}: edge `{}` at n = {}: {}",
        one_line(.origin),
        one_line(.edge),
        .n,
        one_line(.detail)
    )]
    EdgeSize {
        /// The circuit's origin (file name).
        origin: std::sync::Arc<str>,
        /// Edge id.
        edge: String,
        /// Rows.
        n: u64,
        /// What failed.
        detail: String,
    },
    /// A state's size overflowed.
    #[error(
        "{}: states at {} KV tokens and {} sequences: {}",
        one_line(.origin),
        .kv_tokens,
        .sequences,
        one_line(.detail)
    )]
    States {
        /// The circuit's origin (file name).
        origin: std::sync::Arc<str>,
        /// Cached tokens.
        kv_tokens: u64,
        /// Sequences.
        sequences: u64,
        /// What failed.
        detail: String,
    },
    /// A sum of bytes above `u64::MAX`.
    #[error("{}: {what} at n = {n} overflows 64-bit bytes", one_line(.origin))]
    Overflow {
        /// The circuit's origin (file name): the sums are of its plan.
        origin: std::sync::Arc<str>,
        /// What was being summed.
        what: &'static str,
        /// Rows.
        n: u64,
    },
    /// A sum the kernel registry's workspaces take past 64 bits.
    #[error("{}: {} at n = {n} overflows 64-bit bytes", one_line(.origin), one_line(.detail))]
    WorkspaceOverflow {
        /// The kernel registry's origin (file name).
        origin: std::sync::Arc<str>,
        /// What was summed, naming the workspace.
        detail: String,
        /// Rows.
        n: u64,
    },
    /// The packer could not run.
    #[error("{}: packing the arena at n = {n}: {error}", one_line(.origin))]
    Pack {
        /// The circuit's origin (file name).
        origin: std::sync::Arc<str>,
        /// Rows.
        n: u64,
        /// The packer's error.
        error: PackError,
    },
    /// Sizing the arena failed at the first row count of a row interval, where the interval's
    /// arena template is laid out, though the row count asked in that interval sizes.
    #[error(
        "{error} (n = {start} is where the arena of the row interval {start}..={end} is laid out, for the n = {asked} asked in it)"
    )]
    TemplateRow {
        /// The interval's first row count.
        start: u64,
        /// Its last.
        end: u64,
        /// The row count asked.
        asked: u64,
        /// The failure at `start`.
        error: Box<PlanError>,
    },
    /// An alignment of 0.
    #[error("alignment must be at least 1 byte")]
    BadAlign,
    /// A device with no SMs (an SM count of 0 would zero every workspace that scales with it).
    #[error("sm_count 0: a device has at least one SM")]
    ZeroSmCount,
    /// No sequences (a sliding-window state holds `window x sequences` tokens, so 0 would
    /// plan an empty KV cache however many tokens are cached).
    #[error(
        "sequences 0: the KV tokens belong to at least one sequence (a sliding window holds window x sequences tokens)"
    )]
    ZeroSequences,
    /// A row count of 0.
    #[error("row counts start at 1 (got 0)")]
    ZeroRows,
}

impl From<FamiliesError> for PlanError {
    fn from(e: FamiliesError) -> PlanError {
        PlanError::Families(Box::new(e))
    }
}
