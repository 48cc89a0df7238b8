//! What the commands build from the flags, once: the import options (`--dtype`,
//! `--kv-cache-dtype`, `--quantization`, the multimodal limits), the parallel layout, and the
//! device of the one device table.
//!
//! Invariants: every value is parsed from its flag here and nowhere else; a bad value is one
//! line naming the flag.

use circuit_hf::Parallel;
use kernel_families::{Device, Devices};

use crate::CliError;
use crate::inputs::flags::{ParallelArgs, PlanArgs};

/// The import options the flags ask for (`--dtype`, `--kv-cache-dtype`, `--quantization`),
/// one rank.
pub fn import_options(args: &PlanArgs) -> Result<circuit_hf::ImportOptions, CliError> {
    let mut options = circuit_hf::ImportOptions::default();
    options.dtype = args.dtype.parse().map_err(|e| format!("--dtype: {e}"))?;
    options.kv_cache_dtype =
        (args.kv_cache_dtype.parse()).map_err(|e| format!("--kv-cache-dtype: {e}"))?;
    // With SGLang alone --quantization names SGLang's method, checked against the checkpoint
    // by inputs/sglang.rs; nothing is quantized while importing.
    if !crate::inputs::sglang::only_sglang(args) {
        options.online_quantization =
            (args.engine.quantization.parse()).map_err(|e| format!("--quantization: {e}"))?;
    }
    options.language_model_only = args.language_model_only;
    let limits = mm_limits(args)?;
    options.modalities_off = circuit_hf::ModalitiesOff {
        image: limits.image == Some(0),
        video: limits.video == Some(0),
    };
    Ok(options)
}

/// vLLM's `--limit-mm-per-prompt`: items per prompt of each modality a modelled tower takes
/// (None: the flag or the modality's entry is absent, vLLM's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MmLimits {
    /// Images per prompt.
    pub image: Option<u64>,
    /// Videos per prompt (Qwen2.5-VL's and Qwen3-VL's towers take video too).
    pub video: Option<u64>,
}

/// The limits `--limit-mm-per-prompt` gives. A modality limited to 0 leaves the encoder's
/// profile; every modality of a tower at 0 is --language-model-only (vLLM builds no tower).
pub(crate) fn mm_limits(args: &PlanArgs) -> Result<MmLimits, CliError> {
    match &args.limit_mm_per_prompt {
        Some(json) => Ok(per_prompt(json).map_err(|e| format!("--limit-mm-per-prompt: {e}"))?),
        None => Ok(MmLimits::default()),
    }
}

/// The limits for the model of config text `config`: a multimodal model's limits name only the
/// modalities its tower takes (vLLM 0.19 keeps a limit only for the modalities the model's
/// processor supports, multimodal/processing/context.py:408-428 allowed_mm_limits, so another
/// one would change nothing: refused rather than dropped).
pub(crate) fn mm_limits_of(args: &PlanArgs, config: &str) -> Result<MmLimits, CliError> {
    let limits = mm_limits(args)?;
    let takes = circuit_hf::modalities(config);
    if !takes.is_empty() {
        for (modality, limit) in [("image", limits.image), ("video", limits.video)] {
            if limit.is_some() && !takes.contains(&modality) {
                return Err(format!(
                    "--limit-mm-per-prompt: `{modality}`: the model's tower takes {} only, and vLLM ignores a limit for a modality the model does not take",
                    takes.join(" and ")
                )
                .into());
            }
        }
    }
    Ok(limits)
}

/// The limits of vLLM's `--limit-mm-per-prompt` JSON. Each limit is a count or an object with
/// a `count` (vLLM 0.19 `config/multimodal.py`, `limit_per_prompt`); an absent modality keeps
/// vLLM's default.
fn per_prompt(json: &str) -> Result<MmLimits, String> {
    let expected = r#"expected a JSON object of modality -> count, such as {"image": 0}"#;
    let entries: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| format!("{expected} ({e})"))?;
    let mut limits = MmLimits::default();
    for (modality, limit) in &entries {
        let count = limit
            .get("count")
            .unwrap_or(limit)
            .as_u64()
            .ok_or_else(|| format!("`{modality}`: {limit} is not a count; {expected}"))?;
        match modality.as_str() {
            "image" => limits.image = Some(count),
            "video" => limits.video = Some(count),
            // No modelled tower takes another modality, and vLLM ignores a limit for a
            // modality the model does not take (allowed_mm_limits): refused rather than
            // dropped.
            _ => {
                return Err(format!(
                    "`{}`: the modelled multimodal models take images (and Qwen2.5-VL's and Qwen3-VL's towers videos) only, and vLLM ignores a limit for a modality the model does not take; give limits for `image` and `video` only",
                    circuit_ir::one_line(modality)
                ));
            }
        }
    }
    Ok(limits)
}

impl ParallelArgs {
    /// The layout the flags give: the one place a `Parallel` is built from flags.
    pub fn parallel(&self) -> Parallel {
        Parallel {
            tp: self.tensor_parallel_size,
            pp: self.pipeline_parallel_size,
            dp: self.data_parallel_size,
            expert_parallel: self.enable_expert_parallel,
        }
    }

    /// The layout asked for, `None` for a single rank without a layout query.
    pub fn layout(&self) -> Option<Parallel> {
        let p = self.parallel();
        (p != Parallel::SINGLE || self.layouts).then_some(p)
    }
}

/// The device `--device` names (the h100-sxm by default), from the one device table.
pub fn device(args: &PlanArgs) -> Result<Device, CliError> {
    Ok(Devices::builtin()?
        .get(args.device.as_deref().unwrap_or(DEFAULT_DEVICE))?
        .clone())
}

/// The device planned on when `--device` is not given.
pub const DEFAULT_DEVICE: &str = "h100-sxm";
