//! Builds a circuit-ir [`Circuit`] from a Hugging Face `config.json`: the decoder-only
//! language models of [`ModelType::ALL`] (Llama, Granite, Mistral, Qwen2, Qwen3, Qwen3-MoE,
//! Qwen3-Next, Mixtral, Phi, Phi-3, Gemma 1-3, DeepSeek-V2/V3, Kimi K2, gpt-oss, Llama 4),
//! alone or as the text part of a multimodal checkpoint (`llama4`, `gemma3`, `mistral3`,
//! `llava`, `llava_next`, `kimi_vl`, `qwen2_5_vl`, `qwen3_vl`, `qwen3_vl_moe`: the language
//! model from `text_config`, the vision tower counted from
//! `vision_config` and held as weights), with weights under their Hugging Face tensor names,
//! in the checkpoint's dtype (or the one [`ImportOptions`] asks for) or as its quantization
//! format stores them, one KV-cache state per attention layer and per-sequence states for
//! recurrent (Gated DeltaNet) layers.
//!
//! Invariants: the circuit's weights are the bytes of the published checkpoint (tied
//! embeddings stored once; quantized modules as their format stores them, docs/quantization.md)
//! and its per-token states hold exactly the KV bytes per token the architecture caches, any
//! fixed per-sequence state being a state of its own kind; every key of
//! the file is read, known to leave memory unchanged, or refused (an unknown key is refused);
//! every circuit is validated by circuit-ir. `docs/hf-import.md` lists the tensors, keys and
//! defaults of each model type.
//!
//! It depends on circuit-ir only and must not know kernels, fusion or memory plans; it reads
//! no file (callers hand it the text and an origin name for messages).
//!
//! ```
//! let json = r#"{"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048,
//!   "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
//!   "num_key_value_heads": 8, "tie_word_embeddings": true}"#;
//! let circuit = circuit_hf::from_config_json(json, "llama-3.2-1b/config.json").unwrap();
//! assert_eq!(circuit.name(), "llama-3.2-1b");
//! assert_eq!(circuit.weight_bytes(), 2 * 1_235_814_400); // Llama-3.2-1B
//! assert_eq!(circuit.state_bytes(1, 1).unwrap(), 32_768); // KV bytes per token
//! ```

#![warn(missing_docs)]

mod arch;
mod config;
mod emit;
pub mod error;
pub mod model;
mod moonvit;
mod multimodal;
pub mod options;
pub mod parallel;
mod parallel_import;
mod quant;
mod qwen_vision;
mod rope;
mod vision;

use std::path::Path;

use circuit_ir::expr::Fault;
use circuit_ir::{Circuit, CircuitErrorKind, ExprError, FormatError};

pub use error::HfError;
pub use model::{KeyInfo, KeyRole, ModelType};
pub use model_facts::{EncoderShape, LoadRules, ModelFacts, VideoShape};
pub use multimodal::modalities;
pub use options::{
    Dtype, ImportOptions, KvCacheDtype, ModalitiesOff, OnlineQuantization, RunDtype, SideFile,
    SideFileKind,
};
pub use parallel::{Parallel, ParallelError, Rank, RankShape};
pub use parallel_import::{ParallelImport, import_parallel};
pub use quant::Quantization;

/// An imported circuit and how the config was read.
#[derive(Debug, Clone)]
pub struct Import {
    /// The circuit.
    pub circuit: Circuit,
    /// The model type.
    pub model_type: ModelType,
    /// Keys of the file whose values shaped the circuit, in reading order.
    pub keys_read: Vec<String>,
    /// Keys of the file that did not: known to leave memory unchanged, or without effect in
    /// this configuration (e.g. `intermediate_size` when every layer is sparse), in file order.
    pub keys_ignored: Vec<String>,
    /// Absent keys whose transformers default was used, with the value used.
    pub defaults: Vec<(String, String)>,
    /// The dtype unquantized tensors, activations and the KV cache are planned in.
    pub dtype: Dtype,
    /// The dtype the checkpoint stores them in (`torch_dtype`, or its default).
    pub stored_dtype: Dtype,
    /// The KV cache's storage format (`bf16`, `f16`, `f32` or `fp8`).
    pub kv_cache_format: String,
    /// The quantization planned, when the checkpoint is quantized.
    pub quantization: Option<Quantization>,
    /// Side files handed in but not read (config.json's own quantization block wins, as in
    /// vLLM).
    pub side_files_ignored: Vec<String>,
    /// What an engine profile needs of the model beyond its circuits: the class, the context
    /// and rope scaling, the whole vocabulary and heads, the vision encoder's run shape.
    pub facts: ModelFacts,
}

