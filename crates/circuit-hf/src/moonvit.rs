//! Kimi-VL's vision tower, MoonViT, and its projector, counted from `vision_config`
//! (`MoonViTConfig`, vLLM 0.19's `transformers_utils/configs/moonvit.py`, a port of the
//! checkpoint's remote code): a biased patch convolution with a learned 2-D position
//! embedding, encoder blocks of two LayerNorms, a fused biased `wqkv`, a biased `wo` and a
//! biased two-layer GELU MLP, a final LayerNorm; then `KimiVLMultiModalProjector`, a LayerNorm
//! and two biased linears over `merge_kernel_size` patches merged into each token. Shapes and
//! tensor-parallel splits from vLLM 0.19's `moonvit.py` and `kimi_vl.py` (the projector is
//! `ReplicatedLinear`: whole on every rank). Also the dummy image vLLM 0.19's profile makes
//! ([`EncoderShape`]).
//!
//! Invariants: every key of `vision_config` is read or refused; every size is at least 1 and
//! every element count fits a u64.

use model_facts::EncoderShape;
use serde_json::{Map, Value};

use crate::error::HfError;
use crate::vision::{Reader, Role, Split, VisionTower, held, held_split, too_large};

/// The most patches Kimi-VL's image processor keeps per image before it scales the image
/// down: `in_token_limit` of Kimi-VL-A3B-Instruct's and -Thinking's
/// `preprocessor_config.json`, as recalled (config.json does not carry it).
pub(crate) const KIMI_VL_IN_TOKEN_LIMIT: u64 = 4096;

/// The side of vLLM 0.19's dummy Kimi-VL image (kimi_vl.py `MaxImageTokenMeta`: 1024 x 1024).
const KIMI_VL_DUMMY_SIDE: u64 = 1024;

/// The keys of `MoonViTConfig`.
const MOONVIT_KEYS: &[(&str, Role)] = &[
    ("model_type", Role::Read),
    ("patch_size", Role::Read),
    ("init_pos_emb_height", Role::Read),
    ("init_pos_emb_width", Role::Read),
    ("num_attention_heads", Role::Read),
    ("num_hidden_layers", Role::Read),
    ("hidden_size", Role::Read),
    ("intermediate_size", Role::Read),
    ("merge_kernel_size", Role::Read),
    ("transformers_version", Role::Ignored),
    ("torch_dtype", Role::Ignored),
    ("dtype", Role::Ignored),
];

