//! Emitting the circuit of an [`Arch`] through circuit-ir's [`CircuitBuilder`]: the dims, the
//! `tokens` input, the blocks `embed`, the decoder layers and `head`, and the `head.logits`
//! output.
//!
//! Invariants: every weight names its Hugging Face tensor (`*` in an expert tensor name stands
//! for the expert index, one tensor per expert, `count = experts`); a tied `lm_head` names
//! `model.embed_tokens.weight`, so circuit-ir stores it once; when all layers are alike they
//! form one repeated block `layer` (ids `layer.<i>.<id>`, tensor names with `{i}`), otherwise
//! each layer is its own block `layer_<i>` (ids `layer_<i>.<id>`), so tensor names always carry
//! the true layer index; every attention layer holds one KV state written by `kv_write` and
//! read by `attention`, with `window = "window"` on sliding layers; every Gated DeltaNet layer
//! holds two per-sequence states instead (the convolution's last inputs, written by `conv`,
//! and the recurrent state, written by `delta_rule`), so the KV bytes per token stay the
//! attention layers' alone. circuit-ir validates the result.

use circuit_ir::CircuitBuilder;
use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, StateDecl, WeightDecl};

use crate::arch::{Arch, Attn, Layer, MoeNames, MtpNames};
use crate::error::HfError;
use crate::model::ModelType;
use crate::quant::{Built, Storage};
use crate::vision::{Held, VisionTower};

/// Builds the circuit named `name`, stored as `storage` says (dtype, quantization).
pub(crate) fn circuit(arch: &Arch, name: &str, storage: &Storage<'_>) -> Result<Built, HfError> {
    let whole = Stage {
        layers: (0, arch.layers.len()),
        local_experts: None,
    };
    stage_circuit(arch, name, storage, &whole)
}

/// The part of the model one pipeline stage runs: decoder layers `layers.0..layers.1` (the
/// embedding with the first, the final norm and head with the last; a stage without them
/// reads `x` and writes its last layer's `y`), holding `local_experts` routed experts per
/// sparse layer when set (expert parallelism; the router still scores all `experts`).
pub(crate) struct Stage {
    pub layers: (usize, usize),
    pub local_experts: Option<u64>,
}

/// Builds one stage's circuit (see [`Stage`]); [`circuit`] is the whole model's.
pub(crate) fn stage_circuit(
    arch: &Arch,
    name: &str,
    storage: &Storage<'_>,
    stage: &Stage,
) -> Result<Built, HfError> {
    let mut b = CircuitBuilder::new(name);
    dims(&mut b, arch);
    if arch.moe.is_some() {
        match stage.local_experts {
            Some(n) => b.dim("local_experts", n),
            None => b.dim("local_experts", "experts"),
        };
    }
    let (start, end) = stage.layers;
    let first_stage = start == 0;
    let last_stage = end == arch.layers.len();
    if first_stage {
        b.input("tokens", "n", "1", "i32");
        b.block(embed(arch));
    } else {
        b.input("x", "n", "hidden", "bf16");
    }
    let kinds = &arch.layers[start..end];
    let first = kinds[0];
    // A stage's layers are each their own block so tensor names keep the true index.
    if first_stage && last_stage && kinds.iter().all(|&l| l == first) {
        let block = BlockDecl::repeated("layer", "layers").stream(Some("x"), Some("y"));
        b.block(layer(arch, block, "model.layers.{i}", first));
    } else {
        for (i, &l) in kinds.iter().enumerate() {
            let i = start + i;
            let block = BlockDecl::once(format!("layer_{i}")).stream(Some("x"), Some("y"));
            b.block(layer(arch, block, &format!("model.layers.{i}"), l));
        }
    }
    if last_stage {
        b.block(head(arch));
        // The multi-token-prediction layers follow the head, on the last stage.
        match arch.mtp_names {
            MtpNames::DeepSeek => {
                let base = arch.layers.len();
                for (j, &l) in arch.mtp.iter().enumerate() {
                    b.block(mtp(arch, base + j, l));
                }
            }
            MtpNames::Qwen3Next => {
                if !arch.mtp.is_empty() {
                    b.block(qwen3_next_mtp_shared());
                }
                for (j, &l) in arch.mtp.iter().enumerate() {
                    b.block(qwen3_next_mtp(arch, j, l));
                }
            }
        }
        b.output("head.logits");
    } else {
        b.output(format!("layer_{}.y", end - 1));
    }
    let mut decl = b.decl().clone();
    let (from, to) = arch.tensor_rename;
    if from != to {
        for w in decl
            .blocks
            .iter_mut()
            .flat_map(|b| &mut b.nodes)
            .flat_map(|n| &mut n.weights)
        {
            if let Some(t) = &mut w.tensor
                && let Some(rest) = t.strip_prefix(from)
            {
                *t = format!("{to}{rest}");
            }
        }
    }
    if arch.tp > 1 {
        collectives(&mut decl, arch.tp);
    }
    // Every pipeline stage holds the vision tower: vLLM's multimodal wrappers build it
    // whatever the stage (mllama4.py, gemma3_mm.py, mistral3.py, llava.py: no PP condition
    // around the tower) and load its weights on every rank.
    if let Some(tower) = &arch.vision {
        decl.blocks.extend(vision(tower));
    }
    storage.build(decl, arch.tp)
}

/// Whether node `id` of `op` is a row-parallel projection at TP > 1 (vLLM's
/// `RowParallelLinear`: its input features are split over the ranks, its output reduced): the
/// attention's `o_proj` (Phi's `dense`), the MLP's `down_proj` (Phi's `fc2`), the DeltaNet's
/// `out_proj`. The shared experts' `down_proj` is one too, reduced with the routed experts.
pub(crate) fn row_parallel(op: &str, id: &str) -> bool {
    op == "linear"
        && matches!(
            id,
            "o_proj" | "down_proj" | "fc2" | "out_proj" | "shared_down_proj"
        )
}

