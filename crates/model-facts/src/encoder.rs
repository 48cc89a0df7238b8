//! The shape of a multimodal encoder's run: what an importer reads from a model's config and
//! processor defaults, and what an engine profile sizes the encoder's profile run from. One
//! type, so the importer and the engine profile (which know nothing of each other) share it.
//!
//! Invariants: none beyond the fields' meaning; sizes are per item, per tile or per temporal
//! group as named, before tensor parallelism splits heads and MLP width. A field a tower does
//! not have is its neutral value (no video, no deepstack layer, one feature layer), so the
//! towers modelled before a field existed keep their shapes.

/// What an engine's profile run feeds a multimodal encoder and gets back: the largest dummy
/// image the model's processor makes, cut into tiles, each tile a sequence of the encoder
/// (docs/engines.md, "The multimodal encoder's profile"), and the video item when the model
/// also takes video.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderShape {
    /// Embeddings one image gives the language model: the tiles x the tokens each keeps after
    /// the pixel shuffle, pooling or merge (break and newline tokens between rows excluded,
    /// except LLaVA-NeXT's newline embeddings, which the model writes).
    pub tokens_per_item: u64,
    /// Tiles one image of the largest size is cut into (with the global view).
    pub tiles_per_item: u64,
    /// Rows of one tile's encoder sequence: its patches and the class token.
    pub rows_per_tile: u64,
    /// Pixel values of one tile as the processor hands them to the encoder: channels x
    /// image_size^2, or for a tower of temporal patches (Qwen's) its patches x channels x
    /// temporal_patch_size x patch_size^2 (an image is repeated over the temporal patch).
    pub pixels_per_tile: u64,
    /// The encoder's hidden size (whole on every rank).
    pub hidden: u64,
    /// Its attention heads, before tensor parallelism splits them.
    pub heads: u64,
    /// The size of one head.
    pub head_dim: u64,
    /// Its MLP width, before tensor parallelism splits it.
    pub ffn: u64,
    /// The width of each embedding the encoder hands the language model: the language
    /// model's hidden size, times 1 + [`EncoderShape::deepstack_layers`] when the deepstack
    /// features travel with it (Qwen3-VL concatenates them).
    pub output_hidden: u64,
    /// Whether its attention rotates q and k through float32 complex copies (Llama 4's
    /// `Llama4VisionRotaryEmbedding`, MoonViT's `apply_rope`); SigLIP's and CLIP's attention
    /// have no rotary.
    pub complex_rotary: bool,
    /// Tensors of the MLP's width live at its activation: fc1's output and what the activation
    /// makes, one for a GELU, two for CLIP's QuickGELU (`x * sigmoid(1.702 * x)`); for a gated
    /// MLP, gate and up (two) and the fused activation-and-product (one).
    pub activation_tensors: u64,
    /// The encoder layers the tower runs: up to the deepest feature layer the projector reads.
    pub layers: u64,
    /// Encoder layers whose outputs the projector concatenates (`vision_feature_layer` as a
    /// list), 1 when it reads one layer.
    pub feature_layers: u64,
    /// Encoder rows merged into one token after the encoder (a spatial merge of
    /// `spatial_merge_size`^2 patches: Pixtral's patch merger, Qwen's and MoonViT's mergers),
    /// 1 when every row (or pooled group) is its own token.
    pub merge: u64,
    /// Layers whose outputs a merger of their own also hands the language model (Qwen3-VL's
    /// `deepstack_visual_indexes`), 0 for the other towers.
    pub deepstack_layers: u64,
    /// The largest video the processor makes, when the model also takes video (Qwen2.5-VL,
    /// Qwen3-VL); None for image-only models.
    pub video: Option<VideoShape>,
}

/// A video item of a tower of temporal patches: frames are grouped by the temporal patch size
/// and each group of the largest frame is one grid of patches. How many frames the engine's
/// dummy video has is the engine's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoShape {
    /// Frames of one temporal group (`temporal_patch_size`).
    pub frames_per_group: u64,
    /// Tokens one group gives the language model at the largest frame size.
    pub group_tokens: u64,
    /// Encoder rows (patches) of one group.
    pub group_rows: u64,
    /// Pixel values of one group: its patches x channels x temporal_patch_size x patch_size^2.
    pub group_pixels: u64,
}
