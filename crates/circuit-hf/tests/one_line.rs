//! Every message is one line, whatever the config.json quotes (issue 7).

#[test]
fn json_strings_with_newlines_are_escaped() {
    let err = circuit_hf::from_config_json(r#"{"model_type": "lla\nma"}"#, "m\n/config.json")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "m\\n/config.json: model_type `lla\\nma` is not supported (supported: llama, granite, \
         mistral, qwen2, qwen3, qwen3_moe, qwen2_moe, mixtral, phi3, phi, gemma, gemma2, \
         gemma3_text, deepseek_v2, deepseek_v3, kimi_k2, gpt_oss, glm4_moe, llama4_text, \
         qwen3_next, llama4, gemma3, mistral3, llava, llava_next, kimi_vl, qwen2_5_vl, qwen3_vl, \
         qwen3_vl_moe)"
    );
}
