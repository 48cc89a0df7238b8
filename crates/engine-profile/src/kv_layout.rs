//! The KV-cache layout vLLM 0.19 gives a layout's cache layers at start-up
//! (`v1/core/kv_cache_utils.py` `get_kv_cache_configs`): each cache layer of each stage becomes a
//! spec (full attention, sliding window, chunked local attention, or a recurrent "mamba" state),
//! the specs of the whole model are grouped (one group when every layer needs the same token
//! slots, else the hybrid manager's groups of one page size), and each stage's workers get the
//! bytes one block costs them. Blocks, printed tokens, concurrency and the max-model-len check
//! follow from the groups; the engine file gives the per-request block counts, the recurrent
//! block sizes and the grouping's slack (docs/engines.md, "KV-cache layout").
//!
//! Invariants: a cache layer is the set of states written inside one block instance of the
//! circuit; every size is checked u64; a layout vLLM refuses to build (pages that do not divide,
//! recurrent state without the hybrid manager, a stage without cache layers) is an
//! [`EngineError::NotModelled`] naming the circuit, never a guess.

use circuit_ir::{Circuit, StateKind};

use crate::{EngineError, EngineProfile, ModelFacts, StageCircuit};

/// What a cache layer holds, as vLLM's KV-cache spec types tell them apart
/// (`v1/kv_cache_interface.py`).
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

/// One KV-cache group as vLLM forms it (`KVCacheGroupSpec`): layers sharing one block table.
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
    /// The groups, in vLLM's order (by kind in order of first appearance, then by stride).
    pub groups: Vec<KvGroup>,
    /// Bytes one block costs a worker of each stage: the sum of its layers' pages with one
    /// group, else the page times the most layers of one group the stage holds (vLLM's
    /// `get_num_blocks`: `available // page_size // group_size`).
    pub stage_block_bytes: Vec<u64>,
    /// Tokens per printed block: the smallest block size of the groups (`_report_kv_cache_config`).
    pub token_block_size: u64,
    /// Blocks one request of max-model-len needs over all groups: the concurrency's divisor and
    /// the start-up check (`_check_enough_kv_cache_memory`).
    pub blocks_per_request: u64,
}

