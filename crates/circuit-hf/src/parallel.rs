//! Parallel layouts ([`Parallel`]: tensor, pipeline, data and expert parallel, vLLM's
//! `--tensor-parallel-size`, `--pipeline-parallel-size`, `--data-parallel-size`,
//! `--enable-expert-parallel`) and what one rank of such a layout holds: the architecture
//! sharded as vLLM 0.19 shards it (docs/parallel.md lists each rule with its source file).
//!
//! Invariants: a layout is validated before any circuit is emitted (every refusal is a typed
//! [`ParallelError`] naming the size and the value); a rank's shape is a pure function of the
//! architecture, the layout and the rank; ranks with equal shapes are emitted once
//! ([`RankShape`] is the key), so `rank -> distinct shape` is a map, not a copy per rank.

use crate::arch::{Arch, Attn, MoeNames};
use crate::vision::{Held, Split, VisionTower};

/// vLLM pads the vocabulary of `VocabParallelEmbedding` and `ParallelLMHead` to a multiple of
/// this before splitting it over the TP ranks (`DEFAULT_VOCAB_PADDING_SIZE`,
/// `model_executor/layers/vocab_parallel_embedding.py`).
pub const VOCAB_PADDING: u64 = 64;

/// A parallel layout: `tp * pp * dp` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parallel {
    /// Tensor-parallel size (`--tensor-parallel-size`).
    pub tp: u64,
    /// Pipeline-parallel size (`--pipeline-parallel-size`).
    pub pp: u64,
    /// Data-parallel size (`--data-parallel-size`).
    pub dp: u64,
    /// `--enable-expert-parallel`: MoE experts placed whole over the `tp * dp` ranks instead of
    /// split on their intermediate dim.
    pub expert_parallel: bool,
}

impl Default for Parallel {
    fn default() -> Parallel {
        Parallel::SINGLE
    }
}

impl Parallel {
    /// One rank.
    pub const SINGLE: Parallel = Parallel {
        tp: 1,
        pp: 1,
        dp: 1,
        expert_parallel: false,
    };

    /// The number of ranks, `tp * pp * dp` (`None` on overflow).
    pub fn world_size(self) -> Option<u64> {
        self.tp.checked_mul(self.pp)?.checked_mul(self.dp)
    }

    /// The rank of a global index, in vLLM's order (DP outermost, then PP, then TP:
    /// `index = (dp * pp_size + pp) * tp_size + tp`).
    pub fn rank(self, index: u64) -> Rank {
        Rank {
            tp: index % self.tp,
            pp: (index / self.tp) % self.pp,
            dp: index / (self.tp * self.pp),
        }
    }
}

/// How a layout places the routed experts of a MoE model: the layout option beside
/// [`Parallel`] (`ImportOptions::experts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExpertSplit {
    /// As [`Parallel::expert_parallel`] says (vLLM's rules, docs/parallel.md).
    #[default]
    Parallel,
    /// Expert-parallel groups of `ep` ranks inside each TP group (`tp = ep x moe_tp`, `ep`
    /// dividing `tp`): each rank holds `experts / ep` routed experts (`ep` must divide them:
    /// every rank holds as many), each expert's intermediate dim split over the `moe_tp =
    /// tp / ep` ranks that hold it; shared experts stay one MLP split over all `tp` ranks
    /// (docs/parallel.md, "Expert-parallel groups"). `ep = 1` is [`ExpertSplit::Parallel`]
    /// without expert parallelism.
    Groups {
        /// The expert-parallel size.
        ep: u64,
    },
}

/// One rank's coordinates in a [`Parallel`] layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank {
    /// Tensor-parallel rank.
    pub tp: u64,
    /// Pipeline stage.
    pub pp: u64,
    /// Data-parallel rank.
    pub dp: u64,
}

