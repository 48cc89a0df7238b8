//! The CUDA-graph estimate of a worker: the sizes each mode captures (the engine file's
//! candidate ranges clipped at the largest captured size, the model class's own when the file
//! gives one, its extra sizes when at most that, and at each mode's largest), then the first
//! capture once (the modes share one pool) plus every further capture of every mode, unless the
//! file names another way to form the estimate (`cuda_graph.estimate`, mechanisms.rs).
//!
//! Invariants: a range that would list more than 65,536 sizes is refused (an engine captures
//! tens); every sum is checked.

use crate::formula::Env;
use crate::{CudaGraphEstimate, EngineError, EngineProfile};

/// The most sizes one candidate range may list.
const MAX_SIZES_PER_RANGE: u64 = 1 << 16;

impl EngineProfile {
    /// The estimate for a model of class `architecture` with the run's names (and the
    /// forward's `kernel_launches`) in `env`.
    pub(crate) fn cuda_graph(
        &self,
        architecture: &str,
        env: &Env<'_>,
    ) -> Result<CudaGraphEstimate, EngineError> {
        let facts = &self.facts.run()?.cuda_graph;
        let overflow = || EngineError::Overflow {
            what: format!("{}: CUDA-graph estimate", env.circuit_name()),
        };
        let max = match facts.architecture.iter().find(|(a, _)| a == architecture) {
            Some((_, own)) => own.eval(env)?,
            None => facts.max_capture_size.eval(env)?,
        };
        let mut sizes: Vec<u64> = Vec::new();
        for r in &facts.capture_sizes {
            let stop = r.stop.map_or(max, |s| s.min(max));
            if stop.saturating_sub(r.start) / r.step > MAX_SIZES_PER_RANGE {
                return Err(EngineError::Toml {
                    origin: self.origin.clone(),
                    message: format!(
                        "cuda_graph.capture_sizes: range from {} to {stop} step {} holds more than {MAX_SIZES_PER_RANGE} sizes",
                        r.start, r.step
                    ),
                });
            }
            let mut size = r.start;
            while size <= stop {
                sizes.push(size);
                size = size.checked_add(r.step).ok_or_else(overflow)?;
            }
        }
        for extra in &facts.extra_sizes {
            let size = extra.eval(env)?;
            if size <= max {
                sizes.push(size);
            }
        }
        sizes.sort_unstable();
        sizes.dedup();
        let mut captures = Vec::new();
        for (mode, largest) in &facts.modes {
            let largest = largest.eval(env)?;
            let count = sizes.iter().filter(|&&s| s <= largest).count() as u64;
            captures.push((mode.clone(), count));
        }
        let first = facts.first_capture_bytes.eval(env)?;
        let per_unfloored = facts.per_capture_bytes.eval(env)?;
        let per = per_unfloored.max(facts.min_per_capture_bytes);
        let total = match facts.estimate {
            Some(mechanism) => {
                crate::mechanisms::cuda_graph_total(mechanism, &captures, first, per, per_unfloored)
                    .ok_or_else(overflow)?
            }
            None => {
                let mut total = if captures.iter().any(|(_, n)| *n > 0) {
                    first
                } else {
                    0
                };
                for (_, n) in &captures {
                    let further = n.saturating_sub(1).checked_mul(per).ok_or_else(overflow)?;
                    total = total.checked_add(further).ok_or_else(overflow)?;
                }
                total
            }
        };
        Ok(CudaGraphEstimate {
            captures,
            first_capture: first,
            per_capture: per,
            total,
        })
    }
}
