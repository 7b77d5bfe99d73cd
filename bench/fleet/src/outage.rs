//! Scenario 2, outage and recovery: a fleet of clients, each sending requests at a fixed
//! rate to one server, which fails every request for a while and then comes back (at full
//! or reduced capacity).
//!
//! The model, in milliseconds (the engine's resolution):
//! - Client c sends a new request every `1000 / rate` ms at its own random phase; each
//!   request is one engine call, whatever the client's earlier calls are doing (an open
//!   system: a front end serving its own users does not wait for the last user's retry).
//! - Every attempt is answered one round trip later (20 ms: the AWS model's 10 ms each
//!   way), success or failure alike; a failing server fails fast.
//! - During the outage every attempt fails (a connection error, which every peer retries).
//!   Otherwise the server serves up to its capacity: a token bucket refilled at the
//!   capacity rate, holding at most 10 ms of it; the attempts of a millisecond beyond what
//!   it holds are shed (503, transient), chosen uniformly at random among that
//!   millisecond's arrivals.
//! - A failed attempt goes to the engine (`Call::record`); its answer (retry after D, or
//!   stop) is the whole of the client's behaviour. With a budget, each client shares one
//!   [`retryrs::RetryBudget`] among its calls.
//!
//! Policies without randomness make every call that starts in the same millisecond behave
//! alike until the server tells them apart, so those calls run as one cohort: one engine
//! call standing for k identical ones, split when part of it is served. That keeps the
//! unbounded peers (tenacity) cheap to simulate without changing what they do.

use std::sync::Arc;
use std::time::Duration;

use retryrs::{Call, CircuitBreaker, Decision, Policy, Resume, RetryBudget, Verdict};

use crate::peers::Peer;
use crate::rng::{call_seed, WorldRng};

/// The world of one outage run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct World {
    /// Number of clients.
    pub clients: u32,
    /// Requests per second each client starts.
    pub rate_per_client: u32,
    /// Requests per second the healthy server serves.
    pub capacity: u32,
    /// Requests per second it serves after the outage (the half-capacity variant).
    pub capacity_after: u32,
    /// Round trip of one attempt, ms.
    pub rtt_ms: u32,
    /// When the outage begins, ms.
    pub outage_start_ms: u32,
    /// How long it lasts, ms.
    pub outage_ms: u32,
    /// When the simulation stops, ms.
    pub end_ms: u32,
    /// 0: one outage. Otherwise the dependency flaps during the outage window: down this
    /// long, up as long, down again...
    pub flap_ms: u32,
}

impl World {
    /// The issue's world: 1,000 clients x 10 requests/s against 12,000 requests/s; the
    /// server fails everything from 5 s to 35 s; the run goes on 40 s past the recovery.
    pub fn issue(capacity_after: u32) -> World {
        World {
            clients: 1_000,
            rate_per_client: 10,
            capacity: 12_000,
            capacity_after,
            rtt_ms: 20,
            outage_start_ms: 5_000,
            outage_ms: 30_000,
            end_ms: 75_000,
            flap_ms: 0,
        }
    }

    /// The flapping dependency: from 5 s to 65 s down 5 s, up 5 s; then up for good.
    pub fn flapping() -> World {
        World { outage_ms: 60_000, flap_ms: 5_000, ..World::issue(12_000) }
    }

    /// Whether the server fails everything at `t` ms.
    pub fn down(&self, t: u32) -> bool {
        (self.outage_start_ms..self.recovery_ms()).contains(&t)
            && (self.flap_ms == 0 || ((t - self.outage_start_ms) / self.flap_ms) % 2 == 0)
    }

    /// Requests per second the clients start: the steady rate.
    pub fn steady_rate(&self) -> u64 {
        u64::from(self.clients) * u64::from(self.rate_per_client)
    }

    /// When the server recovers, ms.
    pub fn recovery_ms(&self) -> u32 {
        self.outage_start_ms + self.outage_ms
    }
}

/// Width of one bin of the load time series, ms.
pub const BIN_MS: u32 = 100;

