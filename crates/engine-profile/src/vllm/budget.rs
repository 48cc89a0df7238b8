//! vLLM's KV budget after 0.26, from what a worker allocates: the non-KV memory as
//! `determine_available_memory` counts it from 0.27 ([`total_consumed`]), and the extensible KV
//! cache of 0.34, sized after warm-up and CUDA-graph capture from the memory measured then
//! ([`measured`]). Before 0.27 the budget is the generic one (worker.rs): requested less
//! weights, torch peak increase and non-torch increase.
//!
//! Invariants: every sum is checked (None on overflow); a budget below what the worker holds
//! is 0 KV bytes, never a wrap; the quantities vLLM measures that its source cannot give (the
//! caching allocator's slack, the torch reservation growth of the sizing steps) are not here:
//! the engine file states them as unsettled. The memory in use before vLLM's snapshot (the
//! CUDA context, the communicators) is not in the source either: [`measured`] takes it from the
//! engine file's stated assumption ([`MeasuredFacts`]), never as 0.

/// What a worker allocates, as the budget mechanisms read it (bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BudgetInputs {
    /// ceil(device total x utilization).
    pub(crate) requested: u64,
    /// The device's total as CUDA reports it.
    pub(crate) device_total: u64,
    /// Weights as loaded.
    pub(crate) weights: u64,
    /// Buffers allocated after the memory snapshot and before the profile run.
    pub(crate) resident: u64,
    /// The profile run's torch peak increase (the activation peak).
    pub(crate) activation_peak: u64,
    /// Of it, what stays allocated after the run (workspaces, receive buffers, caches).
    pub(crate) persistent: u64,
    /// Non-torch increase.
    pub(crate) non_torch: u64,
    /// The CUDA-graph estimate (0 when none is made).
    pub(crate) cuda_graph: u64,
    /// Whether the estimate is taken from the budget.
    pub(crate) subtract_cuda_graph: bool,
    /// The worker's world size (TP x PP): above 1 the communicators are set up before the
    /// snapshot.
    pub(crate) world_size: u64,
    /// `kv_cache.measured`, for [`measured`].
    pub(crate) measured: Option<MeasuredFacts>,
}

/// `[kv_cache.measured]` as compiled: the margins of a KV cache sized after warm-up and the
/// memory a worker holds before vLLM's first snapshot, which the headroom leaves out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MeasuredFacts {
    /// The least margin kept below the headroom.
    pub(crate) margin_floor: u64,
    /// The margin as a fraction of the transient, when above the floor.
    pub(crate) margin_fraction: f64,
    /// The CUDA context of the worker's process (assumed: the engine file says from where).
    pub(crate) cuda_context: u64,
    /// What a rank of a world of more than one holds beyond it before the snapshot (NCCL's
    /// communicators, custom all-reduce's buffers; assumed).
    pub(crate) communicators: u64,
}

impl MeasuredFacts {
    /// The memory in use when vLLM takes its first snapshot, at `world_size` (None on
    /// overflow).
    pub(crate) fn in_use_at_start(&self, world_size: u64) -> Option<u64> {
        crate::startup::held_before_measuring(self.cuda_context, self.communicators, world_size)
    }
}

/// vLLM 0.27-0.33 (`utils/mem_utils.py` `memory_profiling`: `non_kv_cache_memory =
/// total_consumed + transient_peak_headroom`, `total_consumed = before_create.free_memory -
/// after_profile.free_memory`, `transient_peak_headroom = torch_peak - torch_allocated` after
/// the run; 0.27 L317-326): the device memory consumed since the snapshot is the weights, the
/// runner's buffers allocated before the run (`resident`), what the run leaves allocated, the
/// caching allocator's slack and the non-torch growth; adding the run's peak over what it
/// leaves gives weights + resident + torch peak increase + non-torch (+ slack, unsettled).
/// The CUDA-graph estimate is subtracted after (`v1/worker/gpu_worker.py`, 0.27 L544-548).
/// Returns (KV bytes, non-KV bytes the budget counts).
pub(crate) fn total_consumed(i: &BudgetInputs) -> Option<(u64, u64)> {
    let mut taken = i
        .weights
        .checked_add(i.resident)?
        .checked_add(i.activation_peak)?
        .checked_add(i.non_torch)?;
    if i.subtract_cuda_graph {
        taken = taken.checked_add(i.cuda_graph)?;
    }
    Some((i.requested.saturating_sub(taken), taken))
}

