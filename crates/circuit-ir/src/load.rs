//! Reading TOML documents: the one path every loader of the workspace takes (circuits here,
//! kernel registries and fusion rules above), so they report syntax and schema problems alike.
//! The file is read by the caller; `origin` (its name) prefixes every error.
//!
//! Invariants: the `schema` key is read first, so a file of another version says so instead of
//! listing the keys this version does not know. A UTF-8 byte-order mark at the very start (which
//! some editors write) is skipped; one anywhere else is named in the error it causes. Every
//! syntax error has a line and column: when the TOML reader gives none (its limit on dotted-key
//! depth), the key at fault is found in the text.

use std::ops::Range;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::build::CircuitBuilder;
use crate::circuit::Circuit;
use crate::decl::CircuitDecl;
use crate::error::{CircuitError, CircuitErrorKind, Place};

/// The schema version every document of this build has.
pub const SCHEMA: u32 = 1;

/// Why a TOML text is not a document of the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TomlError {
    /// Not TOML, or a key, type or value the schema does not allow.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The parser's message, on one line.
        message: String,
        /// Byte range of the fault in the text, when the parser gives one.
        span: Option<Range<usize>>,
    },
    /// A fault the TOML reader gives no position for.
    #[error("{message} (the TOML reader gives no position)")]
    Unplaced {
        /// The parser's message, on one line.
        message: String,
    },
    /// A schema version this build does not read.
    #[error("unknown schema {found}; this version reads schema = {SCHEMA}")]
    Schema {
        /// The version found.
        found: u32,
    },
}

/// The byte-order mark, U+FEFF.
pub const BOM: char = '\u{feff}';

/// The most parts a dotted key (`a.b.c = 1`, `[a.b.c]`) may have: the TOML reader refuses a key
/// nested deeper, without saying where.
pub const MAX_KEY_PARTS: usize = 80;

impl TomlError {
    /// The error of the parser at its place in `text`.
    pub fn syntax(text: &str, err: &toml::de::Error) -> TomlError {
        let mut message = readable(err.message());
        let span = match err.span() {
            Some(span) => span,
            None => match deep_key(text) {
                // The reader's only unplaced error is its dotted-key depth limit.
                Some((span, parts)) => {
                    message = format!(
                        "a dotted key of {parts} parts; keys and table headers nest at most {MAX_KEY_PARTS} parts deep"
                    );
                    span
                }
                None => return TomlError::Unplaced { message },
            },
        };
        let offset = span.start.min(text.len());
        let at = text.floor_char_boundary(offset);
        let end = text.floor_char_boundary(span.end.min(text.len())).max(at);
        // The reader places a stray mark's error at the mark, inside its span, or just after it
        // (a mark before a table header).
        if text[at..].starts_with(BOM) || text[..at].ends_with(BOM) || text[at..end].contains(BOM) {
            message.push_str(
                " (a byte-order mark, U+FEFF, is there: only one at the very start of the file is allowed; remove it)",
            );
        }
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map_or(0, |l| l.trim_start_matches(BOM).chars().count())
            + 1;
        TomlError::Syntax {
            line,
            column,
            message,
            span: Some(span),
        }
    }
}

/// The parser's message on one line, with integers beyond 64 bits said as such (the reader
/// calls them "integer `N` as i128").
fn readable(message: &str) -> String {
    let message = message.trim_end().replace('\n', " ");
    let Some(at) = message.find("invalid type: integer `") else {
        return message;
    };
    let digits_at = at + "invalid type: integer `".len();
    let Some(len) = message[digits_at..].find("` as i128") else {
        return message;
    };
    let number = &message[digits_at..digits_at + len];
    let range = if number.starts_with('-') {
        format!("below -2^63 ({}), the smallest 64-bit integer", i64::MIN)
    } else {
        format!("above 2^64 - 1 ({}), the largest 64-bit integer", u64::MAX)
    };
    let rest = &message[digits_at + len + "` as i128".len()..];
    format!(
        "{}integer `{number}` is {range}{}",
        &message[..at],
        rest.strip_prefix(", ")
            .map_or(rest.to_owned(), |r| format!("; {r}"))
    )
}

/// The first key in `text` with more than [`MAX_KEY_PARTS`] dotted parts, with its span and
/// part count: a scan of bare and quoted key parts joined by dots, outside strings and comments.
fn deep_key(text: &str) -> Option<(Range<usize>, usize)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    // The current run of dotted parts: where it starts, how many parts, whether a dot is due.
    let mut run: Option<(usize, usize)> = None;
    let mut after_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        let part_end = match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => {
                let mut j = i;
                while j < bytes.len()
                    && matches!(bytes[j], b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-')
                {
                    j += 1;
                }
                Some(j)
            }
            b'"' | b'\'' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != c && bytes[j] != b'\n' {
                    j += if c == b'"' && bytes[j] == b'\\' { 2 } else { 1 };
                }
                Some((j + 1).min(bytes.len()))
            }
            _ => None,
        };
        match part_end {
            Some(end) => {
                run = match run {
                    Some((start, parts)) if after_dot => Some((start, parts + 1)),
                    _ => Some((i, 1)),
                };
                after_dot = false;
                if let Some((start, parts)) = run
                    && parts > MAX_KEY_PARTS
                {
                    // Count the whole key before reporting it.
                    let mut total = parts;
                    let mut j = end;
                    while let Some((next, more)) = next_part(bytes, j) {
                        total += more;
                        j = next;
                    }
                    return Some((start..j, total));
                }
                i = end;
            }
            None if c == b'.' && run.is_some() && !after_dot => {
                after_dot = true;
                i += 1;
            }
            None if c == b' ' || c == b'\t' => i += 1,
            None if c == b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            None => {
                run = None;
                after_dot = false;
                i += 1;
            }
        }
    }
    None
}

/// After a key part ending at `at`: the end of the next `.part`, if the key goes on.
fn next_part(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    if bytes.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    let start = i;
    while i < bytes.len()
        && matches!(bytes[i], b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-')
    {
        i += 1;
    }
    (i > start).then_some((i, 1))
}

/// Parses a document whose `schema` must be [`SCHEMA`], checked before anything else.
pub fn parse_document<T: DeserializeOwned>(text: &str) -> Result<T, TomlError> {
    #[derive(Deserialize)]
    struct Schema {
        schema: u32,
    }
    // Spans stay offsets into `text`: the reader skips a leading BOM itself and counts it.
    let schema: Schema = toml::from_str(text).map_err(|e| TomlError::syntax(text, &e))?;
    if schema.schema != SCHEMA {
        return Err(TomlError::Schema {
            found: schema.schema,
        });
    }
    toml::from_str(text).map_err(|e| TomlError::syntax(text, &e))
}

impl Circuit {
    /// Loads a circuit from the TOML `text` of the file named `origin`.
    pub fn from_toml(text: &str, origin: &str) -> Result<Circuit, CircuitError> {
        let decl: CircuitDecl = parse_document(text).map_err(|e| CircuitError {
            origin: origin.to_owned(),
            place: Place::root(),
            kind: Box::new(CircuitErrorKind::Toml(e)),
        })?;
        CircuitBuilder::from_decl(decl, origin).build()
    }
}
