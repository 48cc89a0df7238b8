//! Per-rank weights of parallel layouts, exact to the byte, and against vLLM's own per-rank
//! figures (`data/vllm/cases.json`).
//!
//! The per-rank literals were derived by hand from the sharding rules of docs/parallel.md
//! (per layer: q, k, v, o split over heads, gate/up/down over the FFN, norms replicated;
//! embedding and lm_head over the vocab padded to 64). Every layout is also checked to sum
//! back to the published checkpoint (data/models/README.md) plus exactly what the ranks
//! replicate, so a rule that drops or duplicates a tensor fails twice.

use circuit_hf::{
    HfError, ImportOptions, Parallel, ParallelError, ParallelImport, import_parallel,
};

fn config(name: &str) -> String {
    let path = format!(
        "{}/../../data/models/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Options that hold every rank's tensors as vLLM 0.19 loads them on an H100: the `[load]`
/// rules of engines/vllm-0.19 (MXFP4 experts in triton_kernels' layout, LLaVA's and Mistral
/// 3's towers up to the deepest feature layer).
fn vllm_loaded() -> ImportOptions {
    let mut options = ImportOptions::default();
    options.load = engines::profile("vllm-0.19").unwrap().load_rules();
    options
}

fn layout(tp: u64, pp: u64, dp: u64, expert_parallel: bool) -> Parallel {
    Parallel {
        tp,
        pp,
        dp,
        expert_parallel,
    }
}

fn import(name: &str, parallel: Parallel) -> Result<ParallelImport, HfError> {
    let mut options = vllm_loaded();
    options.parallel = parallel;
    import_parallel(&config(name), &format!("{name}/config.json"), &options, &[])
}

/// Weight bytes of every rank, in global rank order.
fn rank_weights(name: &str, parallel: Parallel) -> Vec<u64> {
    let p = import(name, parallel).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.rank_shape.len() as u64, parallel.world_size().unwrap());
    p.rank_shape
        .iter()
        .map(|&s| p.imports[s].circuit.weight_bytes())
        .collect()
}

/// The published checkpoint's bytes.
const LLAMA_8B: u64 = 16_060_522_496;
const QWEN_7B: u64 = 15_231_233_024;
const MIXTRAL: u64 = 93_405_585_408;
const LLAMA_70B: u64 = 141_107_412_992;

/// Bytes of the RMS norms every TP rank holds whole: two per layer and the final one.
fn norms(layers: u64, hidden: u64) -> u64 {
    (2 * layers + 1) * hidden * 2
}

fn check_tp(name: &str, whole: u64, tp: u64, per_rank: u64, replicated_per_rank: u64) {
    let w = rank_weights(name, layout(tp, 1, 1, false));
    assert_eq!(w, vec![per_rank; tp as usize], "{name} TP {tp}");
    assert_eq!(
        w.iter().sum::<u64>(),
        whole + (tp - 1) * replicated_per_rank,
        "{name} TP {tp}: the ranks sum to the checkpoint plus the replicas"
    );
}

#[test]
fn single_rank_is_the_checkpoint() {
    assert_eq!(rank_weights("llama-3.1-8b", Parallel::SINGLE), [LLAMA_8B]);
    assert_eq!(rank_weights("llama-3.1-70b", Parallel::SINGLE), [LLAMA_70B]);
}

#[test]
fn llama_8b_tensor_parallel() {
    check_tp("llama-3.1-8b", LLAMA_8B, 2, 8_030_527_488, norms(32, 4096));
    check_tp("llama-3.1-8b", LLAMA_8B, 4, 4_015_529_984, norms(32, 4096));
}

#[test]
fn qwen_7b_tensor_parallel() {
    // q/k/v biases split with their projections; 4 KV heads give one per rank at TP 4.
    check_tp("qwen2.5-7b", QWEN_7B, 2, 7_615_820_800, norms(28, 3584));
    check_tp("qwen2.5-7b", QWEN_7B, 4, 3_808_114_688, norms(28, 3584));
}

#[test]
fn llama_70b_tensor_parallel() {
    check_tp(
        "llama-3.1-70b",
        LLAMA_70B,
        4,
        35_278_831_616,
        norms(80, 8192),
    );
    check_tp(
        "llama-3.1-70b",
        LLAMA_70B,
        8,
        17_640_734_720,
        norms(80, 8192),
    );
}

#[test]
fn mixtral_tensor_parallel() {
    // Each expert's w1/w3/w2 split on the intermediate dim; the router (8 x 4096 per layer)
    // is replicated with the norms.
    let router = 32 * 8 * 4096 * 2;
    check_tp(
        "mixtral-8x7b-v0.1",
        MIXTRAL,
        2,
        46_704_107_520,
        norms(32, 4096) + router,
    );
}

#[test]
fn llama_8b_pipeline_parallel() {
    // get_pp_indices(32, r, 2) = 16 + 16; the first stage holds embed_tokens, the last the
    // final norm and lm_head (4096 bytes of norm apart); nothing is replicated.
    let two = rank_weights("llama-3.1-8b", layout(1, 2, 1, false));
    assert_eq!(two, [8_030_257_152, 8_030_265_344]);
    assert_eq!(two.iter().sum::<u64>(), LLAMA_8B);
    let four = rank_weights("llama-3.1-8b", layout(1, 4, 1, false));
    assert_eq!(
        four,
        [4_540_465_152, 3_489_792_000, 3_489_792_000, 4_540_473_344]
    );
    assert_eq!(four.iter().sum::<u64>(), LLAMA_8B);
    let p = import("llama-3.1-8b", layout(1, 4, 1, false)).unwrap();
    assert_eq!(p.shapes.len(), 4);
    assert_eq!(p.shapes[1].layers, (8, 16));
    // A middle stage's tensors keep their true layer index.
    let names: Vec<_> = p.imports[1]
        .circuit
        .tensors()
        .values()
        .map(|t| t.name.clone())
        .collect();
    assert!(names.contains(&"model.layers.8.self_attn.q_proj.weight".to_owned()));
    assert!(!names.iter().any(|n| n.starts_with("model.layers.7.")));
}

#[test]
fn pipeline_remainder_goes_to_the_stages_before_the_last() {
    // 28 layers over 3 stages: get_pp_indices gives 9, 10, 9.
    let p = import("qwen2.5-7b", layout(1, 3, 1, false)).unwrap();
    let layers: Vec<_> = p.shapes.iter().map(|s| s.layers).collect();
    assert_eq!(layers, [(0, 9), (9, 19), (19, 28)]);
    let w = rank_weights("qwen2.5-7b", layout(1, 3, 1, false));
    assert_eq!(w.iter().sum::<u64>(), QWEN_7B);
}

#[test]
fn tp_and_pp_combine() {
    let w = rank_weights("llama-3.1-70b", layout(4, 2, 1, false));
    assert_eq!(w.len(), 8);
    // Ranks 0..4 are stage 0, 4..8 stage 1; TP ranks of one stage are alike.
    assert!(w[..4].iter().all(|&b| b == w[0]) && w[4..].iter().all(|&b| b == w[4]));
    assert_eq!(
        w.iter().sum::<u64>(),
        LLAMA_70B + 3 * norms(80, 8192),
        "each norm is on one stage, replicated over its 4 TP ranks"
    );
}

#[test]
fn kv_cache_per_rank() {
    // Llama-3.1-8B: 8 KV heads. TP 2 holds 4 per rank; TP 16 holds one, replicated twice.
    let kv = |tp| {
        let p = import("llama-3.1-8b", layout(tp, 1, 1, false)).unwrap();
        p.imports[0].circuit.state_bytes(1, 1).unwrap()
    };
    assert_eq!(kv(1), 131_072);
    assert_eq!(kv(2), 65_536);
    assert_eq!(kv(16), 2 * 32 * 128 * 2);
    // PP 2: each stage caches its own 16 layers.
    let p = import("llama-3.1-8b", layout(1, 2, 1, false)).unwrap();
    assert_eq!(p.imports[0].circuit.state_bytes(1, 1).unwrap(), 65_536);
}

#[test]
fn expert_parallel_places_whole_experts() {
    // Mixtral, TP 1 x DP 3 with EP: ranks hold 3, 3 and 2 whole experts (the remainder on
    // the first ranks); attention and the router are whole on every rank.
    let p = import("mixtral-8x7b-v0.1", layout(1, 1, 3, true)).unwrap();
    let held: Vec<_> = p
        .rank_shape
        .iter()
        .map(|&s| p.shapes[s].local_experts)
        .collect();
    assert_eq!(held, [Some(3), Some(3), Some(2)]);
    let expert = 3 * 14_336 * 4096 * 2;
    let w: Vec<_> = p
        .rank_shape
        .iter()
        .map(|&s| p.imports[s].circuit.weight_bytes())
        .collect();
    assert_eq!(w[0] - w[2], 32 * expert);
    // Every expert on exactly one rank, the rest replicated on all three.
    let non_expert = MIXTRAL - 32 * 8 * expert;
    assert_eq!(w.iter().sum::<u64>(), 3 * non_expert + 32 * 8 * expert);
    // Without EP, DP x TP splits each expert's intermediate dim: three ranks alike.
    let e = import("mixtral-8x7b-v0.1", layout(2, 1, 2, false)).unwrap();
    assert_eq!(e.shapes.len(), 1);
}

#[test]
fn layouts_that_do_not_fit_are_typed_errors() {
    let err = |name, p| match import(name, p) {
        Err(HfError::Parallel { source, .. }) => source,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        err("qwen2.5-7b", layout(8, 1, 1, false)),
        ParallelError::NotDivisible {
            what: "num_attention_heads",
            value: 28,
            by: 8,
            ..
        }
    ));
    assert!(matches!(
        err("llama-3.1-8b", layout(1, 33, 1, false)),
        ParallelError::PpExceedsLayers { pp: 33, layers: 32 }
    ));
    assert!(matches!(
        err("llama-3.1-8b", layout(0, 1, 1, false)),
        ParallelError::Zero {
            what: "tensor_parallel_size"
        }
    ));
    assert!(matches!(
        err("mixtral-8x7b-v0.1", layout(1, 1, 16, true)),
        ParallelError::EpExceedsExperts { ep: 16, experts: 8 }
    ));
    // A vocabulary whose padding to 64 overflows names the vocabulary, not the ranks.
    let huge = r#"{"model_type": "llama", "vocab_size": 18446744073709551615, "hidden_size": 64,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}"#;
    let mut options = vllm_loaded();
    options.parallel = layout(2, 1, 1, false);
    match import_parallel(huge, "huge/config.json", &options, &[]) {
        Err(HfError::Parallel { source, .. }) => {
            assert_eq!(source, ParallelError::VocabOverflow { vocab: u64::MAX })
        }
        other => panic!("{other:?}"),
    }
    let message = import("qwen2.5-7b", layout(8, 1, 1, false))
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("qwen2.5-7b/config.json: num_attention_heads = 28"),
        "{message}"
    );
}

