//! Reading `config.json`: parsing, the checks every model type shares (unknown and refused
//! keys, the dtype, the head class) and [`Config`], the one typed accessor through which the
//! model readers get values.
//!
//! Invariants: every value reaches the importer through [`Config`], which checks its JSON type
//! and range, records the key as read and records any default it stands in for, so the import
//! report and the error messages name exactly the keys that shaped the circuit. As in
//! transformers 5.25's strict configuration classes, `null` is refused for a key whose class
//! field is not optional (`vocab_size`, `tie_word_embeddings`, ...); the readers that accept it
//! ask for the three-way [`Got`] and give `null` the class's meaning (the default for
//! `head_dim` in Llama, no window for `sliding_window`, ...).

use std::cell::RefCell;
use std::fmt::Display;

use serde_json::{Map, Value};

use crate::error::HfError;
use crate::model::{KeyRole, ModelType};
use crate::options::Dtype;

/// The most layers a config may declare. Published models have under 200; the bound keeps an
/// absurd value from building millions of per-layer blocks (circuit-ir's block checks grow with
/// the square of the block count: 65,536 per-layer blocks take about a minute).
pub(crate) const MAX_LAYERS: u64 = 4096;

/// A key's value: absent, `null`, or present.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Got<T> {
    /// The key is not in the file.
    Missing,
    /// The key is `null`.
    Null,
    /// The key's value.
    Value(T),
}

/// The prefix of the message [`StrictValue`] fails with on a repeated key; [`parse`] turns it
/// into [`HfError::DuplicateKey`].
const DUPLICATE: &str = "duplicate key `";

/// Parses the text into the top-level object. A byte-order mark and a key repeated in any
/// object are refused: JSON readers differ on both (serde_json and Python's `json` keep the
/// last of two equal keys, so `"quantization_config": {...}` followed by
/// `"quantization_config": null` would silently plan bf16).
pub(crate) fn parse(text: &str, origin: &str) -> Result<Map<String, Value>, HfError> {
    if text.starts_with('\u{feff}') {
        return Err(HfError::ByteOrderMark {
            origin: origin.to_owned(),
        });
    }
    let value = serde_json::from_str::<StrictValue>(text)
        .map_err(|e| {
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full);
            match message
                .strip_prefix(DUPLICATE)
                .and_then(|k| k.strip_suffix('`'))
            {
                Some(key) => HfError::DuplicateKey {
                    origin: origin.to_owned(),
                    key: key.to_owned(),
                    line: e.line(),
                    column: e.column(),
                },
                None => match non_finite(text, e.line(), e.column()) {
                    Some((key, literal)) => HfError::NonFinite {
                        origin: origin.to_owned(),
                        key,
                        literal,
                        line: e.line(),
                        column: e.column(),
                    },
                    None => HfError::Json {
                        origin: origin.to_owned(),
                        line: e.line(),
                        column: e.column(),
                        message: message.to_owned(),
                    },
                },
            }
        })?
        .0;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(HfError::NotAnObject {
            origin: origin.to_owned(),
            found: describe(&other).to_owned(),
        }),
    }
}

/// When the parser stopped (1-based `line`, `column`) at Python's `NaN`, `Infinity` or
/// `-Infinity`: the key it is the value of (the nearest key before it, for an item of an
/// array) and the literal.
fn non_finite(text: &str, line: usize, column: usize) -> Option<(String, &'static str)> {
    let line_start = match line {
        0 => return None,
        1 => 0,
        _ => text.match_indices('\n').nth(line - 2)?.0 + 1,
    };
    // serde_json reports the column of the character it stopped at or the one after it.
    let at = line_start + column.saturating_sub(1);
    let literal = [at.checked_sub(1), Some(at)]
        .into_iter()
        .flatten()
        .find_map(|start| {
            let rest = text.get(start..)?;
            ["-Infinity", "Infinity", "NaN"]
                .into_iter()
                .find(|l| rest.starts_with(l))
                .map(|l| (start, l))
        });
    let (start, literal) = literal?;
    Some((
        nearest_key(&text[..start]).unwrap_or_else(|| "?".to_owned()),
        literal,
    ))
}

