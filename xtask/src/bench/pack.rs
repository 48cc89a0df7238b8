//! `cargo xtask bench pack`: the packer on the MiniMalloc benchmark and on large synthetic
//! workloads.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use memory_plan::pack::{self, Goal, Limits, csv};

use crate::out::outln;
use crate::pack::solve_within;

#[derive(Args, Debug)]
pub struct BenchPackArgs {
    /// Directory of the MiniMalloc files (`*.csv`, capacity in the file name).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Wall-clock limit per instance, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub time_limit: f64,
    /// Search-node budget per instance.
    #[arg(long, value_name = "NODES", default_value_t = 50_000_000)]
    pub max_steps: u64,
    /// Sizes (buffer counts) of the synthetic workloads.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 20_000, 50_000])]
    pub scale: Vec<usize>,
    /// Seeds of the synthetic workloads (each size is run with each seed).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 2])]
    pub seeds: Vec<u64>,
    /// Wall-clock limit per synthetic workload, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub scale_time_limit: f64,
    /// Only the files whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

fn default_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/minimalloc")
}

pub fn run(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    let dir = args.data.clone().unwrap_or_else(default_data);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e} (pass --data DIR)", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .filter(|p| {
            args.only.as_ref().is_none_or(|o| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(o))
            })
        })
        .collect();
    files.sort();
    outln!("MiniMalloc, solve(Fit) at the capacity in the file name");
    outln!(
        "{:<6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10}  proof",
        "file",
        "buffers",
        "capacity",
        "LB",
        "height",
        "steps",
        "time"
    );
    let mut total = Duration::ZERO;
    let mut heuristic_rows = Vec::new();
    for path in &files {
        let name = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let capacity: u64 = name
            .split('.')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("{}: no capacity in the file name", path.display()))?;
        let text = std::fs::read_to_string(path)?;
        let buffers: Vec<pack::Buffer> = csv::parse(&text)?
            .iter()
            .map(csv::CsvBuffer::buffer)
            .collect();
        let (solution, elapsed) = solve_within(
            &buffers,
            Goal::Fit { capacity },
            args.max_steps,
            args.time_limit,
        )?;
        total += elapsed;
        let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
        outln!(
            "{:<6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8.3} s  {:?}",
            name.split('.').next().unwrap_or(""),
            buffers.len(),
            capacity,
            solution.lower_bound,
            height,
            solution.steps,
            elapsed.as_secs_f64(),
            solution.proof
        );
        heuristic_rows.push((
            name.split('.').next().unwrap_or("").to_string(),
            buffers,
            capacity,
        ));
    }
    outln!("total {:.3} s", total.as_secs_f64());

    outln!();
    outln!("MiniMalloc, greedy heuristic alone (best of its passes)");
    outln!(
        "{:<6} {:>9} {:>9} {:>10}",
        "file",
        "height",
        "/capacity",
        "time"
    );
    for (name, buffers, capacity) in &heuristic_rows {
        let started = Instant::now();
        let placement = pack::heuristic(buffers)?;
        let elapsed = started.elapsed();
        pack::validate(buffers, &placement.offsets, None)?;
        outln!(
            "{:<6} {:>9} {:>9.3} {:>8.1} ms",
            name,
            placement.height,
            placement.height as f64 / *capacity as f64,
            elapsed.as_secs_f64() * 1e3
        );
    }

    outln!();
    outln!("Planner hot path on synthetic arenas: heuristic, and restack for new sizes");
    outln!(
        "{:>8} {:>12} {:>10} {:>12} {:>10} {:>16}",
        "buffers",
        "heuristic",
        "edges",
        "restack",
        "restacks/s",
        "solve 20k steps"
    );
    for count in [500usize, 2_000] {
        let buffers = pack::synth::transformer(5, count);
        let started = Instant::now();
        let placement = pack::heuristic(&buffers)?;
        let heuristic_time = started.elapsed();
        let stacking = pack::Stacking::new(&buffers, &placement);
        let mut offsets = Vec::with_capacity(buffers.len());
        let mut sizes: Vec<u64> = buffers.iter().map(|b| b.size).collect();
        let rounds = 2_000u64;
        let started = Instant::now();
        for round in 0..rounds {
            // New row counts scale every size; the order stays.
            for (size, b) in sizes.iter_mut().zip(&buffers) {
                *size = b.size / 256 * (round % 97 + 1) * 256;
            }
            let height = stacking.restack(&sizes, &mut offsets)?;
            std::hint::black_box(height);
        }
        let per = started.elapsed() / rounds as u32;
        // The planner's call when the heuristic misses the lower bound (PlanConfig's default).
        let limits = Limits {
            max_steps: 20_000,
            stop: None,
        };
        let started = Instant::now();
        let solution = pack::solve(&buffers, Goal::Minimize, &limits)?;
        let solve_time = started.elapsed();
        pack::validate(&buffers, &solution.placement.offsets, None)?;
        outln!(
            "{:>8} {:>9.2} ms {:>10} {:>9.1} us {:>10.0} {:>10.2} ms ({:?})",
            count,
            heuristic_time.as_secs_f64() * 1e3,
            stacking.edge_count(),
            per.as_secs_f64() * 1e6,
            1.0 / per.as_secs_f64(),
            solve_time.as_secs_f64() * 1e3,
            solution.proof
        );
    }

    outln!();
    outln!(
        "Synthetic transformer workloads (pack::synth), solve(Minimize), limit {} s each",
        args.scale_time_limit
    );
    outln!(
        "{:>8} {:>5} {:>12} {:>12} {:>8} {:>9} {:>9} {:>10} {:>7}  proof",
        "buffers",
        "seed",
        "LB",
        "height",
        "ht/LB",
        "greedy/LB",
        "steps",
        "time",
        "limit"
    );
    for &count in &args.scale {
        for &seed in &args.seeds {
            let buffers = pack::synth::transformer(seed, count);
            let started = Instant::now();
            let greedy = pack::heuristic(&buffers)?;
            let greedy_time = started.elapsed();
            let (solution, elapsed) = solve_within(
                &buffers,
                Goal::Minimize,
                args.max_steps,
                args.scale_time_limit,
            )?;
            let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
            let lb = solution.lower_bound as f64;
            outln!(
                "{:>8} {:>5} {:>12} {:>12} {:>8.4} {:>9.4} {:>9} {:>8.3} s {:>5.0} s  {:?} (greedy {:.0} ms)",
                buffers.len(),
                seed,
                solution.lower_bound,
                height,
                height as f64 / lb,
                greedy.height as f64 / lb,
                solution.steps,
                elapsed.as_secs_f64(),
                args.scale_time_limit,
                solution.proof,
                greedy_time.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}
