//! Declarations: a families registry and a device table as written (docs/families.md), before
//! validation.
//!
//! These types are the TOML schema and what code builds a registry from
//! ([`Families::from_decl`](crate::Families::from_decl)). Expressions and ops stay text here;
//! validation parses them where an error can name the family and workspace they belong to.
//!
//! Invariants: nothing here is checked: `Families::from_decl` and `Devices::from_decl` are the
//! one path from a declaration to a registry or a device table, so a file and a program go
//! through one validation; unknown keys are refused when read.

use circuit_ir::ExprText;
use serde::{Deserialize, Serialize};

/// A whole families file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamiliesDecl {
    /// Format version; 1.
    pub schema: u32,
    /// Families in file order (the order `of_group` prefers).
    #[serde(default, rename = "family", skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<FamilyDecl>,
}

/// A kernel family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyDecl {
    /// Unique id.
    pub id: String,
    /// What the family models (free text).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Kernels of the family; a kernel is in one family only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// Emitters whose kernel-less groups the family covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emitters: Vec<String>,
    /// Node ops the family implements (names from circuit-ir's op list).
    pub ops: Vec<String>,
    /// Workspaces.
    #[serde(default, rename = "workspace", skip_serializing_if = "Vec::is_empty")]
    pub workspaces: Vec<WorkspaceDecl>,
}

/// A workspace of a family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceDecl {
    /// Name, unique within the family.
    pub name: String,
    /// Size expressions in bytes; the workspace is the largest of them.
    pub bytes: Vec<ExprText>,
    /// `true`: transient scratch placed inside the activation arena; `false`: held all step.
    pub arena: bool,
    /// The fact the size rests on.
    pub why: String,
}

impl FamilyDecl {
    /// A family `id` implementing `ops`, with no kernels, emitters or workspaces yet.
    pub fn new<S: Into<String>>(
        id: impl Into<String>,
        ops: impl IntoIterator<Item = S>,
    ) -> FamilyDecl {
        FamilyDecl {
            id: id.into(),
            ops: ops.into_iter().map(Into::into).collect(),
            ..FamilyDecl::default()
        }
    }

    /// Describes the family.
    pub fn description(mut self, text: impl Into<String>) -> FamilyDecl {
        self.description = text.into();
        self
    }

    /// Appends kernels.
    pub fn kernels<S: Into<String>>(mut self, kernels: impl IntoIterator<Item = S>) -> FamilyDecl {
        self.kernels.extend(kernels.into_iter().map(Into::into));
        self
    }

    /// Appends emitters (for kernel-less groups).
    pub fn emitters<S: Into<String>>(
        mut self,
        emitters: impl IntoIterator<Item = S>,
    ) -> FamilyDecl {
        self.emitters.extend(emitters.into_iter().map(Into::into));
        self
    }

    /// Appends a workspace.
    pub fn workspace(mut self, workspace: WorkspaceDecl) -> FamilyDecl {
        self.workspaces.push(workspace);
        self
    }
}

impl WorkspaceDecl {
    /// A workspace `name` of the largest of `bytes`, in the arena or not, resting on `why`.
    pub fn new<E: Into<ExprText>>(
        name: impl Into<String>,
        bytes: impl IntoIterator<Item = E>,
        arena: bool,
        why: impl Into<String>,
    ) -> WorkspaceDecl {
        WorkspaceDecl {
            name: name.into(),
            bytes: bytes.into_iter().map(Into::into).collect(),
            arena,
            why: why.into(),
        }
    }
}

/// A whole device table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicesDecl {
    /// Format version; 1.
    pub schema: u32,
    /// Devices in file order.
    #[serde(default, rename = "device", skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceDecl>,
}

/// A device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDecl {
    /// Unique name, e.g. `h100-sxm`.
    pub name: String,
    /// Streaming multiprocessors, when known (a device without it is named only, and
    /// refused when asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u64>,
    /// Device memory in bytes (a plain plan's budget), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Where the figures come from.
    pub source: String,
    /// Other names it is known by (`h100` for `h100-sxm`); look-up ignores case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The product string CUDA reports (`torch.cuda.get_device_name()`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Total memory as CUDA reports it (`torch.cuda.mem_get_info()[1]`), bytes, when known:
    /// what an engine's memory budget is a fraction of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_total_bytes: Option<u64>,
    /// How exact `cuda_total_bytes` is: `exact`, `mib_floor` or `printed_gib` (required with
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_total_precision: Option<String>,
    /// The L2 cache as CUDA reports it (`L2_cache_size`), bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_cache_bytes: Option<u64>,
    /// How exact `l2_cache_bytes` is (required with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_cache_precision: Option<String>,
    /// The compute capability, `major.minor` (`9.0`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// The vendor (`nvidia`, `amd`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
}
