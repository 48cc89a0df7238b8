//! The tidy test: the repository keeps what docs/ARCHITECTURE.md says of it, checked on every
//! `cargo test` by reading the repository's own files (rust-analyzer's tidy works the same way).
//!
//! Rules, one test each (docs/testing.md, "The tidy test"):
//! - every Rust file opens with a `//!` block saying what it owns; a library module's block
//!   (under `crates/*/src`) states its invariants;
//! - library code reads no file, environment or clock and prints nothing;
//! - each crate depends only on the workspace crates its row of ARCHITECTURE's dependency
//!   table allows, and the table lists exactly the crates there are;
//! - an engine's name (`vllm`, `sglang`) is in code only where ARCHITECTURE lets it be;
//! - every repository path a doc names exists;
//! - no doc or comment cites a document the repository does not hold.
//!
//! Invariants: it reads only files under the repository root (`CARGO_MANIFEST_DIR/..`), once,
//! shared by the tests; Rust is split into code, strings and comments by a small lexer, so a
//! rule on code never fires on a comment and a rule on comments never on code; every failure
//! names the file and line and says what to change.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The engines whose names are confined; lower case (matched case-insensitively).
const ENGINES: &[&str] = &["vllm", "sglang"];

/// Engine names where they may not be, tolerated while a restructuring pays them off: (file,
/// occurrences). The test fails when a file has more (a new one) and when it has fewer (lower
/// the entry as the debt is paid). Empty since issue 28 moved engine knowledge to its homes.
const ENGINE_NAME_DEBT: &[(&str, usize)] = &[];

/// Paths the docs name that exist only once a tool has run: they are created on demand and
/// ignored by git or written on a failure.
const GENERATED: &[(&str, &str)] = &[
    (
        "tests/tests/properties.proptest-regressions",
        "proptest writes it when a property fails",
    ),
    (
        "fuzz/work/",
        "libFuzzer's generated corpus (fuzz/.gitignore)",
    ),
    ("fuzz/artifacts/", "libFuzzer's crashes (fuzz/.gitignore)"),
    (
        "fuzz/coverage/",
        "cargo fuzz coverage output (fuzz/.gitignore)",
    ),
    ("fuzz/logs/", "fuzzing logs (fuzz/.gitignore)"),
];

/// Top-level folders (and files) scanned; everything else (target/, .git/) is not ours.
const SCANNED: &[&str] = &[
    "README.md",
    "crates",
    "xtask",
    "tests",
    "engines",
    "examples",
    "fuzz",
    "docs",
    "data",
    ".ci",
];

/// Folders never scanned: build output and what fuzzing generates.
const SKIPPED: &[&str] = &[
    "target",
    "fuzz/corpus",
    "fuzz/work",
    "fuzz/artifacts",
    "fuzz/coverage",
    "fuzz/logs",
];

/// The prefixes of a repository path in prose.
const PATH_PREFIXES: &[&str] = &[
    "crates/",
    "engines/",
    "docs/",
    "data/",
    "examples/",
    "xtask/",
    "tests/",
    "fuzz/",
    ".ci/",
];

struct File {
    /// Path from the repository root, `/`-separated.
    rel: String,
    text: String,
}

struct Repo {
    root: PathBuf,
    rust: Vec<(File, Vec<Token>)>,
    markdown: Vec<File>,
    toml: Vec<File>,
}

fn repo() -> &'static Repo {
    static REPO: OnceLock<Repo> = OnceLock::new();
    REPO.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tests/ has a parent")
            .to_path_buf();
        let mut paths = Vec::new();
        for top in SCANNED {
            walk(&root, &root.join(top), &mut paths);
        }
        paths.sort();
        let mut repo = Repo {
            root: root.clone(),
            rust: Vec::new(),
            markdown: Vec::new(),
            toml: Vec::new(),
        };
        for rel in paths {
            // Lossy: the bad-input corpus holds a file that is not UTF-8 on purpose.
            let read = |rel: String| File {
                text: String::from_utf8_lossy(
                    &fs::read(root.join(&rel))
                        .unwrap_or_else(|e| panic!("{rel}: cannot read: {e}")),
                )
                .into_owned(),
                rel,
            };
            if rel.ends_with(".rs") {
                let file = read(rel);
                let tokens = lex(&file.text);
                repo.rust.push((file, tokens));
            } else if rel.ends_with(".md") {
                repo.markdown.push(read(rel));
            } else if rel.ends_with(".toml") {
                repo.toml.push(read(rel));
            }
        }
        repo
    })
}

