//! The declared `rust-version` is true of the dependencies: no crate this one can pull
//! in (any feature but `reqwest`, any target) declares a newer one, or an edition newer
//! than it allows. The `reqwest` feature's tree (url, idna, icu) needs a newer Rust, which
//! the crate docs' feature table states and this test holds to. Only one toolchain can be
//! installed here, so this is the check that the MSRV is not a wish: it reads `cargo
//! metadata`, as a resolver would.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().unwrap_or_else(|_| panic!("not a version: {text}")));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The oldest Rust that knows an edition.
fn edition_needs(edition: &str) -> (u64, u64, u64) {
    match edition {
        "2015" | "2018" => (1, 31, 0),
        "2021" => (1, 56, 0),
        "2024" => (1, 85, 0),
        other => panic!("an edition this test does not know: {other}"),
    }
}

/// The package's folder, as cargo gives it when the test runs: the unpacked package's
/// folder changes with every `make test-rust-package`, while a test binary compiled in an
/// earlier one can be reused, with the folder it was compiled in.
fn manifest_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
}

/// What the `reqwest` feature needs, as the crate docs' feature table says.
const REQWEST_NEEDS: &str = "1.88";

#[test]
fn no_dependency_needs_a_newer_rust_than_the_declared_rust_version() {
    let declared = too_new(&["--features", "blocking,http-date,documents,tokio,tower"], None);
    assert!(declared.1.is_empty(), "rust-version {:?} is false: {:?}", declared.0, declared.1);
}

#[test]
fn the_reqwest_feature_needs_no_newer_rust_than_its_docs_say() {
    let lib = std::fs::read_to_string(manifest_dir().join("src/lib.rs")).unwrap();
    let row = lib.lines().find(|l| l.starts_with("//! | `reqwest`")).expect("the feature table has a reqwest row");
    assert!(
        row.contains(&format!("Rust {REQWEST_NEEDS}")),
        "the docs' reqwest row does not say Rust {REQWEST_NEEDS}: {row}"
    );
    let all = too_new(&["--all-features"], Some(version(REQWEST_NEEDS)));
    assert!(all.1.is_empty(), "the reqwest feature needs more than Rust {REQWEST_NEEDS}: {:?}", all.1);
}

/// The declared rust-version (or `limit`), and what in the tree resolved with `features`
/// needs a newer Rust.
fn too_new(features: &[&str], limit: Option<(u64, u64, u64)>) -> ((u64, u64, u64), Vec<String>) {
    let meta = metadata(features);
    let (ours, deps) = normal_dependencies(&meta);
    let declared = version(ours["rust_version"].as_str().expect("retryrs declares a rust-version"));
    let declared = limit.unwrap_or(declared);
    assert!(edition_needs(ours["edition"].as_str().unwrap()) <= declared, "our own edition needs a newer Rust");
    assert!(!deps.is_empty(), "the walk found no dependency: the metadata is not what this test expects");
    let mut too_new = vec![];
    for p in deps {
        let name = format!("{} {}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap());
        if let Some(rv) = p["rust_version"].as_str() {
            if version(rv) > declared {
                too_new.push(format!("{name} declares rust-version {rv}"));
            }
        }
        let edition = p["edition"].as_str().unwrap();
        if edition_needs(edition) > declared {
            too_new.push(format!("{name} is edition {edition}"));
        }
    }
    (declared, too_new)
}

/// The lean build (issue 25: at most 3 normal dependencies) depends on getrandom alone
/// (with its own two) on this machine, and on nothing at all for wasm32-unknown-unknown.
/// `cargo tree -p` applies the features to this package alone (`cargo metadata` would
/// unify them with every workspace member's).
#[test]
fn the_lean_build_has_at_most_three_normal_dependencies_and_none_on_wasm32() {
    let names = |target: &[&str]| {
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let out = Command::new(cargo)
            .args(["tree", "-p", "retryrs", "--no-default-features", "-e", "normal", "--prefix", "none"])
            .arg("--manifest-path")
            .arg(manifest_dir().join("Cargo.toml"))
            .args(target)
            .output()
            .expect("cargo tree runs");
        assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let names = text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string);
        names.filter(|n| n != "retryrs").collect::<BTreeSet<_>>()
    };
    let lean = names(&[]);
    assert!(lean.len() <= 3 && lean.contains("getrandom"), "{lean:?}");
    let wasm = names(&["--target", "wasm32-unknown-unknown"]);
    assert!(wasm.is_empty(), "{wasm:?}");
}

/// `cargo metadata` of this package with `args` (features, platform filter).
fn metadata(args: &[&str]) -> Value {
    let manifest = manifest_dir().join("Cargo.toml");
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .args(args)
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// retryrs's package, and its normal dependencies, transitively (build scripts' and
/// proc-macros' included: they are compiled by the same toolchain), on every target the
/// metadata was resolved for.
fn normal_dependencies(meta: &Value) -> (&Value, Vec<&Value>) {
    let packages: BTreeMap<&str, &Value> =
        meta["packages"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap(), p)).collect();
    let ours = *packages.values().find(|p| p["name"] == "retryrs").expect("retryrs in the metadata");
    let nodes: BTreeMap<&str, &Value> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let mut todo = vec![ours["id"].as_str().unwrap()];
    let mut seen = BTreeSet::new();
    while let Some(id) = todo.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal =
                dep["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null() || k["kind"] == "build");
            let dep_id = dep["pkg"].as_str().unwrap();
            if normal && seen.insert(dep_id) {
                todo.push(dep_id);
            }
        }
    }
    (ours, seen.into_iter().map(|id| packages[id]).collect())
}