/// What distinguishes one rank's circuit from another's: its pipeline stage and, with expert
/// parallelism, how many experts it holds (the first `E % ep` ranks hold one more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RankShape {
    /// Pipeline stage.
    pub stage: u64,
    /// The decoder layers of the stage, `start..end` (vLLM's `get_pp_indices`).
    pub layers: (u64, u64),
    /// Routed experts held per sparse layer (all of them without expert parallelism).
    pub local_experts: Option<u64>,
}

/// A layout the model cannot be sharded with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParallelError {
    /// A size of 0.
    #[error("{what} must be at least 1, got 0")]
    Zero {
        /// Which size.
        what: &'static str,
    },
    /// `tp * pp * dp` overflows.
    #[error("tp {tp} x pp {pp} x dp {dp} ranks overflow")]
    TooManyRanks {
        /// TP size.
        tp: u64,
        /// PP size.
        pp: u64,
        /// DP size.
        dp: u64,
    },
    /// The vocabulary padded to a multiple of 64 overflows.
    #[error(
        "vocab_size = {vocab} padded to a multiple of 64 (the vocab-parallel embedding pads it before splitting) overflows a 64-bit count"
    )]
    VocabOverflow {
        /// The vocabulary.
        vocab: u64,
    },
    /// A model size the tensor-parallel split must divide.
    #[error(
        "{what} = {value} is not divisible by {by_name} = {by} (tensor-parallel layers assert it: {source_file})"
    )]
    NotDivisible {
        /// The model size (`num_attention_heads`, `intermediate_size`, ...).
        what: &'static str,
        /// Its value.
        value: u64,
        /// What divides it (`tensor_parallel_size`, ...).
        by_name: &'static str,
        /// That value.
        by: u64,
        /// The vLLM source file that requires it.
        source_file: &'static str,
    },
    /// More pipeline stages than decoder layers: a stage would hold no layer.
    #[error(
        "pipeline_parallel_size = {pp} exceeds num_hidden_layers = {layers}: a stage would hold no layer"
    )]
    PpExceedsLayers {
        /// PP size.
        pp: u64,
        /// Layers.
        layers: u64,
    },
    /// Expert parallelism over more ranks than experts: a rank would hold none.
    #[error(
        "expert parallelism over tp x dp = {ep} ranks exceeds the {experts} experts: a rank would hold none"
    )]
    EpExceedsExperts {
        /// EP size.
        ep: u64,
        /// Experts.
        experts: u64,
    },
    /// A vision tower tensor whose split dim the tensor-parallel size does not divide.
    #[error(
        "the vision tower's `{tensor}` splits {size} {unit} over tensor_parallel_size = {tp}, which does not divide them (`divide` asserts it: {LINEAR})"
    )]
    TowerNotDivisible {
        /// The checkpoint's tensor name (`{i}` for the encoder layer).
        tensor: String,
        /// The size split.
        size: u64,
        /// What is split: `heads` or `features`.
        unit: &'static str,
        /// TP size.
        tp: u64,
    },
    /// A rank's expert intermediate size, rounded up to the multiple vLLM's MoE method pads it
    /// to, overflows.
    #[error(
        "moe_intermediate_size per rank = {value} rounded up to a multiple of {multiple} (the MXFP4 expert layout pads it: {MXFP4_ORACLE}) overflows a 64-bit count"
    )]
    ExpertPaddingOverflow {
        /// The rank's expert intermediate size before padding.
        value: u64,
        /// The multiple.
        multiple: u64,
    },
    /// An expert-parallel group's size that does not divide what it splits.
    #[error(
        "{what} = {value} is not divisible by {by_name} = {by} (the expert-parallel groups need it: each of the ep ranks of a group holds as many experts, each split over tp / ep ranks)"
    )]
    ExpertGroupNotDivisible {
        /// What is split (`num_experts`, `tensor_parallel_size`, `moe_intermediate_size`).
        what: &'static str,
        /// Its value.
        value: u64,
        /// What divides it.
        by_name: &'static str,
        /// That value.
        by: u64,
    },
    /// A combination whose sharding is not modelled.
    #[error("{what} is not modelled with {layout}")]
    NotModelled {
        /// What.
        what: &'static str,
        /// The layout.
        layout: String,
    },
}

