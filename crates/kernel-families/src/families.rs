//! The family registry: families in file order on a typed table, the indexes `of_group`
//! answers from, and the checks of a registry against a circuit.
//!
//! Invariants (established by [`Families::from_decl`], the only constructor):
//! - Family ids are unique and non-empty; a kernel is listed by one family only; a family has
//!   kernels or emitters, and at least one op, each op in circuit-ir's op list; no list names
//!   one entry twice.
//! - Workspace names are unique within a family; every workspace has at least one expression
//!   and a non-empty `why`; every expression parsed (once, here).
//! - `FamilyIdx` order is file order, so "first in file order" is "smallest index".

use std::collections::HashMap;

use cranelift_entity::{EntityRef, PrimaryMap, entity_impl};

use circuit_ir::{Binding, Circuit, Expr, ExprError, Op, Place};

use crate::bound::BoundFamilies;
use crate::decl::{FamiliesDecl, FamilyDecl, WorkspaceDecl};
use crate::error::{FamiliesError, FamiliesErrorKind as Kind, Finding, family_place};
use crate::load;

/// A family of a registry (its position in file order).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FamilyIdx(u32);
entity_impl!(FamilyIdx, "family");

/// A kernel family: the kernels (or emitters) it covers, the ops it implements and the
/// workspaces it declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// Unique id.
    pub id: String,
    /// What the family models.
    pub description: String,
    /// Kernels of the family.
    pub kernels: Vec<String>,
    /// Emitters whose kernel-less groups the family covers.
    pub emitters: Vec<String>,
    /// Ops it implements.
    pub ops: Vec<Op>,
    /// Workspaces, in file order.
    pub workspaces: Vec<Workspace>,
}

/// A workspace: bytes that the family's kernels need besides their inputs and outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Name, unique within the family.
    pub name: String,
    /// Size expressions; the workspace's value at a node is the largest of them.
    pub bytes: Vec<Expr>,
    /// `true`: transient scratch inside the activation arena; `false`: held for the whole step.
    pub arena: bool,
    /// The fact the size rests on.
    pub why: String,
}

/// A validated registry of kernel families, indexed for [`Families::of_group`].
#[derive(Debug, Clone)]
pub struct Families {
    origin: String,
    families: PrimaryMap<FamilyIdx, Family>,
    by_id: HashMap<String, FamilyIdx>,
    /// Kernel -> the one family listing it.
    by_kernel: HashMap<String, FamilyIdx>,
    /// Emitter -> op -> the first family (in file order) covering both.
    by_emitter: HashMap<String, HashMap<Op, FamilyIdx>>,
    /// The declarations it was built from, for writing it back.
    decl: FamiliesDecl,
}

impl PartialEq for Families {
    /// Equal when they hold equal families in the same order (the indexes follow from them).
    fn eq(&self, other: &Self) -> bool {
        self.families == other.families
    }
}

impl Eq for Families {}

/// The names an expression may read besides the circuit's dims.
pub const READABLE: [&str; 3] = ["n", "k", "sm_count"];

/// How `name` is bound when a registry is bound to `circuit` on a device of `sm_count` SMs:
/// dims and `sm_count` are values (folded into constants), `n` is slot 0 and `k` slot 1.
pub(crate) fn binding(circuit: &Circuit, sm_count: u64, name: &str) -> Option<Binding> {
    match name {
        "n" => Some(Binding::Slot(0)),
        "k" => Some(Binding::Slot(1)),
        "sm_count" => Some(Binding::Value(sm_count)),
        _ => circuit.dim(name).map(Binding::Value),
    }
}

impl Families {
    /// Loads a registry from the TOML `text` of the file named `origin`.
    pub fn from_toml(text: &str, origin: &str) -> Result<Families, FamiliesError> {
        Families::from_decl(load::parse(text, origin)?, origin)
    }

    /// Validates declarations (from a file or from code); `origin` prefixes every error.
    pub fn from_decl(decl: FamiliesDecl, origin: &str) -> Result<Families, FamiliesError> {
        let err = |place: Place, kind: Kind| FamiliesError::new(origin, place, kind);
        if decl.schema != 1 {
            return Err(err(
                Place::root(),
                Kind::Toml(circuit_ir::load::TomlError::Schema { found: decl.schema }),
            ));
        }
        let mut out = Families {
            origin: origin.to_owned(),
            families: PrimaryMap::with_capacity(decl.families.len()),
            by_id: HashMap::new(),
            by_kernel: HashMap::new(),
            by_emitter: HashMap::new(),
            decl: decl.clone(),
        };
        for (position, fd) in decl.families.into_iter().enumerate() {
            let place = if fd.id.is_empty() {
                Place::root().with(format!("family #{}", position + 1))
            } else {
                family_place(&fd.id)
            };
            let family = family(fd, origin, &place)?;
            out.add(family).map_err(|kind| err(place, kind))?;
        }
        Ok(out)
    }