fn walk(root: &Path, path: &Path, out: &mut Vec<String>) {
    let rel = relative(root, path);
    if SKIPPED
        .iter()
        .any(|s| rel == *s || rel.ends_with(&format!("/{s}")))
    {
        return;
    }
    if path.is_dir() {
        let entries = fs::read_dir(path).unwrap_or_else(|e| panic!("{rel}: cannot list: {e}"));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("{rel}: cannot list: {e}"));
            walk(root, &entry.path(), out);
        }
    } else if path.is_file() {
        out.push(rel);
    }
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Fails with every finding, one per line.
fn report(rule: &str, findings: Vec<String>) {
    assert!(
        findings.is_empty(),
        "{rule}: {} finding(s):\n{}",
        findings.len(),
        findings.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// A Rust lexer just fine enough to tell code, strings and comments apart.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Ident,
    /// A string literal's contents (escapes left as written).
    Str,
    /// A comment's text without its markers; `doc` for `///`, `//!`, `/**`, `/*!`.
    Comment {
        doc: bool,
    },
    /// One punctuation character, or `::`.
    Punct,
    /// Numbers, character literals, lifetimes.
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
    /// 1-based line of the token's first character.
    line: usize,
}

fn lex(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let ident_start = |c: char| c == '_' || c.is_alphabetic();
    let ident_char = |c: char| c == '_' || c.is_alphanumeric();
    while i < chars.len() {
        let c = chars[i];
        let start_line = line;
        let mut push = |kind: Kind, text: String| {
            tokens.push(Token {
                kind,
                text,
                line: start_line,
            })
        };
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |p| i + p);
            let text: String = chars[i..end].iter().collect();
            let doc =
                (text.starts_with("///") && !text.starts_with("////")) || text.starts_with("//!");
            push(Kind::Comment { doc }, text);
            i = end;
        } else if c == '/' && at(i + 1) == '*' {
            let doc = (at(i + 2) == '*' && at(i + 3) != '/') || at(i + 2) == '!';
            let mut depth = 0;
            let begin = i;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            let text: String = chars[begin..i].iter().collect();
            tokens.push(Token {
                kind: Kind::Comment { doc },
                text,
                line: start_line,
            });
        } else if c == '"' {
            let (text, next, lines) = quoted(&chars, i + 1);
            push(Kind::Str, text);
            line += lines;
            i = next;
        } else if ident_start(c) {
            let mut end = i;
            while end < chars.len() && ident_char(chars[end]) {
                end += 1;
            }
            let word: String = chars[i..end].iter().collect();
            let prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if matches!(word.as_str(), "b" | "c") && at(end) == '"' {
                let (text, next, lines) = quoted(&chars, end + 1);
                push(Kind::Str, text);
                line += lines;
                i = next;
            } else if matches!(word.as_str(), "b") && at(end) == '\'' {
                let (next, lines) = char_literal(&chars, end);
                push(Kind::Other, String::new());
                line += lines;
                i = next;
            } else if prefix
                && (at(end) == '"' || (at(end) == '#' && raw_string_ahead(&chars, end)))
            {
                let mut hashes = 0;
                let mut j = end;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                // j is at the opening quote.
                let body = j + 1;
                let mut k = body;
                loop {
                    if k >= chars.len() {
                        break;
                    }
                    if chars[k] == '"' && (0..hashes).all(|h| at(k + 1 + h) == '#') {
                        break;
                    }
                    k += 1;
                }
                let text: String = chars[body..k.min(chars.len())].iter().collect();
                line += text.matches('\n').count();
                push(Kind::Str, text);
                i = (k + 1 + hashes).min(chars.len());
            } else if word == "r" && at(end) == '#' && ident_start(at(end + 1)) {
                // A raw identifier, `r#type`.
                let mut e = end + 1;
                while e < chars.len() && ident_char(chars[e]) {
                    e += 1;
                }
                push(Kind::Ident, chars[end + 1..e].iter().collect());
                i = e;
            } else {
                push(Kind::Ident, word);
                i = end;
            }
        } else if c.is_ascii_digit() {
            let mut end = i;
            while end < chars.len() && (ident_char(chars[end]) || chars[end] == '.') {
                // `1..n` is a range, not a number: stop before `..`.
                if chars[end] == '.' && at(end + 1) == '.' {
                    break;
                }
                end += 1;
            }
            push(Kind::Other, chars[i..end].iter().collect());
            i = end;
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' || (at(i + 2) == '\'' && at(i + 1) != '\'') {
                let (next, lines) = char_literal(&chars, i);
                push(Kind::Other, String::new());
                line += lines;
                i = next;
            } else {
                let mut end = i + 1;
                while end < chars.len() && ident_char(chars[end]) {
                    end += 1;
                }
                push(Kind::Other, chars[i..end].iter().collect());
                i = end;
            }
        } else if c == ':' && at(i + 1) == ':' {
            push(Kind::Punct, "::".to_owned());
            i += 2;
        } else {
            push(Kind::Punct, c.to_string());
            i += 1;
        }
    }
    tokens
}

