//! SGLang's hybrid sliding-window pools and gpt-oss (docs/engines.md, "SGLang", "Hybrid
//! sliding-window pools"), each figure derived by hand from the release's source, the
//! arithmetic in the comments: gpt-oss-20b on an H100 at TP 1, 2 and 8 under 0.5.23's byte
//! split, gpt-oss-120b at TP 1 (refused at the default fraction) and 2, `--swa-full-tokens-ratio` and `--disable-hybrid-swa-memory`, the older releases'
//! splits (0.5.8 by layer counts, 0.5.9 and 0.5.10 by the all-layer count's bytes), 0.5.16's
//! check of the sliding pool, the MXFP4 experts as each release holds them, Gemma 3 (held whole
//! from 0.5.1, split in 0.4.10.post2) and the GPUs refused. No SGLang log is in the repository:
//! these check the derivation.

use circuit_hf::KvCacheDtype;
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{RunSettings, StageCircuit, Startup, Verdict};

mod common;
use common::{detail, release, with_flags};

const GPT_OSS_20B: &str = include_str!("../../data/checkpoints/gpt-oss-20b/config.json");
const GEMMA_3_1B: &str = include_str!("../../data/checkpoints/gemma-3-1b-it/config.json");

/// `config` at TP `tp`, imported with `spec`'s load rules, and a run of SGLang's defaults on
/// `dev`.
fn layout(spec: &str, config: &str, tp: u64, dev: &str) -> (Vec<Circuit>, RunSettings) {
    let load = release(spec).load_rules();
    common::layout(load, config, "config.json", tp, KvCacheDtype::Auto, dev)
}

fn predict(spec: &str, circuits: &[Circuit], run: &RunSettings) -> Startup {
    release(spec)
        .predict_layout(&StageCircuit::in_order(circuits), run)
        .unwrap()
}

fn refusal(spec: &str, circuits: &[Circuit], run: &RunSettings) -> String {
    release(spec)
        .predict_layout(&StageCircuit::in_order(circuits), run)
        .unwrap_err()
        .to_string()
}

