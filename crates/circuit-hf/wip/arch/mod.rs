//! The architecture a config describes, normalised: sizes, the attention kind, the MLP kinds,
//! the per-layer layout (which layers attend, slide or chunk, which run a gated DeltaNet, which
//! are sparse) and the parts held as weights only (multi-token-prediction layers, a vision
//! tower). One reader per model type turns a [`Config`] into an [`Arch`], applying the defaults
//! of the type's transformers configuration class (transformers 5.25.0,
//! `configuration_<type>.py`; [`Sizes::of`] holds the size defaults) and recording each one
//! used; the emitter turns an [`Arch`] into a circuit and knows nothing of config keys.
//!
//! The readers live by family: [`dense`] (Llama-like), [`gemma`], [`moe`] (routed experts),
//! [`deepseek`] (latent attention), [`qwen3_next`] (hybrid), [`multimodal`] (a language model
//! in `text_config` plus [`vision`] towers).
//!
//! Invariants: every size in an [`Arch`] is at least 1; `layers.len() == num_hidden_layers`;
//! `dense` is `Some` exactly when some layer (or MTP layer) is dense and `moe` exactly when some
//! is sparse; `delta` exactly when some layer runs a gated DeltaNet; `window` (`chunk`) is
//! `Some` exactly when some layer slides (is chunked); grouped-query attention has
//! `heads % kv_heads == 0`.

mod deepseek;
mod dense;
mod gemma;
mod moe;
mod multimodal;
mod qwen3_next;
pub(crate) mod vision;

use crate::config::{Config, Got, MAX_LAYERS};
use crate::error::HfError;
use crate::model::ModelType;
use crate::report::KeyReport;

/// A normalised architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arch {
    pub model: ModelType,
    pub names: Names,
    pub vocab: u64,
    pub hidden: u64,
    pub heads: u64,
    pub attn: Attn,
    pub norm: Norm,
    /// The gated activation of the dense MLPs (and of the experts unless `moe.act` says
    /// otherwise).
    pub act: Act,
    pub dense: Option<Dense>,
    pub moe: Option<Moe>,
    pub delta: Option<DeltaNet>,
    pub layers: Vec<Layer>,
    /// Tokens per sequence a sliding layer holds.
    pub window: Option<u64>,
    /// Tokens per sequence a chunked-attention layer holds (Llama 4).
    pub chunk: Option<u64>,
    /// Gemma 2 and 3: norms after attention and after the MLP too (four per layer).
    pub sandwich_norms: bool,
    /// Gemma: embeddings scaled by sqrt(hidden).
    pub embed_scale: bool,
    /// Gemma 2: soft-capped final logits.
    pub final_softcap: bool,
    pub tied: bool,
    /// Phi: attention and MLP read the same normed input side by side (one norm per layer).
    pub parallel: bool,
    /// Phi: `lm_head.bias`.
    pub lm_head_bias: bool,
    /// Multi-token-prediction layers, held as weights only.
    pub mtp: Option<Mtp>,
    /// A multimodal config's vision tower and projector, held as weights only.
    pub vision: Option<vision::Vision>,
}

/// Where the language model's tensors are named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    /// The decoder's prefix: `model`, or `language_model.model` in a multimodal checkpoint.
    pub model: String,
    /// The LM head's tensor: `lm_head`, or `language_model.lm_head`.
    pub lm_head: String,
    /// The final norm's module under `model`: `norm` (Phi: `final_layernorm`).
    pub final_norm: &'static str,
}

impl Names {
    fn plain() -> Names {
        Names {
            model: "model".to_owned(),
            lm_head: "lm_head".to_owned(),
            final_norm: "norm",
        }
    }
}

/// The normalisation layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Norm {
    /// RMS norm with a weight.
    Rms,
    /// Layer norm with a weight and a bias (Phi).
    Layer,
}

/// Per-head normalisation of the queries and keys before rotary embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QkNorm {
    None,
    /// An RMS norm with a `[head_dim]` weight (Qwen3, Gemma 3).
    Rms,
    /// An RMS norm without weight (Llama 4), on rotary layers only.
    Weightless,
    /// A layer norm with `[head_dim]` weight and bias (Phi with `qk_layernorm`).
    Layer,
}

