//! Module-name patterns as each quantization tool matches them, against the real module
//! names of the checkpoint (`model.layers.3.self_attn.q_proj`, experts by index).
//!
//! Invariants: each variant reproduces one tool's rule, cited where it is built; a pattern the
//! `regex` crate cannot compile with the tool's meaning (a Python look-around, say) is an
//! error naming it, never a pattern that silently matches nothing.

use regex::{Regex, RegexSet, RegexSetBuilder};
use wildmatch::WildMatch;

/// One pattern of an `ignore`, `targets`, `modules_to_not_convert` or `exclude_modules` list.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// compressed-tensors `match_name` without `re:`: the exact module name.
    Exact(String),
    /// compressed-tensors `re:<regex>`: Python's `re.match`, anchored at the start only.
    Regex(Regex),
    /// compressed-tensors `_match_class` with `Linear`: every linear module (vLLM's
    /// `LinearBase` counts as `Linear`).
    Linear,
    /// transformers' `should_convert_module`: the key as a regex matching the name from its
    /// start up to a module boundary, or the name ending with the key.
    HfKey {
        /// `^(?:key)$`, tried on every prefix that ends at a boundary.
        whole: Regex,
        key: String,
    },
    /// A substring of the name (AutoAWQ's and vLLM's `skip_with_substr`, GPTQ's
    /// `modules_in_block_to_quantize`).
    Substring(String),
    /// ModelOpt's `exclude_modules` as vLLM's `is_layer_excluded` reads them: the exact name,
    /// a substring of it, or an `fnmatch` wildcard.
    ModelOpt { text: String, wild: WildMatch },
}

/// A pattern that cannot be compiled with the tool's meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadPattern {
    pub(crate) pattern: String,
    pub(crate) why: String,
}

fn regex(pattern: &str, source: &str) -> Result<Regex, BadPattern> {
    Regex::new(source).map_err(|e| BadPattern {
        pattern: pattern.to_owned(),
        why: format!(
            "is not a regular expression the importer can evaluate exactly ({})",
            e.to_string().lines().last().unwrap_or("invalid").trim()
        ),
    })
}

impl Pattern {
    /// A compressed-tensors target or ignore entry (`compressed_tensors/utils/match.py`,
    /// `match_name` and `_match_class`).
    pub(crate) fn compressed_tensors(text: &str) -> Result<Pattern, BadPattern> {
        if let Some(re) = text.strip_prefix("re:") {
            return Ok(Pattern::Regex(regex(text, &format!("^(?:{re})"))?));
        }
        if text == "Linear" {
            return Ok(Pattern::Linear);
        }
        // Module names are lower-case paths; a capitalised word without a dot is a class name
        // (`LlamaAttention`, `Embedding`), which would match modules this importer does not
        // model as quantizable.
        if !text.contains('.') && text.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Err(BadPattern {
                pattern: text.to_owned(),
                why: "names a module class other than `Linear`, which is not modelled".to_owned(),
            });
        }
        Ok(Pattern::Exact(text.to_owned()))
    }

    /// A transformers `modules_to_not_convert` key (`quantizers/quantizers_utils.py`,
    /// `should_convert_module`).
    pub(crate) fn transformers(key: &str) -> Result<Pattern, BadPattern> {
        Ok(Pattern::HfKey {
            whole: regex(key, &format!("^(?:{key})$"))?,
            key: key.to_owned(),
        })
    }

    /// A ModelOpt `exclude_modules` entry (vLLM `modelopt.py`, `is_layer_excluded`).
    pub(crate) fn modelopt(text: &str) -> Result<Pattern, BadPattern> {
        if text.contains('[') {
            return Err(BadPattern {
                pattern: text.to_owned(),
                why: "uses an fnmatch character class (`[...]`), which is not modelled".to_owned(),
            });
        }
        Ok(Pattern::ModelOpt {
            text: text.to_owned(),
            wild: WildMatch::new(text),
        })
    }

    /// Whether the pattern matches the module `name`; `linear` says whether the module is a
    /// linear layer (for the `Linear` class target).
    pub(crate) fn matches(&self, name: &str, linear: bool) -> bool {
        match self {
            Pattern::Exact(text) => text == name,
            Pattern::Regex(re) => re.is_match(name),
            Pattern::Linear => linear,
            Pattern::HfKey { whole, key } => {
                // Python's `re.match(rf"(?:{key}){boundary}", name)` with the zero-width
                // boundary `(?:(?<=\.)|(?=\.|$))` succeeds exactly when the key matches a
                // whole prefix of the name ending at a boundary: after a dot, before one, or at
                // the end.
                name.ends_with(key.as_str())
                    || boundaries(name).any(|end| whole.is_match(&name[..end]))
            }
            Pattern::Substring(text) => name.contains(text.as_str()),
            Pattern::ModelOpt { text, wild } => name.contains(text.as_str()) || wild.matches(name),
        }
    }
}

/// A list of patterns matched together: any one matching is a match. Long lists (Qwen's FP8
/// configs name hundreds of modules) over thousands of expert names would be slow one
/// pattern and one prefix at a time: one [`RegexSet`] pass tells whether any transformers key
/// matches some prefix of the name at all, which no expert name but the few listed does, and
/// only then are the keys tried one by one.
#[derive(Debug, Clone)]
pub(crate) struct Patterns {
    list: Vec<Pattern>,
    /// `^(?:key)` of every transformers key in `list`.
    prefixes: Option<RegexSet>,
}

