//! Scenario 3, the herd: 1,000 clients fail together at t = 0 against a server that keeps
//! failing, and retry (6 attempts, 100 ms x2, 10 s cap); when do their retries land, per
//! 10 ms window? Client i's jitter is seeded with i. `make demo` prints each kind's
//! busiest window (examples/herd.rs); `make sim` plots the whole series.

use std::time::Duration;

use retryrs::{Call, Decision, Jitter, Policy, Resume, Verdict};

/// Width of one window, ms.
pub const WINDOW_MS: u64 = 10;

/// The jitter kinds the example compares.
pub const KINDS: [Jitter; 5] =
    [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Proportional(0.5), Jitter::Decorrelated];

/// Retries landing in each 10 ms window, for `clients` clients under `jitter`.
pub fn windows(clients: u64, jitter: Jitter) -> Vec<u64> {
    let mut per_window: Vec<u64> = Vec::new();
    for client in 0..clients {
        let policy = Policy::builder()
            .max_attempts(6)
            .initial_delay_ms(100.0)
            .max_delay_ms(10_000.0)
            .deadline_ms(Some(60_000.0))
            .jitter(jitter)
            .seed(Some(client))
            .build()
            .expect("the example's policy is valid");
        let mut now = Duration::ZERO;
        let mut call = Call::start(&policy, now);
        let quiet = &mut |_: &retryrs::Event<'_>| {};
        while let Ok(Decision::Retry(delay)) = call.record(Verdict::TRANSIENT, now, quiet) {
            now += delay;
            let w = (now.as_millis() as u64 / WINDOW_MS) as usize;
            if per_window.len() <= w {
                per_window.resize(w + 1, 0);
            }
            per_window[w] += 1;
            if let Ok(Resume::Stop(_)) = call.after_wait(now, quiet) {
                break;
            }
        }
    }
    per_window
}