/// What one policy did in one world.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The policy.
    pub peer: Peer,
    /// Attempts sent per [`BIN_MS`] bin (all attempts: the server's offered load).
    pub sent: Vec<u64>,
    /// First attempts per bin.
    pub first: Vec<u64>,
    /// Calls started per bin (what the clients' users asked for), the ones a breaker
    /// refused included.
    pub offered: Vec<u64>,
    /// Attempts served per bin.
    pub served: Vec<u64>,
    /// Calls started during the outage, and how many of them ended in success.
    pub outage_calls: u64,
    /// See [`Run::outage_calls`].
    pub outage_calls_ok: u64,
    /// Calls still retrying when the run stopped.
    pub pending_at_end: u64,
    /// Calls started while the server was up during a flapping window, and how many of
    /// them ended in success.
    pub up_calls: u64,
    /// See [`Run::up_calls`].
    pub up_calls_ok: u64,
    /// Calls a circuit breaker refused (no attempt sent).
    pub refused: u64,
}

/// One in-flight call, or a cohort of `size` identical ones.
struct Unit {
    call: Call<Arc<Policy>>,
    size: u64,
    served: u64,
    in_outage: bool,
    /// Started while the server was up within a flapping window.
    in_up: bool,
}

const REPLY: u32 = 0;
const WAKE: u32 = 1 << 31;

