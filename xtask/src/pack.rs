//! `cargo xtask pack`: pack the buffers of a MiniMalloc CSV file into an arena.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::out::outln;
use clap::Args;
use memory_plan::pack::{self, Goal, Limits, Proof, csv};

#[derive(Args, Debug)]
#[command(
    about = "Pack the buffers of a MiniMalloc CSV file into an arena",
    after_help = "Example:\n  cargo xtask pack --capacity 1048576 data/minimalloc/A.1048576.csv --out A.solution.csv\n  cargo xtask pack --minimize --time-limit 10 problem.csv"
)]
pub struct PackArgs {
    /// The problem: a CSV file with the header `id,lower,upper,size` (buffer `id` is live on
    /// the steps [lower, upper) and needs `size` bytes).
    pub file: PathBuf,
    /// Arena size in bytes: find a placement whose height is at most this. Required unless
    /// --minimize is given; with --minimize it is checked against the result.
    #[arg(long, value_name = "BYTES")]
    pub capacity: Option<u64>,
    /// Find the lowest placement the limits allow instead of any that fits the capacity.
    #[arg(long)]
    pub minimize: bool,
    /// Wall-clock limit for the search, in seconds; the best placement so far is kept.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub time_limit: f64,
    /// Search-node budget (deterministic limit; the same budget gives the same result).
    #[arg(long, value_name = "NODES", default_value_t = 50_000_000)]
    pub max_steps: u64,
    /// Write the solution here: the input columns plus `offset`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `pack::solve` with a node budget and a wall-clock limit of `seconds` (the clock is read
/// here, never in memory-plan); returns the solution and the time it took.
pub(crate) fn solve_within(
    buffers: &[pack::Buffer],
    goal: Goal,
    max_steps: u64,
    seconds: f64,
) -> Result<(pack::Solution, Duration), pack::PackError> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let stop = move || Instant::now() >= deadline;
    let limits = Limits {
        max_steps,
        stop: Some(&stop),
    };
    let solution = pack::solve(buffers, goal, &limits)?;
    Ok((solution, started.elapsed()))
}

pub fn run(args: &PackArgs) -> Result<(), Box<dyn Error>> {
    let goal = match (args.minimize, args.capacity) {
        (true, _) => Goal::Minimize,
        (false, Some(capacity)) => Goal::Fit { capacity },
        (false, None) => return Err("give --capacity BYTES, or --minimize".into()),
    };
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        return Err(format!(
            "--time-limit {} is not a positive number of seconds",
            args.time_limit
        )
        .into());
    }
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    let rows = csv::parse(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let buffers: Vec<pack::Buffer> = rows.iter().map(csv::CsvBuffer::buffer).collect();

    let (solution, elapsed) = solve_within(&buffers, goal, args.max_steps, args.time_limit)
        .map_err(|e| format!("{}: {e}", args.file.display()))?;
    let height = pack::validate(&buffers, &solution.placement.offsets, None)
        .map_err(|e| format!("internal error, the solver returned an invalid placement: {e}"))?;

    let proof = match solution.proof {
        Proof::Optimal => "optimal (proven)",
        Proof::Fits => "fits the capacity (not proven minimal)",
        Proof::DoesNotFit => "does not fit the capacity (proven)",
        _ => "unproven (limit reached)",
    };
    outln!("buffers:     {}", buffers.len());
    outln!("height:      {height}");
    outln!("lower bound: {}", solution.lower_bound);
    if let Some(capacity) = args.capacity {
        let verdict = if height <= capacity {
            "fits"
        } else {
            "exceeds"
        };
        outln!("capacity:    {capacity} ({verdict})");
    }
    outln!("proof:       {proof}");
    outln!("steps:       {}", solution.steps);
    outln!("time:        {:.3} s", elapsed.as_secs_f64());
    if let Some(out) = &args.out {
        let text = csv::write(&rows, &solution.placement.offsets)?;
        std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        outln!("solution:    {}", out.display());
    }
    Ok(())
}
