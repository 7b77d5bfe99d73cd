//! Policy documents: retry policies as data, one reviewed JSON file read the same way by
//! every host (they all call [`Policies::from_json`]; none parses or validates anything).
//!
//! ```json
//! { "policies": { "default": { "deadline": "10s" },
//!                 "payments": { "max_attempts": 3, "initial_delay": "100ms", "budget": "payments" } },
//!   "budgets": { "payments": { "max_tokens": 10, "token_ratio": 0.1 } } }
//! ```
//!
//! A policy's keys are the knob table's names ([`crate::knob::KNOBS`]): nothing here
//! lists them, so a knob added to the table is a document key with no edit. Durations are
//! strings with a unit (`ms`, `s`, `m`); `null` turns off what can be off; an omitted knob
//! comes from the `default` policy, then from the built-in default; `name` defaults to the
//! policy's key. A budget named by several policies is one shared bucket per loaded
//! document. A gRPC service config (`methodConfig[].retryPolicy`, `retryThrottling`) loads
//! too, mapped as `docs/policies.md` describes.
//!
//! Every error names its path in the document (`policies.payments.initial_delay`) and,
//! where it has one, its line and column. Hostile input is refused before or while
//! parsing: a document over [`MAX_DOCUMENT_BYTES`], nesting deeper than serde_json's 128
//! levels, numbers past `f64`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::breaker::{BreakerConfig, BreakerModel, CircuitBreaker};
use crate::budget::{thousandths as thousandths_of, BudgetError, QuotaBudget, RatioBudget, RetryBudget, TokenBucket};
use crate::grpc_status::{status_code, StatusCodes, GRPC_STATUS_NAMES};
use crate::hedge::Hedging;
use crate::knob::{Setting, Unit, KNOBS};
use crate::policy::{Given, Jitter, Policy, PolicyBuilder, PolicyError, Pushback};

/// The largest document accepted, in bytes (16 MiB: a 10,000-policy document is about
/// 1.5 MiB). Larger input is refused before it is parsed, so a 100 MB string costs nothing.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// gRPC's own cap on `maxAttempts` (A6: "values greater than 5 are treated as 5"),
/// applied to service configs unless [`LoadOptions::grpc_max_attempts`] says otherwise.
pub const GRPC_MAX_ATTEMPTS: u32 = 5;

/// A policy's hedging object in a retryrs document (not a knob: it holds several).
pub const HEDGE_KEY: &str = "hedge";

/// The policy every other inherits from.
pub const DEFAULT_POLICY: &str = "default";

/// The budget a gRPC service config's `retryThrottling` becomes (gRPC throttles per
/// channel, so every method of the config shares it).
pub const GRPC_BUDGET: &str = "retryThrottling";

/// How a document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The cap on a gRPC `retryPolicy.maxAttempts` (gRPC's clients apply 5).
    pub grpc_max_attempts: u32,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { grpc_max_attempts: GRPC_MAX_ATTEMPTS }
    }
}

impl LoadOptions {
    /// These options with another cap on a gRPC `retryPolicy.maxAttempts`.
    pub fn grpc_max_attempts(mut self, cap: u32) -> Self {
        self.grpc_max_attempts = cap;
        self
    }
}

/// A document that could not be loaded: where (its path in the document, and the line and
/// column when known) and what was wrong. `Display` gives the whole sentence, the same in
/// every host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocumentError {
    /// The dotted path of the offending value (`policies.payments.initial_delay`), or
    /// `document` for the text as a whole.
    pub path: String,
    /// What was wrong, starting with the path.
    pub message: String,
    /// 1-based line and column of the offending value, when known.
    pub position: Option<(usize, usize)>,
    /// The file the document came from, for [`Policies::from_path`].
    pub file: Option<String>,
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.position) {
            // The compiler convention, so editors and terminals jump to it.
            (Some(file), Some((line, col))) => write!(f, "{file}:{line}:{col}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, Some((line, col))) => write!(f, "{} (line {line}, column {col})", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DocumentError {}

/// The policies and budgets of one loaded document, by name.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    policies: BTreeMap<String, Policy>,
    budgets: BTreeMap<String, Arc<RetryBudget>>,
    breakers: BTreeMap<String, Arc<CircuitBreaker>>,
    warnings: Vec<String>,
}

impl Policies {
    /// Loads a document from its text.
    pub fn from_json(text: &str) -> Result<Policies, DocumentError> {
        Self::from_json_with(text, LoadOptions::default())
    }

    /// [`Policies::from_json`] with options.
    pub fn from_json_with(text: &str, options: LoadOptions) -> Result<Policies, DocumentError> {
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(whole(format!(
                "document: {} bytes is more than the {} a policy document may hold",
                text.len(),
                MAX_DOCUMENT_BYTES
            )));
        }
        Loader { text, options }.load()
    }

    /// Loads a document from a file; errors carry the file's name, line and column.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Policies, DocumentError> {
        Self::from_path_with(path, LoadOptions::default())
    }

    /// [`Policies::from_path`] with options.
    pub fn from_path_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<Policies, DocumentError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let with_file = |mut e: DocumentError| {
            e.file = Some(file.clone());
            e
        };
        let size =
            std::fs::metadata(path).map_err(|e| with_file(whole(format!("document: cannot read it: {e}"))))?.len();
        if size > MAX_DOCUMENT_BYTES as u64 {
            return Err(with_file(whole(format!(
                "document: {size} bytes is more than the {MAX_DOCUMENT_BYTES} a policy document may hold"
            ))));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| with_file(whole(format!("document: cannot read it: {e}"))))?;
        Self::from_json_with(&text, options).map_err(with_file)
    }

    /// The policy called `name`.
    pub fn get(&self, name: &str) -> Option<&Policy> {
        self.policies.get(name)
    }

    /// The policy names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.policies.keys().map(String::as_str)
    }

    /// Every policy with its name, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Policy)> {
        self.policies.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many policies the document holds.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// The budget names, sorted.
    pub fn budget_names(&self) -> impl Iterator<Item = &str> {
        self.budgets.keys().map(String::as_str)
    }

    /// The shared budget called `name` (every policy naming it holds this very bucket).
    pub fn budget(&self, name: &str) -> Option<&Arc<RetryBudget>> {
        self.budgets.get(name)
    }

    /// The circuit breaker names, sorted.
    pub fn breaker_names(&self) -> impl Iterator<Item = &str> {
        self.breakers.keys().map(String::as_str)
    }

    /// The shared circuit breaker called `name` (every policy naming it holds this one).
    pub fn breaker(&self, name: &str) -> Option<&Arc<CircuitBreaker>> {
        self.breakers.get(name)
    }

    /// What the document says that is valid but probably not meant (each a sentence
    /// starting with its path), in document order: e.g. a gRPC `tokenRatio` that A6's
    /// three decimals make 0, or a method config that names no method. Empty for most
    /// documents; every host hands them over as they are.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The key of the policy a call to `method` of `service` runs under, looked up the way
    /// gRPC looks up a method config: `service/method`, then the service's own (`service`),
    /// then `default`. `None` when none of them is in the document (a gRPC call without a
    /// method config: one attempt). An empty `method` looks up the service's.
    pub fn method_key(&self, service: &str, method: &str) -> Option<&str> {
        let key = |k: &str| self.policies.get_key_value(k).map(|(k, _)| k.as_str());
        let exact = if method.is_empty() { None } else { key(&format!("{service}/{method}")) };
        exact.or_else(|| key(service)).or_else(|| key(DEFAULT_POLICY))
    }

    /// The policy of [`Policies::method_key`].
    pub fn for_method(&self, service: &str, method: &str) -> Option<&Policy> {
        self.method_key(service, method).and_then(|k| self.policies.get(k))
    }
}

fn whole(message: String) -> DocumentError {
    DocumentError { path: "document".into(), message, position: None, file: None }
}

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

struct Loader<'a> {
    text: &'a str,
    options: LoadOptions,
}

/// A value as written, with where.
#[derive(Clone, Copy)]
struct At<'a> {
    path_owner: &'a str,
    raw: &'a RawValue,
}

impl<'a> Loader<'a> {
    fn load(&self) -> Result<Policies, DocumentError> {
        let top = self.object("document", None)?;
        let is_grpc = top.iter().any(|(k, _)| k == "methodConfig" || k == "retryThrottling");
        if is_grpc {
            self.load_grpc(&top)
        } else {
            self.load_document(&top)
        }
    }

    // ---- errors and positions -------------------------------------------------------

