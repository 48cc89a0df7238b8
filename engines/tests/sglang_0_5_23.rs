//! The SGLang 0.5.23 profile (`engines/sglang-0.5.23/`), each figure derived by hand from its
//! source (docs/engines.md, "SGLang"; the arithmetic in each test's comments): the static
//! pool of Llama-3.1-8B at TP 1 and TP 2, DeepSeek-V2-Lite's MLA pool, an fp8 cache, Gemma 3's
//! sliding windows held whole, `mem_fraction_static`'s default per device memory and TP, and
//! SGLang's refusals with their messages. No SGLang log is in the repository: these check the
//! derivation; the hidden start-ups check the runtime assumptions (the CUDA context and the
//! communicators' memory before loading).

use circuit_hf::{ImportOptions, KvCacheDtype, Parallel};
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{EngineError, EngineProfile, RunSettings, StageCircuit, Startup, Verdict};

mod common;
use common::{F_TP1, F_WORLD, detail, device, release, tokens, with_flags};

fn profile() -> EngineProfile {
    engines::profile("sglang-0.5.23").unwrap()
}

fn config(name: &str) -> &'static str {
    match name {
        "llama-3.1-8b" => include_str!("../../data/models/llama-3.1-8b/config.json"),
        "deepseek-v2-lite" => include_str!("../../data/models/deepseek-v2-lite/config.json"),
        "gemma-3-1b-it" => include_str!("../../data/checkpoints/gemma-3-1b-it/config.json"),
        "qwen3-next" => {
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json")
        }
        "gpt-oss-20b" => include_str!("../../data/checkpoints/gpt-oss-20b/config.json"),
        "llama-fp8" => {
            include_str!("../../data/checkpoints/llama-3.1-8b-instruct-fp8-dynamic/config.json")
        }
        "llama-w4a16" => {
            include_str!("../../data/checkpoints/llama-3.1-8b-instruct-w4a16/config.json")
        }
        "qwen3-32b-awq" => include_str!("../../data/checkpoints/qwen3-32b-awq/config.json"),
        other => panic!("no config {other}"),
    }
}

/// `name` at TP `tp`, with `kv` cache storage, and a run of SGLang's defaults on an H100.
fn layout(name: &str, tp: u64, kv: KvCacheDtype) -> (Vec<Circuit>, RunSettings) {
    let origin = format!("{name}/config.json");
    common::layout(
        profile().load_rules(),
        config(name),
        &origin,
        tp,
        kv,
        "h100-sxm",
    )
}

fn predict(circuits: &[Circuit], run: &RunSettings) -> Result<Startup, EngineError> {
    profile().predict_layout(&StageCircuit::in_order(circuits), run)
}

#[test]
fn llama_3_1_8b_tp1_static_pool() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    // Weights: 8,030,261,248 parameters x 2 B = 16,060,522,496 B, and the float32 rope cache
    // [131072, 128] x 4 B = 67,108,864 B, as the caching allocator's segments (a drop of free
    // memory): every tensor but the 65 norms is a 2 MiB multiple of 10 MiB or more, a segment
    // of its own; the norms, 65 x 8,192 = 532,480 B, share one 2 MiB small segment:
    // 16,127,631,360 - 532,480 + 2,097,152 = 16,129,196,032 B.
    assert_eq!(circuits[0].weight_bytes(), 16_060_522_496);
    assert_eq!(s.workers[0].weights, 16_129_196_032);
    // After the print the rope cache grows to ceil((131072 + 256) / 128) x 128 = 131,328 rows:
    // 256 x 128 x 4 = 131,072 B.
    assert_eq!(d.workers[0].after_load, 131_072);
    // nvidia-smi 81,559 MiB: chunked 8192, decode max_bs 256 (TP < 4); the reserve 512 MB +
    // 8192 x 1.5 MB + 1/8 GiB + 256 x 2 MB + 58 prefill sizes x 8 MB = 13,904 MB = 14,237,696
    // KiB (above the 10 GiB floor); mfs = round((81559 - 13904) / 81559, 3) = 0.830.
    assert_eq!(d.gpu_mib, 81_559);
    assert_eq!(d.chunked_prefill_size, 8192);
    assert_eq!(d.prefill_graph_sizes.len(), 58);
    assert_eq!(d.decode_graph_sizes.len(), 36);
    assert_eq!(d.decode_graph_sizes.last(), Some(&256));
    assert_eq!(d.reserved_kib, 14_237_696);
    assert_eq!(d.mem_fraction_static, 0.830);
    // Cell: 8 KV heads x (128 + 128) x 32 layers x 2 B = 131,072 B.
    assert_eq!(d.cell_bytes, vec![131_072]);
    // F = 84,485,089,526 B = 78.6829 GiB, A = F - 16,129,327,104 = 63.6613 GiB,
    // rest = 63.6613 - 78.6829 x 0.17 = 50.2852 GiB = 53,993,297,202 B: 411,936 tokens.
    let t = tokens(F_TP1, 16_129_327_104, 0.830, 131_072, false);
    assert_eq!(t, 411_936);
    assert_eq!(s.kv_cache_tokens, 411_936);
    assert_eq!(d.max_total_num_tokens, 411_936);
    // max_running_requests = min(clamp(int(411936 / 131072 x 512), 2048, 4096), 411936 // 2)
    // = 2048; context_len 131072 (llama3 rope: no factor).
    assert_eq!(d.max_running_requests, 2048);
    assert_eq!(d.context_len, 131_072);
    // K size = V size = 32 layers x (411,936 + 1) rows x 8 x 128 x 2 B = 26,996,703,232 B.
    assert_eq!(d.workers[0].k_bytes, 26_996_703_232);
    assert_eq!(d.workers[0].v_bytes, 26_996_703_232);
    // req_to_token: 2049 x (131072 + 4) x 4 B = 1,074,298,896 B.
    assert_eq!(d.workers[0].req_to_token, 1_074_298_896);
    assert_eq!(s.verdict, Verdict::Starts);
    assert_eq!(d.refusal, None);
}

