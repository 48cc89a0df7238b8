//! An engine's command-line flags as its folder classifies them (`engines/<folder>/
//! serve_flags.toml`, overlaid along `extends`; docs/engines.md "A serve line"), and the
//! engine's own parsing of a flag's value: Python's `int()` and `float()`, vLLM's
//! `human_readable_int` (`32k`, `1M`), JSON.
//!
//! Invariants: the engine's knowledge (which flags exist, what each does to memory, how it is
//! spelled) is in the folder's file, never here; every flag of the file is checked when the
//! table loads (a class, an arity and a type it can parse), so a mistake in the file is one
//! line naming the file and the flag; a value parses exactly as the engine parses it or is
//! refused naming the flag and the value, and a number never wraps.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::CliError;

/// What a flag is to the prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Read into the prediction through a planner flag.
    Modelled,
    /// No byte depends on it.
    Ignored,
    /// Memory depends on it and it is not modelled (unless its value is a `no_byte` one).
    Refused,
    /// Says which model (`role`).
    Model,
}

/// How many values a flag takes (argparse's action and nargs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Takes {
    /// `store_true`: no value.
    None,
    /// `BooleanOptionalAction`: `--x` is true, `--no-x` false.
    Bool,
    /// One value.
    One,
    /// nargs "?": one value if the next word is not a flag.
    Optional,
    /// nargs "+": one or more values.
    List,
    /// nargs "*": any number of values, none included.
    Any,
}

/// How a value is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    /// Python's `int()`.
    Int,
    /// Python's `float()`.
    Float,
    /// Any text.
    Str,
    /// JSON.
    Json,
    /// JSON when the text looks like an object, else text (vLLM's `union_dict_and_str`).
    DictOrStr,
    /// vLLM's `human_readable_int` (`1k` = 1000, `1K` = 1024).
    HumanInt,
    /// `human_readable_int` as vLLM 0.10.1-0.12.0 wrote it: k, m, g (K, M, G) only; `1T` is
    /// Python's `int("1T")`, an error.
    HumanIntKmg,
    /// `human_readable_int`, or `-1` / `auto` for the model's own (`human_readable_int_or_auto`).
    HumanIntOrAuto,
    /// A whole number with a case-sensitive SI (`k`, `M`, `G`, `T`: decimals allowed, exact
    /// decimal arithmetic) or IEC (`Ki`, `Mi`, `Gi`, `Ti`: whole numbers only) suffix (SGLang's
    /// `human_readable_int`).
    SiIecInt,
}

/// What a `model` flag says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The model (a folder or a repository id).
    Name,
    /// The repository's revision.
    Revision,
    /// The folder the engine downloads the model into (a Hugging Face cache).
    DownloadDir,
}

/// One flag of the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flag {
    pub class: Class,
    pub takes: Takes,
    #[serde(rename = "type")]
    pub ty: Option<ValueType>,
    /// Its other spellings (`-tp`).
    #[serde(default)]
    pub short: Vec<String>,
    /// `model`: what it says.
    pub role: Option<Role>,
    /// `modelled`: the planner's flag it gives (for `--x` of a `bool`).
    pub to: Option<String>,
    /// `modelled` `bool`: the planner's flag `--no-x` gives (none: nothing, the default).
    pub to_no: Option<String>,
    /// `modelled`: the values modelled (others are refused with `why`).
    pub values: Option<Vec<String>>,
    /// `modelled`: the engine's synonyms, as the planner spells them.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// The engine's own choices (a value outside them the engine refuses).
    pub choices: Option<Vec<String>>,
    /// `refused`: the values that leave the engine's default memory unchanged.
    #[serde(default)]
    pub no_byte: Vec<toml::Value>,
    /// `refused`: a flag (without a value) whose being given makes the `no_byte` values
    /// change memory after all (before 0.12, `-O3` is the default compilation level unless
    /// `--enforce-eager` is given).
    pub no_byte_unless: Option<String>,
    /// The text `None` (or an empty text) gives the default.
    #[serde(default)]
    pub none: bool,
    /// Why a refused flag (or value) is refused.
    pub why: Option<String>,
    /// The engine source that registers it.
    pub at: String,
    /// The first release of the file's `releases` that has it (a folder whose releases
    /// differ): an earlier one lacks it.
    pub since: Option<String>,
    /// The last release of the file's `releases` that has it: a later one lacks it, as a flag
    /// under `absent` naming that release.
    pub until: Option<String>,
    /// `modelled` int: why a negative value, which the engine takes (SGLang's
    /// `--chunked-prefill-size -1` disables chunked prefill), is refused; absent: the engine
    /// refuses a negative count at start-up.
    pub negative: Option<String>,
}

/// The words that start the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launcher {
    pub words: Vec<String>,
    /// Whether the first positional word is the model.
    pub positional_model: bool,
    /// Whether `--model M` (the flag as its own word) may be given: vLLM 0.10.1-0.11.0's
    /// `vllm serve` raises before argparse reads it (`--model=M` passes).
    #[serde(default = "yes")]
    pub model_flag: bool,
    /// The first release of the file's `releases` that has it (an earlier one lacks it).
    pub since: Option<String>,
    /// The flag a first word that is not a flag becomes (`sglang serve M ...` is
    /// `--model-path M ...`); a positional word anywhere else is then refused.
    pub first_word_flag: Option<String>,
}

fn yes() -> bool {
    true
}

/// The engine's own rewriting of the line before argparse sees it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParserRules {
    /// `--max_model_len` is `--max-model-len`.
    #[serde(default)]
    pub underscores: bool,
    /// `--flag.key value` builds the JSON of `--flag`.
    #[serde(default)]
    pub dotted_json: bool,
    /// `-O3` is this flag with `3`; a dotted key (`-O.level`) takes it as `-O.level=3`, that
    /// flag's JSON (vLLM before 0.12: `-O` was --compilation-config).
    pub optimization_flag: Option<String>,
    /// What `-O.key` is (vLLM 0.12.0: `-cc.key`; before: `-O.key` itself); none: `-O.key` is
    /// `-O` followed by `.key`, an optimization level like any other.
    pub optimization_dotted: Option<String>,
    /// A unique prefix of a long flag is that flag.
    #[serde(default)]
    pub abbreviations: bool,
    /// The model served when the line names none.
    pub default_model: Option<String>,
}

