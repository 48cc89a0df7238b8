//! The CLI's outputs as golden files under `tests/golden/`, compared with a diff: a change to
//! any number, column or key shows as the lines it changes. After a deliberate change,
//! `UPDATE_EXPECT=1 cargo test -p xtask --test golden` rewrites them; review the diff.

use std::process::Command;

use expect_test::expect_file;

fn plan(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("plan")
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("the xtask binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("UTF-8 output")
}

/// Serving on a tight budget: the fit lands inside the range, so the verdict names the term.
const SERVING: [&str; 8] = [
    "--kv-tokens",
    "131072",
    "--sequences",
    "16",
    "--budget",
    "32GiB",
    "--max-model-len",
    "8192",
];

#[test]
fn the_table() {
    expect_file!["golden/serving.txt"].assert_eq(&plan(&SERVING));
}

#[test]
fn the_json() {
    let args = [
        "--rows",
        "1,4096",
        "--kv-tokens",
        "1000",
        "--format",
        "json",
    ];
    expect_file!["golden/two-rows.json"].assert_eq(&plan(&args));
}

#[test]
fn the_json_lines() {
    let mut args = SERVING.to_vec();
    args.extend(["--rows", "1..=4096:x8", "--format", "jsonl"]);
    expect_file!["golden/serving.jsonl"].assert_eq(&plan(&args));
}

#[test]
fn the_csv() {
    let mut args = SERVING.to_vec();
    args.extend(["--rows", "1..=4096:x8", "--format", "csv"]);
    expect_file!["golden/serving.csv"].assert_eq(&plan(&args));
}