    /// Adds a validated family to the table and the indexes.
    fn add(&mut self, family: Family) -> Result<(), Kind> {
        let idx = self.families.next_key();
        if let Some(&first) = self.by_id.get(&family.id) {
            return Err(Kind::DuplicateFamily {
                id: family.id,
                first: first.index() + 1,
                this: idx.index() + 1,
            });
        }
        for kernel in &family.kernels {
            if let Some(&first) = self.by_kernel.get(kernel) {
                return Err(Kind::KernelInTwoFamilies {
                    kernel: kernel.clone(),
                    first: self.families[first].id.clone(),
                });
            }
        }
        for kernel in &family.kernels {
            self.by_kernel.insert(kernel.clone(), idx);
        }
        for emitter in &family.emitters {
            let ops = self.by_emitter.entry(emitter.clone()).or_default();
            for &op in &family.ops {
                ops.entry(op).or_insert(idx);
            }
        }
        self.by_id.insert(family.id.clone(), idx);
        self.families.push(family);
        Ok(())
    }

    /// The family whose kernels run a node of op `op` in a group of `kernels` emitted by
    /// `emitter` (docs/families.md): the first family in file order such that (when the group
    /// has kernels) one of them is in the family's `kernels`, or (when it has none) the emitter is
    /// in its `emitters`, and `op` is in its `ops`. `None`: the node has no workspace.
    ///
    /// Answered from indexes built at load: one hash look-up per kernel (or one for the
    /// emitter), no scan of the families.
    pub fn of_group<S: AsRef<str>>(
        &self,
        kernels: &[S],
        emitter: &str,
        op: Op,
    ) -> Option<FamilyIdx> {
        if kernels.is_empty() {
            return self.by_emitter.get(emitter)?.get(&op).copied();
        }
        kernels
            .iter()
            .filter_map(|k| self.by_kernel.get(k.as_ref()).copied())
            .filter(|&f| self.families[f].ops.contains(&op))
            .min()
    }

    /// The declarations the registry was built from.
    pub fn decl(&self) -> &FamiliesDecl {
        &self.decl
    }

    /// The TOML text of the declarations; loading it gives an equal registry.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(&self.decl)
    }

    /// The family listing `kernel`, whatever its ops.
    pub fn of_kernel(&self, kernel: &str) -> Option<FamilyIdx> {
        self.by_kernel.get(kernel).copied()
    }

    /// The family with this id.
    pub fn find(&self, id: &str) -> Option<FamilyIdx> {
        self.by_id.get(id).copied()
    }

    /// A family, or `None` for an index of another registry.
    pub fn get(&self, idx: FamilyIdx) -> Option<&Family> {
        self.families.get(idx)
    }

    /// Every family in file order (index it with a [`FamilyIdx`] of this registry).
    pub fn families(&self) -> &PrimaryMap<FamilyIdx, Family> {
        &self.families
    }

    /// The name the registry was loaded under.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The dims the registry's workspace expressions read (every name but [`READABLE`]), in
    /// name order, each with the ids of the families reading it in file order: what a circuit
    /// must define before [`Families::bind`] accepts it.
    pub fn dims_read(&self) -> Vec<(String, Vec<String>)> {
        let mut dims: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for family in self.families.values() {
            let exprs = family.workspaces.iter().flat_map(|ws| &ws.bytes);
            for name in exprs.flat_map(|e| e.free_names()) {
                let readers = dims.entry(name).or_default();
                if !READABLE.contains(&name) && !readers.contains(&family.id) {
                    readers.push(family.id.clone());
                }
            }
        }
        dims.into_iter()
            .filter(|(_, readers)| !readers.is_empty())
            .map(|(dim, readers)| (dim.to_owned(), readers))
            .collect()
    }

    /// Every `(family, workspace, expression, name)` whose name is neither a dim of `circuit`
    /// nor one of [`READABLE`], in file order. Empty: the registry can be bound to the circuit
    /// (evaluation faults such as overflow can still occur at some `n`).
    pub fn check(&self, circuit: &Circuit) -> Vec<Finding> {
        let mut findings = Vec::new();
        for family in self.families.values() {
            for ws in &family.workspaces {
                for (index, expr) in ws.bytes.iter().enumerate() {
                    for name in expr.free_names() {
                        if binding(circuit, 0, name).is_none() {
                            findings.push(Finding {
                                origin: self.origin.clone(),
                                family: family.id.clone(),
                                workspace: ws.name.clone(),
                                index,
                                expr: expr.source().to_owned(),
                                name: name.to_owned(),
                                circuit: circuit.name().to_owned(),
                            });
                        }
                    }
                }
            }
        }
        findings
    }

    /// Compiles every workspace expression against `circuit` on a device of `sm_count` SMs:
    /// dims and `sm_count` are folded into constants, `n` and `k` stay free. The first name the
    /// circuit does not define (see [`Families::check`] for all of them), or a constant part that
    /// fails (e.g. overflows), is an error naming the family, workspace and expression.
    pub fn bind(&self, circuit: &Circuit, sm_count: u64) -> Result<BoundFamilies, FamiliesError> {
        let scope = |name: &str| binding(circuit, sm_count, name);
        BoundFamilies::compile(self, sm_count, |family, ws, index, expr| {
            expr.compile(&scope).map_err(|error| {
                let place = family_place(&family.id).with(format!("workspace `{}`", ws.name));
                let kind = match error {
                    ExprError::UnknownName { expr, name } => Kind::UnknownName {
                        index,
                        expr,
                        name,
                        circuit: circuit.name().to_owned(),
                    },
                    error => Kind::Expr { index, error },
                };
                FamiliesError::new(&self.origin, place, kind)
            })
        })
    }

    /// Number of families.
    pub fn len(&self) -> usize {
        self.families.len()
    }

    /// No families.
    pub fn is_empty(&self) -> bool {
        self.families.is_empty()
    }
}

