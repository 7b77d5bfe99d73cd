//! include/retryrs.h must be exactly what cbindgen generates from src/ now: a forgotten
//! regeneration fails here. `RETRYRS_UPDATE_HEADER=1 cargo test -p retryrs-c --test
//! header` (or `make header-c`) rewrites it.

use std::path::Path;

#[test]
fn committed_header_matches_cbindgen_output() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header_path = crate_dir.join("../include/retryrs.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    if std::env::var_os("RETRYRS_UPDATE_HEADER").is_some() {
        std::fs::create_dir_all(header_path.parent().unwrap()).unwrap();
        std::fs::write(&header_path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&header_path).unwrap_or_default();
    assert!(committed == generated, "include/retryrs.h is stale: run `make header-c` and commit it");
}
