//! `cargo xtask bench pack`: the packer on the MiniMalloc benchmark, on real-shaped buffer sets
//! (ResNet-50 and transformer training and inference, a 50,000-buffer fan-in) and on the
//! planner's hot path; the planner on a 20,000-edge fan-in. Peak memory is the process's
//! resident high-water mark (`VmHWM`), reset before each case through `/proc/self/clear_refs`.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use arena_pack::synth::Style;
use arena_pack::{self as pack, Buffer, Goal, Limits, csv, synth};
use clap::Args;

use crate::out::outln;
use crate::pack::{Clock, seconds, solve_within};

#[derive(Args, Debug)]
pub struct BenchPackArgs {
    /// Directory of the MiniMalloc files (`*.csv`, capacity in the file name).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Wall-clock limit per MiniMalloc file, in seconds.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub time_limit: String,
    /// Wall-clock limit of `--minimize` on the MiniMalloc files whose bound is below their
    /// capacity, in seconds.
    #[arg(long, value_name = "SECS", default_value = "5")]
    pub minimize_time_limit: String,
    /// Search-node budget per instance.
    #[arg(long, value_name = "NODES", default_value_t = 10_000_000_000)]
    pub max_steps: u64,
    /// Sizes (buffer counts) of the synthetic inference workloads (`synth::transformer`).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 20_000, 50_000])]
    pub scale: Vec<usize>,
    /// Seeds of the synthetic inference workloads (each size is run with each seed).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 2])]
    pub seeds: Vec<u64>,
    /// Wall-clock limit per synthetic inference workload, in seconds.
    #[arg(long, value_name = "SECS", default_value = "10")]
    pub scale_time_limit: String,
    /// Wall-clock limit per real-shaped set, in seconds.
    #[arg(long, value_name = "SECS", default_value = "5")]
    pub real_time_limit: String,
    /// Also run each real-shaped set at 1, 2 and 4 threads with a node budget of this many
    /// nodes (no clock) and compare the solutions.
    #[arg(long, value_name = "NODES")]
    pub threads_check: Option<u64>,
    /// Which tables to print (default: all).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub tables: Vec<Table>,
    /// Only the MiniMalloc files and real-shaped sets whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// What the limits of the minimalloc, real and synth tables count: `wall` seconds, or
    /// `cpu`: the CPU-seconds the process uses, every thread together, which other work on
    /// the machine does not take away (on an idle 2-core machine a wall limit of S seconds
    /// gives the packer about 2S CPU-seconds); the times printed are then CPU-seconds. The
    /// limits table measures wall time against wall limits either way.
    #[arg(long, value_enum, default_value = "wall")]
    pub clock: Clock,
    /// The `--time-limit` values of the `limits` table, in seconds.
    #[arg(long, value_delimiter = ',', default_values = ["0.1", "0.5", "1"])]
    pub limits: Vec<String>,
}

/// The tables of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Table {
    /// The 11 MiniMalloc files: fit, minimize, greedy.
    Minimalloc,
    /// Heuristic, restack and a 20k-node solve on the planner's arena sizes.
    HotPath,
    /// Real-shaped sets: ResNet-50, transformer training and inference, a fan-in.
    Real,
    /// `synth::transformer` at the sizes and seeds given.
    Synth,
    /// The planner on a circuit with a 20,000-edge fan-in.
    FanIn,
    /// Wall time against `--time-limit` on the real-shaped sets of 100,000 buffers.
    Limits,
}

fn default_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/minimalloc")
}

/// Resets the resident high-water mark (Linux; elsewhere a no-op).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The resident high-water mark in MiB since the last reset, if the system tells it.
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// How a table's title names its clock: nothing for wall-clock seconds.
fn clock_note(clock: Clock) -> &'static str {
    match clock {
        Clock::Wall => "",
        Clock::Cpu => " of CPU time (--clock cpu: every time printed is CPU-seconds)",
    }
}

fn mib(peak: Option<f64>) -> String {
    peak.map_or_else(|| "?".to_string(), |p| format!("{p:.0}"))
}

