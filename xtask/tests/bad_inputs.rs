//! The bad-input corpus (`tests/bad/cases.toml`, issue 7): every case runs the built binary and
//! must fail the way the manifest says, in one line, naming the culprit, without a panic.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_owned()
}

struct Case {
    name: String,
    args: Vec<String>,
    status: i32,
    error: Option<String>,
    contains: Option<String>,
}

fn cases(root: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(root.join("tests/bad/cases.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let str_of =
        |case: &toml::Table, key: &str| case.get(key).map(|v| v.as_str().unwrap().to_owned());
    table["case"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = c.as_table().unwrap();
            for key in c.keys() {
                assert!(
                    ["name", "args", "status", "error", "contains"].contains(&key.as_str()),
                    "unknown key `{key}` in a case"
                );
            }
            Case {
                name: str_of(c, "name").unwrap(),
                args: c["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect(),
                status: c["status"].as_integer().unwrap() as i32,
                error: str_of(c, "error"),
                contains: str_of(c, "contains"),
            }
        })
        .collect()
}

/// What is wrong with one case's run, if anything.
fn check(root: &Path, case: &Case) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(&case.args)
        .current_dir(root)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut faults = Vec::new();
    if out.status.code() != Some(case.status) {
        faults.push(format!(
            "status {:?}, expected {}",
            out.status.code(),
            case.status
        ));
    }
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        faults.push("it panicked".to_owned());
    }
    if case.status == 1 && (stderr.lines().count() != 1 || !stderr.ends_with('\n')) {
        faults.push(format!(
            "{} lines on stderr, expected one",
            stderr.lines().count()
        ));
    }
    if let Some(error) = &case.error
        && stderr.trim_end_matches('\n') != error
    {
        faults.push(format!("expected `{error}`"));
    }
    if let Some(part) = &case.contains
        && !stderr.contains(part.as_str())
    {
        faults.push(format!("expected stderr to contain `{part}`"));
    }
    (!faults.is_empty()).then(|| {
        format!(
            "case `{}` (xtask {}): {}\n  stderr: {}",
            case.name,
            case.args.join(" "),
            faults.join("; "),
            stderr.trim_end()
        )
    })
}

#[test]
fn every_bad_input_fails_in_one_line_naming_the_culprit() {
    let root = workspace_root();
    let cases = cases(&root);
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut names = BTreeSet::new();
    for case in &cases {
        assert!(names.insert(&case.name), "case `{}` twice", case.name);
        assert!(
            [1, 2].contains(&case.status),
            "case `{}`: status {}",
            case.name,
            case.status
        );
        assert!(
            case.error.is_some() || case.contains.is_some(),
            "case `{}` expects no text",
            case.name
        );
        if case.status == 1 {
            assert!(
                case.error.is_some(),
                "case `{}`: status 1 needs `error`",
                case.name
            );
        }
    }
    // Two threads: the cases are independent processes.
    let (left, right) = cases.split_at(cases.len() / 2);
    let failures: Vec<String> = std::thread::scope(|s| {
        let a = s.spawn(|| {
            left.iter()
                .filter_map(|c| check(&root, c))
                .collect::<Vec<_>>()
        });
        let b = s.spawn(|| {
            right
                .iter()
                .filter_map(|c| check(&root, c))
                .collect::<Vec<_>>()
        });
        let mut f = a.join().unwrap();
        f.extend(b.join().unwrap());
        f
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_file_of_the_corpus_is_a_case() {
    let root = workspace_root();
    let used: BTreeSet<String> = cases(&root).into_iter().flat_map(|c| c.args).collect();
    let mut unused = Vec::new();
    for entry in std::fs::read_dir(root.join("tests/bad")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        // A folder holds a config.json with the side files beside it.
        let folder = format!("tests/bad/{name}/");
        if name != "cases.toml"
            && !used.contains(&format!("tests/bad/{name}"))
            && !used.iter().any(|a| a.starts_with(&folder))
        {
            unused.push(name);
        }
    }
    assert!(unused.is_empty(), "files no case runs: {unused:?}");
}

#[test]
fn the_corpus_covers_every_format_and_the_flags() {
    let cases = cases(&workspace_root());
    let count = |prefix: &str| cases.iter().filter(|c| c.name.starts_with(prefix)).count();
    assert_eq!(count("circuit-"), 33);
    assert_eq!(count("families-"), 12);
    assert_eq!(count("rules-"), 12);
    assert_eq!(count("hf-"), 15);
    assert_eq!(count("csv-"), 10);
    assert_eq!(count("flag-"), 35);
    assert_eq!(count("file-"), 7);
    assert_eq!(count("pack-"), 9);
    assert_eq!(count("bench-"), 2);
    assert_eq!(cases.len(), 135);
    let flags: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.args.iter())
        .filter(|a| a.starts_with("--"))
        .map(String::as_str)
        .collect();
    for flag in [
        "--circuit",
        "--hf-config",
        "--dtype",
        "--kv-cache-dtype",
        "--families",
        "--rules",
        "--device",
        "--sm-count",
        "--rows",
        "--set",
        "--kv-tokens",
        "--sequences",
        "--budget",
        "--align",
        "--format",
        "--svg",
        "--arena-svg",
        "--placeholders",
        "--minimize",
        "--time-limit",
        "--out",
    ] {
        assert!(flags.contains(flag), "no case uses {flag}");
    }
}