/// Builds the circuit of a `config.json` text. `origin` names the file in error messages and
/// names the circuit (see [`circuit_name`]).
pub fn from_config_json(text: &str, origin: &str) -> Result<Circuit, HfError> {
    import(text, origin).map(|i| i.circuit)
}

/// Imports a `config.json` text and reports which keys were read, ignored and defaulted, with
/// the default options and no side file.
pub fn import(text: &str, origin: &str) -> Result<Import, HfError> {
    import_with(text, origin, &ImportOptions::default(), &[])
}

/// Imports a `config.json` text with `options`, given the quantization side files that sit
/// next to it (`quantize_config.json`, `quant_config.json`, `hf_quant_config.json`; the
/// caller reads them, this crate reads no file).
pub fn import_with(
    text: &str,
    origin: &str,
    options: &ImportOptions,
    side_files: &[SideFile<'_>],
) -> Result<Import, HfError> {
    let mut imports = import_shaped(text, origin, options, side_files, |arch, name, storage| {
        emit::circuit(arch, name, storage).map(|built| vec![built])
    })?;
    Ok(imports.remove(0))
}

/// Reads the config and imports each circuit `emit` builds from its architecture (one for the
/// whole model; one per distinct rank for a parallel layout), with the same key report; the
/// weights are held as `options.load` says (the checkpoint's bytes with
/// [`LoadRules::default`]).
pub(crate) fn import_shaped(
    text: &str,
    origin: &str,
    options: &ImportOptions,
    side_files: &[SideFile<'_>],
    emit: impl FnOnce(&arch::Arch, &str, &quant::Storage<'_>) -> Result<Vec<quant::Built>, HfError>,
) -> Result<Vec<Import>, HfError> {
    let top = config::parse(text, origin)?;
    let unwrapped = multimodal::unwrap(&top, origin)?;
    let text_origin = format!("{origin} (text_config)");
    let (map, cfg_origin) = match &unwrapped {
        Some(u) => (&u.text, text_origin.as_str()),
        None => (&top, origin),
    };
    let model_type = config::model_type(map, cfg_origin)?;
    let cfg = config::Config::new(cfg_origin, model_type, map);
    cfg.check_common()?;
    let stored_dtype = cfg.stored_dtype()?;
    let dtype = options.dtype.0.unwrap_or(stored_dtype);
    let (scheme, side_files_ignored) = quant::read_scheme(&cfg, side_files, stored_dtype)?;
    let scheme = quant::with_online(scheme, options.online_quantization, origin)?;
    let mut arch = arch::read(&cfg)?;
    // An engine that builds the main model alone holds no multi-token-prediction layer.
    if options.load.mtp_layers == model_facts::MtpLayers::Skipped {
        arch.mtp.clear();
    }
    if let Some(u) = &unwrapped {
        arch.tensor_rename = u.wrapper.rename;
        u.adjust(&mut arch);
        let tower = u.tower(origin, &top, arch.hidden)?;
        let tower = tower.into_built(options.load.vision_tower);
        let served = u
            .wrapper
            .modalities
            .iter()
            .any(|m| !options.modalities_off.has(m));
        arch.vision = (!options.language_model_only && served).then_some(tower);
    }
    // A checkpoint storing FP8 KV-cache scales runs its cache in fp8 unless a dtype is asked
    // for (vLLM 0.19 resolves `--kv-cache-dtype auto` from the quantization config,
    // utils/torch_utils.py:324-342 resolve_kv_cache_dtype_string).
    let kv = match options.kv_cache_dtype {
        KvCacheDtype::Auto if scheme.as_ref().is_some_and(|s| s.kv_cache_fp8) => KvCacheDtype::Fp8,
        other => other,
    };
    let storage = quant::Storage {
        origin,
        planned: dtype,
        kv,
        scheme: scheme.as_ref(),
        load: &options.load,
    };
    let built = emit(&arch, &circuit_name(origin, model_type), &storage)?;
    let read = cfg.keys_read();
    // A multimodal config's own keys come first; the language model's are named
    // `text_config.<key>`, except those the wrapper forwarded to it (and a flat config's, which
    // sit at the top level).
    let flat = unwrapped.as_ref().is_some_and(|u| u.flat);
    let nested = match &unwrapped {
        Some(_) if !flat => top.get("text_config").and_then(|t| t.as_object()),
        _ => None,
    };
    let name = |k: &str| match nested {
        Some(t) if t.contains_key(k) => format!("text_config.{k}"),
        _ => k.to_owned(),
    };
    // Whether the file gives `k` at the language model's level (a wrapper's defaults and
    // forwarded keys are not the text's own).
    let own = |k: &str| match &unwrapped {
        None => true,
        Some(_) if flat => k != "model_type" && top.contains_key(k),
        Some(_) => nested.is_some_and(|t| t.contains_key(k)),
    };
    let mut keys_read: Vec<String> = unwrapped
        .as_ref()
        .map(|u| u.keys_read.clone())
        .unwrap_or_default();
    keys_read.extend(
        read.iter()
            .filter(|k| cfg.has(k) && own(k))
            .map(|k| name(k)),
    );
    let mut keys_ignored: Vec<String> = unwrapped
        .as_ref()
        .map(|u| u.keys_ignored.clone())
        .unwrap_or_default();
    keys_ignored.extend(
        map.keys()
            .filter(|k| !read.contains(&k.as_str()) && own(k))
            .map(|k| name(k)),
    );
    let text_key = |k: &str| {
        if unwrapped.is_some() && !flat {
            format!("text_config.{k}")
        } else {
            k.to_owned()
        }
    };
    let defaults: Vec<(String, String)> = unwrapped
        .iter()
        .flat_map(|u| u.text_defaults.iter().cloned())
        .chain(cfg.defaults().into_iter().map(|(k, v)| (k.to_owned(), v)))
        .map(|(k, v)| (text_key(&k), v))
        .collect();
    let kv_cache_format = match kv {
        KvCacheDtype::Auto => dtype.format().to_owned(),
        KvCacheDtype::Fp8 => "fp8".to_owned(),
    };
    Ok(built
        .into_iter()
        .map(|b| {
            let checkpoint_quantized = b.quantization.as_ref().is_some_and(|q| !q.at_load);
            let method = b.quantization.as_ref().map(|q| q.method.clone());
            Import {
                circuit: b.circuit,
                model_type,
                keys_read: keys_read.clone(),
                keys_ignored: keys_ignored.clone(),
                defaults: defaults.clone(),
                dtype,
                stored_dtype,
                kv_cache_format: kv_cache_format.clone(),
                quantization: b.quantization,
                side_files_ignored: side_files_ignored.clone(),
                facts: ModelFacts {
                    model_type: model_type.name().to_owned(),
                    architecture: unwrapped
                        .as_ref()
                        .map_or(model_type.causal_lm_class(), |u| u.wrapper.class)
                        .to_owned(),
                    dtype: dtype.to_format(),
                    quantization: method,
                    max_position_embeddings: arch.context,
                    rope: arch.rope.clone(),
                    rotary: arch.rotary.clone(),
                    vocab_size: arch.vocab,
                    num_attention_heads: arch.heads,
                    attention_chunk_size: arch.window.filter(|_| arch.chunked_attention),
                    vision_encoder: arch.vision.is_some(),
                    encoder: arch.vision.as_ref().and_then(|t| t.encoder),
                    checkpoint_quantized,
                },
            }
        })
        .collect())
}

/// The error for a circuit circuit-ir refused: too large, or a bug of this crate.
fn circuit_error(origin: &str, source: circuit_ir::CircuitError) -> HfError {
    let origin = origin.to_owned();
    if overflows(&source.kind) {
        HfError::TooLarge { origin, source }
    } else {
        HfError::Circuit { origin, source }
    }
}

/// Whether circuit-ir refused the circuit for its size (a byte count or an expression above
/// `u64::MAX`, too many nodes) rather than for its structure.
fn overflows(kind: &CircuitErrorKind) -> bool {
    matches!(
        kind,
        CircuitErrorKind::Overflow { .. }
            | CircuitErrorKind::TooLarge { .. }
            | CircuitErrorKind::Format(FormatError::Overflow { .. })
            | CircuitErrorKind::Expr(ExprError::Eval {
                fault: Fault::Overflow,
                ..
            })
    )
}

/// Whether the config `text` (read from `origin`) is a multimodal checkpoint whose vision tower
/// this crate reads, whatever the import options then leave out (`language_model_only`): the
/// flags that drop a tower are refused on a model without one.
pub fn has_vision_tower(text: &str, origin: &str) -> Result<bool, HfError> {
    let top = config::parse(text, origin)?;
    Ok(multimodal::unwrap(&top, origin)?.is_some())
}

/// The circuit's name for a file: the folder of a `config.json` (as Hugging Face lays out a
/// checkpoint: `Llama-3.1-8B/config.json` gives `Llama-3.1-8B`), else the file name without
/// `.json`, else the model type.
pub fn circuit_name(origin: &str, model_type: ModelType) -> String {
    let path = Path::new(origin);
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let folder = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|f| f.to_str())
        .unwrap_or("");
    let name = if file == "config.json" {
        folder
    } else {
        file.strip_suffix(".json").unwrap_or("")
    };
    if name.is_empty() {
        model_type.name().to_owned()
    } else {
        name.to_owned()
    }
}