/// Validates one family on its own (the checks that need no other family); errors carry
/// `place` (the family) and, for a workspace, the workspace below it.
fn family(fd: FamilyDecl, origin: &str, place: &Place) -> Result<Family, FamiliesError> {
    let fail = |kind: Kind| FamiliesError::new(origin, place.clone(), kind);
    if fd.id.is_empty() {
        return Err(fail(Kind::EmptyName {
            what: "`id`".into(),
        }));
    }
    names("kernels", &fd.kernels).map_err(fail)?;
    names("emitters", &fd.emitters).map_err(fail)?;
    if fd.kernels.is_empty() && fd.emitters.is_empty() {
        return Err(fail(Kind::NoKernelsOrEmitters));
    }
    if fd.ops.is_empty() {
        return Err(fail(Kind::NoOps));
    }
    let mut ops = Vec::with_capacity(fd.ops.len());
    for (index, name) in fd.ops.iter().enumerate() {
        let op: Op = name
            .parse()
            .map_err(|error| fail(Kind::Op { index, error }))?;
        if ops.contains(&op) {
            return Err(fail(Kind::DuplicateEntry {
                list: "ops",
                name: name.clone(),
            }));
        }
        ops.push(op);
    }
    let mut workspaces: Vec<Workspace> = Vec::with_capacity(fd.workspaces.len());
    for (position, wd) in fd.workspaces.into_iter().enumerate() {
        let ws_place = place.with(if wd.name.is_empty() {
            format!("workspace #{}", position + 1)
        } else {
            format!("workspace `{}`", wd.name)
        });
        if workspaces.iter().any(|w| w.name == wd.name) {
            return Err(FamiliesError::new(
                origin,
                ws_place,
                Kind::DuplicateWorkspace { name: wd.name },
            ));
        }
        workspaces.push(workspace(wd, origin, ws_place)?);
    }
    Ok(Family {
        id: fd.id,
        description: fd.description,
        kernels: fd.kernels,
        emitters: fd.emitters,
        ops,
        workspaces,
    })
}

/// A list of names: none empty, none twice.
fn names(list: &'static str, names: &[String]) -> Result<(), Kind> {
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Kind::EmptyName {
                what: format!("{list}[{i}]"),
            });
        }
        if names[..i].contains(name) {
            return Err(Kind::DuplicateEntry {
                list,
                name: name.clone(),
            });
        }
    }
    Ok(())
}

/// Validates one workspace, parsing its expressions once.
fn workspace(wd: WorkspaceDecl, origin: &str, place: Place) -> Result<Workspace, FamiliesError> {
    let fail = |kind: Kind| FamiliesError::new(origin, place.clone(), kind);
    if wd.name.is_empty() {
        return Err(fail(Kind::EmptyName {
            what: "`name`".into(),
        }));
    }
    if wd.bytes.is_empty() {
        return Err(fail(Kind::EmptyBytes));
    }
    if wd.why.trim().is_empty() {
        return Err(fail(Kind::EmptyWhy));
    }
    let mut bytes = Vec::with_capacity(wd.bytes.len());
    for (index, text) in wd.bytes.iter().enumerate() {
        bytes.push(
            text.parse()
                .map_err(|error| fail(Kind::Expr { index, error }))?,
        );
    }
    Ok(Workspace {
        name: wd.name,
        bytes,
        arena: wd.arena,
        why: wd.why,
    })
}
