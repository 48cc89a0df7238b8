//! memory-plan
