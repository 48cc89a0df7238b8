//! Renderers: each turns what a command computed into the table, JSON, JSON lines, CSV or SVG
//! the user asked for. `plan` the plain plan's sweep, `svg` its charts, `engine` an engine's
//! start-up, `parallel` a parallel layout's ranks.
//!
//! Invariants: a renderer imports no command; it reads the data it is handed and the output
//! format, and writes through `out` (a closed standard output is an error, not a success).

pub mod engine;
pub mod parallel;
pub mod plan;
pub mod svg;

use crate::CliError;
use crate::inputs::flags::OutputFormat;

/// `--format jsonl` and `csv` are one record per row of a sweep; an engine start-up is one
/// record.
pub fn one_record(format: OutputFormat) -> CliError {
    format!(
        "--format {}: JSON lines and CSV are for sweeps of --rows; this report is one record: give --format json or table",
        match format {
            OutputFormat::Jsonl => "jsonl",
            _ => "csv",
        }
    )
    .into()
}