/// Environment assignments before the command.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvRules {
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Variables the release reads that change no byte at these values only (the release's
    /// default): another value is refused. Takes precedence over `ignored`.
    #[serde(default)]
    pub no_byte: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    schema: u32,
    engine: String,
    /// The releases whose source the table (as overlaid up to this file) was read from.
    releases: Vec<String>,
    launcher: Vec<Launcher>,
    #[serde(default)]
    parser: ParserRules,
    #[serde(default)]
    env: EnvRules,
    flags: BTreeMap<String, Flag>,
    #[serde(default)]
    absent: BTreeMap<String, String>,
    /// Flags of the later releases a folder extends that this one does not register yet ->
    /// the first release with it (an earlier folder overlaying a later one's table).
    #[serde(default)]
    not_yet: BTreeMap<String, String>,
    /// Where this folder's release registers a flag it inherits unchanged (`file:line`), so
    /// that each release's flags are cited in that release's sources.
    #[serde(default)]
    at: BTreeMap<String, String>,
}

/// An engine release's flags.
#[derive(Debug, Clone)]
pub struct ServeTable {
    /// The engine (`vllm`).
    pub engine: String,
    /// The release, as messages name it (`vLLM 0.19.0`).
    pub release: String,
    /// The release as pip spells it (`0.19.0`).
    pub version: String,
    pub launchers: Vec<Launcher>,
    pub parser: ParserRules,
    pub env: EnvRules,
    /// By long name.
    pub flags: BTreeMap<String, Flag>,
    /// Other spelling -> long name.
    pub aliases: BTreeMap<String, String>,
    /// Flags of earlier releases this one lacks -> the last release that had it.
    pub absent: BTreeMap<String, String>,
    /// Flags of later releases this one lacks yet -> the first release that has it.
    pub not_yet: BTreeMap<String, String>,
}

/// The engine's name as messages print it.
pub fn engine_title(engine: &str) -> String {
    match engine {
        "vllm" => "vLLM".to_owned(),
        "sglang" => "SGLang".to_owned(),
        other => other.to_owned(),
    }
}

/// A release's numbers (`0.10.1.1` -> [0, 10, 1, 1], `0.4.9.post3` -> [0, 4, 9, 3]: a
/// post-release after its release) for ordering; a part that is not a number orders first.
fn numeric(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|p| p.strip_prefix("post").unwrap_or(p).parse().unwrap_or(0))
        .collect()
}

/// Whether the serve table `folder` has (its own or inherited; none: false) lists `version`
/// among the releases it was read for.
fn covers(folder: &str, version: &str) -> Result<bool, CliError> {
    let mut merged = toml::Table::new();
    for (text, from) in engines::serve_flags(folder)? {
        let table: toml::Table = toml::from_str(text).map_err(|e| format!("{from}: {e}"))?;
        engine_profile::file::overlay(&mut merged, table);
    }
    Ok(merged
        .get("releases")
        .and_then(toml::Value::as_array)
        .is_some_and(|rs| rs.iter().any(|r| r.as_str() == Some(version))))
}

impl ServeTable {
    /// The table of an engine folder (`vllm-0.19`) for its release `version`: refused in one
    /// line when the folder's table (its own file or the one it inherits) was not read for
    /// that release.
    pub fn of_folder(folder: &str, version: &str) -> Result<ServeTable, CliError> {
        let texts = engines::serve_flags(folder)?;
        if texts.is_empty() {
            return Err(format!(
                "engines/{folder} has no serve_flags.toml: its command line is not known"
            )
            .into());
        }
        ServeTable::from_texts(&texts, version)
    }

