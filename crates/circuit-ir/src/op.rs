//! The closed list of node operations. Families name the ops they implement and fusion rules
//! match on them, so the list lives here, below both, and an unknown op is a load error.
//!
//! Invariant: `Op::from_str(op.name()) == Ok(op)` for every op in [`Op::ALL`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! ops {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)*) => {
        /// A node operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Op {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Op {
            /// Every op, in documentation order.
            pub const ALL: &'static [Op] = &[$(Op::$variant,)*];

            /// The op's name in circuit, family and rule files.
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$variant => $name,)*
                }
            }

            /// One line saying what the op computes.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Op::$variant => concat!($($doc),*).trim_ascii(),)*
                }
            }
        }

        impl FromStr for Op {
            type Err = UnknownOp;
            fn from_str(s: &str) -> Result<Op, UnknownOp> {
                match s {
                    $($name => Ok(Op::$variant),)*
                    _ => Err(UnknownOp { name: s.to_owned() }),
                }
            }
        }
    };
}

ops! {
    /// Token ids to embedding rows (gathers from the embedding table).
    Embed = "embed",
    /// Root-mean-square normalisation of each row, times a learned scale (none when the node
    /// has no weight, as Llama 4's query/key norm).
    RmsNorm = "rms_norm",
    /// Layer normalisation of each row (mean and variance), scale and optional bias.
    LayerNorm = "layer_norm",
    /// Dense matrix product with a weight (a projection), optional bias.
    Linear = "linear",
    /// Rotary position embedding applied to query and key heads.
    Rope = "rope",
    /// Appends keys and values (or a compressed latent) to the KV cache state.
    KvWrite = "kv_write",
    /// Attention of the rows' queries over the cached keys and values (with a learned
    /// per-head sink logit in the softmax when the node has a `sinks` weight).
    Attention = "attention",
    /// SiLU of the gate half times the up half (SwiGLU).
    SiluMul = "silu_mul",
    /// GELU of the gate half times the up half (GeGLU).
    GeluMul = "gelu_mul",
    /// Element-wise sum of a residual stream and a branch output.
    ResidualAdd = "residual_add",
    /// Mixture-of-experts router logits.
    Router = "router",
    /// Top-k selection over router scores (expert weights and ids).
    TopK = "top_k",
    /// Grouped matrix product of rows routed to experts (one weight per expert).
    ExpertLinear = "expert_linear",
    /// Weighted sum of the experts' outputs back to one row per token.
    MoeCombine = "moe_combine",
    /// Final projection from hidden states to vocabulary logits.
    LmHead = "lm_head",
    /// Picks next tokens from logits.
    Sample = "sample",
    /// Copies a tensor (layout change, gather or cast).
    Copy = "copy",
    /// Joins tensors along the width.
    Concat = "concat",
    /// Splits a tensor along the width.
    Split = "split",
    /// Multiplies every element by a constant (e.g. embedding scaling).
    Scale = "scale",
    /// Soft-capping `c * tanh(x / c)` of logits.
    Softcap = "softcap",
    /// GELU of every element (an ungated MLP's activation).
    Gelu = "gelu",
    /// gpt-oss's SwiGLU on interleaved gate and up: both clamped, gate x sigmoid(alpha x gate)
    /// x (up + 1).
    ClampedSwiglu = "clamped_swiglu",
    /// Sigmoid of a gate times a value (an output gate: Qwen3-Next's attention, a shared
    /// expert's gate).
    SigmoidMul = "sigmoid_mul",
    /// Root-mean-square normalisation per head, times a learned scale and SiLU of a gate.
    GatedRmsNorm = "gated_rms_norm",
    /// Depthwise causal convolution along the sequence, keeping the last inputs of each
    /// sequence as its state.
    CausalConv1d = "causal_conv1d",
    /// The gated delta rule (linear attention): a fixed-size recurrent state per sequence and
    /// head, decayed, updated and read by each row.
    GatedDeltaNet = "gated_delta_net",
    /// Sum of a tensor over the tensor-parallel ranks, into a new tensor on every rank (NCCL
    /// or a custom all-reduce): a row-parallel projection's partial outputs, a
    /// vocab-parallel embedding's rows.
    AllReduce = "all_reduce",
    /// A tensor's width gathered from every tensor-parallel rank, on every rank: a
    /// vocab-parallel lm_head's logits.
    AllGather = "all_gather",
    /// Weights held in memory that the step does not run (a vision tower under a text plan, a
    /// multi-token-prediction layer): no input, no output.
    WeightsOnly = "weights_only",
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not in the op list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown op `{name}` (known: {})", known_ops())]
pub struct UnknownOp {
    /// The name.
    pub name: String,
}

/// The op names, comma-separated, for messages.
pub fn known_ops() -> String {
    Op::ALL
        .iter()
        .map(|o| o.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(Op::ALL.len(), 30);
        for &op in Op::ALL {
            assert_eq!(op.name().parse::<Op>(), Ok(op));
            assert!(!op.summary().is_empty());
        }
        assert_eq!(
            Op::RmsNorm.summary(),
            "Root-mean-square normalisation of each row, times a learned scale (none when the node has no weight, as Llama 4's query/key norm)."
        );
    }

    #[test]
    fn unknown_op_lists_the_known_ones() {
        let err = "rms_nrom".parse::<Op>().unwrap_err().to_string();
        assert!(
            err.starts_with("unknown op `rms_nrom` (known: embed, rms_norm, layer_norm, linear,")
        );
        assert!(err.ends_with("gated_delta_net, all_reduce, all_gather, weights_only)"));
    }
}
