//! Reading the files the user names. Every input path (`--circuit`, `--families`, `--rules`,
//! `--hf-config` and its quantization side files, `pack`'s CSV) goes through [`read`], so each
//! is bounded the same way.
//!
//! Invariants: at most [`Input::limit`] bytes (plus one, to tell that there was more) are ever
//! read from one input: a regular file larger than its limit is refused from its metadata
//! before a byte is read, and anything else (a pipe, a device such as `/dev/zero` or
//! `/dev/urandom`) is read up to the limit and refused if it has not ended by then, without
//! blocking (a FIFO nobody writes to is read as empty; one that stalls for [`STALL`] is
//! refused). The limits
//! are far above any real file (docs/testing.md lists them): the largest real config.json,
//! circuit, families or rules file is well under 1 MiB, a MiniMalloc CSV a few hundred KiB.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::CliError;

const MIB: u64 = 1 << 20;

/// The kinds of input, each with its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A circuit TOML file (`--circuit`).
    Circuit,
    /// A kernel families TOML file (`--families`).
    Families,
    /// A fusion rules TOML file (`--rules`).
    Rules,
    /// A Hugging Face config.json (`--hf-config`) or a quantization side file beside it.
    HfConfig,
    /// A MiniMalloc CSV file (`cargo xtask pack FILE`).
    PackCsv,
    /// A small index: `data/repos.toml`, a Hugging Face cache's `refs/<revision>`.
    Index,
    /// An engine's start-up log (`cargo xtask check-log FILE`), read as its first bytes.
    Log,
}

impl Input {
    /// The most bytes read from one input of this kind.
    pub const fn limit(self) -> u64 {
        match self {
            // Parsed TOML takes about 40 times its text in memory (a 16 MiB circuit of
            // inputs: 0.7 GB), so the limits keep a hostile file under 1 GiB of memory.
            Input::Circuit => 8 * MIB,
            Input::Families | Input::Rules => 4 * MIB,
            // A JSON value takes about 25 times its text (16 MiB of `{}`: 0.4 GB).
            Input::HfConfig => 8 * MIB,
            // Over a million buffers at 20 bytes a line (16 MiB of them: 0.14 GB).
            Input::PackCsv => 32 * MIB,
            Input::Index => MIB,
            // A start-up is a few hundred lines at the head of a log that may run for weeks;
            // only its first 64 MiB are read (`read_prefix`).
            Input::Log => 64 * MIB,
        }
    }

    /// What the input is, for messages.
    fn what(self) -> &'static str {
        match self {
            Input::Circuit => "a circuit file",
            Input::Families => "a families file",
            Input::Rules => "a rules file",
            Input::HfConfig => "a config.json",
            Input::PackCsv => "a pack CSV file",
            Input::Index => "an index file",
            Input::Log => "a log",
        }
    }
}

/// How long a pipe or device may go without giving a byte before it is refused (a FIFO whose
/// writer never writes, a terminal): a stall is bounded like a size.
const STALL: Duration = Duration::from_secs(10);

/// The text of `path`, read as `kind`: at most its limit, UTF-8. Errors name the path.
pub fn read(path: &Path, kind: Input) -> Result<String, CliError> {
    let (bytes, _) = read_bytes(path, kind, false)?;
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "cannot read {}: stream did not contain valid UTF-8",
            path.display()
        )
        .into()
    })
}

/// The first bytes of `path` (at most the limit of `kind`), as text with any invalid UTF-8
/// replaced (a log may quote bytes of any encoding), and whether there was more.
pub fn read_prefix(path: &Path, kind: Input) -> Result<(String, bool), CliError> {
    let (bytes, more) = read_bytes(path, kind, true)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), more))
}