/// vLLM's "Model loading took X GiB" per rank, from data/vllm/cases.json.
fn vllm_weights_gib(case_name: &str) -> f64 {
    let path = format!("{}/../../data/vllm/cases.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    cases
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == case_name)
        .and_then(|c| c["weights_gib"].as_f64())
        .unwrap_or_else(|| panic!("no case {case_name}"))
}

/// vLLM's per-rank figure also counts a tensor no checkpoint holds: the rotary embedding's
/// `cos_sin_cache` buffer (`model_executor/layers/rotary_embedding/base.py`), one per model
/// (get_rope caches the module), `max_position_embeddings x rotary_dim` in the model dtype.
/// It is an engine fact, added here explicitly and not to the circuit.
fn rope_cache(max_positions: u64, head_dim: u64) -> u64 {
    max_positions * head_dim * 2
}

fn check_vllm(case_name: &str, circuit_bytes: u64, rope: u64) {
    const GIB: f64 = (1u64 << 30) as f64;
    let vllm = vllm_weights_gib(case_name);
    let with_rope = (circuit_bytes + rope) as f64 / GIB;
    let bare = circuit_bytes as f64 / GIB;
    // vLLM prints two decimals of a CUDA memory difference (allocator rounding included).
    assert!(
        (with_rope - vllm).abs() / vllm < 0.005,
        "{case_name}: {with_rope}"
    );
    // The checkpoint's share alone is within 0.5% too.
    assert!((bare - vllm).abs() / vllm < 0.005, "{case_name}: {bare}");
}

