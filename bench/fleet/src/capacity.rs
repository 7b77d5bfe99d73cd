//! Scenario 6, hedging against servers that can be full: the tail scenario's latencies,
//! but every attempt is work a server must find a worker for. Section 4's servers have no
//! capacity limit, so a hedge costs only itself; here it takes a worker that another call
//! could have had, and past some utilisation that is what makes everyone slower.
//!
//! The model, in microseconds:
//! - `servers` servers, each with `workers` workers and a FIFO queue of at most
//!   `queue_limit` waiting attempts (a full queue refuses an attempt at once, a transient
//!   failure). Each attempt goes to a server picked uniformly at random among those the
//!   call has not used yet (a load balancer sends a hedge elsewhere). The network is free:
//!   what is measured is queueing and work.
//! - An attempt's work is drawn when a worker takes it. **Independent slowness**: section
//!   4's latency (1 ms + Exp(3 ms), and 1% of attempts 50-100x that), drawn afresh for
//!   every attempt. **Correlated slowness**: the work is 1 ms + Exp(3 ms) and servers
//!   pause (a GC pause, a noisy neighbour) for U(200, 400) ms, 50-100x an attempt, 1% of
//!   the time, each server on its own schedule: every attempt running or queued on a
//!   paused server waits for the pause to end, a hedge sent to it as well.
//! - A winner's losers are cancelled; the server sees a cancel `cancel_lag_us` later, then
//!   drops the attempt from its queue or frees the worker running it. Until then a loser
//!   keeps its worker busy.
//! - Calls arrive as one Poisson stream at the rate that gives the utilisation asked for
//!   (offered work per second over the workers' capacity, each model's own mean work: the
//!   slow 1% included for independent slowness, the pauses taken out of the capacity for
//!   correlated), and are shared round robin among `clients`, each with its own policy
//!   (its own adaptive sketch and default guard, as one process would have).
//!
//! Nothing here decides when to hedge or which attempt wins: each call is one
//! [`retryrs::HedgeCall`] of the peer's policy.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use retryrs::{HedgeCall, Policies, Policy, Step, Verdict};

use crate::parallel::run_all;
use crate::rng::WorldRng;
use crate::tail::{self, BODY_MEAN_MS, SLOW_FACTOR, SLOW_SHARE};

/// Where the slowness comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slowness {
    /// 1% of attempts are slow, each drawn on its own (section 4's model).
    Independent,
    /// Servers pause 1% of the time; everything on a paused server is slow together.
    Correlated,
}

impl Slowness {
    /// Both, in the tables' order.
    pub const ALL: [Slowness; 2] = [Slowness::Independent, Slowness::Correlated];

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Slowness::Independent => "independent",
            Slowness::Correlated => "correlated",
        }
    }

    /// The mean work of an attempt on a server that is never paused, ms.
    fn mean_work_ms(self) -> f64 {
        match self {
            Slowness::Independent => {
                let mean_factor = (SLOW_FACTOR.0 + SLOW_FACTOR.1) / 2.0;
                BODY_MEAN_MS * ((1.0 - SLOW_SHARE) + SLOW_SHARE * mean_factor)
            }
            Slowness::Correlated => BODY_MEAN_MS,
        }
    }

    /// The share of time a server can work.
    fn available(self) -> f64 {
        match self {
            Slowness::Independent => 1.0,
            Slowness::Correlated => 1.0 - SLOW_SHARE,
        }
    }
}

/// A pause lasts U(200, 400) ms: 50-100x the mean attempt, as a slow attempt is.
pub fn pause_ms_range() -> (f64, f64) {
    (SLOW_FACTOR.0 * BODY_MEAN_MS, SLOW_FACTOR.1 * BODY_MEAN_MS)
}

/// The fleet and the run's length.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    /// Servers behind the load balancer.
    pub servers: usize,
    /// Workers per server.
    pub workers: usize,
    /// Attempts a server lets wait (beyond it: refused at once).
    pub queue_limit: usize,
    /// From a cancel to the server acting on it, µs.
    pub cancel_lag_us: u64,
    /// Client processes, each with its own policy.
    pub clients: usize,
    /// Calls in the run.
    pub calls: usize,
}

