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
    options.online_quantization =
        (args.engine.quantization.parse()).map_err(|e| format!("--quantization: {e}"))?;
    options.language_model_only = args.language_model_only || image_limit(args)? == Some(0);
    Ok(options)
}

/// The images per prompt `--limit-mm-per-prompt` gives (None: the flag or its image entry is
/// absent, vLLM's default). The modelled multimodal wrappers (llama4, gemma3, mistral3, llava)
/// take images only, so a limit of 0 leaves them text-only.
pub(crate) fn image_limit(args: &PlanArgs) -> Result<Option<u64>, CliError> {
    match &args.limit_mm_per_prompt {
        Some(json) => {
            Ok(images_per_prompt(json).map_err(|e| format!("--limit-mm-per-prompt: {e}"))?)
        }
        None => Ok(None),
    }
}

/// The image limit of vLLM's `--limit-mm-per-prompt` JSON. Each limit is a count or an object
/// with a `count` (vLLM 0.19 `config/multimodal.py`, `limit_per_prompt`); an absent modality
/// keeps vLLM's default.
fn images_per_prompt(json: &str) -> Result<Option<u64>, String> {
    let expected = r#"expected a JSON object of modality -> count, such as {"image": 0}"#;
    let limits: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| format!("{expected} ({e})"))?;
    let mut image = None;
    for (modality, limit) in &limits {
        let count = limit
            .get("count")
            .unwrap_or(limit)
            .as_u64()
            .ok_or_else(|| format!("`{modality}`: {limit} is not a count; {expected}"))?;
        if modality != "image" {
            // vLLM 0.19 keeps a limit only for the modalities the model's processor supports
            // (multimodal/processing/context.py:408-428, allowed_mm_limits), so another
            // modality's limit would change nothing: refused rather than dropped.
            return Err(format!(
                "`{}`: the modelled multimodal models (llama4, gemma3, mistral3, llava) take images only, and vLLM ignores a limit for a modality the model does not take; give limits for `image` only",
                circuit_ir::one_line(modality)
            ));
        }
        image = Some(count);
    }
    Ok(image)
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
