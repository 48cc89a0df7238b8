//! The MiniMalloc CSV format: `id,lower,upper,size`, one buffer per line, live on
//! `[lower, upper)`; solutions add a fifth column, `offset`.
//!
//! Invariants: parsing never panics: every malformed input is a
//! [`CsvError`](crate::csv::CsvError) naming the line (1-based), the field and the value at
//! fault, with how to fix it. A parsed buffer has `lower < upper` and an id no other line of the
//! file uses; buffers keep the file's order. Blank lines and a trailing `\r` are ignored; fields
//! may be surrounded by spaces. `write` gives one line per buffer, in the order given.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::Buffer;

/// The header a file must start with.
pub const HEADER: &str = "id,lower,upper,size";

/// One line of a MiniMalloc file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CsvBuffer {
    /// The buffer's id (unique in a file).
    pub id: u64,
    /// First step it is live at.
    pub lower: u64,
    /// First step after its lifetime (exclusive; greater than `lower`).
    pub upper: u64,
    /// Bytes it needs.
    pub size: u64,
}

impl CsvBuffer {
    /// The buffer to pack: live on `[lower, upper)`.
    pub fn buffer(&self) -> Buffer {
        Buffer::new(self.lower, self.upper, self.size)
    }
}

/// Why a CSV text is not a valid problem (every variant names the line at fault, 1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CsvError {
    /// No header line.
    #[error("empty file: expected the header `{HEADER}` and then one line per buffer")]
    Empty,
    /// The first line is not the header.
    #[error("line {line}: the header is `{found}`; the first line must be exactly `{HEADER}`")]
    BadHeader {
        /// The line.
        line: usize,
        /// The header found.
        found: String,
    },
    /// A line without exactly four fields.
    #[error(
        "line {line}: {found} fields, expected 4 (`{HEADER}`); write one buffer per line as four comma-separated numbers"
    )]
    FieldCount {
        /// The line.
        line: usize,
        /// The number of fields found.
        found: usize,
    },
    /// A negative number.
    #[error("line {line}: {field} is negative ({value}); write a whole number >= 0")]
    Negative {
        /// The line.
        line: usize,
        /// The column.
        field: &'static str,
        /// The text found.
        value: String,
    },
    /// A field that is not a whole number.
    #[error("line {line}: {field} `{value}` is not a whole number; write it as decimal digits")]
    NotANumber {
        /// The line.
        line: usize,
        /// The column.
        field: &'static str,
        /// The text found.
        value: String,
    },
    /// A number above `u64::MAX`.
    #[error("line {line}: {field} {value} is larger than {max}; use a smaller value", max = u64::MAX)]
    TooLarge {
        /// The line.
        line: usize,
        /// The column.
        field: &'static str,
        /// The text found.
        value: String,
    },
    /// `upper <= lower`.
    #[error(
        "line {line}: upper {upper} <= lower {lower}; a buffer lives on [lower, upper), so make upper greater than lower"
    )]
    EmptyLifetime {
        /// The line.
        line: usize,
        /// Its `lower`.
        lower: u64,
        /// Its `upper`.
        upper: u64,
    },
    /// An id used twice.
    #[error(
        "line {line}: id {id} is already used on line {first_line}; give every buffer its own id"
    )]
    DuplicateId {
        /// The line.
        line: usize,
        /// The repeated id.
        id: u64,
        /// The line where the id first appears.
        first_line: usize,
    },
    /// `write` got not one offset per buffer.
    #[error("{offsets} offsets for {buffers} buffers: give exactly one offset per buffer")]
    LengthMismatch {
        /// The number of buffers.
        buffers: usize,
        /// The number of offsets.
        offsets: usize,
    },
}

/// Parses a MiniMalloc problem (`id,lower,upper,size`).
pub fn parse(text: &str) -> Result<Vec<CsvBuffer>, CsvError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty());
    let (header_line, header) = lines.next().ok_or(CsvError::Empty)?;
    let header_fields: Vec<&str> = header.split(',').map(str::trim).collect();
    if header_fields.join(",") != HEADER {
        return Err(CsvError::BadHeader {
            line: header_line,
            found: header.to_string(),
        });
    }
    let mut buffers = Vec::new();
    let mut first_line_of: HashMap<u64, usize> = HashMap::new();
    for (line, text) in lines {
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != 4 {
            return Err(CsvError::FieldCount {
                line,
                found: fields.len(),
            });
        }
        let id = number(line, "id", fields[0])?;
        let lower = number(line, "lower", fields[1])?;
        let upper = number(line, "upper", fields[2])?;
        let size = number(line, "size", fields[3])?;
        if upper <= lower {
            return Err(CsvError::EmptyLifetime { line, lower, upper });
        }
        if let Some(&first_line) = first_line_of.get(&id) {
            return Err(CsvError::DuplicateId {
                line,
                id,
                first_line,
            });
        }
        first_line_of.insert(id, line);
        buffers.push(CsvBuffer {
            id,
            lower,
            upper,
            size,
        });
    }
    Ok(buffers)
}

fn number(line: usize, field: &'static str, value: &str) -> Result<u64, CsvError> {
    let owned = || value.to_string();
    if let Some(rest) = value.strip_prefix('-')
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(CsvError::Negative {
            line,
            field,
            value: owned(),
        });
    }
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CsvError::NotANumber {
            line,
            field,
            value: owned(),
        });
    }
    value.parse().map_err(|_| CsvError::TooLarge {
        line,
        field,
        value: owned(),
    })
}

/// Writes a solution: the header `id,lower,upper,size,offset` and one line per buffer.
pub fn write(buffers: &[CsvBuffer], offsets: &[u64]) -> Result<String, CsvError> {
    if buffers.len() != offsets.len() {
        return Err(CsvError::LengthMismatch {
            buffers: buffers.len(),
            offsets: offsets.len(),
        });
    }
    let mut out = String::with_capacity(32 * (buffers.len() + 1));
    out.push_str(HEADER);
    out.push_str(",offset\n");
    for (b, offset) in buffers.iter().zip(offsets) {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            b.id, b.lower, b.upper, b.size, offset
        );
    }
    Ok(out)
}
