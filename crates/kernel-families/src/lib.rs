//! Kernel families of the circuit memory planner (SPEC section 5): which family a launch group
//! runs for a node ([`Families::of_group`]), the workspaces each family declares and their
//! values at `(n, k)` on a device ([`Families::bind`], [`BoundFamilies::workspace_value`]), and
//! the device table ([`Devices`]).
//!
//! This crate depends on circuit-ir only. It reads no file, no environment and no clock:
//! callers hand it text and an origin name for messages, as `Circuit::from_toml` does.

#![warn(missing_docs)]

pub mod bound;
pub mod decl;
pub mod device;
pub mod error;
pub mod families;
mod load;

pub use bound::BoundFamilies;
pub use device::{BUILTIN_DEVICES, Device, Devices};
pub use error::{FamiliesError, FamiliesErrorKind, Finding, WorkspaceError, WorkspaceErrorKind};
pub use families::{Families, Family, FamilyIdx, READABLE, Workspace};
