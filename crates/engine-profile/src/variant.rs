//! Variants: facts of the engine file that hold only for some models, devices or layouts
//! (`[[variant]]`, docs/engines.md). A variant names its conditions (`when`) and overlays any of
//! the file's tables, as a release overlays the one it extends; the prediction of a run uses
//! the file with every variant whose conditions hold applied in file order.
//!
//! A release that `extends` another and states its own `[[variant]]`s replaces the other's,
//! except those marked `inherit = true` that it does not restate by name ([`inherit`]): the
//! rules that follow the device rather than the release.
//!
//! A variant may instead `refuse` the runs it holds for, with the reason: what the engine does
//! there (another attention backend, another kernel library, a model class the release lacks)
//! is not modelled, and the prediction is refused rather than guessed; the refusal names the
//! device when a condition reads it ([`Variant::tests_device`]), else the release.
//!
//! The same conditions ([`Conditions`], one home) say which runs an `[[unsettled]]` note
//! concerns (its `when`): a note is printed under the predictions it applies to only.
//!
//! Invariants: a condition on a fact the device table does not give (its compute capability,
//! its vendor, its product, its total) is an error naming the device and the variant (or
//! note), never a guess that it does not hold; every variant, applied alone to the base, must
//! give a file that compiles (checked when the profile loads); an unknown condition is
//! refused, and a capability not written `major.minor` is refused when the file loads; a
//! refusal names the variant.

use circuit_ir::Circuit;
use kernel_families::Device;
use model_facts::ModelFacts;
use serde::Deserialize;

use crate::{EngineError, RunSettings};

/// What a variant's (or an unsettled note's) `when` may test; every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Conditions {
    /// The model's class is one of these (`architectures`).
    #[serde(default)]
    architectures: Option<Vec<String>>,
    /// The language model's type is one of these.
    #[serde(default)]
    model_types: Option<Vec<String>>,
    /// The language model's type is none of these (a path an engine keeps for some model
    /// types only, the others taking one that is not modelled).
    #[serde(default)]
    not_model_types: Option<Vec<String>>,
    /// The weights are held in one of these quantization methods (`ModelFacts::quantization`).
    #[serde(default)]
    quantization: Option<Vec<String>>,
    /// The model has (true) or lacks (false) routed experts.
    #[serde(default)]
    moe: Option<bool>,
    /// The model has (true) or lacks (false) multi-head latent attention.
    #[serde(default)]
    mla: Option<bool>,
    /// The model has (true) or lacks (false) per-sequence recurrent state.
    #[serde(default)]
    recurrent: Option<bool>,
    /// The model's MLA `qk_nope_head_dim` (the circuit's dim) is one of these (false for a
    /// model without the dim): a kernel constraint that picks an MLA backend.
    #[serde(default)]
    qk_nope_head_dim: Option<Vec<u64>>,
    /// The model as loaded holds (true) or lacks (false) a vision tower
    /// ([`ModelFacts::vision_encoder`]: a tower left out by `--language-model-only` is not).
    #[serde(default)]
    vision_encoder: Option<bool>,
    /// The checkpoint itself is (true) or is not (false) quantized
    /// ([`ModelFacts::checkpoint_quantized`]: quantizing while loading does not count).
    #[serde(default)]
    checkpoint_quantized: Option<bool>,
    /// The device's compute capability is at least this (`"9.0"`).
    #[serde(default)]
    min_compute_capability: Option<String>,
    /// The device's compute capability is at most this (`"9.9"`).
    #[serde(default)]
    max_compute_capability: Option<String>,
    /// The device's vendor (`nvidia`, `amd`).
    #[serde(default)]
    vendor: Option<String>,
    /// The device's CUDA total is at least this many bytes.
    #[serde(default)]
    min_total_bytes: Option<u64>,
    /// The device's product string, lowercased, contains this.
    #[serde(default)]
    product_contains: Option<String>,
    /// The device's product string, lowercased, lacks this text (or each of these texts:
    /// a rule for NVSwitch boards lacks both `pcie` and ` nvl`).
    #[serde(default)]
    product_lacks: Option<Texts>,
    /// The tensor-parallel size is at least this.
    #[serde(default)]
    min_tensor_parallel_size: Option<u64>,
    /// The workers (tensor- x pipeline-parallel size) are at least this many.
    #[serde(default)]
    min_world_size: Option<u64>,
    /// The run is (true) or is not (false) eager (`--enforce-eager`: no compiled forward, no
    /// CUDA graph).
    #[serde(default)]
    enforce_eager: Option<bool>,
    /// The run leaves (true) or keeps (false) the multimodal encoder out of its profile
    /// (`--skip-mm-profiling`).
    #[serde(default)]
    skip_mm_profiling: Option<bool>,
    /// Prefix caching is (true) or is not (false) on for the run: asked for
    /// (`RunSettings::enable_prefix_caching`), else the release's default for a model with
    /// recurrent state (`kv_cache.recurrent.prefix_caching_by_default`; the only models whose
    /// bytes it changes).
    #[serde(default)]
    prefix_caching: Option<bool>,
}

