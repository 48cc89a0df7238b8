//! How the checkpoint stores what the emitters declared: the planned dtype, the KV-cache
//! dtype and the quantization scheme, applied as passes over the emitted declarations before
//! circuit-ir builds them ([`Storage::build`]). The per-architecture emitters know none of
//! this: they declare every linear weight `[out, in]` in `bf16` (standing for the model's
//! dtype) under its Hugging Face tensor name, and every model type gets quantization for
//! free.
//!
//! Invariants: a linear-op weight (`linear`, `expert_linear`, `lm_head`, `router`) is
//! decided by its real module name, layer and expert index included; when the decision differs
//! between instances of a repeated block, the block is unrolled into one block per layer, so
//! the circuit stays exact; when it differs between the experts of one tensor, the config is
//! refused. A tied `lm_head` is the module `lm_head` and is never quantized silently.

mod layout;
mod pattern;
mod scheme;
mod triton_mxfp4;

use circuit_ir::decl::{BlockDecl, CircuitDecl, NodeDecl, WeightDecl};
use circuit_ir::{Circuit, CircuitBuilder, ExprText};
use model_facts::LoadRules;
use serde_json::Value;

use crate::config::{Config, Got};
use crate::error::HfError;
use crate::options::{Dtype, KvCacheDtype, SideFile, SideFileKind};
use layout::{Bias, Layout, Original, eval_expr, split_tensor};
use scheme::Kind;
pub(crate) use scheme::Scheme;

/// A quantization as planned, for the import report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantization {
    /// The format (`gptq`, `awq`, `fp8`, `fbgemm_fp8`, `mxfp4`, `compressed-tensors`,
    /// `modelopt`).
    pub method: String,
    /// Where the block was read: `config.json: quantization_config`, or a side file.
    pub source: String,
    /// What the quantized modules store, in one line.
    pub summary: String,
    /// Linear weights quantized, counted per layer (an expert projection counts once).
    pub quantized: u64,
    /// Linear weights in all (the same count, quantized or not).
    pub linear: u64,
    /// Quantized by the engine while loading an unquantized checkpoint
    /// (`ImportOptions::online_quantization`), not stored so.
    pub at_load: bool,
}

/// The scheme planned when the engine is asked to quantize at load time (`online`): the
/// checkpoint's own `scheme` when it already stores that format (vLLM then reads the
/// checkpoint's, `is_checkpoint_fp8_serialized`), the online scheme for an unquantized one,
/// and a refusal for a checkpoint quantized otherwise.
pub(crate) fn with_online(
    scheme: Option<Scheme>,
    online: crate::options::OnlineQuantization,
    origin: &str,
) -> Result<Option<Scheme>, HfError> {
    use crate::options::OnlineQuantization;
    match (online, scheme) {
        (OnlineQuantization::None, scheme) => Ok(scheme),
        (OnlineQuantization::Fp8, None) => Ok(Some(scheme::online_fp8(origin))),
        (OnlineQuantization::Fp8, Some(s)) if s.method == "fp8" => Ok(Some(s)),
        (OnlineQuantization::Fp8, Some(s)) => Err(HfError::Contradiction {
            origin: origin.to_owned(),
            message: format!(
                "--quantization fp8 asked, but the checkpoint is quantized as `{}` ({}); the engine refuses a --quantization that differs from the checkpoint's (config/model.py _verify_quantization)",
                s.method, s.key
            ),
        }),
    }
}

