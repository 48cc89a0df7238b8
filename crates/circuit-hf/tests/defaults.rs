//! Absent keys take the default of the model type's transformers configuration class
//! (transformers 5.25.0, `configuration_<type>.py`) and every default used is reported in
//! `Import::defaults`, with its value, in the order of the type's key table.
//!
//! For each model type, a small config that gives every key it reads (so it reports no
//! default) loses one size key at a time; the weights are then derived by hand in the comment,
//! at 2 bytes per parameter. The small configs share these sizes unless they say otherwise:
//! vocab 1000, hidden 64, 2 layers, 4 heads of head_dim 16, 2 key/value heads, MLP 128 wide.
//! With them every derivation starts from:
//! - embed_tokens + lm_head 2 x 1000 x 64 = 128,000 (tied: 64,000); final norm 64;
//! - per layer: q 64 x (4 x 16) = 4,096; k, v 64 x (2 x 16) = 2,048 each; o 4,096
//!   (attention 12,288); MLP gate, up, down 3 x 64 x 128 = 24,576; two norms 128.

mod common;

use circuit_hf::{HfError, Import, ModelType, import};
use serde_json::{Map, Value};

fn run(json: &str) -> Result<Import, HfError> {
    import(json, "config.json")
}

fn ok(json: &str) -> Import {
    run(json).unwrap_or_else(|e| panic!("{e}"))
}

/// `json` without `key`, which it must have.
fn without(json: &str, key: &str) -> String {
    let mut map: Map<String, Value> = serde_json::from_str(json).unwrap();
    assert!(map.remove(key).is_some(), "{key} is not in the base config");
    serde_json::to_string(&map).unwrap()
}

