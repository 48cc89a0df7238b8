//! The inputs of the commands, parsed once into typed values: the flags (`flags`), the values
//! clap cannot parse alone (`values`), the files read within their limits (`files`), and what
//! the commands build from them (`settings`: import options, the layout, the device), and the
//! mode a `plan` runs in with the flags each mode takes (`modes`).
//!
//! Invariants: commands read flags and files only through this module; nothing here plans,
//! predicts or prints.

pub mod files;
pub mod flags;
pub mod modes;
pub mod settings;
pub mod values;
