//! `cargo xtask bench pack`: the packer on the MiniMalloc benchmark and on large synthetic
//! workloads.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use memory_plan::pack::{self, Goal, Limits, Proof, csv};

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
    /// Only the files whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

fn default_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/minimalloc")
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
    println!("MiniMalloc, solve(Fit) at the capacity in the file name");
    println!(
        "{:<6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10}  proof",
        "file", "buffers", "capacity", "LB", "height", "steps", "time"
    );
    let mut total = Duration::ZERO;
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
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(args.time_limit);
        let stop = move || Instant::now() >= deadline;
        let limits = Limits {
            max_steps: args.max_steps,
            stop: Some(&stop),
        };
        let solution = pack::solve(&buffers, Goal::Fit { capacity }, &limits)?;
        let elapsed = started.elapsed();
        total += elapsed;
        let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
        println!(
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
        let _ = Proof::Fits;
    }
    println!("total {:.3} s", total.as_secs_f64());
    Ok(())
}
