//! The thundering herd (seed 000's demo): 1,000 clients fail at t = 0 against the same
//! server and retry five times. When do their retries land? Virtual time, so it runs
//! instantly: each client is one engine call fed "transient" until it gives up.
//!
//! `cargo run -p retryrs --example herd`

use std::collections::HashMap;
use std::time::Duration;

use retryrs::{Call, Decision, Jitter, Policy, Resume, Verdict};

const CLIENTS: u64 = 1_000;
const BUCKET_MS: u128 = 10;

/// Busiest 10 ms window and the number of retries, for one jitter kind.
fn herd(jitter: Jitter) -> (usize, usize) {
    let mut per_bucket: HashMap<u128, usize> = HashMap::new();
    let mut total = 0;
    for client in 0..CLIENTS {
        // The seed's policy: 6 attempts, 100 ms base, 10 s cap; one seed per client so the
        // run is reproducible and the clients are independent.
        let policy = Policy::builder()
            .max_attempts(6)
            .initial_delay_ms(100.0)
            .max_delay_ms(10_000.0)
            .deadline_ms(Some(60_000.0))
            .jitter(jitter)
            .seed(Some(client))
            .build()
            .expect("a valid policy");
        let mut now = Duration::ZERO;
        let mut call = Call::start(&policy, now);
        let quiet = &mut |_: &retryrs::Event<'_>| {};
        while let Ok(Decision::Retry(delay)) = call.record(Verdict::TRANSIENT, now, quiet) {
            now += delay;
            *per_bucket.entry(now.as_millis() / BUCKET_MS).or_default() += 1;
            total += 1;
            if let Ok(Resume::Stop(_)) = call.after_wait(now, quiet) {
                break;
            }
        }
    }
    (per_bucket.values().copied().max().unwrap_or(0), total)
}

fn main() {
    println!("1,000 clients fail at t = 0 and retry (6 attempts, 100 ms base, x2, 10 s cap)");
    println!("{:<20} busiest 10 ms window", "jitter");
    for jitter in [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Proportional(0.5), Jitter::Decorrelated] {
        let (worst, total) = herd(jitter);
        println!("{:<20} {:>5} retries (of {total} total)", jitter.spelling(), worst);
    }
    println!("Without jitter every client comes back in the same window; jitter spreads them.");
}
