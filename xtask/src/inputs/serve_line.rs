//! A serve line (`vllm serve MODEL -tp 4 --max-model-len 32k --port 8000`) read as its engine
//! reads it, into the planner's flags: the engine's own rewriting (vLLM's
//! FlexibleArgumentParser: `--max_model_len`, `--flag=value`, `--flag.key value`, `-O3`) and
//! argparse's (long-flag abbreviations, `--no-x`, one or more values), then each flag by its
//! class in the engine folder's `serve_flags.toml` (`serve_table.rs`): modelled flags become
//! the planner's flags, flags that change no byte are listed, flags that change memory and
//! are not modelled are refused naming the flag. The same reading turns a log's non-default
//! args into the run's flags (`cargo xtask check-log`).
//!
//! Invariants: the engine's knowledge is its table's; this module knows argparse and shells,
//! not any engine. Every word of the line is used, listed as ignored, or refused: a word the
//! engine would refuse (an unknown flag, a missing value, a second model) is refused with one
//! line naming it and the release.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use crate::CliError;
use crate::inputs::flags::PlanArgs;
use crate::inputs::model::{ModelSources, resolve};
use crate::inputs::serve_table::{
    Class, Flag, Launcher, Role, ServeTable, Takes, Value, parse_value,
};

/// What a serve line says, for the planner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeLine {
    /// The engine (`vllm`).
    pub engine: String,
    /// The release whose flags read it (`vLLM 0.19.0`).
    pub release: String,
    /// That release as pip spells it (`0.19.0`).
    pub version: String,
    /// The line's words as given (environment assignments included).
    pub words: Vec<String>,
    /// The model as the line names it, or the engine's default when it names none.
    pub model: String,
    /// The line names no model: the engine's default is served.
    pub default_model: bool,
    /// `--revision`.
    pub revision: Option<String>,
    /// `--download-dir`.
    pub download_dir: Option<String>,
    /// Environment assignments before the command (`HF_HOME=/models`).
    pub env: Vec<(String, String)>,
    /// The planner's flags the line gives, in order.
    pub flags: Vec<String>,
    /// The words that change no byte, as given (`--port 8000`).
    pub ignored: Vec<String>,
}

/// Splits a line pasted as one text the way a POSIX shell does: words at blanks, `'...'`
/// literal, `"..."` with `\"`, `\\`, `\$`, `` \` `` escapes, a backslash before a newline
/// joining lines, any other backslash quoting the next character, `#` at a word's start
/// commenting to the end of the line. No expansion: `$VAR` stays as written.
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '#' if word.is_none() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(next) => word.get_or_insert_default().push(next),
                None => return Err("the line ends with a lone backslash".into()),
            },
            '\'' => {
                let w = word.get_or_insert_default();
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_default();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => w.push(e),
                            Some('\n') => {}
                            Some(other) => {
                                w.push('\\');
                                w.push(other);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    if let Some(w) = word {
        words.push(w);
    }
    Ok(words)
}

/// The line's words: one pasted text is split as a shell splits it; several words are the
/// shell's already.
pub fn words_of(given: &[String]) -> Result<Vec<String>, String> {
    match given {
        [one] if one.chars().any(char::is_whitespace) => split_words(one),
        _ => Ok(given.to_vec()),
    }
}

/// `NAME=value` before a command.
fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| (name.to_owned(), value.to_owned()))
}

/// The launcher `table` knows that `words` (after environment assignments) start with, and
/// how many words it takes: the first word by its file name (`/usr/bin/vllm`; any
/// `python3.12` for `python`), the others as written.
pub fn launcher_of<'t>(words: &[String], table: &'t ServeTable) -> Option<(usize, &'t Launcher)> {
    table.launchers.iter().find_map(|l| {
        let n = l.words.len();
        if words.len() < n {
            return None;
        }
        let first = words[0].rsplit('/').next().unwrap_or(&words[0]);
        let first_matches = first == l.words[0]
            || (l.words[0] == "python"
                && first
                    .strip_prefix("python")
                    .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.')));
        (first_matches && words[1..n] == l.words[1..]).then_some((n, l))
    })
}

/// The words after the environment assignments (and an `env` word before them).
pub fn command_start(words: &[String]) -> (Vec<(String, String)>, usize) {
    let mut env = Vec::new();
    let mut at = 0;
    if words.first().is_some_and(|w| w == "env") {
        at = 1;
    }
    while let Some((k, v)) = words.get(at).and_then(|w| assignment(w)) {
        env.push((k, v));
        at += 1;
    }
    (env, at)
}

/// A flag as the line gives it.
#[derive(Debug, Clone)]
struct Given {
    /// Its long name.
    long: String,
    /// `--no-x` of a `bool` flag.
    negated: bool,
    /// Its values, as written.
    values: Vec<String>,
    /// The words as given, for messages and the ignored list.
    text: String,
}

/// argparse's `_negative_number_matcher` (`^-\d+$|^-\d*\.\d+$`): such a word is a value.
fn negative_number(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('-') else {
        return false;
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    match rest.split_once('.') {
        None => !rest.is_empty() && digits(rest),
        Some((w, f)) => digits(w) && !f.is_empty() && digits(f),
    }
}

/// Whether argparse reads `word` as a value rather than a flag (its `_parse_optional`
/// returns None): a word not starting with `-`, or `-` alone; a word naming no flag (exactly,
/// before an `=`, or as the prefix of a long one) that is a negative number or holds a space.
fn is_value(word: &str, all: &[(String, String, bool)], abbreviations: bool) -> bool {
    if !word.starts_with('-') || word.len() == 1 {
        return true;
    }
    let name = word.split_once('=').map_or(word, |(w, _)| w);
    if all.iter().any(|(s, _, _)| s == word || s == name) {
        return false;
    }
    if abbreviations && word.starts_with("--") && all.iter().any(|(s, _, _)| s.starts_with(name)) {
        return false;
    }
    negative_number(word) || word.contains(' ')
}

/// FlexibleArgumentParser's rewriting (vLLM 0.19.0 utils/argparse_utils.py:177-358): `--model`
/// to the front (done by the caller's reading of roles), underscores in a long flag's name,
/// `-O3`, and `--flag.key value` gathered into `--flag JSON` after the other words.
fn flexible(tokens: &[String], table: &ServeTable) -> Result<Vec<String>, String> {
    let rules = &table.parser;
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t == "--" {
            out.extend(tokens[i..].iter().cloned());
            break;
        }
        if rules.underscores && t.starts_with("--") {
            // The name up to the first "." (and before any "="), underscores to dashes.
            let (key, rest) = match t.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (t.as_str(), None),
            };
            let (name, dotted) = match key.split_once('.') {
                Some((n, d)) => (n, Some(d)),
                None => (key, None),
            };
            let mut k = name.replace('_', "-");
            if let Some(d) = dotted {
                k = format!("{k}.{d}");
            }
            out.push(match rest {
                Some(v) => format!("{k}={v}"),
                None => k,
            });
        } else if let Some(to) = &rules.optimization_dotted
            && let Some(key) = t.strip_prefix("-O.")
        {
            // vLLM 0.12.0: `-O.key` is `-cc.key`; before it, `-O.key` itself.
            out.push(format!("{to}.{key}"));
        } else if let Some(flag) = &rules.optimization_flag
            && let Some(level) = t.strip_prefix("-O")
            && !level.is_empty()
        {
            let level = level.strip_prefix('=').unwrap_or(level);
            if flag.contains('.') {
                // Before 0.12: `-O3` is `-O.level=3` (0.11.1: `-O.mode=3`), the dotted JSON of
                // --compilation-config, gathered below.
                out.push(format!("{flag}={level}"));
            } else {
                out.push(flag.clone());
                out.push(level.to_owned());
            }
        } else if let Some(flag) = &rules.optimization_flag
            && t == "-O"
            && tokens
                .get(i + 1)
                .is_some_and(|n| ["0", "1", "2", "3"].contains(&n.as_str()))
        {
            out.push(flag.clone());
        } else {
            out.push(t.clone());
        }
        i += 1;
    }
    if !rules.dotted_json {
        return Ok(out);
    }
    // `--flag.key value`, `--flag.key=value`, `--flag.key+ a,b`: one JSON object per flag.
    let mut objects: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < out.len() {
        let t = &out[i];
        let name = t.split_once('=').map_or(t.as_str(), |(k, _)| k);
        if !(t.starts_with('-') && name.contains('.')) {
            kept.push(t.clone());
            i += 1;
            continue;
        }
        let (name, value) = match t.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => {
                let v = out
                    .get(i + 1)
                    .ok_or_else(|| format!("`{t}` needs a value"))?
                    .clone();
                i += 1;
                (t.clone(), v)
            }
        };
        i += 1;
        let (name, append) = match name.strip_suffix('+') {
            Some(n) => (n.to_owned(), true),
            None => (name, false),
        };
        let value = if append {
            serde_json::Value::Array(
                value
                    .split(',')
                    .map(|s| serde_json::Value::String(s.to_owned()))
                    .collect(),
            )
        } else {
            serde_json::from_str(&value).unwrap_or(serde_json::Value::String(value))
        };
        let mut keys = name.split('.');
        let flag = keys.next().unwrap_or_default().to_owned();
        let mut nested = value;
        for key in keys.collect::<Vec<_>>().into_iter().rev() {
            nested = serde_json::json!({ key: nested });
        }
        if !objects.contains_key(&flag) {
            order.push(flag.clone());
        }
        merge(
            objects.entry(flag).or_insert_with(|| serde_json::json!({})),
            nested,
        );
    }
    for flag in order {
        kept.push(flag.clone());
        kept.push(objects[&flag].to_string());
    }
    Ok(kept)
}