pub fn run(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    // Every limit is checked before any table runs.
    for (flag, value) in [
        ("--time-limit", &args.time_limit),
        ("--minimize-time-limit", &args.minimize_time_limit),
        ("--scale-time-limit", &args.scale_time_limit),
        ("--real-time-limit", &args.real_time_limit),
    ] {
        seconds(flag, value)?;
    }
    for value in &args.limits {
        seconds("--limits", value)?;
    }
    super::release_only()?;
    let wants = |t: Table| args.tables.is_empty() || args.tables.contains(&t);
    if wants(Table::Minimalloc) {
        minimalloc(args)?;
    }
    if wants(Table::HotPath) {
        hot_path()?;
    }
    if wants(Table::Real) {
        real(args)?;
    }
    if wants(Table::Synth) {
        synthetic(args)?;
    }
    if wants(Table::FanIn) {
        fan_in()?;
    }
    if wants(Table::Limits) {
        limits(args)?;
    }
    Ok(())
}

fn minimalloc(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    let limit = seconds("--time-limit", &args.time_limit)?;
    let minimize_limit = seconds("--minimize-time-limit", &args.minimize_time_limit)?;
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
    let mut rows = Vec::new();
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
        let text = crate::inputs::files::read(path, crate::inputs::files::Input::PackCsv)?;
        let buffers: Vec<Buffer> = csv::parse(&text)?
            .iter()
            .map(csv::CsvBuffer::buffer)
            .collect();
        let (solution, elapsed) = solve_within(
            &buffers,
            Goal::Fit { capacity },
            args.max_steps,
            limit,
            args.clock,
        )?;
        total += elapsed;
        let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
        let short = name.split('.').next().unwrap_or("").to_string();
        outln!(
            "{:<6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8.3} s  {:?}",
            short,
            buffers.len(),
            capacity,
            solution.lower_bound,
            height,
            solution.steps,
            elapsed.as_secs_f64(),
            solution.proof
        );
        rows.push((short, buffers, capacity, solution.lower_bound));
    }
    outln!("total {:.3} s", total.as_secs_f64());

    outln!();
    outln!(
        "MiniMalloc, solve(Minimize) where the bound is below the capacity, limit {} s{}",
        minimize_limit.as_secs_f64(),
        clock_note(args.clock)
    );
    outln!(
        "{:<6} {:>9} {:>9} {:>8} {:>9} {:>10}  proof",
        "file",
        "LB",
        "height",
        "ht/LB",
        "steps",
        "time"
    );
    for (name, buffers, capacity, lower) in &rows {
        if lower >= capacity {
            continue;
        }
        let (solution, elapsed) = solve_within(
            buffers,
            Goal::Minimize,
            args.max_steps,
            minimize_limit,
            args.clock,
        )?;
        let height = pack::validate(buffers, &solution.placement.offsets, None)?;
        outln!(
            "{:<6} {:>9} {:>9} {:>8.4} {:>9} {:>8.3} s  {:?}",
            name,
            lower,
            height,
            height as f64 / *lower as f64,
            solution.steps,
            elapsed.as_secs_f64(),
            solution.proof
        );
    }

    outln!();
    outln!("MiniMalloc, greedy heuristic alone (best of its passes)");
    outln!(
        "{:<6} {:>9} {:>9} {:>10}",
        "file",
        "height",
        "/capacity",
        "time"
    );
    for (name, buffers, capacity, _) in &rows {
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
    Ok(())
}

fn hot_path() -> Result<(), Box<dyn Error>> {
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
        let buffers = synth::transformer(5, count);
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
    Ok(())
}

