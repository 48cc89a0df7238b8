//! Key tables of the multimodal types: their own keys only. The language model's keys are
//! those of the `text_config`'s type, the vision tower's those of the `vision_config`'s type
//! (`vision.rs`).

use super::*;

const TOKEN: &str = "a token id; no weight or cache effect";
const TIE_MM: &str = "the language model's tie_word_embeddings when text_config has none";

pub(super) static GEMMA3: &[KeyInfo] = &[
    read(
        "text_config",
        "the language model (model_type gemma3_text when absent), planned as a gemma3_text model",
    ),
    read(
        "vision_config",
        "the SigLIP vision tower (model_type siglip_vision_model), counted as weights only, and the multi_modal_projector",
    ),
    read("tie_word_embeddings", TIE_MM),
    ignored(
        "mm_tokens_per_image",
        "image tokens per image (the projector's pooling); no weight or cache effect",
    ),
    ignored("boi_token_index", TOKEN),
    ignored("eoi_token_index", TOKEN),
    ignored("image_token_index", TOKEN),
];

pub(super) static LLAMA4: &[KeyInfo] = &[
    read(
        "text_config",
        "the language model (model_type llama4_text when absent), planned as a llama4_text model",
    ),
    read(
        "vision_config",
        "the vision model (model_type llama4_vision_model), counted as weights only, and the multi_modal_projector",
    ),
    read("tie_word_embeddings", TIE_MM),
    ignored("boi_token_index", TOKEN),
    ignored("eoi_token_index", TOKEN),
    ignored("image_token_index", TOKEN),
];

pub(super) static MISTRAL3: &[KeyInfo] = &[
    read(
        "text_config",
        "the language model (model_type mistral when absent), planned as its model_type",
    ),
    read(
        "vision_config",
        "the Pixtral vision tower (model_type pixtral), counted as weights only, and the multi_modal_projector",
    ),
    read("tie_word_embeddings", TIE_MM),
    read(
        "multimodal_projector_bias",
        "default false; true adds linear_1 and linear_2 biases",
    ),
    read(
        "spatial_merge_size",
        "default 2: the patch merger's input is vision hidden_size x size^2",
    ),
    read(
        "vision_feature_layer",
        "default -1; a list of n layers makes linear_1's input n x the vision hidden_size",
    ),
    ignored("projector_hidden_act", NO_MEMORY),
    ignored("image_token_index", TOKEN),
];

pub(super) static LLAVA: &[KeyInfo] = &[
    read(
        "text_config",
        "the language model (model_type llama when absent), planned as its model_type",
    ),
    read(
        "vision_config",
        "the vision tower (model_type clip_vision_model or siglip_vision_model), counted as weights only, and the multi_modal_projector",
    ),
    read("tie_word_embeddings", TIE_MM),
    read(
        "multimodal_projector_bias",
        "default true: linear_1 and linear_2 biases",
    ),
    read(
        "vision_feature_layer",
        "default -2; a list of n layers makes linear_1's input n x the vision hidden_size (every vision layer is stored either way)",
    ),
    ignored("vision_feature_select_strategy", NO_MEMORY),
    ignored("projector_hidden_act", NO_MEMORY),
    ignored("image_token_index", TOKEN),
    ignored("image_seq_length", NO_MEMORY),
    ignored("ignore_index", NO_MEMORY),
    ignored(
        "vocab_size",
        "legacy copy of text_config's vocab_size; the language model reads text_config",
    ),
];