/// vLLM's `get_pp_indices` (`distributed/utils.py`) without `VLLM_PP_LAYER_PARTITION`: each
/// stage gets `layers / pp` layers and the remainder goes one each to stages `pp - 2`,
/// `pp - 3`, ... (the last stage, which also runs the head, gets none of it).
pub fn pp_layers(layers: u64, pp: u64, stage: u64) -> (u64, u64) {
    let base = layers / pp;
    let remainder = layers % pp;
    let size = |s: u64| base + u64::from(s + 2 <= pp && s + 2 + remainder > pp);
    let start = (0..stage).map(size).sum();
    (start, start + size(stage))
}

/// Experts held by expert-parallel rank `ep_rank` of `ep` (vLLM's `determine_expert_map`,
/// `model_executor/layers/fused_moe/layer.py`, linear placement): `E / ep`, one more on the
/// first `E % ep` ranks.
pub fn ep_experts(experts: u64, ep: u64, ep_rank: u64) -> u64 {
    experts / ep + u64::from(ep_rank < experts % ep)
}

fn divide(
    what: &'static str,
    value: u64,
    by_name: &'static str,
    by: u64,
    source_file: &'static str,
) -> Result<u64, ParallelError> {
    if value.is_multiple_of(by) {
        Ok(value / by)
    } else {
        Err(ParallelError::NotDivisible {
            what,
            value,
            by_name,
            by,
            source_file,
        })
    }
}

const LINEAR: &str = "model_executor/layers/linear.py";
const FUSED_MOE: &str = "model_executor/layers/fused_moe/layer.py";
const GPT_OSS: &str = "model_executor/models/gpt_oss.py";
const MXFP4_ORACLE: &str = "model_executor/layers/fused_moe/oracle/mxfp4.py";
const GDN: &str = "model_executor/layers/mamba/gdn_linear_attn.py";

impl Parallel {
    fn layout(self) -> String {
        format!(
            "tp {} x pp {} x dp {}{}",
            self.tp,
            self.pp,
            self.dp,
            if self.expert_parallel { " with EP" } else { "" }
        )
    }

    /// Checks the layout against `arch` and returns every rank's shape, in global rank order.
    /// `expert_ffn_multiple` and `experts`: as for [`Parallel::shard`].
    pub(crate) fn rank_shapes(
        self,
        arch: &Arch,
        expert_ffn_multiple: Option<u64>,
        experts: ExpertSplit,
    ) -> Result<Vec<RankShape>, ParallelError> {
        for (what, v) in [
            ("tensor_parallel_size", self.tp),
            ("pipeline_parallel_size", self.pp),
            ("data_parallel_size", self.dp),
        ] {
            if v == 0 {
                return Err(ParallelError::Zero { what });
            }
        }
        let world = self.world_size().ok_or(ParallelError::TooManyRanks {
            tp: self.tp,
            pp: self.pp,
            dp: self.dp,
        })?;
        let layers = arch.layers.len() as u64;
        if self.pp > layers {
            return Err(ParallelError::PpExceedsLayers {
                pp: self.pp,
                layers,
            });
        }
        if let Some(m) = arch.moe
            && m.names == MoeNames::GptOss
        {
            // gpt-oss's MLPBlock asserts `intermediate_size % world_size == 0` with the
            // torch.distributed world, every rank of the job: tp x pp x dp (parallel_state.py
            // init_distributed_environment), with or without expert parallelism.
            divide(
                "intermediate_size",
                m.ffn,
                "tensor_parallel_size x pipeline_parallel_size x data_parallel_size",
                world,
                GPT_OSS,
            )?;
        }
        // Validates every split once (the shard of rank 0 performs them all).
        self.shard(arch, expert_ffn_multiple, experts)?;
        let ep = self.tp * self.dp;
        let group_ep = match experts {
            ExpertSplit::Groups { ep } if ep > 1 => Some(ep),
            _ => None,
        };
        (0..world)
            .map(|index| {
                let rank = self.rank(index);
                let local_experts = match (arch.moe, group_ep) {
                    // Every rank of a group holds as many (the shard checked that ep divides
                    // them).
                    (Some(m), Some(group)) => Some(m.experts / group),
                    (Some(m), None) if self.expert_parallel && ep > 1 => {
                        if ep > m.experts {
                            return Err(ParallelError::EpExceedsExperts {
                                ep,
                                experts: m.experts,
                            });
                        }
                        Some(ep_experts(m.experts, ep, rank.dp * self.tp + rank.tp))
                    }
                    _ => None,
                };
                Ok(RankShape {
                    stage: rank.pp,
                    layers: pp_layers(layers, self.pp, rank.pp),
                    local_experts,
                })
            })
            .collect()
    }

