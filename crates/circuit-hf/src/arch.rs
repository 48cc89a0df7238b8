//! The architecture a config describes, normalised: sizes, the attention kind, the MLP kinds
//! and the per-layer layout (which layers slide, which are sparse). One reader per model type
//! turns a [`Config`] into an [`Arch`], applying the defaults of the type's transformers
//! configuration class (transformers 5.25.0, `configuration_<type>.py`; [`Sizes::of`] holds the
//! size defaults) and recording each one used; the emitter turns an [`Arch`] into a circuit and
//! knows nothing of config keys.
//!
//! Invariants: every size in an [`Arch`] is at least 1; `layers.len() == num_hidden_layers`;
//! `dense` is `Some` exactly when some layer is dense and `moe` exactly when some layer is
//! sparse; `window` is `Some` exactly when some layer slides (`chunked_attention` only then);
//! `delta_net` is `Some` exactly
//! when some layer is a linear-attention (Gated DeltaNet) layer, and `v_heads % k_heads == 0`
//! there; a gated shared expert (`Moe::gated_shared`) comes without counted shared experts;
//! grouped-query attention has `heads % kv_heads == 0`.

use serde_json::Value;

use crate::config::{Config, Got, MAX_LAYERS};
use crate::error::HfError;
use crate::model::ModelType;

/// A normalised architecture.
#[derive(Debug, Clone, PartialEq)]
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
    /// Llama 4: the windowed layers attend within chunks of `window` tokens (chunked local
    /// attention), not over a sliding window; the bytes are alike, an engine's block
    /// accounting is not.
    pub chunked_attention: bool,
    /// Gemma 2: norms after attention and after the MLP too (four per layer).
    pub sandwich_norms: bool,
    /// Gemma 2: embeddings scaled by sqrt(hidden).
    pub embed_scale: bool,
    /// Gemma 2: soft-capped final logits.
    pub final_softcap: bool,
    /// Granite: the embeddings times `embedding_multiplier` and the logits divided by
    /// `logits_scaling`, each into a new tensor.
    pub scaled_io: bool,
    pub tied: bool,
    /// The multi-token-prediction layers (DeepSeek-V3's after the last decoder layer,
    /// Qwen3-Next's under `mtp.`), held as weights only (`Layer::sparse` says which MLP each
    /// has).
    pub mtp: Vec<Layer>,
    /// The module of a layer's MLP in tensor names: `mlp`, or Llama 4's `feed_forward`.
    pub mlp_module: &'static str,
    /// Llama 4: a weightless RMS norm of q and k after the rotary embedding, on the rotary
    /// layers.
    pub qk_weightless_norm: bool,
    /// Llama 4: the NoPE layers scale q by a per-position temperature before attention.
    pub nope_temperature: bool,
    /// How the checkpoint renames the language model's tensors when the model is the text part
    /// of a multimodal checkpoint: a leading `.0` of a name is replaced by `.1` (`("",
    /// "language_model.")` prefixes every name; `("model.", "model.language_model.")` moves the
    /// body under the wrapper's and leaves `lm_head`); `("", "")` for a model on its own.
    pub tensor_rename: (&'static str, &'static str),
    /// The vision tower and projector of a multimodal checkpoint, held as weights only.
    pub vision: Option<crate::vision::VisionTower>,
    /// `max_position_embeddings`: no byte of the circuit depends on it (the planned context is
    /// the caller's), but an engine takes it as the default max model length.
    pub context: u64,
    /// The rope scaling, as the config writes it (an engine reads how far it stretches the
    /// context).
    pub rope: model_facts::RopeScaling,
    /// The rotary embeddings the decoder layers apply, one per distinct configuration.
    pub rotary: Vec<model_facts::Rotary>,
    /// The tensor-parallel ranks the sizes above are one rank's share of (1: unsharded);
    /// above 1 the emitter adds the collectives that join the shares.
    pub tp: u64,
    /// How the checkpoint names and wraps the MTP layers.
    pub mtp_names: MtpNames,
    /// Qwen3-Next: the output rows of `mtp.fc` one rank holds (`hidden`, split over TP as
    /// vLLM's column-parallel `fc` is).
    pub mtp_fc_rows: u64,
    /// Qwen3-Next: the Gated DeltaNet of the linear-attention layers.
    pub delta_net: Option<DeltaNet>,
    /// The width of the shared experts' MLP one rank holds when it is not `shared_experts x
    /// moe_ffn` of the rank: an expert-parallel group ([`crate::ExpertSplit::Groups`]) splits
    /// each routed expert over `tp / ep` ranks but the shared experts over all `tp`.
    pub shared_ffn: Option<u64>,
}

/// The checkpoint layout of the multi-token-prediction layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MtpNames {
    /// DeepSeek-V3 (`deepseek_mtp`): `model.layers.<layers + j>`, each with its own
    /// `embed_tokens`, `enorm`, `hnorm`, `eh_proj` and `shared_head`.
    DeepSeek,
    /// Qwen3-Next (vLLM's `qwen3_next_mtp`): `mtp.layers.<j>`, and once for all of them
    /// `mtp.fc` `[hidden, 2 x hidden]`, `mtp.norm`, `mtp.pre_fc_norm_embedding` and
    /// `mtp.pre_fc_norm_hidden`; the embedding and head are the model's own.
    Qwen3Next,
}

