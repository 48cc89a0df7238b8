//! Circuit errors: every one names where it comes from (the file or builder), the place in the
//! circuit (block instance, item, field) and the value at fault.
//!
//! Invariants: a [`CircuitError`] prints as `origin: place: what`, outermost place first, on one
//! line of at most about [`MAX_LINE`] characters whatever the input holds ([`one_line`] escapes
//! line breaks and control characters); an input quoted in a message ([`quoted`]) keeps its
//! start and end within about [`MAX_QUOTE`] characters.

use std::borrow::Cow;
use std::fmt;

use crate::expr::ExprError;
use crate::format::FormatError;
use crate::load::TomlError;
use crate::op::UnknownOp;

/// Where in a circuit an error was found: outermost first, e.g.
/// `block `layer` instance 3, node `attn_norm`, output `xn``.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place(Vec<String>);

impl Place {
    /// The top of the circuit.
    pub fn root() -> Place {
        Place(Vec::new())
    }

    /// This place, one level deeper.
    pub fn with(&self, part: impl Into<String>) -> Place {
        let mut parts = self.0.clone();
        parts.push(part.into());
        Place(parts)
    }

    /// The levels, outermost first.
    pub fn parts(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(p)?;
        }
        if !self.0.is_empty() {
            f.write_str(": ")?;
        }
        Ok(())
    }
}

/// The longest message [`one_line`] returns whole, in characters; longer ones keep their start
/// and end around a note of how much was cut.
pub const MAX_LINE: usize = 2_000;

/// The longest quoted input [`quoted`] returns whole, in characters.
pub const MAX_QUOTE: usize = 160;

/// `text` fit for a one-line message: line breaks and other control characters (but tab) are
/// escaped as in a Rust string literal (`\n`, `\r`, `\u{7f}`); other text is unchanged, up to
/// [`MAX_LINE`] characters (a longer text keeps its start and end, see [`quoted`]).
///
/// Error messages quote what the user wrote (ids, op names, expressions, file names), and a
/// TOML or JSON string may hold a newline: every error type of the planner's crates passes its
/// message through this, so a message is always one line, and a bounded one.
pub fn one_line(text: &str) -> Cow<'_, str> {
    elide(escaped(text), MAX_LINE)
}

