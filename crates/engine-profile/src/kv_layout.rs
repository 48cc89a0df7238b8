//! A layout's KV cache: the cache layers read from each stage's circuit (`CacheLayer`: what a
//! layer caches per token or per sequence, its window or chunk) and the layout an engine gives
//! them ([`KvLayout`]: groups, block sizes, the bytes a block costs each stage), which the
//! engine file's `kv_cache.layout` mechanism computes (`mechanisms.rs`). Blocks,
//! printed tokens, concurrency and the max-model-len check follow from the layout
//! (docs/engines.md, "KV-cache layout").
//!
//! Invariants: a cache layer is the set of states written inside one block instance of the
//! circuit; a state's per-token and per-sequence parts count apart (a state may declare both);
//! every size is checked u64; a layout the engine refuses to build is an
//! [`EngineError::NotModelled`] naming the circuit, never a guess.

use circuit_ir::Circuit;
use model_facts::ModelFacts;

use crate::{EngineError, EngineProfile, StageCircuit};

/// What a cache layer holds (the kinds of vLLM's KV-cache specs, `v1/kv_cache_interface.py`,
/// which other engines' pools tell apart too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerKind {
    /// Every token of the sequence (`FullAttentionSpec`).
    Full,
    /// The last `window` tokens (`SlidingWindowSpec`).
    Sliding {
        /// The window, tokens.
        window: u64,
    },
    /// The tokens of the current chunk (`ChunkedLocalAttentionSpec`, Llama 4).
    Chunked {
        /// The chunk, tokens.
        chunk: u64,
    },
    /// A per-sequence recurrent state (`MambaSpec`: Qwen3-Next's Gated DeltaNet).
    Recurrent,
}

/// One KV-cache group (vLLM's `KVCacheGroupSpec`): layers sharing one block table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvGroup {
    /// The layers' kind.
    pub kind: LayerKind,
    /// Tokens per block of the group's spec.
    pub block_size: u64,
    /// Layers of the whole model in the group (a padded group has fewer than the others).
    pub layers: u64,
    /// Blocks one request of max-model-len takes in the group (`max_memory_usage_bytes` over
    /// the page size).
    pub blocks_per_request: u64,
}

/// The layout of a layout's KV cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvLayout {
    /// The groups, in the engine's order.
    pub groups: Vec<KvGroup>,
    /// Bytes one block costs a worker of each stage.
    pub stage_block_bytes: Vec<u64>,
    /// Tokens per printed block: the smallest block size of the groups.
    pub token_block_size: u64,
    /// Blocks one request of max-model-len needs over all groups: the concurrency's divisor.
    pub blocks_per_request: u64,
    /// Bytes of KV memory a worker of each stage must have for the start-up check to pass:
    /// one request of max-model-len, counted over the layers and compared where the engine
    /// file's `kv_cache.startup_check` says (its own layers, or the whole model's against the
    /// smallest worker's memory); 0 for a stage without cache layers.
    pub stage_request_bytes: Vec<u64>,
}

impl KvLayout {
    /// The tokens printed for `blocks` blocks: `blocks // groups * smallest block size`
    /// (vLLM's `_report_kv_cache_config`).
    pub fn tokens(&self, blocks: u64) -> Option<u64> {
        let groups = self.groups.len() as u64;
        if groups == 0 {
            return Some(0);
        }
        (blocks / groups).checked_mul(self.token_block_size)
    }

    /// Whether every worker's KV memory holds one request of max-model-len, as the engine's
    /// start-up check counts it ([`KvLayout::stage_request_bytes`]).
    pub fn holds_one_request(&self, workers: &[crate::Worker]) -> bool {
        workers.iter().all(|w| {
            usize::try_from(w.pp_stage)
                .ok()
                .and_then(|s| self.stage_request_bytes.get(s))
                .is_none_or(|&need| w.kv_cache >= need)
        })
    }

    /// The fewest blocks whose printed tokens reach `tokens`.
    pub fn blocks_for_tokens(&self, tokens: u64) -> Option<u64> {
        let groups = self.groups.len() as u64;
        if groups == 0 || self.token_block_size == 0 {
            return Some(0);
        }
        tokens.div_ceil(self.token_block_size).checked_mul(groups)
    }
}

/// One cache layer of a stage's circuit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CacheLayer {
    /// The stage, 0-based.
    pub(crate) stage: usize,
    pub(crate) kind: LayerKind,
    /// Attention: bytes per cached token; recurrent: bytes per sequence.
    pub(crate) bytes: u64,
}

