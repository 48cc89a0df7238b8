//! The file must say one thing: a key repeated in any object (readers silently keep the last)
//! and a UTF-8 byte-order mark (JSON forbids it; transformers refuses it) are refused by name.

use circuit_hf::{HfError, import};

const LLAMA: &str = r#"{"model_type": "llama", "vocab_size": 1000, "hidden_size": 128,
  "intermediate_size": 320, "num_hidden_layers": 4, "num_attention_heads": 8}"#;

fn err(json: &str) -> HfError {
    import(json, "config.json").map(|_| ()).unwrap_err()
}

#[test]
fn a_repeated_key_is_refused_at_any_depth() {
    // Last-wins would plan bf16 here, silently.
    let json = LLAMA.replacen(
        '{',
        r#"{"quantization_config": {"quant_method": "fp8"}, "quantization_config": null, "#,
        1,
    );
    let e = err(&json);
    assert_eq!(
        e,
        HfError::DuplicateKey {
            origin: "config.json".to_owned(),
            key: "quantization_config".to_owned(),
            line: 1,
            column: 70,
        }
    );
    assert_eq!(
        e.to_string(),
        "config.json: line 1, column 70: duplicate key `quantization_config` in one JSON object (JSON readers keep only the last value, silently); remove one of them"
    );
    let nested = LLAMA.replacen(
        '{',
        r#"{"rope_scaling": {"factor": 8.0, "rope_type": "llama3", "factor": 2.0}, "#,
        1,
    );
    assert!(matches!(err(&nested), HfError::DuplicateKey { key, .. } if key == "factor"));
    let in_list = LLAMA.replacen('{', r#"{"eos_token_id": [1, {"a": 1, "a": 2}], "#, 1);
    assert!(matches!(err(&in_list), HfError::DuplicateKey { key, .. } if key == "a"));
    // Equal keys in different objects are fine.
    import(
        &LLAMA.replacen(
            '{',
            r#"{"rope_scaling": {"factor": 8.0}, "auto_map": {"factor": 1}, "#,
            1,
        ),
        "config.json",
    )
    .unwrap();
}

#[test]
fn a_byte_order_mark_is_named() {
    let e = err(&format!("\u{feff}{LLAMA}"));
    assert_eq!(
        e.to_string(),
        "config.json: the file starts with a UTF-8 byte-order mark (U+FEFF), which JSON does not allow and transformers refuses; save it without the mark"
    );
}
