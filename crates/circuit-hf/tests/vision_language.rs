//! The vision-language models of issue 32 (`mistral3`'s encoder shape, `llava_next`,
//! `kimi_vl`, `qwen2_5_vl`, `qwen3_vl`, `qwen3_vl_moe`), each from the representative
//! config.json under data/models: the checkpoint's weights, its tensor names, each rank's share
//! of its tower at TP 2 and 4, and the encoder shape of the dummy item vLLM 0.19's profile
//! makes. Every whole-model weight figure is `derived` (counted by hand from the architecture
//! in the comment; the exact published figure was not at hand), and checked against the
//! headline size of the model page as recalled, in the manner of tests/public_models.rs; the
//! language models of four of them are checked against published text checkpoints
//! ([`language_models_match_published_text_checkpoints`]).

use circuit_hf::{EncoderShape, HfError, ImportOptions, Parallel, VideoShape, import_parallel};
use serde_json::Value;

fn config(name: &str) -> String {
    let path = format!(
        "{}/../../data/models/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn import(name: &str) -> circuit_hf::Import {
    circuit_hf::import(&config(name), &format!("{name}/config.json"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `params` rounds to `headline` (in units of `unit` parameters), as the model page shows it.
fn rounds_to(params: u64, unit: u64, headline: u64) {
    assert_eq!(
        (params + unit / 2) / unit,
        headline,
        "{params} vs the headline size"
    );
}

fn tensor_names(i: &circuit_hf::Import) -> Vec<String> {
    i.circuit
        .tensors()
        .values()
        .map(|t| t.name.clone())
        .collect()
}

fn assert_has(i: &circuit_hf::Import, names: &[&str]) {
    let all = tensor_names(i);
    for name in names {
        assert!(all.iter().any(|n| n == name), "{name}");
    }
}

/// The weight bytes of each rank at TP `tp` of config text `text`.
fn ranks(text: &str, tp: u64) -> Vec<u64> {
    let mut options = ImportOptions::default();
    options.parallel = Parallel {
        tp,
        pp: 1,
        dp: 1,
        expert_parallel: false,
    };
    let p = import_parallel(text, "config.json", &options, &[]).unwrap_or_else(|e| panic!("{e}"));
    p.rank_shape
        .iter()
        .map(|&s| p.imports[s].circuit.weight_bytes())
        .collect()
}

/// The language model of a multimodal config as a config of its own, read as `read_as`: the
/// nested `text_config` (or a flat config's top level without the tower and the wrapper's
/// keys), with the dtype the wrapper gives it.
fn text_only(text: &str, read_as: &str) -> String {
    let top: Value = serde_json::from_str(text).unwrap();
    let mut t = match top.get("text_config") {
        Some(t) => t.clone(),
        None => {
            let mut t = top.clone();
            let m = t.as_object_mut().unwrap();
            for key in [
                "vision_config",
                "architectures",
                "vision_start_token_id",
                "vision_end_token_id",
                "vision_token_id",
                "image_token_id",
                "video_token_id",
            ] {
                m.remove(key);
            }
            t
        }
    };
    let m = t.as_object_mut().unwrap();
    m.insert("model_type".into(), Value::String(read_as.into()));
    m.remove("architectures");
    if let Some(d) = top.get("torch_dtype") {
        m.entry("torch_dtype").or_insert(d.clone());
    }
    t.to_string()
}

/// What the tower and projector add to each rank at TP `tp`: the multimodal config's ranks
/// minus its language model's alone.
fn tower_per_rank(name: &str, read_as: &str, tp: u64) -> Vec<u64> {
    let text = config(name);
    let whole = ranks(&text, tp);
    let language = ranks(&text_only(&text, read_as), tp);
    assert_eq!(whole.len() as u64, tp);
    whole.iter().zip(&language).map(|(w, l)| w - l).collect()
}

/// A tower of `whole` elements of which each rank keeps `replicated` whole: at TP `tp` a rank
/// holds the rest's share plus the replicated ones, 2 bytes each.
fn share(whole: u64, replicated: u64, tp: u64) -> u64 {
    2 * ((whole - replicated) / tp + replicated)
}

#[test]
fn derived_qwen2_5_vl_7b_instruct_flat_config() {
    // Language model (qwen2, its keys at the top level of the first release): embed and lm_head
    // 2 x 152064 x 3584 = 1,089,994,752; final norm 3,584. Per layer (28): q 3584x3584 + 3,584
    // = 12,848,640; k and v 2 x (512x3584 + 512) = 3,671,040; o 12,845,056; MLP 3 x
    // 18944x3584 = 203,685,888; norms 7,168 = 233,057,792. Text 7,615,616,512 (Qwen2.5-7B's).
    // Tower (32 blocks of 1280, MLP 3420, 16 heads, patch 14 over 2 frames, merge 2): patch
    // embedding 1280 x 3 x 2 x 14 x 14 = 1,505,280; per block norms 2,560, qkv 3840x1280 +
    // 3,840 = 4,919,040, proj 1280x1280 + 1,280 = 1,639,680, gate and up 2 x (3420x1280 +
    // 3,420) = 8,762,040, down 1280x3420 + 1,280 = 4,378,880 = 19,702,200; merger ln_q 1,280,
    // mlp.0 5120x5120 + 5,120 = 26,219,520, mlp.2 3584x5120 + 3,584 = 18,353,664. Tower
    // 676,550,144. Total 8,292,166,656 (page: 8.29B).
    let i = import("qwen2.5-vl-7b-instruct");
    let params = 8_292_166_656;
    assert_eq!(i.circuit.weight_bytes(), 2 * params);
    rounds_to(params, 10_000_000, 829);
    // 28 layers x 4 KV heads x 128 x 2 x 2 bytes.
    assert_eq!(i.circuit.state_bytes(1, 1).unwrap(), 57_344);
    assert_has(
        &i,
        &[
            "model.layers.27.self_attn.q_proj.bias",
            "lm_head.weight",
            "visual.patch_embed.proj.weight",
            "visual.blocks.31.attn.qkv.weight",
            "visual.blocks.31.mlp.down_proj.bias",
            "visual.merger.mlp.2.weight",
        ],
    );
    // The text keys sit at the top level: reported as read, the M-RoPE rope among them: one
    // rotary configuration, the legacy type `mrope` with its `mrope_section`, over a head of
    // 3,584 / 28 = 128.
    assert!(i.keys_read.iter().any(|k| k == "hidden_size"));
    assert_eq!(
        i.facts.rotary,
        vec![model_facts::Rotary {
            set: model_facts::RopeSet {
                rope_type: "mrope".to_owned(),
                factor: None,
                factor_null: false,
                original_max_position_embeddings: None,
                mrope_section: true,
            },
            rotary_dim: 128,
        }]
    );
    assert_eq!(i.facts.model_type, "qwen2");
    assert_eq!(i.facts.max_position_embeddings, 128_000);
    // A re-saved config nests the text under `text_config` (`qwen2_5_vl_text`) and keeps the
    // top-level copies: the same model; a copy that disagrees is refused.
    let flat: Value = serde_json::from_str(&config("qwen2.5-vl-7b-instruct")).unwrap();
    let mut text =
        serde_json::from_str::<Value>(&text_only(&flat.to_string(), "qwen2_5_vl_text")).unwrap();
    text.as_object_mut().unwrap().remove("torch_dtype");
    let mut nested = flat.clone();
    nested["text_config"] = text;
    let again = circuit_hf::import(&nested.to_string(), "config.json").unwrap();
    assert_eq!(again.circuit.weight_bytes(), 2 * params);
    assert!(
        again
            .keys_read
            .iter()
            .any(|k| k == "text_config.hidden_size")
    );
    assert!(again.keys_ignored.iter().any(|k| k == "hidden_size"));
    nested["hidden_size"] = 4096.into();
    let e = circuit_hf::import(&nested.to_string(), "config.json")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`hidden_size` 4096 and `text_config.hidden_size` 3584 disagree"),
        "{e}"
    );
}

#[test]
fn derived_qwen3_vl_8b_instruct_with_deepstack_mergers() {
    // Language model (qwen3): embed and lm_head 2 x 151936 x 4096 = 1,244,659,712; final norm
    // 4,096. Per layer (36): q and o 2 x 4096x4096, k and v 2 x 1024x4096 = 41,943,040; q/k
    // norms 256; MLP 3 x 12288x4096 = 150,994,944; norms 8,192 = 192,946,432. Text
    // 8,190,735,360.
    // Tower (27 blocks of 1152, MLP 4304, 16 heads, patch 16 over 2 frames, merge 2): patch
    // embedding 1152 x 3 x 2 x 16 x 16 + 1,152 = 1,770,624; positions 2304 x 1152 =
    // 2,654,208; per block two LayerNorms 4,608, qkv 3456x1152 + 3,456 = 3,984,768, proj
    // 1,328,256, fc1 4304x1152 + 4,304 = 4,962,512, fc2 1152x4304 + 1,152 = 4,959,360 =
    // 15,239,504; merger LayerNorm 2,304, fc1 4608x4608 + 4,608 = 21,238,272, fc2 4096x4608 +
    // 4,096 = 18,878,464; three deepstack mergers, each with its LayerNorm over 4,608
    // (9,216) = 40,125,952. Tower 576,388,336. Total 8,767,123,696 (page: 8.77B).
    let i = import("qwen3-vl-8b-instruct");
    let params = 8_767_123_696;
    assert_eq!(i.circuit.weight_bytes(), 2 * params);
    rounds_to(params, 10_000_000, 877);
    // 36 layers x 8 KV heads x 128 x 2 x 2 bytes.
    assert_eq!(i.circuit.state_bytes(1, 1).unwrap(), 147_456);
    assert_has(
        &i,
        &[
            "model.language_model.layers.35.self_attn.k_norm.weight",
            "model.language_model.embed_tokens.weight",
            "lm_head.weight",
            "model.visual.pos_embed.weight",
            "model.visual.blocks.26.mlp.linear_fc2.bias",
            "model.visual.deepstack_merger_list.2.norm.weight",
        ],
    );
    assert_eq!(i.circuit.dim("deepstack_layers"), Some(3));
    // One M-RoPE rotary configuration (a default set with `mrope_section`), head_dim 128.
    assert_eq!(
        i.facts.rotary,
        vec![model_facts::Rotary {
            set: model_facts::RopeSet {
                rope_type: "default".to_owned(),
                factor: None,
                factor_null: false,
                original_max_position_embeddings: None,
                mrope_section: true,
            },
            rotary_dim: 128,
        }]
    );
    // Loaded without its tower, the deepstack buffers go too: no dim.
    let mut options = ImportOptions::default();
    options.language_model_only = true;
    let text =
        circuit_hf::import_with(&config("qwen3-vl-8b-instruct"), "q", &options, &[]).unwrap();
    assert_eq!(text.circuit.dim("deepstack_layers"), None);
    assert_eq!(text.circuit.weight_bytes(), 2 * 8_190_735_360);
}

#[test]
fn derived_qwen3_vl_30b_a3b_instruct_fused_experts() {
    // Language model (qwen3_moe): embed and lm_head 2 x 151936 x 2048 = 622,329,856; final
    // norm 2,048. Per layer (48): q and o 2 x 4096x2048, k and v 2 x 512x2048 = 18,874,368;
    // q/k norms 256; router 128x2048 = 262,144; experts 128 x 3 x 768x2048 = 603,979,776,
    // stored fused (gate_up [128, 2048, 1536], down [128, 768, 2048]); norms 4,096 =
    // 623,120,640. Text 30,532,122,624 (Qwen3-30B-A3B's).
    // Tower as Qwen3-VL-8B's with out_hidden_size 2048: merger fc2 2048x4608 + 2,048 =
    // 9,439,232, so the merger 30,679,808 and each deepstack merger 30,686,720. Tower
    // 538,631,408. Total 31,070,754,032 (page: 31.1B).
    let i = import("qwen3-vl-30b-a3b-instruct");
    let params = 31_070_754_032;
    assert_eq!(i.circuit.weight_bytes(), 2 * params);
    rounds_to(params, 100_000_000, 311);
    // 48 layers x 4 KV heads x 128 x 2 x 2 bytes.
    assert_eq!(i.circuit.state_bytes(1, 1).unwrap(), 98_304);
    assert_has(
        &i,
        &[
            "model.language_model.layers.47.mlp.experts.gate_up_proj",
            "model.language_model.layers.47.mlp.experts.down_proj",
            "model.language_model.layers.47.mlp.gate.weight",
            "model.visual.merger.linear_fc2.weight",
        ],
    );
    let names = tensor_names(&i);
    assert!(!names.iter().any(|n| n.contains("experts.0.")));
}

#[test]
fn derived_kimi_vl_a3b_instruct_moonvit_and_a_deepseek_v2_language_model() {
    // Language model (read as DeepseekV2Config, as vLLM's KimiVLConfig reads it; MLA without q
    // LoRA, 16 heads): embed and lm_head 2 x 163840 x 2048 = 671,088,640; final norm 2,048.
    // Per layer (27): q_proj 3072x2048 = 6,291,456, kv_a_proj_with_mqa 576x2048 = 1,179,648,
    // kv_a_layernorm 512, kv_b_proj 4096x512 = 2,097,152, o_proj 2048x2048 = 4,194,304, norms
    // 4,096 = 13,767,168; layer 0 dense 3 x 11264x2048 = 69,206,016; 26 MoE layers of 64
    // experts 3 x 1408x2048 each = 553,648,128, two shared 3 x 2816x2048 = 17,301,504, router
    // 64x2048 = 131,072. Text 15,960,108,544, and the noaux_tc router's f32 bias, 26 x 64 x 4
    // = 6,656 bytes.
    // MoonViT (27 blocks of 1152, MLP 4304, patch 14): patch conv 1152x3x14x14 + 1,152 =
    // 678,528; position embedding 64x64x1152 = 4,718,592; per block two LayerNorms 4,608,
    // wqkv 3456x1152 + 3,456 = 3,984,768, wo 1,328,256, fc0 4,962,512, fc1 4,959,360 =
    // 15,239,504; final LayerNorm 2,304: 416,866,032. Projector: LayerNorm 2,304, linear_1
    // 4608x4608 + 4,608 = 21,238,272, linear_2 2048x4608 + 2,048 = 9,439,232 = 30,679,808.
    // Total 16,407,654,384 parameters in bf16 and the f32 bias (page: 16.4B).
    let i = import("kimi-vl-a3b-instruct");
    let params = 16_407_654_384;
    assert_eq!(i.circuit.weight_bytes(), 2 * params + 6_656);
    rounds_to(params, 100_000_000, 164);
    // MLA: (512 + 64) x 27 layers x 2 bytes.
    assert_eq!(i.circuit.state_bytes(1, 1).unwrap(), 31_104);
    assert_has(
        &i,
        &[
            "language_model.model.layers.26.mlp.gate.e_score_correction_bias",
            "language_model.lm_head.weight",
            "vision_tower.patch_embed.pos_emb.weight",
            "vision_tower.encoder.blocks.26.wqkv.bias",
            "multi_modal_projector.linear_2.weight",
        ],
    );
    // The text names deepseek_v3, which it is not read as: no MTP layer.
    assert_eq!(i.facts.model_type, "deepseek_v2");
    assert!(!tensor_names(&i).iter().any(|n| n.contains("layers.27.")));
}

#[test]
fn derived_llava_v1_6_mistral_7b_anyres() {
    // Language model (mistral, vocabulary 32064): embed and lm_head 2 x 32064 x 4096 =
    // 262,668,288; final norm 4,096; per layer (32) q and o 2 x 4096^2, k and v 2 x
    // 1024x4096, MLP 3 x 14336x4096, norms 8,192 = 218,112,000. Text 7,242,256,384.
    // CLIP ViT-L/14 at 336 (as llava-1.5's): 303,507,456. Projector linear_1 4096x1024 + 4,096
    // = 4,198,400, linear_2 4096^2 + 4,096 = 16,781,312; image_newline 4,096.
    // Total 7,566,747,648 (page: 7.57B), stored in float16.
    let i = import("llava-v1.6-mistral-7b-hf");
    let params = 7_566_747_648;
    assert_eq!(i.circuit.weight_bytes(), 2 * params);
    rounds_to(params, 10_000_000, 757);
    assert_has(
        &i,
        &[
            "image_newline",
            "language_model.model.layers.31.mlp.down_proj.weight",
            "vision_tower.vision_model.encoder.layers.23.mlp.fc2.bias",
            "vision_tower.vision_model.post_layernorm.weight",
            "multi_modal_projector.linear_1.weight",
        ],
    );
}

#[test]
fn derived_granite_vision_3_2_2b_siglip_with_feature_layers() {
    // Language model (granite, tied): embed 49156 x 2048 = 100,671,488 once; final norm 2,048;
    // per layer (40) q and o 2 x 2048^2, k and v 2 x 512x2048, MLP 3 x 8192x2048, norms 4,096 =
    // 60,821,504. Text 2,533,533,696.
    // SigLIP so400m/14 at 384 (27 layers of 1152, MLP 4304, 27^2 patches): patch conv 677,376 +
    // 1,152, positions 729x1152 = 839,808; per layer two LayerNorms 4,608, q/k/v/out 4 x
    // (1152^2 + 1,152) = 5,313,024, fc1 4,962,512, fc2 4,959,360 = 15,239,504; post LayerNorm
    // 2,304; the pooling head transformers builds without `vision_use_head` (probe 1,152,
    // in_proj 3456x1152 + 3,456, out_proj 1152^2 + 1,152, LayerNorm 2,304, MLP 9,921,872) =
    // 15,238,352: 428,225,600. Projector from the 4 feature layers: linear_1 2048x4608 + 2,048
    // = 9,439,232, linear_2 2048^2 + 2,048 = 4,196,352; image_newline 2,048.
    // Total 2,975,396,928 (page, as recalled: 2.98B; the config is recalled too).
    let i = import("granite-vision-3.2-2b");
    let params = 2_975_396_928;
    assert_eq!(i.circuit.weight_bytes(), 2 * params);
    rounds_to(params, 10_000_000, 298);
    assert_has(
        &i,
        &[
            "vision_tower.vision_model.head.mlp.fc2.weight",
            "vision_tower.vision_model.encoder.layers.26.self_attn.out_proj.bias",
            "language_model.model.embed_tokens.weight",
        ],
    );
    // vLLM builds neither the post LayerNorm nor the pooling head of a LLaVA-NeXT SigLIP.
    let mut options = ImportOptions::default();
    options.load.vision_tower = model_facts::TowerBuild::ReadByProjector;
    let built =
        circuit_hf::import_with(&config("granite-vision-3.2-2b"), "g", &options, &[]).unwrap();
    assert_eq!(
        built.circuit.weight_bytes(),
        2 * (params - 15_238_352 - 2_304)
    );
}

/// Each rank's share of the tower and projector, as vLLM 0.19's tower classes split them: the
/// fused qkv over the heads, the MLP's first linears and the mergers' first linears
/// column-parallel, the projections after them row-parallel (their biases whole), the patch
/// embeddings, position embeddings and norms whole; Kimi-VL's projector is ReplicatedLinear,
/// whole on every rank. Elements kept whole per rank:
/// - Qwen2.5-VL-7B: patch embedding 1,505,280, ln_q 1,280, mlp.2's bias 3,584, per block the
///   norms, proj's and down's biases 5,120 (x 32): 1,673,984 of 676,550,144;
/// - Qwen3-VL-8B: patch embedding 1,770,624, positions 2,654,208, the merger's LayerNorm and
///   fc2 bias 6,400, three deepstack mergers' 13,312 each, per block 6,912 (x 27): 4,657,792 of
///   576,388,336; Qwen3-VL-30B-A3B the same with fc2 biases of 2,048: 4,649,600 of
///   538,631,408;
/// - Kimi-VL: patch embedding 678,528, positions 4,718,592, final LayerNorm 2,304, the
///   projector 30,679,808, per block 6,912 (x 27): 36,265,856 of 447,545,840;
/// - llava-v1.6-mistral (all 24 CLIP layers, as stored): class, patch and position
///   embeddings 1,193,984, pre and post LayerNorms 4,096, per layer 6,144 (x 24), linear_2's
///   bias and image_newline 8,192: 1,353,728 of 324,491,264;
/// - Granite Vision: patch and position embeddings 1,518,336, post LayerNorm 2,304, the
///   pooling head but its MLP's split fc1 and fc2 weight 5,317,632, per layer 6,912 (x 27),
///   linear_2's bias and image_newline 4,096: 7,028,992 of 441,863,232.
#[test]
fn towers_split_over_tensor_parallel_ranks() {
    for (name, read_as, whole, replicated) in [
        ("qwen2.5-vl-7b-instruct", "qwen2", 676_550_144, 1_673_984),
        ("qwen3-vl-8b-instruct", "qwen3", 576_388_336, 4_657_792),
        (
            "qwen3-vl-30b-a3b-instruct",
            "qwen3_moe",
            538_631_408,
            4_649_600,
        ),
        (
            "kimi-vl-a3b-instruct",
            "deepseek_v2",
            447_545_840,
            36_265_856,
        ),
        (
            "llava-v1.6-mistral-7b-hf",
            "mistral",
            324_491_264,
            1_353_728,
        ),
        ("granite-vision-3.2-2b", "granite", 441_863_232, 7_028_992),
    ] {
        assert_eq!(tower_per_rank(name, read_as, 1), [2 * whole], "{name}");
        for tp in [2, 4] {
            let per_rank = share(whole, replicated, tp);
            assert_eq!(
                tower_per_rank(name, read_as, tp),
                vec![per_rank; tp as usize],
                "{name} at TP {tp}"
            );
        }
    }
    // The literals: Qwen2.5-VL-7B's tower is 678,224,128 bytes a rank at TP 2, 340,786,048 at
    // TP 4; Qwen3-VL-8B's 581,046,128 and 295,180,856; Kimi-VL's 483,811,696 and 278,171,704.
    assert_eq!(share(676_550_144, 1_673_984, 2), 678_224_128);
    assert_eq!(share(676_550_144, 1_673_984, 4), 340_786_048);
    assert_eq!(share(576_388_336, 4_657_792, 2), 581_046_128);
    assert_eq!(share(576_388_336, 4_657_792, 4), 295_180_856);
    assert_eq!(share(447_545_840, 36_265_856, 2), 483_811_696);
    assert_eq!(share(447_545_840, 36_265_856, 4), 278_171_704);
}

/// The dummy items vLLM 0.19's profile makes, from the processors' published defaults.
#[test]
fn encoder_shapes_are_the_profiles_dummy_items() {
    let shape = |name: &str| import(name).facts.encoder.unwrap();
    // Pixtral: one 1540 x 1540 image, whole tokens of 28 pixels: 55 x 55 = 3,025 tokens of 110
    // x 110 = 12,100 patch rows; silu's SwiGLU keeps gate, up and the product.
    let pixtral = shape("mistral-small-3.1-24b-instruct-2503");
    assert_eq!(
        (
            pixtral.tokens_per_item,
            pixtral.rows_per_tile,
            pixtral.pixels_per_tile,
            pixtral.activation_tensors,
            pixtral.merge,
            pixtral.layers
        ),
        (3025, 12_100, 3 * 1540 * 1540, 3, 4, 24)
    );
    // Kimi-VL: 1024 x 1024 has 73^2 = 5,329 patches above in_token_limit 4,096: scaled by
    // sqrt(4096 / 5329) to 897 pixels, padded to 924 = 33 x 28: 66 x 66 = 4,356 patches, 1,089
    // tokens; each patch's pixels [3, 14, 14].
    assert_eq!(
        shape("kimi-vl-a3b-instruct"),
        EncoderShape {
            tokens_per_item: 1089,
            tiles_per_item: 1,
            rows_per_tile: 4356,
            pixels_per_tile: 4356 * 3 * 14 * 14,
            hidden: 1152,
            heads: 16,
            head_dim: 72,
            ffn: 4304,
            output_hidden: 2048,
            complex_rotary: true,
            activation_tensors: 2,
            layers: 27,
            feature_layers: 1,
            merge: 4,
            deepstack_layers: 0,
            video: None,
        }
    );
    // llava-v1.6-mistral: the pinpoint with the most tokens is 672 x 672, a 2 x 2 grid and the
    // base tile: 576 + 48 x 48 + 48 = 2,928 tokens, 5 tiles of 577 rows; 23 CLIP layers run.
    let llava = shape("llava-v1.6-mistral-7b-hf");
    assert_eq!(
        (
            llava.tokens_per_item,
            llava.tiles_per_item,
            llava.rows_per_tile,
            llava.layers,
            llava.feature_layers
        ),
        (2928, 5, 577, 23, 1)
    );
    // Granite Vision: 3840 x 384 (10 x 1 tiles of 384) gives 729 + 270 x 27 + 270 = 8,289
    // tokens ("full" keeps every SigLIP feature), 11 tiles of 729 rows; all 27 layers run, 4
    // feature layers.
    let granite = shape("granite-vision-3.2-2b");
    assert_eq!(
        (
            granite.tokens_per_item,
            granite.tiles_per_item,
            granite.rows_per_tile,
            granite.layers,
            granite.feature_layers,
            granite.activation_tensors
        ),
        (8289, 11, 729, 27, 4, 2)
    );
    // Qwen2.5-VL: max_pixels 12,845,056 / 28^2 = 16,384 merged patches, 128 x 128: a 3584 x
    // 3584 image of 256 x 256 = 65,536 patches and 16,384 tokens; each patch 3 x 2 x 14 x 14
    // = 1,176 values. Video frames of the same size: one temporal group of 2 frames is the
    // image's grid.
    let q25 = shape("qwen2.5-vl-7b-instruct");
    assert_eq!(
        (
            q25.tokens_per_item,
            q25.rows_per_tile,
            q25.pixels_per_tile,
            q25.activation_tensors,
            q25.output_hidden
        ),
        (16_384, 65_536, 65_536 * 1176, 3, 3584)
    );
    assert_eq!(
        q25.video,
        Some(VideoShape {
            frames_per_group: 2,
            group_tokens: 16_384,
            group_rows: 65_536,
            group_pixels: 65_536 * 1176,
        })
    );
    // Qwen3-VL: 16,777,216 / 32^2 = 16,384 merged patches, a 4096 x 4096 image of 65,536
    // patches; the video's frames at 25,165,824 / 2 / 32^2 = 12,288 merged patches, 96 x 128
    // (the closest factors), 49,152 patches and 12,288 tokens a group. The outputs carry the 3
    // deepstack features: 4 x 4,096 wide.
    let q3 = shape("qwen3-vl-8b-instruct");
    assert_eq!(
        (
            q3.tokens_per_item,
            q3.rows_per_tile,
            q3.pixels_per_tile,
            q3.output_hidden,
            q3.deepstack_layers
        ),
        (16_384, 65_536, 65_536 * 1536, 16_384, 3)
    );
    assert_eq!(
        q3.video,
        Some(VideoShape {
            frames_per_group: 2,
            group_tokens: 12_288,
            group_rows: 49_152,
            group_pixels: 49_152 * 1536,
        })
    );
    assert_eq!(shape("qwen3-vl-30b-a3b-instruct").output_hidden, 4 * 2048);
}

/// Bad values of the new keys are typed errors naming the key; an unknown vision key is refused.
#[test]
fn bad_vision_language_keys_are_refused() {
    let with = |name: &str, from: &str, to: &str| {
        let text = config(name);
        assert!(text.contains(from), "{from}");
        circuit_hf::import(&text.replacen(from, to, 1), "config.json")
    };
    let expect = |r: Result<circuit_hf::Import, HfError>, key: &str| {
        let e = r.map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    };
    expect(
        with(
            "qwen3-vl-8b-instruct",
            r#""deepstack_visual_indexes": [8, 16, 24]"#,
            r#""deepstack_visual_indexes": [8, 16, 27]"#,
        ),
        "vision_config.deepstack_visual_indexes",
    );
    expect(
        with(
            "kimi-vl-a3b-instruct",
            r#""merge_kernel_size": [2, 2]"#,
            r#""merge_kernel_size": [2]"#,
        ),
        "vision_config.merge_kernel_size",
    );
    expect(
        with(
            "llava-v1.6-mistral-7b-hf",
            r#""image_grid_pinpoints": [[336, 672]"#,
            r#""image_grid_pinpoints": [[336]"#,
        ),
        "image_grid_pinpoints",
    );
    expect(
        with(
            "qwen2.5-vl-7b-instruct",
            r#""window_size": 112"#,
            r#""window_sizes": 112"#,
        ),
        "vision_config.window_sizes",
    );
    expect(
        with(
            "kimi-vl-a3b-instruct",
            r#""model_type": "deepseek_v3""#,
            r#""model_type": "llama""#,
        ),
        "text_config.model_type",
    );
    expect(
        with(
            "kimi-vl-a3b-instruct",
            r#""topk_method": "noaux_tc""#,
            r#""topk_method": 3"#,
        ),
        "topk_method",
    );
}

/// The language models of the new types against published text checkpoints (data/models/README.md
/// and tests/public_models.rs): where the wrapper's language model is a published one, its
/// bytes are that checkpoint's `total_size`; where it differs by a few rows, by exactly those.
/// (Qwen3-VL-8B's and Granite Vision's language models and every tower stay derived only.)
#[test]
fn language_models_match_published_text_checkpoints() {
    let text_bytes = |name: &str, read_as: &str| ranks(&text_only(&config(name), read_as), 1)[0];
    // Qwen2.5-VL-7B's language model is Qwen2.5-7B: total_size 15,231,233,024, the config of
    // data/models/qwen2.5-7b to the byte.
    let qwen2_5_7b = import("qwen2.5-7b").circuit.weight_bytes();
    assert_eq!(qwen2_5_7b, 15_231_233_024);
    assert_eq!(text_bytes("qwen2.5-vl-7b-instruct", "qwen2"), qwen2_5_7b);
    // Qwen3-VL-30B-A3B's is Qwen3-30B-A3B's: total_size 61,064,245,248 (experts stored fused
    // here, per expert there: the same bytes).
    let qwen3_30b = import("qwen3-30b-a3b").circuit.weight_bytes();
    assert_eq!(qwen3_30b, 61_064_245_248);
    assert_eq!(
        text_bytes("qwen3-vl-30b-a3b-instruct", "qwen3_moe"),
        qwen3_30b
    );
    // llava-v1.6-mistral-7b-hf's is Mistral-7B (total_size 14,483,464,192) with 64 more
    // vocabulary rows in embed_tokens and lm_head: 2 x 64 x 4,096 x 2 bytes = 1,048,576.
    assert_eq!(
        text_bytes("llava-v1.6-mistral-7b-hf", "mistral"),
        14_483_464_192 + 1_048_576
    );
    // Kimi-VL-A3B's is DeepSeek-V2-Lite's shape (total_size 31,412,968,448) with a vocabulary
    // of 163,840 for 102,400 (2 x 61,440 x 2,048 = 251,658,240 parameters), a dense first
    // layer of 11,264 for 10,944 (3 x 320 x 2,048 = 1,966,080) and noaux_tc's f32 router bias
    // (26 x 64 x 4 = 6,656 bytes).
    let lite = import("deepseek-v2-lite").circuit.weight_bytes();
    assert_eq!(lite, 31_412_968_448);
    assert_eq!(
        text_bytes("kimi-vl-a3b-instruct", "deepseek_v2"),
        lite + 2 * (251_658_240 + 1_966_080) + 6_656
    );
}
