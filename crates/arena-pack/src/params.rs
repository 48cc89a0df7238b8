//! The solver's tuning constants, in one place.
//!
//! Invariant: every constant changes only how the work is spent, never the validity of a
//! placement or the soundness of a proof; all are node counts or sizes, so a run stays a
//! deterministic function of its input, its `Params` and its node budget.

/// Tuning constants of [`solve_with`](crate::solve_with) (`Params::default()` is what
/// [`solve`](crate::solve) and [`heuristic`](crate::heuristic) use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The pair visits the greedy passes other than the two in start order share (each visits
    /// every pair of buffers that share a step): as many run as fit.
    pub greedy_pairs: u64,
    /// Independent parts of at most this many buffers go to the exact search; larger ones to
    /// the windowed search.
    pub max_exact_buffers: usize,
    /// Search nodes per exact attempt in the first pass of `Goal::Fit` (doubled each pass).
    pub fit_first_pass_steps: u64,
    /// Whole portfolio rounds per attempt of `Goal::Minimize`'s ladder of round capacities
    /// (its scan and its descent), in the rounds of a `fit_first_pass_steps` attempt: with the
    /// defaults, 10 runs x (4,000 + 8,000) = 120,000 nodes. Whole rounds, so that a fit
    /// there which decides within them decides here with the same nodes.
    pub ladder_rounds: u32,
    /// Each phase of the ladder (scan, refinement, descent) ends after this many of its
    /// attempts ran out of nodes.
    pub ladder_aborts: u32,
    /// Search nodes per exact attempt in the first bisection pass of `Goal::Minimize`
    /// (doubled each pass).
    pub minimize_first_pass_steps: u64,
    /// The first round's node budget of each portfolio run in an exact attempt (doubled each
    /// round).
    pub portfolio_first_round: u64,
    /// Search nodes per buffer of one layered attempt on a large part (doubled in each pass
    /// of `Goal::Minimize`'s attempts there): a share that grows with the part, so that the
    /// windowed run of a part of a million buffers is not cut short by a fixed cap.
    pub layered_nodes_per_buffer: u64,
    /// A buffer of a large part joins its base layer when it is live in more than
    /// 1/`base_fraction` of the part's sections (and in more than `min_base_sections`).
    pub base_fraction: usize,
    /// See `base_fraction`; a buffer reaching the part's first or last step needs a quarter.
    pub min_base_sections: usize,
    /// `Goal::Minimize` on a part of more than `4 x window` buffers that the exact search
    /// takes makes one layered attempt at its bound with this many nodes per buffer (the
    /// planner's small budgets never make it).
    pub layered_first_nodes_per_buffer: u64,
    /// Free buffers a window of the windowed search aims at.
    pub window: usize,
    /// A window merged with the windows before it stops growing at this many free buffers.
    pub max_merged: usize,
    /// Searches of a window that does not fit, at rooms between the room and the height of
    /// its greedy placement, before that placement is taken.
    pub raise_tries: u32,
    /// Search nodes per free buffer of one window attempt.
    pub window_nodes_per_buffer: u64,
    /// ... and at least this many.
    pub window_min_nodes: u64,
    /// The first round's node budget of each whole-part run after a failed windowed run
    /// (multiplied by 4 each round).
    pub whole_part_first_round: u64,
    /// The most (section, buffer) cells one stacking-bound check of the exact search reads
    /// (the sections a move changed first): a check is a pruning, so a cap only prunes less,
    /// and keeps a move on long-lived buffers from costing O(sections x live).
    pub stack_check_cells: usize,
    /// A whole-part run ends once its work (floors examined, stacking cells read) passes its
    /// node budget times this: its nodes cost from a few to thousands of such units, and the
    /// node budget is how the solver shares its time out.
    pub whole_part_work_per_node: u64,
    /// A window search ends once its work (buffers read at its lowest points, floors
    /// examined, stacking cells read) passes its nodes times this, and is charged that work
    /// in nodes where it is more than its nodes: the node budget is the solver's measure of
    /// time. A window's node reads 450-2,000 such units on the compiler-shaped sets of
    /// `bench pack` (10th to 99th percentile, by node, of their searching attempts) and is
    /// charged one node; a node of the merged windows at the end of `xla-60k`'s training step
    /// (the Adam update among 550 pins) reads about 9,000 and took 25 us where the others take
    /// 2, so those merges took most of an attempt's time for a tenth of its nodes.
    pub window_work_per_node: u64,
    /// Whole-part runs are made only when the part's buffers cover at most this many
    /// (buffer, section) cells in all (the exact search's tables grow with it).
    pub whole_part_cells: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            greedy_pairs: 1 << 24,
            max_exact_buffers: 1500,
            fit_first_pass_steps: 256_000,
            ladder_rounds: 2,
            ladder_aborts: 4,
            minimize_first_pass_steps: 16_000,
            portfolio_first_round: 4_000,
            layered_nodes_per_buffer: 128,
            base_fraction: 16,
            min_base_sections: 256,
            layered_first_nodes_per_buffer: 512,
            window: 64,
            max_merged: 640,
            raise_tries: 3,
            window_nodes_per_buffer: 48,
            window_min_nodes: 2_000,
            whole_part_first_round: 1 << 16,
            whole_part_cells: 1 << 23,
            whole_part_work_per_node: 4096,
            window_work_per_node: 2048,
            stack_check_cells: 1 << 14,
        }
    }
}
