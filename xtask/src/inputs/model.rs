//! Where a model an engine command line or log names is found on this machine: a local folder
//! holding config.json, a Hugging Face cache snapshot, or the repository's own copy by repo id
//! (`data/repos.toml`). Nothing is downloaded.
//!
//! Invariants: the environment (HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, HOME) and the working
//! folder are read in one place, [`ModelSources::from_env`]; resolution itself reads only the
//! [`ModelSources`] it is given, so tests pass their own folders. A model that is not found is
//! one line naming every place looked at.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::CliError;
use crate::inputs::files::{self, Input};

/// The places a model is looked for.
#[derive(Debug, Clone)]
pub struct ModelSources {
    /// The folder a relative model path is relative to.
    pub cwd: PathBuf,
    /// The Hugging Face hub cache (`models--Org--Name/snapshots/...`), with the setting that
    /// chose it, for messages.
    pub hub: Option<(PathBuf, String)>,
    /// The repository's `data/` folder (holding `repos.toml`).
    pub data: PathBuf,
}

/// The repository's data folder, where this crate was built from: relative to the working
/// folder when it lies under it (so `data/models/...` reads the same in every clone).
pub fn repository_data() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = manifest.parent().unwrap_or(manifest).join("data");
    match std::env::current_dir() {
        Ok(cwd) => data
            .strip_prefix(&cwd)
            .map_or_else(|_| data.clone(), Path::to_path_buf),
        Err(_) => data,
    }
}

impl ModelSources {
    /// The places this process would look: its working folder, the hub cache its environment
    /// names (as huggingface_hub's constants.py chooses it: HF_HUB_CACHE, else HF_HOME/hub,
    /// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub), and the
    /// repository's data. `overrides` are assignments a command line makes before the command
    /// (`HF_HOME=/models vllm serve ...`), which win over the process's own.
    pub fn from_env(overrides: &[(String, String)]) -> ModelSources {
        let var = |name: &str| -> Option<String> {
            overrides
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(name).ok())
                .filter(|v| !v.is_empty())
        };
        let hub = if let Some(h) = var("HF_HUB_CACHE") {
            Some((PathBuf::from(h), "HF_HUB_CACHE".to_owned()))
        } else if let Some(h) = var("HF_HOME") {
            Some((Path::new(&h).join("hub"), "HF_HOME/hub".to_owned()))
        } else if let Some(x) = var("XDG_CACHE_HOME") {
            Some((
                Path::new(&x).join("huggingface").join("hub"),
                "XDG_CACHE_HOME/huggingface/hub".to_owned(),
            ))
        } else {
            var("HOME").map(|h| {
                (
                    Path::new(&h).join(".cache").join("huggingface").join("hub"),
                    "~/.cache/huggingface/hub".to_owned(),
                )
            })
        };
        ModelSources {
            cwd: std::env::current_dir().unwrap_or_default(),
            hub,
            data: repository_data(),
        }
    }
}