/// vLLM 0.34's extensible KV cache (`v1/worker/extensible_kv_cache.py`
/// `measure_kv_cache_bytes`, L592-618): after warm-up and CUDA-graph capture,
/// `non_kv_used = init_free - free - committed` (the weights, the resident buffers, what the
/// profile run leaves allocated, the captured graphs' pool and the non-torch growth);
/// `margin = max(floor, int(transient x fraction))`; `available = min(requested - non_kv_used,
/// free + committed - margin) - max(transient, torch_reserve_growth)`, at least 0. The
/// transient is `reserved_headroom_bytes`: the profile run's peak over what it leaves
/// allocated (`transient_peak_headroom`, v1/worker/gpu_worker.py L771-773 with no estimate
/// under the extensible cache), then the sizing steps' own (v1/worker/gpu/warmup.py
/// `_measure_sizing_step`), which are not modelled. `init_free` is the first snapshot's free
/// memory (v1/worker/gpu_worker.py L549 `MemorySnapshot`, after the distributed init and the
/// cuBLAS handles, L506-546), so `free + committed = init_free - non_kv_used = total -
/// in_use_at_start - non_kv_used`: the memory in use before the snapshot (the CUDA context,
/// at world > 1 the communicators; [`MeasuredFacts::in_use_at_start`]) is out of the headroom.
/// Returns (KV bytes, non-KV bytes counted against the requested memory).
pub(crate) fn measured(i: &BudgetInputs) -> Option<(u64, u64)> {
    let m = i.measured?;
    let (floor, fraction) = (m.margin_floor, m.margin_fraction);
    let used = i
        .weights
        .checked_add(i.resident)?
        .checked_add(i.persistent)?
        .checked_add(i.non_torch)?
        .checked_add(i.cuda_graph)?;
    let transient = i.activation_peak.saturating_sub(i.persistent);
    // Python's int() of a non-negative float truncates.
    let margin = floor.max((transient as f64 * fraction) as u64);
    let within_request = i.requested.saturating_sub(used);
    let init_free = i
        .device_total
        .saturating_sub(m.in_use_at_start(i.world_size)?);
    let headroom = init_free.saturating_sub(used).saturating_sub(margin);
    let kv = within_request.min(headroom).saturating_sub(transient);
    Some((kv, used.checked_add(transient)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn inputs() -> BudgetInputs {
        BudgetInputs {
            requested: 73 * GIB,
            device_total: 79 * GIB,
            weights: 15 * GIB,
            resident: GIB / 2,
            activation_peak: 2 * GIB,
            persistent: GIB / 4,
            non_torch: GIB / 4,
            cuda_graph: GIB,
            subtract_cuda_graph: true,
            world_size: 1,
            measured: Some(MeasuredFacts {
                margin_floor: GIB,
                margin_fraction: 0.75,
                cuda_context: GIB / 2,
                communicators: GIB,
            }),
        }
    }

    #[test]
    fn total_consumed_counts_the_resident_buffers_and_the_estimate() {
        // 15 + 0.5 + 2 + 0.25 + 1 = 18.75 GiB taken from 73.
        let (kv, taken) = total_consumed(&inputs()).unwrap();
        assert_eq!(taken, 18 * GIB + 3 * GIB / 4);
        assert_eq!(kv, 73 * GIB - taken);
        let none = BudgetInputs {
            subtract_cuda_graph: false,
            ..inputs()
        };
        assert_eq!(total_consumed(&none).unwrap().1, 17 * GIB + 3 * GIB / 4);
    }

    #[test]
    fn measured_takes_the_smaller_of_the_request_and_the_headroom_less_the_transient() {
        // used = 15 + 0.5 + 0.25 + 0.25 + 1 = 17 GiB; transient = 2 - 0.25 = 1.75 GiB;
        // margin = max(1, 1.3125) = 1.3125 GiB; init_free = 79 - 0.5 (the context) = 78.5.
        // Within the request 73 - 17 = 56; the headroom 78.5 - 17 - 1.3125 = 60.1875: the
        // request binds, 56 - 1.75 = 54.25 GiB.
        let (kv, taken) = measured(&inputs()).unwrap();
        assert_eq!(kv, 54 * GIB + GIB / 4);
        assert_eq!(taken, 18 * GIB + 3 * GIB / 4);
        // At utilization 1.0 the headroom binds: 60.1875 - 1.75 = 58.4375 GiB, the context
        // (0.5 GiB) less than the device alone would leave.
        let all = BudgetInputs {
            requested: 79 * GIB,
            ..inputs()
        };
        assert_eq!(measured(&all).unwrap().0, 58 * GIB + 7 * GIB / 16);
        // A world of two also holds the communicators (1 GiB) before the snapshot: 57.4375.
        let pair = BudgetInputs {
            world_size: 2,
            ..all
        };
        assert_eq!(measured(&pair).unwrap().0, 57 * GIB + 7 * GIB / 16);
        // Nothing left: 0, not a wrap.
        let full = BudgetInputs {
            weights: 78 * GIB,
            ..inputs()
        };
        assert_eq!(measured(&full).unwrap().0, 0);
    }

    #[test]
    fn the_memory_in_use_at_start_overflows_to_none() {
        let huge = BudgetInputs {
            world_size: 2,
            measured: Some(MeasuredFacts {
                cuda_context: u64::MAX,
                ..inputs().measured.unwrap()
            }),
            ..inputs()
        };
        assert_eq!(measured(&huge), None);
    }
}
