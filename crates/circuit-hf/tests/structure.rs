//! The shape of the emitted circuits: the Llama circuit equals the hand-written example, every
//! circuit round-trips through circuit-ir's TOML, tied embeddings are stored once, tensor
//! names carry the true layer index, layer variants (dense-first MoE, sliding windows, Gemma 2's
//! extra norms, MLA) appear where the config puts them, and the dims and ops the families and
//! rules read are the documented ones.

use std::collections::BTreeSet;

mod common;
use common::{SHARED, shared};

use circuit_hf::{ModelType, circuit_name, from_config_json, import};
use circuit_ir::{Circuit, Op};

fn load(name: &str) -> Circuit {
    from_config_json(&shared(name), &format!("{name}/config.json")).unwrap()
}

fn build(json: &str) -> Circuit {
    from_config_json(json, "config.json").unwrap_or_else(|e| panic!("{e}"))
}

/// A small config of each model type (sizes chosen to be distinct, not realistic).
fn small(model_type: ModelType) -> String {
    let extra = match model_type {
        ModelType::Qwen3Moe => {
            r#", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 48"#
        }
        ModelType::Mixtral | ModelType::GptOss => {
            r#", "num_local_experts": 4, "num_experts_per_tok": 2"#
        }
        ModelType::Qwen3Next => {
            r#", "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2,
               "moe_intermediate_size": 48, "shared_expert_intermediate_size": 40,
               "linear_num_key_heads": 2, "linear_num_value_heads": 4,
               "linear_key_head_dim": 16, "linear_value_head_dim": 24"#
        }
        ModelType::DeepseekV2 | ModelType::DeepseekV3 | ModelType::KimiK2 => {
            r#", "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 48,
               "first_k_dense_replace": 1, "q_lora_rank": 96, "kv_lora_rank": 32,
               "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16"#
        }
        _ => "",
    };
    format!(
        r#"{{"model_type": "{model_type}", "vocab_size": 1000, "hidden_size": 128,
            "intermediate_size": 320, "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2{extra}}}"#
    )
}

fn node<'c>(c: &'c Circuit, id: &str) -> &'c circuit_ir::Node {
    let idx = c
        .find_node(id)
        .unwrap_or_else(|| panic!("no node `{id}` in {}", c.name()));
    &c.nodes()[idx]
}

fn tensor_of(c: &Circuit, node_id: &str, weight: &str) -> String {
    let n = node(c, node_id);
    let w = n.weights.iter().find(|w| w.name == weight).unwrap();
    c.tensors()[w.tensor].name.clone()
}

fn tensor_names(c: &Circuit) -> Vec<&str> {
    c.tensors().values().map(|t| t.name.as_str()).collect()
}

#[test]
fn llama_equals_the_hand_written_example() {
    let example = Circuit::from_toml(
        include_str!("../../../examples/llama-3.1-8b/circuit.toml"),
        "examples/llama-3.1-8b/circuit.toml",
    )
    .unwrap();
    let c = load("llama-3.1-8b");
    assert_eq!(c.name(), example.name());
    assert_eq!(c.nodes().len(), example.nodes().len());
    for (a, b) in c.nodes().values().zip(example.nodes().values()) {
        assert_eq!((&a.id, a.op), (&b.id, b.op));
        let ids = |c: &Circuit, e: &[circuit_ir::EdgeIdx]| -> Vec<String> {
            e.iter().map(|&e| c.edges()[e].id.clone()).collect()
        };
        assert_eq!(ids(&c, &a.inputs), ids(&example, &b.inputs), "{}", a.id);
        assert_eq!(ids(&c, &a.outputs), ids(&example, &b.outputs), "{}", a.id);
    }
    assert_eq!(c.edges().len(), example.edges().len());
    for (a, b) in c.edges().values().zip(example.edges().values()) {
        assert_eq!(
            (&a.id, a.width, a.format, a.output),
            (&b.id, b.width, b.format, b.output)
        );
        assert_eq!(a.rows.at(7), b.rows.at(7));
    }
    assert_eq!(c.tensors().len(), example.tensors().len());
    for (a, b) in c.tensors().values().zip(example.tensors().values()) {
        assert_eq!(
            (&a.name, &a.shape, a.format, a.count),
            (&b.name, &b.shape, b.format, b.count)
        );
    }
    assert_eq!(c.states().len(), example.states().len());
    for (a, b) in c.states().values().zip(example.states().values()) {
        assert_eq!(
            (&a.id, a.per_token, a.per_sequence, a.window, a.format),
            (&b.id, b.per_token, b.per_sequence, b.window, b.format)
        );
        assert_eq!(c.nodes()[a.writer].id, example.nodes()[b.writer].id);
    }
    for dim in [
        "hidden", "ffn", "heads", "kv_heads", "head_dim", "q_width", "kv_width", "layers", "vocab",
    ] {
        assert_eq!(c.dim(dim), example.dim(dim), "dim {dim}");
    }
}

