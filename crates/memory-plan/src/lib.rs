//! Memory planning for ML inference: byte accounting, liveness and arena packing.
pub mod pack;