impl Fleet {
    /// FLEET.md's fleet with `calls` calls: 10 servers of 4 workers, queues of 1,000, and
    /// cancels seen 5 ms after they are sent.
    pub fn issue(calls: usize) -> Fleet {
        Fleet { servers: 10, workers: 4, queue_limit: 1_000, cancel_lag_us: 5_000, clients: 10, calls }
    }

    /// The workers' capacity, calls per second, for `slowness`.
    pub fn capacity_per_s(&self, slowness: Slowness) -> f64 {
        (self.servers * self.workers) as f64 * slowness.available() * 1000.0 / slowness.mean_work_ms()
    }
}

/// A peer of the utilisation table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hedger {
    /// One attempt.
    NoHedging,
    /// A fixed delay (ms), told the latency's p95, no guard, 3 attempts (section 4's).
    Fixed(u64),
    /// The adaptive p95 delay, no guard, 3 attempts (section 4's).
    Adaptive,
    /// What a policy document's `"hedge": { "delay": "adaptive" }` gives: 2 attempts, p95,
    /// and the engine's default guard.
    Default,
}

/// The policy document of [`Hedger::Default`]: every hedging knob left at its default.
pub const DEFAULT_DOCUMENT: &str =
    r#"{ "policies": { "default": { "deadline": null, "hedge": { "delay": "adaptive" } } } }"#;

impl Hedger {
    /// The peers of the table, the fixed delay at `p95_ms`.
    pub fn all(p95_ms: u64) -> [Hedger; 4] {
        [Hedger::NoHedging, Hedger::Fixed(p95_ms), Hedger::Adaptive, Hedger::Default]
    }

    /// The name in the tables.
    pub fn label(self) -> String {
        match self {
            Hedger::NoHedging => "no hedging".into(),
            Hedger::Fixed(ms) => format!("fixed {ms} ms, no guard"),
            Hedger::Adaptive => "adaptive (p95), no guard".into(),
            Hedger::Default => "default (adaptive, guarded)".into(),
        }
    }

    /// A fresh policy for one client (its own sketch and guard).
    pub fn policy(self) -> Policy {
        match self {
            Hedger::NoHedging => tail::Peer::NoHedging.policy(None),
            Hedger::Fixed(ms) => tail::Peer::Fixed(ms).policy(None),
            Hedger::Adaptive => tail::Peer::Adaptive.policy(None),
            Hedger::Default => Policies::from_json(DEFAULT_DOCUMENT)
                .expect("the default hedging document loads")
                .get("default")
                .expect("it names a default policy")
                .clone(),
        }
    }
}

/// One row: a peer at a utilisation.
#[derive(Debug, Clone)]
pub struct Row {
    /// The peer.
    pub hedger: Hedger,
    /// Offered work over capacity.
    pub utilisation: f64,
    /// Call latency percentiles, ms (a failed call counts as slower than every other).
    pub p50: f64,
    /// p99, ms.
    pub p99: f64,
    /// p99.9, ms.
    pub p999: f64,
    /// Attempts beyond one per call, as a share of calls.
    pub extra_attempts: f64,
    /// Worker time spent on attempts that did not win (cancelled losers, refused ones
    /// cost nothing) as a share of the worker time spent on winners.
    pub extra_work: f64,
    /// Calls that failed (every attempt refused by a full queue).
    pub failed: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Queued,
    Running { since: u64 },
    Over,
}

struct Attempt {
    call: u32,
    k: u32,
    server: u32,
    state: State,
    busy: u64,
}

struct Server {
    free: usize,
    queue: VecDeque<u32>,
    waiting: usize,
    /// Pauses, (start, end) µs, in time order (correlated slowness only).
    pauses: Vec<(u64, u64)>,
}

/// The servers, the attempts they see, and the event queue.
struct Servers {
    servers: Vec<Server>,
    attempts: Vec<Attempt>,
    queue: BinaryHeap<Reverse<(u64, u8, u32)>>,
    work: WorldRng,
    slowness: Slowness,
}

impl Servers {
    /// Attempt `a` reaches its server at `now`: a free worker takes it, else it waits if
    /// the queue has room, else it is refused.
    fn arrive(&mut self, a: u32, queue_limit: usize, now: u64) {
        let s = self.attempts[a as usize].server as usize;
        if self.servers[s].free > 0 {
            self.begin(a, now);
            return;
        }
        let server = &mut self.servers[s];
        if server.waiting < queue_limit {
            server.waiting += 1;
            server.queue.push_back(a);
        } else {
            self.attempts[a as usize].state = State::Over;
            self.queue.push(Reverse((now, REFUSED, a)));
        }
    }

