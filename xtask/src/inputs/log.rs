//! An engine's start-up log read into what it printed: the release (its banner), the
//! non-default args (a Python dict literal), and every figure of the lines its folder's
//! `log.toml` lists, each with the process (the worker) that printed it.
//!
//! Invariants: the lines and their format are the engine folder's (`log.toml`); here only how
//! a log line is framed (`(Worker_TP0 pid=444) INFO ... [file.py:line] message`, colour codes
//! stripped) and how Python prints a value. A figure is read exactly as printed (its text
//! kept); a log that gives no release or no figure is one line saying so.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::CliError;

/// A figure a start-up log prints (the names `log.toml` uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// The non-default args (a dict).
    Args,
    /// The model class the engine resolved.
    Architecture,
    MaxNumBatchedTokens,
    MaxNumSeqs,
    MaxModelLen,
    /// CUDA's total memory of the device (GiB).
    DeviceTotal,
    /// The device's name as the engine spells it in a file name.
    DeviceName,
    /// ceil(total x gpu_memory_utilization) (GiB).
    Requested,
    Weights,
    /// Weights + activation peak + non-torch (GiB).
    NonKv,
    ActivationPeak,
    NonTorch,
    /// The KV cache's bytes (GiB).
    KvCache,
    /// `MODE=n (largest=m), ...`.
    CudaGraphCaptures,
    CudaGraphEstimate,
    /// What capturing took (GiB): printed only, the prediction is the estimate.
    CudaGraphActual,
    KvCacheTokens,
    MaxConcurrency,
    /// The K half of a KV cache printed in two (GiB).
    KCache,
    /// The V half (GiB).
    VCache,
    /// The free memory after start-up (GiB): printed only.
    AvailableMemory,
}

impl Figure {
    /// How the figure is printed.
    pub fn kind(self) -> Kind {
        use Figure::*;
        match self {
            Args => Kind::Rest,
            Architecture | CudaGraphCaptures => Kind::Text,
            DeviceName => Kind::Word,
            MaxNumBatchedTokens | MaxNumSeqs | MaxModelLen | KvCacheTokens => Kind::Count,
            MaxConcurrency => Kind::Number,
            DeviceTotal | Requested | Weights | NonKv | ActivationPeak | NonTorch | KvCache
            | CudaGraphEstimate | CudaGraphActual | KCache | VCache | AvailableMemory => {
                Kind::Number
            }
        }
    }

    /// Its name in `log.toml` and the JSON output.
    pub fn name(self) -> &'static str {
        use Figure::*;
        match self {
            Args => "args",
            Architecture => "architecture",
            MaxNumBatchedTokens => "max_num_batched_tokens",
            MaxNumSeqs => "max_num_seqs",
            MaxModelLen => "max_model_len",
            DeviceTotal => "device_total",
            DeviceName => "device_name",
            Requested => "requested",
            Weights => "weights",
            NonKv => "non_kv",
            ActivationPeak => "activation_peak",
            NonTorch => "non_torch",
            KvCache => "kv_cache",
            CudaGraphCaptures => "cuda_graph_captures",
            CudaGraphEstimate => "cuda_graph_estimate",
            CudaGraphActual => "cuda_graph_actual",
            KvCacheTokens => "kv_cache_tokens",
            MaxConcurrency => "max_concurrency",
            KCache => "k_cache",
            VCache => "v_cache",
            AvailableMemory => "available_memory",
        }
    }
}

/// How a figure's text is delimited in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A decimal number (`79.19`, `1.1`, `-0.01`).
    Number,
    /// A whole number, maybe with thousands separators (`476,016`).
    Count,
    /// Text up to the pattern's next literal (or the line's end).
    Text,
    /// Letters, digits, `_` and `-`.
    Word,
    /// The rest of the line.
    Rest,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineSpec {
    pattern: String,
    at: String,
    #[serde(default)]
    level: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogFile {
    schema: u32,
    /// The releases whose source the lines were read from.
    releases: Vec<String>,
    line: Vec<LineSpec>,
}

/// One part of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Skip,
    Figure(Figure),
}

/// A line the engine prints.
#[derive(Debug, Clone)]
pub struct Pattern {
    parts: Vec<Part>,
    /// The logger call, file:line.
    pub at: String,
    /// The level it prints at when not INFO.
    pub level: Option<String>,
}

