//! The contract between a model importer and an engine profile, which know nothing of each
//! other: what an importer reads of a model beyond its circuit ([`ModelFacts`], with the
//! multimodal encoder's run shape, [`EncoderShape`]), and how an engine holds a checkpoint's
//! tensors after loading where that differs from the checkpoint's bytes ([`LoadRules`], which
//! the engine's folder states and the importer applies).
//!
//! Invariants: every value here is a plain fact of the model's configuration (as the importer
//! read it, before any sharding) or a rule read from an engine's folder; nothing here computes
//! bytes or knows an engine by name. `LoadRules::default()` is the checkpoint as stored.
//!
//! [`ModelFacts`] are filled by an importer (`circuit_hf::import(..)?.facts`); [`LoadRules`]
//! come from an engine profile and are handed to the importer:
//!
//! ```
//! use model_facts::{LoadRules, RopeScaling, TowerBuild};
//!
//! // The checkpoint as stored: the default an importer applies without an engine.
//! assert_eq!(LoadRules::default().vision_tower, TowerBuild::Whole);
//! // An engine folder that builds a multimodal tower only up to the layers its projector
//! // reads says so; the importer then counts those layers' weights only.
//! let rules = LoadRules { vision_tower: TowerBuild::ReadByProjector, ..LoadRules::default() };
//! assert_ne!(rules, LoadRules::default());
//! // A configuration without rope scaling has no sets.
//! assert!(RopeScaling::default().sets.is_empty());
//! ```

#![warn(missing_docs)]

mod encoder;
mod facts;
mod load;

pub use encoder::{EncoderShape, VideoShape};
pub use facts::{ModelFacts, RopeScaling, RopeSet, Rotary};
pub use load::{LinearKernel, LoadRules, MtpLayers, Mxfp4ExpertLayout, TowerBuild};