/// Reads the quantization block: `quantization_config` or `compression_config` of the
/// config, else one side file. `stored` is the checkpoint's dtype.
pub(crate) fn read_scheme(
    cfg: &Config<'_>,
    side_files: &[SideFile<'_>],
    stored: Dtype,
) -> Result<(Option<Scheme>, Vec<String>), HfError> {
    let mut found = None;
    for key in ["quantization_config", "compression_config"] {
        match cfg.value(key) {
            Got::Missing | Got::Null => {}
            // vLLM reads `{}` as no quantization (its quant_method "" becomes None,
            // config/model.py:981), but a block that lost its fields cannot be told from an
            // unquantized checkpoint: refused instead of planned unquantized without a word.
            Got::Value(v @ Value::Object(map)) if map.is_empty() => {
                return Err(cfg.bad(
                    key,
                    "a quantization block with its `quant_method`, or null (or no key) for an unquantized checkpoint; an empty object names no quantization",
                    v,
                ));
            }
            Got::Value(Value::Object(map)) => {
                if let Some((first, _)) = found {
                    return Err(cfg.contradiction(format!(
                        "both `{first}` and `{key}` describe a quantization; keep one"
                    )));
                }
                found = Some((key, map));
            }
            Got::Value(v) => return Err(cfg.bad(key, "an object or null", v)),
        }
    }
    let side: Vec<String> = side_files.iter().map(|f| f.origin.to_owned()).collect();
    if let Some((key, map)) = found {
        let default = (key == "compression_config").then_some("compressed-tensors");
        let scheme = scheme::parse(cfg.origin(), key, map, default, stored)?;
        // vLLM's get_quant_config reads config.json's block first and the side files only
        // without one: they are reported as not read.
        return Ok((Some(scheme), side));
    }
    match side_files {
        [] => Ok((None, Vec::new())),
        [file] => {
            let map = crate::config::parse(file.text, file.origin)?;
            let default = match file.kind {
                SideFileKind::QuantizeConfig => Some("gptq"),
                SideFileKind::QuantConfig => Some("awq"),
                SideFileKind::HfQuantConfig => None,
            };
            let scheme = scheme::parse(file.origin, "", &map, default, stored)?;
            Ok((Some(scheme), Vec::new()))
        }
        [first, second, ..] => Err(HfError::Contradiction {
            origin: cfg.origin().to_owned(),
            message: format!(
                "the config has no quantization_config but two quantization side files sit next to it ({} and {}); which one the checkpoint follows cannot be told",
                first.origin, second.origin
            ),
        }),
    }
}

/// The storage passes and the build.
pub(crate) struct Storage<'a> {
    pub(crate) origin: &'a str,
    /// The dtype unquantized tensors, activations and the cache are planned in.
    pub(crate) planned: Dtype,
    pub(crate) kv: KvCacheDtype,
    pub(crate) scheme: Option<&'a Scheme>,
    /// How the engine holds the tensors after loading ([`LoadRules::default`]: the
    /// checkpoint's bytes).
    pub(crate) load: &'a LoadRules,
}

/// A built circuit and its quantization.
pub(crate) struct Built {
    pub(crate) circuit: Circuit,
    pub(crate) quantization: Option<Quantization>,
}