/// The lines of an engine release's log.
#[derive(Debug, Clone)]
pub struct LogFormat {
    pub patterns: Vec<Pattern>,
    pub origin: String,
}

impl LogFormat {
    /// The format of an engine folder for its release `version` (its `log.toml`, or the one of
    /// the folders it extends: a folder's own `[[line]]` list replaces its base's), refused in
    /// one line when that file was not read for the release.
    pub fn of_folder(folder: &str, version: &str) -> Result<LogFormat, CliError> {
        let texts = engines::log_lines(folder)?;
        let Some((text, origin)) = texts.last() else {
            return Err(format!(
                "engines/{folder} has no log.toml: the lines its release prints are not known"
            )
            .into());
        };
        LogFormat::from_text(text, origin, version)
    }

    pub fn from_text(text: &str, origin: &str, version: &str) -> Result<LogFormat, CliError> {
        let file: LogFile = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        if file.schema != 1 {
            return Err(format!("{origin}: schema {} (expected 1)", file.schema).into());
        }
        if !file.releases.iter().any(|r| r == version) {
            return Err(format!(
                "release {version}'s start-up log is not modelled: {origin} lists the lines of {} only",
                file.releases.join(", ")
            )
            .into());
        }
        let patterns = file
            .line
            .iter()
            .map(|l| {
                Ok(Pattern {
                    parts: parse_pattern(&l.pattern)
                        .map_err(|e| format!("{origin}: pattern `{}`: {e}", l.pattern))?,
                    at: l.at.clone(),
                    level: l.level.clone(),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(LogFormat {
            patterns,
            origin: origin.to_owned(),
        })
    }

    /// The pattern that prints `figure` first in the file (for "not printed" notes).
    pub fn printing(&self, figure: Figure) -> Option<&Pattern> {
        self.patterns
            .iter()
            .find(|p| p.parts.contains(&Part::Figure(figure)))
    }
}

fn parse_pattern(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}').ok_or("a `{` is not closed")?;
                let name = &rest[1..end];
                parts.push(if name.is_empty() {
                    Part::Skip
                } else {
                    let f: Figure = toml::Value::String(name.to_owned())
                        .try_into()
                        .map_err(|_| format!("`{{{name}}}` is not a figure"))?;
                    Part::Figure(f)
                });
                rest = &rest[end + 1..];
            }
            Some(at) => {
                parts.push(Part::Literal(rest[..at].to_owned()));
                rest = &rest[at..];
            }
            None => {
                parts.push(Part::Literal(rest.to_owned()));
                rest = "";
            }
        }
    }
    match parts.first() {
        Some(Part::Literal(_)) => {}
        _ => return Err("a pattern starts with text".into()),
    }
    for pair in parts.windows(2) {
        if !matches!(pair[0], Part::Literal(_)) && !matches!(pair[1], Part::Literal(_)) {
            return Err("two placeholders without text between them".into());
        }
    }
    Ok(parts)
}

/// Matches `pattern` in `text` (from the first occurrence of its leading text): the figures'
/// texts, in order.
fn match_pattern(parts: &[Part], text: &str) -> Option<Vec<(Figure, String)>> {
    let Part::Literal(first) = &parts[0] else {
        return None;
    };
    let start = text.find(first.as_str())?;
    let mut rest = &text[start + first.len()..];
    let mut out = Vec::new();
    let mut i = 1;
    while i < parts.len() {
        let next_literal = match parts.get(i + 1) {
            Some(Part::Literal(l)) => Some(l.as_str()),
            _ => None,
        };
        match &parts[i] {
            Part::Literal(l) => {
                rest = rest.strip_prefix(l.as_str())?;
            }
            Part::Skip => {
                let end = match next_literal {
                    Some(l) => rest.find(l)?,
                    None => rest.len(),
                };
                rest = &rest[end..];
            }
            Part::Figure(f) => {
                let len = match f.kind() {
                    Kind::Number => rest
                        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+')))
                        .unwrap_or(rest.len()),
                    // Digits, and a comma only as a thousands separator (three digits
                    // follow): `476,016` whole, `400000, chunked...` up to its comma.
                    Kind::Count => {
                        let b = rest.as_bytes();
                        let mut n = 0;
                        while n < b.len()
                            && (b[n].is_ascii_digit()
                                || (b[n] == b','
                                    && n > 0
                                    && b.len() > n + 3
                                    && b[n + 1..n + 4].iter().all(u8::is_ascii_digit)))
                        {
                            n += 1;
                        }
                        n
                    }
                    Kind::Word => rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
                        .unwrap_or(rest.len()),
                    Kind::Text => match next_literal {
                        Some(l) => rest.find(l)?,
                        None => rest.trim_end().len(),
                    },
                    Kind::Rest => rest.trim_end().len(),
                };
                if len == 0 {
                    return None;
                }
                out.push((*f, rest[..len].to_owned()));
                rest = &rest[len..];
            }
        }
        i += 1;
    }
    Some(out)
}

