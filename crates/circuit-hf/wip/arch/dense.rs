//! Readers of the dense decoder types: Llama, Granite, Mistral, Qwen2, Qwen3, Phi-3 and Phi.

use super::*;

pub(super) fn llama(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    llama_like(cfg, base, ModelType::Llama, LLAMA_GQA)
}

/// Granite is Llama with four scalar multipliers, which change no byte (they are ignored
/// keys). Its class has no `head_dim` field: the attention code's getattr, which a null would
/// break.
pub(super) fn granite(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    llama_like(cfg, base, ModelType::Granite, defaults)
}

fn llama_like(
    cfg: &Config<'_>,
    base: Base,
    model: ModelType,
    defaults: GqaDefaults,
) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, defaults)?;
    let attn = g.biased(cfg, QkNorm::None)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(model, attn, act, tied);
    let mlp_bias = cfg.flag("mlp_bias", false)?;
    arch.dense = Some(dense(cfg, mlp_bias, DenseKind::Gated)?);
    Ok(arch)
}

/// Mistral, Mixtral: `num_key_value_heads: int = 8` (strict: null refused), `head_dim: int |
/// None = None` (the attention code's `getattr(config, "head_dim", None) or hidden // heads`).
pub(super) const MISTRAL_GQA: GqaDefaults = GqaDefaults {
    kv_heads: Fallback::Fixed(8),
    kv_heads_null: false,
    head_dim: Fallback::Derived,
    head_dim_null: true,
};

pub(super) fn mistral(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, MISTRAL_GQA)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Mistral, g.attn(), act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::Gated)?);
    let w = window(cfg, Some(4096))?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

/// Qwen2 and Qwen3: windows from `use_sliding_window`, `layer_types`, `max_window_layers`.
fn qwen_windows(cfg: &Config<'_>, arch: &mut Arch) -> Result<(), HfError> {
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers, SLIDING_TYPES)?;
    if !cfg.flag("use_sliding_window", false)? {
        return Ok(());
    }
    let Some(w) = window(cfg, Some(4096))? else {
        return Ok(());
    };
    let slides: Vec<bool> = match types {
        Some(t) => t,
        None => {
            let first = cfg.int_or("max_window_layers", 0, 28)?;
            cfg.default_used(
                "layer_types",
                format!("sliding_attention on layers >= {first}"),
            );
            (0..layers as u64).map(|i| i >= first).collect()
        }
    };
    set_windows(arch, Some(w), |i| slides[i]);
    Ok(())
}

pub(super) fn qwen(cfg: &Config<'_>, base: Base, qwen3: bool) -> Result<Arch, HfError> {
    // `num_key_value_heads: int | None = 32`, None meaning num_attention_heads. Qwen2Config
    // has no `head_dim` field: the attention code's `getattr(config, "head_dim", hidden //
    // heads)`, which a null would break; Qwen3Config's is `head_dim: int = 128`.
    let (model, head_dim) = if qwen3 {
        (ModelType::Qwen3, Fallback::Fixed(128))
    } else {
        (ModelType::Qwen2, Fallback::Derived)
    };
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(32),
        kv_heads_null: true,
        head_dim,
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = if qwen3 {
        g.biased(cfg, QkNorm::Rms)?
    } else {
        // transformers' Qwen2 always has q/k/v biases and never an o_proj bias.
        g.with(|a| {
            if let Attn::Gqa { qkv_bias, .. } = a {
                *qkv_bias = true;
            }
        })
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(model, attn, act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::Gated)?);
    qwen_windows(cfg, &mut arch)?;
    Ok(arch)
}

pub(super) fn phi3(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int | None = None`; no `head_dim` field (the attention code's
    // `getattr(config, "head_dim", hidden // heads)`, which a null would break).
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = g.with(|a| {
        if let Attn::Gqa { fused_qkv, .. } = a {
            *fused_qkv = true;
        }
    });
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Phi3, attn, act, tied);
    arch.dense = Some(dense(cfg, false, DenseKind::FusedGated)?);
    let w = window(cfg, None)?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

/// Phi (Phi-2): layer norms with biases, biases on every projection (`self_attn.dense` is
/// the output projection) and on `lm_head`, attention and an ungated `fc1`-GELU-`fc2` MLP side
/// by side on one normed input, rotary embedding on part of each head (no byte effect).
pub(super) fn phi(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    let g = gqa(cfg, base, defaults)?;
    let qk_norm = if cfg.flag("qk_layernorm", false)? {
        QkNorm::Layer
    } else {
        QkNorm::None
    };
    let attn = g.with(|a| {
        if let Attn::Gqa {
            qkv_bias,
            o_bias,
            qk_norm: n,
            o_name,
            ..
        } = a
        {
            *qkv_bias = true;
            *o_bias = true;
            *n = qk_norm;
            *o_name = "dense";
        }
    });
    let name = cfg.string_or("hidden_act", "gelu_new")?;
    gelu(cfg, "hidden_act", name, "a gelu variant")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Phi, attn, Act::Gelu, tied);
    arch.norm = Norm::Layer;
    arch.parallel = true;
    arch.lm_head_bias = true;
    arch.names.final_norm = "final_layernorm";
    arch.dense = Some(dense(cfg, true, DenseKind::Plain)?);
    Ok(arch)
}
