//! The byte accounting of a fusion plan (docs/memory.md): weights, activation buffers packed
//! into one arena, workspaces and states, at any number of row counts (in parallel), with the
//! owner of every byte, fit queries against a memory budget, and the report that answers them
//! all in serving terms ([`PlanReport`]).
//!
//! Invariants: it knows circuits, kernel families and fusion plans (the crates below it); it
//! must not know files, flags or terminals: it reads no file, environment or clock, and the same
//! inputs give the same bytes at any thread count.
//!
//! It re-exports the crates below it ([`circuit_ir`], [`kernel_families`], [`fuser`], and
//! `arena-pack` as [`pack`]), so a compiler depends on this crate alone and gets one version
//! of each. The repository README's "Use the crates" builds a circuit in code and plans it with
//! the standard families and rules; `examples/embed.rs` builds a transformer, its families and
//! its rules in code. [`MemoryPlan`], [`NodeTable`], [`RowsFit`] and [`KvFit`] print themselves
//! (`Display`, exact bytes).
//!
//! ```
//! use circuit_ir::Circuit;
//! use fuser::Rules;
//! use kernel_families::Families;
//! use memory_plan::{PlanConfig, Planner};
//!
//! let circuit = Circuit::from_toml(r#"
//!     schema = 1
//!     name = "mlp"
//!     [[input]]
//!     id = "x"
//!     rows = "n"
//!     width = 1024
//!     format = "bf16"
//!     [[block]]
//!     name = "b"
//!       [[block.node]]
//!       id = "up"
//!       op = "linear"
//!       in = ["x"]
//!       out = [{ edge = "h", rows = "n", width = 4096, format = "bf16" }]
//!         [[block.node.weight]]
//!         name = "w"
//!         shape = [4096, 1024]
//!         format = "bf16"
//!       [[block.node]]
//!       id = "down"
//!       op = "linear"
//!       in = ["h"]
//!       out = [{ edge = "y", rows = "n", width = 1024, format = "bf16" }]
//!         [[block.node.weight]]
//!         name = "w"
//!         shape = [1024, 4096]
//!         format = "bf16"
//!     [[output]]
//!     edge = "b.y"
//! "#, "mlp.toml").unwrap();
//! let families = Families::from_toml(r#"
//!     schema = 1
//!     [[family]]
//!     id = "gemm"
//!     kernels = ["gemm"]
//!     ops = ["linear"]
//!       [[family.workspace]]
//!       name = "handle"
//!       bytes = ["32 * 1024 * 1024"]
//!       arena = false
//!       why = "cuBLAS workspace on Hopper"
//! "#, "families.toml").unwrap();
//! let rules = Rules::from_toml(r#"
//!     schema = 1
//!     [[rule]]
//!     id = "gemm"
//!     pattern = [{ op = "linear" }]
//!     kernels = ["gemm"]
//!     emitter = "cuda"
//! "#, "rules.toml", Some(&families)).unwrap();
//! let planner = Planner::new(&circuit, &families, &rules, rules.defaults(), PlanConfig::new(132)).unwrap();
//! let plans = planner.sweep(&[1, 1024], &|| {}).unwrap();
//! // At 1024 rows: x (2 MiB) and h (8 MiB) live at the first step, h and y (2 MiB) at the second.
//! assert_eq!(plans[1].arena.lower_bound, 10 << 20);
//! assert_eq!(plans[1].totals.total, 2 * 2 * 4096 * 1024 + (10 << 20) + (32 << 20));
//! ```

#![warn(missing_docs)]

mod arena;
mod attribution;
mod display;
mod error;
mod fit;
mod layouts;
mod planner;
mod ranks;
mod report;
mod workspace;

/// The arena packer (the `arena-pack` crate), re-exported so that a user of the planner can
/// check or re-pack an [`ArenaLayout`] with the same types. The planner itself uses only
/// [`pack::heuristic`], [`pack::solve`] (`Goal::Minimize` with a node budget) and
/// [`pack::Stacking`].
pub use arena_pack as pack;

/// The circuit (the `circuit-ir` crate), re-exported: build or load the circuit to plan with
/// the same types the planner takes.
pub use circuit_ir;
/// The fusion rules and pass (the `fuser` crate), re-exported; `fuser::standard::rules()`
/// gives the standard rules.
pub use fuser;
/// The kernel families and devices (the `kernel-families` crate), re-exported;
/// `kernel_families::standard::families()` gives the standard families.
pub use kernel_families;

pub use arena::{BufferKind, BufferSlot};
pub use attribution::{NodeRow, NodeTable};
pub use error::PlanError;
pub use fit::{FIT_SCAN_PLANS, FIT_SEARCH_STEPS, FitLimit, KvFit, RowsFit};
pub use layouts::{
    LayoutCircuits, LayoutRow, LayoutSearch, NODE_GPUS, PP_CANDIDATES, SearchInputs, tp_candidates,
};
pub use planner::{ArenaLayout, ArenaSummary, MemoryPlan, PlanConfig, Planner, Totals};
pub use ranks::{RankMapError, RankPlan, RankPlanError, RankPlans};
pub use report::{
    Breach, CHUNK_ROWS, Concurrency, ContextFit, PlanReport, ReportError, ReportQuery,
    ReportSummary, RowReport, RowServing, Term, Verdict,
};
pub use workspace::{WorkspaceTerm, widest, workspace_terms};
