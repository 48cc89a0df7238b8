//! MiniMalloc CSV: any text parses or gives one clear line; parsed buffers are packed by the
//! heuristic and by the solver (small step budget), every placement validates, no height is
//! below the lower bound, and the solution CSV parses back to the same buffers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use arena_pack::{self as pack, Goal, Limits, Stacking, csv};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let rows = match csv::parse(text) {
        Err(e) => return common::one_line("csv", &e.to_string()),
        Ok(rows) => rows,
    };
    let buffers: Vec<pack::Buffer> = rows.iter().map(csv::CsvBuffer::buffer).collect();
    let lower = match pack::lower_bound(&buffers) {
        Err(e) => return common::one_line("lower bound", &e.to_string()),
        Ok(l) => l,
    };
    let greedy = match pack::heuristic(&buffers) {
        Err(e) => return common::one_line("heuristic", &e.to_string()),
        Ok(p) => p,
    };
    let height = pack::validate(&buffers, &greedy.offsets, None)
        .unwrap_or_else(|e| panic!("heuristic placement invalid: {e}"));
    assert_eq!(height, greedy.height);
    assert!(
        height >= lower,
        "heuristic {height} below the lower bound {lower}"
    );

    // Re-stacking the heuristic's placement at the same sizes is valid and no higher.
    let stacking = Stacking::new(&buffers, &greedy);
    let sizes: Vec<u64> = buffers.iter().map(|b| b.size).collect();
    let mut offsets = Vec::new();
    if let Ok(restacked) = stacking.restack(&sizes, &mut offsets) {
        let h = pack::validate(&buffers, &offsets, None)
            .unwrap_or_else(|e| panic!("re-stacked placement invalid: {e}"));
        assert_eq!(h, restacked);
        assert!(
            restacked <= greedy.height,
            "re-stacking raised {} to {restacked}",
            greedy.height
        );
    }

    let limits = Limits {
        max_steps: 2_000,
        stop: None,
    };
    for goal in [Goal::Minimize, Goal::Fit { capacity: lower }] {
        let solution = match pack::solve(&buffers, goal, &limits) {
            Err(e) => return common::one_line("solve", &e.to_string()),
            Ok(s) => s,
        };
        let h = pack::validate(&buffers, &solution.placement.offsets, None)
            .unwrap_or_else(|e| panic!("solver placement invalid ({goal:?}): {e}"));
        assert_eq!(h, solution.placement.height);
        assert_eq!(solution.lower_bound, lower);
        assert!(h >= lower);
        if goal == Goal::Minimize {
            assert!(
                h <= greedy.height,
                "solver {h} above the heuristic {}",
                greedy.height
            );
        }
        let written = csv::write(&rows, &solution.placement.offsets).expect("solution CSV");
        let back = csv::parse(
            &written
                .lines()
                .map(|l| l.rsplit_once(',').map_or(l, |(head, _)| head))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        assert_eq!(
            back,
            Ok(rows.clone()),
            "the solution CSV does not read back"
        );
    }
});