#[test]
fn every_circuit_round_trips_through_toml() {
    let mut texts: Vec<(String, String)> =
        SHARED.iter().map(|n| (n.to_string(), shared(n))).collect();
    for &m in ModelType::ALL {
        texts.push((m.name().to_owned(), small(m)));
    }
    for (name, text) in texts {
        let c = from_config_json(&text, &format!("{name}/config.json")).unwrap();
        let again = Circuit::from_toml(&c.to_toml().unwrap(), "round trip").unwrap();
        assert_eq!(again, c, "{name}");
        assert_eq!(again.weight_bytes(), c.weight_bytes(), "{name}");
        assert_eq!(again.state_bytes(77, 3), c.state_bytes(77, 3), "{name}");
        // Tensor names are the checkpoint's: no placeholder left but the expert index `*`.
        for t in c.tensors().values() {
            assert!(!t.name.contains('{'), "{name}: {}", t.name);
            // Qwen3-Next's MTP block is stored under `mtp.`.
            assert!(
                t.name.starts_with("model.")
                    || t.name.starts_with("lm_head.")
                    || (name == "qwen3_next" && t.name.starts_with("mtp.")),
                "{name}: {}",
                t.name
            );
            // gpt-oss and Llama 4 store each expert projection as one tensor for all experts.
            assert_eq!(
                t.name.contains('*'),
                (t.count > 1 || t.name.contains(".experts."))
                    && name != "gpt_oss"
                    && name != "llama4_text",
                "{name}: {}",
                t.name
            );
        }
        // The logits are the one output; every attention layer holds one state, every Gated
        // DeltaNet layer (Qwen3-Next's small config: layers 0 to 2 of 4) two.
        let logits = c.find_edge("head.logits").unwrap();
        assert_eq!(c.outputs(), &[logits]);
        let linear = if name == "qwen3_next" { 3 } else { 0 };
        assert_eq!(
            c.states().len() as u64,
            c.dim("layers").unwrap() + linear,
            "{name}"
        );
    }
}

#[test]
fn tied_embeddings_are_stored_once() {
    let tied = r#"{"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896,
        "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
        "num_key_value_heads": 2, "tie_word_embeddings": true}"#;
    let c = build(tied);
    let embed = tensor_of(&c, "embed.embed", "table");
    assert_eq!(embed, "model.embed_tokens.weight");
    assert_eq!(tensor_of(&c, "head.lm_head", "w"), embed);
    let e = node(&c, "embed.embed").weights[0].tensor;
    let h = node(&c, "head.lm_head").weights[0].tensor;
    assert_eq!(e, h, "one tensor behind both nodes");
    assert_eq!(
        tensor_names(&c)
            .iter()
            .filter(|n| n.contains("embed_tokens") || n.contains("lm_head"))
            .count(),
        1
    );
    let untied = build(&tied.replace(
        r#""tie_word_embeddings": true"#,
        r#""tie_word_embeddings": false"#,
    ));
    assert_eq!(
        untied.weight_bytes() - c.weight_bytes(),
        151_936 * 896 * 2,
        "untying adds exactly one vocab x hidden bf16 tensor"
    );
    assert!(tensor_names(&untied).contains(&"lm_head.weight"));
    // Gemma 2 ties by default.
    let gemma = build(&small(ModelType::Gemma2));
    assert!(!tensor_names(&gemma).contains(&"lm_head.weight"));
}