#[test]
fn gpt_oss_20b_tp1_on_an_h100_splits_the_pool_by_bytes() {
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GPT_OSS_20B, 1, "h100-sxm");
    // Weights: the checkpoint's 13,761,264,768 B re-laid by the triton_kernel MoE runner
    // (layers/quantization/mxfp4.py): per expert of a layer, gate_up [5760, 2880] holds its
    // swizzled values 5,760 x 1,472 = 8,478,720 B, the loaded scales 5,760 x 90 = 518,400, the
    // swizzled scales round_up(5760, 256) x 92 = 5,888 x 92 = 541,696 (_pad_hopper_mxfp4_scale
    // pads the 90 columns to round_up(2880, 128) / 32 = 92 first) and f32 biases 23,040; down
    // [2880, 2880] 2,880 x 1,472 = 4,239,360 + 2,880 x 90 = 259,200 + 3,072 x 92 = 282,624 +
    // 11,520: 14,354,560 B an expert (vLLM's 14,336,640 + 11,776 + 6,144), x 32 x 24 =
    // 11,024,302,080 B; the rest as stored, 3,595,648,128 B: 14,619,950,208 B.
    assert_eq!(circuits[0].weight_bytes(), 14_619_950_208);
    let s = predict(spec, &circuits, &run);
    let d = detail(&s);
    // + the yarn rope cache, original 4,096 x factor 32 = 131,072 rows x 64 x 4 B = 33,554,432:
    // 14,653,504,640 B of tensors, printed as the caching allocator's segments (SGLang reads
    // the drop of free memory; docs/engines.md): each tensor of 10 MiB or more rounded up to
    // 2 MiB, a layer's qkv_proj (q, k, v stacked) 29,491,200 -> 30 MiB (+1,966,080), o_proj
    // 22.5 MiB -> 24 (+1,572,864), gate_up values 271,319,040 -> 260 MiB (+1,310,720), loaded
    // scales 16,588,800 -> 16 MiB (+188,416), swizzled 17,334,272 -> 18 MiB (+1,540,096), down
    // values 135,659,520 -> 130 MiB (+655,360): 7,233,536 B x 24 = 173,604,864; the down
    // scales 8,294,400 and 9,043,968 B share a 20 MiB segment a layer, 3,633,152 B x 24 =
    // 87,195,648; embedding and lm_head 1,158,266,880 -> 1,106 MiB each, 2 x 1,458,176; the
    // small tensors' 31,636,608 B in 16 segments of 2 MiB, +1,917,824; the rope cache whole:
    // +265,634,688 B, 14,919,139,328.
    assert_eq!(s.workers[0].weights, 14_919_139_328);
    // It grows to ceil((131072 + 256) / 128) x 128 = 131,328 rows: 256 x 64 x 4 = 65,536 B.
    assert_eq!(d.workers[0].after_load, 65_536);
    // mfs 0.830 as for any non-MLA model on an H100 at TP 1 (sglang_0_5_23.rs derives it).
    assert_eq!(d.mem_fraction_static, 0.830);
    // F = 84,485,089,526 B = 78.682871 GiB; A = F - 14,919,204,864 = 64.788279 GiB;
    // rest = 64.788279 - 78.682871 x 0.17 = 51.412191 GiB: budget 55,203,419,442 B.
    assert_eq!(d.pool_budget, 55_203_419_442);
    // F = 12 full layers x 8 KV heads x (64 + 64) x 2 B = 24,576, S = 24,576 (12 sliding);
    // full = int(55,203,419,442 // (24,576 + 0.8 x 24,576 = 44,236.8)) = 1,247,907;
    // swa = int(1,247,907 x 0.8) = 998,325 (pool_configurator.py:859-916).
    assert_eq!(s.kv_cache_tokens, 1_247_907);
    assert_eq!(d.max_total_num_tokens, 1_247_907);
    assert_eq!(d.swa_tokens, Some(998_325));
    // The cell printed is the all-layer one, 49,152 B.
    assert_eq!(d.cell_bytes, vec![49_152]);
    // K + V: (1,247,907 + 1) x 24,576 + (998,325 + 1) x 24,576 = 55,203,446,784 B, half each.
    assert_eq!(d.workers[0].k_bytes, 27_601_723_392);
    assert_eq!(d.workers[0].v_bytes, 27_601_723_392);
    // The index map: (1,247,907 + 1 + 1) x 8 = 9,983,272 B.
    assert_eq!(d.workers[0].swa_index_map, 9_983_272);
    // max_running_requests = min(clamp(int(1,247,907 / 131,072 x 512) = 4,874, 2048, 4096),
    // 1,247,907 // 2) = 4096; the request table 4,097 x 131,076 x 4 = 2,148,073,488 B.
    assert_eq!(d.max_running_requests, 4096);
    assert_eq!(d.workers[0].req_to_token, 2_148_073_488);
    assert_eq!(d.context_len, 131_072);
    // Left: 84,485,089,526 - 14,919,204,864 - 55,203,446,784 - 2,148,073,488 - 9,983,272.
    assert_eq!(d.workers[0].left_for_activations, 12_204_381_118);
    assert_eq!(s.verdict, Verdict::Starts);
}