/// One text or a list of texts (`"a100"` or `["pcie", " nvl"]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Texts {
    One(String),
    Many(Vec<String>),
}

impl Texts {
    fn as_slice(&self) -> &[String] {
        match self {
            Texts::One(t) => std::slice::from_ref(t),
            Texts::Many(ts) => ts,
        }
    }
}

/// One variant of an engine file.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub(crate) name: String,
    when: Conditions,
    /// Why the runs it holds for are refused, when it refuses them.
    pub(crate) refuse: Option<String>,
    pub(crate) overlay: toml::Table,
}

/// What a run gives the conditions to test.
pub(crate) struct Subject<'a> {
    pub(crate) model: &'a ModelFacts,
    /// One circuit per pipeline stage.
    pub(crate) circuits: &'a [&'a Circuit],
    pub(crate) device: &'a Device,
    pub(crate) tensor_parallel_size: u64,
    pub(crate) pipeline_parallel_size: u64,
    pub(crate) enforce_eager: bool,
    pub(crate) skip_mm_profiling: bool,
    /// Whether prefix caching is on: asked for, or the release's default.
    pub(crate) prefix_caching: bool,
}

impl<'a> Subject<'a> {
    /// The subject of `run` over `circuits` (one per pipeline stage); prefix caching is
    /// `prefix_caching_by_default` unless the run asks.
    pub(crate) fn of(
        run: &'a RunSettings,
        circuits: &'a [&'a Circuit],
        prefix_caching_by_default: bool,
    ) -> Subject<'a> {
        Subject {
            model: &run.model,
            circuits,
            device: &run.device,
            tensor_parallel_size: run.tensor_parallel_size,
            pipeline_parallel_size: run.pipeline_parallel_size,
            enforce_eager: run.enforce_eager,
            skip_mm_profiling: run.skip_mm_profiling,
            prefix_caching: run
                .enable_prefix_caching
                .unwrap_or(prefix_caching_by_default),
        }
    }
}

/// The `[[variant]]` array of a release that states `own` over the variants it extends
/// (`base`): the base's variants marked `inherit = true` that `own` does not name, in the
/// base's order, then `own`'s. Anything that is not an array of tables is left for
/// [`Variant::take_all`] to refuse.
pub(crate) fn inherit(base: Option<toml::Value>, own: toml::Value) -> toml::Value {
    let (Some(toml::Value::Array(base)), toml::Value::Array(own_items)) = (base, &own) else {
        return own;
    };
    let name = |v: &toml::Value| {
        v.get("name")
            .and_then(toml::Value::as_str)
            .map(str::to_owned)
    };
    let named: Vec<String> = own_items.iter().filter_map(name).collect();
    let mut out: Vec<toml::Value> = base
        .into_iter()
        .filter(|v| v.get("inherit").and_then(toml::Value::as_bool) == Some(true))
        .filter(|v| name(v).is_none_or(|n| !named.contains(&n)))
        .collect();
    out.extend(own_items.iter().cloned());
    toml::Value::Array(out)
}