/// The attention of every attention layer.
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
        qk_norm: QkNorm,
        /// Qwen3-Next: `q_proj` also yields a per-element gate; the attention output is
        /// multiplied by its sigmoid.
        output_gate: bool,
        /// gpt-oss: a learned sink logit per head, `self_attn.sinks`.
        sinks: bool,
        /// The output projection's module: `o_proj` (Phi: `dense`).
        o_name: &'static str,
    },
    /// Multi-head latent attention (DeepSeek-V2/V3) with a compressed-latent cache.
    Mla {
        q_lora_rank: Option<u64>,
        kv_lora_rank: u64,
        qk_nope_head_dim: u64,
        qk_rope_head_dim: u64,
        v_head_dim: u64,
        bias: bool,
    },
}

/// A gated activation.
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

/// The shape of the dense MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenseKind {
    /// `gate_proj`, `up_proj`, the gated activation, `down_proj`.
    Gated,
    /// Phi-3: one `gate_up_proj`.
    FusedGated,
    /// Phi: `fc1`, GELU, `fc2`.
    Plain,
}

/// The dense MLP (of the dense layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dense {
    pub ffn: u64,
    pub bias: bool,
    pub kind: DenseKind,
    /// Its module under the layer: `mlp` (Llama 4: `feed_forward`).
    pub module: &'static str,
}

/// How the checkpoint stores the routed experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Experts {
    /// One tensor per expert and projection, `<module>.experts.<e>.<name>.weight`, with these
    /// projection names (gate, up, down).
    PerExpert([&'static str; 3]),
    /// Two 3-D tensors per layer (gpt-oss, Llama 4): `<module>.experts.gate_up_proj`
    /// `[experts, hidden, 2 x ffn]` and `<module>.experts.down_proj` `[experts, ffn, hidden]`.
    Fused,
}

/// The router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Router {
    /// Its module under the MLP: `gate` (gpt-oss, Llama 4: `router`).
    pub name: &'static str,
    /// gpt-oss: `router.bias`.
    pub bias: bool,
    /// DeepSeek-V3, GLM-4-MoE: `gate.e_score_correction_bias`, f32 `[experts]`.
    pub score_bias: bool,
    /// Format of the router logits (transformers computes DeepSeek's in f32).
    pub format: &'static str,
}

/// The shared experts beside the routed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shared {
    None,
    /// DeepSeek, GLM: `count` experts of the routed width run as one MLP `shared_experts` of
    /// `count x ffn`.
    Experts { count: u64, bias: bool },
    /// Qwen2-MoE, Qwen3-Next (`gated`: times `sigmoid(shared_expert_gate(x))`), Llama 4: one
    /// `shared_expert` of its own width.
    Expert { ffn: u64, gated: bool },
}

/// The experts' activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpertAct {
    Gated(Act),
    /// gpt-oss's clamped SwiGLU.
    Clamped,
}

/// The sparse MLP (of the sparse layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moe {
    pub experts: u64,
    pub top_k: u64,
    pub ffn: u64,
    /// Its module under the layer: `mlp`, `block_sparse_moe` (Mixtral), `feed_forward`.
    pub module: &'static str,
    pub layout: Experts,
    pub router: Router,
    /// gpt-oss: `gate_up_proj_bias`, `down_proj_bias`.
    pub expert_bias: bool,
    pub act: ExpertAct,
    pub shared: Shared,
}

/// Qwen3-Next's gated DeltaNet (linear attention) layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeltaNet {
    pub k_heads: u64,
    pub v_heads: u64,
    pub k_dim: u64,
    pub v_dim: u64,
    pub kernel: u64,
}

/// How many tokens an attention layer's cache holds per sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    Full,
    /// At most `window`.
    Sliding,
    /// At most `chunk` (Llama 4's chunked local attention, as vLLM allocates it).
    Chunked,
}

/// A layer's token mixer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mixer {
    Attention {
        span: Span,
        /// Rotary embedding (Llama 4's NoPE layers have none).
        rope: bool,
    },
    DeltaNet,
}

/// One decoder layer's variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layer {
    pub mixer: Mixer,
    pub sparse: bool,
}

impl Layer {
    const FULL: Mixer = Mixer::Attention {
        span: Span::Full,
        rope: true,
    };
}

