//! `cargo xtask bench <what>`: speed targets measured in a release build. Each benchmark prints
//! what it measured; ratios are taken within one run because the machines are shared.
//!
//! Invariants: a timing benchmark runs only in the release profile: `cargo xtask` builds the
//! dev profile (shared with `cargo test`), so a benchmark started there runs the same command
//! again through cargo in the release profile ([`release_only`]) once its arguments are
//! checked; `bench engine`, which times nothing, runs where it is.

mod expr;
mod fuse;
pub mod pack;
mod report;
mod sweep;

use std::time::{Duration, Instant};

use crate::CliError;

/// Arguments of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: Bench,
}

#[derive(Debug, clap::Subcommand)]
enum Bench {
    /// The arena packer on the 11 MiniMalloc files, on real-shaped sets (ResNet-50, transformer
    /// training and inference at 10^4-10^5 buffers, a 50,000-buffer fan-in) and the planner on
    /// a 20,000-edge fan-in.
    Pack(Box<pack::BenchPackArgs>),
    /// Evaluations per second of a workspace-like expression at changing `n` (target: 50 M/s).
    Expr,
    /// Time per node to fuse the 32-layer example (target: under 1 microsecond).
    Fuse,
    /// Sweeps of 8192 row counts of the 8B example and a 70B-sized circuit, against one plan.
    Sweep,
    /// Every engine profile that a start-up of data/vllm/ names, against that start-up (each by
    /// its own release and device).
    Engine,
    /// The plan report: fit queries at 5,000 layers, JSON size and time of 8,192 rows of a
    /// 70B-sized circuit, peak memory streaming 2^16 and 2^20 rows.
    Report,
}

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    match &args.what {
        Bench::Pack(args) => pack::run(args),
        Bench::Expr => release_only().and_then(|()| expr::run()),
        Bench::Fuse => release_only().and_then(|()| fuse::run()),
        Bench::Sweep => release_only().and_then(|()| sweep::run()),
        Bench::Engine => crate::engine::bench(),
        Bench::Report => release_only().and_then(|()| report::run()),
    }
}

/// In a build with debug assertions (the dev profile `cargo xtask` builds), runs this command
/// line again with `cargo run --release` and exits with its status: what a benchmark measures
/// is release code. In a release build, returns at once.
pub fn release_only() -> Result<(), CliError> {
    if !cfg!(debug_assertions) {
        return Ok(());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    eprintln!("cargo xtask bench measures release code: running it with `cargo run --release`");
    let status = std::process::Command::new(&cargo)
        .args(["run", "--release", "--manifest-path", manifest, "--"])
        .args(std::env::args_os().skip(1))
        .status()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    std::process::exit(status.code().unwrap_or(1));
}

/// Runs `f` repeatedly for about `budget`, `rounds` times; returns the median time per call.
pub fn median_per_call(rounds: usize, budget: Duration, mut f: impl FnMut(u64)) -> Duration {
    // Calibrate: how many calls fill the budget.
    let mut calls: u64 = 1;
    loop {
        let start = Instant::now();
        for i in 0..calls {
            f(i);
        }
        if start.elapsed() >= budget / 4 || calls >= 1 << 40 {
            break;
        }
        calls *= 2;
    }
    let calls = calls * 4;
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for i in 0..calls {
                f(i);
            }
            start.elapsed() / u32::try_from(calls).unwrap_or(u32::MAX)
        })
        .collect();
    times.sort();
    times[rounds / 2]
}
