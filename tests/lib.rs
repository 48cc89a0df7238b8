//! Workspace-level tests: they drive several crates together on the examples and the shared
//! inputs (`tests/`: circuits, registries and rule sets written back to TOML and loaded again,
//! builders against loaders, property tests over random circuits, limits near `u64::MAX`).
//! This library itself is empty.
