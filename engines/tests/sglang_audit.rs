//! Issue 31's independent audit of the SGLang start-up prediction: what a start-up prints,
//! re-derived from SGLang's Python sources (paths under `sglang/srt/` of the wheel) and
//! compared with the prediction. Each test is a difference the audit found and fixed, with
//! the derivation in its comments; the cases where the prediction already agreed are listed
//! in the audit's report, checked by sglang_0_5_23.rs and sglang_0_4.rs.
//!
//! The weights SGLang prints ("Load weight end ... mem usage") are a drop of the device's free
//! memory (utils/common.py:427-576 get_available_gpu_memory: `torch.cuda.mem_get_info` after
//! `empty_cache`), so they count the caching allocator's segments, not the tensors' bytes:
//! every parameter is created on the device while the model is built
//! (model_loader/loader.py:829-845) and none is freed. PyTorch's rules (torch_allocator.rs):
//! a request of 1 MiB or less takes a 2 MiB small segment shared with others; one under 10 MiB
//! a 20 MiB segment shared with others of that range; a larger one a segment of its own,
//! rounded up to 2 MiB.

use circuit_hf::KvCacheDtype;
use circuit_ir::Circuit;
use engine_profile::{EngineProfile, RunSettings, StageCircuit, Startup};

mod common;
use common::{F_TP1, F_WORLD, detail, tokens};

const MIB: u64 = 1 << 20;

fn profile() -> EngineProfile {
    engines::profile("sglang-0.5.23").unwrap()
}

fn config(name: &str) -> &'static str {
    match name {
        "qwen2.5-7b" => include_str!("../../data/models/qwen2.5-7b/config.json"),
        "qwen3-30b-a3b" => include_str!("../../data/models/qwen3-30b-a3b/config.json"),
        other => panic!("no config {other}"),
    }
}

/// `name` at TP `tp` and a run of SGLang's defaults on an H100.
fn layout(name: &str, tp: u64) -> (Vec<Circuit>, RunSettings) {
    let origin = format!("{name}/config.json");
    common::layout(
        profile().load_rules(),
        config(name),
        &origin,
        tp,
        KvCacheDtype::Auto,
        "h100-sxm",
    )
}

fn predict(circuits: &[Circuit], run: &RunSettings) -> Startup {
    profile()
        .predict_layout(&StageCircuit::in_order(circuits), run)
        .unwrap()
}

/// A segment of its own: the request rounded up to 2 MiB (for requests of 10 MiB or more).
fn own_segment(bytes: u64) -> u64 {
    bytes.next_multiple_of(2 * MIB)
}

#[test]
fn qwen2_5_7b_weights_hold_their_segments_not_their_bytes() {
    // Before the audit the prediction printed the tensors' bytes and the rope cache,
    // 15,231,233,024 + 67,108,864 = 15,298,341,888 B ("mem usage=14.25 GB"); SGLang's figure
    // holds the segments: 100.4 MiB (0.69%) more, past the 0.5% a weights figure is held to.
    let (circuits, run) = layout("qwen2.5-7b", 1);
    let s = predict(&circuits, &run);
    let d = detail(&s);
    assert_eq!(circuits[0].weight_bytes(), 15_231_233_024);
    // Hidden 3584 (3.5 KiB) makes no large tensor a 2 MiB multiple: embed_tokens and lm_head
    // 152,064 x 3584 x 2 = 1039.5 MiB in 1040; per layer qkv_proj (28 + 2 x 4) x 128 x 3584 x
    // 2 = 31.5 MiB in 32, o_proj 3584 x 3584 x 2 = 24.5 MiB in 26 (the 1.5 MiB left no later
    // request fits), gate_up_proj 2 x 18944 x 3584 x 2 = 259 MiB in 260, down_proj 129.5 MiB
    // in 130; the float32 rope cache [131072, 128], 64 MiB; the 57 norms (7,168 B) and 28 qkv
    // biases (9,216 B), 666,624 B, in one 2 MiB small segment.
    let embed = own_segment(152_064 * 3584 * 2);
    assert_eq!(embed, 1040 * MIB);
    let layer = own_segment(4608 * 3584 * 2)
        + own_segment(3584 * 3584 * 2)
        + own_segment(2 * 18_944 * 3584 * 2)
        + own_segment(18_944 * 3584 * 2);
    assert_eq!(layer, (32 + 26 + 260 + 130) * MIB);
    let weights = 2 * embed + 28 * layer + 64 * MIB + 2 * MIB;
    assert_eq!(weights, 15_403_581_440);
    assert_eq!(s.workers[0].weights, weights);
    // The rope cache grows to 131,328 rows after the print: 256 x 128 x 4 = 131,072 B.
    assert_eq!(d.workers[0].after_load, 131_072);
    // mfs 0.830 (Llama-3.1-8B's reserve: it reads no model size); cell 4 KV heads x (128 +
    // 128) x 28 layers x 2 B = 57,344 B; A = 64.337046 GiB, rest = 64.337046 - 78.682871 x 0.17
    // = 50.960958 GiB = 54,718,911,794 B: 954,222 tokens (956,057 before the fix).
    assert_eq!(d.mem_fraction_static, 0.830);
    assert_eq!(d.cell_bytes, vec![57_344]);
    let t = tokens(F_TP1, weights + 131_072, 0.830, 57_344, false);
    assert_eq!(t, 954_222);
    assert_eq!(s.kv_cache_tokens, 954_222);
    // max_running_requests = min(clamp(int(954222 / 131072 x 512) = 3727, 2048, 4096), T // 2).
    assert_eq!(d.max_running_requests, 3727);
}

