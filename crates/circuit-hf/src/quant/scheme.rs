//! The quantization scheme of a checkpoint, parsed once from its `quantization_config` (or
//! `compression_config`, or a side file) into typed values: which linear modules are
//! quantized and, for each, the [`Layout`] of tensors the format stores. docs/quantization.md
//! gives each format's tensors and the source file of every fact used here.
//!
//! Invariants: every key of a quantization block is read, known to leave the stored tensors
//! unchanged, or refused (an unknown key is refused, since it might change them); a format or
//! option that is not modelled is refused with a message naming it; patterns follow the
//! matching rule of the tool that wrote them ([`Pattern`]).

use model_facts::{LinearKernel, LoadRules, Mxfp4ExpertLayout};
use serde_json::{Map, Value};

use super::layout::{Bias, Layout, Size, Stored};
use super::pattern::{BadPattern, Pattern, Patterns};
use crate::error::HfError;
use crate::options::Dtype;

/// What kind of module a linear-op weight belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A projection of a decoder layer (op `linear`).
    Linear,
    /// Routed experts (op `expert_linear`).
    Expert,
    /// The output head (op `lm_head`).
    LmHead,
    /// The MoE router (op `router`).
    Router,
}

impl Kind {
    /// The kind of a node's weights, for ops with a linear weight.
    pub(crate) fn of_op(op: &str) -> Option<Kind> {
        Some(match op {
            "linear" => Kind::Linear,
            "expert_linear" => Kind::Expert,
            "lm_head" => Kind::LmHead,
            "router" => Kind::Router,
            _ => return None,
        })
    }
}

/// Which kinds a format may quantize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kinds {
    linear: bool,
    expert: bool,
    lm_head: bool,
    router: bool,
}

impl Kinds {
    fn has(self, kind: Kind) -> bool {
        match kind {
            Kind::Linear => self.linear,
            Kind::Expert => self.expert,
            Kind::LmHead => self.lm_head,
            Kind::Router => self.router,
        }
    }
}

/// How modules are chosen and laid out.
#[derive(Debug, Clone)]
enum Rule {
    /// One layout for every module of `kinds` that no `skip` pattern matches and, when
    /// `only` is given, some `only` pattern matches.
    Uniform {
        layout: Layout,
        kinds: Kinds,
        skip: Patterns,
        only: Option<Patterns>,
    },
    /// compressed-tensors: config groups of targets, each with its layout, and a global
    /// ignore list.
    Groups {
        /// `(target text, pattern, group)` for every target, the group being the last that
        /// lists the target (`apply_quantization_config`'s `target_to_scheme`), ordered as
        /// `match_targets` tries them: exact names and regexes first, sorted by
        /// `("re:" in target, target)`, then class names.
        targets: Vec<(String, Pattern, usize)>,
        layouts: Vec<Layout>,
        ignore: Patterns,
    },
}

/// A parsed quantization scheme.
#[derive(Debug, Clone)]
pub(crate) struct Scheme {
    /// The file the block came from.
    pub(crate) origin: String,
    /// Where in it: `quantization_config`, `compression_config`, or the side file's top level
    /// (`quantize_config.json`).
    pub(crate) key: String,
    /// The format, e.g. `gptq`, `compressed-tensors`.
    pub(crate) method: &'static str,
    /// One line: what is stored, e.g. `4-bit, group 128, AutoGPTQ layout (f16 bias on every
    /// quantized linear)`.
    pub(crate) summary: String,
    rule: Rule,
    /// A kind of module the format's files may or may not quantize, so that its bytes are
    /// unknown: refused, with why.
    unknown: Option<(Kind, &'static str)>,
    /// GPTQ's `desc_act`: the input channels are permuted by `g_idx`, so a row-parallel rank
    /// of vLLM keeps its module's scales and zeros whole rather than its share.
    desc_act: bool,
    /// GPTQ's group size is one Machete implements (-1, 64 or 128:
    /// machete_utils.py `query_machete_supported_group_sizes` for 16-bit activations).
    machete_group: bool,
    /// The checkpoint stores FP8 KV-cache scales (ModelOpt's `kv_cache_quant_algo: FP8`, or
    /// `kv_cache_scheme` of 8-bit floats): an f32 `k_scale` and `v_scale` per attention layer,
    /// and a KV cache in fp8 unless another dtype is asked for.
    pub(crate) kv_cache_fp8: bool,
}

impl Scheme {
    /// Whether groups follow an activation order (GPTQ `desc_act`, compressed-tensors
    /// `actorder: group`, stored as a `g_idx`): vLLM's row-parallel layers then keep every
    /// group's scales and zeros on each rank (`gptq.py`, `gptq_marlin.py`,
    /// `compressed_tensors_wNa16.py`: no input-dim partition of the scales under act order),
    /// which a shard of the module's shape does not give.
    pub(crate) fn act_order(&self) -> bool {
        let group_g_idx = |l: &Layout| {
            l.tensors
                .iter()
                .any(|t| t.name == crate::quant::layout::Name::Sibling("weight_g_idx"))
        };
        self.desc_act
            || match &self.rule {
                Rule::Uniform { layout, .. } => group_g_idx(layout),
                Rule::Groups { layouts, .. } => layouts.iter().any(group_g_idx),
            }
    }

    /// The layout `load` re-lays the routed experts out in after loading, when it is not the
    /// checkpoint's (MXFP4 under [`Mxfp4ExpertLayout::TritonHopper`], `triton_mxfp4.rs`), with
    /// the multiple each rank's expert intermediate size is rounded up to.
    pub(crate) fn loaded_experts(&self, load: &LoadRules) -> Option<(Layout, u64)> {
        if self.method != "mxfp4" {
            return None;
        }
        match load.mxfp4_experts? {
            Mxfp4ExpertLayout::TritonHopper {
                expert_ffn_multiple,
                scale_in_multiple,
            } => Some((
                super::triton_mxfp4::held_experts(scale_in_multiple),
                expert_ffn_multiple,
            )),
        }
    }

    /// The layout GPTQ's linear modules (not its routed experts, which a MoE method of their
    /// own loads) are held in after loading, when the load rules' kernel library is not the
    /// checkpoint's layout: Marlin's ([`LinearKernel::Marlin`], or Machete's where Machete
    /// cannot implement the group size and the selector moves on to Marlin); AWQ's as
    /// [`Scheme::awq_loaded`] says; `None` keeps the stored layout.
    pub(crate) fn loaded_linears(&self, load: &LoadRules) -> Option<Layout> {
        if self.method == "awq" {
            return self.awq_loaded(load);
        }
        if self.method != "gptq" {
            return None;
        }
        let marlin = match load.gptq_linears {
            LinearKernel::Stored => false,
            LinearKernel::Machete => !self.machete_group,
            LinearKernel::Marlin => true,
        };
        let Rule::Uniform { layout, .. } = &self.rule else {
            return None;
        };
        if !marlin {
            return None;
        }
        // MarlinLinearKernel.process_weights_after_loading (vLLM 0.19
        // model_executor/kernels/linear/mixed_precision/marlin.py:135-168): symmetric GPTQ
        // (zero_points=False, gptq_marlin.py:369) replaces `qzeros` by an empty tensor; under
        // act order `g_idx` is replaced by its sorted copy and `g_idx_sort_indices` (int32,
        // one per input row) is added; without it both are empty. qweight and scales are
        // repacked to the same element counts (gptq_marlin_repack, marlin_permute_scales).
        let mut held = layout.clone();
        held.tensors.retain(|t| {
            let name = match t.name {
                super::layout::Name::Sibling(n) => n,
                _ => return true,
            };
            name != "qzeros" && (self.desc_act || name != "g_idx")
        });
        if self.desc_act {
            held.tensors
                .push(Stored::new("g_idx_sort_indices", vec![Size::In], "i32"));
        }
        Some(held)
    }

