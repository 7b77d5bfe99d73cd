//! Scenario 4, the tail at scale (Dean & Barroso, "The Tail at Scale", CACM 2013): a user
//! request fans out to 100 sub-requests and is as slow as its slowest one, so a 1% slow
//! tail per server becomes the common case per user. Hedged requests cut it; this module
//! runs every sub-request through the core's hedging engine ([`retryrs::HedgeCall`]), or
//! for the naive peer through the retry engine ([`retryrs::Call`]): nothing here decides
//! when to hedge, retry or give up.
//!
//! The model, in microseconds:
//! - An attempt's latency is drawn afresh for each attempt (the slowness is per request:
//!   queueing, a GC pause, a busy disk): 1 ms plus an exponential of mean 3 ms, and for
//!   1% of attempts that times U(50, 100) (a slow request, 50-100x slower).
//! - Servers have no capacity limit here (the paper's benchmark ran far below it), so an
//!   extra attempt does not slow the others: what it costs is counted as extra requests.
//! - User requests start 10 ms apart; their sub-requests start together. Calls and
//!   attempts run concurrently in one event queue, in time order, so an adaptive delay
//!   learns only from attempts that ended before it is read.
//!
//! Scenario 5, overload: clients each with a [`retryrs::RetryBudget`] send calls at a fixed
//! rate; for a while every attempt is 50-100x slower (a slow outage, no failures). Without
//! the budget, hedging multiplies the load exactly when the server is struggling; with it,
//! each hedge spends a token that only successes refill, so the load stays near
//! 1 + `token_ratio` times the offered load.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use retryrs::{Call, Decision, HedgeCall, Hedging, Jitter, Policy, Resume, RetryBudget, Step, Verdict};

use crate::rng::WorldRng;

/// Sub-requests per user request (the paper's fan-out).
pub const FAN_OUT: usize = 100;
/// Share of attempts that are slow.
pub const SLOW_SHARE: f64 = 0.01;
/// A slow attempt is this many times slower, uniformly.
pub const SLOW_FACTOR: (f64, f64) = (50.0, 100.0);
/// Attempts at most, hedges included, for every hedging peer.
pub const MAX_ATTEMPTS: u64 = 3;

/// Mean of [`body_ms`]: 1 ms + 3 ms.
pub const BODY_MEAN_MS: f64 = 4.0;

/// An attempt's work when nothing is slow, ms: 1 ms + Exp(3 ms).
pub fn body_ms(rng: &mut WorldRng) -> f64 {
    1.0 - 3.0 * (1.0 - rng.unit()).ln()
}

/// One attempt's latency: 1 ms + Exp(3 ms), times U(50, 100) for 1% of attempts.
pub fn latency(rng: &mut WorldRng) -> Duration {
    let body_ms = body_ms(rng);
    let slow = rng.unit() < SLOW_SHARE;
    let factor = if slow { SLOW_FACTOR.0 + (SLOW_FACTOR.1 - SLOW_FACTOR.0) * rng.unit() } else { 1.0 };
    Duration::from_micros((body_ms * factor * 1000.0).round() as u64)
}

/// The `q` quantile of the latency distribution, from `n` draws, rounded up to a whole
/// millisecond (the engine's delays are whole milliseconds): what a hand-tuned fixed delay
/// is told.
pub fn latency_quantile_ms(q: f64, n: usize, seed: u64) -> u64 {
    let mut rng = WorldRng::new(seed, 41);
    let mut draws: Vec<Duration> = (0..n).map(|_| latency(&mut rng)).collect();
    draws.sort();
    let at = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    draws[at].as_micros().div_ceil(1000) as u64
}

/// A peer of the tail table.
#[derive(Debug, Clone, PartialEq)]
pub enum Peer {
    /// One attempt, no hedging.
    NoHedging,
    /// gRPC-style hedging: a fixed delay (ms).
    Fixed(u64),
    /// retryrs's adaptive delay: the p95 of recent latencies.
    Adaptive,
    /// Naive "retry on timeout": abandon an attempt at the timeout (ms) and retry at once.
    RetryOnTimeout(u64),
}

