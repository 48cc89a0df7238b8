//! [`ModelFacts`]: what an engine profile needs of a model beyond its per-rank circuits, read
//! by the importer from the configuration (values the file gives, or its class's defaults).
//!
//! Invariants: facts describe the whole model, before tensor or pipeline parallelism; the rope
//! sets are the configuration's as written (types and factors), not an engine's reading of
//! them: how far they let a context stretch is each engine's rule.

use circuit_ir::Format;

use crate::EncoderShape;

/// What an engine profile reads of a model besides its circuits.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFacts {
    /// The model type of the language model (`llama`, `gemma3_text`): engines key a few
    /// per-model rules by it.
    pub model_type: String,
    /// The class an engine resolves the configuration to (`architectures`: the multimodal
    /// wrapper's, `Llama4ForConditionalGeneration`, else the causal LM's, `GptOssForCausalLM`);
    /// engine files key per-class settings by it.
    pub architecture: String,
    /// The dtype activations, unquantized weights and (by default) the KV cache are planned in.
    pub dtype: Format,
    /// The quantization method the weights are held in (`mxfp4`, `fp8`, `modelopt`, ...: the
    /// checkpoint's, or the one the engine applies while loading), None when unquantized:
    /// engines choose their kernels by it.
    pub quantization: Option<String>,
    /// `max_position_embeddings` (the class default where the file omits it).
    pub max_position_embeddings: u64,
    /// The rope scaling, as the configuration writes it.
    pub rope: RopeScaling,
    /// The rotary embeddings the decoder layers apply, one per distinct configuration (empty
    /// when no layer rotates): what an engine builds a cos/sin cache for.
    pub rotary: Vec<Rotary>,
    /// The whole vocabulary (a sampler sees every rank's logits gathered).
    pub vocab_size: u64,
    /// Attention heads of the whole model (the tensor-parallel sizes that shard them evenly).
    pub num_attention_heads: u64,
    /// `attention_chunk_size` when the windowed layers attend within chunks (Llama 4's chunked
    /// local attention), None when a window of the circuit is a sliding window.
    pub attention_chunk_size: Option<u64>,
    /// Whether the circuits hold a vision tower (an engine also runs that encoder when it
    /// profiles its memory).
    pub vision_encoder: bool,
    /// The encoder's dummy item and shape, for the towers whose run shape the importer knows.
    pub encoder: Option<EncoderShape>,
    /// Whether the checkpoint itself is quantized (it declares a quantization, as config.json's
    /// `quantization_config` does), as opposed to unquantized or quantized by the engine while
    /// loading: engines choose some code paths by it.
    pub checkpoint_quantized: bool,
}

/// A configuration's rope scaling (`rope_parameters` or `rope_scaling`) over its context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RopeScaling {
    /// One set for every layer, or one per attention-layer type, in file order; empty without
    /// rope scaling.
    pub sets: Vec<RopeSet>,
    /// The top-level `original_max_position_embeddings`, for model types that have the key.
    pub original_max_position_embeddings: Option<u64>,
}

/// A rotary embedding some decoder layers apply. Two layer types whose rotary differs in
/// anything (its scaling, the part of a head it rotates, its base) apply two of them, as
/// Gemma 3's sliding layers (base `rope_local_base_freq`, no scaling) and its global ones (the
/// config's scaling, base `rope_theta`) do.
#[derive(Debug, Clone, PartialEq)]
pub struct Rotary {
    /// Its scaling, as written (`default` without one).
    pub set: RopeSet,
    /// The width of a head it rotates: the head size times `partial_rotary_factor`, rounded
    /// down (multi-head latent attention: `qk_rope_head_dim`).
    pub rotary_dim: u64,
}

/// One rope-scaling set.
#[derive(Debug, Clone, PartialEq)]
pub struct RopeSet {
    /// `rope_type` (or the older `type`); `default` when absent.
    pub rope_type: String,
    /// `factor`, when given and not null (positive and finite: the importer refuses others).
    pub factor: Option<f64>,
    /// Whether the set gives `factor: null` (which resets a factor to 1).
    pub factor_null: bool,
    /// The set's own `original_max_position_embeddings`, when given.
    pub original_max_position_embeddings: Option<u64>,
    /// Whether the set gives `mrope_section`: a multimodal rope (M-RoPE, Qwen2.5-VL's and
    /// Qwen3-VL's language models) rotating positions of three axes, which an engine may cache
    /// over more positions than the context.
    pub mrope_section: bool,
}
