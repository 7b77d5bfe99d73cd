//! Scenario 7, a chain of services (issue 39): user → A → B → C, every layer retrying
//! with its own retrier, C failing or overloaded. Without propagation the layers multiply
//! each other's attempts (n^d at C) and keep working on requests whose user gave up; the
//! rules of docs/propagation.md take that away one by one. Each rule is the core's:
//! a hop's policy is [`retryrs::propagation::constrain`]ed by what the request carried
//! (the time left, whether it was a retry), a server refuses a request that arrives with
//! nothing left through [`retryrs::propagation::RefusalCap`] (the upward rule and its cap),
//! and a "don't retry" answer is [`Verdict::DontRetry`] to the engine. Nothing here
//! computes a margin, a deadline or a backoff.
//!
//! The model, in microseconds:
//! - Every hop takes [`HOP_US`] each way. A and B do no work of their own: each request
//!   they receive is one call of their retrier to the next service. C does the work.
//! - Each layer (the user's client, A, B) retries by the same policy ([`layer_policy`]):
//!   5 attempts, backing off 2 ms x2 with full jitter (an RPC stack's quick retries), the
//!   user's call with a 2 s deadline, A's and B's with retryrs's default 15 s. No attempt
//!   timeout: an attempt ends when its answer comes or its call's deadline passes, and an
//!   abandoned attempt goes on downstream (nothing cancels it).
//! - **C always failing**: C answers every request with a 503 after 1 ms of work.
//!   **C overloaded**: C has [`C_WORKERS`] workers and a bounded queue; a request that
//!   finds the queue full gets a 503 at once; a request takes a fixed amount of work, and
//!   during the overload `factor` times that ([`ChainWorld::overloaded`]: FLEET.md's run
//!   serves 125% of the users' rate, and half that during the overload).
//! - The rows add the rules one at a time: the deadline (each hop's call ends by the time
//!   its caller gives up, less the margin; a server refuses a request that arrives, or
//!   reaches a worker, with nothing left), the downward rule (a request that is a retry
//!   makes one attempt at the next layer and passes "retry" on), pushback (a layer whose
//!   own retries ran out answers "don't retry", which its caller does not retry), and a
//!   sidecar at every hop that retries a failed attempt once at once (as Envoy's default
//!   route retry does), honouring "don't retry" and marking its retry as one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use retryrs::propagation::{constrain, RefusalCap, Upward};
use retryrs::{Call, Decision, Jitter, Policy, Resume, Stop, Verdict};

use crate::rng::call_seed;

/// One way across a hop, µs.
pub const HOP_US: u64 = 1_000;
/// C's workers.
pub const C_WORKERS: usize = 8;
/// Attempts per layer.
pub const ATTEMPTS: u64 = 5;
/// The user's deadline, ms.
pub const USER_DEADLINE_MS: f64 = 2_000.0;
/// Retrying layers between the user and C (the user's client, A, B).
pub const LAYERS: u32 = 3;

/// Which propagation rules the fleet runs with (each row adds one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// Every layer on its own.
    None,
    /// The deadline travels (and the upward rule refuses expired requests).
    Deadline,
    /// + the downward rule.
    Downward,
    /// + pushback.
    Pushback,
    /// + a sidecar retrying once per hop.
    Sidecar,
}

impl Rules {
    /// The rows, in order.
    pub const ALL: [Rules; 5] = [Rules::None, Rules::Deadline, Rules::Downward, Rules::Pushback, Rules::Sidecar];

    /// The name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Rules::None => "no propagation",
            Rules::Deadline => "deadline only",
            Rules::Downward => "+ downward rule",
            Rules::Pushback => "+ pushback",
            Rules::Sidecar => "+ a sidecar retrying once per hop",
        }
    }

    fn deadline(self) -> bool {
        self != Rules::None
    }

    fn downward(self) -> bool {
        matches!(self, Rules::Downward | Rules::Pushback | Rules::Sidecar)
    }

    fn pushback(self) -> bool {
        matches!(self, Rules::Pushback | Rules::Sidecar)
    }

    fn sidecar(self) -> bool {
        self == Rules::Sidecar
    }
}