#[test]
fn llama_3_1_8b_tp2_static_pool() {
    let (circuits, run) = layout("llama-3.1-8b", 2, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    // Per rank: embeddings and lm_head 64,128 x 4096 each, 32 layers of (q 4096 x 2048, k and
    // v 4096 x 512, o 2048 x 4096, gate/up/down 3 x 4096 x 7168, two norms 4096), the final
    // norm: 4,015,263,744 parameters x 2 B + the rope cache 67,108,864 B, as segments: the
    // embeddings and lm_head shards, 501 MiB each, take 502 MiB segments; the norms share one
    // 2 MiB small segment: 8,097,636,352 + 2 x 1 MiB - 532,480 + 2 MiB = 8,101,298,176 B.
    assert_eq!(s.workers.len(), 2);
    assert_eq!(s.workers[0].weights, 8_101_298_176);
    assert_eq!(s.workers[1].weights, 8_101_298_176);
    // Reserve: 13,904 MB + 1/8 GiB more for TP 2 = 14,032 MB: mfs round(67527 / 81559, 3) =
    // 0.828.
    assert_eq!(d.mem_fraction_static, 0.828);
    // Cell: 4 KV heads x 256 x 32 x 2 = 65,536 B. F = 83,389,872,866 B, through float32
    // 77.66287 GiB; A through float32 70.11783 GiB; rest 56.75981 GiB: 929,952 tokens.
    assert_eq!(d.cell_bytes, vec![65_536]);
    let t = tokens(F_WORLD, 8_101_298_176 + 131_072, 0.828, 65_536, true);
    assert_eq!(t, 929_952);
    assert_eq!(s.kv_cache_tokens, 929_952);
    // The bound stated at world > 1: the assumed 1.02 GiB of communicators, +-1 GiB.
    assert_eq!(d.communicator_bound, 1 << 30);
}

#[test]
fn data_parallel_replicas_start_as_one_alone() {
    // --dp-size 3 at TP 2: DataParallelController starts 3 TP groups on GPUs of their own
    // (managers/data_parallel_controller.py:420-449); nothing per GPU reads dp_size without
    // attention data parallelism, so each replica is the TP 2 start-up above: 929,952 tokens,
    // max_running_requests = min(clamp(int(929952 / 131072 x 512) = 3632, 2048, 4096),
    // 929952 // 2) = 3632.
    let (circuits, run) = layout("llama-3.1-8b", 2, KvCacheDtype::Auto);
    let one = predict(&circuits, &run).unwrap();
    let three = predict(
        &circuits,
        &with_flags(
            run.clone(),
            SglangFlags {
                dp_size: Some(3),
                ..SglangFlags::default()
            },
        ),
    )
    .unwrap();
    let (d1, d3) = (detail(&one), detail(&three));
    assert_eq!(three.workers, one.workers);
    assert_eq!(d3.workers, d1.workers);
    assert_eq!(three.kv_cache_tokens, 929_952);
    assert_eq!(d3.max_running_requests, 3632);
    assert_eq!((d1.replicas, d1.gpus), (1, 2));
    // 2 x 1 x 3 = 6 GPUs; over the replicas 3 x 929,952 = 2,789,856 tokens and 3 x 3632 =
    // 10,896 running requests.
    assert_eq!((d3.replicas, d3.gpus), (3, 6));
    assert_eq!(d3.replicas_total_tokens, 2_789_856);
    assert_eq!(d3.replicas_running_requests, 10_896);
    let zero = with_flags(
        run,
        SglangFlags {
            dp_size: Some(0),
            ..SglangFlags::default()
        },
    );
    assert_eq!(
        predict(&circuits, &zero).unwrap_err().to_string(),
        "--dp-size 0: SGLang starts no replica; give 1 or more"
    );
}

#[test]
fn deepseek_v2_lite_mla_pool() {
    let (circuits, run) = layout("deepseek-v2-lite", 1, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    assert!(d.mla);
    // MLA: the reserve counts 1.5 GiB for prefill graphs instead of 8 MB a size: 512 + 12288
    // + 128 + 512 + 1536 = 14,976 MB; mfs round(66583 / 81559, 3) = 0.816.
    assert_eq!(d.mem_fraction_static, 0.816);
    // Prefill graphs up to min(8192, chunked) = 8192 tokens.
    assert_eq!(d.prefill_graph_sizes.last(), Some(&8192));
    // Cell: (kv_lora_rank 512 + qk_rope_head_dim 64) x 27 layers x 2 B = 31,104 B, on every
    // rank whole.
    assert_eq!(d.cell_bytes, vec![31_104]);
    // Weights: the checkpoint's, the float32 rope cache 163,840 x 64 x 4 = 41,943,040 B and
    // w_kc / w_vc copies 27 x 16 heads x (128 + 128) x 512 x 2 B = 113,246,208 B:
    // 31,568,157,696 B of tensors, held as the allocator's segments: those of 10 MiB or more
    // rounded up to 2 MiB (the shared experts' down_proj, 11 MiB, in 12 on 26 layers; the dense
    // layer's gate_up 85.5 in 86 and down 42.75 in 44: +27.75 MiB); the 1-10 MiB ones (w_kc
    // and w_vc 2 MiB each, kv_a_proj_with_mqa 2.25, kv_b_proj 4, o_proj 8 MiB, a layer: 492.75
    // MiB) and the small ones (6.74 MiB) in 536 MiB of 20 MiB and 2 MiB segments (the
    // allocator's rules replayed in order, rope cache, w_kc, w_vc, then the parameters):
    // 31,635,537,920 B.
    assert_eq!(
        circuits[0].weight_bytes() + 41_943_040 + 113_246_208,
        31_568_157_696
    );
    assert_eq!(s.workers[0].weights, 31_635_537_920);
    // Context 163,840: the yarn set holds original_max_position_embeddings, so no factor.
    assert_eq!(d.context_len, 163_840);
    // The rope cache grows to ceil((163840 + 256) / 128) x 128 = 164,096 rows: 256 x 64 x 4.
    assert_eq!(d.workers[0].after_load, 65_536);
    let loaded = s.workers[0].weights + 65_536;
    let t = tokens(F_TP1, loaded, 0.816, 31_104, false);
    assert_eq!(s.kv_cache_tokens, t);
    // One latent buffer: "KV size" = 27 x (T + 1) x 576 x 2.
    assert_eq!(d.workers[0].k_bytes, (t + 1) * 31_104);
    assert_eq!(d.workers[0].v_bytes, 0);
    // max_running_requests = min(clamp(int(T / 163840 x 512), 2048, 4096), T // 2).
    let estimate = ((t as f64 / 163_840.0 * 512.0) as u64).clamp(2048, 4096);
    assert_eq!(d.max_running_requests, estimate.min(t / 2));
}

#[test]
fn fp8_kv_cache_halves_the_cell() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Fp8);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    // --kv-cache-dtype fp8_e4m3: 8 x 256 x 32 x 1 B = 65,536 B; the same rest, twice the
    // tokens: 53,993,297,202 // 65,536 = 823,872.
    assert_eq!(d.cell_bytes, vec![65_536]);
    assert_eq!(s.kv_cache_tokens, 823_872);
    // int(823,872 / 131,072 x 512) = 3218, within [2048, 4096] and below T // 2.
    assert_eq!(d.max_running_requests, 3218);
}

