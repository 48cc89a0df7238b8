//! Embeds every engine folder beside this manifest (`<engine>-<version>/` holding an
//! `engine.toml`, and its own `families.toml` and `rules.toml` unless it extends a folder that
//! has them, and optionally `serve_flags.toml` and `log.toml`, the engine's command line and
//! start-up log): a new release is a folder, with no code to change. Writes `folders.rs` into
//! OUT_DIR, one `Folder` per folder in name order.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

fn main() {
    let root = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&root);
    println!("cargo::rerun-if-changed={}", root.display());
    let mut names: Vec<String> = fs::read_dir(root)
        .expect("the engines folder is readable")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("engine.toml").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut out = String::from(
        "/// Every engine folder, in name order.\npub(crate) const FOLDERS: &[Folder] = &[\n",
    );
    for name in &names {
        let dir = root.join(name);
        println!("cargo::rerun-if-changed={}", dir.display());
        let file = |f: &str| {
            let path = dir.join(f);
            // A missing optional file is not watched: cargo takes a watched path that does not
            // exist as changed and would rerun this script on every build; one added later is
            // seen through the folder, which cargo scans whole.
            if path.is_file() {
                println!("cargo::rerun-if-changed={}", path.display());
                format!("Some(include_str!({:?}))", path.display().to_string())
            } else {
                "None".to_owned()
            }
        };
        writeln!(
            out,
            "    Folder {{ name: {name:?}, engine: include_str!({:?}), families: {}, rules: {}, serve_flags: {}, log: {} }},",
            dir.join("engine.toml").display().to_string(),
            file("families.toml"),
            file("rules.toml"),
            file("serve_flags.toml"),
            file("log.toml"),
        )
        .expect("writing to a String");
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("folders.rs");
    fs::write(dest, out).expect("OUT_DIR is writable");
}
