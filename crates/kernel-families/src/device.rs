//! The device table: GPUs by name as software sees them: their SM count (read by workspace
//! expressions as `sm_count`), the memory a plain plan's budget is a fraction of, and what an
//! engine prediction reads (CUDA's product string, total memory and L2 with how exact each
//! figure is, compute capability, vendor). The shipped table, `devices.toml` beside this
//! crate's manifest, is compiled in ([`Devices::builtin`]); another can be loaded from text
//! ([`Devices::from_toml`]).
//!
//! Invariants: names and aliases are non-empty and unique ignoring case (look-up ignores case:
//! `H100` finds `h100-sxm` through its alias `h100`); every figure given is above 0; a total or
//! an L2 size comes with its precision and a precision with its figure; every device says
//! where its figures come from. A device the table names without an SM count or memory is
//! kept apart ([`Devices::named_only`]): asking for it is an error naming what is missing,
//! never a guess. Devices keep file order.

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
    /// How exact `cuda_total_bytes` is (given with it).
    pub cuda_total_precision: Option<Precision>,
    /// The L2 cache as CUDA reports it, bytes, when known.
    pub l2_cache_bytes: Option<u64>,
    /// How exact `l2_cache_bytes` is (given with it).
    pub l2_cache_precision: Option<Precision>,
    /// The compute capability, `major.minor`, when known.
    pub compute_capability: Option<String>,
    /// The vendor (`nvidia`, `amd`), when known.
    pub vendor: Option<String>,
}

/// How exact a figure of the device table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// The bytes were printed.
    Exact,
    /// Whole MiB were printed by integer division (torch's repr, mixbench): the true value is
    /// the figure or up to 1 MiB more.
    MibFloor,
    /// Read back from a print in GiB to two decimals (vLLM's "79.19 GiB"): the true value is
    /// within 0.005 GiB of the print.
    PrintedGib,
}

impl Precision {
    /// The name the table writes (`exact`, `mib_floor`, `printed_gib`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::Exact => "exact",
            Precision::MibFloor => "mib_floor",
            Precision::PrintedGib => "printed_gib",
        }
    }

    /// What the figure's precision means, in words, for a report (empty for exact).
    pub fn caveat(self) -> &'static str {
        match self {
            Precision::Exact => "",
            Precision::MibFloor => "a MiB floor: the true figure is up to 1 MiB more",
            Precision::PrintedGib => "read back from a print to 0.01 GiB: within 5 MiB",
        }
    }

    fn parse(text: &str) -> Option<Precision> {
        [Precision::Exact, Precision::MibFloor, Precision::PrintedGib]
            .into_iter()
            .find(|p| p.name() == text)
    }
}

/// A device the table names without an SM count or memory: it can be asked for, and is
/// refused naming what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedDevice {
    /// Name.
    pub name: String,
    /// Other names it is known by.
    pub aliases: Vec<String>,
    /// The product string CUDA reports, when known.
    pub product: Option<String>,
    /// The compute capability, when known.
    pub compute_capability: Option<String>,
    /// The vendor, when known.
    pub vendor: Option<String>,
    /// Where the figures it has come from, and why the others are missing.
    pub source: String,
    /// The figures missing, in words (`SM count and memory`).
    pub missing: String,
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
    named_only: Vec<NamedDevice>,
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
        let mut named_only: Vec<NamedDevice> = Vec::new();
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
                let earlier = devices.iter().any(|e| e.is_named(name))
                    || named_only.iter().any(|e| e.is_named(name));
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
            for (field, value) in [
                ("sm_count", d.sm_count),
                ("memory_bytes", d.memory_bytes),
                ("cuda_total_bytes", d.cuda_total_bytes),
                ("l2_cache_bytes", d.l2_cache_bytes),
            ] {
                if value == Some(0) {
                    return fail(Kind::Zero { field });
                }
            }
            if d.source.trim().is_empty() {
                return fail(Kind::EmptySource);
            }
            let cuda_total_precision = match precision(
                "cuda_total_precision",
                d.cuda_total_bytes,
                d.cuda_total_precision.as_deref(),
            ) {
                Ok(p) => p,
                Err(kind) => return fail(kind),
            };
            let l2_cache_precision = match precision(
                "l2_cache_precision",
                d.l2_cache_bytes,
                d.l2_cache_precision.as_deref(),
            ) {
                Ok(p) => p,
                Err(kind) => return fail(kind),
            };
            let (Some(sm_count), Some(memory_bytes)) = (d.sm_count, d.memory_bytes) else {
                let missing = match (d.sm_count, d.memory_bytes) {
                    (None, None) => "SM count and memory",
                    (None, Some(_)) => "SM count",
                    _ => "memory",
                };
                named_only.push(NamedDevice {
                    name: d.name,
                    aliases: d.aliases,
                    product: d.product,
                    compute_capability: d.compute_capability,
                    vendor: d.vendor,
                    source: d.source,
                    missing: missing.to_owned(),
                });
                continue;
            };
            devices.push(Device {
                name: d.name,
                sm_count,
                memory_bytes,
                source: d.source,
                aliases: d.aliases,
                product: d.product,
                cuda_total_bytes: d.cuda_total_bytes,
                cuda_total_precision,
                l2_cache_bytes: d.l2_cache_bytes,
                l2_cache_precision,
                compute_capability: d.compute_capability,
                vendor: d.vendor,
            });
        }
        Ok(Devices {
            origin: origin.to_owned(),
            devices,
            named_only,
        })
    }

    /// The device named `name` or with the alias `name`, ignoring case; an unknown name is an
    /// error listing the known ones.
    pub fn get(&self, name: &str) -> Result<&Device, FamiliesError> {
        if let Some(d) = self.named_only.iter().find(|d| d.is_named(name)) {
            return Err(FamiliesError::new(
                &self.origin,
                Place::root().with(format!("device `{}`", d.name)),
                Kind::FiguresUnknown {
                    missing: d.missing.clone(),
                    source_text: d.source.clone(),
                },
            ));
        }
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

    /// The devices the table names without an SM count or memory, in file order.
    pub fn named_only(&self) -> &[NamedDevice] {
        &self.named_only
    }

    /// Every device with its figures, in file order.
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

impl NamedDevice {
    /// Whether `name` (any case) is this device's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        std::iter::once(&self.name)
            .chain(&self.aliases)
            .any(|n| n.eq_ignore_ascii_case(name.trim()))
    }
}

/// A figure's precision as written, checked: required with the figure, refused without it.
fn precision(
    field: &'static str,
    figure: Option<u64>,
    written: Option<&str>,
) -> Result<Option<Precision>, Kind> {
    let bad = |value: &str, why: &'static str| Kind::BadPrecision {
        field,
        value: value.to_owned(),
        why,
    };
    match (figure, written) {
        (None, None) => Ok(None),
        (None, Some(w)) => Err(bad(w, "a precision without its figure")),
        (Some(_), None) => Err(bad(
            "",
            "missing: say how exact the figure is (`exact`, `mib_floor` or `printed_gib`)",
        )),
        (Some(_), Some(w)) => Precision::parse(w)
            .map(Some)
            .ok_or_else(|| bad(w, "write `exact`, `mib_floor` or `printed_gib`")),
    }
}
