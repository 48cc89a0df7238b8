//! Readers of the Gemma types: Gemma, Gemma 2 and Gemma 3's language model. All scale the
//! embeddings by sqrt(hidden) and tie them by default; Gemma 2 and 3 add norms after attention
//! and the MLP and slide a window on most layers; Gemma 3 adds per-head q/k norms.

use super::*;

pub(super) fn gemma(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 16`, `head_dim: int = 256`: strict, null refused. `gelu`
    // means gelu_pytorch_tanh (__post_init__): a GELU either way.
    let g = gqa(cfg, base, fixed_gqa(16, Fallback::Fixed(256)))?;
    let attn = g.biased(cfg, QkNorm::None)?;
    let act = act(cfg, "hidden_act", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(ModelType::Gemma, attn, act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::Gated)?);
    arch.embed_scale = true;
    Ok(arch)
}

pub(super) fn gemma2(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    // `num_key_value_heads: int = 4`, `head_dim: int = 256`: strict, null refused.
    let g = gqa(cfg, base, fixed_gqa(4, Fallback::Fixed(256)))?;
    let attn = g.biased(cfg, QkNorm::None)?;
    let act = act(cfg, "hidden_activation", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(ModelType::Gemma2, attn, act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::Gated)?);
    arch.sandwich_norms = true;
    arch.embed_scale = true;
    arch.final_softcap = softcap(cfg, true)?;
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers, SLIDING_TYPES)?;
    let w = window(cfg, Some(4096))?;
    let types = match types {
        Some(t) => t,
        None => {
            // transformers' default: layer i slides when (i + 1) % 2 == 1, i.e. the even
            // layers; a default used only when there is a window to slide over.
            if w.is_some() {
                cfg.default_used("layer_types", "sliding_attention on even layers");
            }
            (0..layers).map(|i| i % 2 == 0).collect()
        }
    };
    set_windows(&mut arch, w, |i| types[i]);
    Ok(arch)
}

/// `final_logit_softcapping`: a number adds a softcap node, null removes it; `default` when
/// absent (Gemma 2: 30.0, Gemma 3: null).
fn softcap(cfg: &Config<'_>, default: bool) -> Result<bool, HfError> {
    Ok(match cfg.number("final_logit_softcapping")? {
        Got::Value(_) => true,
        Got::Null => false,
        Got::Missing => {
            cfg.default_used(
                "final_logit_softcapping",
                if default { "30.0" } else { "null" },
            );
            default
        }
    })
}

/// Gemma 3's language model (`gemma3_text`): Gemma 2's layout plus q/k norms, `head_dim` 256
/// whatever hidden / heads is, and windows on five layers of six by default.
pub(super) fn gemma3(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    let g = gqa(cfg, base, fixed_gqa(4, Fallback::Fixed(256)))?;
    let attn = g.biased(cfg, QkNorm::Rms)?;
    let act = act(cfg, "hidden_activation", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(ModelType::Gemma3Text, attn, act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::Gated)?);
    arch.sandwich_norms = true;
    arch.embed_scale = true;
    arch.final_softcap = softcap(cfg, false)?;
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers, SLIDING_TYPES)?;
    let mut w = window(cfg, Some(4096))?;
    if cfg.flag("use_bidirectional_attention", false)? {
        // transformers' __post_init__: the window of a bidirectional model, exclusive bounds.
        w = w.map(|w| w / 2 + 1);
    }
    let types = match types {
        Some(t) => t,
        None => {
            let pattern = cfg.int_or("sliding_window_pattern", 1, 6)?;
            if w.is_some() {
                cfg.default_used(
                    "layer_types",
                    format!("sliding_attention unless (i + 1) % {pattern} == 0"),
                );
            }
            (0..layers as u64)
                .map(|i| !(i + 1).is_multiple_of(pattern))
                .collect()
        }
    };
    set_windows(&mut arch, w, |i| types[i]);
    Ok(arch)
}