/// Qwen3-Next's Gated DeltaNet (`Qwen3NextGatedDeltaNet`, vLLM's `GatedDeltaNetAttention`):
/// key heads, value heads (a multiple of them), their widths and the causal convolution's
/// kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeltaNet {
    pub k_heads: u64,
    pub v_heads: u64,
    pub k_head_dim: u64,
    pub v_head_dim: u64,
    pub conv_kernel: u64,
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
        /// gpt-oss: a learned sink logit per head, `self_attn.sinks` `[heads]`.
        sinks: bool,
        /// Qwen3-Next: `q_proj` also yields a per-head output gate (`[2 x heads x head_dim,
        /// hidden]`), and the attention output is multiplied by its sigmoid before `o_proj`.
        output_gate: bool,
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
    /// The op of the gated form, `act(gate) x up`.
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
    /// gpt-oss: `mlp.router` (weight and bias), `mlp.experts.gate_up_proj` and `down_proj`
    /// stored as one tensor for all experts each, with `_bias` tensors, and the clamped
    /// SwiGLU on interleaved gate and up.
    GptOss,
    /// Llama 4: `feed_forward.router`, `feed_forward.experts.gate_up_proj` `[experts, hidden,
    /// 2 x ffn]` and `down_proj` `[experts, ffn, hidden]` stored as one tensor each, and one
    /// `feed_forward.shared_expert` MLP of `ffn`.
    Llama4,
    /// Qwen3-VL-MoE: `mlp.gate`, `mlp.experts.gate_up_proj` `[experts, hidden, 2 x ffn]` and
    /// `mlp.experts.down_proj` `[experts, ffn, hidden]` stored as one tensor each, no shared
    /// expert.
    FusedMlp,
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
    /// DeepSeek-V3's noaux_tc routing: an f32 `gate.e_score_correction_bias` `[experts]`.
    pub score_bias: bool,
    /// Qwen3-Next: one shared expert `mlp.shared_expert` of this width, its output scaled by
    /// the sigmoid of `mlp.shared_expert_gate` (`[1, hidden]`); `None`: none such.
    pub gated_shared: Option<u64>,
}

/// One decoder layer's variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layer {
    pub sliding: bool,
    pub sparse: bool,
    /// No rotary embedding (Llama 4's NoPE layers).
    pub nope: bool,
    /// Qwen3-Next: a Gated DeltaNet (linear attention) layer instead of attention.
    pub linear: bool,
}

/// Reads the architecture of `cfg`'s model type.
pub(crate) fn read(cfg: &Config<'_>) -> Result<Arch, HfError> {
    let base = Base::read(cfg)?;
    let rope = crate::rope::read(cfg, base.context)?;
    let mut arch = match cfg.model() {
        ModelType::Llama => llama(cfg, base),
        ModelType::Granite => granite(cfg, base),
        ModelType::Mistral => mistral(cfg, base),
        ModelType::Qwen2 => qwen(cfg, base, false),
        ModelType::Qwen3 => qwen(cfg, base, true),
        ModelType::Qwen3Moe => qwen3_moe(cfg, base),
        ModelType::Qwen2Moe => qwen2_moe(cfg, base),
        ModelType::Mixtral => mixtral(cfg, base),
        ModelType::Phi3 => phi3(cfg, base),
        ModelType::Phi => phi(cfg, base),
        ModelType::Gemma => gemma1(cfg, base),
        ModelType::Gemma2 => gemma2(cfg, base),
        ModelType::Gemma3Text => gemma3_text(cfg, base),
        ModelType::DeepseekV2 => deepseek(cfg, base, &DEEPSEEK_V2),
        ModelType::DeepseekV3 | ModelType::KimiK2 => deepseek(cfg, base, &DEEPSEEK_V3),
        ModelType::GptOss => gpt_oss(cfg, base),
        ModelType::Glm4Moe => glm4_moe(cfg, base),
        ModelType::Llama4Text => llama4_text(cfg, base),
        ModelType::Qwen3Next => qwen3_next(cfg, base),
    }?;
    arch.rope = rope;
    arch.rotary = crate::rope::rotary(cfg, &arch)?;
    Ok(arch)
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
    /// `intermediate_size`: the dense MLP width (Mixtral: each expert's).
    ffn: u64,
    /// `max_position_embeddings`: the longest sequence the model was built for.
    context: u64,
}

