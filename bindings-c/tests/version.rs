//! The header's version macros (Rust consts that cbindgen copies) and the runtime
//! version must agree with Cargo.toml.

use std::ffi::CStr;

#[test]
fn version_constants_match_cargo_toml() {
    assert_eq!(retryrs_c::RETRYRS_VERSION_MAJOR.to_string(), env!("CARGO_PKG_VERSION_MAJOR"));
    assert_eq!(retryrs_c::RETRYRS_VERSION_MINOR.to_string(), env!("CARGO_PKG_VERSION_MINOR"));
    assert_eq!(retryrs_c::RETRYRS_VERSION_PATCH.to_string(), env!("CARGO_PKG_VERSION_PATCH"));
    let runtime = unsafe { CStr::from_ptr(retryrs_c::retryrs_version()) }.to_str().unwrap();
    assert_eq!(runtime, env!("CARGO_PKG_VERSION"));
}

#[test]
fn the_header_carries_the_same_numbers() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../include/retryrs.h")).unwrap();
    for (macro_name, value) in [
        ("RETRYRS_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("RETRYRS_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("RETRYRS_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let line = format!("#define {macro_name} {value}\n");
        assert!(header.contains(&line), "include/retryrs.h lacks {line:?}");
    }
}

#[test]
fn the_longest_wait_is_the_cores() {
    // cbindgen copies a literal, not a path into another crate: this keeps the two equal.
    assert_eq!(retryrs_c::engine::RETRYRS_MAX_DELAY_MS, retryrs::knob::MAX_WAIT_MS);
}
