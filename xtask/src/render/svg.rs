//! Pictures of a plan and of an engine's start-up, drawn with plotters: a sweep's terms against
//! rows, an arena as a memory map (a plain plan's, or an engine profile run's with what the run
//! holds beside its forward), and an engine's workers.
//!
//! Invariants:
//! - Byte axes that stack terms are linear, so a band's height is its bytes: the sweep chart
//!   stacks the four terms (activations at the bottom, then workspaces, states and weights,
//!   whose top is the total) against the budget, and a second panel draws each term alone as a
//!   line on a log axis, where a MiB-sized term shows beside a GiB-sized one without looking
//!   large. A single row count is one stacked bar (and points), never an empty plot. At most
//!   about [`CHART_POINTS`] row counts are drawn, spread evenly over log2(n) (the first and
//!   last always).
//! - A label never sits on its own line: the budget's is drawn on a white box beside it.
//! - The memory map has exactly one filled rectangle per arena buffer, coloured by kind, each
//!   with a `<title>` naming the buffer (shown on hover); the largest buffers are numbered in
//!   the picture and named in its key; a second panel widens the steps around the peak, where
//!   a buffer one step long (the logits) would be a sliver, and writes each buffer's size
//!   there. An engine's map adds the terms the profile run holds beside its forward (the
//!   sampler's after it, in a column as wide as several steps), each named where it is drawn.

use std::fmt::Write as _;
use std::path::Path;

use circuit_ir::Circuit;
use engine_profile::{ProfileRunMap, Startup, Worker};
use memory_plan::{ArenaLayout, BufferKind, MemoryPlan, ReportSummary, Totals};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::plan::{Context, human};
use crate::CliError;

/// Row counts the chart draws at most (about).
pub const CHART_POINTS: usize = 1500;

/// The colour of the activations band and of activation buffers.
pub const ACTIVATION: RGBColor = RGBColor(70, 130, 180);
/// The colour of the workspaces band and of arena workspaces.
pub const WORKSPACE: RGBColor = RGBColor(230, 140, 30);
/// The colour of the states band (and of an engine's KV cache).
pub const STATES: RGBColor = RGBColor(148, 103, 189);
/// The colour of the weights band.
pub const WEIGHTS: RGBColor = RGBColor(120, 120, 120);
/// The budget line and the arena's lower bound.
pub const BUDGET: RGBColor = RGBColor(214, 39, 40);
/// The marker of the largest n that fits.
pub const FIT: RGBColor = RGBColor(44, 160, 44);
/// An engine's non-torch memory.
pub const NON_TORCH: RGBColor = RGBColor(23, 190, 207);
/// What an engine's profile run holds beside its forward: persistent terms.
pub const PERSISTENT: RGBColor = RGBColor(140, 86, 75);
/// Terms held beside the forward at its peak.
pub const HELD: RGBColor = RGBColor(227, 119, 194);
/// Terms live at the sampler, after the forward.
pub const SAMPLER: RGBColor = RGBColor(188, 189, 34);

/// The opacity of the memory map's buffers: it marks their rectangles in plotters' output, where
/// each gets its `<title>`.
const BUFFER_ALPHA: f64 = 0.86;
/// The opacity of the engine terms drawn in a memory map (each gets its `<title>` too).
const TERM_ALPHA: f64 = 0.87;
/// The opacity of the buffers in the widened panel (no `<title>`: the map has one per buffer).
const ZOOM_ALPHA: f64 = 0.8;
/// The opacity of the sweep chart's bands.
const BAND_ALPHA: f64 = 0.85;

/// Buffers numbered in a memory map's picture and named in its key.
const NUMBERED: usize = 8;

fn draw_error(path: &Path, e: impl std::fmt::Display) -> CliError {
    format!("cannot draw {}: {e}", path.display()).into()
}

/// The row counts the chart draws, thinned as they stream in.
#[derive(Debug, Clone)]
pub struct ChartPoints {
    step: f64,
    kept: Vec<(u64, Totals)>,
    last: Option<(u64, Totals)>,
}

impl ChartPoints {
    /// For rows from `rows[0]` to the last (ascending).
    pub fn new(rows: &[u64]) -> ChartPoints {
        let (lo, hi) = (rows[0] as f64, rows[rows.len() - 1] as f64);
        ChartPoints {
            step: (hi.log2() - lo.log2()) / CHART_POINTS as f64,
            kept: Vec::new(),
            last: None,
        }
    }

    /// Offers one plan (in row order).
    pub fn add(&mut self, plan: &MemoryPlan) {
        let point = (plan.rows, plan.totals);
        match self.kept.last() {
            Some(&(n, _)) if (plan.rows as f64).log2() - (n as f64).log2() < self.step => {
                self.last = Some(point);
            }
            _ => {
                self.kept.push(point);
                self.last = None;
            }
        }
    }

    /// The points drawn, the last row count included.
    fn points(&self) -> Vec<(u64, Totals)> {
        let mut points = self.kept.clone();
        points.extend(self.last);
        points
    }
}