/// The last `"key":` of `before` (skipping colons inside strings that are not keys).
fn nearest_key(before: &str) -> Option<String> {
    let mut end = before.len();
    while let Some(colon) = before[..end].rfind(':') {
        end = colon;
        let Some(quoted) = before[..colon].trim_end().strip_suffix('"') else {
            continue;
        };
        // The key's opening quote: the last quote before it not escaped by a backslash.
        let mut open = quoted.len();
        while let Some(q) = quoted[..open].rfind('"') {
            let backslashes = quoted[..q].chars().rev().take_while(|&c| c == '\\').count();
            if backslashes % 2 == 0 {
                return Some(quoted[q + 1..].to_owned());
            }
            open = q;
        }
        return None;
    }
    None
}

/// A JSON value whose objects have no repeated key (serde_json's own `Value` keeps the last).
struct StrictValue(Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StrictValue, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(StrictValue(Value::Array(items)))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE}{key}`")));
            }
            let StrictValue(v) = map.next_value()?;
            object.insert(key, v);
        }
        Ok(StrictValue(Value::Object(object)))
    }
}

/// The model type named by `model_type`.
pub(crate) fn model_type(map: &Map<String, Value>, origin: &str) -> Result<ModelType, HfError> {
    match map.get("model_type") {
        None | Some(Value::Null) => Err(HfError::MissingModelType {
            origin: origin.to_owned(),
        }),
        Some(Value::String(name)) => {
            ModelType::from_name(name).ok_or_else(|| HfError::UnsupportedModelType {
                origin: origin.to_owned(),
                found: name.clone(),
            })
        }
        Some(other) => Err(HfError::BadValue {
            origin: origin.to_owned(),
            key: "model_type".to_owned(),
            expected: "a string".to_owned(),
            found: render(other),
        }),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as JSON, shortened for messages.
pub(crate) fn render(value: &Value) -> String {
    let text = match value {
        // A whole number past 64 bits is read as a float (2^64 would show as
        // 18446744073709552000.0): shown as the integer it stands for, up to where floats
        // print in exponent form anyway.
        Value::Number(x) if x.is_f64() => match x.as_f64() {
            Some(f) if f.fract() == 0.0 && (9.007_199_254_740_992e15..1e21).contains(&f.abs()) => {
                format!("{f:.0}")
            }
            _ => x.to_string(),
        },
        _ => serde_json::to_string(value).unwrap_or_else(|_| describe(value).to_owned()),
    };
    if text.len() > 60 {
        format!("{}...", &text[..text.floor_char_boundary(57)])
    } else {
        text
    }
}

/// The typed accessor over one config's keys.
pub(crate) struct Config<'a> {
    origin: &'a str,
    model: ModelType,
    map: &'a Map<String, Value>,
    read: RefCell<Vec<&'static str>>,
    defaults: RefCell<Vec<(&'static str, String)>>,
}

impl<'a> Config<'a> {
    pub(crate) fn new(origin: &'a str, model: ModelType, map: &'a Map<String, Value>) -> Self {
        Config {
            origin,
            model,
            map,
            // `model_type` was read to choose this accessor's model type.
            read: RefCell::new(vec!["model_type"]),
            defaults: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn model(&self) -> ModelType {
        self.model
    }

    /// The file, for messages.
    pub(crate) fn origin(&self) -> &'a str {
        self.origin
    }

    /// The raw value of `key`, recorded as read (for blocks parsed elsewhere, such as
    /// `quantization_config`).
    pub(crate) fn value(&self, key: &'static str) -> Got<&'a Value> {
        self.raw(key)
    }

    /// Keys read so far, in reading order, each once.
    pub(crate) fn keys_read(&self) -> Vec<&'static str> {
        self.read.borrow().clone()
    }

    /// Defaults applied: key and the value used, in the order of the model type's key table
    /// ([`ModelType::keys`], the order of docs/hf-import.md), whatever order they were read in.
    pub(crate) fn defaults(&self) -> Vec<(&'static str, String)> {
        let mut defaults = self.defaults.borrow().clone();
        defaults.sort_by_key(|(key, _)| {
            self.model
                .keys()
                .position(|k| k.key == *key)
                .unwrap_or(usize::MAX)
        });
        defaults
    }

    /// Records that `key`, absent (or null where null means the default), took `value`.
    pub(crate) fn default_used(&self, key: &'static str, value: impl Display) {
        let mut defaults = self.defaults.borrow_mut();
        if !defaults.iter().any(|(k, _)| *k == key) {
            defaults.push((key, value.to_string()));
        }
    }

    /// Whether the file has `key` (with any value, `null` included).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    fn raw(&self, key: &'static str) -> Got<&'a Value> {
        debug_assert!(
            self.model.reads(key),
            "{key} is read but not listed as read for {}",
            self.model
        );
        let mut read = self.read.borrow_mut();
        if !read.contains(&key) {
            read.push(key);
        }
        match self.map.get(key) {
            None => Got::Missing,
            Some(Value::Null) => Got::Null,
            Some(v) => Got::Value(v),
        }
    }

    pub(crate) fn bad(&self, key: &str, expected: impl Into<String>, found: &Value) -> HfError {
        HfError::BadValue {
            origin: self.origin.to_owned(),
            key: key.to_owned(),
            expected: expected.into(),
            found: render(found),
        }
    }

    pub(crate) fn missing(&self, key: &str) -> HfError {
        HfError::MissingKey {
            origin: self.origin.to_owned(),
            key: key.to_owned(),
            model_type: self.model.name().to_owned(),
        }
    }

    pub(crate) fn contradiction(&self, message: impl Into<String>) -> HfError {
        HfError::Contradiction {
            origin: self.origin.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn refused(&self, key: &str, why: impl Into<String>) -> HfError {
        HfError::Refused {
            origin: self.origin.to_owned(),
            key: key.to_owned(),
            why: why.into(),
        }
    }

    /// A whole number in `min..=max`, or absent, or null.
    pub(crate) fn int(&self, key: &'static str, min: u64, max: u64) -> Result<Got<u64>, HfError> {
        match self.raw(key) {
            Got::Missing => Ok(Got::Missing),
            Got::Null => Ok(Got::Null),
            Got::Value(v) => match v.as_u64() {
                Some(x) if (min..=max).contains(&x) => Ok(Got::Value(x)),
                _ => Err(self.bad(key, int_expected(min, max), v)),
            },
        }
    }

    /// A whole number of at least `min` that must be present: the class has no default for
    /// it (its default is `None`, which the model cannot use), so absent and null are both
    /// missing.
    pub(crate) fn required(&self, key: &'static str, min: u64) -> Result<u64, HfError> {
        match self.int(key, min, u64::MAX)? {
            Got::Value(x) => Ok(x),
            Got::Missing | Got::Null => Err(self.missing(key)),
        }
    }

    /// A whole number of at least `min`; `default` when absent; `null` refused (the class
    /// field is not optional).
    pub(crate) fn int_or(&self, key: &'static str, min: u64, default: u64) -> Result<u64, HfError> {
        self.int_or_in(key, min, u64::MAX, default)
    }

    /// A whole number in `min..=max`; `default` when absent; `null` refused.
    pub(crate) fn int_or_in(
        &self,
        key: &'static str,
        min: u64,
        max: u64,
        default: u64,
    ) -> Result<u64, HfError> {
        match self.int(key, min, max)? {
            Got::Value(x) => Ok(x),
            Got::Null => Err(self.bad(key, int_expected(min, max), &Value::Null)),
            Got::Missing => {
                self.default_used(key, default);
                Ok(default)
            }
        }
    }

    /// The error for a `null` the class refuses, for a whole number of at least `min`.
    pub(crate) fn null_int(&self, key: &str, min: u64) -> HfError {
        self.bad(key, int_expected(min, u64::MAX), &Value::Null)
    }

    /// One value under several aliases (e.g. `num_experts` / `num_local_experts`): the first
    /// present one; present ones must agree.
    pub(crate) fn int_alias(
        &self,
        keys: &[&'static str],
        min: u64,
    ) -> Result<(Got<u64>, &'static str), HfError> {
        let mut found: Option<(Got<u64>, &'static str)> = None;
        for &key in keys {
            let got = self.int(key, min, u64::MAX)?;
            if got == Got::Missing {
                continue;
            }
            match found {
                None => found = Some((got, key)),
                Some((first, first_key)) if first != got => {
                    return Err(self.contradiction(format!(
                        "`{first_key}` {} and `{key}` {} disagree (they are one setting under two names)",
                        show(first),
                        show(got)
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(found.unwrap_or((Got::Missing, keys[0])))
    }

    /// `true` or `false`; `default` when absent; `null` refused (every flag read is a
    /// non-optional `bool` in its class).
    pub(crate) fn flag(&self, key: &'static str, default: bool) -> Result<bool, HfError> {
        match self.raw(key) {
            Got::Value(Value::Bool(b)) => Ok(*b),
            Got::Value(v) => Err(self.bad(key, "true or false", v)),
            Got::Null => Err(self.bad(key, "true or false", &Value::Null)),
            Got::Missing => {
                self.default_used(key, default);
                Ok(default)
            }
        }
    }

    /// A string; `default` when absent; `null` refused (every string read is a non-optional
    /// `str` in its class).
    pub(crate) fn string_or(&self, key: &'static str, default: &str) -> Result<String, HfError> {
        match self.raw(key) {
            Got::Value(Value::String(s)) => Ok(s.clone()),
            Got::Value(v) => Err(self.bad(key, "a string", v)),
            Got::Null => Err(self.bad(key, "a string", &Value::Null)),
            Got::Missing => {
                self.default_used(key, default);
                Ok(default.to_owned())
            }
        }
    }

    /// A list of strings, or `None` when absent or null.
    pub(crate) fn strings(&self, key: &'static str) -> Result<Option<Vec<String>>, HfError> {
        match self.raw(key) {
            Got::Missing | Got::Null => Ok(None),
            Got::Value(v) => {
                let items = v
                    .as_array()
                    .ok_or_else(|| self.bad(key, "a list of strings", v))?;
                items
                    .iter()
                    .map(|item| {
                        item.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| self.bad(key, "a list of strings", v))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
        }
    }

    /// A list of whole numbers, or `None` when absent or null.
    pub(crate) fn ints(&self, key: &'static str) -> Result<Option<Vec<u64>>, HfError> {
        match self.raw(key) {
            Got::Missing | Got::Null => Ok(None),
            Got::Value(v) => {
                let expected = "a list of whole numbers";
                let items = v.as_array().ok_or_else(|| self.bad(key, expected, v))?;
                items
                    .iter()
                    .map(|item| item.as_u64().ok_or_else(|| self.bad(key, expected, v)))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
        }
    }

    /// A number (of any kind), or absent, or null.
    pub(crate) fn number(&self, key: &'static str) -> Result<Got<f64>, HfError> {
        match self.raw(key) {
            Got::Missing => Ok(Got::Missing),
            Got::Null => Ok(Got::Null),
            Got::Value(Value::Number(x)) => Ok(Got::Value(x.as_f64().unwrap_or(f64::NAN))),
            Got::Value(v) => Err(self.bad(key, "a number or null", v)),
        }
    }

    /// The checks every model type shares, in file order: unknown keys, refused keys; then the
    /// dtype and the head class.
    pub(crate) fn check_common(&self) -> Result<(), HfError> {
        for (key, value) in self.map {
            let Some(info) = self.model.key(key) else {
                return Err(HfError::UnknownKey {
                    origin: self.origin.to_owned(),
                    key: key.clone(),
                    model_type: self.model.name().to_owned(),
                });
            };
            if info.role == KeyRole::Refused
                && let Some(why) = refusal(key, value)
            {
                return Err(self.refused(key, why));
            }
        }
        self.check_dtype()?;
        self.check_architectures()
    }

    /// The checkpoint's dtype, `torch_dtype` or its transformers 5 name `dtype`; `None` when
    /// neither is given.
    fn check_dtype(&self) -> Result<Option<Dtype>, HfError> {
        let mut seen: Option<(&'static str, Dtype)> = None;
        for key in ["torch_dtype", "dtype"] {
            let value = match self.raw(key) {
                Got::Missing | Got::Null => continue,
                Got::Value(Value::String(s)) => s.clone(),
                Got::Value(v) => return Err(self.bad(key, "a string", v)),
            };
            let Some(dtype) = Dtype::from_name(&value) else {
                return Err(self.refused(
                    key,
                    format!(
                        "is `{value}`, which is not modelled: a checkpoint's unquantized tensors are bfloat16, float16 or float32 (a quantized one says so in quantization_config)"
                    ),
                ));
            };
            if let Some((first, first_value)) = seen
                && first_value != dtype
            {
                return Err(self.contradiction(format!(
                        "`{first}` `{first_value}` and `{key}` `{value}` disagree (they are one setting under two names)"
                    )));
            }
            seen = Some((key, dtype));
        }
        Ok(seen.map(|(_, d)| d))
    }

    /// The dtype the checkpoint stores its unquantized tensors in. Absent, transformers takes
    /// the dtype of the checkpoint's first floating tensor, which the config does not say:
    /// `bfloat16` is assumed, and reported as a default.
    pub(crate) fn stored_dtype(&self) -> Result<Dtype, HfError> {
        Ok(match self.check_dtype()? {
            Some(d) => d,
            None => {
                self.default_used("torch_dtype", Dtype::Bfloat16);
                Dtype::Bfloat16
            }
        })
    }

    fn check_architectures(&self) -> Result<(), HfError> {
        let expected = self.model.causal_lm_class();
        let Some(classes) = self.strings("architectures")? else {
            return Ok(());
        };
        for class in classes {
            if class != expected {
                return Err(self.refused(
                    "architectures",
                    format!(
                        "names `{class}`, but only `{expected}` (the causal language model with its lm_head) is modelled for {}",
                        self.model
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Why a refused key's value is refused; `None` when the value is harmless (null, empty, 0).
fn refusal(key: &str, value: &Value) -> Option<String> {
    let harmless = match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty() && key == "pruned_heads",
        Value::Number(x) => x.as_u64() == Some(0) && key == "num_nextn_predict_layers",
        _ => false,
    };
    if harmless {
        return None;
    }
    Some(match key {
        "text_config" | "vision_config" | "audio_config" => {
            "holds a nested (multimodal) model configuration, which is not modelled; import the language model's own config.json"
                .to_owned()
        }
        "pruned_heads" => {
            "lists pruned attention heads, which change weight shapes and are not modelled"
                .to_owned()
        }
        "num_nextn_predict_layers" => format!(
            "is {}: multi-token-prediction layers add weights that are not modelled; set it to 0 to plan the main model",
            render(value)
        ),
        _ => "changes memory in a way that is not modelled".to_owned(),
    })
}

fn int_expected(min: u64, max: u64) -> String {
    match (min, max) {
        (0, u64::MAX) => "a whole number".to_owned(),
        (min, u64::MAX) => format!("a whole number of at least {min}"),
        (min, max) => format!("a whole number from {min} to {max}"),
    }
}

fn show(got: Got<u64>) -> String {
    match got {
        Got::Missing => "absent".to_owned(),
        Got::Null => "null".to_owned(),
        Got::Value(x) => x.to_string(),
    }
}