/// `json` with `key` set to `value` (JSON).
fn with(json: &str, key: &str, value: &str) -> String {
    let mut map: Map<String, Value> = serde_json::from_str(json).unwrap();
    map.insert(key.to_owned(), serde_json::from_str(value).unwrap());
    serde_json::to_string(&map).unwrap()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The base config reports no default and has `params` parameters.
fn base(json: &str, params: u64) {
    let imp = ok(json);
    assert_eq!(imp.defaults, vec![], "the base config gives every key");
    assert_eq!(imp.circuit.weight_bytes(), 2 * params, "base");
}

/// Without `key`, the config plans with `value` (and reports exactly that default) and has
/// `params` parameters.
fn defaulted(json: &str, key: &str, value: &str, params: u64) -> Import {
    let imp = ok(&without(json, key));
    assert_eq!(imp.defaults, pairs(&[(key, value)]), "{key}");
    assert_eq!(imp.circuit.weight_bytes(), 2 * params, "{key}: weights");
    imp
}

const LLAMA: &str = r#"{"model_type": "llama", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false}"#;

#[test]
fn llama_sizes_default_to_llama_config() {
    // Layer 12,288 + 24,576 + 128 = 36,992; 128,064 + 2 x 36,992 = 202,048.
    base(LLAMA, 202_048);
    // 2 x 32000 x 64 = 4,096,000; + 64 + 2 x 36,992 = 4,170,048.
    defaulted(LLAMA, "vocab_size", "32000", 4_170_048);
    // head_dim stays 16. embed + lm_head 2 x 1000 x 4096 = 8,192,000, final norm 4,096; per
    // layer q, o 4096 x 64 = 262,144 each, k, v 4096 x 32 = 131,072 each, MLP 3 x 4096 x 128
    // = 1,572,864, norms 8,192: 2,367,488. 8,196,096 + 2 x 2,367,488 = 12,931,072.
    defaulted(LLAMA, "hidden_size", "4096", 12_931_072);
    // 128,064 + 32 x 36,992 = 1,311,808.
    let c = defaulted(LLAMA, "num_hidden_layers", "32", 1_311_808).circuit;
    assert_eq!(c.dim("layers"), Some(32));
    // q, o 64 x (32 x 16) = 32,768 each; layer 32,768 + 4,096 + 32,768 + 24,576 + 128 =
    // 94,336; 128,064 + 2 x 94,336 = 316,736.
    defaulted(LLAMA, "num_attention_heads", "32", 316_736);
    // MLP 3 x 64 x 11008 = 2,113,536; layer 12,288 + 2,113,536 + 128 = 2,125,952;
    // 128,064 + 2 x 2,125,952 = 4,379,968.
    defaulted(LLAMA, "intermediate_size", "11008", 4_379_968);
}

const MISTRAL: &str = r#"{"model_type": "mistral", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "sliding_window": 512}"#;

#[test]
fn mistral_sizes_default_to_mistral_config() {
    // As Llama: 202,048, and the same figures for vocab, hidden, layers and heads.
    base(MISTRAL, 202_048);
    defaulted(MISTRAL, "vocab_size", "32000", 4_170_048);
    defaulted(MISTRAL, "hidden_size", "4096", 12_931_072);
    defaulted(MISTRAL, "num_hidden_layers", "32", 1_311_808);
    defaulted(MISTRAL, "num_attention_heads", "32", 316_736);
    // MLP 3 x 64 x 14336 = 2,752,512; layer 12,288 + 2,752,512 + 128 = 2,764,928;
    // 128,064 + 2 x 2,764,928 = 5,657,920.
    defaulted(MISTRAL, "intermediate_size", "14336", 5_657_920);
}

const QWEN2: &str = r#"{"model_type": "qwen2", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "use_sliding_window": false}"#;

#[test]
fn qwen2_sizes_default_to_qwen2_config() {
    // Layer 36,992 + q, k, v biases 64 + 32 + 32 = 37,120; 128,064 + 2 x 37,120 = 202,304.
    base(QWEN2, 202_304);
    // 2 x 151936 x 64 = 19,447,808; + 64 + 2 x 37,120 = 19,522,112.
    defaulted(QWEN2, "vocab_size", "151936", 19_522_112);
    // Llama's 2,367,488 per layer + biases 128 = 2,367,616; 8,196,096 + 2 x 2,367,616 =
    // 12,931,328.
    defaulted(QWEN2, "hidden_size", "4096", 12_931_328);
    // 128,064 + 32 x 37,120 = 1,315,904.
    defaulted(QWEN2, "num_hidden_layers", "32", 1_315_904);
    // Llama's 94,336 + biases 512 + 32 + 32 = 94,912; 128,064 + 2 x 94,912 = 317,888.
    defaulted(QWEN2, "num_attention_heads", "32", 317_888);
    // MLP 3 x 64 x 22016 = 4,227,072; layer 12,288 + 4,227,072 + 128 + 128 = 4,239,616;
    // 128,064 + 2 x 4,239,616 = 8,607,296.
    defaulted(QWEN2, "intermediate_size", "22016", 8_607_296);
}

const QWEN3: &str = r#"{"model_type": "qwen3", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "attention_bias": false, "use_sliding_window": false}"#;

#[test]
fn qwen3_sizes_default_to_qwen3_config() {
    // Layer 36,992 + q, k norms 2 x 16 = 37,024; 128,064 + 2 x 37,024 = 202,112.
    base(QWEN3, 202_112);
    // 19,447,808 + 64 + 2 x 37,024 = 19,521,920.
    defaulted(QWEN3, "vocab_size", "151936", 19_521_920);
    // 2,367,488 + 32 = 2,367,520 per layer; 8,196,096 + 2 x 2,367,520 = 12,931,136.
    defaulted(QWEN3, "hidden_size", "4096", 12_931_136);
    // 128,064 + 32 x 37,024 = 1,312,832.
    defaulted(QWEN3, "num_hidden_layers", "32", 1_312_832);
    // 94,336 + 32 = 94,368; 128,064 + 2 x 94,368 = 316,800.
    defaulted(QWEN3, "num_attention_heads", "32", 316_800);
    // 12,288 + 4,227,072 + 128 + 32 = 4,239,520; 128,064 + 2 x 4,239,520 = 8,607,104.
    defaulted(QWEN3, "intermediate_size", "22016", 8_607_104);
    // head_dim 128 (Qwen3Config's own, not 64 / 4): q, o 64 x 512 = 32,768 each, k, v
    // 64 x 256 = 16,384 each, q/k norms 256; layer 98,304 + 24,576 + 128 + 256 = 123,264;
    // 128,064 + 2 x 123,264 = 374,592.
    defaulted(QWEN3, "head_dim", "128", 374_592);
}

/// Layer 0 dense, layer 1 sparse (decoder_sparse_step 2): 16 experts of 32, top 2.
const QWEN3_MOE: &str = r#"{"model_type": "qwen3_moe", "torch_dtype": "bfloat16", "vocab_size": 1000,
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "attention_bias": false, "use_sliding_window": false,
    "num_experts": 16, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "decoder_sparse_step": 2, "mlp_only_layers": []}"#;