    fn position(&self, raw: &RawValue) -> (usize, usize) {
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
    fn key_err(&self, path: &str, value: &RawValue, what: impl fmt::Display) -> DocumentError {
        DocumentError { position: Some(self.key_position(value)), ..self.err(path, None, what) }
    }

    fn err(&self, path: &str, raw: Option<&RawValue>, what: impl fmt::Display) -> DocumentError {
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
    fn object(&self, path: &str, raw: Option<&'a RawValue>) -> Result<Vec<(String, &'a RawValue)>, DocumentError> {
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

    fn value(&self, path: &str, raw: &RawValue) -> Result<Value, DocumentError> {
        serde_json::from_str(raw.get()).map_err(|e| {
            let mut err = self.json_err(path, e);
            err.position = Some(self.position(raw));
            err
        })
    }

    // ---- the retryrs document -------------------------------------------------------

    fn load_document(&self, top: &[(String, &'a RawValue)]) -> Result<Policies, DocumentError> {
        let mut policies_raw = None;
        let mut budgets_raw = None;
        let mut breakers_raw = None;
        for (key, raw) in top {
            match key.as_str() {
                "policies" => policies_raw = Some(*raw),
                "budgets" => budgets_raw = Some(*raw),
                "breakers" => breakers_raw = Some(*raw),
                "$schema" => {}
                other => {
                    return Err(self.key_err(other, raw, "unknown key; a policy document holds policies, budgets and breakers (or a gRPC service config, methodConfig and retryThrottling)"))
                }
            }
        }
        let breakers = self.named("breakers", breakers_raw, Self::breaker)?;
        let budgets = self.named("budgets", budgets_raw, Self::budget)?;
        let Some(policies_raw) = policies_raw else {
            return Err(self.err("policies", None, "missing; a policy document holds a \"policies\" object"));
        };
        let entries = self.object("policies", Some(policies_raw))?;
        let mut written: Vec<(&str, Vec<(String, &'a RawValue)>)> = Vec::with_capacity(entries.len());
        for (name, raw) in &entries {
            if !valid_name(name) {
                return Err(self.key_err(&format!("policies.{name:?}"), raw, format!("the key {NAME_RULE}")));
            }
            written.push((name.as_str(), self.object(&format!("policies.{name}"), Some(raw))?));
        }
        let default = written.iter().find(|(n, _)| *n == DEFAULT_POLICY).map(|(_, e)| e.as_slice()).unwrap_or(&[]);
        let mut policies = BTreeMap::new();
        for (name, own) in &written {
            let mut policy = self.policy(name, own, default, &budgets)?;
            policy.breaker = self.policy_breaker(name, own, default, &breakers)?;
            policies.insert(name.to_string(), policy);
        }
        Ok(Policies { policies, budgets, breakers, warnings: Vec::new() })
    }

    /// A section of named objects (`budgets`, `breakers`): each key checked against the
    /// name rule, each value built by `build` at its path; an absent section is empty.
    fn named<T>(
        &self,
        section: &str,
        raw: Option<&'a RawValue>,
        build: impl Fn(&Self, &str, &'a RawValue) -> Result<T, DocumentError>,
    ) -> Result<BTreeMap<String, Arc<T>>, DocumentError> {
        let mut out = BTreeMap::new();
        if let Some(raw) = raw {
            for (name, value) in self.object(section, Some(raw))? {
                if !valid_name(&name) {
                    return Err(self.key_err(&format!("{section}.{name:?}"), value, format!("the key {NAME_RULE}")));
                }
                let built = build(self, &format!("{section}.{name}"), value)?;
                out.insert(name, Arc::new(built));
            }
        }
        Ok(out)
    }

    fn budget(&self, path: &str, raw: &'a RawValue) -> Result<RetryBudget, DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let kind = match entries.iter().find(|(k, _)| k == "kind") {
            None => "token_bucket".to_string(),
            Some((_, v)) => self.choice(&format!("{path}.kind"), v, &["token_bucket", "quota", "ratio"])?,
        };
        let entries: Vec<_> = entries.into_iter().filter(|(k, _)| k != "kind").collect();
        match kind.as_str() {
            "quota" => return self.quota(path, &entries).map(RetryBudget::from),
            "ratio" => return self.ratio(path, &entries).map(RetryBudget::from),
            _ => {}
        }
        let mut max = None;
        let mut ratio = None;
        for (key, v) in entries {
            let at = format!("{path}.{key}");
            match key.as_str() {
                "max_tokens" => max = Some((self.number(&at, v)?, v)),
                "token_ratio" => ratio = Some((self.number(&at, v)?, v)),
                _ => {
                    return Err(self.key_err(
                        &at,
                        v,
                        "unknown key; a token_bucket budget holds kind, max_tokens and token_ratio",
                    ))
                }
            }
        }
        let (Some((m, m_raw)), Some((r, r_raw))) = (max, ratio) else {
            let missing = if max.is_none() { "max_tokens" } else { "token_ratio" };
            return Err(self.err(
                path,
                Some(raw),
                format!("{missing} is missing; a budget needs max_tokens and token_ratio"),
            ));
        };
        RetryBudget::new(m, r).map_err(|e| {
            let at = if e.knob == "max_tokens" { m_raw } else { r_raw };
            self.err(&format!("{path}.{}", e.knob), Some(at), format!("must be {}, got {}", e.requirement, e.value))
        })
    }

    /// The AWS SDKs' quota; every knob defaults to the SDKs' value.
    fn quota(&self, path: &str, entries: &[(String, &'a RawValue)]) -> Result<QuotaBudget, DocumentError> {
        let known = ["capacity", "retry_cost", "timeout_retry_cost", "no_retry_increment"];
        let given = self.known(path, entries, &known, "a quota budget holds kind")?;
        let get = |knob: &str, default: u64| match given.get(knob) {
            Some(raw) => self.whole(&format!("{path}.{knob}"), raw),
            None => Ok(default),
        };
        let q = QuotaBudget::new(
            get("capacity", QuotaBudget::AWS_CAPACITY)?,
            get("retry_cost", QuotaBudget::AWS_RETRY_COST)?,
            get("timeout_retry_cost", QuotaBudget::AWS_TIMEOUT_RETRY_COST)?,
            get("no_retry_increment", QuotaBudget::AWS_NO_RETRY_INCREMENT)?,
        );
        q.map_err(|e| self.section_err(path, &given, e))
    }

    /// Finagle's ratio budget; every knob defaults to Finagle's value.
    fn ratio(&self, path: &str, entries: &[(String, &'a RawValue)]) -> Result<RatioBudget, DocumentError> {
        let known = ["ttl", "min_retries_per_sec", "percent_can_retry"];
        let given = self.known(path, entries, &known, "a ratio budget holds kind")?;
        let ttl = match given.get("ttl") {
            Some(raw) => self.duration(&format!("{path}.ttl"), raw)?,
            None => RatioBudget::FINAGLE_TTL,
        };
        let min = match given.get("min_retries_per_sec") {
            Some(raw) => {
                let at = format!("{path}.min_retries_per_sec");
                u32::try_from(self.whole(&at, raw)?).unwrap_or(u32::MAX)
            }
            None => RatioBudget::FINAGLE_MIN_RETRIES_PER_SEC,
        };
        let percent = match given.get("percent_can_retry") {
            Some(raw) => self.number(&format!("{path}.percent_can_retry"), raw)?,
            None => RatioBudget::FINAGLE_PERCENT_CAN_RETRY,
        };
        // The window starts at the first call it sees (a slice starts when noticed).
        RatioBudget::new(ttl, min, percent, std::time::Duration::ZERO).map_err(|e| self.section_err(path, &given, e))
    }

    /// A circuit breaker: `model` (consecutive, sampling or count) and its knobs.
    fn breaker(&self, path: &str, raw: &'a RawValue) -> Result<CircuitBreaker, DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let Some((_, model_raw)) = entries.iter().find(|(k, _)| k == "model") else {
            return Err(self.err(
                path,
                Some(raw),
                "model is missing; a breaker needs model: consecutive, sampling or count",
            ));
        };
        let model = self.choice(&format!("{path}.model"), model_raw, &["consecutive", "sampling", "count"])?;
        let entries: Vec<_> = entries.into_iter().filter(|(k, _)| k != "model").collect();
        let common = [
            "break_duration",
            "half_open_probes",
            "break_multiplier",
            "max_break_duration",
            "per_attempt",
            "count_permanent",
            "judge_all_probes",
        ];
        let own: &[&str] = match model.as_str() {
            "consecutive" => &["failures"],
            "sampling" => {
                &["failure_ratio", "minimum_throughput", "sampling_duration", "slow_call_duration", "slow_call_ratio"]
            }
            _ => &["failure_ratio", "minimum_calls", "window_size", "slow_call_duration", "slow_call_ratio"],
        };
        let known: Vec<&str> = own.iter().chain(common.iter()).copied().collect();
        let what = format!("a {model} breaker holds model");
        let given = self.known(path, &entries, &known, &what)?;
        let at = |k: &str| format!("{path}.{k}");
        let count = |k: &str| -> Result<Option<u32>, DocumentError> {
            match given.get(k) {
                Some(raw) => Ok(Some(u32::try_from(self.whole(&at(k), raw)?).unwrap_or(u32::MAX))),
                None => Ok(None),
            }
        };
        let ratio = |k: &str, default: f64| -> Result<f64, DocumentError> {
            match given.get(k) {
                Some(raw) => self.number(&at(k), raw),
                None => Ok(default),
            }
        };
        let flag = |k: &str| -> Result<bool, DocumentError> {
            match given.get(k) {
                None => Ok(false),
                Some(raw) => match self.value(&at(k), raw)? {
                    Value::Bool(b) => Ok(b),
                    other => {
                        Err(self.err(&at(k), Some(raw), format!("must be true or false, got {}", describe(&other))))
                    }
                },
            }
        };
        let model = match model.as_str() {
            "consecutive" => {
                let Some(failures) = count("failures")? else {
                    return Err(self.err(path, Some(raw), "failures is missing; a consecutive breaker needs failures"));
                };
                BreakerModel::Consecutive { failures }
            }
            "sampling" => {
                // Polly v8's defaults.
                let sampling_duration = match given.get("sampling_duration") {
                    Some(raw) => self.duration(&at("sampling_duration"), raw)?,
                    None => std::time::Duration::from_secs(30),
                };
                BreakerModel::Sampling {
                    failure_ratio: ratio("failure_ratio", 0.1)?,
                    minimum_throughput: count("minimum_throughput")?.unwrap_or(100),
                    sampling_duration,
                }
            }
            // resilience4j's defaults.
            _ => BreakerModel::Count {
                failure_ratio: ratio("failure_ratio", 0.5)?,
                minimum_calls: count("minimum_calls")?.unwrap_or(100),
                window_size: count("window_size")?.unwrap_or(100),
            },
        };
        let mut config = BreakerConfig::new(model);
        if let Some(raw) = given.get("break_duration") {
            config.break_duration = self.duration(&at("break_duration"), raw)?;
        }
        if let Some(n) = count("half_open_probes")? {
            config.half_open_probes = n;
        }
        if let Some(raw) = given.get("break_multiplier") {
            config.break_multiplier = self.number(&at("break_multiplier"), raw)?;
        }
        if let Some(raw) = given.get("max_break_duration") {
            config.max_break_duration = match self.value(&at("max_break_duration"), raw)? {
                Value::Null => None,
                _ => Some(self.duration(&at("max_break_duration"), raw)?),
            };
        }
        if let Some(raw) = given.get("slow_call_duration") {
            config.slow_call_duration = match self.value(&at("slow_call_duration"), raw)? {
                Value::Null => None,
                _ => Some(self.duration(&at("slow_call_duration"), raw)?),
            };
        }
        config.slow_call_ratio = ratio("slow_call_ratio", 1.0)?;
        config.per_attempt = flag("per_attempt")?;
        config.count_permanent = flag("count_permanent")?;
        config.judge_all_probes = flag("judge_all_probes")?;
        CircuitBreaker::new(config).map_err(|e| self.section_err(path, &given, e))
    }

    /// The breaker a policy names (its own `breaker` key, else `default`'s).
    fn policy_breaker(
        &self,
        name: &str,
        own: &[(String, &'a RawValue)],
        default: &[(String, &'a RawValue)],
        breakers: &BTreeMap<String, Arc<CircuitBreaker>>,
    ) -> Result<Option<Arc<CircuitBreaker>>, DocumentError> {
        let find = |entries: &[(String, &'a RawValue)]| entries.iter().find(|(k, _)| k == "breaker").map(|(_, v)| *v);
        let (owner, raw) = match (find(own), find(default)) {
            (Some(raw), _) => (name, raw),
            (None, Some(raw)) => (DEFAULT_POLICY, raw),
            (None, None) => return Ok(None),
        };
        let path = format!("policies.{owner}.breaker");
        match self.value(&path, raw)? {
            Value::Null => Ok(None),
            Value::String(s) => match breakers.get(&s) {
                Some(b) => Ok(Some(Arc::clone(b))),
                None => {
                    let known: Vec<&str> = breakers.keys().map(String::as_str).collect();
                    let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                    Err(self.err(&path, Some(raw), format!("names no breaker in breakers (it holds {known})")))
                }
            },
            other => {
                Err(self.err(&path, Some(raw), format!("must name a breaker in breakers, got {}", describe(&other))))
            }
        }
    }

    /// The entries of a section whose keys must be among `known` (`what` starts the list
    /// the error gives).
    fn known(
        &self,
        path: &str,
        entries: &[(String, &'a RawValue)],
        known: &[&str],
        what: &str,
    ) -> Result<BTreeMap<String, &'a RawValue>, DocumentError> {
        let mut out = BTreeMap::new();
        for (key, v) in entries {
            if !known.contains(&key.as_str()) {
                let text = format!("unknown key; {what}, {}", known.join(", "));
                return Err(self.key_err(&format!("{path}.{key}"), v, text));
            }
            out.insert(key.clone(), *v);
        }
        Ok(out)
    }

    /// A core error about a section's knob, located at the knob when it was written.
    fn section_err(&self, path: &str, given: &BTreeMap<String, &'a RawValue>, e: BudgetError) -> DocumentError {
        let at = format!("{path}.{}", e.knob);
        // A document spells its keys as the contract does (the key is the path above);
        // a duration's value is shown with its unit, as the document's strings carry one.
        let value = if crate::spelling::Spelling::is_duration(e.knob) {
            crate::spelling::Spelling::Rust.span_ms(e.value)
        } else if e.value.fract() == 0.0 && e.value.abs() < 1e15 {
            format!("{}", e.value as i64)
        } else {
            format!("{}", e.value)
        };
        self.err(&at, given.get(e.knob).copied(), format!("must be {}, got {value}", e.requirement))
    }

    /// One of `choices`, as a string.
    fn choice(&self, path: &str, raw: &RawValue, choices: &[&str]) -> Result<String, DocumentError> {
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
    fn whole(&self, path: &str, raw: &RawValue) -> Result<u64, DocumentError> {
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
    fn duration(&self, path: &str, raw: &RawValue) -> Result<std::time::Duration, DocumentError> {
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

    fn number(&self, path: &str, raw: &RawValue) -> Result<f64, DocumentError> {
        match self.value(path, raw)? {
            Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            other => Err(self.err(path, Some(raw), format!("must be a number, got {}", describe(&other)))),
        }
    }

    /// One policy: its own knobs, then `default`'s, then the built-in defaults.
    fn policy(
        &self,
        name: &str,
        own: &[(String, &'a RawValue)],
        default: &[(String, &'a RawValue)],
        budgets: &BTreeMap<String, Arc<RetryBudget>>,
    ) -> Result<Policy, DocumentError> {
        for (key, raw) in own {
            if crate::knob::knob(key).is_none() && key != "breaker" && key != HEDGE_KEY {
                let known: Vec<&str> = KNOBS.iter().map(|k| k.name).chain(["breaker", HEDGE_KEY]).collect();
                return Err(self.key_err(
                    &format!("policies.{name}.{key}"),
                    raw,
                    format!("unknown key; a policy's keys are {}", known.join(", ")),
                ));
            }
        }
        let find =
            |entries: &[(String, &'a RawValue)], knob: &str| entries.iter().find(|(k, _)| k == knob).map(|(_, v)| *v);
        let mut builder = PolicyBuilder::new().name(name);
        let mut origin: BTreeMap<&'static str, At<'_>> = BTreeMap::new();
        for knob in KNOBS {
            // The name is the policy's own: inheriting it would give every policy default's.
            let at = match find(own, knob.name) {
                Some(raw) => At { path_owner: name, raw },
                None if knob.name == "name" => continue,
                None => match find(default, knob.name) {
                    Some(raw) => At { path_owner: DEFAULT_POLICY, raw },
                    None => continue,
                },
            };
            origin.insert(knob.name, at);
            let path = format!("policies.{}.{}", at.path_owner, knob.name);
            builder = self.knob(builder, knob, &path, at.raw, budgets)?;
        }
        // `hedge` is an object, not a knob: its own, else the default policy's.
        let hedge = match find(own, HEDGE_KEY) {
            Some(raw) => Some((name, raw)),
            None => find(default, HEDGE_KEY).map(|raw| (DEFAULT_POLICY, raw)),
        };
        if let Some((owner, raw)) = hedge {
            builder = builder.hedge(self.hedge(&format!("policies.{owner}.{HEDGE_KEY}"), raw)?);
        }
        builder.build().map_err(|e| {
            let at = origin.get(e.knob);
            let path = format!("policies.{}.{}", at.map_or(name, |a| a.path_owner), e.knob);
            let text = e.render(&|k| if k == e.knob { path.clone() } else { k.to_string() }, &document_value);
            DocumentError { message: text, position: at.map(|a| self.position(a.raw)), path, file: None }
        })
    }

    /// A policy's `hedge`: `{max_attempts, delay, non_fatal}`, `delay` a duration or
    /// `"adaptive"` (then `quantile`, `floor`, `ceiling`, `window` may follow); `null`
    /// for none.
    fn hedge(&self, path: &str, raw: &'a RawValue) -> Result<Option<Hedging>, DocumentError> {
        if raw.get().trim() == "null" {
            return Ok(None);
        }
        let fields = self.object(path, Some(raw))?;
        let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        const KEYS: [&str; 8] =
            ["max_attempts", "delay", "non_fatal", "quantile", "floor", "ceiling", "window", "guard"];
        for (key, v) in &fields {
            if !KEYS.contains(&key.as_str()) {
                return Err(self.key_err(
                    &format!("{path}.{key}"),
                    v,
                    format!("unknown key; hedge holds {}", KEYS.join(", ")),
                ));
            }
        }
        let at = |k: &str| format!("{path}.{k}");
        let whole = |k: &str, default: u64| -> Result<u64, DocumentError> {
            let Some(v) = get(k) else { return Ok(default) };
            let n = self.number(&at(k), v)?;
            if n.fract() == 0.0 && (0.0..1e9).contains(&n) {
                Ok(n as u64)
            } else {
                Err(self.err(&at(k), Some(v), format!("must be a whole number, got {}", crate::units::compact(n))))
            }
        };
        let dur = |k: &str, default: f64| -> Result<f64, DocumentError> {
            let Some(v) = get(k) else { return Ok(default) };
            match self.value(&at(k), v)? {
                Value::String(s) => parse_duration(&s).map_err(|w| self.err(&at(k), Some(v), w)),
                Value::Number(n) => Err(self.err(&at(k), Some(v), no_unit(&n.to_string()))),
                other => Err(self.err(
                    &at(k),
                    Some(v),
                    format!("must be a duration such as \"50ms\", got {}", describe(&other)),
                )),
            }
        };
        let attempts = whole("max_attempts", 2)?;
        let delay_raw = get("delay").ok_or_else(|| {
            self.err(path, Some(raw), "delay is missing; write a duration such as \"50ms\" or \"adaptive\"")
        })?;
        let adaptive = matches!(self.value(&at("delay"), delay_raw)?, Value::String(s) if s == "adaptive");
        let hedging = if adaptive {
            let quantile = match get("quantile") {
                Some(v) => self.number(&at("quantile"), v)?,
                None => 0.95,
            };
            let window = whole("window", crate::hedge::DEFAULT_WINDOW as u64)?;
            Hedging::adaptive_window_ms(
                attempts,
                quantile,
                dur("floor", 1.0)?,
                dur("ceiling", 1000.0)?,
                window as usize,
            )
        } else {
            for k in ["quantile", "floor", "ceiling", "window"] {
                if let Some(v) = get(k) {
                    return Err(self.key_err(&at(k), v, "applies only to \"delay\": \"adaptive\""));
                }
            }
            Hedging::fixed_ms(attempts, dur("delay", 0.0)?)
        }
        .map_err(|e| {
            let key = if e.field == "quantile"
                || e.field == "floor"
                || e.field == "ceiling"
                || e.field == "window"
                || e.field == "max_attempts"
            {
                e.field
            } else {
                "delay"
            };
            self.err(&at(key), get(key), format!("must {}", e.message.trim_start_matches("must ")))
        })?;
        let non_fatal = match get("non_fatal") {
            None => vec![],
            Some(v) => self.names_list(&at("non_fatal"), v)?,
        };
        let guarded = match get("guard") {
            None => true,
            Some(v) => match self.value(&at("guard"), v)? {
                Value::Bool(b) => b,
                other => {
                    return Err(self.err(
                        &at("guard"),
                        Some(v),
                        format!("must be true or false, got {}", describe(&other)),
                    ))
                }
            },
        };
        let hedging = hedging.with_non_fatal(non_fatal);
        Ok(Some(if guarded { hedging } else { hedging.without_guard() }))
    }

    /// A list of failure names (strings) or numbers (statuses), kept as text.
    fn names_list(&self, path: &str, raw: &RawValue) -> Result<Vec<String>, DocumentError> {
        match self.value(path, raw)? {
            Value::Array(items) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    Value::Number(n) if n.as_u64().is_some() => Ok(n.to_string()),
                    other => Err(self.err(
                        path,
                        Some(raw),
                        format!("must list names or status numbers, got {}", describe(other)),
                    )),
                })
                .collect(),
            other => Err(self.err(path, Some(raw), format!("must be a list, got {}", describe(&other)))),
        }
    }

    /// Applies one written knob, converted by its unit in the table.
    fn knob(
        &self,
        builder: PolicyBuilder,
        knob: &'static crate::knob::Knob,
        path: &str,
        raw: &RawValue,
        budgets: &BTreeMap<String, Arc<RetryBudget>>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let value = self.value(path, raw)?;
        let bad = |what: String| self.err(path, Some(raw), what);
        if value.is_null() && !knob.can_be_off {
            let offable: Vec<&str> = KNOBS.iter().filter(|k| k.can_be_off).map(|k| k.name).collect();
            return Err(bad(format!("cannot be null; null turns off only {}", offable.join(", "))));
        }
        let policy_err = |e: PolicyError| {
            bad(e
                .render(&|k| k.to_string(), &document_value)
                .split_once(" must be ")
                .map_or_else(|| e.to_string(), |(_, rest)| format!("must be {rest}")))
        };
        match knob.unit {
            Unit::Count | Unit::Factor => {
                let setting = match &value {
                    Value::Null => Setting::Off,
                    Value::Number(n) => Setting::Number(n.as_f64().unwrap_or(f64::NAN)),
                    other => return Err(bad(format!("must be a number, got {}", describe(other)))),
                };
                builder.set(knob.name, setting).map_err(policy_err)
            }
            Unit::Duration => {
                let setting = match &value {
                    Value::Null => Setting::Off,
                    Value::String(s) => Setting::Number(parse_duration(s).map_err(bad)?),
                    Value::Number(n) => return Err(bad(no_unit(&n.to_string()))),
                    other => return Err(bad(format!("must be a duration such as \"100ms\", got {}", describe(other)))),
                };
                builder.set(knob.name, setting).map_err(policy_err)
            }
            Unit::Jitter => match &value {
                Value::String(s) => Ok(builder.jitter(document_jitter(s).map_err(policy_err)?)),
                other => Err(bad(format!("must be a jitter spelling such as \"full\", got {}", describe(other)))),
            },
            Unit::Text => match &value {
                Value::String(s) if !valid_name(s) => Err(bad(NAME_RULE.to_string())),
                Value::String(s) => Ok(builder.name(s)),
                other => Err(bad(format!("must be a string, got {}", describe(other)))),
            },
            Unit::Seed => match &value {
                Value::Null => Ok(builder.seed(None)),
                Value::Number(n) if n.as_u64().is_some() => Ok(builder.seed(n.as_u64())),
                // 1e3 or 7.0: JSON's integers, as JSON Schema counts them.
                Value::Number(n)
                    if n.as_f64().is_some_and(|f| f.fract() == 0.0 && (0.0..1.8446744073709552e19).contains(&f)) =>
                {
                    Ok(builder.seed(n.as_f64().map(|f| f as u64)))
                }
                other => Err(bad(format!("must be a whole number in [0, 2^64), got {}", describe(other)))),
            },
            Unit::Budget => match &value {
                Value::Null => Ok(builder.budget(None)),
                Value::String(s) => match budgets.get(s) {
                    Some(b) => Ok(builder.budget(Some(Arc::clone(b)))),
                    None => {
                        let known: Vec<&str> = budgets.keys().map(String::as_str).collect();
                        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                        Err(bad(format!("names no budget in budgets (it holds {known})")))
                    }
                },
                other => Err(bad(format!("must name a budget in budgets, got {}", describe(other)))),
            },
        }
    }

    // ---- gRPC service config --------------------------------------------------------
    //
    // grpc-go's service config parser is the reference: what it refuses is refused, what
    // it accepts loads (and where A6 makes an accepted value useless, a warning says so).

    fn load_grpc(&self, top: &[(String, &'a RawValue)]) -> Result<Policies, DocumentError> {
        let mut budgets = BTreeMap::new();
        let mut warnings = Vec::new();
        if let Some((_, raw)) = top.iter().find(|(k, _)| k == "retryThrottling") {
            let budget = self.grpc_throttling(raw, &mut warnings)?;
            budgets.insert(GRPC_BUDGET.to_string(), Arc::new(budget));
        }
        let mut policies = BTreeMap::new();
        if let Some((_, raw)) = top.iter().find(|(k, _)| k == "methodConfig") {
            let configs: Vec<&RawValue> = serde_json::from_str(raw.get())
                .map_err(|_| self.err("methodConfig", Some(raw), "must be a list of method configs"))?;
            // Where each name was given, to refuse one given twice (gRPC does).
            let mut named: BTreeMap<String, String> = BTreeMap::new();
            for (i, config) in configs.iter().enumerate() {
                let path = format!("methodConfig[{i}]");
                let budget = budgets.get(GRPC_BUDGET);
                self.grpc_method(&path, config, budget, &mut named, &mut policies, &mut warnings)?;
            }
        }
        Ok(Policies { policies, budgets, breakers: BTreeMap::new(), warnings })
    }

    /// `retryThrottling`: `maxTokens` a number in (0, 1000] (grpc-go reads a float64:
    /// 10.5 loads; A6 keeps 3 decimals), `tokenRatio` > 0. A ratio that keeps no token at three decimals is valid to
    /// gRPC, so it loads, with a warning.
    fn grpc_throttling(&self, raw: &'a RawValue, warnings: &mut Vec<String>) -> Result<RetryBudget, DocumentError> {
        let path = "retryThrottling";
        let mut max = None;
        let mut ratio = None;
        for (key, v) in self.object(path, Some(raw))? {
            let at = format!("{path}.{key}");
            match key.as_str() {
                "maxTokens" => max = Some((self.number(&at, v)?, v)),
                "tokenRatio" => ratio = Some((self.number(&at, v)?, v)),
                _ => return Err(self.key_err(&at, v, "unknown key; retryThrottling holds maxTokens and tokenRatio")),
            }
        }
        let (Some((m, m_raw)), Some((r, r_raw))) = (max, ratio) else {
            let missing = if max.is_none() { "maxTokens" } else { "tokenRatio" };
            return Err(self.err(path, Some(raw), format!("{missing} is missing")));
        };
        // grpc-go reads a float64 and checks (0, 1000]; tokens keep 3 decimals (A6).
        if !(m > 0.0 && m <= 1000.0) {
            return Err(self.err(
                "retryThrottling.maxTokens",
                Some(m_raw),
                format!("must be > 0 and <= 1000 (gRPC), got {m}"),
            ));
        }
        if thousandths_of(m) == 0 {
            return Err(self.err(
                "retryThrottling.maxTokens",
                Some(m_raw),
                format!("must be at least 0.001 (A6 keeps 3 decimals), got {m}"),
            ));
        }
        if !(r > 0.0 && r.is_finite()) {
            return Err(self.err("retryThrottling.tokenRatio", Some(r_raw), format!("must be > 0 (gRPC), got {r}")));
        }
        let budget = RetryBudget::from(TokenBucket::grpc(m, r));
        if budget.token_ratio() == 0.0 {
            warnings.push(format!(
                "retryThrottling.tokenRatio: {r} is 0 at the three decimals gRPC keeps (A6): successes never refill the bucket, so once {} failures spend half of it no call is retried again",
                m / 2.0
            ));
        }
        Ok(budget)
    }

    fn grpc_method(
        &self,
        path: &str,
        raw: &'a RawValue,
        budget: Option<&Arc<RetryBudget>>,
        named: &mut BTreeMap<String, String>,
        out: &mut BTreeMap<String, Policy>,
        warnings: &mut Vec<String>,
    ) -> Result<(), DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let get = |k: &str| entries.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        // grpc-go skips a method config without names: it applies to no method.
        let names = match get("name") {
            None => Vec::new(),
            Some(n) => self.grpc_names(&format!("{path}.name"), n)?,
        };
        if names.is_empty() {
            warnings.push(format!(
                "{path}: names no method, so it applies to none (gRPC); {{}} in name makes it every method's default"
            ));
            return Ok(());
        }
        for (name, at, raw_at) in &names {
            if let Some(first) = named.get(name) {
                let what = if name == DEFAULT_POLICY { "the default ({})".to_string() } else { format!("{name:?}") };
                return Err(self.err(
                    at,
                    Some(raw_at),
                    format!("names {what} again: {first} names it already; gRPC refuses a service config that names a method twice"),
                ));
            }
            named.insert(name.clone(), at.clone());
        }
        if let (Some(_), Some(h)) = (get("retryPolicy"), get("hedgingPolicy")) {
            let methods: Vec<&str> = names.iter().map(|(n, _, _)| n.as_str()).collect();
            return Err(self.err(
                &format!("{path}.hedgingPolicy"),
                Some(h),
                format!(
                    "and retryPolicy are both set for {}: a method is retried or hedged, not both (gRPC A6)",
                    methods.join(", ")
                ),
            ));
        }
        let deadline = match get("timeout") {
            None => None, // gRPC calls have no deadline unless one is set.
            Some(t) => match self.value(&format!("{path}.timeout"), t)? {
                Value::String(s) => {
                    Some(grpc_duration(&s).map_err(|w| self.err(&format!("{path}.timeout"), Some(t), w))?)
                }
                other => {
                    return Err(self.err(
                        &format!("{path}.timeout"),
                        Some(t),
                        format!("must be a duration such as \"1.5s\", got {}", describe(&other)),
                    ))
                }
            },
        };
        let base = PolicyBuilder::new()
            .deadline_ms(deadline)
            .pushback(Pushback::Grpc)
            // No retryPolicy: one attempt, no status retried (a retryPolicy lists its own).
            .grpc_status_codes(Some(StatusCodes::default()));
        let builder = match (get("retryPolicy"), get("hedgingPolicy")) {
            (Some(retry), _) => self.grpc_retry(path, retry, base, budget, warnings)?,
            (None, Some(hedge)) => self.grpc_hedging(path, hedge, base, budget)?,
            // A method config without a retry policy still is the method's config: gRPC
            // makes one attempt (a service-level policy does not apply to it), and a call
            // that is not retried spends no throttling token.
            (None, None) => base.max_attempts(1).budget(None),
        };
        for (name, _, _) in names {
            let built = builder.clone().name(&name).build().map_err(|e| {
                let text = e.render(&|k| k.to_string(), &document_value);
                self.err(&format!("{path}.timeout"), get("timeout"), format!("retryrs needs {text}"))
            })?;
            out.insert(name, built);
        }
        Ok(())
    }

    /// A method config's `retryPolicy`, checked as grpc-go checks it, onto `base`.
    /// `perAttemptRecvTimeout` (gRFC A6's later field) loads as grpc-go loads it: checked as
    /// a duration, then ignored, with a warning saying so.
    fn grpc_retry(
        &self,
        path: &str,
        retry: &'a RawValue,
        base: PolicyBuilder,
        budget: Option<&Arc<RetryBudget>>,
        warnings: &mut Vec<String>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let rp = format!("{path}.retryPolicy");
        let fields = self.object(&rp, Some(retry))?;
        let field = |k: &str| -> Result<&RawValue, DocumentError> {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| *v)
                .ok_or_else(|| self.err(&rp, Some(retry), format!("{k} is missing (gRPC requires it)")))
        };
        for (key, v) in &fields {
            if !matches!(
                key.as_str(),
                "maxAttempts"
                    | "initialBackoff"
                    | "maxBackoff"
                    | "backoffMultiplier"
                    | "retryableStatusCodes"
                    | "perAttemptRecvTimeout"
            ) {
                return Err(self.key_err(&format!("{rp}.{key}"), v, "unknown or unsupported retryPolicy field"));
            }
            if key == "perAttemptRecvTimeout" {
                let at = format!("{rp}.{key}");
                self.grpc_seconds(&at, v, "1s")?;
                warnings.push(format!(
                    "{at}: ignored, as grpc-go ignores it; bound each attempt with the method config's timeout, or a \
                     retryrs policy's attempt_timeout"
                ));
            }
        }
        let at = |k: &str| format!("{rp}.{k}");
        let attempts_raw = field("maxAttempts")?;
        let attempts = self.grpc_attempts(&at("maxAttempts"), attempts_raw, self.options.grpc_max_attempts.max(1))?;
        let backoff = |k: &str| -> Result<f64, DocumentError> {
            let raw = field(k)?;
            let ms = self.grpc_seconds(&at(k), raw, "0.1s")?;
            if ms <= 0.0 {
                return Err(self.err(&at(k), Some(raw), "must be > 0 (gRPC)"));
            }
            Ok(ms)
        };
        let initial = backoff("initialBackoff")?;
        let max = backoff("maxBackoff")?;
        let mult_raw = field("backoffMultiplier")?;
        let multiplier = self.number(&at("backoffMultiplier"), mult_raw)?;
        let codes_raw = field("retryableStatusCodes")?;
        let codes = self.grpc_codes(&at("retryableStatusCodes"), codes_raw)?;
        let builder = base
            .grpc_status_codes(Some(StatusCodes::retryable(codes)))
            .max_attempts(attempts)
            .initial_delay_ms(initial)
            .max_delay_ms(max)
            .multiplier(multiplier)
            .jitter(Jitter::Proportional(0.2))
            // gRPC obeys grpc-retry-pushback-ms as given: no cap on a server's wait.
            .set("max_retry_after", Setting::Off)
            .map_err(|e| self.err(&rp, Some(retry), e))?
            .budget(budget.cloned());
        // The knobs' own rules, reported at the gRPC field that broke them.
        builder.clone().build().map_err(|e| {
            let (key, raw) = match e.knob {
                "max_delay" => ("maxBackoff", field("maxBackoff").ok()),
                "initial_delay" => ("initialBackoff", field("initialBackoff").ok()),
                "multiplier" => ("backoffMultiplier", Some(mult_raw)),
                _ => ("maxAttempts", Some(attempts_raw)),
            };
            let text = e.render(&|k| k.to_string(), &document_value);
            self.err(&at(key), raw, format!("retryrs needs {text}"))
        })?;
        Ok(builder)
    }

    /// A retry or hedging policy's `maxAttempts`: a whole number > 1 (gRPC), capped at `cap`.
    fn grpc_attempts(&self, path: &str, raw: &'a RawValue, cap: u32) -> Result<u64, DocumentError> {
        let attempts = self.number(path, raw)?;
        if !(attempts.fract() == 0.0 && attempts > 1.0) {
            return Err(self.err(path, Some(raw), format!("must be a whole number > 1 (gRPC), got {attempts}")));
        }
        // grpc-go reads an int: JSON's 2.0 or 2e0 does not unmarshal into one.
        if !raw.get().trim().bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.err(
                path,
                Some(raw),
                format!(
                    "must be an integer written without a fraction or exponent (gRPC reads an int), got {}",
                    raw.get().trim()
                ),
            ));
        }
        Ok(attempts.min(f64::from(cap)) as u64)
    }

    /// A gRPC duration (`"0.1s"`) in milliseconds; `example` shows the form in the error.
    fn grpc_seconds(&self, path: &str, raw: &'a RawValue, example: &str) -> Result<f64, DocumentError> {
        match self.value(path, raw)? {
            Value::String(s) => grpc_duration(&s).map_err(|w| self.err(path, Some(raw), w)),
            other => Err(self.err(
                path,
                Some(raw),
                format!("must be a duration in seconds such as \"{example}\", got {}", describe(&other)),
            )),
        }
    }

    /// A method config's `hedgingPolicy`, as A6 and grpc-java read it: `maxAttempts` a
    /// whole number > 1 (capped at 5, or [`LoadOptions::grpc_max_attempts`] if lower),
    /// `hedgingDelay` a duration >= 0 (0s when omitted: every attempt at once),
    /// `nonFatalStatusCodes` a list of status codes (none when omitted: every failure is
    /// fatal). Hedges are throttled by `retryThrottling` exactly as A6 says (sent only
    /// while tokens > maxTokens/2, spending nothing: only failures spend); without
    /// `retryThrottling` they are not limited (A6: no throttling configured), so the
    /// native default guard is off.
    fn grpc_hedging(
        &self,
        path: &str,
        hedge: &'a RawValue,
        base: PolicyBuilder,
        budget: Option<&Arc<RetryBudget>>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let hp = format!("{path}.hedgingPolicy");
        let fields = self.object(&hp, Some(hedge))?;
        for (key, v) in &fields {
            if !matches!(key.as_str(), "maxAttempts" | "hedgingDelay" | "nonFatalStatusCodes") {
                return Err(self.key_err(&format!("{hp}.{key}"), v, "unknown hedgingPolicy field"));
            }
        }
        let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        let at = |k: &str| format!("{hp}.{k}");
        let attempts_raw = get("maxAttempts")
            .ok_or_else(|| self.err(&hp, Some(hedge), "maxAttempts is missing (gRPC requires it)"))?;
        let cap = self.options.grpc_max_attempts.clamp(1, crate::hedge::MAX_HEDGE_ATTEMPTS);
        let attempts = self.grpc_attempts(&at("maxAttempts"), attempts_raw, cap)?;
        let delay = match get("hedgingDelay") {
            None => 0.0,
            Some(raw) => self.grpc_seconds(&at("hedgingDelay"), raw, "0.5s")?,
        };
        let non_fatal = match get("nonFatalStatusCodes") {
            None => vec![],
            Some(raw) => self.grpc_code_names(&at("nonFatalStatusCodes"), raw, true)?,
        };
        let codes = StatusCodes::non_fatal(non_fatal.iter().filter_map(|n| status_code(n).ok()));
        let hedging = Hedging::fixed_ms(attempts, delay)
            .map_err(|e| self.err(&at("hedgingDelay"), get("hedgingDelay"), format!("retryrs needs {e}")))?
            .with_non_fatal(non_fatal)
            .with_a6_throttling()
            .without_guard();
        Ok(base
            .hedge(Some(hedging))
            .grpc_status_codes(Some(codes))
            .set("max_retry_after", Setting::Off)
            .map_err(|e| self.err(&hp, Some(hedge), e))?
            .budget(budget.cloned()))
    }

    /// `retryableStatusCodes`: a non-empty list of gRPC status codes, each a name
    /// (`"UNAVAILABLE"`) or a number in [0, 16], as grpc-go reads them; kept in the
    /// policy ([`Policy::grpc_status_codes`], [`Policy::grpc_verdict`]) for the host's
    /// predicate, which decides which errors are retried.
    fn grpc_codes(&self, path: &str, raw: &RawValue) -> Result<Vec<u8>, DocumentError> {
        Ok(self.grpc_code_names(path, raw, false)?.iter().filter_map(|n| status_code(n).ok()).collect())
    }

    /// A list of gRPC status codes (names or numbers), as names; empty only if `may_be_empty`.
    fn grpc_code_names(&self, path: &str, raw: &RawValue, may_be_empty: bool) -> Result<Vec<String>, DocumentError> {
        let list: Vec<&RawValue> = serde_json::from_str(raw.get())
            .map_err(|_| self.err(path, Some(raw), "must be a non-empty list (gRPC)"))?;
        if list.is_empty() && !may_be_empty {
            return Err(self.err(path, Some(raw), "must be a non-empty list (gRPC)"));
        }
        let mut names = Vec::with_capacity(list.len());
        for (i, code) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let found = match self.value(&p, code)? {
                Value::String(s) => GRPC_STATUS_NAMES.iter().find(|c| **c == s.as_str()).copied(),
                Value::Number(n) => n.as_u64().and_then(|n| GRPC_STATUS_NAMES.get(n as usize)).copied(),
                _ => None,
            };
            if let Some(name) = found {
                names.push(name.to_string());
            } else {
                return Err(self.err(
                    &p,
                    Some(code),
                    format!(
                        "{} is not a gRPC status code; write a name such as \"UNAVAILABLE\" or a number from 0 to {}",
                        shown(code),
                        GRPC_STATUS_NAMES.len() - 1
                    ),
                ));
            }
        }
        Ok(names)
    }

    /// A method config's names, each with its path: gRPC's `service/method`, `service`
    /// for all its methods, `default` for `{}` (every method).
    #[allow(clippy::type_complexity)]
    fn grpc_names(&self, path: &str, raw: &'a RawValue) -> Result<Vec<(String, String, &'a RawValue)>, DocumentError> {
        let list: Vec<&RawValue> =
            serde_json::from_str(raw.get()).map_err(|_| self.err(path, Some(raw), "must be a list of names"))?;
        let mut out = Vec::new();
        for (i, n) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let mut service = String::new();
            let mut method = String::new();
            for (key, v) in self.object(&p, Some(n))? {
                let text = match self.value(&format!("{p}.{key}"), v)? {
                    Value::String(s) => s,
                    other => {
                        return Err(self.err(
                            &format!("{p}.{key}"),
                            Some(v),
                            format!("must be a string, got {}", describe(&other)),
                        ))
                    }
                };
                match key.as_str() {
                    "service" => service = text,
                    "method" => method = text,
                    _ => {
                        return Err(self.key_err(
                            &format!("{p}.{key}"),
                            v,
                            "unknown key; a name holds service and method",
                        ))
                    }
                }
            }
            let name = match (service.is_empty(), method.is_empty()) {
                (true, true) => DEFAULT_POLICY.to_string(),
                (false, true) => service,
                (false, false) => format!("{service}/{method}"),
                (true, false) => return Err(self.err(&p, Some(n), "a method needs its service (gRPC)")),
            };
            out.push((name, p, *n));
        }
        Ok(out)
    }
}

/// A value as the document spells it: durations as `"100ms"`.
fn document_value(knob: &'static str, v: &Given) -> String {
    let duration = crate::knob::knob(knob).is_some_and(|k| k.unit == Unit::Duration);
    match v {
        Given::Number(n) if duration => format!("\"{n}ms\""),
        Given::Number(n) => format!("{n}"),
        Given::Whole(n) => format!("{n}"),
        Given::Text(t) => format!("{t:?}"),
    }
}

/// A short rendering of a written value for a message (long strings are cut).
fn shown(raw: &RawValue) -> String {
    let text = raw.get();
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(37).collect::<String>())
    } else {
        text.to_string()
    }
}

fn describe(v: &Value) -> String {
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

fn no_unit(number: &str) -> String {
    let secs = number.parse::<f64>().map(|n| n / 1000.0).unwrap_or(f64::NAN);
    format!("\"{number}\" has no unit; write \"{number}ms\" or \"{secs}s\"")
}

/// A retryrs duration, in milliseconds: digits, optionally a point and more digits, and a
/// unit, `ms`, `s` or `m`, nothing else (no sign, no spaces, no exponent): the grammar the
/// schema's pattern states too ([`json_schema`]), so an editor and the loader agree.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" if decimal(number) => return Err(no_unit(number)),
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "" => return Err(not_a_duration(text)),
        other if decimal(number) => return Err(format!("{text:?}: {other:?} is not a unit; write ms, s or m")),
        _ => return Err(not_a_duration(text)),
    };
    if !decimal(number) {
        return Err(not_a_duration(text));
    }
    // The range, checked on the decimal as written (a double would read
    // 9000000000000000.5ms as the limit itself).
    let limit = (crate::knob::MAX_MS * 1000.0 / (scale * 1000.0)) as u64;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole = whole.trim_start_matches('0');
    let limit_text = limit.to_string();
    let over = (whole.len(), whole) > (limit_text.len(), limit_text.as_str())
        || (whole == limit_text && frac.bytes().any(|b| b != b'0'));
    if over {
        return Err(format!("{text:?} is more than the largest duration, {limit}{unit} (about 285,000 years)"));
    }
    let n: f64 = number.parse().map_err(|_| not_a_duration(text))?;
    // Whole milliseconds stay exact (0.3s is 300 ms, not 299.99999999999994).
    Ok(crate::units::ms_from_secs(n * scale / 1000.0))
}

/// Digits, optionally a point and more digits: a duration's number.
fn decimal(n: &str) -> bool {
    let (whole, frac) = n.split_once('.').unwrap_or((n, "0"));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(frac)
}

fn not_a_duration(text: &str) -> String {
    // What is wrong, then what to write.
    let why = match text.trim() {
        t if t != text => ": it has spaces around it",
        t if t.starts_with('-') => ": a duration cannot be negative",
        t if t.starts_with('+') => ": it has a sign",
        t if t.starts_with('.') || t.contains(".m") || t.contains(".s") => ": a point needs digits on both sides",
        _ => "",
    };
    format!("{text:?} is not a duration{why}; write a number and a unit, such as \"100ms\", \"1.5s\" or \"2m\"")
}

/// A protobuf JSON duration as gRPC's service config writes it: seconds with an `s`.
fn grpc_duration(text: &str) -> Result<f64, String> {
    match text.strip_suffix('s') {
        // A protobuf duration has nanoseconds: grpc-go refuses a 10th fractional digit.
        Some(n) if n.split_once('.').is_some_and(|(_, frac)| frac.len() > 9) => {
            Err(format!("{text:?} has more than 9 digits after the point (a protobuf duration holds nanoseconds)"))
        }
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.') => {
            n.parse::<f64>().map(crate::units::ms_from_secs).map_err(|_| format!("{text:?} is not a duration"))
        }
        _ => Err(format!("{text:?} is not a protobuf duration; gRPC writes seconds such as \"0.1s\"")),
    }
}

/// The JSON Schema of a policy document, derived from the knob table
/// (`docs/policies.schema.json` is this, checked by a test).
pub fn json_schema() -> Value {
    use serde_json::json;
    let mut knobs = serde_json::Map::new();
    for k in KNOBS {
        knobs.insert(k.name.to_string(), knob_schema(k));
    }
    knobs.insert(
        "breaker".into(),
        json!({ "type": ["string", "null"], "pattern": NAME_PATTERN, "description": "the name of a breaker in breakers (null turns it off)", "default": null }),
    );
    knobs.insert(HEDGE_KEY.to_string(), hedge_schema());
    let duration = duration_pattern();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.invalid/retryrs/policies.schema.json",
        "title": "retryrs policy document",
        "description": "Retry policies by name, read identically by retryrs in Rust, Python, Node and C. Generated from the knob table (core/src/knob.rs); see docs/policies.md.",
        "type": "object",
        "additionalProperties": false,
        "required": ["policies"],
        "properties": {
            "$schema": { "type": "string" },
            "policies": {
                "type": "object",
                "description": "Policies by name; \"default\" gives every other policy the knobs it omits.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/policy" }
            },
            "budgets": {
                "type": "object",
                "description": "Retry budgets by name; every policy naming one shares that one budget.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/budget" }
            },
            "breakers": {
                "type": "object",
                "description": "Circuit breakers by name; every policy naming one shares that one breaker.",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "$ref": "#/$defs/breaker" }
            }
        },
        "$defs": {
            "policy": { "type": "object", "additionalProperties": false, "properties": knobs },
            "budget": {
                "description": "kind token_bucket (the default: gRPC's retry throttling), quota (the AWS SDKs' standard retry quota) or ratio (Finagle's RetryBudget)",
                "oneOf": [
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["max_tokens", "token_ratio"],
                        "properties": {
                            "kind": { "const": "token_bucket" },
                            "max_tokens": { "type": "number", "minimum": 0.001, "maximum": 1e12, "description": "the bucket's size; it starts full (3 decimals kept, truncated)" },
                            "token_ratio": { "type": "number", "minimum": 0.001, "maximum": 1e12, "description": "tokens a success adds back (<= max_tokens; 3 decimals kept, truncated)" }
                        }
                    },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["kind"],
                        "properties": {
                            "kind": { "const": "quota" },
                            "capacity": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 500, "description": "what it holds and starts with" },
                            "retry_cost": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 5, "description": "what a retry takes" },
                            "timeout_retry_cost": { "type": "integer", "minimum": 1, "maximum": 1e12, "default": 10, "description": "what a retry after a timeout takes" },
                            "no_retry_increment": { "type": "integer", "minimum": 0, "maximum": 1e12, "default": 1, "description": "what a success without a retry gives back" }
                        }
                    },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["kind"],
                        "properties": {
                            "kind": { "const": "ratio" },
                            "ttl": { "type": "string", "pattern": duration, "default": "10s", "description": "how long deposits and withdrawals count, 1 s to 60 s" },
                            "min_retries_per_sec": { "type": "integer", "minimum": 0, "maximum": i32::MAX, "default": 10, "description": "retries always allowed per second" },
                            "percent_can_retry": { "type": "number", "minimum": 0, "maximum": 1000, "default": 0.2, "description": "retries allowed per call, on top" }
                        }
                    }
                ]
            },
            "breaker": {
                "description": "model consecutive (after failures failed calls in a row), sampling (Polly v8's failure ratio over a sliding time window) or count (resilience4j's failure ratio over the last window_size calls); docs/breaker.md",
                "oneOf": [breaker_schema("consecutive", &duration), breaker_schema("sampling", &duration), breaker_schema("count", &duration)]
            }
        }
    })
}

/// One breaker model's schema: its own keys (consecutive: `failures`, required; sampling
/// and count: the window's and the slow-call threshold) and the keys every model takes.
fn breaker_schema(model: &str, duration: &str) -> Value {
    use serde_json::json;
    let mut properties = json!({
        "model": { "const": model },
        "break_duration": { "type": "string", "pattern": duration, "default": "5s", "description": "how long it stays open before a probe, 1 ms to 1 day" },
        "half_open_probes": { "type": "integer", "minimum": 1, "default": 1, "description": "probe calls at once when half-open" },
        "break_multiplier": { "type": "number", "minimum": 1, "default": 1, "description": "growth of the break on each open in a row" },
        "max_break_duration": { "type": ["string", "null"], "pattern": duration, "default": null, "description": "the longest break when it grows (null: 1 day)" },
        "per_attempt": { "type": "boolean", "default": false, "description": "count each attempt instead of each call (a retry around the breaker, as Polly's and resilience4j's pipelines)" },
        "count_permanent": { "type": "boolean", "default": false, "description": "count a permanent failure as a failure (default: a success, the dependency answered)" },
        "judge_all_probes": { "type": "boolean", "default": false, "description": "half-open: send exactly half_open_probes probes and close only if their failure ratio is under the threshold (resilience4j); default: the first probe decides (Polly)" }
    });
    let slow = json!({
        "slow_call_duration": { "type": ["string", "null"], "pattern": duration, "default": null, "description": "a call (or attempt) this long or longer is slow, 1 ms to 1 day (null: none is)" },
        "slow_call_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 1, "description": "the share of slow calls that opens it" }
    });
    let (own, required) = match model {
        "consecutive" => {
            let own = json!({ "failures": { "type": "integer", "minimum": 1, "description": "failed calls in a row that open it" } });
            (own, json!(["model", "failures"]))
        }
        "sampling" => {
            let own = json!({
                "failure_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.1, "description": "the share of failed calls that opens it" },
                "minimum_throughput": { "type": "integer", "minimum": 2, "default": 100, "description": "calls in the window before it may open" },
                "sampling_duration": { "type": "string", "pattern": duration, "default": "30s", "description": "the sliding window, 500 ms to 1 day" }
            });
            (own, json!(["model"]))
        }
        _ => {
            let own = json!({
                "failure_ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5, "description": "the share of failed calls that opens it" },
                "minimum_calls": { "type": "integer", "minimum": 1, "default": 100, "description": "calls counted before it may open (at most window_size count)" },
                "window_size": { "type": "integer", "minimum": 1, "maximum": crate::breaker::MAX_WINDOW, "default": 100, "description": "how many of the last calls it judges" }
            });
            (own, json!(["model"]))
        }
    };
    for extra in [own, if model == "consecutive" { json!({}) } else { slow }] {
        if let (Some(all), Value::Object(extra)) = (properties.as_object_mut(), extra) {
            all.extend(extra);
        }
    }
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": properties })
}

/// The `hedge` object's schema (what [`Loader::hedge`] reads).
fn hedge_schema() -> Value {
    use serde_json::json;
    let duration = json!({ "type": "string", "pattern": duration_pattern() });
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "required": ["delay"],
        "description": "Hedge calls (docs/contract.md, Hedging): launch another attempt beside the first after delay, up to max_attempts; the first success wins (null: no hedging)",
        "properties": {
            "max_attempts": { "type": "integer", "minimum": 1, "maximum": crate::hedge::MAX_HEDGE_ATTEMPTS, "default": 2, "description": "attempts at most, the first included (gRPC A6 caps them at 5)" },
            "delay": { "anyOf": [duration, { "const": "adaptive" }], "description": "the time between launches, or \"adaptive\": a quantile of recent attempt latencies" },
            "non_fatal": { "type": "array", "items": { "type": ["string", "integer"] }, "description": "the failures that let the other attempts go on (for the host's predicate)" },
            "quantile": { "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.95, "description": "adaptive only: the quantile of recent latencies" },
            "floor": { "type": "string", "pattern": duration_pattern(), "default": "1ms", "description": "adaptive only: the shortest delay" },
            "ceiling": { "type": "string", "pattern": duration_pattern(), "default": "1000ms", "description": "adaptive only: the longest delay, and the delay until enough latencies are known" },
            "window": { "type": "integer", "minimum": 1, "maximum": 1_000_000, "default": crate::hedge::DEFAULT_WINDOW, "description": "adaptive only: how many recent latencies are kept" },
            "guard": { "type": "boolean", "default": true, "description": "without a budget, hold hedges to 10% of the calls of the last 10 s plus one a second (docs/contract.md, Hedging); false: no limit" }
        }
    })
}

/// One knob's schema: its type by unit, its bounds and default from the table.
fn knob_schema(k: &crate::knob::Knob) -> Value {
    use serde_json::json;
    let mut schema = match k.unit {
        Unit::Count => json!({ "type": "integer", "minimum": 1 }),
        Unit::Duration => json!({ "type": "string", "pattern": duration_pattern() }),
        Unit::Factor => json!({ "type": "number" }),
        Unit::Jitter => json!({ "type": "string", "pattern": JITTER_PATTERN }),
        Unit::Text => json!({ "type": "string", "pattern": NAME_PATTERN }),
        Unit::Seed => json!({ "type": "integer", "minimum": 0, "maximum": u64::MAX }),
        Unit::Budget => json!({ "type": "string", "pattern": NAME_PATTERN }),
    };
    match k.rule {
        crate::knob::Rule::Whole { min, max } => {
            schema["minimum"] = json!(min);
            schema["maximum"] = json!(max);
        }
        // The rule's own bound (a whole one written as an integer, as editors show it).
        crate::knob::Rule::AtLeast { min } if min.fract() == 0.0 => schema["minimum"] = json!(min as i64),
        crate::knob::Rule::AtLeast { min } => schema["minimum"] = json!(min),
        // A zero duration in any unit; typed so that `null` (off) is not refused with it.
        crate::knob::Rule::Positive if k.unit == Unit::Duration => {
            schema["not"] = json!({ "type": "string", "pattern": "^0+(?:\\.0+)?(?:ms|s|m)$" })
        }
        _ => {}
    }
    if k.can_be_off {
        let t = schema["type"].as_str().unwrap_or("string").to_string();
        schema["type"] = json!([t, "null"]);
    }
    let default = match k.default {
        crate::knob::Default::Number(n) if k.unit == Unit::Duration => json!(format!("{n}ms")),
        crate::knob::Default::Number(n) if k.unit == Unit::Count => json!(n as u64),
        crate::knob::Default::Number(n) => json!(n),
        crate::knob::Default::Text(t) => json!(t),
        crate::knob::Default::Off => Value::Null,
    };
    let doc = if k.can_be_off { format!("{} (null turns it off)", k.doc) } else { k.doc.to_string() };
    schema["description"] = json!(doc);
    schema["default"] = default;
    schema
}

/// What a duration string looks like: [`parse_duration`]'s grammar, and a value no
/// larger than [`crate::knob::MAX_MS`] in its unit (the loader's range), as a pattern.
fn duration_pattern() -> String {
    let per_unit: Vec<String> = [("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)]
        .iter()
        .map(|(unit, scale)| {
            let limit = (crate::knob::MAX_MS / scale) as u64;
            // Below the limit any fraction; the limit itself only with a zero one.
            format!("0*(?:{})(?:\\.[0-9]+)?{unit}|0*{limit}(?:\\.0+)?{unit}", below(limit))
        })
        .collect();
    format!("^(?:{})$", per_unit.join("|"))
}

/// A regular expression for the whole numbers in `[0, n)`, without leading zeros.
fn below(n: u64) -> String {
    let digits: Vec<u32> = n.to_string().chars().map(|c| c.to_digit(10).unwrap_or(0)).collect();
    let k = digits.len();
    let mut parts = vec!["0".to_string()];
    if k > 1 {
        parts.push(format!("[1-9][0-9]{{0,{}}}", k - 2));
    }
    for (i, &d) in digits.iter().enumerate() {
        let low = if i == 0 { 1 } else { 0 };
        if d > low {
            let prefix: String = digits[..i].iter().map(|d| d.to_string()).collect();
            let rest = if k - i - 1 > 0 { format!("[0-9]{{{}}}", k - i - 1) } else { String::new() };
            parts.push(format!("{prefix}[{low}-{}]{rest}", d - 1));
        }
    }
    parts.join("|")
}

/// A name (a policy's or a budget's key, the `name` knob): not empty, no NUL (C hosts
/// hand names out as C strings).
const NAME_PATTERN: &str = "^[^\\u0000]+$";
const NAME_RULE: &str = "must be a name: not empty, without NUL";

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('\0')
}

/// The jitter spellings a document may use: [`document_jitter`]'s grammar as a pattern
/// (ECMA-262, as JSON Schema requires: no inline flags).
const JITTER_PATTERN: &str = "^(?:none|full|equal|decorrelated|proportional\\((?:0(?:\\.[0-9]+)?|1(?:\\.0+)?)\\))$";

/// A document's jitter: exactly `none`, `full`, `equal`, `decorrelated` or
/// `proportional(F)` with F a decimal in [0, 1] (`0.2`, `1`, `0`), lower case, no spaces:
/// one spelling per jitter, which the schema's pattern states too. (Code may spell it
/// more freely: [`Jitter`]'s `FromStr`.)
fn document_jitter(text: &str) -> Result<Jitter, PolicyError> {
    let factor = text.strip_prefix("proportional(").and_then(|f| f.strip_suffix(')'));
    let canonical = match factor {
        Some(f) => f.starts_with(['0', '1']) && decimal(f) && f.parse::<f64>().is_ok_and(|x| x <= 1.0),
        None => matches!(text, "none" | "full" | "equal" | "decorrelated"),
    };
    if !canonical {
        return Err(PolicyError::new("jitter", crate::knob::Rule::Jitter, Given::Text(text.to_string())));
    }
    text.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Verdict;
    use crate::knob::{Default, Knob, Rule};

    /// A loaded gRPC policy keeps its status codes, and judges a status by them: a config
    /// that limits a method to UNAVAILABLE does not retry INTERNAL.
    #[test]
    fn a_grpc_policy_keeps_its_status_codes_and_judges_by_them() {
        let config = r#"{"methodConfig": [
            {"name": [{"service": "pay", "method": "Charge"}], "retryPolicy": {"maxAttempts": 3,
              "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
              "retryableStatusCodes": ["UNAVAILABLE"]}},
            {"name": [{"service": "reads"}], "hedgingPolicy": {"maxAttempts": 2,
              "nonFatalStatusCodes": [13, "ABORTED"]}},
            {"name": [{"service": "once"}], "timeout": "1s"}]}"#;
        let all = Policies::from_json(config).unwrap();
        let charge = all.get("pay/Charge").unwrap();
        let codes = charge.grpc_status_codes().unwrap();
        assert_eq!((codes.names(), codes.field()), (vec!["UNAVAILABLE"], "retryableStatusCodes"));
        assert_eq!(charge.grpc_verdict("UNAVAILABLE"), Ok(Verdict::TRANSIENT));
        assert_eq!(charge.grpc_verdict("INTERNAL"), Ok(Verdict::Permanent));
        assert_eq!(charge.grpc_verdict_code(0), Ok(Verdict::Success));
        assert!(charge.grpc_verdict("BUSY").unwrap_err().contains("\"BUSY\" is not a gRPC status code"));
        let reads = all.get("reads").unwrap();
        assert_eq!(reads.grpc_status_codes().unwrap().names(), ["ABORTED", "INTERNAL"]);
        assert_eq!(reads.grpc_verdict("13"), Ok(Verdict::TRANSIENT));
        assert_eq!(all.get("once").unwrap().grpc_verdict("UNAVAILABLE"), Ok(Verdict::Permanent));
        let native = Policies::from_json(r#"{"policies": {"x": {}}}"#).unwrap();
        let err = native.get("x").unwrap().grpc_verdict("UNAVAILABLE").unwrap_err();
        assert!(err.contains("not loaded from a gRPC service config"), "{err}");
    }

    #[test]
    fn a_bad_duration_says_what_is_wrong_then_what_to_write() {
        let write = "; write a number and a unit, such as \"100ms\", \"1.5s\" or \"2m\"";
        for (text, why) in [
            ("-1s", ": a duration cannot be negative"),
            (" 1s", ": it has spaces around it"),
            ("+1s", ": it has a sign"),
            (".5s", ": a point needs digits on both sides"),
            ("1..5s", ""),
        ] {
            assert_eq!(parse_duration(text).unwrap_err(), format!("{text:?} is not a duration{why}{write}"));
        }
    }

    #[test]
    fn a_knobs_schema_bounds_are_its_rules() {
        // A factor that may be 0 (a new knob's rule), not the multiplier's 1.
        let scale = Knob {
            name: "scale",
            unit: Unit::Factor,
            default: Default::Number(0.5),
            can_be_off: false,
            off_means: "",
            rule: Rule::AtLeast { min: 0.0 },
            doc: "x",
        };
        assert_eq!(knob_schema(&scale)["minimum"], 0);
        let half = Knob { rule: Rule::AtLeast { min: 0.5 }, ..scale };
        assert_eq!(knob_schema(&half)["minimum"], 0.5);
        let multiplier = crate::knob::knob("multiplier").unwrap();
        assert_eq!(knob_schema(multiplier)["minimum"], 1);
        let count = Knob { unit: Unit::Count, rule: Rule::Whole { min: 0, max: 9 }, can_be_off: true, ..scale };
        let s = knob_schema(&count);
        assert_eq!((s["minimum"].clone(), s["maximum"].clone()), (0.into(), 9.into()));
        assert_eq!(s["type"], serde_json::json!(["integer", "null"]));
    }
}
