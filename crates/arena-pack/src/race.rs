//! Portfolios in parallel with a deterministic winner: the lowest-indexed run that concludes
//! decides, and an [`Interrupt`] cuts runs short from outside.
//!
//! Invariant: a run is cancelled only by a lower-indexed run that concluded, by its outer
//! interrupt or by `stop`; so, unless `stop` fires, which run decides, its result and the nodes
//! counted do not depend on the thread count.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

/// How a search run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every buffer placed within the capacity.
    Found,
    /// The whole space was explored: nothing fits.
    Exhausted,
    /// The budget ran out, `stop` returned true, or a better-ranked run succeeded.
    Aborted,
}

/// One run of a [`race`]: how it ended, the nodes it used (within its budget), its offsets.
pub(crate) type RaceRun = (Outcome, u64, Vec<u64>);

/// The runs of a [`race`] and which one decided.
pub(crate) struct Race {
    /// Every run, in index order.
    pub(crate) runs: Vec<RaceRun>,
    /// The lowest-indexed run that concluded (any outcome but `Aborted`).
    pub(crate) decided: Option<usize>,
    /// The nodes counted: those of the runs up to the deciding one, or of all runs.
    pub(crate) counted: u64,
}

/// Runs `count` configurations in parallel; the lowest-indexed one that concludes decides.
/// Each run gets an interrupt that carries `stop` and `outer` and fires when a lower-indexed
/// run has concluded, and nothing else cancels a run, so which run decides and the nodes
/// counted do not depend on the thread count.
pub(crate) fn race(
    count: usize,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    outer: Option<&Interrupt<'_>>,
    run: impl Fn(usize, &Interrupt<'_>) -> RaceRun + Sync,
) -> Race {
    let winner = AtomicUsize::new(usize::MAX);
    let runs: Vec<RaceRun> = (0..count)
        .into_par_iter()
        .map(|index| {
            let interrupt = Interrupt {
                stop,
                cancel: Some((&winner, index)),
                outer,
            };
            let result = run(index, &interrupt);
            if result.0 != Outcome::Aborted {
                winner.fetch_min(index, Ordering::Relaxed);
            }
            result
        })
        .collect();
    let decided = runs.iter().position(|r| r.0 != Outcome::Aborted);
    let counted = runs[..decided.map_or(runs.len(), |w| w + 1)]
        .iter()
        .map(|r| r.1)
        .fold(0u64, u64::saturating_add);
    Race {
        runs,
        decided,
        counted,
    }
}

/// Cuts a run short from outside: `stop` (wall clock) and a shared cancel flag that holds the
/// lowest index of a run that already succeeded (runs with a higher index give up).
pub(crate) struct Interrupt<'a> {
    pub(crate) stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    pub(crate) cancel: Option<(&'a AtomicUsize, usize)>,
    /// The interrupt of the run this one is part of (it fires this one too).
    pub(crate) outer: Option<&'a Interrupt<'a>>,
}

impl Interrupt<'_> {
    pub(crate) fn fired(&self) -> bool {
        if let Some((flag, index)) = self.cancel
            && flag.load(Ordering::Relaxed) < index
        {
            return true;
        }
        if self.outer.is_some_and(Interrupt::fired) {
            return true;
        }
        self.stop.is_some_and(|stop| stop())
    }
}
