//! What the caller chooses about an import ([`ImportOptions`]: the dtype to plan, the KV-cache
//! dtype) and the files it hands in beside `config.json` ([`SideFile`]).
//!
//! Invariants: the options only convert what the checkpoint leaves open (unquantized tensors,
//! activations, the cache); quantized tensors keep the storage the format gives them. The
//! struct grows with later options (tensor and pipeline parallelism), so it is
//! `#[non_exhaustive]`: build it from `ImportOptions::default()` and set fields.

use std::fmt;
use std::str::FromStr;

/// A floating-point model dtype: how `torch_dtype` / `dtype` stores unquantized tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `bfloat16`, 2 bytes.
    Bfloat16,
    /// `float16`, 2 bytes.
    Float16,
    /// `float32`, 4 bytes.
    Float32,
}

impl Dtype {
    /// Every dtype, in documentation order.
    pub const ALL: [Dtype; 3] = [Dtype::Bfloat16, Dtype::Float16, Dtype::Float32];

    /// The name transformers and vLLM use (`bfloat16`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bfloat16 => "bfloat16",
            Dtype::Float16 => "float16",
            Dtype::Float32 => "float32",
        }
    }

    /// The circuit-ir format (`bf16`).
    pub fn format(self) -> &'static str {
        match self {
            Dtype::Bfloat16 => "bf16",
            Dtype::Float16 => "f16",
            Dtype::Float32 => "f32",
        }
    }

    /// The circuit-ir format, typed (its bytes per element are circuit-ir's to say).
    pub fn to_format(self) -> circuit_ir::Format {
        match self {
            Dtype::Bfloat16 => circuit_ir::Format::Bf16,
            Dtype::Float16 => circuit_ir::Format::F16,
            Dtype::Float32 => circuit_ir::Format::F32,
        }
    }

    /// The dtype named `name` (`bfloat16`, `float16`, `float32`).
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dtype the caller asks for that is not one of [`Dtype::ALL`] or `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{found}` (expected one of: {expected})")]
pub struct UnknownDtype {
    /// What was being parsed (`dtype`, `KV-cache dtype`).
    pub what: &'static str,
    /// The text given.
    pub found: String,
    /// The accepted values.
    pub expected: &'static str,
}

/// The dtype to plan unquantized tensors, activations and the KV cache in: `None` plans the
/// config's own (`torch_dtype` / `dtype`, vLLM's `--dtype auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunDtype(pub Option<Dtype>);

impl FromStr for RunDtype {
    type Err = UnknownDtype;

    fn from_str(text: &str) -> Result<RunDtype, UnknownDtype> {
        if text == "auto" {
            return Ok(RunDtype(None));
        }
        Dtype::from_name(text)
            .map(|d| RunDtype(Some(d)))
            .ok_or_else(|| UnknownDtype {
                what: "dtype",
                found: text.to_owned(),
                expected: "auto, bfloat16, float16, float32",
            })
    }
}

/// The KV cache's storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvCacheDtype {
    /// The planned model dtype (vLLM's `--kv-cache-dtype auto`).
    #[default]
    Auto,
    /// One byte per element (vLLM's `fp8`, `fp8_e4m3`, `fp8_e5m2`): half the bytes of a 16-bit
    /// cache.
    Fp8,
}

impl FromStr for KvCacheDtype {
    type Err = UnknownDtype;

    fn from_str(text: &str) -> Result<KvCacheDtype, UnknownDtype> {
        match text {
            "auto" => Ok(KvCacheDtype::Auto),
            "fp8" | "fp8_e4m3" | "fp8_e5m2" => Ok(KvCacheDtype::Fp8),
            _ => Err(UnknownDtype {
                what: "KV-cache dtype",
                found: text.to_owned(),
                expected: "auto, fp8, fp8_e4m3, fp8_e5m2",
            }),
        }
    }
}