/// How a model's multi-token-prediction layers are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MtpKind {
    /// DeepSeek-V3, GLM-4-MoE: `model.layers.<L>` for L from num_hidden_layers on, each a
    /// decoder layer plus `embed_tokens`, `enorm`, `hnorm`, `eh_proj` and `shared_head` (`norm`,
    /// `head`).
    DeepSeek,
    /// Qwen3-Next: `mtp.fc`, `mtp.layers.<i>`, `mtp.norm`, `mtp.pre_fc_norm_embedding`,
    /// `mtp.pre_fc_norm_hidden`; the embedding and head are the model's.
    Qwen3Next,
}

/// Multi-token-prediction layers: weights the checkpoint carries, not run by the planned step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mtp {
    pub kind: MtpKind,
    /// The decoder layer of each.
    pub layers: Vec<Layer>,
}

/// An architecture and how its config's keys were read: the circuit-shaping `Arch` plus the
/// reports of nested configs (`text_config`, `vision_config`), their keys prefixed.
pub(crate) struct Read {
    pub arch: Arch,
    pub nested: Vec<KeyReport>,
}

/// Reads the architecture of `cfg`'s model type.
pub(crate) fn read(cfg: &Config<'_>) -> Result<Read, HfError> {
    if cfg.model().is_multimodal() {
        return multimodal::read(cfg);
    }
    Ok(Read {
        arch: read_text(cfg)?,
        nested: Vec::new(),
    })
}

/// Reads a language model's architecture (a top-level config or a `text_config`).
fn read_text(cfg: &Config<'_>) -> Result<Arch, HfError> {
    let base = Base::read(cfg)?;
    match cfg.model() {
        ModelType::Llama => dense::llama(cfg, base),
        ModelType::Granite => dense::granite(cfg, base),
        ModelType::Mistral => dense::mistral(cfg, base),
        ModelType::Qwen2 => dense::qwen(cfg, base, false),
        ModelType::Qwen3 => dense::qwen(cfg, base, true),
        ModelType::Phi3 => dense::phi3(cfg, base),
        ModelType::Phi => dense::phi(cfg, base),
        ModelType::Gemma => gemma::gemma(cfg, base),
        ModelType::Gemma2 => gemma::gemma2(cfg, base),
        ModelType::Gemma3Text => gemma::gemma3(cfg, base),
        ModelType::Qwen3Moe => moe::qwen3_moe(cfg, base),
        ModelType::Qwen2Moe => moe::qwen2_moe(cfg, base),
        ModelType::Mixtral => moe::mixtral(cfg, base),
        ModelType::GptOss => moe::gpt_oss(cfg, base),
        ModelType::Glm4Moe => moe::glm4_moe(cfg, base),
        ModelType::Llama4Text => moe::llama4(cfg, base),
        ModelType::DeepseekV2 => deepseek::v2(cfg, base),
        ModelType::DeepseekV3 | ModelType::KimiK2 => deepseek::v3(cfg, base),
        ModelType::Qwen3Next => qwen3_next::read(cfg, base),
        other => Err(cfg.refused(
            "model_type",
            format!("`{other}` is not a language model; it can only be nested in a multimodal config"),
        )),
    }
}

/// The size defaults of a model type's transformers configuration class (transformers 5.25.0,
/// `configuration_<type>.py`): what an absent size key stands for. They describe the class's
/// reference checkpoint (`LlamaConfig()` is Llama-2-7B, `Qwen3MoeConfig()` is
/// Qwen3-30B-A3B), which is why every one used is reported in `Import::defaults`.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    vocab: u64,
    hidden: u64,
    layers: u64,
    heads: u64,
    /// `intermediate_size`: the dense MLP width (Mixtral, gpt-oss, Llama 4: each expert's).
    ffn: u64,
}