/// A byte count for an axis: `4 MiB`, `1 GiB`, `512 KiB`.
fn axis_bytes(bytes: f64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        if bytes >= size as f64 {
            let v = bytes / size as f64;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{} {unit}", v.round())
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{} B", bytes.round())
}

/// The bytes of one term of a plan's totals.
type Term = fn(&Totals) -> u64;

/// The four bands, bottom up: name, colour, bytes.
type Band = (&'static str, RGBColor, Term);
const BANDS: [Band; 4] = [
    ("activations", ACTIVATION, |t| t.activations),
    ("workspaces", WORKSPACE, |t| t.workspaces),
    ("states", STATES, |t| t.states),
    ("weights", WEIGHTS, |t| t.weights),
];

/// A y range's top on a linear byte axis: `top` with room above it, rounded up to a multiple of
/// a power of two so the ticks fall on round sizes.
fn linear_top(top: f64) -> f64 {
    let padded = (top * 1.08).max(1.0);
    let unit = 2f64.powf(padded.log2().floor() - 3.0);
    (padded / unit).ceil() * unit
}

/// Text drawn on a white box at pixel `(x, y)` (its top-left corner), so no line crosses it.
fn boxed_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    (x, y): (i32, i32),
    style: &TextStyle<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = area.estimate_text_size(text, style)?;
    area.draw(&Rectangle::new(
        [(x - 3, y - 2), (x + w as i32 + 3, y + h as i32 + 2)],
        WHITE.filled(),
    ))?;
    area.draw(&Text::new(text.to_owned(), (x, y), style.clone()))
}

/// The label of a horizontal line at pixel row `line_y`, on a white box just above it (below
/// it when there is no room above), right-aligned to `right`.
fn line_label<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    right: i32,
    line_y: i32,
    top: i32,
    style: &TextStyle<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = area.estimate_text_size(text, style)?;
    let above = line_y - h as i32 - 6;
    let y = if above >= top { above } else { line_y + 6 };
    boxed_text(area, text, (right - w as i32 - 8, y), style)
}