    /// A free worker takes attempt `a` at `now`: its work is drawn now.
    fn begin(&mut self, a: u32, now: u64) {
        let server = &mut self.servers[self.attempts[a as usize].server as usize];
        server.free -= 1;
        let work = match self.slowness {
            Slowness::Independent => tail::latency(&mut self.work).as_micros() as u64,
            Slowness::Correlated => (tail::body_ms(&mut self.work) * 1000.0).round() as u64,
        };
        let end = finish(now, work, &server.pauses);
        self.attempts[a as usize].state = State::Running { since: now };
        self.queue.push(Reverse((end, DONE, a)));
    }

    /// The server sees the cancel of each of `attempts` at `seen`.
    fn cancel(&mut self, attempts: impl Iterator<Item = u32>, seen: u64) {
        for a in attempts {
            self.queue.push(Reverse((seen, CANCEL_SEEN, a)));
        }
    }

    /// Attempt `a` stops running at `now` (done, or its cancel seen): its worker takes the
    /// next attempt waiting. `false` if it was not running.
    fn stop(&mut self, a: u32, now: u64) -> bool {
        let attempt = &mut self.attempts[a as usize];
        let State::Running { since } = attempt.state else { return false };
        attempt.busy = now - since;
        attempt.state = State::Over;
        let s = attempt.server as usize;
        self.servers[s].free += 1;
        while let Some(next) = self.servers[s].queue.pop_front() {
            if self.attempts[next as usize].state == State::Queued {
                self.servers[s].waiting -= 1;
                self.begin(next, now);
                break;
            }
        }
        true
    }
}

struct Running {
    engine: HedgeCall<Arc<Policy>>,
    start: u64,
    attempts: [u32; 5],
    end: Option<(u64, bool)>,
}

/// Event kinds at one instant, in the order they are handled: outcomes before cancels,
/// cancels before the engine is polled (as the conformance runner reports outcomes first).
const DONE: u8 = 0;
const REFUSED: u8 = 1;
const CANCEL_SEEN: u8 = 2;
const WAKE: u8 = 3;

/// When work `work` started at `start` on a server with `pauses` ends: a pause stops the
/// clock of everything on the server.
fn finish(start: u64, work: u64, pauses: &[(u64, u64)]) -> u64 {
    let (mut t, mut left) = (start, work);
    let first = pauses.partition_point(|&(_, end)| end <= start);
    for &(from, until) in &pauses[first..] {
        if from > t {
            let run = from - t;
            if run >= left {
                return t + left;
            }
            left -= run;
        }
        t = t.max(until);
    }
    t + left
}

/// A server's pauses over `[0, horizon)` µs: exponential gaps sized so that pauses take
/// [`SLOW_SHARE`] of the time.
fn pause_schedule(rng: &mut WorldRng, horizon: u64) -> Vec<(u64, u64)> {
    let (lo, hi) = pause_ms_range();
    let mean_gap_ms = (lo + hi) / 2.0 * (1.0 - SLOW_SHARE) / SLOW_SHARE;
    let mut out = vec![];
    let mut t = 0.0;
    loop {
        t += -mean_gap_ms * (1.0 - rng.unit()).ln();
        let from = (t * 1000.0) as u64;
        if from >= horizon {
            return out;
        }
        let len = lo + (hi - lo) * rng.unit();
        t += len;
        out.push((from, (t * 1000.0) as u64));
    }
}