#[test]
fn gpt_oss_20b_tp2_on_an_h100() {
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GPT_OSS_20B, 2, "h100-sxm");
    // A rank's experts: 2,880 / 2 = 1,440 columns rounded up to 64, 1,472 (mxfp4.py:548-551);
    // the swizzled scales of down [2880, 1472] pad 46 columns to round_up(1472, 128) / 32 = 48
    // and of gate_up [2944, 2880] 90 to 92, 3,072 rows each: vLLM's 7,471,109,760 B rank +
    // 32 x 24 x (3,072 x 2 + 3,072 x 2) = 9,437,184 B.
    assert_eq!(circuits[0].weight_bytes(), 7_480_546_944);
    let s = predict(spec, &circuits, &run);
    let d = detail(&s);
    // + the rope cache, whole on each rank: 7,514,101,376 B of tensors, printed as segments
    // (MiB): the rope cache 32, embedding and lm_head 554 each, a layer's qkv_proj 14,745,600 B
    // -> 16, gate_up values 138,674,176 -> 134, its scales 8,478,720 and swizzled 9,043,968
    // sharing 20, down values 70,778,880 -> 68, its scales 4,239,360 and swizzled 4,718,592
    // sharing 20 with the next layer's o_proj 11,796,480 (layer 0's its own 12), the small
    // tensors in 11 segments of 2: 32 + 1,108 + 24 x 258 + 12 + 22 = 7,366 MiB, 7,723,810,816 B
    // (+209,709,440).
    assert_eq!(s.workers[0].weights, 7_723_810_816);
    assert_eq!(s.workers.len(), 2);
    // mfs 0.828 at TP 2 (reserve + 2/8 GiB). F = 84,485,089,526 - 1,095,216,660 =
    // 83,389,872,866 B, read through float32: 77.662872 GiB; A = float32(F - 7,723,876,352) =
    // 70.469452 GiB; rest = 70.469452 - 77.662872 x 0.172 = 57.111438 GiB: 61,322,939,465 B.
    assert_eq!(d.mem_fraction_static, 0.828);
    assert_eq!(d.pool_budget, 61_322_939_465);
    // 4 KV heads a rank: F = S = 12 x 4 x 128 x 2 = 12,288 B; full = int(61,322,939,465 //
    // (12,288 + 0.8 x 12,288 = 22,118.4)) = 2,772,485; swa = int(2,772,485 x 0.8) = 2,217,988.
    assert_eq!(d.cell_bytes, vec![24_576]);
    assert_eq!(s.kv_cache_tokens, 2_772_485);
    assert_eq!(d.swa_tokens, Some(2_217_988));
    // K + V: 2,772,486 x 12,288 + 2,217,989 x 12,288 = 61,322,956,800 B; the map 2,772,487 x 8.
    assert_eq!(d.workers[0].k_bytes, 30_661_478_400);
    assert_eq!(d.workers[0].swa_index_map, 22_179_896);
    assert_eq!(d.max_running_requests, 4096);
    assert_eq!(s.verdict, Verdict::Starts);
}

#[test]
fn the_ratio_and_the_disable_flag_change_the_split_or_are_refused() {
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GPT_OSS_20B, 1, "h100-sxm");
    let flagged = |flags: SglangFlags| with_flags(run.clone(), flags);
    // --swa-full-tokens-ratio 0.5: the same budget, 55,203,419,442 B, over 24,576 + 0.5 x
    // 24,576 = 36,864 B: full 1,497,488, swa int(1,497,488 x 0.5) = 748,744.
    let half = predict(
        spec,
        &circuits,
        &flagged(SglangFlags {
            swa_full_tokens_ratio: Some(0.5),
            ..SglangFlags::default()
        }),
    );
    assert_eq!(half.kv_cache_tokens, 1_497_488);
    assert_eq!(detail(&half).swa_tokens, Some(748_744));
    // --max-total-tokens caps full from 0.5.11 on: 500,000 and int(500,000 x 0.8) = 400,000;
    // max_running_requests clamp(int(500,000 / 131,072 x 512) = 1,953, 2048, 4096) = 2048.
    let capped = predict(
        spec,
        &circuits,
        &flagged(SglangFlags {
            max_total_tokens: Some(500_000),
            ..SglangFlags::default()
        }),
    );
    assert_eq!(capped.kv_cache_tokens, 500_000);
    assert_eq!(detail(&capped).swa_tokens, Some(400_000));
    assert_eq!(detail(&capped).max_running_requests, 2048);
    // --disable-hybrid-swa-memory: one pool over the 24 layers, 49,152 B a token:
    // 55,203,419,442 // 49,152 = 1,123,116 tokens, K = 1,123,117 x 49,152 / 2 B, no map.
    let whole = predict(
        spec,
        &circuits,
        &flagged(SglangFlags {
            disable_hybrid_swa_memory: true,
            ..SglangFlags::default()
        }),
    );
    let w = detail(&whole);
    assert_eq!(whole.kv_cache_tokens, 1_123_116);
    assert_eq!(w.swa_tokens, None);
    assert_eq!(w.workers[0].k_bytes, 27_601_723_392);
    assert_eq!(w.workers[0].swa_index_map, 0);
    // Out of SGLang's range (arg_groups/kv_cache_hook.py:427-428).
    let e = refusal(
        spec,
        &circuits,
        &flagged(SglangFlags {
            swa_full_tokens_ratio: Some(1.5),
            ..SglangFlags::default()
        }),
    );
    assert_eq!(
        e,
        "swa_full_tokens_ratio = 1.5: must be in (0, 1] (SGLang: \"--swa-full-tokens-ratio should be in range (0, 1.0].\")"
    );
    // Both with the pool off: the ratio changes nothing.
    let e = refusal(
        spec,
        &circuits,
        &flagged(SglangFlags {
            swa_full_tokens_ratio: Some(0.5),
            disable_hybrid_swa_memory: true,
            ..SglangFlags::default()
        }),
    );
    assert_eq!(
        e,
        "--swa-full-tokens-ratio 0.5: sglang 0.5.23 builds GptOssForCausalLM no hybrid sliding-window pool under --disable-hybrid-swa-memory (its windows get a full KV cache), so the ratio changes no byte"
    );
}

