//! Policy documents in C: the core's loader (`retryrs::Policies`) parses and validates;
//! this hands each named policy out as a `retryrs_config` that `retryrs_retrier_new`
//! takes like any other, so a document needs no new retrier constructor.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::sync::Arc;

use retryrs::{Policies, Policy};

use crate::breaker::retryrs_breaker;
use crate::budget::retryrs_budget;
use crate::config::{from_policy_parts, known_size, retryrs_config};
use crate::ffi::{arg, arg_mut, c_str, free_handle, guard_status, guard_value, hand_out, set_last_error, Failure};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// A loaded policy document (opaque, immutable: any number of threads may look up in it
/// at once). Owns the names and budgets the configs it hands out point to.
pub struct retryrs_policies {
    /// Sorted by key, so retryrs_policies_name() is one index (O(1)) and a lookup by key
    /// a binary search.
    policies: Vec<Entry>,
    /// One C budget handle per shared budget, by the core budget's address.
    budgets: BTreeMap<usize, Box<retryrs_budget>>,
    /// The loaded document, for lookups by method.
    loaded: Policies,
    /// Its warnings, NUL-terminated for C.
    warnings: Vec<CString>,
}

/// One policy of a document.
struct Entry {
    key: String,
    policy: Policy,
    /// Its name knob, NUL-terminated for C.
    c_name: CString,
    /// Its key, NUL-terminated for C.
    c_key: CString,
}

impl retryrs_policies {
    fn get(&self, key: &str) -> Option<&Entry> {
        self.policies.binary_search_by(|e| e.key.as_str().cmp(key)).ok().map(|i| &self.policies[i])
    }

    /// The policy called `name`, or an error from `function` naming it and the names there are.
    pub(crate) fn policy(&self, name: &str, function: &str) -> Result<&Policy, Failure> {
        self.entry(name, function).map(|e| &e.policy)
    }

    fn entry(&self, name: &str, function: &str) -> Result<&Entry, Failure> {
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.policies.iter().map(|e| e.key.as_str()).collect();
            Failure::invalid(format!("{function}: no policy {name:?} in the document (it has {})", known.join(", ")))
        })
    }
}

/// Loads a policy document (share/doc/retryrs/policies.md; a gRPC service config too)
/// from `len` bytes of UTF-8 JSON at `json` (no NUL needed). On RETRYRS_INVALID_ARGUMENT nothing is
/// created and retryrs_last_error() says where and what, e.g.
/// `policies.payments.initial_delay: "100" has no unit; write "100ms" or "0.1s" (line 4,
/// column 22)`. Free with retryrs_policies_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_from_json(
    json: *const c_char,
    len: usize,
    out: *mut *mut retryrs_policies,
) -> retryrs_status {
    guard_status("retryrs_policies_from_json", || {
        let fail = |what: String| Failure::invalid(format!("retryrs_policies_from_json: {what}"));
        arg_mut(out, "retryrs_policies_from_json: out")?;
        if json.is_null() {
            return Err(fail("json must not be NULL".into()));
        }
        // The size cap before anything reads the bytes (a 100 MB input costs nothing).
        if len > retryrs::document::MAX_DOCUMENT_BYTES {
            return Err(fail(format!(
                "document: {len} bytes is more than the {} a policy document may hold",
                retryrs::document::MAX_DOCUMENT_BYTES
            )));
        }
        let bytes = std::slice::from_raw_parts(json.cast::<u8>(), len);
        let text = std::str::from_utf8(bytes).map_err(|e| fail(format!("document: not UTF-8: {e}")))?;
        let loaded = Policies::from_json(text).map_err(|e| fail(e.to_string()))?;
        let mut budgets = BTreeMap::new();
        // The core iterates in key order (a BTreeMap): the Vec comes out sorted.
        let mut policies = Vec::with_capacity(loaded.len());
        for (name, policy) in loaded.iter() {
            if let Some(b) = policy.budget() {
                budgets
                    .entry(Arc::as_ptr(b) as usize)
                    .or_insert_with(|| Box::new(retryrs_budget { inner: Arc::clone(b) }));
            }
            let c_name = CString::new(policy.name()).map_err(|_| fail(format!("policies.{name}.name contains NUL")))?;
            let key = CString::new(name).map_err(|_| fail(format!("policies.{name:?} contains NUL")))?;
            policies.push(Entry { key: name.to_string(), policy: policy.clone(), c_name, c_key: key });
        }
        // A warning is the core's text (from JSON strings: no NUL), never dropped.
        let warnings = loaded.warnings().iter().map(|w| CString::new(w.replace('\0', "\\0")).unwrap_or_default());
        let warnings = warnings.collect();
        hand_out(out, retryrs_policies { policies, budgets, loaded, warnings });
        Ok(())
    })
}

