//! The errors of this crate: [`FamiliesError`] for a registry or device table that cannot be
//! loaded or bound, [`WorkspaceError`] for a workspace that cannot be valued at some `(n, k)`,
//! and [`Finding`] for a name a registry reads that a circuit does not define.
//!
//! Invariant: every message names the file (its origin) and the place in it, outermost first
//! (`family `x`, workspace `y`:`), then the item (`bytes[0]`, `ops[2]`) and the value at fault.

use std::fmt;

use circuit_ir::load::TomlError;
use circuit_ir::{ExprError, Place, UnknownOp, one_line};

/// A families registry or a device table that cannot be loaded, bound or looked up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FamiliesError {
    /// The file name the text was loaded under.
    pub origin: String,
    /// Where in the file: the family and workspace, or the device.
    pub place: Place,
    /// What is wrong (boxed: keeps `Result`s small).
    pub kind: Box<FamiliesErrorKind>,
}

impl fmt::Display for FamiliesError {
    /// `origin: place: what`, on one line whatever the file holds (ids may hold newlines).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = format!("{}: {}{}", self.origin, self.place, self.kind);
        f.write_str(&one_line(&message))
    }
}

impl FamiliesError {
    pub(crate) fn new(origin: &str, place: Place, kind: FamiliesErrorKind) -> FamiliesError {
        FamiliesError {
            origin: origin.to_owned(),
            place,
            kind: Box::new(kind),
        }
    }
}

/// What is wrong with a families registry or a device table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FamiliesErrorKind {
    /// The text is not TOML, has another schema, or lacks a key, has an unknown key or a
    /// value of the wrong type.
    #[error(transparent)]
    Toml(#[from] TomlError),
    /// A name that is empty (a family id, kernel, emitter, workspace or device name).
    #[error("{what} is empty")]
    EmptyName {
        /// The key or list entry, as the message shows it (a quoted key, or `kernels[1]`).
        what: String,
    },
    /// Two families with one id.
    #[error("duplicate family id `{id}` (families #{first} and #{this} in file order)")]
    DuplicateFamily {
        /// The id.
        id: String,
        /// 1-based position of the first family with the id.
        first: usize,
        /// 1-based position of this one.
        this: usize,
    },
    /// A kernel listed by two families.
    #[error(
        "kernel `{kernel}` is already listed by family `{first}`; a kernel belongs to one family"
    )]
    KernelInTwoFamilies {
        /// The kernel.
        kernel: String,
        /// The family that listed it first.
        first: String,
    },
    /// One name twice in a family's `kernels`, `emitters` or `ops`.
    #[error("`{list}` lists `{name}` twice")]
    DuplicateEntry {
        /// The list: `kernels`, `emitters` or `ops`.
        list: &'static str,
        /// The name.
        name: String,
    },
    /// A family that no group can ever run.
    #[error("lists neither `kernels` nor `emitters`; a family needs one of them")]
    NoKernelsOrEmitters,
    /// A family implementing no op.
    #[error("`ops` is empty; a family implements at least one op")]
    NoOps,
    /// An op the op list of circuit-ir does not have.
    #[error("ops[{index}]: {error}")]
    Op {
        /// Position in `ops`.
        index: usize,
        /// The unknown op.
        error: UnknownOp,
    },
    /// Two workspaces of one name in a family.
    #[error("duplicate workspace name `{name}`")]
    DuplicateWorkspace {
        /// The name.
        name: String,
    },
    /// A workspace with no size expression.
    #[error("`bytes` is empty; give at least one expression (the workspace is the largest)")]
    EmptyBytes,
    /// A workspace that does not say what its size rests on.
    #[error("`why` is empty; say which fact the size rests on")]
    EmptyWhy,
    /// An expression that does not parse, or whose constant part fails when bound.
    #[error("bytes[{index}]: {error}")]
    Expr {
        /// Position in `bytes`.
        index: usize,
        /// The expression's error (it names the expression).
        error: ExprError,
    },
    /// An expression reading a name the circuit does not define.
    #[error(
        "bytes[{index}]: expression `{expr}` reads `{name}`, which is neither a dim of circuit `{circuit}` nor `n`, `k` or `sm_count`"
    )]
    UnknownName {
        /// Position in `bytes`.
        index: usize,
        /// The expression text.
        expr: String,
        /// The name.
        name: String,
        /// The circuit's name.
        circuit: String,
    },
    /// Two devices with one name.
    #[error("duplicate device name `{name}`")]
    DuplicateDevice {
        /// The name.
        name: String,
    },
    /// A device figure that cannot be 0.
    #[error("`{field}` is 0")]
    Zero {
        /// `sm_count` or `memory_bytes`.
        field: &'static str,
    },
    /// A device whose figures have no source.
    #[error("`source` is empty; say where the figures come from")]
    EmptySource,
    /// A device figure's precision that is not one of the known ones, or a precision without
    /// its figure, or a figure without its precision.
    #[error("`{field}` = {value:?}: {why}")]
    BadPrecision {
        /// The precision field.
        field: &'static str,
        /// The value written (empty when missing).
        value: String,
        /// What is accepted.
        why: &'static str,
    },
    /// A device the table names without the figures a plan needs.
    #[error(
        "the table names this device without its {missing} (no attributable print-out gives it: {source_text}); the planner refuses it rather than guess: give the SM count itself (--sm-count N) and a --budget in bytes for a plain plan, or name a device with figures"
    )]
    FiguresUnknown {
        /// The figures missing, in words.
        missing: String,
        /// The device's `source`.
        source_text: String,
    },
    /// A device name the table does not have.
    #[error(
        "unknown device `{name}` (known: {known}); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
    )]
    UnknownDevice {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
}

