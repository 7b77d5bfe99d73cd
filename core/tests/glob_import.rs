//! `use retryrs::*` brings no name that shadows a crate the same program uses: the HTTP
//! classification module is `http_rules`, so `http::` still names the `http` crate (with
//! a module `http` in the glob, `http::Request` was ambiguous: error E0659).
#![cfg(feature = "tower")]

use retryrs::*;

#[test]
fn the_http_crate_is_not_shadowed_by_a_glob_import() {
    let request = http::Request::get("http://127.0.0.1/").body(()).unwrap();
    assert_eq!(request.method(), http::Method::GET);
    // And the glob brought the crate's names.
    assert!(is_idempotent(request.method().as_str()));
    assert_eq!(Policy::default().max_attempts(), 5);
}