/// Fills the first `struct_size` bytes of `*config` with the policy called `name` (UTF-8,
/// NUL-terminated) and sets config->struct_size, as retryrs_config_init does (see "ABI
/// growth"): call it as retryrs_policies_get(policies, name, &config), the macro that
/// passes sizeof(config). The config's `name` and `budget` point into `policies`: create
/// the retrier (retryrs_retrier_new copies both) before freeing `policies`. An unknown
/// name is RETRYRS_INVALID_ARGUMENT naming it and the names there are; so is a
/// struct_size this library does not know (nothing written). A config holds the knobs
/// only: for a gRPC service config's policy, whose server pushback follows A6, create
/// the retrier with retryrs_policies_retrier instead.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_config(
    policies: *const retryrs_policies,
    name: *const c_char,
    config: *mut retryrs_config,
    struct_size: usize,
) -> retryrs_status {
    guard_status("retryrs_policies_config", || {
        let all = arg(policies, "retryrs_policies_config: policies")?;
        let name = c_str(name, "retryrs_policies_config: name")?;
        if config.is_null() {
            return Err(Failure::invalid("retryrs_policies_config: config must not be NULL"));
        }
        let size =
            known_size(struct_size).map_err(|why| Failure::invalid(format!("retryrs_policies_config: {why}")))?;
        let Entry { policy, c_name, .. } = all.entry(name, "retryrs_policies_config")?;
        let budget = policy
            .budget()
            .and_then(|b| all.budgets.get(&(Arc::as_ptr(b) as usize)))
            .map_or(std::ptr::null(), |b| &**b as *const retryrs_budget);
        let mut full = from_policy_parts(policy, c_name.as_ptr(), budget);
        full.struct_size = size;
        // SAFETY: the caller's struct is `size` bytes (its own sizeof, a known size), and
        // every known size is a prefix of this layout made of whole fields.
        std::ptr::copy_nonoverlapping((&full as *const retryrs_config).cast::<u8>(), config.cast::<u8>(), size);
        Ok(())
    })
}

/// Creates a retrier running the policy called `name` exactly as loaded: unlike a
/// retryrs_config copy, which holds the knobs only, it keeps a gRPC service config's
/// pushback rule (A6: wait exactly grpc-retry-pushback-ms, then restart the backoff; see
/// docs/contract.md). The retrier shares the document's budget and outlives `policies`.
/// An unknown name is RETRYRS_INVALID_ARGUMENT naming it. Free with retryrs_retrier_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_retrier(
    policies: *const retryrs_policies,
    name: *const c_char,
    out: *mut *mut retryrs_retrier,
) -> retryrs_status {
    guard_status("retryrs_policies_retrier", || {
        let all = arg(policies, "retryrs_policies_retrier: policies")?;
        let name = c_str(name, "retryrs_policies_retrier: name")?;
        arg_mut(out, "retryrs_policies_retrier: out")?;
        let Entry { policy, c_name, .. } = all.entry(name, "retryrs_policies_retrier")?;
        let shared = Shared { retrier: retryrs::Retrier::new(policy.clone()), name: c_name.clone() };
        hand_out(out, retryrs_retrier { inner: Arc::new(shared) });
        Ok(())
    })
}