#[test]
fn dense_first_moe_keeps_the_true_layer_index() {
    let c = load("deepseek-v2-lite");
    // Layers differ (0 is dense, 1-26 are sparse): one block per layer.
    assert!(c.find_node("layer.0.attn_norm").is_none());
    assert_eq!(
        tensor_of(&c, "layer_0.gate_proj", "w"),
        "model.layers.0.mlp.gate_proj.weight"
    );
    assert!(c.find_node("layer_0.router").is_none());
    assert_eq!(
        tensor_of(&c, "layer_1.router", "w"),
        "model.layers.1.mlp.gate.weight"
    );
    assert_eq!(
        tensor_of(&c, "layer_26.experts_gate_up", "w_up"),
        "model.layers.26.mlp.experts.*.up_proj.weight"
    );
    assert_eq!(
        tensor_of(&c, "layer_26.shared_down_proj", "w"),
        "model.layers.26.mlp.shared_experts.down_proj.weight"
    );
    // Every layer tensor sits in the block of its own layer.
    for n in c.nodes().values() {
        let block = n.id.split('.').next().unwrap();
        for w in &n.weights {
            let t = &c.tensors()[w.tensor].name;
            if let Some(rest) = t.strip_prefix("model.layers.") {
                let layer = rest.split('.').next().unwrap();
                assert_eq!(block, format!("layer_{layer}"), "{t} in {}", n.id);
            }
        }
    }
    let experts = &c.tensors()[node(&c, "layer_1.experts_down").weights[0].tensor];
    assert_eq!(
        (experts.count, experts.shape.as_slice()),
        (64, &[2048u64, 1408][..])
    );
    // Uniform models keep one repeated block, as the example does.
    let q = load("qwen3-30b-a3b");
    assert_eq!(
        tensor_of(&q, "layer.47.experts_down", "w"),
        "model.layers.47.mlp.experts.*.down_proj.weight"
    );
}

#[test]
fn expert_edges_hold_n_times_experts_per_token_rows() {
    let c = load("qwen3-30b-a3b");
    let edge = |id: &str| &c.edges()[c.find_edge(id).unwrap()];
    // 8 experts per token, 768 wide, gate and up together, bf16.
    assert_eq!(
        edge("layer.3.expert_h").bytes_at(5).unwrap(),
        5 * 8 * 2 * 768 * 2
    );
    assert_eq!(
        edge("layer.3.expert_out").bytes_at(5).unwrap(),
        5 * 8 * 2048 * 2
    );
    assert_eq!(edge("layer.3.topk_ids").bytes_at(5).unwrap(), 5 * 8 * 4);
    assert_eq!(
        edge("layer.3.router_logits").bytes_at(5).unwrap(),
        5 * 128 * 2
    );
    assert_eq!(edge("layer.3.moe_out").bytes_at(5).unwrap(), 5 * 2048 * 2);
    // Qwen3 per-head norms: head_dim elements each.
    let qn = &c.tensors()[node(&c, "layer.0.q_norm").weights[0].tensor];
    assert_eq!(
        (qn.name.as_str(), qn.shape.as_slice()),
        ("model.layers.0.self_attn.q_norm.weight", &[128u64][..])
    );
}

#[test]
fn latent_attention_caches_the_compressed_latent() {
    let c = load("deepseek-v2-lite");
    let kv = &c.states()[node(&c, "layer_3.kv_write").writes[0]];
    assert_eq!((kv.per_token, kv.window), (512 + 64, None));
    // kv_b_proj is used twice (query absorption, value up-projection) and stored once.
    assert_eq!(
        node(&c, "layer_3.q_absorb").weights[0].tensor,
        node(&c, "layer_3.v_up").weights[0].tensor
    );
    let edge = |id: &str| c.edges()[c.find_edge(id).unwrap()].width;
    assert_eq!(edge("layer_3.kv_a"), 576);
    assert_eq!(edge("layer_3.q"), 16 * 192);
    assert_eq!(edge("layer_3.q_lat"), 16 * 512);
    assert_eq!(edge("layer_3.attn_lat"), 16 * 512);
    assert_eq!(edge("layer_3.attn"), 16 * 128);
    // Without q LoRA there is one q_proj; with it, q_a_proj, q_a_layernorm and q_b_proj.
    assert!(c.find_node("layer_3.q_proj").is_some());
    let lora = build(&small(ModelType::DeepseekV2));
    assert!(lora.find_node("layer_3.q_proj").is_none());
    assert_eq!(
        tensor_of(&lora, "layer_3.q_a_norm", "w"),
        "model.layers.3.self_attn.q_a_layernorm.weight"
    );
}

