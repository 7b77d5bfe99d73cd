//! The thundering herd (seed 000's demo, run by `make demo`): 1,000 clients fail at t = 0
//! against the same server and retry five times. When do their retries land? Virtual
//! time, so it runs instantly; the model is the simulator's scenario 3 (src/herd.rs),
//! which `make sim` plots.
//!
//! `cargo run -p retryrs-fleet --no-default-features --example herd`

use retryrs_fleet::herd::{windows, KINDS, WINDOW_MS};

const CLIENTS: u64 = 1_000;

fn main() {
    println!("1,000 clients fail at t = 0 and retry (6 attempts, 100 ms base, x2, 10 s cap)");
    println!("{:<20} busiest {WINDOW_MS} ms window", "jitter");
    for jitter in KINDS {
        let per_window = windows(CLIENTS, jitter);
        let worst = per_window.iter().copied().max().unwrap_or(0);
        let total: u64 = per_window.iter().sum();
        println!("{:<20} {:>5} retries (of {total} total)", jitter.spelling(), worst);
    }
    println!("Without jitter every client comes back in the same window; jitter spreads them.");
}