/// `#...#"` follows: a raw string, not a raw identifier.
fn raw_string_ahead(chars: &[char], mut i: usize) -> bool {
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    chars.get(i) == Some(&'"')
}

/// A string body from `i` (after the opening quote): (contents, index after the closing
/// quote, newlines inside).
fn quoted(chars: &[char], mut i: usize) -> (String, usize, usize) {
    let begin = i;
    let mut lines = 0;
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            if chars.get(i + 1) == Some(&'\n') {
                lines += 1;
            }
            i += 2;
            continue;
        }
        if chars[i] == '\n' {
            lines += 1;
        }
        i += 1;
    }
    let end = i.min(chars.len());
    (chars[begin..end].iter().collect(), end + 1, lines)
}

/// A character literal from its opening quote: (index after it, newlines inside).
fn char_literal(chars: &[char], i: usize) -> (usize, usize) {
    let mut j = i + 1;
    while j < chars.len() && chars[j] != '\'' {
        j += if chars[j] == '\\' { 2 } else { 1 };
    }
    (j + 1, 0)
}

#[test]
fn the_lexer_tells_code_strings_and_comments_apart() {
    let src = "//! Module doc\nfn f<'a>(x: &'a str) -> char { // vllm here\n    \
               let s = \"a \\\" vllm\"; let r = r#\"raw \"q\" sglang\"#;\n    \
               /* block /* nested */ */ let c = '\\''; let d = 'x'; b'y'; std::fs::read(s) }\n";
    let tokens = lex(src);
    let of = |kind: Kind| -> Vec<(String, usize)> {
        tokens
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| (t.text.clone(), t.line))
            .collect()
    };
    assert_eq!(
        of(Kind::Comment { doc: true }),
        [("//! Module doc".to_owned(), 1)]
    );
    assert_eq!(
        of(Kind::Comment { doc: false }),
        [
            ("// vllm here".to_owned(), 2),
            ("/* block /* nested */ */".to_owned(), 4)
        ]
    );
    assert_eq!(
        of(Kind::Str),
        [
            ("a \\\" vllm".to_owned(), 3),
            ("raw \"q\" sglang".to_owned(), 3)
        ]
    );
    let idents: Vec<String> = of(Kind::Ident).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        idents,
        [
            "fn", "f", "x", "str", "char", "let", "s", "let", "r", "let", "c", "let", "d", "std",
            "fs", "read", "s"
        ]
    );
    assert!(
        tokens
            .iter()
            .any(|t| t.kind == Kind::Punct && t.text == "::")
    );
}