#[test]
fn gemma_2_has_four_norms_a_scaled_embedding_and_capped_logits() {
    let c = build(&small(ModelType::Gemma2));
    for (node_id, tensor) in [
        ("layer_1.attn_norm", "model.layers.1.input_layernorm.weight"),
        (
            "layer_1.post_attn_norm",
            "model.layers.1.post_attention_layernorm.weight",
        ),
        (
            "layer_1.mlp_norm",
            "model.layers.1.pre_feedforward_layernorm.weight",
        ),
        (
            "layer_1.post_mlp_norm",
            "model.layers.1.post_feedforward_layernorm.weight",
        ),
    ] {
        assert_eq!(tensor_of(&c, node_id, "w"), tensor);
    }
    assert_eq!(node(&c, "embed.scale").op, Op::Scale);
    assert_eq!(node(&c, "head.softcap").op, Op::Softcap);
    assert_eq!(node(&c, "layer_0.act").op, Op::GeluMul);
    // Even layers slide (transformers' default layer_types), odd ones attend to everything.
    let window = |id: &str| c.states()[node(&c, id).writes[0]].window;
    assert_eq!(window("layer_0.kv_write"), Some(4096));
    assert_eq!(window("layer_1.kv_write"), None);
    assert_eq!(window("layer_2.kv_write"), Some(4096));
    // No final soft-capping: no softcap node; explicit layer_types win.
    let plain = build(&small(ModelType::Gemma2).replace(
        r#""model_type": "gemma2","#,
        r#""model_type": "gemma2", "final_logit_softcapping": null,
           "layer_types": ["full_attention", "full_attention", "sliding_attention", "full_attention"],"#,
    ));
    assert!(plain.find_node("head.softcap").is_none());
    let window = |id: &str| plain.states()[node(&plain, id).writes[0]].window;
    assert_eq!(window("layer_0.kv_write"), None);
    assert_eq!(window("layer_2.kv_write"), Some(4096));
}