/// What C does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf {
    /// Fails every request (1 ms of work, no capacity limit).
    Failing,
    /// Serves requests of `work_us` on [`C_WORKERS`] workers, `factor` times slower from
    /// `from_ms` to `until_ms`; lets `queue` requests wait.
    Overloaded {
        /// A request's work, µs.
        work_us: u64,
        /// How much slower the work is during the overload.
        factor: u64,
        /// Requests C lets wait.
        queue: usize,
        /// When the overload starts, ms.
        from_ms: u64,
        /// When it ends, ms.
        until_ms: u64,
    },
}

/// The world of one run.
#[derive(Debug, Clone, Copy)]
pub struct ChainWorld {
    /// User requests.
    pub users: usize,
    /// Between two user requests, µs.
    pub gap_us: u64,
    /// What C does.
    pub leaf: Leaf,
    /// The upward rule without its cap (every expired request refused): to show what
    /// the cap costs.
    pub uncapped: bool,
}

impl ChainWorld {
    /// `users` requests 100 ms apart, C always failing.
    pub fn failing(users: usize) -> ChainWorld {
        ChainWorld { users, gap_us: 100_000, leaf: Leaf::Failing, uncapped: false }
    }

    /// `users` requests, 400 a second, to a C that serves 500 a second (16 ms of work on
    /// 8 workers, a queue of 1,000), `factor` times slower during `overload` (ms).
    pub fn overloaded(users: usize, factor: u64, overload: std::ops::Range<u64>) -> ChainWorld {
        let leaf =
            Leaf::Overloaded { work_us: 16_000, factor, queue: 1_000, from_ms: overload.start, until_ms: overload.end };
        ChainWorld { users, gap_us: 2_500, leaf, uncapped: false }
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct ChainRun {
    /// The rules.
    pub rules: Rules,
    /// Requests C received, per user request.
    pub c_attempts: f64,
    /// The most C received for one user request.
    pub c_attempts_max: u64,
    /// C's work (worker time) spent after the request's user had given up, as a share of
    /// all its work.
    pub wasted: f64,
    /// User requests that succeeded.
    pub success: f64,
    /// p99 of the user's wait (until success or giving up), ms.
    pub p99_ms: f64,
    /// From the end of the overload to the first whole second whose user requests all but
    /// 5% succeed, s (`None`: never in the run; no overload: `None`).
    pub recovery_s: Option<f64>,
}

/// The retry policy of a layer (`user`: the user's client, with its 2 s deadline).
pub fn layer_policy(user: bool, seed: u64) -> Policy {
    let builder = Policy::builder()
        .max_attempts(ATTEMPTS)
        .initial_delay_ms(2.0)
        .multiplier(2.0)
        .jitter(Jitter::Full)
        .seed(Some(seed));
    let builder = if user { builder.deadline_ms(Some(USER_DEADLINE_MS)) } else { builder };
    builder.build().expect("a valid layer policy")
}

/// A request on its way to a service (A = 1, B = 2, C = 3).
struct Request {
    to: u8,
    /// The call that sent it.
    from: u32,
    user: u32,
    /// When its caller gives up, if the deadline travels.
    deadline: Option<u64>,
    /// Whether the receiver must apply the downward rule.
    is_retry: bool,
    /// Whether the hop's sidecar may still retry it once.
    sidecar: bool,
    /// C: when a worker took it.
    since: u64,
}

/// A retrying call of one layer for one request (or for the user).
struct Caller {
    engine: Call<Arc<Policy>>,
    /// The request it serves (`None`: the user's own call).
    serves: Option<u32>,
    user: u32,
    /// The request in flight, if any.
    current: Option<u32>,
    /// Whether the request it serves came as a retry (passed on by the downward rule).
    under_retry: bool,
}

#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Ev {
    /// A request reaches its service.
    Arrive(u32),
    /// A reply to request r reaches its caller: (r, ok, don't retry).
    Reply(u32, bool, bool),
    /// C finished request r's work.
    Served(u32),
    /// Call c's backoff is over.
    Wake(u32),
    /// Call c's deadline passed (its attempt in flight is abandoned).
    Deadline(u32),
}

struct Chain {
    rules: Rules,
    world: ChainWorld,
    seed: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    order: u64,
    requests: Vec<Request>,
    callers: Vec<Caller>,
    caps: [RefusalCap; 4],
    /// C's free workers and waiting requests.
    free: usize,
    waiting: VecDeque<u32>,
    /// Per user: when it started, when it ended (ok or not), C's requests.
    user_start: Vec<u64>,
    user_end: Vec<Option<(u64, bool)>>,
    c_requests: Vec<u64>,
    work_total: u64,
    work_wasted: u64,
    seeds: u64,
}

impl Chain {
    fn at(&mut self, t: u64, ev: Ev) {
        self.order += 1;
        self.queue.push(Reverse((t, self.order, ev)));
    }

