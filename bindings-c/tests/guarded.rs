//! Every export must run under the panic guard, mechanically: this parses src/*.rs and
//! fails on any `extern "C"` or `#[no_mangle]` function whose body is not exactly one
//! call to `guard_status(...)` or `guard_value(...)`, and on an export missing either
//! marker (a `#[no_mangle]` Rust-ABI function, or an unexported `extern "C"` one). The
//! guard's first argument must be the export's own name, as a string literal: it prefixes
//! every message the export leaves in retryrs_last_error().

use std::path::Path;

use syn::{Expr, Item, Stmt};

/// Whether `body` is one call to a guard whose first argument is the literal `name`.
fn is_guarded(body: &syn::Block, name: &str) -> bool {
    let expr = match body.stmts.as_slice() {
        [Stmt::Expr(e, None)] => e,
        _ => return false,
    };
    let Expr::Call(call) = expr else { return false };
    let Expr::Path(path) = &*call.func else { return false };
    let is_guard = path.path.segments.last().is_some_and(|s| s.ident == "guard_status" || s.ident == "guard_value");
    let named =
        matches!(call.args.first(), Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if s.value() == name);
    is_guard && named
}

fn exports(items: &[Item], file: &str, found: &mut Vec<String>, bad: &mut Vec<String>) {
    for item in items {
        match item {
            Item::Fn(f) => {
                let no_mangle = f.attrs.iter().any(|a| a.path().is_ident("no_mangle"));
                let extern_c =
                    f.sig.abi.as_ref().is_some_and(|abi| abi.name.as_ref().is_some_and(|n| n.value() == "C"));
                if !no_mangle && !extern_c {
                    continue;
                }
                let name = format!("{file}: {}", f.sig.ident);
                if !(no_mangle && extern_c) {
                    bad.push(format!("{name} needs both #[no_mangle] and extern \"C\""));
                } else if !is_guarded(&f.block, &f.sig.ident.to_string()) {
                    bad.push(format!("{name} does not run under guard_status/guard_value(\"{}\", ..)", f.sig.ident));
                }
                found.push(name);
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    exports(inner, file, found, bad);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn every_export_runs_under_the_panic_guard() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (mut found, mut bad) = (vec![], vec![]);
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let file = syn::parse_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
            exports(&file.items, &path.display().to_string(), &mut found, &mut bad);
        }
    }
    assert!(found.len() > 20, "found only {} exports: is the parser looking in the right place?", found.len());
    assert!(bad.is_empty(), "unguarded exports:\n{}", bad.join("\n"));
}

#[test]
fn the_check_catches_an_unguarded_export() {
    let file: syn::File = syn::parse_str(
        r#"#[no_mangle] pub extern "C" fn retryrs_oops() -> i32 { let x = 1; x }
           #[no_mangle] pub extern "C" fn retryrs_fine() -> i32 { guard_value("retryrs_fine", 0, || 1) }
           #[no_mangle] pub extern "C" fn retryrs_misnamed() -> i32 { guard_value("retryrs_fine", 0, || 1) }"#,
    )
    .unwrap();
    let (mut found, mut bad) = (vec![], vec![]);
    exports(&file.items, "inline", &mut found, &mut bad);
    assert_eq!(found.len(), 3);
    assert_eq!(
        bad,
        [
            "inline: retryrs_oops does not run under guard_status/guard_value(\"retryrs_oops\", ..)",
            "inline: retryrs_misnamed does not run under guard_status/guard_value(\"retryrs_misnamed\", ..)"
        ]
    );
}