/// The collectives vLLM runs between a tensor-parallel rank's shares (`linear.py`,
/// `vocab_parallel_embedding.py`, `fused_moe/layer.py`, `logits_processor.py`): an
/// `all_reduce` after every row-parallel output (the attention's `o_proj` and Phi's `dense`,
/// the MLP's `down_proj` and Phi's `fc2`, the DeltaNet's `out_proj`, the MoE's combined
/// output, whose shared experts skip their own reduce) and after the vocab-parallel
/// embedding, and an `all_gather` of the vocab-parallel logits. Each writes a new tensor: the
/// producer's output is renamed `<edge>_partial` and the collective writes the edge under its
/// old name, so the readers are unchanged and both tensors are planned.
fn collectives(decl: &mut circuit_ir::decl::CircuitDecl, tp: u64) {
    for block in &mut decl.blocks {
        let mut nodes = Vec::with_capacity(block.nodes.len());
        for mut node in std::mem::take(&mut block.nodes) {
            let op = match (node.op.as_str(), node.id.as_str()) {
                (op, id) if row_parallel(op, id) && id != "shared_down_proj" => "all_reduce",
                ("embed", _) | ("moe_combine", _) => "all_reduce",
                ("lm_head", _) => "all_gather",
                _ => {
                    nodes.push(node);
                    continue;
                }
            };
            let [output] = node.outputs.as_mut_slice() else {
                unreachable!("the nodes joined by a collective write one edge")
            };
            let edge = output.edge.clone();
            output.edge = format!("{edge}_partial");
            let partial = output.edge.clone();
            let mut joined = OutDecl::new(
                edge,
                output.rows.clone(),
                output.width.clone(),
                output.format.clone(),
            );
            if op == "all_gather" {
                // The padded vocabulary of every rank; the logits processor then views the
                // unpadded part, which copies nothing.
                joined.width = format!("({}) * {tp}", output.width).into();
            }
            let collective = NodeDecl::new(format!("{}_{op}", node.id), op)
                .reads([partial])
                .writes(joined);
            nodes.push(node);
            nodes.push(collective);
        }
        block.nodes = nodes;
    }
}

/// The vision tower's blocks: `vision` holding the tensors stored once and `vision_layer`,
/// repeated per encoder layer, each a `weights_only` node whose weights are named
/// `<op>__<tensor>` (see [`HELD_OP_SEPARATOR`]).
fn vision(tower: &VisionTower) -> [BlockDecl; 2] {
    let node = |held: &[Held]| {
        held.iter()
            .fold(NodeDecl::new("weights", "weights_only"), |node, h| {
                let local = h
                    .tensor
                    .replace("{i}.", "")
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
                let shape: Vec<String> = h.shape.iter().map(u64::to_string).collect();
                node.weight(
                    WeightDecl::new(format!("{}{HELD_OP_SEPARATOR}{local}", h.op), shape, "bf16")
                        .tensor(h.tensor.clone()),
                )
            })
    };
    [
        BlockDecl::once("vision").node(node(&tower.once)),
        BlockDecl::repeated("vision_layer", tower.layers.to_string()).node(node(&tower.layer)),
    ]
}

fn dims(b: &mut CircuitBuilder, arch: &Arch) {
    b.dim("hidden", arch.hidden);
    b.dim("heads", arch.heads);
    match arch.attn {
        Attn::Gqa {
            kv_heads,
            head_dim,
            fused_qkv,
            ..
        } => {
            b.dim("kv_heads", kv_heads)
                .dim("head_dim", head_dim)
                .dim("v_head_dim", "head_dim");
            b.dim("layers", arch.layers.len() as u64)
                .dim("vocab", arch.vocab)
                .dim("q_width", "heads * head_dim")
                .dim("kv_width", "kv_heads * head_dim");
            if fused_qkv {
                b.dim("qkv_width", "q_width + 2 * kv_width");
            }
        }
        Attn::Mla {
            q_lora_rank,
            kv_lora_rank,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            ..
        } => {
            // The compressed latent is one key/value "head" shared by all query heads.
            b.dim("kv_heads", 1)
                .dim("qk_nope_head_dim", qk_nope_head_dim)
                .dim("qk_rope_head_dim", qk_rope_head_dim)
                .dim("head_dim", "qk_nope_head_dim + qk_rope_head_dim")
                .dim("v_head_dim", v_head_dim);
            b.dim("layers", arch.layers.len() as u64)
                .dim("vocab", arch.vocab);
            if let Some(r) = q_lora_rank {
                b.dim("q_lora_rank", r);
            }
            b.dim("kv_lora_rank", kv_lora_rank)
                .dim("kv_latent", "kv_lora_rank + qk_rope_head_dim")
                .dim("q_width", "heads * head_dim")
                .dim("o_width", "heads * v_head_dim")
                .dim("kv_b_width", "heads * (qk_nope_head_dim + v_head_dim)");
        }
    }
    if let Some(d) = arch.dense {
        b.dim("ffn", d.ffn);
    }
    if let Some(m) = arch.moe {
        b.dim("experts", m.experts)
            .dim("experts_per_tok", m.top_k)
            .dim("moe_ffn", m.ffn);
        if m.shared_experts > 0 {
            b.dim("shared_experts", m.shared_experts);
            match arch.shared_ffn {
                Some(w) => b.dim("shared_ffn", w),
                None => b.dim("shared_ffn", "shared_experts * moe_ffn"),
            };
        }
        if let Some(w) = m.gated_shared {
            b.dim("shared_ffn", w);
        }
    }
    if let Some(d) = arch.delta_net {
        b.dim("linear_k_heads", d.k_heads)
            .dim("linear_v_heads", d.v_heads)
            .dim("linear_k_head_dim", d.k_head_dim)
            .dim("linear_v_head_dim", d.v_head_dim)
            .dim("linear_conv_kernel", d.conv_kernel)
            .dim("linear_key_dim", "linear_k_heads * linear_k_head_dim")
            .dim("linear_value_dim", "linear_v_heads * linear_v_head_dim")
            .dim("linear_conv_dim", "2 * linear_key_dim + linear_value_dim")
            .dim(
                "linear_qkvz_width",
                "2 * linear_key_dim + 2 * linear_value_dim",
            )
            .dim("linear_ba_width", "2 * linear_v_heads");
    }
    if let Some(w) = arch.window {
        b.dim("window", w);
    }
    if arch.mtp_names == MtpNames::Qwen3Next && !arch.mtp.is_empty() {
        b.dim("mtp_fc_rows", arch.mtp_fc_rows);
    }
    // A fact an engine reads of the model: its vision tower hands deepstack features to the
    // first layers (Qwen3-VL).
    if let Some(t) = &arch.vision
        && t.deepstack_layers > 0
    {
        b.dim("deepstack_layers", t.deepstack_layers);
    }
}