    /// AWQ's linears as held for Machete (vLLM 0.19 awq_marlin.py:392-405 AWQMarlinLinearMethod
    /// goes through choose_mp_linear_kernel with zero points): MacheteLinearKernel's
    /// transform_w_zp (mixed_precision/machete.py:110-125) unpacks the int32 zero points and
    /// pre-applies the scales, holding `[groups, out]` in the scales' 16-bit dtype; qweight and
    /// scales keep their counts. Marlin's layout (awq_marlin_repack, marlin_zero_points) and a
    /// group size Machete does not implement keep the stored bytes: `None`.
    fn awq_loaded(&self, load: &LoadRules) -> Option<Layout> {
        if load.awq_linears != LinearKernel::Machete || !self.machete_group {
            return None;
        }
        let Rule::Uniform { layout, .. } = &self.rule else {
            return None;
        };
        let mut held = layout.clone();
        for t in &mut held.tensors {
            if t.name == super::layout::Name::Sibling("qzeros") {
                t.shape[1] = Size::Out;
                t.format = "f16".to_owned();
            }
        }
        Some(held)
    }

    /// Why modules of `kind` cannot be planned under this format, if they cannot.
    pub(crate) fn unknown(&self, kind: Kind) -> Option<&'static str> {
        self.unknown.filter(|(k, _)| *k == kind).map(|(_, why)| why)
    }

    /// The layout of module `name` of `kind`, or `None` when it stays unquantized.
    pub(crate) fn layout(&self, name: &str, kind: Kind) -> Option<&Layout> {
        match &self.rule {
            Rule::Uniform {
                layout,
                kinds,
                skip,
                only,
            } => {
                if !kinds.has(kind) || skip.any(name) {
                    return None;
                }
                if let Some(only) = only
                    && !only.any(name)
                {
                    return None;
                }
                Some(layout)
            }
            Rule::Groups {
                targets,
                layouts,
                ignore,
            } => {
                if ignore.any(name) {
                    return None;
                }
                // Name matches (exact, then regex) before class matches.
                let by_name = targets
                    .iter()
                    .find(|(_, p, _)| !matches!(p, Pattern::Linear) && p.matches(name, true));
                let by_class = || {
                    targets
                        .iter()
                        .find(|(_, p, _)| matches!(p, Pattern::Linear))
                };
                by_name.or_else(by_class).map(|(_, _, g)| &layouts[*g])
            }
        }
    }
}

