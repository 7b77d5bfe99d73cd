//! `knobgen` writes the parts of each host that are derived from the core's knob table
//! (`retryrs::KNOBS`) but must exist as source: C's `retryrs_config` (cbindgen reads
//! source, and the struct is the ABI), Python's `.pyi` stubs and native signature (type
//! checkers read files; pyo3 wants a literal), and Node's `index.d.ts` (tsc reads files).
//! Everything a host can read at run time (option lists, spellings, units, getters,
//! reprs, error wording) it reads from the table itself and is not generated.
//!
//! `knobgen` rewrites the files; `knobgen --check` (and `cargo test`) fails naming the
//! stale ones. `make generate` runs it, then regenerates the C headers.

mod c;
mod node;
mod output;
mod python;
mod spell;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use output::Output;

/// Every generated file and region, rendered from the table.
fn outputs() -> Vec<Output> {
    let mut all = vec![c::config_layout()];
    all.extend(python::outputs());
    all.extend(node::outputs());
    all
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The outputs whose files differ from what the table gives (written first if `write`).
fn stale(root: &Path, write: bool) -> Result<Vec<String>, String> {
    let mut stale = Vec::new();
    for out in outputs() {
        let path = root.join(out.path());
        let now = match std::fs::read_to_string(&path) {
            // A whole generated file may be deleted to start it afresh (see c::appends_only).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && matches!(out, Output::File { .. }) => String::new(),
            read => read.map_err(|e| format!("{}: {e}", out.path()))?,
        };
        let wanted = out.apply(&now).map_err(|e| format!("{}: {e}", out.path()))?;
        if wanted != now {
            stale.push(out.describe());
            if write {
                std::fs::write(&path, wanted).map_err(|e| format!("{}: {e}", out.path()))?;
            }
        }
    }
    Ok(stale)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => false,
        ["--check"] => true,
        _ => {
            eprintln!("knobgen: unexpected arguments {args:?} (it takes nothing, or --check)");
            return ExitCode::from(2);
        }
    };
    match stale(&repo(), !check) {
        Err(e) => {
            eprintln!("knobgen: {e}");
            ExitCode::FAILURE
        }
        Ok(s) if s.is_empty() => ExitCode::SUCCESS,
        Ok(s) if check => {
            eprintln!("knobgen: stale (run `make generate`):\n  {}", s.join("\n  "));
            ExitCode::FAILURE
        }
        Ok(s) => {
            println!("knobgen: wrote\n  {}", s.join("\n  "));
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_files_are_what_the_knob_table_gives() {
        let stale = stale(&repo(), false).unwrap();
        assert!(stale.is_empty(), "stale, run `make generate`:\n  {}", stale.join("\n  "));
    }
}