impl Sizes {
    fn of(model: ModelType) -> Sizes {
        let (vocab, hidden, layers, heads, ffn) = match model {
            ModelType::Llama | ModelType::Granite => (32000, 4096, 32, 32, 11008),
            ModelType::Mistral | ModelType::Mixtral => (32000, 4096, 32, 32, 14336),
            ModelType::Qwen2 | ModelType::Qwen3 => (151936, 4096, 32, 32, 22016),
            ModelType::Qwen3Moe => (151936, 2048, 24, 32, 6144),
            ModelType::Qwen2Moe => (151936, 2048, 24, 16, 5632),
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
            ModelType::Qwen3Next => (151936, 2048, 48, 16, 5632),
        };
        // `max_position_embeddings`, as each class defaults it (`4096 * 32` for Mistral,
        // Mixtral and Llama 4).
        let context = match model {
            ModelType::Llama | ModelType::Granite | ModelType::Phi | ModelType::DeepseekV2 => 2048,
            ModelType::Phi3 | ModelType::DeepseekV3 | ModelType::KimiK2 => 4096,
            ModelType::Gemma | ModelType::Gemma2 => 8192,
            ModelType::Qwen2
            | ModelType::Qwen3
            | ModelType::Qwen3Moe
            | ModelType::Qwen2Moe
            | ModelType::Qwen3Next => 32768,
            ModelType::Mistral
            | ModelType::Mixtral
            | ModelType::Gemma3Text
            | ModelType::GptOss
            | ModelType::Glm4Moe
            | ModelType::Llama4Text => 131072,
        };
        Sizes {
            vocab,
            hidden,
            layers,
            heads,
            ffn,
            context,
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
    context: u64,
}

impl Base {
    fn read(cfg: &Config<'_>) -> Result<Base, HfError> {
        let d = Sizes::of(cfg.model());
        // Not reported among the defaults: no byte of the circuit depends on it.
        let context = match cfg.int("max_position_embeddings", 1, u64::MAX)? {
            Got::Value(v) => v,
            Got::Missing | Got::Null => d.context,
        };
        Ok(Base {
            vocab: cfg.int_or("vocab_size", 1, d.vocab)?,
            hidden: cfg.int_or("hidden_size", 1, d.hidden)?,
            layers: cfg.int_or_in("num_hidden_layers", 1, MAX_LAYERS, d.layers)?,
            heads: cfg.int_or("num_attention_heads", 1, d.heads)?,
            context,
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
                    nope: false,
                    linear: false,
                };
                self.layers as usize
            ],
            window: None,
            chunked_attention: false,
            sandwich_norms: false,
            embed_scale: false,
            final_softcap: false,
            scaled_io: false,
            tied,
            mtp: Vec::new(),
            mlp_module: "mlp",
            qk_weightless_norm: false,
            nope_temperature: false,
            tensor_rename: ("", ""),
            vision: None,
            context: self.context,
            rope: model_facts::RopeScaling::default(),
            rotary: Vec::new(),
            tp: 1,
            mtp_names: MtpNames::DeepSeek,
            mtp_fc_rows: self.hidden,
            delta_net: None,
            shared_ffn: None,
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

/// The dense MLP: `intermediate_size`, the class default when absent.
fn dense(cfg: &Config<'_>, bias: bool, fused: bool) -> Result<Dense, HfError> {
    Ok(Dense {
        ffn: cfg.int_or("intermediate_size", 1, Sizes::of(cfg.model()).ffn)?,
        bias,
        fused,
    })
}

/// Llama, Phi-3: `num_key_value_heads` and `head_dim` default to `None`, which
/// `__post_init__` (Llama) or the attention code (Phi-3's `head_dim`) turns into the derived
/// value.
const LLAMA_GQA: GqaDefaults = GqaDefaults {
    kv_heads: Fallback::Derived,
    kv_heads_null: true,
    head_dim: Fallback::Derived,
    head_dim_null: true,
};

fn llama(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    let g = gqa(cfg, base, LLAMA_GQA)?;
    let attn = biased_gqa(cfg, &g, false)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Llama, attn, act, tied);
    let mlp_bias = cfg.flag("mlp_bias", false)?;
    arch.dense = Some(dense(cfg, mlp_bias, false)?);
    Ok(arch)
}

/// Granite (`GraniteConfig`, `modeling_granite.py`): Llama's tensors; its multipliers change
/// no tensor shape, but the embedding multiplier and the logits divisor each write a new
/// tensor. `head_dim` is the attention code's `getattr` (no class field).
fn granite(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = biased_gqa(cfg, &g, false)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Granite, attn, act, tied);
    let mlp_bias = cfg.flag("mlp_bias", false)?;
    arch.dense = Some(dense(cfg, mlp_bias, false)?);
    arch.scaled_io = true;
    Ok(arch)
}

/// Mistral, Mixtral: `num_key_value_heads: int = 8` (strict: null refused), `head_dim: int |
/// None = None` (the attention code's `getattr(config, "head_dim", None) or hidden // heads`).
const MISTRAL_GQA: GqaDefaults = GqaDefaults {
    kv_heads: Fallback::Fixed(8),
    kv_heads_null: false,
    head_dim: Fallback::Derived,
    head_dim_null: true,
};

fn mistral(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, MISTRAL_GQA)?;
    let attn = plain_gqa(&g, false);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Mistral, attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    let w = window(cfg, Some(4096))?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

/// Grouped-query attention whose q, k, v and o projections all have a bias when
/// `attention_bias` says so (Llama, Qwen3, Qwen3-MoE, Gemma 2), with per-head q/k norms when
/// `qk_norm`.
fn biased_gqa(cfg: &Config<'_>, g: &Gqa, qk_norm: bool) -> Result<Attn, HfError> {
    let bias = cfg.flag("attention_bias", false)?;
    Ok(Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm,
        sinks: false,
        output_gate: false,
    })
}

/// Grouped-query attention without biases or q/k norms (Mistral, Mixtral, Phi-3).
fn plain_gqa(g: &Gqa, fused_qkv: bool) -> Attn {
    Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: false,
        o_bias: false,
        fused_qkv,
        qk_norm: false,
        sinks: false,
        output_gate: false,
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

fn qwen(cfg: &Config<'_>, base: Base, qwen3: bool) -> Result<Arch, HfError> {
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
        biased_gqa(cfg, &g, true)?
    } else {
        // transformers' Qwen2 always has q/k/v biases and never an o_proj bias.
        Attn::Gqa {
            kv_heads: g.kv_heads,
            head_dim: g.head_dim,
            qkv_bias: true,
            o_bias: false,
            fused_qkv: false,
            qk_norm: false,
            sinks: false,
            output_gate: false,
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
    // `num_key_value_heads: int = 4`; no `head_dim` field (the attention code's getattr).
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(4),
        kv_heads_null: false,
        head_dim: Fallback::Derived,
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = biased_gqa(cfg, &g, true)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Qwen3Moe, attn, act, tied);

    let experts = experts(cfg, &["num_experts", "num_local_experts"], 0, 128)?;
    if experts > 0 {
        let sparse = sparse_step(cfg, arch.layers.len() as u64)?;
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            layer.sparse = sparse(i as u64);
        }
    }
    if arch.layers.iter().any(|l| l.sparse) {
        arch.moe = Some(moe(
            cfg,
            experts,
            MoeSpec {
                ffn_key: "moe_intermediate_size",
                ffn_default: 768,
                top_k_default: Some(8),
                shared_experts: 0,
                shared_bias: false,
                names: MoeNames::Mlp,
                router_format: "bf16",
                score_bias: false,
            },
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

/// Qwen2-MoE (`Qwen2MoeConfig`, `modeling_qwen2_moe.py`): Qwen2's biased q/k/v, routed
/// experts on the sparse layers (Qwen3-MoE's rule) plus a shared expert scaled by a sigmoid
/// gate, as Qwen3-Next's; windows only with `use_sliding_window`.
fn qwen2_moe(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int | None = 16`, which the attention uses as is (a null would
    // break it); no `head_dim` field (the attention code's getattr).
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(16),
        kv_heads_null: false,
        head_dim: Fallback::Derived,
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: cfg.flag("qkv_bias", true)?,
        o_bias: false,
        fused_qkv: false,
        qk_norm: false,
        sinks: false,
        output_gate: false,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Qwen2Moe, attn, act, tied);
    let experts = experts(cfg, &["num_experts"], 0, 60)?;
    if experts > 0 {
        let sparse = sparse_step(cfg, arch.layers.len() as u64)?;
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            layer.sparse = sparse(i as u64);
        }
    }
    if arch.layers.iter().any(|l| l.sparse) {
        arch.moe = Some(gated_shared_moe(cfg, experts, (1408, Some(4), 5632))?);
    }
    if arch.layers.iter().any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, false, false)?);
    }
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers)?;
    if cfg.flag("use_sliding_window", false)?
        && let Some(w) = window(cfg, Some(4096))?
    {
        let slides = match types {
            Some(t) => t,
            None => {
                let below = cfg.int_or("max_window_layers", 0, 28)?;
                cfg.default_used(
                    "layer_types",
                    format!("sliding_attention on the even layers below {below}"),
                );
                (0..layers as u64)
                    .map(|i| i % 2 == 0 && i < below)
                    .collect()
            }
        };
        set_windows(&mut arch, Some(w), |i| slides[i]);
    }
    Ok(arch)
}

/// Qwen2-MoE's and Qwen3-Next's sparse MLP: routed experts of `moe_intermediate_size` and one
/// shared expert of `shared_expert_intermediate_size` scaled by its sigmoid gate; `defaults`
/// are the class's expert width, `num_experts_per_tok` and shared width.
fn gated_shared_moe(
    cfg: &Config<'_>,
    experts: u64,
    (ffn_default, top_k_default, shared_default): (u64, Option<u64>, u64),
) -> Result<Moe, HfError> {
    let moe = moe(
        cfg,
        experts,
        MoeSpec {
            ffn_key: "moe_intermediate_size",
            ffn_default,
            top_k_default,
            shared_experts: 0,
            shared_bias: false,
            names: MoeNames::Mlp,
            router_format: "bf16",
            score_bias: false,
        },
    )?;
    let shared = cfg.int_or("shared_expert_intermediate_size", 1, shared_default)?;
    Ok(Moe {
        gated_shared: Some(shared),
        ..moe
    })
}

/// Qwen3-MoE's and Qwen3-Next's sparse layers (`decoder_sparse_step`, `mlp_only_layers`,
/// read when there are experts): whether layer `i` is sparse.
fn sparse_step(cfg: &Config<'_>, layers: u64) -> Result<impl Fn(u64) -> bool, HfError> {
    let step = cfg.int_or("decoder_sparse_step", 1, 1)?;
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
    Ok(move |i: u64| !mlp_only.contains(&i) && (i + 1).is_multiple_of(step))
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

/// What a type's sparse MLP reads beyond the expert count.
struct MoeSpec {
    /// The key of each expert's width.
    ffn_key: &'static str,
    /// Its class default.
    ffn_default: u64,
    /// The class default of `num_experts_per_tok`; `None` when the class has none (DeepSeek-V2:
    /// `num_experts_per_tok: int | None = None`).
    top_k_default: Option<u64>,
    shared_experts: u64,
    shared_bias: bool,
    names: MoeNames,
    router_format: &'static str,
    score_bias: bool,
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
        shared_experts: spec.shared_experts,
        shared_bias: spec.shared_bias,
        names: spec.names,
        router_format: spec.router_format,
        score_bias: spec.score_bias,
        gated_shared: None,
    })
}

fn mixtral(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let g = gqa(cfg, base, MISTRAL_GQA)?;
    let attn = plain_gqa(&g, false);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Mixtral, attn, act, tied);
    let experts = experts(cfg, &["num_local_experts", "num_experts"], 1, 8)?;
    arch.moe = Some(moe(
        cfg,
        experts,
        MoeSpec {
            ffn_key: "intermediate_size",
            ffn_default: Sizes::of(ModelType::Mixtral).ffn,
            top_k_default: Some(2),
            shared_experts: 0,
            shared_bias: false,
            names: MoeNames::Mixtral,
            router_format: "bf16",
            score_bias: false,
        },
    )?);
    for layer in &mut arch.layers {
        layer.sparse = true;
    }
    let w = window(cfg, None)?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

fn phi3(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int | None = None`; no `head_dim` field (the attention code's
    // `getattr(config, "head_dim", hidden // heads)`, which a null would break).
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = plain_gqa(&g, true);
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Phi3, attn, act, tied);
    arch.dense = Some(dense(cfg, false, true)?);
    let w = window(cfg, None)?;
    set_windows(&mut arch, w, |_| true);
    Ok(arch)
}

/// Phi-1, Phi-1.5 and Phi-2 (`PhiConfig`, `modeling_phi.py`): one LayerNorm (with bias) per
/// layer feeding attention and a plain MLP in parallel, biases on every projection and on
/// `lm_head`, `self_attn.dense` for the output projection and `model.final_layernorm`.
fn phi(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let defaults = GqaDefaults {
        head_dim_null: false,
        ..LLAMA_GQA
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: true,
        o_bias: true,
        fused_qkv: false,
        qk_norm: false,
        sinks: false,
        output_gate: false,
    };
    if cfg.flag("qk_layernorm", false)? {
        return Err(cfg.refused(
            "qk_layernorm",
            "is true: LayerNorms of q and k per head are not modelled for phi",
        ));
    }
    let act = act(cfg, "hidden_act", "gelu_new")?;
    if act != Act::Gelu {
        // The plain MLP's activation is an op of its own; only GELU's is modelled.
        return Err(cfg.refused(
            "hidden_act",
            "is not a gelu variant: phi's plain (not gated) MLP is modelled with GELU only",
        ));
    }
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Phi, attn, act, tied);
    arch.dense = Some(Dense {
        ffn: cfg.int_or("intermediate_size", 1, Sizes::of(ModelType::Phi).ffn)?,
        bias: true,
        fused: false,
    });
    Ok(arch)
}

/// Gemma 1 (`GemmaConfig`): Llama's layer with GeGLU, `head_dim` 256, embeddings scaled by
/// sqrt(hidden), tied; no window, no extra norms, no softcap.
fn gemma1(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 16`, `head_dim: int = 256`: strict, null refused.
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(16),
        kv_heads_null: false,
        head_dim: Fallback::Fixed(256),
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = biased_gqa(cfg, &g, false)?;
    let act = act(cfg, "hidden_act", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(ModelType::Gemma, attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    arch.embed_scale = true;
    Ok(arch)
}

fn gemma2(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    base.check_divisible(cfg)?;
    // transformers' default: layer i slides when (i + 1) % 2 == 1, i.e. the even layers.
    let types = Gemma {
        qk_norm: false,
        softcap_default: Some("30.0"),
        sliding_default: "sliding_attention on even layers",
        slides: &|i| i % 2 == 0,
    };
    gemma(cfg, base, types)
}

/// `gemma3_text` (Gemma3TextConfig): Gemma 2's layout with per-head RMS norms on q and k
/// (`q_norm`, `k_norm`, `[head_dim]` each), no final softcap by default and one full-attention
/// layer in every `sliding_window_pattern` (6, the class's backward-compatible default).
fn gemma3_text(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    let pattern = cfg.int_or("sliding_window_pattern", 1, 6)?;
    let slides = |i: usize| !(i as u64 + 1).is_multiple_of(pattern);
    let kind = Gemma {
        qk_norm: true,
        softcap_default: None,
        sliding_default: "sliding_attention unless (i + 1) % sliding_window_pattern == 0",
        slides: &slides,
    };
    gemma(cfg, base, kind)
}

/// What tells the Gemma generations apart in bytes.
struct Gemma<'a> {
    qk_norm: bool,
    /// `final_logit_softcapping` when absent: `Some(default)` adds the softcap node.
    softcap_default: Option<&'static str>,
    /// The default `layer_types`, as reported.
    sliding_default: &'static str,
    slides: &'a dyn Fn(usize) -> bool,
}

fn gemma(cfg: &Config<'_>, base: Base, kind: Gemma<'_>) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 4`, `head_dim: int = 256`: strict, null refused.
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(4),
        kv_heads_null: false,
        head_dim: Fallback::Fixed(256),
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = biased_gqa(cfg, &g, kind.qk_norm)?;
    let act = act(cfg, "hidden_activation", "gelu_pytorch_tanh")?;
    let tied = cfg.flag("tie_word_embeddings", true)?;
    let mut arch = base.arch(cfg.model(), attn, act, tied);
    arch.dense = Some(dense(cfg, false, false)?);
    arch.sandwich_norms = true;
    arch.embed_scale = true;
    arch.final_softcap = match cfg.number("final_logit_softcapping")? {
        Got::Value(_) => true,
        Got::Null => false,
        Got::Missing => match kind.softcap_default {
            Some(d) => {
                cfg.default_used("final_logit_softcapping", d);
                true
            }
            None => false,
        },
    };
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers)?;
    let w = window(cfg, Some(4096))?;
    let types = match types {
        Some(t) => t,
        None => {
            // A default used only when there is a window to slide over.
            if w.is_some() {
                cfg.default_used("layer_types", kind.sliding_default);
            }
            (0..layers).map(kind.slides).collect()
        }
    };
    set_windows(&mut arch, w, |i| types[i]);
    Ok(arch)
}

/// `gpt_oss` (GptOssConfig, `modeling_gpt_oss.py`): biased attention with a sink logit per
/// head, every layer sparse (a biased router, fused expert tensors with biases), windows on
/// the even layers by default.
fn gpt_oss(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 8`, `head_dim: int = 64`: strict, null refused.
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(8),
        kv_heads_null: false,
        head_dim: Fallback::Fixed(64),
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let bias = cfg.flag("attention_bias", true)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm: false,
        sinks: true,
        output_gate: false,
    };
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::GptOss, attn, Act::Silu, tied);
    let experts = experts(cfg, &["num_local_experts", "num_experts"], 1, 128)?;
    arch.moe = Some(moe(
        cfg,
        experts,
        MoeSpec {
            ffn_key: "intermediate_size",
            ffn_default: Sizes::of(ModelType::GptOss).ffn,
            top_k_default: Some(4),
            shared_experts: 0,
            shared_bias: false,
            names: MoeNames::GptOss,
            router_format: "bf16",
            score_bias: false,
        },
    )?);
    for layer in &mut arch.layers {
        layer.sparse = true;
    }
    let layers = arch.layers.len();
    let types = layer_types(cfg, layers)?;
    let w = window(cfg, Some(128))?;
    let types = match types {
        Some(t) => t,
        None => {
            // GptOssConfig: layer i slides when (i + 1) % 2 == 1, i.e. the even layers.
            if w.is_some() {
                cfg.default_used("layer_types", "sliding_attention on even layers");
            }
            (0..layers).map(|i| i % 2 == 0).collect()
        }
    };
    set_windows(&mut arch, w, |i| types[i]);
    Ok(arch)
}

/// Llama 4's language model (`Llama4TextConfig`, `modeling_llama4.py`): every layer's MLP is
/// sparse (`moe_layers`; routed experts with one shared expert) or dense
/// (`intermediate_size_mlp`); the rotary layers (`no_rope_layers` nonzero) use chunked
/// attention, the others are global NoPE layers.
fn llama4_text(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 8` and `head_dim: int = 128`, both filled in by
    // `__post_init__` when None.
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(8),
        kv_heads_null: true,
        head_dim: Fallback::Fixed(128),
        head_dim_null: true,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = biased_gqa(cfg, &g, false)?;
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Llama4Text, attn, act, tied);
    arch.mlp_module = "feed_forward";
    let layers = arch.layers.len();

    let sparse = match cfg.ints("moe_layers")? {
        Some(listed) => {
            if let Some(&bad) = listed.iter().find(|&&i| i >= layers as u64) {
                return Err(cfg.contradiction(format!(
                    "`moe_layers` names layer {bad} but `num_hidden_layers` is {layers}"
                )));
            }
            (0..layers).map(|i| listed.contains(&(i as u64))).collect()
        }
        None => {
            let step = cfg.int_or("interleave_moe_layer_step", 1, 1)?;
            cfg.default_used(
                "moe_layers",
                format!("every layer i with (i + 1) % {step} == 0"),
            );
            (0..layers as u64)
                .map(|i| (i + 1).is_multiple_of(step))
                .collect::<Vec<bool>>()
        }
    };
    if sparse.iter().any(|&s| s) {
        let experts = experts(cfg, &["num_local_experts"], 1, 16)?;
        arch.moe = Some(moe(
            cfg,
            experts,
            MoeSpec {
                ffn_key: "intermediate_size",
                ffn_default: Sizes::of(ModelType::Llama4Text).ffn,
                top_k_default: Some(1),
                shared_experts: 1,
                shared_bias: false,
                names: MoeNames::Llama4,
                router_format: "bf16",
                score_bias: false,
            },
        )?);
    }
    if sparse.iter().any(|&s| !s) {
        arch.dense = Some(Dense {
            ffn: cfg.int_or("intermediate_size_mlp", 1, 16384)?,
            bias: false,
            fused: false,
        });
    }

    // `no_rope_layers` falsy (absent, null or []): a NoPE layer every
    // `no_rope_layer_interval`-th layer; the attention indexes it by layer, so it must cover
    // every layer.
    let rope: Vec<bool> = match cfg.ints("no_rope_layers")? {
        Some(listed) if !listed.is_empty() => {
            if listed.len() < layers {
                return Err(cfg.contradiction(format!(
                    "`no_rope_layers` has {} entries but `num_hidden_layers` is {layers}",
                    listed.len()
                )));
            }
            listed[..layers].iter().map(|&r| r != 0).collect()
        }
        _ => {
            let interval = cfg.int_or("no_rope_layer_interval", 1, 4)?;
            cfg.default_used(
                "no_rope_layers",
                format!("NoPE on every layer i with (i + 1) % {interval} == 0"),
            );
            (0..layers as u64)
                .map(|i| !(i + 1).is_multiple_of(interval))
                .collect()
        }
    };
    let chunk = match cfg.int("attention_chunk_size", 1, u64::MAX)? {
        Got::Value(v) => Some(v),
        Got::Null => None,
        Got::Missing => {
            cfg.default_used("attention_chunk_size", 8192);
            Some(8192)
        }
    };
    let chunked: Vec<bool> = match cfg.strings("layer_types")? {
        Some(types) => {
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
                    "full_attention" => Ok(false),
                    "chunked_attention" if chunk.is_some() => Ok(true),
                    "chunked_attention" => Err(cfg.contradiction(format!(
                        "`layer_types` entry {i} is chunked_attention but `attention_chunk_size` is null"
                    ))),
                    other => Err(cfg.refused(
                        "layer_types",
                        format!(
                            "entry {i} is `{other}`, which is not modelled for llama4_text (supported: full_attention, chunked_attention)"
                        ),
                    )),
                })
                .collect::<Result<_, _>>()?
        }
        None => rope.iter().map(|&r| r && chunk.is_some()).collect(),
    };
    for (i, layer) in arch.layers.iter_mut().enumerate() {
        layer.sparse = sparse[i];
        layer.nope = !rope[i];
    }
    // A chunked layer attends within its chunk, so its cache holds at most `chunk` tokens per
    // sequence: a window, as far as bytes go.
    set_windows(&mut arch, chunk, |i| chunked[i]);
    arch.chunked_attention = arch.window.is_some();
    arch.qk_weightless_norm = cfg.flag("use_qk_norm", true)?;
    // Published configs write a number here (Llama-4-Scout: 4); the attention tests its truth.
    arch.nope_temperature = match cfg.value("attn_temperature_tuning") {
        Got::Missing => {
            cfg.default_used("attn_temperature_tuning", true);
            true
        }
        Got::Value(serde_json::Value::Bool(b)) => *b,
        Got::Value(v) if v.as_u64().is_some() => v.as_u64() != Some(0),
        Got::Value(v) => {
            return Err(cfg.bad(
                "attn_temperature_tuning",
                "true, false or a whole number",
                v,
            ));
        }
        Got::Null => {
            return Err(cfg.bad(
                "attn_temperature_tuning",
                "true, false or a whole number",
                &serde_json::Value::Null,
            ));
        }
    };
    Ok(arch)
}