    /// The table of the release `spec` names (`vllm==0.19.1`), or for `vllm` alone the newest
    /// release whose command line is modelled (a folder without a table of its own inherits
    /// its base's, which says the releases it was read for).
    pub fn of_release(spec: &str) -> Result<ServeTable, CliError> {
        let release = engines::resolve(spec)?;
        if let Some((_, wanted)) = spec.split_once("==") {
            return ServeTable::of_folder(release.folder, wanted.trim());
        }
        let mut all: Vec<(Vec<u64>, String, &'static str)> = engines::catalogue()?
            .into_iter()
            .filter(|r| r.engine == release.engine)
            .flat_map(|r| {
                r.releases
                    .iter()
                    .map(|v| (numeric(v), v.clone(), r.folder))
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort();
        for (_, version, folder) in all.iter().rev() {
            if covers(folder, version)? {
                return ServeTable::of_folder(folder, version);
            }
        }
        Err(format!(
            "no release of {} has its command line modelled (a serve_flags.toml)",
            engine_title(&release.engine)
        )
        .into())
    }

    /// Parses the overlaid texts (base first).
    pub fn from_texts(texts: &[(&str, String)], version: &str) -> Result<ServeTable, CliError> {
        let origin = texts
            .iter()
            .map(|(_, o)| o.as_str())
            .collect::<Vec<_>>()
            .join(" + ");
        let mut merged = toml::Table::new();
        for (text, from) in texts {
            let table: toml::Table = toml::from_str(text).map_err(|e| format!("{from}: {e}"))?;
            // A release that drops a flag lists it under `absent`; one that brings a flag
            // back lists it under `flags`: the later file wins over its base's either way.
            let named = |key: &str| -> Vec<String> {
                table
                    .get(key)
                    .and_then(toml::Value::as_table)
                    .map(|t| t.keys().cloned().collect())
                    .unwrap_or_default()
            };
            // A flag restated replaces its base's entry whole (an entry is never a mix of
            // two releases' keys).
            for (key, other) in [
                ("absent", "flags"),
                ("not_yet", "flags"),
                ("flags", "absent"),
                ("flags", "not_yet"),
                ("flags", "flags"),
                // A flag restated cites its own `at`, not an `[at]` of a later release's file.
                ("flags", "at"),
                ("absent", "at"),
                ("not_yet", "at"),
            ] {
                for name in named(key) {
                    if let Some(toml::Value::Table(t)) = merged.get_mut(other) {
                        t.remove(&name);
                    }
                }
            }
            engine_profile::file::overlay(&mut merged, table);
        }
        let file: File = toml::Value::Table(merged)
            .try_into()
            .map_err(|e| format!("{origin}: {e}"))?;
        if file.schema != 1 {
            return Err(format!("{origin}: schema {} (expected 1)", file.schema).into());
        }
        let title = engine_title(&file.engine);
        if !file.releases.iter().any(|r| r == version) {
            return Err(format!(
                "{title} {version}'s command line is not modelled: {origin} was read from the source of {title} {} only; choose one of those with --engine {}==X",
                file.releases.join(", "),
                file.engine
            )
            .into());
        }
        let mut flags = file.flags;
        let mut absent = file.absent;
        let mut not_yet = file.not_yet;
        for (name, at) in file.at {
            match flags.get_mut(&name) {
                Some(f) => f.at = at,
                None => return Err(format!("{origin}: `[at]` names `{name}`, not a flag").into()),
            }
        }
        let wanted = numeric(version);
        flags.retain(|name, f| {
            if let Some(s) = f.since.as_deref()
                && wanted < numeric(s)
            {
                not_yet.insert(name.clone(), s.to_owned());
                return false;
            }
            match &f.until {
                Some(u) if wanted > numeric(u) => {
                    absent.insert(name.clone(), u.clone());
                    false
                }
                _ => true,
            }
        });
        let mut aliases = BTreeMap::new();
        for (name, flag) in &flags {
            check_flag(name, flag).map_err(|e| format!("{origin}: flag `{name}`: {e}"))?;
            if let Some(u) = &flag.no_byte_unless
                && flags
                    .get(u)
                    .is_none_or(|f| !matches!(f.takes, Takes::None | Takes::Bool))
            {
                return Err(format!(
                    "{origin}: flag `{name}`: `no_byte_unless` names `{u}`, not a flag without a value"
                )
                .into());
            }
            for short in &flag.short {
                if aliases.insert(short.clone(), name.clone()).is_some()
                    || flags.contains_key(short)
                {
                    return Err(format!("{origin}: `{short}` names two flags").into());
                }
            }
        }
        // `-O.level` names the flag before its first dot (`-O`, another spelling of a flag).
        for o in [
            &file.parser.optimization_flag,
            &file.parser.optimization_dotted,
        ]
        .into_iter()
        .flatten()
        {
            let name = o.split('.').next().unwrap_or_default();
            if !flags.contains_key(name) && !aliases.contains_key(name) {
                return Err(format!("{origin}: `-O` is read as `{o}`, not a flag").into());
            }
        }
        let mut launchers = file.launcher;
        launchers.retain(|l| l.since.as_deref().is_none_or(|s| wanted >= numeric(s)));
        Ok(ServeTable {
            release: format!("{title} {version}"),
            version: version.to_owned(),
            engine: file.engine,
            launchers,
            parser: file.parser,
            env: file.env,
            flags,
            aliases,
            absent,
            not_yet,
        })
    }

    /// The flag `name` spells (a long name or another spelling), if any.
    pub fn flag(&self, name: &str) -> Option<(&str, &Flag)> {
        let long = self.aliases.get(name).map_or(name, String::as_str);
        self.flags.get_key_value(long).map(|(k, f)| (k.as_str(), f))
    }
}

/// A flag of the file is one the parser can read.
fn check_flag(name: &str, f: &Flag) -> Result<(), String> {
    if !name.starts_with('-') {
        return Err("a flag starts with `-`".into());
    }
    let valued = !matches!(f.takes, Takes::None | Takes::Bool);
    if valued != f.ty.is_some() {
        return Err(if valued {
            "a flag that takes a value needs its `type`".into()
        } else {
            "a flag without a value has no `type`".into()
        });
    }
    match f.class {
        Class::Modelled if f.to.is_none() => return Err("`modelled` needs `to`".into()),
        Class::Model if f.role.is_none() => return Err("`model` needs `role`".into()),
        Class::Refused if f.why.is_none() => return Err("`refused` needs `why`".into()),
        _ => {}
    }
    if f.values.is_some() && f.why.is_none() {
        return Err("`values` needs `why` (said of the others)".into());
    }
    if f.no_byte_unless.is_some() && f.no_byte.is_empty() {
        return Err("`no_byte_unless` needs `no_byte`".into());
    }
    if f.negative.is_some() && (f.class != Class::Modelled || f.ty != Some(ValueType::Int)) {
        return Err("`negative` is for a `modelled` flag of type `int`".into());
    }
    if f.to_no.is_some() && f.takes != Takes::Bool {
        return Err("`to_no` is for a `bool` flag".into());
    }
    for v in &f.no_byte {
        let ok = match (f.takes, v) {
            (Takes::Bool | Takes::None, toml::Value::Boolean(_)) => true,
            (_, toml::Value::String(_) | toml::Value::Integer(_) | toml::Value::Float(_)) => valued,
            _ => false,
        };
        if !ok {
            return Err(format!("`no_byte` value {v} does not fit the flag"));
        }
    }
    Ok(())
}

/// A value as the engine parses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i128),
    Float(f64),
    Text(String),
    Json(serde_json::Value),
    /// `auto` / `-1` of `human_int_or_auto`, or `None` of a `none` flag: the default.
    Default,
}

impl Value {
    /// Whether this value is `v`, one of a flag's `no_byte` values.
    pub fn is(&self, v: &toml::Value) -> bool {
        match (self, v) {
            (Value::Int(a), toml::Value::Integer(b)) => *a == i128::from(*b),
            (Value::Float(a), toml::Value::Integer(b)) => *a == *b as f64,
            (Value::Float(a), toml::Value::Float(b)) => a == b,
            (Value::Text(a), toml::Value::String(b)) => a == b,
            (Value::Json(a), toml::Value::String(b)) => {
                serde_json::from_str::<serde_json::Value>(b).is_ok_and(|b| *a == b)
            }
            _ => false,
        }
    }

    /// The value as the planner's flag takes it.
    pub fn planner_text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            // Rust's shortest representation that reads back as the same f64.
            Value::Float(x) => x.to_string(),
            Value::Text(t) => t.clone(),
            Value::Json(j) => j.to_string(),
            Value::Default => String::new(),
        }
    }
}