#[test]
fn gemma_3_is_held_whole_from_0_5_1_and_split_in_0_4_10_post2() {
    // 0.5.23: Gemma 3 is forced off (arg_groups/model_overrides/gemma2_gemma3.py:26): a ratio
    // other than the default changes no byte and is refused; --disable-hybrid-swa-memory is
    // what the override sets (a log prints it), taken, the pool the same.
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GEMMA_3_1B, 1, "h100-sxm");
    let flagged = |flags: SglangFlags| with_flags(run.clone(), flags);
    let e = refusal(
        spec,
        &circuits,
        &flagged(SglangFlags {
            swa_full_tokens_ratio: Some(0.5),
            ..SglangFlags::default()
        }),
    );
    assert_eq!(
        e,
        "--swa-full-tokens-ratio 0.5: sglang 0.5.23 builds Gemma3ForCausalLM no hybrid sliding-window pool (its windows get a full KV cache), so the ratio changes no byte"
    );
    let plain = predict(spec, &circuits, &run);
    let off = predict(
        spec,
        &circuits,
        &flagged(SglangFlags {
            disable_hybrid_swa_memory: true,
            swa_full_tokens_ratio: Some(0.8),
            ..SglangFlags::default()
        }),
    );
    assert_eq!(off.kv_cache_tokens, plain.kv_cache_tokens);
    assert_eq!(detail(&off).swa_tokens, None);
    // 0.4.10.post2 splits T = 2,695,060 (sglang_0_4.rs) over 26 layers, 4 full and 22 sliding:
    // with the ratio 0.5, full = int(2,695,060 x 26 / (0.5 x 22 + 4)) = int(70,071,560 / 15)
    // = 4,671,437 and swa = int(4,671,437 x 0.5) = 2,335,718 (0.8: int(70,071,560 / 21.6) =
    // 3,244,053 and int(3,244,053 x 0.8) = 2,595,242).
    let spec = "sglang==0.4.10.post2";
    let (circuits, run) = layout(spec, GEMMA_3_1B, 1, "h100-sxm");
    let s = predict(spec, &circuits, &run);
    assert_eq!(s.kv_cache_tokens, 3_244_053);
    assert_eq!(detail(&s).swa_tokens, Some(2_595_242));
    let half = predict(
        spec,
        &circuits,
        &with_flags(
            run.clone(),
            SglangFlags {
                swa_full_tokens_ratio: Some(0.5),
                ..SglangFlags::default()
            },
        ),
    );
    assert_eq!(half.kv_cache_tokens, 4_671_437);
    assert_eq!(detail(&half).swa_tokens, Some(2_335_718));
    // Off, one pool of T over every layer.
    let whole = predict(
        spec,
        &circuits,
        &with_flags(
            run,
            SglangFlags {
                disable_hybrid_swa_memory: true,
                ..SglangFlags::default()
            },
        ),
    );
    assert_eq!(whole.kv_cache_tokens, 2_695_060);
    assert_eq!(detail(&whole).swa_tokens, None);
}