/// A JSON object of a quantization block, with the path of its keys for messages.
struct Block<'a> {
    origin: &'a str,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Block<'a> {
    fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn bad(&self, key: &str, expected: &str, found: &Value) -> HfError {
        HfError::BadValue {
            origin: self.origin.to_owned(),
            key: self.key(key),
            expected: expected.to_owned(),
            found: crate::config::render(found),
        }
    }

    fn refused(&self, key: &str, why: impl Into<String>) -> HfError {
        HfError::Refused {
            origin: self.origin.to_owned(),
            key: self.key(key),
            why: why.into(),
        }
    }

    fn pattern(&self, key: &str, made: Result<Pattern, BadPattern>) -> Result<Pattern, HfError> {
        made.map_err(|b| self.refused(key, format!("entry `{}` {}", b.pattern, b.why)))
    }

    /// The value of `key`, `None` when absent or null.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn int(&self, key: &str) -> Result<Option<i64>, HfError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.bad(key, "a whole number", v)),
        }
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, HfError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.bad(key, "true or false", v)),
        }
    }

    fn text(&self, key: &str) -> Result<Option<&'a str>, HfError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.bad(key, "a string", v)),
        }
    }

    /// A list of strings; GPTQ's `modules_in_block_to_quantize` may nest one level.
    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, HfError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let expected = "a list of strings";
        let items = v.as_array().ok_or_else(|| self.bad(key, expected, v))?;
        let mut out = Vec::new();
        for item in items {
            match item {
                Value::String(s) => out.push(s.clone()),
                Value::Array(inner) => {
                    for s in inner {
                        out.push(
                            s.as_str()
                                .ok_or_else(|| self.bad(key, expected, v))?
                                .to_owned(),
                        );
                    }
                }
                _ => return Err(self.bad(key, expected, v)),
            }
        }
        Ok(Some(out))
    }

    fn object(&self, key: &str) -> Result<Option<Block<'a>>, HfError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Block {
                origin: self.origin,
                path: self.key(key),
                map,
            })),
            Some(v) => Err(self.bad(key, "an object", v)),
        }
    }

    /// Refuses keys that are neither read (`read`) nor known to leave the stored tensors
    /// unchanged (`ignored`).
    fn known(&self, keys: &Keys) -> Result<(), HfError> {
        let format = keys.format;
        for key in self.map.keys() {
            if !keys.read.contains(&key.as_str()) && !keys.ignored.contains(&key.as_str()) {
                return Err(self.refused(
                    key,
                    format!(
                        "is not a {format} setting the importer knows: it might change the stored tensors, so it is refused (docs/quantization.md lists the settings read and ignored)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The keys of one kind of quantization block: read, and known to leave the stored tensors
/// unchanged.
pub(crate) struct Keys {
    pub(crate) format: &'static str,
    pub(crate) read: &'static [&'static str],
    pub(crate) ignored: &'static [&'static str],
}

const MODELOPT: Keys = Keys {
    format: "ModelOpt",
    read: &["producer", "quantization"],
    ignored: &[],
};

const GPTQ: Keys = Keys {
    format: "GPTQ",
    read: &[
        "quant_method",
        "bits",
        "group_size",
        "desc_act",
        "sym",
        "lm_head",
        "checkpoint_format",
        "format",
        "meta",
        "dynamic",
        "modules_in_block_to_quantize",
        "is_marlin_format",
        "pack_dtype",
    ],
    ignored: &[
        "damp_percent",
        "damp_auto_increment",
        "true_sequential",
        "static_groups",
        "model_name_or_path",
        "model_file_base_name",
        "tokenizer",
        "dataset",
        "use_cuda_fp16",
        "model_seqlen",
        "block_name_to_quantize",
        "module_name_preceding_first_block",
        "batch_size",
        "pad_token_id",
        "use_exllama",
        "max_input_length",
        "exllama_config",
        "cache_block_outputs",
        "backend",
        "act_group_aware",
        "mse",
        "v2",
        "v2_alpha",
        "hyb_act",
        "quantizer",
        "adapter",
        "rotation",
        "device",
        "offload_to_disk",
        "offload_to_disk_path",
        "mock_quantization",
        "pack_impl",
        "parallel_packing",
        "use_marlin",
    ],
};

const AWQ: Keys = Keys {
    format: "AWQ",
    read: &[
        "quant_method",
        "bits",
        "w_bit",
        "group_size",
        "q_group_size",
        "zero_point",
        "version",
        "format",
        "modules_to_not_convert",
    ],
    ignored: &[
        "backend",
        "do_fuse",
        "fuse_max_seq_len",
        "exllama_config",
        "sym",
        "desc_act",
    ],
};

const FP8: Keys = Keys {
    format: "fp8",
    read: &[
        "quant_method",
        "activation_scheme",
        "weight_block_size",
        "modules_to_not_convert",
        "ignored_layers",
        "scale_fmt",
        "expert_dtype",
        "modules_to_convert",
        "fmt",
        "kv_cache_scheme",
    ],
    ignored: &["dequantize"],
};

const FBGEMM_FP8: Keys = Keys {
    format: "fbgemm_fp8",
    read: &["quant_method", "modules_to_not_convert"],
    ignored: &["activation_scale_ub"],
};

const MXFP4: Keys = Keys {
    format: "mxfp4",
    read: &["quant_method", "modules_to_not_convert"],
    ignored: &["dequantize"],
};

const COMPRESSED_TENSORS_QUANTIZATION_ARGS: Keys = Keys {
    format: "compressed-tensors quantization args",
    read: &[
        "num_bits",
        "type",
        "symmetric",
        "group_size",
        "strategy",
        "block_structure",
        "dynamic",
        "actorder",
        "scale_dtype",
        "zp_dtype",
    ],
    ignored: &["observer", "observer_kwargs"],
};

const COMPRESSED_TENSORS: Keys = Keys {
    format: "compressed-tensors",
    read: &[
        "quant_method",
        "config_groups",
        "format",
        "ignore",
        "kv_cache_scheme",
        "quantization_status",
        "sparsity_config",
        "transform_config",
        "moe_sparsity_config",
    ],
    ignored: &[
        "global_compression_ratio",
        "version",
        "total_num_heads",
        "total_num_kv_heads",
    ],
};

const COMPRESSED_TENSORS_SCHEME: Keys = Keys {
    format: "compressed-tensors scheme",
    read: &[
        "targets",
        "weights",
        "input_activations",
        "output_activations",
        "format",
    ],
    ignored: &[],
};

const MODELOPT_2: Keys = Keys {
    format: "ModelOpt",
    read: &[
        "quant_method",
        "quant_algo",
        "group_size",
        "exclude_modules",
        "ignore",
        "kv_cache_quant_algo",
        "kv_cache_scheme",
    ],
    ignored: &["producer", "config_groups", "quantized_layers"],
};

/// Every key list, for the docs test.
#[cfg(test)]
pub(crate) const ALL_KEYS: &[&Keys] = &[
    &MODELOPT,
    &GPTQ,
    &AWQ,
    &FP8,
    &FBGEMM_FP8,
    &MXFP4,
    &COMPRESSED_TENSORS_QUANTIZATION_ARGS,
    &COMPRESSED_TENSORS,
    &COMPRESSED_TENSORS_SCHEME,
    &MODELOPT_2,
];

/// The formats modelled, for messages.
pub(crate) const METHODS: &str = "gptq, awq, fp8, fbgemm_fp8, mxfp4, compressed-tensors, modelopt";

/// Parses a quantization block (`map`, found at `key` of `origin`); `stored` is the
/// checkpoint's dtype (compressed-tensors stores its scales in it).
pub(crate) fn parse(
    origin: &str,
    key: &str,
    map: &Map<String, Value>,
    default_method: Option<&'static str>,
    stored: Dtype,
) -> Result<Scheme, HfError> {
    let block = Block {
        origin,
        path: key.to_owned(),
        map,
    };
    // ModelOpt's hf_quant_config.json nests its settings under `quantization`.
    if let Some(producer) = block.object("producer")? {
        let name = producer.text("name")?.unwrap_or("");
        if name != "modelopt" {
            return Err(block.refused(
                "producer",
                format!("names `{name}`; only ModelOpt's hf_quant_config.json is modelled"),
            ));
        }
        block.known(&MODELOPT)?;
        let inner = block
            .object("quantization")?
            .ok_or_else(|| block.refused("quantization", "is missing"))?;
        return modelopt(origin, key, &inner);
    }
    let method = match block.text("quant_method")? {
        Some(m) => m.to_owned(),
        None => match default_method {
            Some(m) => m.to_owned(),
            None => {
                return Err(block.refused("quant_method", "is missing: the format cannot be told"));
            }
        },
    };
    let desc_act = method == "gptq" && block.flag("desc_act")?.unwrap_or(false);
    let machete_group = matches!(
        block.int("group_size")?.or(block.int("q_group_size")?),
        Some(-1 | 64 | 128)
    );
    let scheme = |method, summary, rule| {
        Scheme {
        origin: origin.to_owned(),
        key: key.to_owned(),
        method,
        summary,
        rule,
        unknown: (method == "fbgemm_fp8").then_some((
            Kind::Expert,
            "transformers 5 converts no routed experts but Llama 4's to fbgemm_fp8 (its fused experts are not nn.Linear) while older writers converted each expert's linears, so the experts' bytes are not certain",
        )),
        desc_act,
        machete_group,
        kv_cache_fp8: false,
    }
    };
    match method.as_str() {
        "gptq" => gptq(&block).map(|(s, r)| scheme("gptq", s, r)),
        "awq" => awq(&block).map(|(s, r)| scheme("awq", s, r)),
        "fp8" => fp8(&block).map(|(s, r)| scheme("fp8", s, r)),
        "fbgemm_fp8" => fbgemm(&block).map(|(s, r)| scheme("fbgemm_fp8", s, r)),
        "mxfp4" => mxfp4(&block).map(|(s, r)| scheme("mxfp4", s, r)),
        "compressed-tensors" => {
            compressed_tensors(&block, stored).map(|(s, r)| scheme("compressed-tensors", s, r))
        }
        "modelopt" => modelopt(origin, key, &block),
        "bitsandbytes" => Err(block.refused(
            "quant_method",
            "is `bitsandbytes`, which is not modelled: its 4-bit layout stores a variable-length quantization state per weight",
        )),
        other => Err(block.refused(
            "quant_method",
            format!("is `{other}`, which is not modelled (modelled: {METHODS})"),
        )),
    }
}

fn transformers_patterns(block: &Block<'_>, key: &str) -> Result<Option<Vec<Pattern>>, HfError> {
    block
        .strings(key)?
        .map(|list| {
            list.iter()
                .map(|k| block.pattern(key, Pattern::transformers(k)))
                .collect()
        })
        .transpose()
}

/// GPTQ, as AutoGPTQ and GPTQModel write it and vLLM's `gptq.py` loads it.
fn gptq(block: &Block<'_>) -> Result<(String, Rule), HfError> {
    block.known(&GPTQ)?;
    let bits = match block.int("bits")? {
        Some(b @ (2 | 3 | 4 | 8)) => b as u64,
        Some(b) => {
            return Err(block.refused(
                "bits",
                format!("is {b}: GPTQ stores 2, 3, 4 or 8 bits (its loaders' gptq.py)"),
            ));
        }
        None => return Err(block.refused("bits", "is missing")),
    };
    let group = group_size(block)?;
    if block.flag("is_marlin_format")? == Some(true) {
        return Err(block.refused(
            "is_marlin_format",
            "is true: AutoGPTQ's Marlin repacking (B, s tensors) is not modelled",
        ));
    }
    let format = match (block.text("checkpoint_format")?, block.text("format")?) {
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => "gptq",
    };
    if !matches!(format, "gptq" | "gptq_v2") {
        return Err(block.refused(
            "checkpoint_format",
            format!("is `{format}`: only the gptq and gptq_v2 layouts (qweight, qzeros, scales, g_idx) are modelled"),
        ));
    }
    if let Some(pack) = block.text("pack_dtype")?
        && pack != "int32"
        && pack != "torch.int32"
    {
        return Err(block.refused(
            "pack_dtype",
            format!("is `{pack}`: only int32 packing is modelled"),
        ));
    }
    if let Some(d) = block.get("dynamic")
        && d.as_object().is_none_or(|m| !m.is_empty())
    {
        return Err(block.refused(
            "dynamic",
            "overrides the scheme per module (GPTQModel), which is not modelled",
        ));
    }
    // AutoGPTQ's QuantLinear is always built with a bias (its make_quant passes `True`), so
    // its files carry an f16 bias on every quantized linear; GPTQModel's follows the model.
    let gptqmodel = block.object("meta")?.is_some_and(|meta| {
        meta.get("quantizer").is_some_and(|q| match q {
            Value::String(s) => s.starts_with("gptqmodel"),
            Value::Array(a) => a
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.starts_with("gptqmodel"))),
            _ => false,
        })
    }) || format == "gptq_v2";
    let lm_head = block.flag("lm_head")?.unwrap_or(false);
    let only = block
        .strings("modules_in_block_to_quantize")?
        .filter(|l| !l.is_empty())
        .map(|l| l.into_iter().map(Pattern::Substring).collect());
    // Under act order vLLM's row-parallel ranks keep every group's scales and zeros
    // (`gptq.py`: `scale_and_zero_input_dim = None` with `desc_act`).
    let groups_over = if block.flag("desc_act")?.unwrap_or(false) {
        Size::InWhole
    } else {
        Size::In
    };
    let groups = match group {
        Some(g) => groups_over.div(g),
        None => Size::Lit(1),
    };
    let layout = Layout {
        tensors: vec![
            Stored::new("qweight", vec![packed(Size::In, bits), Size::Out], "i32"),
            Stored::new(
                "qzeros",
                vec![groups.clone(), packed(Size::Out, bits)],
                "i32",
            ),
            Stored::new("scales", vec![groups, Size::Out], "f16"),
            Stored::new("g_idx", vec![Size::In], "i32"),
        ],
        bias: if gptqmodel {
            Bias::As("f16")
        } else {
            Bias::Always("f16")
        },
    };
    let summary = format!(
        "{bits}-bit, {}, {} layout{}",
        group_text(group),
        if gptqmodel { "GPTQModel" } else { "AutoGPTQ" },
        if gptqmodel {
            ""
        } else {
            " (an f16 bias on every quantized linear)"
        }
    );
    Ok((
        summary,
        Rule::Uniform {
            layout,
            kinds: Kinds {
                linear: true,
                expert: true,
                lm_head,
                router: false,
            },
            skip: Patterns::new(Vec::new()),
            only: only.map(Patterns::new),
        },
    ))
}

/// `size * bits / 32` int32 words: exact division, as vLLM's `input_size // pack_factor`
/// requires.
fn packed(size: Size, bits: u64) -> Size {
    if 32 % bits == 0 {
        size.div(32 / bits)
    } else {
        size.mul(bits).div(32)
    }
}

/// `group_size`: `None` for -1 (one group over the whole input).
fn group_size(block: &Block<'_>) -> Result<Option<u64>, HfError> {
    match block.int("group_size")? {
        Some(-1) => Ok(None),
        Some(g) if g >= 1 => Ok(Some(g as u64)),
        Some(g) => Err(block.refused(
            "group_size",
            format!("is {g}: a group is -1 (whole input) or at least 1"),
        )),
        None => Err(block.refused("group_size", "is missing")),
    }
}

fn group_text(group: Option<u64>) -> String {
    match group {
        Some(g) => format!("group {g}"),
        None => "one group per output channel".to_owned(),
    }
}

/// AWQ GEMM, as AutoAWQ writes it and vLLM's `awq.py` loads it.
fn awq(block: &Block<'_>) -> Result<(String, Rule), HfError> {
    block.known(&AWQ)?;
    let bits = block.int("bits")?.or(block.int("w_bit")?);
    if bits != Some(4) {
        return Err(block.refused(
            "bits",
            format!(
                "is {}: AWQ stores 4 bits (its loaders' awq.py)",
                bits.map_or("missing".to_owned(), |b| b.to_string())
            ),
        ));
    }
    let group = match block.int("group_size")?.or(block.int("q_group_size")?) {
        Some(-1) => None,
        Some(g) if g >= 1 => Some(g as u64),
        Some(g) => {
            return Err(block.refused("group_size", format!("is {g}: a group is -1 or at least 1")));
        }
        None => {
            return Err(block.refused(
                "group_size",
                "is missing: a group is -1 or at least 1".to_owned(),
            ));
        }
    };
    let version = block
        .text("version")?
        .or(block.text("format")?)
        .unwrap_or("gemm")
        .to_ascii_lowercase();
    if version != "gemm" {
        return Err(block.refused(
            "version",
            format!("is `{version}`: only AutoAWQ's GEMM layout is modelled (GEMV pads its zeros and scales; exllama, marlin and ipex repack at load)"),
        ));
    }
    // AutoAWQ and vLLM skip a module when an entry is a substring of its name
    // (`is_layer_skipped(..., skip_with_substr=True)`).
    let skip = block
        .strings("modules_to_not_convert")?
        .unwrap_or_default()
        .into_iter()
        .map(Pattern::Substring)
        .collect();
    let groups = match group {
        Some(g) => Size::In.div(g),
        None => Size::Lit(1),
    };
    let layout = Layout {
        tensors: vec![
            Stored::new("qweight", vec![Size::In, Size::Out.div(8)], "i32"),
            Stored::new("qzeros", vec![groups.clone(), Size::Out.div(8)], "i32"),
            Stored::new("scales", vec![groups, Size::Out], "f16"),
        ],
        bias: Bias::As("f16"),
    };
    Ok((
        format!("4-bit GEMM, {}", group_text(group)),
        Rule::Uniform {
            layout,
            // AutoAWQ quantizes every nn.Linear of a decoder layer it is not told to skip
            // (routers included: its Mixtral class lists `gate` in modules_to_not_convert),
            // never lm_head (transformers' AwqQuantizer adds it to the skips).
            kinds: Kinds {
                linear: true,
                expert: true,
                lm_head: false,
                router: true,
            },
            skip: Patterns::new(skip),
            only: None,
        },
    ))
}

/// The skips of transformers' `get_modules_to_not_convert` and whether heads may be
/// quantized: the list when given (heads only if it leaves them out); without one, the
/// defaults `get_keys_to_not_convert` adds, the output embeddings, i.e. every head (the MTP
/// layer's `shared_head.head` too).
fn hf_skips(block: &Block<'_>, key: &str) -> Result<(Vec<Pattern>, bool), HfError> {
    Ok(match transformers_patterns(block, key)? {
        Some(list) => (list, true),
        None => (Vec::new(), false),
    })
}

/// Fine-grained FP8 (`quant_method: fp8`): DeepSeek's block scales and the per-tensor
/// variant, as transformers' `finegrained_fp8.py` and vLLM's `fp8.py` lay them out.
fn fp8(block: &Block<'_>) -> Result<(String, Rule), HfError> {
    block.known(&FP8)?;
    let static_act = match block.text("activation_scheme")?.unwrap_or("dynamic") {
        "dynamic" => false,
        "static" => true,
        other => {
            return Err(block.refused(
                "activation_scheme",
                format!("is `{other}`: dynamic or static"),
            ));
        }
    };
    if let Some(fmt) = block.text("fmt")?
        && fmt != "e4m3"
    {
        return Err(block.refused("fmt", format!("is `{fmt}`: only e4m3 is modelled")));
    }
    match block.text("scale_fmt")? {
        None | Some("float") => {}
        Some(other) => {
            return Err(block.refused(
                "scale_fmt",
                format!("is `{other}`: only float (f32) block scales are modelled; transformers stores `ue8m0` in one byte while DeepSeek-V3.1's files keep f32, so its bytes are not certain"),
            ));
        }
    }
    if let Some(d) = block.text("expert_dtype")?
        && d != "fp8"
    {
        return Err(block.refused(
            "expert_dtype",
            format!("is `{d}`: only fp8 experts are modelled"),
        ));
    }
    if block.get("modules_to_convert").is_some() {
        return Err(block.refused(
            "modules_to_convert",
            "converts embedding tables to FP8, which is not modelled",
        ));
    }
    if block.get("kv_cache_scheme").is_some() {
        return Err(kv_scales(block, "kv_cache_scheme"));
    }
    let key =
        if block.get("ignored_layers").is_some() && block.get("modules_to_not_convert").is_none() {
            "ignored_layers"
        } else {
            "modules_to_not_convert"
        };
    let (mut skip, lm_head) = hf_skips(block, key)?;
    // DeepSeek-V3's multi-token-prediction projection is a plain torch nn.Linear in vLLM's
    // deepseek_mtp.py (no quant config) and bf16 in DeepSeek's FP8 files.
    skip.push(block.pattern(key, Pattern::transformers("eh_proj"))?);
    // Its head is a ParallelLMHead there (`SharedHead`), bf16 in the files, like lm_head.
    skip.push(block.pattern(key, Pattern::transformers("shared_head.head"))?);
    let (layout, summary) = match block.get("weight_block_size") {
        Some(v) => {
            let pair = v
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
                .filter(|&(r, c)| r >= 1 && c >= 1)
                .ok_or_else(|| {
                    block.bad("weight_block_size", "two whole numbers of at least 1", v)
                })?;
            if static_act {
                return Err(block.refused(
                    "activation_scheme",
                    "is static with block scales, which the FP8 loaders refuse (fp8.py)",
                ));
            }
            (
                Layout {
                    tensors: vec![
                        Stored::new("weight", vec![Size::Out, Size::In], "fp8"),
                        Stored::new(
                            "weight_scale_inv",
                            vec![Size::Out.ceil_div(pair.0), Size::In.ceil_div(pair.1)],
                            "f32",
                        ),
                    ],
                    bias: Bias::Keep,
                },
                format!("e4m3 weights, f32 scales per {}x{} block", pair.0, pair.1),
            )
        }
        None => {
            let mut tensors = vec![
                Stored::new("weight", vec![Size::Out, Size::In], "fp8"),
                Stored::new("weight_scale", vec![Size::Lit(1)], "f32"),
            ];
            if static_act {
                tensors.push(Stored::new("input_scale", vec![Size::Lit(1)], "f32"));
            }
            (
                Layout {
                    tensors,
                    bias: Bias::Keep,
                },
                format!(
                    "e4m3 weights, one f32 scale per tensor{}",
                    if static_act {
                        ", static input scales"
                    } else {
                        ""
                    }
                ),
            )
        }
    };
    Ok((
        summary,
        Rule::Uniform {
            layout,
            // Every nn.Linear (transformers' replace_with_fp8_linear); routers are not
            // nn.Linear in transformers 5 and stay unquantized (DeepSeek's own files keep them
            // bf16; vLLM builds the Mixtral and DeepSeek gates without a quant config).
            kinds: Kinds {
                linear: true,
                expert: true,
                lm_head,
                router: false,
            },
            skip: Patterns::new(skip),
            only: None,
        },
    ))
}

/// The [`Scheme::key`] of [`online_fp8`]: where the scheme comes from, the engine's flag.
pub(crate) const ONLINE_FP8_KEY: &str = "--quantization fp8 (on the fly)";

/// vLLM's on-the-fly FP8 (`--quantization fp8` on an unquantized checkpoint): Fp8Config with
/// `is_checkpoint_fp8_serialized = False` gives every `LinearBase` `Fp8OnlineLinearMethod`
/// (layers/quantization/fp8.py), whose `process_weights_after_loading` quantizes the weight
/// with `scaled_fp8_quant(weight, scale=None)` (dynamic, per tensor) and keeps the e4m3
/// weight and one f32 `weight_scale`, setting `input_scale = None`. Embeddings and lm_head are
/// not `LinearBase` (VocabParallelEmbedding / ParallelLMHead) and stay in the model dtype;
/// MoE routers are built without a quant config. Routed experts get `Fp8OnlineMoEMethod`,
/// which quantizes each expert's fused `w13_weight` [2 x ffn, hidden] and `w2_weight`
/// [hidden, ffn] with `scaled_fp8_quant` into e4m3 and keeps one f32 scale per expert for
/// each (`w13_weight_scale`, `w2_weight_scale` [E]). On an H100 the MoE backend that takes
/// that scheme (e4m3 per-tensor weights, dynamic per-tensor activations) is Triton
/// (`fused_moe/oracle/fp8.py` `select_fp8_moe_backend`: the FlashInfer backends need static
/// activation scales or sm100, DeepGEMM block scales, and vLLM's CUTLASS is not allowed for
/// it), whose `convert_to_fp8_moe_kernel_format` keeps the layout. Per module here: a
/// checkpoint that stores gate and up apart gets a scale for each, one f32 per expert more
/// than vLLM's fused w13 (docs/quantization.md).
pub(crate) fn online_fp8(origin: &str) -> Scheme {
    Scheme {
        desc_act: false,
        machete_group: false,
        kv_cache_fp8: false,
        origin: origin.to_owned(),
        key: ONLINE_FP8_KEY.to_owned(),
        method: "fp8",
        summary: "e4m3 weights quantized at load, one f32 scale per tensor".to_owned(),
        rule: Rule::Uniform {
            layout: Layout {
                // Named after the parameter: `weight` and `weight_scale` for a module, and
                // for the fused expert parameters Llama 4 stores (`experts.gate_up_proj`),
                // `gate_up_proj` and `gate_up_proj_scale`.
                tensors: vec![
                    Stored::param("", vec![Size::Out, Size::In], "fp8"),
                    Stored::param("_scale", vec![Size::Lit(1)], "f32"),
                ],
                bias: Bias::Keep,
            },
            kinds: Kinds {
                linear: true,
                expert: true,
                lm_head: false,
                router: false,
            },
            skip: Patterns::new(Vec::new()),
            only: None,
        },
        unknown: None,
    }
}

fn kv_scales(block: &Block<'_>, key: &str) -> HfError {
    block.refused(
        key,
        "stores FP8 KV-cache scales, which are not modelled; remove it and plan with --kv-cache-dtype fp8",
    )
}

/// FBGEMM FP8 (`quant_method: fbgemm_fp8`), per output channel (transformers'
/// `fbgemm_fp8.py`).
fn fbgemm(block: &Block<'_>) -> Result<(String, Rule), HfError> {
    block.known(&FBGEMM_FP8)?;
    let (skip, lm_head) = hf_skips(block, "modules_to_not_convert")?;
    let layout = Layout {
        tensors: vec![
            Stored::new("weight", vec![Size::Out, Size::In], "fp8"),
            Stored::new("weight_scale", vec![Size::Out, Size::Lit(1)], "f32"),
        ],
        // FbgemmFp8Linear registers its bias in float32.
        bias: Bias::As("f32"),
    };
    Ok((
        "e4m3 weights, one f32 scale per output channel".to_owned(),
        Rule::Uniform {
            layout,
            // replace_with_fbgemm_fp8_linear converts nn.Linear (and Llama 4's experts);
            // transformers 5's fused experts of other MoE models are not nn.Linear.
            kinds: Kinds {
                linear: true,
                expert: false,
                lm_head,
                router: false,
            },
            skip: Patterns::new(skip),
            only: None,
        },
    ))
}

/// MXFP4 (`quant_method: mxfp4`): gpt-oss's experts, as transformers' `mxfp4.py` stores
/// them (`<param>_blocks`, `<param>_scales`); only the routed experts are converted.
fn mxfp4(block: &Block<'_>) -> Result<(String, Rule), HfError> {
    block.known(&MXFP4)?;
    let (skip, _) = hf_skips(block, "modules_to_not_convert")?;
    let layout = Layout {
        tensors: vec![
            Stored::suffix(
                "_blocks",
                vec![Size::Out, Size::In.div(32), Size::Lit(16)],
                "u8",
            ),
            Stored::suffix("_scales", vec![Size::Out, Size::In.div(32)], "u8"),
        ],
        bias: Bias::Keep,
    };
    Ok((
        "e2m1 experts in blocks of 32 with an e8m0 byte scale each".to_owned(),
        Rule::Uniform {
            layout,
            kinds: Kinds {
                linear: false,
                expert: true,
                lm_head: false,
                router: false,
            },
            skip: Patterns::new(skip),
            only: None,
        },
    ))
}

/// A strategy of compressed-tensors' `QuantizationArgs`, with what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Tensor,
    Channel,
    Group(u64),
    TensorGroup(u64),
    Block(u64, u64),
    Token,
}

impl Strategy {
    /// The scale shape `initialize_qparams` gives a `[out, in]` weight.
    fn scale_shape(self) -> Vec<Size> {
        match self {
            Strategy::Tensor | Strategy::Token => vec![Size::Lit(1)],
            Strategy::Channel => vec![Size::Out, Size::Lit(1)],
            Strategy::Group(g) | Strategy::TensorGroup(g) => {
                vec![Size::Out, Size::In.ceil_div(g)]
            }
            Strategy::Block(r, c) => vec![Size::Out.ceil_div(r), Size::In.ceil_div(c)],
        }
    }

    fn text(self) -> String {
        match self {
            Strategy::Tensor => "per tensor".to_owned(),
            Strategy::Channel => "per channel".to_owned(),
            Strategy::Group(g) => format!("per group of {g}"),
            Strategy::TensorGroup(g) => format!("per group of {g} with a global scale"),
            Strategy::Block(r, c) => format!("per {r}x{c} block"),
            Strategy::Token => "per token".to_owned(),
        }
    }
}

/// compressed-tensors `QuantizationArgs`, as read.
struct Args {
    bits: u64,
    float: bool,
    symmetric: bool,
    strategy: Strategy,
    dynamic: Calibration,
    actorder_group: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// When an activation's quantization parameters are computed.
enum Calibration {
    Static,
    Dynamic,
    Local,
}

fn args(block: &Block<'_>) -> Result<Args, HfError> {
    block.known(&COMPRESSED_TENSORS_QUANTIZATION_ARGS)?;
    let bits = match block.int("num_bits")?.unwrap_or(8) {
        b @ 1..=8 => b as u64,
        b => return Err(block.refused("num_bits", format!("is {b}: 1 to 8 bits are modelled"))),
    };
    let float = match block
        .text("type")?
        .unwrap_or("int")
        .to_ascii_lowercase()
        .as_str()
    {
        "int" => false,
        "float" => true,
        other => return Err(block.refused("type", format!("is `{other}`: int or float"))),
    };
    let symmetric = block.flag("symmetric")?.unwrap_or(true);
    let group = block.int("group_size")?;
    let strategy = match block.text("strategy")?.map(str::to_ascii_lowercase) {
        Some(s) => match s.as_str() {
            "tensor" => Strategy::Tensor,
            "channel" => Strategy::Channel,
            "token" => Strategy::Token,
            "group" | "tensor_group" => {
                let g = match group {
                    Some(g) if g >= 1 => g as u64,
                    _ => {
                        return Err(block.refused(
                            "group_size",
                            format!("must be at least 1 with strategy {s}"),
                        ));
                    }
                };
                if s == "group" {
                    Strategy::Group(g)
                } else {
                    Strategy::TensorGroup(g)
                }
            }
            "block" => {
                let v = block.get("block_structure").ok_or_else(|| {
                    block.refused("block_structure", "is missing with strategy block")
                })?;
                let pair = match v {
                    Value::Array(a) if a.len() == 2 => a[0].as_u64().zip(a[1].as_u64()),
                    Value::String(s) => s
                        .split_once('x')
                        .and_then(|(r, c)| r.parse().ok().zip(c.parse().ok())),
                    _ => None,
                }
                .filter(|&(r, c)| r >= 1 && c >= 1)
                .ok_or_else(|| block.bad("block_structure", "[rows, cols] of at least 1", v))?;
                Strategy::Block(pair.0, pair.1)
            }
            other => {
                return Err(
                    block.refused("strategy", format!("is `{other}`, which is not modelled"))
                );
            }
        },
        // QuantizationArgs.validate_model_after infers it from group_size.
        None => match group {
            None => Strategy::Tensor,
            Some(-1) => Strategy::Channel,
            Some(g) if g >= 1 => Strategy::Group(g as u64),
            Some(g) => return Err(block.refused("group_size", format!("is {g}"))),
        },
    };
    let dynamic = match block.get("dynamic") {
        None | Some(Value::Bool(false)) => Calibration::Static,
        Some(Value::Bool(true)) => Calibration::Dynamic,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("local") => Calibration::Local,
        Some(v) => return Err(block.bad("dynamic", "true, false or \"local\"", v)),
    };
    let actorder_group = match block.get("actorder") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "group" | "dynamic" => true,
            "weight" | "static" => false,
            other => return Err(block.refused("actorder", format!("is `{other}`"))),
        },
        Some(v) => return Err(block.bad("actorder", "\"group\", \"weight\" or null", v)),
    };
    if let Some(sd) = block.text("scale_dtype")?
        && !sd.ends_with("float8_e4m3fn")
        && !sd.ends_with("uint8")
    {
        return Err(block.refused("scale_dtype", format!("is `{sd}`, which is not modelled")));
    }
    Ok(Args {
        bits,
        float,
        symmetric,
        strategy,
        dynamic,
        actorder_group,
    })
}