    /// The architecture one TP rank holds (every TP rank of a stage holds the same shapes):
    /// heads, KV heads, FFN and vocab per rank. Layers and expert placement are not cut here
    /// (see [`RankShape`]). `expert_ffn_multiple`: the multiple vLLM's MoE method rounds a
    /// rank's expert intermediate size up to (MXFP4 experts, `maybe_roundup_sizes`), if any;
    /// `experts`: how the routed experts are placed.
    pub(crate) fn shard(
        self,
        arch: &Arch,
        expert_ffn_multiple: Option<u64>,
        experts: ExpertSplit,
    ) -> Result<Arch, ParallelError> {
        let tp = self.tp;
        let mut a = arch.clone();
        a.tp = tp;
        if let Some(tower) = &mut a.vision {
            *tower = shard_tower(tower, tp)?;
        }
        // Column-parallel q (QKVParallelLinear) and row-parallel o_proj split the heads.
        a.heads = divide(
            "num_attention_heads",
            arch.heads,
            "tensor_parallel_size",
            tp,
            LINEAR,
        )?;
        if let Attn::Gqa { kv_heads, .. } = &mut a.attn {
            // QKVParallelLinear: with tp >= kv heads each rank holds one KV head, replicated
            // tp / kv_heads times (which must divide); otherwise kv_heads / tp.
            *kv_heads = if tp >= *kv_heads {
                divide(
                    "tensor_parallel_size",
                    tp,
                    "num_key_value_heads",
                    *kv_heads,
                    LINEAR,
                )?;
                1
            } else {
                divide(
                    "num_key_value_heads",
                    *kv_heads,
                    "tensor_parallel_size",
                    tp,
                    LINEAR,
                )?
            };
        }
        // MLA: q_b_proj, kv_b_proj and o_proj split over heads (derived from `heads` by the
        // emitter); q_a_proj, kv_a_proj_with_mqa and the latent cache are replicated.
        if let Some(d) = &mut a.dense {
            d.ffn = divide(
                "intermediate_size",
                d.ffn,
                "tensor_parallel_size",
                tp,
                LINEAR,
            )?;
        }
        if let ExpertSplit::Groups { ep } = experts
            && ep != 1
            && let Some(m) = &mut a.moe
        {
            self.shard_groups(m, &mut a.shared_ffn, ep)?;
        } else if let Some(m) = &mut a.moe {
            let moe_tp = tp * self.dp;
            let shared = m.shared_experts > 0 || m.gated_shared.is_some();
            if shared && (self.dp > 1 || self.expert_parallel) {
                // vLLM's shared experts stay split over TP while routed ones split over
                // tp x dp or are placed by EP; the circuit derives both widths from one dim.
                return Err(ParallelError::NotModelled {
                    what: "shared experts with data or expert parallelism",
                    layout: self.layout(),
                });
            }
            // With EP the experts stay whole; how many a rank holds is its
            // `RankShape::local_experts` (the router still scores all of them).
            if !(self.expert_parallel && moe_tp > 1) {
                // Without EP, FusedMoE flattens TP x DP and splits each expert's
                // intermediate dim over it.
                m.ffn = divide(
                    "moe_intermediate_size",
                    m.ffn,
                    "tensor_parallel_size x data_parallel_size",
                    moe_tp,
                    FUSED_MOE,
                )?;
            }
            // FusedMoE creates the experts at `maybe_roundup_sizes`' padded width, with or
            // without EP (fused_moe/layer.py); the padding is zeros the kernels multiply.
            if let Some(multiple) = expert_ffn_multiple {
                m.ffn = m.ffn.div_ceil(multiple).checked_mul(multiple).ok_or(
                    ParallelError::ExpertPaddingOverflow {
                        value: m.ffn,
                        multiple,
                    },
                )?;
            }
        }
        if let Some(m) = &mut a.moe
            && let Some(w) = &mut m.gated_shared
        {
            // Qwen3-Next's shared expert is a Qwen3NextMLP (merged column-parallel gate and
            // up, row-parallel down); its one-logit gate is replicated.
            *w = divide(
                "shared_expert_intermediate_size",
                *w,
                "tensor_parallel_size",
                tp,
                LINEAR,
            )?;
        }
        if !a.mtp.is_empty() && a.mtp_names == crate::arch::MtpNames::Qwen3Next {
            // Qwen3NextMultiTokenPredictor's `fc` is a ColumnParallelLinear.
            a.mtp_fc_rows = divide(
                "hidden_size",
                arch.hidden,
                "tensor_parallel_size",
                tp,
                LINEAR,
            )?;
        }
        if let Some(d) = &mut a.delta_net {
            // GatedDeltaNetAttention splits the key and value heads (in_proj_qkvz, in_proj_ba,
            // conv1d, dt_bias, A_log, out_proj and the recurrent state with them); the gated
            // norm over one value head is replicated.
            d.k_heads = divide(
                "linear_num_key_heads",
                d.k_heads,
                "tensor_parallel_size",
                tp,
                GDN,
            )?;
            d.v_heads = divide(
                "linear_num_value_heads",
                d.v_heads,
                "tensor_parallel_size",
                tp,
                GDN,
            )?;
        }
        if tp > 1 {
            // VocabParallelEmbedding / ParallelLMHead: pad, then split evenly. At tp 1 the
            // circuit keeps the checkpoint's vocab (docs/parallel.md says why).
            let padded = arch
                .vocab
                .div_ceil(VOCAB_PADDING)
                .checked_mul(VOCAB_PADDING)
                .ok_or(ParallelError::VocabOverflow { vocab: arch.vocab })?;
            a.vocab = divide(
                "padded vocab_size",
                padded,
                "tensor_parallel_size",
                tp,
                "model_executor/layers/vocab_parallel_embedding.py",
            )?;
        }
        Ok(a)
    }
}