/// A model found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its config.json.
    pub config: PathBuf,
    /// Where it was found, in a few words.
    pub place: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Repos {
    schema: u32,
    repos: std::collections::BTreeMap<String, RepoEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoEntry {
    config: String,
    source: String,
}

/// The config.json of `model` (a folder, or a repository id) at `revision` (a branch, tag or
/// commit; the cache's `main` when none), looked for in `download_dir` (the engine's
/// `--download-dir`, a hub cache of its own, which then replaces the environment's) or the
/// hub cache, then in the repository's data.
pub fn resolve(
    model: &str,
    revision: Option<&str>,
    download_dir: Option<&str>,
    sources: &ModelSources,
) -> Result<Found, CliError> {
    let mut looked: Vec<String> = Vec::new();
    // A folder that exists is the model, as the engines check it first (vLLM's
    // transformers_utils/config.py reads a local directory before the Hub).
    let local = sources.cwd.join(model);
    if local.is_dir() {
        let config = local.join("config.json");
        if config.is_file() {
            return Ok(Found {
                config,
                place: "a local folder".to_owned(),
            });
        }
        return Err(format!(
            "model {model}: the folder {} holds no config.json",
            local.display()
        )
        .into());
    }
    looked.push(format!("no folder {}", local.display()));
    let repo_shaped = model.split('/').count() == 2 && !model.starts_with(['/', '.']);
    if repo_shaped {
        let hub = match download_dir {
            Some(d) => Some((sources.cwd.join(d), "--download-dir".to_owned())),
            None => sources.hub.clone(),
        };
        if let Some((hub, why)) = hub {
            match snapshot(&hub, model, revision)? {
                Ok(config) => {
                    return Ok(Found {
                        config,
                        place: format!("the Hugging Face cache ({why})"),
                    });
                }
                Err(miss) => looked.push(format!("{miss} ({why})")),
            }
        } else {
            looked.push(
                "no Hugging Face cache (neither HF_HUB_CACHE, HF_HOME nor HOME is set)".into(),
            );
        }
        let index = sources.data.join("repos.toml");
        let text = files::read(&index, Input::Index)?;
        let repos: Repos =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", index.display()))?;
        if repos.schema != 1 {
            return Err(
                format!("{}: schema {} (expected 1)", index.display(), repos.schema).into(),
            );
        }
        if let Some((id, entry)) = repos
            .repos
            .iter()
            .find(|(id, _)| id.eq_ignore_ascii_case(model))
        {
            let config = sources.data.join(&entry.config);
            if !config.is_file() {
                return Err(format!(
                    "{}: {id} names {}, which is not a file",
                    index.display(),
                    config.display()
                )
                .into());
            }
            return Ok(Found {
                config,
                place: format!(
                    "the repository's copy (data/repos.toml, from {})",
                    entry.source
                ),
            });
        }
        looked.push(format!("no copy in {}", index.display()));
    }
    Err(format!(
        "model {model} not found: {}; nothing is downloaded: give its config.json with --hf-config FILE{}",
        looked.join(", "),
        if repo_shaped {
            format!(", or fetch it first (huggingface-cli download {model} config.json)")
        } else {
            String::new()
        }
    )
    .into())
}

/// The snapshot's config.json of `repo` in the hub cache `hub` (huggingface_hub's layout:
/// `models--Org--Name/refs/<revision>` holds the commit, `snapshots/<commit>/` its files), or
/// what is missing.
fn snapshot(
    hub: &Path,
    repo: &str,
    revision: Option<&str>,
) -> Result<Result<PathBuf, String>, CliError> {
    let folder = hub.join(format!("models--{}", repo.replace('/', "--")));
    if !folder.is_dir() {
        return Ok(Err(format!("no {}", folder.display())));
    }
    let rev = revision.unwrap_or("main");
    let refs = folder.join("refs").join(rev);
    let commit = if refs.is_file() {
        files::read(&refs, Input::Index)?.trim().to_owned()
    } else {
        // A commit hash names its snapshot directly.
        rev.to_owned()
    };
    let valid = !commit.is_empty()
        && commit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let config = folder.join("snapshots").join(&commit).join("config.json");
    if valid && config.is_file() {
        return Ok(Ok(config));
    }
    Ok(Err(if refs.is_file() {
        format!("no {}", config.display())
    } else {
        format!("no {} (and no snapshot {rev})", refs.display())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-model-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn sources(cwd: &Path, hub: Option<&Path>) -> ModelSources {
        ModelSources {
            cwd: cwd.to_owned(),
            hub: hub.map(|h| (h.to_owned(), "HF_HUB_CACHE".to_owned())),
            data: repository_data(),
        }
    }

    /// A cache as `huggingface-cli download` leaves it.
    fn cache_snapshot(hub: &Path, repo: &str, commit: &str, refs: &[&str]) -> PathBuf {
        let folder = hub.join(format!("models--{}", repo.replace('/', "--")));
        let snap = folder.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(folder.join("refs")).unwrap();
        for r in refs {
            std::fs::write(folder.join("refs").join(r), commit).unwrap();
        }
        std::fs::write(snap.join("config.json"), "{}").unwrap();
        snap.join("config.json")
    }

    #[test]
    fn a_local_folder_then_the_cache_then_the_repository_copy() {
        let dir = temp("order");
        let hub = dir.join("hub");
        let s = sources(&dir, Some(&hub));
        // Only the repository's copy.
        let found = resolve("meta-llama/Llama-3.1-8B-Instruct", None, None, &s).unwrap();
        assert!(
            found
                .config
                .ends_with("data/models/llama-3.1-8b/config.json")
        );
        assert_eq!(
            found.place,
            "the repository's copy (data/repos.toml, from vllm/cases.json)"
        );
        // Ids match ignoring case.
        let found = resolve("META-LLAMA/llama-3.1-8b-instruct", None, None, &s).unwrap();
        assert!(
            found
                .config
                .ends_with("data/models/llama-3.1-8b/config.json")
        );
        // The cache wins over the copy; `--revision` picks a branch's commit or a commit.
        let main = cache_snapshot(&hub, "meta-llama/Llama-3.1-8B-Instruct", "aaa1", &["main"]);
        let other = cache_snapshot(&hub, "meta-llama/Llama-3.1-8B-Instruct", "bbb2", &["v2"]);
        let found = resolve("meta-llama/Llama-3.1-8B-Instruct", None, None, &s).unwrap();
        assert_eq!(found.config, main);
        assert_eq!(found.place, "the Hugging Face cache (HF_HUB_CACHE)");
        let at = |r| resolve("meta-llama/Llama-3.1-8B-Instruct", Some(r), None, &s).unwrap();
        assert_eq!(at("v2").config, other);
        assert_eq!(at("bbb2").config, other);
        // A local folder of that name wins over both.
        let local = dir.join("meta-llama/Llama-3.1-8B-Instruct");
        std::fs::create_dir_all(&local).unwrap();
        let e = resolve("meta-llama/Llama-3.1-8B-Instruct", None, None, &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "model meta-llama/Llama-3.1-8B-Instruct: the folder {} holds no config.json",
                local.display()
            )
        );
        std::fs::write(local.join("config.json"), "{}").unwrap();
        let found = resolve("meta-llama/Llama-3.1-8B-Instruct", None, None, &s).unwrap();
        assert_eq!(
            (found.config, found.place.as_str()),
            (local.join("config.json"), "a local folder")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_download_dir_is_a_cache_of_its_own() {
        let dir = temp("download");
        let models = dir.join("models");
        let config = cache_snapshot(&models, "Org/Model", "c0ffee", &["main"]);
        let s = sources(&dir, None);
        let found = resolve("Org/Model", None, Some("models"), &s).unwrap();
        assert_eq!(found.config, config);
        assert_eq!(found.place, "the Hugging Face cache (--download-dir)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_model_not_found_is_one_line_naming_every_place_looked_at() {
        let dir = temp("missing");
        let hub = dir.join("hub");
        let s = sources(&dir, Some(&hub));
        let e = resolve("Qwen/Qwen2.5-72B-Instruct", None, None, &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "model Qwen/Qwen2.5-72B-Instruct not found: no folder {d}/Qwen/Qwen2.5-72B-Instruct, no {d}/hub/models--Qwen--Qwen2.5-72B-Instruct (HF_HUB_CACHE), no copy in {r}/repos.toml; nothing is downloaded: give its config.json with --hf-config FILE, or fetch it first (huggingface-cli download Qwen/Qwen2.5-72B-Instruct config.json)",
                d = dir.display(),
                r = repository_data().display()
            )
        );
        // Cached without the revision asked for.
        cache_snapshot(&hub, "Qwen/Qwen2.5-72B-Instruct", "abc", &["main"]);
        let e = resolve("Qwen/Qwen2.5-72B-Instruct", Some("v9"), None, &s).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "no {}/hub/models--Qwen--Qwen2.5-72B-Instruct/refs/v9 (and no snapshot v9) (HF_HUB_CACHE)",
                dir.display()
            )),
            "{e}"
        );
        // A path that is not a repository id is looked for as a folder only.
        let e = resolve("/no/such/model", None, None, &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "model /no/such/model not found: no folder /no/such/model; nothing is downloaded: give its config.json with --hf-config FILE"
        );
        let s = ModelSources { hub: None, ..s };
        let e = resolve("Org/Name", None, None, &s).unwrap_err();
        assert!(
            e.to_string()
                .contains("no Hugging Face cache (neither HF_HUB_CACHE, HF_HOME nor HOME is set)"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_environment_chooses_the_cache_as_huggingface_hub_does() {
        let o = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let s = ModelSources::from_env(&o(&[("HF_HUB_CACHE", "/c"), ("HF_HOME", "/h")]));
        assert_eq!(
            s.hub,
            Some((PathBuf::from("/c"), "HF_HUB_CACHE".to_owned()))
        );
        // An assignment on the line wins over the process's environment (an empty one unsets
        // it); HF_HOME's hub is HF_HOME/hub.
        let s = ModelSources::from_env(&o(&[("HF_HUB_CACHE", ""), ("HF_HOME", "/h")]));
        assert_eq!(
            s.hub,
            Some((PathBuf::from("/h/hub"), "HF_HOME/hub".to_owned()))
        );
    }
}