/// The terms against rows: stacked on a linear axis with the budget and the largest n that
/// fits, then each term alone as a line on a log axis.
pub fn write_chart(
    path: &Path,
    ctx: &Context<'_>,
    points: &ChartPoints,
    summary: &ReportSummary,
) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let points = points.points();
    let root = SVGBackend::new(path, (1100, 860)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (plot, side) = root.split_horizontally(840);
    let (upper, lower) = plot.split_vertically(520);

    // Cumulative tops of the bands, bottom up.
    let stacks: Vec<(f64, [f64; 4])> = points
        .iter()
        .map(|(n, t)| {
            let mut sum = 0u64;
            let tops = BANDS.map(|(_, _, term)| {
                sum = sum.saturating_add(term(t));
                sum as f64
            });
            (*n as f64, tops)
        })
        .collect();
    let budget = ctx.budget;
    let top = stacks
        .iter()
        .map(|(_, s)| s[3])
        .chain(budget.map(|b| b as f64))
        .fold(1.0, f64::max);
    let y_top = linear_top(top);
    let single = stacks.len() == 1 || stacks[0].0 == stacks[stacks.len() - 1].0;
    let (x_lo, x_hi) = if single {
        (stacks[0].0 / 2.0, stacks[0].0 * 2.0)
    } else {
        (stacks[0].0, stacks[stacks.len() - 1].0)
    };
    let x_ticks = ((x_hi / x_lo).log2().floor() as usize).clamp(1, 14);
    let bar = std::f64::consts::SQRT_2;
    let mut chart = ChartBuilder::on(&upper)
        .caption(
            format!(
                "{} on {}: bytes per step, terms stacked",
                ctx.planner.circuit().name(),
                ctx.device
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(76)
        .build_cartesian_2d((x_lo..x_hi).log_scale().base(2.0), 0f64..y_top)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("rows n (tokens per step, log2)")
        .y_desc("bytes")
        .x_labels(x_ticks)
        .y_labels(9)
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .y_label_formatter(&|y| axis_bytes(*y))
        .light_line_style(WHITE)
        .draw()
        .map_err(|e| fail(&e))?;
    for (k, (_, color, _)) in BANDS.iter().enumerate() {
        let lower = |s: &[f64; 4]| if k == 0 { 0.0 } else { s[k - 1] };
        let style = color.mix(BAND_ALPHA).filled();
        if single {
            let (x, s) = stacks[stacks.len() - 1];
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x / bar, lower(&s)), (x * bar, s[k])],
                    style,
                )))
                .map_err(|e| fail(&e))?;
        } else {
            let mut outline: Vec<(f64, f64)> = stacks.iter().map(|(x, s)| (*x, s[k])).collect();
            outline.extend(stacks.iter().rev().map(|(x, s)| (*x, lower(s))));
            chart
                .draw_series(std::iter::once(Polygon::new(outline, style)))
                .map_err(|e| fail(&e))?;
        }
    }
    let total: Vec<(f64, f64)> = if single {
        let (x, s) = stacks[stacks.len() - 1];
        vec![(x / bar, s[3]), (x * bar, s[3])]
    } else {
        stacks.iter().map(|(x, s)| (*x, s[3])).collect()
    };
    chart
        .draw_series(LineSeries::new(total, BLACK.stroke_width(2)))
        .map_err(|e| fail(&e))?;
    let fit_n = summary.fit.as_ref().and_then(|f| f.max_rows);
    if let Some(n) = fit_n {
        let x = (n as f64).clamp(x_lo, x_hi);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, y_top)],
                8,
                5,
                FIT.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
    }
    let label = ("sans-serif", 15).into_font().color(&BUDGET);
    if let Some(b) = budget {
        let y = b as f64;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_lo, y), (x_hi, y)],
                10,
                6,
                BUDGET.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
        let area = chart.plotting_area();
        let (_, line_y) = area.map_coordinate(&(x_lo, y));
        let (right, top_px) = area.map_coordinate(&(x_hi, y_top));
        line_label(
            &root,
            &format!("budget {}", human(b)),
            right,
            line_y,
            top_px,
            &label,
        )
        .map_err(|e| fail(&e))?;
    }

    // Each term alone, on a log axis: its size is its own, never the thickness of a band.
    let smallest = points
        .iter()
        .flat_map(|(_, t)| BANDS.map(|(_, _, term)| term(t)))
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(1 << 20);
    let y_min = 4f64.powf(((smallest as f64 / 2.0).max(1.0)).log(4.0).floor());
    let y_max = 4f64.powf((top * 1.5).log(4.0).ceil()).max(y_min * 4.0);
    let y_ticks = ((y_max / y_min).log(4.0).floor() as usize).max(1);
    let mut alone = ChartBuilder::on(&lower)
        .caption("each term alone (log scale)", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(76)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().base(2.0),
            (y_min..y_max).log_scale().base(4.0),
        )
        .map_err(|e| fail(&e))?;
    alone
        .configure_mesh()
        .x_desc("rows n (tokens per step, log2)")
        .y_desc("bytes (log scale)")
        .x_labels(x_ticks)
        .y_labels(y_ticks)
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .y_label_formatter(&|y| axis_bytes(*y))
        .light_line_style(WHITE)
        .draw()
        .map_err(|e| fail(&e))?;
    let lines: Vec<(RGBColor, Term)> = BANDS
        .iter()
        .map(|&(_, c, term)| (c, term))
        .chain(std::iter::once((BLACK, (|t: &Totals| t.total) as Term)))
        .collect();
    // Points of one row nest, each drawn smaller than the one before (the total a ring around
    // them): two terms of nearly the same size stay both visible.
    for (i, (color, term)) in lines.into_iter().enumerate() {
        let dot = if i < BANDS.len() {
            Dot::Filled(12 - 2 * i as i32)
        } else {
            Dot::Ring(14)
        };
        // A term of 0 bytes has no place on a log axis: its line breaks there.
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut runs = Vec::new();
        for (n, t) in &points {
            match term(t) {
                0 => runs.push(std::mem::take(&mut run)),
                b => run.push((*n as f64, b as f64)),
            }
        }
        runs.push(run);
        for run in runs.into_iter().filter(|r| !r.is_empty()) {
            if run.len() == 1 || single {
                chart_points(&mut alone, &run, color, dot).map_err(|e| fail(&e))?;
            } else {
                alone
                    .draw_series(LineSeries::new(run, color.stroke_width(3)))
                    .map_err(|e| fail(&e))?;
            }
        }
    }
    if let Some(b) = budget {
        let y = (b as f64).clamp(y_min, y_max);
        alone
            .draw_series(DashedLineSeries::new(
                vec![(x_lo, y), (x_hi, y)],
                10,
                6,
                BUDGET.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
    }

    legend(&side, &points, budget, fit_n, summary).map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

/// An engine term drawn in a memory map: its rectangle (two corners), colour, name and bytes.
type TermBand = ([(f64, f64); 2], RGBColor, String, u64);

/// How a point is drawn: a filled disc or a ring, of a radius in pixels.
#[derive(Clone, Copy)]
enum Dot {
    Filled(i32),
    Ring(i32),
}

/// Points as circles (a line needs two).
fn chart_points<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    color: RGBColor,
    dot: Dot,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (radius, style) = match dot {
        Dot::Filled(r) => (r, color.filled()),
        Dot::Ring(r) => (r, color.stroke_width(2)),
    };
    chart.draw_series(points.iter().map(|&p| Circle::new(p, radius, style)))?;
    Ok(())
}

/// The chart's legend: each band with its range over the rows, the total, budget and fit.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(u64, Totals)],
    budget: Option<u64>,
    fit_n: Option<u64>,
    summary: &ReportSummary,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let text = ("sans-serif", 15).into_font();
    let small = ("sans-serif", 13).into_font().color(&RGBColor(80, 80, 80));
    let range = |term: fn(&Totals) -> u64| {
        let (lo, hi) = points.iter().fold((u64::MAX, 0), |(lo, hi), (_, t)| {
            (lo.min(term(t)), hi.max(term(t)))
        });
        if lo == hi {
            human(lo)
        } else {
            format!("{} to {}", human(lo), human(hi))
        }
    };
    let mut y = 60;
    area.draw(&Text::new(
        "terms, top to bottom",
        (10, y - 26),
        text.clone(),
    ))?;
    let row = |y: i32| (10, y);
    for (name, color, term) in BANDS.iter().rev() {
        area.draw(&Rectangle::new(
            [row(y), (28, y + 14)],
            color.mix(BAND_ALPHA).filled(),
        ))?;
        area.draw(&Text::new(*name, (36, y), text.clone()))?;
        area.draw(&Text::new(range(*term), (36, y + 18), small.clone()))?;
        y += 44;
    }
    area.draw(&PathElement::new(
        vec![(10, y + 7), (28, y + 7)],
        BLACK.stroke_width(2),
    ))?;
    area.draw(&Text::new("total", (36, y), text.clone()))?;
    area.draw(&Text::new(range(|t| t.total), (36, y + 18), small.clone()))?;
    y += 44;
    if let Some(b) = budget {
        area.draw(&PathElement::new(
            vec![(10, y + 7), (28, y + 7)],
            BUDGET.stroke_width(2),
        ))?;
        area.draw(&Text::new(
            format!("budget {}", human(b)),
            (36, y),
            text.clone(),
        ))?;
        y += 30;
        let fit = match (fit_n, summary.fit.as_ref()) {
            (Some(n), Some(f)) if f.answer_may_be_in.is_none() => {
                format!("largest n that fits: {n}")
            }
            (Some(n), Some(_)) => format!("n that fits (search gave up): {n}"),
            _ => "no n fits the budget".to_owned(),
        };
        area.draw(&PathElement::new(
            vec![(19, y), (19, y + 14)],
            FIT.stroke_width(2),
        ))?;
        area.draw(&Text::new(fit, (36, y), text.clone()))?;
        y += 30;
    }
    area.draw(&Text::new(
        "upper panel: stacked, to scale;",
        (10, y + 10),
        small.clone(),
    ))?;
    area.draw(&Text::new(
        "lower: each term alone, log scale",
        (10, y + 28),
        small,
    ))?;
    Ok(())
}

