//! Standard output that fails cleanly: a write to a closed pipe (`cargo xtask plan | head`)
//! ends the command quietly with success, any other write error (a full disk) is one error
//! line and exit 1. `println!` would panic on both, so every command prints through
//! [`outln!`] or a writer whose errors go through [`error`].

use std::io;

use crate::CliError;

/// Standard output was closed by its reader: nothing left to say, and nothing wrong.
#[derive(Debug)]
pub struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for Closed {}

/// The error of a failed write to standard output.
pub fn error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Box::new(Closed)
    } else {
        format!("cannot write to standard output: {e}").into()
    }
}

/// `println!` that returns the write error (through [`error`]) with `?` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::out::error)?
    }};
}
pub(crate) use outln;