impl Parallel {
    /// The routed experts of one rank of an expert-parallel group of `ep` ranks inside the TP
    /// group ([`ExpertSplit::Groups`]): `moe_ffn / (tp / ep)` wide (the count is the rank
    /// shape's), and the shared experts' width over all `tp` ranks in `shared_ffn`.
    fn shard_groups(
        self,
        m: &mut crate::arch::Moe,
        shared_ffn: &mut Option<u64>,
        ep: u64,
    ) -> Result<(), ParallelError> {
        let tp = self.tp;
        let refuse = |what: &'static str| ParallelError::NotModelled {
            what,
            layout: format!("{} with expert-parallel groups of {ep}", self.layout()),
        };
        if ep == 0 {
            return Err(ParallelError::Zero {
                what: "expert_parallel_size",
            });
        }
        if self.dp > 1 || self.expert_parallel {
            // The groups sit inside one TP group; data-parallel replicas of it are the
            // caller's, and vLLM's expert parallelism is the other option.
            return Err(refuse(
                "expert-parallel groups with data parallelism or with expert_parallel",
            ));
        }
        if !matches!(m.names, MoeNames::Mixtral | MoeNames::Mlp) {
            // gpt-oss's, Llama 4's and the fused-tensor checkpoints' experts.
            return Err(refuse("this model's experts in expert-parallel groups"));
        }
        let group = |what, value, by_name, by| {
            if by != 0 && u64::is_multiple_of(value, by) {
                Ok(value / by)
            } else {
                Err(ParallelError::ExpertGroupNotDivisible {
                    what,
                    value,
                    by_name,
                    by,
                })
            }
        };
        let moe_tp = group("tensor_parallel_size", tp, "expert_parallel_size", ep)?;
        group("num_experts", m.experts, "expert_parallel_size", ep)?;
        let whole = m.ffn;
        m.ffn = group(
            "moe_intermediate_size",
            whole,
            "tensor_parallel_size / expert_parallel_size",
            moe_tp,
        )?;
        if m.shared_experts > 0 {
            // The shared experts are a tensor-parallel MLP over all tp ranks.
            let width = m
                .shared_experts
                .checked_mul(whole)
                .ok_or_else(|| refuse("a shared-experts width that overflows"))?;
            *shared_ffn = Some(divide(
                "n_shared_experts x moe_intermediate_size",
                width,
                "tensor_parallel_size",
                tp,
                LINEAR,
            )?);
        }
        Ok(())
    }
}

