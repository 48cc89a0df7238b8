//! Kernel families of the circuit memory planner (docs/families.md): which family a launch group
//! runs for a node ([`Families::of_group`]), the workspaces each family declares and their
//! values at `(n, k)` on a device ([`Families::bind`], [`BoundFamilies::workspace_value`]), and
//! the device table ([`Devices`]). [`standard`] holds the standard families (an H100-class,
//! bf16 registry covering every op circuit-hf emits) and the dims they read.
//!
//! Invariants: it depends on circuit-ir only and must not know fusion rules or memory plans. It
//! reads no file, no environment and no clock: callers hand it text and an origin name for
//! messages, as `Circuit::from_toml` does.
//!
//! ```
//! use circuit_ir::{CircuitBuilder, Op, decl::{BlockDecl, NodeDecl, OutDecl}};
//! use kernel_families::{Devices, Families};
//!
//! let families = Families::from_toml(r#"
//!     schema = 1
//!     [[family]]
//!     id = "flash_decode"
//!     kernels = ["flash_decode_bf16"]
//!     ops = ["attention"]
//!       [[family.workspace]]
//!       name = "partials"
//!       bytes = ["4 * n * heads * 128 * min(ceil_div(2 * sm_count, n), 128)"]
//!       arena = true
//!       why = "fp32 split-KV partial outputs"
//! "#, "families.toml").unwrap();
//! let family = families.of_group(&["flash_decode_bf16"], "cuda", Op::Attention).unwrap();
//!
//! let mut b = CircuitBuilder::new("attn");
//! b.dim("heads", 32).input("q", "n", "heads * 128", "bf16").block(
//!     BlockDecl::once("b").node(
//!         NodeDecl::new("attention", "attention")
//!             .reads(["q"])
//!             .writes(OutDecl::new("o", "n", "heads * 128", "bf16")),
//!     ),
//! );
//! b.output("b.o");
//! let circuit = b.build().unwrap();
//! let h100 = Devices::builtin().unwrap().get("h100-sxm").unwrap();
//! let bound = families.bind(&circuit, h100.sm_count).unwrap();
//! // n = 1 on 132 SMs: 128 splits (the cap) of 32 heads x 128 fp32 values.
//! assert_eq!(bound.workspace_value(family, 0, 1, 4096).unwrap(), 4 * 32 * 128 * 128);
//! ```

#![warn(missing_docs)]

pub mod bound;
pub mod builder;
pub mod decl;
pub mod device;
pub mod error;
pub mod families;
mod load;
pub mod standard;

pub use bound::BoundFamilies;
pub use builder::FamiliesBuilder;
pub use device::{BUILTIN_DEVICES, Device, Devices, NamedDevice, Precision};
pub use error::{FamiliesError, FamiliesErrorKind, Finding, WorkspaceError, WorkspaceErrorKind};
pub use families::{Families, Family, FamilyIdx, READABLE, Workspace};
