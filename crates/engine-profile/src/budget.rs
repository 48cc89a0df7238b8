//! Questions an engine cannot answer before it boots, each answered by repeated predictions:
//! the largest max-model-len and max-num-seqs that start, the smallest tensor-parallel size that
//! fits, and the utilization a KV-cache target needs.
//!
//! Invariant: a bisection assumes what starts at some size starts at every smaller one (more
//! sequences or a longer request never need less memory), so it runs about log2(top) times.

use circuit_ir::Circuit;

use crate::{EngineError, EngineProfile, RunSettings, StageCircuit, Startup, Verdict, Worker};

/// The largest `x` in 1..=`top` that `passes`, None when 1 does not (or `top` is 0), by
/// bisection: `passes` must hold on a prefix of 1..=`top` (what fits at some size fits at every
/// smaller one), so it runs about log2(top) times.
fn largest_passing(
    top: u64,
    mut passes: impl FnMut(u64) -> Result<bool, EngineError>,
) -> Result<Option<u64>, EngineError> {
    if top == 0 || !passes(1)? {
        return Ok(None);
    }
    if passes(top)? {
        return Ok(Some(top));
    }
    // passes(lo), !passes(hi).
    let (mut lo, mut hi) = (1u64, top);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo))
}

/// Answers to questions the engine cannot answer before booting, from one prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetAnswers {
    /// The largest max-model-len that starts (None: nothing starts): the KV tokens of the
    /// start-up (the profile run does not depend on max-model-len), at most the longest the
    /// engine allows the model ([`EngineProfile::model_len`]), above which it refuses the length.
    pub largest_max_model_len: Option<u64>,
    /// The smallest gpu-memory-utilization whose KV cache holds `target_kv_tokens` (None when
    /// even 1.0 does not); for an engine with a flow of its own, the fraction that flow's
    /// engine takes instead (its `--mem-fraction-static`).
    pub utilization_for_target: Option<f64>,
}

/// The smallest tensor-parallel size that starts, with its start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct SmallestTp {
    /// The sizes tried, in order: those dividing the attention heads, up to the limit.
    pub tried: Vec<u64>,
    /// The first that starts, with its start-up (None: none does).
    pub found: Option<(u64, Startup)>,
}

impl EngineProfile {
    /// The largest max-model-len that starts under `run`, and the utilization needed for a KV
    /// cache of `target_kv_tokens` tokens.
    pub fn budget_answers(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
        target_kv_tokens: u64,
    ) -> Result<BudgetAnswers, EngineError> {
        let profile = self.resolve_for(stages, run)?;
        let profile = profile.as_ref();
        if let Some(answers) =
            crate::mechanisms::budget_answers(profile, stages, run, target_kv_tokens)
        {
            return answers;
        }
        let mut startup = profile.predict_layout(stages, run)?;
        // A length above the model's is refused before anything loads, but the question is
        // the largest that starts: answered from the start-up at the longest the model allows.
        if let Verdict::MaxModelLenAboveModel { longest, .. } = startup.verdict {
            let at = RunSettings {
                max_model_len: Some(longest),
                ..run.clone()
            };
            startup = profile.predict_layout(stages, &at)?;
        }
        let overflow = || EngineError::Overflow {
            what: "bytes for the target KV tokens".to_owned(),
        };
        // Blocks are whole and the printed tokens count a block per group: the target needs
        // ceil(target / block size) x groups of them on every worker, and the worker that
        // needs the most memory sets the utilization. The CUDA-graph estimate counts where the
        // engine subtracts it.
        let blocks = profile
            .blocks_for_printed_tokens(&startup.kv_layout, target_kv_tokens, startup.max_model_len)
            .ok_or_else(overflow)?;
        let needed = startup
            .workers
            .iter()
            .map(|w: &Worker| {
                w.counted_non_kv
                    .checked_add(blocks.checked_mul(w.block_bytes)?)
            })
            .try_fold(0u64, |acc, n| n.map(|n| acc.max(n)))
            .ok_or_else(overflow)?;
        let utilization = needed as f64 / startup.device_total as f64;
        let fits = !matches!(
            startup.verdict,
            Verdict::NoKvMemory { .. } | Verdict::WeightsAboveDevice { .. }
        ) && startup.kv_blocks > 0;
        // A multimodal encoder's dummy items may shrink with the length, so a length below
        // the run's may start when the run's does not.
        let encoder_runs = startup.workers.iter().any(|w| w.encoder.items > 0);
        let largest_max_model_len = if fits || encoder_runs {
            profile.largest_len(stages, run, &startup)?
        } else {
            None
        };
        Ok(BudgetAnswers {
            largest_max_model_len,
            utilization_for_target: (utilization <= 1.0).then_some(utilization),
        })
    }