/// The defaults that tell DeepSeek-V2 and DeepSeek-V3 (`DeepseekV2Config`,
/// `DeepseekV3Config`) apart in bytes.
struct Deepseek {
    experts: u64,
    shared_experts: u64,
    top_k: Option<u64>,
    moe_ffn: u64,
    first_dense: u64,
    /// V2 reads `mlp_bias`; V3 has no such key (no MLP biases).
    mlp_bias_key: bool,
    /// V3: the router's f32 `e_score_correction_bias`, and `num_nextn_predict_layers`
    /// (default 1) MTP layers.
    v3: bool,
}

const DEEPSEEK_V2: Deepseek = Deepseek {
    experts: 64,
    shared_experts: 2,
    top_k: None,
    moe_ffn: 1407,
    first_dense: 0,
    mlp_bias_key: true,
    v3: false,
};

const DEEPSEEK_V3: Deepseek = Deepseek {
    experts: 256,
    shared_experts: 1,
    top_k: Some(8),
    moe_ffn: 2048,
    first_dense: 3,
    mlp_bias_key: false,
    v3: true,
};

fn deepseek(cfg: &Config<'_>, base: Base, d: &Deepseek) -> Result<Arch, HfError> {
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
    let mut arch = base.arch(cfg.model(), attn, act, tied);
    let mlp_bias = d.mlp_bias_key && cfg.flag("mlp_bias", false)?;

    let experts = match cfg.int_alias(&["n_routed_experts", "num_experts"], 1)? {
        (Got::Value(v), _) => Some(v),
        // DeepSeek's code: no routed experts, every layer dense.
        (Got::Null, _) => None,
        (Got::Missing, key) => {
            cfg.default_used(key, d.experts);
            Some(d.experts)
        }
    };
    if d.v3 {
        // DeepSeek's checkpoints store the MTP layers as model.layers.<layers + j>.
        let mtp = cfg.int_or_in("num_nextn_predict_layers", 0, MAX_LAYERS, 1)?;
        arch.mtp = vec![
            Layer {
                sliding: false,
                sparse: false,
                nope: false,
                linear: false,
            };
            mtp as usize
        ];
    }
    // DeepseekV2Config's default is "greedy" (no bias); only "noaux_tc" changes a byte, so the
    // default is not reported.
    let noaux_tc = !d.v3
        && match cfg.value("topk_method") {
            Got::Value(Value::String(m)) => m == "noaux_tc",
            Got::Value(v) => return Err(cfg.bad("topk_method", "a string", v)),
            Got::Missing | Got::Null => false,
        };
    if let Some(experts) = experts {
        let first_dense = cfg.int_or("first_k_dense_replace", 0, d.first_dense)?;
        let freq = cfg.int_or("moe_layer_freq", 1, 1)?;
        let sparse = |i: u64| i >= first_dense && i.is_multiple_of(freq);
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            layer.sparse = sparse(i as u64);
        }
        for (j, layer) in arch.mtp.iter_mut().enumerate() {
            layer.sparse = sparse(base.layers + j as u64);
        }
        if arch.layers.iter().chain(&arch.mtp).any(|l| l.sparse) {
            // DeepSeek's code: null, no shared experts.
            let shared = match cfg.int("n_shared_experts", 0, u64::MAX)? {
                Got::Value(v) => v,
                Got::Null => 0,
                Got::Missing => {
                    cfg.default_used("n_shared_experts", d.shared_experts);
                    d.shared_experts
                }
            };
            arch.moe = Some(moe(
                cfg,
                experts,
                MoeSpec {
                    ffn_key: "moe_intermediate_size",
                    ffn_default: d.moe_ffn,
                    top_k_default: d.top_k,
                    shared_experts: shared,
                    shared_bias: mlp_bias,
                    names: MoeNames::Mlp,
                    router_format: "f32",
                    // V3 always; V2 with noaux_tc routing (Kimi-VL's language model), as
                    // vLLM 0.19's DeepseekV2MoE builds the bias (deepseek_v2.py:268-273).
                    score_bias: d.v3 || noaux_tc,
                },
            )?);
        }
    }
    if arch.layers.iter().chain(&arch.mtp).any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, mlp_bias, false)?);
    }
    Ok(arch)
}