/// `recursive_dict_update`: objects merge key by key, lists extend, anything else replaces.
fn merge(into: &mut serde_json::Value, update: serde_json::Value) {
    match (into, update) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot @ serde_json::Value::Object(_)) if v.is_object() => merge(slot, v),
                    Some(serde_json::Value::Array(list)) if v.is_array() => {
                        if let serde_json::Value::Array(more) = v {
                            list.extend(more);
                        }
                    }
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Every option string the table's flags take (long names, other spellings, `--no-x`), for
/// argparse's abbreviations.
fn option_strings(table: &ServeTable) -> Vec<(String, String, bool)> {
    let mut all = Vec::new();
    for (long, f) in &table.flags {
        all.push((long.clone(), long.clone(), false));
        if f.takes == Takes::Bool
            && let Some(rest) = long.strip_prefix("--")
        {
            all.push((format!("--no-{rest}"), long.clone(), true));
        }
        for s in &f.short {
            all.push((s.clone(), long.clone(), false));
        }
    }
    all
}

/// The flag `word` names: (long name, negated), or why the engine refuses it.
fn lookup(
    word: &str,
    table: &ServeTable,
    all: &[(String, String, bool)],
) -> Result<(String, bool), String> {
    if let Some((_, long, negated)) = all.iter().find(|(s, _, _)| s == word) {
        return Ok((long.clone(), *negated));
    }
    if table.parser.abbreviations && word.starts_with("--") {
        let matches: Vec<&(String, String, bool)> =
            all.iter().filter(|(s, _, _)| s.starts_with(word)).collect();
        match matches.as_slice() {
            [(_, long, negated)] => return Ok((long.clone(), *negated)),
            [] => {}
            several => {
                let names: Vec<&str> = several.iter().map(|(s, _, _)| s.as_str()).collect();
                return Err(format!(
                    "`{word}` is ambiguous: {} reads it as the start of {} and refuses the line; write the flag in full",
                    table.release,
                    names.join(", ")
                ));
            }
        }
    }
    Err(match table.absent.get(word) {
        Some(last) => format!(
            "`{word}` is not a flag of {} ({last} was the last release with it): it refuses the line (unrecognized arguments); drop it",
            table.release
        ),
        None => match table.not_yet.get(word) {
            Some(first) => format!(
                "`{word}` is not a flag of {} ({first} was the first release with it): it refuses the line (unrecognized arguments); drop it",
                table.release
            ),
            None => format!(
                "`{word}` is not a flag of {}: it refuses the line (unrecognized arguments)",
                table.release
            ),
        },
    })
}