#[test]
fn qwen3_moe_sizes_default_to_qwen3_moe_config() {
    // Attention + q/k norms 12,288 + 32 = 12,320, norms 128. Layer 0: + MLP 24,576 = 37,024.
    // Layer 1: + router 16 x 64 = 1,024 + experts 16 x 3 x 64 x 32 = 98,304: 111,776.
    // 128,064 + 37,024 + 111,776 = 276,864.
    base(QWEN3_MOE, 276_864);
    // 2 x 151936 x 64 = 19,447,808; + 64 + 148,800 = 19,596,672.
    defaulted(QWEN3_MOE, "vocab_size", "151936", 19_596_672);
    // embed + lm_head 2 x 1000 x 2048 = 4,096,000, final norm 2,048; attention q, o 2048 x 64
    // = 131,072 each, k, v 2048 x 32 = 65,536 each, + q/k norms 32 = 393,248, norms 4,096.
    // Layer 0: + MLP 3 x 2048 x 128 = 786,432: 1,183,776. Layer 1: + router 16 x 2048 =
    // 32,768 + experts 16 x 3 x 2048 x 32 = 3,145,728: 3,575,840.
    // 4,098,048 + 1,183,776 + 3,575,840 = 8,857,664.
    defaulted(QWEN3_MOE, "hidden_size", "2048", 8_857_664);
    // 24 layers: the 12 odd-indexed sparse, the 12 even dense.
    // 128,064 + 12 x 37,024 + 12 x 111,776 = 128,064 + 444,288 + 1,341,312 = 1,913,664.
    defaulted(QWEN3_MOE, "num_hidden_layers", "24", 1_913_664);
    // q, o 64 x 512 = 32,768 each: attention 69,632 + 32 = 69,664. Layer 0: + 128 + 24,576 =
    // 94,368; layer 1: + 128 + 1,024 + 98,304 = 169,120. 128,064 + 94,368 + 169,120 = 391,552.
    defaulted(QWEN3_MOE, "num_attention_heads", "32", 391_552);
    // Layer 0's MLP 3 x 64 x 6144 = 1,179,648: 12,320 + 128 + 1,179,648 = 1,192,096.
    // 128,064 + 1,192,096 + 111,776 = 1,431,936.
    defaulted(QWEN3_MOE, "intermediate_size", "6144", 1_431_936);
    // Router 128 x 64 = 8,192, experts 128 x 3 x 64 x 32 = 786,432: layer 1 = 12,320 + 128 +
    // 8,192 + 786,432 = 807,072. 128,064 + 37,024 + 807,072 = 972,160.
    defaulted(QWEN3_MOE, "num_experts", "128", 972_160);
    // Experts 16 x 3 x 64 x 768 = 2,359,296: layer 1 = 12,448 + 1,024 + 2,359,296 =
    // 2,372,768. 128,064 + 37,024 + 2,372,768 = 2,537,856.
    defaulted(QWEN3_MOE, "moe_intermediate_size", "768", 2_537_856);
    // Experts per token change no weight: 276,864.
    let c = defaulted(QWEN3_MOE, "num_experts_per_tok", "8", 276_864).circuit;
    assert_eq!(c.dim("experts_per_tok"), Some(8));
    // The step and mlp_only_layers defaults make every layer sparse: two of layer 1's 111,776.
    // 128,064 + 2 x 111,776 = 351,616.
    defaulted(QWEN3_MOE, "decoder_sparse_step", "1", 351_616);
    defaulted(QWEN3_MOE, "mlp_only_layers", "[]", 276_864);
}

/// Every layer sparse: 4 experts, top 1.
const MIXTRAL: &str = r#"{"model_type": "mixtral", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "sliding_window": null, "num_local_experts": 4,
    "num_experts_per_tok": 1}"#;

