//! The engine folders, embedded: every `engines/<engine>-<version>/` beside this crate's
//! manifest (its `engine.toml`, kernel families and fusion rules; see docs/engines.md), and the
//! choice of a profile the way a user names it: `vllm` (the newest release modelled) or
//! `vllm==0.17.1` (pip's spelling: a release maps to the profile that lists it).
//!
//! Every engine's profile is a library value: [`select`] by the name a user gives,
//! [`profile`] by folder, [`catalogue`] lists every folder's engine and releases, [`folders`]
//! gives the embedded texts. A profile (`engine_profile::EngineProfile`) predicts a start-up
//! from a model's circuits (engine-profile's front page shows one) and hands the importer its
//! [`LoadRules`](engine_profile::LoadRules); its kernel families and fusion rules are the
//! folder's own (or those of the folder it extends). Those families read the dims the
//! standard ones do (`kernel_families::standard::REQUIRED_DIMS`: `head_dim`, `heads`,
//! `hidden`, `kv_heads`, `q_width`, `vocab`; `tests/dims.rs` checks it), which circuit-hf
//! defines in every circuit it imports; a circuit without one is refused by the prediction
//! with the dim and the family that reads it.
//!
//! Invariants: a folder's `engine.toml` names its engine and every release it stands for
//! (`releases`, never inherited); a folder that `extends` another takes that folder's files
//! and facts and states only what differs, and the chain is resolved here (a missing folder or
//! a cycle is an error); no two folders claim one release; nothing here predicts anything
//! (that is engine-profile's), and no file is read at run time.
//!
//! ```
//! let profile = engines::select("vllm").unwrap();
//! assert_eq!(profile.engine(), "vllm");
//! let pinned = engines::select("vllm==0.19.0").unwrap();
//! assert_eq!(pinned.version(), "0.19.0");
//! assert!(engines::select("vllm==0.1.0").is_err());
//! let releases = engines::catalogue().unwrap();
//! assert!(releases.iter().any(|r| r.releases.iter().any(|v| v == "0.27.1")));
//! ```

#![warn(missing_docs)]

use engine_profile::{EngineError, EngineProfile, ProfileTexts};

/// The crate that predicts with these profiles (`engine-profile`), re-exported: its
/// `RunSettings` and `Startup` are the types a profile takes and gives.
pub use engine_profile;

/// An engine folder's texts.
#[derive(Debug, Clone, Copy)]
pub struct Folder {
    /// The folder's name (`vllm-0.19`).
    pub name: &'static str,
    /// Its `engine.toml`.
    pub engine: &'static str,
    /// Its `families.toml`, when it has one of its own.
    pub families: Option<&'static str>,
    /// Its `rules.toml`, when it has one of its own.
    pub rules: Option<&'static str>,
    /// Its `serve_flags.toml` (the engine's command-line flags, classified), when it has one.
    pub serve_flags: Option<&'static str>,
    /// Its `log.toml` (the start-up log lines the engine prints), when it has one.
    pub log: Option<&'static str>,
}

include!(concat!(env!("OUT_DIR"), "/folders.rs"));

/// What can go wrong choosing or loading an engine profile.
#[derive(Debug, thiserror::Error)]
pub enum EnginesError {
    /// The engine is not one of the folders'.
    #[error("--engine {name}: unknown engine; the engines modelled are {known}")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// The engines modelled.
        known: String,
    },
    /// The release is not one a profile stands for.
    #[error(
        "--engine {engine}=={release}: release {release} is not modelled; the releases modelled are {known} (a prediction for another release would be a wrong answer)"
    )]
    UnknownRelease {
        /// The engine.
        engine: String,
        /// The release given.
        release: String,
        /// The releases modelled.
        known: String,
    },
    /// The selection is not `NAME` or `NAME==RELEASE`.
    #[error(
        "--engine {spec}: write an engine (`vllm`) or an engine and a release (`vllm==0.19.0`)"
    )]
    BadSpec {
        /// The text given.
        spec: String,
    },
    /// A folder's files are inconsistent (a missing `extends`, a cycle, a release claimed
    /// twice, a header that does not parse).
    #[error("engines/{folder}: {message}")]
    Folder {
        /// The folder.
        folder: String,
        /// What is wrong.
        message: String,
    },
    /// The profile does not load.
    #[error(transparent)]
    Profile(#[from] EngineError),
}

/// Every engine folder, in name order.
pub fn folders() -> &'static [Folder] {
    FOLDERS
}

/// A folder's header: the engine, the release its facts were read from, and the releases it
/// stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The folder.
    pub folder: &'static str,
    /// The engine (`vllm`).
    pub engine: String,
    /// The release the facts were read from.
    pub version: String,
    /// The releases (pip's spelling) it stands for.
    pub releases: Vec<String>,
}