    /// The largest max-model-len, at most the longest the engine allows, one request of which the
    /// start-up's KV memory holds as the engine's check counts it (vLLM's
    /// _check_enough_kv_cache_memory, `KvLayout::holds_one_request`). Without a multimodal
    /// encoder the memory does not depend on the length (the profile run and the pages do not),
    /// the request's bytes grow with it: a bisection. With one, the encoder's dummy items may
    /// grow with the length (a dummy video's frames, the items a prompt holds), so each length's
    /// start-up is predicted again: its memory never grows with the length, the request's bytes
    /// never shrink, still a bisection.
    fn largest_len(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
        startup: &Startup,
    ) -> Result<Option<u64>, EngineError> {
        let tokens = startup.max_num_batched_tokens;
        let block_size = self.block_size(run)?;
        let encoder_runs = startup.workers.iter().any(|w| w.encoder.items > 0);
        let fits = |len: u64| -> Result<bool, EngineError> {
            if encoder_runs {
                let at = RunSettings {
                    max_model_len: Some(len),
                    ..run.clone()
                };
                let s = self.predict_layout(stages, &at)?;
                return Ok(s.kv_blocks > 0 && s.kv_layout.holds_one_request(&s.workers));
            }
            let layout = self.kv_layout(stages, &run.model, block_size, len, tokens)?;
            Ok(layout.holds_one_request(&startup.workers))
        };
        largest_passing(self.model_len(&run.model).longest, fits)
    }

    /// The largest max-num-seqs that starts under `run` (its `max_num_seqs` is ignored), None
    /// when even one sequence does not. vLLM refuses more sequences than batched tokens
    /// (config/scheduler.py: max_num_batched_tokens >= max_num_seqs), so the search is over
    /// 1..=max_num_batched_tokens; more sequences never need less memory (the sampler's rows
    /// grow), so it bisects, about log2(tokens) predictions.
    pub fn largest_max_num_seqs(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
    ) -> Result<Option<u64>, EngineError> {
        let profile = self.resolve_for(stages, run)?;
        let tokens = match run.max_num_batched_tokens {
            Some(t) => t,
            None => profile.defaults_on(&run.device)?.max_num_batched_tokens,
        };
        let starts = |seqs: u64| -> Result<bool, EngineError> {
            let at = RunSettings {
                max_num_seqs: Some(seqs),
                ..run.clone()
            };
            let s = profile.predict_layout(stages, &at)?;
            Ok(s.verdict == Verdict::Starts)
        };
        largest_passing(tokens, starts)
    }

    /// The smallest tensor-parallel size that starts under `run` (its tensor-parallel size is
    /// ignored): the sizes from 1 to `limit` that divide the model's `num_attention_heads`,
    /// in order. `stages_for(tp)` gives the layout's per-stage circuits at that size (the
    /// caller imports them); a size whose import fails is skipped, as one the model cannot be
    /// sharded to.
    pub fn smallest_tp<F>(
        &self,
        run: &RunSettings,
        limit: u64,
        mut stages_for: F,
    ) -> Result<SmallestTp, EngineError>
    where
        F: FnMut(u64) -> Option<Vec<Circuit>>,
    {
        let mut tried = Vec::new();
        for tp in memory_plan::tp_candidates(run.model.num_attention_heads, limit) {
            tried.push(tp);
            let Some(circuits) = stages_for(tp) else {
                continue;
            };
            let stages = StageCircuit::in_order(&circuits);
            let at = RunSettings {
                tensor_parallel_size: tp,
                ..run.clone()
            };
            let startup = self.predict_layout(&stages, &at)?;
            if startup.verdict == Verdict::Starts {
                return Ok(SmallestTp {
                    tried,
                    found: Some((tp, startup)),
                });
            }
        }
        Ok(SmallestTp { tried, found: None })
    }
}