#[test]
fn mixtral_sizes_default_to_mixtral_config() {
    // Layer: attention 12,288, norms 128, router 4 x 64 = 256, experts 4 x 3 x 64 x 128 =
    // 98,304: 110,976. 128,064 + 2 x 110,976 = 350,016.
    base(MIXTRAL, 350_016);
    // 4,096,000 + 64 + 2 x 110,976 = 4,318,016.
    defaulted(MIXTRAL, "vocab_size", "32000", 4_318_016);
    // 8,192,000 + 4,096; layer: attention 786,432, norms 8,192, router 4 x 4096 = 16,384,
    // experts 4 x 3 x 4096 x 128 = 6,291,456: 7,102,464. 8,196,096 + 2 x 7,102,464 =
    // 22,401,024.
    defaulted(MIXTRAL, "hidden_size", "4096", 22_401_024);
    // 128,064 + 32 x 110,976 = 3,679,296.
    defaulted(MIXTRAL, "num_hidden_layers", "32", 3_679_296);
    // Attention 32,768 + 4,096 + 32,768 = 69,632; layer 69,632 + 128 + 256 + 98,304 =
    // 168,320. 128,064 + 2 x 168,320 = 464,704.
    defaulted(MIXTRAL, "num_attention_heads", "32", 464_704);
    // Each expert 14336 wide: 4 x 3 x 64 x 14336 = 11,010,048; layer 12,288 + 128 + 256 +
    // 11,010,048 = 11,022,720. 128,064 + 2 x 11,022,720 = 22,173,504.
    defaulted(MIXTRAL, "intermediate_size", "14336", 22_173_504);
    // Router 8 x 64 = 512, experts 8 x 24,576 = 196,608: layer 12,288 + 128 + 512 + 196,608
    // = 209,536. 128,064 + 2 x 209,536 = 547,136.
    defaulted(MIXTRAL, "num_local_experts", "8", 547_136);
    // Experts per token change no weight.
    let c = defaulted(MIXTRAL, "num_experts_per_tok", "2", 350_016).circuit;
    assert_eq!(c.dim("experts_per_tok"), Some(2));
}

const PHI3: &str = r#"{"model_type": "phi3", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
    "tie_word_embeddings": false, "sliding_window": null}"#;

#[test]
fn phi3_sizes_default_to_phi3_config() {
    // Fused qkv_proj 64 x (64 + 2 x 32) and gate_up_proj 64 x 256 hold what Llama's separate
    // projections do: 202,048, and Llama's figures for layers and heads.
    base(PHI3, 202_048);
    // 2 x 32064 x 64 = 4,104,192; + 64 + 2 x 36,992 = 4,178,240.
    defaulted(PHI3, "vocab_size", "32064", 4_178_240);
    // embed + lm_head 2 x 1000 x 3072 = 6,144,000, final norm 3,072; layer: qkv 3072 x 128 =
    // 393,216, o 64 x 3072 = 196,608, gate_up 3072 x 256 = 786,432, down 128 x 3072 =
    // 393,216, norms 6,144: 1,775,616. 6,147,072 + 2 x 1,775,616 = 9,698,304.
    defaulted(PHI3, "hidden_size", "3072", 9_698_304);
    defaulted(PHI3, "num_hidden_layers", "32", 1_311_808);
    defaulted(PHI3, "num_attention_heads", "32", 316_736);
    // MLP 3 x 64 x 8192 = 1,572,864; layer 12,288 + 1,572,864 + 128 = 1,585,280;
    // 128,064 + 2 x 1,585,280 = 3,298,624.
    defaulted(PHI3, "intermediate_size", "8192", 3_298_624);
}

/// No window (so `layer_types` is not needed); tied.
const GEMMA2: &str = r#"{"model_type": "gemma2", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    "num_key_value_heads": 2, "head_dim": 16, "hidden_activation": "gelu_pytorch_tanh",
    "tie_word_embeddings": true, "attention_bias": false, "sliding_window": null,
    "final_logit_softcapping": 30.0}"#;

