//! `cargo xtask pack`: pack the buffers of a MiniMalloc CSV file into an arena.
//!
//! Exit status: 0 when a placement was found (and, with `--capacity`, it fits); 1 on bad input
//! and when the height exceeds `--capacity` (then `--out` is not written, so a script never
//! takes a failed fit for a solution).

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::out::outln;
use arena_pack::{self as pack, Goal, Limits, Proof, csv};
use clap::Args;

#[derive(Args, Debug)]
#[command(
    about = "Pack the buffers of a MiniMalloc CSV file into an arena",
    after_help = "Exit status 1 when the height exceeds --capacity (--out is then not written).\n\nExample:\n  cargo xtask pack --capacity 1048576 data/minimalloc/A.1048576.csv --out A.solution.csv\n  cargo xtask pack --minimize --time-limit 10 problem.csv"
)]
pub struct PackArgs {
    /// The problem: a CSV file with the header `id,lower,upper,size` (buffer `id` is live on
    /// the steps [lower, upper) and needs `size` bytes).
    pub file: PathBuf,
    /// Arena size in bytes: find a placement whose height is at most this. Required unless
    /// --minimize is given; with --minimize it is checked against the result.
    // A negative number is this flag's (invalid) value, not another flag: clap then names
    // the flag and the value instead of suggesting `-- -1`, which does not work for an option.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub capacity: Option<u64>,
    /// Find the lowest placement the limits allow instead of any that fits the capacity.
    #[arg(long)]
    pub minimize: bool,
    /// Wall-clock limit in seconds (above 0, at most 1e9), on the whole run; the best
    /// placement found by then is kept.
    #[arg(
        long,
        value_name = "SECS",
        default_value = "60",
        allow_negative_numbers = true
    )]
    pub time_limit: String,
    /// Search-node budget (deterministic limit; the same budget gives the same result, and a
    /// larger one never a higher placement). The default (10^10) leaves the time limit to
    /// bind: a million buffers need tens of millions of nodes per layered attempt.
    #[arg(
        long,
        value_name = "NODES",
        default_value_t = 10_000_000_000,
        allow_negative_numbers = true
    )]
    pub max_steps: u64,
    /// Write the solution here: the input columns plus `offset` (only when it fits).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The longest `--time-limit` accepted, in seconds (about 31 years).
const MAX_SECONDS: f64 = 1e9;

/// A wall-clock limit that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TimeLimitError {
    /// Not a number.
    #[error(
        "{flag} `{value}` is not a number of seconds; give a number above 0 and at most 1000000000, such as 10 or 0.5"
    )]
    NotANumber {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// Zero, negative or NaN.
    #[error(
        "{flag} {value} is not a positive number of seconds; give a number above 0 and at most 1000000000"
    )]
    NotPositive {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// More than [`MAX_SECONDS`] (or infinite).
    #[error(
        "{flag} {value} is more than 1000000000 seconds (about 31 years); give at most 1000000000"
    )]
    TooLarge {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
}