// ---------------------------------------------------------------------------------------------
// a. Module headers.

/// The leading `//!` block of a file, or None when the file does not open with one.
fn header(text: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty()).peekable();
    if !lines.peek()?.trim_start().starts_with("//!") {
        return None;
    }
    Some(
        lines
            .take_while(|l| l.trim_start().starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// `crates/<name>/src/...`: library code.
fn is_library(rel: &str) -> bool {
    let mut parts = rel.split('/');
    parts.next() == Some("crates") && parts.next().is_some() && parts.next() == Some("src")
}

#[test]
fn every_source_file_opens_with_its_owner_and_invariants() {
    let mut findings = Vec::new();
    for (file, _) in &repo().rust {
        match header(&file.text) {
            None => findings.push(format!(
                "{}:1: does not open with a `//!` block saying what the file owns",
                file.rel
            )),
            Some(block) if is_library(&file.rel) && !block.contains("Invariant") => {
                findings.push(format!(
                    "{}:1: its `//!` block states no invariant (a library module says what \
                     holds of it, on a line with `Invariant`)",
                    file.rel
                ))
            }
            Some(_) => {}
        }
    }
    report("module headers", findings);
}

// ---------------------------------------------------------------------------------------------
// b. No I/O in library code.

/// What library code may not name, and why.
fn io_finding(tokens: &[Token], i: usize) -> Option<&'static str> {
    let t = &tokens[i];
    if t.kind != Kind::Ident {
        return None;
    }
    let next = |k: usize| tokens.get(i + k).map(|t| t.text.as_str());
    match t.text.as_str() {
        "Instant" | "SystemTime" => Some("reads a clock"),
        "stdin" | "stdout" | "stderr" => Some("uses the terminal"),
        "println" | "print" | "eprintln" | "eprint" | "dbg" if next(1) == Some("!") => {
            Some("prints")
        }
        "std" if next(1) == Some("::") => {
            let banned = |name: &str| matches!(name, "fs" | "env");
            match next(2) {
                Some(name) if banned(name) => Some("reads files or the environment"),
                Some("{") => {
                    // `std::{fs, env, ...}`: the names at the group's top level.
                    let mut depth = 0;
                    for t in &tokens[i + 2..] {
                        match t.text.as_str() {
                            "{" => depth += 1,
                            "}" => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            name if depth == 1 && t.kind == Kind::Ident && banned(name) => {
                                return Some("reads files or the environment");
                            }
                            _ => {}
                        }
                    }
                    None
                }
                _ => None,
            }
        }
        _ => None,
    }
}

#[test]
fn library_code_reads_no_file_environment_or_clock_and_prints_nothing() {
    let mut findings = Vec::new();
    for (file, tokens) in &repo().rust {
        if !is_library(&file.rel) {
            continue;
        }
        let code: Vec<Token> = tokens
            .iter()
            .filter(|t| !matches!(t.kind, Kind::Comment { .. }))
            .cloned()
            .collect();
        for i in 0..code.len() {
            if let Some(why) = io_finding(&code, i) {
                findings.push(format!(
                    "{}:{}: `{}` {why}; only xtask does I/O (docs/ARCHITECTURE.md)",
                    file.rel, code[i].line, code[i].text
                ));
            }
        }
    }
    report("I/O in library code", findings);
}

#[test]
fn the_io_rule_sees_code_and_only_code() {
    let findings = |src: &str| -> Vec<&'static str> {
        let code: Vec<Token> = lex(src)
            .into_iter()
            .filter(|t| !matches!(t.kind, Kind::Comment { .. }))
            .collect();
        (0..code.len())
            .filter_map(|i| io_finding(&code, i))
            .collect()
    };
    assert_eq!(
        findings("use std::{collections::HashMap, env}; fn f() { std::fs::read(\"x\"); }"),
        [
            "reads files or the environment",
            "reads files or the environment"
        ]
    );
    assert_eq!(
        findings("fn f() { println!(\"{}\", Instant::now()); io::stderr(); }"),
        ["prints", "reads a clock", "uses the terminal"]
    );
    assert!(
        findings("// std::fs::read and println!\nfn f() { \"std::env\"; print(); }").is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// c. Dependencies as ARCHITECTURE allows them.

/// One row of ARCHITECTURE's dependency table.
struct Row {
    krate: String,
    folder: String,
    allowed: BTreeSet<String>,
    line: usize,
}

const ARCHITECTURE: &str = "docs/ARCHITECTURE.md";
const TABLE_HEADING: &str = "## Who may depend on whom";

fn dependency_table(doc: &str) -> Result<Vec<Row>, String> {
    let mut lines = doc.lines().enumerate();
    lines
        .find(|(_, l)| l.trim() == TABLE_HEADING)
        .ok_or_else(|| format!("{ARCHITECTURE}: no `{TABLE_HEADING}` section"))?;
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut rows = Vec::new();
    for (n, l) in lines {
        if l.starts_with("## ") {
            break;
        }
        let cells: Vec<&str> = l.trim().split('|').map(str::trim).collect();
        // `| crate | folder | may depend on |` rows; the header and rule have no backticks.
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let (krate, folder) = match (&ticked(cells[1])[..], &ticked(cells[2])[..]) {
            ([k], [f]) => (k.clone(), f.clone()),
            _ => {
                return Err(format!(
                    "{ARCHITECTURE}:{}: a row names one `crate` and one `folder`",
                    n + 1
                ));
            }
        };
        rows.push(Row {
            krate,
            folder,
            allowed: ticked(cells[3]).into_iter().collect(),
            line: n + 1,
        });
    }
    if rows.is_empty() {
        return Err(format!("{ARCHITECTURE}: `{TABLE_HEADING}` has no rows"));
    }
    Ok(rows)
}

fn read_toml(root: &Path, rel: &str) -> Result<toml::Table, String> {
    let text = fs::read_to_string(root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    toml::from_str::<toml::Table>(&text)
        .map_err(|e| format!("{rel}: {}", e.to_string().replace('\n', " ")))
}

fn package_name(manifest: &toml::Table) -> Option<String> {
    manifest
        .get("package")?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

/// The crates a manifest's `[dependencies]` and `[build-dependencies]` name (a renamed
/// dependency by its `package`).
fn dependencies(manifest: &toml::Table) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for section in ["dependencies", "build-dependencies"] {
        let Some(table) = manifest.get(section).and_then(|t| t.as_table()) else {
            continue;
        };
        for (key, value) in table {
            let package = value.get("package").and_then(|p| p.as_str());
            names.insert(package.unwrap_or(key).to_owned());
        }
    }
    names
}

#[test]
fn each_crate_depends_only_on_what_architecture_allows() {
    let repo = repo();
    let doc = fs::read_to_string(repo.root.join(ARCHITECTURE)).expect("docs/ARCHITECTURE.md");
    let rows = dependency_table(&doc).unwrap_or_else(|e| panic!("{e}"));
    let workspace = read_toml(&repo.root, "Cargo.toml").unwrap_or_else(|e| panic!("{e}"));
    let members: Vec<String> = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace.members")
        .iter()
        .map(|m| m.as_str().expect("a member is a path").to_owned())
        .collect();
    let mut findings = Vec::new();
    // The workspace's crates by name, with their manifests.
    let mut crates: BTreeMap<String, (String, toml::Table)> = BTreeMap::new();
    for folder in &members {
        let rel = format!("{folder}/Cargo.toml");
        match read_toml(&repo.root, &rel) {
            Ok(manifest) => match package_name(&manifest) {
                Some(name) => {
                    crates.insert(name, (folder.clone(), manifest));
                }
                None => findings.push(format!("{rel}: no [package] name")),
            },
            Err(e) => findings.push(e),
        }
    }
    let listed: BTreeSet<&str> = rows.iter().map(|r| r.krate.as_str()).collect();
    for (name, (folder, _)) in &crates {
        if !listed.contains(name.as_str()) {
            findings.push(format!(
                "{ARCHITECTURE}: crate `{name}` (`{folder}`) is in the workspace but has no row \
                 in `{TABLE_HEADING}`: add `| `{name}` | `{folder}` | <the crates it may use> |`"
            ));
        }
    }
    for row in &rows {
        let at = format!("{ARCHITECTURE}:{}", row.line);
        for allowed in &row.allowed {
            if !listed.contains(allowed.as_str()) {
                findings.push(format!(
                    "{at}: `{}` may depend on `{allowed}`, which has no row of its own",
                    row.krate
                ));
            }
        }
        let Some((folder, manifest)) = crates.get(&row.krate) else {
            let manifest = format!("{}/Cargo.toml", row.folder);
            findings.push(if repo.root.join(&manifest).is_file() {
                format!(
                    "{at}: crate `{}` at `{}` is not a workspace member: add `{}` to the root \
                     Cargo.toml's members, or remove the row",
                    row.krate, row.folder, row.folder
                )
            } else {
                format!(
                    "{at}: crate `{}` at `{}` does not exist (no {manifest}): add the crate, or \
                     remove the row",
                    row.krate, row.folder
                )
            });
            continue;
        };
        if *folder != row.folder {
            findings.push(format!(
                "{at}: crate `{}` is at `{folder}`, not `{}`",
                row.krate, row.folder
            ));
        }
        for dep in dependencies(manifest) {
            if crates.contains_key(&dep) && !row.allowed.contains(&dep) {
                findings.push(format!(
                    "{folder}/Cargo.toml: `{}` depends on `{dep}`, which its row ({at}) does not \
                     allow: drop the dependency, or change the architecture and its table",
                    row.krate
                ));
            }
        }
    }
    report("dependencies", findings);
}

// ---------------------------------------------------------------------------------------------
// d. Engine names only where engines are known.

/// Whether `rel` may name `engine` in its code.
fn may_name(rel: &str, engine: &str) -> bool {
    ["engines/", "xtask/", "docs/"]
        .iter()
        .any(|p| rel.starts_with(p))
        // This test, which holds the rule and tries it on engine names.
        || rel == "tests/tests/tidy.rs"
        // The registry mapping an engine file's mechanism names to engine-named modules.
        || rel == "crates/engine-profile/src/mechanisms.rs"
        || rel.starts_with(&format!("crates/engine-profile/src/{engine}/"))
        || rel == format!("crates/engine-profile/src/{engine}.rs")
}

/// (line, what) of every engine name in `file`'s code (identifiers, strings, its path) where
/// it may not be.
fn engine_names(rel: &str, tokens: &[Token]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for engine in ENGINES.iter().filter(|e| !may_name(rel, e)) {
        if rel.to_lowercase().contains(engine) {
            found.push((0, format!("its path names `{engine}`")));
        }
        for t in tokens {
            if matches!(t.kind, Kind::Ident | Kind::Str) && t.text.to_lowercase().contains(engine) {
                let what = if t.kind == Kind::Ident {
                    format!("identifier `{}`", t.text)
                } else {
                    let first = t.text.lines().next().unwrap_or("");
                    let shown: String = first.chars().take(60).collect();
                    let more = if shown.len() < t.text.len() {
                        "..."
                    } else {
                        ""
                    };
                    format!("string \"{shown}{more}\" names `{engine}`")
                };
                found.push((t.line, what));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn engine_names_only_where_engines_are_known() {
    let debt: BTreeMap<&str, usize> = ENGINE_NAME_DEBT.iter().copied().collect();
    let mut findings = Vec::new();
    let mut seen = BTreeSet::new();
    for (file, tokens) in &repo().rust {
        let found = engine_names(&file.rel, tokens);
        let allowed = debt.get(file.rel.as_str()).copied().unwrap_or(0);
        if found.len() > allowed {
            let mut finding = format!(
                "{}: {} engine name(s) in code where no engine may be named (allowed as debt: \
                 {allowed}); engines are data (engines/) or live in crates/engine-profile/src/<engine>/:",
                file.rel,
                found.len()
            );
            for (line, what) in &found {
                finding.push_str(&format!("\n  {}:{line}: {what}", file.rel));
            }
            findings.push(finding);
        } else if found.len() < allowed {
            findings.push(format!(
                "{}: {} engine name(s), fewer than the {allowed} of ENGINE_NAME_DEBT: lower its \
                 entry to {} (remove it at 0)",
                file.rel,
                found.len(),
                found.len()
            ));
        }
        seen.insert(file.rel.as_str());
    }
    for rel in debt.keys().filter(|r| !seen.contains(*r)) {
        findings.push(format!(
            "{rel}: in ENGINE_NAME_DEBT but no such Rust file: remove its entry"
        ));
    }
    report("engine names", findings);
}

#[test]
fn the_engine_rule_reads_code_not_comments() {
    let src = "// as vLLM's worker.py does\nstruct VllmLoaded; const E: &str = \"SGLang\";\n";
    assert_eq!(
        engine_names("crates/circuit-hf/src/x.rs", &lex(src)),
        [
            (2, "identifier `VllmLoaded`".to_owned()),
            (2, "string \"SGLang\" names `sglang`".to_owned())
        ]
    );
    assert_eq!(
        engine_names("crates/circuit-hf/src/vllm_x.rs", &lex(""))[0],
        (0, "its path names `vllm`".to_owned())
    );
    assert!(
        engine_names(
            "crates/engine-profile/src/vllm/load.rs",
            &lex("struct Vllm;")
        )
        .is_empty()
    );
    assert!(engine_names("crates/engine-profile/src/vllm/load.rs", &lex("\"sglang\"")).len() == 1);
    assert!(engine_names("xtask/src/engine.rs", &lex(src)).is_empty());
}

// ---------------------------------------------------------------------------------------------
// e. Paths a doc names exist.

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '<' | '>' | '{' | '}' | '*')
}

/// Repository paths in `text`: runs starting with a known prefix, not inside a longer path or
/// a URL, without trailing punctuation; placeholders (`<name>`, `{i}`, `*`, `...`) skipped.
fn named_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let before = if i == 0 { ' ' } else { bytes[i - 1] };
        let rest: String = bytes[i..bytes.len().min(i + 12)].iter().collect();
        let starts = PATH_PREFIXES.iter().any(|p| rest.starts_with(p));
        if !starts || path_char(before) || before == ':' {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < bytes.len() && path_char(bytes[end]) {
            end += 1;
        }
        let run: String = bytes[i..end].iter().collect();
        i = end;
        let path = run.trim_end_matches(['.', ',', ':', ';']);
        if path.contains(['<', '>', '{', '}', '*']) || run.contains("...") {
            continue;
        }
        paths.push(path.to_owned());
    }
    paths
}

/// Markdown link targets (`](target)`) that are not URLs or anchors.
fn link_targets(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// The nearest folder above `rel` holding a Cargo.toml: a comment in a crate may name the
/// crate's own files from its folder.
fn package_dir(root: &Path, rel: &str) -> Option<String> {
    let mut dir = Path::new(rel).parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() {
            return None;
        }
        if root.join(d).join("Cargo.toml").is_file() {
            return Some(relative(Path::new(""), d));
        }
        dir = d.parent();
    }
    None
}

#[test]
fn every_path_a_doc_names_exists() {
    let repo = repo();
    let root = &repo.root;
    let generated = |p: &str| {
        GENERATED
            .iter()
            .any(|(g, _)| p == *g || p.starts_with(g) || format!("{p}/") == *g)
    };
    let mut findings = Vec::new();
    let mut check = |rel: &str, line: usize, path: &str, bases: &[String]| {
        if generated(path) {
            return;
        }
        if !bases.iter().any(|b| root.join(b).join(path).exists()) {
            findings.push(format!(
                "{rel}:{line}: names `{path}`, which does not exist"
            ));
        }
    };
    for file in &repo.markdown {
        let dir = relative(Path::new(""), Path::new(&file.rel).parent().unwrap());
        for (n, l) in file.text.lines().enumerate() {
            for path in named_paths(l) {
                check(&file.rel, n + 1, &path, &[String::new()]);
            }
            for target in link_targets(l) {
                check(&file.rel, n + 1, &target, std::slice::from_ref(&dir));
            }
        }
    }
    for (file, tokens) in &repo.rust {
        let mut bases = vec![String::new()];
        bases.extend(package_dir(root, &file.rel));
        for t in tokens
            .iter()
            .filter(|t| t.kind == Kind::Comment { doc: true })
        {
            for (k, l) in t.text.lines().enumerate() {
                for path in named_paths(l) {
                    check(&file.rel, t.line + k, &path, &bases);
                }
            }
        }
    }
    report("paths named in docs", findings);
}

#[test]
fn paths_are_found_in_prose() {
    assert_eq!(
        named_paths(
            "see `crates/fuser/src/lib.rs`, docs/memory.md. Not ../tests/x or \
             https://h/crates/y, skip engines/<name>/engine.toml and crates/... (tests/a.rs)"
        ),
        ["crates/fuser/src/lib.rs", "docs/memory.md", "tests/a.rs"]
    );
    assert_eq!(
        link_targets("[a](formats.md), [b](https://x/y), [c](#anchor), [d](../x.md#s)"),
        ["formats.md", "../x.md"]
    );
}

// ---------------------------------------------------------------------------------------------
// f. No citation of documents the repository does not hold.

/// What a citation of an absent document looks like, and what it names.
fn absent_citations(line: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    let words = line.split(|c: char| !c.is_ascii_alphanumeric() && c != '_');
    if words.into_iter().any(|w| w == "SPEC") {
        found.push("the original contract (docs/ holds the current one)");
    }
    for (needle, what) in [
        ("seed/", "the seed sources (docs/ states their semantics)"),
        ("../shared", "the shared folder outside the repository"),
    ] {
        if line.contains(needle) {
            found.push(what);
        }
    }
    let shared = line.match_indices("shared/").any(|(i, _)| {
        let before = line[..i].chars().next_back().unwrap_or(' ');
        !path_char(before)
    });
    if shared && !line.contains("../shared") {
        found.push("the shared folder outside the repository");
    }
    found
}

#[test]
fn no_citation_of_documents_the_repository_does_not_hold() {
    let repo = repo();
    let mut findings = Vec::new();
    let mut scan = |rel: &str, first: usize, text: &str| {
        for (k, l) in text.lines().enumerate() {
            for what in absent_citations(l) {
                findings.push(format!(
                    "{rel}:{}: cites {what}, which the repository does not hold: cite the docs/ \
                     file that states it",
                    first + k
                ));
            }
        }
    };
    for file in repo.markdown.iter().chain(&repo.toml) {
        scan(&file.rel, 1, &file.text);
    }
    for (file, tokens) in &repo.rust {
        for t in tokens
            .iter()
            .filter(|t| matches!(t.kind, Kind::Comment { .. }))
        {
            scan(&file.rel, t.line, &t.text);
        }
    }
    report("citations", findings);
}

#[test]
fn citations_are_recognised() {
    assert_eq!(absent_citations("(SPEC section 6)").len(), 1);
    assert_eq!(absent_citations("SPECIAL damages, a spec").len(), 0);
    assert_eq!(absent_citations("exactly `seed/workspace.rs`").len(), 1);
    assert_eq!(absent_citations("in shared/data/models").len(), 1);
    assert_eq!(absent_citations("see ../shared/SPEC.md").len(), 2);
    assert_eq!(
        absent_citations("an Arc<str> shared between threads").len(),
        0
    );
}
