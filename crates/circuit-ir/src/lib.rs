//! The model graph of the circuit memory planner: size expressions, tensor formats, the op
//! list, and the circuit itself (dims, inputs, block instances, nodes, edges, weights, states)
//! on a petgraph dependency graph, loaded from TOML or built in code and validated once.
//!
//! Invariants: it must not know kernels, fusion or memory plans: the crates above it
//! (kernel-families, fuser, memory-plan) do. It reads no file, environment or clock; callers
//! hand it text. A [`Circuit`] exists only as validated by [`CircuitBuilder`], the path the
//! TOML loader takes too.
//!
//! ```
//! use circuit_ir::{Circuit, Expr, Binding};
//!
//! let circuit = Circuit::from_toml(r#"
//!     schema = 1
//!     name = "mlp"
//!     [dims]
//!     hidden = 1024
//!     [[input]]
//!     id = "x"
//!     rows = "n"
//!     width = "hidden"
//!     format = "bf16"
//!     [[block]]
//!     name = "mlp"
//!       [[block.node]]
//!       id = "up"
//!       op = "linear"
//!       in = ["x"]
//!       out = [{ edge = "y", rows = "n", width = "4 * hidden", format = "bf16" }]
//!         [[block.node.weight]]
//!         name = "w"
//!         shape = ["4 * hidden", "hidden"]
//!         format = "bf16"
//!     [[output]]
//!     edge = "mlp.y"
//! "#, "mlp.toml").unwrap();
//! assert_eq!(circuit.weight_bytes(), 4 * 1024 * 1024 * 2);
//! let y = circuit.find_edge("mlp.y").unwrap();
//! assert_eq!(circuit.edges()[y].bytes_at(8).unwrap(), 8 * 4096 * 2);
//!
//! // An expression is parsed once, compiled with known names folded, evaluated at any n.
//! let expr = Expr::parse("n * hidden * 2").unwrap();
//! let program = expr
//!     .compile(&|name: &str| match name {
//!         "n" => Some(Binding::Slot(0)),
//!         "hidden" => Some(Binding::Value(1024)),
//!         _ => None,
//!     })
//!     .unwrap();
//! assert_eq!(program.eval(&[3]).unwrap(), 6144);
//! ```

#![warn(missing_docs)]

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
    State, StateIdx, StateKind, Tensor, TensorIdx, Weight,
};
pub use error::{CircuitError, CircuitErrorKind, Place, one_line, quoted};
pub use expr::{Binding, Expr, ExprError, ExprText, Program, Scope, Trend};
pub use format::{Format, FormatError};
pub use op::{Op, UnknownOp};