impl Storage<'_> {
    /// Applies the dtype and quantization passes to `decl` and builds it.
    pub(crate) fn build(&self, mut decl: CircuitDecl, tp: u64) -> Result<Built, HfError> {
        self.dtypes(&mut decl);
        let quantization = match self.scheme {
            Some(scheme) => Some(self.quantize(&mut decl, scheme, tp)?),
            None => None,
        };
        if self.scheme.is_some_and(|s| s.kv_cache_fp8) {
            self.kv_scales(&mut decl)?;
        }
        let name = decl.name.clone();
        let circuit = CircuitBuilder::from_decl(decl, format!("circuit `{name}`"))
            .build()
            .map_err(|source| crate::circuit_error(self.origin, source))?;
        Ok(Built {
            circuit,
            quantization,
        })
    }

    /// `bf16` (the emitters' name for the model dtype) becomes the planned dtype; KV states
    /// (written by `kv_write`) become `fp8` with an fp8 cache.
    fn dtypes(&self, decl: &mut CircuitDecl) {
        let planned = self.planned.format();
        let model = |format: &mut String| {
            if format == "bf16" {
                *format = planned.to_owned();
            }
        };
        for input in &mut decl.inputs {
            model(&mut input.format);
        }
        for block in &mut decl.blocks {
            let kv_writers: Vec<String> = block
                .nodes
                .iter()
                .filter(|n| n.op == "kv_write")
                .map(|n| n.id.clone())
                .collect();
            for node in &mut block.nodes {
                node.outputs.iter_mut().for_each(|o| model(&mut o.format));
                node.weights.iter_mut().for_each(|w| model(&mut w.format));
            }
            for state in &mut block.states {
                if self.kv == KvCacheDtype::Fp8 && kv_writers.contains(&state.writer) {
                    state.format = "fp8".to_owned();
                } else {
                    model(&mut state.format);
                }
            }
        }
    }

    /// The FP8 KV-cache scales a checkpoint stores beside each attention layer: an f32 scalar
    /// `k_scale` on its k projection and `v_scale` on its v projection (ModelOpt's names,
    /// `self_attn.k_proj.k_scale`; `self_attn.qkv_proj.{k,v}_scale` for a fused one), held by
    /// the layer's `kv_write` node, whole on every rank. An attention layer without k and v
    /// projections (multi-head latent attention) is refused: where its export puts the scales
    /// is not known.
    fn kv_scales(&self, decl: &mut CircuitDecl) -> Result<(), HfError> {
        for block in &mut decl.blocks {
            let Some(writer) = block.nodes.iter().position(|n| n.op == "kv_write") else {
                continue;
            };
            let tensor_ending = |end: &str| {
                block
                    .nodes
                    .iter()
                    .flat_map(|n| &n.weights)
                    .filter_map(|w| w.tensor.as_deref())
                    .find_map(|t| t.strip_suffix(end).map(str::to_owned))
            };
            let (k, v) = match (
                tensor_ending(".k_proj.weight"),
                tensor_ending(".v_proj.weight"),
                tensor_ending(".qkv_proj.weight"),
            ) {
                (Some(k), Some(v), _) => {
                    (format!("{k}.k_proj.k_scale"), format!("{v}.v_proj.v_scale"))
                }
                (_, _, Some(qkv)) => (
                    format!("{qkv}.qkv_proj.k_scale"),
                    format!("{qkv}.qkv_proj.v_scale"),
                ),
                _ => {
                    return Err(HfError::Refused {
                        origin: self.origin.to_owned(),
                        key: "kv_cache_quant_algo".to_owned(),
                        why: format!(
                            "FP8 KV-cache scales beside the attention of block `{}`, which has no k and v projections (multi-head latent attention): where the export stores them is not modelled",
                            block.name
                        ),
                    });
                }
            };
            let node = &mut block.nodes[writer];
            node.weights
                .push(circuit_ir::decl::WeightDecl::new("k_scale", ["1"], "f32").tensor(k));
            node.weights
                .push(circuit_ir::decl::WeightDecl::new("v_scale", ["1"], "f32").tensor(v));
        }
        Ok(())
    }

    /// `tp`: the tensor-parallel ranks `decl` is one rank of (its shapes are shards).
    fn quantize(
        &self,
        decl: &mut CircuitDecl,
        scheme: &Scheme,
        tp: u64,
    ) -> Result<Quantization, HfError> {
        let dims = evaluate_dims(decl);
        let embeddings: Vec<String> = decl
            .blocks
            .iter()
            .flat_map(|b| &b.nodes)
            .filter(|n| n.op == "embed")
            .flat_map(|n| n.weights.iter().filter_map(|w| w.tensor.clone()))
            .collect();
        let cx = Cx {
            origin: self.origin,
            scheme,
            dims: &dims,
            embeddings: &embeddings,
            tp,
            loaded_experts: scheme.loaded_experts(self.load).map(|(layout, _)| layout),
            loaded_linears: scheme.loaded_linears(self.load),
        };
        let mut stats = Stats::default();
        let mut blocks = Vec::with_capacity(decl.blocks.len());
        for block in std::mem::take(&mut decl.blocks) {
            let count = match &block.repeat {
                Some(r) => match eval_expr(r, &dims) {
                    Some(c) => Some(c),
                    // circuit-ir reports the bad repeat when it builds.
                    None => {
                        blocks.push(block);
                        continue;
                    }
                },
                None => None,
            };
            match count {
                None => blocks.push(cx.rewrite(block, &mut stats, 1)?),
                Some(count) => {
                    let decisions = (0..count)
                        .map(|i| cx.decisions(&block, Some(i)))
                        .collect::<Result<Vec<_>, _>>()?;
                    if decisions.windows(2).all(|w| w[0] == w[1]) {
                        let mut block = cx.rewrite(block, &mut stats, count)?;
                        block.repeat = Some(count.to_string().into());
                        blocks.push(block);
                    } else {
                        // Some pattern singles out some layers: one block per layer, tensor
                        // names with the true index, as emit.rs does for unlike layers.
                        for i in 0..count {
                            let mut once = block.clone();
                            once.name = format!("{}_{i}", block.name);
                            once.repeat = None;
                            for node in &mut once.nodes {
                                for w in &mut node.weights {
                                    if let Some(t) = &mut w.tensor {
                                        *t = t.replace("{i}", &i.to_string());
                                    }
                                }
                                for input in &mut node.inputs {
                                    *input = input.replace("{i}", &i.to_string());
                                }
                            }
                            blocks.push(cx.rewrite(once, &mut stats, 1)?);
                        }
                    }
                }
            }
        }
        decl.blocks = blocks;
        Ok(Quantization {
            method: scheme.method.to_owned(),
            source: if scheme.key.is_empty() {
                scheme.origin.clone()
            } else {
                format!("{}: {}", scheme.origin, scheme.key)
            },
            summary: if stats.relaid_experts {
                format!("{}; {}", scheme.summary, triton_mxfp4::SUMMARY)
            } else {
                scheme.summary.clone()
            },
            quantized: stats.quantized,
            linear: stats.linear,
            at_load: scheme.key == scheme::ONLINE_FP8_KEY,
        })
    }
}