/// A figure as a line printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Printed {
    pub figure: Figure,
    /// The process that printed it (`Worker_TP1`, `EngineCore`), as its prefix names it.
    pub process: Option<String>,
    /// The text printed.
    pub text: String,
    /// The line, from 1.
    pub line: usize,
}

/// What a start-up log printed.
#[derive(Debug, Clone, Default)]
pub struct StartupLog {
    /// Each figure as first printed by each process, in line order.
    pub printed: Vec<Printed>,
    /// The lines read.
    pub lines: usize,
}

impl StartupLog {
    /// The first printing of `figure` by any process.
    pub fn first(&self, figure: Figure) -> Option<&Printed> {
        self.printed.iter().find(|p| p.figure == figure)
    }
}

/// A line without its terminal colour codes (`ESC [ ... m`).
fn strip_colours(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\x1b') {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// The process a line's prefix names: `(Worker_TP0 pid=444)` is `Worker_TP0`; a bracketed
/// prefix that ends in rank tags (`[2026-01-01 10:00:00 PP0 TP1]`) is those tags (`PP0 TP1`).
fn process_of(line: &str) -> Option<String> {
    if line.starts_with('[')
        && let Some(end) = line.find(']')
    {
        let tags: Vec<&str> = line[1..end]
            .split(' ')
            .rev()
            .take_while(|w| {
                let letters = w.trim_end_matches(|c: char| c.is_ascii_digit());
                letters.len() < w.len()
                    && !letters.is_empty()
                    && letters.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
            .collect();
        if !tags.is_empty() {
            return Some(tags.into_iter().rev().collect::<Vec<_>>().join(" "));
        }
    }
    let end = line.find(" pid=")?;
    let start = line[..end].rfind('(')?;
    let name = &line[start + 1..end];
    (!name.is_empty() && !name.contains(')')).then(|| name.to_owned())
}

/// The release a vLLM log's banner names, and its line: `vLLM API server version X`
/// (vLLM 0.10 to 0.14, entrypoints/openai/api_server.py `run_server`), `vLLM server version X,
/// serving model M` and the logo's `version X` line (0.15 on, entrypoints/utils.py
/// `log_version_and_model`). Read before the release (hence its log.toml) is known.
pub fn banner_release(text: &str) -> Option<(String, usize)> {
    for (i, raw) in text.lines().enumerate() {
        let line = strip_colours(raw);
        for marker in [
            "vLLM API server version ",
            "vLLM server version ",
            "█  version ",
        ] {
            if let Some(at) = line.find(marker) {
                let version: String = line[at + marker.len()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != ',')
                    .collect();
                if version.starts_with(|c: char| c.is_ascii_digit()) {
                    return Some((version, i + 1));
                }
            }
        }
    }
    None
}

/// Every figure `format`'s lines print in `text`; a figure a process prints twice keeps its
/// first printing.
pub fn read(text: &str, format: &LogFormat) -> StartupLog {
    let mut log = StartupLog::default();
    let mut seen: BTreeMap<(Figure, Option<String>), ()> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        log.lines = i + 1;
        let line = strip_colours(raw);
        let process = process_of(&line);
        // The message follows the logger's `[file.py:line] `; a line without the prefix (a
        // log reformatted by a collector) is matched whole.
        let message = match line.find("] ") {
            Some(at) if line[..at].contains(".py:") => &line[at + 2..],
            _ => &line[..],
        };
        for p in &format.patterns {
            let Some(found) = match_pattern(&p.parts, message) else {
                continue;
            };
            for (figure, value) in found {
                if seen.insert((figure, process.clone()), ()).is_none() {
                    log.printed.push(Printed {
                        figure,
                        process: process.clone(),
                        text: value,
                        line: i + 1,
                    });
                }
            }
        }
    }
    log
}

/// A value as Python's `repr` prints it, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<Py>),
    Dict(Vec<(Py, Py)>),
    /// An object's repr (`CompilationConfig(...)`, `<Enum.X: 1>`), as printed.
    Opaque(String),
}

impl Py {
    /// The value as a command-line word (or words, for a list) of the flag it came from.
    pub fn words(&self) -> Vec<String> {
        match self {
            Py::List(items) => items.iter().map(Py::word).collect(),
            other => vec![other.word()],
        }
    }

    fn word(&self) -> String {
        match self {
            Py::None => "None".to_owned(),
            Py::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Py::Int(i) => i.to_string(),
            Py::Float(x) => py_repr_float(*x),
            Py::Str(s) | Py::Opaque(s) => s.clone(),
            Py::List(_) | Py::Dict(_) => self.json().to_string(),
        }
    }

    /// As JSON (Python's json.dumps of it: keys as text).
    pub fn json(&self) -> serde_json::Value {
        match self {
            Py::None => serde_json::Value::Null,
            Py::Bool(b) => (*b).into(),
            Py::Int(i) => i64::try_from(*i).map_or_else(|_| i.to_string().into(), Into::into),
            Py::Float(x) => serde_json::Number::from_f64(*x)
                .map_or_else(|| py_repr_float(*x).into(), serde_json::Value::Number),
            Py::Str(s) | Py::Opaque(s) => s.clone().into(),
            Py::List(items) => items.iter().map(Py::json).collect(),
            Py::Dict(pairs) => pairs
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Py::Str(s) => s.clone(),
                        other => other.word(),
                    };
                    (key, v.json())
                })
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
}