/// A `rows = n` bf16 output edge.
fn out(edge: &str, width: &str) -> OutDecl {
    OutDecl::new(edge, "n", width, "bf16")
}

/// An RMS norm with a weight of `width` elements, `<tensor>.weight`.
fn norm(
    id: &str,
    input: &str,
    edge: &str,
    edge_width: &str,
    width: &str,
    tensor: &str,
) -> NodeDecl {
    NodeDecl::new(id, "rms_norm")
        .reads([input])
        .writes(out(edge, edge_width))
        .weight(WeightDecl::new("w", [width], "bf16").tensor(format!("{tensor}.weight")))
}

/// A projection `input (in_width) -> edge (out_width)` with `<tensor>.weight` of
/// `[out_width, in_width]` and, with `bias`, `<tensor>.bias`.
fn linear(
    id: &str,
    input: &str,
    edge: &str,
    out_width: &str,
    in_width: &str,
    tensor: &str,
    bias: bool,
) -> NodeDecl {
    let node = NodeDecl::new(id, "linear")
        .reads([input])
        .writes(out(edge, out_width))
        .weight(
            WeightDecl::new("w", [out_width, in_width], "bf16").tensor(format!("{tensor}.weight")),
        );
    if bias {
        node.weight(WeightDecl::new("b", [out_width], "bf16").tensor(format!("{tensor}.bias")))
    } else {
        node
    }
}

fn embed(arch: &Arch) -> BlockDecl {
    let table =
        WeightDecl::new("table", ["vocab", "hidden"], "bf16").tensor("model.embed_tokens.weight");
    let block = BlockDecl::once("embed").stream(None, Some("x"));
    if arch.embed_scale || arch.scaled_io {
        // Gemma: embeddings times sqrt(hidden_size); Granite: times `embedding_multiplier`.
        block
            .node(
                NodeDecl::new("embed", "embed")
                    .reads(["tokens"])
                    .writes(out("emb", "hidden"))
                    .weight(table),
            )
            .node(
                NodeDecl::new("scale", "scale")
                    .reads(["emb"])
                    .writes(out("x", "hidden")),
            )
    } else {
        block.node(
            NodeDecl::new("embed", "embed")
                .reads(["tokens"])
                .writes(out("x", "hidden"))
                .weight(table),
        )
    }
}

fn head(arch: &Arch) -> BlockDecl {
    let tensor = if arch.tied {
        "model.embed_tokens.weight"
    } else {
        "lm_head.weight"
    };
    let logits = if arch.final_softcap || arch.scaled_io {
        "lm_logits"
    } else {
        "logits"
    };
    let mut lm_head = NodeDecl::new("lm_head", "lm_head")
        .reads(["xn"])
        .writes(out(logits, "vocab"))
        .weight(WeightDecl::new("w", ["vocab", "hidden"], "bf16").tensor(tensor));
    let final_norm = if arch.model == ModelType::Phi {
        // Phi: a LayerNorm `model.final_layernorm` and a biased `lm_head`.
        lm_head = lm_head.weight(WeightDecl::new("b", ["vocab"], "bf16").tensor("lm_head.bias"));
        layer_norm("final_norm", "x", "xn", "hidden", "model.final_layernorm")
    } else {
        norm("final_norm", "x", "xn", "hidden", "hidden", "model.norm")
    };
    let block = BlockDecl::once("head")
        .stream(Some("x"), None)
        .node(final_norm)
        .node(lm_head);
    if arch.final_softcap {
        block.node(
            NodeDecl::new("softcap", "softcap")
                .reads(["lm_logits"])
                .writes(out("logits", "vocab")),
        )
    } else if arch.scaled_io {
        // Granite: `logits / logits_scaling`.
        block.node(
            NodeDecl::new("logits_scale", "scale")
                .reads(["lm_logits"])
                .writes(out("logits", "vocab")),
        )
    } else {
        block
    }
}

/// One decoder layer; `p` is its tensor prefix (`model.layers.{i}` in a repeated block).
fn layer(arch: &Arch, block: BlockDecl, p: &str, kind: Layer) -> BlockDecl {
    if arch.model == ModelType::Phi {
        return parallel_layer(arch, block, p, kind);
    }
    let block = block.node(norm(
        "attn_norm",
        "x",
        "xn",
        "hidden",
        "hidden",
        &format!("{p}.input_layernorm"),
    ));
    let (block, o) = match arch.attn {
        _ if kind.linear => delta_net(arch, block, p),
        Attn::Gqa { .. } => gqa(arch, block, p, kind),
        Attn::Mla { .. } => mla(arch, block, p),
    };
    let (block, o) = if arch.sandwich_norms {
        let block = block.node(norm(
            "post_attn_norm",
            o,
            "on",
            "hidden",
            "hidden",
            &format!("{p}.post_attention_layernorm"),
        ));
        (block, "on")
    } else {
        (block, o)
    };
    let block = block.node(
        NodeDecl::new("attn_add", "residual_add")
            .reads(["x", o])
            .writes(out("h", "hidden")),
    );
    let pre_mlp = if arch.sandwich_norms {
        "pre_feedforward_layernorm"
    } else {
        "post_attention_layernorm"
    };
    let block = block.node(norm(
        "mlp_norm",
        "h",
        "hn",
        "hidden",
        "hidden",
        &format!("{p}.{pre_mlp}"),
    ));
    let (block, m) = if kind.sparse {
        sparse_mlp(arch, block, p)
    } else {
        dense_mlp(arch, block, p)
    };
    let (block, m) = if arch.sandwich_norms {
        let block = block.node(norm(
            "post_mlp_norm",
            m,
            "mo",
            "hidden",
            "hidden",
            &format!("{p}.post_feedforward_layernorm"),
        ));
        (block, "mo")
    } else {
        (block, m)
    };
    block.node(
        NodeDecl::new("mlp_add", "residual_add")
            .reads(["h", m])
            .writes(out("y", "hidden")),
    )
}

