//! The charts as pixels: each SVG the CLI draws is rendered with resvg, and the test counts the
//! pixels of every band's colour inside the plot, so a term flattened to nothing, a missing
//! budget or fit marker, or an empty single-row chart fails. The PNGs are kept under
//! cargo's test temp directory (`target/tmp/charts/`) for a person to look at.

use std::path::{Path, PathBuf};
use std::process::Command;

use resvg::tiny_skia::{Pixmap, Transform};

/// The colours svg.rs draws with (bands at 0.85 opacity, arena buffers at 0.86, over white).
const ACTIVATION: [u8; 3] = [70, 130, 180];
const WORKSPACE: [u8; 3] = [230, 140, 30];
const STATES: [u8; 3] = [148, 103, 189];
const WEIGHTS: [u8; 3] = [120, 120, 120];
const BUDGET: [u8; 3] = [214, 39, 40];
const FIT: [u8; 3] = [44, 160, 44];

/// The chart's plot is the left 840 pixels, the legend the rest; the memory map's plot is the
/// left 960.
const CHART_PLOT_WIDTH: u32 = 840;
const ARENA_PLOT_WIDTH: u32 = 960;

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("charts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `plan` with `args`, drawing to `<name>.svg` (`--svg` or `--arena-svg` as `flag`).
fn draw(name: &str, flag: &str, args: &[&str]) -> Pixmap {
    let svg = out_dir().join(format!("{name}.svg"));
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("plan")
        .args(args)
        .arg(flag)
        .arg(&svg)
        .output()
        .expect("the xtask binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = std::fs::read(&svg).unwrap();
    let mut options = resvg::usvg::Options::default();
    // plotters asks for `sans-serif`; fontdb maps it to Arial unless told otherwise.
    // The font ships with the tests (tests/fonts, Bitstream Vera license): the pictures must
    // not depend on the fonts a machine happens to have.
    let fonts = options.fontdb_mut();
    fonts.load_font_data(include_bytes!("fonts/DejaVuSans.ttf").to_vec());
    fonts.set_sans_serif_family("DejaVu Sans");
    let tree = resvg::usvg::Tree::from_data(&data, &options).expect("resvg reads the SVG");
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    pixmap
        .save_png(out_dir().join(format!("{name}.png")))
        .unwrap();
    pixmap
}

/// `colour` drawn at `alpha` over white.
fn over_white(colour: [u8; 3], alpha: f64) -> [u8; 3] {
    colour.map(|c| (c as f64 * alpha + 255.0 * (1.0 - alpha)).round() as u8)
}

/// Pixels left of `width` within 2 of `colour` in each channel.
fn count(pixmap: &Pixmap, width: u32, colour: [u8; 3]) -> usize {
    let w = pixmap.width();
    pixmap
        .pixels()
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as u32 % w) < width)
        .filter(|(_, p)| {
            let got = [p.red(), p.green(), p.blue()];
            got.iter().zip(colour).all(|(&g, c)| g.abs_diff(c) <= 2)
        })
        .count()
}

/// Pixels of text and axes: nearly black.
fn dark(pixmap: &Pixmap, from_x: u32) -> usize {
    let w = pixmap.width();
    pixmap
        .pixels()
        .iter()
        .enumerate()
        .filter(|(i, p)| (*i as u32 % w) >= from_x && p.red() < 60 && p.green() < 60)
        .count()
}

/// The chart's upper panel (terms stacked on a linear axis) ends above this row; the lower
/// panel (each term alone, log axis) starts below it.
const PANELS_SPLIT: u32 = 520;

/// Pixels of `colour` within the chart's plot, above (`upper`) or below the split.
fn in_panel(pixmap: &Pixmap, upper: bool, colour: [u8; 3]) -> usize {
    let w = pixmap.width();
    pixmap
        .pixels()
        .iter()
        .enumerate()
        .filter(|(i, _)| (*i as u32 % w) < CHART_PLOT_WIDTH)
        .filter(|(i, _)| ((*i as u32 / w) < PANELS_SPLIT) == upper)
        .filter(|(_, p)| {
            let got = [p.red(), p.green(), p.blue()];
            got.iter().zip(colour).all(|(&g, c)| g.abs_diff(c) <= 2)
        })
        .count()
}

