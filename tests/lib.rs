//! Workspace-level tests: they drive several crates together on the shared inputs.
