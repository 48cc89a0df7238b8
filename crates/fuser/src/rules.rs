//! Fusion rules (docs/fusion.md): what may be fused into one launch group, when, and with which
//! kernels; and the settings rules read.
//!
//! Invariants:
//! - Rule ids are unique; every pattern has at least one element and only known ops; every
//!   `rows` is exactly `[lo, hi]` with `1 <= lo <= hi`; every `when` key is a declared setting,
//!   and, when the setting lists its values, a `when` value is one of them.
//! - [`Settings`] always hold a value for every declared setting and nothing else, and each
//!   value is one the setting allows: one of its declared `values`; without them, for a setting
//!   some `when` tests, its default or a value a `when` tests (anything else is almost surely a
//!   typo that would silently match no rule); any value for a setting no rule tests.
//! - When a kernel registry is given at load, every kernel a rule names is listed by a family.

use std::collections::BTreeMap;
use std::fmt;

use circuit_ir::Op;
use circuit_ir::load::{TomlError, parse_document};
use kernel_families::Families;
use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

/// A rules file as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesDecl {
    /// Format version; 1.
    pub schema: u32,
    /// Every setting rules may read, with its default (and optionally its values).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, SettingDecl>,
    /// The rules.
    #[serde(default, rename = "rule", skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleDecl>,
}

/// A rule as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDecl {
    /// Unique id.
    pub id: String,
    /// The chain of ops to fuse; each element after the first reads an output of an earlier one.
    pub pattern: Vec<ElementDecl>,
    /// Kernels the group runs (empty: host work, matched to families by emitter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// What generates the group's launch (e.g. `cuda`, `triton`, `torch`).
    pub emitter: String,
    /// `[lo, hi]`: the rule applies when `lo <= n <= hi`; absent: every `n`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "row_range"
    )]
    pub rows: Option<[u64; 2]>,
    /// Settings that must hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub when: BTreeMap<String, SettingValue>,
    /// Higher first; ties by id.
    #[serde(default)]
    pub priority: i64,
}

/// A pattern element as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementDecl {
    /// The op the node must run.
    pub op: String,
    /// A glob (`*`, `?`) the node's local id must match, e.g. `attn_norm` or `*_proj`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The element's outputs may be read outside the group.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep: bool,
}

/// A setting's value: a string, integer or boolean in TOML, compared as its text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SettingValue(pub String);

