//! MXFP4 routed experts in triton_kernels' Hopper layouts
//! ([`model_facts::Mxfp4ExpertLayout::TritonHopper`]), as an engine that runs its MoE through
//! those kernels holds them once its loader has run `process_weights_after_loading`; the
//! checkpoint's layout is `scheme::mxfp4`. Which engine, release and device use this layout is
//! the engine folder's to say (`[load]` of engines/vllm-0.19/engine.toml); docs/quantization.md
//! ("MXFP4 as vLLM 0.19 loads it") derives every number here from the source that uses it.
//!
//! The layout's rules (vLLM 0.19's `Mxfp4MoEMethod` with the `TRITON` backend, read from
//! `model_executor/layers/fused_moe/oracle/mxfp4.py` and `quantization/utils/mxfp4_utils.py`):
//! - each rank's expert intermediate size is rounded up to the layout's
//!   `expert_ffn_multiple`, the hidden size is left alone
//!   (`mxfp4_round_up_hidden_size_and_intermediate_size`);
//! - the weights are created at the padded shapes (`Mxfp4MoEMethod.create_weights`), then
//!   `_swizzle_mxfp4` (`quantization/utils/mxfp4_utils.py`) replaces each value tensor by
//!   triton_kernels' `HopperMXValueLayout` copy and adds a `HopperMXScaleLayout` copy of each
//!   scale tensor, while the loaded scale parameters stay registered on the layer, and the
//!   biases become f32 parameters.
//!
//! Invariants: the layout is a pure function of a module's `out x in` (the padded rank shape);
//! every padding rounds up with checked arithmetic; a shape the kernels cannot take (`in` not
//! a multiple of 32) is a misfit naming the module, as for the checkpoint's layout.

use super::layout::{Bias, Layout, Size, Stored};

/// `HopperMXValueLayout.swizzle_data` pads both dims of the `[in / 2, out]` byte matrix to
/// multiples of 64 (`SWIZZLE_ALIGN_M`, `SWIZZLE_ALIGN_K`); the tile packing after it (16 on
/// one dim, 32 on the other) divides 64, and the bit packing keeps the byte count.
const VALUE_ALIGN: u64 = 64;

/// `HopperMXScaleLayout.swizzle_data` pads the `[out, in / 32]` scale matrix's rows to
/// `2 x num_warps x 2 x 8` with `_swizzle_mxfp4`'s `num_warps = 8`, ...
const SCALE_ALIGN_ROWS: u64 = 2 * 8 * 2 * 8;
/// ... and its columns to 2.
const SCALE_ALIGN_COLS: u64 = 2;

/// What one expert parameter `[E, out, in]` (gate_up_proj, down_proj) leaves allocated on a
/// rank after loading, named after the checkpoint tensors they come from:
/// - `<param>_blocks`: the swizzled values (vLLM's `w13_weight` / `w2_weight`, a
///   triton_kernels tensor of torch shape `[E, round_up(in / 2, 64) x 4, round_up(out, 64) / 4]`),
///   declared as its bytes `[E, round_up(out, 64), round_up(in / 2, 64)]`;
/// - `<param>_scales`: the e8m0 scales as loaded, `[E, out, in / 32]` (`w13_weight_scale`,
///   never replaced on the Triton path);
/// - `<param>_scales_swizzled`: the precision config's scales, `[E, round_up(out, 256),
///   round_up(round_up(in, scale_in_multiple) / 32, 2)]` bytes (`scale_in_multiple` 32
///   leaves `in` alone; an engine that pads the scales' reduction width before swizzling,
///   SGLang's `_pad_hopper_mxfp4_scale` to 128, states its multiple);
/// - the bias, f32 (`convert_to_mxfp4_moe_kernel_format` casts it, `replace_parameter` frees
///   the bf16 one).
pub(crate) fn held_experts(scale_in_multiple: u64) -> Layout {
    // Padded only when the engine pads: a multiple of 32 keeps `in`, which the loaded scales'
    // `in / 32` already requires.
    let scale_in = if scale_in_multiple > 32 {
        Size::In.round_up(scale_in_multiple)
    } else {
        Size::In
    };
    Layout {
        tensors: vec![
            Stored::suffix(
                "_blocks",
                vec![
                    Size::Out.round_up(VALUE_ALIGN),
                    Size::In.div(2).round_up(VALUE_ALIGN),
                ],
                "u8",
            ),
            Stored::suffix("_scales", vec![Size::Out, Size::In.div(32)], "u8"),
            Stored::suffix(
                "_scales_swizzled",
                vec![
                    Size::Out.round_up(SCALE_ALIGN_ROWS),
                    scale_in.div(32).round_up(SCALE_ALIGN_COLS),
                ],
                "u8",
            ),
        ],
        bias: Bias::As("f32"),
    }
}

/// One line for the import report.
pub(crate) const SUMMARY: &str = "experts as the engine holds them after loading (triton_kernels' Hopper layout: rank intermediate size rounded up, swizzled values and scales beside the loaded scales, f32 biases)";
