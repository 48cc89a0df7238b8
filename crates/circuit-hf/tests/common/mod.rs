//! What several test files of this crate share: the five configs of `data/models`.

// Each test binary compiles this module and uses only a part of it.
#![allow(dead_code)]

use std::path::PathBuf;

/// The names of the shared configs, in the order of the shared README.
pub const SHARED: [&str; 5] = [
    "llama-3.1-8b",
    "qwen2.5-7b",
    "mixtral-8x7b-v0.1",
    "qwen3-30b-a3b",
    "deepseek-v2-lite",
];

/// The path of a shared config.
pub fn shared_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/models")
        .join(name)
        .join("config.json")
}

/// The text of a shared config.
pub fn shared(name: &str) -> String {
    let path = shared_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
