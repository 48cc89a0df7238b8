//! The Qwen vision towers of Qwen2.5-VL (`qwen2_5_vl`) and Qwen3-VL (`qwen3_vl`,
//! `qwen3_vl_moe`), counted from `vision_config`: a patch embedding over temporal patches (a
//! 3-D convolution), encoder blocks with a fused `attn.qkv`, a merger of
//! `spatial_merge_size`^2 patches into each token and, for Qwen3-VL, a learned position
//! embedding and the deepstack mergers; with the shapes of transformers 4.57.6's
//! `modeling_qwen2_5_vl.py` / `modeling_qwen3_vl.py` and the tensor-parallel splits of vLLM
//! 0.19's `qwen2_5_vl.py` / `qwen3_vl.py`. Also the dummy image and video vLLM 0.19's profile
//! makes of them ([`EncoderShape`]), from the processor defaults the published
//! `preprocessor_config.json` files set (config.json does not carry them).
//!
//! Invariants: every key of `vision_config` is read, known to leave memory unchanged, or
//! refused; every size is at least 1 and every element count fits a u64; the dummy image is
//! a whole number of merged patches on each side, as the processor's `smart_resize` makes it.

use model_facts::{EncoderShape, VideoShape};
use serde_json::{Map, Value};

use crate::error::HfError;
use crate::vision::{Held, Reader, Role, Split, VisionTower, held, held_split, too_large};

/// Qwen2.5-VL's image processor keeps at most this many pixels per image (and per video
/// frame: the published repositories have no `video_preprocessor_config.json`, so the video
/// processor reads the same `preprocessor_config.json`, transformers 4.57.6
/// `video_processing_utils.py`): the `max_pixels` of Qwen2.5-VL-3B/7B/32B/72B-Instruct's
/// `preprocessor_config.json`, as recalled (transformers' own default is 28 x 28 x 1280).
pub(crate) const QWEN2_5_VL_MAX_PIXELS: u64 = 12_845_056;

/// Qwen3-VL's image processor keeps at most this many pixels per image: `size.longest_edge`
/// of the published Qwen3-VL `preprocessor_config.json`, as recalled.
pub(crate) const QWEN3_VL_IMAGE_MAX_PIXELS: u64 = 16_777_216;

/// Qwen3-VL's video processor keeps at most this many pixels per temporal group of frames:
/// `size.longest_edge` of the published Qwen3-VL `video_preprocessor_config.json`, as
/// recalled.
pub(crate) const QWEN3_VL_VIDEO_MAX_PIXELS: u64 = 25_165_824;

