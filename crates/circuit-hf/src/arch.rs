//! The architecture a config describes, normalised: sizes, the attention kind, the MLP kinds
//! and the per-layer layout (which layers slide, which are sparse). One reader per model type
//! turns a [`Config`] into an [`Arch`], applying transformers' defaults; the emitter turns an
//! [`Arch`] into a circuit and knows nothing of config keys.
//!
//! Invariants: every size in an [`Arch`] is at least 1; `layers.len() == num_hidden_layers`;
//! `dense` is `Some` exactly when some layer is dense and `moe` exactly when some layer is
//! sparse; `window` is `Some` exactly when some layer slides; grouped-query attention has
//! `heads % kv_heads == 0`.

use crate::config::{Config, Got, MAX_LAYERS};
use crate::error::HfError;
use crate::model::ModelType;

/// A normalised architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arch {
    pub model: ModelType,
    pub vocab: u64,
    pub hidden: u64,
    pub heads: u64,
    pub attn: Attn,
    pub act: Act,
    pub dense: Option<Dense>,
    pub moe: Option<Moe>,
    pub layers: Vec<Layer>,
    /// Tokens per sequence a sliding layer holds.
    pub window: Option<u64>,
    /// Gemma 2: norms after attention and after the MLP too (four per layer).
    pub sandwich_norms: bool,
    /// Gemma 2: embeddings scaled by sqrt(hidden).
    pub embed_scale: bool,
    /// Gemma 2: soft-capped final logits.
    pub final_softcap: bool,
    pub tied: bool,
}

/// The attention of every layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attn {
    /// Grouped-query (or multi-head) attention with a K/V cache.
    Gqa {
        kv_heads: u64,
        head_dim: u64,
        qkv_bias: bool,
        o_bias: bool,
        /// Phi-3: one `qkv_proj`.
        fused_qkv: bool,
        /// Qwen3: per-head RMS norms on q and k.
        qk_norm: bool,
    },
    /// Multi-head latent attention (DeepSeek-V2) with a compressed-latent cache.
    Mla {
        q_lora_rank: Option<u64>,
        kv_lora_rank: u64,
        qk_nope_head_dim: u64,
        qk_rope_head_dim: u64,
        v_head_dim: u64,
        bias: bool,
    },
}

/// The gated activation of every MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    Silu,
    Gelu,
}

impl Act {
    pub fn op(self) -> &'static str {
        match self {
            Act::Silu => "silu_mul",
            Act::Gelu => "gelu_mul",
        }
    }
}

/// The dense MLP (of the dense layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dense {
    pub ffn: u64,
    pub bias: bool,
    /// Phi-3: one `gate_up_proj`.
    pub fused: bool,
}

/// Tensor naming of the sparse MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MoeNames {
    /// `block_sparse_moe.gate`, `block_sparse_moe.experts.*.w1/w3/w2`.
    Mixtral,
    /// `mlp.gate`, `mlp.experts.*.gate_proj/up_proj/down_proj`, `mlp.shared_experts.*`.
    Mlp,
}

/// The sparse MLP (of the sparse layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moe {
    pub experts: u64,
    pub top_k: u64,
    pub ffn: u64,
    /// Shared experts (DeepSeek), each `ffn` wide, run as one MLP of `shared_experts x ffn`;
    /// 0: none.
    pub shared_experts: u64,
    pub shared_bias: bool,
    pub names: MoeNames,
    /// Format of the router logits (transformers computes DeepSeek's in f32).
    pub router_format: &'static str,
}

/// One decoder layer's variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layer {
    pub sliding: bool,
    pub sparse: bool,
}