/// A LayerNorm (weight and bias) of `width`, `<tensor>.weight` and `<tensor>.bias`.
fn layer_norm(id: &str, input: &str, edge: &str, width: &str, tensor: &str) -> NodeDecl {
    NodeDecl::new(id, "layer_norm")
        .reads([input])
        .writes(out(edge, width))
        .weight(WeightDecl::new("w", [width], "bf16").tensor(format!("{tensor}.weight")))
        .weight(WeightDecl::new("b", [width], "bf16").tensor(format!("{tensor}.bias")))
}

/// Phi's decoder layer: one LayerNorm feeds attention and a plain (not gated) MLP side by
/// side, and both outputs are added to the residual at once.
fn parallel_layer(arch: &Arch, block: BlockDecl, p: &str, kind: Layer) -> BlockDecl {
    let d = arch.dense.expect("phi has a dense MLP");
    let m = format!("{p}.mlp");
    let block = block.node(layer_norm(
        "attn_norm",
        "x",
        "xn",
        "hidden",
        &format!("{p}.input_layernorm"),
    ));
    let (block, o) = gqa(arch, block, p, kind);
    block
        .node(linear(
            "fc1",
            "xn",
            "fc1",
            "ffn",
            "hidden",
            &format!("{m}.fc1"),
            d.bias,
        ))
        .node(
            NodeDecl::new("act", "gelu")
                .reads(["fc1"])
                .writes(out("act", "ffn")),
        )
        .node(linear(
            "fc2",
            "act",
            "fc2",
            "hidden",
            "ffn",
            &format!("{m}.fc2"),
            d.bias,
        ))
        .node(
            NodeDecl::new("add", "residual_add")
                .reads(["x", o, "fc2"])
                .writes(out("y", "hidden")),
        )
}

/// Grouped-query attention; returns the block and the attention output edge.
fn gqa(arch: &Arch, block: BlockDecl, p: &str, kind: Layer) -> (BlockDecl, &'static str) {
    let Attn::Gqa {
        qkv_bias,
        o_bias,
        fused_qkv,
        qk_norm,
        sinks,
        output_gate,
        ..
    } = arch.attn
    else {
        unreachable!("gqa() is called for grouped-query attention only")
    };
    let a = format!("{p}.self_attn");
    let mut block = if fused_qkv {
        block
            .node(linear(
                "qkv_proj",
                "xn",
                "qkv",
                "qkv_width",
                "hidden",
                &format!("{a}.qkv_proj"),
                false,
            ))
            .node(
                NodeDecl::new("qkv_split", "split")
                    .reads(["qkv"])
                    .writes(out("q", "q_width"))
                    .writes(out("k", "kv_width"))
                    .writes(out("v", "kv_width")),
            )
    } else if output_gate {
        // Qwen3-Next: per head, head_dim query elements then head_dim gate elements.
        let block = block
            .node(linear(
                "q_proj",
                "xn",
                "q_gate",
                "2 * q_width",
                "hidden",
                &format!("{a}.q_proj"),
                qkv_bias,
            ))
            .node(
                NodeDecl::new("q_gate_split", "split")
                    .reads(["q_gate"])
                    .writes(out("q", "q_width"))
                    .writes(out("attn_gate", "q_width")),
            );
        separate_kv(block, &a, qkv_bias)
    } else {
        let block = block.node(linear(
            "q_proj",
            "xn",
            "q",
            "q_width",
            "hidden",
            &format!("{a}.q_proj"),
            qkv_bias,
        ));
        separate_kv(block, &a, qkv_bias)
    };
    let (q, k) = if qk_norm {
        block = block
            .node(norm(
                "q_norm",
                "q",
                "qn",
                "q_width",
                "head_dim",
                &format!("{a}.q_norm"),
            ))
            .node(norm(
                "k_norm",
                "k",
                "kn",
                "kv_width",
                "head_dim",
                &format!("{a}.k_norm"),
            ));
        ("qn", "kn")
    } else {
        ("q", "k")
    };
    let mut kv =
        StateDecl::per_token("kv", "2 * kv_width", "bf16", "kv_write").read_by(["attention"]);
    if kind.sliding {
        kv = kv.window("window");
    }
    let mut attention = NodeDecl::new("attention", "attention").writes(out("attn", "q_width"));
    if sinks {
        attention = attention
            .weight(WeightDecl::new("sinks", ["heads"], "bf16").tensor(format!("{a}.sinks")));
    }
    let (block, q_attn, k_cached) = if kind.nope {
        if arch.nope_temperature {
            // Llama 4's NoPE layers: q times a per-position temperature, a new tensor.
            let block = block.node(
                NodeDecl::new("temperature", "scale")
                    .reads([q])
                    .writes(out("q_temp", "q_width")),
            );
            (block, "q_temp", k)
        } else {
            (block, q, k)
        }
    } else {
        let block = block.node(
            NodeDecl::new("rope", "rope")
                .reads([q, k])
                .writes(out("q_rot", "q_width"))
                .writes(out("k_rot", "kv_width")),
        );
        if arch.qk_weightless_norm {
            // Llama 4: an RMS norm without a weight over each head of q and k, after rope.
            let block = block
                .node(
                    NodeDecl::new("q_l2_norm", "rms_norm")
                        .reads(["q_rot"])
                        .writes(out("q_rn", "q_width")),
                )
                .node(
                    NodeDecl::new("k_l2_norm", "rms_norm")
                        .reads(["k_rot"])
                        .writes(out("k_rn", "kv_width")),
                );
            (block, "q_rn", "k_rn")
        } else {
            (block, "q_rot", "k_rot")
        }
    };
    let attention = attention.reads([q_attn]);
    let mut block = block
        .node(NodeDecl::new("kv_write", "kv_write").reads([k_cached, "v"]))
        .node(attention);
    let attn = if output_gate {
        block = block.node(
            NodeDecl::new("output_gate", "sigmoid_mul")
                .reads(["attn_gate", "attn"])
                .writes(out("attn_gated", "q_width")),
        );
        "attn_gated"
    } else {
        "attn"
    };
    let block = block
        .node(linear(
            "o_proj",
            attn,
            "o",
            "hidden",
            "q_width",
            // Phi names its output projection `dense`.
            &format!(
                "{a}.{}",
                if arch.model == ModelType::Phi {
                    "dense"
                } else {
                    "o_proj"
                }
            ),
            o_bias,
        ))
        .state(kv);
    (block, "o")
}

