//! gRPC status codes for C: a policy from a service config keeps its
//! `retryableStatusCodes` (a hedging policy its `nonFatalStatusCodes`), and judges a call's
//! status by them, so the program's attempt callback asks the document instead of listing
//! the codes again (docs/policies.md, "gRPC service configs").

use std::ffi::c_char;

use retryrs::grpc_status::{status_code, GRPC_STATUS_NAMES};
use retryrs::Verdict;

use crate::ffi::{arg, arg_mut, c_str, guard_status, guard_value, Failure};
use crate::policies::retryrs_policies;
use crate::types::*;

/// Stores in `*mask` the status codes of the policy `name` (a gRPC service config's):
/// bit n set when status n is in its retryableStatusCodes (a hedging policy's
/// nonFatalStatusCodes). RETRYRS_INVALID_ARGUMENT for an unknown name, or a policy not
/// loaded from a service config (retryrs_last_error() says which).
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_grpc_status_codes(
    policies: *const retryrs_policies,
    name: *const c_char,
    mask: *mut u32,
) -> retryrs_status {
    guard_status("retryrs_policies_grpc_status_codes", || {
        const F: &str = "retryrs_policies_grpc_status_codes";
        let all = arg(policies, "retryrs_policies_grpc_status_codes: policies")?;
        let name = c_str(name, "retryrs_policies_grpc_status_codes: name")?;
        let out = arg_mut(mask, "retryrs_policies_grpc_status_codes: mask")?;
        let policy = all.policy(name, F)?;
        let codes = policy.grpc_status_codes().ok_or_else(|| {
            Failure::invalid(format!("{F}: {name:?} was not loaded from a gRPC service config: it has no status codes"))
        })?;
        *out = codes.codes().fold(0, |m, c| m | 1 << c);
        Ok(())
    })
}

/// Stores in `*verdict` the verdict on a call of the policy `name` that ended with gRPC
/// status `code` (0 to 16), by its status codes: RETRYRS_SUCCESS for OK, RETRYRS_TRANSIENT
/// for a listed code (retried; hedging: non-fatal), RETRYRS_PERMANENT for any other.
/// RETRYRS_INVALID_ARGUMENT for an unknown name, a code out of range, or a policy not
/// loaded from a service config.
#[no_mangle]
pub unsafe extern "C" fn retryrs_policies_grpc_verdict(
    policies: *const retryrs_policies,
    name: *const c_char,
    code: u32,
    verdict: *mut retryrs_verdict_value,
) -> retryrs_status {
    guard_status("retryrs_policies_grpc_verdict", || {
        const F: &str = "retryrs_policies_grpc_verdict";
        let all = arg(policies, "retryrs_policies_grpc_verdict: policies")?;
        let name = c_str(name, "retryrs_policies_grpc_verdict: name")?;
        let out = arg_mut(verdict, "retryrs_policies_grpc_verdict: verdict")?;
        let judged = all
            .policy(name, F)?
            .grpc_verdict_code(u64::from(code))
            .map_err(|why| Failure::invalid(format!("{F}: {why}")))?;
        *out = match judged {
            Verdict::Success => RETRYRS_SUCCESS,
            Verdict::Permanent => RETRYRS_PERMANENT,
            _ => RETRYRS_TRANSIENT,
        };
        Ok(())
    })
}

/// The number of the gRPC status called `name` (as a service config spells it:
/// "UNAVAILABLE"), or -1 for a name that is none (or NULL).
#[no_mangle]
pub unsafe extern "C" fn retryrs_grpc_status_code(name: *const c_char) -> i32 {
    guard_value("retryrs_grpc_status_code", -1, || {
        c_str(name, "retryrs_grpc_status_code: name").ok().and_then(|n| status_code(n).ok()).map_or(-1, i32::from)
    })
}

/// The core's status names, NUL-terminated once for C.
static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();

/// The name of gRPC status `code` ("UNAVAILABLE" for 14), static; NULL past 16.
#[no_mangle]
pub extern "C" fn retryrs_grpc_status_name(code: u32) -> *const c_char {
    guard_value("retryrs_grpc_status_name", std::ptr::null(), || {
        let names = NAMES.get_or_init(|| {
            GRPC_STATUS_NAMES.iter().map(|n| std::ffi::CString::new(*n).expect("no NUL in a status name")).collect()
        });
        names.get(code as usize).map_or(std::ptr::null(), |n| n.as_ptr())
    })
}
