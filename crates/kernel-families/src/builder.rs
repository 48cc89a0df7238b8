//! Building a registry in code: collects [`FamilyDecl`]s.
//!
//! Invariant: the builder checks nothing itself: `build` validates through
//! [`Families::from_decl`], the path the TOML loader takes too, so both refuse the same things
//! with the same messages.

use crate::decl::{FamiliesDecl, FamilyDecl};
use crate::error::FamiliesError;
use crate::families::Families;

/// Collects families and builds a validated [`Families`].
///
/// ```
/// use kernel_families::{FamiliesBuilder, decl::{FamilyDecl, WorkspaceDecl}};
///
/// let mut b = FamiliesBuilder::new("my registry");
/// b.family(
///     FamilyDecl::new("gemm", ["linear"])
///         .kernels(["gemm_bf16"])
///         .workspace(WorkspaceDecl::new("handle", ["32 * 1024 * 1024"], false, "cuBLAS workspace")),
/// );
/// let families = b.build().unwrap();
/// assert_eq!(families.len(), 1);
/// assert!(families.of_kernel("gemm_bf16").is_some());
/// ```
#[derive(Debug, Clone)]
pub struct FamiliesBuilder {
    origin: String,
    decl: FamiliesDecl,
}

impl FamiliesBuilder {
    /// An empty registry; errors name `origin`.
    pub fn new(origin: impl Into<String>) -> FamiliesBuilder {
        FamiliesBuilder {
            origin: origin.into(),
            decl: FamiliesDecl {
                schema: 1,
                families: Vec::new(),
            },
        }
    }

    /// Appends a family (later families lose `of_group` ties to earlier ones).
    pub fn family(&mut self, family: FamilyDecl) -> &mut FamiliesBuilder {
        self.decl.families.push(family);
        self
    }

    /// The declarations collected so far.
    pub fn decl(&self) -> &FamiliesDecl {
        &self.decl
    }

    /// Validates and builds the registry.
    pub fn build(&self) -> Result<Families, FamiliesError> {
        Families::from_decl(self.decl.clone(), &self.origin)
    }
}
