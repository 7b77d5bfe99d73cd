//! C ABI for retryrs: `libretryrs.so` / `libretryrs.a` and `include/retryrs.h`.
//!
//! Every decision is the core's: this crate only converts between C values and the
//! core's types, runs user callbacks, and keeps panics and bad pointers from crossing
//! the boundary. Each module holds one group of exports; every export runs under
//! [`ffi::guard_status`] or [`ffi::guard_value`] (checked by `tests/guarded.rs`).
#![allow(non_camel_case_types)]
// The exports dereference raw pointers only after checking them for NULL; the header
// documents what each pointer must be, which is all a C caller can be told.
#![allow(clippy::missing_safety_doc)]

pub mod blocking;
pub mod breaker;
pub mod budget;
pub mod cancel;
pub mod config;
pub mod config_layout;
pub mod engine;
pub mod event;
pub mod ffi;
pub mod grpc_status;
pub mod hedge;
pub mod hooks;
pub mod http;
pub mod policies;
pub mod propagation;
pub mod retrier;
pub mod testing;
pub mod types;

use std::ffi::c_char;

/// Major version, as in Cargo.toml (a test keeps them equal).
pub const RETRYRS_VERSION_MAJOR: u32 = 0;
/// Minor version, as in Cargo.toml.
pub const RETRYRS_VERSION_MINOR: u32 = 3;
/// Patch version, as in Cargo.toml.
pub const RETRYRS_VERSION_PATCH: u32 = 0;

static VERSION_C: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library's version ("MAJOR.MINOR.PATCH"), a static string. Compare it with
/// RETRYRS_VERSION to detect a header/library mismatch.
#[no_mangle]
pub extern "C" fn retryrs_version() -> *const c_char {
    ffi::guard_value("retryrs_version", c"".as_ptr(), || VERSION_C.as_ptr().cast())
}