/// Qwen3-Next's Gated DeltaNet (`linear_attn`): `in_proj_qkvz` and `in_proj_ba`, the depthwise
/// causal convolution over q, k and v (`conv1d.weight` `[conv_dim, 1, kernel]`), the gated
/// delta rule with its per-head `dt_bias` and `A_log`, the gated RMS norm over each value head
/// (`norm.weight` `[v_head_dim]`) and `out_proj`. Its states are per sequence, in the model
/// dtype as vLLM 0.19 keeps them (`MambaStateDtypeCalculator.gated_delta_net_state_dtype` with
/// `--mamba-cache-dtype auto` and `--mamba-ssm-cache-dtype auto`), shaped as
/// `MambaStateShapeCalculator.gated_delta_net_state_shape`: the convolution's last
/// `kernel - 1` inputs of `conv_dim`, and `v_heads x v_head_dim x k_head_dim`. Returns the
/// block and the output edge.
fn delta_net(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let d = arch
        .delta_net
        .expect("a linear-attention layer implies a Gated DeltaNet");
    let a = format!("{p}.linear_attn");
    let vector = |name: &str, width: &str, tensor: &str| {
        WeightDecl::new(name, [width], "bf16").tensor(format!("{a}.{tensor}"))
    };
    let block = block
        .node(linear(
            "in_proj_qkvz",
            "xn",
            "qkvz",
            "linear_qkvz_width",
            "hidden",
            &format!("{a}.in_proj_qkvz"),
            false,
        ))
        .node(linear(
            "in_proj_ba",
            "xn",
            "ba",
            "linear_ba_width",
            "hidden",
            &format!("{a}.in_proj_ba"),
            false,
        ))
        .node(
            NodeDecl::new("qkvz_split", "split")
                .reads(["qkvz"])
                .writes(out("qkv", "linear_conv_dim"))
                .writes(out("z", "linear_value_dim")),
        )
        .node(
            NodeDecl::new("conv", "causal_conv1d")
                .reads(["qkv"])
                .writes(out("qkv_conv", "linear_conv_dim"))
                .weight(
                    WeightDecl::new("w", ["linear_conv_dim", "1", "linear_conv_kernel"], "bf16")
                        .tensor(format!("{a}.conv1d.weight")),
                ),
        )
        .node(
            NodeDecl::new("delta_rule", "gated_delta_net")
                .reads(["qkv_conv", "ba"])
                .writes(out("core", "linear_value_dim"))
                .weight(vector("dt_bias", "linear_v_heads", "dt_bias"))
                .weight(vector("a_log", "linear_v_heads", "A_log")),
        )
        .node(
            NodeDecl::new("gated_norm", "gated_rms_norm")
                .reads(["core", "z"])
                .writes(out("core_n", "linear_value_dim"))
                .weight(vector("w", "linear_v_head_dim", "norm.weight")),
        )
        .node(linear(
            "out_proj",
            "core_n",
            "o",
            "hidden",
            "linear_value_dim",
            &format!("{a}.out_proj"),
            false,
        ));
    // A kernel of 1 keeps no past input.
    let block = if d.conv_kernel > 1 {
        block.state(StateDecl::per_sequence(
            "conv_state",
            "(linear_conv_kernel - 1) * linear_conv_dim",
            "bf16",
            "conv",
        ))
    } else {
        block
    };
    let block = block.state(StateDecl::per_sequence(
        "recurrent",
        "linear_v_heads * linear_v_head_dim * linear_k_head_dim",
        "bf16",
        "delta_rule",
    ));
    (block, "o")
}

/// The separate `k_proj` and `v_proj` of grouped-query attention under `a` (`<a>.k_proj`).
fn separate_kv(block: BlockDecl, a: &str, bias: bool) -> BlockDecl {
    block
        .node(linear(
            "k_proj",
            "xn",
            "k",
            "kv_width",
            "hidden",
            &format!("{a}.k_proj"),
            bias,
        ))
        .node(linear(
            "v_proj",
            "xn",
            "v",
            "kv_width",
            "hidden",
            &format!("{a}.v_proj"),
            bias,
        ))
}

/// Multi-head latent attention in its weight-absorbed form: the cache holds the compressed
/// latent, `kv_b_proj` maps the query into latent space before attention (`q_absorb`) and the
/// latent attention output back to value heads after it (`v_up`). Returns the block and the
/// attention output edge.
fn mla(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let Attn::Mla {
        q_lora_rank, bias, ..
    } = arch.attn
    else {
        unreachable!("mla() is called for latent attention only")
    };
    let a = format!("{p}.self_attn");
    let block = match q_lora_rank {
        Some(_) => block
            .node(linear(
                "q_a_proj",
                "xn",
                "q_a",
                "q_lora_rank",
                "hidden",
                &format!("{a}.q_a_proj"),
                bias,
            ))
            .node(norm(
                "q_a_norm",
                "q_a",
                "q_an",
                "q_lora_rank",
                "q_lora_rank",
                &format!("{a}.q_a_layernorm"),
            ))
            .node(linear(
                "q_b_proj",
                "q_an",
                "q",
                "q_width",
                "q_lora_rank",
                &format!("{a}.q_b_proj"),
                false,
            )),
        None => block.node(linear(
            "q_proj",
            "xn",
            "q",
            "q_width",
            "hidden",
            &format!("{a}.q_proj"),
            false,
        )),
    };
    let kv_b = || {
        WeightDecl::new("w", ["kv_b_width", "kv_lora_rank"], "bf16")
            .tensor(format!("{a}.kv_b_proj.weight"))
    };
    let block = block
        .node(linear(
            "kv_a_proj",
            "xn",
            "kv_a",
            "kv_latent",
            "hidden",
            &format!("{a}.kv_a_proj_with_mqa"),
            bias,
        ))
        .node(
            NodeDecl::new("kv_split", "split")
                .reads(["kv_a"])
                .writes(out("kv_c", "kv_lora_rank"))
                .writes(out("k_pe", "qk_rope_head_dim")),
        )
        .node(norm(
            "kv_a_norm",
            "kv_c",
            "kv_cn",
            "kv_lora_rank",
            "kv_lora_rank",
            &format!("{a}.kv_a_layernorm"),
        ))
        .node(
            NodeDecl::new("q_split", "split")
                .reads(["q"])
                .writes(out("q_nope", "heads * qk_nope_head_dim"))
                .writes(out("q_pe", "heads * qk_rope_head_dim")),
        )
        .node(
            NodeDecl::new("q_absorb", "linear")
                .reads(["q_nope"])
                .writes(out("q_lat", "heads * kv_lora_rank"))
                .weight(kv_b()),
        )
        .node(
            NodeDecl::new("rope", "rope")
                .reads(["q_pe", "k_pe"])
                .writes(out("q_pe_rot", "heads * qk_rope_head_dim"))
                .writes(out("k_pe_rot", "qk_rope_head_dim")),
        )
        .node(NodeDecl::new("kv_write", "kv_write").reads(["kv_cn", "k_pe_rot"]))
        .node(
            NodeDecl::new("attention", "attention")
                .reads(["q_lat", "q_pe_rot"])
                .writes(out("attn_lat", "heads * kv_lora_rank")),
        )
        .node(
            NodeDecl::new("v_up", "linear")
                .reads(["attn_lat"])
                .writes(out("attn", "o_width"))
                .weight(kv_b()),
        )
        .node(linear(
            "o_proj",
            "attn",
            "o",
            "hidden",
            "o_width",
            &format!("{a}.o_proj"),
            bias,
        ))
        .state(StateDecl::per_token("kv", "kv_latent", "bf16", "kv_write").read_by(["attention"]));
    (block, "o")
}

