//! Every error path with its exact message, and a sweep of bad values over every key of real
//! configs showing that bad input gives an error, never a panic.

mod common;

use circuit_hf::{HfError, from_config_json};

const SUPPORTED: &str = "llama, granite, mistral, qwen2, qwen3, qwen3_moe, qwen2_moe, mixtral, phi3, phi, gemma, gemma2, gemma3_text, deepseek_v2, deepseek_v3, kimi_k2, gpt_oss, glm4_moe, llama4_text, qwen3_next, llama4, gemma3, mistral3, llava, llava_next, kimi_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe";

/// A small valid Llama config; tests splice keys into it.
const LLAMA: &str = r#"{"model_type": "llama", "vocab_size": 1000, "hidden_size": 128,
  "intermediate_size": 320, "num_hidden_layers": 4, "num_attention_heads": 8}"#;

/// `LLAMA` with `extra` keys added first (later duplicates of a key win in JSON objects, so
/// keys of `LLAMA` are overridden by editing, not by adding).
fn llama_with(extra: &str) -> String {
    LLAMA.replacen('{', &format!("{{{extra}, "), 1)
}

fn err(json: &str) -> String {
    match from_config_json(json, "config.json") {
        Ok(c) => panic!("expected an error, got circuit {}", c.name()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_small_config_is_valid() {
    from_config_json(LLAMA, "config.json").unwrap();
    from_config_json(&llama_with(r#""rope_theta": 10000"#), "config.json").unwrap();
}

#[test]
fn json_syntax_errors_give_line_and_column() {
    assert_eq!(
        err("{"),
        "config.json: line 1, column 1: not valid JSON: EOF while parsing an object"
    );
    assert_eq!(
        err("{\n  \"model_type\": \"llama\",\n}"),
        "config.json: line 3, column 1: not valid JSON: trailing comma"
    );
    assert_eq!(
        err("{\"hidden_size\": 12x}"),
        "config.json: line 1, column 19: not valid JSON: expected `,` or `}`"
    );
    assert_eq!(
        err("[1, 2]"),
        "config.json: expected a JSON object at the top level, found an array"
    );
}

#[test]
fn model_type_missing_or_unsupported() {
    assert_eq!(
        err("{}"),
        format!("config.json: missing key `model_type` (supported: {SUPPORTED})")
    );
    assert_eq!(
        err(r#"{"model_type": "bert"}"#),
        format!("config.json: model_type `bert` is not supported (supported: {SUPPORTED})")
    );
    assert_eq!(
        err(r#"{"model_type": 7}"#),
        "config.json: `model_type` must be a string, found 7"
    );
}

/// Sizes take the class defaults when absent (tests/defaults.rs); the one key of a supported
/// type whose class default is `None` is missing, absent or null, when it is needed; a `null`
/// the class refuses is a bad value, not a missing key.
#[test]
fn missing_keys_without_default() {
    let ds = r#"{"model_type": "deepseek_v2", "vocab_size": 1000, "hidden_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 8, "n_routed_experts": 8,
        "moe_intermediate_size": 32}"#;
    assert_eq!(
        err(ds),
        "config.json: missing key `num_experts_per_tok` (deepseek_v2 has no default for it)"
    );
    assert_eq!(
        err(&ds.replacen('{', r#"{"num_experts_per_tok": null,"#, 1)),
        "config.json: missing key `num_experts_per_tok` (deepseek_v2 has no default for it)"
    );
    assert_eq!(
        err(&LLAMA.replace(r#""hidden_size": 128"#, r#""hidden_size": null"#)),
        "config.json: `hidden_size` must be a whole number of at least 1, found null"
    );
    from_config_json(&LLAMA.replace(r#""hidden_size": 128,"#, ""), "config.json").unwrap();
}

#[test]
fn refused_keys_say_why() {
    assert_eq!(
        err(&llama_with(
            r#""quantization_config": {"quant_method": "bitsandbytes"}"#
        )),
        "config.json: `quantization_config.quant_method` is `bitsandbytes`, which is not modelled: its 4-bit layout stores a variable-length quantization state per weight"
    );
    assert_eq!(
        err(&llama_with(r#""text_config": {"hidden_size": 8}"#)),
        "config.json: `text_config` holds a nested (multimodal) model configuration, which is not modelled; import the language model's own config.json"
    );
    assert_eq!(
        err(&llama_with(r#""pruned_heads": {"0": [1]}"#)),
        "config.json: `pruned_heads` lists pruned attention heads, which change weight shapes and are not modelled"
    );
    assert_eq!(
        err(&llama_with(r#""num_nextn_predict_layers": 1"#)),
        "config.json: `num_nextn_predict_layers` is 1: multi-token-prediction layers add weights that are not modelled; set it to 0 to plan the main model"
    );
    // Harmless values of refused keys pass.
    for ok in [
        r#""quantization_config": null"#,
        r#""pruned_heads": {}"#,
        r#""num_nextn_predict_layers": 0"#,
    ] {
        from_config_json(&llama_with(ok), "config.json").unwrap();
    }
}

#[test]
fn dtype_other_than_bf16_f16_f32_is_refused() {
    assert_eq!(
        err(&llama_with(r#""torch_dtype": "float8_e4m3fn""#)),
        "config.json: `torch_dtype` is `float8_e4m3fn`, which is not modelled: a checkpoint's unquantized tensors are bfloat16, float16 or float32 (a quantized one says so in quantization_config)"
    );
    assert_eq!(
        err(&llama_with(r#""dtype": "int8""#)),
        "config.json: `dtype` is `int8`, which is not modelled: a checkpoint's unquantized tensors are bfloat16, float16 or float32 (a quantized one says so in quantization_config)"
    );
    assert_eq!(
        err(&llama_with(
            r#""torch_dtype": "bfloat16", "dtype": "float32""#
        )),
        "config.json: `torch_dtype` `bfloat16` and `dtype` `float32` disagree (they are one setting under two names)"
    );
    // Each is planned at its size: float32 doubles the weights of the default bfloat16.
    for (ok, per) in [("bfloat16", 1), ("float16", 1), ("float32", 2)] {
        let c =
            from_config_json(&llama_with(&format!(r#""torch_dtype": "{ok}""#)), "c.json").unwrap();
        assert_eq!(
            c.weight_bytes(),
            per * from_config_json(LLAMA, "c.json").unwrap().weight_bytes()
        );
    }
}

#[test]
fn unknown_keys_are_refused_not_ignored() {
    assert_eq!(
        err(&llama_with(r#""num_experts": 8"#)),
        "config.json: unknown key `num_experts` for llama: it is neither read nor known to leave memory unchanged, so it is refused rather than ignored; remove it if it does not change the model's tensors or caches (docs/hf-import.md lists the keys of each model type)"
    );
    // Private metadata is ignored.
    from_config_json(
        &llama_with(r#""_name_or_path": "x", "_commit_hash": null"#),
        "c.json",
    )
    .unwrap();
}

#[test]
fn only_the_causal_lm_head_is_modelled() {
    assert_eq!(
        err(&llama_with(
            r#""architectures": ["LlamaForSequenceClassification"]"#
        )),
        "config.json: `architectures` names `LlamaForSequenceClassification`, but only `LlamaForCausalLM` (the causal language model with its lm_head) is modelled for llama"
    );
    assert_eq!(
        err(&llama_with(r#""architectures": "LlamaForCausalLM""#)),
        "config.json: `architectures` must be a list of strings, found \"LlamaForCausalLM\""
    );
}

#[test]
fn bad_values_name_the_key_and_the_value() {
    let replace = |from: &str, to: &str| err(&LLAMA.replace(from, to));
    assert_eq!(
        replace(r#""hidden_size": 128"#, r#""hidden_size": 4096.5"#),
        "config.json: `hidden_size` must be a whole number of at least 1, found 4096.5"
    );
    assert_eq!(
        replace(r#""hidden_size": 128"#, r#""hidden_size": "4096""#),
        "config.json: `hidden_size` must be a whole number of at least 1, found \"4096\""
    );
    assert_eq!(
        replace(r#""hidden_size": 128"#, r#""hidden_size": -1"#),
        "config.json: `hidden_size` must be a whole number of at least 1, found -1"
    );
    assert_eq!(
        replace(r#""hidden_size": 128"#, r#""hidden_size": 0"#),
        "config.json: `hidden_size` must be a whole number of at least 1, found 0"
    );
    assert_eq!(
        replace(
            r#""num_hidden_layers": 4"#,
            r#""num_hidden_layers": 100000"#
        ),
        "config.json: `num_hidden_layers` must be a whole number from 1 to 4096, found 100000"
    );
    assert_eq!(
        err(&llama_with(r#""tie_word_embeddings": "yes""#)),
        "config.json: `tie_word_embeddings` must be true or false, found \"yes\""
    );
    assert_eq!(
        err(&llama_with(r#""hidden_act": "relu""#)),
        "config.json: `hidden_act` must be silu, swish or a gelu variant (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_python, gelu_accurate), found \"relu\""
    );
    assert_eq!(
        err(&llama_with(r#""num_key_value_heads": [8]"#)),
        "config.json: `num_key_value_heads` must be a whole number of at least 1, found [8]"
    );
    let long = format!(r#""head_dim": "{}""#, "x".repeat(100));
    assert_eq!(
        err(&llama_with(&long)),
        format!(
            "config.json: `head_dim` must be a whole number of at least 1, found \"{}...",
            "x".repeat(56)
        )
    );
}

#[test]
fn contradictory_keys() {
    assert_eq!(
        err(&llama_with(r#""num_key_value_heads": 3"#)),
        "config.json: `num_attention_heads` 8 is not a multiple of `num_key_value_heads` 3 (each key/value head serves a whole group of query heads)"
    );
    assert_eq!(
        err(&LLAMA.replace(r#""hidden_size": 128"#, r#""hidden_size": 100"#)),
        "config.json: `hidden_size` 100 is not a multiple of `num_attention_heads` 8 (transformers' llama configuration refuses this)"
    );
    // Mistral derives head_dim only when it is not given; a given one may differ.
    let mistral = LLAMA
        .replace("llama", "mistral")
        .replace(r#""hidden_size": 128"#, r#""hidden_size": 100"#);
    assert_eq!(
        err(&mistral),
        "config.json: `head_dim` is not given and `hidden_size` 100 is not a multiple of `num_attention_heads` 8"
    );
    from_config_json(&mistral.replacen('{', r#"{"head_dim": 16,"#, 1), "c.json").unwrap();
    let gemma = LLAMA.replace("llama", "gemma2");
    assert_eq!(
        err(&gemma.replacen('{', r#"{"layer_types": ["sliding_attention"],"#, 1)),
        "config.json: `layer_types` has 1 entries but `num_hidden_layers` is 4"
    );
    assert_eq!(
        err(&gemma.replacen(
            '{',
            r#"{"layer_types": ["full_attention", "chunked_attention", "full_attention", "full_attention"],"#,
            1
        )),
        "config.json: `layer_types` entry 1 is `chunked_attention`, which is not modelled (supported: full_attention, sliding_attention)"
    );
    let moe = r#"{"model_type": "qwen3_moe", "vocab_size": 1000, "hidden_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_experts": 8,
        "num_experts_per_tok": 2, "moe_intermediate_size": 32}"#;
    from_config_json(moe, "c.json").unwrap();
    assert_eq!(
        err(&moe.replacen('{', r#"{"mlp_only_layers": [0, 2],"#, 1)),
        "config.json: `mlp_only_layers` names layer 2 but `num_hidden_layers` is 2"
    );
    assert_eq!(
        err(&moe.replace(r#""num_experts_per_tok": 2"#, r#""num_experts_per_tok": 9"#)),
        "config.json: `num_experts_per_tok` 9 exceeds the 8 experts"
    );
    assert_eq!(
        err(&moe.replacen('{', r#"{"num_local_experts": 16,"#, 1)),
        "config.json: `num_experts` 8 and `num_local_experts` 16 disagree (they are one setting under two names)"
    );
    // The same value under both names is fine.
    from_config_json(
        &moe.replacen('{', r#"{"num_local_experts": 8,"#, 1),
        "c.json",
    )
    .unwrap();
}

#[test]
fn sizes_that_overflow_are_too_large_not_a_panic() {
    let huge = LLAMA
        .replace(r#""vocab_size": 1000"#, r#""vocab_size": 4000000000000"#)
        .replace(r#""hidden_size": 128"#, r#""hidden_size": 8000000000"#);
    let e = from_config_json(&huge, "config.json").unwrap_err();
    assert!(matches!(e, HfError::TooLarge { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("config.json: the model is too large to plan: "),
        "{e}"
    );
}

fn shared_configs() -> Vec<String> {
    common::SHARED.iter().map(|n| common::shared(n)).collect()
}

/// Every key of every shared config (and of configs of the other types) replaced by each of
/// a set of bad values: an `Ok` or an `Err`, never a panic, and never the importer's
/// invalid-circuit error.
#[test]
fn bad_values_never_panic() {
    let mut configs = shared_configs();
    let other = |model: &str, extra: &str| LLAMA.replace("llama", model).replacen('{', extra, 1);
    configs.push(other("mistral", r#"{"sliding_window": 16,"#));
    configs.push(other("phi3", r#"{"sliding_window": 16,"#));
    configs.push(other(
        "qwen3",
        r#"{"sliding_window": 16, "use_sliding_window": true, "max_window_layers": 1,
            "layer_types": null,"#,
    ));
    configs.push(other(
        "gemma2",
        r#"{"sliding_window": 16, "final_logit_softcapping": 30.0, "layer_types": null,"#,
    ));
    configs.push(other(
        "qwen3_next",
        r#"{"num_key_value_heads": 2, "head_dim": 16, "layer_types": null,
            "full_attention_interval": 2, "linear_num_key_heads": 2,
            "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
            "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
            "decoder_sparse_step": 1, "mlp_only_layers": [1], "num_nextn_predict_layers": 1,
            "attention_bias": false,"#,
    ));
    let bad = [
        "null",
        "0",
        "1",
        "-1",
        "1.5",
        "1e30",
        "4294967296",
        "18446744073709551615",
        "\"x\"",
        "true",
        "[]",
        "[0, 99]",
        "{}",
    ];
    let mut runs = 0;
    for text in &configs {
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
        for key in map.keys() {
            for value in bad {
                let mut m = map.clone();
                m.insert(key.clone(), serde_json::from_str(value).unwrap());
                let json = serde_json::to_string(&m).unwrap();
                if let Err(e) = from_config_json(&json, "config.json") {
                    assert!(
                        !matches!(e, HfError::Circuit { .. }),
                        "{key} = {value}: {e}"
                    );
                }
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "{runs}");
}

/// A small Llama 4 (two layers: one chunked MoE layer, one NoPE dense layer) with a small
/// vision tower; tests edit it.
const LLAMA4: &str = r#"{"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
  "text_config": {"vocab_size": 1000, "hidden_size": 128, "intermediate_size": 64,
    "intermediate_size_mlp": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "num_local_experts": 4, "moe_layers": [0],
    "no_rope_layers": [1, 0], "attention_chunk_size": 16},
  "vision_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 96, "vision_output_dim": 80, "image_size": 28, "patch_size": 14,
    "projector_input_dim": 80, "projector_output_dim": 80},
  "torch_dtype": "bfloat16"}"#;

#[test]
fn llama4_small_counts_text_and_vision_exactly() {
    let c = from_config_json(LLAMA4, "config.json").unwrap();
    // Text: embed + lm_head 2 x 1000 x 128; per layer q 128 x 128, k and v 64 x 128 each,
    // o 128 x 128, two norms; layer 0 router 4 x 128, experts 4 x (128 x 128 + 64 x 128),
    // shared expert 3 x 64 x 128; layer 1 dense 3 x 256 x 128; final norm 128.
    let attn = 2 * 128 * 128 + 2 * 64 * 128 + 2 * 128;
    let moe = 4 * 128 + 4 * (128 * 128 + 64 * 128) + 3 * 64 * 128;
    let dense = 3 * 256 * 128;
    let text = 2 * 1000 * 128 + 2 * attn + moe + dense + 128;
    // Vision: patch 64 x 588, class 64, positions (2 x 2 + 1) x 64, two LayerNorms 4 x 64;
    // per layer q/k/v/o 4 x (64 x 64 + 64), fc1 96 x 64 + 96, fc2 64 x 96 + 64, norms 4 x 64;
    // adapter 80 x 96 + 80 x 80; projector 128 x 80.
    let layer = 4 * (64 * 64 + 64) + (96 * 64 + 96) + (64 * 96 + 64) + 4 * 64;
    let vision = 64 * 588 + 64 + 5 * 64 + 4 * 64 + 2 * layer + 80 * 96 + 80 * 80 + 128 * 80;
    assert_eq!(c.weight_bytes(), 2 * (text + vision));
    // Both layers cache 2 x 2 x 32 per token; the chunked one at most 16 tokens.
    assert_eq!(c.state_bytes(100, 1).unwrap(), 2 * 128 * (16 + 100));
}

#[test]
fn llama4_errors_name_the_nested_key() {
    let with = |from: &str, to: &str| {
        assert!(LLAMA4.contains(from), "{from}");
        err(&LLAMA4.replacen(from, to, 1))
    };
    assert_eq!(
        with(r#""torch_dtype""#, r#""image_seq_len": 4, "torch_dtype""#),
        "config.json: unknown key `image_seq_len` for llama4: it is neither read nor known to leave memory unchanged, so it is refused rather than ignored; remove it if it does not change the model's tensors or caches (docs/hf-import.md lists the keys of each model type)"
    );
    assert_eq!(
        with(
            r#""vocab_size": 1000"#,
            r#""model_type": "llama", "vocab_size": 1000"#
        ),
        "config.json: `text_config.model_type` must be `llama4_text` (the language model of llama4), found \"llama\""
    );
    assert_eq!(
        with(r#""patch_size": 14"#, r#""patch_size": 0"#),
        "config.json: `vision_config.patch_size` must be a whole number of at least 1, found 0"
    );
    assert_eq!(
        with(r#""image_size": 28"#, r#""image_size": 8"#),
        "config.json: `vision_config.image_size` 8 is smaller than `vision_config.patch_size` 14: the image has no patch"
    );
    assert_eq!(
        with(r#""no_rope_layers": [1, 0]"#, r#""no_rope_layers": [1]"#),
        "config.json (text_config): `no_rope_layers` has 1 entries but `num_hidden_layers` is 2"
    );
    assert_eq!(
        with(r#""moe_layers": [0]"#, r#""moe_layers": [2]"#),
        "config.json (text_config): `moe_layers` names layer 2 but `num_hidden_layers` is 2"
    );
    assert_eq!(
        with(
            r#""torch_dtype": "bfloat16"}"#,
            r#""torch_dtype": "bfloat16", "text_config": 3}"#
        ),
        "config.json: line 9, column 42: duplicate key `text_config` in one JSON object (JSON readers keep only the last value, silently); remove one of them"
    );
    assert_eq!(
        with(
            r#""vocab_size": 1000"#,
            r#""torch_dtype": "float16", "vocab_size": 1000"#
        ),
        "config.json: `torch_dtype` \"bfloat16\" and `text_config.torch_dtype` \"float16\" disagree"
    );
}

#[test]
fn qwen3_next_refusals_name_the_key_and_the_value() {
    let q = |extra: &str| {
        err(&format!(
            r#"{{"model_type": "qwen3_next", "vocab_size": 1000, "hidden_size": 128,
                "num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 16,
                "num_experts": 4, "num_experts_per_tok": 2{extra}}}"#
        ))
    };
    assert_eq!(
        q(r#", "linear_num_key_heads": 3, "linear_num_value_heads": 4"#),
        "config.json: `linear_num_value_heads` 4 is not a multiple of `linear_num_key_heads` 3 (each key head serves a whole group of value heads)"
    );
    assert_eq!(
        q(
            r#", "layer_types": ["full_attention", "sliding_attention", "full_attention", "linear_attention"]"#
        ),
        "config.json: `layer_types` entry 1 is `sliding_attention`, which Qwen3-Next does not have (supported: linear_attention, full_attention)"
    );
    assert_eq!(
        q(r#", "layer_types": ["full_attention"]"#),
        "config.json: `layer_types` has 1 entries but `num_hidden_layers` is 4"
    );
    assert_eq!(
        q(r#", "full_attention_interval": 0"#),
        "config.json: `full_attention_interval` must be a whole number of at least 1, found 0"
    );
    assert_eq!(
        q(r#", "shared_expert_intermediate_size": 0"#),
        "config.json: `shared_expert_intermediate_size` must be a whole number of at least 1, found 0"
    );
    assert_eq!(
        q(r#", "num_local_experts": 4"#),
        "config.json: unknown key `num_local_experts` for qwen3_next: it is neither read nor known to leave memory unchanged, so it is refused rather than ignored; remove it if it does not change the model's tensors or caches (docs/hf-import.md lists the keys of each model type)"
    );
}

/// A vision tower's layers are bounded as a language model's are (each is a block instance):
/// 24,000 took seconds to import under the fuzzer.
#[test]
fn vision_layers_are_bounded() {
    let json = LLAMA4.replacen(
        r#""vision_config": {"hidden_size": 64, "num_hidden_layers": 2,"#,
        r#""vision_config": {"hidden_size": 64, "num_hidden_layers": 24000,"#,
        1,
    );
    assert_eq!(
        err(&json),
        "config.json: `vision_config.num_hidden_layers` must be a whole number from 1 to 4096, found 24000"
    );
}