/// Reads the architecture of `cfg`'s model type.
pub(crate) fn read(cfg: &Config<'_>) -> Result<Arch, HfError> {
    let base = Base::read(cfg)?;
    match cfg.model() {
        ModelType::Llama => llama(cfg, base),
        ModelType::Mistral => mistral(cfg, base),
        ModelType::Qwen2 => qwen(cfg, base, false),
        ModelType::Qwen3 => qwen(cfg, base, true),
        ModelType::Qwen3Moe => qwen3_moe(cfg, base),
        ModelType::Mixtral => mixtral(cfg, base),
        ModelType::Phi3 => phi3(cfg, base),
        ModelType::Gemma2 => gemma2(cfg, base),
        ModelType::DeepseekV2 => deepseek_v2(cfg, base),
    }
}

/// The sizes every model type requires.
#[derive(Debug, Clone, Copy)]
struct Base {
    vocab: u64,
    hidden: u64,
    layers: u64,
    heads: u64,
}

impl Base {
    fn read(cfg: &Config<'_>) -> Result<Base, HfError> {
        Ok(Base {
            vocab: cfg.required("vocab_size", 1)?,
            hidden: cfg.required("hidden_size", 1)?,
            layers: cfg.required_in("num_hidden_layers", 1, MAX_LAYERS)?,
            heads: cfg.required("num_attention_heads", 1)?,
        })
    }

    fn arch(self, model: ModelType, attn: Attn, act: Act, tied: bool) -> Arch {
        Arch {
            model,
            vocab: self.vocab,
            hidden: self.hidden,
            heads: self.heads,
            attn,
            act,
            dense: None,
            moe: None,
            layers: vec![
                Layer {
                    sliding: false,
                    sparse: false,
                };
                self.layers as usize
            ],
            window: None,
            sandwich_norms: false,
            embed_scale: false,
            final_softcap: false,
            tied,
        }
    }

    /// transformers' LlamaConfig, Gemma2Config and DeepseekV2Config refuse a hidden size that
    /// is not a multiple of the head count, whatever `head_dim` says.
    fn check_divisible(self, cfg: &Config<'_>) -> Result<(), HfError> {
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(cfg.contradiction(format!(
                "`hidden_size` {} is not a multiple of `num_attention_heads` {} (transformers' {} configuration refuses this)",
                self.hidden,
                self.heads,
                cfg.model()
            )));
        }
        Ok(())
    }
}

/// transformers' default for `num_key_value_heads` when the key is absent.
#[derive(Clone, Copy)]
enum KvDefault {
    /// `None`: as many as the attention heads (multi-head attention).
    Heads,
    /// A fixed number.
    Fixed(u64),
}

/// transformers' default for `head_dim` when the key is absent.
#[derive(Clone, Copy)]
enum HeadDimDefault {
    /// `hidden_size / num_attention_heads`.
    Derived,
    /// A fixed number (Qwen3: 128, Gemma 2: 256).
    Fixed(u64),
}

struct Gqa {
    kv_heads: u64,
    head_dim: u64,
}

fn gqa(
    cfg: &Config<'_>,
    base: Base,
    kv_default: KvDefault,
    head_dim_default: HeadDimDefault,
) -> Result<Gqa, HfError> {
    let kv_heads = match cfg.int("num_key_value_heads", 1, u64::MAX)? {
        Got::Value(v) => v,
        // Every config class that accepts None turns it into num_attention_heads.
        Got::Null => base.heads,
        Got::Missing => match kv_default {
            KvDefault::Heads => {
                cfg.default_used("num_key_value_heads", base.heads);
                base.heads
            }
            KvDefault::Fixed(v) => {
                cfg.default_used("num_key_value_heads", v);
                v
            }
        },
    };
    if !base.heads.is_multiple_of(kv_heads) {
        return Err(cfg.contradiction(format!(
            "`num_attention_heads` {} is not a multiple of `num_key_value_heads` {kv_heads} (each key/value head serves a whole group of query heads)",
            base.heads
        )));
    }
    let derived = || {
        if !base.hidden.is_multiple_of(base.heads) {
            return Err(cfg.contradiction(format!(
                "`head_dim` is not given and `hidden_size` {} is not a multiple of `num_attention_heads` {}",
                base.hidden, base.heads
            )));
        }
        let d = base.hidden / base.heads;
        cfg.default_used("head_dim", d);
        Ok(d)
    };
    let head_dim = match (cfg.int("head_dim", 1, u64::MAX)?, head_dim_default) {
        (Got::Value(v), _) => v,
        (Got::Missing, HeadDimDefault::Fixed(v)) => {
            cfg.default_used("head_dim", v);
            v
        }
        (Got::Missing, HeadDimDefault::Derived) | (Got::Null, _) => derived()?,
    };
    Ok(Gqa { kv_heads, head_dim })
}