fn folder_error(folder: &str, message: impl Into<String>) -> EnginesError {
    EnginesError::Folder {
        folder: folder.to_owned(),
        message: message.into(),
    }
}

/// The header of `folder`, read from its own `engine.toml` (never inherited).
fn header(folder: &Folder) -> Result<(Release, Option<String>), EnginesError> {
    let table: toml::Table = toml::from_str(folder.engine)
        .map_err(|e| folder_error(folder.name, format!("engine.toml: {e}")))?;
    let text = |key: &str| -> Result<Option<String>, EnginesError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(folder_error(
                folder.name,
                format!("engine.toml: `{key}` is {other}, not a string"),
            )),
        }
    };
    let extends = text("extends")?;
    let engine = match text("engine")? {
        Some(e) => e,
        None => match &extends {
            Some(base) => header(find_folder(folder.name, base)?)?.0.engine,
            None => return Err(folder_error(folder.name, "engine.toml names no `engine`")),
        },
    };
    let version = text("version")?
        .ok_or_else(|| folder_error(folder.name, "engine.toml names no `version`"))?;
    let releases = match table.get("releases") {
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    folder_error(folder.name, format!("engine.toml: a release is {v}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => {
            return Err(folder_error(
                folder.name,
                "engine.toml lists no `releases` of its own (they are never inherited)",
            ));
        }
    };
    Ok((
        Release {
            folder: folder.name,
            engine,
            version,
            releases,
        },
        extends,
    ))
}

fn find_folder(from: &str, name: &str) -> Result<&'static Folder, EnginesError> {
    FOLDERS
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| folder_error(from, format!("extends `{name}`, which is not a folder")))
}

/// Every folder's header, in folder order; a release claimed by two folders is an error.
pub fn catalogue() -> Result<Vec<Release>, EnginesError> {
    let mut all: Vec<Release> = Vec::new();
    for folder in FOLDERS {
        let (release, _) = header(folder)?;
        for r in &release.releases {
            if let Some(other) = all
                .iter()
                .find(|o| o.engine == release.engine && o.releases.contains(r))
            {
                return Err(folder_error(
                    folder.name,
                    format!("claims release {r}, which {} claims too", other.folder),
                ));
            }
        }
        all.push(release);
    }
    Ok(all)
}

/// `folder` and the folders it extends, the folder itself first.
fn chain(folder: &str) -> Result<Vec<&'static Folder>, EnginesError> {
    let mut chain: Vec<&Folder> = vec![find_folder(folder, folder)?];
    loop {
        let last = chain[chain.len() - 1];
        let (_, extends) = header(last)?;
        let Some(base) = extends else { break };
        let next = find_folder(last.name, &base)?;
        if chain.iter().any(|f| f.name == next.name) {
            return Err(folder_error(
                folder,
                format!("extends form a cycle at `{base}`"),
            ));
        }
        chain.push(next);
    }
    Ok(chain)
}

/// A file of `folder` that a folder extending another overlays on its base's: the texts of
/// every folder of the chain that has one, the base's first, each with its origin
/// (`engines/<folder>/<file>`). Empty when no folder of the chain has the file.
fn overlays(
    folder: &str,
    pick: fn(&Folder) -> Option<&'static str>,
    file: &str,
) -> Result<Vec<(&'static str, String)>, EnginesError> {
    Ok(chain(folder)?
        .iter()
        .rev()
        .filter_map(|f| pick(f).map(|text| (text, format!("engines/{}/{file}", f.name))))
        .collect())
}

/// The `serve_flags.toml` texts of `folder` and the folders it extends, base first (each a
/// table of the engine's command-line flags that overlays its base's flag by flag; read by
/// the planner's command line, docs/engines.md "A serve line").
pub fn serve_flags(folder: &str) -> Result<Vec<(&'static str, String)>, EnginesError> {
    overlays(folder, |f| f.serve_flags, "serve_flags.toml")
}

/// The `log.toml` texts of `folder` and the folders it extends, base first (the start-up log
/// lines the engine prints; docs/engines.md "Checking a start-up log").
pub fn log_lines(folder: &str) -> Result<Vec<(&'static str, String)>, EnginesError> {
    overlays(folder, |f| f.log, "log.toml")
}

