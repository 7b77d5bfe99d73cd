//! The shared library's SONAME, on ELF targets. It changes exactly when the ABI may:
//! cargo-c's rule, which is SemVer's: 0.0.z breaks at every patch (`libretryrs.so.0.0.z`),
//! 0.y.z at every minor (`libretryrs.so.0.y`), x.y.z from 1.0 on at every major
//! (`libretryrs.so.x`). The Makefile reads the SONAME back from the built library
//! (readelf) to name the file and its symlinks, so this is the one place the rule lives.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = !matches!(os.as_str(), "macos" | "ios" | "windows");
    if !elf {
        return;
    }
    let part = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"));
    let (major, minor, patch) =
        (part("CARGO_PKG_VERSION_MAJOR"), part("CARGO_PKG_VERSION_MINOR"), part("CARGO_PKG_VERSION_PATCH"));
    let suffix = match (major.as_str(), minor.as_str()) {
        ("0", "0") => format!("0.0.{patch}"),
        ("0", _) => format!("0.{minor}"),
        _ => major,
    };
    // The C users' name, not the crate's (libretryrs_c): the Makefile installs it as such.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libretryrs.so.{suffix}");
}