/// `text` with line breaks and control characters (but tab) escaped.
fn escaped(text: &str) -> Cow<'_, str> {
    fn breaks(c: char) -> bool {
        (c.is_control() && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
    }
    if text.chars().any(breaks) {
        let mut out = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if breaks(c) {
                out.extend(c.escape_debug());
            } else {
                out.push(c);
            }
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Input quoted in a message (an expression, an id): [`one_line`], and at most [`MAX_QUOTE`]
/// characters. A longer text keeps its first and last characters around
/// `[... N characters ...]`, so a 400 KB expression makes a readable line that still shows
/// where it starts and ends. Every error type quotes expressions through this.
pub fn quoted(text: &str) -> Cow<'_, str> {
    elide(escaped(text), MAX_QUOTE)
}

/// `text` cut to its start and end when longer than `max` characters (a few more, for the note).
fn elide(text: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let head = max * 2 / 3;
    let tail = max / 4;
    let cut = count - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(count - tail)
        .map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!(
        "{}[... {cut} characters ...]{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

fn output_twice(edge: &str, first: &str, second: &str) -> String {
    if first == second {
        format!("`out` lists edge `{first}` twice; list each output once")
    } else {
        format!(
            "`out` lists `{first}` and `{second}`, which both name edge `{edge}`; list each output once"
        )
    }
}

/// A circuit that cannot be loaded or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CircuitError {
    /// The file name, or what the builder was told to call its circuit.
    pub origin: String,
    /// Where in the circuit.
    pub place: Place,
    /// What is wrong (boxed: errors travel through every `Result` of the builder).
    pub kind: Box<CircuitErrorKind>,
}

impl fmt::Display for CircuitError {
    /// `origin: place: what`, on one line whatever the input holds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = format!("{}: {}{}", self.origin, self.place, self.kind);
        f.write_str(&one_line(&message))
    }
}

/// What is wrong with a circuit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CircuitErrorKind {
    /// The text is not TOML, has another schema, or lacks the circuit's keys and types.
    #[error(transparent)]
    Toml(#[from] TomlError),
    /// An expression that does not parse or evaluate.
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// An expression reading a name that is not a dim.
    #[error(
        "unknown dim `{}` in `{}` (readable here: {readable})",
        quoted(.name),
        quoted(.expr)
    )]
    UnknownDim {
        /// The name.
        name: String,
        /// The expression.
        expr: String,
        /// The names readable at that place.
        readable: String,
    },
    /// A dim whose expression reads a dim declared after it.
    #[error(
        "`{0}` uses dim `{1}`, which is declared later; declare `{1}` first",
        quoted(.expr),
        quoted(.name)
    )]
    DimUsesLaterDim {
        /// The later dim.
        name: String,
        /// The expression.
        expr: String,
    },
    /// A name that may not be declared.
    #[error("`{}` cannot be {what}: {why}", quoted(.name))]
    BadName {
        /// The name.
        name: String,
        /// What it was meant to be.
        what: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// An op not in the op list.
    #[error(transparent)]
    Op(#[from] UnknownOp),
    /// A bad format, or a tensor its format cannot hold.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Two items with one id.
    #[error("duplicate {what} id `{}`", quoted(.id))]
    DuplicateId {
        /// Node, edge, state, block, weight.
        what: &'static str,
        /// The id.
        id: String,
    },
    /// An edge produced twice.
    #[error("edge `{}` is already {first}", quoted(.edge))]
    TwoProducers {
        /// The edge.
        edge: String,
        /// Who produced it first.
        first: String,
    },
    /// A node listing one output edge twice (`y` twice, or `y{i}` and `y0` in instance 0).
    #[error("{}", output_twice(.edge, .first, .second))]
    OutputTwice {
        /// The edge's instance id.
        edge: String,
        /// The first entry naming it, as written.
        first: String,
        /// The second entry naming it, as written.
        second: String,
    },
    /// A node reading an edge it produces itself.
    #[error(
        "edge `{}` is an output of this node; a node cannot read its own output",
        quoted(.edge)
    )]
    ReadsOwnOutput {
        /// The edge.
        edge: String,
    },
    /// A state whose writer is listed among its readers.
    #[error(
        "node `{}` writes this state; its readers must be later nodes of the block instance",
        quoted(.node)
    )]
    ReaderIsWriter {
        /// The node.
        node: String,
    },
    /// A sliding window of no token.
    #[error(
        "`{}` is 0 tokens: a sliding window holds at least 1 token per sequence (omit `window` to hold every cached token)",
        quoted(.expr)
    )]
    ZeroWindow {
        /// The window's expression.
        expr: String,
    },
    /// A read of an edge that nothing produces.
    #[error(
        "edge `{}` is neither produced by a node nor a circuit input (edges of other block instances are read by their full id, e.g. `layer.0.x`)",
        quoted(.edge)
    )]
    UnknownEdge {
        /// The name read.
        edge: String,
    },
    /// A read of an edge produced later.
    #[error(
        "edge `{}` is read before node `{}` produces it; list nodes in execution order",
        quoted(.edge),
        quoted(.producer)
    )]
    ReadBeforeProduced {
        /// The edge.
        edge: String,
        /// Its producer.
        producer: String,
    },
    /// An edge nobody reads that is not an output.
    #[error(
        "edge `{}` ({origin}) is never read; read it or declare it an [[output]]",
        quoted(.edge)
    )]
    Unread {
        /// The edge.
        edge: String,
        /// Where it comes from: `produced by node `x`` or `a circuit input`.
        origin: String,
    },
    /// A `stream_in` with no edge to bind to.
    #[error("stream_in `{}` has nothing to bind to: {why}", quoted(.name))]
    StreamUnbound {
        /// The stream name.
        name: String,
        /// Why.
        why: String,
    },
    /// A `stream_out` naming no edge of the block.
    #[error("stream_out `{}` is not an edge of this block instance", quoted(.name))]
    StreamOutMissing {
        /// The name.
        name: String,
    },
    /// One tensor declared twice with different shapes, formats or counts.
    #[error(
        "tensor `{}` was declared as {first} by node `{}`, here as {this}",
        quoted(.tensor),
        quoted(.first_node)
    )]
    TensorConflict {
        /// The tensor name.
        tensor: String,
        /// The first declaration, rendered.
        first: String,
        /// The node of the first declaration.
        first_node: String,
        /// This declaration, rendered.
        this: String,
    },
    /// A node with no output edge that writes no state.
    #[error("node has no output edge and writes no state")]
    NoOutput,
    /// A state's writer or reader that is not a node of the block instance.
    #[error("{role} `{}` is not a node of this block instance", quoted(.name))]
    UnknownNode {
        /// The name.
        name: String,
        /// `writer` or `reader`.
        role: &'static str,
    },
    /// A state reader listed before the state's writer.
    #[error(
        "reader `{}` runs before writer `{}`; readers must come after the writer",
        quoted(.reader),
        quoted(.writer)
    )]
    ReaderBeforeWriter {
        /// The reader.
        reader: String,
        /// The writer.
        writer: String,
    },
    /// An `[[output]]` naming no edge.
    #[error(
        "output edge `{}` does not exist (outputs use full ids, e.g. `head.logits`)",
        quoted(.edge)
    )]
    UnknownOutput {
        /// The name.
        edge: String,
    },
    /// A sum of sizes above `u64::MAX`.
    #[error("{what} overflows 64-bit bytes")]
    Overflow {
        /// What was being summed.
        what: String,
    },
    /// A circuit too large to build.
    #[error("{what} exceeds the limit of {limit} {unit}")]
    TooLarge {
        /// What was counted.
        what: String,
        /// The limit.
        limit: u64,
        /// Of what.
        unit: &'static str,
    },
    /// A state with neither size.
    #[error("state declares neither per_token nor per_sequence")]
    EmptyState,
    /// A window on a per-sequence state, which holds no tokens.
    #[error(
        "state holds a fixed {per_sequence} elements per sequence and no tokens, so a window means nothing; remove `window`"
    )]
    WindowWithoutTokens {
        /// Elements per sequence.
        per_sequence: u64,
    },
    /// A `weights_only` node that reads or writes edges or states.
    #[error(
        "node is `weights_only` (weights held, not run) but {what}; a weights_only node has weights only"
    )]
    WeightsOnlyEdges {
        /// What it has, e.g. `reads 2 edges`.
        what: String,
    },
}