#[test]
fn gemma_3_sliding_windows_get_a_full_cache() {
    // Gemma 3 is not in 0.5.23's hybrid sliding-window classes (its override turns the pool
    // off): all 26 layers, windowed or not, hold every token: 1 KV head x (256 + 256) x 26 x
    // 2 B = 26,624 B a token.
    let (circuits, run) = layout("gemma-3-1b-it", 1, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(d.cell_bytes, vec![26_624]);
    assert_eq!(s.kv_layout.groups.len(), 1);
    assert_eq!(s.kv_layout.groups[0].layers, 26);
    // The pool: the same rest formula over that cell, at mfs 0.830 (the reserve is Llama's:
    // it reads no model size), the weights and the rope growth as loaded.
    assert_eq!(d.mem_fraction_static, 0.830);
    // Weights: 1,999,771,904 B of parameters; two float32 rope caches, as every layer asks
    // get_rope for an unscaled rope at its type's base (rope_theta 1,000,000 on the global
    // layers, rope_local_base_freq 10,000 on the sliding ones; models/gemma3_causal.py:190-224),
    // 32,768 x 256 x 4 = 33,554,432 B each; the two Gemma3RotaryEmbedding's inv_freq, 2 x 128
    // x 4 B: 2,066,881,792 B of tensors, held as the allocator's segments: those of 10 MiB or
    // more rounded up to 2 MiB (gate_up_proj 30.375 MiB in 32, down_proj 15.1875 in 16, on 26
    // layers: 1,979,711,488 B with the embeddings and the caches), the 1-10 MiB ones (qkv_proj
    // 3.375 MiB, o_proj 2.25 MiB a layer) and the small ones in 166 MiB of 20 MiB and 2 MiB
    // segments (the allocator's rules replayed in order): 2,153,775,104 B. Each cache grows to
    // ceil((32,768 + 256) / 128) x 128 = 33,024 rows after the print: 2 x 256 x 256 x 4 B.
    assert_eq!(circuits[0].weight_bytes(), 1_999_771_904);
    assert_eq!(s.workers[0].weights, 2_153_775_104);
    assert_eq!(d.workers[0].after_load, 524_288);
    let loaded = s.workers[0].weights + d.workers[0].after_load;
    let t = tokens(F_TP1, loaded, 0.830, 26_624, false);
    assert_eq!(s.kv_cache_tokens, t);
    let estimate = ((t as f64 / d.context_len as f64 * 512.0) as u64).clamp(2048, 4096);
    assert_eq!(d.max_running_requests, estimate.min(t / 2));
}

#[test]
fn mem_fraction_static_default_per_device_memory_and_tp() {
    let (circuits, mut run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    // H100 TP 1: 0.830 (above). --disable-cuda-graph drops both graph terms: 512 + 12288 +
    // 128 = 12,928 MB, mfs round(68631 / 81559, 3) = 0.841, and captures nothing.
    run.enforce_eager = true;
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(d.mem_fraction_static, 0.841);
    assert!(d.decode_graph_sizes.is_empty() && d.prefill_graph_sizes.is_empty());
    // H200 (143,771 MiB): the same tier values, 13,904 MB: round(129867 / 143771, 3) = 0.903.
    run.enforce_eager = false;
    run.device = device("h200");
    run.device.cuda_total_bytes = Some(150_000_000_000);
    let s = predict(&circuits, &run).unwrap();
    assert_eq!(detail(&s).mem_fraction_static, 0.903);
    // --chunked-prefill-size 4096 on the H100: 512 + 6144 + 128 + 512 + 50 x 8 = 7,696 MB,
    // raised to the 10 GiB floor: round(71319 / 81559, 3) = 0.874.
    run.device = device("h100-sxm");
    run.max_num_batched_tokens = Some(4096);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(d.prefill_graph_sizes.len(), 50);
    assert_eq!(d.reserved_kib, 10 * 1024 * 1024);
    assert_eq!(d.mem_fraction_static, 0.874);
    // --max-running-requests 64 clamps the default decode max_bs (256) to 64: 23 sizes.
    run.max_num_batched_tokens = None;
    run.max_num_seqs = Some(64);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(d.decode_graph_sizes.last(), Some(&64));
    assert_eq!(d.max_running_requests, 64);
}

#[test]
fn refusals_carry_sglang_messages() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    // A context above the derived 131,072.
    let mut long = run.clone();
    long.max_model_len = Some(200_000);
    let s = predict(&circuits, &long).unwrap();
    assert_eq!(
        s.verdict,
        Verdict::MaxModelLenAboveModel {
            max_model_len: 200_000,
            longest: 131_072
        }
    );
    assert!(detail(&s).refusal.as_deref().unwrap().starts_with(
        "ValueError: Warning: User-specified context_length (200000) is greater than the derived context_length (131072)."
    ));
    // --mem-fraction-static 0.15: rest = 63.6613 - 78.6829 x 0.85 < 0; minimum viable = 1 -
    // 63.6613 / 78.6829 = 0.1909, suggested 0.191.
    let low = with_flags(
        run.clone(),
        SglangFlags {
            mem_fraction_static: Some(0.15),
            ..SglangFlags::default()
        },
    );
    let s = predict(&circuits, &low).unwrap();
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some(
            "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.15. Raise --mem-fraction-static above 0.191 (minimum viable = 1 - available/pre = 0.1909). If using speculative decoding, draft weights are now counted."
        )
    );
    // --cuda-graph-max-bs: 0.5.23 has no such flag.
    let bs = with_flags(
        run.clone(),
        SglangFlags {
            cuda_graph_max_bs: Some(128),
            ..SglangFlags::default()
        },
    );
    let e = predict(&circuits, &bs).unwrap_err().to_string();
    assert!(
        e.starts_with("--cuda-graph-max-bs: SGLang 0.5.23 has no such flag"),
        "{e}"
    );
    // vLLM's --gpu-memory-utilization has no SGLang meaning.
    let mut util = run.clone();
    util.gpu_memory_utilization = Some(0.9);
    assert!(matches!(
        predict(&circuits, &util),
        Err(EngineError::BadSetting {
            what: "gpu_memory_utilization",
            ..
        })
    ));
    // --max-total-tokens caps the pool.
    let capped = with_flags(
        run,
        SglangFlags {
            max_total_tokens: Some(100_000),
            ..SglangFlags::default()
        },
    );
    assert_eq!(
        predict(&circuits, &capped).unwrap().kv_cache_tokens,
        100_000
    );
}

