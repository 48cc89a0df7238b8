//! The plan report's cost: the fit queries against the sweep at 5,000 layers (the orchestration
//! before `PlanReport`, which built every interval again for each query, against the report,
//! which builds each once), the JSON of 8,192 rows of a Llama-3.1-70B-sized circuit (bytes and
//! time), and the peak memory (VmHWM) of streaming 2^16 and then 2^20 rows.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use circuit_ir::Circuit;
use fuser::Rules;
use kernel_families::{Devices, Families};
use memory_plan::{PlanConfig, PlanReport, Planner, ReportQuery};

use crate::CliError;
use crate::example;
use crate::inputs::flags::OutputFormat;
use crate::out::outln;
use crate::plan::stream;
use crate::render::plan as report;

/// Counts the bytes written and drops them.
#[derive(Default)]
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The median of three runs of `f`.
fn median3(mut f: impl FnMut() -> Result<(), CliError>) -> Result<Duration, CliError> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[1])
}

/// The process's peak resident memory so far (VmHWM of /proc/self/status), in KiB.
fn vm_hwm() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Plans `rows` through a report and renders them in `format` into a counter: (bytes, time).
fn render(
    planner: &Planner<'_>,
    rows: &[u64],
    budget: Option<u64>,
    format: OutputFormat,
) -> Result<(u64, Duration), CliError> {
    let start = Instant::now();
    let mut report = PlanReport::new(planner, rows, ReportQuery::new(budget))?;
    let ctx = report::Context {
        planner,
        device: "bench".to_owned(),
        device_memory: budget,
        budget,
        max_model_len: None,
        model_context: None,
        config_defaults: Vec::new(),
        storage: None,
        rows,
        node_lists: report.node_lists().to_vec(),
        layout: report::LayoutRanks::SINGLE,
        placeholders_asked: false,
    };
    let mut render = report::renderer(format, &ctx);
    let mut out = Counter::default();
    let summary = stream(
        &mut report,
        render.as_mut(),
        &mut out,
        &mut false,
        &|| {},
        |_| {},
    )?;
    render
        .summary(&mut out, &summary, None)
        .map_err(crate::out::error)?;
    Ok((out.0, start.elapsed()))
}

pub fn run() -> Result<(), CliError> {
    let families = Families::from_toml(example::FAMILIES, example::FAMILIES_ORIGIN)?;
    let rules = Rules::from_toml(example::RULES, example::RULES_ORIGIN, Some(&families))?;
    let devices = Devices::builtin()?;
    let h100 = devices.get("h100-sxm")?.memory_bytes;
    let settings = || rules.settings([("mode", "prefill")], "bench");

    outln!("threads      {} (rayon)", rayon::current_num_threads());
    // Peak memory while streaming ever more rows of the 8B example as JSON.
    let circuit = Circuit::from_toml(example::CIRCUIT, "llama-3.1-8b")?;
    let planner = Planner::new(
        &circuit,
        &families,
        &rules,
        settings()?,
        PlanConfig::new(132),
    )?;
    // First, while the process is small: VmHWM only grows.
    let before = vm_hwm();
    outln!(
        "VmHWM before streaming: {} KiB",
        before.map_or("unknown".to_owned(), |k| k.to_string())
    );
    for log2 in [16u32, 20] {
        let rows: Vec<u64> = (1..=1u64 << log2).collect();
        let (bytes, time) = render(&planner, &rows, Some(h100), OutputFormat::Json)?;
        outln!(
            "llama-3.1-8b, rows 1..=2^{log2} as JSON: {:.0} MB in {:.2} s; VmHWM after: {} KiB (the rows list itself: {} KiB)",
            bytes as f64 / 1e6,
            time.as_secs_f64(),
            vm_hwm().map_or("unknown".to_owned(), |k| k.to_string()),
            rows.len() * 8 / 1024
        );
    }
    // Fit queries at 5,000 layers: the sweep alone, then the queries as xtask made them
    // before the report (each building its intervals again), then the report.
    let layers = 5000;
    let text = example::CIRCUIT.replace("\nlayers = 32\n", &format!("\nlayers = {layers}\n"));
    let circuit = Circuit::from_toml(&text, "llama-5000")?;
    let planner = Planner::new(
        &circuit,
        &families,
        &rules,
        settings()?,
        PlanConfig::new(132),
    )?;
    let rows = [1, 64, 4096];
    // Each measured twice, interleaved, so neither gains from running later.
    let mut sweeps = Vec::new();
    let mut reports = Vec::new();
    for _ in 0..2 {
        sweeps.push(median3(|| {
            planner.sweep(&rows, &|| {})?;
            Ok(())
        })?);
        reports.push(median3(|| {
            let mut report = PlanReport::new(&planner, &rows, ReportQuery::new(Some(h100)))?;
            report.run(&|| {}, |_| Ok::<(), CliError>(()))?;
            Ok(())
        })?);
    }
    let sweep = sweeps.into_iter().min().unwrap_or_default();
    let reported = reports.into_iter().min().unwrap_or_default();
    let separate = median3(|| {
        planner.sweep(&rows, &|| {})?;
        planner.max_rows(1..=4096, h100)?;
        planner.max_kv_tokens(4096, h100)?;
        Ok(())
    })?;
    outln!(
        "{layers} layers ({} nodes), rows 1,64,4096 on h100-sxm: sweep alone {:.0} ms; sweep + max_rows + max_kv_tokens built apart {:.0} ms ({:.2}x the sweep); PlanReport {:.0} ms ({:.2}x the sweep)",
        circuit.nodes().len(),
        sweep.as_secs_f64() * 1e3,
        separate.as_secs_f64() * 1e3,
        separate.as_secs_f64() / sweep.as_secs_f64(),
        reported.as_secs_f64() * 1e3,
        reported.as_secs_f64() / sweep.as_secs_f64()
    );

    // JSON of 8,192 rows of the 70B-sized circuit on an h200 (where its weights fit).
    let circuit = Circuit::from_toml(&example::llama_70b(), "llama-70b")?;
    let planner = Planner::new(
        &circuit,
        &families,
        &rules,
        settings()?,
        PlanConfig::new(132),
    )?;
    let h200 = devices.get("h200")?.memory_bytes;
    let rows: Vec<u64> = (1..=8192).collect();
    for format in [OutputFormat::Json, OutputFormat::Jsonl, OutputFormat::Csv] {
        let mut bytes = 0;
        let time = median3(|| {
            bytes = render(&planner, &rows, Some(h200), format)?.0;
            Ok(())
        })?;
        outln!(
            "llama-3.1-70b, rows 1..=8192 on h200, {format:?}: {bytes} bytes ({:.2} MB) in {:.0} ms (targets: under 10 MB, under 1 s)",
            bytes as f64 / 1e6,
            time.as_secs_f64() * 1e3
        );
    }

    Ok(())
}
