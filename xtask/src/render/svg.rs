//! Pictures of a plan, drawn with plotters: the terms against rows, and the arena as a memory
//! map.
//!
//! Invariants:
//! - The chart stacks the four terms (activations at the bottom, then workspaces, states and
//!   weights, whose top is the total) on a log2 byte axis, so a MiB-sized term shows beside a
//!   GiB-sized one; it marks the budget and the largest n that fits, and names every band with
//!   its range in a legend. A single row count is drawn as one stacked bar, never an empty
//!   plot. At most about [`CHART_POINTS`] row counts are drawn, spread evenly over log2(n),
//!   whatever the rows asked (the first and last always).
//! - The memory map has exactly one filled rectangle per arena buffer, coloured by kind, each
//!   with a `<title>` naming the buffer (shown on hover), integer step ticks, the lower-bound
//!   line and a legend.

use std::fmt::Write as _;
use std::path::Path;

use circuit_ir::Circuit;
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
/// The colour of the states band.
pub const STATES: RGBColor = RGBColor(148, 103, 189);
/// The colour of the weights band.
pub const WEIGHTS: RGBColor = RGBColor(120, 120, 120);
/// The budget line and the arena's lower bound.
pub const BUDGET: RGBColor = RGBColor(214, 39, 40);
/// The marker of the largest n that fits.
pub const FIT: RGBColor = RGBColor(44, 160, 44);

/// The opacity of the memory map's buffers: it marks their rectangles in plotters' output, where
/// each gets its `<title>`.
const BUFFER_ALPHA: f64 = 0.86;

fn draw_error(path: &Path, e: impl std::fmt::Display) -> CliError {
    format!("cannot draw {}: {e}", path.display()).into()
}

/// The row counts the chart draws, thinned as they stream in.
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

/// The four bands, bottom up: name, colour, bytes.
type Band = (&'static str, RGBColor, fn(&Totals) -> u64);
const BANDS: [Band; 4] = [
    ("activations", ACTIVATION, |t| t.activations),
    ("workspaces", WORKSPACE, |t| t.workspaces),
    ("states", STATES, |t| t.states),
    ("weights", WEIGHTS, |t| t.weights),
];

/// The terms stacked against rows, on log2 axes, with the budget and the largest n that fits.
pub fn write_chart(
    path: &Path,
    ctx: &Context<'_>,
    points: &ChartPoints,
    summary: &ReportSummary,
) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let points = points.points();
    let root = SVGBackend::new(path, (1100, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (plot, side) = root.split_horizontally(840);

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
    let smallest = points
        .iter()
        .flat_map(|(_, t)| BANDS.map(|(_, _, term)| term(t)))
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(1 << 20);
    // Room below the smallest term, so its band is seen; powers of 4 for round tick labels.
    let y_min = 4f64.powf(((smallest as f64 / 8.0).max(1.0)).log(4.0).floor());
    let budget = ctx.budget;
    let top = stacks
        .iter()
        .map(|(_, s)| s[3])
        .chain(budget.map(|b| b as f64))
        .fold(y_min * 4.0, f64::max);
    let y_max = 4f64.powf((top * 1.5).log(4.0).ceil());
    let single = stacks.len() == 1 || stacks[0].0 == stacks[stacks.len() - 1].0;
    let (x_lo, x_hi) = if single {
        (stacks[0].0 / 2.0, stacks[0].0 * 2.0)
    } else {
        (stacks[0].0, stacks[stacks.len() - 1].0)
    };
    let x_ticks = ((x_hi / x_lo).log2().floor() as usize).clamp(1, 14);
    let y_ticks = ((y_max / y_min).log(4.0).floor() as usize).max(1);
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            format!(
                "{} on {}: bytes per step, terms stacked (log scale)",
                ctx.planner.circuit().name(),
                ctx.device
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().base(2.0),
            (y_min..y_max).log_scale().base(4.0),
        )
        .map_err(|e| fail(&e))?;
    chart
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

    let clamp = |v: f64| v.max(y_min);
    for (k, (_, color, _)) in BANDS.iter().enumerate() {
        let lower = |s: &[f64; 4]| clamp(if k == 0 { y_min } else { s[k - 1] });
        let style = color.mix(0.85).filled();
        if single {
            let (x, s) = stacks[stacks.len() - 1];
            let w = std::f64::consts::SQRT_2;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x / w, lower(&s)), (x * w, clamp(s[k]))],
                    style,
                )))
                .map_err(|e| fail(&e))?;
        } else {
            let mut outline: Vec<(f64, f64)> =
                stacks.iter().map(|(x, s)| (*x, clamp(s[k]))).collect();
            outline.extend(stacks.iter().rev().map(|(x, s)| (*x, lower(s))));
            chart
                .draw_series(std::iter::once(Polygon::new(outline, style)))
                .map_err(|e| fail(&e))?;
        }
    }
    let total: Vec<(f64, f64)> = if single {
        let (x, s) = stacks[stacks.len() - 1];
        let w = std::f64::consts::SQRT_2;
        vec![(x / w, clamp(s[3])), (x * w, clamp(s[3]))]
    } else {
        stacks.iter().map(|(x, s)| (*x, clamp(s[3]))).collect()
    };
    chart
        .draw_series(LineSeries::new(total, BLACK.stroke_width(2)))
        .map_err(|e| fail(&e))?;
    if let Some(b) = budget {
        let y = clamp(b as f64);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_lo, y), (x_hi, y)],
                10,
                6,
                BUDGET.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("budget {}", human(b)),
                (x_lo * 1.05, y * 1.25),
                ("sans-serif", 15).into_font().color(&BUDGET),
            )))
            .map_err(|e| fail(&e))?;
    }
    let fit_n = summary.fit.as_ref().and_then(|f| f.max_rows);
    if let Some(n) = fit_n {
        let x = (n as f64).clamp(x_lo, x_hi);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, y_min), (x, y_max)],
                8,
                5,
                FIT.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
    }

    legend(&side, &points, budget, fit_n, summary).map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
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
            color.mix(0.85).filled(),
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
            (Some(n), Some(f)) if f.unresolved.is_none() => format!("largest n that fits: {n}"),
            (Some(n), Some(_)) => format!("n that fits (search gave up): {n}"),
            _ => "no n fits the budget".to_owned(),
        };
        area.draw(&PathElement::new(
            vec![(19, y), (19, y + 14)],
            FIT.stroke_width(2),
        ))?;
        area.draw(&Text::new(fit, (36, y), text.clone()))?;
    }
    Ok(())
}

