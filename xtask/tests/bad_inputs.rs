//! The bad-input corpus (`tests/bad/cases.toml`, issue 7): every case runs the built binary and
//! must fail the way the manifest says, in one line, naming the culprit, without a panic.
//! The huge cases (issue 17: inputs that once blew up memory or time) are generated here, not
//! stored: a case's `generate` names one of [`GENERATORS`], written once under cargo's temporary
//! directory and substituted for `{generated}` in the case's arguments and expected text.

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
    generate: Option<String>,
    stdout: Option<String>,
}

/// A huge input: its file extension and its text.
type Generator = fn(&Path) -> (&'static str, String);

/// The generated inputs, by the name a case gives in `generate`. Each is the size at which the
/// issue saw a blow-up (or past it), so a quadratic or unbounded path fails the case.
const GENERATORS: &[(&str, Generator)] = &[
    // max(...) of 60,000 arguments: compiling stored the whole text at every step (60,000
    // aborted); the dim is still 4,096, so the plan is the example's.
    ("max-of-60000", |root| {
        let args = vec!["1"; 60_000].join(", ");
        (
            "toml",
            example_with(
                root,
                "hidden = 4096",
                &format!("hidden = \"max(4096, {args})\""),
            ),
        )
    }),
    // 100,000 nested parentheses: refused at the nesting limit, the expression elided.
    ("nested-100000", |root| {
        let (open, close) = ("(".repeat(100_000), ")".repeat(100_000));
        (
            "toml",
            example_with(
                root,
                "hidden = 4096",
                &format!("hidden = \"{open}4096{close}\""),
            ),
        )
    }),
    // A 400,000-byte unknown name: the message quotes it elided, not whole.
    ("long-name-400000", |root| {
        let name = "a".repeat(400_000);
        (
            "toml",
            example_with(
                root,
                "hidden = 4096",
                &format!("hidden = \"4096 + {name}\""),
            ),
        )
    }),
    // A 400,000-byte output edge that does not exist: the place and the message quote it
    // elided, so the message's length does not depend on the path.
    ("long-edge-name-400000", |root| {
        let name = "e".repeat(400_000);
        (
            "toml",
            example_with(
                root,
                "edge = \"head.logits\"",
                &format!("edge = \"{name}\""),
            ),
        )
    }),
    // A flat sum of 1,001 terms that overflows: an overflow, not "nested too deep".
    ("flat-sum-1001", |root| {
        let terms = vec!["18446744073709551"; 1_000].join(" + ");
        (
            "toml",
            example_with(
                root,
                "hidden = 4096",
                &format!("hidden = \"{terms} + 4096\""),
            ),
        )
    }),
    // Input rows that never grow monotonically: the fit scan's work is bounded and it says so.
    ("rows-mod-prime", |root| {
        (
            "toml",
            example_with(root, "rows = \"n\"", "rows = \"n % 1000000007 + 1\""),
        )
    }),
    // One node reading 100,000 edges (issue 34: the arena's live profiles were built per
    // step and buffer, quadratic: 31 s, 20,000 edges 3.5 s).
    ("fan-in-100000", |_| ("toml", fan_in(100_000))),
    // A 200-buffer arena the heuristics leave above its lower bound at most n, whose totals
    // barely move with n, under a budget nothing fits (issue 34: the fit scan ran 1,024 plans
    // of up to 20,000 search steps each, minutes; now the search steps are bounded too).
    ("fit-search-steps", |_| ("toml", fit_search_steps())),
    // 50,000 buffers live at once (the overlap graph of all pairs once took 10 GB).
    ("co-live-50000", |_| {
        let mut csv = String::from("id,lower,upper,size\n");
        for i in 0..50_000u64 {
            csv.push_str(&format!("{i},0,10,{}\n", (i % 97 + 1) * 64));
        }
        ("csv", csv)
    }),
];

/// The dims the example's families and rules read, all small.
const SMALL_DIMS: &str = "[dims]\nhidden = 8\nffn = 8\nheads = 1\nkv_heads = 1\nhead_dim = 8\nq_width = 8\nkv_width = 8\nlayers = 1\nvocab = 8\n";

/// `edges` copies of one input, all read by one `concat` node.
fn fan_in(edges: usize) -> String {
    let mut t = format!("schema = 1\nname = \"fan-in\"\n{SMALL_DIMS}");
    t.push_str("[[input]]\nid = \"tokens\"\nrows = \"n\"\nwidth = 8\nformat = \"bf16\"\n");
    t.push_str(&format!("[[block]]\nname = \"src\"\nrepeat = {edges}\n"));
    t.push_str("  [[block.node]]\n  id = \"c\"\n  op = \"copy\"\n  in = [\"tokens\"]\n");
    t.push_str("  out = [{ edge = \"e\", rows = \"n\", width = 8, format = \"bf16\" }]\n");
    t.push_str("[[block]]\nname = \"sink\"\n  [[block.node]]\n  id = \"all\"\n  op = \"concat\"\n");
    let inputs: Vec<String> = (0..edges).map(|i| format!("\"src.{i}.e\"")).collect();
    t.push_str(&format!("  in = [{}]\n", inputs.join(", ")));
    t.push_str("  out = [{ edge = \"y\", rows = \"n\", width = 8, format = \"bf16\" }]\n");
    t.push_str("[[output]]\nedge = \"sink.y\"\n");
    t
}

/// A chain of 200 nodes, each also reading the edge three back (and every third one eight
/// back), widths varying, rows alternating between growing and shrinking in n, behind a
/// 10 GiB weight: the heuristics leave the arena above its lower bound at most n.
fn fit_search_steps() -> String {
    let mut t = format!("schema = 1\nname = \"fit-search-steps\"\n{SMALL_DIMS}");
    t.push_str("[[input]]\nid = \"x0\"\nrows = \"n\"\nwidth = 64\nformat = \"bf16\"\n");
    t.push_str("[[block]]\nname = \"b\"\n  [[block.node]]\n  id = \"w\"\n  op = \"copy\"\n  in = [\"x0\"]\n");
    t.push_str("  out = [{ edge = \"x1\", rows = \"n\", width = 64, format = \"bf16\" }]\n");
    t.push_str("    [[block.node.weight]]\n    name = \"big\"\n    shape = [5368000000]\n    format = \"bf16\"\n");
    for i in 2..=200u64 {
        let mut inputs = vec![format!("\"x{}\"", i - 1)];
        if i >= 4 {
            inputs.push(format!("\"x{}\"", i - 3));
        }
        if i >= 9 && i % 3 == 0 {
            inputs.push(format!("\"x{}\"", i - 8));
        }
        let width = ((i * 37) % 13 + 1) * 64;
        let rows = if i % 2 == 1 {
            "n"
        } else {
            "max(1, 16384 - n) + n / 8"
        };
        let op = if inputs.len() > 1 { "concat" } else { "copy" };
        t.push_str(&format!(
            "  [[block.node]]\n  id = \"n{i}\"\n  op = \"{op}\"\n  in = [{}]\n  out = [{{ edge = \"x{i}\", rows = \"{rows}\", width = {width}, format = \"bf16\" }}]\n",
            inputs.join(", ")
        ));
    }
    t.push_str("[[output]]\nedge = \"b.x200\"\n");
    t
}

/// The example circuit with its first `from` replaced by `to`.
fn example_with(root: &Path, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(root.join("examples/llama-3.1-8b/circuit.toml")).unwrap();
    assert!(text.contains(from), "the example holds no `{from}`");
    text.replacen(from, to, 1)
}

/// Writes the case's generated input (once) and puts its path for `{generated}` everywhere.
fn instantiate(root: &Path, mut case: Case) -> Case {
    let Some(name) = &case.generate else {
        return case;
    };
    let generator = GENERATORS
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("case `{}`: no generator `{name}`", case.name))
        .1;
    let (extension, text) = generator(root);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-generated");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.{extension}"));
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    let put = |s: &String| s.replace("{generated}", path);
    case.args = case.args.iter().map(put).collect();
    case.error = case.error.as_ref().map(put);
    case.contains = case.contains.as_ref().map(put);
    case
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
                    [
                        "name", "args", "status", "error", "contains", "generate", "stdout"
                    ]
                    .contains(&key.as_str()),
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
                generate: str_of(c, "generate"),
                stdout: str_of(c, "stdout"),
            }
        })
        .map(|case| instantiate(root, case))
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
    if let Some(part) = &case.stdout
        && !String::from_utf8_lossy(&out.stdout).contains(part.as_str())
    {
        faults.push(format!("expected stdout to contain `{part}`"));
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
        // A huge input may be one the tool must handle (status 0, checked by its output).
        let statuses: &[i32] = if case.generate.is_some() {
            &[0, 1]
        } else {
            &[1, 2]
        };
        assert!(
            statuses.contains(&case.status),
            "case `{}`: status {}",
            case.name,
            case.status
        );
        assert!(
            case.error.is_some() || case.contains.is_some() || case.stdout.is_some(),
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
    assert_eq!(count("circuit-"), 34);
    assert_eq!(count("families-"), 14);
    assert_eq!(count("rules-"), 12);
    assert_eq!(count("hf-"), 24);
    assert_eq!(count("csv-"), 10);
    assert_eq!(count("flag-"), 45);
    assert_eq!(count("file-"), 10);
    assert_eq!(count("pack-"), 10);
    assert_eq!(count("bench-"), 2);
    assert_eq!(count("huge-"), 9);
    assert_eq!(count("engine-"), 6);
    assert_eq!(cases.len(), 176);
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
        "--limit-mm-per-prompt",
        "--block-size",
        "--max-num-batched-tokens",
        "--max-model-len",
        "--capacity",
    ] {
        assert!(flags.contains(flag), "no case uses {flag}");
    }
}
