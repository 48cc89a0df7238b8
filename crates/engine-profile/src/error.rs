//! What can go wrong reading an engine profile or predicting a start-up: one typed error that
//! names the file, the item and the value at fault.
//!
//! Invariants: a message is one line and opens with what it is about (the engine file, the
//! circuit, or the setting) with the value at fault; an error in evaluating the engine file's
//! expressions names the circuit (the user's model) and the values the expression read, so an
//! input out of range is told apart from a broken engine file; a cache layout or encoder the
//! profile does not model is an error of its own ([`EngineError::NotModelled`],
//! [`EngineError::EncoderProfileNotModelled`], [`EngineError::EncoderClassRefused`]), never a
//! default.

/// What can go wrong reading an engine profile or predicting a start-up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine file is not valid TOML of the expected shape.
    #[error("{origin}: {message}")]
    Toml {
        /// The file.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// An expression of the engine file does not parse or evaluate.
    #[error("{origin}: {item} = {text:?}: {message}")]
    Expr {
        /// The file.
        origin: String,
        /// The item (e.g. `profile_run.sampler_live.logits`).
        item: String,
        /// The expression.
        text: String,
        /// What failed.
        message: String,
    },
    /// An expression of the engine file reads a name the run does not bind.
    #[error(
        "{circuit}: the engine profile's {item} reads `{name}`, which neither the run nor the circuit's dims give"
    )]
    UnboundName {
        /// The circuit.
        circuit: String,
        /// The item.
        item: String,
        /// The name.
        name: String,
    },
    /// An expression of the engine file fails on this run's values (an overflow from a huge
    /// flag or config value).
    #[error("{circuit}: {item} = `{text}` with {inputs}: {message}")]
    Eval {
        /// The circuit.
        circuit: String,
        /// The item.
        item: String,
        /// The expression.
        text: String,
        /// The values it read (`tokens = 8192, hidden = 4096`).
        inputs: String,
        /// What failed.
        message: String,
    },
    /// The device is not one the profile can predict on.
    #[error("device {device}: {why}; the engine prediction is refused rather than guessed")]
    DeviceNotModelled {
        /// The device's name.
        device: String,
        /// Why.
        why: String,
    },
    /// The families or rules of the profile do not load.
    #[error("{origin}: {message}")]
    Registry {
        /// The file.
        origin: String,
        /// The loader's message.
        message: String,
    },
    /// The circuit lacks a dim the profile needs.
    #[error("{circuit}: the circuit has no dim `{dim}` (the engine profile sizes {why} from it)")]
    MissingDim {
        /// The circuit.
        circuit: String,
        /// The dim.
        dim: &'static str,
        /// What the profile sizes from it.
        why: &'static str,
    },
    /// Planning the circuit failed.
    #[error("planning {circuit} at {rows} rows: {message}")]
    Plan {
        /// The circuit.
        circuit: String,
        /// The row count.
        rows: u64,
        /// The planner's message.
        message: String,
    },
    /// A cache layout the profile does not model, or one the engine refuses to build
    /// (docs/engines.md, "KV-cache layout").
    #[error(
        "{circuit}: {what}: the engine profile does not lay this KV cache out; plan it without --engine"
    )]
    NotModelled {
        /// The circuit.
        circuit: String,
        /// What is not modelled, with the value at fault.
        what: String,
    },
    /// A multimodal model whose encoder the profile run would run, for an encoder whose
    /// profile is not modelled (or an engine file without `profile_run.encoder`).
    #[error(
        "{circuit}: the engine's profile run also runs the multimodal encoder on its largest dummy batch and keeps its outputs ({runs_it}), which is modelled for Llama 4's, Gemma 3's SigLIP, LLaVA's and LLaVA-NeXT's CLIP and SigLIP, Mistral 3's Pixtral, Kimi-VL's MoonViT and the Qwen2.5-VL and Qwen3-VL towers only (a tower that also takes video needs the engine file's dummy video, or videos limited to 0); pass --skip-mm-profiling (the engine's flag) to predict the start-up without it, --language-model-only to load no tower, or plan without --engine"
    )]
    EncoderProfileNotModelled {
        /// The circuit.
        circuit: String,
        /// Where the engine runs it (the engine file's `profile_run.encoder.source`).
        runs_it: String,
    },
    /// A run the engine release does not make as modelled, refused by a variant of its file
    /// whose conditions test the model only (a class the release lacks, a weight layout it
    /// picks by what the install holds); a variant that also tests the device refuses with
    /// [`EngineError::DeviceNotModelled`].
    #[error("{engine} {version}: {why}; the prediction is refused rather than guessed")]
    Refused {
        /// The engine.
        engine: String,
        /// The release the profile's facts were read from.
        version: String,
        /// Why (the variant's `refuse`, and the variant's name).
        why: String,
    },
    /// A tower whose profile the engine file models for other releases only: this release's
    /// source differs in a way the terms do not follow (`refuse` of its
    /// `profile_run.encoder.architecture` entry).
    #[error(
        "{circuit}: {engine}'s profile run runs the multimodal encoder of {class}, whose profile is not modelled for this release: {why}; pass --skip-mm-profiling (the engine's flag) to predict the start-up without it, --language-model-only to load no tower, or plan without --engine"
    )]
    EncoderClassRefused {
        /// The circuit.
        circuit: String,
        /// The engine and release.
        engine: String,
        /// The model class.
        class: String,
        /// Why (the engine file's reason).
        why: String,
    },
    /// A size overflowed u64.
    #[error("{what} overflows u64")]
    Overflow {
        /// What was being computed.
        what: String,
    },
    /// A flag the engine's release refuses (its own reason, from the engine file).
    #[error("{flag}: {why}")]
    FlagRefused {
        /// The flag.
        flag: String,
        /// Why the release refuses it.
        why: String,
    },
    /// A run setting out of range.
    #[error("{what} = {value}: {why}")]
    BadSetting {
        /// The setting.
        what: &'static str,
        /// Its value.
        value: String,
        /// The accepted range.
        why: &'static str,
    },
}
