//! `docs/hf-import.md` says what the code does: each model type's section lists exactly the
//! type's own keys with the role and note the code has, and the common section lists every
//! common key. The key tables themselves hold no duplicates.

use std::collections::HashSet;
use std::path::PathBuf;

use circuit_hf::{KeyRole, ModelType};

fn doc() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/hf-import.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of the `### {title}` section, up to the next heading.
fn section<'d>(doc: &'d str, title: &str) -> &'d str {
    let head = format!("\n### {title}\n");
    let start = doc
        .find(&head)
        .unwrap_or_else(|| panic!("no section `### {title}`"))
        + head.len();
    let rest = &doc[start..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    &rest[..end]
}

fn role(r: KeyRole) -> &'static str {
    match r {
        KeyRole::Read => "read",
        KeyRole::Ignored => "ignored",
        KeyRole::Refused => "refused",
    }
}

/// The keys every type shares: those of `llama`'s that other types hold as the same entry
/// (the common table; a type may replace one with its own entry, listed in its section, as
/// DeepSeek-V3 does `num_nextn_predict_layers`), not llama's own.
fn common() -> Vec<&'static circuit_hf::KeyInfo> {
    ModelType::Llama
        .keys()
        .filter(|k| {
            ModelType::ALL
                .iter()
                .filter(|m| m.keys().any(|o| std::ptr::eq(o, *k)))
                .count()
                > 1
        })
        .collect()
}

#[test]
fn every_type_section_lists_its_own_keys_exactly() {
    let doc = doc();
    let common = common();
    for &m in ModelType::ALL {
        let text = section(&doc, m.name());
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| `")).collect();
        let own: Vec<String> = m
            .keys()
            .filter(|k| !common.iter().any(|c| std::ptr::eq(*c, *k)))
            .map(|k| format!("| `{}` | {} | {} |", k.key, role(k.role), k.note))
            .collect();
        assert_eq!(rows, own, "section `### {m}` of docs/hf-import.md");
    }
}

#[test]
fn the_common_section_lists_every_common_key() {
    let doc = doc();
    let text = section(&doc, "Keys common to every type");
    for k in common() {
        let row = format!("| `{}` | {} | {} |", k.key, role(k.role), k.note);
        let listed = text.contains(&row)
            || (k.role == KeyRole::Ignored && text.contains(&format!("`{}`", k.key)));
        assert!(
            listed,
            "`{}` is not in the common keys of docs/hf-import.md",
            k.key
        );
        if k.role != KeyRole::Ignored {
            assert!(text.contains(&row), "{row}");
        }
    }
}

#[test]
fn key_tables_have_no_duplicates() {
    for &m in ModelType::ALL {
        let mut seen = HashSet::new();
        for k in m.keys() {
            assert!(seen.insert(k.key), "{m}: `{}` twice", k.key);
        }
        assert_eq!(m.key("_name_or_path").unwrap().role, KeyRole::Ignored);
        assert_eq!(ModelType::from_name(m.name()), Some(m));
    }
}