    fn us(t: u64) -> Duration {
        Duration::from_micros(t)
    }

    /// Starts a call of layer `layer` (0: the user) at `now`.
    fn start_call(&mut self, layer: u8, serves: Option<u32>, user: u32, now: u64) {
        self.seeds += 1;
        let base = layer_policy(layer == 0, call_seed(self.seed, self.seeds));
        let (left, is_retry) = match serves {
            Some(r) => {
                let req = &self.requests[r as usize];
                (req.deadline.map(|d| Self::us(d.saturating_sub(now))), req.is_retry)
            }
            None => (None, false),
        };
        let policy = constrain(&base, left, is_retry && self.rules.downward()).unwrap_or(base);
        let c = self.callers.len() as u32;
        self.callers.push(Caller {
            engine: Call::start(Arc::new(policy), Self::us(now)),
            serves,
            user,
            current: None,
            under_retry: is_retry && self.rules.downward(),
        });
        self.send(c, layer + 1, now);
    }

    /// Call `c` sends its current attempt to service `to` at `now`.
    fn send(&mut self, c: u32, to: u8, now: u64) {
        let caller = &self.callers[c as usize];
        let remaining = caller.engine.remaining(Self::us(now)).expect("attempting");
        if remaining.is_some_and(|d| d.is_zero()) {
            // Nothing left: the attempt is not sent (its bound has already passed).
            let decision = self.callers[c as usize]
                .engine
                .record_timeout(Verdict::TRANSIENT, Self::us(now), &mut |_| {})
                .expect("attempting");
            self.decided(c, decision, now);
            return;
        }
        let deadline = remaining.map(|d| now + d.as_micros() as u64);
        let is_retry = self.rules.downward() && (caller.engine.attempt() > 1 || caller.under_retry);
        let r = self.requests.len() as u32;
        self.requests.push(Request {
            to,
            from: c,
            user: caller.user,
            deadline: deadline.filter(|_| self.rules.deadline()),
            is_retry,
            sidecar: self.rules.sidecar(),
            since: 0,
        });
        self.callers[c as usize].current = Some(r);
        self.at(now + HOP_US, Ev::Arrive(r));
        if let Some(d) = deadline {
            self.at(d, Ev::Deadline(c));
        }
    }

    /// The upward rule at service `to` for request `r` at `now`: `true` to run it.
    fn admits(&mut self, r: u32, now: u64) -> bool {
        let req = &self.requests[r as usize];
        let Some(deadline) = req.deadline else { return true };
        self.caps[req.to as usize].judge(deadline <= now, false, Self::us(now)) != Upward::Refuse
    }

    fn reply(&mut self, r: u32, ok: bool, dont_retry: bool, now: u64) {
        self.at(now + HOP_US, Ev::Reply(r, ok, dont_retry));
    }

    fn leaf_work_us(&self, now: u64) -> u64 {
        match self.world.leaf {
            Leaf::Failing => 1_000,
            Leaf::Overloaded { from_ms, until_ms, factor, work_us, .. }
                if (from_ms * 1000..until_ms * 1000).contains(&now) =>
            {
                work_us * factor
            }
            Leaf::Overloaded { work_us, .. } => work_us,
        }
    }

    fn c_begin(&mut self, r: u32, now: u64) {
        if !self.admits(r, now) {
            self.reply(r, false, true, now);
            self.c_next(now);
            return;
        }
        self.free -= 1;
        self.requests[r as usize].since = now;
        let work = self.leaf_work_us(now);
        self.at(now + work, Ev::Served(r));
    }

    fn c_next(&mut self, now: u64) {
        while self.free > 0 {
            let Some(r) = self.waiting.pop_front() else { return };
            self.c_begin(r, now);
        }
    }

