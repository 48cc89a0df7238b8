//! circuit-ir
