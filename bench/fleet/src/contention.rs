//! Scenario 1, contention: the experiment of the AWS Architecture Blog's "Exponential
//! Backoff And Jitter" (Marc Brooker, 2015), modelled as its simulator
//! (aws-samples/aws-arch-backoff-simulator, `src/backoff_simulator.py`) did.
//!
//! One row with a version number behind optimistic concurrency control. Each of N clients
//! wants to update it once: read the version, write "if version is still v". All N start
//! at t = 0; every message crosses a network whose delay is |Normal(10 ms, 2 ms)|. The
//! server applies the first write that names the current version and fails the others;
//! a client whose write failed backs off and starts over with a fresh read. So each round
//! of contention has one winner and the losers retry: the article's model exactly.
//!
//! The backoff is the engine's: each client holds one [`retryrs::Call`] and feeds it the
//! write's outcome. The article's schedule is `min(2000 ms, 5 ms * 2^n)` after the n-th
//! failure, i.e. the engine's `initial_delay` 10 ms, x2, `max_delay` 2 s; its decorrelated
//! jitter starts from the base itself (5 ms), so that policy's `initial_delay` is 5 ms.
//! Attempts are unbounded and there is no deadline, as in the article. One difference the
//! engine imposes: delays are whole milliseconds (the article's are real numbers).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use retryrs::{Call, Decision, Jitter, Policy, Resume, Verdict};

use crate::rng::{call_seed, WorldRng};

/// Mean and standard deviation of one network crossing, in ms (the article's Net(10, 2)).
pub const NET_MEAN_MS: f64 = 10.0;
/// See [`NET_MEAN_MS`].
pub const NET_SD_MS: f64 = 2.0;

/// A backoff the experiment compares, by the article's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Capped exponential, no jitter ("Exponential").
    NoJitter,
    /// Full jitter.
    Full,
    /// Equal jitter.
    Equal,
    /// Decorrelated jitter.
    Decorrelated,
}

impl Strategy {
    /// Every strategy, in the table's order.
    pub const ALL: [Strategy; 4] = [Strategy::NoJitter, Strategy::Full, Strategy::Equal, Strategy::Decorrelated];

    /// The name in tables and legends.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::NoJitter => "no jitter",
            Strategy::Full => "full jitter",
            Strategy::Equal => "equal jitter",
            Strategy::Decorrelated => "decorrelated jitter",
        }
    }

    /// The engine policy that reproduces the article's schedule for this strategy.
    fn policy(self, seed: u64) -> Policy {
        let (jitter, initial_ms) = match self {
            Strategy::NoJitter => (Jitter::None, 10.0),
            Strategy::Full => (Jitter::Full, 10.0),
            Strategy::Equal => (Jitter::Equal, 10.0),
            Strategy::Decorrelated => (Jitter::Decorrelated, 5.0),
        };
        Policy::builder()
            .max_attempts(u64::from(u32::MAX))
            .initial_delay_ms(initial_ms)
            .multiplier(2.0)
            .max_delay_ms(2000.0)
            .jitter(jitter)
            .deadline(None)
            .seed(Some(seed))
            .build()
            .expect("the article's policy is valid")
    }
}

/// What one run (or the mean of several) cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Writes the server received (the article's "calls").
    pub calls: f64,
    /// When the last client's update was acknowledged, in ms.
    pub completion_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Msg {
    /// A read reaches the server.
    Read,
    /// The version read reaches the client.
    ReadReply(u64),
    /// A conditional write reaches the server.
    Write(u64),
    /// The write's outcome reaches the client.
    WriteReply(bool),
}

/// One contention run: `clients` clients, `strategy`, world and jitter seeded by `seed`.
pub fn run_once(clients: usize, strategy: Strategy, seed: u64) -> Outcome {
    let mut net = WorldRng::new(seed, 1);
    let policies: Vec<Policy> = (0..clients).map(|c| strategy.policy(call_seed(seed, c as u64))).collect();
    let mut calls: Vec<Call<&Policy>> = policies.iter().map(|p| Call::start(p, Duration::ZERO)).collect();
    // (time in ns, sequence number for a stable order of ties, client, message)
    let mut queue: BinaryHeap<Reverse<(u64, u64, usize, Msg)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, at: u64, client: usize, msg: Msg| {
        seq += 1;
        queue.push(Reverse((at, seq, client, msg)));
    };
    let hop = |net: &mut WorldRng| (net.abs_normal(NET_MEAN_MS, NET_SD_MS) * 1e6) as u64;
    for c in 0..clients {
        let at = hop(&mut net);
        push(&mut queue, at, c, Msg::Read);
    }
    let quiet = &mut |_: &retryrs::Event<'_>| {};
    let (mut version, mut writes, mut last) = (0u64, 0u64, 0u64);
    while let Some(Reverse((now, _, c, msg))) = queue.pop() {
        last = now;
        match msg {
            Msg::Read => push(&mut queue, now + hop(&mut net), c, Msg::ReadReply(version)),
            Msg::ReadReply(v) => push(&mut queue, now + hop(&mut net), c, Msg::Write(v)),
            Msg::Write(v) => {
                writes += 1;
                let won = v == version;
                if won {
                    version += 1;
                }
                push(&mut queue, now + hop(&mut net), c, Msg::WriteReply(won));
            }
            Msg::WriteReply(won) => {
                let t = Duration::from_nanos(now);
                let verdict = if won { Verdict::Success } else { Verdict::TRANSIENT };
                match calls[c].record(verdict, t, quiet).expect("an attempt is in progress") {
                    Decision::Stop(_) => {}
                    Decision::Retry(delay) => {
                        let woke = t + delay;
                        match calls[c].after_wait(woke, quiet).expect("a wait is in progress") {
                            Resume::Attempt(_) => {
                                let at = woke.as_nanos() as u64 + hop(&mut net);
                                push(&mut queue, at, c, Msg::Read);
                            }
                            Resume::Stop(stop) => unreachable!("no deadline, yet {stop:?}"),
                        }
                    }
                }
            }
        }
    }
    Outcome { calls: writes as f64, completion_ms: last as f64 / 1e6 }
}

/// The mean over `trials` runs (the article averaged 100).
pub fn run_mean(clients: usize, strategy: Strategy, seed: u64, trials: u64) -> Outcome {
    let mut sum = Outcome { calls: 0.0, completion_ms: 0.0 };
    for trial in 0..trials {
        let o = run_once(clients, strategy, seed.wrapping_add(trial.wrapping_mul(0x9E37_79B9)));
        sum.calls += o.calls;
        sum.completion_ms += o.completion_ms;
    }
    Outcome { calls: sum.calls / trials as f64, completion_ms: sum.completion_ms / trials as f64 }
}