/// Escapes text for an SVG `<title>`.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What one buffer of the arena is: `edge layer.3.qkv` or `workspace splitk_gemm/partials of
/// layer.3.o_proj`.
fn buffer_name(layout: &ArenaLayout, circuit: &Circuit, i: usize) -> String {
    let slot = &layout.slots[i];
    match slot.kind {
        BufferKind::Edge { edge } => format!("edge {}", circuit.edges()[edge].id),
        BufferKind::Workspace { term, .. } => {
            let t = &layout.terms[term];
            format!(
                "workspace {}/{} of {}",
                t.family,
                t.name,
                circuit.nodes()[slot.owner].id
            )
        }
    }
}

/// A buffer's steps: `step 3` or `steps 3..=5`.
fn steps_of(layout: &ArenaLayout, i: usize) -> String {
    let slot = &layout.slots[i];
    if slot.end - slot.start <= 1 {
        format!("step {}", slot.start)
    } else {
        format!("steps {}..={}", slot.start, slot.end - 1)
    }
}

/// What one buffer of the arena is, for its `<title>`.
fn buffer_title(layout: &ArenaLayout, circuit: &Circuit, i: usize) -> String {
    xml_escape(&format!(
        "{}: {} bytes at offset {}, {}",
        buffer_name(layout, circuit, i),
        layout.sizes[i],
        layout.offsets[i],
        steps_of(layout, i)
    ))
}

/// The engine's terms drawn beside an arena (an engine's profile run).
struct Beside<'a> {
    /// Held through the whole run: drawn under the arena, at every step.
    persistent: &'a [(String, u64)],
    /// Held beside the forward at its peak: drawn over the arena, at every step.
    held: &'a [(String, u64)],
    /// Live after the forward (the sampler): a column of their own after the last step.
    after: &'a [(String, u64)],
    /// The worker's activation peak and what sets it.
    peak: (u64, &'a str),
}

/// A term's name without its section (`logits` of `profile_run.sampler_live.logits`).
fn term_name(item: &str) -> &str {
    item.rsplit('.').next().unwrap_or(item)
}

/// The step with the most live bytes (the first on a tie) and those bytes.
fn peak_step(layout: &ArenaLayout) -> (usize, u64) {
    let mut live = vec![0u64; layout.steps.max(1)];
    for (slot, &size) in layout.slots.iter().zip(&layout.sizes) {
        for step in slot.start..slot.end.min(live.len()) {
            live[step] = live[step].saturating_add(size);
        }
    }
    live.iter().enumerate().fold(
        (0, 0),
        |(at, most), (s, &b)| if b > most { (s, b) } else { (at, most) },
    )
}

/// The arena as a memory map: x = the group steps a buffer lives, y = its offset and size.
pub fn write_arena(path: &Path, layout: &ArenaLayout, circuit: &Circuit) -> Result<(), CliError> {
    let title = format!(
        "{} arena at n = {}: {}, lower bound {}, {} buffers",
        circuit.name(),
        layout.rows,
        human(layout.summary.bytes),
        human(layout.summary.lower_bound),
        layout.slots.len()
    );
    write_map(path, &title, layout, circuit, None)
}

