//! Importing a config for a parallel layout: one circuit per distinct rank shape, each
//! holding exactly what such a rank holds (its stage's layers, its shard of every tensor), and
//! the map from every rank to its shape.
//!
//! Invariants: `rank_shape.len() == world_size`; every index of `rank_shape` points into
//! `shapes` and `imports` (same length, same order, shapes sorted); a rank's weights are its
//! share of the checkpoint's tensors held as `ImportOptions::load` says, so the single rank of
//! `Parallel::SINGLE` reproduces [`crate::import_with`] under the same options
//! (docs/parallel.md).

use crate::emit::{Stage, stage_circuit};
use crate::error::HfError;
use crate::options::{ImportOptions, SideFile};
use crate::parallel::{Parallel, Rank, RankShape};
use crate::{Import, import_shaped};

/// The circuits of a parallel layout.
#[derive(Debug, Clone)]
pub struct ParallelImport {
    /// The layout.
    pub parallel: Parallel,
    /// The distinct rank shapes, sorted (stage first).
    pub shapes: Vec<RankShape>,
    /// One import per shape, in the order of `shapes`.
    pub imports: Vec<Import>,
    /// For each global rank (vLLM's order, [`Parallel::rank`]), the index of its shape.
    pub rank_shape: Vec<usize>,
}

impl ParallelImport {
    /// The ranks of shape `index`.
    pub fn ranks_of(&self, index: usize) -> Vec<Rank> {
        self.rank_shape
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s == index)
            .map(|(r, _)| self.parallel.rank(r as u64))
            .collect()
    }
}

/// Imports `text` for `options.parallel`: per distinct rank the circuit of what it holds once
/// loaded (docs/parallel.md): the checkpoint's tensors sharded as tensor-parallel linear
/// layers split them, held as `options.load` says (e.g. MXFP4 experts padded and swizzled
/// for triton_kernels). Act-order quantized experts are refused with TP > 1.
pub fn import_parallel(
    text: &str,
    origin: &str,
    options: &ImportOptions,
    side_files: &[SideFile<'_>],
) -> Result<ParallelImport, HfError> {
    let parallel = options.parallel;
    let mut shapes: Vec<RankShape> = Vec::new();
    let mut per_rank: Vec<RankShape> = Vec::new();
    let imports = import_shaped(text, origin, options, side_files, |arch, name, storage| {
        let fail = |source| HfError::Parallel {
            origin: origin.to_owned(),
            source,
        };
        // A rank's quantized tensors are its share of each module's shape, as vLLM's column-
        // and row-parallel layers load them (per-channel scales split with the output, block
        // scales with both dims, per-tensor ones kept whole; under act order a row-parallel
        // rank keeps every group's scales, `Size::InWhole`). Act-order experts are refused:
        // how vLLM's MoE methods place their scales then is not modelled.
        if storage.scheme.is_some_and(|s| s.act_order()) && parallel.tp > 1 && arch.moe.is_some() {
            return Err(fail(crate::parallel::ParallelError::NotModelled {
                what: "tensor parallelism of act-order (desc_act, g_idx) quantized experts",
                layout: format!("tp {}", parallel.tp),
            }));
        }
        let expert_ffn_multiple = storage
            .scheme
            .and_then(|s| s.loaded_experts(storage.load))
            .map(|(_, multiple)| multiple);
        per_rank = parallel
            .rank_shapes(arch, expert_ffn_multiple, options.experts)
            .map_err(fail)?;
        shapes = per_rank.clone();
        shapes.sort();
        shapes.dedup();
        shapes
            .iter()
            .map(|shape| {
                let sharded = parallel
                    .shard(arch, expert_ffn_multiple, options.experts)
                    .map_err(fail)?;
                let stage = Stage {
                    layers: (shape.layers.0 as usize, shape.layers.1 as usize),
                    local_experts: shape.local_experts,
                };
                stage_circuit(&sharded, name, storage, &stage)
            })
            .collect()
    })?;
    let rank_shape = per_rank
        .iter()
        .map(|s| shapes.binary_search(s).unwrap_or_default())
        .collect();
    Ok(ParallelImport {
        parallel,
        shapes,
        imports,
        rank_shape,
    })
}