/// A real-shaped set: its name and its generator. The `xla-*` and `somas-*` sets are
/// compiler-shaped training steps (`synth::compiler`, IOPDDL-like and SOMAS-like).
type RealSet = (&'static str, fn() -> Vec<Buffer>);

/// The real-shaped sets.
fn real_sets() -> Vec<RealSet> {
    vec![
        ("resnet50-train", || synth::resnet50(1)),
        ("gpt-train-25k", || synth::training(1, 25_000, false)),
        ("gpt-train-25k-rc", || synth::training(2, 25_000, true)),
        ("gpt-train-100k-rc", || synth::training(3, 100_000, true)),
        ("gpt-infer-25k", || synth::transformer(11, 25_000)),
        ("gpt-infer-60k", || synth::transformer(12, 60_000)),
        ("gpt-infer-100k", || synth::transformer(13, 100_000)),
        ("co-live-50k", || synth::co_live(1, 50_000)),
        ("xla-1k", || synth::compiler(5, 1_000, Style::Xla)),
        ("somas-1k", || synth::compiler(2, 1_000, Style::Somas)),
        // From the fifth session's sweep of the generators at 1,000-8,000 buffers (see
        // docs/packing.md): sets that the search in time order did not prove within 1
        // CPU-second. The first three are proven in the mirror of time; `xla-1.5k` is not
        // proven by either side (0.02% above its bound at 1 CPU-second).
        ("somas-2k", || synth::compiler(125, 1_300, Style::Somas)),
        ("gpt-train-6k", || synth::training(11, 1_500, false)),
        ("gpt-train-8k-rc", || synth::training(13, 2_000, true)),
        ("xla-1.5k", || synth::compiler(50, 1_000, Style::Xla)),
        ("xla-20k", || synth::compiler(2, 20_000, Style::Xla)),
        ("xla-30k", || synth::compiler(1, 30_000, Style::Xla)),
        ("somas-30k", || synth::compiler(4, 30_000, Style::Somas)),
        ("xla-60k", || synth::compiler(5, 60_000, Style::Xla)),
        ("somas-60k", || synth::compiler(6, 60_000, Style::Somas)),
        ("gpt-infer-1m", || synth::transformer(13, 1_000_000)),
        ("gpt-train-1m-rc", || synth::training(3, 1_000_000, true)),
    ]
}

/// The most buffers live at one step.
fn max_live(buffers: &[Buffer]) -> usize {
    let mut events: Vec<(u64, i32)> = buffers
        .iter()
        .filter(|b| b.is_live())
        .flat_map(|b| [(b.start, 1), (b.end, -1)])
        .collect();
    events.sort_unstable();
    let (mut live, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        live += i64::from(d);
        peak = peak.max(live);
    }
    peak as usize
}

fn real(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    let limit = seconds("--real-time-limit", &args.real_time_limit)?;
    let one = Duration::from_secs(1);
    outln!(
        "Real-shaped sets (arena_pack::synth), solve(Minimize) within {} s{}; `at 1 s`: the \
         time to answer and ht/LB with --time-limit 1; memory: peak resident MiB of the run",
        limit.as_secs_f64(),
        clock_note(args.clock)
    );
    outln!(
        "{:<18} {:>7} {:>6} {:>12} {:>12} {:>7} {:>9} {:>9} {:>8} {:>6}  {:<9} {:>14}",
        "set",
        "buffers",
        "live",
        "LB",
        "height",
        "ht/LB",
        "greedy/LB",
        "steps",
        "time",
        "MiB",
        "proof",
        "at 1 s"
    );
    for (name, generate) in real_sets() {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !name.contains(o.as_str()))
        {
            continue;
        }
        let buffers = generate();
        let live = max_live(&buffers);
        // The greedy alone first, for its column; the peak is the solve's own (which runs the
        // greedy again inside), not this call's beside it.
        let greedy = pack::heuristic(&buffers)?.height;
        reset_peak();
        let (solution, elapsed) =
            solve_within(&buffers, Goal::Minimize, args.max_steps, limit, args.clock)?;
        let peak = peak_mib();
        let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
        let lb = solution.lower_bound as f64;
        let (quick, quick_time) =
            solve_within(&buffers, Goal::Minimize, args.max_steps, one, args.clock)?;
        outln!(
            "{:<18} {:>7} {:>6} {:>12} {:>12} {:>7.4} {:>9.4} {:>9} {:>6.2} s {:>6}  {:<9} {:>5.2} s {:.4}",
            name,
            buffers.len(),
            live,
            solution.lower_bound,
            height,
            height as f64 / lb,
            greedy as f64 / lb,
            solution.steps,
            elapsed.as_secs_f64(),
            mib(peak),
            format!("{:?}", solution.proof),
            quick_time.as_secs_f64(),
            quick.placement.height as f64 / lb,
        );
        if name.starts_with("resnet") {
            let (fit, fit_time) = solve_within(
                &buffers,
                Goal::Fit {
                    capacity: solution.lower_bound,
                },
                args.max_steps,
                limit,
                args.clock,
            )?;
            outln!(
                "{:<18} solve(Fit) at the bound: height {} ({:.4}), {} steps, {:.2} s, {:?}",
                "",
                fit.placement.height,
                fit.placement.height as f64 / lb,
                fit.steps,
                fit_time.as_secs_f64(),
                fit.proof
            );
        }
        if let Some(nodes) = args.threads_check {
            let limits = Limits {
                max_steps: nodes,
                stop: None,
            };
            let at = |threads: usize| -> Result<pack::Solution, Box<dyn Error>> {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?;
                Ok(pool.install(|| pack::solve(&buffers, Goal::Minimize, &limits))?)
            };
            let one = at(1)?;
            let same = at(2)? == one && at(4)? == one;
            outln!(
                "{:<18} {} nodes at 1, 2 and 4 threads: height {} ({:.4}), {} steps, {}",
                "",
                nodes,
                one.placement.height,
                one.placement.height as f64 / lb,
                one.steps,
                if same { "identical" } else { "DIFFERENT" }
            );
        }
    }
    outln!();
    Ok(())
}

