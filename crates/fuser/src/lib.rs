//! Fusion: which nodes of a circuit run together in one launch group, at a given number of
//! rows `n` and under given settings, decided by declarative rules (docs/fusion.md).
//! [`standard`] holds the standard rules, over the standard kernel families.
//!
//! Invariants: it knows circuits (circuit-ir) and the kernel registry (kernel-families, only to
//! check that rules name known kernels); it must not know bytes, buffers or memory plans. It
//! reads no file, environment or clock: callers hand it text. A plan depends only on the
//! circuit, the rules, the settings, `n` and the options.
//!
//! ```
//! use circuit_ir::Circuit;
//! use fuser::{FuseOptions, Rules, fuse, intervals};
//!
//! let circuit = Circuit::from_toml(r#"
//!     schema = 1
//!     name = "pair"
//!     [[input]]
//!     id = "x"
//!     rows = "n"
//!     width = 64
//!     format = "bf16"
//!     [[block]]
//!     name = "b"
//!       [[block.node]]
//!       id = "norm"
//!       op = "rms_norm"
//!       in = ["x"]
//!       out = [{ edge = "xn", rows = "n", width = 64, format = "bf16" }]
//!       [[block.node]]
//!       id = "proj"
//!       op = "linear"
//!       in = ["xn"]
//!       out = [{ edge = "y", rows = "n", width = 64, format = "bf16" }]
//!     [[output]]
//!     edge = "b.y"
//! "#, "pair.toml").unwrap();
//! let rules = Rules::from_toml(r#"
//!     schema = 1
//!     [settings]
//!     mode = "decode"
//!     [[rule]]
//!     id = "norm_gemv"
//!     pattern = [{ op = "rms_norm" }, { op = "linear" }]
//!     kernels = ["rmsnorm_gemv"]
//!     emitter = "cuda"
//!     rows = [1, 16]
//!     priority = 10
//!     [[rule]]
//!     id = "norm"
//!     pattern = [{ op = "rms_norm" }]
//!     kernels = ["rmsnorm"]
//!     emitter = "cuda"
//!     [[rule]]
//!     id = "gemm"
//!     pattern = [{ op = "linear" }]
//!     kernels = ["gemm"]
//!     emitter = "cuda"
//! "#, "rules.toml", None).unwrap();
//! let settings = rules.defaults();
//! let small = fuse(&circuit, &rules, &settings, 4, FuseOptions::default()).unwrap();
//! let large = fuse(&circuit, &rules, &settings, 64, FuseOptions::default()).unwrap();
//! assert_eq!((small.groups().len(), large.groups().len()), (1, 2));
//! assert_eq!(intervals(&rules, &settings, 1..=100), vec![1..=16, 17..=100]);
//! ```

#![warn(missing_docs)]

pub mod builder;
pub mod fuse;
pub mod intervals;
pub mod plan;
pub mod rules;
pub mod standard;

pub use builder::RulesBuilder;
pub use fuse::{FuseError, FuseOptions, fuse};
pub use intervals::intervals;
pub use plan::{EdgeState, FusionPlan, Group};
pub use rules::{Rule, Rules, RulesError, RulesErrorKind, SettingDecl, Settings, parse_setting};
