//! Reading TOML documents: the one path every loader of the workspace takes (circuits here,
//! kernel registries and fusion rules above), so they report syntax and schema problems alike.
//! The file is read by the caller; `origin` (its name) prefixes every error.
//!
//! Invariant: the `schema` key is read first, so a file of another version says so instead of
//! listing the keys this version does not know.

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
    /// A schema version this build does not read.
    #[error("unknown schema {found}; this version reads schema = {SCHEMA}")]
    Schema {
        /// The version found.
        found: u32,
    },
}

impl TomlError {
    /// The error of the parser at its place in `text`.
    pub fn syntax(text: &str, err: &toml::de::Error) -> TomlError {
        let offset = err.span().map_or(0, |s| s.start).min(text.len());
        let before = &text[..text.floor_char_boundary(offset)];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        TomlError::Syntax {
            line,
            column,
            message: err.message().trim_end().replace('\n', " "),
            span: err.span(),
        }
    }
}

/// Parses a document whose `schema` must be [`SCHEMA`], checked before anything else.
pub fn parse_document<T: DeserializeOwned>(text: &str) -> Result<T, TomlError> {
    #[derive(Deserialize)]
    struct Schema {
        schema: u32,
    }
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