fn act(cfg: &Config<'_>, key: &'static str, default: &str) -> Result<Act, HfError> {
    let name = cfg.string_or(key, default)?;
    match name.as_str() {
        "silu" | "swish" => Ok(Act::Silu),
        "gelu" | "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" | "gelu_python"
        | "gelu_accurate" => Ok(Act::Gelu),
        _ => Err(cfg.bad(
            key,
            "silu, swish or a gelu variant (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_python, gelu_accurate)",
            &serde_json::Value::String(name.clone()),
        )),
    }
}

/// `sliding_window`: `default` when absent, `None` when null.
fn window(cfg: &Config<'_>, default: Option<u64>) -> Result<Option<u64>, HfError> {
    Ok(match cfg.int("sliding_window", 1, u64::MAX)? {
        Got::Value(v) => Some(v),
        Got::Null => None,
        Got::Missing => {
            match default {
                Some(d) => cfg.default_used("sliding_window", d),
                None => cfg.default_used("sliding_window", "null"),
            }
            default
        }
    })
}

/// `layer_types`: per layer, whether it is a sliding-attention layer; `None` when absent.
fn layer_types(cfg: &Config<'_>, layers: usize) -> Result<Option<Vec<bool>>, HfError> {
    let Some(types) = cfg.strings("layer_types")? else {
        return Ok(None);
    };
    if types.len() != layers {
        return Err(cfg.contradiction(format!(
            "`layer_types` has {} entries but `num_hidden_layers` is {layers}",
            types.len()
        )));
    }
    types
        .iter()
        .enumerate()
        .map(|(i, t)| match t.as_str() {
            "full_attention" | "attention" => Ok(false),
            "sliding_attention" => Ok(true),
            other => Err(cfg.refused(
                "layer_types",
                format!(
                    "entry {i} is `{other}`, which is not modelled (supported: full_attention, sliding_attention)"
                ),
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Marks the layers `slides` selects as sliding, when there is a window.
fn set_windows(arch: &mut Arch, window: Option<u64>, slides: impl Fn(usize) -> bool) {
    if let Some(w) = window {
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            layer.sliding = slides(i);
        }
        if arch.layers.iter().any(|l| l.sliding) {
            arch.window = Some(w);
        }
    }
}

fn dense(cfg: &Config<'_>, bias: bool, fused: bool) -> Result<Dense, HfError> {
    Ok(Dense {
        ffn: cfg.required("intermediate_size", 1)?,
        bias,
        fused,
    })
}

fn llama(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    let g = gqa(cfg, base, KvDefault::Heads, HeadDimDefault::Derived)?;
    let bias = cfg.flag("attention_bias", false)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm: false,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Llama, attn, act, tied);
    let mlp_bias = cfg.flag("mlp_bias", false)?;
    arch.dense = Some(dense(cfg, mlp_bias, false)?);
    Ok(arch)
}

fn mistral(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, KvDefault::Fixed(8), HeadDimDefault::Derived)?;
    let attn = plain_gqa(&g, false);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Mistral, attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    let w = window(cfg, Some(4096))?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

fn plain_gqa(g: &Gqa, fused_qkv: bool) -> Attn {
    Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: false,
        o_bias: false,
        fused_qkv,
        qk_norm: false,
    }
}

/// Qwen2 and Qwen3: windows from `use_sliding_window`, `layer_types`, `max_window_layers`.
fn qwen_windows(cfg: &Config<'_>, arch: &mut Arch) -> Result<(), HfError> {
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers)?;
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
            (0..layers as u64).map(|i| i >= first).collect()
        }
    };
    set_windows(arch, Some(w), |i| slides[i]);
    Ok(())
}