#[test]
fn vllm_per_rank_weights() {
    let llama_rope = rope_cache(131_072, 128);
    let tp2 = rank_weights("llama-3.1-8b", layout(2, 1, 1, false));
    check_vllm(
        "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192",
        tp2[0],
        llama_rope,
    );
    let pp2 = rank_weights("llama-3.1-8b", layout(1, 2, 1, false));
    for stage in pp2 {
        check_vllm(
            "meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192",
            stage,
            llama_rope,
        );
    }
    let mixtral = rank_weights("mixtral-8x7b-v0.1", layout(2, 1, 1, false));
    check_vllm(
        "mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192",
        mixtral[0],
        rope_cache(32_768, 128),
    );
}

/// Qwen3-Next-80B-A3B at TP 2, from vLLM 0.19's sharding: the DeltaNet key and value heads
/// split (in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, out_proj and the recurrent state
/// with them, gdn_linear_attn.py), attention over heads (2 KV heads: one per rank), experts
/// and the shared expert over their width, the column-parallel mtp.fc over its rows, the
/// vocabulary (151936, a multiple of 64) in halves. Replicated whole on each rank: the RMS
/// norms (2 per layer x 48, the final one, 2 in the MTP layer and its 3 own), q_norm and
/// k_norm [256] of the 13 full-attention layers, the gated norms [128] of the 36 DeltaNet
/// layers, and the routers [512, 2048] and shared_expert_gate [1, 2048] of the 49 sparse
/// layers (ReplicatedLinear).
#[test]
fn qwen3_next_tensor_parallel() {
    let path = format!(
        "{}/../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut options = vllm_loaded();
    options.parallel = layout(2, 1, 1, false);
    let p = import_parallel(&text, "qwen3-next/config.json", &options, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let whole: u64 = 162_649_725_440;
    let replicated = 2 * (102 * 2048 + 13 * 2 * 256 + 36 * 128 + 49 * 512 * 2048 + 49 * 2048);
    let rank = &p.imports[p.rank_shape[0]].circuit;
    assert_eq!(p.rank_shape, [0, 0]);
    assert_eq!(rank.weight_bytes(), (whole + replicated) / 2);
    assert_eq!(rank.weight_bytes(), 81_376_563_456);
    // Per rank: one KV head of the 12 full-attention layers, and half the DeltaNet state.
    assert_eq!(rank.kv_bytes_per_token().unwrap(), 12 * 2 * 256 * 2);
    assert_eq!(rank.fixed_state_bytes(1).unwrap(), 39_518_208 / 2);
}

/// The collectives each TP rank runs: an all-reduce after the embedding, after every layer's
/// o_proj and down_proj (or the MoE's combined output), and an all-gather of the logits, each
/// writing a new tensor beside the partial one it reads.
#[test]
fn tensor_parallel_ranks_hold_their_collectives() {
    let count = |c: &circuit_ir::Circuit, op: &str| {
        c.nodes().values().filter(|n| n.op.name() == op).count()
    };
    let one = import("llama-3.1-8b", layout(1, 1, 1, false)).unwrap();
    assert_eq!(count(&one.imports[0].circuit, "all_reduce"), 0);
    let two = import("llama-3.1-8b", layout(2, 1, 1, false)).unwrap();
    let c = &two.imports[0].circuit;
    assert_eq!(count(c, "all_reduce"), 1 + 2 * 32);
    assert_eq!(count(c, "all_gather"), 1);
    let edge = |name: &str| {
        c.edges()
            .values()
            .find(|e| e.id == name)
            .unwrap_or_else(|| panic!("no edge {name}"))
    };
    // At 4096 rows: the rank's half of the padded vocabulary (128256 / 2) as the partial
    // logits, the whole of it gathered; o_proj's partial sum and its all-reduced copy, both
    // [rows, hidden].
    assert_eq!(
        edge("head.logits_partial").bytes_at(4096).unwrap(),
        2 * 4096 * 64_128
    );
    assert_eq!(
        edge("head.logits").bytes_at(4096).unwrap(),
        2 * 4096 * 128_256
    );
    assert_eq!(
        edge("layer.0.o_partial").bytes_at(4096).unwrap(),
        2 * 4096 * 4096
    );
    assert_eq!(edge("layer.0.o").bytes_at(4096).unwrap(), 2 * 4096 * 4096);
    // Mixtral: the MoE's combined output is reduced once, not each expert's.
    let moe = import("mixtral-8x7b-v0.1", layout(2, 1, 1, false)).unwrap();
    assert_eq!(count(&moe.imports[0].circuit, "all_reduce"), 1 + 2 * 32);
}

fn checkpoint(name: &str) -> String {
    let path = format!(
        "{}/../../data/checkpoints/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `text` (a config.json) imported for `parallel`.
fn import_text(text: &str, origin: &str, parallel: Parallel) -> Result<ParallelImport, HfError> {
    let mut options = vllm_loaded();
    options.parallel = parallel;
    import_parallel(text, origin, &options, &[])
}

/// Asserts that `imported` is a `BadValue` refusal naming `key` and the value `found`.
fn assert_bad_value<T: std::fmt::Debug>(imported: Result<T, HfError>, key: &str, found: &str) {
    match imported {
        Err(HfError::BadValue {
            key: k, found: f, ..
        }) => assert_eq!((k.as_str(), f.as_str()), (key, found)),
        other => panic!("{other:?}"),
    }
}

/// The checkpoint `data/checkpoints/<name>` imported for `parallel`.
fn import_checkpoint(name: &str, parallel: Parallel) -> Result<ParallelImport, HfError> {
    import_text(&checkpoint(name), &format!("{name}/config.json"), parallel)
}

/// The bytes the vision tower adds to each rank of `parallel`: the multimodal config's ranks
/// minus those of its `text_config` alone.
fn tower_per_rank(text: &str, parallel: Parallel) -> Vec<u64> {
    let bytes = |p: ParallelImport| -> Vec<u64> {
        p.rank_shape
            .iter()
            .map(|&s| p.imports[s].circuit.weight_bytes())
            .collect()
    };
    let whole = bytes(import_text(text, "multimodal", parallel).unwrap());
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    let language =
        bytes(import_text(&json["text_config"].to_string(), "text_config", parallel).unwrap());
    whole.iter().zip(&language).map(|(w, l)| w - l).collect()
}

/// The vision tower of a multimodal checkpoint shards as vLLM 0.19's tower classes load it
/// (mllama4.py): the patch embedding, the adapter's fc1 and the projector column-parallel, the
/// adapter's fc2 row-parallel; per encoder layer q, k, v split over the 16 heads with their
/// biases, o_proj and fc2 row-parallel with their biases whole, fc1 column-parallel; the
/// embeddings and LayerNorms whole. Llama 4 Scout at TP 8, per rank (elements): once
/// 176 x 588 + 1,408 + 577 x 1,408 + 4 x 1,408 + 512 x 5,632 + 4,096 x 512 + 640 x 4,096 =
/// 8,525,120; a layer 3 x 176 x 1,408 + 3 x 176 + 1,408 x 176 + 1,408 + 704 x 1,408 + 704 +
/// 1,408 x 704 + 1,408 + 4 x 1,408 = 2,983,376, 34 of them; in bf16 219,919,808 bytes.
/// Whole, 1,743,864,832 bytes; each rank replicates 2,213,376 of them.
#[test]
fn a_vision_tower_shards_over_tensor_parallel_ranks_as_vllm_loads_it() {
    let scout = checkpoint("llama-4-scout-17b-16e-instruct");
    let tp8 = tower_per_rank(&scout, layout(8, 1, 1, false));
    assert_eq!(tp8, vec![219_919_808; 8]);
    let whole = 1_743_864_832;
    assert_eq!(tower_per_rank(&scout, Parallel::SINGLE), [whole]);
    assert_eq!(tp8.iter().sum::<u64>(), whole + 7 * 2_213_376);
    // Every pipeline stage holds the whole tower: vLLM builds it on every rank.
    assert_eq!(
        tower_per_rank(&scout, layout(1, 2, 1, false)),
        [whole, whole]
    );
}

/// What vLLM's profile feeds Llama 4 Scout's encoder (mllama4.py Mllama4ProcessingInfo): the
/// largest image is 16 tiles high (the image processor's `max_patches`) and one wide, cut into
/// 16 tiles and a global one of 336 x 336 pixels and 3 channels; each tile is (336 / 14)^2 =
/// 576 patches and the class token in the encoder, and keeps 576 // round(1 / 0.5^2) = 144
/// tokens after the pixel shuffle, 17 x 144 = 2,448 for the language model of hidden 5,120.
/// The plain import reads the same; a text-only import has none; a pixel-shuffle ratio
/// outside (0, 1] is refused, naming the key.
#[test]
fn llama_4s_encoder_shape_is_its_processors_largest_image() {
    let scout = checkpoint("llama-4-scout-17b-16e-instruct");
    let p = import_text(&scout, "scout", layout(8, 1, 1, false)).unwrap();
    let e = p.imports[0].facts.encoder.unwrap();
    assert_eq!(
        e,
        circuit_hf::EncoderShape {
            tokens_per_item: 2448,
            tiles_per_item: 17,
            rows_per_tile: 577,
            pixels_per_tile: 3 * 336 * 336,
            hidden: 1408,
            heads: 16,
            head_dim: 88,
            ffn: 5632,
            output_hidden: 5120,
            complex_rotary: true,
            activation_tensors: 2,
        }
    );
    assert_eq!(
        circuit_hf::import(&scout, "scout").unwrap().facts.encoder,
        Some(e)
    );
    let mut options = vllm_loaded();
    options.language_model_only = true;
    let text = circuit_hf::import_with(&scout, "scout", &options, &[]).unwrap();
    assert_eq!(text.facts.encoder, None);
    let bad = scout.replacen(
        "\"pixel_shuffle_ratio\": 0.5",
        "\"pixel_shuffle_ratio\": 2.0",
        1,
    );
    assert_ne!(bad, scout);
    assert_bad_value(
        circuit_hf::import(&bad, "scout"),
        "vision_config.pixel_shuffle_ratio",
        "2.0",
    );
}

/// Gemma 3's SigLIP encoder as vLLM's profile feeds it (gemma3_mm.py Gemma3ProcessingInfo,
/// pan-and-scan off by default): one 896 x 896 crop, (896 / 14)^2 = 4,096 patch rows (no class
/// token), pooled to `mm_tokens_per_image` soft tokens. With the pooling head
/// (`vision_use_head`), whose attention is not modelled, there is no shape; a token count
/// that is not a whole number is refused, naming the key.
#[test]
fn gemma_3s_encoder_shape_is_one_crop_of_soft_tokens() {
    let gemma = r#"{
      "model_type": "gemma3", "mm_tokens_per_image": 256,
      "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                      "num_hidden_layers": 34, "sliding_window": 1024},
      "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                        "model_type": "siglip_vision_model", "num_attention_heads": 16,
                        "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}
    }"#;
    let e = circuit_hf::import(gemma, "gemma")
        .unwrap()
        .facts
        .encoder
        .unwrap();
    assert_eq!(
        e,
        circuit_hf::EncoderShape {
            tokens_per_item: 256,
            tiles_per_item: 1,
            rows_per_tile: 4096,
            pixels_per_tile: 3 * 896 * 896,
            hidden: 1152,
            heads: 16,
            head_dim: 72,
            ffn: 4304,
            output_hidden: 2560,
            complex_rotary: false,
            activation_tensors: 2,
        }
    );
    let with_head = gemma.replace(r#""vision_use_head": false"#, r#""vision_use_head": true"#);
    assert_eq!(
        circuit_hf::import(&with_head, "gemma")
            .unwrap()
            .facts
            .encoder,
        None
    );
    let bad = gemma.replace(
        r#""mm_tokens_per_image": 256"#,
        r#""mm_tokens_per_image": 2.5"#,
    );
    assert_bad_value(
        circuit_hf::import(&bad, "gemma"),
        "mm_tokens_per_image",
        "2.5",
    );
}

/// LLaVA's CLIP encoder as vLLM's profile feeds it (llava.py LlavaProcessingInfo): one
/// 336 x 336 tile of 576 patches and the class token; "default" feature selection gives the
/// language model the 576 patches, "full" the class token too (577); CLIP's QuickGELU keeps
/// three tensors of the MLP's width at its activation, a GELU two, another activation none
/// derived (no shape); a selection that is neither is refused, naming the key.
#[test]
fn llavas_encoder_shape_follows_its_feature_selection_and_activation() {
    let llava = |strategy: &str, act: &str| {
        format!(
            r#"{{
              "model_type": "llava", "vision_feature_select_strategy": "{strategy}",
              "text_config": {{"model_type": "llama", "torch_dtype": "float16"}},
              "vision_config": {{
                "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                "model_type": "clip_vision_model", "num_attention_heads": 16,
                "num_hidden_layers": 24, "patch_size": 14, "hidden_act": "{act}"
              }}
            }}"#
        )
    };
    let shape = |strategy: &str, act: &str| {
        circuit_hf::import(&llava(strategy, act), "llava").map(|i| {
            i.facts
                .encoder
                .map(|e| (e.tokens_per_item, e.rows_per_tile, e.activation_tensors))
        })
    };
    assert_eq!(shape("default", "quick_gelu").unwrap(), Some((576, 577, 3)));
    assert_eq!(shape("full", "gelu").unwrap(), Some((577, 577, 2)));
    assert_eq!(shape("default", "relu").unwrap(), None);
    assert_bad_value(
        shape("patches", "quick_gelu"),
        "vision_feature_select_strategy",
        "\"patches\"",
    );
}

/// LLaVA's CLIP tower and projector at TP 2 (clip.py, llava.py), float16, per rank (elements),
/// as vLLM builds it: up to the deepest feature layer, 24 - 2 + 1 = 23 of the 24
/// (`vision_feature_layer` -2, `init_vision_tower_for_llava`), and no `post_layernorm`
/// (`require_post_norm=False`). Once the class embedding, patch convolution, positions and
/// `pre_layrnorm` whole, 1,196,032; linear_1 2,048 x 1,024 with its bias 2,048; linear_2
/// 4,096 x 2,048 with its bias whole, 4,096; a layer two LayerNorms 4,096, q/k/v
/// 3 x (512 x 1,024 + 512), out_proj 1,024 x 512 + 1,024, fc1 2,048 x 1,024 + 2,048, fc2
/// 1,024 x 2,048 + 1,024 = 6,301,184, 23 of them; 313,230,336 bytes. A tower whose heads the
/// ranks do not divide is refused, naming the tensor, as vLLM's `divide` asserts.
#[test]
fn a_clip_tower_shards_and_refuses_heads_the_ranks_do_not_divide() {
    let llava = |heads: u64| {
        format!(
            r#"{{
              "model_type": "llava", "projector_hidden_act": "gelu",
              "text_config": {{"model_type": "llama", "torch_dtype": "float16", "vocab_size": 32064}},
              "torch_dtype": "float16",
              "vision_config": {{
                "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                "model_type": "clip_vision_model", "num_attention_heads": {heads},
                "num_hidden_layers": 24, "patch_size": 14
              }},
              "vision_feature_layer": -2, "vocab_size": 32064
            }}"#
        )
    };
    assert_eq!(
        tower_per_rank(&llava(16), layout(2, 1, 1, false)),
        [313_230_336; 2]
    );
    match import_text(&llava(12), "llava", layout(8, 1, 1, false)) {
        Err(HfError::Parallel {
            source:
                ParallelError::TowerNotDivisible {
                    tensor,
                    size,
                    unit,
                    tp,
                },
            ..
        }) => {
            assert_eq!(
                (tensor.as_str(), size, unit, tp),
                (
                    "vision_tower.vision_model.encoder.layers.{i}.self_attn.q_proj.weight",
                    12,
                    "heads",
                    8
                )
            );
        }
        other => panic!("{other:?}"),
    }
}

