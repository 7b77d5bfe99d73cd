//! Policy documents in Node: the core's loader (`retryrs::Policies`) parses and validates;
//! this hands its policies to the JS layer (lib/policies.js) as native policies, with the
//! shared budgets as one handle each, and its errors as data.

use std::sync::Arc;

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use retryrs::Policies;

use crate::budget::NativeBudget;
use crate::guard::guarded;
use crate::policy::NativePolicy;

/// Where and what a document's error is.
#[napi(object)]
pub struct DocumentErrorInfo {
    /// The whole sentence (the same in every host).
    pub message: String,
    /// The path in the document (`policies.payments.initial_delay`).
    pub path: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub file: Option<String>,
}

/// One policy's knobs as JS shows them, fetched for all policies in one call (a call per
/// knob per policy would cost most of a 10,000-policy load).
#[napi(object)]
pub struct PolicyRow {
    /// Its key in the document.
    pub key: String,
    /// The numeric knobs in the order of `knobs()` (null when off), core units (ms).
    pub numbers: Vec<Option<f64>>,
    pub jitter: String,
    pub name: String,
    pub seed: Option<BigInt>,
    /// The name of its budget in the document, if any.
    pub budget: Option<String>,
}

/// A loaded document, or why it was not (`error`).
#[napi]
pub struct NativePolicies {
    loaded: Result<Policies, DocumentErrorInfo>,
}

#[napi]
impl NativePolicies {
    /// Loads `text`, or the file at `path` when `text` is null. Never throws for a bad
    /// document: `error` says what was wrong.
    #[napi(factory)]
    pub fn load(text: Option<String>, path: Option<String>) -> napi::Result<Self> {
        guarded(|| {
            let loaded = match (text, path) {
                (Some(t), _) => Policies::from_json(&t),
                (None, Some(p)) => Policies::from_path(p),
                (None, None) => return Err(napi::Error::from_reason("a document's text or path is needed")),
            };
            Ok(NativePolicies {
                loaded: loaded.map_err(|e| DocumentErrorInfo {
                    message: e.to_string(),
                    line: e.position.map(|(l, _)| l as u32),
                    column: e.position.map(|(_, c)| c as u32),
                    path: e.path,
                    file: e.file,
                }),
            })
        })
    }

    /// Why the document did not load, or null.
    #[napi(getter)]
    pub fn error(&self) -> napi::Result<Option<DocumentErrorInfo>> {
        guarded(|| {
            Ok(self.loaded.as_ref().err().map(|e| DocumentErrorInfo {
                message: e.message.clone(),
                path: e.path.clone(),
                line: e.line,
                column: e.column,
                file: e.file.clone(),
            }))
        })
    }

    /// Every policy's knobs, sorted by key.
    #[napi]
    pub fn rows(&self) -> napi::Result<Vec<PolicyRow>> {
        guarded(|| {
            let Ok(all) = &self.loaded else { return Ok(vec![]) };
            let budget_name = |p: &retryrs::Policy| {
                let b = p.budget()?;
                all.budget_names().find(|n| all.budget(n).is_some_and(|x| Arc::ptr_eq(x, b))).map(String::from)
            };
            Ok(all
                .iter()
                .map(|(key, p)| PolicyRow {
                    key: key.to_string(),
                    numbers: retryrs::knob::numeric().map(|k| p.number(k.name)).collect(),
                    jitter: p.jitter().spelling(),
                    name: p.name().to_string(),
                    seed: p.seed().map(BigInt::from),
                    budget: budget_name(p),
                })
                .collect())
        })
    }

    /// The loader's warnings, in document order (empty when the document did not load).
    #[napi(getter)]
    pub fn warnings(&self) -> napi::Result<Vec<String>> {
        guarded(|| Ok(self.loaded.as_ref().map(|p| p.warnings().to_vec()).unwrap_or_default()))
    }

    /// The key of the policy a call to `method` of `service` runs under, in gRPC's order
    /// (`service/method`, `service`, `default`), or null.
    #[napi]
    pub fn method_key(&self, service: String, method: String) -> napi::Result<Option<String>> {
        guarded(|| Ok(self.loaded.as_ref().ok().and_then(|p| p.method_key(&service, &method)).map(String::from)))
    }

    /// The policy names, sorted.
    #[napi]
    pub fn names(&self) -> napi::Result<Vec<String>> {
        guarded(|| Ok(self.loaded.as_ref().map(|p| p.names().map(String::from).collect()).unwrap_or_default()))
    }

    /// The policy called `name`, as a native policy a Retrier can run.
    #[napi]
    pub fn policy(&self, name: String) -> napi::Result<NativePolicy> {
        guarded(|| {
            let p = self.loaded.as_ref().ok().and_then(|p| p.get(&name));
            let p = p.ok_or_else(|| napi::Error::from_reason(format!("no policy {name:?}")))?;
            NativePolicy::from_policy(Arc::new(p.clone()))
        })
    }

    /// The name of the budget the policy `name` holds, if any (its key in `budgets`).
    #[napi]
    pub fn budget_of(&self, name: String) -> napi::Result<Option<String>> {
        guarded(|| {
            let Ok(all) = &self.loaded else { return Ok(None) };
            let Some(b) = all.get(&name).and_then(|p| p.budget()) else { return Ok(None) };
            Ok(all.budget_names().find(|n| all.budget(n).is_some_and(|x| Arc::ptr_eq(x, b))).map(String::from))
        })
    }

    /// The shared budget called `name`.
    #[napi]
    pub fn budget(&self, name: String) -> napi::Result<NativeBudget> {
        guarded(|| {
            let b = self.loaded.as_ref().ok().and_then(|p| p.budget(&name));
            let b = b.ok_or_else(|| napi::Error::from_reason(format!("no budget {name:?}")))?;
            Ok(NativeBudget { inner: Arc::clone(b) })
        })
    }
}
