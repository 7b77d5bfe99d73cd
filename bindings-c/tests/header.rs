//! include/retryrs.h and include/retryrs_testing.h must be exactly what cbindgen generates
//! from src/ now: a forgotten regeneration fails here. `RETRYRS_UPDATE_HEADER=1 cargo test -p retryrs-c --test
//! header` (or `make header-c`) rewrites it.

use std::path::Path;

/// Generates `header` from `src` with `config`, rewrites it under RETRYRS_UPDATE_HEADER,
/// and fails if the committed file differs.
fn check(config: &str, src: &str, header: &str) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header_path = crate_dir.join("../include").join(header);
    let config = cbindgen::Config::from_file(crate_dir.join(config)).expect("cbindgen config");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join(src))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    if std::env::var_os("RETRYRS_UPDATE_HEADER").is_some() {
        std::fs::create_dir_all(header_path.parent().unwrap()).unwrap();
        std::fs::write(&header_path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&header_path).unwrap_or_default();
    assert!(committed == generated, "include/{header} is stale: run `make header-c` and commit it");
}

#[test]
fn committed_header_matches_cbindgen_output() {
    check("cbindgen.toml", "src/lib.rs", "retryrs.h");
}

#[test]
fn committed_testing_header_matches_cbindgen_output() {
    check("cbindgen-testing.toml", "src/testing.rs", "retryrs_testing.h");
}

#[test]
fn the_testing_switch_is_only_in_the_testing_header() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
    let main = std::fs::read_to_string(include.join("retryrs.h")).unwrap();
    let testing = std::fs::read_to_string(include.join("retryrs_testing.h")).unwrap();
    for f in ["retryrs_testing_enable", "retryrs_testing_disable", "retryrs_testing_advance", "retryrs_testing_is_on"] {
        assert!(!main.contains(f), "{f} is declared in retryrs.h");
        assert!(testing.contains(&format!("{f}(")), "{f} is missing from retryrs_testing.h");
    }
    assert!(main.contains("retryrs_now_ms("), "retryrs_now_ms is the library's clock: it stays in retryrs.h");
}
