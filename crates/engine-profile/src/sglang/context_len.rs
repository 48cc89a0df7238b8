//! The context length SGLang derives for a model (`srt/utils/hf_transformers/common.py`
//! `get_context_length`, 0.5.23 lines 668-694; `srt/configs/model_config.py`
//! `_derive_context_length`, lines 1291-1329): the first length key of the text config
//! (`max_position_embeddings` for every model type the importer reads) times the rope
//! scaling's `factor`, except that the factor is 1 when the scaling holds its own
//! `original_max_position_embeddings` or is of type `llama3`. A longer `--context-length` is
//! refused ("User-specified context_length ... is greater than the derived context_length")
//! unless `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`; a shorter one is taken. The default
//! is the derived length.
//!
//! Invariants: both lengths are at least 1; a length beyond u64 saturates (SGLang computes
//! `int(factor * value)` in floats); the keys SGLang reads before `max_position_embeddings`
//! (`max_sequence_length`, `seq_length`, `max_seq_len`, `model_max_length`) are not read: no
//! model type the importer supports has them.

use model_facts::ModelFacts;

use crate::ModelLen;

/// The longest and default context length SGLang takes for `model`.
pub(crate) fn context_len(model: &ModelFacts) -> ModelLen {
    let positions = model.max_position_embeddings;
    // `rope_scaling` is one dict in the config: its first set as the importer read it.
    let factor = match model.rope.sets.first() {
        None => 1.0,
        Some(set) => {
            // `rope_scaling.get("factor", 1)`; a null factor would fail SGLang's product, and
            // the importer keeps it as absent.
            let given = set.factor.unwrap_or(1.0);
            if set.original_max_position_embeddings.is_some() || set.rope_type == "llama3" {
                1.0
            } else {
                given
            }
        }
    };
    let scaled = factor * positions as f64;
    let longest = if scaled >= u64::MAX as f64 {
        u64::MAX
    } else {
        (scaled.floor() as u64).max(1)
    };
    ModelLen {
        longest,
        default: longest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model_facts::{RopeScaling, RopeSet};

    fn model(positions: u64, sets: Vec<RopeSet>) -> ModelFacts {
        ModelFacts {
            model_type: "llama".to_owned(),
            architecture: "LlamaForCausalLM".to_owned(),
            dtype: circuit_ir::Format::Bf16,
            quantization: None,
            max_position_embeddings: positions,
            rope: RopeScaling {
                sets,
                original_max_position_embeddings: None,
            },
            rotary: Vec::new(),
            vocab_size: 128_256,
            num_attention_heads: 32,
            attention_chunk_size: None,
            vision_encoder: false,
            encoder: None,
            checkpoint_quantized: false,
        }
    }

    fn set(kind: &str, factor: Option<f64>, original: Option<u64>) -> RopeSet {
        RopeSet {
            rope_type: kind.to_owned(),
            factor,
            factor_null: false,
            original_max_position_embeddings: original,
            mrope_section: false,
        }
    }

    #[test]
    fn the_factor_scales_unless_the_set_carries_its_original_length_or_is_llama3() {
        // Llama 3.1: llama3 rope, factor 8: 131072 as written.
        let l = context_len(&model(131_072, vec![set("llama3", Some(8.0), Some(8192))]));
        assert_eq!(l.longest, 131_072);
        // DeepSeek-V2-Lite: yarn with original_max_position_embeddings inside: 163840.
        let d = context_len(&model(163_840, vec![set("yarn", Some(40.0), Some(4096))]));
        assert_eq!(d.longest, 163_840);
        // Gemma 3 27B: linear factor 8 over 131072: 1,048,576 (vLLM excepts Gemma 3; SGLang
        // does not).
        let g = context_len(&model(131_072, vec![set("linear", Some(8.0), None)]));
        assert_eq!((g.longest, g.default), (1_048_576, 1_048_576));
        assert_eq!(context_len(&model(32_768, vec![])).longest, 32_768);
    }
}