fn py_repr_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

/// Parses a Python literal as `repr` prints it, whole (SGLang's server_args).
pub fn parse_py(text: &str) -> Result<Py, String> {
    let mut p = PyParser::new(text);
    let v = p.value()?;
    p.ws();
    if p.at != p.s.len() {
        return Err(format!("text after the value at byte {}", p.at));
    }
    Ok(v)
}

/// The non-default args dict as a line printed it: whole, or cut short (a log truncated when
/// shared or pasted), in which case only the pairs before the cut are known.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgsDict {
    /// The pairs read whole (each followed by `,` or the closing `}`), in order.
    pub pairs: Vec<(Py, Py)>,
    /// None: the dict closes, every non-default arg is here. Some: the text ends inside the
    /// dict; the key whose value the cut falls in, when its key was read whole.
    pub cut: Option<Option<String>>,
}

impl ArgsDict {
    /// The value of `key`, when its pair was read whole.
    pub fn get(&self, key: &str) -> Option<&Py> {
        self.pairs
            .iter()
            .find(|(k, _)| matches!(k, Py::Str(s) if s == key))
            .map(|(_, v)| v)
    }
}

/// Reads the non-default args dict: whole, or, when the text ends inside it, the pairs before
/// the end (a cut is not an error: it is said by [`ArgsDict::cut`]). Text that is not a dict,
/// or is malformed before its end, is refused.
pub fn parse_args(text: &str) -> Result<ArgsDict, String> {
    let mut p = PyParser::new(text);
    p.ws();
    if p.peek() != Some(b'{') {
        return Err("not a dict (it does not open with `{`)".into());
    }
    p.at += 1;
    let mut pairs = Vec::new();
    let cut = |pairs: Vec<(Py, Py)>, key: Option<&Py>| ArgsDict {
        pairs,
        cut: Some(key.map(|k| match k {
            Py::Str(s) => s.clone(),
            other => other.word(),
        })),
    };
    loop {
        p.ws();
        match p.peek() {
            None => return Ok(cut(pairs, None)),
            Some(b'}') => {
                p.at += 1;
                p.ws();
                if p.at != p.s.len() {
                    return Err(format!("text after the dict at byte {}", p.at));
                }
                return Ok(ArgsDict { pairs, cut: None });
            }
            Some(_) => {}
        }
        let key = match p.value() {
            Ok(k) => k,
            Err(_) if p.ended => return Ok(cut(pairs, None)),
            Err(e) => return Err(e),
        };
        p.ws();
        match p.peek() {
            None => return Ok(cut(pairs, None)),
            Some(b':') => p.at += 1,
            Some(_) => return Err(format!("a `:` is missing at byte {}", p.at)),
        }
        let value = match p.value() {
            Ok(v) => v,
            Err(_) if p.ended => return Ok(cut(pairs, Some(&key))),
            Err(e) => return Err(e),
        };
        p.ws();
        match p.peek() {
            // A value the text ends right after may itself be cut (`163` of `16384`).
            None => return Ok(cut(pairs, Some(&key))),
            Some(b',') => p.at += 1,
            Some(b'}') => {}
            Some(_) => return Err(format!("a `,` is missing at byte {}", p.at)),
        }
        pairs.push((key, value));
    }
}