impl Patterns {
    pub(crate) fn new(list: Vec<Pattern>) -> Patterns {
        let sources: Vec<String> = list
            .iter()
            .filter_map(|p| match p {
                Pattern::HfKey { key, .. } => Some(format!("^(?:{key})")),
                _ => None,
            })
            .collect();
        // A set that cannot be built (too large) leaves every key to be tried on its own.
        let prefixes = (!sources.is_empty())
            .then(|| {
                RegexSetBuilder::new(&sources)
                    .size_limit(1 << 26)
                    .dfa_size_limit(1 << 26)
                    .build()
                    .ok()
            })
            .flatten();
        Patterns { list, prefixes }
    }

    /// Whether any pattern matches the linear module `name`.
    pub(crate) fn any(&self, name: &str) -> bool {
        // A key whose regex matches no prefix of the name cannot match one that ends at a
        // boundary; the suffix rule is checked apart.
        let keys_possible = self.prefixes.as_ref().is_none_or(|s| s.is_match(name));
        self.list.iter().any(|p| match p {
            Pattern::HfKey { key, .. } if !keys_possible => name.ends_with(key.as_str()),
            _ => p.matches(name, true),
        })
    }
}

/// The ends `p` of prefixes `name[..p]` that sit at a module boundary.
fn boundaries(name: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = name.as_bytes();
    (0..=bytes.len())
        .filter(move |&p| p == bytes.len() || bytes[p] == b'.' || (p > 0 && bytes[p - 1] == b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transformers_keys_match_from_the_start_up_to_a_boundary_or_as_a_suffix() {
        let p = |k: &str| Pattern::transformers(k).unwrap();
        // The examples of should_convert_module's comment.
        assert!(p("layer.1").matches("layer.1.attn", true));
        assert!(!p("layer.1").matches("layer.11.attn", true));
        assert!(p("layer.*").matches("layer.11.attn", true));
        assert!(p("mlp.gate").matches("mlp.gate", true));
        assert!(!p("mlp.gate").matches("mlp.gate_proj", true));
        assert!(p("fc1").matches("model.decoder.layers.23.fc1", true));
        // gpt-oss's list.
        assert!(p("model.layers.*.self_attn").matches("model.layers.7.self_attn.q_proj", true));
        assert!(!p("model.layers.*.self_attn").matches("model.layers.7.mlp.experts", true));
        assert!(p("lm_head").matches("lm_head", true));
    }

    #[test]
    fn compressed_tensors_targets() {
        let p = |k: &str| Pattern::compressed_tensors(k).unwrap();
        assert!(p("lm_head").matches("lm_head", true));
        assert!(!p("lm_head").matches("model.lm_head", true));
        assert!(p("re:.*mlp.gate$").matches("model.layers.3.mlp.gate", true));
        assert!(!p("re:.*mlp.gate$").matches("model.layers.3.mlp.gate_proj", true));
        // re.match anchors at the start only.
        assert!(p("re:model.layers.1").matches("model.layers.12.mlp", true));
        assert!(!p("re:layers").matches("model.layers.1", true));
        assert!(p("Linear").matches("anything", true));
        assert!(!p("Linear").matches("anything", false));
        assert_eq!(
            Pattern::compressed_tensors("LlamaAttention")
                .unwrap_err()
                .why,
            "names a module class other than `Linear`, which is not modelled"
        );
        assert!(Pattern::compressed_tensors("re:(?<=x)y").is_err());
    }

    #[test]
    fn a_set_matches_as_its_patterns_do() {
        let keys = [
            "lm_head",
            "model.layers.1",
            "mlp.gate",
            "model.layers.*.self_attn",
        ];
        let list: Vec<Pattern> = keys
            .iter()
            .map(|k| Pattern::transformers(k).unwrap())
            .collect();
        let set = Patterns::new(list.clone());
        for name in [
            "lm_head",
            "model.layers.1.mlp.up_proj",
            "model.layers.11.mlp.up_proj",
            "model.layers.3.mlp.gate",
            "model.layers.3.mlp.gate_proj",
            "model.layers.3.self_attn.q_proj",
        ] {
            assert_eq!(
                set.any(name),
                list.iter().any(|p| p.matches(name, true)),
                "{name}"
            );
        }
        let ct = Patterns::new(vec![
            Pattern::compressed_tensors("re:.*mlp.gate$").unwrap(),
            Pattern::compressed_tensors("lm_head").unwrap(),
        ]);
        assert!(ct.any("model.layers.0.mlp.gate") && ct.any("lm_head"));
        assert!(!ct.any("model.layers.0.mlp.gate_proj"));
    }

    #[test]
    fn modelopt_excludes_are_exact_substring_or_wildcard() {
        let p = |k: &str| Pattern::modelopt(k).unwrap();
        assert!(p("lm_head").matches("lm_head", true));
        assert!(p("model.layers.0.mlp").matches("model.layers.0.mlp.down_proj", true));
        assert!(!p("model.layers.1.mlp").matches("model.layers.10.mlp.down_proj", true));
        assert!(p("*mlp.gate").matches("model.layers.4.mlp.gate", true));
        assert!(p("model.layers.*.self_attn*").matches("model.layers.4.self_attn.o_proj", true));
    }
}
