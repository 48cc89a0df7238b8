//! Benchmarks run by `cargo xtask bench <name>`.

pub mod pack;
