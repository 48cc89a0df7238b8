//! The README's "Use the crates" example stays one program in three places: the README's Rust
//! block (a doc test of this package, `tests/lib.rs`), `examples/downstream/src/main.rs` (built
//! outside the workspace and run by .ci/run), whose code below its `//!` header is the block,
//! byte for byte, and the output the README shows, which is
//! `examples/downstream/expected-output.txt` (.ci/run compares the run's output with it).

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The body of the first fenced block of language `lang` after the heading `heading`.
fn block(markdown: &str, heading: &str, lang: &str) -> String {
    let section = markdown
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no heading `{heading}`"))
        .1;
    let open = format!("```{lang}\n");
    let start = section
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{lang} block under `{heading}`"))
        + open.len();
    let len = section[start..]
        .find("```\n")
        .unwrap_or_else(|| panic!("the ```{lang} block under `{heading}` does not end"));
    section[start..start + len].to_owned()
}

/// `main.rs` without its leading `//!` lines and the blank line after them.
fn below_header(source: &str) -> &str {
    let mut rest = source;
    while let Some(line_end) = rest.find('\n')
        && rest.starts_with("//!")
    {
        rest = &rest[line_end + 1..];
    }
    rest.strip_prefix('\n').unwrap_or(rest)
}

#[test]
fn the_downstream_crate_runs_the_readme_code() {
    let readme = read("README.md");
    let code = block(&readme, "## Use the crates", "rust");
    let main = read("examples/downstream/src/main.rs");
    assert_eq!(
        below_header(&main),
        code,
        "examples/downstream/src/main.rs (below its header) and the README's block differ"
    );
    // Under 30 lines, as the section promises.
    assert!(code.lines().count() < 30, "{} lines", code.lines().count());
}

#[test]
fn the_readme_shows_the_downstream_output() {
    let readme = read("README.md");
    let shown = block(&readme, "## Use the crates", "text");
    assert_eq!(
        shown,
        read("examples/downstream/expected-output.txt"),
        "the README's output block and examples/downstream/expected-output.txt differ"
    );
}

#[test]
fn the_block_finder_reads_the_block_under_its_heading() {
    let md = "# t\n```rust\nno\n```\n## Use\ntext\n```rust\nfn main() {}\n```\n```text\nout\n```\n";
    assert_eq!(block(md, "## Use", "rust"), "fn main() {}\n");
    assert_eq!(block(md, "## Use", "text"), "out\n");
    assert_eq!(below_header("//! a\n//! b\n\nuse x;\n"), "use x;\n");
}
