//! `make sim`: runs every scenario at the scale and writes bench/fleet/*.svg and
//! bench/FLEET.md. Usage: retryrs-fleet [OUT_DIR] (default: the crate's parent, bench/).

use std::path::PathBuf;
use std::process::ExitCode;

use retryrs_fleet::{plot, report, sim};

/// The seed of the published tables.
const SEED: u64 = 2015;

fn main() -> ExitCode {
    let arg = std::env::args_os().nth(1);
    if arg.as_ref().is_some_and(|a| a.to_string_lossy().starts_with('-')) {
        eprintln!("usage: retryrs-fleet [OUT_DIR]  (writes OUT_DIR/FLEET.md and OUT_DIR/fleet/*.svg; default bench/)");
        return ExitCode::from(2);
    }
    let bench = arg.map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
    let bench = bench.canonicalize().unwrap_or(bench);
    let started = std::time::Instant::now();
    let results = sim::simulate(&sim::Config::full(SEED));
    let plots = bench.join("fleet");
    let written = std::fs::create_dir_all(&plots)
        .map_err(|e| e.to_string())
        .and_then(|()| plot::write_all(&results, &plots).map_err(|e| e.to_string()))
        .and_then(|()| std::fs::write(bench.join("FLEET.md"), report::fleet_md(&results)).map_err(|e| e.to_string()));
    match written {
        Ok(()) => {
            println!(
                "wrote {} and {}/*.svg in {:.1} s",
                bench.join("FLEET.md").display(),
                plots.display(),
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("retryrs-fleet: could not write the results under {}: {e}", bench.display());
            ExitCode::FAILURE
        }
    }
}