#[test]
fn gemma2_sizes_default_to_gemma2_config() {
    // Tied embed 64,000 + final norm 64; layer: attention 12,288, MLP 24,576, four norms 256:
    // 37,120. 64,064 + 2 x 37,120 = 138,304.
    base(GEMMA2, 138_304);
    // 256000 x 64 = 16,384,000; + 64 + 2 x 37,120 = 16,458,304.
    defaulted(GEMMA2, "vocab_size", "256000", 16_458_304);
    // embed 1000 x 2304 = 2,304,000, final norm 2,304; layer: q, o 2304 x 64 = 147,456 each,
    // k, v 2304 x 32 = 73,728 each, MLP 3 x 2304 x 128 = 884,736, norms 4 x 2304 = 9,216:
    // 1,336,320. 2,306,304 + 2 x 1,336,320 = 4,978,944.
    defaulted(GEMMA2, "hidden_size", "2304", 4_978_944);
    // 64,064 + 26 x 37,120 = 1,029,184.
    defaulted(GEMMA2, "num_hidden_layers", "26", 1_029_184);
    // q, o 64 x (8 x 16) = 8,192 each; layer 8,192 + 4,096 + 8,192 + 24,576 + 256 = 45,312.
    // 64,064 + 2 x 45,312 = 154,688.
    defaulted(GEMMA2, "num_attention_heads", "8", 154_688);
    // MLP 3 x 64 x 9216 = 1,769,472; layer 12,288 + 1,769,472 + 256 = 1,782,016;
    // 64,064 + 2 x 1,782,016 = 3,628,096.
    defaulted(GEMMA2, "intermediate_size", "9216", 3_628_096);
    // head_dim 256 (Gemma2Config's own): q, o 64 x 1024 = 65,536 each, k, v 64 x 512 =
    // 32,768 each; layer 196,608 + 24,576 + 256 = 221,440. 64,064 + 2 x 221,440 = 506,944.
    defaulted(GEMMA2, "head_dim", "256", 506_944);
    // Gemma2Config ties by default: without the key lm_head still shares embed_tokens.
    defaulted(GEMMA2, "tie_word_embeddings", "true", 138_304);
}

/// MLA without q LoRA (latent 32, nope 16, rope 8, v 16); layer 0 dense, layer 1 sparse with
/// 8 routed experts of 32 and one shared expert.
const DEEPSEEK_V2: &str = r#"{"model_type": "deepseek_v2", "torch_dtype": "bfloat16", "vocab_size": 1000,
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "hidden_act": "silu", "tie_word_embeddings": false,
    "attention_bias": false, "mlp_bias": false, "q_lora_rank": null, "kv_lora_rank": 32,
    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 8,
    "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "first_k_dense_replace": 1, "moe_layer_freq": 1}"#;

#[test]
fn deepseek_v2_sizes_default_to_deepseek_v2_config() {
    // MLA: q_proj 64 x 4 x (16 + 8) = 6,144, kv_a_proj 64 x (32 + 8) = 2,560, kv_a norm 32,
    // kv_b_proj 32 x 4 x (16 + 16) = 4,096, o 4 x 16 x 64 = 4,096: 16,928; norms 128.
    // Layer 0: + MLP 24,576 = 41,632. Layer 1: + router 8 x 64 = 512, experts
    // 8 x 3 x 64 x 32 = 49,152, shared 3 x 64 x 32 = 6,144: 72,864.
    // 128,064 + 41,632 + 72,864 = 242,560.
    base(DEEPSEEK_V2, 242_560);
    // 2 x 102400 x 64 = 13,107,200; + 64 + 114,496 = 13,221,760.
    defaulted(DEEPSEEK_V2, "vocab_size", "102400", 13_221_760);
    // 8,192,000 + 4,096; MLA: q 4096 x 96 = 393,216, kv_a 4096 x 40 = 163,840, norm 32,
    // kv_b 4,096, o 64 x 4096 = 262,144: 823,328; norms 8,192. Layer 0: + MLP 3 x 4096 x 128
    // = 1,572,864: 2,404,384. Layer 1: + router 8 x 4096 = 32,768, experts
    // 8 x 3 x 4096 x 32 = 3,145,728, shared 3 x 4096 x 32 = 393,216: 4,403,232.
    // 8,196,096 + 2,404,384 + 4,403,232 = 15,003,712.
    defaulted(DEEPSEEK_V2, "hidden_size", "4096", 15_003_712);
    // Layer 0 dense, layers 1-31 sparse: 128,064 + 41,632 + 31 x 72,864 = 2,428,480.
    defaulted(DEEPSEEK_V2, "num_hidden_layers", "32", 2_428_480);
    // q 64 x 32 x 24 = 49,152, kv_a 2,560, norm 32, kv_b 32 x 32 x 32 = 32,768, o
    // 32 x 16 x 64 = 32,768: 117,280. Layer 0: + 128 + 24,576 = 141,984; layer 1: + 128 +
    // 512 + 49,152 + 6,144 = 173,216. 128,064 + 141,984 + 173,216 = 443,264.
    defaulted(DEEPSEEK_V2, "num_attention_heads", "32", 443_264);
    // Layer 0's MLP 3 x 64 x 11008 = 2,113,536: 16,928 + 128 + 2,113,536 = 2,130,592.
    // 128,064 + 2,130,592 + 72,864 = 2,331,520.
    defaulted(DEEPSEEK_V2, "intermediate_size", "11008", 2_331_520);
    // Router 64 x 64 = 4,096, experts 64 x 6,144 = 393,216: layer 1 = 16,928 + 128 + 4,096 +
    // 393,216 + 6,144 = 420,512. 128,064 + 41,632 + 420,512 = 590,208.
    defaulted(DEEPSEEK_V2, "n_routed_experts", "64", 590_208);
    // Experts 8 x 3 x 64 x 1407 = 2,161,152, shared 3 x 64 x 1407 = 270,144: layer 1 =
    // 16,928 + 128 + 512 + 2,161,152 + 270,144 = 2,448,864. 128,064 + 41,632 + 2,448,864 =
    // 2,618,560.
    defaulted(DEEPSEEK_V2, "moe_intermediate_size", "1407", 2_618_560);
    // Two shared experts: shared 3 x 64 x 64 = 12,288, 6,144 more. 242,560 + 6,144 = 248,704.
    defaulted(DEEPSEEK_V2, "n_shared_experts", "2", 248_704);
    // DeepseekV2Config's num_experts_per_tok is None: no default, absent or null.
    for json in [
        without(DEEPSEEK_V2, "num_experts_per_tok"),
        with(DEEPSEEK_V2, "num_experts_per_tok", "null"),
    ] {
        assert_eq!(
            run(&json).unwrap_err().to_string(),
            "config.json: missing key `num_experts_per_tok` (deepseek_v2 has no default for it)"
        );
    }
    // Without sparse layers it is not needed.
    let dense = with(
        &without(DEEPSEEK_V2, "num_experts_per_tok"),
        "first_k_dense_replace",
        "2",
    );
    assert_eq!(ok(&dense).defaults, vec![]);
}

