//! vLLM's own mechanisms, which an engine file selects by name: how it groups KV-cache layers
//! (`kv_groups`, `kv_cache.layout = "vllm"`), how it derives a model's context length
//! (`max_model_len`, `model_len.rule = "vllm"`), how later releases size the KV budget
//! (`budget`: `kv_cache.budget = "vllm_total_consumed"` from 0.27, `"vllm_measured"` from
//! 0.34), count the tokens they print (`printed_tokens`, `kv_cache.printed_tokens =
//! "vllm_concurrency"` from 0.21) and form the model runner V2's CUDA-graph estimate
//! (`cuda_graph_estimate`, `cuda_graph.estimate = "vllm_capture_piecewise"` from 0.29) and
//! how long its rotary caches are (`rotary`, `weights.rotary_caches = "vllm"`).
//! Everything else vLLM does at start-up is data in `engines/vllm-<version>/`.
//!
//! Invariants: each mechanism mirrors one function of vLLM's source, cited where it is; none
//! holds a number that differs between releases (those are the engine file's).

mod budget;
mod cuda_graph_estimate;
mod kv_groups;
mod max_model_len;
mod printed_tokens;
mod rotary;

pub(crate) use budget::{BudgetInputs, MeasuredFacts, measured, total_consumed};
pub(crate) use cuda_graph_estimate::capture_piecewise;
pub(crate) use kv_groups::kv_groups;
pub(crate) use max_model_len::max_model_len;
pub(crate) use printed_tokens::{blocks_for_concurrency_tokens, concurrency_tokens};
pub(crate) use rotary::cache_rows;