#[test]
fn the_releases_split_gpt_oss_each_their_way() {
    // Weights at TP 1 without 0.5.19's scale padding (0.5.1-0.5.18): 14,606,187,648 B +
    // the rope cache 33,554,432 = 14,639,742,080 B of tensors, but the same segments as
    // 0.5.23's, 14,919,139,328 B: the swizzled gate_up scales, 5,760 x 92 x 32 = 16,957,440
    // B, still take an 18 MiB segment, and the swizzled down scales, 3,072 x 90 x 32 =
    // 8,847,360, still share the loaded ones' 20 MiB segment.
    let at = |spec: &str| {
        let (circuits, run) = layout(spec, GPT_OSS_20B, 1, "h100-sxm");
        let s = predict(spec, &circuits, &run);
        assert_eq!(s.workers[0].weights, 14_919_139_328, "{spec}");
        s
    };
    // 0.5.18, by bytes, as 0.5.23: F = 78.682871 GiB, A = F - 14,919,204,864 B, mfs 0.830:
    // budget 55,203,419,442 B; full int(55,203,419,442 // 44,236.8) = 1,247,907, swa 998,325.
    let s = at("sglang==0.5.18");
    assert_eq!(detail(&s).pool_budget, 55_203_419_442);
    assert_eq!(
        (s.kv_cache_tokens, detail(&s).swa_tokens),
        (1_247_907, Some(998_325))
    );
    // 0.5.10 by the all-layer count's bytes: T = 55,203,419,442 // 49,152 = 1,123,116;
    // full = int(1,123,116 x 49,152 / 44,236.8) = 1,247,906, swa int(1,247,906 x 0.8) =
    // 998,324: one token fewer than bytes, T's floor first.
    let s = at("sglang==0.5.10");
    assert_eq!(
        (s.kv_cache_tokens, detail(&s).swa_tokens),
        (1_247_906, Some(998_324))
    );
    // 0.5.9 (mfs 0.835: budget 55,625,844,890 B, T = 1,131,710): full = int(1,131,710 x
    // 49,152 / 44,236.8) = 1,257,455, swa 1,005,964; 0.5.8 by layer counts, int(1,131,710 x
    // 24 / 21.6): the same.
    for spec in ["sglang==0.5.9", "sglang==0.5.8"] {
        let s = at(spec);
        assert_eq!(detail(&s).pool_budget, 55_625_844_890, "{spec}");
        assert_eq!(
            (s.kv_cache_tokens, detail(&s).swa_tokens),
            (1_257_455, Some(1_005_964)),
            "{spec}"
        );
    }
    // 0.5.7 forces gpt-oss's hybrid memory off (server_args.py:1214): one pool of T.
    let s = at("sglang==0.5.7");
    assert_eq!(
        (s.kv_cache_tokens, detail(&s).swa_tokens),
        (1_131_710, None)
    );
    // The ratio changes no byte there.
    let (circuits, run) = layout("sglang==0.5.7", GPT_OSS_20B, 1, "h100-sxm");
    let e = refusal(
        "sglang==0.5.7",
        &circuits,
        &with_flags(
            run,
            SglangFlags {
                swa_full_tokens_ratio: Some(0.6),
                ..SglangFlags::default()
            },
        ),
    );
    assert!(
        e.starts_with(
            "--swa-full-tokens-ratio 0.6: sglang 0.5.7 builds GptOssForCausalLM no hybrid"
        ),
        "{e}"
    );
    // Before 0.5.1 there is no gpt-oss class.
    let (circuits, run) = layout("sglang==0.4.10.post2", GPT_OSS_20B, 1, "h100-sxm");
    let e = refusal("sglang==0.4.10.post2", &circuits, &run);
    assert!(e.contains("this release has no gpt-oss model class"), "{e}");
}