impl KvLayout {
    /// The tokens vLLM prints for `blocks` blocks: `num_blocks // len(groups) * min_block_size`.
    pub fn tokens(&self, blocks: u64) -> Option<u64> {
        let groups = self.groups.len() as u64;
        if groups == 0 {
            return Some(0);
        }
        (blocks / groups).checked_mul(self.token_block_size)
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
struct CacheLayer {
    stage: usize,
    kind: LayerKind,
    /// Attention: bytes per cached token; recurrent: bytes per sequence.
    bytes: u64,
}

/// A layer's spec: its kind, tokens per block and bytes per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Spec {
    kind: LayerKind,
    block_size: u64,
    page: u64,
}

fn not_modelled(circuit: &Circuit, what: String) -> EngineError {
    EngineError::NotModelled {
        circuit: circuit.name().to_owned(),
        what,
    }
}

/// The cache layers of `circuit` (stage `stage`), in execution order: the states written in one
/// block instance form one layer. A windowed attention state is chunked local attention when
/// the model has `attention_chunk_size` (Llama 4 has no sliding layer), else a sliding window.
fn cache_layers(
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
        match state.kind {
            StateKind::PerToken => {
                if row.1 > 0 && row.2 != state.window {
                    return Err(not_modelled(
                        circuit,
                        format!(
                            "state {} holds a window of {:?} tokens beside another of {:?} in one layer",
                            state.id, state.window, row.2
                        ),
                    ));
                }
                row.1 = row
                    .1
                    .checked_add(bytes_of(state.per_token)?)
                    .ok_or_else(overflow)?;
                row.2 = state.window;
            }
            StateKind::PerSequence => {
                row.3 = row
                    .3
                    .checked_add(bytes_of(state.per_sequence)?)
                    .ok_or_else(overflow)?;
            }
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
                    "a layer holding both per-token and per-sequence state (vLLM gives a layer one KV-cache spec)".to_owned(),
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
    /// recurrent state raises it).
    pub(crate) fn kv_layout(
        &self,
        stages: &[StageCircuit<'_>],
        model: &ModelFacts,
        block_size: u64,
        max_model_len: u64,
        tokens: u64,
    ) -> Result<KvLayout, EngineError> {
        let facts = &self.file.kv_cache;
        let first = stages.first().map(|s| s.circuit);
        let Some(named) = first else {
            return Ok(KvLayout {
                groups: Vec::new(),
                stage_block_bytes: Vec::new(),
                token_block_size: block_size,
                blocks_per_request: 0,
            });
        };
        let mut layers = Vec::new();
        for (i, s) in stages.iter().enumerate() {
            layers.extend(cache_layers(s.circuit, i, model)?);
        }
        let overflow = |what: &str| EngineError::Overflow {
            what: what.to_owned(),
        };
        let base = [
            ("max_model_len", max_model_len),
            ("tokens", tokens),
            ("block_size", block_size),
        ];

        // Recurrent layers: vLLM raises the attention block size until an attention page holds
        // a recurrent state, and pads the recurrent page to the attention page
        // (model_executor/models/config.py:195-317 HybridAttentionMambaModelConfig).
        let recurrent: Vec<u64> = layers
            .iter()
            .filter(|l| l.kind == LayerKind::Recurrent)
            .map(|l| l.bytes)
            .collect();
        let attention: Vec<u64> = layers
            .iter()
            .filter(|l| l.kind != LayerKind::Recurrent)
            .map(|l| l.bytes)
            .collect();
        let mut attention_block = block_size;
        let mut recurrent_spec = None;
        if let Some(&state) = recurrent.first() {
            if !facts.hybrid_manager {
                return Err(not_modelled(
                    named,
                    "per-sequence recurrent state without the hybrid KV-cache manager (vLLM 0.19 raises: the specs cannot be unified, kv_cache_utils.py unify_hybrid_kv_cache_specs)".to_owned(),
                ));
            }
            // vLLM derives one page per kind from the model config, so the layers must agree.
            let distinct = |v: &[u64]| {
                let mut d = v.to_vec();
                d.sort_unstable();
                d.dedup();
                d
            };
            let (sizes, states) = (distinct(&attention), distinct(&recurrent));
            let [per_token] = sizes[..] else {
                return Err(not_modelled(
                    named,
                    format!(
                        "recurrent state beside attention layers of {sizes:?} bytes per token (vLLM sizes one attention page from the model config, and needs one)"
                    ),
                ));
            };
            if states.len() != 1 {
                return Err(not_modelled(
                    named,
                    format!(
                        "recurrent states of {states:?} bytes per sequence (vLLM sizes one recurrent page from the model config)"
                    ),
                ));
            }
            let r = &facts.recurrent;
            let mut names = base.to_vec();
            names.push(("recurrent_page", state));
            names.push(("attention_page_per_token", per_token));
            attention_block = self.eval(
                "kv_cache.recurrent.attention_block_size",
                &r.attention_block_size,
                &names,
            )?;
            let page = attention_block
                .checked_mul(per_token)
                .ok_or_else(|| overflow("attention page bytes"))?;
            if page < state {
                return Err(EngineError::Expr {
                    origin: self.origin.clone(),
                    item: "kv_cache.recurrent.attention_block_size".to_owned(),
                    text: r.attention_block_size.clone(),
                    message: format!(
                        "gives {attention_block} tokens, a page of {page} bytes below the recurrent state's {state}"
                    ),
                });
            }
            let block = self.eval("kv_cache.recurrent.block_size", &r.block_size, &names)?;
            recurrent_spec = Some(Spec {
                kind: LayerKind::Recurrent,
                block_size: block,
                page,
            });
        }

        let mut specs = Vec::with_capacity(layers.len());
        for l in &layers {
            specs.push(match (l.kind, recurrent_spec) {
                // Set above whenever a layer is recurrent.
                (LayerKind::Recurrent, Some(spec)) => spec,
                (kind, _) => Spec {
                    kind,
                    block_size: attention_block,
                    page: attention_block
                        .checked_mul(l.bytes)
                        .ok_or_else(|| overflow("attention page bytes"))?,
                },
            });
        }
        // Without the hybrid manager, windowed layers beside full ones are kept as full
        // attention (kv_cache_utils.py:1160-1219 unify_hybrid_kv_cache_specs).
        if !facts.hybrid_manager && specs.iter().any(|s| s.kind == LayerKind::Full) {
            for s in &mut specs {
                s.kind = LayerKind::Full;
            }
        }
        let stages_n = stages.len();
        if specs.is_empty() {
            return Ok(KvLayout {
                groups: Vec::new(),
                stage_block_bytes: vec![0; stages_n],
                token_block_size: block_size,
                blocks_per_request: 0,
            });
        }

        // One type (every layer the same kind and window and block size, pages free to differ):
        // one group of every layer (kv_cache_utils.py:1243-1252: one spec, or UniformTypeKVCacheSpecs);
        // a block costs each worker its layers' pages.
        let one = specs[0];
        let uniform = specs
            .iter()
            .all(|s| s.kind == one.kind && s.block_size == one.block_size);
        if uniform {
            let mut stage_block_bytes = vec![0u64; stages_n];
            for (l, s) in layers.iter().zip(&specs) {
                stage_block_bytes[l.stage] = stage_block_bytes[l.stage]
                    .checked_add(s.page)
                    .ok_or_else(|| overflow("KV block bytes"))?;
            }
            let per_request = self.blocks_per_request(one.kind, one.block_size, &base)?;
            return Ok(KvLayout {
                groups: vec![KvGroup {
                    kind: one.kind,
                    block_size: one.block_size,
                    layers: specs.len() as u64,
                    blocks_per_request: per_request,
                }],
                stage_block_bytes,
                token_block_size: one.block_size,
                blocks_per_request: per_request,
            });
        }

        // Several types: one page size for all (kv_cache_utils.py:914-951: a smaller page grows
        // its block size by the ratio, which must be whole), then groups of one size.
        let page = specs.iter().map(|s| s.page).max().unwrap_or(0);
        for s in &mut specs {
            if s.page == 0 || !page.is_multiple_of(s.page) {
                return Err(not_modelled(
                    named,
                    format!(
                        "a page of {} bytes that does not divide the largest, {page} (vLLM 0.19 raises NotImplementedError, kv_cache_utils.py unify_kv_cache_spec_page_size)",
                        s.page
                    ),
                ));
            }
            s.block_size = s
                .block_size
                .checked_mul(page / s.page)
                .ok_or_else(|| overflow("unified block size"))?;
            s.page = page;
        }
        // Layers by spec, specs in order of first appearance (kv_cache_utils.py:1027-1029).
        let mut types: Vec<(Spec, Vec<usize>)> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            match types.iter_mut().find(|(t, _)| t == s) {
                Some((_, v)) => v.push(i),
                None => types.push((*s, vec![i])),
            }
        }
        // The group size is the fewest layers of a type, or the most when that is less than
        // `group_size_slack` times the fewest (kv_cache_utils.py:1043-1054).
        let fewest = types.iter().map(|(_, v)| v.len()).min().unwrap_or(0) as u64;
        let most = types.iter().map(|(_, v)| v.len()).max().unwrap_or(0) as u64;
        let group_size = if (most as f64) < fewest as f64 * facts.group_size_slack {
            most
        } else {
            fewest
        };
        let mut groups = Vec::new();
        // Per stage, the most layers of one group it holds (the projected group size).
        let mut stage_group_size = vec![0u64; stages_n];
        let mut blocks_per_request = 0u64;
        for (spec, members) in &types {
            let n = members.len() as u64;
            let count = n.div_ceil(group_size);
            let per_request = self.blocks_per_request(spec.kind, spec.block_size, &base)?;
            // Group i takes layers[i::count], so every stage holds about its share of each
            // group (kv_cache_utils.py:1056-1077).
            for i in 0..count as usize {
                let mut on_stage = vec![0u64; stages_n];
                let mut size = 0u64;
                for &m in members.iter().skip(i).step_by(count as usize) {
                    on_stage[layers[m].stage] += 1;
                    size += 1;
                }
                for (acc, c) in stage_group_size.iter_mut().zip(on_stage) {
                    *acc = (*acc).max(c);
                }
                groups.push(KvGroup {
                    kind: spec.kind,
                    block_size: spec.block_size,
                    layers: size,
                    blocks_per_request: per_request,
                });
                blocks_per_request = blocks_per_request
                    .checked_add(per_request)
                    .ok_or_else(|| overflow("blocks per request"))?;
            }
        }
        let mut stage_block_bytes = Vec::with_capacity(stages_n);
        for (i, &g) in stage_group_size.iter().enumerate() {
            if g == 0 {
                return Err(not_modelled(
                    stages[i].circuit,
                    "a pipeline stage without cache layers beside a hybrid layout (vLLM asserts group_size > 0)".to_owned(),
                ));
            }
            stage_block_bytes.push(
                page.checked_mul(g)
                    .ok_or_else(|| overflow("KV block bytes"))?,
            );
        }
        let token_block_size = groups.iter().map(|g| g.block_size).min().unwrap_or(0);
        Ok(KvLayout {
            groups,
            stage_block_bytes,
            token_block_size,
            blocks_per_request,
        })
    }

    /// Blocks one request of max-model-len takes in a group of `kind` with `block_size` tokens
    /// per block (the engine file's `kv_cache.blocks_per_request`).
    fn blocks_per_request(
        &self,
        kind: LayerKind,
        block_size: u64,
        base: &[(&str, u64)],
    ) -> Result<u64, EngineError> {
        let b = &self.file.kv_cache.blocks_per_request;
        let mut names: Vec<(&str, u64)> = base
            .iter()
            .filter(|(n, _)| *n != "block_size")
            .copied()
            .collect();
        names.push(("block_size", block_size));
        let (item, text) = match kind {
            LayerKind::Full => ("full", &b.full),
            LayerKind::Sliding { window } => {
                names.push(("window", window));
                ("sliding", &b.sliding)
            }
            LayerKind::Chunked { chunk } => {
                names.push(("window", chunk));
                ("chunked", &b.chunked)
            }
            LayerKind::Recurrent => ("recurrent", &b.recurrent),
        };
        self.eval(&format!("kv_cache.blocks_per_request.{item}"), text, &names)
    }
}
