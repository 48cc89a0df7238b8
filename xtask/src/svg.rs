//! Pictures of a plan, drawn with plotters: the terms against rows, and the arena as a memory
//! map.
//!
//! Invariants: the chart has one line series per term (total, weights, activations,
//! workspaces, states) plus the budget line when there is a budget, each named in the legend;
//! the memory map has exactly one filled rectangle per arena buffer, coloured by kind, plus the
//! lower-bound line.

use std::path::Path;

use circuit_ir::Circuit;
use memory_plan::{ArenaLayout, BufferKind};
use plotters::prelude::*;

use crate::CliError;
use crate::plan::Outcome;

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;

fn draw_error(path: &Path, e: impl std::fmt::Display) -> CliError {
    format!("cannot draw {}: {e}", path.display()).into()
}

/// The total and each term against rows, on a log2 axis.
pub fn write_chart(path: &Path, o: &Outcome<'_>) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let first = o.plans.first().map_or(1, |p| p.rows) as f64;
    let last = o.plans.last().map_or(2, |p| p.rows).max(2) as f64;
    let top = o
        .plans
        .iter()
        .map(|p| p.totals.total)
        .chain(o.budget)
        .max()
        .unwrap_or(1) as f64
        / GIB
        * 1.08;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} on {}: bytes per step",
                o.planner.circuit().name(),
                o.device
            ),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (first.min(last / 2.0)..last).log_scale().base(2.0),
            0f64..top.max(0.001),
        )
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("rows n (log2)")
        .y_desc("GiB")
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .draw()
        .map_err(|e| fail(&e))?;
    type Term = fn(&memory_plan::Totals) -> u64;
    let series: [(&str, RGBColor, Term); 5] = [
        ("total", BLACK, |t| t.total),
        ("weights", RGBColor(31, 119, 180), |t| t.weights),
        ("activations", RGBColor(44, 160, 44), |t| t.activations),
        ("workspaces", RGBColor(255, 127, 14), |t| t.workspaces),
        ("states", RGBColor(148, 103, 189), |t| t.states),
    ];
    for (name, color, term) in series {
        let points: Vec<(f64, f64)> = o
            .plans
            .iter()
            .map(|p| (p.rows as f64, term(&p.totals) as f64 / GIB))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    if let Some(budget) = o.budget {
        let y = budget as f64 / GIB;
        chart
            .draw_series(LineSeries::new(
                vec![(first.min(last / 2.0), y), (last, y)],
                RED.stroke_width(1),
            ))
            .map_err(|e| fail(&e))?
            .label("budget")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(1)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

/// The colour of activation buffers in the memory map.
pub const ACTIVATION: RGBColor = RGBColor(70, 130, 180);
/// The colour of arena workspaces in the memory map.
pub const WORKSPACE: RGBColor = RGBColor(230, 140, 30);

/// The arena as a memory map: x = the group steps a buffer lives, y = its offset and size.
pub fn write_arena(path: &Path, layout: &ArenaLayout, circuit: &Circuit) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| draw_error(path, e);
    let root = SVGBackend::new(path, (1200, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let height = layout.summary.bytes.max(1) as f64 / MIB;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} arena at n = {}: {:.1} MiB, lower bound {:.1} MiB, {} buffers",
                circuit.name(),
                layout.rows,
                layout.summary.bytes as f64 / MIB,
                layout.summary.lower_bound as f64 / MIB,
                layout.slots.len()
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..layout.steps.max(1) as f64, 0f64..height * 1.05)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("step (launch group)")
        .y_desc("offset (MiB)")
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
                    (slot.start as f64, offset as f64 / MIB),
                    (slot.end as f64, (offset + size) as f64 / MIB),
                ],
                color.mix(0.8).filled(),
            )
        });
    chart.draw_series(rects).map_err(|e| fail(&e))?;
    let lb = layout.summary.lower_bound as f64 / MIB;
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, lb), (layout.steps as f64, lb)],
            RED.stroke_width(2),
        ))
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
