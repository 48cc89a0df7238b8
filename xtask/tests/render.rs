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
    // Activations run from 4.4 MiB to 2 GiB and workspaces are 32 MiB beside 15 GiB of
    // weights and 16 GiB of KV: on the log axis each band still covers thousands of pixels.
    for (name, colour) in [
        ("activations", ACTIVATION),
        ("workspaces", WORKSPACE),
        ("states", STATES),
        ("weights", WEIGHTS),
    ] {
        let pixels = count(&png, CHART_PLOT_WIDTH, over_white(colour, 0.85));
        assert!(pixels > 2000, "the {name} band covers {pixels} pixels");
    }
    assert!(
        count(&png, CHART_PLOT_WIDTH, BUDGET) > 300,
        "no budget line"
    );
    assert!(count(&png, CHART_PLOT_WIDTH, FIT) > 200, "no fit marker");
    // The legend's text is drawn (a font was found and used).
    assert!(dark(&png, CHART_PLOT_WIDTH) > 300, "the legend has no text");
}

#[test]
fn a_single_row_chart_is_one_stacked_bar() {
    let png = draw("single", "--svg", &["--rows", "512", "--kv-tokens", "1000"]);
    for (name, colour) in [
        ("activations", ACTIVATION),
        ("workspaces", WORKSPACE),
        ("states", STATES),
        ("weights", WEIGHTS),
    ] {
        let pixels = count(&png, CHART_PLOT_WIDTH, over_white(colour, 0.85));
        assert!(pixels > 1000, "the {name} band covers {pixels} pixels");
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