/// Parses `text` as the engine parses a value of `ty`; the error says why, in the engine's
/// terms (the caller names the flag).
pub fn parse_value(text: &str, ty: ValueType, none: bool) -> Result<Value, String> {
    if none && (text.is_empty() || text == "None") {
        return Ok(Value::Default);
    }
    match ty {
        ValueType::Int => py_int(text).map(Value::Int),
        ValueType::Float => py_float(text).map(Value::Float),
        ValueType::Str => Ok(Value::Text(text.to_owned())),
        ValueType::Json => serde_json::from_str(text)
            .map(Value::Json)
            .map_err(|e| format!("not JSON ({e})")),
        ValueType::DictOrStr => {
            let t = text.trim();
            if t.starts_with('{') && t.ends_with('}') {
                serde_json::from_str(text)
                    .map(Value::Json)
                    .map_err(|e| format!("not JSON ({e})"))
            } else {
                Ok(Value::Text(text.to_owned()))
            }
        }
        ValueType::HumanInt => human_int(text).map(Value::Int),
        ValueType::HumanIntKmg => {
            let t = py_strip(text);
            if t.ends_with(['t', 'T']) {
                // The regex matches, the suffix is in neither table: `int(value)` refuses it.
                return py_int(text).map(Value::Int);
            }
            human_int(text).map(Value::Int)
        }
        ValueType::SiIecInt => si_iec_int(text).map(Value::Int),
        ValueType::HumanIntOrAuto => {
            let t = text.trim();
            if t == "-1" || t.eq_ignore_ascii_case("auto") {
                Ok(Value::Default)
            } else {
                human_int(text).map(Value::Int)
            }
        }
    }
}

/// Python's whitespace, which `int()` and `float()` strip (ASCII's; the other Unicode spaces
/// Python also strips are refused below as not a number).
fn py_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b')
}

/// Digits with single underscores between them (PEP 515), underscores removed.
fn py_digits(text: &str) -> Option<String> {
    if text.is_empty()
        || text.starts_with('_')
        || text.ends_with('_')
        || text.contains("__")
        || !text.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    Some(text.replace('_', ""))
}

/// Python's `int(text)` (base 10), within i128.
pub fn py_int(text: &str) -> Result<i128, String> {
    let t = py_strip(text);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = py_digits(digits).ok_or_else(|| format!("`{text}` is not a whole number"))?;
    let n: i128 = digits
        .parse()
        .map_err(|_| format!("`{text}` is out of range"))?;
    Ok(if negative { -n } else { n })
}

/// Python's `float(text)`.
pub fn py_float(text: &str) -> Result<f64, String> {
    let t = py_strip(text);
    let bad = || format!("`{text}` is not a number");
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => ("-", &t[1..]),
        Some(b'+') => ("", &t[1..]),
        _ => ("", t),
    };
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return format!("{sign}{lower}").parse().map_err(|_| bad());
    }
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower.as_str(), None),
    };
    let (whole, frac) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let part = |p: &str| {
        if p.is_empty() {
            Some(String::new())
        } else {
            py_digits(p)
        }
    };
    let whole = part(whole).ok_or_else(bad)?;
    let frac = match frac {
        Some(f) => Some(part(f).ok_or_else(bad)?),
        None => None,
    };
    if whole.is_empty() && frac.as_deref().is_none_or(str::is_empty) {
        return Err(bad());
    }
    let exponent = match exponent {
        Some(e) => {
            let (s, d) = match e.as_bytes().first() {
                Some(b'-') => ("-", &e[1..]),
                Some(b'+') => ("", &e[1..]),
                _ => ("", e),
            };
            format!("e{s}{}", py_digits(d).ok_or_else(bad)?)
        }
        None => String::new(),
    };
    let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
    format!("{sign}{whole}{frac}{exponent}")
        .parse()
        .map_err(|_| bad())
}

/// vLLM's `human_readable_int` (engine/arg_utils.py:2286-2329 in 0.19.0): `25.6k` is
/// int(25.6 x 1000) = 25,600 (a decimal suffix k, m, g, t multiplies a float and truncates),
/// `1K` is 1,024 (a binary suffix K, M, G, T takes whole numbers only), anything else Python's
/// `int()`.
pub fn human_int(text: &str) -> Result<i128, String> {
    let t = py_strip(text);
    if let Some(suffix) = t.chars().last()
        && "kKmMgGtT".contains(suffix)
    {
        let number = &t[..t.len() - 1];
        let (whole, frac) = match number.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (number, None),
        };
        // The regex `(\d+(?:\.\d+)?)([kKmMgGtT])`: digits, maybe a point and digits.
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if digits(whole) && frac.is_none_or(digits) {
            let power = match suffix.to_ascii_lowercase() {
                'k' => 1,
                'm' => 2,
                'g' => 3,
                _ => 4,
            };
            if suffix.is_ascii_lowercase() {
                // int(float(number) * 10**(3 power)): float arithmetic, truncated.
                let x: f64 = number
                    .parse()
                    .map_err(|_| format!("`{text}` is not a size"))?;
                let product = x * 1000f64.powi(power);
                if !product.is_finite() || product >= 2f64.powi(100) {
                    return Err(format!("`{text}` is out of range"));
                }
                return Ok(product.trunc() as i128);
            }
            if frac.is_some() {
                return Err(format!(
                    "`{text}`: decimals are not allowed with binary suffixes like {suffix}; did you mean {number}{}?",
                    suffix.to_ascii_lowercase()
                ));
            }
            let n: i128 = whole
                .parse()
                .map_err(|_| format!("`{text}` is out of range"))?;
            return n
                .checked_mul(1i128 << (10 * power))
                .ok_or_else(|| format!("`{text}` is out of range"));
        }
    }
    py_int(text)
}