/// The profile of `folder`, with the folders it extends resolved.
pub fn profile(folder: &str) -> Result<EngineProfile, EnginesError> {
    let chain = chain(folder)?;
    let own = |pick: fn(&Folder) -> Option<&'static str>, file: &str| {
        chain
            .iter()
            .find_map(|f| pick(f).map(|text| (text, f.name)))
            .ok_or_else(|| {
                folder_error(
                    folder,
                    format!("neither it nor a folder it extends has a {file}"),
                )
            })
    };
    let (families, families_from) = own(|f| f.families, "families.toml")?;
    let (rules, rules_from) = own(|f| f.rules, "rules.toml")?;
    let origins: Vec<String> = chain
        .iter()
        .rev()
        .map(|f| format!("engines/{}/engine.toml", f.name))
        .collect();
    let families_origin = format!("engines/{families_from}/families.toml");
    let rules_origin = format!("engines/{rules_from}/rules.toml");
    let texts = ProfileTexts {
        engine: chain
            .iter()
            .rev()
            .zip(&origins)
            .map(|(f, o)| (f.engine, o.as_str()))
            .collect(),
        families: (families, &families_origin),
        rules: (rules, &rules_origin),
    };
    Ok(EngineProfile::from_texts(&texts)?)
}

/// A release's numeric parts (`0.10.1.1` is [0, 10, 1, 1], `0.4.9.post3` [0, 4, 9, 3]), for
/// ordering.
fn numeric(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|p| {
            // `post3` counts as 3: 0.4.9.post2 sorts before 0.4.9.post3.
            p.trim_start_matches(|c: char| !c.is_ascii_digit())
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

/// The release `spec` names: `vllm` (the newest modelled), or `vllm==0.17.1`.
pub fn resolve(spec: &str) -> Result<Release, EnginesError> {
    let spec = spec.trim();
    let (engine, release) = match spec.split_once("==") {
        Some((e, r)) => (e.trim(), Some(r.trim())),
        None => (spec, None),
    };
    if engine.is_empty() || release.is_some_and(str::is_empty) {
        return Err(EnginesError::BadSpec {
            spec: spec.to_owned(),
        });
    }
    let all = catalogue()?;
    let mut of_engine: Vec<Release> = all.into_iter().filter(|r| r.engine == engine).collect();
    if of_engine.is_empty() {
        let mut known: Vec<String> = catalogue()?.into_iter().map(|r| r.engine).collect();
        known.dedup();
        return Err(EnginesError::UnknownEngine {
            name: engine.to_owned(),
            known: known.join(", "),
        });
    }
    of_engine.sort_by_key(|r| numeric(&r.version));
    match release {
        None => Ok(of_engine.pop().expect("one release at least")),
        Some(wanted) => {
            let found = of_engine
                .iter()
                .find(|r| r.releases.iter().any(|x| x == wanted));
            match found {
                Some(r) => Ok(r.clone()),
                None => {
                    let mut known: Vec<&str> = of_engine
                        .iter()
                        .flat_map(|r| r.releases.iter().map(String::as_str))
                        .collect();
                    known.sort_by_key(|v| numeric(v));
                    Err(EnginesError::UnknownRelease {
                        engine: engine.to_owned(),
                        release: wanted.to_owned(),
                        known: known.join(", "),
                    })
                }
            }
        }
    }
}

/// The profile `spec` names (see [`resolve`]).
pub fn select(spec: &str) -> Result<EngineProfile, EnginesError> {
    profile(resolve(spec)?.folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_folder_loads_and_no_release_is_claimed_twice() {
        let all = catalogue().unwrap();
        assert!(!all.is_empty());
        for r in &all {
            let p = profile(r.folder).unwrap();
            assert_eq!(
                (p.engine(), p.version()),
                (r.engine.as_str(), r.version.as_str())
            );
        }
    }

    #[test]
    fn a_selection_names_an_engine_and_maybe_a_release() {
        assert_eq!(numeric("0.10.1.1"), [0, 10, 1, 1]);
        assert!(numeric("0.9.0") < numeric("0.10.0"));
        assert_eq!(resolve("vllm==0.19.0").unwrap().folder, "vllm-0.19");
        // `vllm` alone is the newest release any vLLM folder stands for.
        let newest = catalogue()
            .unwrap()
            .into_iter()
            .filter(|r| r.engine == "vllm")
            .max_by_key(|r| numeric(&r.version))
            .unwrap();
        assert_eq!(resolve("vllm").unwrap(), newest);
        let e = resolve("vllm==0.1.0").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--engine vllm==0.1.0: release 0.1.0 is not modelled; the releases modelled are "
            ),
            "{e}"
        );
        let e = resolve("tgi").unwrap_err().to_string();
        assert!(
            e.starts_with("--engine tgi: unknown engine; the engines modelled are sglang, vllm"),
            "{e}"
        );
        for bad in ["", "==0.19.0", "vllm=="] {
            assert!(
                matches!(resolve(bad), Err(EnginesError::BadSpec { .. })),
                "{bad}"
            );
        }
    }
}
