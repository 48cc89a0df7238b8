//! Workspace-level tests: they drive several crates together on the examples and the shared
//! inputs (`round_trip.rs`: circuits, registries and rule sets written back to TOML and loaded
//! again; builders against loaders). This library itself is empty.