#[test]
fn a_sliding_pool_below_a_window_and_a_page_raises_from_0_5_16() {
    // --max-total-tokens 150: full 150, swa int(150 x 0.8) = 120 <= gpt-oss's reported window
    // 128 - 1 = 127 + page 1: 0.5.16 raises (pool_configurator.py:426-436), 0.5.15 starts.
    let flags = SglangFlags {
        max_total_tokens: Some(150),
        ..SglangFlags::default()
    };
    let (circuits, run) = layout("sglang==0.5.16", GPT_OSS_20B, 1, "h100-sxm");
    let run = with_flags(run, flags);
    let s = predict("sglang==0.5.16", &circuits, &run);
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some(
            "ValueError: SWA pool (120 tokens) cannot hold even one request: the prefill admission floor is sliding_window_size (127) + page_size (1). Increase --swa-full-tokens-ratio or the total KV budget."
        )
    );
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
    let s = predict("sglang==0.5.15", &circuits, &run);
    assert_eq!(s.verdict, Verdict::Starts);
    assert_eq!((s.kv_cache_tokens, detail(&s).swa_tokens), (150, Some(120)));
}

#[test]
fn gpt_oss_20b_tp8_rounds_a_rank_s_experts_and_other_gpus_are_refused() {
    // TP 8: 2,880 / 8 = 360 columns a rank, rounded up to 384 (the loader's ceil(90 / 8) x 32
    // = 384 as well, models/gpt_oss.py:958-1006): the importer takes it and SGLang starts.
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GPT_OSS_20B, 8, "h100-sxm");
    assert_eq!(circuits[0].dim("moe_ffn"), Some(384));
    let s = predict(spec, &circuits, &run);
    assert_eq!(s.verdict, Verdict::Starts);
    assert_eq!(s.workers.len(), 8);
    // An A100 (8.0) and a B200 (10.0): other MoE runners or layouts, refused.
    for (dev, why) in [
        ("a100-80gb", "below compute capability 9.0"),
        ("b200", "from compute capability 10.0"),
    ] {
        let (circuits, run) = layout(spec, GPT_OSS_20B, 1, dev);
        let e = refusal(spec, &circuits, &run);
        assert!(e.contains(why), "{dev}: {e}");
    }
}

#[test]
fn the_target_and_the_longest_context_read_full_tokens() {
    let spec = "sglang==0.5.23";
    let (circuits, run) = layout(spec, GPT_OSS_20B, 1, "h100-sxm");
    let p = release(spec);
    let stages = StageCircuit::in_order(&circuits);
    // 1,247,907 full tokens hold a 131,072 context; a target of 1,000,000 full tokens needs
    // a budget of ceil(1,000,000 x 44,236.8) = 44,236,800,000 B = 41.198730 GiB: mfs >= 1 -
    // (64.788279 - 41.198730) / 78.682871 = 0.70019, 0.701 rounded up.
    let a = p.budget_answers(&stages, &run, 1_000_000).unwrap();
    assert_eq!(a.largest_max_model_len, Some(131_072));
    assert_eq!(a.utilization_for_target, Some(0.701));
}

#[test]
fn llama_4_s_hybrid_pool_is_refused_as_its_multimodal_class_is() {
    // Llama4ForConditionalGeneration is a hybrid class from 0.5.8 (its chunked layers in the
    // sliding pool, configs/model_config.py:2705-2711 in 0.5.23), but multimodal: refused in
    // one line before its pool is sized. Its text-only Llama4ForCausalLM is no hybrid class
    // (models/llama4.py:600): one pool over every layer, as sglang_0_5_23.rs covers.
    let spec = "sglang==0.5.23";
    let scout = include_str!("../../data/checkpoints/llama-4-scout-17b-16e-instruct/config.json");
    let (circuits, run) = layout(spec, scout, 8, "h100-sxm");
    let e = refusal(spec, &circuits, &run);
    assert!(e.contains("a multimodal model"), "{e}");
}

/// gpt-oss-120b's config: gpt-oss-20b's with 36 layers (sliding and full alternating) and 128
/// experts, the published config's only differences in what the planner reads.
fn gpt_oss_120b() -> String {
    let mut c: serde_json::Value = serde_json::from_str(GPT_OSS_20B).unwrap();
    c["num_hidden_layers"] = 36.into();
    c["num_local_experts"] = 128.into();
    c["layer_types"] = (0..36)
        .map(|i| {
            if i % 2 == 0 {
                "sliding_attention"
            } else {
                "full_attention"
            }
        })
        .collect::<Vec<_>>()
        .into();
    c.to_string()
}