/// The bytes of `path`, at most the limit of `kind`: beyond it, an error, or with `prefix`
/// the bytes up to the limit and `true`.
fn read_bytes(path: &Path, kind: Input, prefix: bool) -> Result<(Vec<u8>, bool), CliError> {
    let shown = path.display();
    let cannot = |e: std::io::Error| -> CliError { format!("cannot read {shown}: {e}").into() };
    let limit = kind.limit();
    // Anything but a regular file or a folder is opened without blocking: opening a FIFO
    // would otherwise wait for a writer forever.
    let regular = std::fs::metadata(path).map_err(cannot)?;
    let file = if regular.is_file() || regular.is_dir() {
        File::open(path)
    } else {
        open_nonblocking(path)
    }
    .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !prefix && meta.is_file() && meta.len() > limit {
        return Err(format!(
            "cannot read {shown}: {} bytes, above the limit of {} MiB for {} (docs/testing.md)",
            meta.len(),
            limit / MIB,
            kind.what()
        )
        .into());
    }
    let mut bytes = Vec::new();
    // A regular file may still grow, and /proc files report 0 bytes: the read is bounded
    // whatever the metadata said.
    let mut reader = file.take(limit + 1);
    let mut chunk = vec![0u8; 1 << 16];
    let mut last_byte = Instant::now();
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(k) => {
                bytes.extend_from_slice(&chunk[..k]);
                last_byte = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if last_byte.elapsed() >= STALL {
                    return Err(format!(
                        "cannot read {shown}: not a regular file, and it gave no byte for {} s; give a regular file",
                        STALL.as_secs()
                    )
                    .into());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(cannot(e)),
        }
    }
    if bytes.len() as u64 > limit && prefix {
        bytes.truncate(limit as usize);
        return Ok((bytes, true));
    }
    if bytes.len() as u64 > limit {
        let kind_of = if meta.is_file() {
            "a file that grew"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "cannot read {shown}: {kind_of}, and it did not end within the limit of {} MiB for {} (docs/testing.md); give a regular file",
            limit / MIB,
            kind.what()
        )
        .into());
    }
    Ok((bytes, false))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// A config.json with the quantization side files next to it (the library reads no file),
/// read once and handed to every import of the run.
pub struct HfFiles {
    pub text: String,
    pub origin: String,
    /// Kind, path and text of each side file that exists.
    side: Vec<(circuit_hf::SideFileKind, String, String)>,
}

impl HfFiles {
    pub fn read(config: &Path) -> Result<HfFiles, CliError> {
        let dir = config.parent().unwrap_or(Path::new(""));
        let mut side = Vec::new();
        for kind in circuit_hf::SideFileKind::ALL {
            let path = dir.join(kind.file_name());
            if path.is_file() {
                side.push((
                    kind,
                    path.display().to_string(),
                    read(&path, Input::HfConfig)?,
                ));
            }
        }
        Ok(HfFiles {
            text: read(config, Input::HfConfig)?,
            origin: config.display().to_string(),
            side,
        })
    }

    pub fn side(&self) -> Vec<circuit_hf::SideFile<'_>> {
        self.side
            .iter()
            .map(|(kind, origin, text)| circuit_hf::SideFile {
                kind: *kind,
                origin,
                text,
            })
            .collect()
    }
}

/// A text from a file, or the embedded default, with the name errors should use.
pub fn source(
    path: Option<&PathBuf>,
    kind: Input,
    text: &'static str,
    origin: &'static str,
) -> Result<(String, String), CliError> {
    match path {
        Some(p) => Ok((read(p, kind)?, p.display().to_string())),
        None => Ok((text.to_owned(), origin.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_device_is_refused_at_the_limit() {
        let e = read(Path::new("/dev/zero"), Input::HfConfig).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot read /dev/zero: not a regular file, and it did not end within the limit of 8 MiB for a config.json (docs/testing.md); give a regular file"
        );
    }

    #[test]
    fn a_device_that_ends_is_read() {
        assert_eq!(read(Path::new("/dev/null"), Input::Rules).unwrap(), "");
    }
}