/// MoonViT (`MoonVitPretrainedModel`) and the projector into a language model of
/// `text_hidden`: `vision_tower.patch_embed.proj` `[hidden, 3, patch, patch]` with its bias,
/// `patch_embed.pos_emb.weight` `[init_pos_emb_height, init_pos_emb_width, hidden]`,
/// `encoder.blocks.<i>` of `norm0`, `norm1` (LayerNorms), `wqkv` `[3 x hidden, hidden]`, `wo`,
/// `mlp.fc0` `[intermediate_size, hidden]`, `mlp.fc1`, all biased, `encoder.final_layernorm`;
/// `multi_modal_projector.pre_norm` (LayerNorm over `hidden`), `linear_1` `[hidden x k, hidden
/// x k]` and `linear_2` `[text_hidden, hidden x k]` with k the merge kernel's patches, biased.
pub(crate) fn moonvit_kimi_vl(
    origin: &str,
    map: &Map<String, Value>,
    _top: &Map<String, Value>,
    text_hidden: u64,
) -> Result<VisionTower, HfError> {
    let r = Reader { origin, map };
    r.check_keys(MOONVIT_KEYS, "moonvit")?;
    let patch = r.int_or("patch_size", 14)?;
    let pos_h = r.int_or("init_pos_emb_height", 64)?;
    let pos_w = r.int_or("init_pos_emb_width", 64)?;
    let heads = r.int_or("num_attention_heads", 16)?;
    let layers = r.layers_or(27)?;
    let hidden = r.int_or("hidden_size", 1152)?;
    let ffn = r.int_or("intermediate_size", 4304)?;
    let kernel = r.ints_or("merge_kernel_size", &[2, 2])?;
    let &[kh, kw] = kernel.as_slice() else {
        return Err(HfError::BadValue {
            origin: origin.to_owned(),
            key: "vision_config.merge_kernel_size".to_owned(),
            expected: "two whole numbers of at least 1 (height, width)".to_owned(),
            found: format!("{kernel:?}"),
        });
    };
    if kh == 0 || kw == 0 || !hidden.is_multiple_of(heads) {
        return Err(HfError::Contradiction {
            origin: origin.to_owned(),
            message: format!(
                "MoonViT needs a merge kernel of at least one patch and `hidden_size` {hidden} divisible by `num_attention_heads` {heads}; found kernel {kernel:?}"
            ),
        });
    }
    let too_large = || too_large(origin);
    let merged = hidden
        .checked_mul(kh)
        .and_then(|m| m.checked_mul(kw))
        .ok_or_else(too_large)?;
    let three = hidden.checked_mul(3).ok_or_else(too_large)?;
    let v = "vision_tower";
    let p = "multi_modal_projector";
    let mut once = vec![
        // Conv2dLayer (bias default True), whole on every rank; no format quantizes it.
        held(
            "conv",
            format!("{v}.patch_embed.proj.weight"),
            &[hidden, 3, patch, patch],
        ),
        held("conv", format!("{v}.patch_embed.proj.bias"), &[hidden]),
        held(
            "embed",
            format!("{v}.patch_embed.pos_emb.weight"),
            &[pos_h, pos_w, hidden],
        ),
        held(
            "layer_norm",
            format!("{v}.encoder.final_layernorm.weight"),
            &[hidden],
        ),
        held(
            "layer_norm",
            format!("{v}.encoder.final_layernorm.bias"),
            &[hidden],
        ),
    ];
    // KimiVLMultiModalProjector: a LayerNorm and two ReplicatedLinear, whole on every rank.
    once.extend([
        held("layer_norm", format!("{p}.pre_norm.weight"), &[hidden]),
        held("layer_norm", format!("{p}.pre_norm.bias"), &[hidden]),
        held("linear", format!("{p}.linear_1.weight"), &[merged, merged]),
        held("linear", format!("{p}.linear_1.bias"), &[merged]),
        held(
            "linear",
            format!("{p}.linear_2.weight"),
            &[text_hidden, merged],
        ),
        held("linear", format!("{p}.linear_2.bias"), &[text_hidden]),
    ]);
    // MoonVitEncoderLayer: wqkv a QKVParallelLinear over the heads, wo a RowParallelLinear;
    // MLP2: fc0 a ColumnParallelLinear, fc1 a RowParallelLinear (moonvit.py).
    let b = format!("{v}.encoder.blocks.{{i}}");
    let mut layer = Vec::new();
    for norm in ["norm0", "norm1"] {
        layer.push(held("layer_norm", format!("{b}.{norm}.weight"), &[hidden]));
        layer.push(held("layer_norm", format!("{b}.{norm}.bias"), &[hidden]));
    }
    layer.extend([
        held_split(
            "linear",
            format!("{b}.wqkv.weight"),
            &[three, hidden],
            Split::Heads(heads),
        ),
        held_split(
            "linear",
            format!("{b}.wqkv.bias"),
            &[three],
            Split::Heads(heads),
        ),
        held_split(
            "linear",
            format!("{b}.wo.weight"),
            &[hidden, hidden],
            Split::In,
        ),
        held("linear", format!("{b}.wo.bias"), &[hidden]),
        held_split(
            "linear",
            format!("{b}.mlp.fc0.weight"),
            &[ffn, hidden],
            Split::Out,
        ),
        held_split("linear", format!("{b}.mlp.fc0.bias"), &[ffn], Split::Out),
        held_split(
            "linear",
            format!("{b}.mlp.fc1.weight"),
            &[hidden, ffn],
            Split::In,
        ),
        held("linear", format!("{b}.mlp.fc1.bias"), &[hidden]),
    ]);
    let grid = dummy_grid(origin, patch, (kh, kw))?;
    let rows = grid.0.checked_mul(grid.1).ok_or_else(too_large)?;
    let encoder = EncoderShape {
        tokens_per_item: (grid.0 / kh) * (grid.1 / kw),
        tiles_per_item: 1,
        rows_per_tile: rows,
        // pixel_values [patches, 3, patch, patch].
        pixels_per_tile: rows
            .checked_mul(3 * patch)
            .and_then(|v| v.checked_mul(patch))
            .ok_or_else(too_large)?,
        hidden,
        heads,
        head_dim: hidden / heads,
        ffn,
        output_hidden: text_hidden,
        // apply_rope: q and k in float32, their complex products with freqs_cis.
        complex_rotary: true,
        // fc0's output and the tanh GELU's (ACT2FN["gelu_pytorch_tanh"]).
        activation_tensors: 2,
        layers,
        feature_layers: 1,
        merge: kh * kw,
        deepstack_layers: 0,
        video: None,
    };
    let tower = VisionTower {
        encoder: Some(encoder),
        ..VisionTower::whole(once, layer, layers)
    };
    tower.params().ok_or_else(too_large)?;
    Ok(tower)
}

/// The patch grid (height, width) of vLLM 0.19's dummy Kimi-VL image (kimi_vl.py
/// `KimiVLProcessingInfo.get_num_image_tokens`, mirroring the checkpoint's image processor):
/// 1024 x 1024 pixels, scaled by sqrt(in_token_limit / patches) when it has more patches
/// than `in_token_limit` (each side truncated), then padded to a multiple of the merge
/// kernel's patches.
fn dummy_grid(origin: &str, patch: u64, (kh, kw): (u64, u64)) -> Result<(u64, u64), HfError> {
    let side = KIMI_VL_DUMMY_SIDE;
    let patches = (side / patch) * (side / patch);
    let (mut h, mut w) = (side, side);
    if patches > KIMI_VL_IN_TOKEN_LIMIT {
        // math.sqrt and int() truncation, as Python computes them.
        let scale = (KIMI_VL_IN_TOKEN_LIMIT as f64 / patches as f64).sqrt();
        w = (side as f64 * scale) as u64;
        h = (side as f64 * scale) as u64;
    }
    let too_large = || too_large(origin);
    let (unit_h, unit_w) = (
        kh.checked_mul(patch).ok_or_else(too_large)?,
        kw.checked_mul(patch).ok_or_else(too_large)?,
    );
    let tokens_h = h.div_ceil(unit_h);
    let tokens_w = w.div_ceil(unit_w);
    Ok((tokens_h * kh, tokens_w * kw))
}