/// Runs `peer` in `world`, seeded by `seed`.
pub fn run(world: &World, peer: Peer, seed: u64) -> Run {
    let end = world.end_ms as usize;
    let bins = end.div_ceil(BIN_MS as usize);
    let period = (1000 / world.rate_per_client) as usize;
    let mut out = Run {
        peer,
        sent: vec![0; bins],
        first: vec![0; bins],
        offered: vec![0; bins],
        served: vec![0; bins],
        outage_calls: 0,
        outage_calls_ok: 0,
        pending_at_end: 0,
        up_calls: 0,
        up_calls_ok: 0,
        refused: 0,
    };

    // Each client's phase within the period; clients sharing a phase start together.
    let mut world_rng = WorldRng::new(seed, 2);
    let mut by_phase: Vec<Vec<u32>> = vec![Vec::new(); period];
    for c in 0..world.clients {
        by_phase[world_rng.below(period as u64) as usize].push(c);
    }
    // Each client's own budget and breaker (shared by its calls, as in one process).
    let budgets: Vec<Option<Arc<RetryBudget>>> = (0..world.clients).map(|_| peer.budget()).collect();
    let breakers: Vec<Option<Arc<CircuitBreaker>>> = (0..world.clients).map(|_| peer.breaker()).collect();
    let shared = Arc::new(peer.builder().build().expect("a valid policy"));
    let mut shed_rng = WorldRng::new(seed, 3);
    let mut stamina_rng = WorldRng::new(seed, 4);

    let mut units: Vec<Option<Unit>> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    let mut wheel: Vec<Vec<u32>> = vec![Vec::new(); end + 1];
    let mut sending: Vec<u32> = Vec::new();
    let mut next_call = 0u64;
    let mut bucket = f64::from(world.capacity) / 100.0;
    let quiet = &mut |_: &retryrs::Event<'_>| {};
    let outage = world.outage_start_ms as usize..world.recovery_ms() as usize;

    for t in 0..end {
        let now = Duration::from_millis(t as u64);
        sending.clear();
        // Replies and wake-ups due now, in the order they were scheduled.
        let due = std::mem::take(&mut wheel[t]);
        for entry in due {
            let id = entry & !WAKE;
            let unit = units[id as usize].as_mut().expect("a live unit");
            if entry & WAKE != 0 {
                match unit.call.after_wait(now, quiet).expect("waiting") {
                    Resume::Attempt(_) => sending.push(id),
                    Resume::Stop(_) => release(&mut units, &mut free, id),
                }
                continue;
            }
            let (size, served) = (unit.size, unit.served);
            if served > 0 {
                // The served share of a cohort ends in success; the rest carries on.
                let mut winners = unit.call.clone();
                winners.record(Verdict::Success, now, quiet).expect("attempting");
                if unit.in_outage {
                    out.outage_calls_ok += served;
                }
                if unit.in_up {
                    out.up_calls_ok += served;
                }
                if served == size {
                    units[id as usize] = None;
                    free.push(id);
                    continue;
                }
                unit.size -= served;
            }
            match unit.call.record(Verdict::TRANSIENT, now, quiet).expect("attempting") {
                Decision::Retry(delay) => {
                    let ms = peer.extra_jitter_ms(delay.as_millis() as u64, stamina_rng.unit());
                    let at = t + ms as usize;
                    if ms == 0 {
                        let _ = unit.call.after_wait(now, quiet).expect("waiting");
                        sending.push(id);
                    } else if at < end {
                        wheel[at].push(id | WAKE);
                    }
                    // (a wait past the end leaves the call live: it counts as pending)
                }
                Decision::Stop(_) => release(&mut units, &mut free, id),
            }
        }
        // New calls.
        let starting = &by_phase[t % period];
        let in_outage = world.down(t as u32);
        let in_up = world.flap_ms > 0 && !in_outage && outage.contains(&t);
        if !starting.is_empty() {
            let mut add = |unit: Unit, units: &mut Vec<Option<Unit>>| {
                let id = match free.pop() {
                    Some(id) => {
                        units[id as usize] = Some(unit);
                        id
                    }
                    None => {
                        units.push(Some(unit));
                        (units.len() - 1) as u32
                    }
                };
                sending.push(id);
            };
            if peer.random() {
                for &c in starting {
                    let builder = peer
                        .builder()
                        .seed(Some(call_seed(seed, next_call)))
                        .budget(budgets[c as usize].clone())
                        .breaker(breakers[c as usize].clone());
                    next_call += 1;
                    let policy = Arc::new(builder.build().expect("a valid policy"));
                    // A call its client's breaker refuses sends nothing.
                    let call = Call::start_with(policy, now, quiet);
                    if call.outcome().is_some() {
                        out.refused += 1;
                        continue;
                    }
                    add(Unit { call, size: 1, served: 0, in_outage, in_up }, &mut units);
                }
            } else {
                let call = Call::start(shared.clone(), now);
                add(Unit { call, size: starting.len() as u64, served: 0, in_outage, in_up }, &mut units);
            }
            out.offered[t / BIN_MS as usize] += starting.len() as u64;
            if in_outage {
                out.outage_calls += starting.len() as u64;
            }
            if in_up {
                out.up_calls += starting.len() as u64;
            }
        }
        // The server.
        let arrivals: u64 = sending.iter().map(|&id| units[id as usize].as_ref().expect("live").size).sum();
        let capacity = if t < outage.end { world.capacity } else { world.capacity_after };
        let per_ms = f64::from(capacity) / 1000.0;
        bucket = (bucket + per_ms).min(per_ms * 10.0);
        let mut slots = if in_outage { 0 } else { (bucket.floor() as u64).min(arrivals) };
        bucket -= slots as f64;
        let mut left = arrivals;
        let bin = t / BIN_MS as usize;
        out.sent[bin] += arrivals;
        out.served[bin] += slots;
        for &id in &sending {
            let unit = units[id as usize].as_mut().expect("live");
            if unit.call.attempt() == 1 {
                out.first[bin] += unit.size;
            }
            // Selection sampling: each arrival is served with probability slots/left, so
            // every arrival of this millisecond has the same chance.
            let share = unit.size as f64 * slots as f64 / left as f64;
            let mut served = share.floor() as u64;
            if shed_rng.unit() < share - share.floor() {
                served += 1;
            }
            served = served.min(unit.size).min(slots);
            unit.served = served;
            slots -= served;
            left -= unit.size;
            let at = t + world.rtt_ms as usize;
            if at < end {
                wheel[at].push(id | REPLY);
            }
        }
    }
    out.pending_at_end = units.iter().flatten().map(|u| u.size).sum();
    out
}

/// A call that ended without success (exhausted, deadline, budget).
fn release(units: &mut [Option<Unit>], free: &mut Vec<u32>, id: u32) {
    units[id as usize] = None;
    free.push(id);
}