impl Peer {
    /// The policy the peer's calls run under (`budget`: the client's, if any).
    pub fn policy(&self, budget: Option<Arc<RetryBudget>>) -> Policy {
        let base = Policy::builder().deadline(None).budget(budget);
        match self {
            Peer::NoHedging => base.hedge(Some(Hedging::fixed_ms(1, 0.0).expect("valid"))),
            // Unguarded, as gRPC's and the paper's hedging is: a budget, when the scenario
            // gives one, is the only limit.
            Peer::Fixed(ms) => {
                base.hedge(Some(Hedging::fixed_ms(MAX_ATTEMPTS, *ms as f64).expect("valid").without_guard()))
            }
            // p95, floor 1 ms, ceiling 1 s: the document's defaults.
            Peer::Adaptive => {
                base.hedge(Some(Hedging::adaptive_ms(MAX_ATTEMPTS, 0.95, 1.0, 1000.0).expect("valid").without_guard()))
            }
            Peer::RetryOnTimeout(ms) => base
                .max_attempts(MAX_ATTEMPTS)
                .initial_delay_ms(0.0)
                .max_delay_ms(0.0)
                .jitter(Jitter::None)
                .attempt_timeout_ms(Some(*ms as f64)),
        }
        .build()
        .expect("a valid policy")
    }

    /// The peer's name in a plot's legend (short: the legend is narrow).
    pub fn short(&self) -> String {
        match self {
            Peer::NoHedging => "no hedging".into(),
            Peer::Fixed(ms) => format!("fixed {ms} ms"),
            Peer::Adaptive => "adaptive".into(),
            Peer::RetryOnTimeout(ms) => format!("retry at {ms} ms"),
        }
    }

    /// The peer's name in the tables.
    pub fn label(&self) -> String {
        match self {
            Peer::NoHedging => "no hedging".into(),
            Peer::Fixed(ms) => format!("fixed-delay hedging, {ms} ms"),
            Peer::Adaptive => "adaptive hedging (p95)".into(),
            Peer::RetryOnTimeout(ms) => format!("retry on timeout, {ms} ms"),
        }
    }
}

/// How one call ended.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    /// When it started and ended, µs.
    pub start: u64,
    /// When it ended, µs.
    pub end: u64,
    /// Whether it succeeded.
    pub ok: bool,
}

/// What one run of many calls measured.
#[derive(Debug, Clone, Default)]
pub struct Calls {
    /// Every call, in the order given.
    pub done: Vec<Done>,
    /// Attempts sent, and when each was launched (µs).
    pub launches: Vec<u64>,
}

enum Engine {
    Hedge(HedgeCall<Arc<Policy>>),
    Retry(Call<Arc<Policy>>),
}

