//! Import errors: one type, [`HfError`], whose every message starts with the origin (the file
//! name the caller gave) and says what is wrong and what is supported or expected.
//!
//! Invariants: no input produces a panic, only one of these; a [`HfError::Circuit`] means the
//! importer itself emitted an invalid circuit (a bug in this crate), never a user mistake
//! (sizes that overflow are [`HfError::TooLarge`]).

use circuit_ir::{CircuitError, one_line};

use crate::model::supported_list;

/// Why a `config.json` cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HfError {
    /// The text is not JSON.
    #[error(
        "{}: line {}, column {}: not valid JSON: {}",
        one_line(.origin),
        .line,
        .column,
        one_line(.message)
    )]
    Json {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// `NaN`, `Infinity` or `-Infinity` as a value: not JSON, though Python's `json` writes
    /// them for a float that is not finite (and reads them back), so a config saved from
    /// Python may hold one.
    #[error(
        "{}: line {}, column {}: `{}` is {}, which JSON does not allow (Python's json writes it for a float that is not finite); write a number",
        one_line(.origin),
        .line,
        .column,
        one_line(.key),
        .literal
    )]
    NonFinite {
        /// The file.
        origin: String,
        /// The key whose value it is (the nearest key before it, for an item of an array).
        key: String,
        /// `NaN`, `Infinity` or `-Infinity`.
        literal: &'static str,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The text starts with a UTF-8 byte-order mark, which JSON does not allow (RFC 8259
    /// section 8.1) and Python's `json`, hence transformers, refuses too.
    #[error(
        "{}: the file starts with a UTF-8 byte-order mark (U+FEFF), which JSON does not allow and transformers refuses; save it without the mark",
        one_line(.origin)
    )]
    ByteOrderMark {
        /// The file.
        origin: String,
    },
    /// A key repeated in one JSON object: readers keep one of the values, not always the same
    /// one, so the file is ambiguous.
    #[error(
        "{}: line {}, column {}: duplicate key `{}` in one JSON object (JSON readers keep only the last value, silently); remove one of them",
        one_line(.origin),
        .line,
        .column,
        one_line(.key)
    )]
    DuplicateKey {
        /// The file.
        origin: String,
        /// The repeated key.
        key: String,
        /// 1-based line of the repetition.
        line: usize,
        /// 1-based column of the repetition.
        column: usize,
    },
    /// The JSON is not an object.
    #[error(
        "{}: expected a JSON object at the top level, found {}",
        one_line(.origin),
        one_line(.found)
    )]
    NotAnObject {
        /// The file.
        origin: String,
        /// What was found, e.g. `an array`.
        found: String,
    },
    /// No `model_type` key.
    #[error(
        "{}: missing key `model_type` (supported: {})",
        one_line(.origin),
        supported_list()
    )]
    MissingModelType {
        /// The file.
        origin: String,
    },
    /// A `model_type` this crate does not import.
    #[error(
        "{}: model_type `{}` is not supported (supported: {})",
        one_line(.origin),
        one_line(.found),
        supported_list()
    )]
    UnsupportedModelType {
        /// The file.
        origin: String,
        /// The model type found.
        found: String,
    },
    /// A key the model needs, absent (or null) and without a default.
    #[error(
        "{}: missing key `{}` ({} has no default for it)",
        one_line(.origin),
        one_line(.key),
        one_line(.model_type)
    )]
    MissingKey {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// The model type.
        model_type: String,
    },
    /// A value of the wrong JSON type or out of range.
    #[error(
        "{}: `{}` must be {}, found {}",
        one_line(.origin),
        one_line(.key),
        one_line(.expected),
        one_line(.found)
    )]
    BadValue {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// What it must be, e.g. `a whole number of at least 1`.
        expected: String,
        /// The value found, as JSON.
        found: String,
    },
    /// The parallel layout does not fit the model.
    #[error("{}: {source}", one_line(.origin))]
    Parallel {
        /// The file.
        origin: String,
        /// What does not fit.
        #[source]
        source: crate::parallel::ParallelError,
    },
    /// A key that changes memory in a way this crate does not model.
    #[error(
        "{}: `{}` {}",
        one_line(.origin),
        one_line(.key),
        one_line(.why)
    )]
    Refused {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// A key this crate does not know for the model type: it might change memory, so it is
    /// refused rather than ignored.
    #[error(
        "{}: unknown key `{}` for {}: it is neither read nor known to leave memory unchanged, so it is refused rather than ignored; remove it if it does not change the model's tensors or caches (docs/hf-import.md lists the keys of each model type)",
        one_line(.origin),
        one_line(.key),
        one_line(.model_type)
    )]
    UnknownKey {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// The model type.
        model_type: String,
    },
    /// Keys whose values contradict each other (or the architecture).
    #[error(
        "{}: {}",
        one_line(.origin),
        one_line(.message)
    )]
    Contradiction {
        /// The file.
        origin: String,
        /// What contradicts what.
        message: String,
    },
    /// Sizes so large that the circuit's byte counts overflow 64 bits or its node count
    /// exceeds circuit-ir's limit.
    #[error(
        "{}: the model is too large to plan: {}",
        one_line(.origin),
        .source
    )]
    TooLarge {
        /// The file.
        origin: String,
        /// circuit-ir's error.
        source: CircuitError,
    },
    /// The importer built a circuit that circuit-ir rejects for another reason: a bug in this
    /// crate.
    #[error(
        "{}: the imported circuit is invalid (a bug in circuit-hf): {}",
        one_line(.origin),
        .source
    )]
    Circuit {
        /// The file.
        origin: String,
        /// circuit-ir's error.
        source: CircuitError,
    },
}
