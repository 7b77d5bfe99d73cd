//! Policy documents in C: the core's loader (`retryrs::Policies`) parses and validates;
//! this hands each named policy out as a `retryrs_config` that `retryrs_retrier_new`
//! takes like any other, so a document needs no new retrier constructor.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::sync::Arc;

use retryrs::{Policies, Policy};

use crate::budget::retryrs_budget;
use crate::config::{from_policy_parts, known_size, retryrs_config};
use crate::ffi::{arg, arg_mut, c_str, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::types::*;

/// A loaded policy document (opaque, immutable: any number of threads may look up in it
/// at once). Owns the names and budgets the configs it hands out point to.
pub struct retryrs_policies {
    /// By key: the policy, its name knob and its key, NUL-terminated for C.
    policies: BTreeMap<String, (Policy, CString, CString)>,
    /// One C budget handle per shared budget, by the core budget's address.
    budgets: BTreeMap<usize, Box<retryrs_budget>>,
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
    guard_status(|| {
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
        let mut policies = BTreeMap::new();
        for (name, policy) in loaded.iter() {
            if let Some(b) = policy.budget() {
                budgets
                    .entry(Arc::as_ptr(b) as usize)
                    .or_insert_with(|| Box::new(retryrs_budget { inner: Arc::clone(b) }));
            }
            let c_name = CString::new(policy.name()).map_err(|_| fail(format!("policies.{name}.name contains NUL")))?;
            let key = CString::new(name).map_err(|_| fail(format!("policies.{name:?} contains NUL")))?;
            policies.insert(name.to_string(), (policy.clone(), c_name, key));
        }
        hand_out(out, retryrs_policies { policies, budgets });
        Ok(())
    })
}

/// Fills the first `struct_size` bytes of `*config` with the policy called `name` (UTF-8,
/// NUL-terminated) and sets config->struct_size, as retryrs_config_init does (see "ABI
/// growth"): call it as retryrs_policies_get(policies, name, &config), the macro that
/// passes sizeof(config). The config's `name` and `budget` point into `policies`: create
/// the retrier (retryrs_retrier_new copies both) before freeing `policies`. An unknown
/// name is RETRYRS_INVALID_ARGUMENT naming it and the names there are; so is a
/// struct_size this library does not know (nothing written).
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_config(
    policies: *const retryrs_policies,
    name: *const c_char,
    config: *mut retryrs_config,
    struct_size: usize,
) -> retryrs_status {
    guard_status(|| {
        let all = arg(policies, "retryrs_policies_config: policies")?;
        let name = c_str(name, "retryrs_policies_config: name")?;
        if config.is_null() {
            return Err(Failure::invalid("retryrs_policies_config: config must not be NULL"));
        }
        let size =
            known_size(struct_size).map_err(|why| Failure::invalid(format!("retryrs_policies_config: {why}")))?;
        let (policy, c_name, _) = all.policies.get(name).ok_or_else(|| {
            let known: Vec<&str> = all.policies.keys().map(String::as_str).collect();
            Failure::invalid(format!(
                "retryrs_policies_config: no policy {name:?} in the document (it has {})",
                known.join(", ")
            ))
        })?;
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

/// How many policies the document holds (0 for NULL).
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_count(policies: *const retryrs_policies) -> usize {
    guard_value(0, || policies.as_ref().map_or(0, |p| p.policies.len()))
}

/// The name of the `index`-th policy (sorted by name), NUL-terminated and owned by
/// `policies`; NULL when `index` is out of range or `policies` is NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_name(policies: *const retryrs_policies, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || {
        policies
            .as_ref()
            .and_then(|p| p.policies.values().nth(index))
            .map_or(std::ptr::null(), |(_, _, key)| key.as_ptr())
    })
}

/// Releases the document; retriers created from its configs keep what they need. NULL
/// is a no-op. Must not be called twice for the same document.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_free(policies: *mut retryrs_policies) {
    guard_value((), || free_handle(policies))
}
