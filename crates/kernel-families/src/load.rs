//! TOML text to declarations, with errors that say where they are: the line and column
//! (circuit-ir's document reader) and the family and workspace (or device) whose
//! table holds the fault, found from the spans of the `[[family]]`, `[[family.workspace]]` and
//! `[[device]]` headers.
//!
//! Invariants: the schema is read first, so a file of another version says so rather than
//! listing unknown keys; nothing here reads a file, the environment or a clock.

use std::ops::Range;

use circuit_ir::Place;
use circuit_ir::load::{TomlError, parse_document};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;

use crate::error::{FamiliesError, FamiliesErrorKind};

/// Parses a families file or a device table into its declarations (circuit-ir's document
/// reader: schema first), placing a syntax error in the family and workspace that hold it.
pub(crate) fn parse<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, FamiliesError> {
    parse_document(text).map_err(|e| {
        let place = match &e {
            TomlError::Syntax {
                span: Some(span), ..
            } => place_at(text, span.clone()),
            _ => Place::root(),
        };
        FamiliesError::new(origin, place, FamiliesErrorKind::Toml(e))
    })
}

/// A table's `name` or `id`, read leniently: only to label a place.
#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    id: Option<toml::Value>,
    #[serde(default)]
    name: Option<toml::Value>,
    #[serde(default)]
    workspace: Vec<Spanned<Named>>,
}

impl Named {
    fn label(&self, what: &str, key: &str, position: usize) -> String {
        let value = if key == "id" { &self.id } else { &self.name };
        match value {
            Some(toml::Value::String(s)) => format!("{what} `{s}`"),
            _ => format!("{what} #{}", position + 1),
        }
    }
}

/// The item of `items` whose table holds the error at `span`, with its position: the last one
/// whose header starts before the error, or whose header the error's span lies within (a
/// missing key points at the header). An error starting at a header but not within it (the
/// empty span of a key missing from the whole document) is about an outer table.
fn containing<'a>(items: &'a [Spanned<Named>], span: &Range<usize>) -> Option<(usize, &'a Named)> {
    let (i, item) = items
        .iter()
        .enumerate()
        .rev()
        .find(|(_, item)| item.span().start <= span.start)?;
    let header = item.span();
    let inside = header.start < span.start || (span.start < span.end && span.end <= header.end);
    inside.then(|| (i, item.get_ref()))
}

/// The place of an error at `span`: the family and workspace, or the device, whose table holds
/// it; the top of the file when it is in none or the text has no readable outline.
fn place_at(text: &str, span: Range<usize>) -> Place {
    #[derive(Deserialize)]
    struct Outline {
        #[serde(default)]
        family: Vec<Spanned<Named>>,
        #[serde(default)]
        device: Vec<Spanned<Named>>,
    }
    let Ok(outline) = toml::from_str::<Outline>(text) else {
        return Place::root();
    };
    if let Some((i, family)) = containing(&outline.family, &span) {
        let place = Place::root().with(family.label("family", "id", i));
        return match containing(&family.workspace, &span) {
            Some((j, ws)) => place.with(ws.label("workspace", "name", j)),
            None => place,
        };
    }
    match containing(&outline.device, &span) {
        Some((i, device)) => Place::root().with(device.label("device", "name", i)),
        None => Place::root(),
    }
}

#[cfg(test)]
mod tests {
    use crate::Families;

    fn err(text: &str) -> String {
        Families::from_toml(text, "f.toml").unwrap_err().to_string()
    }

    #[test]
    fn inline_tables_are_placed_too() {
        assert_eq!(
            err(
                "schema = 1\nfamily = [\n  { id = \"a\", kernels = [\"k\"], ops = [\"rope\"] },\n  { id = \"b\", kernels = [\"j\"], ops = [\"rope\"], op = 1 },\n]\n"
            ),
            "f.toml: family `b`: line 4, column 48: unknown field `op`, expected one of `id`, `description`, `kernels`, `emitters`, `ops`, `workspace`"
        );
    }

    #[test]
    fn a_fault_before_any_family_is_at_the_top() {
        assert_eq!(
            err("schema = \"1\"\n[[family]]\nid = \"a\"\n"),
            "f.toml: line 1, column 10: invalid type: string \"1\", expected u32"
        );
    }

    #[test]
    fn an_unreadable_outline_falls_back_to_the_top() {
        // `workspace` is not an array of tables, so the outline cannot place the error.
        assert_eq!(
            err(
                "schema = 1\n[[family]]\nid = \"a\"\nkernels = [\"k\"]\nops = [\"rope\"]\nworkspace = 3\n"
            ),
            "f.toml: line 6, column 13: invalid type: integer `3`, expected a sequence"
        );
    }
}