/// A config with nothing but `model_type` is the class's own default configuration: every
/// default it uses, with its value, in the order of the key table (not the reading order:
/// `intermediate_size` is read last but listed fifth). Each value is the class's.
/// A model type, the keys its empty config adds, and the defaults it then reports.
type EmptyCase<'a> = (ModelType, &'a str, &'a [(&'a str, &'a str)]);

#[test]
fn an_empty_config_reports_every_default_of_the_class() {
    let expect: [EmptyCase; 9] = [
        (
            ModelType::Llama,
            "",
            &[
                ("vocab_size", "32000"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("intermediate_size", "11008"),
                ("num_key_value_heads", "32"),
                ("head_dim", "128"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("attention_bias", "false"),
                ("mlp_bias", "false"),
            ],
        ),
        (
            ModelType::Mistral,
            "",
            &[
                ("vocab_size", "32000"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("intermediate_size", "14336"),
                ("num_key_value_heads", "8"),
                ("head_dim", "128"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("sliding_window", "4096"),
            ],
        ),
        (
            ModelType::Qwen2,
            "",
            &[
                ("vocab_size", "151936"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("intermediate_size", "22016"),
                ("num_key_value_heads", "32"),
                ("head_dim", "128"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("use_sliding_window", "false"),
            ],
        ),
        (
            ModelType::Qwen3,
            "",
            &[
                ("vocab_size", "151936"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("intermediate_size", "22016"),
                ("num_key_value_heads", "32"),
                ("head_dim", "128"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("attention_bias", "false"),
                ("use_sliding_window", "false"),
            ],
        ),
        (
            // Every layer sparse, so intermediate_size is not used and not listed.
            ModelType::Qwen3Moe,
            "",
            &[
                ("vocab_size", "151936"),
                ("hidden_size", "2048"),
                ("num_hidden_layers", "24"),
                ("num_attention_heads", "32"),
                ("num_key_value_heads", "4"),
                ("head_dim", "64"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("attention_bias", "false"),
                ("use_sliding_window", "false"),
                ("num_experts", "128"),
                ("num_experts_per_tok", "8"),
                ("moe_intermediate_size", "768"),
                ("decoder_sparse_step", "1"),
                ("mlp_only_layers", "[]"),
            ],
        ),
        (
            ModelType::Mixtral,
            "",
            &[
                ("vocab_size", "32000"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("num_key_value_heads", "8"),
                ("head_dim", "128"),
                ("intermediate_size", "14336"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("sliding_window", "null"),
                ("num_local_experts", "8"),
                ("num_experts_per_tok", "2"),
            ],
        ),
        (
            ModelType::Phi3,
            "",
            &[
                ("vocab_size", "32064"),
                ("hidden_size", "3072"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("intermediate_size", "8192"),
                ("num_key_value_heads", "32"),
                ("head_dim", "96"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("sliding_window", "null"),
            ],
        ),
        (
            ModelType::Gemma2,
            "",
            &[
                ("vocab_size", "256000"),
                ("hidden_size", "2304"),
                ("num_hidden_layers", "26"),
                ("num_attention_heads", "8"),
                ("intermediate_size", "9216"),
                ("num_key_value_heads", "4"),
                ("head_dim", "256"),
                ("hidden_activation", "gelu_pytorch_tanh"),
                ("tie_word_embeddings", "true"),
                ("attention_bias", "false"),
                ("sliding_window", "4096"),
                ("layer_types", "sliding_attention on even layers"),
                ("final_logit_softcapping", "30.0"),
            ],
        ),
        (
            // num_experts_per_tok has no default; first_k_dense_replace 0 leaves no dense
            // layer, so intermediate_size is not used.
            ModelType::DeepseekV2,
            r#", "num_experts_per_tok": 6"#,
            &[
                ("vocab_size", "102400"),
                ("hidden_size", "4096"),
                ("num_hidden_layers", "32"),
                ("num_attention_heads", "32"),
                ("hidden_act", "silu"),
                ("tie_word_embeddings", "false"),
                ("attention_bias", "false"),
                ("mlp_bias", "false"),
                ("q_lora_rank", "1536"),
                ("kv_lora_rank", "512"),
                ("qk_nope_head_dim", "128"),
                ("qk_rope_head_dim", "64"),
                ("v_head_dim", "128"),
                ("n_routed_experts", "64"),
                ("n_shared_experts", "2"),
                ("moe_intermediate_size", "1407"),
                ("first_k_dense_replace", "0"),
                ("moe_layer_freq", "1"),
            ],
        ),
    ];
    for (m, extra, defaults) in expect {
        let imp = ok(&format!(r#"{{"model_type": "{m}"{extra}}}"#));
        assert_eq!(imp.model_type, m);
        // Absent, the dtype is assumed bfloat16 (the common keys come first).
        let defaults = &[&[("torch_dtype", "bfloat16")], defaults].concat()[..];
        assert_eq!(imp.defaults, pairs(defaults), "{m}");
        // The key table states each value: `default <value>` (or `default (and null):
        // <value>`) in the note, or a derivation for the derived ones.
        for (key, value) in defaults {
            let note = m.key(key).unwrap().note;
            let derived = matches!(*key, "num_key_value_heads" | "head_dim")
                && (note.starts_with("default (and null): ") || note.starts_with("default: "));
            assert!(
                states_default(note, value) || derived,
                "{m}: `{key}` note `{note}` does not state the default {value}"
            );
        }
    }
    // LlamaConfig() has Llama-2-7B's shape: embed + lm_head 2 x 32000 x 4096 = 262,144,000,
    // final norm 4,096; per layer 4 x 4096 x 4096 = 67,108,864 attention, 3 x 4096 x 11008 =
    // 135,266,304 MLP, 8,192 norms: 202,383,360. 262,148,096 + 32 x 202,383,360 =
    // 6,738,415,616 parameters.
    let llama = ok(r#"{"model_type": "llama"}"#);
    assert_eq!(llama.circuit.weight_bytes(), 2 * 6_738_415_616);
}

/// Whether `note` says `default <value>` (or `default (and null): <value>`), the value
/// ending there.
fn states_default(note: &str, value: &str) -> bool {
    ["default ", "default (and null): "].iter().any(|lead| {
        let pattern = format!("{lead}{value}");
        note.match_indices(&pattern).any(|(at, _)| {
            !note[at + pattern.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        })
    })
}

/// `null` takes the default only where the class's field is optional and `None` stands for
/// the default; such a default is reported like an absent key's.
#[test]
fn null_takes_the_default_only_where_the_class_says_so() {
    // Llama: num_key_value_heads and head_dim default to None, i.e. heads and hidden / heads.
    let imp = ok(&with(
        &with(LLAMA, "num_key_value_heads", "null"),
        "head_dim",
        "null",
    ));
    assert_eq!(
        imp.defaults,
        pairs(&[("num_key_value_heads", "4"), ("head_dim", "16")])
    );
    // Qwen2's null num_key_value_heads means num_attention_heads, which is not its default
    // (32): not reported. K, v become 64 x 64 = 4,096 each, 4,096 more per layer and 128 more
    // bias: 202,304 + 2 x (4,096 + 64) = 210,624.
    let imp = ok(&with(QWEN2, "num_key_value_heads", "null"));
    assert_eq!(imp.defaults, vec![]);
    assert_eq!(imp.circuit.weight_bytes(), 2 * 210_624);
    // Qwen3-MoE's null mlp_only_layers is [].
    let imp = ok(&with(QWEN3_MOE, "mlp_only_layers", "null"));
    assert_eq!(imp.defaults, pairs(&[("mlp_only_layers", "[]")]));
    // Gemma 2's null layer_types is the default: even layers slide.
    let windowed = with(GEMMA2, "sliding_window", "64");
    let imp = ok(&with(&windowed, "layer_types", "null"));
    assert_eq!(
        imp.defaults,
        pairs(&[("layer_types", "sliding_attention on even layers")])
    );
    let window = |i: usize| {
        let id = format!("layer_{i}.kv_write");
        let node = &imp.circuit.nodes()[imp.circuit.find_node(&id).unwrap()];
        imp.circuit.states()[node.writes[0]].window
    };
    assert_eq!((window(0), window(1)), (Some(64), None));
    // Elsewhere null is refused, as the strict classes refuse None for these fields.
    for (json, key, expected) in [
        (LLAMA, "vocab_size", "a whole number of at least 1"),
        (LLAMA, "num_hidden_layers", "a whole number from 1 to 4096"),
        (LLAMA, "intermediate_size", "a whole number of at least 1"),
        (LLAMA, "tie_word_embeddings", "true or false"),
        (LLAMA, "hidden_act", "a string"),
        (
            MISTRAL,
            "num_key_value_heads",
            "a whole number of at least 1",
        ),
        (QWEN3, "head_dim", "a whole number of at least 1"),
        (QWEN2, "head_dim", "a whole number of at least 1"),
        (GEMMA2, "head_dim", "a whole number of at least 1"),
        (QWEN2, "use_sliding_window", "true or false"),
        (QWEN3_MOE, "num_experts", "a whole number"),
        (
            QWEN3_MOE,
            "decoder_sparse_step",
            "a whole number of at least 1",
        ),
        (MIXTRAL, "num_local_experts", "a whole number of at least 1"),
        (DEEPSEEK_V2, "kv_lora_rank", "a whole number of at least 1"),
        (DEEPSEEK_V2, "first_k_dense_replace", "a whole number"),
    ] {
        assert_eq!(
            run(&with(json, key, "null")).unwrap_err().to_string(),
            format!("config.json: `{key}` must be {expected}, found null"),
        );
    }
}

/// A default that changes nothing is not reported: Qwen2's window settings without
/// `use_sliding_window`, the dense width of an all-sparse model.
#[test]
fn unused_defaults_are_not_reported() {
    let imp = ok(&without(QWEN2, "intermediate_size"));
    assert_eq!(imp.defaults, pairs(&[("intermediate_size", "22016")]));
    let all_sparse = with(
        &without(QWEN3_MOE, "intermediate_size"),
        "decoder_sparse_step",
        "1",
    );
    assert_eq!(ok(&all_sparse).defaults, vec![]);
    // Qwen2 with windows: sliding_window, max_window_layers and layer_types come into play.
    let on = with(QWEN2, "use_sliding_window", "true");
    assert_eq!(
        ok(&on).defaults,
        pairs(&[
            ("sliding_window", "4096"),
            ("max_window_layers", "28"),
            ("layer_types", "sliding_attention on layers >= 28"),
        ])
    );
}

/// The five shared configs give every size: none is defaulted.
#[test]
fn the_shared_configs_default_no_size() {
    for name in common::SHARED {
        let imp = ok(&common::shared(name));
        for (key, value) in &imp.defaults {
            assert!(
                !matches!(
                    key.as_str(),
                    "vocab_size"
                        | "hidden_size"
                        | "num_hidden_layers"
                        | "num_attention_heads"
                        | "intermediate_size"
                        | "num_experts"
                        | "num_local_experts"
                        | "n_routed_experts"
                        | "num_experts_per_tok"
                        | "moe_intermediate_size"
                ),
                "{name}: {key} defaulted to {value}"
            );
        }
    }
}