/// The dense MLP; returns the block and its output edge.
fn dense_mlp(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let d = arch.dense.expect("a dense layer implies a dense MLP");
    let m = format!("{p}.{}", arch.mlp_module);
    let act = arch.act.op();
    let block = if d.fused {
        block
            .node(linear(
                "gate_up_proj",
                "hn",
                "gate_up",
                "2 * ffn",
                "hidden",
                &format!("{m}.gate_up_proj"),
                d.bias,
            ))
            .node(
                NodeDecl::new("act", act)
                    .reads(["gate_up"])
                    .writes(out("act", "ffn")),
            )
    } else {
        block
            .node(linear(
                "gate_proj",
                "hn",
                "gate",
                "ffn",
                "hidden",
                &format!("{m}.gate_proj"),
                d.bias,
            ))
            .node(linear(
                "up_proj",
                "hn",
                "up",
                "ffn",
                "hidden",
                &format!("{m}.up_proj"),
                d.bias,
            ))
            .node(
                NodeDecl::new("act", act)
                    .reads(["gate", "up"])
                    .writes(out("act", "ffn")),
            )
    };
    let block = block.node(linear(
        "down_proj",
        "act",
        "down",
        "hidden",
        "ffn",
        &format!("{m}.down_proj"),
        d.bias,
    ));
    (block, "down")
}

/// The sparse MLP: router, top-k, the routed experts as grouped products over
/// `n * experts_per_tok` rows, the shared experts (DeepSeek) and the weighted combine; returns
/// the block and its output edge.
fn sparse_mlp(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let moe = arch.moe.expect("a sparse layer implies a sparse MLP");
    let act = arch.act.op();
    let (gate, experts, [w_gate, w_up, w_down]) = match moe.names {
        MoeNames::GptOss => return fused_experts_mlp(block, p),
        MoeNames::Llama4 => return llama4_moe(arch, block, p),
        MoeNames::FusedMlp => return fused_mlp_moe(arch, block, p),
        MoeNames::Mixtral => (
            format!("{p}.block_sparse_moe.gate.weight"),
            format!("{p}.block_sparse_moe.experts.*"),
            ["w1", "w3", "w2"],
        ),
        MoeNames::Mlp => (
            format!("{p}.mlp.gate.weight"),
            format!("{p}.mlp.experts.*"),
            ["gate_proj", "up_proj", "down_proj"],
        ),
    };
    let expert_w = |name: &str, shape: [&str; 2], tensor: &str| {
        WeightDecl::new(name, shape, "bf16")
            .tensor(format!("{experts}.{tensor}.weight"))
            .count("local_experts")
    };
    let rows = "n * experts_per_tok";
    let mut router = NodeDecl::new("router", "router")
        .reads(["hn"])
        .writes(OutDecl::new(
            "router_logits",
            "n",
            "experts",
            moe.router_format,
        ))
        .weight(WeightDecl::new("w", ["experts", "hidden"], "bf16").tensor(gate));
    if moe.score_bias {
        // DeepSeek-V3's noaux_tc bias, kept in f32 by the checkpoints.
        router = router.weight(
            WeightDecl::new("score_bias", ["experts"], "f32")
                .tensor(format!("{p}.mlp.gate.e_score_correction_bias")),
        );
    }
    let mut block = block
        .node(router)
        .node(top_k())
        .node(
            NodeDecl::new("experts_gate_up", "expert_linear")
                .reads(["hn", "topk_ids"])
                .writes(OutDecl::new("expert_h", rows, "2 * moe_ffn", "bf16"))
                .weight(expert_w("w_gate", ["moe_ffn", "hidden"], w_gate))
                .weight(expert_w("w_up", ["moe_ffn", "hidden"], w_up)),
        )
        .node(
            NodeDecl::new("experts_act", act)
                .reads(["expert_h"])
                .writes(OutDecl::new("expert_act", rows, "moe_ffn", "bf16")),
        )
        .node(
            NodeDecl::new("experts_down", "expert_linear")
                .reads(["expert_act", "topk_ids"])
                .writes(OutDecl::new("expert_out", rows, "hidden", "bf16"))
                .weight(expert_w("w", ["hidden", "moe_ffn"], w_down)),
        );
    let mut combine_in = vec!["expert_out", "topk_w", "topk_ids"];
    let shared = match moe.gated_shared {
        Some(_) => Some(format!("{p}.mlp.shared_expert")),
        None => (moe.shared_experts > 0).then(|| format!("{p}.mlp.shared_experts")),
    };
    if let Some(s) = shared {
        block = shared_mlp(block, &s, act, moe.shared_bias);
        if moe.gated_shared.is_some() {
            // Qwen3-Next: sigmoid(shared_expert_gate(x)) x shared_expert(x). The gate is a
            // one-logit linear kept unquantized as the router is (vLLM builds both as
            // ReplicatedLinear with quant_config=None), hence the router op.
            block = block
                .node(
                    NodeDecl::new("shared_expert_gate", "router")
                        .reads(["hn"])
                        .writes(out("shared_logit", "1"))
                        .weight(
                            WeightDecl::new("w", ["1", "hidden"], "bf16")
                                .tensor(format!("{p}.mlp.shared_expert_gate.weight")),
                        ),
                )
                .node(
                    NodeDecl::new("shared_scale", "sigmoid_mul")
                        .reads(["shared_logit", "shared_out"])
                        .writes(out("shared_gated", "hidden")),
                );
            combine_in.push("shared_gated");
        } else {
            combine_in.push("shared_out");
        }
    }
    let block = block.node(
        NodeDecl::new("moe_combine", "moe_combine")
            .reads(combine_in)
            .writes(out("moe_out", "hidden")),
    );
    (block, "moe_out")
}