impl Serialize for SettingValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SettingValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SettingValue, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SettingValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, integer or boolean")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SettingValue, E> {
                Ok(SettingValue(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SettingValue, E> {
                Ok(SettingValue(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SettingValue, E> {
                Ok(SettingValue(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<SettingValue, E> {
                Ok(SettingValue(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `rows` as written: exactly two whole numbers. (Read as a fixed array, `[1, 2, 4]` was taken
/// for `[1, 2]`, the rest, junk or not, dropped unread.)
fn row_range<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[u64; 2]>, D::Error> {
    let values = Vec::<u64>::deserialize(d)?;
    match values[..] {
        [lo, hi] => Ok(Some([lo, hi])),
        _ => Err(serde::de::Error::custom(format!(
            "rows has {} element{}; write [lo, hi], two whole numbers",
            values.len(),
            if values.len() == 1 { "" } else { "s" }
        ))),
    }
}

/// A setting as declared in `[settings]`: `key = default`, or
/// `key = { default = ..., values = [...] }` to list every value it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingDecl {
    /// The value when `--set` does not give one.
    pub default: SettingValue,
    /// Every value the setting may take; empty when not declared.
    pub values: Vec<SettingValue>,
}

impl SettingDecl {
    /// A setting with a default and no declared values.
    pub fn new(default: impl Into<String>) -> SettingDecl {
        SettingDecl {
            default: SettingValue(default.into()),
            values: Vec::new(),
        }
    }
}

impl Serialize for SettingDecl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.values.is_empty() {
            return self.default.serialize(s);
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("default", &self.default)?;
        map.serialize_entry("values", &self.values)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for SettingDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SettingDecl, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            default: SettingValue,
            values: Vec<SettingValue>,
        }
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = SettingDecl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a default (a string, integer or boolean) or { default = ..., values = [...] }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SettingDecl, E> {
                Ok(SettingDecl::new(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SettingDecl, E> {
                Ok(SettingDecl::new(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SettingDecl, E> {
                Ok(SettingDecl::new(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<SettingDecl, E> {
                Ok(SettingDecl::new(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SettingDecl, A::Error> {
                let t = Table::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(SettingDecl {
                    default: t.default,
                    values: t.values,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The values a setting allows (see the module's invariants).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    /// Sorted, each once; empty: any value.
    values: Vec<String>,
    /// The values were declared (not inferred from the default and the `when`s).
    declared: bool,
}

/// A validated pattern element.
#[derive(Debug, Clone)]
pub struct Element {
    /// The op.
    pub op: Op,
    /// The local-id glob, if any.
    pub node: Option<String>,
    matcher: Option<WildMatch>,
    /// Outputs may be read outside the group.
    pub keep: bool,
}

impl PartialEq for Element {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op && self.node == other.node && self.keep == other.keep
    }
}

impl Eq for Element {}

impl Element {
    /// Whether a node with this op and local id fits the element.
    pub fn matches(&self, op: Op, local_id: &str) -> bool {
        self.op == op && self.matcher.as_ref().is_none_or(|m| m.matches(local_id))
    }
}

/// A validated rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Unique id.
    pub id: String,
    /// The chain, at least one element.
    pub pattern: Vec<Element>,
    /// Kernels the group runs.
    pub kernels: Vec<String>,
    /// The emitter.
    pub emitter: String,
    /// Applies when `lo <= n <= hi`.
    pub rows: (u64, u64),
    /// Settings that must hold.
    pub when: BTreeMap<String, String>,
    /// Higher first.
    pub priority: i64,
}

impl Rule {
    /// Whether the rule applies at `n` rows under `settings`.
    pub fn applies(&self, n: u64, settings: &Settings) -> bool {
        self.rows.0 <= n && n <= self.rows.1 && self.holds(settings)
    }

    /// Whether every `when` setting holds.
    pub fn holds(&self, settings: &Settings) -> bool {
        self.when
            .iter()
            .all(|(k, v)| settings.values.get(k) == Some(v))
    }
}

/// Values of every declared setting: the defaults with `--set` overrides applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Settings {
    /// The value of a setting.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every setting, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl fmt::Display for Settings {
    /// `mode=decode, tp=1`, or `(none)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.values.is_empty() {
            return f.write_str("(none)");
        }
        for (i, (k, v)) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// A validated rule set.
#[derive(Debug, Clone)]
pub struct Rules {
    origin: String,
    defaults: BTreeMap<String, String>,
    allowed: BTreeMap<String, Allowed>,
    rules: Vec<Rule>,
    decl: RulesDecl,
}

impl PartialEq for Rules {
    /// Equal when built from equal declarations.
    fn eq(&self, other: &Self) -> bool {
        self.decl == other.decl
    }
}

impl Eq for Rules {}

/// A rule set that cannot be loaded, or settings it does not declare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RulesError {
    /// The file name (or what the caller called the rules).
    pub origin: String,
    /// `rule `id`, pattern[1]: ` and the like; empty at the top.
    pub place: String,
    /// What is wrong.
    pub kind: Box<RulesErrorKind>,
}

impl std::fmt::Display for RulesError {
    /// `origin: place what`, on one line whatever the file or `--set` holds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = format!("{}: {}{}", self.origin, self.place, self.kind);
        f.write_str(&circuit_ir::one_line(&message))
    }
}

/// What is wrong with a rule set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RulesErrorKind {
    /// Not TOML, another schema, or not the rules' keys and types.
    #[error(transparent)]
    Toml(#[from] TomlError),
    /// Two rules with one id.
    #[error("duplicate rule id `{id}`")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A row range with `lo = 0` or `lo > hi`.
    #[error("rows = [{lo}, {hi}] is empty or starts at 0; write [lo, hi] with 1 <= lo <= hi")]
    BadRows {
        /// Low end.
        lo: u64,
        /// High end.
        hi: u64,
    },
    /// A rule with no pattern elements.
    #[error("empty pattern; a rule fuses at least one op")]
    EmptyPattern,
    /// An op not in circuit-ir's list.
    #[error(transparent)]
    Op(#[from] circuit_ir::UnknownOp),
    /// A `when` or `--set` key that the `[settings]` table does not declare.
    #[error("setting `{key}` is not declared in [settings] (declared: {declared})")]
    UndeclaredSetting {
        /// The key.
        key: String,
        /// The declared keys.
        declared: String,
    },
    /// A `--set` value, or a `when` value, that the setting does not allow.
    #[error("{}", bad_value(.key, .value, .default, .allowed, *.declared))]
    BadSettingValue {
        /// The setting.
        key: String,
        /// The value refused.
        value: String,
        /// The setting's default.
        default: String,
        /// The values it allows, comma-separated.
        allowed: String,
        /// The values were declared in `[settings]` (not inferred from the rules).
        declared: bool,
    },
    /// A setting whose default is not among its declared values.
    #[error("setting `{key}`: default `{default}` is not among its values ({allowed})")]
    DefaultNotAllowed {
        /// The setting.
        key: String,
        /// Its default.
        default: String,
        /// Its declared values, comma-separated.
        allowed: String,
    },
    /// A `--set` argument without `=`.
    #[error("`{text}` is not KEY=VALUE")]
    BadSetting {
        /// The text.
        text: String,
    },
    /// A kernel no family of the registry lists.
    #[error("kernel `{kernel}` is not listed by any family of the registry")]
    UnknownKernel {
        /// The kernel.
        kernel: String,
    },
    /// An empty id or emitter.
    #[error("`{field}` is empty")]
    Empty {
        /// The field.
        field: &'static str,
    },
}

impl Rules {
    /// Loads rules from the TOML `text` of the file named `origin`. With a `registry`, every
    /// kernel must be listed by one of its families.
    pub fn from_toml(
        text: &str,
        origin: &str,
        registry: Option<&Families>,
    ) -> Result<Rules, RulesError> {
        let decl: RulesDecl = parse_document(text).map_err(|e| RulesError {
            origin: origin.to_owned(),
            place: String::new(),
            kind: Box::new(RulesErrorKind::Toml(e)),
        })?;
        Rules::from_decl(decl, origin, registry)
    }

    /// Validates declarations (the path the TOML loader takes too).
    pub fn from_decl(
        decl: RulesDecl,
        origin: &str,
        registry: Option<&Families>,
    ) -> Result<Rules, RulesError> {
        let err = |place: String, kind| RulesError {
            origin: origin.to_owned(),
            place,
            kind: Box::new(kind),
        };
        if decl.schema != 1 {
            return Err(err(
                String::new(),
                RulesErrorKind::Toml(TomlError::Schema { found: decl.schema }),
            ));
        }
        let defaults: BTreeMap<String, String> = decl
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.default.0.clone()))
            .collect();
        let mut allowed: BTreeMap<String, Allowed> = BTreeMap::new();
        for (key, setting) in &decl.settings {
            let mut values: Vec<String> = setting.values.iter().map(|v| v.0.clone()).collect();
            values.sort();
            values.dedup();
            let declared = !values.is_empty();
            if declared && values.binary_search(&setting.default.0).is_err() {
                return Err(err(
                    "[settings]: ".to_owned(),
                    RulesErrorKind::DefaultNotAllowed {
                        key: key.clone(),
                        default: setting.default.0.clone(),
                        allowed: values.join(", "),
                    },
                ));
            }
            allowed.insert(key.clone(), Allowed { values, declared });
        }
        let mut rules: Vec<Rule> = Vec::with_capacity(decl.rules.len());
        for r in &decl.rules {
            let place = format!("rule `{}`: ", r.id);
            if r.id.is_empty() {
                return Err(err(place, RulesErrorKind::Empty { field: "id" }));
            }
            if rules.iter().any(|x| x.id == r.id) {
                return Err(err(place, RulesErrorKind::DuplicateId { id: r.id.clone() }));
            }
            if r.emitter.is_empty() {
                return Err(err(place, RulesErrorKind::Empty { field: "emitter" }));
            }
            let rows = match r.rows {
                Some([lo, hi]) if lo == 0 || lo > hi => {
                    return Err(err(place, RulesErrorKind::BadRows { lo, hi }));
                }
                Some([lo, hi]) => (lo, hi),
                None => (1, u64::MAX),
            };
            if r.pattern.is_empty() {
                return Err(err(place, RulesErrorKind::EmptyPattern));
            }
            let mut pattern = Vec::with_capacity(r.pattern.len());
            for (i, e) in r.pattern.iter().enumerate() {
                let op: Op = e
                    .op
                    .parse()
                    .map_err(|x| err(format!("{place}pattern[{i}]: "), RulesErrorKind::Op(x)))?;
                pattern.push(Element {
                    op,
                    matcher: e.node.as_deref().map(WildMatch::new),
                    node: e.node.clone(),
                    keep: e.keep,
                });
            }
            for (key, value) in &r.when {
                let Some(a) = allowed.get(key) else {
                    return Err(err(format!("{place}when: "), undeclared(key, &defaults)));
                };
                if a.declared && a.values.binary_search(&value.0).is_err() {
                    return Err(err(
                        format!("{place}when: "),
                        RulesErrorKind::BadSettingValue {
                            key: key.clone(),
                            value: value.0.clone(),
                            default: defaults[key].clone(),
                            allowed: a.values.join(", "),
                            declared: true,
                        },
                    ));
                }
            }
            if let Some(registry) = registry {
                for k in &r.kernels {
                    if registry.of_kernel(k).is_none() {
                        return Err(err(
                            format!("{place}kernels: "),
                            RulesErrorKind::UnknownKernel { kernel: k.clone() },
                        ));
                    }
                }
            }
            rules.push(Rule {
                id: r.id.clone(),
                pattern,
                kernels: r.kernels.clone(),
                emitter: r.emitter.clone(),
                rows,
                when: r
                    .when
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0.clone()))
                    .collect(),
                priority: r.priority,
            });
        }
        // A setting without declared values allows its default and the values `when`s test;
        // one no `when` tests allows anything (every value plans alike).
        for rule in &rules {
            for (key, value) in &rule.when {
                let a = allowed.get_mut(key).expect("checked above");
                if !a.declared {
                    a.values.push(value.clone());
                }
            }
        }
        for (key, a) in &mut allowed {
            if !a.declared && !a.values.is_empty() {
                a.values.push(defaults[key].clone());
                a.values.sort();
                a.values.dedup();
            }
        }
        Ok(Rules {
            origin: origin.to_owned(),
            defaults,
            allowed,
            rules,
            decl,
        })
    }

    /// The name the rules were loaded under (errors at plan time name it).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The rules in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The declarations the rules were built from.
    pub fn decl(&self) -> &RulesDecl {
        &self.decl
    }

    /// The TOML text of the declarations; loading it gives equal rules.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(&self.decl)
    }

    /// The declared settings with their defaults.
    pub fn defaults(&self) -> Settings {
        Settings {
            values: self.defaults.clone(),
        }
    }

    /// The settings with `overrides` (`KEY=VALUE` pairs) applied; a key the rules do not
    /// declare is an error (`origin` names where the overrides come from, e.g. `--set`).
    pub fn settings<'a>(
        &self,
        overrides: impl IntoIterator<Item = (&'a str, &'a str)>,
        origin: &str,
    ) -> Result<Settings, RulesError> {
        let mut values = self.defaults.clone();
        let err = |kind| RulesError {
            origin: origin.to_owned(),
            place: String::new(),
            kind: Box::new(kind),
        };
        for (k, v) in overrides {
            let Some(slot) = values.get_mut(k) else {
                return Err(err(undeclared(k, &self.defaults)));
            };
            let a = &self.allowed[k];
            if !a.values.is_empty() && a.values.binary_search_by(|x| x.as_str().cmp(v)).is_err() {
                return Err(err(RulesErrorKind::BadSettingValue {
                    key: k.to_owned(),
                    value: v.to_owned(),
                    default: self.defaults[k].clone(),
                    allowed: a.values.join(", "),
                    declared: a.declared,
                }));
            }
            *slot = v.to_owned();
        }
        Ok(Settings { values })
    }

    /// The rules that apply at `n` under `settings`, in the order they claim nodes: priority
    /// (higher first), then id.
    pub fn applicable(&self, n: u64, settings: &Settings) -> Vec<&Rule> {
        let mut rules: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.applies(n, settings))
            .collect();
        rules.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.id.cmp(&b.id)));
        rules
    }
}

/// Parses `KEY=VALUE`.
pub fn parse_setting(text: &str) -> Result<(&str, &str), RulesErrorKind> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| RulesErrorKind::BadSetting {
            text: text.to_owned(),
        })
}

fn bad_value(key: &str, value: &str, default: &str, allowed: &str, declared: bool) -> String {
    if declared {
        format!("setting `{key}` has no value `{value}` (its values: {allowed})")
    } else {
        format!(
            "setting `{key}` = `{value}` is neither its default nor a value a rule's `when` tests (allowed: {allowed}); a typo would match no rule. To allow it, list the values: {key} = {{ default = \"{default}\", values = [...] }}"
        )
    }
}

fn undeclared(key: &str, defaults: &BTreeMap<String, String>) -> RulesErrorKind {
    RulesErrorKind::UndeclaredSetting {
        key: key.to_owned(),
        declared: if defaults.is_empty() {
            "none".to_owned()
        } else {
            defaults.keys().cloned().collect::<Vec<_>>().join(", ")
        },
    }
}
