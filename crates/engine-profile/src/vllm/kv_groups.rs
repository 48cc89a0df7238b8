//! vLLM's KV-cache groups (`v1/core/kv_cache_utils.py` `get_kv_cache_configs`, vLLM 0.19):
//! each cache layer becomes a spec (full attention, sliding window, chunked local attention, or
//! a recurrent "mamba" state); the specs of the whole model are grouped (one group when every
//! layer needs the same token slots, else the hybrid manager's groups of one page size); each
//! stage's workers get the bytes one block costs them, and the bytes one request of
//! max-model-len needs on them as the release's start-up check counts it. The engine file gives
//! what differs between releases: the per-request block counts, the recurrent block sizes,
//! whether the hybrid manager is on, the grouping's slack, whether unequal pages are unified
//! (from 0.12) and how the check counts and compares (docs/engines.md, "KV-cache layout").
//!
//! Invariants: every size is checked u64; a layout vLLM refuses to build (pages that do not
//! divide, recurrent state without the hybrid manager, a stage without cache layers) is an
//! [`EngineError::NotModelled`] naming the circuit, never a guess.

use crate::EngineError;
use crate::StageCircuit;
use crate::facts::KvFacts;
use crate::file::{CheckScope, RequestBytes};
use crate::formula::Env;
use crate::kv_layout::{CacheLayer, KvGroup, KvLayout, LayerKind, not_modelled};

/// A layer's spec: its kind, tokens per block and bytes per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Spec {
    kind: LayerKind,
    block_size: u64,
    page: u64,
}