impl Sizes {
    fn of(model: ModelType) -> Sizes {
        let (vocab, hidden, layers, heads, ffn) = match model {
            ModelType::Llama | ModelType::Granite => (32000, 4096, 32, 32, 11008),
            ModelType::Mistral | ModelType::Mixtral => (32000, 4096, 32, 32, 14336),
            ModelType::Qwen2 | ModelType::Qwen3 => (151936, 4096, 32, 32, 22016),
            ModelType::Qwen3Moe => (151936, 2048, 24, 32, 6144),
            ModelType::Qwen2Moe => (151936, 2048, 24, 16, 5632),
            ModelType::Qwen3Next => (151936, 2048, 48, 16, 5632),
            ModelType::Phi3 => (32064, 3072, 32, 32, 8192),
            ModelType::Phi => (51200, 2048, 24, 32, 8192),
            ModelType::Gemma => (256000, 3072, 28, 16, 24576),
            ModelType::Gemma2 => (256000, 2304, 26, 8, 9216),
            ModelType::Gemma3Text => (262208, 2304, 26, 8, 9216),
            ModelType::DeepseekV2 => (102400, 4096, 32, 32, 11008),
            ModelType::DeepseekV3 | ModelType::KimiK2 => (129280, 7168, 61, 128, 18432),
            ModelType::GptOss => (201088, 2880, 36, 64, 2880),
            ModelType::Glm4Moe => (151552, 4096, 46, 96, 10944),
            ModelType::Llama4Text => (202048, 5120, 48, 40, 8192),
            // Multimodal types and vision towers have no language-model sizes of their own.
            _ => (1, 1, 1, 1, 1),
        };
        Sizes {
            vocab,
            hidden,
            layers,
            heads,
            ffn,
        }
    }
}

/// The sizes every model type has.
#[derive(Debug, Clone, Copy)]
struct Base {
    vocab: u64,
    hidden: u64,
    layers: u64,
    heads: u64,
}

impl Base {
    fn read(cfg: &Config<'_>) -> Result<Base, HfError> {
        let d = Sizes::of(cfg.model());
        Ok(Base {
            vocab: cfg.int_or("vocab_size", 1, d.vocab)?,
            hidden: cfg.int_or("hidden_size", 1, d.hidden)?,
            layers: cfg.int_or_in("num_hidden_layers", 1, MAX_LAYERS, d.layers)?,
            heads: cfg.int_or("num_attention_heads", 1, d.heads)?,
        })
    }

    fn arch(self, model: ModelType, attn: Attn, act: Act, tied: bool) -> Arch {
        Arch {
            model,
            names: Names::plain(),
            vocab: self.vocab,
            hidden: self.hidden,
            heads: self.heads,
            attn,
            norm: Norm::Rms,
            act,
            dense: None,
            moe: None,
            delta: None,
            layers: vec![
                Layer {
                    mixer: Layer::FULL,
                    sparse: false,
                };
                self.layers as usize
            ],
            window: None,
            chunk: None,
            sandwich_norms: false,
            embed_scale: false,
            final_softcap: false,
            tied,
            parallel: false,
            lm_head_bias: false,
            mtp: None,
            vision: None,
        }
    }