/// The numbers the table shows for one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// First attempts the clients offered during the outage.
    pub offered: u64,
    /// Attempts sent during the outage (first attempts and retries).
    pub sent: u64,
    /// The busiest second of the run (1 s windows sliding by one bin), attempts.
    pub busiest_second: u64,
    /// Seconds from the recovery until a whole second in which the server serves at least
    /// 95% of what it can (the steady rate, or its capacity if lower) and the load is at
    /// most 1.1x the first attempts; `None` if that never happens before the run stops.
    pub recovery_s: Option<f64>,
}

impl Summary {
    /// Attempts sent per request offered during the outage.
    pub fn amplification(&self) -> f64 {
        self.sent as f64 / self.offered as f64
    }

    /// Attempts sent during the outage beyond the requests offered (negative: a breaker
    /// refused more calls than the retries sent).
    pub fn extra(&self) -> i64 {
        self.sent as i64 - self.offered as i64
    }

    /// The busiest second as a multiple of the steady rate.
    pub fn peak_multiple(&self, world: &World) -> f64 {
        self.busiest_second as f64 / world.steady_rate() as f64
    }
}

/// Bins per second.
const PER_SECOND: usize = (1000 / BIN_MS) as usize;

impl Run {
    /// The table's numbers.
    pub fn summary(&self, world: &World) -> Summary {
        let bin = |ms: u32| (ms / BIN_MS) as usize;
        let outage = bin(world.outage_start_ms)..bin(world.recovery_ms());
        let offered = self.offered[outage.clone()].iter().sum();
        let sent = self.sent[outage].iter().sum();
        let second = |v: &[u64], b: usize| v[b..b + PER_SECOND].iter().sum::<u64>();
        let last = self.sent.len() - PER_SECOND;
        let busiest_second = (0..=last).map(|b| second(&self.sent, b)).max().unwrap_or(0);
        let can_serve = u64::from(world.capacity_after).min(world.steady_rate());
        let recovered = (bin(world.recovery_ms())..=last).find(|&b| {
            let (sent, offered, served) = (second(&self.sent, b), second(&self.offered, b), second(&self.served, b));
            served * 100 >= can_serve * 95 && sent * 10 <= offered * 11
        });
        let recovery_s = recovered.map(|b| (b - bin(world.recovery_ms())) as f64 * f64::from(BIN_MS) / 1000.0);
        Summary { offered, sent, busiest_second, recovery_s }
    }

    /// Sent per offered during the outage after its first `settle_ms` (a breaker's open
    /// state, once its clients have seen enough failures).
    pub fn settled_amplification(&self, world: &World, settle_ms: u32) -> f64 {
        let bin = |ms: u32| (ms / BIN_MS) as usize;
        let range = bin(world.outage_start_ms + settle_ms)..bin(world.recovery_ms());
        let sent: u64 = self.sent[range.clone()].iter().sum();
        let offered: u64 = self.offered[range].iter().sum();
        sent as f64 / offered as f64
    }

    /// For a flapping world: sent per offered while the server is down, and while it is up
    /// (within the flapping window).
    pub fn flap_load(&self, world: &World) -> (f64, f64) {
        let (mut down, mut up) = ((0u64, 0u64), (0u64, 0u64));
        for b in (world.outage_start_ms / BIN_MS) as usize..(world.recovery_ms() / BIN_MS) as usize {
            let side = if world.down(b as u32 * BIN_MS) { &mut down } else { &mut up };
            side.0 += self.sent[b];
            side.1 += self.offered[b];
        }
        (down.0 as f64 / down.1 as f64, up.0 as f64 / up.1 as f64)
    }

    /// For a flapping world: the share of the calls started while the server was up that
    /// ended in success.
    pub fn up_success_share(&self) -> f64 {
        self.up_calls_ok as f64 / self.up_calls as f64
    }

    /// Share of the calls started during the outage that ended in success.
    pub fn outage_success_share(&self) -> f64 {
        self.outage_calls_ok as f64 / self.outage_calls as f64
    }
}
