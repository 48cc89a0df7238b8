//! Per-rank weights of parallel layouts as vLLM 0.19 holds them once loaded: the `[load]` rules
//! of engines/vllm-0.19 applied by circuit-hf (MXFP4 experts in triton_kernels' Hopper layout,
//! LLaVA's and Mistral 3's towers up to the deepest feature layer), exact to the byte, and
//! against vLLM's own per-rank figures (`data/vllm/cases.json`).

use circuit_hf::{
    HfError, ImportOptions, Parallel, ParallelError, ParallelImport, import_parallel,
};

fn config(name: &str) -> String {
    let path = format!(
        "{}/../data/models/{name}/config.json",
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
/// Bytes of the RMS norms every TP rank holds whole: two per layer and the final one.
fn checkpoint(name: &str) -> String {
    let path = format!(
        "{}/../data/checkpoints/{name}/config.json",
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
/// vLLM's "Model loading took X GiB" per rank, from data/vllm/cases.json.
fn vllm_weights_gib(case_name: &str) -> f64 {
    let path = format!("{}/../data/vllm/cases.json", env!("CARGO_MANIFEST_DIR"));
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
