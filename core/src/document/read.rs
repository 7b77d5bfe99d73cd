//! Reading a document's text: objects with their keys in order (a key written twice
//! refused), values by kind, and errors that name the path, line and column of what was
//! wrong. What every section's loader (retryrs or gRPC) reads its values with.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::grammar::{no_unit, parse_duration};
use super::{DocumentError, Loader};

/// An object's entries in document order; a key written twice is an error (a reviewed
/// file with two `max_attempts` would otherwise mean whichever came last).
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out: Vec<(String, &'de RawValue)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(format!("the key {key:?} is written twice")));
                    }
                    let value: &'de RawValue = map.next_value()?;
                    out.push((key, value));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Loader<'a> {
    // ---- errors and positions -------------------------------------------------------

    pub(super) fn position(&self, raw: &RawValue) -> (usize, usize) {
        self.position_at((raw.get().as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize))
    }

    /// Line and column (1-based, in characters) of byte `offset` of the text.
    fn position_at(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text.as_bytes()[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = self.text[line_start..offset].chars().count() + 1;
        (line, column)
    }

    /// Where the key holding `value` starts (its opening quote): an unknown key's error
    /// points at the key, not at what it holds. Found by walking back from the value over
    /// `:` and whitespace to the key's closing quote, then to its unescaped opening one.
    fn key_position(&self, value: &RawValue) -> (usize, usize) {
        let bytes = self.text.as_bytes();
        let offset = (value.get().as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize).min(bytes.len());
        let skip_space = |mut i: usize| {
            while i > 0 && bytes[i - 1].is_ascii_whitespace() {
                i -= 1;
            }
            i
        };
        let colon = skip_space(offset);
        let close = if colon > 0 && bytes[colon - 1] == b':' { skip_space(colon - 1) } else { 0 };
        if close == 0 || bytes[close - 1] != b'"' {
            return self.position(value);
        }
        let mut i = close - 1;
        while i > 0 {
            i -= 1;
            let escapes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
            if bytes[i] == b'"' && escapes % 2 == 0 {
                return self.position_at(i);
            }
        }
        self.position(value)
    }

    /// [`Loader::err`] for an unknown key, positioned at the key.
    pub(super) fn key_err(&self, path: &str, value: &RawValue, what: impl fmt::Display) -> DocumentError {
        DocumentError { position: Some(self.key_position(value)), ..self.err(path, None, what) }
    }

    pub(super) fn err(&self, path: &str, raw: Option<&RawValue>, what: impl fmt::Display) -> DocumentError {
        DocumentError {
            path: path.to_string(),
            message: format!("{path}: {what}"),
            position: raw.map(|r| self.position(r)),
            file: None,
        }
    }

    fn json_err(&self, path: &str, e: serde_json::Error) -> DocumentError {
        // serde_json appends " at line L column C"; the position goes in its own field.
        let text = e.to_string();
        let what = text.rsplit_once(" at line ").map_or(text.as_str(), |(w, _)| w);
        let what = if e.is_syntax() || e.is_eof() { format!("invalid JSON: {what}") } else { what.to_string() };
        let position = (e.line() > 0).then(|| (e.line(), e.column()));
        DocumentError { path: path.to_string(), message: format!("{path}: {what}"), position, file: None }
    }

    /// The object at `raw` (the whole text when `None`), entries in order.
    pub(super) fn object(
        &self,
        path: &str,
        raw: Option<&'a RawValue>,
    ) -> Result<Vec<(String, &'a RawValue)>, DocumentError> {
        let text = raw.map_or(self.text, RawValue::get);
        if !text.trim_start().starts_with('{') {
            let shown = match raw {
                Some(r) => shown(r),
                None => "a document that is not an object".into(),
            };
            return Err(self.err(path, raw, format!("must be an object, got {shown}")));
        }
        serde_json::from_str::<Entries<'a>>(text).map(|e| e.0).map_err(|e| {
            let mut err = self.json_err(path, e);
            // Positions inside a nested value are relative to it: make them the document's.
            if let (Some(r), Some((line, col))) = (raw, err.position) {
                let (l0, c0) = self.position(r);
                err.position = Some(if line == 1 { (l0, c0 + col - 1) } else { (l0 + line - 1, col) });
            }
            err
        })
    }

    pub(super) fn value(&self, path: &str, raw: &RawValue) -> Result<Value, DocumentError> {
        serde_json::from_str(raw.get()).map_err(|e| {
            let mut err = self.json_err(path, e);
            err.position = Some(self.position(raw));
            err
        })
    }

    /// One of `choices`, as a string.
    pub(super) fn choice(&self, path: &str, raw: &RawValue, choices: &[&str]) -> Result<String, DocumentError> {
        match self.value(path, raw)? {
            Value::String(s) if choices.contains(&s.as_str()) => Ok(s),
            other => Err(self.err(
                path,
                Some(raw),
                format!("must be one of {}, got {}", choices.join(", "), describe(&other)),
            )),
        }
    }

    /// A whole number >= 0 (1e3 or 7.0 too: JSON's integers, as JSON Schema counts them).
    pub(super) fn whole(&self, path: &str, raw: &RawValue) -> Result<u64, DocumentError> {
        match self.value(path, raw)? {
            Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or(0)),
            Value::Number(n)
                if n.as_f64().is_some_and(|f| f.fract() == 0.0 && (0.0..1.8446744073709552e19).contains(&f)) =>
            {
                Ok(n.as_f64().map_or(0, |f| f as u64))
            }
            other => Err(self.err(path, Some(raw), format!("must be a whole number >= 0, got {}", describe(&other)))),
        }
    }

    /// A duration string with a unit.
    pub(super) fn duration(&self, path: &str, raw: &RawValue) -> Result<std::time::Duration, DocumentError> {
        let bad = |what: String| self.err(path, Some(raw), what);
        match self.value(path, raw)? {
            Value::String(s) => {
                let ms = parse_duration(&s).map_err(bad)?;
                Ok(crate::units::duration_from_ms_or_zero(ms))
            }
            Value::Number(n) => Err(bad(no_unit(&n.to_string()))),
            other => Err(bad(format!("must be a duration such as \"5s\", got {}", describe(&other)))),
        }
    }

    pub(super) fn number(&self, path: &str, raw: &RawValue) -> Result<f64, DocumentError> {
        match self.value(path, raw)? {
            Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            other => Err(self.err(path, Some(raw), format!("must be a number, got {}", describe(&other)))),
        }
    }
}

/// A short rendering of a written value for a message (long strings are cut).
pub(super) fn shown(raw: &RawValue) -> String {
    let text = raw.get();
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(37).collect::<String>())
    } else {
        text.to_string()
    }
}

pub(super) fn describe(v: &Value) -> String {
    let text = v.to_string();
    let short =
        if text.chars().count() > 40 { format!("{}...", text.chars().take(37).collect::<String>()) } else { text };
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => format!("the boolean {short}"),
        Value::Number(_) => format!("the number {short}"),
        Value::String(_) => format!("the string {short}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}