/// The keys of `Qwen2_5_VLVisionConfig` (transformers 4.57.6 `configuration_qwen2_5_vl.py`)
/// and those the published configs add.
const QWEN2_5_VL_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("depth", Role::Read),
    ("hidden_size", Role::Read),
    ("hidden_act", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_heads", Role::Read),
    ("in_channels", Role::Read),
    ("patch_size", Role::Read),
    ("spatial_merge_size", Role::Read),
    ("temporal_patch_size", Role::Read),
    ("out_hidden_size", Role::Read),
    // Window attention runs as variable-length attention over windows or over the whole
    // image (cu_seqlens): the same tensors either way.
    ("window_size", Role::Ignored),
    ("fullatt_block_indexes", Role::Ignored),
    ("tokens_per_second", Role::Ignored),
    // Written by the first release; neither transformers nor vLLM reads them (they read
    // `in_channels` and `patch_size`).
    ("in_chans", Role::Ignored),
    ("spatial_patch_size", Role::Ignored),
    ("initializer_range", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// The keys of `Qwen3VLVisionConfig` (transformers 4.57.6 `configuration_qwen3_vl.py`; the
/// MoE model's is the same class under `qwen3_vl_moe`).
const QWEN3_VL_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("depth", Role::Read),
    ("hidden_size", Role::Read),
    ("hidden_act", Role::Read),
    ("intermediate_size", Role::Read),
    ("num_heads", Role::Read),
    ("in_channels", Role::Read),
    ("patch_size", Role::Read),
    ("spatial_merge_size", Role::Read),
    ("temporal_patch_size", Role::Read),
    ("out_hidden_size", Role::Read),
    ("num_position_embeddings", Role::Read),
    ("deepstack_visual_indexes", Role::Read),
    ("initializer_range", Role::Ignored),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// The sizes both towers share.
struct Sizes {
    depth: u64,
    hidden: u64,
    ffn: u64,
    heads: u64,
    channels: u64,
    patch: u64,
    merge: u64,
    temporal: u64,
    out: u64,
}

impl Sizes {
    /// The sizes `vision_config` gives, with the class's defaults (`hidden_size` 3584 for
    /// Qwen2.5-VL's class, 1152 for Qwen3-VL's; `out_hidden_size` 3584 for both).
    fn read(r: &Reader<'_>, d: Sizes) -> Result<Sizes, HfError> {
        let s = Sizes {
            depth: r.int_in("depth", d.depth, crate::config::MAX_LAYERS)?,
            hidden: r.int_or("hidden_size", d.hidden)?,
            ffn: r.int_or("intermediate_size", d.ffn)?,
            heads: r.int_or("num_heads", d.heads)?,
            channels: r.int_or("in_channels", d.channels)?,
            patch: r.int_or("patch_size", d.patch)?,
            merge: r.int_or("spatial_merge_size", d.merge)?,
            temporal: r.int_or("temporal_patch_size", d.temporal)?,
            out: r.int_or("out_hidden_size", d.out)?,
        };
        if !s.hidden.is_multiple_of(s.heads) {
            return Err(HfError::Contradiction {
                origin: r.origin.to_owned(),
                message: format!(
                    "`vision_config.hidden_size` {} is not a multiple of `vision_config.num_heads` {} (the attention divides it into heads)",
                    s.hidden, s.heads
                ),
            });
        }
        Ok(s)
    }

    /// Inputs of one patch: channels x temporal_patch_size x patch_size^2.
    fn patch_inputs(&self, origin: &str) -> Result<u64, HfError> {
        self.channels
            .checked_mul(self.temporal)
            .and_then(|v| v.checked_mul(self.patch))
            .and_then(|v| v.checked_mul(self.patch))
            .ok_or_else(|| too_large(origin))
    }

    /// The merger's input: hidden x spatial_merge_size^2.
    fn merged(&self, origin: &str) -> Result<u64, HfError> {
        self.hidden
            .checked_mul(self.merge)
            .and_then(|v| v.checked_mul(self.merge))
            .ok_or_else(|| too_large(origin))
    }

    /// The encoder's profile shape over the dummy `image` (and `video`) grids.
    fn encoder(
        &self,
        origin: &str,
        image: Grid,
        video: Option<Grid>,
        (activation_tensors, deepstack): (u64, u64),
        output_hidden: u64,
    ) -> Result<EncoderShape, HfError> {
        let patch_inputs = self.patch_inputs(origin)?;
        let merge = self.merge * self.merge;
        let image_rows = image.rows(origin)?;
        let video = match video {
            None => None,
            Some(v) => {
                let rows = v.rows(origin)?;
                Some(VideoShape {
                    frames_per_group: self.temporal,
                    group_tokens: rows / merge,
                    group_rows: rows,
                    group_pixels: rows
                        .checked_mul(patch_inputs)
                        .ok_or_else(|| too_large(origin))?,
                })
            }
        };
        Ok(EncoderShape {
            tokens_per_item: image_rows / merge,
            tiles_per_item: 1,
            rows_per_tile: image_rows,
            // The processor repeats an image over the temporal patch: each patch row is
            // channels x temporal_patch_size x patch_size^2 values.
            pixels_per_tile: image_rows
                .checked_mul(patch_inputs)
                .ok_or_else(|| too_large(origin))?,
            hidden: self.hidden,
            heads: self.heads,
            head_dim: self.hidden / self.heads,
            ffn: self.ffn,
            output_hidden,
            complex_rotary: false,
            activation_tensors,
            layers: self.depth,
            feature_layers: 1,
            merge,
            deepstack_layers: deepstack,
            video,
        })
    }
}

/// A grid of patches: `h` x `w` patches of one image or temporal group.
#[derive(Clone, Copy)]
struct Grid {
    h: u64,
    w: u64,
}

impl Grid {
    fn rows(self, origin: &str) -> Result<u64, HfError> {
        self.h.checked_mul(self.w).ok_or_else(|| too_large(origin))
    }
}

/// vLLM 0.19's largest Qwen image (qwen2_vl.py
/// `Qwen2VLProcessingInfo.get_image_size_with_most_features`): `max_pixels // unit^2` merged
/// patches (unit = patch_size x spatial_merge_size) factored into the pair of factors
/// closest to square whose ratio is at most 200 (fewer patches if none is), an image of
/// `unit x` each factor, which the processor's `smart_resize` keeps as it is; its grid in
/// patches.
fn most_features(origin: &str, max_pixels: u64, patch: u64, merge: u64) -> Result<Grid, HfError> {
    let unit = patch
        .checked_mul(merge)
        .and_then(|u| u.checked_mul(patch.checked_mul(merge)?))
        .ok_or_else(|| too_large(origin))?;
    let max_seq = max_pixels / unit;
    if max_seq == 0 {
        return Err(HfError::Contradiction {
            origin: origin.to_owned(),
            message: format!(
                "the processor's {max_pixels} pixels hold no merged patch of {patch} x {merge} pixels a side"
            ),
        });
    }
    // closest_factor_pair(n): the largest divisor d <= isqrt(n), (d, n / d).
    let pair = |n: u64| {
        (1..=n.isqrt())
            .rev()
            .find(|d| n.is_multiple_of(*d))
            .map_or((1, n), |d| (d, n / d))
    };
    let (mut h, mut w) = (1, max_seq);
    for seq in (1..=max_seq).rev() {
        (h, w) = pair(seq);
        // width_factor / height_factor <= 200
        if w <= 200 * h {
            break;
        }
    }
    Ok(Grid {
        h: h * merge,
        w: w * merge,
    })
}

/// Qwen2.5-VL's tower (`Qwen2_5_VisionTransformer`) and its merger into a language model of
/// `text_hidden`: `visual.patch_embed.proj` (a bias-free 3-D convolution `[hidden, channels,
/// temporal_patch_size, patch, patch]`), `depth` blocks of two RMS norms, a fused biased
/// `attn.qkv` `[3 x hidden, hidden]`, a biased `attn.proj` and a biased SwiGLU MLP
/// (`mlp.gate_proj`, `mlp.up_proj`, `mlp.down_proj`), then the merger's RMS norm `ln_q` and
/// two biased linears `mlp.0` `[hidden x merge^2, hidden x merge^2]` and `mlp.2`
/// `[out_hidden_size, hidden x merge^2]`. Names as the first release stores them
/// (`visual.*`).
pub(crate) fn qwen2_5_vl(
    origin: &str,
    map: &Map<String, Value>,
    _top: &Map<String, Value>,
    _text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(QWEN2_5_VL_KEYS, "qwen2_5_vl")?;
    let s = Sizes::read(
        &r,
        Sizes {
            depth: 32,
            hidden: 3584,
            ffn: 3420,
            heads: 16,
            channels: 3,
            patch: 14,
            merge: 2,
            temporal: 2,
            out: 3584,
        },
    )?;
    // vLLM builds the MLP's activation with get_act_and_mul_fn: SiluAndMul compiles its native
    // code into one kernel (gate and up, and the product), GeluAndMul runs its native code
    // eagerly (the GELU too); another activation is refused by vLLM and has no shape here.
    let act = r.str_or("hidden_act", "silu")?;
    let activation_tensors = match act {
        "silu" => Some(3),
        "gelu" => Some(4),
        _ => None,
    };
    let too_large = || too_large(origin);
    let (h, f) = (s.hidden, s.ffn);
    let three = h.checked_mul(3).ok_or_else(too_large)?;
    let merged = s.merged(origin)?;
    let v = "visual";
    let once = vec![
        // A convolution, not a linear: no format quantizes it (Conv3dLayer, whole on every rank).
        held(
            "conv",
            format!("{v}.patch_embed.proj.weight"),
            &[h, s.channels, s.temporal, s.patch, s.patch],
        ),
        held("rms_norm", format!("{v}.merger.ln_q.weight"), &[h]),
        // Qwen2_5_VisionPatchMerger: mlp.0 a ColumnParallelLinear, mlp.2 a RowParallelLinear.
        held_split(
            "linear",
            format!("{v}.merger.mlp.0.weight"),
            &[merged, merged],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{v}.merger.mlp.0.bias"),
            &[merged],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{v}.merger.mlp.2.weight"),
            &[s.out, merged],
            Split::In,
        ),
        held("linear", format!("{v}.merger.mlp.2.bias"), &[s.out]),
    ];
    // Qwen2_5_VisionBlock: attn.qkv a QKVParallelLinear over the heads, attn.proj a
    // RowParallelLinear; Qwen2_5_VisionMLP: gate and up a MergedColumnParallelLinear, down a
    // RowParallelLinear (qwen2_5_vl.py).
    let b = format!("{v}.blocks.{{i}}");
    let mut layer = vec![
        held("rms_norm", format!("{b}.norm1.weight"), &[h]),
        held("rms_norm", format!("{b}.norm2.weight"), &[h]),
    ];
    layer.extend(qkv_proj(&b, h, three, s.heads));
    for proj in ["gate_proj", "up_proj"] {
        layer.push(held_split(
            "linear",
            format!("{b}.mlp.{proj}.weight"),
            &[f, h],
            Split::Out,
        ));
        layer.push(held_split(
            "linear",
            format!("{b}.mlp.{proj}.bias"),
            &[f],
            Split::Out,
        ));
    }
    layer.extend([
        held_split(
            "linear",
            format!("{b}.mlp.down_proj.weight"),
            &[h, f],
            Split::In,
        ),
        held("linear", format!("{b}.mlp.down_proj.bias"), &[h]),
    ]);
    // vLLM 0.19's profile (qwen2_vl.py Qwen2VLProcessingInfo, which Qwen2.5-VL's inherits):
    // the largest image, and a video of frames of the same size (the video processor reads
    // the same max_pixels).
    let image = most_features(origin, QWEN2_5_VL_MAX_PIXELS, s.patch, s.merge)?;
    let encoder = match activation_tensors {
        None => None,
        Some(a) => Some(s.encoder(origin, image, Some(image), (a, 0), s.out)?),
    };
    let tower = VisionTower {
        encoder,
        ..VisionTower::whole(once, layer, s.depth)
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// A block's fused `attn.qkv` (weight and bias, split by heads) and `attn.proj` (a
/// RowParallelLinear: weight split on its input, bias whole).
fn qkv_proj(b: &str, h: u64, three: u64, heads: u64) -> [Held; 4] {
    [
        held_split(
            "linear",
            format!("{b}.attn.qkv.weight"),
            &[three, h],
            Split::Heads(heads),
        ),
        held_split(
            "linear",
            format!("{b}.attn.qkv.bias"),
            &[three],
            Split::Heads(heads),
        ),
        held_split(
            "linear",
            format!("{b}.attn.proj.weight"),
            &[h, h],
            Split::In,
        ),
        held("linear", format!("{b}.attn.proj.bias"), &[h]),
    ]
}

/// Qwen3-VL's tower (`Qwen3_VisionTransformer`) and mergers into a language model of
/// `text_hidden`: `model.visual.patch_embed.proj` (a biased 3-D convolution), the learned
/// `pos_embed` `[num_position_embeddings, hidden]`, `depth` blocks of two LayerNorms, a fused
/// biased `attn.qkv`, a biased `attn.proj` and a biased two-layer MLP (`mlp.linear_fc1`,
/// `mlp.linear_fc2`), then the merger (a LayerNorm over `hidden`, `linear_fc1` `[hidden x
/// merge^2, hidden x merge^2]`, `linear_fc2` `[out_hidden_size, hidden x merge^2]`, biased) and
/// one deepstack merger per `deepstack_visual_indexes` entry (the same with its LayerNorm over
/// `hidden x merge^2`). Names as the published checkpoints store them (`model.visual.*`).
pub(crate) fn qwen3_vl(
    origin: &str,
    map: &Map<String, Value>,
    _top: &Map<String, Value>,
    _text_hidden: u64,
) -> Result<VisionTower, HfError> {
    qwen3_vl_tower(origin, map, "qwen3_vl")
}

/// Qwen3-VL-MoE's tower: Qwen3-VL's, whose `vision_config` names `qwen3_vl_moe`.
pub(crate) fn qwen3_vl_moe(
    origin: &str,
    map: &Map<String, Value>,
    _top: &Map<String, Value>,
    _text_hidden: u64,
) -> Result<VisionTower, HfError> {
    qwen3_vl_tower(origin, map, "qwen3_vl_moe")
}

fn qwen3_vl_tower(
    origin: &str,
    map: &Map<String, Value>,
    model_type: &str,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(QWEN3_VL_KEYS, model_type)?;
    let s = Sizes::read(
        &r,
        Sizes {
            depth: 27,
            hidden: 1152,
            ffn: 4304,
            heads: 16,
            channels: 3,
            patch: 16,
            merge: 2,
            temporal: 2,
            out: 3584,
        },
    )?;
    let positions = r.int_or("num_position_embeddings", 2304)?;
    let deepstack = r.ints_or("deepstack_visual_indexes", &[8, 16, 24])?;
    if let Some(&bad) = deepstack.iter().find(|&&i| i >= s.depth) {
        return Err(HfError::BadValue {
            origin: origin.to_owned(),
            key: "vision_config.deepstack_visual_indexes".to_owned(),
            expected: format!("indices of the tower's {} blocks", s.depth),
            found: bad.to_string(),
        });
    }
    // vLLM 0.19 builds the MLP's activation from its registry (`_ACTIVATION_REGISTRY`): a
    // GELU (nn.GELU, tanh or not) or SiLU makes one tensor beside fc1's output, QuickGELU's
    // eager native code two; another activation has no shape here.
    let activation_tensors = match r.str_or("hidden_act", "gelu_pytorch_tanh")? {
        "gelu_pytorch_tanh" | "gelu" | "silu" => Some(2),
        "quick_gelu" => Some(3),
        _ => None,
    };
    let too_large = || too_large(origin);
    let (h, f) = (s.hidden, s.ffn);
    let three = h.checked_mul(3).ok_or_else(too_large)?;
    let merged = s.merged(origin)?;
    let v = "model.visual";
    let mut once = vec![
        // A convolution, not a linear: no format quantizes it (Conv3dLayer, whole on every rank).
        held(
            "conv",
            format!("{v}.patch_embed.proj.weight"),
            &[h, s.channels, s.temporal, s.patch, s.patch],
        ),
        held("conv", format!("{v}.patch_embed.proj.bias"), &[h]),
        // An nn.Embedding, whole on every rank.
        held("embed", format!("{v}.pos_embed.weight"), &[positions, h]),
    ];
    once.extend(merger(&format!("{v}.merger"), h, merged, s.out));
    for j in 0..deepstack.len() {
        once.extend(merger(
            &format!("{v}.deepstack_merger_list.{j}"),
            merged,
            merged,
            s.out,
        ));
    }
    // Qwen3_VisionBlock: LayerNorms; the attention is Qwen2.5-VL's; Qwen3_VisionMLP:
    // linear_fc1 a ColumnParallelLinear, linear_fc2 a RowParallelLinear (qwen3_vl.py).
    let b = format!("{v}.blocks.{{i}}");
    let mut layer = Vec::new();
    for norm in ["norm1", "norm2"] {
        layer.push(held("layer_norm", format!("{b}.{norm}.weight"), &[h]));
        layer.push(held("layer_norm", format!("{b}.{norm}.bias"), &[h]));
    }
    layer.extend(qkv_proj(&b, h, three, s.heads));
    layer.extend([
        held_split(
            "linear",
            format!("{b}.mlp.linear_fc1.weight"),
            &[f, h],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{b}.mlp.linear_fc1.bias"),
            &[f],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{b}.mlp.linear_fc2.weight"),
            &[h, f],
            Split::In,
        ),
        held("linear", format!("{b}.mlp.linear_fc2.bias"), &[h]),
    ]);
    // vLLM 0.19's profile (qwen3_vl.py Qwen3VLProcessingInfo, Qwen3VLDummyInputsBuilder): the
    // largest image of the image processor's pixels; a video of two frames (one temporal
    // group) of the largest image the video processor's pixels allow per frame
    // (`longest_edge // temporal_patch_size`), whose `smart_resize` keeps it.
    let image = most_features(origin, QWEN3_VL_IMAGE_MAX_PIXELS, s.patch, s.merge)?;
    let video = most_features(
        origin,
        QWEN3_VL_VIDEO_MAX_PIXELS / s.temporal,
        s.patch,
        s.merge,
    )?;
    let d = deepstack.len() as u64;
    let encoder = match activation_tensors {
        None => None,
        Some(a) => Some(s.encoder(
            origin,
            image,
            Some(video),
            (a, d),
            // The merger's output and the deepstack features, concatenated per token
            // (Qwen3_VisionTransformer.forward).
            s.out.checked_mul(d + 1).ok_or_else(too_large)?,
        )?),
    };
    let tower = VisionTower {
        encoder,
        deepstack_layers: d,
        ..VisionTower::whole(once, layer, s.depth)
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// A Qwen3-VL merger under `p`: its LayerNorm over `norm` features, `linear_fc1` `[merged,
/// merged]` (ColumnParallelLinear) and `linear_fc2` `[out, merged]` (RowParallelLinear), biased.
fn merger(p: &str, norm: u64, merged: u64, out: u64) -> [Held; 6] {
    [
        held("layer_norm", format!("{p}.norm.weight"), &[norm]),
        held("layer_norm", format!("{p}.norm.bias"), &[norm]),
        held_split(
            "linear",
            format!("{p}.linear_fc1.weight"),
            &[merged, merged],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{p}.linear_fc1.bias"),
            &[merged],
            Split::Out,
        ),
        held_split(
            "linear",
            format!("{p}.linear_fc2.weight"),
            &[out, merged],
            Split::In,
        ),
        held("linear", format!("{p}.linear_fc2.bias"), &[out]),
    ]
}