/// The top-k selection over `router_logits`: f32 weights and i32 ids of the experts each
/// token is routed to.
fn top_k() -> NodeDecl {
    NodeDecl::new("top_k", "top_k")
        .reads(["router_logits"])
        .writes(OutDecl::new("topk_w", "n", "experts_per_tok", "f32"))
        .writes(OutDecl::new("topk_ids", "n", "experts_per_tok", "i32"))
}

/// The shared experts' gated MLP over `hn`, `shared_ffn` wide, under the tensor prefix `s`
/// (`<s>.gate_proj`, `up_proj`, `down_proj`), writing `shared_out`.
fn shared_mlp(block: BlockDecl, s: &str, act: &str, bias: bool) -> BlockDecl {
    block
        .node(linear(
            "shared_gate_proj",
            "hn",
            "shared_gate",
            "shared_ffn",
            "hidden",
            &format!("{s}.gate_proj"),
            bias,
        ))
        .node(linear(
            "shared_up_proj",
            "hn",
            "shared_up",
            "shared_ffn",
            "hidden",
            &format!("{s}.up_proj"),
            bias,
        ))
        .node(
            NodeDecl::new("shared_act", act)
                .reads(["shared_gate", "shared_up"])
                .writes(out("shared_act", "shared_ffn")),
        )
        .node(linear(
            "shared_down_proj",
            "shared_act",
            "shared_out",
            "hidden",
            "shared_ffn",
            &format!("{s}.down_proj"),
            bias,
        ))
}

/// Separates the op a `weights_only` node's weight stands for from its name (the quantization
/// passes decide a weight by its op, see [`crate::quant`]).
pub(crate) const HELD_OP_SEPARATOR: &str = "__";

/// A multi-token-prediction layer `model.layers.<idx>` (DeepSeek's `deepseek_mtp`), held as
/// weights only: the decoder layer's weights, as [`layer`] declares them, plus its own
/// `embed_tokens`, `enorm`, `hnorm`, `eh_proj` `[hidden, 2 x hidden]` and `shared_head`
/// (`norm` and `head`). Each weight is named `<op>__<node>_<weight>` after the node it
/// comes from; the layer's KV cache and activations are not planned (the step does not run
/// it).
fn mtp(arch: &Arch, idx: usize, kind: Layer) -> BlockDecl {
    let p = format!("model.layers.{idx}");
    let node = held_layer(arch, &p, kind);
    let vector = |name: &str, tensor: &str| {
        WeightDecl::new(name, ["hidden"], "bf16").tensor(format!("{p}.{tensor}.weight"))
    };
    let node = node
        .weight(
            WeightDecl::new("embed__embed_table", ["vocab", "hidden"], "bf16")
                .tensor(format!("{p}.embed_tokens.weight")),
        )
        .weight(vector("rms_norm__enorm_w", "enorm"))
        .weight(vector("rms_norm__hnorm_w", "hnorm"))
        .weight(
            WeightDecl::new("linear__eh_proj_w", ["hidden", "2 * hidden"], "bf16")
                .tensor(format!("{p}.eh_proj.weight")),
        )
        .weight(vector("rms_norm__shared_head_norm_w", "shared_head.norm"))
        .weight(
            WeightDecl::new("lm_head__shared_head_w", ["vocab", "hidden"], "bf16")
                .tensor(format!("{p}.shared_head.head.weight")),
        );
    BlockDecl::once(format!("mtp_{idx}")).node(node)
}

/// A `weights_only` node holding the weights of decoder layer `p` as [`layer`] declares them,
/// each named `<op>__<node>_<weight>` after the node it comes from.
fn held_layer(arch: &Arch, p: &str, kind: Layer) -> NodeDecl {
    let decoder = layer(arch, BlockDecl::once("mtp_layer"), p, kind);
    let mut node = NodeDecl::new("weights", "weights_only");
    for n in decoder.nodes {
        for w in n.weights {
            node = node.weight(WeightDecl {
                name: format!("{}{HELD_OP_SEPARATOR}{}_{}", n.op, n.id, w.name),
                ..w
            });
        }
    }
    node
}

/// Qwen3-Next's multi-token-prediction layer `mtp.layers.<j>` (vLLM's `qwen3_next_mtp`), a
/// full-attention decoder layer held as weights only, like [`mtp`]; its KV cache and
/// activations are not planned.
fn qwen3_next_mtp(arch: &Arch, j: usize, kind: Layer) -> BlockDecl {
    BlockDecl::once(format!("mtp_{j}")).node(held_layer(arch, &format!("mtp.layers.{j}"), kind))
}

/// What Qwen3-Next's MTP module holds once beside its layers: `mtp.fc` `[hidden, 2 x hidden]`
/// over the normed embedding and hidden state, the two norms before it and the final norm.
/// It reuses the model's `embed_tokens` and `lm_head` (vLLM loads only those two outside
/// `mtp.`), so they are not held again. `fc` is column-parallel: a rank holds
/// `mtp_fc_rows` of its rows (a dim).
fn qwen3_next_mtp_shared() -> BlockDecl {
    let vector = |name: &str, tensor: &str| {
        WeightDecl::new(name, ["hidden"], "bf16").tensor(format!("mtp.{tensor}.weight"))
    };
    let node = NodeDecl::new("weights", "weights_only")
        .weight(
            WeightDecl::new("linear__fc_w", ["mtp_fc_rows", "2 * hidden"], "bf16")
                .tensor("mtp.fc.weight"),
        )
        .weight(vector(
            "rms_norm__pre_fc_norm_embedding_w",
            "pre_fc_norm_embedding",
        ))
        .weight(vector(
            "rms_norm__pre_fc_norm_hidden_w",
            "pre_fc_norm_hidden",
        ))
        .weight(vector("rms_norm__norm_w", "norm"));
    BlockDecl::once("mtp").node(node)
}