#[test]
fn the_sweep_chart_shows_every_term_the_budget_and_the_fit() {
    let png = draw(
        "sweep",
        "--svg",
        &[
            "--kv-tokens",
            "131072",
            "--sequences",
            "16",
            "--budget",
            "32GiB",
        ],
    );
    // Stacked to scale: 15 GiB of weights and 16 GiB of KV fill the upper panel, and the
    // activations (up to 2 GiB at n = 8192) show as a band; the 32 MiB of workspaces are a
    // sliver there, as they should be.
    for (name, colour, least) in [
        ("weights", WEIGHTS, 100_000),
        ("states", STATES, 100_000),
        ("activations", ACTIVATION, 1_000),
    ] {
        let pixels = in_panel(&png, true, over_white(colour, 0.85));
        assert!(pixels > least, "the {name} band covers {pixels} pixels");
    }
    // Each term alone on the log axis below: a line of its own colour, the workspaces' from
    // n = 128 on (below it the split-K partials are in the arena).
    for (name, colour) in [
        ("activations", ACTIVATION),
        ("workspaces", WORKSPACE),
        ("states", STATES),
        ("weights", WEIGHTS),
    ] {
        let pixels = in_panel(&png, false, colour);
        assert!(pixels > 300, "the {name} line covers {pixels} pixels");
    }
    assert!(in_panel(&png, true, BUDGET) > 300, "no budget line");
    assert!(in_panel(&png, true, FIT) > 200, "no fit marker");
    // The legend's text is drawn (a font was found and used).
    assert!(dark(&png, CHART_PLOT_WIDTH) > 300, "the legend has no text");
}

#[test]
fn the_budget_label_is_not_struck_through() {
    let png = draw("budget-label", "--svg", &["--budget", "32GiB"]);
    // The label's text sits beside its dashed line, not on it: the rows of the upper panel
    // holding red pixels are the line's (those wide with red) and the text's, all on one side.
    let w = png.width();
    let red_rows: Vec<u32> = (0..PANELS_SPLIT)
        .filter(|y| {
            (0..CHART_PLOT_WIDTH).any(|x| {
                let p = png.pixels()[(y * w + x) as usize];
                [p.red(), p.green(), p.blue()]
                    .iter()
                    .zip(BUDGET)
                    .all(|(&g, c)| g.abs_diff(c) <= 40)
            })
        })
        .collect();
    // The line: the longest run of rows with many red pixels.
    let wide = |y: u32| {
        (0..CHART_PLOT_WIDTH)
            .filter(|x| {
                let p = png.pixels()[(y * w + x) as usize];
                [p.red(), p.green(), p.blue()]
                    .iter()
                    .zip(BUDGET)
                    .all(|(&g, c)| g.abs_diff(c) <= 2)
            })
            .count()
            > 300
    };
    let line: Vec<u32> = red_rows.iter().copied().filter(|&y| wide(y)).collect();
    assert!(!line.is_empty(), "no budget line in {red_rows:?}");
    let text: Vec<u32> = red_rows
        .iter()
        .copied()
        .filter(|y| !line.contains(y))
        .collect();
    assert!(!text.is_empty(), "no budget label");
    let (top, bottom) = (line[0], line[line.len() - 1]);
    // Struck through, the text would have rows on both sides of the line.
    assert!(
        text.iter().all(|&y| y < top) || text.iter().all(|&y| y > bottom),
        "the label's rows {text:?} cross the line's {line:?}"
    );
}

