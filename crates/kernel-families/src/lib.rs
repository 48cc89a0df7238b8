//! kernel-families