/// compressed-tensors, as its compressors write each format (`compressors/*/base.py`) and
/// vLLM's `compressed_tensors` schemes load it.
fn compressed_tensors(block: &Block<'_>, stored: Dtype) -> Result<(String, Rule), HfError> {
    block.known(&COMPRESSED_TENSORS)?;
    if block.get("kv_cache_scheme").is_some() {
        return Err(kv_scales(block, "kv_cache_scheme"));
    }
    for key in ["sparsity_config", "transform_config", "moe_sparsity_config"] {
        if block
            .get(key)
            .is_some_and(|v| v.as_object().is_none_or(|m| !m.is_empty()))
        {
            return Err(block.refused(
                key,
                "changes the stored tensors in a way that is not modelled",
            ));
        }
    }
    if let Some(status) = block.text("quantization_status")?
        && status != "compressed"
    {
        return Err(block.refused(
            "quantization_status",
            format!("is `{status}`: only compressed checkpoints store the format's tensors"),
        ));
    }
    let global_format = block.text("format")?;
    let groups = block
        .object("config_groups")?
        .ok_or_else(|| block.refused("config_groups", "is missing"))?;
    let mut layouts = Vec::new();
    let mut summaries = Vec::new();
    let mut by_target: Vec<(String, usize)> = Vec::new();
    for (name, value) in groups.map {
        let Value::Object(map) = value else {
            return Err(groups.refused(
                name,
                "names a preset scheme by its targets, which is not modelled; write the scheme out",
            ));
        };
        let group = Block {
            origin: block.origin,
            path: groups.key(name),
            map,
        };
        group.known(&COMPRESSED_TENSORS_SCHEME)?;
        let format = group.text("format")?.or(global_format).ok_or_else(|| {
            group.refused(
                "format",
                "is missing (neither the group nor the config gives one)",
            )
        })?;
        let (layout, summary) = ct_layout(&group, format, stored)?;
        let targets = group
            .strings("targets")?
            .ok_or_else(|| group.refused("targets", "is missing"))?;
        for t in targets {
            by_target.retain(|(x, _)| *x != t);
            by_target.push((t, layouts.len()));
        }
        summaries.push(format!("{name}: {summary}"));
        layouts.push(layout);
    }
    by_target.sort_by(|(a, _), (b, _)| (a.starts_with("re:"), a).cmp(&(b.starts_with("re:"), b)));
    let targets = by_target
        .into_iter()
        .map(|(t, g)| {
            let p = block.pattern("config_groups", Pattern::compressed_tensors(&t))?;
            Ok((t, p, g))
        })
        .collect::<Result<Vec<_>, HfError>>()?;
    let ignore = block
        .strings("ignore")?
        .unwrap_or_default()
        .iter()
        .map(|t| block.pattern("ignore", Pattern::compressed_tensors(t)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        summaries.join("; "),
        Rule::Groups {
            targets,
            layouts,
            ignore: Patterns::new(ignore),
        },
    ))
}