/// The bound on a run's wall time: 10% over the limit, or the limit plus 0.2 s,
/// whichever is larger.
fn allowed(limit: Duration) -> Duration {
    limit.mul_f64(1.1).max(limit + Duration::from_millis(200))
}

/// Every phase of a solve must end within [`allowed`]: each 100,000-buffer real-shaped set at
/// each limit, for `Minimize` and for a fit at the lower bound (no claim on the heights, which
/// the `real` table measures).
fn limits(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    let limits = args
        .limits
        .iter()
        .map(|value| seconds("--limits", value))
        .collect::<Result<Vec<_>, _>>()?;
    outln!(
        "Wall time against --time-limit (allowed: max(1.1 x limit, limit + 0.2 s)), real-shaped \
         sets of 100,000 buffers"
    );
    outln!(
        "{:<18} {:<9} {:>7} {:>9} {:>9} {:>10} {:>12} {:>9}  proof",
        "set",
        "goal",
        "limit",
        "wall",
        "allowed",
        "wall/limit",
        "wall/allowed",
        "ht/LB"
    );
    let mut worst = 0f64;
    for (name, generate) in real_sets() {
        let buffers = generate();
        if !(100_000..500_000).contains(&buffers.len())
            || args
                .only
                .as_ref()
                .is_some_and(|o| !name.contains(o.as_str()))
        {
            continue;
        }
        let lower = pack::lower_bound(&buffers)?;
        for &limit in &limits {
            for (label, goal) in [
                ("minimize", Goal::Minimize),
                ("fit at LB", Goal::Fit { capacity: lower }),
            ] {
                let (solution, elapsed) =
                    solve_within(&buffers, goal, args.max_steps, limit, Clock::Wall)?;
                let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
                let ratio = elapsed.as_secs_f64() / allowed(limit).as_secs_f64();
                worst = worst.max(ratio);
                outln!(
                    "{:<18} {:<9} {:>5.2} s {:>7.3} s {:>7.3} s {:>10.3} {:>12.3} {:>9.4}  {:?}",
                    name,
                    label,
                    limit.as_secs_f64(),
                    elapsed.as_secs_f64(),
                    allowed(limit).as_secs_f64(),
                    elapsed.as_secs_f64() / limit.as_secs_f64(),
                    ratio,
                    height as f64 / lower as f64,
                    solution.proof
                );
            }
        }
    }
    outln!("worst wall/allowed {worst:.3}");
    outln!();
    Ok(())
}

