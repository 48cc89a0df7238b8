//! vLLM's own mechanisms, which an engine file selects by name: how it groups KV-cache layers
//! (`kv_groups`, `kv_cache.layout = "vllm"`) and how it derives a model's context length
//! (`max_model_len`, `model_len.rule = "vllm"`). Everything else vLLM does at start-up is data
//! in `engines/vllm-<version>/`.
//!
//! Invariants: each mechanism mirrors one function of vLLM's source, cited where it is; none
//! holds a number that differs between releases (those are the engine file's).

mod kv_groups;
mod max_model_len;

pub(crate) use kv_groups::kv_groups;
pub(crate) use max_model_len::max_model_len;
