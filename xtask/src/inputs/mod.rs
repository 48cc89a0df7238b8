//! The inputs of the commands, parsed once into typed values: the flags (`flags`), the values
//! clap cannot parse alone (`values`), the files read within their limits (`files`), and what
//! the commands build from them (`settings`: import options, the layout, the device; `sglang`:
//! SGLang's own flags and the run they give), the mode a `plan` runs in with the flags each
//! mode takes (`modes`); an engine's command line (`serve_line`, by its folder's table,
//! `serve_table`), the model it names (`model`) and its start-up log (`log`).
//!
//! Invariants: commands read flags and files only through this module; nothing here plans,
//! predicts or prints.

pub mod files;
pub mod flags;
pub mod log;
pub mod model;
pub mod modes;
pub mod serve_line;
pub mod serve_table;
pub mod settings;
pub mod sglang;
pub mod values;