/// The layout of one compressed-tensors scheme in `format`.
fn ct_layout(group: &Block<'_>, format: &str, stored: Dtype) -> Result<(Layout, String), HfError> {
    if group.get("output_activations").is_some() {
        return Err(group.refused(
            "output_activations",
            "quantizes outputs, which is not modelled",
        ));
    }
    let weights = group.object("weights")?.ok_or_else(|| {
        group.refused(
            "weights",
            "is missing: a scheme without weight quantization is not modelled",
        )
    })?;
    let w = args(&weights)?;
    let input = group
        .object("input_activations")?
        .map(|b| args(&b))
        .transpose()?;
    let scale = stored.format();
    let mut tensors = Vec::new();
    let input_tensors = |tensors: &mut Vec<Stored>| -> Result<(), HfError> {
        let Some(a) = &input else { return Ok(()) };
        match (a.dynamic, a.strategy) {
            (Calibration::Dynamic, _) => {}
            (Calibration::Local, Strategy::TensorGroup(_)) => {
                tensors.push(Stored::new("input_global_scale", vec![Size::Lit(1)], "f32"));
            }
            (Calibration::Static, Strategy::Tensor) => {
                tensors.push(Stored::new("input_scale", vec![Size::Lit(1)], scale));
                if !a.symmetric {
                    tensors.push(Stored::new(
                        "input_zero_point",
                        vec![Size::Lit(1)],
                        if a.float { "fp8" } else { "i8" },
                    ));
                }
            }
            (Calibration::Static, Strategy::TensorGroup(_)) => {
                tensors.push(Stored::new("input_global_scale", vec![Size::Lit(1)], "f32"));
            }
            (_, s) => {
                return Err(group.refused(
                    "input_activations",
                    format!("are static {}, which is not modelled", s.text()),
                ));
            }
        }
        Ok(())
    };
    let summary = match format {
        "float-quantized" | "int-quantized" | "naive-quantized" => {
            if w.bits != 8 {
                return Err(group.refused(
                    "weights.num_bits",
                    format!("is {}: the {format} format stores 8-bit weights", w.bits),
                ));
            }
            if w.actorder_group {
                return Err(group.refused(
                    "weights.actorder",
                    "is group, which the naive compressor does not store",
                ));
            }
            if matches!(w.strategy, Strategy::Token | Strategy::TensorGroup(_)) {
                return Err(group.refused(
                    "weights.strategy",
                    format!(
                        "is {}, which is not modelled for weights",
                        w.strategy.text()
                    ),
                ));
            }
            let elem = if w.float { "fp8" } else { "i8" };
            tensors.push(Stored::new("weight", vec![Size::Out, Size::In], elem));
            tensors.push(Stored::new("weight_scale", w.strategy.scale_shape(), scale));
            if !w.symmetric {
                tensors.push(Stored::new(
                    "weight_zero_point",
                    w.strategy.scale_shape(),
                    elem,
                ));
            }
            input_tensors(&mut tensors)?;
            format!(
                "{format}: {} weights, {} scales {}",
                if w.float { "e4m3" } else { "int8" },
                scale,
                w.strategy.text()
            )
        }
        "pack-quantized" => {
            if w.float {
                return Err(
                    group.refused("weights.type", "is float: pack-quantized packs integers")
                );
            }
            if input.is_some() {
                return Err(group.refused(
                    "input_activations",
                    "are quantized too, which is not modelled for pack-quantized",
                ));
            }
            let bits = w.bits;
            // Under group act order vLLM repeats the scales on every row-parallel rank
            // (`marlin_repeat_scales_on_all_ranks`, compressed_tensors_wNa16.py).
            let groups_over = if w.actorder_group {
                Size::InWhole
            } else {
                Size::In
            };
            let groups = match w.strategy {
                Strategy::Group(g) => groups_over.ceil_div(g),
                Strategy::Channel => Size::Lit(1),
                s => {
                    return Err(group.refused(
                        "weights.strategy",
                        format!("is {}, which is not modelled for pack-quantized", s.text()),
                    ));
                }
            };
            let words = |size: Size| {
                if 32 % bits == 0 {
                    size.ceil_div(32 / bits)
                } else {
                    size.mul(bits).ceil_div(32)
                }
            };
            tensors.push(Stored::new(
                "weight_packed",
                vec![Size::Out, words(Size::In)],
                "i32",
            ));
            tensors.push(Stored::new(
                "weight_scale",
                vec![Size::Out, groups.clone()],
                scale,
            ));
            tensors.push(Stored::new("weight_shape", vec![Size::Lit(2)], "i64"));
            if !w.symmetric {
                tensors.push(Stored::new(
                    "weight_zero_point",
                    vec![words(Size::Out), groups],
                    "i32",
                ));
            }
            if w.actorder_group {
                tensors.push(Stored::new("weight_g_idx", vec![Size::In], "i32"));
            }
            format!(
                "pack-quantized: int{bits} weights in int32 words, {scale} scales {}{}",
                w.strategy.text(),
                if w.actorder_group { ", g_idx" } else { "" }
            )
        }
        "nvfp4-pack-quantized" | "mxfp4-pack-quantized" => {
            let nv = format == "nvfp4-pack-quantized";
            let (want, g) = if nv {
                (16, w.strategy)
            } else {
                (32, w.strategy)
            };
            let ok = w.float
                && w.bits == 4
                && w.symmetric
                && match g {
                    Strategy::TensorGroup(x) => nv && x == want,
                    Strategy::Group(x) => !nv && x == want,
                    _ => false,
                };
            if !ok {
                return Err(group.refused(
                    "weights",
                    format!(
                        "are not the {format} scheme (symmetric 4-bit float, {})",
                        if nv {
                            "tensor_group of 16"
                        } else {
                            "group of 32"
                        }
                    ),
                ));
            }
            tensors.push(Stored::new(
                "weight_packed",
                vec![Size::Out, Size::In.div(2)],
                "u8",
            ));
            tensors.push(Stored::new(
                "weight_scale",
                vec![Size::Out, Size::In.ceil_div(want)],
                if nv { "fp8" } else { "u8" },
            ));
            if nv {
                tensors.push(Stored::new(
                    "weight_global_scale",
                    vec![Size::Lit(1)],
                    "f32",
                ));
            }
            if let Some(a) = &input
                && a.dynamic != Calibration::Dynamic
            {
                tensors.push(Stored::new("input_global_scale", vec![Size::Lit(1)], "f32"));
            }
            format!(
                "{format}: e2m1 weights, {} scales per {want}{}",
                if nv { "e4m3" } else { "e8m0" },
                if nv { " and a global f32 scale" } else { "" }
            )
        }
        other => {
            return Err(group.refused(
                "format",
                format!("is `{other}`, which is not modelled (modelled: float-quantized, int-quantized, naive-quantized, pack-quantized, nvfp4-pack-quantized, mxfp4-pack-quantized)"),
            ));
        }
    };
    Ok((
        Layout {
            tensors,
            bias: Bias::Keep,
        },
        summary,
    ))
}