/// A whole number with an SI or IEC suffix, case-sensitive (SGLang 0.5.23's
/// `human_readable_int`, srt/utils/common.py:3394-3429): the regex
/// `(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)` over the stripped text; `25.6k` is
/// int(Decimal("25.6") x 1000) = 25,600 (exact decimal arithmetic, truncated), `1Ki` 1,024 (a
/// decimal before an IEC suffix is refused), anything else Python's `int()`.
pub fn si_iec_int(text: &str) -> Result<i128, String> {
    let t = py_strip(text);
    let suffixes: [(&str, u32, bool); 8] = [
        ("Ki", 1, true),
        ("Mi", 2, true),
        ("Gi", 3, true),
        ("Ti", 4, true),
        ("k", 1, false),
        ("M", 2, false),
        ("G", 3, false),
        ("T", 4, false),
    ];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    for (suffix, power, iec) in suffixes {
        let Some(number) = t.strip_suffix(suffix) else {
            continue;
        };
        let (whole, frac) = match number.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (number, None),
        };
        if !(digits(whole) && frac.is_none_or(digits)) {
            break;
        }
        let out_of_range = || format!("`{text}` is out of range");
        if iec {
            if frac.is_some() {
                return Err(format!(
                    "`{text}`: decimals are not allowed with IEC suffixes like '{suffix}'"
                ));
            }
            let n: i128 = whole.parse().map_err(|_| out_of_range())?;
            return n
                .checked_mul(1i128 << (10 * power))
                .ok_or_else(out_of_range);
        }
        // Decimal(number) x 10^(3 power), truncated: the fraction's digits beyond 3 x power
        // are dropped, the others shift into the whole part.
        let places = (3 * power) as usize;
        let frac = frac.unwrap_or("");
        let kept: String = frac.chars().take(places).collect();
        let shifted = format!("{whole}{kept:0<places$}");
        return shifted.parse::<i128>().map_err(|_| out_of_range());
    }
    py_int(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of SGLang's docstring (srt/utils/common.py:3395-3403), case included.
    #[test]
    fn si_and_iec_sizes_parse_as_sglang_parses_them() {
        assert_eq!(si_iec_int("1k"), Ok(1000));
        assert_eq!(si_iec_int("1M"), Ok(1_000_000));
        assert_eq!(si_iec_int("25.6k"), Ok(25_600));
        assert_eq!(si_iec_int("1Ki"), Ok(1024));
        assert_eq!(si_iec_int("1Mi"), Ok(1_048_576));
        assert_eq!(si_iec_int("128Ki"), Ok(131_072));
        assert_eq!(si_iec_int(" 131072 "), Ok(131_072));
        // Exact decimals, where vLLM's float arithmetic gives 1004.
        assert_eq!(si_iec_int("1.005k"), Ok(1005));
        assert_eq!(si_iec_int("1.0005k"), Ok(1000));
        // Case-sensitive: `1K` and `1m` are no suffix, so int() refuses them.
        assert_eq!(si_iec_int("1K"), Err("`1K` is not a whole number".into()));
        assert_eq!(si_iec_int("1m"), Err("`1m` is not a whole number".into()));
        assert_eq!(
            si_iec_int("1.5Ki"),
            Err("`1.5Ki`: decimals are not allowed with IEC suffixes like 'Ki'".into())
        );
        assert_eq!(si_iec_int("k"), Err("`k` is not a whole number".into()));
        assert!(si_iec_int("99999999999999999999999999999999999T").is_err());
    }

    #[test]
    fn numbers_parse_as_python_parses_them() {
        assert_eq!(py_int(" 12 "), Ok(12));
        assert_eq!(py_int("+5"), Ok(5));
        assert_eq!(py_int("-1"), Ok(-1));
        assert_eq!(py_int("1_000"), Ok(1000));
        assert_eq!(py_int("007"), Ok(7));
        assert_eq!(py_int("1__0"), Err("`1__0` is not a whole number".into()));
        assert_eq!(py_int("_1"), Err("`_1` is not a whole number".into()));
        assert_eq!(py_int("1.0"), Err("`1.0` is not a whole number".into()));
        assert_eq!(py_int("0x10"), Err("`0x10` is not a whole number".into()));
        assert_eq!(py_int(""), Err("`` is not a whole number".into()));
        assert_eq!(py_float("0.9"), Ok(0.9));
        assert_eq!(py_float(".9"), Ok(0.9));
        assert_eq!(py_float("9e-1"), Ok(0.9));
        assert_eq!(py_float("9E-1"), Ok(0.9));
        assert_eq!(py_float("1_0.5"), Ok(10.5));
        assert_eq!(py_float("1."), Ok(1.0));
        assert_eq!(py_float(" -2 "), Ok(-2.0));
        assert!(py_float("inf").unwrap().is_infinite());
        assert!(py_float("-Infinity").unwrap() < 0.0);
        assert!(py_float("nan").unwrap().is_nan());
        assert_eq!(py_float("."), Err("`.` is not a number".into()));
        assert_eq!(py_float("0.9.1"), Err("`0.9.1` is not a number".into()));
        assert_eq!(py_float("e5"), Err("`e5` is not a number".into()));
        assert_eq!(py_float("90%"), Err("`90%` is not a number".into()));
    }

    /// The examples of vLLM's docstring (engine/arg_utils.py:2287-2294) and the issue's.
    #[test]
    fn human_sizes_parse_as_vllm_parses_them() {
        assert_eq!(human_int("1k"), Ok(1000));
        assert_eq!(human_int("1K"), Ok(1024));
        assert_eq!(human_int("25.6k"), Ok(25_600));
        assert_eq!(human_int("32k"), Ok(32_000));
        assert_eq!(human_int("32K"), Ok(32_768));
        assert_eq!(human_int("1M"), Ok(1_048_576));
        assert_eq!(human_int("1m"), Ok(1_000_000));
        assert_eq!(human_int("2g"), Ok(2_000_000_000));
        assert_eq!(human_int("1T"), Ok(1 << 40));
        assert_eq!(human_int("8192"), Ok(8192));
        assert_eq!(human_int(" 8192 "), Ok(8192));
        assert_eq!(human_int("0.1k"), Ok(100));
        // 1.005 x 1000 is 1004.9999999999999 in floating point: Python's int() gives 1004.
        assert_eq!(human_int("1.005k"), Ok(1004));
        assert_eq!(
            human_int("1.5K"),
            Err(
                "`1.5K`: decimals are not allowed with binary suffixes like K; did you mean 1.5k?"
                    .into()
            )
        );
        assert_eq!(human_int("k"), Err("`k` is not a whole number".into()));
        assert_eq!(human_int("1.5"), Err("`1.5` is not a whole number".into()));
        assert_eq!(human_int("1kb"), Err("`1kb` is not a whole number".into()));
        assert!(human_int("99999999999999999999999999999999999T").is_err());
        assert_eq!(
            parse_value("auto", ValueType::HumanIntOrAuto, false),
            Ok(Value::Default)
        );
        assert_eq!(
            parse_value("-1", ValueType::HumanIntOrAuto, false),
            Ok(Value::Default)
        );
        assert_eq!(
            parse_value("32k", ValueType::HumanIntOrAuto, false),
            Ok(Value::Int(32_000))
        );
        // Before 0.13.0 (engine/arg_utils.py:1788-1823 in 0.10.1) no T: int("1T") fails.
        assert_eq!(
            parse_value("1T", ValueType::HumanIntKmg, false),
            Err("`1T` is not a whole number".into())
        );
        assert_eq!(
            parse_value(" 2G", ValueType::HumanIntKmg, false),
            Ok(Value::Int(2 << 30))
        );
        assert_eq!(
            parse_value("None", ValueType::Int, true),
            Ok(Value::Default)
        );
        assert_eq!(
            parse_value("None", ValueType::Int, false),
            Err("`None` is not a whole number".into())
        );
    }

    #[test]
    fn the_vllm_table_loads_and_classifies_the_issues_flags() {
        let t = ServeTable::of_folder("vllm-0.19", "0.19.0").unwrap();
        assert_eq!(t.release, "vLLM 0.19.0");
        let class = |n: &str| t.flag(n).map(|(_, f)| f.class);
        for ignored in [
            "--port",
            "--host",
            "--api-key",
            "--served-model-name",
            "--trust-remote-code",
            "--enable-log-requests",
        ] {
            assert_eq!(class(ignored), Some(Class::Ignored), "{ignored}");
        }
        for modelled in ["--max-model-len", "-tp", "--gpu-memory-utilization", "-q"] {
            assert_eq!(class(modelled), Some(Class::Modelled), "{modelled}");
        }
        for refused in ["--speculative-config", "--kv-cache-memory-bytes", "-cc"] {
            assert_eq!(class(refused), Some(Class::Refused), "{refused}");
        }
        assert_eq!(class("--disable-log-requests"), None);
        assert_eq!(t.absent["--disable-log-requests"], "0.16.0");
        assert_eq!(t.flags.len(), 231);
    }

    #[test]
    fn a_table_that_breaks_its_rules_is_one_line_naming_the_flag() {
        let head = "schema = 1\nengine = \"vllm\"\nreleases = [\"0\"]\n[[launcher]]\nwords = [\"vllm\", \"serve\"]\npositional_model = true\n[flags]\n";
        let bad = |flag: &str| {
            let text = format!("{head}{flag}\n");
            ServeTable::from_texts(&[(&text, "t.toml".to_owned())], "0")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            bad(r#""--x" = { class = "modelled", takes = "one", type = "int", at = "a" }"#),
            "t.toml: flag `--x`: `modelled` needs `to`"
        );
        assert_eq!(
            bad(r#""--x" = { class = "ignored", takes = "one", at = "a" }"#),
            "t.toml: flag `--x`: a flag that takes a value needs its `type`"
        );
        assert_eq!(
            bad(r#""--x" = { class = "refused", takes = "bool", at = "a" }"#),
            "t.toml: flag `--x`: `refused` needs `why`"
        );
        assert_eq!(
            bad(
                r#""--x" = { class = "refused", takes = "bool", no_byte = [1], why = "w", at = "a" }"#
            ),
            "t.toml: flag `--x`: `no_byte` value 1 does not fit the flag"
        );
        assert_eq!(
            bad(
                r#""--x" = { class = "refused", takes = "one", type = "json", no_byte_unless = "--y", why = "w", at = "a" }"#
            ),
            "t.toml: flag `--x`: `no_byte_unless` needs `no_byte`"
        );
        assert_eq!(
            bad(
                r#""--x" = { class = "refused", takes = "one", type = "json", no_byte = ["{}"], no_byte_unless = "--y", why = "w", at = "a" }"#
            ),
            "t.toml: flag `--x`: `no_byte_unless` names `--y`, not a flag without a value"
        );
        assert!(
            bad(r#""--x" = { class = "kept", takes = "bool", at = "a" }"#)
                .starts_with("t.toml: unknown variant `kept`")
        );
    }

    #[test]
    fn a_later_release_overlays_its_base_flag_by_flag() {
        let base = "schema = 1\nengine = \"vllm\"\nreleases = [\"1.0\"]\n[[launcher]]\nwords = [\"vllm\", \"serve\"]\npositional_model = true\n[flags]\n\"--a\" = { class = \"ignored\", takes = \"none\", at = \"a:1\" }\n\"--b\" = { class = \"ignored\", takes = \"none\", at = \"a:2\" }\n[absent]\n\"--c\" = \"0.9\"\n";
        // 1.1 drops --a, brings --c back and changes --b.
        let later = "releases = [\"1.1\"]\n[flags]\n\"--c\" = { class = \"ignored\", takes = \"none\", at = \"a:3\" }\n\"--b\" = { class = \"refused\", takes = \"none\", why = \"w\", at = \"a:4\" }\n[absent]\n\"--a\" = \"1.0\"\n";
        let texts = [
            (base, "base.toml".to_owned()),
            (later, "later.toml".to_owned()),
        ];
        let t = ServeTable::from_texts(&texts, "1.1").unwrap();
        assert_eq!(t.release, "vLLM 1.1");
        assert_eq!(t.flags.keys().collect::<Vec<_>>(), ["--b", "--c"]);
        assert_eq!(t.flags["--b"].class, Class::Refused);
        assert_eq!(
            t.absent.iter().collect::<Vec<_>>(),
            [(&"--a".to_owned(), &"1.0".to_owned())]
        );
        // The overlaid table stands for the later release only.
        assert_eq!(
            ServeTable::from_texts(&texts, "1.0")
                .unwrap_err()
                .to_string(),
            "vLLM 1.0's command line is not modelled: base.toml + later.toml was read from the source of vLLM 1.1 only; choose one of those with --engine vllm==X"
        );
    }

    #[test]
    fn a_named_release_reads_its_own_flags_and_an_engine_alone_is_its_newest_read() {
        // Every SGLang folder has a serve_flags.toml (engines/sglang-0.5.23's and the older
        // folders' overlays): `sglang` alone is 0.5.23.
        let t = ServeTable::of_release("sglang").unwrap();
        assert_eq!(
            (t.release.as_str(), t.version.as_str()),
            ("SGLang 0.5.23", "0.5.23")
        );
        let t = ServeTable::of_release("vllm==0.19.1").unwrap();
        assert_eq!(
            (t.release.as_str(), t.version.as_str()),
            ("vLLM 0.19.1", "0.19.1")
        );
        let newest = ServeTable::of_release("vllm").unwrap();
        assert_eq!(newest.version, "0.34.0");
    }

    /// Each release from 0.18 reads its own flags: its folder states what differs from the
    /// folder it extends (engines/vllm-0.20/serve_flags.toml and the later folders', and
    /// engines/vllm-0.18/serve_flags.toml, each read from its release's engine/arg_utils.py
    /// and cli_args.py).
    #[test]
    fn each_release_from_0_20_has_the_flags_its_source_registers() {
        let t = |v: &str| ServeTable::of_release(&format!("vllm=={v}")).unwrap();
        let class = |v: &str, f: &str| t(v).flag(f).map(|(_, flag)| flag.class);
        // 0.20.0 adds --numa-bind (engine/arg_utils.py:917), which 0.19.1 lacks.
        assert_eq!(class("0.19.1", "--numa-bind"), None);
        assert_eq!(class("0.20.0", "--numa-bind"), Some(Class::Ignored));
        assert_eq!(class("0.34.0", "--numa-bind"), Some(Class::Ignored));
        // 0.20.0 widens --kv-cache-dtype's choices (engine/arg_utils.py:1068); fp8 stays the
        // one-byte cache modelled.
        let kv = t("0.20.0");
        let (_, f) = kv.flag("--kv-cache-dtype").unwrap();
        assert!(f.choices.as_ref().unwrap().iter().any(|c| c == "nvfp4"));
        assert_eq!(
            f.values.as_deref().unwrap(),
            ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]
        );
        // 0.33.0 takes any text (`... | str`): no choices.
        assert!(
            t("0.33.0")
                .flag("--kv-cache-dtype")
                .unwrap()
                .1
                .choices
                .is_none()
        );
        // 0.27.0 drops the partial-prefill flags; 0.28.0 drops --calculate-kv-scales.
        assert_eq!(t("0.27.0").absent["--max-num-partial-prefills"], "0.26.0");
        assert_eq!(t("0.28.0").absent["--calculate-kv-scales"], "0.27.1");
        assert_eq!(
            class("0.27.1", "--calculate-kv-scales"),
            Some(Class::Refused)
        );
        // Within a folder: 0.30.0 has what 0.29.0 lacks (`since`), and 0.29.0 what 0.30.0
        // dropped (`until`), which later releases name as absent.
        assert_eq!(class("0.29.0", "--dp-sync-interval"), None);
        assert_eq!(class("0.30.0", "--dp-sync-interval"), Some(Class::Ignored));
        assert_eq!(
            class("0.29.0", "--enable-bf16x3-router-gemm"),
            Some(Class::Refused)
        );
        assert_eq!(t("0.30.0").absent["--enable-bf16x3-router-gemm"], "0.29.0");
        assert_eq!(t("0.34.0").absent["--enable-bf16x3-router-gemm"], "0.29.0");
        assert_eq!(class("0.31.0", "--enable-hc-sp"), None);
        assert_eq!(class("0.32.0", "--enable-hc-sp"), Some(Class::Refused));
        // 0.31.0 spells --gpu-memory-utilization --device-memory-utilization too; 0.34.0's
        // default is None (engine/arg_utils.py:1403).
        let v31 = t("0.31.0");
        assert_eq!(
            v31.flag("--device-memory-utilization").unwrap().0,
            "--gpu-memory-utilization"
        );
        assert!(!v31.flag("--gpu-memory-utilization").unwrap().1.none);
        assert!(t("0.34.0").flag("--gpu-memory-utilization").unwrap().1.none);
        // 0.18 lacks what 0.19.0 added (`not_yet`) and has what 0.19.0 dropped.
        let v18 = t("0.18.1");
        assert_eq!(class("0.18.1", "--renderer-num-workers"), None);
        assert_eq!(v18.not_yet["--renderer-num-workers"], "0.19.0");
        assert_eq!(
            class("0.18.0", "--disable-frontend-multiprocessing"),
            Some(Class::Ignored)
        );
        assert!(
            !v18.absent
                .contains_key("--disable-frontend-multiprocessing")
        );
        assert_eq!(v18.absent["--swap-space"], "0.17.1");
        assert!(v18.flag("-sc").is_none());
        // Every release from 0.18.0 reads its table (each file's flags pass the checks).
        let mut read = 0;
        for r in engines::catalogue().unwrap() {
            for v in &r.releases {
                if r.engine == "vllm" && numeric(v) >= numeric("0.18.0") {
                    ServeTable::of_release(&format!("vllm=={v}"))
                        .unwrap_or_else(|e| panic!("{v}: {e}"));
                    read += 1;
                }
            }
        }
        assert_eq!(read, 24);
        // And every earlier release (engines/vllm-0.10.1 ... vllm-0.17): all 39 vLLM releases.
        let every = engines::catalogue()
            .unwrap()
            .into_iter()
            .filter(|r| r.engine == "vllm")
            .flat_map(|r| r.releases)
            .inspect(|v| {
                ServeTable::of_release(&format!("vllm=={v}"))
                    .unwrap_or_else(|e| panic!("{v}: {e}"));
            })
            .count();
        assert_eq!(every, 39);
        // A flag every release keeps is inherited from 0.19's table.
        assert_eq!(
            t("0.34.0").flag("-tp").unwrap().1.to.as_deref(),
            Some("--tensor-parallel-size")
        );
    }

    /// The releases before 0.18 (engines/vllm-0.10.1 ... vllm-0.17/serve_flags.toml), each read
    /// from that release's engine/arg_utils.py and cli_args.py.
    #[test]
    fn each_release_from_0_10_1_has_the_flags_its_source_registers() {
        let t = |v: &str| ServeTable::of_release(&format!("vllm=={v}")).unwrap();
        let class = |v: &str, f: &str| t(v).flag(f).map(|(_, flag)| flag.class);
        // As many flags as each release's parser registers (flags3.py's count of its
        // add_argument calls and frontend fields).
        assert_eq!(t("0.10.1").flags.len(), 169);
        assert_eq!(t("0.10.1.1").flags.len(), 171);
        assert_eq!(t("0.12.0").flags.len(), 194);
        assert_eq!(t("0.17.1").flags.len(), 222);
        // Within a folder: 0.10.1.1 adds the h11 limits (entrypoints/openai/cli_args.py:180).
        assert_eq!(class("0.10.1", "--h11-max-header-count"), None);
        assert_eq!(t("0.10.1").not_yet["--h11-max-header-count"], "0.10.1.1");
        assert_eq!(
            class("0.10.1.1", "--h11-max-header-count"),
            Some(Class::Ignored)
        );
        // 0.16.0 adds --kernel-config; 0.15.1, in the same folder, names it not yet.
        assert_eq!(t("0.15.1").not_yet["--kernel-config"], "0.16.0");
        assert_eq!(class("0.16.0", "--kernel-config"), Some(Class::Refused));
        // A flag of a later folder: the first release with it.
        assert_eq!(t("0.10.1.1").not_yet["--kv-cache-memory-bytes"], "0.10.2");
        assert_eq!(t("0.11.2").not_yet["--optimization-level"], "0.12.0");
        // A flag a later release dropped: the last release with it.
        assert_eq!(class("0.17.1", "--swap-space"), Some(Class::Ignored));
        assert_eq!(t("0.18.0").absent["--swap-space"], "0.17.1");
        assert_eq!(t("0.13.0").absent["--task"], "0.12.0");
        // -O spells --compilation-config up to 0.11.2, -cc from 0.12.0.
        assert_eq!(t("0.11.2").flag("-O").unwrap().0, "--compilation-config");
        assert!(t("0.11.2").flag("-cc").is_none());
        assert_eq!(t("0.12.0").flag("-cc").unwrap().0, "--compilation-config");
        // Choices follow each release: bfloat16 caches from 0.11.0, fp8_ds_mla from 0.11.1,
        // block size 256 from 0.11.1 and any size from 0.18.0.
        let choices = |v: &str, f: &str| t(v).flags[f].choices.clone().unwrap_or_default();
        assert_eq!(
            choices("0.10.2", "--kv-cache-dtype"),
            ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"]
        );
        assert!(choices("0.11.0", "--kv-cache-dtype").contains(&"bfloat16".to_owned()));
        assert!(!choices("0.11.0", "--kv-cache-dtype").contains(&"fp8_ds_mla".to_owned()));
        assert_eq!(
            choices("0.11.0", "--block-size"),
            ["1", "8", "16", "32", "64", "128"]
        );
        assert_eq!(
            choices("0.17.1", "--block-size"),
            ["1", "8", "16", "32", "64", "128", "256"]
        );
        assert!(choices("0.18.0", "--block-size").is_empty());
        // Each flag cites its own release's sources: 0.10.1's --max-model-len is
        // engine/arg_utils.py:497 there, 0.17.1's :689 there, 0.19.0's :714.
        assert_eq!(
            t("0.10.1.1").flags["--max-model-len"].at,
            "engine/arg_utils.py:497"
        );
        assert_eq!(
            t("0.17.1").flags["--max-model-len"].at,
            "engine/arg_utils.py:689"
        );
        assert_eq!(
            t("0.19.0").flags["--max-model-len"].at,
            "engine/arg_utils.py:714"
        );
        // ... and every flag of every release before 0.18 is named by its own folder's file
        // (under [flags] or [at]), none cited from a later release's sources.
        for r in engines::catalogue().unwrap() {
            let old = r.releases.iter().all(|v| numeric(v) < numeric("0.18.0"));
            if r.engine != "vllm" || !old {
                continue;
            }
            let texts = engines::serve_flags(r.folder).unwrap();
            let own: toml::Table = toml::from_str(texts.last().unwrap().0).unwrap();
            let named = |k: &str| {
                own.get(k)
                    .and_then(toml::Value::as_table)
                    .map(|t| t.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default()
            };
            let mut cited = named("flags");
            cited.extend(named("at"));
            for v in &r.releases {
                for f in t(v).flags.keys() {
                    assert!(cited.contains(f), "{v}: {f} not cited by {}", r.folder);
                }
            }
        }
    }

    /// The flags vLLM 0.10.1-0.18.1 had and 0.19.0 dropped (its [absent]), each classified in
    /// the last release that had it.
    #[test]
    fn the_flags_0_19_dropped_are_classified_by_the_releases_that_had_them() {
        use Class::{Ignored, Refused};
        let expected: [(&str, Class); 29] = [
            ("--cuda-graph-sizes", Refused),
            ("--disable-async-output-proc", Ignored),
            ("--disable-frontend-multiprocessing", Ignored),
            ("--disable-log-requests", Ignored),
            ("--disable-mm-preprocessor-cache", Ignored),
            ("--enable-lora-bias", Ignored),
            ("--enable-multimodal-encoder-data-parallel", Refused),
            ("--enable-prompt-adapter", Ignored),
            ("--eplb-log-balancedness", Ignored),
            ("--eplb-step-interval", Ignored),
            ("--eplb-window-size", Ignored),
            ("--guided-decoding-backend", Ignored),
            ("--guided-decoding-disable-additional-properties", Ignored),
            ("--guided-decoding-disable-any-whitespace", Ignored),
            ("--guided-decoding-disable-fallback", Ignored),
            ("--logits-processor-pattern", Ignored),
            ("--lora-extra-vocab-size", Ignored),
            ("--max-seq-len-to-capture", Ignored),
            ("--num-lookahead-slots", Ignored),
            ("--num-redundant-experts", Refused),
            ("--override-neuron-config", Ignored),
            ("--override-pooler-config", Refused),
            ("--preemption-mode", Ignored),
            ("--rope-scaling", Refused),
            ("--rope-theta", Refused),
            ("--scheduler-delay-factor", Ignored),
            ("--swap-space", Ignored),
            ("--task", Refused),
            ("--use-gpu-for-pooling-score", Ignored),
        ];
        let v19 = ServeTable::of_release("vllm==0.19.0").unwrap();
        assert_eq!(
            v19.absent.keys().collect::<Vec<_>>(),
            expected.iter().map(|(f, _)| f).collect::<Vec<_>>()
        );
        for (flag, class) in expected {
            let last = &v19.absent[flag];
            let t = ServeTable::of_release(&format!("vllm=={last}")).unwrap();
            assert_eq!(
                t.flag(flag).map(|(_, f)| f.class),
                Some(class),
                "{flag} in {last}"
            );
        }
        // A refused one is refused unless its value is vLLM's default.
        let v12 = ServeTable::of_release("vllm==0.12.0").unwrap();
        assert_eq!(
            v12.flags["--task"].no_byte,
            [toml::Value::from("auto"), toml::Value::from("generate")]
        );
    }
}