/// `glm4_moe` (Glm4MoeConfig, `modeling_glm4_moe.py`; vLLM's `glm4_moe_mtp.py` for the MTP
/// layers): grouped-query attention with q/k/v biases and optional q/k norms, the first
/// `first_k_dense_replace` layers dense, the others DeepSeek-V3's sparse MLP (routed and shared
/// experts, a router with an f32 score-correction bias), and DeepSeek-V3's MTP layers.
fn glm4_moe(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 8`: strict; no `head_dim` field (the attention's getattr).
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(8),
        kv_heads_null: false,
        head_dim: Fallback::Derived,
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: cfg.flag("attention_bias", false)?,
        o_bias: false,
        fused_qkv: false,
        qk_norm: cfg.flag("use_qk_norm", false)?,
        sinks: false,
        output_gate: false,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Glm4Moe, attn, act, tied);
    let mtp = match cfg.int_alias(&["num_nextn_predict_layers", "num_mtp_layers"], 0)? {
        (Got::Value(v), _) if v <= MAX_LAYERS => v,
        (Got::Value(v), key) => {
            return Err(cfg.bad(
                key,
                format!("a whole number from 0 to {MAX_LAYERS}"),
                &serde_json::Value::from(v),
            ));
        }
        (Got::Null, key) => return Err(cfg.null_int(key, 0)),
        (Got::Missing, key) => {
            cfg.default_used(key, 1);
            1
        }
    };
    arch.mtp = vec![
        Layer {
            sliding: false,
            sparse: false,
            nope: false,
            linear: false,
        };
        mtp as usize
    ];
    let experts = experts(cfg, &["n_routed_experts"], 1, 128)?;
    let first_dense = cfg.int_or("first_k_dense_replace", 0, 1)?;
    for (i, layer) in arch.layers.iter_mut().chain(&mut arch.mtp).enumerate() {
        layer.sparse = i as u64 >= first_dense;
    }
    if arch.layers.iter().chain(&arch.mtp).any(|l| l.sparse) {
        let shared = cfg.int_or("n_shared_experts", 0, 1)?;
        arch.moe = Some(moe(
            cfg,
            experts,
            MoeSpec {
                ffn_key: "moe_intermediate_size",
                ffn_default: 1408,
                top_k_default: Some(8),
                shared_experts: shared,
                shared_bias: false,
                names: MoeNames::Mlp,
                // Glm4MoeTopkRouter keeps its weight in float32, so the logits are f32.
                router_format: "f32",
                score_bias: true,
            },
        )?);
    }
    if arch.layers.iter().chain(&arch.mtp).any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, false, false)?);
    }
    Ok(arch)
}

/// `qwen3_next` (Qwen3NextConfig, `modeling_qwen3_next.py`; vLLM 0.19's `qwen3_next.py` and
/// `qwen3_next_mtp.py` for the MTP layers and the recurrent state): Gated DeltaNet layers with
/// full-attention layers among them (every `full_attention_interval`-th by default), the
/// attention with q/k norms and a sigmoid output gate, every layer sparse by default with one
/// gated shared expert, and MTP layers the config does not announce.
fn qwen3_next(cfg: &Config<'_>, base: Base) -> Result<Arch, HfError> {
    // `num_key_value_heads: int = 2`, `head_dim: int = 256`: strict, null refused.
    let defaults = GqaDefaults {
        kv_heads: Fallback::Fixed(2),
        kv_heads_null: false,
        head_dim: Fallback::Fixed(256),
        head_dim_null: false,
    };
    let g = gqa(cfg, base, defaults)?;
    // transformers puts `attention_bias` on all four projections (vLLM 0.19 reads `qkv_bias`
    // instead and skips the stored biases; the bytes are the checkpoint's).
    let bias = cfg.flag("attention_bias", false)?;
    let attn = Attn::Gqa {
        kv_heads: g.kv_heads,
        head_dim: g.head_dim,
        qkv_bias: bias,
        o_bias: bias,
        fused_qkv: false,
        qk_norm: true,
        sinks: false,
        output_gate: true,
    };
    let act = act(cfg, "hidden_act", "silu")?;
    let tied = cfg.flag("tie_word_embeddings", false)?;
    let mut arch = base.arch(ModelType::Qwen3Next, attn, act, tied);
    arch.mtp_names = MtpNames::Qwen3Next;

    let layers = arch.layers.len();
    let linear: Vec<bool> = match cfg.strings("layer_types")? {
        Some(types) => {
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
                    "linear_attention" => Ok(true),
                    "full_attention" => Ok(false),
                    // vLLM's Qwen3NextDecoderLayer raises on any other type.
                    other => Err(cfg.refused(
                        "layer_types",
                        format!(
                            "entry {i} is `{other}`, which Qwen3-Next does not have (supported: linear_attention, full_attention)"
                        ),
                    )),
                })
                .collect::<Result<_, _>>()?
        }
        None => {
            // Qwen3NextConfig.__post_init__: `(i + 1) % interval` truthy is linear; an
            // interval of 0 would divide by zero there, so it is refused here.
            let interval = cfg.int_or("full_attention_interval", 1, 4)?;
            cfg.default_used(
                "layer_types",
                format!(
                    "full_attention when (i + 1) % {interval} == 0, linear_attention otherwise"
                ),
            );
            (0..layers as u64)
                .map(|i| !(i + 1).is_multiple_of(interval))
                .collect()
        }
    };
    for (layer, &l) in arch.layers.iter_mut().zip(&linear) {
        layer.linear = l;
    }
    if linear.iter().any(|&l| l) {
        let k_heads = cfg.int_or("linear_num_key_heads", 1, 16)?;
        let v_heads = cfg.int_or("linear_num_value_heads", 1, 32)?;
        if !v_heads.is_multiple_of(k_heads) {
            // fix_query_key_value_ordering views in_proj_qkvz's output as [k_heads,
            // 2 x k_head_dim + 2 x v_head_dim x v_heads / k_heads].
            return Err(cfg.contradiction(format!(
                "`linear_num_value_heads` {v_heads} is not a multiple of `linear_num_key_heads` {k_heads} (each key head serves a whole group of value heads)"
            )));
        }
        arch.delta_net = Some(DeltaNet {
            k_heads,
            v_heads,
            k_head_dim: cfg.int_or("linear_key_head_dim", 1, 128)?,
            v_head_dim: cfg.int_or("linear_value_head_dim", 1, 128)?,
            conv_kernel: cfg.int_or("linear_conv_kernel_dim", 1, 4)?,
        });
    }

    // vLLM's Qwen3NextMultiTokenPredictor: `getattr(config, "num_nextn_predict_layers", 1)`
    // full-attention layers; the published checkpoints store one although config.json says
    // nothing of it.
    let mtp = cfg.int_or_in("num_nextn_predict_layers", 0, MAX_LAYERS, 1)?;
    arch.mtp = vec![
        Layer {
            sliding: false,
            sparse: false,
            nope: false,
            linear: false,
        };
        mtp as usize
    ];
    let experts = experts(cfg, &["num_experts"], 0, 512)?;
    if experts > 0 {
        let sparse = sparse_step(cfg, layers as u64)?;
        for (i, layer) in arch.layers.iter_mut().enumerate() {
            layer.sparse = sparse(i as u64);
        }
        // vLLM's extract_layer_index reads j from `mtp.layers.<j>`: an MTP layer is sparse
        // as decoder layer j would be.
        for (j, layer) in arch.mtp.iter_mut().enumerate() {
            layer.sparse = sparse(j as u64);
        }
    }
    if arch.layers.iter().chain(&arch.mtp).any(|l| l.sparse) {
        arch.moe = Some(gated_shared_moe(cfg, experts, (512, Some(10), 512))?);
    }
    if arch.layers.iter().chain(&arch.mtp).any(|l| !l.sparse) {
        arch.dense = Some(dense(cfg, false, false)?);
    }
    Ok(arch)
}