#[test]
fn gpt_oss_120b_needs_two_h100s_at_sglang_s_default_fraction() {
    let spec = "sglang==0.5.23";
    let config = gpt_oss_120b();
    // TP 1: per expert 14,354,560 B (as gpt-oss-20b's) x 128 x 36 = 66,145,812,480; the
    // embedding and lm_head 2 x 201,088 x 2,880 x 2 = 2,316,533,760, the final norm 5,760, a
    // layer's attention, norms and router 53,849,344 (gpt-oss-20b's 53,296,192 and 96 more
    // router rows, 96 x (2,880 + 1) x 2): 70,400,928,384 B, and the rope cache. Printed as
    // segments (MiB): the rope cache 32, embedding and lm_head 1,106 each, a layer's qkv_proj
    // 30, o_proj 24, gate_up values 1,085,276,160 B -> 1,036, scales 66,355,200 -> 64,
    // swizzled 69,337,088 -> 68, down values 542,638,080 -> 518, scales 33,177,600 -> 32,
    // swizzled 36,175,872 -> 36 (1,808 a layer), the 2,949,120 B gate_up biases six to a 20
    // MiB segment (6 segments), the 1,474,560 B down biases in what the rounding leaves, the
    // small tensors 18 of 2: 32 + 2,212 + 36 x 1,808 + 120 + 36 = 67,488 MiB, 70,766,297,088 B.
    let (circuits, run) = layout(spec, &config, 1, "h100-sxm");
    assert_eq!(circuits[0].weight_bytes(), 70_400_928_384);
    let s = predict(spec, &circuits, &run);
    assert_eq!(s.workers[0].weights, 70_766_297_088);
    // A = 84,485,089,526 - 70,766,362,624 B (+ the cache's 65,536 B growth) = 12.776560 GiB
    // < F x 0.17 = 13.376088 GiB: SGLang's ValueError, with 1 - 12.776560 / 78.682871 =
    // 0.8376.
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some(
            "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.83. Raise --mem-fraction-static above 0.838 (minimum viable = 1 - available/pre = 0.8376). If using speculative decoding, draft weights are now counted."
        )
    );
    // TP 2: per expert 7,396,224 B x 128 x 36 = 34,081,800,192, the rest 2,141,147,520:
    // 36,222,947,712 B and the rope cache, 36,256,502,144 B of tensors; as segments (MiB):
    // the rope cache 32, embedding and lm_head 554 each, a layer's qkv_proj 16, o_proj 12,
    // gate_up values 554,696,704 B -> 530, scales 33,914,880 -> 34, swizzled 36,175,872 -> 36,
    // down values 270 exactly, scales 16,957,440 -> 18, swizzled 18 exactly (934 a layer; the
    // 1-2 MiB biases fit what the rounding leaves), the small tensors 18 of 2: 32 + 1,108 +
    // 36 x 934 + 36 = 34,800 MiB, 36,490,444,800 B. mfs 0.828; F = 77.662872 GiB (float32),
    // A = float32(F - 36,490,510,336 B) = 43.678436 GiB, rest = 43.678436 - 77.662872 x 0.172
    // = 30.320422 GiB: budget 32,556,305,481 B over 18 x 1,024 + 0.8 x 18 x 1,024 = 33,177.6
    // B (4 KV heads x 128 x 2 B a layer): 981,273 full, int(981,273 x 0.8) = 785,018 SWA
    // tokens;
    // max_running_requests clamp(int(981,273 / 131,072 x 512) = 3,833, 2048, 4096) = 3833.
    let (circuits, run) = layout(spec, &config, 2, "h100-sxm");
    let s = predict(spec, &circuits, &run);
    let d = detail(&s);
    assert_eq!(s.workers[0].weights, 36_490_444_800);
    assert_eq!(d.pool_budget, 32_556_305_481);
    assert_eq!((s.kv_cache_tokens, d.swa_tokens), (981_273, Some(785_018)));
    assert_eq!(d.max_running_requests, 3833);
}