/// Parses a `--time-limit`-like flag into a duration.
pub(crate) fn seconds(flag: &'static str, value: &str) -> Result<Duration, TimeLimitError> {
    let owned = || value.to_string();
    let secs: f64 = value
        .trim()
        .parse()
        .map_err(|_| TimeLimitError::NotANumber {
            flag,
            value: owned(),
        })?;
    if secs.is_nan() || secs <= 0.0 {
        return Err(TimeLimitError::NotPositive {
            flag,
            value: owned(),
        });
    }
    if secs > MAX_SECONDS {
        return Err(TimeLimitError::TooLarge {
            flag,
            value: owned(),
        });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What a time limit counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Clock {
    /// Wall-clock time.
    #[default]
    Wall,
    /// The CPU time the process uses, every thread together: what a loaded machine does not
    /// shrink (on an idle 2-core machine a wall limit of S seconds gives about 2S of it).
    Cpu,
}

impl Clock {
    /// The time on this clock, from an arbitrary origin.
    fn now(self, wall_origin: Instant) -> Duration {
        match self {
            Clock::Wall => wall_origin.elapsed(),
            Clock::Cpu => {
                let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
                // The kernel gives a non-negative time within a second's nanoseconds.
                Duration::new(
                    u64::try_from(t.tv_sec).unwrap_or(0),
                    u32::try_from(t.tv_nsec).unwrap_or(0),
                )
            }
        }
    }
}

/// `pack::solve` with a node budget and a time `limit` on `clock` (the clock is read here,
/// never in arena-pack); returns the solution and the time it took on that clock.
pub(crate) fn solve_within(
    buffers: &[pack::Buffer],
    goal: Goal,
    max_steps: u64,
    limit: Duration,
    clock: Clock,
) -> Result<(pack::Solution, Duration), pack::PackError> {
    let origin = Instant::now();
    let started = clock.now(origin);
    let stop = move || clock.now(origin).saturating_sub(started) >= limit;
    let limits = Limits {
        max_steps,
        stop: Some(&stop),
    };
    let solution = pack::solve(buffers, goal, &limits)?;
    Ok((solution, clock.now(origin).saturating_sub(started)))
}

pub fn run(args: &PackArgs) -> Result<(), Box<dyn Error>> {
    let goal = match (args.minimize, args.capacity) {
        (true, _) => Goal::Minimize,
        (false, Some(capacity)) => Goal::Fit { capacity },
        (false, None) => return Err("give --capacity BYTES, or --minimize".into()),
    };
    let limit = seconds("--time-limit", &args.time_limit)?;
    // The file's text and rows are dropped before the solve, only the ids kept for `--out`: at
    // a million buffers they are 28 MB and 32 MB of the process's peak beside the solver's.
    let (ids, buffers): (Vec<u64>, Vec<pack::Buffer>) = {
        let text = crate::inputs::files::read(&args.file, crate::inputs::files::Input::PackCsv)?;
        let rows = csv::parse(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
        rows.iter().map(|r| (r.id, r.buffer())).unzip()
    };

    let (solution, elapsed) = solve_within(&buffers, goal, args.max_steps, limit, Clock::Wall)
        .map_err(|e| format!("{}: {e}", args.file.display()))?;
    let height = pack::validate(&buffers, &solution.placement.offsets, None)
        .map_err(|e| format!("internal error, the solver returned an invalid placement: {e}"))?;

    let proof = match solution.proof {
        Proof::Optimal => "optimal (proven)",
        Proof::Fits => "fits the capacity (not proven minimal)",
        Proof::DoesNotFit => "does not fit the capacity (proven)",
        _ => "unproven (limit reached)",
    };
    let fits = args.capacity.is_none_or(|capacity| height <= capacity);
    outln!("buffers:     {}", buffers.len());
    outln!("height:      {height}");
    outln!("lower bound: {}", solution.lower_bound);
    if let Some(capacity) = args.capacity {
        let verdict = if fits { "fits" } else { "exceeds" };
        outln!("capacity:    {capacity} ({verdict})");
    }
    outln!("proof:       {proof}");
    outln!("steps:       {}", solution.steps);
    outln!("time:        {:.3} s", elapsed.as_secs_f64());
    if let (false, Some(capacity)) = (fits, args.capacity) {
        let why = if solution.proof == Proof::DoesNotFit {
            "no placement fits (proven)"
        } else {
            "none found within the limits"
        };
        let unwritten = args
            .out
            .as_ref()
            .map(|out| format!("; {} not written", out.display()))
            .unwrap_or_default();
        return Err(format!(
            "{}: height {height} exceeds --capacity {capacity}: {why}{unwritten}",
            args.file.display()
        )
        .into());
    }
    if let Some(out) = &args.out {
        let rows: Vec<csv::CsvBuffer> = ids
            .iter()
            .zip(&buffers)
            .map(|(&id, b)| csv::CsvBuffer {
                id,
                lower: b.start,
                upper: b.end,
                size: b.size,
            })
            .collect();
        let text = csv::write(&rows, &solution.placement.offsets)?;
        std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        outln!("solution:    {}", out.display());
    }
    Ok(())
}