struct PyParser<'a> {
    s: &'a [u8],
    text: &'a str,
    at: usize,
    /// An error came from the text ending (a line cut short), not from a malformed value.
    ended: bool,
}

impl<'a> PyParser<'a> {
    fn new(text: &'a str) -> PyParser<'a> {
        PyParser {
            s: text.as_bytes(),
            text,
            at: 0,
            ended: false,
        }
    }

    /// An error of the text ending where more was due.
    fn end<T>(&mut self, message: &str) -> Result<T, String> {
        self.ended = true;
        Err(message.to_owned())
    }
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn value(&mut self) -> Result<Py, String> {
        self.ws();
        match self.peek() {
            None => self.end("the text ends where a value should be (a line cut short?)"),
            Some(b'{') => self.dict(),
            Some(b'[') => self.seq(b']').map(Py::List),
            Some(b'(') => self.seq(b')').map(Py::List),
            Some(b'\'' | b'"') => self.string().map(Py::Str),
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' || c == b'.' => self.number(),
            Some(_) => self.word(),
        }
    }

    fn dict(&mut self) -> Result<Py, String> {
        self.at += 1;
        let mut pairs = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(b'}') {
                self.at += 1;
                return Ok(Py::Dict(pairs));
            }
            let k = self.value()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(format!("a `:` is missing at byte {}", self.at));
            }
            self.at += 1;
            let v = self.value()?;
            pairs.push((k, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                None => return self.end("a `{` is not closed (a line cut short?)"),
                Some(_) => return Err(format!("a `,` is missing at byte {}", self.at)),
            }
        }
    }