struct Running {
    engine: Engine,
    start: u64,
    /// For each attempt launched (hedging) or the current attempt (retry): when it ends.
    ends: Vec<u64>,
    done: Option<Done>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Attempt k of call c ends (ordered before a wake-up at the same instant: outcomes
    /// are reported before the engine is polled, as the conformance runner does).
    End(usize, u32),
    /// Call c asked to be woken (a hedge is due, the deadline) or starts.
    Wake(usize),
}

/// Runs calls starting at `starts` (µs), call i under `policies[client_of(i)]`, each
/// attempt's latency drawn by `latency_at(launch time)`. Returns every call's end.
pub fn run_calls(
    starts: &[u64],
    policy_of: &dyn Fn(usize) -> Arc<Policy>,
    latency_at: &mut dyn FnMut(u64) -> Duration,
) -> Calls {
    let mut out = Calls::default();
    let mut calls: Vec<Option<Running>> = (0..starts.len()).map(|_| None).collect();
    let mut queue: BinaryHeap<Reverse<(u64, Ev)>> =
        starts.iter().enumerate().map(|(i, t)| Reverse((*t, Ev::Wake(i)))).collect();
    let none = &mut |_: &retryrs::Event<'_>| {};
    let us = |t: u64| Duration::from_micros(t);
    while let Some(Reverse((now, ev))) = queue.pop() {
        let (c, attempt) = match ev {
            Ev::End(c, k) => (c, Some(k)),
            Ev::Wake(c) => (c, None),
        };
        let run = calls[c].get_or_insert_with(|| {
            let policy = policy_of(c);
            let engine = if policy.hedging().is_some() {
                Engine::Hedge(HedgeCall::start(policy, us(now)))
            } else {
                Engine::Retry(Call::start(policy, us(now)))
            };
            Running { engine, start: now, ends: vec![], done: None }
        });
        if run.done.is_some() {
            continue; // a cancelled loser's late end, or a stale wake-up
        }
        match &mut run.engine {
            Engine::Hedge(call) => {
                let mut step = match attempt {
                    Some(k) if call.running().contains(k) => {
                        // Latencies here never fail: every attempt that ends succeeds.
                        call.record(k, Verdict::Success, us(now), none).expect("in flight")
                    }
                    Some(_) => continue,
                    None => call.poll(us(now), none).expect("running"),
                };
                loop {
                    match step {
                        Step::Launch(k) => {
                            out.launches.push(now);
                            let end = now + latency_at(now).as_micros() as u64;
                            run.ends.push(end);
                            queue.push(Reverse((end, Ev::End(c, k))));
                            step = call.poll(us(now), none).expect("running");
                        }
                        Step::Wait(Some(t)) => {
                            queue.push(Reverse((t.as_micros() as u64, Ev::Wake(c))));
                            break;
                        }
                        Step::Wait(None) | Step::Dropped => break,
                        Step::Won { .. } => {
                            run.done = Some(Done { start: run.start, end: now, ok: true });
                            break;
                        }
                        Step::Stop { .. } => {
                            run.done = Some(Done { start: run.start, end: now, ok: false });
                            break;
                        }
                    }
                }
            }
            Engine::Retry(call) => {
                // One attempt at a time: launched at a wake-up, ended at its end or its
                // bound, whichever comes first.
                match attempt {
                    None if run.ends.len() < call.attempt() as usize => {
                        out.launches.push(now);
                        let takes = latency_at(now).as_micros() as u64;
                        let bound = call.remaining(us(now)).expect("attempting").map(|d| d.as_micros() as u64);
                        let end = now + bound.map_or(takes, |b| takes.min(b));
                        run.ends.push(now + takes);
                        queue.push(Reverse((end, Ev::End(c, call.attempt()))));
                    }
                    None => {
                        // The wait after a failure is over.
                        match call.after_wait(us(now), none).expect("waiting") {
                            Resume::Attempt(_) => queue.push(Reverse((now, Ev::Wake(c)))),
                            Resume::Stop(_) => run.done = Some(Done { start: run.start, end: now, ok: false }),
                        }
                    }
                    Some(k) => {
                        let finished = run.ends[k as usize - 1] <= now;
                        let verdict = if finished { Verdict::Success } else { Verdict::TRANSIENT };
                        match call.record(verdict, us(now), none).expect("attempting") {
                            Decision::Stop(stop) => {
                                let ok = stop == retryrs::Stop::Success;
                                run.done = Some(Done { start: run.start, end: now, ok });
                            }
                            Decision::Retry(d) => {
                                queue.push(Reverse((now + d.as_micros() as u64, Ev::Wake(c))));
                            }
                        }
                    }
                }
            }
        }
    }
    out.done = calls.into_iter().map(|r| r.and_then(|r| r.done).expect("every call ends")).collect();
    out
}

/// The tail scenario's scale.
#[derive(Debug, Clone, Copy)]
pub struct TailWorld {
    /// User requests.
    pub users: usize,
    /// Between two user requests' starts, µs.
    pub gap_us: u64,
}

/// One peer's row of the tail table.
#[derive(Debug, Clone)]
pub struct TailRun {
    /// The peer.
    pub peer: Peer,
    /// User-request latency percentiles, ms: p50, p99, p99.9 (a failed user request counts
    /// as slower than every other).
    pub p50: f64,
    /// p99, ms.
    pub p99: f64,
    /// p99.9, ms.
    pub p999: f64,
    /// Attempts sent beyond one per sub-request, as a share of sub-requests.
    pub extra: f64,
    /// User requests that failed (a sub-request gave up).
    pub failed: usize,
    /// Every user request's latency, ms, sorted (failed ones as infinity): the plot's CDF.
    pub sorted_ms: Vec<f64>,
}

/// Runs the tail scenario for one peer.
pub fn tail(world: &TailWorld, peer: &Peer, seed: u64) -> TailRun {
    tail_shifted(world, peer, None, seed)
}

/// The tail scenario where, from the middle user request on, every attempt takes `factor`
/// times as long (the servers got slower: a deploy, a noisy neighbour), if `shift` is set.
pub fn tail_shifted(world: &TailWorld, peer: &Peer, shift: Option<f64>, seed: u64) -> TailRun {
    let policy = Arc::new(peer.policy(None));
    let starts: Vec<u64> =
        (0..world.users).flat_map(|u| std::iter::repeat_n(u as u64 * world.gap_us, FAN_OUT)).collect();
    let mut rng = WorldRng::new(seed, 40);
    let half = (world.users / 2) as u64 * world.gap_us;
    let calls = run_calls(&starts, &|_| Arc::clone(&policy), &mut |t| match shift {
        Some(factor) if t >= half => latency(&mut rng).mul_f64(factor),
        _ => latency(&mut rng),
    });
    let mut users: Vec<f64> = calls
        .done
        .chunks(FAN_OUT)
        .map(|subs| {
            if subs.iter().all(|d| d.ok) {
                subs.iter().map(|d| d.end - d.start).max().unwrap_or(0) as f64 / 1000.0
            } else {
                f64::INFINITY
            }
        })
        .collect();
    users.sort_by(f64::total_cmp);
    let failed = users.iter().filter(|l| l.is_infinite()).count();
    let pct = |q: f64| users[((q * users.len() as f64).ceil() as usize).clamp(1, users.len()) - 1];
    let subs = starts.len() as f64;
    TailRun {
        peer: peer.clone(),
        p50: pct(0.5),
        p99: pct(0.99),
        p999: pct(0.999),
        extra: (calls.launches.len() as f64 - subs) / subs,
        failed,
        sorted_ms: users,
    }
}

/// The overload scenario's world.
#[derive(Debug, Clone, Copy)]
pub struct OverloadWorld {
    /// Clients, each with its own budget.
    pub clients: usize,
    /// Calls per second each client starts.
    pub rate_per_client: u64,
    /// When the slow outage begins and ends, and the run, ms.
    pub slow_from_ms: u64,
    /// End of the slow outage, ms.
    pub slow_until_ms: u64,
    /// When the clients stop starting calls, ms.
    pub end_ms: u64,
}

/// One row of the overload table.
#[derive(Debug, Clone)]
pub struct OverloadRun {
    /// The peer.
    pub peer: Peer,
    /// Each client's budget (max_tokens, token_ratio), if any.
    pub budget: Option<(f64, f64)>,
    /// Attempts launched during the slow outage per call started in it.
    pub slow_load: f64,
    /// The same outside it.
    pub normal_load: f64,
    /// Attempts launched per 100 ms bin, as a multiple of the calls offered in it.
    pub bins: Vec<f64>,
}

/// Width of the overload plot's bins, ms.
pub const OVERLOAD_BIN_MS: u64 = 100;

/// Runs the overload scenario for one peer.
pub fn overload(world: &OverloadWorld, peer: &Peer, budget: Option<(f64, f64)>, seed: u64) -> OverloadRun {
    let policies: Vec<Arc<Policy>> = (0..world.clients)
        .map(|_| {
            let budget = budget.map(|(m, r)| Arc::new(RetryBudget::new(m, r).expect("a valid budget")));
            Arc::new(peer.policy(budget))
        })
        .collect();
    let mut phase = WorldRng::new(seed, 50);
    let period_us = 1_000_000 / world.rate_per_client;
    // Call i belongs to client i % clients; each client at its own phase.
    let phases: Vec<u64> = (0..world.clients).map(|_| phase.below(period_us)).collect();
    let per_client = (world.end_ms * 1000 / period_us) as usize;
    let mut starts: Vec<(u64, usize)> = (0..per_client)
        .flat_map(|n| (0..world.clients).map(move |c| (n, c)))
        .map(|(n, c)| (phases[c] + n as u64 * period_us, c))
        .collect();
    starts.sort();
    let times: Vec<u64> = starts.iter().map(|s| s.0).collect();
    let owner: Vec<usize> = starts.iter().map(|s| s.1).collect();
    let mut rng = WorldRng::new(seed, 51);
    let (from, until) = (world.slow_from_ms * 1000, world.slow_until_ms * 1000);
    let calls = run_calls(&times, &|i| Arc::clone(&policies[owner[i]]), &mut |t| {
        let l = latency(&mut rng);
        if (from..until).contains(&t) {
            // The slow outage: every attempt as slow as a slow one.
            l.mul_f64(SLOW_FACTOR.0 + (SLOW_FACTOR.1 - SLOW_FACTOR.0) * rng.unit())
        } else {
            l
        }
    });
    let in_slow = |t: &u64| (from..until).contains(t);
    let ratio = |launched: usize, offered: usize| launched as f64 / offered.max(1) as f64;
    let slow_load =
        ratio(calls.launches.iter().filter(|t| in_slow(t)).count(), times.iter().filter(|t| in_slow(t)).count());
    let normal_load =
        ratio(calls.launches.iter().filter(|t| !in_slow(t)).count(), times.iter().filter(|t| !in_slow(t)).count());
    let nbins = (world.end_ms / OVERLOAD_BIN_MS) as usize;
    let mut sent = vec![0usize; nbins];
    let mut offered = vec![0usize; nbins];
    for t in &calls.launches {
        if let Some(b) = sent.get_mut((t / 1000 / OVERLOAD_BIN_MS) as usize) {
            *b += 1;
        }
    }
    for t in &times {
        if let Some(b) = offered.get_mut((t / 1000 / OVERLOAD_BIN_MS) as usize) {
            *b += 1;
        }
    }
    let bins = sent.iter().zip(&offered).map(|(s, o)| ratio(*s, *o)).collect();
    OverloadRun { peer: peer.clone(), budget, slow_load, normal_load, bins }
}
