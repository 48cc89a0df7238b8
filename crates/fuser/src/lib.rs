//! fuser