/// The flags and positional words of `tokens` (the words after the launcher), as argparse
/// reads them.
fn read_args(tokens: &[String], table: &ServeTable) -> Result<(Vec<Given>, Vec<String>), String> {
    let all = option_strings(table);
    let value = |w: &str| is_value(w, &all, table.parser.abbreviations);
    let mut given = Vec::new();
    let mut positionals = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        if t == "--" {
            positionals.extend(tokens[i..].iter().cloned());
            break;
        }
        if value(t) {
            positionals.push(t.clone());
            continue;
        }
        let (word, explicit) = match t.split_once('=') {
            Some((w, v)) => (w, Some(v.to_owned())),
            None => (t.as_str(), None),
        };
        let (long, negated) = lookup(word, table, &all)?;
        let flag = &table.flags[&long];
        let has_explicit = explicit.is_some();
        let mut values = Vec::new();
        match flag.takes {
            Takes::None | Takes::Bool => {
                if explicit.is_some() {
                    return Err(format!(
                        "`{t}`: {word} takes no value ({} refuses the line: ignored explicit argument)",
                        table.release
                    ));
                }
            }
            Takes::One => match explicit {
                Some(v) => values.push(v),
                None => match tokens.get(i) {
                    Some(v) if value(v) => {
                        values.push(v.clone());
                        i += 1;
                    }
                    _ => {
                        return Err(format!(
                            "`{word}` needs a value ({} refuses the line: expected one argument)",
                            table.release
                        ));
                    }
                },
            },
            Takes::Optional => match explicit {
                Some(v) => values.push(v),
                None => {
                    if let Some(v) = tokens.get(i).filter(|v| value(v)) {
                        values.push(v.clone());
                        i += 1;
                    }
                }
            },
            Takes::Any => match explicit {
                Some(v) => values.push(v),
                None => {
                    while let Some(v) = tokens.get(i).filter(|v| value(v)) {
                        values.push(v.clone());
                        i += 1;
                    }
                }
            },
            Takes::List => match explicit {
                Some(v) => values.push(v),
                None => {
                    while let Some(v) = tokens.get(i).filter(|v| value(v)) {
                        values.push(v.clone());
                        i += 1;
                    }
                    if values.is_empty() {
                        return Err(format!(
                            "`{word}` needs one or more values ({} refuses the line: expected at least one argument)",
                            table.release
                        ));
                    }
                }
            },
        }
        let text = if has_explicit {
            t.clone()
        } else {
            std::iter::once(word.to_owned())
                .chain(values.iter().map(|v| shell_word(v)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        given.push(Given {
            long,
            negated,
            values,
            text,
        });
    }
    Ok((given, positionals))
}

/// A word as a shell would need it written (quoted when it holds a blank or a quote).
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Parses one value of `flag`, refusing it in the engine's terms.
fn value_of(g: &Given, v: &str, flag: &Flag, table: &ServeTable) -> Result<Value, String> {
    let ty = flag
        .ty
        .expect("a flag with a value has a type (checked on load)");
    let value = parse_value(v, ty, flag.none)
        .map_err(|e| format!("`{}`: {e}, so {} refuses the line", g.text, table.release))?;
    let text = match &value {
        Value::Text(t) => Some(t.clone()),
        // argparse checks an int flag's choices after int(): `--block-size 016` is 16.
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    };
    if let (Some(choices), Some(t)) = (&flag.choices, &text)
        && !choices.contains(t)
    {
        return Err(format!(
            "`{}`: {} takes one of {} and refuses the line",
            g.text,
            table.release,
            choices.join(", ")
        ));
    }
    Ok(value)
}

/// Reads a line's words after its launcher (`tokens`) by `table`'s classes, into `line`.
pub fn read_flags(
    tokens: &[String],
    positional_model: bool,
    table: &ServeTable,
    line: &mut ServeLine,
) -> Result<(), String> {
    let tokens = flexible(tokens, table)?;
    let (given, positionals) = read_args(&tokens, table)?;
    // vLLM's serve refuses --served-model-name without a model first (argparse_utils.py:218-230).
    let mut model = None;
    match (positionals.as_slice(), positional_model) {
        ([], _) => {}
        ([m], true) => model = Some(m.clone()),
        ([m], false) => {
            let flag = table
                .flags
                .iter()
                .find(|(_, f)| f.role == Some(Role::Name))
                .map_or("--model", |(name, _)| name.as_str());
            // An engine with a default model parses the word and serves its default; one
            // without lets argparse refuse the word.
            return Err(match table.parser.default_model {
                Some(_) => format!(
                    "`{m}`: this launcher reads the model from --model only; {} would ignore the word and serve its default model: write --model {m}",
                    table.release
                ),
                None => format!(
                    "`{m}`: this launcher reads the model from {flag} only; {} refuses the line (unrecognized arguments): write {flag} {m}",
                    table.release
                ),
            });
        }
        ([_, extra, ..], _) => {
            return Err(format!(
                "`{extra}`: a second positional word; {} refuses the line (unrecognized arguments)",
                table.release
            ));
        }
    }
    let positional = model.clone();
    // The last of a flag given twice counts, as argparse keeps it.
    let mut last: BTreeMap<&str, &Given> = BTreeMap::new();
    for g in &given {
        last.insert(&g.long, g);
    }
    for g in &given {
        if !std::ptr::eq(last[g.long.as_str()], g) {
            continue;
        }
        let flag = &table.flags[&g.long];
        let values = g
            .values
            .iter()
            .map(|v| value_of(g, v, flag, table))
            .collect::<Result<Vec<Value>, String>>()?;
        let refused = |why: &str| {
            format!(
                "`{}` is refused: {why} ({}, {})",
                g.text, table.release, flag.at
            )
        };
        match flag.class {
            Class::Ignored => line.ignored.push(g.text.clone()),
            Class::Model => {
                let text = g.values.first().cloned();
                match flag.role.expect("checked on load") {
                    Role::Name => {
                        if let Some(p) = &positional {
                            return Err(format!(
                                "`{}` and `{p}`: two models; {} refuses the line (unrecognized arguments)",
                                g.text, table.release
                            ));
                        }
                        model = text;
                    }
                    Role::Revision => line.revision = text,
                    Role::DownloadDir => line.download_dir = text,
                }
            }
            Class::Refused => {
                let no_byte = match (flag.takes, values.as_slice()) {
                    (Takes::Bool | Takes::None, []) => {
                        flag.no_byte.contains(&toml::Value::Boolean(!g.negated))
                    }
                    (_, [Value::Default]) => true,
                    (_, [v]) => flag.no_byte.iter().any(|nb| v.is(nb)),
                    _ => false,
                };
                // A value that is the default only without another flag the line gives.
                let unless = flag
                    .no_byte_unless
                    .as_deref()
                    .is_some_and(|u| last.get(u).is_some_and(|o| !o.negated));
                if !no_byte || unless {
                    return Err(refused(flag.why.as_deref().unwrap_or("not modelled")));
                }
                line.ignored.push(g.text.clone());
            }
            Class::Modelled => {
                let to = flag.to.clone().expect("checked on load");
                match (flag.takes, values.as_slice()) {
                    (Takes::Bool | Takes::None, _) => {
                        let planner = if g.negated {
                            flag.to_no.clone()
                        } else {
                            Some(to)
                        };
                        line.flags.extend(planner);
                    }
                    (_, [Value::Default]) => {}
                    (_, [v]) => {
                        let mut text = v.planner_text();
                        if let Some(r) = flag.rename.get(&text) {
                            text = r.clone();
                        }
                        if let Some(allowed) = &flag.values
                            && !allowed.contains(&text)
                        {
                            return Err(refused(flag.why.as_deref().unwrap_or("not modelled")));
                        }
                        if let Value::Int(n) = v
                            && *n < 0
                        {
                            return Err(match &flag.negative {
                                Some(why) => refused(why),
                                None => format!(
                                    "`{}`: a negative count, which {} refuses at start-up",
                                    g.text, table.release
                                ),
                            });
                        }
                        line.flags.push(to);
                        line.flags.push(text);
                    }
                    _ => {
                        return Err(format!("`{}`: a modelled flag takes one value", g.text));
                    }
                }
            }
        }
    }
    match model {
        Some(m) => line.model = m,
        None => {
            line.default_model = true;
            line.model = table.parser.default_model.clone().ok_or_else(|| {
                format!(
                    "the line names no model and {} has no default",
                    table.release
                )
            })?;
        }
    }
    Ok(())
}

/// Reads a whole serve line (`words`, as given) with the table of the engine whose launcher it
/// starts with (`tables`: one per engine the planner models).
pub fn parse(words: &[String], tables: &[ServeTable]) -> Result<ServeLine, String> {
    let (env, at) = command_start(words);
    let command = &words[at..];
    let Some((table, (n, launcher))) = tables
        .iter()
        .find_map(|t| launcher_of(command, t).map(|l| (t, l)))
    else {
        let known: Vec<String> = tables
            .iter()
            .flat_map(|t| {
                t.launchers
                    .iter()
                    .map(|l| format!("`{}`", l.words.join(" ")))
            })
            .collect();
        return Err(format!(
            "the serve line starts with `{}`, not a launcher the planner knows ({})",
            command
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            known.join(", ")
        ));
    };
    let mut line = ServeLine {
        engine: table.engine.clone(),
        release: table.release.clone(),
        version: table.version.clone(),
        words: words.to_vec(),
        ..ServeLine::default()
    };
    for (name, value) in env {
        let text = format!("{name}={value}");
        if ["HF_HOME", "HF_HUB_CACHE"].contains(&name.as_str()) {
            line.env.push((name, value));
        } else if let Some(values) = table.env.no_byte.get(&name) {
            if !values.contains(&value) {
                return Err(format!(
                    "`{text}`: {} reads it and only {} leaves its default memory; run without it",
                    table.release,
                    values.join(", ")
                ));
            }
            line.ignored.push(text);
        } else if table.env.ignored.contains(&name) {
            line.ignored.push(text);
        } else {
            return Err(format!(
                "`{text}`: an environment variable the prediction does not read ({} reads many that change memory); run without it",
                table.release
            ));
        }
    }
    if !launcher.model_flag
        && let Some(w) = command[n..].iter().find(|w| *w == "--model")
    {
        return Err(format!(
            "`{w}` as its own word: {}'s `{}` refuses the line (ValueError: give the model as the positional word, or `--model=M`)",
            table.release,
            launcher.words.join(" ")
        ));
    }
    let mut tokens = command[n..].to_vec();
    if let Some(flag) = &launcher.first_word_flag
        && tokens.first().is_some_and(|w| !w.starts_with('-'))
    {
        tokens.insert(0, flag.clone());
    }
    read_flags(&tokens, launcher.positional_model, table, &mut line)?;
    Ok(line)
}

/// A serve line as the plan read it: the line, and the config its model resolved to.
#[derive(Debug, Clone)]
pub struct ServeNote {
    pub line: ServeLine,
    /// The config.json predicted from.
    pub config: String,
    /// Where it was found (or `--hf-config`).
    pub place: String,
}

/// The serve-line tables of the engines the planner models, or of the one `spec` names
/// (`vllm`, `vllm==0.19.0`): each engine's newest release whose command line is modelled, or
/// the named release's.
pub fn tables_for(spec: Option<&str>) -> Result<Vec<ServeTable>, CliError> {
    let specs: Vec<String> = match spec {
        Some(s) => vec![s.to_owned()],
        None => {
            let mut names: Vec<String> = engines::catalogue()?
                .into_iter()
                .map(|r| r.engine)
                .collect();
            names.sort();
            names.dedup();
            names
        }
    };
    let mut tables = Vec::new();
    let mut why = Vec::new();
    for name in &specs {
        match ServeTable::of_release(name) {
            Ok(t) => tables.push(t),
            Err(e) if spec.is_some() => return Err(e),
            // One engine whose command line is not modelled does not hide the others'.
            Err(e) => why.push(e.to_string()),
        }
    }
    if tables.is_empty() {
        return Err(why.join("; ").into());
    }
    Ok(tables)
}

/// `cargo xtask plan [FLAGS] -- SERVE LINE`: the plan's arguments with the line's flags
/// added (`argv` is the whole command line: the plan's own flags are the words between `plan`
/// and `--`), `--engine` naming the line's engine and `--hf-config` its model's config unless
/// the flags give them. A flag given both before `--` and on the line is refused, as a flag
/// given twice is.
pub fn apply(
    args: PlanArgs,
    argv: &[OsString],
    sources: &ModelSources,
) -> Result<PlanArgs, CliError> {
    if args.serve_line.is_empty() {
        return Ok(args);
    }
    let words = words_of(&args.serve_line).map_err(|e| format!("the serve line: {e}"))?;
    let tables = tables_for(args.engine.engine.as_deref())?;
    let line = parse(&words, &tables).map_err(|e| format!("the serve line: {e}"))?;
    let (config, place) = match &args.hf_config {
        Some(path) => (path.clone(), "--hf-config".to_owned()),
        None => {
            let sources = if line.env.is_empty() {
                sources.clone()
            } else {
                ModelSources {
                    hub: ModelSources::from_env(&line.env).hub,
                    ..sources.clone()
                }
            };
            let found = resolve(
                &line.model,
                line.revision.as_deref(),
                line.download_dir.as_deref(),
                &sources,
            )?;
            (found.config, found.place)
        }
    };
    let plan = argv
        .iter()
        .position(|a| a == "plan")
        .ok_or("the serve line follows `plan --`")?;
    let dash = argv
        .iter()
        .skip(plan)
        .position(|a| a == "--")
        .map_or(argv.len(), |d| plan + d);
    let mut words: Vec<OsString> = argv[plan..dash].to_vec();
    if args.engine.engine.is_none() {
        // The release that read the line predicts it.
        words.extend([
            "--engine".into(),
            format!("{}=={}", line.engine, line.version).into(),
        ]);
    }
    if args.hf_config.is_none() {
        words.extend(["--hf-config".into(), config.clone().into_os_string()]);
    }
    words.extend(line.flags.iter().map(OsString::from));
    let refused = |e: clap::Error| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default().to_owned();
        format!(
            "the flags before `--` and the serve line's together: {}",
            first.trim_start_matches("error: ")
        )
    };
    let matches = PlanCommand::command()
        .try_get_matches_from(&words)
        .map_err(refused)?;
    let mut read = PlanCommand::from_arg_matches(&matches)
        .map_err(refused)?
        .args;
    // The flags given, the line's among them, for the modes' checks.
    read.given = crate::inputs::modes::given(&matches);
    // `--engine vllm` names no release: the release that read the line predicts it, not a
    // newer one whose command line is not modelled.
    if read.engine.engine.as_deref() == Some(line.engine.as_str()) {
        read.engine.engine = Some(format!("{}=={}", line.engine, line.version));
    }
    read.serve = Some(ServeNote {
        line,
        config: config.display().to_string(),
        place,
    });
    Ok(read)
}

/// The plan's arguments alone, for a command line built here.
#[derive(Debug, clap::Parser)]
#[command(name = "plan")]
pub struct PlanCommand {
    #[command(flatten)]
    pub args: PlanArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn table() -> ServeTable {
        ServeTable::of_folder("vllm-0.19", "0.19.0").unwrap()
    }

    fn line(text: &str) -> Result<ServeLine, String> {
        parse(&split_words(text).unwrap(), &[table()])
    }

    #[test]
    fn sglang_takes_a_negative_chunked_prefill_size_and_the_refusal_says_so() {
        // SGLang's --chunked-prefill-size -1 disables chunked prefill
        // (arg_groups/fields/schedule.py:52-55; memory_hook.py:304-307 then reads
        // --max-prefill-tokens): not a negative count SGLang refuses, so the refusal names what
        // is not modelled instead.
        let sglang = ServeTable::of_folder("sglang-0.5.23", "0.5.23").unwrap();
        let words =
            split_words("python -m sglang.launch_server --model-path m --chunked-prefill-size -1")
                .unwrap();
        let e = parse(&words, &[sglang]).unwrap_err();
        assert_eq!(
            e,
            "`--chunked-prefill-size -1` is refused: a value at or below 0 disables chunked prefill, which SGLang takes; what the reserve and the prefill graphs then read (--max-prefill-tokens) is not modelled (SGLang 0.5.23, arg_groups/fields/schedule.py:52)"
        );
    }

    #[test]
    fn a_pasted_text_splits_as_a_shell_splits_it() {
        assert_eq!(
            split_words("vllm serve  m \\\n  --a 'x y' --b \"q\\\"r\" c\\ d # note\n--e").unwrap(),
            [
                "vllm", "serve", "m", "--a", "x y", "--b", "q\"r", "c d", "--e"
            ]
        );
        assert_eq!(
            split_words(r#"--limit-mm-per-prompt '{"image": 0}'"#).unwrap(),
            ["--limit-mm-per-prompt", r#"{"image": 0}"#]
        );
        assert_eq!(
            split_words("a 'b").unwrap_err(),
            "a single quote is not closed"
        );
        assert_eq!(
            split_words("a \"b").unwrap_err(),
            "a double quote is not closed"
        );
        assert_eq!(
            split_words("a \\").unwrap_err(),
            "the line ends with a lone backslash"
        );
        assert_eq!(words_of(&["x y".to_owned()]).unwrap(), ["x", "y"]);
        assert_eq!(
            words_of(&["x".to_owned(), "y z".to_owned()]).unwrap(),
            ["x", "y z"]
        );
    }

    #[test]
    fn the_issues_line_gives_the_planners_flags() {
        let l = line("vllm serve Qwen/Qwen2.5-72B-Instruct -tp 4 --max-model-len 32k --gpu-memory-utilization 0.9 --port 8000").unwrap();
        assert_eq!(l.engine, "vllm");
        assert_eq!(l.release, "vLLM 0.19.0");
        assert_eq!(l.model, "Qwen/Qwen2.5-72B-Instruct");
        assert!(!l.default_model);
        assert_eq!(
            l.flags,
            [
                "--tensor-parallel-size",
                "4",
                "--max-model-len",
                "32000",
                "--gpu-memory-utilization",
                "0.9"
            ]
        );
        assert_eq!(l.ignored, ["--port 8000"]);
    }

    #[test]
    fn vllms_spellings_read_as_vllm_reads_them() {
        // `=` values, underscores, the model after flags, `--model` anywhere.
        let l = line("vllm serve --max_model_len=1M -tp=2 m --enable-prefix-caching").unwrap();
        assert_eq!(l.model, "m");
        assert_eq!(
            l.flags,
            [
                "--max-model-len",
                "1048576",
                "--tensor-parallel-size",
                "2",
                "--enable-prefix-caching"
            ]
        );
        let l = line("vllm serve --port 1 --model org/m --no-enable-prefix-caching").unwrap();
        assert_eq!(l.model, "org/m");
        assert_eq!(l.flags, ["--no-enable-prefix-caching"]);
        // Dotted JSON: `--limit-mm-per-prompt.image 0` is `--limit-mm-per-prompt '{"image":0}'`.
        let l = line("vllm serve m --limit-mm-per-prompt.image 0").unwrap();
        assert_eq!(l.flags, ["--limit-mm-per-prompt", r#"{"image":0}"#]);
        let l = line(r#"vllm serve m --limit-mm-per-prompt '{"image": 0}'"#).unwrap();
        assert_eq!(l.flags, ["--limit-mm-per-prompt", r#"{"image":0}"#]);
        // -O3 is --optimization-level 3, the same as -O2 in 0.19 (no byte).
        let l = line("vllm serve m -O3").unwrap();
        assert_eq!(l.ignored, ["--optimization-level 3"]);
        // A unique prefix of a long flag is the flag (argparse's allow_abbrev).
        let l = line("vllm serve m --gpu-memory-util 0.8").unwrap();
        assert_eq!(l.flags, ["--gpu-memory-utilization", "0.8"]);
        // One or more values (nargs "+"), and the last of a repeated flag.
        let l = line(
            "vllm serve m --served-model-name a b --api-key k --max-num-seqs 8 --max-num-seqs 16",
        )
        .unwrap();
        assert_eq!(l.ignored, ["--served-model-name a b", "--api-key k"]);
        assert_eq!(l.flags, ["--max-num-seqs", "16"]);
        // vLLM's dtype synonyms; `auto` of max-model-len is the model's own.
        let l = line("vllm serve m --dtype half --max-model-len auto").unwrap();
        assert_eq!(l.flags, ["--dtype", "float16"]);
        // The default model, and the api_server launcher with --model.
        let l = line("vllm serve --port 1").unwrap();
        assert_eq!(
            (l.model.as_str(), l.default_model),
            ("Qwen/Qwen3-0.6B", true)
        );
        let l = line("/usr/bin/python3.12 -m vllm.entrypoints.openai.api_server --model m -tp 2")
            .unwrap();
        assert_eq!(l.model, "m");
        assert_eq!(l.flags, ["--tensor-parallel-size", "2"]);
        // Environment assignments: the cache's are kept, no-byte ones listed.
        let l = line("CUDA_VISIBLE_DEVICES=0,1 HF_HOME=/models vllm serve m").unwrap();
        assert_eq!(l.env, [("HF_HOME".to_owned(), "/models".to_owned())]);
        assert_eq!(l.ignored, ["CUDA_VISIBLE_DEVICES=0,1"]);
        // A refused flag given its default value changes no byte.
        let l = line("vllm serve m --enable-chunked-prefill --no-enable-lora --cpu-offload-gb 0")
            .unwrap();
        assert_eq!(
            l.ignored,
            [
                "--enable-chunked-prefill",
                "--no-enable-lora",
                "--cpu-offload-gb 0"
            ]
        );
    }

    /// Ten serve lines as deployments write them (vLLM's docs, recipes and Kubernetes
    /// manifests; the models the repository has a config of), each read into the same plan
    /// arguments, hence the same prediction, as the flags written by hand.
    #[test]
    fn ten_real_world_serve_lines_predict_what_their_flags_predict() {
        let data = crate::inputs::model::repository_data();
        let dir = std::env::temp_dir().join(format!("xtask-serve-lines-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A Hugging Face cache holding the two models the repository has no repos.toml entry
        // for, as `huggingface-cli download` leaves it.
        let hub = dir.join("hub");
        for (repo, config) in [
            (
                "meta-llama/Llama-3.1-70B-Instruct",
                "models/llama-3.1-70b/config.json",
            ),
            (
                "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                "checkpoints/llama-4-scout-17b-16e-instruct/config.json",
            ),
        ] {
            let folder = hub.join(format!("models--{}", repo.replace('/', "--")));
            let snap = folder.join("snapshots/0123abcd");
            std::fs::create_dir_all(&snap).unwrap();
            std::fs::create_dir_all(folder.join("refs")).unwrap();
            std::fs::write(folder.join("refs/main"), "0123abcd").unwrap();
            std::fs::copy(data.join(config), snap.join("config.json")).unwrap();
        }
        let sources = ModelSources {
            cwd: dir.clone(),
            hub: Some((hub.clone(), "HF_HUB_CACHE".to_owned())),
            data: data.clone(),
        };
        let cached = |repo: &str| {
            hub.join(format!("models--{}", repo.replace('/', "--")))
                .join("snapshots/0123abcd/config.json")
                .display()
                .to_string()
        };
        let copy = |path: &str| data.join(path).display().to_string();
        let newest = ServeTable::of_release("vllm").unwrap().version;
        let lines: [(&str, String, &[&str]); 10] = [
            // docs: the OpenAI-compatible server.
            (
                "vllm serve meta-llama/Llama-3.1-8B-Instruct --dtype auto --api-key token-abc123 --host 0.0.0.0 --port 8000",
                copy("models/llama-3.1-8b/config.json"),
                &["--dtype", "auto"],
            ),
            // The issue's line, on a model of the repository.
            (
                "vllm serve Qwen/Qwen2.5-7B-Instruct -tp 2 --max-model-len 32k --gpu-memory-utilization 0.9 --port 8000 --served-model-name qwen --trust-remote-code",
                copy("models/qwen2.5-7b/config.json"),
                &[
                    "--tensor-parallel-size",
                    "2",
                    "--max-model-len",
                    "32000",
                    "--gpu-memory-utilization",
                    "0.9",
                ],
            ),
            // A Kubernetes manifest of the older entry point.
            (
                "python3 -m vllm.entrypoints.openai.api_server --model mistralai/Mixtral-8x7B-Instruct-v0.1 --tensor-parallel-size 2 --disable-log-stats --port 8080 --uvicorn-log-level warning",
                copy("models/mixtral-8x7b-v0.1/config.json"),
                &["--tensor-parallel-size", "2"],
            ),
            // Qwen3's docs: reasoning and tool calls.
            (
                "vllm serve Qwen/Qwen3-30B-A3B --reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser hermes --max-model-len 32768",
                copy("models/qwen3-30b-a3b/config.json"),
                &["--max-model-len", "32768"],
            ),
            // vLLM's Kubernetes docs: underscores, chunked prefill.
            (
                "vllm serve deepseek-ai/DeepSeek-V2-Lite-Chat --trust-remote-code --enable-chunked-prefill --max_num_batched_tokens 1024",
                copy("models/deepseek-v2-lite/config.json"),
                &["--max-num-batched-tokens", "1024"],
            ),
            // The gpt-oss recipe.
            (
                "vllm serve openai/gpt-oss-20b --async-scheduling",
                copy("checkpoints/gpt-oss-20b/config.json"),
                &[],
            ),
            // `=` values, prefix caching, the GPUs chosen by the environment.
            (
                "CUDA_VISIBLE_DEVICES=0 vllm serve google/gemma-3-1b-it --max_model_len=32768 --dtype=bfloat16 --enable-prefix-caching",
                copy("checkpoints/gemma-3-1b-it/config.json"),
                &[
                    "--max-model-len",
                    "32768",
                    "--dtype",
                    "bfloat16",
                    "--enable-prefix-caching",
                ],
            ),
            // The Qwen3-Next recipe.
            (
                "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --served-model-name qwen3-next --max-model-len 262144",
                copy("checkpoints/qwen3-next-80b-a3b-instruct/config.json"),
                &["--tensor-parallel-size", "4", "--max-model-len", "262144"],
            ),
            // A production-stack deployment: fp8 KV cache, fewer sequences.
            (
                "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k --gpu-memory-utilization 0.95 --max-num-seqs 256 --kv-cache-dtype fp8 --disable-log-stats --port 8000",
                cached("meta-llama/Llama-3.1-70B-Instruct"),
                &[
                    "--tensor-parallel-size",
                    "4",
                    "--max-model-len",
                    "32000",
                    "--gpu-memory-utilization",
                    "0.95",
                    "--max-num-seqs",
                    "256",
                    "--kv-cache-dtype",
                    "fp8",
                ],
            ),
            // Llama 4's announcement, text only.
            (
                r#"vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct --tensor-parallel-size 8 --max-model-len 128k --limit-mm-per-prompt.image 0 --override-generation-config='{"attn_temperature_tuning": true}'"#,
                cached("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
                &[
                    "--tensor-parallel-size",
                    "8",
                    "--max-model-len",
                    "128000",
                    "--limit-mm-per-prompt",
                    r#"{"image":0}"#,
                ],
            ),
        ];
        let mut predicted = 0;
        for (text, config, flags) in lines {
            let argv: Vec<OsString> = ["xtask", "plan", "--format", "json", "--", text]
                .iter()
                .map(OsString::from)
                .collect();
            let given = PlanCommand::try_parse_from(&argv[1..]).unwrap().args;
            let read = apply(given, &argv, &sources).unwrap_or_else(|e| panic!("{text}: {e}"));
            let note = read.serve.clone().unwrap();
            assert_eq!(note.config, config, "{text}");
            // A line names no release: the newest whose command line is modelled reads it.
            let mut by_hand: Vec<String> = [
                "plan",
                "--format",
                "json",
                "--engine",
                &format!("vllm=={newest}"),
                "--hf-config",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            by_hand.push(config.clone());
            by_hand.extend(flags.iter().map(|s| s.to_string()));
            // As `main` reads a command line: the flags given are kept for the modes' checks.
            let matches = PlanCommand::command()
                .try_get_matches_from(&by_hand)
                .unwrap();
            let mut expected = PlanCommand::from_arg_matches(&matches).unwrap().args;
            expected.given = crate::inputs::modes::given(&matches);
            let plain = |mut a: PlanArgs| {
                a.serve = None;
                a.serve_line.clear();
                format!("{a:?}")
            };
            // The same arguments, hence the same prediction; shown by making it (all ten:
            // Qwen3-Next's recipe runs under 0.34's default prefix caching, its recurrent state
            // kept per block, "align").
            let predict = |a: &PlanArgs| {
                let options = crate::inputs::settings::import_options(a).unwrap();
                let name = a.engine.engine.clone().unwrap();
                crate::engine::predict_run(a, &a.engine, &name, options)
                    .map(|p| crate::render::engine::json(&p.startup))
                    .map_err(|e| e.to_string())
            };
            let (got, want) = (predict(&read), predict(&expected));
            assert_eq!(got, want, "{text}");
            predicted += usize::from(got.is_ok());
            assert_eq!(plain(read), plain(expected), "{text}");
        }
        assert_eq!(predicted, 10);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_release_that_reads_the_line_predicts_it() {
        let sources = ModelSources {
            cwd: std::env::temp_dir(),
            hub: None,
            data: crate::inputs::model::repository_data(),
        };
        let newest = ServeTable::of_release("vllm").unwrap().version;
        let engine_of = |before: &[&str]| {
            let mut argv: Vec<OsString> = vec!["xtask".into(), "plan".into()];
            argv.extend(before.iter().map(OsString::from));
            argv.extend(["--".into(), "vllm serve Qwen/Qwen3-30B-A3B -tp 2".into()]);
            let given = PlanCommand::try_parse_from(&argv[1..]).unwrap().args;
            apply(given, &argv, &sources)
                .map(|a| a.engine.engine.unwrap())
                .map_err(|e| e.to_string())
        };
        assert_eq!(engine_of(&[]).unwrap(), format!("vllm=={newest}"));
        assert_eq!(
            engine_of(&["--engine", "vllm"]).unwrap(),
            format!("vllm=={newest}")
        );
        assert_eq!(
            engine_of(&["--engine", "vllm==0.19.0"]).unwrap(),
            "vllm==0.19.0"
        );
        assert_eq!(
            engine_of(&["--engine", "vllm==0.27.1"]).unwrap(),
            "vllm==0.27.1"
        );
        assert_eq!(
            engine_of(&["--engine", "vllm==0.17.1"]).unwrap(),
            "vllm==0.17.1"
        );
        assert_eq!(
            engine_of(&["--engine", "vllm==0.10.1.1"]).unwrap(),
            "vllm==0.10.1.1"
        );
    }

    #[test]
    fn what_vllm_refuses_or_the_prediction_cannot_follow_is_one_line() {
        let e = |t: &str| line(t).unwrap_err();
        assert_eq!(
            e("vllm serve m --speculative-config '{\"method\": \"ngram\"}'"),
            r#"`--speculative-config '{"method": "ngram"}'` is refused: speculative decoding's draft model and its KV cache are not modelled (vLLM 0.19.0, engine/arg_utils.py:1303)"#
        );
        assert_eq!(
            e("vllm serve m --no-enable-chunked-prefill"),
            "`--no-enable-chunked-prefill` is refused: without chunked prefill the profile's batched tokens default to at least max_model_len; give --max-num-batched-tokens, or leave chunked prefill on (vLLM 0.19.0, engine/arg_utils.py:1237)"
        );
        assert_eq!(
            e("vllm serve m --kv-cache-dtype fp8_inc"),
            "`--kv-cache-dtype fp8_inc` is refused: only auto and the one-byte fp8 caches are modelled (vLLM 0.19.0, engine/arg_utils.py:992)"
        );
        assert_eq!(
            e("vllm serve m --kv-cache-dtype fp4"),
            "`--kv-cache-dtype fp4`: vLLM 0.19.0 takes one of auto, bfloat16, float16, fp8, fp8_ds_mla, fp8_e4m3, fp8_e5m2, fp8_inc and refuses the line"
        );
        assert_eq!(
            e("vllm serve m --disable-log-requests"),
            "`--disable-log-requests` is not a flag of vLLM 0.19.0 (0.16.0 was the last release with it): it refuses the line (unrecognized arguments); drop it"
        );
        assert_eq!(
            e("vllm serve m --no-such-flag"),
            "`--no-such-flag` is not a flag of vLLM 0.19.0: it refuses the line (unrecognized arguments)"
        );
        assert!(
            e("vllm serve m --max 8")
                .starts_with("`--max` is ambiguous: vLLM 0.19.0 reads it as the start of ")
        );
        assert_eq!(
            e("vllm serve m --max-model-len 1.5K"),
            "`--max-model-len 1.5K`: `1.5K`: decimals are not allowed with binary suffixes like K; did you mean 1.5k?, so vLLM 0.19.0 refuses the line"
        );
        assert_eq!(
            e("vllm serve m --max-model-len"),
            "`--max-model-len` needs a value (vLLM 0.19.0 refuses the line: expected one argument)"
        );
        assert_eq!(
            e("vllm serve m --max-num-seqs -4"),
            "`--max-num-seqs -4`: a negative count, which vLLM 0.19.0 refuses at start-up"
        );
        assert_eq!(
            e("vllm serve m other"),
            "`other`: a second positional word; vLLM 0.19.0 refuses the line (unrecognized arguments)"
        );
        assert_eq!(
            e("python -m vllm.entrypoints.openai.api_server m"),
            "`m`: this launcher reads the model from --model only; vLLM 0.19.0 would ignore the word and serve its default model: write --model m"
        );
        assert_eq!(
            e("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 vllm serve m"),
            "`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`: an environment variable the prediction does not read (vLLM 0.19.0 reads many that change memory); run without it"
        );
        assert_eq!(
            e("sglang serve m"),
            "the serve line starts with `sglang serve m`, not a launcher the planner knows (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`)"
        );
        assert_eq!(
            e("vllm serve m --enforce-eager=1"),
            "`--enforce-eager=1`: --enforce-eager takes no value (vLLM 0.19.0 refuses the line: ignored explicit argument)"
        );
        assert_eq!(
            e("vllm serve m --config c.yaml"),
            "`--config c.yaml` is refused: a YAML config file is not read; give its flags on the line (vLLM 0.19.0, entrypoints/openai/cli_args.py:342)"
        );
    }

    /// A line read by a release before 0.18, by that release's own parser and flags.
    fn old(version: &str, text: &str) -> Result<ServeLine, String> {
        let t = ServeTable::of_release(&format!("vllm=={version}")).unwrap();
        parse(&split_words(text).unwrap(), &[t])
    }

    #[test]
    fn a_release_before_0_18_reads_a_line_as_its_parser_does() {
        // -O3: the compilation level (0.10.1-0.11.0), mode (0.11.1-0.11.2), as the dotted JSON
        // of --compilation-config: the default, unless --enforce-eager is given.
        assert_eq!(
            old("0.10.1.1", "vllm serve m -O3").unwrap().ignored,
            [r#"-O '{"level":3}'"#]
        );
        assert_eq!(
            old("0.10.1.1", "vllm serve m -O3 --enforce-eager").unwrap_err(),
            r#"`-O '{"level":3}'` is refused: the compilation settings are vLLM's defaults; others are not modelled (`-O3`, the compilation level 3, is the default only without --enforce-eager) (vLLM 0.10.1.1, engine/arg_utils.py:850)"#
        );
        assert_eq!(
            old("0.10.1.1", "vllm serve m -O3 --no-enforce-eager")
                .unwrap()
                .flags,
            Vec::<String>::new()
        );
        assert_eq!(
            old("0.11.2", "vllm serve m -O 3").unwrap().ignored,
            [r#"-O '{"mode":3}'"#]
        );
        assert_eq!(
            old("0.11.2", "vllm serve m -O.mode=0").unwrap_err(),
            r#"`-O '{"mode":0}'` is refused: the compilation settings are vLLM's defaults; others are not modelled (`-O3`, the compilation mode 3, is the default only without --enforce-eager) (vLLM 0.11.2, engine/arg_utils.py:1148)"#
        );
        // From 0.12.0 -O3 is --optimization-level 3, which is -O2's settings (no byte); in
        // 0.12.0 alone -O.key is -cc.key.
        assert_eq!(
            old("0.12.0", "vllm serve m -O3").unwrap().ignored,
            ["--optimization-level 3"]
        );
        assert_eq!(
            old("0.12.0", "vllm serve m -O.backend=eager").unwrap_err(),
            r#"`-cc '{"backend":"eager"}'` is refused: the compilation settings are vLLM's defaults; others (modes, sizes, passes) are not modelled (vLLM 0.12.0, engine/arg_utils.py:1127)"#
        );
        // `vllm serve --model m` raises before 0.11.1; `--model=m` passes.
        assert_eq!(
            old("0.11.0", "vllm serve --model m -tp 2").unwrap_err(),
            "`--model` as its own word: vLLM 0.11.0's `vllm serve` refuses the line (ValueError: give the model as the positional word, or `--model=M`)"
        );
        assert_eq!(old("0.11.0", "vllm serve --model=m").unwrap().model, "m");
        assert_eq!(old("0.11.1", "vllm serve --model m").unwrap().model, "m");
        assert_eq!(
            old(
                "0.10.1",
                "python -m vllm.entrypoints.openai.api_server --model m"
            )
            .unwrap()
            .model,
            "m"
        );
        // VLLM_USE_V1 picks the engine up to 0.11.0 (1, the default, is the V1 engine
        // modelled); later releases do not read it.
        assert_eq!(
            old("0.10.1.1", "VLLM_USE_V1=1 vllm serve m")
                .unwrap()
                .ignored,
            ["VLLM_USE_V1=1"]
        );
        assert_eq!(
            old("0.11.0", "VLLM_USE_V1=0 vllm serve m").unwrap_err(),
            "`VLLM_USE_V1=0`: vLLM 0.11.0 reads it and only 1 leaves its default memory; run without it"
        );
        assert_eq!(
            old("0.11.1", "VLLM_USE_V1=0 vllm serve m").unwrap().ignored,
            ["VLLM_USE_V1=0"]
        );
        // human_readable_int: no T before 0.13.0, no `auto` before 0.14.0.
        assert_eq!(
            old("0.12.0", "vllm serve m --max-model-len 1T").unwrap_err(),
            "`--max-model-len 1T`: `1T` is not a whole number, so vLLM 0.12.0 refuses the line"
        );
        assert_eq!(
            old("0.13.0", "vllm serve m --max-model-len 1T")
                .unwrap()
                .flags,
            ["--max-model-len", "1099511627776"]
        );
        assert_eq!(
            old("0.13.0", "vllm serve m --max-model-len auto").unwrap_err(),
            "`--max-model-len auto`: `auto` is not a whole number, so vLLM 0.13.0 refuses the line"
        );
        assert!(
            old("0.14.0", "vllm serve m --max-model-len auto")
                .unwrap()
                .flags
                .is_empty()
        );
        // Choices per release, int ones after int(): 256 from 0.11.1.
        assert_eq!(
            old("0.11.0", "vllm serve m --block-size 256").unwrap_err(),
            "`--block-size 256`: vLLM 0.11.0 takes one of 1, 8, 16, 32, 64, 128 and refuses the line"
        );
        assert_eq!(
            old("0.11.1", "vllm serve m --block-size 0256")
                .unwrap()
                .flags,
            ["--block-size", "256"]
        );
        assert_eq!(
            old("0.10.2", "vllm serve m --kv-cache-dtype bfloat16").unwrap_err(),
            "`--kv-cache-dtype bfloat16`: vLLM 0.10.2 takes one of auto, fp8, fp8_e4m3, fp8_e5m2, fp8_inc and refuses the line"
        );
        // A flag the release lacks names the first release with it; one it had and 0.19
        // dropped is classified.
        assert_eq!(
            old("0.10.1.1", "vllm serve m --kv-cache-memory-bytes 8G").unwrap_err(),
            "`--kv-cache-memory-bytes` is not a flag of vLLM 0.10.1.1 (0.10.2 was the first release with it): it refuses the line (unrecognized arguments); drop it"
        );
        assert_eq!(
            old("0.15.0", "vllm serve m --kernel-config {}").unwrap_err(),
            "`--kernel-config` is not a flag of vLLM 0.15.0 (0.16.0 was the first release with it): it refuses the line (unrecognized arguments); drop it"
        );
        let l = old(
            "0.10.1.1",
            "vllm serve m --swap-space 16 --disable-log-requests --task generate --guided-decoding-backend xgrammar",
        )
        .unwrap();
        assert_eq!(
            l.ignored,
            [
                "--swap-space 16",
                "--disable-log-requests",
                "--task generate",
                "--guided-decoding-backend xgrammar"
            ]
        );
        assert_eq!(
            old("0.10.1.1", "vllm serve m --rope-theta 1e6").unwrap_err(),
            "`--rope-theta 1e6` is refused: overrides of the model's config; edit the config.json given to --hf-config instead (vLLM 0.10.1.1, engine/arg_utils.py:494)"
        );
        assert_eq!(
            old("0.18.0", "vllm serve m --swap-space 16").unwrap_err(),
            "`--swap-space` is not a flag of vLLM 0.18.0 (0.17.1 was the last release with it): it refuses the line (unrecognized arguments); drop it"
        );
    }

    /// The 0.10.1.1 A100 start-ups' line (data/vllm/cases-versions.json), and each old
    /// release's reading of it, predict what the same flags written by hand predict.
    #[test]
    fn an_old_releases_serve_line_predicts_what_its_flags_predict() {
        let sources = ModelSources {
            cwd: std::env::temp_dir(),
            hub: None,
            data: crate::inputs::model::repository_data(),
        };
        let config = sources.data.join("models/qwen2-7b-instruct/config.json");
        let text = "vllm serve Qwen/Qwen2-7B-Instruct --port 8081 --gpu-memory-utilization 0.5 --max-model-len 16384 --tensor-parallel-size 2";
        let predict = |a: &PlanArgs| {
            let options = crate::inputs::settings::import_options(a).unwrap();
            let name = a.engine.engine.clone().unwrap();
            crate::engine::predict_run(a, &a.engine, &name, options)
                .map(|p| crate::render::engine::json(&p.startup))
                .map_err(|e| e.to_string())
        };
        let mut kv = Vec::new();
        for version in ["0.10.1.1", "0.12.0", "0.17.1"] {
            let engine = format!("vllm=={version}");
            let argv: Vec<OsString> = [
                "xtask",
                "plan",
                "--engine",
                &engine,
                "--device",
                "a100-sxm-80gb",
                "--",
                text,
            ]
            .iter()
            .map(OsString::from)
            .collect();
            let given = PlanCommand::try_parse_from(&argv[1..]).unwrap().args;
            let read = apply(given, &argv, &sources).unwrap();
            let note = read.serve.clone().unwrap();
            assert_eq!(note.line.release, format!("vLLM {version}"));
            assert_eq!(note.config, config.display().to_string());
            assert_eq!(note.line.ignored, ["--port 8081"]);
            let by_hand = [
                "plan",
                "--engine",
                &engine,
                "--device",
                "a100-sxm-80gb",
                "--hf-config",
                &config.display().to_string(),
                "--gpu-memory-utilization",
                "0.5",
                "--max-model-len",
                "16384",
                "--tensor-parallel-size",
                "2",
            ];
            let matches = PlanCommand::command()
                .try_get_matches_from(by_hand)
                .unwrap();
            let mut expected = PlanCommand::from_arg_matches(&matches).unwrap().args;
            expected.given = crate::inputs::modes::given(&matches);
            let (got, want) = (predict(&read), predict(&expected));
            assert_eq!(got, want, "{version}");
            kv.push(got.unwrap()["engine"]["kv_cache_tokens"].as_u64().unwrap());
        }
        // 0.10.1.1's is the figure `cargo xtask bench engine` compares with that start-up's
        // log (1,192,160 printed: -0.40%).
        assert_eq!(kv[0], 1_187_424);
    }
}