/// gpt-oss's sparse MLP (`GptOssMLP`): a router with a bias, each expert projection one
/// tensor for the rank's experts (`count = local_experts`, no `*`: all of them unless expert
/// parallelism places them) with a `_bias` tensor, and the clamped SwiGLU on the interleaved
/// gate-up output.
fn fused_experts_mlp(block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let e = format!("{p}.mlp.experts");
    let r = format!("{p}.mlp.router");
    let expert_w = |name: &str, shape: Vec<&str>, tensor: &str| {
        WeightDecl::new(name, shape, "bf16")
            .tensor(format!("{e}.{tensor}"))
            .count("local_experts")
    };
    let rows = "n * experts_per_tok";
    let block = block
        .node(
            NodeDecl::new("router", "router")
                .reads(["hn"])
                .writes(OutDecl::new("router_logits", "n", "experts", "bf16"))
                .weight(
                    WeightDecl::new("w", ["experts", "hidden"], "bf16")
                        .tensor(format!("{r}.weight")),
                )
                .weight(WeightDecl::new("b", ["experts"], "bf16").tensor(format!("{r}.bias"))),
        )
        .node(top_k())
        .node(
            NodeDecl::new("experts_gate_up", "expert_linear")
                .reads(["hn", "topk_ids"])
                .writes(OutDecl::new("expert_h", rows, "2 * moe_ffn", "bf16"))
                .weight(expert_w("w", vec!["2 * moe_ffn", "hidden"], "gate_up_proj"))
                .weight(expert_w("b", vec!["2 * moe_ffn"], "gate_up_proj_bias")),
        )
        .node(
            NodeDecl::new("experts_act", "clamped_swiglu")
                .reads(["expert_h"])
                .writes(OutDecl::new("expert_act", rows, "moe_ffn", "bf16")),
        )
        .node(
            NodeDecl::new("experts_down", "expert_linear")
                .reads(["expert_act", "topk_ids"])
                .writes(OutDecl::new("expert_out", rows, "hidden", "bf16"))
                .weight(expert_w("w", vec!["hidden", "moe_ffn"], "down_proj"))
                .weight(expert_w("b", vec!["hidden"], "down_proj_bias")),
        )
        .node(
            NodeDecl::new("moe_combine", "moe_combine")
                .reads(["expert_out", "topk_w", "topk_ids"])
                .writes(out("moe_out", "hidden")),
        );
    (block, "moe_out")
}

/// Qwen3-VL-MoE's sparse MLP (`MoeNames::FusedMlp`): the router `mlp.gate` and the routed
/// experts as one `mlp.experts.gate_up_proj` `[experts, hidden, 2 x moe_ffn]` and one
/// `mlp.experts.down_proj` `[experts, moe_ffn, hidden]`, combined without a shared expert.
fn fused_mlp_moe(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let m = format!("{p}.mlp");
    let block = fused_experts(arch, block, &m, "gate").node(
        NodeDecl::new("moe_combine", "moe_combine")
            .reads(["expert_out", "topk_w", "topk_ids"])
            .writes(out("moe_out", "hidden")),
    );
    (block, "moe_out")
}

/// Llama 4's sparse MLP (`Llama4TextMoe`): a router without bias whose top-k scores go through
/// a sigmoid and scale each routed token before the experts, the experts' gate-up and down
/// projections each one tensor for all experts (`[experts, hidden, 2 x ffn]`,
/// `[experts, ffn, hidden]`), and the shared expert, an MLP of the same width, added to the
/// routed output.
fn llama4_moe(arch: &Arch, block: BlockDecl, p: &str) -> (BlockDecl, &'static str) {
    let f = format!("{p}.feed_forward");
    let block = fused_experts(arch, block, &f, "router");
    let block = shared_mlp(block, &format!("{f}.shared_expert"), arch.act.op(), false).node(
        NodeDecl::new("moe_combine", "moe_combine")
            .reads(["expert_out", "topk_w", "topk_ids", "shared_out"])
            .writes(out("moe_out", "hidden")),
    );
    (block, "moe_out")
}

/// The routed part of an MoE whose experts are stored fused, one tensor per projection for all
/// experts (`{m}.experts.gate_up_proj` `[experts, hidden, 2 x ffn]`, `{m}.experts.down_proj`):
/// the bias-free router `{m}.{router}.weight`, the top-k, the experts' gate-up, activation and
/// down, up to `expert_out` (the caller combines it).
fn fused_experts(arch: &Arch, block: BlockDecl, m: &str, router: &str) -> BlockDecl {
    let act = arch.act.op();
    let expert_w = |shape: [&str; 2], tensor: &str| {
        WeightDecl::new("w", shape, "bf16")
            .tensor(format!("{m}.experts.{tensor}"))
            .count("local_experts")
    };
    let rows = "n * experts_per_tok";
    block
        .node(
            NodeDecl::new("router", "router")
                .reads(["hn"])
                .writes(OutDecl::new("router_logits", "n", "experts", "bf16"))
                .weight(
                    WeightDecl::new("w", ["experts", "hidden"], "bf16")
                        .tensor(format!("{m}.{router}.weight")),
                ),
        )
        .node(top_k())
        .node(
            NodeDecl::new("experts_gate_up", "expert_linear")
                .reads(["hn", "topk_ids"])
                .writes(OutDecl::new("expert_h", rows, "2 * moe_ffn", "bf16"))
                .weight(expert_w(["hidden", "2 * moe_ffn"], "gate_up_proj")),
        )
        .node(
            NodeDecl::new("experts_act", act)
                .reads(["expert_h"])
                .writes(OutDecl::new("expert_act", rows, "moe_ffn", "bf16")),
        )
        .node(
            NodeDecl::new("experts_down", "expert_linear")
                .reads(["expert_act", "topk_ids"])
                .writes(OutDecl::new("expert_out", rows, "hidden", "bf16"))
                .weight(expert_w(["moe_ffn", "hidden"], "down_proj")),
        )
}