#[test]
fn qwen3_next_tp4_sizes_its_state_pool_beside_the_kv_cache() {
    let (circuits, run) = layout("qwen3-next", 4, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let d = detail(&s);
    // Weights per rank 39,925,737,600 B of parameters (the MTP block `mtp.*` is not built:
    // [load] mtp_layers) and the float32 rope cache [262144, 64] (rotary_dim = 256 x
    // partial_rotary_factor 0.25) x 4 B = 67,108,864 B: 39,992,846,464 B of tensors, held as
    // the caching allocator's segments (each tensor of 10 MiB or more rounded up to 2 MiB, the
    // smaller ones packed into 20 MiB and 2 MiB segments): 18,716,544 B more, 40,011,563,008
    // B. The cache grows by 256 rows after the print: 65,536 B.
    assert_eq!(s.workers[0].weights, 40_011_563_008);
    assert_eq!(d.workers[0].after_load, 65_536);
    // Reserve at TP 4: 512 + 8192 x 1.5 + 4 / 8 x 1024 + 512 x 2 + 58 x 8 = 14,800 MB:
    // mfs = round((81559 - 14800) / 81559, 3) = 0.819.
    assert_eq!(d.mem_fraction_static, 0.819);
    // F and A through float32 (world 4): 77.662873 GiB and 40.399139 GiB; rest = 40.399139 -
    // 77.662873 x 0.181 = 26.342160 GiB. A slot: 36 Gated DeltaNet layers x (conv 2048 x 3 x
    // 2 B + temporal 8 x 128 x 128 x 4 B) = 19,316,736 B; budget = rest x 0.9 / 1.9 GiB;
    // K = int((budget - slot) // slot) = 692; the pool 693 slots = 13,386,498,048 B.
    assert_eq!(d.mamba_slots, Some(692));
    assert_eq!(d.workers[0].recurrent_state, 693 * 19_316_736);
    // What is left: int((26.342160 - 13,386,498,048 / 2^30) x 2^30) = 14,898,180,358 B over
    // the 12 attention layers' cell, 1 KV head (2 // 4 -> 1) x (256 + 256) x 12 x 2 B =
    // 12,288 B: 1,212,417 tokens.
    assert_eq!(d.cell_bytes, vec![12_288]);
    assert_eq!(d.pool_budget, 14_898_180_358);
    assert_eq!(s.kv_cache_tokens, 1_212_417);
    assert_eq!(s.kv_layout.groups[0].layers, 12);
    // Requests: min(clamp(int(1,212,417 / 262144 x 512) = 2368), T // 2) = 2368, capped at
    // K // 5 = 138 (3 slots a request + 2 tracking slots).
    assert_eq!(d.max_running_requests, 138);
    assert_eq!(d.workers[0].req_to_token, 139 * (262_144 + 4) * 4);
    assert_eq!(d.workers[0].k_bytes, (1_212_417 + 1) * 12 * 256 * 2);
    assert_eq!(s.verdict, Verdict::Starts);
    // The mem_fraction_static for these 1,212,417 tokens: 0.819 itself (0.818 keeps 0.001 x
    // 77.66 GiB less, of which about 1 / 1.9 would have gone to the cache: ~3,500 tokens).
    let answers = profile()
        .budget_answers(&StageCircuit::in_order(&circuits), &run, 1_212_417)
        .unwrap();
    assert_eq!(answers.utilization_for_target, Some(0.819));
    // At TP 2 the weights (79,800,827,904 B of segments with the rope cache) leave A =
    // 3.342498 GiB, rest = 3.342498 - 77.662873 x 0.172 = -10.015516 GiB; a slot is 36 x (4096
    // x 3 x 2 + 16 x 128 x 128 x 4) = 38,633,472 B: K = floor((rest x 0.9 / 1.9 GiB - slot) /
    // slot) = -133, and
    // SGLang raises its state-cache error before the rest's own check.
    let (circuits, run) = layout("qwen3-next", 2, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    let why = detail(&s).refusal.clone().unwrap();
    assert!(
        why.starts_with(
            "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=-133"
        ),
        "{why}"
    );
    assert!(matches!(s.verdict, Verdict::NoKvMemory { .. }));
}

#[test]
fn hybrid_and_recurrent_pools_are_refused() {
    // Qwen3-Next's state pool is read alike from 0.5.17 to 0.5.23 on the path modelled
    // (engines/tests/sglang_mamba.rs has the older rules): 0.5.6 refuses it.
    let (circuits, run) = layout("qwen3-next", 4, KvCacheDtype::Auto);
    let same = engines::select("sglang==0.5.22")
        .unwrap()
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap();
    assert_eq!(same.kv_cache_tokens, 1_212_417);
    assert_eq!(detail(&same).mamba_slots, Some(692));
    let e = engines::select("sglang==0.5.6")
        .unwrap()
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap_err()
        .to_string();
    assert!(e.contains("per-sequence recurrent state"), "{e}");
    // gpt-oss is one of the hybrid sliding-window classes: its pool is split
    // (engines/tests/sglang_swa.rs derives it).
    let (circuits, run) = layout("gpt-oss-20b", 1, KvCacheDtype::Auto);
    let s = predict(&circuits, &run).unwrap();
    assert_eq!(detail(&s).swa_tokens, Some(998_325));
}

#[test]
fn budget_answers_from_the_pool() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let p = profile();
    let stages = StageCircuit::in_order(&circuits);
    let a = p.budget_answers(&stages, &run, 500_000).unwrap();
    // Every context up to 131,072 starts and a request of it fits the 411,936 tokens.
    assert_eq!(a.largest_max_model_len, Some(131_072));
    // 500,000 tokens x 131,072 B = 61.0352 GiB of rest: mfs >= 1 - (63.6613 - 61.0352) /
    // 78.6829 = 0.96662, 0.967 rounded up.
    assert_eq!(a.utilization_for_target, Some(0.967));
    // The smallest TP that starts is 1.
    let tp = p
        .smallest_tp(&run, 8, |tp| {
            Some(layout("llama-3.1-8b", tp, KvCacheDtype::Auto).0)
        })
        .unwrap();
    assert_eq!(tp.found.map(|(n, _)| n), Some(1));
}

#[test]
fn releases_select_their_folder_and_differ_where_the_source_does() {
    assert_eq!(release("sglang").version(), "0.5.23");
    for (spec, folder) in [
        ("sglang==0.5.22", "0.5.22"),
        ("sglang==0.5.21", "0.5.21"),
        ("sglang==0.5.20", "0.5.20"),
        ("sglang==0.5.19", "0.5.19"),
    ] {
        assert_eq!(release(spec).version(), folder);
    }
    for (spec, folder) in [
        ("sglang==0.5.18", "0.5.18"),
        ("sglang==0.5.17", "0.5.17"),
        ("sglang==0.5.16", "0.5.16"),
        ("sglang==0.5.15.post1", "0.5.15"),
        ("sglang==0.5.14", "0.5.14"),
    ] {
        assert_eq!(release(spec).version(), folder);
    }
    for (spec, folder) in [
        ("sglang==0.5.12.post1", "0.5.12"),
        ("sglang==0.5.11", "0.5.11"),
        ("sglang==0.5.10.post1", "0.5.10"),
    ] {
        assert_eq!(release(spec).version(), folder);
    }
    for (spec, folder) in [
        ("sglang==0.5.9", "0.5.9"),
        ("sglang==0.5.8.post1", "0.5.8"),
        ("sglang==0.5.7", "0.5.7"),
        ("sglang==0.5.6.post2", "0.5.6"),
        ("sglang==0.5.4.post1", "0.5.5"),
        ("sglang==0.5.5.post3", "0.5.5"),
        ("sglang==0.5.4", "0.5.3"),
        ("sglang==0.5.3.post2", "0.5.3"),
        ("sglang==0.5.2", "0.5.2"),
        ("sglang==0.5.1.post3", "0.5.1"),
        ("sglang==0.4.10.post2", "0.4.10.post2"),
        ("sglang==0.4.10.post1", "0.4.10"),
        ("sglang==0.4.9.post3", "0.4.9.post4"),
        ("sglang==0.4.9.post5", "0.4.10"),
        ("sglang==0.4.9.post2", "0.4.9"),
        ("sglang==0.4.7.post1", "0.4.9"),
    ] {
        assert_eq!(release(spec).version(), folder);
    }
    // 0.4.6 to 0.4.7 are folders of their own (engines/tests/sglang_0_4.rs); an older
    // release is refused with the list, which starts at 0.4.6.
    let e = engines::select("sglang==0.4.5").unwrap_err().to_string();
    assert!(
        e.starts_with("--engine sglang==0.4.5: release 0.4.5 is not modelled"),
        "{e}"
    );
    assert!(
        e.contains("0.4.6, 0.4.6.post1, 0.4.6.post2, 0.4.6.post3, 0.4.6.post4, 0.4.6.post5, 0.4.7, 0.4.7.post1"),
        "{e}"
    );
    // 0.5.22 caps MLA prefill graphs at 2048 tokens: 8 + 14 + 8 + 8 + 4 (1280..2048 by 256) =
    // 42 sizes instead of 58; the reserve
    // counts MLA's 1.5 GiB either way, so mem_fraction_static stays 0.816.
    let (circuits, run) = layout("deepseek-v2-lite", 1, KvCacheDtype::Auto);
    let s = release("sglang==0.5.22")
        .predict_layout(&StageCircuit::in_order(&circuits), &run)
        .unwrap();
    let d = detail(&s);
    assert_eq!(d.prefill_graph_sizes.last(), Some(&2048));
    assert_eq!(d.prefill_graph_sizes.len(), 42);
    assert_eq!(d.mem_fraction_static, 0.816);
    // --max-running-requests 64: 0.5.22 clamps the default decode max batch size to it, 0.5.21
    // keeps 256 (reserve 13,904 MB, mfs 0.830, against 512 + 12288 + 128 + 128 + 464 =
    // 13,520 MB, mfs 0.834).
    let (circuits, mut run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    run.max_num_seqs = Some(64);
    let stages = StageCircuit::in_order(&circuits);
    let clamped = release("sglang==0.5.22")
        .predict_layout(&stages, &run)
        .unwrap();
    let kept = release("sglang==0.5.21")
        .predict_layout(&stages, &run)
        .unwrap();
    assert_eq!(detail(&clamped).decode_graph_sizes.last(), Some(&64));
    assert_eq!(detail(&clamped).mem_fraction_static, 0.834);
    assert_eq!(detail(&kept).decode_graph_sizes.last(), Some(&256));
    assert_eq!(detail(&kept).mem_fraction_static, 0.830);
    // 0.5.19 takes --cuda-graph-max-bs (the decode max batch size): 128 gives 512 + 12288 +
    // 128 + 256 + 464 = 13,648 MB, mfs round(67911 / 81559, 3) = 0.833; 0.5.20 refuses it.
    let bs = with_flags(
        layout("llama-3.1-8b", 1, KvCacheDtype::Auto).1,
        SglangFlags {
            cuda_graph_max_bs: Some(128),
            ..SglangFlags::default()
        },
    );
    let s = release("sglang==0.5.19")
        .predict_layout(&stages, &bs)
        .unwrap();
    assert_eq!(detail(&s).decode_graph_sizes.last(), Some(&128));
    assert_eq!(detail(&s).mem_fraction_static, 0.833);
    let e = release("sglang==0.5.20")
        .predict_layout(&stages, &bs)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--cuda-graph-max-bs: SGLang 0.5.20 has no such flag"),
        "{e}"
    );
    // Below 35 GiB (an L4-class 23,034 MiB): 0.5.19 chunks 2048 and captures up to 24,
    // 0.5.20 chunks 4096 and captures up to 48.
    let mut small = layout("llama-3.1-8b", 1, KvCacheDtype::Auto).1;
    small.device.memory_bytes = 23_034 << 20;
    let old = release("sglang==0.5.19")
        .predict_layout(&stages, &small)
        .unwrap();
    let new = release("sglang==0.5.20")
        .predict_layout(&stages, &small)
        .unwrap();
    assert_eq!(
        (
            detail(&old).chunked_prefill_size,
            detail(&old).decode_graph_sizes.last()
        ),
        (2048, Some(&24))
    );
    assert_eq!(
        (
            detail(&new).chunked_prefill_size,
            detail(&new).decode_graph_sizes.last()
        ),
        (4096, Some(&48))
    );
}

#[test]
fn older_releases_change_the_graph_reserve_as_their_source_does() {
    let (circuits, run) = layout("deepseek-v2-lite", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let mfs = |spec: &str, run: &RunSettings| {
        let s = release(spec).predict_layout(&stages, run).unwrap();
        (
            detail(&s).mem_fraction_static,
            detail(&s).prefill_graph_sizes.len(),
        )
    };
    // 0.5.15-0.5.17 turn breakable prefill graphs off for MLA: no 1.5 GiB, 512 + 12288 + 128
    // + 512 = 13,440 MB, mfs round(68119 / 81559, 3) = 0.835; 0.5.18 keeps them (0.816).
    assert_eq!(mfs("sglang==0.5.17", &run), (0.835, 0));
    assert_eq!(mfs("sglang==0.5.15", &run), (0.835, 0));
    assert_eq!(mfs("sglang==0.5.18", &run), (0.816, 42));
    // 0.5.14's piecewise graphs keep MLA: 0.816 again.
    assert_eq!(mfs("sglang==0.5.14", &run), (0.816, 42));
    // --disable-cuda-graph: 0.5.14 still counts the decode graphs' 256 x 2 MB: 512 + 12288 +
    // 512 + 128 = 13,440 MB, 0.835; 0.5.15 counts neither graph: 12,928 MB, 0.841.
    let (circuits, mut eager) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    eager.enforce_eager = true;
    let stages = StageCircuit::in_order(&circuits);
    let old = release("sglang==0.5.14")
        .predict_layout(&stages, &eager)
        .unwrap();
    let new = release("sglang==0.5.15")
        .predict_layout(&stages, &eager)
        .unwrap();
    assert_eq!(detail(&old).mem_fraction_static, 0.835);
    assert_eq!(detail(&new).mem_fraction_static, 0.841);
}

#[test]
fn releases_0_5_14_to_0_5_16_cap_prefill_graphs_at_a_given_context() {
    // --context-length 4096: 0.5.16 captures prefill graphs up to 4096 tokens (8 + 14 + 8 + 8
    // + 12 = 50 sizes), 0.5.17 up to the chunked 8192 (58).
    let (circuits, mut run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    run.max_model_len = Some(4096);
    let stages = StageCircuit::in_order(&circuits);
    let sizes = |spec: &str| {
        let s = release(spec).predict_layout(&stages, &run).unwrap();
        detail(&s).prefill_graph_sizes.len()
    };
    assert_eq!(sizes("sglang==0.5.16"), 50);
    assert_eq!(sizes("sglang==0.5.14"), 50);
    assert_eq!(sizes("sglang==0.5.17"), 58);
}

#[test]
fn release_0_5_13_caps_requests_at_the_estimate_and_refuses_by_the_token_count() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    assert_eq!(release("sglang==0.5.13.post1").version(), "0.5.13");
    // --max-running-requests 5000: 0.5.13 takes min(5000, the estimate 2048) = 2048; 0.5.14
    // min(5000, 411,936 // 2) = 5000.
    let mut many = run.clone();
    many.max_num_seqs = Some(5000);
    let old = release("sglang==0.5.13")
        .predict_layout(&stages, &many)
        .unwrap();
    let new = release("sglang==0.5.14")
        .predict_layout(&stages, &many)
        .unwrap();
    assert_eq!(detail(&old).max_running_requests, 2048);
    assert_eq!(detail(&new).max_running_requests, 5000);
    // --disable-cuda-graph leaves 0.5.13's piecewise graphs and both reserve terms: 0.830 as
    // by default, 58 piecewise sizes, no decode graph.
    let mut eager = run.clone();
    eager.enforce_eager = true;
    let s = release("sglang==0.5.13")
        .predict_layout(&stages, &eager)
        .unwrap();
    let d = detail(&s);
    assert_eq!(
        (
            d.mem_fraction_static,
            d.prefill_graph_sizes.len(),
            d.decode_graph_sizes.len()
        ),
        (0.830, 58, 0)
    );
    // --mem-fraction-static 0.15: a negative rest gives no token, and 0.5.13 raises "Not
    // enough memory" (0.5.14 its ValueError, above).
    let low = with_flags(
        run,
        SglangFlags {
            mem_fraction_static: Some(0.15),
            ..SglangFlags::default()
        },
    );
    let s = release("sglang==0.5.13")
        .predict_layout(&stages, &low)
        .unwrap();
    assert_eq!(s.kv_cache_tokens, 0);
    assert_eq!(
        detail(&s).refusal.as_deref(),
        Some("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    );
}

#[test]
fn releases_0_5_10_to_0_5_12_differ_from_0_5_13_where_their_source_does() {
    // --context-length 4096: 0.5.13 caps the piecewise graphs at it (50 sizes, reserve 512 +
    // 12288 + 512 + 128 + 50 x 8 = 13,840 MB, mfs round(67719 / 81559, 3) = 0.830); 0.5.12
    // keeps the chunked 8192 (58 sizes, 13,904 MB, mfs round(67655 / 81559, 3) = 0.830).
    let (circuits, mut run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    run.max_model_len = Some(4096);
    let stages = StageCircuit::in_order(&circuits);
    let sizes = |spec: &str| {
        let s = release(spec).predict_layout(&stages, &run).unwrap();
        detail(&s).prefill_graph_sizes.len()
    };
    assert_eq!(sizes("sglang==0.5.13"), 50);
    assert_eq!(sizes("sglang==0.5.12"), 58);
    assert_eq!(sizes("sglang==0.5.10"), 58);
    // gpt-oss: a hybrid sliding-window pool, split by the all-layer count's bytes in 0.5.10
    // (engines/tests/sglang_swa.rs derives it with 0.5.10's own load rules).
    let (circuits, run) = layout("gpt-oss-20b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let s = release("sglang==0.5.10")
        .predict_layout(&stages, &run)
        .unwrap();
    assert!(detail(&s).swa_tokens.is_some());
    // 0.5.10's request table has max_running_requests rows, 0.5.11's one more: at the
    // default context 131072 and 2048 requests, 2048 x 131076 x 4 = 1,073,774,592 B against
    // 2049 x 131076 x 4 = 1,074,298,896 B.
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let table = |spec: &str| {
        let s = release(spec).predict_layout(&stages, &run).unwrap();
        let d = detail(&s);
        (d.max_running_requests, d.workers[0].req_to_token)
    };
    assert_eq!(table("sglang==0.5.10"), (2048, 1_073_774_592));
    assert_eq!(table("sglang==0.5.11"), (2048, 1_074_298_896));
    // --mem-fraction-static 0.15: no token; 0.5.10's message names the fraction, 0.5.11's not.
    let low = with_flags(
        run,
        SglangFlags {
            mem_fraction_static: Some(0.15),
            ..SglangFlags::default()
        },
    );
    let refusal = |spec: &str| {
        let s = release(spec).predict_layout(&stages, &low).unwrap();
        detail(&s).refusal.clone().unwrap()
    };
    assert_eq!(
        refusal("sglang==0.5.10"),
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.15"
    );
    assert_eq!(
        refusal("sglang==0.5.11"),
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    );
}

#[test]
fn releases_0_5_8_and_0_5_9_size_the_pool_without_prefill_graphs() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let at = |spec: &str, run: &RunSettings| {
        let s = release(spec).predict_layout(&stages, run).unwrap();
        detail(&s).clone()
    };
    // Piecewise graphs are opt-in: 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 MB, mfs
    // round(68119 / 81559, 3) = 0.835, no prefill graph; 0.5.10 adds 58 x 8 MB (0.830).
    let d = at("sglang==0.5.9", &run);
    assert_eq!(
        (d.mem_fraction_static, d.prefill_graph_sizes.len()),
        (0.835, 0)
    );
    assert_eq!(d.decode_graph_sizes.last(), Some(&256));
    assert_eq!(at("sglang==0.5.10", &run).mem_fraction_static, 0.830);
    // Default requests: min(the estimate 2048, T // 2) = 2048 printed, and the pool's rows
    // are the estimate: 2048 x (131072 + 4) x 4 = 1,073,774,592 B.
    assert_eq!(
        (d.max_running_requests, d.workers[0].req_to_token),
        (2048, 1_073_774_592)
    );
    // --max-running-requests 5000: the pool has 5000 rows and prints 5000 (5000 x 131076 x 4
    // = 2,621,520,000 B); 0.5.10 caps it at the estimate, 2048.
    let mut many = run.clone();
    many.max_num_seqs = Some(5000);
    let d = at("sglang==0.5.9", &many);
    assert_eq!(
        (d.max_running_requests, d.workers[0].req_to_token),
        (5000, 2_621_520_000)
    );
    assert_eq!(at("sglang==0.5.10", &many).max_running_requests, 2048);
    // --cuda-graph-max-bs 100: 0.5.9 captures up to 96 (the list's last size under 100) and
    // reserves 512 + 12288 + 200 + 128 = 13,128 MB, mfs round(68431 / 81559, 3) = 0.839;
    // 0.5.10 appends 100 and adds the 464 MB of piecewise graphs: 13,592 MB, 0.833.
    let bs = with_flags(
        run.clone(),
        SglangFlags {
            cuda_graph_max_bs: Some(100),
            ..SglangFlags::default()
        },
    );
    let old = at("sglang==0.5.9", &bs);
    let new = at("sglang==0.5.10", &bs);
    assert_eq!(
        (old.decode_graph_sizes.last(), old.mem_fraction_static),
        (Some(&96), 0.839)
    );
    assert_eq!(
        (new.decode_graph_sizes.last(), new.mem_fraction_static),
        (Some(&100), 0.833)
    );
    // --mem-fraction-static 0.15: no token, and 0.5.9's message is an f-string `=` form.
    let low = with_flags(
        run,
        SglangFlags {
            mem_fraction_static: Some(0.15),
            ..SglangFlags::default()
        },
    );
    assert_eq!(
        at("sglang==0.5.8", &low).refusal.as_deref(),
        Some(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.15"
        )
    );
}

#[test]
fn releases_0_5_3_to_0_5_7_differ_in_the_rope_growth_the_small_tier_and_gpt_oss() {
    // At Llama-3.1-8B's default context, 0.5.6 grows the RoPE cache to
    // ceil((131072 + 256) / 128) x 128 = 131,328 rows: (131328 - 131072) x 128 x 4 = 131,072
    // B after the weights print; 0.5.5 grows none.
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let at = |spec: &str, run: &RunSettings| {
        let s = release(spec).predict_layout(&stages, run).unwrap();
        detail(&s).clone()
    };
    assert_eq!(at("sglang==0.5.6", &run).workers[0].after_load, 131_072);
    assert_eq!(at("sglang==0.5.5", &run).workers[0].after_load, 0);
    // Below 35 GiB (an L4-class 23,034 MiB) at TP 1: 0.5.4 captures up to 16, 0.5.4.post1 up
    // to 24; both chunk 2048.
    let mut small = run.clone();
    small.device.memory_bytes = 23_034 << 20;
    let old = at("sglang==0.5.4", &small);
    let new = at("sglang==0.5.4.post1", &small);
    assert_eq!(
        (old.chunked_prefill_size, old.decode_graph_sizes.last()),
        (2048, Some(&16))
    );
    assert_eq!(
        (new.chunked_prefill_size, new.decode_graph_sizes.last()),
        (2048, Some(&24))
    );
    // gpt-oss: a hybrid pool from 0.5.8 on; before, one pool over every layer (its hybrid
    // memory forced off), both predicted (engines/tests/sglang_swa.rs derives them).
    let (circuits, run) = layout("gpt-oss-20b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let swa = |spec: &str| {
        let s = release(spec).predict_layout(&stages, &run).unwrap();
        detail(&s).swa_tokens
    };
    assert!(swa("sglang==0.5.8").is_some());
    assert_eq!(swa("sglang==0.5.7"), None);
    assert_eq!(swa("sglang==0.5.3"), None);
    // The same pool as 0.5.8 at H100 defaults: mfs 0.835, 415,159 tokens; 0.5.3 grows no RoPE
    // cache, and its 131,072 B are one more cell: 415,160.
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    for (spec, tokens) in [
        ("sglang==0.5.3", 415_160),
        ("sglang==0.5.6", 415_159),
        ("sglang==0.5.7", 415_159),
    ] {
        let s = release(spec).predict_layout(&stages, &run).unwrap();
        assert_eq!(
            (detail(&s).mem_fraction_static, s.kv_cache_tokens),
            (0.835, tokens),
            "{spec}"
        );
    }
}

#[test]
fn release_0_5_2_reserves_by_its_memory_table() {
    let stages_of = |tp: u64| layout("llama-3.1-8b", tp, KvCacheDtype::Auto);
    let at = |tp: u64, run: &RunSettings| {
        let (circuits, _) = stages_of(tp);
        let s = release("sglang==0.5.2")
            .predict_layout(&StageCircuit::in_order(&circuits), run)
            .unwrap();
        detail(&s).clone()
    };
    // H100 (81,559 MiB): (9.5 + TP / 2) GiB reserved: TP 1 10,240 MB, mfs round(71319 /
    // 81559, 3) = 0.874; TP 2 10,752 MB, round(70807 / 81559, 3) = 0.868. No prefill graph;
    // the capture list [1, 2, 4, 8] + 16..160 by 8: 23 sizes up to 160.
    let d = at(1, &stages_of(1).1);
    assert_eq!(d.mem_fraction_static, 0.874);
    assert_eq!(d.chunked_prefill_size, 8192);
    assert_eq!(
        (d.decode_graph_sizes.len(), d.decode_graph_sizes.last()),
        (23, Some(&160))
    );
    assert!(d.prefill_graph_sizes.is_empty());
    assert_eq!(at(2, &stages_of(2).1).mem_fraction_static, 0.868);
    // An L4-class 23,034 MiB: (2.8 + 0.1) GiB = 2,969.6 MB, round(20064.4 / 23034, 3) =
    // 0.871; chunked 2048, graphs up to 8.
    let mut small = stages_of(1).1;
    small.device.memory_bytes = 23_034 << 20;
    let d = at(1, &small);
    assert_eq!(
        (
            d.mem_fraction_static,
            d.chunked_prefill_size,
            d.decode_graph_sizes.last()
        ),
        (0.871, 2048, Some(&8))
    );
    // --cuda-graph-max-bs: its list grows from the default's largest by 16, not modelled.
    let bs = with_flags(
        stages_of(1).1,
        SglangFlags {
            cuda_graph_max_bs: Some(300),
            ..SglangFlags::default()
        },
    );
    let (circuits, _) = stages_of(1);
    let e = release("sglang==0.5.2")
        .predict_layout(&StageCircuit::in_order(&circuits), &bs)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--cuda-graph-max-bs: SGLang 0.4.7.post1 to 0.5.2 extend their capture list"),
        "{e}"
    );
}

#[test]
fn releases_0_4_7_post1_to_0_5_1_take_a_longer_context_and_size_each_stage_alone() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    // --context-length 262144, above the derived 131072: 0.5.1 raises its ValueError; 0.4.10
    // takes it with a warning. Its pool is 0.5.2's (mfs 0.874, no RoPE growth, so 415,171 +
    // (0.874 - 0.835) x F / cell more tokens, the same at any context); its requests:
    // clamp(int(T / 262144 x 512), 2048, 4096) = 2048.
    let mut long = run.clone();
    long.max_model_len = Some(262_144);
    let refused = release("sglang==0.5.1")
        .predict_layout(&stages, &long)
        .unwrap();
    assert_eq!(
        refused.verdict,
        Verdict::MaxModelLenAboveModel {
            max_model_len: 262_144,
            longest: 131_072
        }
    );
    let taken = release("sglang==0.4.10")
        .predict_layout(&stages, &long)
        .unwrap();
    let at_derived = release("sglang==0.4.10")
        .predict_layout(&stages, &run)
        .unwrap();
    assert_eq!(taken.verdict, Verdict::Starts);
    assert_eq!(detail(&taken).context_len, 262_144);
    assert_eq!(detail(&taken).mem_fraction_static, 0.874);
    assert_eq!(taken.kv_cache_tokens, at_derived.kv_cache_tokens);
    assert_eq!(detail(&taken).max_running_requests, 2048);
    // The largest context asked of 0.4.10 is the pool's tokens, not the derived context.
    let answers = release("sglang==0.4.10")
        .budget_answers(&stages, &run, 0)
        .unwrap();
    assert_eq!(
        answers.largest_max_model_len,
        Some(at_derived.kv_cache_tokens)
    );
    // Gemma 3's windows: hybrid pools in 0.4.9.post3-0.4.10.post2 (sglang_0_4.rs derives
    // them), a full cache in 0.4.9.post2 and 0.5.1 (forced off).
    let (circuits, run) = layout("gemma-3-1b-it", 1, KvCacheDtype::Auto);
    let stages = StageCircuit::in_order(&circuits);
    let gemma = |spec: &str| release(spec).predict_layout(&stages, &run);
    assert!(
        detail(&gemma("sglang==0.4.10.post2").unwrap())
            .swa_tokens
            .is_some()
    );
    assert!(
        detail(&gemma("sglang==0.4.9.post3").unwrap())
            .swa_tokens
            .is_some()
    );
    assert_eq!(detail(&gemma("sglang==0.5.1").unwrap()).swa_tokens, None);
    assert_eq!(
        gemma("sglang==0.4.9").unwrap().kv_cache_tokens,
        gemma("sglang==0.5.1").unwrap().kv_cache_tokens
    );
    // PP 2: 0.5.1 sizes each stage's pool alone (refused); 0.5.2 takes the minimum.
    let mut options = ImportOptions::default();
    options.load = profile().load_rules();
    options.parallel = Parallel {
        tp: 1,
        pp: 2,
        dp: 1,
        expert_parallel: false,
    };
    let sharded =
        circuit_hf::import_parallel(config("llama-3.1-8b"), "config.json", &options, &[]).unwrap();
    let mut run = layout("llama-3.1-8b", 1, KvCacheDtype::Auto).1;
    run.pipeline_parallel_size = 2;
    let circuits: Vec<Circuit> = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let stages = StageCircuit::in_order(&circuits);
    let e = release("sglang==0.5.1")
        .predict_layout(&stages, &run)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2 pipeline stages: sglang 0.5.1 sizes each stage's pool alone"),
        "{e}"
    );
    assert!(
        release("sglang==0.5.2")
            .predict_layout(&stages, &run)
            .is_ok()
    );
}

/// The ROCm refusal is `inherit = true`: every SGLang folder keeps it.
#[test]
fn every_release_refuses_rocm() {
    let (circuits, mut run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    run.device = device("mi300x");
    let stages = StageCircuit::in_order(&circuits);
    let sglang = engines::folders()
        .iter()
        .filter(|f| f.name.starts_with("sglang-"));
    assert_eq!(sglang.clone().count(), 31);
    for folder in sglang {
        let e = engines::profile(folder.name)
            .unwrap()
            .predict_layout(&stages, &run)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("device mi300x: SGLang on ROCm"),
            "{}: {e}",
            folder.name
        );
    }
}

/// `--disable-radix-cache`: the radix tree only indexes the pool's slots
/// (mem_cache/kv_cache_builder.py:365-390 picks the tree), so a model whose every layer keeps a
/// full cache starts with the same bytes; a recurrent-state pool's requests are sized by it
/// (kv_cache_configurator.py:3063, the ratio drops to 1), which is refused naming the flag.
#[test]
fn the_radix_cache_off_changes_no_byte_of_a_full_cache_model() {
    let (circuits, run) = layout("llama-3.1-8b", 1, KvCacheDtype::Auto);
    let on = predict(&circuits, &run).unwrap();
    let off = predict(
        &circuits,
        &with_flags(
            run,
            SglangFlags {
                disable_radix_cache: true,
                ..SglangFlags::default()
            },
        ),
    )
    .unwrap();
    assert_eq!(off, on);
    let (circuits, run) = layout("qwen3-next", 4, KvCacheDtype::Auto);
    let e = predict(
        &circuits,
        &with_flags(
            run,
            SglangFlags {
                disable_radix_cache: true,
                ..SglangFlags::default()
            },
        ),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--disable-radix-cache: sglang 0.5.23 sizes the recurrent-state pool's requests by whether the radix cache is on, which is not modelled (a model whose every layer keeps a full cache starts with the same bytes either way)"
    );
}

/// `--quantization` with SGLang names SGLang's method: taken where it is what SGLang resolves
/// from the checkpoint anyway (the same start-up as without it), refused in one line naming
/// the method otherwise (crates/engine-profile/src/sglang/quantization.rs).
#[test]
fn quantization_is_taken_where_it_names_the_checkpoints_own() {
    let q = |name: &str, tp: u64, named: &str| {
        let (circuits, run) = layout(name, tp, KvCacheDtype::Auto);
        let flags = SglangFlags {
            quantization: Some(named.to_owned()),
            ..SglangFlags::default()
        };
        let given = predict(&circuits, &with_flags(run.clone(), flags));
        given.map(|s| (s, predict(&circuits, &run).unwrap()))
    };
    // Given or not, the same method: the same start-up, whose tokens replay from its loaded
    // bytes (the FP8 checkpoint's weights and the rope cache's growth) and the 0.830 default.
    let (given, bare) = q("llama-fp8", 1, "compressed-tensors").unwrap();
    assert_eq!(given, bare);
    let d = detail(&bare);
    let loaded = bare.workers[0].weights + d.workers[0].after_load;
    assert_eq!(d.mem_fraction_static, 0.830);
    assert_eq!(tokens(F_TP1, loaded, 0.830, 131_072, false), 465_168);
    assert_eq!(given.kv_cache_tokens, 465_168);
    let refused = |name: &str, tp: u64, named: &str| q(name, tp, named).unwrap_err().to_string();
    assert_eq!(
        refused("llama-3.1-8b", 1, "fp8"),
        "--quantization fp8: SGLang quantizes an unquantized checkpoint's linear weights to FP8 with one float32 scale per output channel (layers/quantization/fp8.py:1151-1163 in 0.5.23), where the importer's online FP8 keeps one per tensor, so it is not modelled for SGLang"
    );
    assert_eq!(
        refused("llama-3.1-8b", 1, "w8a8_int8"),
        "--quantization w8a8_int8: the checkpoint has no quantization config, and SGLang's w8a8_int8 applied while loading is not modelled"
    );
    assert_eq!(
        refused("qwen3-32b-awq", 2, "awq_marlin"),
        "--quantization awq_marlin: on a `awq` checkpoint SGLang upgrades to awq_marlin unless plain awq is named, and raises for a Marlin name when the checkpoint's bits, group size or zero point or the GPU rule Marlin out (layers/quantization/awq/awq.py override_quantization_method), which is not followed: drop it, SGLang reads the checkpoint's own"
    );
    assert!(
        refused("qwen3-32b-awq", 2, "awq").starts_with("--quantization awq: on a `awq` checkpoint")
    );
    assert!(
        refused("llama-w4a16", 1, "marlin")
            .starts_with("--quantization marlin: on a `gptq` checkpoint")
    );
    assert_eq!(
        refused("llama-fp8", 1, "fp8"),
        "--quantization fp8: the checkpoint is quantized as `compressed-tensors`, and SGLang then raises (\"Quantization method specified in the model config (compressed-tensors) does not match the quantization method specified in the `quantization` argument\", configs/model_config.py:2136-2141 in 0.5.23) or requantizes it, which is not modelled"
    );
}
