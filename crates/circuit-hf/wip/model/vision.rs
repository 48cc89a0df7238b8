//! Key tables of the vision towers a multimodal config nests in `vision_config`. They are
//! counted as weights (no activations): the step the planner plans is the language model's.

use super::*;

const HEADS_FREE: &str =
    "the projections are hidden_size square whatever the head count; no weight effect";

pub(super) static SIGLIP: &[KeyInfo] = &[
    read("hidden_size", "default 768"),
    read("intermediate_size", "default 3072"),
    read("num_hidden_layers", "default 12; at most 4096"),
    read("num_channels", "default 3"),
    read(
        "image_size",
        "default 224: (image_size / patch_size)^2 position embeddings",
    ),
    read("patch_size", "default 16"),
    read(
        "vision_use_head",
        "default true: the attention-pooling head (probe, attention, layernorm, mlp)",
    ),
    ignored("num_attention_heads", HEADS_FREE),
    ignored("hidden_act", NO_MEMORY),
    ignored("layer_norm_eps", NO_MEMORY),
];

pub(super) static CLIP: &[KeyInfo] = &[
    read("hidden_size", "default 768"),
    read("intermediate_size", "default 3072"),
    read("num_hidden_layers", "default 12; at most 4096"),
    read("num_channels", "default 3"),
    read(
        "image_size",
        "default 224: (image_size / patch_size)^2 + 1 position embeddings",
    ),
    read("patch_size", "default 32"),
    ignored("num_attention_heads", HEADS_FREE),
    ignored(
        "projection_dim",
        "CLIPVisionModel has no projection (CLIPVisionModelWithProjection has)",
    ),
    ignored(
        "vocab_size",
        "a legacy key of some vision configs; a vision tower has no vocabulary",
    ),
    ignored("hidden_act", NO_MEMORY),
    ignored("layer_norm_eps", NO_MEMORY),
    ignored("initializer_factor", NO_MEMORY),
    ignored("dropout", NO_MEMORY),
];

pub(super) static PIXTRAL: &[KeyInfo] = &[
    read("hidden_size", "default 1024"),
    read("intermediate_size", "default 4096"),
    read("num_hidden_layers", "default 24; at most 4096"),
    read("num_channels", "default 3"),
    read("patch_size", "default 16"),
    ignored(
        "image_size",
        "Pixtral has rotary 2-D positions, no position table; no weight effect",
    ),
    ignored("num_attention_heads", HEADS_FREE),
    ignored(
        "head_dim",
        "the projections are hidden_size square; the head width only shapes the rotary table",
    ),
    ignored("hidden_act", NO_MEMORY),
];

pub(super) static LLAMA4_VISION: &[KeyInfo] = &[
    read("hidden_size", "default 768"),
    read("intermediate_size", "default 5632"),
    read("num_hidden_layers", "default 34; at most 4096"),
    read(
        "num_attention_heads",
        "default 16; the projections are heads x (hidden_size / heads) wide",
    ),
    read("num_channels", "default 3"),
    read(
        "image_size",
        "default 448: (image_size / patch_size)^2 + 1 positional embeddings",
    ),
    read("patch_size", "default 14"),
    read(
        "vision_output_dim",
        "default 7680: the multi_modal_projector's input",
    ),
    read(
        "projector_input_dim",
        "default 4096: the vision adapter's fc1 output",
    ),
    read(
        "projector_output_dim",
        "default 4096: the vision adapter's fc2",
    ),
    ignored(
        "pixel_shuffle_ratio",
        "the vision adapter's fc1 reads intermediate_size inputs (transformers' Llama4VisionMLP2); no weight effect",
    ),
    ignored(
        "multi_modal_projector_bias",
        "transformers' Llama4MultiModalProjector has no bias whatever it says",
    ),
    ignored("norm_eps", NO_MEMORY),
    ignored("hidden_act", NO_MEMORY),
    ignored("vision_feature_layer", NO_MEMORY),
    ignored("vision_feature_select_strategy", NO_MEMORY),
    ignored("projector_dropout", NO_MEMORY),
];

