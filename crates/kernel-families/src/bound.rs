//! A registry bound to one circuit and one device: every workspace expression compiled once,
//! with the circuit's dims and `sm_count` folded into constants and `n`, `k` left as the two
//! slots of each program. This is the planner's hot path: valuing a workspace at a new
//! `(n, k)` runs the compiled programs, no parsing, no look-up by name, no allocation.
//!
//! Invariants: a workspace's value is the largest of its expressions' values; expressions that
//! read neither `n` nor `k` are folded into one constant at bind time; every step is checked
//! u64 arithmetic and a fault is an error naming the family, workspace and expression, never a
//! panic and never 0.

use cranelift_entity::{EntityRef, PrimaryMap};

use circuit_ir::{Expr, ExprError, Program};

use crate::error::{FamiliesError, WorkspaceError, WorkspaceErrorKind};
use crate::families::{Families, Family, FamilyIdx, Workspace};

/// A registry bound to a circuit and a device ([`Families::bind`]); indexes are those of the
/// registry it was bound from.
#[derive(Debug, Clone)]
pub struct BoundFamilies {
    /// The registry's origin (file name): valuing errors name it.
    origin: String,
    sm_count: u64,
    families: PrimaryMap<FamilyIdx, BoundFamily>,
}

#[derive(Debug, Clone)]
struct BoundFamily {
    id: String,
    workspaces: Vec<BoundWorkspace>,
}

#[derive(Debug, Clone)]
struct BoundWorkspace {
    name: String,
    /// The largest value of the expressions that read neither `n` nor `k`; 0 when none.
    constant: u64,
    /// The expressions that read `n` or `k`, with their position in `bytes`.
    programs: Box<[(usize, Program)]>,
}

impl BoundFamilies {
    /// Binds every workspace of `families`, compiling each expression with `compile`.
    pub(crate) fn compile(
        families: &Families,
        sm_count: u64,
        mut compile: impl FnMut(&Family, &Workspace, usize, &Expr) -> Result<Program, FamiliesError>,
    ) -> Result<BoundFamilies, FamiliesError> {
        let mut bound = PrimaryMap::with_capacity(families.len());
        for family in families.families().values() {
            let mut workspaces = Vec::with_capacity(family.workspaces.len());
            for ws in &family.workspaces {
                let mut constant = 0;
                let mut programs = Vec::new();
                for (index, expr) in ws.bytes.iter().enumerate() {
                    let program = compile(family, ws, index, expr)?;
                    match program.constant() {
                        Some(value) => constant = constant.max(value),
                        None => programs.push((index, program)),
                    }
                }
                workspaces.push(BoundWorkspace {
                    name: ws.name.clone(),
                    constant,
                    programs: programs.into_boxed_slice(),
                });
            }
            bound.push(BoundFamily {
                id: family.id.clone(),
                workspaces,
            });
        }
        Ok(BoundFamilies {
            origin: families.origin().to_owned(),
            sm_count,
            families: bound,
        })
    }

    /// The value in bytes of workspace `workspace` (its index in the family's `workspaces`) of
    /// `family` for a node at `n` rows whose input width is `k`: the largest of its expressions.
    #[inline]
    pub fn workspace_value(
        &self,
        family: FamilyIdx,
        workspace: usize,
        n: u64,
        k: u64,
    ) -> Result<u64, WorkspaceError> {
        let (f, ws) = self.workspace(family, workspace)?;
        let slots = [n, k];
        let mut value = ws.constant;
        for (index, program) in ws.programs.iter() {
            match program.eval(&slots) {
                Ok(v) => value = value.max(v),
                Err(error) => return Err(self.eval_error(f, ws, *index, (n, k), error)),
            }
        }
        Ok(value)
    }

    /// The value of a workspace that reads neither `n` nor `k` (the same at every node and
    /// row count), or `None` when it depends on them or does not exist.
    pub fn constant_value(&self, family: FamilyIdx, workspace: usize) -> Option<u64> {
        let (_, ws) = self.workspace(family, workspace).ok()?;
        ws.programs.is_empty().then_some(ws.constant)
    }

    /// Workspaces of `family` (0 for an index of another registry).
    pub fn workspace_count(&self, family: FamilyIdx) -> usize {
        self.families.get(family).map_or(0, |f| f.workspaces.len())
    }

    /// The SM count the registry was bound with.
    pub fn sm_count(&self) -> u64 {
        self.sm_count
    }

    fn workspace(
        &self,
        family: FamilyIdx,
        workspace: usize,
    ) -> Result<(&BoundFamily, &BoundWorkspace), WorkspaceError> {
        let f = self.families.get(family);
        f.and_then(|f| Some((f, f.workspaces.get(workspace)?)))
            .ok_or_else(|| {
                WorkspaceError::new(WorkspaceErrorKind::NoSuchWorkspace {
                    family: family.index(),
                    workspace,
                    count: f.map_or(0, |f| f.workspaces.len()),
                })
            })
    }
}

impl BoundFamilies {
    #[cold]
    fn eval_error(
        &self,
        f: &BoundFamily,
        ws: &BoundWorkspace,
        index: usize,
        (n, k): (u64, u64),
        error: ExprError,
    ) -> WorkspaceError {
        WorkspaceError::new(WorkspaceErrorKind::Eval {
            origin: self.origin.clone(),
            family: f.id.clone(),
            workspace: ws.name.clone(),
            index,
            n,
            k,
            error,
        })
    }

    /// The origin (file name) of the registry these were bound from.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}
