//! The serve line a prediction was read from, rendered above the engine's table (three lines:
//! the line, its model, what it ignored) and as the JSON `serve_line` object.
//!
//! Invariants: renders the [`ServeNote`] it is handed; every word of the line is on one of its
//! lines (the planner flags it gave are the table's `run` line and the JSON's `flags`).

use crate::CliError;
use crate::inputs::serve_line::ServeNote;
use crate::out::outln;

pub fn print(note: &ServeNote) -> Result<(), CliError> {
    let l = &note.line;
    outln!("serve     {} ({})", l.words.join(" "), l.release);
    outln!(
        "model     {}{}: {}, {}",
        l.model,
        if l.default_model {
            " (the engine's default: the line names no model)"
        } else {
            ""
        },
        note.config,
        note.place
    );
    if l.ignored.is_empty() {
        outln!("ignored   (none)");
    } else {
        outln!(
            "ignored   {} (no byte depends on them)",
            l.ignored.join(", ")
        );
    }
    outln!();
    Ok(())
}

pub fn json(note: &ServeNote) -> serde_json::Value {
    let l = &note.line;
    serde_json::json!({
        "words": l.words,
        "engine": l.engine,
        "release": l.release,
        "model": l.model,
        "engine_default_model": l.default_model,
        "config": note.config,
        "found_in": note.place,
        "flags": l.flags,
        "ignored": l.ignored,
    })
}