    fn arrive(&mut self, r: u32, now: u64) {
        let (to, user) = (self.requests[r as usize].to, self.requests[r as usize].user);
        if to < 3 {
            if self.admits(r, now) {
                self.start_call(to, Some(r), user, now);
            } else {
                self.reply(r, false, true, now);
            }
            return;
        }
        self.c_requests[user as usize] += 1;
        match self.world.leaf {
            Leaf::Failing => {
                if self.admits(r, now) {
                    self.requests[r as usize].since = now;
                    self.at(now + self.leaf_work_us(now), Ev::Served(r));
                } else {
                    self.reply(r, false, true, now);
                }
            }
            Leaf::Overloaded { queue, .. } => {
                if self.free > 0 {
                    self.c_begin(r, now);
                } else if self.waiting.len() < queue {
                    self.waiting.push_back(r);
                } else {
                    self.reply(r, false, false, now);
                }
            }
        }
    }

    fn served(&mut self, r: u32, now: u64) {
        let (since, user) = (self.requests[r as usize].since, self.requests[r as usize].user as usize);
        let work = now - since;
        self.work_total += work;
        if let Some((end, _)) = self.user_end[user] {
            self.work_wasted += now.saturating_sub(end.max(since));
        }
        let ok = matches!(self.world.leaf, Leaf::Overloaded { .. });
        self.reply(r, ok, false, now);
        if ok {
            self.free += 1;
            self.c_next(now);
        }
    }

    /// A reply to request `r` reaches the call that sent it.
    fn on_reply(&mut self, r: u32, ok: bool, dont_retry: bool, now: u64) {
        let c = self.requests[r as usize].from;
        if self.callers[c as usize].current != Some(r) {
            return; // an abandoned attempt's late answer
        }
        let dont_retry = dont_retry && self.rules.pushback();
        if !ok && !dont_retry && self.requests[r as usize].sidecar {
            // The hop's sidecar retries once, at once, marking it a retry.
            let req = &self.requests[r as usize];
            let resend = Request {
                to: req.to,
                from: c,
                user: req.user,
                deadline: req.deadline,
                is_retry: self.rules.downward(),
                sidecar: false,
                since: 0,
            };
            let r2 = self.requests.len() as u32;
            self.requests.push(resend);
            self.callers[c as usize].current = Some(r2);
            self.at(now + HOP_US, Ev::Arrive(r2));
            return;
        }
        self.callers[c as usize].current = None;
        let verdict = match (ok, dont_retry) {
            (true, _) => Verdict::Success,
            (false, true) => Verdict::DontRetry,
            (false, false) => Verdict::TRANSIENT,
        };
        let decision = self.callers[c as usize].engine.record(verdict, Self::us(now), &mut |_| {}).expect("attempting");
        self.decided(c, decision, now);
    }

    /// The engine's decision after call `c`'s attempt: wait and try again, or stop.
    fn decided(&mut self, c: u32, decision: Decision, now: u64) {
        match decision {
            Decision::Retry(d) => self.at(now + d.as_micros() as u64, Ev::Wake(c)),
            Decision::Stop(stop) => self.finish(c, stop, now),
        }
    }

    fn finish(&mut self, c: u32, stop: Stop, now: u64) {
        let caller = &self.callers[c as usize];
        let ok = stop == Stop::Success;
        match caller.serves {
            // A layer whose own retries ran out says "don't retry" (pushback).
            Some(r) => self.reply(r, ok, !ok, now),
            None => {
                let user = caller.user as usize;
                self.user_end[user] = Some((now, ok));
            }
        }
    }

    fn wake(&mut self, c: u32, now: u64) {
        let resume = self.callers[c as usize].engine.after_wait(Self::us(now), &mut |_| {}).expect("waiting");
        match resume {
            Resume::Attempt(_) => {
                let layer = self.layer_of(c);
                self.send(c, layer + 1, now);
            }
            Resume::Stop(stop) => self.finish(c, stop, now),
        }
    }

    fn layer_of(&self, c: u32) -> u8 {
        match self.callers[c as usize].serves {
            Some(r) => self.requests[r as usize].to,
            None => 0,
        }
    }

