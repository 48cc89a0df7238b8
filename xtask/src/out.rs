//! Standard output that fails cleanly: a write to a closed pipe (`cargo xtask plan | head`)
//! ends the command quietly with success, any other write error (a full disk) is one error
//! line and exit 1. `println!` would panic on both, so every command prints through
//! [`outln!`] or a writer whose errors go through [`error`].

use std::io;
use std::path::Path;

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

/// A write to standard output failed (a full disk): nothing more can be written there.
#[derive(Debug)]
pub struct WriteFailed(io::Error);

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for WriteFailed {}

/// The error of a failed write to standard output.
pub fn error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Box::new(Closed)
    } else {
        Box::new(WriteFailed(e))
    }
}

/// Whether `e` is a failed write to standard output (after which nothing more goes there).
pub fn is_write_error(e: &CliError) -> bool {
    e.is::<Closed>() || e.is::<WriteFailed>()
}

/// Refuses to run with standard output closed (`>&-`): Rust's standard library ignores
/// writes to a closed descriptor, so the command would exit 0 having written nothing, and a
/// file opened later could take descriptor 1 and receive the output.
///
/// The runtime reopens a closed descriptor 1 on `/dev/null` for reading and writing before
/// `main` runs, so that is what is refused; a shell's `>/dev/null` opens it write-only and is
/// accepted. (A parent that hands over `/dev/null` opened for reading and writing, as Python's
/// `subprocess.DEVNULL` does, cannot be told apart and is refused too: give it a write-only
/// `/dev/null`.)
pub fn check_open() -> Result<(), CliError> {
    if stdout_was_closed() {
        return Err(
            "standard output is closed (`>&-`), so nothing would be written: redirect it to a file, or write-only to /dev/null (`>/dev/null`)"
                .into(),
        );
    }
    Ok(())
}

/// Whether descriptor 1 is `/dev/null` opened for reading and writing (Linux's `/proc` tells;
/// elsewhere nothing is refused).
fn stdout_was_closed() -> bool {
    let is_null = std::fs::read_link("/proc/self/fd/1").is_ok_and(|t| t == Path::new("/dev/null"));
    if !is_null {
        return false;
    }
    // `flags:\t0100002`: octal open flags; the access mode is the low two bits (2: O_RDWR).
    std::fs::read_to_string("/proc/self/fdinfo/1").is_ok_and(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|flags| flags & 3 == 2)
    })
}

/// `println!` that returns the write error (through [`error`]) with `?` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::out::error)?
    }};
}
pub(crate) use outln;
