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

use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::policy::Policy;

mod grammar;
mod grpc;
mod policy;
mod read;
mod schema;
mod sections;

pub use grammar::parse_duration;
pub use schema::json_schema;

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

struct Loader<'a> {
    text: &'a str,
    options: LoadOptions,
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
}

#[cfg(test)]
mod tests;