/// What one of `tp` ranks holds of a vision tower: each tensor's share as its [`Split`] says.
fn shard_tower(tower: &VisionTower, tp: u64) -> Result<VisionTower, ParallelError> {
    let shard = |held: &[Held]| -> Result<Vec<Held>, ParallelError> {
        held.iter()
            .map(|h| {
                let mut h = h.clone();
                let refuse = |size: u64, unit: &'static str| ParallelError::TowerNotDivisible {
                    tensor: h.tensor.clone(),
                    size,
                    unit,
                    tp,
                };
                let (dim, units, unit) = match h.split {
                    Split::Whole => return Ok(h),
                    Split::Out => (0, h.shape[0], "features"),
                    Split::Heads(heads) => (0, heads, "heads"),
                    Split::In => (h.shape.len() - 1, h.shape[h.shape.len() - 1], "features"),
                };
                if !units.is_multiple_of(tp) {
                    return Err(refuse(units, unit));
                }
                h.shape[dim] /= tp;
                Ok(h)
            })
            .collect()
    };
    Ok(VisionTower {
        once: shard(&tower.once)?,
        layer: shard(&tower.layer)?,
        layers: tower.layers,
        read_layers: tower.read_layers,
        unread: tower.unread.clone(),
        encoder: tower.encoder,
        deepstack_layers: tower.deepstack_layers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pp_indices_split_layers_as_get_pp_indices_does() {
        // get_pp_indices(32, r, 2), (30, r, 4) and (10, r, 4).
        assert_eq!(pp_layers(32, 2, 0), (0, 16));
        assert_eq!(pp_layers(32, 2, 1), (16, 32));
        let four: Vec<_> = (0..4).map(|s| pp_layers(30, 4, s)).collect();
        assert_eq!(four, [(0, 7), (7, 15), (15, 23), (23, 30)]);
        let ten: Vec<_> = (0..4).map(|s| pp_layers(10, 4, s)).collect();
        assert_eq!(ten, [(0, 2), (2, 5), (5, 8), (8, 10)]);
    }

    #[test]
    fn ep_remainder_on_first_ranks() {
        let held: Vec<_> = (0..3).map(|r| ep_experts(8, 3, r)).collect();
        assert_eq!(held, [3, 3, 2]);
    }

    #[test]
    fn rank_order_is_dp_pp_tp() {
        let p = Parallel {
            tp: 2,
            pp: 3,
            dp: 2,
            expert_parallel: false,
        };
        assert_eq!(
            p.rank(7),
            Rank {
                tp: 1,
                pp: 0,
                dp: 1
            }
        );
        assert_eq!(p.world_size(), Some(12));
    }
}