    fn seq(&mut self, close: u8) -> Result<Vec<Py>, String> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(items);
            }
            items.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(c) if c == close => {}
                None => return self.end("a bracket is not closed (a line cut short?)"),
                Some(_) => return Err(format!("a `,` is missing at byte {}", self.at)),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = self.s[self.at];
        self.at += 1;
        let mut out = String::new();
        let text = self.text;
        let rest = &text[self.at..];
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c as u32 == u32::from(quote) => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some((_, e)) = chars.next() else {
                        return self.end("a string is not closed (a line cut short?)");
                    };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '\\' | '\'' | '"' => out.push(e),
                        'x' | 'u' | 'U' => {
                            let n = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let hex: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or_else(|| format!("a bad escape `\\{e}{hex}`"))?;
                            out.push(code);
                        }
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        self.end("a string is not closed (a line cut short?)")
    }

    fn number(&mut self) -> Result<Py, String> {
        let start = self.at;
        while self.at < self.s.len()
            && (self.s[self.at].is_ascii_alphanumeric()
                || matches!(self.s[self.at], b'.' | b'-' | b'+'))
        {
            self.at += 1;
        }
        let t = &self.text[start..self.at];
        if let Ok(i) = t.parse::<i128>() {
            return Ok(Py::Int(i));
        }
        t.parse::<f64>()
            .map(Py::Float)
            .map_err(|_| format!("`{t}` is not a number"))
    }

    /// A name (`True`, `None`) or an object's repr, up to the end of the value.
    fn word(&mut self) -> Result<Py, String> {
        let start = self.at;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' | b'>' if depth > 0 => depth -= 1,
                b',' | b')' | b']' | b'}' if depth == 0 => break,
                b':' if depth == 0 => break,
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                _ => {}
            }
            self.at += 1;
        }
        if depth > 0 {
            return self.end("an object's repr is not closed (a line cut short?)");
        }
        let t = self.text[start..self.at].trim();
        Ok(match t {
            "None" => Py::None,
            "True" => Py::Bool(true),
            "False" => Py::Bool(false),
            "inf" => Py::Float(f64::INFINITY),
            "nan" => Py::Float(f64::NAN),
            _ => Py::Opaque(t.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_parse_as_repr_prints_them() {
        let v = parse_args("{'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 8192, 'gpu_memory_utilization': 0.95, 'enable_prefix_caching': False, 'served_model_name': ['a', \"b'c\"], 'limit_mm_per_prompt': {'image': 0}, 'hf_token': None, 'x': CompilationConfig(level=3, sizes=[1, 2]), 'y': <OptimizationLevel.O3: 3>}").unwrap();
        assert_eq!(v.cut, None);
        let pairs = v.pairs;
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == Py::Str(k.into()))
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(get("max_model_len"), Py::Int(8192));
        assert_eq!(get("gpu_memory_utilization"), Py::Float(0.95));
        assert_eq!(get("enable_prefix_caching"), Py::Bool(false));
        assert_eq!(get("served_model_name").words(), ["a", "b'c"]);
        assert_eq!(get("limit_mm_per_prompt").words(), [r#"{"image":0}"#]);
        assert_eq!(get("hf_token"), Py::None);
        assert_eq!(
            get("x"),
            Py::Opaque("CompilationConfig(level=3, sizes=[1, 2])".into())
        );
        assert_eq!(get("y"), Py::Opaque("<OptimizationLevel.O3: 3>".into()));
        assert_eq!(Py::Float(0.95).words(), ["0.95"]);
        assert_eq!(Py::Float(1.0).words(), ["1.0"]);
    }

    /// A line cut short keeps the pairs read whole before the cut and says where it fell; a
    /// value the text ends right after may itself be cut, so it is not read; text that is not
    /// a dict, or malformed before its end, is refused.
    #[test]
    fn a_cut_args_line_keeps_the_pairs_before_the_cut() {
        let cut =
            parse_args("{'model_tag': 'Qwen2-7B-Instruct', 'port': 8081, 'model': 'Qwe").unwrap();
        assert_eq!(
            cut.pairs,
            [
                (
                    Py::Str("model_tag".into()),
                    Py::Str("Qwen2-7B-Instruct".into())
                ),
                (Py::Str("port".into()), Py::Int(8081)),
            ]
        );
        assert_eq!(cut.cut, Some(Some("model".into())));
        assert_eq!(cut.get("port"), Some(&Py::Int(8081)));
        assert_eq!(cut.get("model"), None);
        let ends = |t: &str| parse_args(t).unwrap().cut;
        assert_eq!(ends("{'a': 1,"), Some(None));
        assert_eq!(
            ends("{'a': 1, 'max_model_len': 163"),
            Some(Some("max_model_len".into()))
        );
        assert_eq!(ends("{'a': 1, 'b"), Some(None));
        assert_eq!(ends("{'a': [1, 2"), Some(Some("a".into())));
        assert_eq!(ends("{'a': X(b=1"), Some(Some("a".into())));
        assert_eq!(ends("{"), Some(None));
        assert_eq!(ends("{'a': 1}"), None);
        assert_eq!(
            parse_args("'a'").unwrap_err(),
            "not a dict (it does not open with `{`)"
        );
        assert_eq!(
            parse_args("{'a' 1}").unwrap_err(),
            "a `:` is missing at byte 5"
        );
        assert_eq!(
            parse_args("{'a': 1 'b': 2}").unwrap_err(),
            "a `,` is missing at byte 8"
        );
        assert_eq!(
            parse_args("{'a': 1} x").unwrap_err(),
            "text after the dict at byte 9"
        );
    }

    #[test]
    fn a_banner_names_the_release_in_each_of_vllms_forms() {
        let logo = "(APIServer pid=1) INFO 04-22 00:03:35 [entrypoints/utils.py:299]  \u{2584}\u{2584} \u{2584}\u{2588} \u{2588}     \u{2588}     \u{2588} \u{2580}\u{2584}\u{2580} \u{2588}  version 0.19.0";
        assert_eq!(banner_release(logo), Some(("0.19.0".into(), 1)));
        let coloured =
            "x\n \x1b[93m▄▄\x1b[0m \x1b[97;1m█ ▀▄▀ █\x1b[0m  version \x1b[97;1m0.19.1\x1b[0m";
        assert_eq!(banner_release(coloured), Some(("0.19.1".into(), 2)));
        assert_eq!(
            banner_release(
                "(APIServer pid=2739) INFO 09-04 01:28:28 [api_server.py:1805] vLLM API server version 0.10.1.1"
            ),
            Some(("0.10.1.1".into(), 1))
        );
        assert_eq!(
            banner_release("INFO [utils.py:279] vLLM server version 0.17.0, serving model m"),
            Some(("0.17.0".into(), 1))
        );
        assert_eq!(banner_release("no banner here"), None);
    }

    #[test]
    fn lines_give_their_figures_and_the_process_that_printed_them() {
        let f = LogFormat::of_folder("vllm-0.19", "0.19.0").unwrap();
        let text = "(Worker_TP1 pid=445) DEBUG 04-22 01:36:26 [v1/worker/gpu_worker.py:435] Memory profiling takes 19.45 seconds. Total non KV cache memory: 11.47GiB; torch peak memory increase: 1.89GiB; non-torch forward increase memory: 2.07GiB; weights memory: 7.51GiB.\n\
(EngineCore pid=245) INFO 04-22 01:36:26 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 1,044,688 tokens\n\
(EngineCore pid=245) INFO 04-22 01:36:26 [v1/core/kv_cache_utils.py:1324] Maximum concurrency for 8,192 tokens per request: 127.53x\n\
(Worker pid=445) DEBUG 04-22 01:35:55 [v1/worker/gpu_worker.py:284] worker init memory snapshot: torch_peak=0.01GiB, free_memory=77.66GiB, total_memory=79.19GiB, cuda_memory=1.53GiB\n\
(EngineCore pid=245) INFO 04-22 01:36:26 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 9 tokens";
        let log = read(text, &f);
        let got: Vec<(Figure, Option<&str>, &str, usize)> = log
            .printed
            .iter()
            .map(|p| (p.figure, p.process.as_deref(), p.text.as_str(), p.line))
            .collect();
        assert_eq!(
            got,
            [
                (Figure::NonKv, Some("Worker_TP1"), "11.47", 1),
                (Figure::ActivationPeak, Some("Worker_TP1"), "1.89", 1),
                (Figure::NonTorch, Some("Worker_TP1"), "2.07", 1),
                (Figure::Weights, Some("Worker_TP1"), "7.51", 1),
                (Figure::KvCacheTokens, Some("EngineCore"), "1,044,688", 2),
                (Figure::MaxModelLen, Some("EngineCore"), "8,192", 3),
                (Figure::MaxConcurrency, Some("EngineCore"), "127.53", 3),
                (Figure::DeviceTotal, Some("Worker"), "79.19", 4),
            ]
        );
        assert_eq!(log.lines, 5);
    }

    #[test]
    fn a_log_format_that_breaks_its_rules_is_one_line() {
        let bad = |p: &str| {
            LogFormat::from_text(
                &format!(
                    "schema = 1\nreleases = [\"1.0\"]\n[[line]]\npattern = \"{p}\"\nat = \"a\"\n"
                ),
                "l.toml",
                "1.0",
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            bad("x {nope}"),
            "l.toml: pattern `x {nope}`: `{nope}` is not a figure"
        );
        assert_eq!(
            bad("{weights} GiB"),
            "l.toml: pattern `{weights} GiB`: a pattern starts with text"
        );
        assert_eq!(
            bad("x {weights}{}"),
            "l.toml: pattern `x {weights}{}`: two placeholders without text between them"
        );
        assert_eq!(
            bad("x {weights"),
            "l.toml: pattern `x {weights`: a `{` is not closed"
        );
        // A file's lines are read only for the releases it lists.
        assert_eq!(
            LogFormat::from_text(
                "schema = 1\nreleases = [\"1.0\"]\n[[line]]\npattern = \"x {weights}\"\nat = \"a\"\n",
                "l.toml",
                "1.1"
            )
            .unwrap_err()
            .to_string(),
            "release 1.1's start-up log is not modelled: l.toml lists the lines of 1.0 only"
        );
    }

    /// Each release reads its log with its own lines (engines/<folder>/log.toml, read from its
    /// sources): the lines below are each release's format strings, filled as its logger fills
    /// them.
    #[test]
    fn each_release_reads_the_lines_its_sources_print() {
        let figures = |folder: &str, version: &str, text: &str| -> Vec<(Figure, String)> {
            let f = LogFormat::of_folder(folder, version).unwrap();
            read(text, &f)
                .printed
                .into_iter()
                .map(|p| (p.figure, p.text))
                .collect()
        };
        // vLLM 0.34.0: v1/worker/gpu/model_runner.py:441-443 "Model loading took %s GiB memory
        // and %.6f seconds"; utils/mem_utils.py:233-241 the profile's repr, which prints the
        // total consumed where 0.19 printed the non-torch increase; v1/core/kv_cache_utils.py
        // :1168-1174 the tokens and the concurrency on one line.
        let v034 = "(EngineCore pid=9) INFO 06-01 10:00:00 [v1/worker/gpu/model_runner.py:441] Model loading took 15.27 GiB memory and 4.210000 seconds\n\
(EngineCore pid=9) DEBUG 06-01 10:00:09 [v1/worker/gpu_worker.py:794] Memory profiling takes 8.12 seconds. Total non KV cache memory: 17.9GiB; torch peak memory increase: 1.52GiB; total consumed (from mem_get_info): 16.91GiB; weights memory: 15.27GiB.\n\
(EngineCore pid=9) INFO 06-01 10:00:09 [v1/core/kv_cache_utils.py:1168] GPU KV cache size: 484,352 tokens, Maximum concurrency for 32,768 tokens per request: 14.78x";
        assert_eq!(
            figures("vllm-0.34", "0.34.0", v034),
            [
                (Figure::Weights, "15.27".to_owned()),
                (Figure::NonKv, "17.9".to_owned()),
                (Figure::ActivationPeak, "1.52".to_owned()),
                (Figure::KvCacheTokens, "484,352".to_owned()),
                (Figure::MaxModelLen, "32,768".to_owned()),
                (Figure::MaxConcurrency, "14.78".to_owned()),
            ]
        );
        // vLLM 0.30.0 (folder vllm-0.29): kv_cache_utils.py "%s KV cache size: %s tokens,
        // Maximum concurrency for %s tokens per request: %.2fx" with "GPU" on CUDA.
        let v030 = "(EngineCore pid=9) INFO 06-01 10:00:09 [v1/core/kv_cache_utils.py:2391] GPU KV cache size: 1,024 tokens, Maximum concurrency for 512 tokens per request: 2.00x";
        assert_eq!(
            figures("vllm-0.29", "0.30.0", v030),
            [
                (Figure::KvCacheTokens, "1,024".to_owned()),
                (Figure::MaxModelLen, "512".to_owned()),
                (Figure::MaxConcurrency, "2.00".to_owned()),
            ]
        );
        // vLLM 0.10.1.1: engine/arg_utils.py:1714 "Setting max_num_seqs to %d for %s usage
        // context.", v1/worker/gpu_model_runner.py:2007 "Model loading took %.4f GiB and %.6f
        // seconds", v1/worker/gpu_worker.py:276 "Available KV cache memory: %.2f GiB".
        let v0101 = "DEBUG 09-04 01:28:29 [arg_utils.py:1714] Setting max_num_seqs to 256 for UsageContext.OPENAI_API_SERVER usage context.\n\
(VllmWorker TP0 pid=7) INFO 09-04 01:29:01 [gpu_model_runner.py:2007] Model loading took 7.1557 GiB and 3.102000 seconds\n\
(VllmWorker TP0 pid=7) INFO 09-04 01:29:20 [gpu_worker.py:276] Available KV cache memory: 61.23 GiB";
        assert_eq!(
            figures("vllm-0.10.1", "0.10.1.1", v0101),
            [
                (Figure::MaxNumSeqs, "256".to_owned()),
                (Figure::Weights, "7.1557".to_owned()),
                (Figure::KvCache, "61.23".to_owned()),
            ]
        );
        // Every release of every vLLM folder reads its own lines.
        let mut read = 0;
        for r in engines::catalogue().unwrap() {
            for v in &r.releases {
                if r.engine == "vllm" {
                    let f =
                        LogFormat::of_folder(r.folder, v).unwrap_or_else(|e| panic!("{v}: {e}"));
                    assert_eq!(f.origin, format!("engines/{}/log.toml", r.folder));
                    read += 1;
                }
            }
        }
        assert_eq!(read, 39);
        // vLLM 0.34.0 prints no CUDA-graph estimate (gpu/model_runner.py has no such call).
        let f = LogFormat::of_folder("vllm-0.34", "0.34.0").unwrap();
        assert!(f.printing(Figure::CudaGraphEstimate).is_none());
        assert!(f.printing(Figure::NonTorch).is_none());
    }
}