/// The layout vLLM gives `layers` (the cache layers of `stages`, in stage order) at
/// `max_model_len` with `tokens` batched tokens and `block_size` tokens per block; `origin`
/// names the engine file.
pub(crate) fn kv_groups(
    kv: &KvFacts,
    origin: &str,
    stages: &[StageCircuit<'_>],
    layers: &[CacheLayer],
    block_size: u64,
    max_model_len: u64,
    tokens: u64,
) -> Result<KvLayout, EngineError> {
    let Some(named) = stages.first().map(|s| s.circuit) else {
        return Ok(KvLayout {
            groups: Vec::new(),
            stage_block_bytes: Vec::new(),
            token_block_size: block_size,
            blocks_per_request: 0,
            stage_request_bytes: Vec::new(),
        });
    };
    let overflow = |what: &str| EngineError::Overflow {
        what: what.to_owned(),
    };
    let base = Env::names_only(
        vec![
            ("max_model_len", max_model_len),
            ("tokens", tokens),
            ("block_size", block_size),
            // The pipeline stages: from 0.26 a windowed group holds the batches in flight
            // (`VllmConfig.max_concurrent_batches`, which reads the pipeline size).
            ("pipeline_parallel_size", stages.len() as u64),
        ],
        named.name(),
    );

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
        if !kv.hybrid_manager {
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
        let env = base
            .clone()
            .with("recurrent_page", state)
            .with("attention_page_per_token", per_token);
        attention_block = kv.recurrent_attention_block.eval(&env)?;
        let page = attention_block
            .checked_mul(per_token)
            .ok_or_else(|| overflow("attention page bytes"))?;
        if page < state {
            return Err(EngineError::Expr {
                origin: origin.to_owned(),
                item: kv.recurrent_attention_block.item().to_owned(),
                text: kv.recurrent_attention_block.text().to_owned(),
                message: format!(
                    "gives {attention_block} tokens, a page of {page} bytes below the recurrent state's {state}"
                ),
            });
        }
        // Under prefix caching (mamba_cache_mode "align") the recurrent block is the attention
        // block once raised (platforms/interface.py 0.28 L917-918): the expression reads it.
        let block = kv
            .recurrent_block
            .eval(&env.clone().with("attention_block_size", attention_block))?;
        recurrent_spec = Some(Spec {
            kind: LayerKind::Recurrent,
            block_size: block,
            page,
        });
    }

    let mut specs = Vec::with_capacity(layers.len());
    for l in layers {
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
    if !kv.hybrid_manager && specs.iter().any(|s| s.kind == LayerKind::Full) {
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
            stage_request_bytes: vec![0; stages_n],
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
        let per_request = per_request_blocks(kv, one.kind, one.block_size, &base)?;
        // One group: every way of counting the request gives its layers' pages x its blocks.
        let per_stage = stage_block_bytes
            .iter()
            .map(|&b| b.checked_mul(per_request))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| overflow("KV bytes of one request"))?;
        let whole = per_stage
            .iter()
            .try_fold(0u64, |acc, &b| acc.checked_add(b))
            .ok_or_else(|| overflow("KV bytes of one request"))?;
        return Ok(KvLayout {
            groups: vec![KvGroup {
                kind: one.kind,
                block_size: one.block_size,
                layers: specs.len() as u64,
                blocks_per_request: per_request,
            }],
            stage_request_bytes: in_scope(kv, per_stage, whole),
            stage_block_bytes,
            token_block_size: one.block_size,
            blocks_per_request: per_request,
        });
    }

    // Several types: one page size for all (kv_cache_utils.py:914-951: a smaller page grows
    // its block size by the ratio, which must be whole), then groups of one size.
    let page = specs.iter().map(|s| s.page).max().unwrap_or(0);
    // A release that does not unify pages groups layers of several types only when every
    // page is the same (vLLM up to 0.11: kv_cache_utils.py get_kv_cache_config raises
    // NotImplementedError otherwise).
    if let Some(other) = specs
        .iter()
        .find(|s| s.page != page)
        .filter(|_| !kv.unify_page_sizes)
    {
        return Err(not_modelled(
            named,
            format!(
                "layers of several kinds with pages of {} and {page} bytes ({origin}: this release groups them only when every page is the same, and raises NotImplementedError)",
                other.page
            ),
        ));
    }
    for s in &mut specs {
        if s.page == 0 || !page.is_multiple_of(s.page) {
            return Err(not_modelled(
                named,
                format!(
                    "a page of {} bytes that does not divide the largest, {page} (vLLM raises NotImplementedError, kv_cache_utils.py unify_kv_cache_spec_page_size)",
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
    let group_size = if (most as f64) < fewest as f64 * kv.group_size_slack {
        most
    } else {
        fewest
    };
    let mut groups = Vec::new();
    // Per stage, the most layers of one group it holds (the projected group size).
    let mut stage_group_size = vec![0u64; stages_n];
    let mut blocks_per_request = 0u64;
    // Per stage, the blocks one request takes in each of its layers (the check's `layers`).
    let mut stage_layer_blocks = vec![0u64; stages_n];
    for (spec, members) in &types {
        let n = members.len() as u64;
        let count = n.div_ceil(group_size);
        let per_request = per_request_blocks(kv, spec.kind, spec.block_size, &base)?;
        for &m in members {
            let acc = &mut stage_layer_blocks[layers[m].stage];
            *acc = acc
                .checked_add(per_request)
                .ok_or_else(|| overflow("blocks per request"))?;
        }
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
    // One request's bytes as the start-up check counts them: the groups' pools (the most
    // layers of one group x the page x the blocks of every group, kv_cache_utils.py
    // _max_memory_usage_bytes_from_groups; before vLLM 0.19 the first group's blocks only,
    // `any_spec = kv_cache_groups[0]`), or each layer's own (before 0.14:
    // max_memory_usage_bytes over the worker's layer specs, no group padding).
    let pools = |size: u64| -> Option<u64> {
        let blocks = match kv.startup_check.request_bytes {
            RequestBytes::FirstGroup => groups.first().map_or(0, |g| g.blocks_per_request),
            _ => blocks_per_request,
        };
        size.checked_mul(page)?.checked_mul(blocks)
    };
    let (per_stage, whole) = match kv.startup_check.request_bytes {
        RequestBytes::Layers => {
            let per_stage = stage_layer_blocks
                .iter()
                .map(|&b| b.checked_mul(page))
                .collect::<Option<Vec<u64>>>();
            let whole = stage_layer_blocks
                .iter()
                .try_fold(0u64, |acc, &b| acc.checked_add(b))
                .and_then(|b| b.checked_mul(page));
            (per_stage, whole)
        }
        RequestBytes::Groups | RequestBytes::FirstGroup => {
            let per_stage = stage_group_size.iter().map(|&g| pools(g)).collect();
            let largest = groups.iter().map(|g| g.layers).max().unwrap_or(0);
            (per_stage, pools(largest))
        }
    };
    let (Some(per_stage), Some(whole)) = (per_stage, whole) else {
        return Err(overflow("KV bytes of one request"));
    };
    Ok(KvLayout {
        groups,
        stage_request_bytes: in_scope(kv, per_stage, whole),
        stage_block_bytes,
        token_block_size,
        blocks_per_request,
    })
}

/// The bytes each stage's workers must hold for the start-up check: their own (`per_stage`),
/// or the whole model's (`whole`) for every stage when the check compares the smallest
/// worker's memory with the whole model (vLLM 0.14-0.16: `min(available_memory)` against the
/// global groups).
fn in_scope(kv: &KvFacts, per_stage: Vec<u64>, whole: u64) -> Vec<u64> {
    match kv.startup_check.scope {
        CheckScope::Worker => per_stage,
        CheckScope::WholeModel => vec![whole; per_stage.len()],
    }
}

/// Blocks one request of max-model-len takes in a group of `kind` with `block_size` tokens per
/// block (the engine file's `kv_cache.blocks_per_request`).
fn per_request_blocks(
    kv: &KvFacts,
    kind: LayerKind,
    block_size: u64,
    base: &Env<'_>,
) -> Result<u64, EngineError> {
    let env = base.clone().with("block_size", block_size);
    match kind {
        LayerKind::Full => kv.per_request_full.eval(&env),
        LayerKind::Sliding { window } => kv.per_request_sliding.eval(&env.with("window", window)),
        LayerKind::Chunked { chunk } => kv.per_request_chunked.eval(&env.with("window", chunk)),
        LayerKind::Recurrent => kv.per_request_recurrent.eval(&env),
    }
}