    /// transformers' LlamaConfig, Gemma2Config, Gemma3TextConfig and DeepseekV2Config refuse a
    /// hidden size that is not a multiple of the head count, whatever `head_dim` says.
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

/// transformers' default for `num_key_value_heads` or `head_dim` when the key is absent.
#[derive(Clone, Copy)]
enum Fallback {
    /// Computed: `num_attention_heads` (multi-head attention) for `num_key_value_heads`,
    /// `hidden_size / num_attention_heads` for `head_dim`.
    Derived,
    /// A fixed number.
    Fixed(u64),
}

/// How a type's class treats `num_key_value_heads` and `head_dim` when absent or null.
#[derive(Clone, Copy)]
struct GqaDefaults {
    kv_heads: Fallback,
    /// `null` means `num_attention_heads` (the field is optional and `__post_init__` fills
    /// it in); otherwise the strict class refuses `null`.
    kv_heads_null: bool,
    head_dim: Fallback,
    /// `null` means `hidden_size / num_attention_heads` (the class or the attention code
    /// falls back to it); otherwise `null` is refused (a non-optional field, or attention code
    /// that would multiply by `None`).
    head_dim_null: bool,
}

/// Llama, Phi-3, Granite, Phi: `num_key_value_heads` and `head_dim` default to `None`, which
/// `__post_init__` or the attention code turns into the derived value.
const LLAMA_GQA: GqaDefaults = GqaDefaults {
    kv_heads: Fallback::Derived,
    kv_heads_null: true,
    head_dim: Fallback::Derived,
    head_dim_null: true,
};

/// Strict classes with fixed defaults for both (null refused).
const fn fixed_gqa(kv_heads: u64, head_dim: Fallback) -> GqaDefaults {
    GqaDefaults {
        kv_heads: Fallback::Fixed(kv_heads),
        kv_heads_null: false,
        head_dim,
        head_dim_null: false,
    }
}

struct Gqa {
    kv_heads: u64,
    head_dim: u64,
}

fn gqa(cfg: &Config<'_>, base: Base, d: GqaDefaults) -> Result<Gqa, HfError> {
    let kv_heads = match cfg.int("num_key_value_heads", 1, u64::MAX)? {
        Got::Value(v) => v,
        Got::Null if d.kv_heads_null => {
            // The default itself where the default is None (Llama, Phi-3); Qwen2 and Qwen3
            // give None this meaning although their default is 32.
            if matches!(d.kv_heads, Fallback::Derived) {
                cfg.default_used("num_key_value_heads", base.heads);
            }
            base.heads
        }
        Got::Null => return Err(cfg.null_int("num_key_value_heads", 1)),
        Got::Missing => match d.kv_heads {
            Fallback::Derived => {
                cfg.default_used("num_key_value_heads", base.heads);
                base.heads
            }
            Fallback::Fixed(v) => {
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
    let head_dim = match (cfg.int("head_dim", 1, u64::MAX)?, d.head_dim) {
        (Got::Value(v), _) => v,
        (Got::Null, _) if !d.head_dim_null => return Err(cfg.null_int("head_dim", 1)),
        (Got::Missing, Fallback::Fixed(v)) => {
            cfg.default_used("head_dim", v);
            v
        }
        (Got::Missing | Got::Null, Fallback::Derived) | (Got::Null, Fallback::Fixed(_)) => {
            derived()?
        }
    };
    Ok(Gqa { kv_heads, head_dim })
}

impl Gqa {
    /// Attention with these heads and no extras: no biases, q/k norms, gate or sinks.
    fn attn(&self) -> Attn {
        Attn::Gqa {
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            qkv_bias: false,
            o_bias: false,
            fused_qkv: false,
            qk_norm: QkNorm::None,
            output_gate: false,
            sinks: false,
            o_name: "o_proj",
        }
    }

    /// Attention whose q, k, v and o projections all have a bias when `attention_bias` says
    /// so (default false), with `qk_norm`.
    fn biased(&self, cfg: &Config<'_>, qk_norm: QkNorm) -> Result<Attn, HfError> {
        let bias = cfg.flag("attention_bias", false)?;
        Ok(self.with(|a| {
            if let Attn::Gqa {
                qkv_bias,
                o_bias,
                qk_norm: n,
                ..
            } = a
            {
                *qkv_bias = bias;
                *o_bias = bias;
                *n = qk_norm;
            }
        }))
    }

    fn with(&self, edit: impl FnOnce(&mut Attn)) -> Attn {
        let mut attn = self.attn();
        edit(&mut attn);
        attn
    }
}

/// The gated activation `key` names.
fn act(cfg: &Config<'_>, key: &'static str, default: &str) -> Result<Act, HfError> {
    let name = cfg.string_or(key, default)?;
    if name == "silu" || name == "swish" {
        return Ok(Act::Silu);
    }
    gelu(cfg, key, name, "silu, swish or a gelu variant").map(|()| Act::Gelu)
}

const GELUS: [&str; 6] = [
    "gelu",
    "gelu_new",
    "gelu_pytorch_tanh",
    "gelu_fast",
    "gelu_python",
    "gelu_accurate",
];

/// `Ok` when `name` (the value of `key`) is a GELU variant.
fn gelu(cfg: &Config<'_>, key: &str, name: String, accepted: &str) -> Result<(), HfError> {
    if GELUS.contains(&name.as_str()) {
        return Ok(());
    }
    Err(cfg.bad(
        key,
        format!("{accepted} ({})", GELUS.join(", ")),
        &serde_json::Value::String(name),
    ))
}

/// `sliding_window`: `default` when absent, `None` when null.
fn window(cfg: &Config<'_>, default: Option<u64>) -> Result<Option<u64>, HfError> {
    optional_size(cfg, "sliding_window", default)
}

/// A size whose null means "none" (`sliding_window`, `attention_chunk_size`): `default` when
/// absent.
fn optional_size(
    cfg: &Config<'_>,
    key: &'static str,
    default: Option<u64>,
) -> Result<Option<u64>, HfError> {
    Ok(match cfg.int(key, 1, u64::MAX)? {
        Got::Value(v) => Some(v),
        Got::Null => None,
        Got::Missing => {
            match default {
                Some(d) => cfg.default_used(key, d),
                None => cfg.default_used(key, "null"),
            }
            default
        }
    })
}

/// `layer_types`: per layer, the value `known` gives its entry; `None` when absent or null.
fn layer_types<T: Copy>(
    cfg: &Config<'_>,
    layers: usize,
    known: &[(&str, T)],
) -> Result<Option<Vec<T>>, HfError> {
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
        .map(|(i, t)| {
            known
                .iter()
                .find(|(name, _)| name == t)
                .map(|&(_, v)| v)
                .ok_or_else(|| {
                    // `attention` is an alias of `full_attention`, not listed.
                    let names: Vec<&str> = known
                        .iter()
                        .map(|(n, _)| *n)
                        .filter(|n| *n != "attention")
                        .collect();
                    cfg.refused(
                        "layer_types",
                        format!(
                            "entry {i} is `{t}`, which is not modelled (supported: {})",
                            names.join(", ")
                        ),
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The layer types of the sliding-window models: whether each layer slides.
const SLIDING_TYPES: &[(&str, bool)] = &[
    ("full_attention", false),
    ("attention", false),
    ("sliding_attention", true),
];

/// Marks the layers `slides` selects as sliding, when there is a window.
fn set_windows(arch: &mut Arch, window: Option<u64>, slides: impl Fn(usize) -> bool) {
    if let Some(w) = window {
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            if let Mixer::Attention { span, .. } = &mut layer.mixer
                && slides(i)
            {
                *span = Span::Sliding;
            }
        }
        if arch
            .layers
            .iter()
            .any(|l| matches!(l.mixer, Mixer::Attention { span: Span::Sliding, .. }))
        {
            arch.window = Some(w);
        }
    }
}

/// The dense MLP: `intermediate_size` (the class default when absent), gated, under `mlp`.
fn dense(cfg: &Config<'_>, bias: bool, kind: DenseKind) -> Result<Dense, HfError> {
    Ok(Dense {
        ffn: cfg.int_or("intermediate_size", 1, Sizes::of(cfg.model()).ffn)?,
        bias,
        kind,
        module: "mlp",
    })
}

/// Sets the dense MLP when some layer (or MTP layer) is dense.
fn dense_if_needed(
    cfg: &Config<'_>,
    arch: &mut Arch,
    read: impl FnOnce(&Config<'_>) -> Result<Dense, HfError>,
) -> Result<(), HfError> {
    let mtp_dense = arch
        .mtp
        .as_ref()
        .is_some_and(|m| m.layers.iter().any(|l| !l.sparse));
    if arch.layers.iter().any(|l| !l.sparse) || mtp_dense {
        arch.dense = Some(read(cfg)?);
    }
    Ok(())
}

/// Whether any layer (or MTP layer) is sparse.
fn any_sparse(layers: &[Layer], mtp: Option<&Mtp>) -> bool {
    layers.iter().chain(mtp.iter().flat_map(|m| &m.layers)).any(|l| l.sparse)
}

/// The routed-expert count under its names (`keys[0]` first; present ones must agree): at
/// least `min`, `default` when all are absent, `null` refused (the classes' fields are
/// non-optional `int`s).
fn experts(
    cfg: &Config<'_>,
    keys: &[&'static str],
    min: u64,
    default: u64,
) -> Result<u64, HfError> {
    match cfg.int_alias(keys, min)? {
        (Got::Value(v), _) => Ok(v),
        (Got::Null, key) => Err(cfg.null_int(key, min)),
        (Got::Missing, key) => {
            cfg.default_used(key, default);
            Ok(default)
        }
    }
}

/// What a type's sparse MLP reads beyond the expert count, and how it is laid out.
struct MoeSpec {
    /// The key of each expert's width.
    ffn_key: &'static str,
    /// Its class default.
    ffn_default: u64,
    /// The class default of `num_experts_per_tok`; `None` when the class has none (DeepSeek-V2:
    /// `num_experts_per_tok: int | None = None`).
    top_k_default: Option<u64>,
    module: &'static str,
    layout: Experts,
    router: Router,
    expert_bias: bool,
    act: ExpertAct,
    shared: Shared,
}

/// The `mlp.gate` router with bf16 logits and `mlp.experts.<e>.{gate,up,down}_proj` experts.
const MLP_EXPERTS: Experts = Experts::PerExpert(["gate_proj", "up_proj", "down_proj"]);
const GATE: Router = Router {
    name: "gate",
    bias: false,
    score_bias: false,
    format: "bf16",
};

impl MoeSpec {
    /// The common layout: `mlp.gate`, `mlp.experts.<e>.{gate,up,down}_proj`, the model's
    /// activation, no shared experts.
    fn mlp(ffn_key: &'static str, ffn_default: u64, top_k_default: Option<u64>, act: Act) -> Self {
        MoeSpec {
            ffn_key,
            ffn_default,
            top_k_default,
            module: "mlp",
            layout: MLP_EXPERTS,
            router: GATE,
            expert_bias: false,
            act: ExpertAct::Gated(act),
            shared: Shared::None,
        }
    }
}

/// The sparse MLP: `num_experts_per_tok` and the expert width.
fn moe(cfg: &Config<'_>, experts: u64, spec: MoeSpec) -> Result<Moe, HfError> {
    let top_k = match spec.top_k_default {
        Some(default) => cfg.int_or("num_experts_per_tok", 1, default)?,
        None => cfg.required("num_experts_per_tok", 1)?,
    };
    if top_k > experts {
        return Err(cfg.contradiction(format!(
            "`num_experts_per_tok` {top_k} exceeds the {experts} experts"
        )));
    }
    let ffn = cfg.int_or(spec.ffn_key, 1, spec.ffn_default)?;
    Ok(Moe {
        experts,
        top_k,
        ffn,
        module: spec.module,
        layout: spec.layout,
        router: spec.router,
        expert_bias: spec.expert_bias,
        act: spec.act,
        shared: spec.shared,
    })
}

/// `mlp_only_layers` (default `[]`, null too), checked against the layer count.
fn mlp_only_layers(cfg: &Config<'_>, layers: u64) -> Result<Vec<u64>, HfError> {
    let mlp_only = match cfg.ints("mlp_only_layers")? {
        Some(layers) => layers,
        None => {
            cfg.default_used("mlp_only_layers", "[]");
            Vec::new()
        }
    };
    if let Some(&bad) = mlp_only.iter().find(|&&i| i >= layers) {
        return Err(cfg.contradiction(format!(
            "`mlp_only_layers` names layer {bad} but `num_hidden_layers` is {layers}"
        )));
    }
    Ok(mlp_only)
}

/// The Qwen MoE rule (Qwen3-MoE, Qwen2-MoE, Qwen3-Next): layer i is sparse when there are
/// experts, it is not in `mlp_only_layers` and `(i + 1) % decoder_sparse_step == 0`.
fn qwen_sparse(cfg: &Config<'_>, experts: u64, layers: u64) -> Result<Vec<bool>, HfError> {
    if experts == 0 {
        return Ok(vec![false; layers as usize]);
    }
    let step = cfg.int_or("decoder_sparse_step", 1, 1)?;
    let mlp_only = mlp_only_layers(cfg, layers)?;
    Ok((0..layers)
        .map(|i| !mlp_only.contains(&i) && (i + 1).is_multiple_of(step))
        .collect())
}

/// `num_nextn_predict_layers` (alias `num_mtp_layers`), default `default`.
fn mtp_layers(cfg: &Config<'_>, keys: &[&'static str], default: u64) -> Result<u64, HfError> {
    match cfg.int_alias(keys, 0)? {
        (Got::Value(v), key) if v > MAX_LAYERS => Err(cfg.bad(
            key,
            format!("a whole number from 0 to {MAX_LAYERS}"),
            &serde_json::Value::from(v),
        )),
        (Got::Value(v), _) => Ok(v),
        (Got::Null, key) => Err(cfg.null_int(key, 0)),
        (Got::Missing, key) => {
            cfg.default_used(key, default);
            Ok(default)
        }
    }
}