/// An engine's profile run as a memory map: the forward's arena on the worker with the largest
/// activation peak, the persistent terms under it, the terms held beside it over it, and the
/// sampler's terms in a column after it, against the worker's activation peak.
pub fn write_profile_arena(
    path: &Path,
    map: &ProfileRunMap,
    worker: &Worker,
    startup: &Startup,
) -> Result<(), CliError> {
    let title = format!(
        "{} {} profile run, rank {} (stage {}) at {} tokens: peak {} set by the {}",
        startup.engine,
        startup.version,
        worker.rank,
        map.stage,
        startup.max_num_batched_tokens,
        human(worker.activation_peak),
        worker.peak_set_by.name()
    );
    let beside = Beside {
        persistent: &map.persistent,
        held: &map.forward_held,
        after: &map.sampler_live,
        peak: (worker.activation_peak, worker.peak_set_by.name()),
    };
    write_map(path, &title, &map.arena, &map.circuit, Some(&beside))
}

/// The memory map and its widened panel around the peak, with the key of the largest buffers.
fn write_map(
    path: &Path,
    title: &str,
    layout: &ArenaLayout,
    circuit: &Circuit,
    beside: Option<&Beside<'_>>,
) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let mut svg = String::new();
    let mut term_titles = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1260, 1080)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (plot, side) = root.split_horizontally(960);
        let (upper, lower) = plot.split_vertically(600);
        let sum =
            |terms: &[(String, u64)]| terms.iter().fold(0u64, |a, (_, b)| a.saturating_add(*b));
        let base = beside.map_or(0, |b| sum(b.persistent));
        let held = beside.map_or(0, |b| sum(b.held));
        let after = beside.map_or(0, |b| sum(b.after));
        let steps = layout.steps.max(1) as f64;
        // The sampler's column: as wide as a sixth of the forward's steps, at least two.
        let column = beside.map_or(0.0, |b| {
            if b.after.is_empty() {
                0.0
            } else {
                (steps / 6.0).max(2.0)
            }
        });
        let gap = if column > 0.0 {
            (steps / 60.0).max(0.5)
        } else {
            0.0
        };
        let x_max = steps + gap + column;
        let arena_top = base.saturating_add(layout.summary.bytes);
        let peak_line = beside.map(|b| b.peak.0);
        let height = [
            arena_top.saturating_add(held),
            base.saturating_add(after),
            peak_line.unwrap_or(0),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
        .max(1) as f64;
        let mut chart = ChartBuilder::on(&upper)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max, 0f64..height * 1.06)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(if column > 0.0 {
                "step (launch group) of the forward, then the sampler"
            } else {
                "step (launch group)"
            })
            .y_desc("offset in the arena")
            .x_labels((steps as usize).clamp(1, 12))
            .x_label_formatter(&|x| {
                if *x <= steps {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| axis_bytes(*y))
            .draw()
            .map_err(|e| fail(&e))?;
        let colour = |kind: BufferKind| match kind {
            BufferKind::Edge { .. } => ACTIVATION,
            BufferKind::Workspace { .. } => WORKSPACE,
        };
        let rects = layout
            .slots
            .iter()
            .zip(layout.offsets.iter().zip(&layout.sizes))
            .map(|(slot, (&offset, &size))| {
                Rectangle::new(
                    [
                        (slot.start as f64, (base + offset) as f64),
                        (slot.end as f64, (base + offset + size) as f64),
                    ],
                    colour(slot.kind).mix(BUFFER_ALPHA).filled(),
                )
            });
        chart.draw_series(rects).map_err(|e| fail(&e))?;
        let small = TextStyle::from(("sans-serif", 12).into_font());
        if let Some(b) = beside {
            // Bands across the forward's steps: the persistent terms under the arena, the held
            // ones over it; the sampler's terms stacked in their column.
            let mut bands: Vec<TermBand> = Vec::new();
            let mut y = 0u64;
            for (name, bytes) in b.persistent {
                bands.push((
                    [(0.0, y as f64), (x_max, (y + bytes) as f64)],
                    PERSISTENT,
                    name.clone(),
                    *bytes,
                ));
                y += bytes;
            }
            let mut y = arena_top;
            for (name, bytes) in b.held {
                bands.push((
                    [(0.0, y as f64), (steps, (y + bytes) as f64)],
                    HELD,
                    name.clone(),
                    *bytes,
                ));
                y += bytes;
            }
            let mut y = base;
            for (name, bytes) in b.after {
                bands.push((
                    [(steps + gap, y as f64), (x_max, (y + bytes) as f64)],
                    SAMPLER,
                    name.clone(),
                    *bytes,
                ));
                y += bytes;
            }
            for (corners, color, name, bytes) in &bands {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        *corners,
                        color.mix(TERM_ALPHA).filled(),
                    )))
                    .map_err(|e| fail(&e))?;
                term_titles.push(xml_escape(&format!("{name}: {bytes} bytes")));
            }
            // The sampler's terms are named where they are drawn, when their band is tall
            // enough for a line of text.
            let area = chart.plotting_area();
            for (corners, color, name, bytes) in &bands {
                if *color != SAMPLER {
                    continue;
                }
                let (x0, y1) = area.map_coordinate(&corners[0]);
                let (_, y0) = area.map_coordinate(&corners[1]);
                if y1 - y0 >= 14 {
                    let text = format!("{} {}", term_name(name), human(*bytes));
                    root.draw(&Text::new(
                        text,
                        (x0 + 4, y0 + (y1 - y0) / 2 - 6),
                        small.clone(),
                    ))
                    .map_err(|e| fail(&e))?;
                }
            }
            let (peak, set_by) = b.peak;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, peak as f64), (x_max, peak as f64)],
                    10,
                    6,
                    BLACK.stroke_width(2),
                ))
                .map_err(|e| fail(&e))?;
            let area = chart.plotting_area();
            let (_, line_y) = area.map_coordinate(&(0.0, peak as f64));
            let (right, top_px) = area.map_coordinate(&(x_max, height * 1.06));
            line_label(
                &root,
                &format!("activation peak {} (set by the {set_by})", human(peak)),
                right,
                line_y,
                top_px,
                &TextStyle::from(("sans-serif", 14).into_font()),
            )
            .map_err(|e| fail(&e))?;
        }
        let lb = (base + layout.summary.lower_bound) as f64;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, lb), (steps, lb)],
                BUDGET.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
        let (peak_at, _) = peak_step(layout);
        chart
            .draw_series(DashedLineSeries::new(
                vec![
                    (peak_at as f64 + 0.5, 0.0),
                    (peak_at as f64 + 0.5, height * 1.06),
                ],
                4,
                4,
                RGBColor(90, 90, 90).stroke_width(1),
            ))
            .map_err(|e| fail(&e))?;

        // The largest buffers, numbered at their rectangles.
        let mut largest: Vec<usize> = (0..layout.slots.len()).collect();
        largest.sort_by_key(|&i| (std::cmp::Reverse(layout.sizes[i]), i));
        largest.truncate(NUMBERED);
        let number = TextStyle::from(("sans-serif", 13).into_font());
        {
            let area = chart.plotting_area();
            for (k, &i) in largest.iter().enumerate() {
                let slot = &layout.slots[i];
                let mid = (
                    (slot.start + slot.end) as f64 / 2.0,
                    (base + layout.offsets[i]) as f64 + layout.sizes[i] as f64 / 2.0,
                );
                let (x, y) = area.map_coordinate(&mid);
                boxed_text(&root, &(k + 1).to_string(), (x - 4, y - 7), &number)
                    .map_err(|e| fail(&e))?;
            }
        }

        // The steps around the peak, widened, each buffer's size written where it fits.
        let lo = peak_at.saturating_sub(6);
        let hi = (peak_at + 7).min(layout.steps.max(1));
        let in_window: Vec<usize> = (0..layout.slots.len())
            .filter(|&i| layout.slots[i].start < hi && layout.slots[i].end > lo)
            .collect();
        let zoom_top = in_window
            .iter()
            .map(|&i| layout.offsets[i] + layout.sizes[i])
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let mut zoom = ChartBuilder::on(&lower)
            .caption(
                format!(
                    "steps {lo}..={} widened, around the peak at step {peak_at} (the arena alone)",
                    hi - 1
                ),
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d(lo as f64..hi as f64, 0f64..zoom_top * 1.05)
            .map_err(|e| fail(&e))?;
        zoom.configure_mesh()
            .disable_mesh()
            .x_desc("step")
            .y_desc("offset in the arena")
            .x_labels(hi - lo + 1)
            .x_label_formatter(&|x| format!("{}", x.round() as i64))
            .y_label_formatter(&|y| axis_bytes(*y))
            .draw()
            .map_err(|e| fail(&e))?;
        zoom.draw_series(in_window.iter().map(|&i| {
            let slot = &layout.slots[i];
            Rectangle::new(
                [
                    (slot.start.max(lo) as f64, layout.offsets[i] as f64),
                    (
                        slot.end.min(hi) as f64,
                        (layout.offsets[i] + layout.sizes[i]) as f64,
                    ),
                ],
                colour(slot.kind).mix(ZOOM_ALPHA).filled(),
            )
        }))
        .map_err(|e| fail(&e))?;
        {
            let area = zoom.plotting_area();
            for &i in &in_window {
                let slot = &layout.slots[i];
                let (x0, y1) =
                    area.map_coordinate(&(slot.start.max(lo) as f64, layout.offsets[i] as f64));
                let (x1, y0) = area.map_coordinate(&(
                    slot.end.min(hi) as f64,
                    (layout.offsets[i] + layout.sizes[i]) as f64,
                ));
                let mut text = human(layout.sizes[i]);
                if let Some(k) = largest.iter().position(|&j| j == i) {
                    text = format!("{}: {text}", k + 1);
                }
                let (w, _) = root
                    .estimate_text_size(&text, &small)
                    .map_err(|e| fail(&e))?;
                if y1 - y0 >= 14 && x1 - x0 >= w as i32 + 6 {
                    root.draw(&Text::new(
                        text,
                        (x0 + 3, y0 + (y1 - y0) / 2 - 6),
                        small.clone(),
                    ))
                    .map_err(|e| fail(&e))?;
                }
            }
        }

        // The key: colours, lines, then the numbered buffers by name.
        let text = ("sans-serif", 14).into_font();
        let grey = ("sans-serif", 12).into_font().color(&RGBColor(60, 60, 60));
        let mut entries = vec![
            ("activation (an edge)", ACTIVATION),
            ("arena workspace", WORKSPACE),
        ];
        if beside.is_some() {
            entries.extend([
                ("persistent (whole run)", PERSISTENT),
                ("held beside the forward", HELD),
                ("sampler, after the forward", SAMPLER),
            ]);
        }
        let mut y = 50;
        side.draw(&Text::new("buffers", (10, y - 26), text.clone()))
            .map_err(|e| fail(&e))?;
        for (name, color) in entries {
            side.draw(&Rectangle::new([(10, y), (28, y + 14)], color.filled()))
                .map_err(|e| fail(&e))?;
            side.draw(&Text::new(name, (36, y), text.clone()))
                .map_err(|e| fail(&e))?;
            y += 24;
        }
        side.draw(&PathElement::new(
            vec![(10, y + 7), (28, y + 7)],
            BUDGET.stroke_width(2),
        ))
        .map_err(|e| fail(&e))?;
        side.draw(&Text::new("lower bound", (36, y), text.clone()))
            .map_err(|e| fail(&e))?;
        y += 24;
        side.draw(&PathElement::new(
            vec![(19, y), (19, y + 14)],
            RGBColor(90, 90, 90).stroke_width(1),
        ))
        .map_err(|e| fail(&e))?;
        side.draw(&Text::new("the peak step", (36, y), text.clone()))
            .map_err(|e| fail(&e))?;
        y += 36;
        side.draw(&Text::new("the largest buffers", (10, y), text.clone()))
            .map_err(|e| fail(&e))?;
        y += 22;
        for (k, &i) in largest.iter().enumerate() {
            let name = buffer_name(layout, circuit, i);
            let short = name.split_once(' ').map_or(name.as_str(), |(_, n)| n);
            let line = format!("{} {}", k + 1, short);
            side.draw(&Text::new(elide(&line, 34), (10, y), grey.clone()))
                .map_err(|e| fail(&e))?;
            side.draw(&Text::new(
                format!("   {}, {}", human(layout.sizes[i]), steps_of(layout, i)),
                (10, y + 15),
                grey.clone(),
            ))
            .map_err(|e| fail(&e))?;
            y += 36;
        }
        side.draw(&Text::new(
            "hover a buffer for its name",
            (10, y + 6),
            ("sans-serif", 12).into_font(),
        ))
        .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    let buffers: Vec<String> = (0..layout.slots.len())
        .map(|i| buffer_title(layout, circuit, i))
        .collect();
    let svg = with_titles(
        &svg,
        &[(BUFFER_ALPHA, &buffers), (TERM_ALPHA, &term_titles)],
    )
    .map_err(|e| fail(&e))?;
    std::fs::write(path, svg).map_err(|e| fail(&e))?;
    Ok(())
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn elide(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

/// Gives each rectangle drawn at one of the `marked` opacities, in drawing order, the next
/// `<title>` of its list.
fn with_titles(svg: &str, marked: &[(f64, &[String])]) -> Result<String, String> {
    let markers: Vec<String> = marked
        .iter()
        .map(|(alpha, _)| format!("opacity=\"{alpha}\""))
        .collect();
    let mut next = vec![0usize; marked.len()];
    let mut out =
        String::with_capacity(svg.len() + 96 * marked.iter().map(|m| m.1.len()).sum::<usize>());
    let mut rest = svg;
    while let Some(at) = rest.find("<rect") {
        let end = at
            + rest[at..]
                .find("/>")
                .ok_or("an unclosed <rect> in plotters' SVG")?;
        let rect = &rest[at..end];
        out.push_str(&rest[..at]);
        let which = markers
            .iter()
            .position(|m| rect.contains(m.as_str()))
            .filter(|&k| next[k] < marked[k].1.len());
        match which {
            Some(k) => {
                let _ = write!(out, "{rect}><title>{}</title></rect>", marked[k].1[next[k]]);
                next[k] += 1;
            }
            None => {
                out.push_str(rect);
                out.push_str("/>");
            }
        }
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    for (k, (_, titles)) in marked.iter().enumerate() {
        if next[k] != titles.len() {
            return Err(format!(
                "{} titled rectangles but {} drawn",
                titles.len(),
                next[k]
            ));
        }
    }
    Ok(out)
}

/// An engine's workers as stacked bars on a linear axis: weights, activation peak, non-torch
/// memory and KV cache (and the CUDA-graph estimate where the engine subtracts it), against
/// the memory requested and the device's total.
pub fn write_engine_chart(path: &Path, s: &Startup) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let rows = super::engine::distinct_rows(&s.workers);
    let root = SVGBackend::new(path, (1100, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (plot, side) = root.split_horizontally(840);
    let graphs = |w: &Worker| {
        if s.cuda_graph_subtracted {
            w.cuda_graph.total
        } else {
            0
        }
    };
    type Part = (&'static str, RGBColor, fn(&Worker) -> u64);
    let parts: [Part; 4] = [
        ("weights", WEIGHTS, |w| w.weights),
        ("activation peak", ACTIVATION, |w| w.activation_peak),
        ("non-torch", NON_TORCH, |w| w.non_torch),
        ("KV cache", STATES, |w| w.kv_cache),
    ];
    let stacked = |w: &Worker| {
        parts
            .iter()
            .fold(graphs(w), |a, (_, _, f)| a.saturating_add(f(w)))
    };
    let top = rows
        .iter()
        .map(|(_, w)| stacked(w))
        .chain([s.requested, s.device_total])
        .max()
        .unwrap_or(1) as f64;
    let y_top = linear_top(top);
    let n = rows.len() as f64;
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            format!(
                "{} {} on {}: each worker's memory, to scale",
                s.engine, s.version, s.device
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d(0f64..n, 0f64..y_top)
        .map_err(|e| fail(&e))?;
    let names: Vec<String> = rows
        .iter()
        .map(|(ranks, w)| format!("ranks {ranks} (stage {})", w.pp_stage))
        .collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("workers (alike ranks share a bar)")
        .y_desc("bytes")
        .x_labels(0)
        .y_labels(9)
        .y_label_formatter(&|y| axis_bytes(*y))
        .light_line_style(WHITE)
        .draw()
        .map_err(|e| fail(&e))?;
    let small = ("sans-serif", 13).into_font();
    for (k, (_, w)) in rows.iter().enumerate() {
        let (x0, x1) = (k as f64 + 0.2, k as f64 + 0.8);
        let mut y = 0u64;
        let mut segments: Vec<(&str, RGBColor, u64)> = parts
            .iter()
            .map(|(name, color, f)| (*name, *color, f(w)))
            .collect();
        if graphs(w) > 0 {
            segments.insert(3, ("CUDA graphs (est.)", WORKSPACE, graphs(w)));
        }
        for (name, color, bytes) in segments {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, y as f64), (x1, (y + bytes) as f64)],
                    color.mix(BAND_ALPHA).filled(),
                )))
                .map_err(|e| fail(&e))?;
            let area = chart.plotting_area();
            let (px, py1) = area.map_coordinate(&(x0, y as f64));
            let (_, py0) = area.map_coordinate(&(x1, (y + bytes) as f64));
            if py1 - py0 >= 16 {
                root.draw(&Text::new(
                    format!("{name} {}", human(bytes)),
                    (px + 6, py0 + (py1 - py0) / 2 - 7),
                    small.clone(),
                ))
                .map_err(|e| fail(&e))?;
            }
            y += bytes;
        }
        let area = chart.plotting_area();
        let (px, py) = area.map_coordinate(&(x0, 0.0));
        root.draw(&Text::new(names[k].clone(), (px, py + 8), small.clone()))
            .map_err(|e| fail(&e))?;
    }
    let label = ("sans-serif", 15).into_font();
    for (bytes, what, color) in [
        (
            s.requested,
            format!(
                "requested {} ({} of the total)",
                human(s.requested),
                s.gpu_memory_utilization
            ),
            BUDGET,
        ),
        (
            s.device_total,
            format!("device total {}", human(s.device_total)),
            BLACK,
        ),
    ] {
        let y = bytes as f64;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, y), (n, y)],
                10,
                6,
                color.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
        let area = chart.plotting_area();
        let (_, line_y) = area.map_coordinate(&(0.0, y));
        let (right, top_px) = area.map_coordinate(&(n, y_top));
        line_label(&root, &what, right, line_y, top_px, &label.color(&color))
            .map_err(|e| fail(&e))?;
    }
    let text = ("sans-serif", 15).into_font();
    let mut y = 40;
    side.draw(&Text::new(
        "each bar, top to bottom",
        (10, y - 20),
        text.clone(),
    ))
    .map_err(|e| fail(&e))?;
    let mut legend: Vec<(&str, RGBColor)> = parts.iter().rev().map(|(n, c, _)| (*n, *c)).collect();
    if s.cuda_graph_subtracted && s.cuda_graph_estimate > 0 {
        legend.insert(1, ("CUDA graphs (est.)", WORKSPACE));
    }
    for (name, color) in legend {
        side.draw(&Rectangle::new(
            [(10, y), (28, y + 14)],
            color.mix(BAND_ALPHA).filled(),
        ))
        .map_err(|e| fail(&e))?;
        side.draw(&Text::new(name, (36, y), text.clone()))
            .map_err(|e| fail(&e))?;
        y += 26;
    }
    y += 10;
    side.draw(&Text::new(
        format!("KV cache: {} tokens", s.kv_cache_tokens),
        (10, y),
        text.clone(),
    ))
    .map_err(|e| fail(&e))?;
    side.draw(&Text::new(
        format!(
            "{:.2}x requests of {} tokens",
            s.max_concurrency, s.max_model_len
        ),
        (10, y + 20),
        text.clone(),
    ))
    .map_err(|e| fail(&e))?;
    side.draw(&Text::new(
        if s.verdict == engine_profile::Verdict::Starts {
            "verdict: starts"
        } else {
            "verdict: does not start"
        },
        (10, y + 40),
        text,
    ))
    .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
