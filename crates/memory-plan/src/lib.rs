//! The byte accounting of a fusion plan (SPEC section 7): weights, activation buffers packed
//! into one arena, workspaces and states, at any number of row counts (in parallel), with the
//! owner of every byte, and fit queries against a memory budget.
//!
//! This crate knows circuits, kernel families and fusion plans (the crates below it); it reads
//! no file, environment or clock, and the same inputs give the same bytes at any thread count.

#![warn(missing_docs)]

mod arena;
mod attribution;
mod error;
mod fit;
pub mod pack;
mod planner;
mod workspace;

pub use arena::{BufferKind, BufferSlot};
pub use attribution::{NodeRow, NodeTable};
pub use error::PlanError;
pub use fit::{KvFit, RowsFit};
pub use planner::{ArenaLayout, ArenaSummary, MemoryPlan, PlanConfig, Planner, Totals};
pub use workspace::{WorkspaceTerm, widest, workspace_terms};