/// Whether a ModelOpt block declares FP8 KV-cache scales, as vLLM 0.19 reads it
/// (quantization/modelopt.py:280-330 `from_config`): `kv_cache_quant_algo` `FP8` (any case;
/// null: none), or in a `quantization_config` a `kv_cache_scheme` of `type: float` and
/// `num_bits: 8` (null: none). The export then stores `self_attn.k_proj.k_scale` and
/// `self_attn.v_proj.v_scale` per attention layer (model_loader/weight_utils.py:1416-1431
/// maps that ModelOpt naming). Another KV-cache algorithm is refused: its bytes are not
/// known.
fn modelopt_kv_cache(block: &Block<'_>) -> Result<bool, HfError> {
    let other = |key: &str| {
        block.refused(
            key,
            "declares a KV-cache quantization other than FP8 (8-bit floats), whose stored scales are not modelled",
        )
    };
    let algo = match block.get("kv_cache_quant_algo") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.to_ascii_uppercase()),
        Some(_) => return Err(other("kv_cache_quant_algo")),
    };
    match algo.as_deref() {
        None => {}
        Some("FP8") => return Ok(true),
        Some(_) => return Err(other("kv_cache_quant_algo")),
    }
    match block.get("kv_cache_scheme") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Object(m))
            if m.get("type").and_then(Value::as_str) == Some("float")
                && m.get("num_bits").and_then(Value::as_u64) == Some(8) =>
        {
            Ok(true)
        }
        Some(_) => Err(other("kv_cache_scheme")),
    }
}