#[test]
fn qwen3_30b_a3b_o_proj_shards_pair_in_20_mib_segments() {
    let (circuits, run) = layout("qwen3-30b-a3b", 2);
    let s = predict(&circuits, &run);
    let d = detail(&s);
    // Per rank at TP 2: 30,544,916,480 B of tensors and the float32 rope cache [40960, 128] =
    // 20 MiB (30,565,888,000 B before the audit). The o_proj shard, 2048 x (16 x 128) x 2 =
    // 8 MiB, is under 10 MiB: two share a 20 MiB segment (8 + 8, the 4 MiB left fits no later
    // request), so 48 layers hold 24 segments, 480 MiB for 384; the shards of embed_tokens and
    // lm_head, 75,968 x 2048 x 2 = 296.75 MiB, take 298 MiB each; qkv_proj (16 + 2 + 2) x 128 x
    // 2048 x 2 = 10 MiB and the experts' w13 (384 MiB) and w2 (192 MiB) are 2 MiB multiples.
    // The small requests (per layer 2 norms of 4 KiB, q_norm and k_norm of 256 B rounded to
    // 512, the router 128 x 2048 x 2 = 512 KiB; the final norm), 25,587,712 B, fill 18 small
    // segments of 2 MiB as they come (the rules replayed in order: the norms between the
    // routers leave gaps no router fits). Segments: 30,565,888,000 + 96 MiB + 2 x 1.25 MiB +
    // (36 MiB - 25,587,712 B) = 30,681,333,760 B.
    assert_eq!(own_segment(75_968 * 2048 * 2), 298 * MIB);
    assert_eq!(
        30_565_888_000 + 96 * MIB + 2 * (MIB + MIB / 4) + 36 * MIB - 25_587_712,
        30_681_333_760
    );
    assert_eq!(s.workers[0].weights, 30_681_333_760);
    // The rope cache grows to ceil((40960 + 256) / 128) x 128 = 41,216 rows: 131,072 B.
    assert_eq!(d.workers[0].after_load, 131_072);
    // mfs 0.828 (TP 2); cell 2 KV heads x 256 x 48 x 2 B = 49,152 B; through float32: F =
    // 77.662872 GiB, A = 49.088531 GiB, rest = 49.088531 - 77.662872 x 0.172 = 35.730517 GiB:
    // 780,545 tokens (782,893 before the fix); context 40,960, so 4096 requests.
    assert_eq!(d.mem_fraction_static, 0.828);
    assert_eq!(d.cell_bytes, vec![49_152]);
    let t = tokens(F_WORLD, 30_681_333_760 + 131_072, 0.828, 49_152, true);
    assert_eq!(t, 780_545);
    assert_eq!(s.kv_cache_tokens, 780_545);
    assert_eq!(d.max_running_requests, 4096);
}

#[test]
fn the_default_release_is_the_newest_and_an_unmodelled_one_is_refused() {
    // `--engine sglang` is 0.5.23, the newest release the audit's sources hold.
    let newest = engines::select("sglang").unwrap();
    assert_eq!(newest.version(), "0.5.23");
    // A release after it, or before 0.4.6, is refused, not rounded to a neighbour.
    for spec in ["sglang==0.5.24", "sglang==0.4.5"] {
        assert!(engines::select(spec).is_err(), "{spec}");
    }
}
