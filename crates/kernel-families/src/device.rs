//! The device table: GPUs by name with their SM count (read by workspace expressions as
//! `sm_count`) and memory in bytes (the budget of fit queries). The shipped table,
//! `devices.toml` beside this crate's manifest, is compiled in ([`Devices::builtin`]); another
//! can be loaded from text ([`Devices::from_toml`]).
//!
//! Invariants: names and aliases are non-empty and unique ignoring case (look-up ignores case:
//! `H100` finds `h100-sxm` through its alias `h100`); `sm_count` and `memory_bytes` are above
//! 0; every device says where its figures come from. Devices keep file order.

use std::sync::LazyLock;

use circuit_ir::Place;

use crate::decl::DevicesDecl;
use crate::error::{FamiliesError, FamiliesErrorKind as Kind};
use crate::load;

/// The shipped device table's text.
pub const BUILTIN_DEVICES: &str = include_str!("../devices.toml");

/// The origin the shipped table's errors would carry.
const BUILTIN_ORIGIN: &str = "kernel-families/devices.toml";

/// A GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Name, e.g. `h100-sxm`.
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u64,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Where the figures come from.
    pub source: String,
    /// Other names it is known by.
    pub aliases: Vec<String>,
    /// The product string CUDA reports, when known.
    pub product: Option<String>,
    /// Total memory as CUDA reports it, bytes, when known (an engine's budget is a fraction
    /// of it; `memory_bytes` is the driver's larger figure).
    pub cuda_total_bytes: Option<u64>,
    /// The L2 cache as CUDA reports it, bytes, when known.
    pub l2_cache_bytes: Option<u64>,
    /// The compute capability, `major.minor`, when known.
    pub compute_capability: Option<String>,
    /// The vendor (`nvidia`, `amd`), when known.
    pub vendor: Option<String>,
}

impl Device {
    /// Whether `name` (any case) is this device's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        std::iter::once(&self.name)
            .chain(&self.aliases)
            .any(|n| n.eq_ignore_ascii_case(name.trim()))
    }
}

/// A validated device table, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devices {
    origin: String,
    devices: Vec<Device>,
}

/// The shipped table, parsed on first use. This crate's tests load it; the `Result` keeps even
/// a broken build of the table from panicking.
static BUILTIN: LazyLock<Result<Devices, FamiliesError>> =
    LazyLock::new(|| Devices::from_toml(BUILTIN_DEVICES, BUILTIN_ORIGIN));

impl Devices {
    /// The shipped table (`devices.toml` of this crate), parsed once.
    pub fn builtin() -> Result<&'static Devices, FamiliesError> {
        BUILTIN.as_ref().map_err(Clone::clone)
    }

    /// Loads a table from the TOML `text` of the file named `origin`.
    pub fn from_toml(text: &str, origin: &str) -> Result<Devices, FamiliesError> {
        Devices::from_decl(load::parse(text, origin)?, origin)
    }

    /// Validates declarations; `origin` prefixes every error.
    pub fn from_decl(decl: DevicesDecl, origin: &str) -> Result<Devices, FamiliesError> {
        if decl.schema != 1 {
            return Err(FamiliesError::new(
                origin,
                Place::root(),
                Kind::Toml(circuit_ir::load::TomlError::Schema { found: decl.schema }),
            ));
        }
        let mut devices: Vec<Device> = Vec::with_capacity(decl.devices.len());
        for (i, d) in decl.devices.into_iter().enumerate() {
            let place = if d.name.is_empty() {
                Place::root().with(format!("device #{}", i + 1))
            } else {
                Place::root().with(format!("device `{}`", d.name))
            };
            let fail = |kind: Kind| Err(FamiliesError::new(origin, place.clone(), kind));
            if d.name.is_empty() {
                return fail(Kind::EmptyName {
                    what: "`name`".into(),
                });
            }
            for name in std::iter::once(&d.name).chain(&d.aliases) {
                if name.trim().is_empty() {
                    return fail(Kind::EmptyName {
                        what: "an alias".into(),
                    });
                }
                let earlier = devices.iter().any(|e| e.is_named(name));
                let twice = d
                    .aliases
                    .iter()
                    .filter(|a| a.eq_ignore_ascii_case(name))
                    .count()
                    + usize::from(d.name.eq_ignore_ascii_case(name))
                    > 1;
                if earlier || twice {
                    return fail(Kind::DuplicateDevice { name: name.clone() });
                }
            }
            if d.sm_count == 0 {
                return fail(Kind::Zero { field: "sm_count" });
            }
            if d.memory_bytes == 0 {
                return fail(Kind::Zero {
                    field: "memory_bytes",
                });
            }
            if d.cuda_total_bytes == Some(0) {
                return fail(Kind::Zero {
                    field: "cuda_total_bytes",
                });
            }
            if d.l2_cache_bytes == Some(0) {
                return fail(Kind::Zero {
                    field: "l2_cache_bytes",
                });
            }
            if d.source.trim().is_empty() {
                return fail(Kind::EmptySource);
            }
            devices.push(Device {
                name: d.name,
                sm_count: d.sm_count,
                memory_bytes: d.memory_bytes,
                source: d.source,
                aliases: d.aliases,
                product: d.product,
                cuda_total_bytes: d.cuda_total_bytes,
                l2_cache_bytes: d.l2_cache_bytes,
                compute_capability: d.compute_capability,
                vendor: d.vendor,
            });
        }
        Ok(Devices {
            origin: origin.to_owned(),
            devices,
        })
    }

    /// The device named `name` or with the alias `name`, ignoring case; an unknown name is an
    /// error listing the known ones.
    pub fn get(&self, name: &str) -> Result<&Device, FamiliesError> {
        self.devices
            .iter()
            .find(|d| d.is_named(name))
            .ok_or_else(|| {
                FamiliesError::new(
                    &self.origin,
                    Place::root(),
                    Kind::UnknownDevice {
                        name: name.to_owned(),
                        known: self.names().join(", "),
                    },
                )
            })
    }

    /// Every device, in file order.
    pub fn all(&self) -> &[Device] {
        &self.devices
    }

    /// The names, in file order.
    pub fn names(&self) -> Vec<&str> {
        self.devices.iter().map(|d| d.name.as_str()).collect()
    }

    /// The name the table was loaded under.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}
