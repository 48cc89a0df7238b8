//! Per-rank weights of parallel layouts, exact to the byte, with the checkpoint's tensors held
//! as stored (an engine's load rules, and the comparison with vLLM's own per-rank figures, are
//! in engines/tests/vllm_0_19_ranks.rs).
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

fn layout(tp: u64, pp: u64, dp: u64, expert_parallel: bool) -> Parallel {
    Parallel {
        tp,
        pp,
        dp,
        expert_parallel,
    }
}

fn import(name: &str, parallel: Parallel) -> Result<ParallelImport, HfError> {
    let mut options = ImportOptions::default();
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
    let mut options = ImportOptions::default();
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
    let mut options = ImportOptions::default();
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
    let mut options = ImportOptions::default();
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
fn a_vision_tower_shards_over_tensor_parallel_ranks() {
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
            // Every one of Scout's 34 encoder layers runs; one feature layer, no merge.
            layers: 34,
            feature_layers: 1,
            merge: 1,
            deepstack_layers: 0,
            video: None,
        }
    );
    assert_eq!(
        circuit_hf::import(&scout, "scout").unwrap().facts.encoder,
        Some(e)
    );
    let mut options = ImportOptions::default();
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
            layers: 27,
            feature_layers: 1,
            merge: 1,
            deepstack_layers: 0,
            video: None,
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

/// Quantized checkpoints shard as vLLM loads them: each rank holds its share of every module's
/// quantized tensors (per-channel scales split with a column-parallel output, kept whole on a
/// row-parallel one). Llama-3.1-8B FP8-dynamic at TP 2, per rank: embed and lm_head (bf16,
/// lm_head ignored by the scheme) 2 x 64,128 x 4096 x 2 = 1,050,673,152; the 65 norms whole,
/// 532,480; per layer fp8 weights 109,051,904 (q 2048 x 4096, k and v 512 x 4096, o 4096 x 2048,
/// gate and up 7168 x 4096, down 4096 x 7168) and bf16 channel scales 51,200 (q 2048, k and v
/// 512, o 4096 whole, gate and up 7168, down 4096 whole). Under act order the row-parallel
/// ranks keep every group's scales.
#[test]
fn quantized_checkpoints_shard_their_scales_with_their_modules() {
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