#[derive(Debug, Default)]
struct Stats {
    quantized: u64,
    linear: u64,
    /// Some experts were laid out as the engine holds them after loading, not as stored.
    relaid_experts: bool,
}

/// The dims of `decl` evaluated in order (a dim that does not evaluate is left out: the
/// builder reports it).
fn evaluate_dims(decl: &CircuitDecl) -> Vec<(String, u64)> {
    let mut dims: Vec<(String, u64)> = Vec::new();
    for (name, e) in &decl.dims.0 {
        if let Some(v) = eval_expr(e, &dims) {
            dims.push((name.clone(), v));
        }
    }
    dims
}

struct Cx<'a> {
    origin: &'a str,
    scheme: &'a Scheme,
    dims: &'a [(String, u64)],
    embeddings: &'a [String],
    /// Tensor-parallel ranks (1: unsharded).
    tp: u64,
    /// The layout of quantized routed experts as the engine holds them after loading, when
    /// its load rules re-lay them out ([`Scheme::loaded_experts`]).
    loaded_experts: Option<Layout>,
    /// The layout of quantized linear modules (routed experts aside) as the engine holds them
    /// after loading, when its load rules' kernel library re-lays them out
    /// ([`Scheme::loaded_linears`]).
    loaded_linears: Option<Layout>,
}

/// A linear weight of a node: its module name (instance index expanded), kind and tiedness.
struct ModuleRef {
    name: String,
    kind: Kind,
    tied: bool,
}