#[test]
fn sliding_windows_follow_transformers_rules() {
    let with = |json: &str, extra: &str| build(&json.replacen('{', &format!("{{{extra}"), 1));
    let windows =
        |c: &Circuit| -> Vec<Option<u64>> { c.states().values().map(|s| s.window).collect() };
    // Mistral: 4096 when absent, none when null, every layer.
    let mistral = small(ModelType::Mistral);
    assert_eq!(windows(&build(&mistral)), vec![Some(4096); 4]);
    assert_eq!(
        windows(&with(&mistral, r#""sliding_window": null,"#)),
        vec![None; 4]
    );
    // Qwen2: off unless use_sliding_window; then layers >= max_window_layers slide.
    let qwen2 = small(ModelType::Qwen2);
    assert_eq!(
        windows(&with(&qwen2, r#""sliding_window": 512,"#)),
        vec![None; 4]
    );
    let on = with(
        &qwen2,
        r#""use_sliding_window": true, "sliding_window": 512, "max_window_layers": 2,"#,
    );
    assert_eq!(windows(&on), vec![None, None, Some(512), Some(512)]);
    // One sliding layer of 8 x 2 x 16 elements per token: tokens held = min(kv, 512 x seqs).
    let per_layer = 2 * 2 * 16 * 2;
    assert_eq!(
        on.state_bytes(2000, 1).unwrap(),
        per_layer * (2 * 2000 + 2 * 512)
    );
    assert_eq!(
        on.state_bytes(2000, 3).unwrap(),
        per_layer * (2 * 2000 + 2 * 1536)
    );
    assert_eq!(on.state_bytes(2000, 0).unwrap(), per_layer * (2 * 2000));
    // Qwen3-MoE slides every layer when asked.
    let moe = with(
        &small(ModelType::Qwen3Moe),
        r#""use_sliding_window": true, "sliding_window": 64,"#,
    );
    assert_eq!(windows(&moe), vec![Some(64); 4]);
    // Mixtral and Phi-3 default to no window.
    assert_eq!(windows(&build(&small(ModelType::Mixtral))), vec![None; 4]);
    assert_eq!(windows(&build(&small(ModelType::Phi3))), vec![None; 4]);
}

#[test]
fn sparse_layers_follow_the_config() {
    let moe = small(ModelType::Qwen3Moe);
    let with = |extra: &str| build(&moe.replacen('{', &format!("{{{extra}"), 1));
    let sparse = |c: &Circuit| -> Vec<bool> {
        (0..4)
            .map(|i| {
                c.find_node(&format!("layer_{i}.router")).is_some()
                    || c.find_node(&format!("layer.{i}.router")).is_some()
            })
            .collect()
    };
    assert_eq!(sparse(&build(&moe)), vec![true; 4]);
    let stepped = with(r#""decoder_sparse_step": 2,"#);
    assert_eq!(sparse(&stepped), vec![false, true, false, true]);
    assert_eq!(
        tensor_of(&stepped, "layer_0.down_proj", "w"),
        "model.layers.0.mlp.down_proj.weight"
    );
    assert_eq!(stepped.dim("ffn"), Some(320));
    let only = with(r#""decoder_sparse_step": 2, "mlp_only_layers": [3],"#);
    assert_eq!(sparse(&only), vec![false, true, false, false]);
    let none = build(&moe.replace(r#""num_experts": 8"#, r#""num_experts": 0"#));
    assert_eq!(sparse(&none), vec![false; 4]);
    assert_eq!(none.dim("experts"), None);
    // DeepSeek: without routed experts every layer is dense, one repeated block.
    let ds = small(ModelType::DeepseekV2)
        .replace(r#""n_routed_experts": 8"#, r#""n_routed_experts": null"#);
    let dense = build(&ds);
    assert!(dense.find_node("layer.2.gate_proj").is_some());
    assert_eq!(dense.dim("experts"), None);
    // DeepSeek: moe_layer_freq 2 after one dense layer: layers 2 sparse, 1 and 3 dense.
    let freq = build(&small(ModelType::DeepseekV2).replacen('{', r#"{"moe_layer_freq": 2,"#, 1));
    assert_eq!(sparse(&freq), vec![false, false, true, false]);
}

#[test]
fn biases_add_exactly_their_elements() {
    let base = small(ModelType::Llama);
    let plain = build(&base);
    let biased = build(&base.replacen('{', r#"{"attention_bias": true, "mlp_bias": true,"#, 1));
    // Per layer: q (8 x 16) + k, v (2 x 16 each) + o (128), and gate, up (320 each) + down (128).
    let per_layer = (128 + 32 + 32 + 128) + (320 + 320 + 128);
    assert_eq!(
        biased.weight_bytes() - plain.weight_bytes(),
        4 * per_layer * 2
    );
    assert_eq!(
        tensor_of(&biased, "layer.2.o_proj", "b"),
        "model.layers.2.self_attn.o_proj.bias"
    );
    // Qwen2: q/k/v biases always, o_proj never.
    let q = build(&small(ModelType::Qwen2));
    assert_eq!(node(&q, "layer.0.q_proj").weights.len(), 2);
    assert_eq!(node(&q, "layer.0.o_proj").weights.len(), 1);
}

/// The ops each model type emits: what the families and rules must cover.
#[test]
fn ops_per_model_type() {
    let gqa = [
        "embed",
        "rms_norm",
        "linear",
        "rope",
        "kv_write",
        "attention",
        "residual_add",
        "lm_head",
    ];
    let expect = |m: ModelType| -> BTreeSet<&str> {
        let mut ops: BTreeSet<&str> = gqa.into_iter().collect();
        let more: &[&str] = match m {
            ModelType::Llama | ModelType::Mistral | ModelType::Qwen2 | ModelType::Qwen3 => {
                &["silu_mul"]
            }
            ModelType::Granite => &["silu_mul", "scale"],
            ModelType::Gemma => &["gelu_mul", "scale"],
            // Phi's LayerNorms replace the RMS norms (removed below).
            ModelType::Phi => &["gelu", "layer_norm"],
            ModelType::Phi3 => &["silu_mul", "split"],
            ModelType::Gemma2 => &["gelu_mul", "scale", "softcap"],
            ModelType::Gemma3Text => &["gelu_mul", "scale"],
            // The shared expert's gate: a one-wide `router` product and a `sigmoid_mul`.
            ModelType::Qwen2Moe => &[
                "silu_mul",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
                "sigmoid_mul",
            ],
            ModelType::Mixtral | ModelType::Qwen3Moe => &[
                "silu_mul",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
            ],
            ModelType::DeepseekV2 => &[
                "silu_mul",
                "split",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
            ],
            ModelType::GptOss => &[
                "router",
                "top_k",
                "expert_linear",
                "clamped_swiglu",
                "moe_combine",
            ],
            ModelType::Glm4Moe => &[
                "silu_mul",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
                "weights_only",
            ],
            ModelType::DeepseekV3 | ModelType::KimiK2 => &[
                "silu_mul",
                "split",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
                "weights_only",
            ],
            // `scale`: the NoPE layers' temperature (every fourth layer by default).
            ModelType::Llama4Text => &[
                "silu_mul",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
                "scale",
            ],
            ModelType::Qwen3Next => &[
                "silu_mul",
                "split",
                "router",
                "top_k",
                "expert_linear",
                "moe_combine",
                "sigmoid_mul",
                "causal_conv1d",
                "gated_delta_net",
                "gated_rms_norm",
                "weights_only",
            ],
            _ => unreachable!(),
        };
        ops.extend(more);
        if m == ModelType::Phi {
            ops.remove("rms_norm");
        }
        ops
    };
    for &m in ModelType::ALL {
        let c = build(&small(m));
        let ops: BTreeSet<&str> = c.nodes().values().map(|n| n.op.name()).collect();
        assert_eq!(ops, expect(m), "{m}");
    }
}

/// The dims every circuit defines, for family and rule expressions.
#[test]
fn dims_per_model_type() {
    for &m in ModelType::ALL {
        let c = build(&small(m));
        for dim in [
            "hidden",
            "heads",
            "kv_heads",
            "head_dim",
            "v_head_dim",
            "layers",
            "vocab",
            "q_width",
        ] {
            assert!(c.dim(dim).is_some(), "{m}: {dim}");
        }
        let mla = matches!(
            m,
            ModelType::DeepseekV2 | ModelType::DeepseekV3 | ModelType::KimiK2
        );
        let sparse = mla
            || matches!(
                m,
                ModelType::Mixtral
                    | ModelType::Qwen3Moe
                    | ModelType::Qwen2Moe
                    | ModelType::GptOss
                    | ModelType::Glm4Moe
                    | ModelType::Llama4Text
                    | ModelType::Qwen3Next
            );
        for dim in ["experts", "experts_per_tok", "moe_ffn"] {
            assert_eq!(c.dim(dim).is_some(), sparse, "{m}: {dim}");
        }
        // Llama 4's `moe_layers` default to every layer.
        let dense = !matches!(
            m,
            ModelType::Mixtral
                | ModelType::Qwen3Moe
                | ModelType::Qwen2Moe
                | ModelType::GptOss
                | ModelType::Llama4Text
                | ModelType::Qwen3Next
        );
        assert_eq!(c.dim("ffn").is_some(), dense, "{m}: ffn");
        assert_eq!(c.dim("kv_width").is_some(), !mla, "{m}: kv_width");
    }
    let ds = load("deepseek-v2-lite");
    for (dim, value) in [
        ("kv_heads", 1),
        ("head_dim", 192),
        ("v_head_dim", 128),
        ("kv_lora_rank", 512),
        ("kv_latent", 576),
        ("qk_rope_head_dim", 64),
        ("qk_nope_head_dim", 128),
        ("q_width", 3072),
        ("o_width", 2048),
        ("kv_b_width", 4096),
        ("shared_ffn", 2816),
        ("ffn", 10944),
    ] {
        assert_eq!(ds.dim(dim), Some(value), "{dim}");
    }
    assert_eq!(ds.dim("q_lora_rank"), None);
}

#[test]
fn the_report_names_keys_read_ignored_and_defaulted() {
    let text = shared("llama-3.1-8b");
    let imp = import(&text, "llama-3.1-8b/config.json").unwrap();
    assert_eq!(imp.model_type, ModelType::Llama);
    for key in [
        "model_type",
        "hidden_size",
        "num_key_value_heads",
        "attention_bias",
        "mlp_bias",
        // Read for an engine's default max model length, though no byte depends on it.
        "max_position_embeddings",
        "rope_scaling",
    ] {
        assert!(imp.keys_read.iter().any(|k| k == key), "{key}");
    }
    assert_eq!(imp.facts.max_position_embeddings, 131_072);
    for key in ["rope_theta", "rms_norm_eps"] {
        assert!(imp.keys_ignored.iter().any(|k| k == key), "{key}");
    }
    assert!(
        imp.defaults
            .contains(&("head_dim".to_owned(), "128".to_owned()))
    );
    assert!(
        imp.defaults
            .contains(&("hidden_act".to_owned(), "silu".to_owned()))
    );
    // Qwen3-30B-A3B: every layer is sparse, so intermediate_size has no effect.
    let imp = import(&shared("qwen3-30b-a3b"), "x/config.json").unwrap();
    assert!(imp.keys_ignored.iter().any(|k| k == "intermediate_size"));
    assert!(imp.keys_read.iter().any(|k| k == "moe_intermediate_size"));
}

#[test]
fn circuit_names_come_from_the_file() {
    let m = ModelType::Llama;
    assert_eq!(
        circuit_name("/x/Llama-3.1-8B/config.json", m),
        "Llama-3.1-8B"
    );
    assert_eq!(circuit_name("config.json", m), "llama");
    assert_eq!(circuit_name("llama-small.json", m), "llama-small");
    assert_eq!(circuit_name("", m), "llama");
}

#[test]
fn qwen3_next_mixes_delta_net_and_gated_attention_layers() {
    let base = small(ModelType::Qwen3Next);
    let c = build(&base);
    // full_attention_interval 4 (the default): layers 0 to 2 are Gated DeltaNet, 3 attends.
    for i in 0..3 {
        assert!(c.find_node(&format!("layer_{i}.delta_rule")).is_some());
        assert!(c.find_node(&format!("layer_{i}.attention")).is_none());
    }
    assert!(c.find_node("layer_3.attention").is_some());
    assert_eq!(
        tensor_of(&c, "layer_0.conv", "w"),
        "model.layers.0.linear_attn.conv1d.weight"
    );
    assert_eq!(
        tensor_of(&c, "layer_0.gated_norm", "w"),
        "model.layers.0.linear_attn.norm.weight"
    );
    assert_eq!(
        tensor_of(&c, "layer_0.delta_rule", "a_log"),
        "model.layers.0.linear_attn.A_log"
    );
    let edge = |id: &str| c.edges()[c.find_edge(id).unwrap()].width;
    // key_dim 2 x 16, value_dim 4 x 24: qkvz 2 x 32 + 2 x 96, conv_dim 2 x 32 + 96.
    assert_eq!(edge("layer_0.qkvz"), 256);
    assert_eq!(edge("layer_0.qkv"), 160);
    assert_eq!(edge("layer_0.z"), 96);
    assert_eq!(edge("layer_0.ba"), 8);
    // The full-attention q_proj yields the query and the output gate, 8 heads x 16 each.
    assert_eq!(edge("layer_3.q_gate"), 2 * 8 * 16);
    assert_eq!(node(&c, "layer_3.output_gate").op, Op::SigmoidMul);
    assert_eq!(edge("layer_3.shared_logit"), 1);
    assert_eq!(
        tensor_of(&c, "layer_3.shared_expert_gate", "w"),
        "model.layers.3.mlp.shared_expert_gate.weight"
    );
    assert_eq!(c.dim("shared_ffn"), Some(40));
    // Per sequence: conv (4 - 1) x 160 and recurrent 4 x 24 x 16 elements, bf16, on each of
    // the 3 DeltaNet layers; per token: the one attention layer's 2 x 2 x 16 bf16.
    let state = |id: &str| c.states().values().find(|s| s.id == id).unwrap();
    assert_eq!(
        (
            state("layer_0.conv_state").kind,
            state("layer_0.conv_state").per_sequence
        ),
        (circuit_ir::StateKind::PerSequence, 480)
    );
    assert_eq!(state("layer_2.recurrent").per_sequence, 1536);
    assert_eq!(c.kv_bytes_per_token().unwrap(), 2 * 2 * 16 * 2);
    assert_eq!(c.fixed_state_bytes(1).unwrap(), 3 * (480 + 1536) * 2);
    // One MTP layer under `mtp.`, full attention whatever the decoder's layer types.
    assert!(tensor_names(&c).contains(&"mtp.layers.0.self_attn.q_proj.weight"));
    assert!(tensor_names(&c).contains(&"mtp.fc.weight"));

    let with = |extra: &str| build(&base.replacen('{', &format!("{{{extra}"), 1));
    let typed = with(
        r#""layer_types": ["full_attention", "linear_attention", "full_attention", "linear_attention"],"#,
    );
    assert!(typed.find_node("layer_0.attention").is_some());
    assert!(typed.find_node("layer_1.delta_rule").is_some());
    assert_eq!(typed.kv_bytes_per_token().unwrap(), 2 * 2 * 2 * 16 * 2);
    let every_other = with(r#""full_attention_interval": 2,"#);
    assert!(every_other.find_node("layer_1.attention").is_some());
    assert!(every_other.find_node("layer_2.delta_rule").is_some());
    // All full attention: no Gated DeltaNet and no per-sequence state.
    let full = with(r#""full_attention_interval": 1,"#);
    assert_eq!(full.fixed_state_bytes(5).unwrap(), 0);
    assert_eq!(full.dim("linear_conv_dim"), None);
    // mlp_only_layers [0]: layer 0 and MTP layer 0 (sparse as layer 0 is) are dense.
    let dense = with(r#""mlp_only_layers": [0],"#);
    assert!(dense.find_node("layer_0.down_proj").is_some());
    assert!(tensor_names(&dense).contains(&"mtp.layers.0.mlp.down_proj.weight"));
    assert!(dense.find_node("layer_1.router").is_some());
    // A kernel of 1 keeps no convolution state.
    let k1 = with(r#""linear_conv_kernel_dim": 1,"#);
    assert_eq!(k1.fixed_state_bytes(1).unwrap(), 3 * 1536 * 2);
}

/// A Qwen3-Next of other sizes, by hand from `modeling_qwen3_next.py` and vLLM's
/// `qwen3_next_mtp.py` (elements, bf16):
///   embed + lm_head + norm                       2 V h + h
///   full attention  q 2 H d h, k and v K d h each, o h H d, q_norm and k_norm d each
///   Gated DeltaNet  in_proj_qkvz (2 kh kd + 2 vh vd) h, in_proj_ba 2 vh h,
///                   conv1d (2 kh kd + vh vd) x kernel, dt_bias and A_log vh each,
///                   norm vd, out_proj h vh vd
///   sparse MLP      gate E h, experts E x 3 f h, shared expert 3 s h, shared_expert_gate h
///   per layer       + 2 h (input and post-attention norms)
///   MTP             fc 2 h h, 3 norms h, and one full-attention sparse layer
#[test]
fn qwen3_next_weights_follow_the_formula() {
    let (v, h, heads, kv, d) = (1000u64, 128, 8, 2, 16);
    let (kh, vh, kd, vd, kernel) = (2u64, 4, 16, 24, 4);
    let (e, f, s) = (8u64, 48, 40);
    let attn = 2 * heads * d * h + 2 * kv * d * h + h * heads * d + 2 * d;
    let gdn = (2 * kh * kd + 2 * vh * vd) * h
        + 2 * vh * h
        + (2 * kh * kd + vh * vd) * kernel
        + 2 * vh
        + vd
        + h * vh * vd;
    let moe = e * h + e * 3 * f * h + 3 * s * h + h;
    let full_layer = attn + 2 * h + moe;
    let linear_layer = gdn + 2 * h + moe;
    let mtp = 2 * h * h + 3 * h + full_layer;
    let total = 2 * v * h + h + 3 * linear_layer + full_layer + mtp;
    let c = build(&small(ModelType::Qwen3Next));
    assert_eq!(c.weight_bytes(), 2 * total);
    // Without the MTP layer, and with two (one fc and three norms for all).
    let none =
        build(&small(ModelType::Qwen3Next).replacen('{', r#"{"num_nextn_predict_layers": 0,"#, 1));
    assert_eq!(none.weight_bytes(), 2 * (total - mtp));
    let two =
        build(&small(ModelType::Qwen3Next).replacen('{', r#"{"num_nextn_predict_layers": 2,"#, 1));
    assert_eq!(two.weight_bytes(), 2 * (total + full_layer));
}