/// vLLM builds a LLaVA tower only up to its deepest feature layer (`get_layer_index`: a
/// negative index counts 24 + index + 1): one CLIP layer is 12,596,224 elements (two
/// LayerNorms 4,096, q/k/v/out 4 x (1024^2 + 1024), fc1 4096 x 1024 + 4096, fc2 1024 x 4096 +
/// 1024), 25,192,448 bytes in float16 at TP 1, and `vision_feature_layer` [-2, -5] widens linear_1 to two feature layers, one more
/// 1,024 x 4,096 float16 block, 8,388,608 bytes. An index outside the 24 layers is a typed
/// error naming the key and the value. The checkpoint's own count keeps every layer.
#[test]
fn a_llava_tower_is_built_up_to_its_deepest_feature_layer() {
    let llava = |feature_layer: &str| {
        format!(
            r#"{{
              "model_type": "llava",
              "text_config": {{"model_type": "llama", "torch_dtype": "float16", "vocab_size": 32064}},
              "torch_dtype": "float16",
              "vision_config": {{
                "hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                "model_type": "clip_vision_model", "num_attention_heads": 16,
                "num_hidden_layers": 24, "patch_size": 14
              }}{feature_layer}
            }}"#
        )
    };
    let single = layout(1, 1, 1, false);
    let tower = |feature_layer: &str| tower_per_rank(&llava(feature_layer), single)[0];
    let layer = 25_192_448;
    // LlavaConfig's default is -2, as the published configs write it.
    let default = tower("");
    assert_eq!(tower(r#", "vision_feature_layer": -2"#), default);
    assert_eq!(tower(r#", "vision_feature_layer": -1"#), default + layer);
    assert_eq!(
        tower(r#", "vision_feature_layer": 12"#),
        default - 11 * layer
    );
    assert_eq!(
        tower(r#", "vision_feature_layer": [-2, -5]"#),
        default + 8_388_608
    );
    assert_bad_value(
        import_text(&llava(r#", "vision_feature_layer": 25"#), "llava", single),
        "vision_feature_layer",
        "25",
    );
    // The checkpoint's count (the plain import) holds all 24 layers and the post_layernorm.
    let plain = |feature_layer: &str| {
        circuit_hf::import(&llava(feature_layer), "llava")
            .unwrap()
            .circuit
            .weight_bytes()
    };
    assert_eq!(
        plain(r#", "vision_feature_layer": -2"#),
        plain(r#", "vision_feature_layer": -1"#)
    );
}

/// Quantized checkpoints shard as vLLM loads them: each rank holds its share of every module's
/// quantized tensors (per-channel scales split with a column-parallel output, kept whole on a
/// row-parallel one). Llama-3.1-8B FP8-dynamic at TP 2, per rank: embed and lm_head (bf16,
/// lm_head ignored by the scheme) 2 x 64,128 x 4096 x 2 = 1,050,673,152; the 65 norms whole,
/// 532,480; per layer fp8 weights 109,051,904 (q 2048 x 4096, k and v 512 x 4096, o 4096 x 2048,
/// gate and up 7168 x 4096, down 4096 x 7168) and bf16 channel scales 51,200 (q 2048, k and v
/// 512, o 4096 whole, gate and up 7168, down 4096 whole). Under act order the row-parallel
/// ranks keep every group's scales.
#[test]
fn quantized_checkpoints_shard_their_scales_as_vllm_loads_them() {
    let at = |name: &str, tp: u64| import_checkpoint(name, layout(tp, 1, 1, false));
    let fp8 = at("llama-3.1-8b-instruct-fp8-dynamic", 2).unwrap();
    let per_rank = fp8.imports[0].circuit.weight_bytes();
    assert_eq!(
        per_rank,
        1_050_673_152 + 532_480 + 32 * (109_051_904 + 51_200)
    );
    // Both ranks sum to the checkpoint plus what each replicates: the norms and the
    // row-parallel scales (o_proj and down_proj, 4,096 bf16 each per layer).
    assert_eq!(2 * per_rank, 9_083_953_152 + 532_480 + 32 * 2 * 4096 * 2);
    // GPTQ with desc_act (Llama-3.1-8B w4a16) at TP 2: a row-parallel rank keeps every
    // group's scales and zeros (vLLM's gptq.py), so o_proj holds qzeros [32, 512] and scales
    // [32, 4096] and down_proj [112, 512] and [112, 4096] (i32, f16): 737,280 bytes a layer
    // above its share of the module (qzeros 16 x 512 and scales 16 x 4096 for o_proj, 56 x
    // 512 and 56 x 4096 for down_proj).
    // A rank's share of every module were the scales split too: half the checkpoint plus
    // half of what both ranks replicate (norms, row-parallel biases, column-parallel g_idx).
    let naive_share = (5_735_587_840 + 532_480 + 32 * (2 * 8192 + 5 * 16_384)) / 2;
    let gptq = at("llama-3.1-8b-instruct-w4a16", 2).unwrap();
    let per_rank = gptq.imports[0].circuit.weight_bytes();
    assert_eq!(per_rank, naive_share + 32 * 737_280);
    // Both ranks: the checkpoint, plus what each rank keeps whole: the norms, the row-parallel
    // biases (f16 [4096], two a layer), the column-parallel g_idx ([4096] i32, five a layer)
    // and the row-parallel scales and zeros (1,474,560 bytes a layer).
    assert_eq!(
        2 * per_rank,
        5_735_587_840 + 532_480 + 32 * (2 * 8192 + 5 * 16_384 + 1_474_560)
    );
}

/// gpt-oss with expert parallelism: each rank creates its `E / ep` local experts
/// (`FusedMoE.local_num_experts`, fused_moe/layer.py), so every fused expert tensor of a rank
/// at EP 4 counts 8 of the 32 experts; the router still scores all 32.
#[test]
fn gpt_oss_expert_parallel_ranks_hold_their_experts() {
    let p = import_checkpoint("gpt-oss-20b", layout(4, 1, 1, true)).unwrap();
    let tensors = p.imports[0].circuit.tensors();
    let experts: Vec<u64> = tensors
        .values()
        .filter(|t| t.name.starts_with("model.layers.0.mlp.experts."))
        .map(|t| t.count)
        .collect();
    // Values, scales as loaded, swizzled scales and bias, for gate_up_proj and down_proj.
    assert_eq!(experts.len(), 8);
    assert!(experts.iter().all(|&c| c == 8), "{experts:?}");
    let router = tensors
        .values()
        .find(|t| t.name == "model.layers.0.mlp.router.weight")
        .unwrap();
    assert_eq!(router.shape, [32, 2880]);
}

/// Weight bytes of every rank of gpt-oss-20b under `parallel`.
fn gpt_oss_ranks(parallel: Parallel) -> Vec<u64> {
    let p = import_checkpoint("gpt-oss-20b", parallel).unwrap_or_else(|e| panic!("{e}"));
    p.rank_shape
        .iter()
        .map(|&s| p.imports[s].circuit.weight_bytes())
        .collect()
}

/// gpt-oss-20b as vLLM 0.19 holds it on an H100 after loading (docs/quantization.md, "MXFP4
/// as vLLM 0.19 loads it"): the Triton MoE backend rounds each rank's expert intermediate
/// size I = 2880 / tp up to a multiple of 64 (TP 1 2,880; TP 2 1,440 -> 1,472; TP 4 720 ->
/// 768; TP 8 360 -> 384), the hidden size H = 2,880 stays. Per expert, in bytes:
/// - gate_up `[2I, H]`: values round_up(2I, 64) x round_up(H / 2, 64) = 2I x 1,472; the
///   loaded scales 2I x H / 32 = 2I x 90; their swizzled copy round_up(2I, 256) x 90; the
///   bias, f32, 2I x 4;
/// - down `[H, I]`: values round_up(H, 64) x round_up(I / 2, 64) = 2,880 x round_up(I / 2,
///   64); the loaded scales 2,880 x I / 32; their swizzled copy round_up(2,880, 256) = 3,072
///   x round_up(I / 32, 2); the bias, f32, 2,880 x 4 = 11,520.
///
/// TP 1: 5,760 x 1,472 = 8,478,720 + 518,400 + 5,888 x 90 = 529,920 + 23,040; 2,880 x 1,472 =
/// 4,239,360 + 259,200 + 3,072 x 90 = 276,480 + 11,520: 14,336,640.
/// TP 2: 2,944 x 1,472 = 4,333,568 + 264,960 + 3,072 x 90 = 276,480 + 11,776; 2,880 x 768 =
/// 2,211,840 + 2,880 x 46 = 132,480 + 3,072 x 46 = 141,312 + 11,520: 7,383,936.
/// TP 4: 1,536 x 1,472 = 2,260,992 + 138,240 + 1,536 x 90 = 138,240 + 6,144; 2,880 x 384 =
/// 1,105,920 + 69,120 + 3,072 x 24 = 73,728 + 11,520: 3,803,904.
/// TP 8: 768 x 1,472 = 1,130,496 + 69,120 + 768 x 90 = 69,120 + 3,072; 2,880 x 192 =
/// 552,960 + 34,560 + 3,072 x 12 = 36,864 + 11,520: 1,907,712.
/// Times 32 experts x 24 layers: 11,010,539,520; 5,670,862,848; 2,921,398,272; 1,465,122,816.
///
/// The rest is bf16 and loads as stored. Elements per layer: q, k, v, o weights (4,096 + 512 +
/// 512) x 2,880 + 2,880 x 4,096 = 26,542,080 / tp, q/k/v biases 5,120 / tp, sinks 64 / tp,
/// o_proj's bias 2,880, two norms 5,760, the router 32 x 2,880 + 32 = 92,192; once: embedding
/// and lm_head 2 x 201,088 / tp x 2,880 and the final norm 2,880. TP 1: 26,648,096 a layer
/// and 1,158,269,760 once, 3,595,648,128 bytes; TP 2: 13,374,464 and 579,136,320,
/// 1,800,246,912; TP 4: 6,737,648 and 289,569,600, 902,546,304; TP 8: 3,419,240 and
/// 144,786,240, 453,696,000.
///
/// Per rank: TP 1 14,606,187,648; TP 2 7,471,109,760; TP 4 3,823,944,576; TP 8
/// 1,918,818,816. With expert parallelism over TP 4 each rank holds 8 whole experts at I =
/// 2,880: 8 x 14,336,640 x 24 + 902,546,304 = 3,655,181,184.
#[test]
fn gpt_oss_mxfp4_experts_as_vllm_loads_them_on_an_h100() {
    assert_eq!(gpt_oss_ranks(Parallel::SINGLE), [14_606_187_648]);
    assert_eq!(gpt_oss_ranks(layout(2, 1, 1, false)), [7_471_109_760; 2]);
    assert_eq!(gpt_oss_ranks(layout(4, 1, 1, false)), [3_823_944_576; 4]);
    assert_eq!(gpt_oss_ranks(layout(8, 1, 1, false)), [1_918_818_816; 8]);
    assert_eq!(gpt_oss_ranks(layout(4, 1, 1, true)), [3_655_181_184; 4]);
}

/// What one layer of a gpt-oss-20b rank holds of its experts at TP 4 (I = 768, the rounding
/// of 720 up to 64), tensor by tensor, as `gpt_oss_mxfp4_experts_as_vllm_loads_them_on_an_h100`
/// derives them: the values as their bytes `[E, round_up(out, 64), round_up(in / 2, 64)]`,
/// the scales as loaded `[E, out, in / 32]` and swizzled `[E, round_up(out, 256),
/// round_up(in / 32, 2)]`, the biases f32. The expert intermediate edge is the padded width
/// too (the kernels run the padded weights).
#[test]
fn gpt_oss_expert_tensors_of_a_tp_4_rank() {
    let p = import_checkpoint("gpt-oss-20b", layout(4, 1, 1, false)).unwrap();
    let circuit = &p.imports[0].circuit;
    let held: Vec<(String, Vec<u64>, String)> = circuit
        .tensors()
        .values()
        .filter(|t| t.name.starts_with("model.layers.0.mlp.experts."))
        .map(|t| {
            let name = t.name.trim_start_matches("model.layers.0.mlp.experts.");
            (name.to_owned(), t.shape.clone(), t.format.to_string())
        })
        .collect();
    let row = |name: &str, shape: &[u64], format: &str| {
        (name.to_owned(), shape.to_vec(), format.to_owned())
    };
    assert_eq!(
        held,
        [
            row("gate_up_proj_blocks", &[1536, 1472], "u8"),
            row("gate_up_proj_scales", &[1536, 90], "u8"),
            row("gate_up_proj_scales_swizzled", &[1536, 90], "u8"),
            row("gate_up_proj_bias", &[1536], "f32"),
            row("down_proj_blocks", &[2880, 384], "u8"),
            row("down_proj_scales", &[2880, 24], "u8"),
            row("down_proj_scales_swizzled", &[3072, 24], "u8"),
            row("down_proj_bias", &[2880], "f32"),
        ]
    );
    assert!(
        circuit
            .tensors()
            .values()
            .filter(|t| t.name.starts_with("model.layers.0.mlp.experts."))
            .all(|t| t.count == 32)
    );
    // 10 rows routed to 4 experts each: the gate-up output is 2I = 1,536 wide, bf16.
    assert_eq!(circuit.dim("moe_ffn"), Some(768));
    let gate_up = circuit
        .edges()
        .values()
        .find(|e| e.id == "layer_0.expert_h")
        .unwrap();
    assert_eq!(gate_up.bytes_at(10).unwrap(), 10 * 4 * 1536 * 2);
    let q = p.imports[0].quantization.as_ref().unwrap();
    assert!(
        q.summary.contains("triton_kernels' Hopper layout"),
        "{}",
        q.summary
    );
}

/// gpt-oss's MLPBlock asserts that the world (tp x pp x dp) divides intermediate_size, and
/// vLLM's Mxfp4Config gives every FusedMoE its MXFP4 method, so a checkpoint that left the
/// experts unconverted does not load: both are typed refusals.
#[test]
fn gpt_oss_layouts_vllm_refuses() {
    let config = checkpoint("gpt-oss-20b");
    match import_text(&config, "gpt-oss-20b/config.json", layout(1, 7, 1, false)) {
        Err(HfError::Parallel {
            source:
                ParallelError::NotDivisible {
                    what: "intermediate_size",
                    value: 2880,
                    by: 7,
                    source_file,
                    ..
                },
            ..
        }) => assert_eq!(source_file, "model_executor/models/gpt_oss.py"),
        other => panic!("{other:?}"),
    }
    // 24 layers over 3 stages and 2880 over 3 x 2 ranks: accepted.
    assert!(import_text(&config, "gpt-oss-20b/config.json", layout(2, 3, 1, false)).is_ok());
    let unconverted = config.replace(
        r#""model.layers.*.mlp.router","#,
        r#""model.layers.*.mlp.router", "model.layers.*.mlp.experts","#,
    );
    assert_ne!(unconverted, config);
    let message = import_text(&unconverted, "g/config.json", Parallel::SINGLE)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("leaves the experts `model.layers.0.mlp.experts` unquantized"),
        "{message}"
    );
    // The checkpoint's own bytes (circuit_hf::import) still plan such a file.
    assert!(circuit_hf::import(&unconverted, "g/config.json").is_ok());
}