impl Cx<'_> {
    /// The module of weight `w` of `node` in instance `index` (`None`: a once block, names
    /// final), or `None` when `w` is not a linear weight (a bias, a norm, a 1-D parameter).
    fn module(&self, node: &NodeDecl, w: &WeightDecl, index: Option<u64>) -> Option<ModuleRef> {
        let op = match node.op.as_str() {
            "weights_only" => w.name.split(crate::emit::HELD_OP_SEPARATOR).next()?,
            op => op,
        };
        let kind = Kind::of_op(op)?;
        if w.shape.len() < 2 {
            return None;
        }
        let tensor = w.tensor.as_deref()?;
        let tensor = match index {
            Some(i) => tensor.replace("{i}", &i.to_string()),
            None => tensor.to_owned(),
        };
        if kind == Kind::LmHead && self.embeddings.contains(&tensor) {
            return Some(ModuleRef {
                name: "lm_head".to_owned(),
                kind,
                tied: true,
            });
        }
        let (module, _) = split_tensor(&tensor);
        Some(ModuleRef {
            name: module.to_owned(),
            kind,
            tied: false,
        })
    }

    /// The layout chosen for `m`, the same for every expert of its tensor.
    fn decide(&self, m: &ModuleRef, w: &WeightDecl) -> Result<Option<&Layout>, HfError> {
        if let Some(why) = self.scheme.unknown(m.kind) {
            return Err(self.refused(format!("cannot plan `{}`: {why}", m.name)));
        }
        if !m.name.contains('*') {
            let layout = self.scheme.layout(&m.name, m.kind);
            if layout.is_some() && m.tied {
                return Err(self.refused(format!(
                    "quantizes lm_head, which is tied to model.embed_tokens ({}); a quantized tied head is not modelled",
                    self.scheme.summary
                )));
            }
            return Ok(layout);
        }
        let experts = w
            .count
            .as_ref()
            .and_then(|c| eval_expr(c, self.dims))
            .unwrap_or(1);
        let first = self.scheme.layout(&m.name.replace('*', "0"), m.kind);
        for e in 1..experts {
            let other = self
                .scheme
                .layout(&m.name.replacen('*', &e.to_string(), 1), m.kind);
            if other != first {
                return Err(self.refused(format!(
                    "quantizes some experts of `{}` and not others (expert 0 and expert {e} differ); per-expert choices are not modelled",
                    m.name
                )));
            }
        }
        Ok(first)
    }

    fn refused(&self, why: String) -> HfError {
        HfError::Refused {
            origin: self.scheme.origin.clone(),
            key: if self.scheme.key.is_empty() {
                "quant_method".to_owned()
            } else {
                self.scheme.key.clone()
            },
            why,
        }
    }

    /// The decision for every linear weight of `block` at instance `index`, to tell whether
    /// instances differ.
    fn decisions(
        &self,
        block: &BlockDecl,
        index: Option<u64>,
    ) -> Result<Vec<Option<Layout>>, HfError> {
        let mut out = Vec::new();
        for node in &block.nodes {
            for w in &node.weights {
                if let Some(m) = self.module(node, w, index) {
                    out.push(self.decide(&m, w)?.cloned());
                }
            }
        }
        Ok(out)
    }

    /// `block` with each linear weight replaced by the tensors its format stores. A repeated
    /// block is rewritten from instance 0's decisions (all instances agree).
    /// `instances` is the number of instances the block stands for, for the counts.
    fn rewrite(
        &self,
        mut block: BlockDecl,
        stats: &mut Stats,
        instances: u64,
    ) -> Result<BlockDecl, HfError> {
        let decide_at = block.repeat.as_ref().map(|_| 0);
        // The inputs already read by a linear re-laid out for the engine: linears reading one
        // input are one fused module once loaded (vLLM's QKVParallelLinear and
        // MergedColumnParallelLinear), which holds one `g_idx` and one sort index (a
        // RowvLLMParameter of input_size_per_partition, every shard loading the same rows).
        let mut fused_inputs: Vec<String> = Vec::new();
        for node in &mut block.nodes {
            let mut weights: Vec<WeightDecl> = Vec::with_capacity(node.weights.len());
            // (module, parameter, bias rule, out width) of the quantized weights.
            let mut quantized: Vec<(String, String, Bias, ExprText, Option<ExprText>)> = Vec::new();
            for w in &node.weights {
                let Some(m) = self.module(node, w, decide_at) else {
                    weights.push(w.clone());
                    continue;
                };
                let layout = self.decide(&m, w)?;
                stats.linear += instances;
                if layout.is_some() {
                    stats.quantized += instances;
                }
                let layout = match (&self.loaded_experts, m.kind, layout) {
                    (Some(held), Kind::Expert, Some(_)) => {
                        stats.relaid_experts = true;
                        Some(held)
                    }
                    (Some(_), Kind::Expert, None) => {
                        // The re-layout applies to every routed expert: vLLM 0.19's
                        // Mxfp4Config.from_config keeps no ignore list and get_quant_method
                        // gives every FusedMoE an Mxfp4MoEMethod (quantization/mxfp4.py).
                        return Err(self.refused(format!(
                            "leaves the experts `{}` unquantized, but the engine's MXFP4 expert layout re-lays every routed expert out (its MXFP4 method has no ignore list), so their stored tensors would not load",
                            m.name
                        )));
                    }
                    (_, Kind::Expert, layout) => layout,
                    (_, _, Some(stored)) => self.loaded_linears.as_ref().or(Some(stored)),
                    (_, _, None) => None,
                };
                let relaid = layout
                    .zip(self.loaded_linears.as_ref())
                    .is_some_and(|(l, h)| std::ptr::eq(l, h));
                let Some(layout) = layout else {
                    weights.push(w.clone());
                    continue;
                };
                let tensor = w.tensor.as_deref().unwrap_or_default();
                let eval = |e: &ExprText| eval_expr(e, self.dims);
                let in_ranks = if crate::emit::row_parallel(&node.op, &node.id) {
                    self.tp
                } else {
                    1
                };
                let stored = layout
                    .apply(&Original {
                        decl: w,
                        tensor,
                        eval: &eval,
                        in_ranks,
                    })
                    .map_err(|misfit| HfError::Contradiction {
                        origin: self.origin.to_owned(),
                        message: format!(
                            "{} ({}) cannot store `{}`: {}",
                            self.scheme.method, self.scheme.summary, m.name, misfit.what
                        ),
                    })?;
                let mut stored = stored;
                if relaid && let Some(input) = node.inputs.first() {
                    if fused_inputs.contains(input) {
                        stored.retain(|w| {
                            let t = w.tensor.as_deref().unwrap_or_default();
                            !t.ends_with(".g_idx") && !t.ends_with(".g_idx_sort_indices")
                        });
                    } else {
                        fused_inputs.push(input.clone());
                    }
                }
                let (module, param) = split_tensor(tensor);
                if param == "weight" && layout.fused_parameters_only() {
                    return Err(HfError::Contradiction {
                        origin: self.origin.to_owned(),
                        message: format!(
                            "{} stores the fused expert tensors of gpt-oss (`<parameter>_blocks`, `<parameter>_scales`); `{}` is a per-expert `.weight`, which the format as transformers writes it does not cover",
                            self.scheme.method, m.name
                        ),
                    });
                }
                let out = w.shape[w.shape.len() - 2].clone();
                quantized.push((
                    module.to_owned(),
                    param.to_owned(),
                    layout.bias,
                    out,
                    w.count.clone(),
                ));
                weights.extend(stored);
            }
            for (module, param, bias, out, count) in quantized {
                let names = [format!("{module}.bias"), format!("{module}.{param}_bias")];
                let existing = weights
                    .iter_mut()
                    .find(|w| w.tensor.as_ref().is_some_and(|t| names.contains(t)));
                match (bias, existing) {
                    (Bias::Keep, _) | (Bias::As(_), None) => {}
                    (Bias::As(f) | Bias::Always(f), Some(b)) => b.format = f.to_owned(),
                    (Bias::Always(f), None) => {
                        let mut b = WeightDecl::new(format!("{param}_bias"), [out], f)
                            .tensor(names[0].clone());
                        b.count = count;
                        weights.push(b);
                    }
                }
            }
            node.weights = weights;
        }
        Ok(block)
    }
}

