//! The model graph of the circuit memory planner: size expressions, tensor formats, the op
//! list, and the circuit itself (dims, inputs, block instances, nodes, edges, weights, states)
//! on a petgraph dependency graph, loaded from TOML or built in code and validated once.
//!
//! This crate knows nothing of kernels, fusion or memory plans; the crates above it do.

pub mod build;
pub mod circuit;
pub mod decl;
pub mod error;
pub mod expr;
pub mod format;
pub mod load;
pub mod op;

pub use build::CircuitBuilder;
pub use circuit::{
    BlockInstance, Circuit, Dep, Edge, EdgeIdx, EdgeSizeError, InstanceIdx, Node, NodeIdx, Rows,
    State, StateIdx, Tensor, TensorIdx, Weight,
};
pub use error::{CircuitError, CircuitErrorKind, Place, one_line};
pub use expr::{Binding, Expr, ExprError, ExprText, Program, Scope, Trend};
pub use format::{Format, FormatError};
pub use op::{Op, UnknownOp};