/// A compute capability written `major.minor`, as `(major, minor)`.
fn capability(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl Variant {
    /// Takes the `[[variant]]` array out of `table` (the merged engine file), `origin` naming
    /// it in messages.
    pub(crate) fn take_all(
        table: &mut toml::Table,
        origin: &str,
    ) -> Result<Vec<Variant>, EngineError> {
        let bad = |message: String| EngineError::Toml {
            origin: origin.to_owned(),
            message,
        };
        let Some(value) = table.remove("variant") else {
            return Ok(Vec::new());
        };
        let toml::Value::Array(items) = value else {
            return Err(bad("variant: write [[variant]] tables".to_owned()));
        };
        let mut variants = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let toml::Value::Table(mut overlay) = item else {
                return Err(bad(format!("variant #{}: not a table", i + 1)));
            };
            let name = match overlay.remove("name") {
                Some(toml::Value::String(s)) => s,
                _ => return Err(bad(format!("variant #{}: give it a `name`", i + 1))),
            };
            match overlay.remove("inherit") {
                None | Some(toml::Value::Boolean(_)) => {}
                Some(_) => {
                    return Err(bad(format!(
                        "variant `{name}`: inherit: write true (releases that extend this one keep the variant) or false"
                    )));
                }
            }
            let refuse = match overlay.remove("refuse") {
                None => None,
                Some(toml::Value::String(why)) if !why.trim().is_empty() => Some(why),
                Some(_) => {
                    return Err(bad(format!(
                        "variant `{name}`: refuse: write the reason the runs it holds for are refused, as a string"
                    )));
                }
            };
            let when: Conditions = match overlay.remove("when") {
                None => Conditions::default(),
                Some(v) => v
                    .try_into()
                    .map_err(|e: toml::de::Error| bad(format!("variant `{name}`: when: {e}")))?,
            };
            when.check()
                .map_err(|e| bad(format!("variant `{name}`: {e}")))?;
            if refuse.is_some() && !overlay.is_empty() {
                return Err(bad(format!(
                    "variant `{name}`: a variant that refuses overlays nothing (found {})",
                    overlay.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
            variants.push(Variant {
                name,
                when,
                refuse,
                overlay,
            });
        }
        Ok(variants)
    }

    /// Whether any of the variant's conditions reads the device (its refusal is then the
    /// device's, [`EngineError::DeviceNotModelled`]; else the release's, for the model).
    pub(crate) fn tests_device(&self) -> bool {
        self.when.tests_device()
    }

    /// Whether the variant holds for `subject`.
    pub(crate) fn holds(&self, subject: &Subject<'_>) -> Result<bool, EngineError> {
        self.when
            .holds(subject, &format!("variant `{}`", self.name))
    }
}

impl Conditions {
    /// Refuses a capability not written `major.minor` (when the file loads).
    pub(crate) fn check(&self) -> Result<(), String> {
        for (key, text) in [
            ("min_compute_capability", &self.min_compute_capability),
            ("max_compute_capability", &self.max_compute_capability),
        ] {
            if let Some(t) = text
                && capability(t).is_none()
            {
                return Err(format!(
                    "when.{key} = {t:?}: write major.minor, e.g. \"9.0\""
                ));
            }
        }
        Ok(())
    }

    /// Whether any condition reads the device.
    fn tests_device(&self) -> bool {
        let c = self;
        c.min_compute_capability.is_some()
            || c.max_compute_capability.is_some()
            || c.vendor.is_some()
            || c.min_total_bytes.is_some()
            || c.product_contains.is_some()
            || c.product_lacks.is_some()
    }

    /// Whether every condition holds for `subject`; `what` names the variant or note whose
    /// conditions they are, in the error of a device fact the table does not give.
    pub(crate) fn holds(&self, subject: &Subject<'_>, what: &str) -> Result<bool, EngineError> {
        let c = self;
        let model = subject.model;
        let device = subject.device;
        let any_dim = |dim: &str| subject.circuits.iter().any(|c| c.dim(dim).is_some());
        let recurrent = subject
            .circuits
            .iter()
            .any(|c| c.states().values().any(|s| s.per_sequence > 0));
        let holds = c
            .architectures
            .as_ref()
            .is_none_or(|a| a.contains(&model.architecture))
            && c.model_types
                .as_ref()
                .is_none_or(|t| t.contains(&model.model_type))
            && c.not_model_types
                .as_ref()
                .is_none_or(|t| !t.contains(&model.model_type))
            && c.quantization
                .as_ref()
                .is_none_or(|q| model.quantization.as_ref().is_some_and(|m| q.contains(m)))
            && c.moe.is_none_or(|m| m == any_dim("experts_per_tok"))
            && c.mla.is_none_or(|m| m == any_dim("kv_lora_rank"))
            && c.recurrent.is_none_or(|r| r == recurrent)
            && c.qk_nope_head_dim.as_ref().is_none_or(|dims| {
                subject
                    .circuits
                    .iter()
                    .any(|c| c.dim("qk_nope_head_dim").is_some_and(|d| dims.contains(&d)))
            })
            && c.checkpoint_quantized
                .is_none_or(|q| q == model.checkpoint_quantized)
            && c.vision_encoder.is_none_or(|v| v == model.vision_encoder)
            && c.min_tensor_parallel_size
                .is_none_or(|t| subject.tensor_parallel_size >= t)
            && c.min_world_size.is_none_or(|w| {
                subject
                    .tensor_parallel_size
                    .saturating_mul(subject.pipeline_parallel_size)
                    >= w
            })
            && c.enforce_eager.is_none_or(|e| e == subject.enforce_eager)
            && c.skip_mm_profiling
                .is_none_or(|s| s == subject.skip_mm_profiling)
            && c.prefix_caching.is_none_or(|p| p == subject.prefix_caching);
        if !holds {
            return Ok(false);
        }
        self.holds_on_device(device, what)
    }

    /// Whether the conditions read nothing but the device (a load rule's, which is resolved
    /// before the model is imported).
    pub(crate) fn device_only(&self) -> bool {
        let device_part = Conditions {
            min_compute_capability: self.min_compute_capability.clone(),
            max_compute_capability: self.max_compute_capability.clone(),
            vendor: self.vendor.clone(),
            min_total_bytes: self.min_total_bytes,
            product_contains: self.product_contains.clone(),
            product_lacks: self.product_lacks.clone(),
            ..Conditions::default()
        };
        *self == device_part
    }

    /// Whether the device conditions hold on `device` (the others are not read); `what` names
    /// the rule in the error of a device fact the table does not give.
    pub(crate) fn holds_on_device(&self, device: &Device, what: &str) -> Result<bool, EngineError> {
        let c = self;
        let unknown = |fact: &str| EngineError::DeviceNotModelled {
            device: device.name.clone(),
            why: format!(
                "its {fact} is not in the device table, and the engine file's {what} depends on it"
            ),
        };
        let device_cc = || {
            device
                .compute_capability
                .as_deref()
                .and_then(capability)
                .ok_or_else(|| unknown("compute capability"))
        };
        if let Some(min) = c.min_compute_capability.as_deref().and_then(capability)
            && device_cc()? < min
        {
            return Ok(false);
        }
        if let Some(max) = c.max_compute_capability.as_deref().and_then(capability)
            && device_cc()? > max
        {
            return Ok(false);
        }
        if let Some(vendor) = &c.vendor {
            let theirs = device.vendor.as_deref().ok_or_else(|| unknown("vendor"))?;
            if theirs != vendor {
                return Ok(false);
            }
        }
        if let Some(min) = c.min_total_bytes {
            let total = crate::cuda_total(device)?;
            if total < min {
                return Ok(false);
            }
        }
        if c.product_contains.is_none() && c.product_lacks.is_none() {
            return Ok(true);
        }
        let product = device
            .product
            .as_deref()
            .ok_or_else(|| unknown("product string"))?
            .to_lowercase();
        Ok(c.product_contains
            .as_deref()
            .is_none_or(|t| product.contains(t))
            && c.product_lacks.as_ref().is_none_or(|texts| {
                texts
                    .as_slice()
                    .iter()
                    .all(|t| !product.contains(t.as_str()))
            }))
    }
}