#[cfg(test)]
mod tests {
    use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, WeightDecl};

    use super::*;

    /// triton_kernels' Hopper layout with vLLM 0.19's rounding of a rank's expert intermediate
    /// size to 64 (the `[load]` of engines/vllm-0.19/engine.toml).
    const TRITON_HOPPER: LoadRules = LoadRules {
        mxfp4_experts: Some(model_facts::Mxfp4ExpertLayout::TritonHopper {
            expert_ffn_multiple: 64,
            scale_in_multiple: 32,
        }),
        vision_tower: model_facts::TowerBuild::Whole,
        mtp_layers: model_facts::MtpLayers::Held,
        gptq_linears: model_facts::LinearKernel::Stored,
        awq_linears: model_facts::LinearKernel::Stored,
    };

    /// gpt-oss-20b's routed experts as the importer declares them (fused `[out, in]` per
    /// expert, the transformers names of the bf16 checkpoint), with their biases.
    fn gpt_oss_experts() -> CircuitDecl {
        let mut b = CircuitBuilder::new("experts");
        b.dim("hidden", 2880)
            .dim("moe_ffn", 2880)
            .dim("experts", 32)
            .dim("layers", 24)
            .input("x", "n", "hidden", "bf16");
        let w = |name: &str, shape: [&str; 2], tensor: &str| {
            WeightDecl::new(name, shape, "bf16")
                .tensor(format!("model.layers.{{i}}.mlp.experts.{tensor}"))
                .count("experts")
        };
        let bias = |name: &str, width: &str, tensor: &str| {
            WeightDecl::new(name, [width], "bf16")
                .tensor(format!("model.layers.{{i}}.mlp.experts.{tensor}"))
                .count("experts")
        };
        b.block(
            BlockDecl::repeated("layer", "layers")
                .stream(Some("x"), Some("y"))
                .node(
                    NodeDecl::new("experts_gate_up", "expert_linear")
                        .reads(["x"])
                        .writes(OutDecl::new("h", "n", "2 * moe_ffn", "bf16"))
                        .weight(w("w", ["2 * moe_ffn", "hidden"], "gate_up_proj"))
                        .weight(bias("b", "2 * moe_ffn", "gate_up_proj_bias")),
                )
                .node(
                    NodeDecl::new("experts_down", "expert_linear")
                        .reads(["h"])
                        .writes(OutDecl::new("y", "n", "hidden", "bf16"))
                        .weight(w("w", ["hidden", "moe_ffn"], "down_proj"))
                        .weight(bias("b", "hidden", "down_proj_bias")),
                ),
        );
        b.output("layer.23.y");
        b.decl().clone()
    }

    /// DeepSeek-R1's block: its MTP layer's eh_proj and shared_head.head stay bf16 whatever op
    /// the emitter gives them, the router is never a candidate, the projections are.
    #[test]
    fn deepseek_fp8_keeps_the_mtp_projection_and_head_unquantized() {
        let quant = serde_json::json!({"activation_scheme": "dynamic", "fmt": "e4m3",
            "quant_method": "fp8", "weight_block_size": [128, 128]});
        let scheme = scheme::parse(
            "deepseek-r1/config.json",
            "quantization_config",
            quant.as_object().unwrap(),
            None,
            Dtype::Bfloat16,
        )
        .unwrap();
        for (name, kind) in [
            ("model.layers.61.eh_proj", Kind::Linear),
            ("model.layers.61.shared_head.head", Kind::Linear),
            ("model.layers.61.shared_head.head", Kind::LmHead),
            ("lm_head", Kind::LmHead),
            ("model.layers.3.mlp.gate", Kind::Router),
        ] {
            assert!(scheme.layout(name, kind).is_none(), "{name}");
        }
        for (name, kind) in [
            ("model.layers.61.self_attn.kv_b_proj", Kind::Linear),
            ("model.layers.61.mlp.experts.255.down_proj", Kind::Expert),
            ("model.layers.0.mlp.down_proj", Kind::Linear),
        ] {
            assert!(scheme.layout(name, kind).is_some(), "{name}");
        }
    }

    /// gpt-oss-20b's experts stored as the MXFP4 block `quant` says, held as `load` says, in
    /// bf16 at TP 1.
    fn mxfp4_experts(quant: &serde_json::Value, load: &LoadRules) -> Built {
        let scheme = scheme::parse(
            "gpt-oss-20b/config.json",
            "quantization_config",
            quant.as_object().unwrap(),
            None,
            Dtype::Bfloat16,
        )
        .unwrap();
        let storage = Storage {
            origin: "gpt-oss-20b/config.json",
            planned: Dtype::Bfloat16,
            kv: KvCacheDtype::Auto,
            scheme: Some(&scheme),
            load,
        };
        storage.build(gpt_oss_experts(), 1).unwrap()
    }

    #[test]
    fn mxfp4_blocks_and_scales_of_gpt_oss_20b() {
        let quant = serde_json::json!({
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                "model.embed_tokens", "lm_head"],
            "quant_method": "mxfp4"
        });
        let built = mxfp4_experts(&quant, &LoadRules::default());
        // transformers mxfp4.py: `<param>_blocks` u8 [E, out, in / 32, 16] and `_scales` u8
        // [E, out, in / 32]; the biases stay bf16 [E, out]. Per layer: gate_up 32 x 5760 x
        // (1440 + 90) + 32 x 5760 x 2, down 32 x 2880 x (1440 + 90) + 32 x 2880 x 2:
        // 282,378,240 + 141,189,120 = 423,567,360; 24 layers: 10,165,616,640, the MXFP4 part
        // of gpt-oss-20b's 13,761,264,768 bytes (the rest is bf16 attention, router, sinks,
        // norms, embed_tokens and lm_head: 3,595,648,128).
        assert_eq!(built.circuit.weight_bytes(), 10_165_616_640);
        let names: Vec<&str> = built
            .circuit
            .tensors()
            .values()
            .filter(|t| t.name.starts_with("model.layers.0."))
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "model.layers.0.mlp.experts.gate_up_proj_blocks",
                "model.layers.0.mlp.experts.gate_up_proj_scales",
                "model.layers.0.mlp.experts.gate_up_proj_bias",
                "model.layers.0.mlp.experts.down_proj_blocks",
                "model.layers.0.mlp.experts.down_proj_scales",
                "model.layers.0.mlp.experts.down_proj_bias",
            ]
        );
        let q = built.quantization.unwrap();
        assert_eq!((q.quantized, q.linear), (48, 48));
    }

    /// The same experts in triton_kernels' Hopper layout (`triton_mxfp4.rs`), as vLLM 0.19
    /// holds them on an H100 after loading,
    /// at TP 1 (I = 2880, already a multiple of 64), per expert in bytes: gate_up values
    /// round_up(5760, 64) x round_up(1440, 64) = 5760 x 1472 = 8,478,720, scales as loaded
    /// 5760 x 90 = 518,400, swizzled round_up(5760, 256) x 90 = 5888 x 90 = 529,920, f32 bias
    /// 23,040; down values 2880 x 1472 = 4,239,360, scales 2880 x 90 = 259,200, swizzled
    /// round_up(2880, 256) x 90 = 3072 x 90 = 276,480, f32 bias 11,520: 14,336,640, times 32
    /// experts and 24 layers 11,010,539,520.
    #[test]
    fn mxfp4_experts_in_triton_kernels_hopper_layout() {
        let quant = serde_json::json!({"quant_method": "mxfp4"});
        let built = mxfp4_experts(&quant, &TRITON_HOPPER);
        assert_eq!(built.circuit.weight_bytes(), 11_010_539_520);
        let held: Vec<(&str, String)> = built
            .circuit
            .tensors()
            .values()
            .filter(|t| t.name.starts_with("model.layers.0."))
            .map(|t| (t.name.as_str(), t.format.to_string()))
            .collect();
        assert_eq!(
            held,
            [
                (
                    "model.layers.0.mlp.experts.gate_up_proj_blocks",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.gate_up_proj_scales",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.gate_up_proj_scales_swizzled",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.gate_up_proj_bias",
                    "f32".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.down_proj_blocks",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.down_proj_scales",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.down_proj_scales_swizzled",
                    "u8".to_owned()
                ),
                (
                    "model.layers.0.mlp.experts.down_proj_bias",
                    "f32".to_owned()
                ),
            ]
        );
    }
}

#[cfg(test)]
mod docs {
    /// docs/quantization.md names every setting the importer reads or ignores.
    #[test]
    fn the_doc_lists_every_setting() {
        let doc = include_str!("../../../../docs/quantization.md");
        for keys in super::scheme::ALL_KEYS {
            for key in keys.read.iter().chain(keys.ignored) {
                assert!(
                    doc.contains(&format!("`{key}`")),
                    "{}: `{key}` is not in docs/quantization.md",
                    keys.format
                );
            }
        }
    }
}
