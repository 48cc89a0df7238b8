//! The vision tower of a multimodal checkpoint, counted from its `vision_config`: every tensor
//! the published checkpoint stores for the encoder, its adapter and the projector into the
//! language model, with the shapes the model's transformers code gives them (transformers
//! 5.25.0, `modeling_<type>.py`). The step the planner plans is text-only, so the tower is held
//! as weights only: it is loaded with the model and holds memory, but runs no kernel here.
//!
//! Each tensor also carries how vLLM 0.19 splits it over tensor-parallel ranks ([`Split`], from
//! the layer class the model's vLLM code builds it with), so a rank's tower is its share
//! (`shard_tower` in `parallel.rs`).
//!
//! Invariants: every key of `vision_config` is read, known to leave memory unchanged, or
//! refused (an unknown key is refused), as for the language model's keys; every size is at
//! least 1 and every shape's element count fits a u64 (circuit-ir checks the bytes); a
//! sharded tower's split dims are exact quotients (a size the ranks do not divide is
//! refused, as vLLM's `divide` asserts).

use model_facts::{EncoderShape, TowerBuild};
use serde_json::{Map, Value};

use crate::config::{MAX_LAYERS, render};
use crate::error::HfError;

/// A tensor of the tower, held as weights only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// The op the tensor serves (`linear`, `layer_norm`, `embed`, ...), which decides how a
    /// quantization format stores it.
    pub op: &'static str,
    /// The checkpoint's tensor name; `{i}` stands for the encoder layer in [`VisionTower::layer`].
    pub tensor: String,
    pub shape: Vec<u64>,
    /// How tensor-parallel ranks share it.
    pub split: Split,
}

/// How vLLM 0.19 places a tower tensor on the tensor-parallel ranks, by the layer that holds
/// it (`model_executor/layers/linear.py`; the towers' `mm_encoder_tp_mode` is "weights" by
/// default, `config/multimodal.py`, so they are split, not replicated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// Every rank holds it whole: norms, embeddings, convolutions, plain `nn.Linear` and
    /// `nn.Parameter` tensors, and a `RowParallelLinear`'s bias (added after the reduce).
    Whole,
    /// Split on the first dim, the output features: `ColumnParallelLinear` and
    /// `MergedColumnParallelLinear`, bias included.
    Out,
    /// A q, k or v projection of `QKVParallelLinear` over this many heads (bias included):
    /// split on the first dim by heads, so the heads must divide.
    Heads(u64),
    /// Split on the last dim, the input features: a `RowParallelLinear`'s weight.
    In,
}

/// An encoder of `(hidden, heads, ffn)` running `layers` layers, fed square tiles of `image`
/// pixels and `channels`, writing embeddings of `output_hidden`; one tile per item of one row
/// each, no rotary, one feature layer, no merge, no deepstack and no video until the caller
/// says otherwise.
pub(crate) fn encoder_of_tiles(
    origin: &str,
    image: u64,
    channels: u64,
    (hidden, heads, ffn): (u64, u64, u64),
    layers: u64,
    output_hidden: u64,
) -> Result<EncoderShape, HfError> {
    Ok(EncoderShape {
        tokens_per_item: 1,
        tiles_per_item: 1,
        rows_per_tile: 1,
        pixels_per_tile: image
            .checked_mul(image)
            .and_then(|p| p.checked_mul(channels))
            .ok_or_else(|| too_large(origin))?,
        hidden,
        heads,
        head_dim: hidden / heads,
        ffn,
        output_hidden,
        complex_rotary: false,
        activation_tensors: 2,
        layers,
        feature_layers: 1,
        merge: 1,
        deepstack_layers: 0,
        video: None,
    })
}

/// Llama 4's image processor cuts an image into at most this many tiles of `image_size`
/// (transformers' `Llama4ImageProcessor(Fast)` default `max_patches`, as Llama-4-Scout's and
/// Maverick's `preprocessor_config.json` keep it; config.json does not carry it).
pub(crate) const LLAMA4_MAX_TILES: u64 = 16;

/// The tower's tensors: those stored once and those of each encoder layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VisionTower {
    pub once: Vec<Held>,
    pub layer: Vec<Held>,
    pub layers: u64,
    /// The encoder layers the projector reads: up to the deepest `vision_feature_layer` for
    /// LLaVA's and Mistral 3's towers, every layer for the others. An engine that builds only
    /// what the projector reads ([`TowerBuild::ReadByProjector`]) loads these alone (vLLM 0.19:
    /// `init_vision_tower_for_llava`, `init_vision_tower_for_mistral3`,
    /// `num_hidden_layers_override`).
    pub read_layers: u64,
    /// `once` tensors the projector's features never pass through (LLaVA's CLIP
    /// `post_layernorm`, after the feature layer), which such an engine builds no parameter for
    /// (vLLM 0.19's llava.py: `require_post_norm=False`).
    pub unread: Vec<String>,
    /// The encoder's profile shape, for the towers whose profile is modelled.
    pub encoder: Option<EncoderShape>,
    /// Layers whose features deepstack mergers hand the language model (Qwen3-VL), 0 for the
    /// other towers.
    pub deepstack_layers: u64,
}

impl VisionTower {
    /// A tower of `layers` encoder layers that the projector reads whole.
    pub(crate) fn whole(once: Vec<Held>, layer: Vec<Held>, layers: u64) -> VisionTower {
        VisionTower {
            once,
            layer,
            layers,
            read_layers: layers,
            unread: Vec::new(),
            encoder: None,
            deepstack_layers: 0,
        }
    }

    /// The tower as an engine that builds it as `build` says holds it after loading: whole,
    /// or its layers up to the deepest feature layer without the tensors the projector never
    /// reads (the checkpoint's other tensors are then not loaded).
    pub fn into_built(mut self, build: TowerBuild) -> VisionTower {
        match build {
            TowerBuild::Whole => {}
            TowerBuild::ReadByProjector => {
                self.layers = self.read_layers;
                let unread = std::mem::take(&mut self.unread);
                self.once.retain(|h| !unread.contains(&h.tensor));
            }
        }
        self
    }

    /// Parameters of the whole tower (every layer), checked.
    pub fn params(&self) -> Option<u64> {
        let sum = |held: &[Held]| {
            held.iter().try_fold(0u64, |acc, h| {
                acc.checked_add(h.shape.iter().try_fold(1u64, |p, &d| p.checked_mul(d))?)
            })
        };
        sum(&self.once)?.checked_add(sum(&self.layer)?.checked_mul(self.layers)?)
    }
}

/// How a vision config's key is treated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Read,
    Ignored,
}

