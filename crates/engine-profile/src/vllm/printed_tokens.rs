//! The KV tokens vLLM prints from 0.21 (`v1/core/kv_cache_utils.py` `_report_kv_cache_config`,
//! 0.21 L1696-1710: `num_tokens = int(max_concurrency * max_model_len)`, with
//! `max_concurrency = num_blocks / num_block_per_request`, L872-890), which counts a windowed
//! group's blocks by the few a request takes in it; before 0.21 it printed the blocks over the
//! groups times the smallest block size (the generic rule, kv_layout.rs).
//!
//! Invariants: the arithmetic is Python's (IEEE doubles, `int()` truncating), so the figure is
//! the one vLLM prints to the token; a layout without groups or blocks per request prints 0.

use crate::kv_layout::KvLayout;

/// The tokens printed for `blocks` blocks of `layout` at `max_model_len`.
pub(crate) fn concurrency_tokens(
    layout: &KvLayout,
    blocks: u64,
    max_model_len: u64,
) -> Option<u64> {
    if layout.blocks_per_request == 0 {
        return Some(0);
    }
    let concurrency = blocks as f64 / layout.blocks_per_request as f64;
    let tokens = concurrency * max_model_len as f64;
    // A u64 holds every value a block count and a length give below 2^64; beyond it, refuse.
    (tokens < u64::MAX as f64).then_some(tokens as u64)
}

/// The fewest blocks whose printed tokens reach `tokens`: ceil(tokens x blocks per request /
/// max-model-len), moved by the one block the doubles' rounding may take.
pub(crate) fn blocks_for_concurrency_tokens(
    layout: &KvLayout,
    tokens: u64,
    max_model_len: u64,
) -> Option<u64> {
    if layout.blocks_per_request == 0 || max_model_len == 0 || tokens == 0 {
        return Some(0);
    }
    let exact = (u128::from(tokens) * u128::from(layout.blocks_per_request))
        .div_ceil(u128::from(max_model_len));
    let mut blocks = u64::try_from(exact).ok()?;
    while blocks > 0 && concurrency_tokens(layout, blocks - 1, max_model_len)? >= tokens {
        blocks -= 1;
    }
    while concurrency_tokens(layout, blocks, max_model_len)? < tokens {
        blocks = blocks.checked_add(1)?;
    }
    Some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_layout::{KvGroup, LayerKind};

    fn layout(groups: Vec<KvGroup>, blocks_per_request: u64) -> KvLayout {
        KvLayout {
            groups,
            stage_block_bytes: vec![65_536],
            token_block_size: 16,
            blocks_per_request,
            stage_request_bytes: vec![65_536 * blocks_per_request],
        }
    }

    #[test]
    fn one_full_group_prints_what_the_blocks_hold_a_windowed_model_more() {
        let full = KvGroup {
            kind: LayerKind::Full,
            block_size: 16,
            layers: 32,
            blocks_per_request: 512,
        };
        // 8192 tokens per request, 512 blocks each: 29,752 blocks hold 58.109375 requests,
        // 476,032 tokens, as blocks x 16.
        let one = layout(vec![full.clone()], 512);
        assert_eq!(concurrency_tokens(&one, 29_752, 8192), Some(476_032));
        assert_eq!(
            blocks_for_concurrency_tokens(&one, 476_032, 8192),
            Some(29_752)
        );
        assert_eq!(
            blocks_for_concurrency_tokens(&one, 476_033, 8192),
            Some(29_753)
        );
        // Gemma 3 1B (docs/engines.md): 7 groups, 5,318 blocks per request of 32,768 tokens;
        // 1,072,658 blocks: 1,072,658 / 5,318 x 32,768 = 6,609,412.81..., printed 6,609,412,
        // where the older rule printed 1,072,658 // 7 x 16 = 2,451,776.
        let sliding = KvGroup {
            kind: LayerKind::Sliding { window: 512 },
            block_size: 16,
            layers: 4,
            blocks_per_request: 34,
        };
        let mut groups = vec![full];
        groups.extend(std::iter::repeat_n(sliding, 6));
        let hybrid = layout(groups, 5_318);
        assert_eq!(
            concurrency_tokens(&hybrid, 1_072_658, 32_768),
            Some(6_609_412)
        );
        assert_eq!(hybrid.tokens(1_072_658), Some(2_451_776));
        let b = blocks_for_concurrency_tokens(&hybrid, 6_609_412, 32_768).unwrap();
        assert_eq!(b, 1_072_658);
        assert_eq!(concurrency_tokens(&hybrid, 0, 32_768), Some(0));
    }
}