/// NVIDIA ModelOpt, from `hf_quant_config.json`'s `quantization` or a `quantization_config`
/// with `quant_method: modelopt` (vLLM `modelopt.py`).
fn modelopt(origin: &str, key: &str, block: &Block<'_>) -> Result<Scheme, HfError> {
    block.known(&MODELOPT_2)?;
    let kv_cache_fp8 = modelopt_kv_cache(block)?;
    if block.get("quantized_layers").is_some() {
        return Err(block.refused(
            "quantized_layers",
            "mixes algorithms per layer, which is not modelled",
        ));
    }
    let algo = block
        .text("quant_algo")?
        .ok_or_else(|| block.refused("quant_algo", "is missing"))?
        .to_ascii_uppercase();
    let list_key = if block.get("exclude_modules").is_some() {
        "exclude_modules"
    } else {
        "ignore"
    };
    let skip = block
        .strings(list_key)?
        .unwrap_or_default()
        .iter()
        .map(|t| block.pattern(list_key, Pattern::modelopt(t)))
        .collect::<Result<Vec<_>, _>>()?;
    let fp8 = Stored::new("weight", vec![Size::Out, Size::In], "fp8");
    let one = || vec![Size::Lit(1)];
    let (tensors, summary) = match algo.as_str() {
        "FP8" => (
            vec![
                fp8,
                Stored::new("weight_scale", one(), "f32"),
                Stored::new("input_scale", one(), "f32"),
            ],
            "FP8: e4m3 weights, f32 weight and input scales per tensor".to_owned(),
        ),
        "FP8_PER_CHANNEL_PER_TOKEN" => (
            vec![fp8, Stored::new("weight_scale", vec![Size::Out], "f32")],
            "FP8_PER_CHANNEL_PER_TOKEN: e4m3 weights, f32 scales per output channel".to_owned(),
        ),
        "FP8_PB_WO" => (
            vec![
                fp8,
                Stored::new(
                    "weight_scale",
                    vec![
                        Size::Out.div(128),
                        Size::Lit(1),
                        Size::In.div(128),
                        Size::Lit(1),
                    ],
                    "f32",
                ),
            ],
            "FP8_PB_WO: e4m3 weights, f32 scales per 128x128 block".to_owned(),
        ),
        "NVFP4" => {
            let g = match block.int("group_size")? {
                None => 16,
                Some(g) if g >= 1 => g as u64,
                Some(g) => return Err(block.refused("group_size", format!("is {g}"))),
            };
            (
                vec![
                    Stored::new("weight", vec![Size::Out, Size::In.div(2)], "u8"),
                    Stored::new("weight_scale", vec![Size::Out, Size::In.div(g)], "fp8"),
                    Stored::new("weight_scale_2", one(), "f32"),
                    Stored::new("input_scale", one(), "f32"),
                ],
                format!(
                    "NVFP4: e2m1 weights, e4m3 scales per {g}, f32 global weight and input scales"
                ),
            )
        }
        other => {
            return Err(block.refused(
                "quant_algo",
                format!("is `{other}`, which is not modelled (modelled: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4)"),
            ));
        }
    };
    Ok(Scheme {
        unknown: None,
        desc_act: false,
        machete_group: false,
        kv_cache_fp8,
        origin: origin.to_owned(),
        key: key.to_owned(),
        method: "modelopt",
        summary,
        rule: Rule::Uniform {
            layout: Layout {
                tensors,
                bias: Bias::Keep,
            },
            // ModelOpt quantizes every nn.Linear and lists what it left out in
            // exclude_modules (its default config disables routers and lm_head, and the export
            // names them there).
            kinds: Kinds {
                linear: true,
                expert: true,
                lm_head: true,
                router: true,
            },
            skip: Patterns::new(skip),
            only: None,
        },
    })
}