/// The keys of `Llama4VisionConfig` (transformers 5.25.0 `configuration_llama4.py`).
const LLAMA4_VISION_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("hidden_size", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_channels", Role::Read),
    ("intermediate_size", Role::Read),
    ("vision_output_dim", Role::Read),
    ("image_size", Role::Read),
    ("patch_size", Role::Read),
    ("projector_input_dim", Role::Read),
    ("projector_output_dim", Role::Read),
    // The projector and adapter are built with `bias=False` whatever this says.
    ("multi_modal_projector_bias", Role::Ignored),
    // The pixel shuffle keeps the element count (no weight depends on it); the tokens an
    // image gives the language model do.
    ("pixel_shuffle_ratio", Role::Read),
    ("hidden_act", Role::Ignored),
    ("norm_eps", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("attention_dropout", Role::Ignored),
    ("projector_dropout", Role::Ignored),
    ("rope_theta", Role::Ignored),
    ("rope_parameters", Role::Ignored),
    ("vision_feature_layer", Role::Ignored),
    ("vision_feature_select_strategy", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// Typed reads of one `vision_config` object, with messages naming `vision_config.<key>`.
pub(crate) struct Reader<'a> {
    pub origin: &'a str,
    pub map: &'a Map<String, Value>,
}

impl Reader<'_> {
    pub fn check_keys(&self, keys: &[(&str, Role)], model_type: &str) -> Result<(), HfError> {
        match self.map.get("model_type") {
            None | Some(Value::Null) => {}
            Some(Value::String(m)) if m == model_type => {}
            Some(other) => {
                return Err(HfError::BadValue {
                    origin: self.origin.to_owned(),
                    key: "vision_config.model_type".to_owned(),
                    expected: format!("`{model_type}`"),
                    found: render(other),
                });
            }
        }
        for key in self.map.keys() {
            if !key.starts_with('_') && !keys.iter().any(|(k, _)| k == key) {
                return Err(HfError::UnknownKey {
                    origin: self.origin.to_owned(),
                    key: format!("vision_config.{key}"),
                    model_type: model_type.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// `true` or `false`; `default` when absent.
    pub fn flag_or(&self, key: &str, default: bool) -> Result<bool, HfError> {
        match self.map.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(HfError::BadValue {
                origin: self.origin.to_owned(),
                key: format!("vision_config.{key}"),
                expected: "true or false".to_owned(),
                found: render(v),
            }),
        }
    }

    /// A number in (0, 1]; `default` when absent.
    pub fn fraction_or(&self, key: &str, default: f64) -> Result<f64, HfError> {
        match self.map.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) if x > 0.0 && x <= 1.0 => Ok(x),
                _ => Err(HfError::BadValue {
                    origin: self.origin.to_owned(),
                    key: format!("vision_config.{key}"),
                    expected: "a number above 0 and at most 1".to_owned(),
                    found: render(v),
                }),
            },
        }
    }

    /// A whole number of at least 1; `default` when absent.
    pub fn int_or(&self, key: &str, default: u64) -> Result<u64, HfError> {
        self.int_in(key, default, u64::MAX)
    }

    /// A list of whole numbers (each at least 0); `default` when absent.
    pub fn ints_or(&self, key: &str, default: &[u64]) -> Result<Vec<u64>, HfError> {
        match self.map.get(key) {
            None => Ok(default.to_vec()),
            Some(v @ Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_u64().ok_or_else(|| HfError::BadValue {
                        origin: self.origin.to_owned(),
                        key: format!("vision_config.{key}"),
                        expected: "a list of whole numbers".to_owned(),
                        found: render(v),
                    })
                })
                .collect(),
            Some(v) => Err(HfError::BadValue {
                origin: self.origin.to_owned(),
                key: format!("vision_config.{key}"),
                expected: "a list of whole numbers".to_owned(),
                found: render(v),
            }),
        }
    }

    /// A string; `default` when absent.
    pub fn str_or<'s>(&'s self, key: &str, default: &'s str) -> Result<&'s str, HfError> {
        match self.map.get(key) {
            None => Ok(default),
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(HfError::BadValue {
                origin: self.origin.to_owned(),
                key: format!("vision_config.{key}"),
                expected: "a string".to_owned(),
                found: render(v),
            }),
        }
    }

    /// The encoder's layer count: at most [`MAX_LAYERS`], as a language model's, since every
    /// layer is a block instance (published towers have under 100).
    pub fn layers_or(&self, default: u64) -> Result<u64, HfError> {
        self.int_in("num_hidden_layers", default, MAX_LAYERS)
    }

    pub fn int_in(&self, key: &str, default: u64, max: u64) -> Result<u64, HfError> {
        match self.map.get(key) {
            None => Ok(default),
            Some(v) => match v.as_u64() {
                Some(x) if (1..=max).contains(&x) => Ok(x),
                _ => Err(HfError::BadValue {
                    origin: self.origin.to_owned(),
                    key: format!("vision_config.{key}"),
                    expected: if max == u64::MAX {
                        "a whole number of at least 1".to_owned()
                    } else {
                        format!("a whole number from 1 to {max}")
                    },
                    found: render(v),
                }),
            },
        }
    }
}

/// Llama 4's vision tower (`Llama4VisionModel`), its pixel-shuffle adapter and
/// `multi_modal_projector` into a language model of `text_hidden`: patch embedding (an
/// unfold and a linear without bias), class and positional embeddings, LayerNorms with bias
/// before and after the encoder, encoder layers of biased q/k/v/o projections
/// (`hidden / heads` per head), a biased two-layer GELU MLP and two LayerNorms, then the
/// adapter's two bias-free linears and the bias-free projector.
pub(crate) fn llama4(
    origin: &str,
    map: &Map<String, Value>,
    _top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(LLAMA4_VISION_KEYS, "llama4_vision_model")?;
    let hidden = r.int_or("hidden_size", 768)?;
    let layers = r.layers_or(34)?;
    let heads = r.int_or("num_attention_heads", 16)?;
    let channels = r.int_or("num_channels", 3)?;
    let ffn = r.int_or("intermediate_size", 5632)?;
    let output = r.int_or("vision_output_dim", 7680)?;
    let image = r.int_or("image_size", 448)?;
    let patch = r.int_or("patch_size", 14)?;
    let proj_in = r.int_or("projector_input_dim", 4096)?;
    let proj_out = r.int_or("projector_output_dim", 4096)?;
    let shuffle = r.fraction_or("pixel_shuffle_ratio", 0.5)?;
    let too_large = || too_large(origin);
    let side = patches_per_side(origin, image, patch)?;
    // `(image_size // patch_size) ** 2 + 1`: the patches and the class token.
    let positions = side
        .checked_mul(side)
        .and_then(|p| p.checked_add(1))
        .ok_or_else(too_large)?;
    let patch_in = patch
        .checked_mul(patch)
        .and_then(|p| p.checked_mul(channels))
        .ok_or_else(too_large)?;
    let attn_width = (hidden / heads).checked_mul(heads).ok_or_else(too_large)?;
    if attn_width == 0 {
        return Err(HfError::Contradiction {
            origin: origin.to_owned(),
            message: format!(
                "`vision_config.num_attention_heads` {heads} exceeds `vision_config.hidden_size` {hidden}: a head would have no dimension"
            ),
        });
    }
    let v = "vision_model";
    // vLLM's mllama4.py: the patch embedding's linear, the adapter's fc1 and the projector are
    // ColumnParallelLinear, the adapter's fc2 a RowParallelLinear; the embeddings are
    // parameters and the norms LayerNorms, whole on every rank.
    let once = vec![
        held_split(
            "linear",
            format!("{v}.patch_embedding.linear.weight"),
            &[hidden, patch_in],
            Split::Out,
        ),
        held("embed", format!("{v}.class_embedding"), &[hidden]),
        held(
            "embed",
            format!("{v}.positional_embedding_vlm"),
            &[positions, hidden],
        ),
        held("layer_norm", format!("{v}.layernorm_pre.weight"), &[hidden]),
        held("layer_norm", format!("{v}.layernorm_pre.bias"), &[hidden]),
        held(
            "layer_norm",
            format!("{v}.layernorm_post.weight"),
            &[hidden],
        ),
        held("layer_norm", format!("{v}.layernorm_post.bias"), &[hidden]),
        held_split(
            "linear",
            format!("{v}.vision_adapter.mlp.fc1.weight"),
            &[proj_in, ffn],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{v}.vision_adapter.mlp.fc2.weight"),
            &[proj_out, proj_out],
            Split::In,
        ),
        held_split(
            "linear",
            "multi_modal_projector.linear_1.weight".to_owned(),
            &[text_hidden, output],
            Split::Out,
        ),
    ];
    // Llama4VisionAttention: q, k, v in a QKVParallelLinear over the heads, o_proj a
    // RowParallelLinear; Llama4VisionMLP: fc1 column-, fc2 row-parallel (biases as theirs).
    let l = format!("{v}.model.layers.{{i}}");
    let mut layer = Vec::new();
    for proj in ["q_proj", "k_proj", "v_proj"] {
        layer.push(held_split(
            "linear",
            format!("{l}.self_attn.{proj}.weight"),
            &[attn_width, hidden],
            Split::Heads(heads),
        ));
        layer.push(held_split(
            "linear",
            format!("{l}.self_attn.{proj}.bias"),
            &[attn_width],
            Split::Heads(heads),
        ));
    }
    layer.extend([
        held_split(
            "linear",
            format!("{l}.self_attn.o_proj.weight"),
            &[hidden, attn_width],
            Split::In,
        ),
        held("linear", format!("{l}.self_attn.o_proj.bias"), &[hidden]),
    ]);
    layer.extend(mlp(&format!("{l}.mlp"), hidden, ffn));
    for norm in ["input_layernorm", "post_attention_layernorm"] {
        layer.push(held("layer_norm", format!("{l}.{norm}.weight"), &[hidden]));
        layer.push(held("layer_norm", format!("{l}.{norm}.bias"), &[hidden]));
    }
    // vLLM 0.19's profile (mllama4.py Mllama4ProcessingInfo): the largest image is
    // max_patches tiles high and one wide, which the processor cuts into max_patches tiles
    // and a global one; each keeps (image / patch)^2 // round(1 / ratio^2) tokens after the
    // pixel shuffle (`get_patch_per_chunk`).
    // At least 1: the ratio is at most 1.
    let downsample = (1.0 / (shuffle * shuffle)).round() as u64;
    let patches = side.checked_mul(side).ok_or_else(too_large)?;
    let tiles_per_item = LLAMA4_MAX_TILES + 1;
    let encoder = EncoderShape {
        tokens_per_item: (patches / downsample)
            .checked_mul(tiles_per_item)
            .ok_or_else(too_large)?,
        tiles_per_item,
        rows_per_tile: positions,
        complex_rotary: true,
        ..encoder_of_tiles(
            origin,
            image,
            channels,
            (hidden, heads, ffn),
            layers,
            text_hidden,
        )?
    };
    let tower = VisionTower {
        encoder: Some(encoder),
        ..VisionTower::whole(once, layer, layers)
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// The keys of `SiglipVisionConfig` (transformers 5.25.0 `configuration_siglip.py`).
const SIGLIP_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("hidden_size", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_channels", Role::Read),
    ("image_size", Role::Read),
    ("patch_size", Role::Read),
    ("vision_use_head", Role::Read),
    ("hidden_act", Role::Ignored),
    ("layer_norm_eps", Role::Ignored),
    ("attention_dropout", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// Gemma 3's SigLIP vision tower (`SiglipVisionModel`, `modeling_siglip.py`) and its
/// `multi_modal_projector` (`Gemma3MultiModalProjector`) into a language model of
/// `text_hidden`: a biased convolution patch embedding `[hidden, channels, patch, patch]`, a
/// position embedding per patch, encoder layers of two LayerNorms, biased q/k/v/out
/// projections and a biased two-layer MLP, the `post_layernorm`, the attention-pooling head
/// when `vision_use_head` (a probe, a `torch.nn.MultiheadAttention` with packed in-projection,
/// a LayerNorm and an MLP), then the projector's `mm_input_projection_weight`
/// `[hidden, text_hidden]` and its RMS norm `mm_soft_emb_norm`. Names as the published
/// checkpoints store them (`vision_tower.vision_model.*`).
pub(crate) fn siglip_gemma3(
    origin: &str,
    map: &Map<String, Value>,
    top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(SIGLIP_KEYS, "siglip_vision_model")?;
    let Vit {
        hidden,
        heads,
        ffn,
        layers,
        channels,
        image,
        patch,
    } = Vit::read(&r, 16)?;
    let use_head = r.flag_or("vision_use_head", true)?;
    let too_large = || too_large(origin);
    let side = patches_per_side(origin, image, patch)?;
    let positions = side.checked_mul(side).ok_or_else(too_large)?;
    let three = hidden.checked_mul(3).ok_or_else(too_large)?;
    let v = "vision_tower.vision_model";
    let mut once = Vec::from(siglip_stem(v, hidden, channels, patch, positions));
    once.extend([
        held(
            "layer_norm",
            format!("{v}.post_layernorm.weight"),
            &[hidden],
        ),
        held("layer_norm", format!("{v}.post_layernorm.bias"), &[hidden]),
    ]);
    if use_head {
        once.extend(siglip_head(v, hidden, three, ffn));
    }
    // The projector's weight is `[vision hidden, text hidden]` and applied as `x @ w`, so it
    // is stored unlike a linear's `[out, in]`; it is held as a plain tensor (no format
    // quantizes it).
    once.extend([
        held(
            "embed",
            "multi_modal_projector.mm_input_projection_weight".to_owned(),
            &[hidden, text_hidden],
        ),
        held(
            "rms_norm",
            "multi_modal_projector.mm_soft_emb_norm.weight".to_owned(),
            &[hidden],
        ),
    ]);
    // vLLM 0.19's profile (gemma3_mm.py Gemma3ProcessingInfo): pan-and-scan is off by
    // default (`do_pan_and_scan`), so the largest image is one crop of `image_size`, each
    // patch a row of the encoder (no class token), pooled to `mm_tokens_per_image` soft tokens
    // (Gemma3Config's default 256). Modelled only without the pooling head, which Gemma 3's
    // configs turn off: the head's attention would run beside the encoder's output.
    let soft_tokens = top_count_or(origin, top, "mm_tokens_per_image", 256)?;
    let encoder = (!use_head).then_some(EncoderShape {
        tokens_per_item: soft_tokens,
        tiles_per_item: 1,
        rows_per_tile: positions,
        ..encoder_of_tiles(
            origin,
            image,
            channels,
            (hidden, heads, ffn),
            layers,
            text_hidden,
        )?
    });
    let tower = VisionTower {
        encoder,
        ..VisionTower::whole(
            once,
            vit_layer(&format!("{v}.encoder.layers.{{i}}"), hidden, heads, ffn),
            layers,
        )
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// A held tensor every rank holds whole.
pub(crate) fn held(op: &'static str, tensor: String, shape: &[u64]) -> Held {
    Held {
        op,
        tensor,
        shape: shape.to_vec(),
        split: Split::Whole,
    }
}

/// A held tensor the ranks share as `split` says.
pub(crate) fn held_split(op: &'static str, tensor: String, shape: &[u64], split: Split) -> Held {
    Held {
        split,
        ..held(op, tensor, shape)
    }
}

/// The error for sizes whose element count overflows.
pub(crate) fn too_large(origin: &str) -> HfError {
    HfError::Contradiction {
        origin: origin.to_owned(),
        message: "the vision tower's sizes overflow a 64-bit element count".to_owned(),
    }
}

/// `image_size // patch_size`: the patches along a side, at least one.
pub(crate) fn patches_per_side(origin: &str, image: u64, patch: u64) -> Result<u64, HfError> {
    if image < patch {
        return Err(HfError::Contradiction {
            origin: origin.to_owned(),
            message: format!(
                "`vision_config.image_size` {image} is smaller than `vision_config.patch_size` {patch}: the image has no patch"
            ),
        });
    }
    Ok(image / patch)
}

/// The sizes of a ViT tower's config (`SiglipVisionConfig`, `CLIPVisionConfig`), with their
/// common defaults (ViT-B: 768 wide, 3,072 MLP, 12 layers and heads, 224-pixel RGB images); the
/// patch's default differs (SigLIP 16, CLIP 32).
struct Vit {
    hidden: u64,
    heads: u64,
    ffn: u64,
    layers: u64,
    channels: u64,
    image: u64,
    patch: u64,
}

impl Vit {
    fn read(r: &Reader<'_>, patch_default: u64) -> Result<Vit, HfError> {
        Vit::read_or(
            r,
            Vit {
                hidden: 768,
                heads: 12,
                ffn: 3072,
                layers: 12,
                channels: 3,
                image: 224,
                patch: patch_default,
            },
        )
    }

    /// The sizes `vision_config` gives, `d`'s where it omits one.
    fn read_or(r: &Reader<'_>, d: Vit) -> Result<Vit, HfError> {
        Ok(Vit {
            hidden: r.int_or("hidden_size", d.hidden)?,
            // No weight's size depends on it, but tensor parallelism splits q, k, v by heads.
            heads: r.int_or("num_attention_heads", d.heads)?,
            ffn: r.int_or("intermediate_size", d.ffn)?,
            layers: r.layers_or(d.layers)?,
            channels: r.int_or("num_channels", d.channels)?,
            image: r.int_or("image_size", d.image)?,
            patch: r.int_or("patch_size", d.patch)?,
        })
    }
}

/// A ViT encoder layer as SigLIP and CLIP store it (`<prefix>.` then `layer_norm1`,
/// `layer_norm2`, `self_attn.{q,k,v,out}_proj` and `mlp.fc1`, `mlp.fc2`, all with biases).
/// vLLM's SiglipAttention and CLIPAttention hold q, k, v in a QKVParallelLinear over `heads`
/// and `out_proj` in a RowParallelLinear; their MLPs are [`mlp`]s (siglip.py, clip.py).
fn vit_layer(prefix: &str, hidden: u64, heads: u64, ffn: u64) -> Vec<Held> {
    let mut layer = Vec::new();
    for norm in ["layer_norm1", "layer_norm2"] {
        layer.push(held(
            "layer_norm",
            format!("{prefix}.{norm}.weight"),
            &[hidden],
        ));
        layer.push(held(
            "layer_norm",
            format!("{prefix}.{norm}.bias"),
            &[hidden],
        ));
    }
    for proj in ["q_proj", "k_proj", "v_proj"] {
        layer.push(held_split(
            "linear",
            format!("{prefix}.self_attn.{proj}.weight"),
            &[hidden, hidden],
            Split::Heads(heads),
        ));
        layer.push(held_split(
            "linear",
            format!("{prefix}.self_attn.{proj}.bias"),
            &[hidden],
            Split::Heads(heads),
        ));
    }
    layer.extend([
        held_split(
            "linear",
            format!("{prefix}.self_attn.out_proj.weight"),
            &[hidden, hidden],
            Split::In,
        ),
        held(
            "linear",
            format!("{prefix}.self_attn.out_proj.bias"),
            &[hidden],
        ),
    ]);
    layer.extend(mlp(&format!("{prefix}.mlp"), hidden, ffn));
    layer
}

/// A biased two-layer MLP `<prefix>.fc1` `[ffn, hidden]`, `<prefix>.fc2` `[hidden, ffn]` as vLLM
/// builds it (SiglipMLP, CLIPMLP, Llama4VisionMLP): fc1 a ColumnParallelLinear, fc2 a
/// RowParallelLinear whose bias every rank holds whole.
pub(crate) fn mlp(prefix: &str, hidden: u64, ffn: u64) -> [Held; 4] {
    [
        held_split(
            "linear",
            format!("{prefix}.fc1.weight"),
            &[ffn, hidden],
            Split::Out,
        ),
        held_split("linear", format!("{prefix}.fc1.bias"), &[ffn], Split::Out),
        held_split(
            "linear",
            format!("{prefix}.fc2.weight"),
            &[hidden, ffn],
            Split::In,
        ),
        held("linear", format!("{prefix}.fc2.bias"), &[hidden]),
    ]
}

/// A bad top-level value.
/// A top-level key of the multimodal config that is a whole number of at least 1; `default`
/// when absent.
pub(crate) fn top_count_or(
    origin: &str,
    top: &Map<String, Value>,
    key: &str,
    default: u64,
) -> Result<u64, HfError> {
    match top.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(n),
            _ => Err(top_bad(origin, key, "a whole number of at least 1", v)),
        },
    }
}

pub(crate) fn top_bad(origin: &str, key: &str, expected: &str, v: &Value) -> HfError {
    HfError::BadValue {
        origin: origin.to_owned(),
        key: key.to_owned(),
        expected: expected.to_owned(),
        found: render(v),
    }
}

/// The top-level keys of a LLaVA-style two-layer projector (LLaVA, Mistral 3).
struct Projector {
    /// `vision_feature_layer`: the encoder layers whose features feed the projector (an
    /// index, or a list concatenated, which widens `linear_1`'s input); `None` when absent.
    feature_layer: Option<Vec<i64>>,
    /// `multimodal_projector_bias`.
    bias: bool,
}

impl Projector {
    fn read(origin: &str, top: &Map<String, Value>, bias_default: bool) -> Result<Self, HfError> {
        let bad = |v: &Value| {
            top_bad(
                origin,
                "vision_feature_layer",
                "a layer index or a non-empty list of them",
                v,
            )
        };
        let feature_layer = match top.get("vision_feature_layer") {
            None => None,
            Some(v @ Value::Number(n)) => Some(vec![n.as_i64().ok_or_else(|| bad(v))?]),
            Some(v @ Value::Array(items)) if !items.is_empty() => Some(
                items
                    .iter()
                    .map(|i| i.as_i64().ok_or_else(|| bad(v)))
                    .collect::<Result<_, _>>()?,
            ),
            Some(v) => return Err(bad(v)),
        };
        let bias = match top.get("multimodal_projector_bias") {
            None => bias_default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(top_bad(
                    origin,
                    "multimodal_projector_bias",
                    "true or false",
                    v,
                ));
            }
        };
        Ok(Projector {
            feature_layer,
            bias,
        })
    }

    /// The number of feature layers concatenated into `linear_1`'s input.
    fn feature_layers(&self) -> u64 {
        self.feature_layer.as_ref().map_or(1, |l| l.len() as u64)
    }

    /// The encoder layers the projector reads of a tower of `layers`: up to the deepest
    /// feature layer (a negative index counts `layers + index + 1`, as transformers' and
    /// vLLM 0.19's `get_layer_index`, models/utils.py, count it); `default` is the config
    /// class's `vision_feature_layer` when the file gives none. An index outside the tower is
    /// refused: it names layers the checkpoint does not hold.
    fn read_layers(&self, origin: &str, layers: u64, default: i64) -> Result<u64, HfError> {
        let default = [default];
        let indices = self.feature_layer.as_deref().unwrap_or(&default);
        let mut deepest = 0;
        for &index in indices {
            let built = if index < 0 {
                i128::from(layers) + i128::from(index) + 1
            } else {
                i128::from(index)
            };
            if built < 0 || built > i128::from(layers) {
                return Err(HfError::BadValue {
                    origin: origin.to_owned(),
                    key: "vision_feature_layer".to_owned(),
                    expected: format!(
                        "an index of one of the vision tower's {layers} layers (from -{} to {layers})",
                        layers + 1
                    ),
                    found: index.to_string(),
                });
            }
            deepest = deepest.max(built as u64);
        }
        Ok(deepest)
    }

    /// `<p>.linear_1` `[text_hidden, features]` and `<p>.linear_2` `[text_hidden, text_hidden]`,
    /// with their biases when `multimodal_projector_bias`: vLLM's LlavaMultiModalProjector and
    /// Mistral3MultiModalProjector build linear_1 as a ColumnParallelLinear and linear_2 as a
    /// RowParallelLinear (llava.py, mistral3.py).
    fn linears(&self, p: &str, text_hidden: u64, features: u64) -> Vec<Held> {
        let mut out = vec![
            held_split(
                "linear",
                format!("{p}.linear_1.weight"),
                &[text_hidden, features],
                Split::Out,
            ),
            held_split(
                "linear",
                format!("{p}.linear_2.weight"),
                &[text_hidden, text_hidden],
                Split::In,
            ),
        ];
        if self.bias {
            out.push(held_split(
                "linear",
                format!("{p}.linear_1.bias"),
                &[text_hidden],
                Split::Out,
            ));
            out.push(held("linear", format!("{p}.linear_2.bias"), &[text_hidden]));
        }
        out
    }
}

/// The keys of `PixtralVisionConfig` (transformers 5.25.0 `configuration_pixtral.py`).
const PIXTRAL_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("hidden_size", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_channels", Role::Read),
    ("patch_size", Role::Read),
    // Images are cut into patches of any count: no weight depends on the image size; the
    // engine's profile makes its dummy image this size.
    ("image_size", Role::Read),
    ("head_dim", Role::Ignored),
    // No weight depends on it; the encoder profile's MLP temporaries do.
    ("hidden_act", Role::Read),
    ("attention_dropout", Role::Ignored),
    ("rope_theta", Role::Ignored),
    ("rope_parameters", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// Mistral 3's Pixtral vision tower (`PixtralVisionModel`, `modeling_pixtral.py`) and its
/// `multi_modal_projector` (`Mistral3MultiModalProjector`) into a language model of
/// `text_hidden`: a bias-free convolution patch embedding, the RMS norm `ln_pre`, transformer
/// layers of two RMS norms, bias-free q/k/v/o projections `[hidden, hidden]` and a bias-free
/// SwiGLU MLP; then the projector's RMS norm, the patch merger's `merging_layer`
/// `[hidden, hidden x spatial_merge_size^2]`, `linear_1` from `hidden` times the number of
/// `vision_feature_layer`s and `linear_2`, with biases when `multimodal_projector_bias`. Names
/// as the published checkpoints store them (`vision_tower.transformer.layers.*`).
pub(crate) fn pixtral_mistral3(
    origin: &str,
    map: &Map<String, Value>,
    top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(PIXTRAL_KEYS, "pixtral")?;
    let hidden = r.int_or("hidden_size", 1024)?;
    let ffn = r.int_or("intermediate_size", 4096)?;
    let layers = r.layers_or(24)?;
    let heads = r.int_or("num_attention_heads", 16)?;
    let channels = r.int_or("num_channels", 3)?;
    let patch = r.int_or("patch_size", 16)?;
    let projector = Projector::read(origin, top, false)?;
    let merge = top_count_or(origin, top, "spatial_merge_size", 2)?;
    let too_large = || too_large(origin);
    let merged = merge
        .checked_mul(merge)
        .and_then(|m| m.checked_mul(hidden))
        .ok_or_else(too_large)?;
    let features = hidden
        .checked_mul(projector.feature_layers())
        .ok_or_else(too_large)?;
    let v = "vision_tower";
    let p = "multi_modal_projector";
    let mut once = vec![
        // A convolution, not a linear: no format quantizes it.
        held(
            "conv",
            format!("{v}.patch_conv.weight"),
            &[hidden, channels, patch, patch],
        ),
        held("rms_norm", format!("{v}.ln_pre.weight"), &[hidden]),
        held("rms_norm", format!("{p}.norm.weight"), &[hidden]),
        // Mistral3PatchMerger's merging layer is a plain nn.Linear (mistral3.py).
        held(
            "linear",
            format!("{p}.patch_merger.merging_layer.weight"),
            &[hidden, merged],
        ),
    ];
    once.extend(projector.linears(p, text_hidden, features));
    // PixtralHFAttention: q, k, v in a QKVParallelLinear over the heads, o_proj a
    // RowParallelLinear; PixtralHFMLP: gate and up in a MergedColumnParallelLinear, down a
    // RowParallelLinear (pixtral.py).
    let l = format!("{v}.transformer.layers.{{i}}");
    let mut layer = vec![
        held("rms_norm", format!("{l}.attention_norm.weight"), &[hidden]),
        held("rms_norm", format!("{l}.ffn_norm.weight"), &[hidden]),
    ];
    for proj in ["q_proj", "k_proj", "v_proj"] {
        layer.push(held_split(
            "linear",
            format!("{l}.attention.{proj}.weight"),
            &[hidden, hidden],
            Split::Heads(heads),
        ));
    }
    layer.extend([
        held_split(
            "linear",
            format!("{l}.attention.o_proj.weight"),
            &[hidden, hidden],
            Split::In,
        ),
        held_split(
            "linear",
            format!("{l}.feed_forward.gate_proj.weight"),
            &[ffn, hidden],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{l}.feed_forward.up_proj.weight"),
            &[ffn, hidden],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{l}.feed_forward.down_proj.weight"),
            &[hidden, ffn],
            Split::In,
        ),
    ]);
    // Mistral3Config's vision_feature_layer is -1 (transformers 5.25.0).
    let read_layers = projector.read_layers(origin, layers, -1)?;
    let image = r.int_or("image_size", 1024)?;
    let tower = VisionTower {
        read_layers,
        encoder: pixtral_encoder(
            &r,
            (image, channels, patch, merge),
            (hidden, heads, ffn),
            (read_layers, projector.feature_layers()),
            text_hidden,
        )?,
        ..VisionTower::whole(once, layer, layers)
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// What vLLM 0.19's profile feeds Mistral 3's Pixtral (mistral3.py
/// `Mistral3ProcessingInfo.get_image_size_with_most_features`: one square image of
/// `vision_config.image_size`; pixtral.py `PixtralHFEncoderInfo`): the processor resizes it to
/// whole tokens of `patch_size x spatial_merge_size` pixels (transformers'
/// `PixtralImageProcessor` rounds each side up; the published `preprocessor_config.json`'s
/// `longest_edge` is the same `image_size`), each patch a row of the encoder, merged
/// `spatial_merge_size`^2 to one token (the `[IMG_BREAK]` and `[IMG_END]` placeholders carry
/// no embedding). The gated MLP holds gate and up and, for `silu`, the product of vLLM's
/// `SiluAndMul` (its native code compiled into one kernel, `compile_native`), for `gelu` the
/// GELU and the product of `GeluAndMul`'s eager native code; another activation gives no
/// shape.
fn pixtral_encoder(
    r: &Reader<'_>,
    (image, channels, patch, merge): (u64, u64, u64, u64),
    (hidden, heads, ffn): (u64, u64, u64),
    (layers, feature_layers): (u64, u64),
    text_hidden: u64,
) -> Result<Option<EncoderShape>, HfError> {
    let activation_tensors = match r.map.get("hidden_act") {
        // PixtralVisionConfig's default.
        None => 4,
        Some(Value::String(a)) if a == "gelu" => 4,
        Some(Value::String(a)) if a == "silu" => 3,
        Some(Value::String(_)) => return Ok(None),
        Some(v) => {
            return Err(HfError::BadValue {
                origin: r.origin.to_owned(),
                key: "vision_config.hidden_act".to_owned(),
                expected: "an activation name".to_owned(),
                found: render(v),
            });
        }
    };
    let too_large = || too_large(r.origin);
    let unit = patch.checked_mul(merge).ok_or_else(too_large)?;
    let tokens_side = image.div_ceil(unit);
    let rows_side = tokens_side.checked_mul(merge).ok_or_else(too_large)?;
    let pixels_side = tokens_side.checked_mul(unit).ok_or_else(too_large)?;
    Ok(Some(EncoderShape {
        tokens_per_item: tokens_side.checked_mul(tokens_side).ok_or_else(too_large)?,
        rows_per_tile: rows_side.checked_mul(rows_side).ok_or_else(too_large)?,
        activation_tensors,
        feature_layers,
        merge: merge.checked_mul(merge).ok_or_else(too_large)?,
        ..encoder_of_tiles(
            r.origin,
            pixels_side,
            channels,
            (hidden, heads, ffn),
            layers,
            text_hidden,
        )?
    }))
}

/// The keys of `CLIPVisionConfig` (transformers 5.25.0 `configuration_clip.py`).
const CLIP_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("hidden_size", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_channels", Role::Read),
    ("image_size", Role::Read),
    ("patch_size", Role::Read),
    // The projection of CLIPVisionModelWithProjection, which LLaVA does not build.
    ("projection_dim", Role::Ignored),
    // Not a CLIPVisionConfig field (early LLaVA conversions wrote it); nothing reads it.
    ("vocab_size", Role::Ignored),
    // No weight depends on it; the engine's encoder profile does (the activation's temporaries).
    ("hidden_act", Role::Read),
    ("layer_norm_eps", Role::Ignored),
    ("attention_dropout", Role::Ignored),
    ("dropout", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("initializer_factor", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// A SigLIP tower's stem: the patch convolution with its bias and `positions` position
/// embeddings (`v` the tower's tensor prefix).
fn siglip_stem(v: &str, hidden: u64, channels: u64, patch: u64, positions: u64) -> [Held; 3] {
    [
        // A convolution, not a linear: no format quantizes it.
        held(
            "conv",
            format!("{v}.embeddings.patch_embedding.weight"),
            &[hidden, channels, patch, patch],
        ),
        held(
            "conv",
            format!("{v}.embeddings.patch_embedding.bias"),
            &[hidden],
        ),
        held(
            "embed",
            format!("{v}.embeddings.position_embedding.weight"),
            &[positions, hidden],
        ),
    ]
}

/// A SigLIP tower's pooling head (`{v}.head`): the probe, a torch.nn.MultiheadAttention
/// (whole on every rank; `three` = 3 x hidden, its packed in-projection), the norm and a
/// SiglipMLP (siglip.py).
fn siglip_head(v: &str, hidden: u64, three: u64, ffn: u64) -> Vec<Held> {
    let h = format!("{v}.head");
    let mut head = vec![
        held("embed", format!("{h}.probe"), &[1, 1, hidden]),
        held(
            "linear",
            format!("{h}.attention.in_proj_weight"),
            &[three, hidden],
        ),
        held("linear", format!("{h}.attention.in_proj_bias"), &[three]),
        held(
            "linear",
            format!("{h}.attention.out_proj.weight"),
            &[hidden, hidden],
        ),
        held("linear", format!("{h}.attention.out_proj.bias"), &[hidden]),
        held("layer_norm", format!("{h}.layernorm.weight"), &[hidden]),
        held("layer_norm", format!("{h}.layernorm.bias"), &[hidden]),
    ];
    head.extend(mlp(&format!("{h}.mlp"), hidden, ffn));
    head
}

/// A CLIP tower's stem: the class embedding, the patch convolution, `positions` position
/// embeddings and the pre-norm (`v` the tower's tensor prefix).
fn clip_stem(v: &str, hidden: u64, channels: u64, patch: u64, positions: u64) -> [Held; 5] {
    [
        held(
            "embed",
            format!("{v}.embeddings.class_embedding"),
            &[hidden],
        ),
        // A convolution, not a linear: no format quantizes it.
        held(
            "conv",
            format!("{v}.embeddings.patch_embedding.weight"),
            &[hidden, channels, patch, patch],
        ),
        held(
            "embed",
            format!("{v}.embeddings.position_embedding.weight"),
            &[positions, hidden],
        ),
        held("layer_norm", format!("{v}.pre_layrnorm.weight"), &[hidden]),
        held("layer_norm", format!("{v}.pre_layrnorm.bias"), &[hidden]),
    ]
}

/// LLaVA's CLIP vision tower (`CLIPVisionModel`, `modeling_clip.py`) and its
/// `multi_modal_projector` (`LlavaMultiModalProjector`) into a language model of
/// `text_hidden`: the class embedding, a bias-free convolution patch embedding, a position
/// embedding per patch and the class token, the LayerNorm `pre_layrnorm` (sic), encoder layers
/// of two LayerNorms, biased q/k/v/out projections and a biased two-layer MLP, the
/// `post_layernorm`; then `linear_1` `[text_hidden, hidden x feature layers]` and `linear_2`,
/// biased unless `multimodal_projector_bias` is false. The checkpoint stores every encoder
/// layer, although the features come from `vision_feature_layer` (-2 by default). Names as
/// the published checkpoints store them (`vision_tower.vision_model.*`).
pub(crate) fn clip_llava(
    origin: &str,
    map: &Map<String, Value>,
    top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(CLIP_KEYS, "clip_vision_model")?;
    let Vit {
        hidden,
        heads,
        ffn,
        layers,
        channels,
        image,
        patch,
    } = Vit::read(&r, 32)?;
    let projector = Projector::read(origin, top, true)?;
    let too_large = || too_large(origin);
    let side = patches_per_side(origin, image, patch)?;
    // The patches and the class token.
    let positions = side
        .checked_mul(side)
        .and_then(|p| p.checked_add(1))
        .ok_or_else(too_large)?;
    let features = hidden
        .checked_mul(projector.feature_layers())
        .ok_or_else(too_large)?;
    let v = "vision_tower.vision_model";
    let p = "multi_modal_projector";
    let mut once = clip_stem(v, hidden, channels, patch, positions).to_vec();
    once.extend([
        held(
            "layer_norm",
            format!("{v}.post_layernorm.weight"),
            &[hidden],
        ),
        held("layer_norm", format!("{v}.post_layernorm.bias"), &[hidden]),
    ]);
    once.extend(projector.linears(p, text_hidden, features));
    // LlavaConfig's vision_feature_layer is -2 (transformers 5.25.0).
    let read_layers = projector.read_layers(origin, layers, -2)?;
    let tower = VisionTower {
        once,
        layer: vit_layer(&format!("{v}.encoder.layers.{{i}}"), hidden, heads, ffn),
        layers,
        read_layers,
        unread: vec![
            format!("{v}.post_layernorm.weight"),
            format!("{v}.post_layernorm.bias"),
        ],
        encoder: clip_encoder(
            &r,
            top,
            (image, channels, side),
            (hidden, heads, ffn),
            read_layers,
            text_hidden,
        )?,
        deepstack_layers: 0,
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// What vLLM 0.19's profile feeds LLaVA's CLIP (llava.py LlavaProcessingInfo, clip.py
/// CLIPEncoderInfo): every image is resized to `image_size`, one tile of side^2 patches and
/// the class token; `vision_feature_select_strategy` "default" gives the language model the
/// patches alone, "full" the class token too. The MLP's activation (`hidden_act`, CLIP's
/// default `quick_gelu`) sets what its layer holds; an activation not derived here gives no
/// shape.
fn clip_encoder(
    r: &Reader<'_>,
    top: &Map<String, Value>,
    (image, channels, side): (u64, u64, u64),
    layer: (u64, u64, u64),
    layers: u64,
    text_hidden: u64,
) -> Result<Option<EncoderShape>, HfError> {
    let patches = side.checked_mul(side).ok_or_else(|| too_large(r.origin))?;
    let tokens = patches + u64::from(keeps_class_token(r.origin, top)?);
    let Some(activation_tensors) = vit_activation_tensors(r, "quick_gelu")? else {
        return Ok(None);
    };
    Ok(Some(EncoderShape {
        tokens_per_item: tokens,
        tiles_per_item: 1,
        rows_per_tile: patches + 1,
        activation_tensors,
        ..encoder_of_tiles(r.origin, image, channels, layer, layers, text_hidden)?
    }))
}

/// Whether the language model gets a CLIP tower's class token too: top-level
/// `vision_feature_select_strategy` "full" (LLaVA's default "default" drops it, vLLM's
/// `get_num_selected_vision_tokens`, models/vision.py).
fn keeps_class_token(origin: &str, top: &Map<String, Value>) -> Result<bool, HfError> {
    match top.get("vision_feature_select_strategy") {
        None => Ok(false),
        Some(Value::String(s)) if s == "default" => Ok(false),
        Some(Value::String(s)) if s == "full" => Ok(true),
        Some(v) => Err(top_bad(
            origin,
            "vision_feature_select_strategy",
            "\"default\" or \"full\"",
            v,
        )),
    }
}

/// Tensors of the MLP's width a ViT layer (CLIP's, SigLIP's) holds at its activation, by
/// `hidden_act` (`default` when absent): vLLM 0.19's QuickGELU runs its native
/// `x * sigmoid(1.702 * x)` eagerly, whose sigmoid and product live beside fc1's output (3);
/// a GELU (`nn.GELU`, tanh or not) makes one tensor (2); another activation gives None (its
/// temporaries are not derived).
fn vit_activation_tensors(r: &Reader<'_>, default: &str) -> Result<Option<u64>, HfError> {
    let act = match r.map.get("hidden_act") {
        None => default,
        Some(Value::String(a)) => a.as_str(),
        Some(v) => {
            return Err(HfError::BadValue {
                origin: r.origin.to_owned(),
                key: "vision_config.hidden_act".to_owned(),
                expected: "an activation name".to_owned(),
                found: render(v),
            });
        }
    };
    // activation.py: QuickGELU.forward_native is x * sigmoid(1.702 * x), whose sigmoid and
    // product live beside fc1's output; a GELU makes one tensor.
    Ok(match act {
        "quick_gelu" => Some(3),
        "gelu" | "gelu_pytorch_tanh" | "gelu_new" => Some(2),
        _ => None,
    })
}

/// The keys of `SiglipVisionConfig` under LLaVA-NeXT (transformers 4.57.6
/// `configuration_siglip.py`): Gemma 3's list, with `hidden_act` read (the encoder profile's
/// activation).
const SIGLIP_NEXT_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("hidden_size", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_channels", Role::Read),
    ("image_size", Role::Read),
    ("patch_size", Role::Read),
    ("vision_use_head", Role::Read),
    ("hidden_act", Role::Read),
    ("layer_norm_eps", Role::Ignored),
    ("attention_dropout", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// LlavaNextConfig's `image_grid_pinpoints` when the config gives none (transformers 4.57.6
/// `configuration_llava_next.py`), `[height, width]` each.
const LLAVA_NEXT_PINPOINTS: [[u64; 2]; 5] =
    [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]];

/// LLaVA-NeXT's tower (`LlavaNextForConditionalGeneration`): LLaVA's CLIP
/// (`vision_config.model_type` `clip_vision_model`, the default; absent, LlavaNextConfig's
/// CLIP ViT-L/14 at 336 pixels) or a SigLIP (`siglip_vision_model`, IBM's Granite Vision), the
/// `image_newline` embedding `[text_hidden]` the model writes after each row of tile features,
/// and LLaVA's two-layer projector from `hidden` times the number of `vision_feature_layer`s.
/// A SigLIP stores its `post_layernorm` and, unless `vision_use_head` is false, the pooling
/// head; vLLM 0.19 builds neither (`init_vision_tower_for_llava` with `require_post_norm=False`,
/// siglip.py `SiglipVisionModel(use_head=False)`), nor the layers after the deepest feature
/// layer (-2 by default). Names as the published checkpoints store them
/// (`vision_tower.vision_model.*`, `image_newline`).
pub(crate) fn clip_or_siglip_llava_next(
    origin: &str,
    map: &Map<String, Value>,
    top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    let siglip = match map.get("model_type") {
        None | Some(Value::Null) => false,
        Some(Value::String(m)) if m == "clip_vision_model" => false,
        Some(Value::String(m)) if m == "siglip_vision_model" => true,
        Some(other) => {
            return Err(HfError::BadValue {
                origin: origin.to_owned(),
                key: "vision_config.model_type".to_owned(),
                expected: "`clip_vision_model` or `siglip_vision_model`".to_owned(),
                found: render(other),
            });
        }
    };
    let vit = if siglip {
        r.check_keys(SIGLIP_NEXT_KEYS, "siglip_vision_model")?;
        Vit::read(&r, 16)?
    } else {
        r.check_keys(CLIP_KEYS, "clip_vision_model")?;
        if top.get("vision_config").is_none_or(Value::is_null) {
            // LlavaNextConfig without a vision_config builds CLIP ViT-L/14-336's.
            Vit::read_or(
                &r,
                Vit {
                    hidden: 1024,
                    heads: 16,
                    ffn: 4096,
                    layers: 24,
                    channels: 3,
                    image: 336,
                    patch: 14,
                },
            )?
        } else {
            Vit::read(&r, 32)?
        }
    };
    let Vit {
        hidden,
        heads,
        ffn,
        layers,
        channels,
        image,
        patch,
    } = vit;
    let projector = Projector::read(origin, top, true)?;
    let too_large = || too_large(origin);
    let side = patches_per_side(origin, image, patch)?;
    let patches = side.checked_mul(side).ok_or_else(too_large)?;
    // CLIP's sequence: the patches and the class token; SigLIP's: the patches.
    let rows = patches + u64::from(!siglip);
    let features = hidden
        .checked_mul(projector.feature_layers())
        .ok_or_else(too_large)?;
    let v = "vision_tower.vision_model";
    let p = "multi_modal_projector";
    let mut once = Vec::new();
    let mut unread = vec![
        format!("{v}.post_layernorm.weight"),
        format!("{v}.post_layernorm.bias"),
    ];
    if siglip {
        once.extend(siglip_stem(v, hidden, channels, patch, rows));
        // transformers' SiglipVisionTransformer builds the pooling head unless the config
        // says `vision_use_head: false`, so the checkpoint stores it.
        if r.flag_or("vision_use_head", true)? {
            let three = hidden.checked_mul(3).ok_or_else(too_large)?;
            let head = siglip_head(v, hidden, three, ffn);
            unread.extend(head.iter().map(|t| t.tensor.clone()));
            once.extend(head);
        }
    } else {
        once.extend(clip_stem(v, hidden, channels, patch, rows));
    }
    once.extend([
        held(
            "layer_norm",
            format!("{v}.post_layernorm.weight"),
            &[hidden],
        ),
        held("layer_norm", format!("{v}.post_layernorm.bias"), &[hidden]),
        // nn.Parameter(torch.empty(text hidden)), whole on every rank (llava_next.py).
        held("embed", "image_newline".to_owned(), &[text_hidden]),
    ]);
    once.extend(projector.linears(p, text_hidden, features));
    // LlavaNextConfig's vision_feature_layer is -2 (transformers 4.57.6).
    let read_layers = projector.read_layers(origin, layers, -2)?;
    let encoder = match vit_activation_tensors(
        &r,
        if siglip {
            "gelu_pytorch_tanh"
        } else {
            "quick_gelu"
        },
    )? {
        None => None,
        Some(activation_tensors) => {
            // vLLM's get_num_selected_vision_tokens: "default" drops the first feature (CLIP's
            // class token; a SigLIP's first patch), "full" keeps them all.
            let base = rows - u64::from(!keeps_class_token(origin, top)?);
            let anyres = anyres(origin, top, (image, side), base)?;
            Some(EncoderShape {
                tokens_per_item: anyres.tokens,
                tiles_per_item: anyres.tiles,
                rows_per_tile: rows,
                activation_tensors,
                feature_layers: projector.feature_layers(),
                ..encoder_of_tiles(
                    origin,
                    image,
                    channels,
                    (hidden, heads, ffn),
                    read_layers,
                    text_hidden,
                )?
            })
        }
    };
    let tower = VisionTower {
        once,
        layer: vit_layer(&format!("{v}.encoder.layers.{{i}}"), hidden, heads, ffn),
        layers,
        read_layers,
        unread,
        encoder,
        deepstack_layers: 0,
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// The largest dummy image of an anyres model and what it gives the language model.
struct Anyres {
    /// Tokens: the base tile's features, the unpadded grid's and one newline per grid row.
    tokens: u64,
    /// Tiles the processor cuts it into: the grid and the base (whole-image) tile.
    tiles: u64,
}

/// vLLM 0.19's largest LLaVA-NeXT image (llava_next.py
/// `LlavaNextProcessingInfo.get_image_size_with_most_features`): the first
/// `image_grid_pinpoints` entry `[height, width]` whose image gives the most tokens
/// (`get_num_image_tokens`: `base` selected features of the base tile, the unpadded features
/// of its grid of `image_size` tiles, `side` per tile side, and one newline per row of them,
/// `_get_num_unpadded_features`); transformers' processor cuts it into that grid and the base
/// tile (an image equal to a pinpoint selects that pinpoint, `select_best_resolution`).
fn anyres(
    origin: &str,
    top: &Map<String, Value>,
    (image, side): (u64, u64),
    base: u64,
) -> Result<Anyres, HfError> {
    let bad = |v: &Value| {
        top_bad(
            origin,
            "image_grid_pinpoints",
            "a non-empty list of [height, width] pairs of whole numbers of at least 1",
            v,
        )
    };
    let pinpoints: Vec<[u64; 2]> = match top.get("image_grid_pinpoints") {
        None | Some(Value::Null) => LLAVA_NEXT_PINPOINTS.to_vec(),
        Some(v @ Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|item| match item.as_array().map(Vec::as_slice) {
                Some([h, w]) => match (h.as_u64(), w.as_u64()) {
                    (Some(h), Some(w)) if h >= 1 && w >= 1 => Ok([h, w]),
                    _ => Err(bad(v)),
                },
                _ => Err(bad(v)),
            })
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(bad(v)),
    };
    let too_large = || too_large(origin);
    let mut best: Option<Anyres> = None;
    for [h, w] in pinpoints {
        let (grid_h, grid_w) = (h / image, w / image);
        let mut current_h = side.checked_mul(grid_h).ok_or_else(too_large)?;
        let mut current_w = side.checked_mul(grid_w).ok_or_else(too_large)?;
        // _get_num_unpadded_features, in Python's floats: the aspect ratios of the image and
        // of the grid's features, and the rows or columns the padding takes.
        if current_h == 0 || current_w == 0 {
            return Err(HfError::Contradiction {
                origin: origin.to_owned(),
                message: format!(
                    "`image_grid_pinpoints` entry [{h}, {w}] holds no whole tile of `vision_config.image_size` {image} (its grid of tiles would be empty)"
                ),
            });
        }
        let (hf, wf) = (h as f64, w as f64);
        let (chf, cwf) = (current_h as f64, current_w as f64);
        if wf / hf > cwf / chf {
            let new_h = round7(hf * (cwf / wf)) as i128;
            let padding = (i128::from(current_h) - new_h).div_euclid(2);
            current_h =
                u64::try_from(i128::from(current_h) - 2 * padding).map_err(|_| too_large())?;
        } else {
            let new_w = round7(wf * (chf / hf)) as i128;
            let padding = (i128::from(current_w) - new_w).div_euclid(2);
            current_w =
                u64::try_from(i128::from(current_w) - 2 * padding).map_err(|_| too_large())?;
        }
        let tokens = current_h
            .checked_mul(current_w)
            .and_then(|t| t.checked_add(current_h))
            .and_then(|t| t.checked_add(base))
            .ok_or_else(too_large)?;
        if best.as_ref().is_none_or(|b| tokens > b.tokens) {
            best = Some(Anyres {
                tokens,
                tiles: grid_h
                    .checked_mul(grid_w)
                    .and_then(|t| t.checked_add(1))
                    .ok_or_else(too_large)?,
            });
        }
    }
    // The list is not empty, so some entry was kept.
    best.ok_or_else(too_large)
}

/// Python's `int(round(x, 7))` for the non-negative values of `_get_num_unpadded_features`.
fn round7(x: f64) -> f64 {
    ((x * 1e7).round() / 1e7).trunc()
}