/// Escapes text for an SVG `<title>`.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What one buffer of the arena is, for its `<title>`.
fn buffer_title(
    layout: &ArenaLayout,
    circuit: &Circuit,
    i: usize,
    offset: u64,
    size: u64,
) -> String {
    let slot = &layout.slots[i];
    let steps = if slot.end - slot.start <= 1 {
        format!("step {}", slot.start)
    } else {
        format!("steps {}..={}", slot.start, slot.end - 1)
    };
    let what = match slot.kind {
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
    };
    xml_escape(&format!("{what}: {size} bytes at offset {offset}, {steps}"))
}

/// The arena as a memory map: x = the group steps a buffer lives, y = its offset and size.
pub fn write_arena(path: &Path, layout: &ArenaLayout, circuit: &Circuit) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 660)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (plot, side) = root.split_horizontally(960);
        let height = layout.summary.bytes.max(1) as f64;
        let steps = layout.steps.max(1) as i64;
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!(
                    "{} arena at n = {}: {}, lower bound {}, {} buffers",
                    circuit.name(),
                    layout.rows,
                    human(layout.summary.bytes),
                    human(layout.summary.lower_bound),
                    layout.slots.len()
                ),
                ("sans-serif", 19),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0i64..steps, 0f64..height * 1.05)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("step (launch group)")
            .y_desc("offset in the arena")
            .x_labels(steps.min(12) as usize)
            .x_label_formatter(&|x| format!("{x}"))
            .y_label_formatter(&|y| axis_bytes(*y))
            .draw()
            .map_err(|e| fail(&e))?;
        let rects = layout
            .slots
            .iter()
            .zip(layout.offsets.iter().zip(&layout.sizes))
            .map(|(slot, (&offset, &size))| {
                let color = match slot.kind {
                    BufferKind::Edge { .. } => ACTIVATION,
                    BufferKind::Workspace { .. } => WORKSPACE,
                };
                Rectangle::new(
                    [
                        (slot.start as i64, offset as f64),
                        (slot.end as i64, (offset + size) as f64),
                    ],
                    color.mix(BUFFER_ALPHA).filled(),
                )
            });
        chart.draw_series(rects).map_err(|e| fail(&e))?;
        let lb = layout.summary.lower_bound as f64;
        chart
            .draw_series(LineSeries::new(
                vec![(0, lb), (steps, lb)],
                BUDGET.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?;
        let text = ("sans-serif", 15).into_font();
        let entries = [
            ("activation (an edge)", ACTIVATION),
            ("arena workspace", WORKSPACE),
        ];
        let mut y = 60;
        side.draw(&Text::new("buffers", (10, y - 26), text.clone()))
            .map_err(|e| fail(&e))?;
        for (name, color) in entries {
            side.draw(&Rectangle::new([(10, y), (28, y + 14)], color.filled()))
                .map_err(|e| fail(&e))?;
            side.draw(&Text::new(name, (36, y), text.clone()))
                .map_err(|e| fail(&e))?;
            y += 28;
        }
        side.draw(&PathElement::new(
            vec![(10, y + 7), (28, y + 7)],
            BUDGET.stroke_width(2),
        ))
        .map_err(|e| fail(&e))?;
        side.draw(&Text::new("lower bound", (36, y), text.clone()))
            .map_err(|e| fail(&e))?;
        side.draw(&Text::new(
            "hover a buffer for its name",
            (10, y + 40),
            ("sans-serif", 13).into_font(),
        ))
        .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    let svg = with_titles(&svg, layout, circuit).map_err(|e| fail(&e))?;
    std::fs::write(path, svg).map_err(|e| fail(&e))?;
    Ok(())
}

/// Gives each buffer rectangle (the rectangles drawn with [`BUFFER_ALPHA`], in slot order) a
/// `<title>` child.
fn with_titles(svg: &str, layout: &ArenaLayout, circuit: &Circuit) -> Result<String, String> {
    let marker = format!("opacity=\"{BUFFER_ALPHA}\"");
    let mut out = String::with_capacity(svg.len() + layout.slots.len() * 96);
    let mut rest = svg;
    let mut i = 0;
    while let Some(at) = rest.find("<rect") {
        let end = at
            + rest[at..]
                .find("/>")
                .ok_or("an unclosed <rect> in plotters' SVG")?;
        let rect = &rest[at..end];
        out.push_str(&rest[..at]);
        if rect.contains(&marker) && i < layout.slots.len() {
            let title = buffer_title(layout, circuit, i, layout.offsets[i], layout.sizes[i]);
            let _ = write!(out, "{rect}><title>{title}</title></rect>");
            i += 1;
        } else {
            out.push_str(rect);
            out.push_str("/>");
        }
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    if i != layout.slots.len() {
        return Err(format!(
            "{} buffers but {i} buffer rectangles in the drawing",
            layout.slots.len()
        ));
    }
    Ok(out)
}