/// A state's window in words, for messages.
fn window_text(window: Option<u64>) -> String {
    match window {
        Some(w) => format!("a window of {w} tokens"),
        None => "every token".to_owned(),
    }
}

pub(crate) fn not_modelled(circuit: &Circuit, what: String) -> EngineError {
    EngineError::NotModelled {
        circuit: circuit.name().to_owned(),
        what,
    }
}

/// The cache layers of `circuit` (stage `stage`), in execution order: the states written in one
/// block instance form one layer. A windowed attention state is chunked local attention when
/// the model has `attention_chunk_size` (Llama 4 has no sliding layer), else a sliding window.
pub(crate) fn cache_layers(
    circuit: &Circuit,
    stage: usize,
    model: &ModelFacts,
) -> Result<Vec<CacheLayer>, EngineError> {
    // (instance, per-token bytes, window, per-sequence bytes), in order of first appearance.
    let mut rows: Vec<(circuit_ir::InstanceIdx, u64, Option<u64>, u64)> = Vec::new();
    let overflow = || EngineError::Overflow {
        what: format!("{}: cache bytes of a layer", circuit.name()),
    };
    for state in circuit.states().values() {
        // circuit-ir validates that a state's writer is one of its nodes.
        let Some(instance) = circuit.nodes().get(state.writer).map(|n| n.instance) else {
            return Err(not_modelled(
                circuit,
                format!("state {} has no writer node", state.id),
            ));
        };
        let pos = match rows.iter().position(|r| r.0 == instance) {
            Some(p) => p,
            None => {
                rows.push((instance, 0, None, 0));
                rows.len() - 1
            }
        };
        let row = &mut rows[pos];
        let bytes_of = |width: u64| {
            state.format.bytes(1, width).map_err(|e| EngineError::Plan {
                circuit: circuit.name().to_owned(),
                rows: 1,
                message: e.to_string(),
            })
        };
        if state.per_token > 0 {
            if row.1 > 0 && row.2 != state.window {
                return Err(not_modelled(
                    circuit,
                    format!(
                        "state {} holds {} beside another state of {} in one layer",
                        state.id,
                        window_text(state.window),
                        window_text(row.2)
                    ),
                ));
            }
            row.1 = row
                .1
                .checked_add(bytes_of(state.per_token)?)
                .ok_or_else(overflow)?;
            row.2 = state.window;
        }
        if state.per_sequence > 0 {
            row.3 = row
                .3
                .checked_add(bytes_of(state.per_sequence)?)
                .ok_or_else(overflow)?;
        }
    }
    let mut layers = Vec::new();
    for (_, per_token, window, per_sequence) in rows {
        let layer = match (per_token, per_sequence) {
            (0, 0) => continue,
            (t, 0) => CacheLayer {
                stage,
                kind: match (window, model.attention_chunk_size) {
                    (None, _) => LayerKind::Full,
                    (Some(w), Some(_)) => LayerKind::Chunked { chunk: w },
                    (Some(w), None) => LayerKind::Sliding { window: w },
                },
                bytes: t,
            },
            (0, s) => CacheLayer {
                stage,
                kind: LayerKind::Recurrent,
                bytes: s,
            },
            _ => {
                return Err(not_modelled(
                    circuit,
                    "a layer holding both per-token and per-sequence state (an engine gives a layer one KV-cache spec)".to_owned(),
                ));
            }
        };
        layers.push(layer);
    }
    Ok(layers)
}

impl EngineProfile {
    /// The KV-cache layout of `stages` (one circuit per pipeline stage) at `max_model_len`
    /// with `tokens` batched tokens and `block_size` tokens per block (before a model with
    /// recurrent state raises it), by the engine file's mechanism.
    pub(crate) fn kv_layout(
        &self,
        stages: &[StageCircuit<'_>],
        model: &ModelFacts,
        block_size: u64,
        max_model_len: u64,
        tokens: u64,
    ) -> Result<KvLayout, EngineError> {
        let mut layers = Vec::new();
        for (i, s) in stages.iter().enumerate() {
            layers.extend(cache_layers(s.circuit, i, model)?);
        }
        crate::mechanisms::kv_layout(
            &self.facts.run()?.kv,
            &self.origin,
            stages,
            &layers,
            block_size,
            max_model_len,
            tokens,
        )
    }
}
