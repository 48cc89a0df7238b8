//! `--quantization METHOD` with SGLang: which methods the planner takes, and why it refuses the
//! rest (configs/model_config.py `_verify_quantization`, 0.5.23 :2000-2160; 0.4.6 :280-360; the
//! rule is alike in every release modelled).
//!
//! Invariant: a method is taken only where the weights SGLang loads are the checkpoint's own
//! either way, so the circuit imported from the checkpoint stands for them; every other method
//! is refused in one line naming it, never planned as another.

use model_facts::ModelFacts;

use crate::EngineError;

/// Checks `--quantization named` (None: not given, or `none`) against the checkpoint:
///
/// - the checkpoint's own `fp8`, `compressed-tensors` or `mxfp4`: SGLang reads the same method
///   from the config (no `override_quantization_method` of these depends on the flag: only
///   awq/gptq's Marlin upgrades, ModelOpt's, and `moe_wna16`/`humming`, each named by its own
///   value), so the weights are the checkpoint's either way: taken;
/// - `awq`/`gptq` and their Marlin names: SGLang upgrades a Marlin-compatible checkpoint to
///   awq_marlin/gptq_marlin unless the flag names plain awq/gptq, and raises for a Marlin name
///   on an incompatible one (awq/awq.py:333-354, 402-424: the bits, group size, zero point and
///   GPU capability decide), which the planner does not follow: refused;
/// - FP8 on an unquantized checkpoint: SGLang quantizes every linear weight with one float32
///   scale per output channel (layers/quantization/fp8.py:1151-1163, the CUTLASS and Marlin
///   paths), where the importer's online FP8 (vLLM's) keeps one per tensor: refused;
/// - any other: SGLang raises ("Quantization method specified in the model config ... does not
///   match", model_config.py:2136-2141) or requantizes the checkpoint, which is not modelled.
pub(crate) fn check(named: Option<&str>, model: &ModelFacts) -> Result<(), EngineError> {
    let Some(named) = named.filter(|n| *n != "none") else {
        return Ok(());
    };
    let own = model
        .quantization
        .as_deref()
        .filter(|_| model.checkpoint_quantized);
    let why = match own {
        Some(m) if m == named && matches!(m, "fp8" | "compressed-tensors" | "mxfp4") => {
            return Ok(());
        }
        None if named == "fp8" => "SGLang quantizes an unquantized checkpoint's linear weights to FP8 with one float32 scale per output channel (layers/quantization/fp8.py:1151-1163 in 0.5.23), where the importer's online FP8 keeps one per tensor, so it is not modelled for SGLang".to_owned(),
        None => format!(
            "the checkpoint has no quantization config, and SGLang's {named} applied while loading is not modelled"
        ),
        Some(m @ ("awq" | "gptq")) if [m, &format!("{m}_marlin"), "marlin"].contains(&named) => {
            format!(
                "on a `{m}` checkpoint SGLang upgrades to {m}_marlin unless plain {m} is named, and raises for a Marlin name when the checkpoint's bits, group size or zero point or the GPU rule Marlin out (layers/quantization/{m}/{m}.py override_quantization_method), which is not followed: drop it, SGLang reads the checkpoint's own"
            )
        }
        Some(m) => format!(
            "the checkpoint is quantized as `{m}`, and SGLang then raises (\"Quantization method specified in the model config ({m}) does not match the quantization method specified in the `quantization` argument\", configs/model_config.py:2136-2141 in 0.5.23) or requantizes it, which is not modelled"
        ),
    };
    Err(EngineError::FlagRefused {
        flag: format!("--quantization {named}"),
        why,
    })
}