fn qwen(cfg: &Config<'_>, base: Base, qwen3: bool) -> Result<Arch, HfError> {
    let (model, head_dim_default) = if qwen3 {
        (ModelType::Qwen3, HeadDimDefault::Fixed(128))
    } else {
        (ModelType::Qwen2, HeadDimDefault::Derived)
    };
    let g = gqa(cfg, base, KvDefault::Fixed(32), head_dim_default)?;
    let attn = if qwen3 {
        let bias = cfg.flag("attention_bias", false)?;
        Attn::Gqa {
            kv_heads: g.kv_heads,
            head_dim: g.head_dim,
            qkv_bias: bias,
            o_bias: bias,
            fused_qkv: false,
            qk_norm: true,
        }
    } else {
        // transformers' Qwen2 always has q/k/v biases and never an o_proj bias.
        Attn::Gqa {
            kv_heads: g.kv_heads,
            head_dim: g.head_dim,
            qkv_bias: true,
            o_bias: false,
            fused_qkv: false,
            qk_norm: false,
        }
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(model, attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    qwen_windows(cfg, &mut arch)?;
    Ok(arch)
}

fn qwen3_moe(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, KvDefault::Fixed(4), HeadDimDefault::Derived)?;
    let bias = cfg.flag("attention_bias", false)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm: true,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Qwen3Moe, attn, act, tied);

    let experts = match cfg.int_alias(&["num_experts", "num_local_experts"], 0)? {
        (Got::Value(v), _) => v,
        (_, key) => return Err(cfg.missing(key)),
    };
    let step = cfg.int_or("decoder_sparse_step", 1, 1)?;
    let mlp_only = cfg.ints("mlp_only_layers")?.unwrap_or_default();
    let layers = arch.layers.len() as u64;
    if let Some(&bad) = mlp_only.iter().find(|&&i| i >= layers) {
        return Err(cfg.contradiction(format!(
            "`mlp_only_layers` names layer {bad} but `num_hidden_layers` is {layers}"
        )));
    }
    for (i, layer) in arch.layers.iter_mut().enumerate() {
        let i = i as u64;
        layer.sparse = !mlp_only.contains(&i) && experts > 0 && (i + 1).is_multiple_of(step);
    }
    if arch.layers.iter().any(|l| l.sparse) {
        arch.moe = Some(moe(
            cfg,
            experts,
            "moe_intermediate_size",
            0,
            false,
            MoeNames::Mlp,
            "bf16",
        )?);
    }
    if arch.layers.iter().any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, false, false)?);
    }
    if cfg.flag("use_sliding_window", false)? {
        let w = window(cfg, Some(4096))?;
        set_windows(&mut arch, w, |_| true);
    }
    Ok(arch)
}

/// The sparse MLP: `num_experts_per_tok` and the expert width, required.
fn moe(
    cfg: &Config<'_>,
    experts: u64,
    ffn_key: &'static str,
    shared_experts: u64,
    shared_bias: bool,
    names: MoeNames,
    router_format: &'static str,
) -> Result<Moe, HfError> {
    let top_k = cfg.required("num_experts_per_tok", 1)?;
    if top_k > experts {
        return Err(cfg.contradiction(format!(
            "`num_experts_per_tok` {top_k} exceeds the {experts} experts"
        )));
    }
    let ffn = cfg.required(ffn_key, 1)?;
    Ok(Moe {
        experts,
        top_k,
        ffn,
        shared_experts,
        shared_bias,
        names,
        router_format,
    })
}