#[test]
fn a_single_row_chart_is_one_stacked_bar() {
    let png = draw("single", "--svg", &["--rows", "512", "--kv-tokens", "1000"]);
    // One bar, to scale: the 15 GiB of weights; each term a point of its own below, nested so
    // the 125 MiB of KV does not hide the 129 MiB of activations.
    let pixels = in_panel(&png, true, over_white(WEIGHTS, 0.85));
    assert!(pixels > 10_000, "the weights bar covers {pixels} pixels");
    for (name, colour) in [
        ("activations", ACTIVATION),
        ("workspaces", WORKSPACE),
        ("states", STATES),
        ("weights", WEIGHTS),
    ] {
        let pixels = in_panel(&png, false, colour);
        assert!(pixels > 20, "the {name} point covers {pixels} pixels");
    }
}

#[test]
fn the_arena_map_shows_both_kinds_of_buffer_and_a_legend() {
    // At n = 64 the split-K partials (4 MiB) stand beside the activations; at n = 4096 the
    // workspaces are 1 MiB of a 1 GiB map, under a pixel high.
    let png = draw("arena", "--arena-svg", &["--rows", "1..=64:x4"]);
    let activations = count(&png, ARENA_PLOT_WIDTH, over_white(ACTIVATION, 0.86));
    let workspaces = count(&png, ARENA_PLOT_WIDTH, over_white(WORKSPACE, 0.86));
    assert!(
        activations > 5000,
        "activation buffers cover {activations} pixels"
    );
    assert!(workspaces > 200, "workspaces cover {workspaces} pixels");
    assert!(
        count(&png, ARENA_PLOT_WIDTH, BUDGET) > 300,
        "no lower-bound line"
    );
    assert!(dark(&png, ARENA_PLOT_WIDTH) > 300, "the legend has no text");
}

/// The colours of the engine's own terms (svg.rs): non-torch memory, and in the memory map the
/// run's persistent terms and the sampler's.
const NON_TORCH: [u8; 3] = [23, 190, 207];
const SAMPLER: [u8; 3] = [188, 189, 34];

fn llama_8b() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/models/llama-3.1-8b/config.json")
        .display()
        .to_string()
}

#[test]
fn the_engine_chart_shows_each_worker_and_its_kv_cache() {
    let config = llama_8b();
    let png = draw(
        "engine",
        "--svg",
        &[
            "--hf-config",
            &config,
            "--engine",
            "vllm==0.19.0",
            "--tp",
            "2",
        ],
    );
    // Per worker: 7.5 GiB of weights, the activation peak, non-torch memory and some 60 GiB of
    // KV cache, stacked to scale.
    for (name, colour, least) in [
        ("weights", WEIGHTS, 5_000),
        ("kv cache", STATES, 20_000),
        ("activation peak", ACTIVATION, 300),
        ("non-torch", NON_TORCH, 100),
    ] {
        let pixels = count(&png, CHART_PLOT_WIDTH, over_white(colour, 0.85));
        assert!(pixels > least, "the {name} segment covers {pixels} pixels");
    }
    assert!(
        count(&png, CHART_PLOT_WIDTH, BUDGET) > 100,
        "no requested-memory line"
    );
    assert!(dark(&png, CHART_PLOT_WIDTH) > 300, "the legend has no text");
}

#[test]
fn the_profile_run_map_labels_the_sampler_and_the_largest_buffers() {
    let config = llama_8b();
    let png = draw(
        "engine-arena",
        "--arena-svg",
        &["--hf-config", &config, "--engine", "vllm==0.19.0"],
    );
    // The forward's buffers, and the sampler's terms drawn beside them at full size.
    let activations = count(&png, ARENA_PLOT_WIDTH, over_white(ACTIVATION, 0.86));
    assert!(activations > 5000, "activations cover {activations} pixels");
    let sampler = count(&png, ARENA_PLOT_WIDTH, over_white(SAMPLER, 0.87));
    assert!(sampler > 1000, "the sampler's terms cover {sampler} pixels");
    assert!(dark(&png, ARENA_PLOT_WIDTH) > 300, "the legend has no text");
}