fn synthetic(args: &BenchPackArgs) -> Result<(), Box<dyn Error>> {
    let limit = seconds("--scale-time-limit", &args.scale_time_limit)?;
    outln!(
        "Synthetic transformer inference (synth::transformer), solve(Minimize), limit {} s{} each",
        limit.as_secs_f64(),
        clock_note(args.clock)
    );
    outln!(
        "{:>8} {:>5} {:>12} {:>12} {:>8} {:>9} {:>9} {:>10} {:>6}  proof",
        "buffers",
        "seed",
        "LB",
        "height",
        "ht/LB",
        "greedy/LB",
        "steps",
        "time",
        "MiB"
    );
    for &count in &args.scale {
        for &seed in &args.seeds {
            let buffers = synth::transformer(seed, count);
            reset_peak();
            let started = Instant::now();
            let greedy = pack::heuristic(&buffers)?;
            let greedy_time = started.elapsed();
            let (solution, elapsed) =
                solve_within(&buffers, Goal::Minimize, args.max_steps, limit, args.clock)?;
            let peak = peak_mib();
            let height = pack::validate(&buffers, &solution.placement.offsets, None)?;
            let lb = solution.lower_bound as f64;
            outln!(
                "{:>8} {:>5} {:>12} {:>12} {:>8.4} {:>9.4} {:>9} {:>8.3} s {:>6}  {:?} (greedy {:.0} ms)",
                buffers.len(),
                seed,
                solution.lower_bound,
                height,
                height as f64 / lb,
                greedy.height as f64 / lb,
                solution.steps,
                elapsed.as_secs_f64(),
                mib(peak),
                solution.proof,
                greedy_time.as_secs_f64() * 1e3
            );
        }
    }
    outln!();
    Ok(())
}

/// `plan` on a circuit whose 20,000 edges all reach one node (issue 17): every edge is live at
/// that node's step, so an all-pairs structure would hold 2 x 10^8 pairs.
fn fan_in() -> Result<(), Box<dyn Error>> {
    use circuit_ir::CircuitBuilder;
    use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl};
    use fuser::RulesBuilder;
    use fuser::rules::{ElementDecl, RuleDecl};
    use kernel_families::FamiliesBuilder;
    use kernel_families::decl::FamilyDecl;
    use memory_plan::{PlanConfig, Planner};

    const EDGES: usize = 20_000;
    outln!("The planner on a {EDGES}-edge fan-in (x -> {EDGES} scale nodes -> one concat)");
    reset_peak();
    let started = Instant::now();
    let mut block = BlockDecl::once("fan");
    for i in 0..EDGES {
        block = block.node(
            NodeDecl::new(format!("s{i}"), "scale")
                .reads(["x"])
                .writes(OutDecl::new(format!("y{i}"), "n", "64", "bf16")),
        );
    }
    block = block.node(
        NodeDecl::new("cat", "concat")
            .reads((0..EDGES).map(|i| format!("y{i}")))
            .writes(OutDecl::new("z", "n", (64 * EDGES).to_string(), "bf16")),
    );
    let mut circuit = CircuitBuilder::new("fan-in");
    circuit
        .input("x", "n", "64", "bf16")
        .block(block)
        .output("fan.z");
    let circuit = circuit.build()?;
    let mut families = FamiliesBuilder::new("fan-in registry");
    families.family(FamilyDecl::new("rows", ["scale", "concat"]).kernels(["scale", "concat"]));
    let families = families.build()?;
    let mut rules = RulesBuilder::new("fan-in rules");
    for op in ["scale", "concat"] {
        rules.rule(
            RuleDecl::new(op, "cuda")
                .element(ElementDecl::op(op))
                .kernels([op]),
        );
    }
    let rules = rules.build(Some(&families))?;
    let built = started.elapsed();
    let planner = Planner::new(
        &circuit,
        &families,
        &rules,
        rules.defaults(),
        PlanConfig::new(132),
    )?;
    let plan = planner.plan(64)?;
    let elapsed = started.elapsed();
    outln!(
        "  arena {} bytes (lower bound {}, {} buffers), {:.2} s ({:.2} s to build the inputs), peak {} MiB",
        plan.arena.bytes,
        plan.arena.lower_bound,
        plan.arena.buffers,
        elapsed.as_secs_f64(),
        built.as_secs_f64(),
        mib(peak_mib())
    );
    outln!();
    Ok(())
}