fn mixtral(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, KvDefault::Fixed(8), HeadDimDefault::Derived)?;
    let attn = plain_gqa(&g, false);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Mixtral, attn, act, tied);
    let experts = match cfg.int_alias(&["num_local_experts", "num_experts"], 1)? {
        (Got::Value(v), _) => v,
        (_, key) => return Err(cfg.missing(key)),
    };
    arch.moe = Some(moe(
        cfg,
        experts,
        "intermediate_size",
        0,
        false,
        MoeNames::Mixtral,
        "bf16",
    )?);
    for layer in &mut arch.layers {
        layer.sparse = true;
    }
    let w = window(cfg, None)?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

fn phi3(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, KvDefault::Heads, HeadDimDefault::Derived)?;
    let attn = plain_gqa(&g, true);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Phi3, attn, act, tied);
    arch.dense = Some(dense(cfg, false, true)?);
    let w = window(cfg, None)?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

fn gemma2(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    let g = gqa(cfg, base, KvDefault::Fixed(4), HeadDimDefault::Fixed(256))?;
    let bias = cfg.flag("attention_bias", false)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm: false,
    };
    let act = act(cfg, "hidden_activation", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(ModelType::Gemma2, attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    arch.sandwich_norms = true;
    arch.embed_scale = true;
    arch.final_softcap = match cfg.number("final_logit_softcapping")? {
        Got::Value(_) => true,
        Got::Null => false,
        Got::Missing => {
            cfg.default_used("final_logit_softcapping", "30.0");
            true
        }
    };
    let layers = arch.layers.len();
    // transformers' default: layer i slides when (i + 1) % 2 == 1, i.e. the even layers.
    let types =
        layer_types(cfg, layers)?.unwrap_or_else(|| (0..layers).map(|i| i % 2 == 0).collect());
    let w = window(cfg, Some(4096))?;
    set_windows(&mut arch, w, |i| types[i]);
    Ok(arch)
}

fn deepseek_v2(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    let bias = cfg.flag("attention_bias", false)?;
    let q_lora_rank = match cfg.int("q_lora_rank", 1, u64::MAX)? {
        Got::Value(v) => Some(v),
        Got::Null => None,
        Got::Missing => {
            cfg.default_used("q_lora_rank", 1536);
            Some(1536)
        }
    };
    let attn = Attn::Mla {
        q_lora_rank,
        kv_lora_rank: cfg.int_or("kv_lora_rank", 1, 512)?,
        qk_nope_head_dim: cfg.int_or("qk_nope_head_dim", 1, 128)?,
        qk_rope_head_dim: cfg.int_or("qk_rope_head_dim", 1, 64)?,
        v_head_dim: cfg.int_or("v_head_dim", 1, 128)?,
        bias,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::DeepseekV2, attn, act, tied);
    let mlp_bias = cfg.flag("mlp_bias", false)?;

    let experts = match cfg.int_alias(&["n_routed_experts", "num_experts"], 1)? {
        (Got::Value(v), _) => Some(v),
        // DeepSeek's code: no routed experts, every layer dense.
        (Got::Null, _) => None,
        (Got::Missing, key) => return Err(cfg.missing(key)),
    };
    if let Some(experts) = experts {
        let first_dense = cfg.int_or("first_k_dense_replace", 0, 0)?;
        let freq = cfg.int_or("moe_layer_freq", 1, 1)?;
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            let i = i as u64;
            layer.sparse = i >= first_dense && i.is_multiple_of(freq);
        }
        if arch.layers.iter().any(|l| l.sparse) {
            let shared = match cfg.int("n_shared_experts", 0, u64::MAX)? {
                Got::Value(v) => v,
                Got::Null => 0,
                Got::Missing => {
                    cfg.default_used("n_shared_experts", 2);
                    2
                }
            };
            arch.moe = Some(moe(
                cfg,
                experts,
                "moe_intermediate_size",
                shared,
                mlp_bias,
                MoeNames::Mlp,
                "f32",
            )?);
        }
    }
    if arch.layers.iter().any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, mlp_bias, false)?);
    }
    Ok(arch)
}
