//! Renderers: each turns what a command computed into the table, JSON, JSON lines, CSV or SVG
//! the user asked for. `plan` the plain plan's sweep, `svg` its charts, `engine` an engine's
//! start-up, `sglang` SGLang's start-up and two engines side by side, `serve_line` the serve
//! line it was read from, `parallel` a parallel layout's ranks, `check_log` a start-up log
//! against its prediction.
//!
//! Invariants: a renderer imports no command; it reads the data it is handed and the output
//! format, and writes through `out` (a closed standard output is an error, not a success).

pub mod check_log;
pub mod engine;
pub mod parallel;
pub mod plan;
pub mod serve_line;
pub mod sglang;
pub mod svg;