/// A workspace that cannot be valued at some `(n, k)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct WorkspaceError(Box<WorkspaceErrorKind>);

impl fmt::Display for WorkspaceError {
    /// One line, whatever the family and workspace names hold.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&one_line(&self.0.to_string()))
    }
}

impl WorkspaceError {
    pub(crate) fn new(kind: WorkspaceErrorKind) -> WorkspaceError {
        WorkspaceError(Box::new(kind))
    }

    /// What went wrong.
    pub fn kind(&self) -> &WorkspaceErrorKind {
        &self.0
    }
}

/// What went wrong valuing a workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceErrorKind {
    /// An expression failed (overflow, negative result, division by zero).
    #[error(
        "{origin}: family `{family}`, workspace `{workspace}` at n = {n}, k = {k}: bytes[{index}]: {error}"
    )]
    Eval {
        /// The registry's origin (file name).
        origin: String,
        /// The family id.
        family: String,
        /// The workspace name.
        workspace: String,
        /// Position in `bytes`.
        index: usize,
        /// The rows it was valued at.
        n: u64,
        /// The node input width it was valued at.
        k: u64,
        /// The fault; it names the expression and the step.
        error: ExprError,
    },
    /// A family index or workspace index these bound families do not have.
    #[error("no workspace {workspace} in family index {family} (the family has {count})")]
    NoSuchWorkspace {
        /// The family index.
        family: usize,
        /// The workspace index asked for.
        workspace: usize,
        /// Workspaces the family has (0 when the family index is unknown).
        count: usize,
    },
}

/// A name an expression reads that a circuit does not define ([`Families::check`]).
///
/// [`Families::check`]: crate::Families::check
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The registry's origin (file name).
    pub origin: String,
    /// The family id.
    pub family: String,
    /// The workspace name.
    pub workspace: String,
    /// Position of the expression in `bytes`.
    pub index: usize,
    /// The expression text.
    pub expr: String,
    /// The name not defined.
    pub name: String,
    /// The circuit's name.
    pub circuit: String,
}

impl Finding {
    /// The same fault as the error [`Families::bind`](crate::Families::bind) reports.
    pub fn to_error(&self) -> FamiliesError {
        FamiliesError::new(
            &self.origin,
            family_place(&self.family).with(format!("workspace `{}`", self.workspace)),
            FamiliesErrorKind::UnknownName {
                index: self.index,
                expr: self.expr.clone(),
                name: self.name.clone(),
                circuit: self.circuit.clone(),
            },
        )
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_error().fmt(f)
    }
}

/// The place of a family: `family `id``.
pub(crate) fn family_place(id: &str) -> Place {
    Place::root().with(format!("family `{id}`"))
}
