//! The shape of a multimodal encoder's run: what an importer reads from a model's config and
//! processor defaults, and what an engine profile sizes the encoder's profile run from. One
//! type, so the importer and the engine profile (which know nothing of each other) share it.
//!
//! Invariants: none beyond the fields' meaning; sizes are per item or per tile as named, before
//! tensor parallelism splits heads and MLP width.

/// What an engine's profile run feeds a multimodal encoder and gets back: the largest dummy
/// image the model's processor makes, cut into tiles, each tile a sequence of the encoder
/// (docs/engines.md, "The multimodal encoder's profile").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderShape {
    /// Embeddings one image gives the language model: the tiles x the tokens each keeps after
    /// the pixel shuffle or pooling.
    pub tokens_per_item: u64,
    /// Tiles one image of the largest size is cut into (with the global view).
    pub tiles_per_item: u64,
    /// Rows of one tile's encoder sequence: its patches and the class token.
    pub rows_per_tile: u64,
    /// Pixel values of one tile, channels x image_size^2.
    pub pixels_per_tile: u64,
    /// The encoder's hidden size (whole on every rank).
    pub hidden: u64,
    /// Its attention heads, before tensor parallelism splits them.
    pub heads: u64,
    /// The size of one head.
    pub head_dim: u64,
    /// Its MLP width, before tensor parallelism splits it.
    pub ffn: u64,
    /// The width of each embedding the projector writes: the language model's hidden size.
    pub output_hidden: u64,
    /// Whether its attention rotates q and k through float32 complex copies (Llama 4's
    /// `Llama4VisionRotaryEmbedding`); SigLIP's and CLIP's attention have no rotary.
    pub complex_rotary: bool,
    /// Tensors of the MLP's width live at its activation: fc1's output and what the activation
    /// makes, one for a GELU, two for CLIP's QuickGELU (`x * sigmoid(1.702 * x)`).
    pub activation_tensors: u64,
}