/// How to import a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The dtype unquantized tensors, activations and the cache are planned in.
    pub dtype: RunDtype,
    /// The KV cache's storage.
    pub kv_cache_dtype: KvCacheDtype,
    /// The parallel layout [`crate::import_parallel`] shards the model for ([`import_with`]
    /// always imports the whole model).
    ///
    /// [`import_with`]: crate::import_with
    pub parallel: crate::parallel::Parallel,
    /// How [`crate::import_parallel`] places the routed experts of a MoE model over
    /// `parallel` (default: as `parallel.expert_parallel` says).
    pub experts: crate::parallel::ExpertSplit,
    /// Quantization the engine applies while loading an unquantized checkpoint (vLLM's
    /// `--quantization`).
    pub online_quantization: OnlineQuantization,
    /// A multimodal checkpoint loaded as its language model alone, without the vision tower
    /// and projector: vLLM's `--language-model-only`, or `--limit-mm-per-prompt` with 0 for
    /// every modality, with which its wrappers build no tower (`_mark_tower_model`,
    /// `model_executor/models/interfaces.py`). The tower's config is still read and checked.
    /// No effect on a text-only config.
    pub language_model_only: bool,
    /// Modalities limited to 0 items per prompt (vLLM's `--limit-mm-per-prompt`): a multimodal
    /// checkpoint whose tower serves no other modality is loaded as its language model alone,
    /// as with `language_model_only` (vLLM skips a tower only when every modality it serves is
    /// limited to 0, `_mark_tower_model`). No effect on a text-only config.
    pub modalities_off: ModalitiesOff,
    /// How the engine holds the tensors once loaded, where that differs from the checkpoint's
    /// bytes (an engine folder's `[load]`); the default keeps the checkpoint as stored.
    pub load: model_facts::LoadRules,
}

/// Modalities a run takes no item of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModalitiesOff {
    /// No image.
    pub image: bool,
    /// No video.
    pub video: bool,
}

impl ModalitiesOff {
    /// Whether `modality` (`image`, `video`) is off; another modality is never off.
    pub fn has(self, modality: &str) -> bool {
        match modality {
            "image" => self.image,
            "video" => self.video,
            _ => false,
        }
    }
}

/// Quantization applied at load time to a checkpoint stored unquantized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnlineQuantization {
    /// None: the checkpoint's own storage (vLLM without `--quantization`).
    #[default]
    None,
    /// vLLM's `--quantization fp8` on a bf16/f16 checkpoint: every linear weight of a decoder
    /// layer quantized to FP8 e4m3 per tensor, one f32 scale each; embeddings, lm_head and
    /// norms stay in the model dtype.
    Fp8,
}

impl std::str::FromStr for OnlineQuantization {
    type Err = UnknownDtype;

    fn from_str(s: &str) -> Result<OnlineQuantization, UnknownDtype> {
        match s {
            "none" => Ok(OnlineQuantization::None),
            "fp8" => Ok(OnlineQuantization::Fp8),
            other => Err(UnknownDtype {
                what: "quantization",
                found: other.to_owned(),
                expected: "none, fp8",
            }),
        }
    }
}

/// The side files some quantization formats keep next to `config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideFileKind {
    /// `quantize_config.json`: AutoGPTQ's (and GPTQModel's) quantization settings.
    QuantizeConfig,
    /// `quant_config.json`: AutoAWQ's legacy quantization settings.
    QuantConfig,
    /// `hf_quant_config.json`: NVIDIA ModelOpt's export settings.
    HfQuantConfig,
}

impl SideFileKind {
    /// Every kind, in the order a caller should look for them.
    pub const ALL: [SideFileKind; 3] = [
        SideFileKind::QuantizeConfig,
        SideFileKind::QuantConfig,
        SideFileKind::HfQuantConfig,
    ];

    /// The file name.
    pub fn file_name(self) -> &'static str {
        match self {
            SideFileKind::QuantizeConfig => "quantize_config.json",
            SideFileKind::QuantConfig => "quant_config.json",
            SideFileKind::HfQuantConfig => "hf_quant_config.json",
        }
    }
}

/// A side file's text, handed in by the caller (the library reads no file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideFile<'a> {
    /// Which file it is.
    pub kind: SideFileKind,
    /// Its name in messages (a path, say).
    pub origin: &'a str,
    /// Its text.
    pub text: &'a str,
}
