//! Workspace-level tests: they drive several crates together on the examples and the shared
//! inputs (`tests/`: circuits, registries and rule sets written back to TOML and loaded again,
//! builders against loaders, property tests over random circuits, limits near `u64::MAX`, the
//! README's example against the downstream crate that runs it). This library holds no code:
//! only the README, as documentation, so that its Rust block ("Use the crates") is compiled
//! and run as a doc test by `cargo test --workspace`.

/// The repository README; its one Rust block is a doc test (its other blocks are `sh`,
/// `toml` or `text`, which rustdoc does not run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;