/// The key of the policy a call to `method` of `service` (UTF-8, NUL-terminated) runs
/// under, looked up as gRPC looks up a method config: `service/method`, then `service`,
/// then `default`. Owned by `policies`; NULL when none of them is in the document (for a
/// gRPC service config: one attempt), or for a NULL argument (retryrs_last_error() says
/// which). Pass it to retryrs_policies_get or retryrs_policies_retrier.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_lookup(
    policies: *const retryrs_policies,
    service: *const c_char,
    method: *const c_char,
) -> *const c_char {
    guard_value("retryrs_policies_lookup", std::ptr::null(), || {
        let found = || -> Result<*const c_char, Failure> {
            let all = arg(policies, "retryrs_policies_lookup: policies")?;
            let service = c_str(service, "retryrs_policies_lookup: service")?;
            let method = c_str(method, "retryrs_policies_lookup: method")?;
            let key = all.loaded.method_key(service, method).and_then(|k| all.get(k));
            Ok(key.map_or(std::ptr::null(), |e| e.c_key.as_ptr()))
        };
        // A NULL argument sets retryrs_last_error() and gives NULL, like an unknown method.
        found().unwrap_or_else(|failure| {
            set_last_error(&failure.message);
            std::ptr::null()
        })
    })
}

/// How many warnings loading the document gave (0 for NULL): valid input that is probably
/// not meant, such as a gRPC tokenRatio that A6's three decimals make 0.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_warning_count(policies: *const retryrs_policies) -> usize {
    guard_value("retryrs_policies_warning_count", 0, || policies.as_ref().map_or(0, |p| p.warnings.len()))
}

/// The `index`-th warning, in document order, NUL-terminated and owned by `policies`;
/// NULL when `index` is out of range or `policies` is NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_warning(policies: *const retryrs_policies, index: usize) -> *const c_char {
    guard_value("retryrs_policies_warning", std::ptr::null(), || {
        policies.as_ref().and_then(|p| p.warnings.get(index)).map_or(std::ptr::null(), |w| w.as_ptr())
    })
}

/// How many policies the document holds (0 for NULL).
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_count(policies: *const retryrs_policies) -> usize {
    guard_value("retryrs_policies_count", 0, || policies.as_ref().map_or(0, |p| p.policies.len()))
}

/// The name of the `index`-th policy (sorted by name), NUL-terminated and owned by
/// `policies`; NULL when `index` is out of range or `policies` is NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_name(policies: *const retryrs_policies, index: usize) -> *const c_char {
    guard_value("retryrs_policies_name", std::ptr::null(), || {
        policies.as_ref().and_then(|p| p.policies.get(index)).map_or(std::ptr::null(), |e| e.c_key.as_ptr())
    })
}

/// The circuit breaker the policy `name` names (a document's breakers are shared by every
/// policy naming them), as a new handle on it to free with retryrs_breaker_free(), or
/// NULL in `*out` when it names none. A retryrs_config carries no breaker: give it to a
/// retrier made from the policy's config with retryrs_retrier_with_breaker().
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_breaker(
    policies: *const retryrs_policies,
    name: *const c_char,
    out: *mut *mut retryrs_breaker,
) -> retryrs_status {
    guard_status("retryrs_policies_breaker", || {
        let all = arg(policies, "retryrs_policies_breaker: policies")?;
        let name = c_str(name, "retryrs_policies_breaker: name")?;
        arg_mut(out, "retryrs_policies_breaker: out")?;
        let entry = all.entry(name, "retryrs_policies_breaker")?;
        match entry.policy.breaker() {
            Some(b) => hand_out(out, retryrs_breaker { inner: std::sync::Arc::clone(b) }),
            None => *out = std::ptr::null_mut(),
        }
        Ok(())
    })
}

/// Releases the document; retriers created from its configs keep what they need. NULL
/// is a no-op. Must not be called twice for the same document.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_free(policies: *mut retryrs_policies) {
    guard_value("retryrs_policies_free", (), || free_handle(policies))
}
