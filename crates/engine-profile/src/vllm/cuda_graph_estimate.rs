//! The CUDA-graph estimate of vLLM's model runner V2 from 0.29
//! (`v1/worker/gpu/cudagraph_utils.py` `profile_cudagraph_memory`, 0.29 L718-805, and
//! `_extrapolate_full_graph_memory`, L808-816): the runner captures every PIECEWISE graph (and
//! encoder or speculator graphs) into a throwaway pool and measures the whole, but only the two
//! largest FULL graphs, whose total it extrapolates as the first plus (count - 1) x max(second,
//! 1 MiB). The V1 runner (and V2 before 0.29, which made no estimate) differs: the two largest
//! of every mode, the first once (the generic rule, cuda_graph.rs).
//!
//! Invariants: a mode other than `FULL` costs its captures x the per-capture bytes, with no
//! floor (they are measured, not extrapolated); FULL's extrapolation takes the floored figure;
//! every sum is checked.

/// The estimate from `captures` (per mode, its name and sizes captured), a first capture of
/// `first` bytes and further ones of `per` (floored) or `per_unfloored` bytes.
pub(crate) fn capture_piecewise(
    captures: &[(String, u64)],
    first: u64,
    per: u64,
    per_unfloored: u64,
) -> Option<u64> {
    let mut total = 0u64;
    for (mode, count) in captures {
        let bytes = if mode == "FULL" {
            if *count == 0 {
                0
            } else {
                first.checked_add(count.saturating_sub(1).checked_mul(per)?)?
            }
        } else {
            count.checked_mul(per_unfloored)?
        };
        total = total.checked_add(bytes)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piecewise_is_measured_whole_full_is_extrapolated() {
        let captures = vec![("PIECEWISE".to_owned(), 51), ("FULL".to_owned(), 51)];
        // 51 x 100 + (1,000 + 50 x 1,048,576).
        assert_eq!(
            capture_piecewise(&captures, 1_000, 1_048_576, 100),
            Some(5_100 + 1_000 + 50 * 1_048_576)
        );
        let none = vec![("PIECEWISE".to_owned(), 0), ("FULL".to_owned(), 0)];
        assert_eq!(capture_piecewise(&none, 1_000, 1_048_576, 100), Some(0));
    }
}
