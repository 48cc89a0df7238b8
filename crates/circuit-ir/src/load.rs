//! Loading a circuit from TOML text: parse into [`CircuitDecl`], then build. The file is read
//! by the caller; `origin` (its name) prefixes every error.

use serde::Deserialize;

use crate::build::CircuitBuilder;
use crate::circuit::Circuit;
use crate::decl::CircuitDecl;
use crate::error::{CircuitError, CircuitErrorKind, Place};

/// A TOML error as `line, column: message` (1-based), from the parser's byte span.
pub fn toml_error_location(text: &str, err: &toml::de::Error) -> (usize, usize) {
    let offset = err.span().map_or(0, |s| s.start).min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Circuit {
    /// Loads a circuit from the TOML `text` of the file named `origin`.
    pub fn from_toml(text: &str, origin: &str) -> Result<Circuit, CircuitError> {
        let toml_err = |e: toml::de::Error| {
            let (line, column) = toml_error_location(text, &e);
            CircuitError {
                origin: origin.to_owned(),
                place: Place::root(),
                kind: Box::new(CircuitErrorKind::Toml {
                    line,
                    column,
                    message: e.message().trim_end().replace('\n', " "),
                }),
            }
        };
        // The schema first: a file of another version should say so, not list unknown keys.
        #[derive(Deserialize)]
        struct Schema {
            schema: u32,
        }
        let schema: Schema = toml::from_str(text).map_err(toml_err)?;
        if schema.schema != 1 {
            return Err(CircuitError {
                origin: origin.to_owned(),
                place: Place::root(),
                kind: Box::new(CircuitErrorKind::Schema {
                    found: schema.schema,
                }),
            });
        }
        let decl: CircuitDecl = toml::from_str(text).map_err(toml_err)?;
        CircuitBuilder::from_decl(decl, origin).build()
    }
}