/// Runs one peer at one utilisation.
pub fn run(fleet: &Fleet, slowness: Slowness, utilisation: f64, hedger: Hedger, seed: u64) -> Row {
    let rate_per_us = utilisation * fleet.capacity_per_s(slowness) / 1e6;
    let mut arrivals = WorldRng::new(seed, 60);
    let mut t = 0.0;
    let starts: Vec<u64> = (0..fleet.calls)
        .map(|_| {
            t += -(1.0 - arrivals.unit()).ln() / rate_per_us;
            t as u64
        })
        .collect();
    let horizon = starts.last().copied().unwrap_or(0) * 2 + 10_000_000;
    let mut pauses = WorldRng::new(seed, 61);
    let servers: Vec<Server> = (0..fleet.servers)
        .map(|_| Server {
            free: fleet.workers,
            queue: VecDeque::new(),
            waiting: 0,
            pauses: match slowness {
                Slowness::Correlated => pause_schedule(&mut pauses, horizon),
                Slowness::Independent => vec![],
            },
        })
        .collect();
    let policies: Vec<Arc<Policy>> = (0..fleet.clients).map(|_| Arc::new(hedger.policy())).collect();
    let mut pick = WorldRng::new(seed, 63);
    let mut calls: Vec<Option<Running>> = (0..fleet.calls).map(|_| None).collect();
    let mut winners: Vec<bool> = Vec::with_capacity(fleet.calls * 11 / 10);
    let mut w = Servers {
        servers,
        attempts: Vec::with_capacity(fleet.calls * 11 / 10),
        queue: starts.iter().enumerate().map(|(i, &t)| Reverse((t, WAKE, i as u32))).collect(),
        work: WorldRng::new(seed, 62),
        slowness,
    };
    let none = &mut |_: &retryrs::Event<'_>| {};
    let us = Duration::from_micros;

    while let Some(Reverse((now, kind, id))) = w.queue.pop() {
        let (c, outcome) = match kind {
            DONE | REFUSED => {
                if kind == DONE && !w.stop(id, now) {
                    continue; // cancelled before it finished
                }
                let a = &w.attempts[id as usize];
                (a.call as usize, Some((a.k, kind == DONE)))
            }
            CANCEL_SEEN => {
                let a = &mut w.attempts[id as usize];
                if a.state == State::Queued {
                    a.state = State::Over;
                    w.servers[a.server as usize].waiting -= 1;
                } else {
                    w.stop(id, now);
                }
                continue;
            }
            _ => (id as usize, None),
        };
        let run = calls[c].get_or_insert_with(|| Running {
            engine: HedgeCall::start(Arc::clone(&policies[c % fleet.clients]), us(now)),
            start: now,
            attempts: [u32::MAX; 5],
            end: None,
        });
        if run.end.is_some() {
            continue; // a loser's late outcome, or a stale wake-up
        }
        let mut step = match outcome {
            Some((k, served)) => {
                let verdict = if served { Verdict::Success } else { Verdict::TRANSIENT };
                run.engine.record(k, verdict, us(now), none).expect("launched")
            }
            None => run.engine.poll(us(now), none).expect("running"),
        };
        loop {
            match step {
                Step::Launch(k) => {
                    let used: Vec<u32> =
                        run.attempts[..k as usize - 1].iter().map(|&a| w.attempts[a as usize].server).collect();
                    let server = pick_server(&mut pick, fleet.servers, &used);
                    let a = w.attempts.len() as u32;
                    w.attempts.push(Attempt { call: c as u32, k, server, state: State::Queued, busy: 0 });
                    winners.push(false);
                    run.attempts[k as usize - 1] = a;
                    w.arrive(a, fleet.queue_limit, now);
                    step = run.engine.poll(us(now), none).expect("running");
                }
                Step::Wait(Some(at)) => {
                    w.queue.push(Reverse((at.as_micros() as u64, WAKE, c as u32)));
                    break;
                }
                Step::Wait(None) | Step::Dropped => break,
                Step::Won { attempt, cancel } => {
                    winners[run.attempts[attempt as usize - 1] as usize] = true;
                    w.cancel(cancel.iter().map(|k| run.attempts[k as usize - 1]), now + fleet.cancel_lag_us);
                    run.end = Some((now, true));
                    break;
                }
                Step::Stop { cancel, .. } => {
                    w.cancel(cancel.iter().map(|k| run.attempts[k as usize - 1]), now + fleet.cancel_lag_us);
                    run.end = Some((now, false));
                    break;
                }
            }
        }
    }

    let mut latencies: Vec<f64> = calls
        .iter()
        .map(|r| {
            let r = r.as_ref().expect("every call started");
            match r.end.expect("every call ends") {
                (end, true) => (end - r.start) as f64 / 1000.0,
                _ => f64::INFINITY,
            }
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let failed = latencies.iter().filter(|l| l.is_infinite()).count();
    let pct = |q: f64| latencies[((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1];
    let (mut won, mut lost) = (0u64, 0u64);
    for (a, won_it) in w.attempts.iter().zip(&winners) {
        if *won_it {
            won += a.busy;
        } else {
            lost += a.busy;
        }
    }
    Row {
        hedger,
        utilisation,
        p50: pct(0.5),
        p99: pct(0.99),
        p999: pct(0.999),
        extra_attempts: w.attempts.len() as f64 / fleet.calls as f64 - 1.0,
        extra_work: lost as f64 / won.max(1) as f64,
        failed,
    }
}

/// The utilisations of the table.
pub const UTILISATIONS: [f64; 4] = [0.5, 0.8, 0.9, 0.95];

/// The cancel lags of the "when it hurts" table, µs (`None`: the server never sees a
/// cancel, and every loser runs to its end).
pub const LAGS: [Option<u64>; 3] = [Some(5_000), Some(50_000), None];

/// A lag as the tables name it.
pub fn lag_label(lag: Option<u64>) -> String {
    match lag {
        Some(us) => format!("{} ms", us / 1000),
        None => "never".into(),
    }
}

/// The utilisation table for `slowness`: every peer at every utilisation, in that order.
pub fn utilisation_table(fleet: &Fleet, slowness: Slowness, p95_ms: u64, seed: u64) -> Vec<Row> {
    let jobs = UTILISATIONS
        .iter()
        .flat_map(|&u| Hedger::all(p95_ms).map(move |h| (u, h)))
        .map(|(u, h)| Box::new(move || run(fleet, slowness, u, h, seed)) as Box<dyn FnOnce() -> Row + Send>)
        .collect();
    run_all(jobs)
}

/// The utilisations of the lag table.
pub const LAG_UTILISATIONS: [f64; 2] = [0.8, 0.95];

/// The lag table (independent slowness): at each of [`LAG_UTILISATIONS`], no hedging,
/// then for each of [`LAGS`] the adaptive peer without a guard and the default one.
pub fn lag_table(fleet: &Fleet, seed: u64) -> Vec<(Option<u64>, Row)> {
    let mut cells = vec![];
    for u in LAG_UTILISATIONS {
        cells.push((Some(fleet.cancel_lag_us), u, Hedger::NoHedging));
        for lag in LAGS {
            cells.extend([Hedger::Adaptive, Hedger::Default].map(|h| (lag, u, h)));
        }
    }
    let jobs = cells
        .iter()
        .map(|&(lag, u, h)| {
            let fleet = Fleet { cancel_lag_us: lag.unwrap_or(u64::MAX / 4), ..*fleet };
            Box::new(move || (lag, run(&fleet, Slowness::Independent, u, h, seed)))
                as Box<dyn FnOnce() -> (Option<u64>, Row) + Send>
        })
        .collect();
    run_all(jobs)
}

/// A server for the next attempt of a call that already used `used`: uniform among the
/// others (all of them, if it used every one).
fn pick_server(rng: &mut WorldRng, servers: usize, used: &[u32]) -> u32 {
    let free = servers - used.len().min(servers);
    if free == 0 {
        return rng.below(servers as u64) as u32;
    }
    let mut n = rng.below(free as u64) as u32;
    for s in 0..servers as u32 {
        if !used.contains(&s) {
            if n == 0 {
                return s;
            }
            n -= 1;
        }
    }
    unreachable!("fewer servers used than exist")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_stops_the_clock_of_work_in_progress() {
        let pauses = [(10, 20), (30, 40)];
        assert_eq!(finish(0, 5, &pauses), 5, "done before the pause");
        assert_eq!(finish(0, 15, &pauses), 25, "waits out the first pause");
        assert_eq!(finish(12, 5, &pauses), 25, "starts inside a pause");
        assert_eq!(finish(0, 25, &pauses), 45, "waits out both");
        assert_eq!(finish(50, 5, &pauses), 55, "after every pause");
    }

    #[test]
    fn a_hedge_goes_to_a_server_the_call_has_not_used() {
        let mut rng = WorldRng::new(1, 1);
        for _ in 0..200 {
            let s = pick_server(&mut rng, 3, &[0, 2]);
            assert_eq!(s, 1);
        }
        let seen: std::collections::BTreeSet<u32> = (0..200).map(|_| pick_server(&mut rng, 4, &[1])).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 2, 3]);
    }
}