    fn deadline(&mut self, c: u32, now: u64) {
        let caller = &mut self.callers[c as usize];
        if caller.current.is_none() || caller.engine.outcome().is_some() {
            return; // no attempt in flight: the engine's own wait ends at the deadline
        }
        let remaining = caller.engine.remaining(Self::us(now)).expect("attempting");
        if remaining.is_some_and(|d| !d.is_zero()) {
            return;
        }
        // The attempt in flight is abandoned; its answer, if it comes, is dropped.
        caller.current = None;
        let decision =
            caller.engine.record_timeout(Verdict::TRANSIENT, Self::us(now), &mut |_| {}).expect("attempting");
        self.decided(c, decision, now);
    }
}

/// Runs the chain under `rules`.
pub fn run(world: &ChainWorld, rules: Rules, seed: u64) -> ChainRun {
    let mut chain = Chain {
        rules,
        world: *world,
        seed,
        queue: BinaryHeap::new(),
        order: 0,
        requests: vec![],
        callers: vec![],
        caps: std::array::from_fn(|_| match world.uncapped {
            true => RefusalCap::new(1.0, Duration::from_secs(10)),
            false => RefusalCap::default(),
        }),
        free: C_WORKERS,
        waiting: VecDeque::new(),
        user_start: (0..world.users as u64).map(|u| u * world.gap_us).collect(),
        user_end: vec![None; world.users],
        c_requests: vec![0; world.users],
        work_total: 0,
        work_wasted: 0,
        seeds: 0,
    };
    let mut next_user = 0usize;
    loop {
        let next_start = chain.user_start.get(next_user).copied();
        let next_event = chain.queue.peek().map(|Reverse((t, _, _))| *t);
        match (next_start, next_event) {
            (Some(s), e) if e.is_none_or(|e| s < e) => {
                chain.start_call(0, None, next_user as u32, s);
                next_user += 1;
            }
            (_, Some(_)) => {
                let Reverse((now, _, ev)) = chain.queue.pop().expect("peeked");
                match ev {
                    Ev::Arrive(r) => chain.arrive(r, now),
                    Ev::Reply(r, ok, dont) => chain.on_reply(r, ok, dont, now),
                    Ev::Served(r) => chain.served(r, now),
                    Ev::Wake(c) => chain.wake(c, now),
                    Ev::Deadline(c) => chain.deadline(c, now),
                }
            }
            _ => break,
        }
    }
    summarise(&chain, rules)
}

fn summarise(chain: &Chain, rules: Rules) -> ChainRun {
    let users = chain.user_start.len();
    let mut waits: Vec<f64> = chain
        .user_end
        .iter()
        .zip(&chain.user_start)
        .map(|(end, start)| (end.expect("every user's call ends").0 - start) as f64 / 1000.0)
        .collect();
    waits.sort_by(f64::total_cmp);
    let ok = chain.user_end.iter().filter(|e| e.is_some_and(|(_, ok)| ok)).count();
    let recovery_s = match chain.world.leaf {
        Leaf::Failing => None,
        Leaf::Overloaded { until_ms, .. } => {
            let per_s = (1_000_000 / chain.world.gap_us).max(1) as usize;
            let first = (until_ms as usize * per_s) / 1000;
            chain.user_end[first.min(users)..].chunks(per_s).position(|sec| {
                sec.len() == per_s && sec.iter().filter(|e| e.is_some_and(|(_, ok)| ok)).count() * 20 >= per_s * 19
            })
        }
        .map(|s| s as f64),
    };
    ChainRun {
        rules,
        c_attempts: chain.c_requests.iter().sum::<u64>() as f64 / users as f64,
        c_attempts_max: chain.c_requests.iter().copied().max().unwrap_or(0),
        wasted: chain.work_wasted as f64 / chain.work_total.max(1) as f64,
        success: ok as f64 / users as f64,
        p99_ms: waits[((0.99 * users as f64).ceil() as usize).clamp(1, users) - 1],
        recovery_s,
    }
}

/// The expected attempts at C when it always fails, by the rules' arithmetic (the
/// issue's n^d, n + (d-1)(n-1), n): what the table's simulated counts are checked against.
pub fn expected_when_failing(rules: Rules) -> Option<u64> {
    let (n, d) = (ATTEMPTS, u64::from(LAYERS));
    match rules {
        Rules::None | Rules::Deadline => Some(n.pow(d as u32)),
        Rules::Downward => Some(n + (d - 1) * (n - 1)),
        Rules::Pushback => Some(n),
        Rules::Sidecar => None,
    }
}
