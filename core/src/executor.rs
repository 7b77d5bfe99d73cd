//! The blocking executor: runs a closure until the engine says stop, sleeping between
//! attempts on a [`Clock`], waking at once on a [`CancelToken`].

// Without the `blocking` feature the run loop is compiled out and only the re-exported types
// (error.rs, hooks.rs, history.rs, run.rs) are used: its imports then go unused.
#![cfg_attr(not(feature = "blocking"), allow(unused_imports))]

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::attempt::Attempt;
use crate::breaker::CircuitBreaker;
use crate::cancel::CancelToken;
use crate::clock::{testing, Clock, SystemClock};
use crate::engine::{Call, Decision, Resume, Stop, Verdict};
use crate::event::Event;
use crate::judge::Judged;
use crate::policy::Policy;
use crate::stats::{CallTally, Stats, StatsSnapshot};

mod error;
mod history;
mod hooks;
mod run;

pub use error::{Cause, RetryError, HISTORY};
pub(crate) use history::History;
pub(crate) use hooks::plan;
pub use hooks::{BeforeRetry, Failed, RetryContext, ValueVerdict, WaitHook};
pub use run::{Listener, ResultPredicate, Run};
pub(crate) use run::{Quiet, Tell};

/// A policy ready to run closures. Immutable: share it freely between threads (it is an
/// `Arc` inside); each call keeps its own state.
/// A clone is the same retrier: it shares the policy and the [statistics](Retrier::stats).
/// Its Debug shows the policy, the statistics and, when `max_attempts` cannot fit the
/// deadline, the [`DeadlineHint`](crate::policy::DeadlineHint).
#[derive(Clone)]
pub struct Retrier {
    policy: Arc<Policy>,
    stats: Arc<Stats>,
    /// [`Policy::starts_lazily`], read once here: the policy behind the `Arc` cannot
    /// change, and the happy path then tests one flag of the retrier instead of six
    /// fields of the policy behind a pointer. Both executors, blocking and async, read it.
    lazy: bool,
    /// [`Retrier::starts_on_coarse_clock`], read once here for the same reason.
    coarse: bool,
    /// Attempt 1's bound ([`Attempt::first`]), computed once here for the same reason.
    first_bound: Option<Duration>,
}

impl fmt::Debug for Retrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Retrier");
        d.field("policy", &self.policy).field("stats", &self.stats.snapshot());
        if let Some(hint) = self.policy.deadline_hint() {
            d.field("deadline_hint", &format_args!("{hint}"));
        }
        d.finish()
    }
}

impl From<Policy> for Retrier {
    fn from(policy: Policy) -> Self {
        Retrier::from_arc(Arc::new(policy))
    }
}

impl Retrier {
    /// A retrier over `policy`.
    pub fn new(policy: Policy) -> Self {
        policy.into()
    }

    /// A retrier over a shared policy.
    pub fn from_arc(policy: Arc<Policy>) -> Self {
        let coarse = !policy.starts_lazily()
            && policy.tolerates_coarse_start()
            && policy.budget.is_none()
            && policy.hedge.is_none();
        let first_bound = policy.attempt_deadline(Duration::ZERO, Duration::ZERO);
        Retrier { lazy: policy.starts_lazily(), coarse, first_bound, policy, stats: Arc::default() }
    }

    /// What this retrier's calls (and its clones') did so far: calls, attempts, retries,
    /// outcomes, exhaustions by reason. A blocking call without a listener or a hook
    /// ([`Retrier::run`]) is counted whole when it ends (also when it unwinds): read from
    /// another thread meanwhile, its attempts so far do not show yet.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// The counters [`Retrier::stats`] reads (for a host that drives calls itself).
    pub fn stats_counters(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The same retrier (its statistics shared) whose policy obeys `ambient`, the context
    /// of the request being handled ([`crate::propagation::constrain`]: the deadline
    /// shortened to the ambient one minus the margin, and under an inbound retry one
    /// attempt and no hedges); `None` when the policy already obeys it. The executors
    /// ask this of this thread's context themselves; a host that keeps its context
    /// elsewhere (a contextvar, AsyncLocalStorage) asks it with its own.
    pub fn under(&self, ambient: &crate::propagation::Ambient) -> Option<Retrier> {
        let policy = ambient.constrain_at(&self.policy, crate::propagation::now())?;
        // The same stats: calls under a request's context count with the retrier's own.
        Some(Retrier { stats: self.stats.clone(), ..Retrier::from_arc(Arc::new(policy)) })
    }

    /// [`Retrier::under`] this thread's ambient context ([`crate::propagation::current`]),
    /// if there is one: one flag test in a process that never propagates. What every
    /// executor (and a binding's own call loop) asks at a call's start.
    #[inline(always)]
    pub fn under_current(&self) -> Option<Retrier> {
        if !crate::propagation::in_use() {
            return None;
        }
        self.under_current_context()
    }

    #[cold]
    #[inline(never)]
    fn under_current_context(&self) -> Option<Retrier> {
        self.under(&crate::propagation::current()?)
    }

    /// The policy a call starting now runs under, when this thread's ambient context
    /// constrains it (`None`: the retrier's own). What the executors ask at a call's
    /// start once [`crate::propagation::in_use`]; out of line, and shared (an `Arc`), so
    /// an async call's future grows by a pointer only.
    #[cold]
    #[inline(never)]
    pub(crate) fn policy_in_context(&self) -> Option<Arc<Policy>> {
        let ambient = crate::propagation::current()?;
        ambient.constrain_at(&self.policy, crate::propagation::now()).map(Arc::new)
    }

    /// [`Policy::starts_lazily`] of this retrier's policy: whether an executor without
    /// listener, hooks, cancel token or result predicate may run attempt 1 before it
    /// starts the engine.
    #[inline]
    pub(crate) fn starts_lazily(&self) -> bool {
        self.lazy
    }

    /// Whether [`Retrier::run`] may run attempt 1 before it starts the engine although
    /// the policy bounds its attempts, reading only the call's start, from the coarse
    /// clock: the bounds are whole seconds or more ([`Policy::tolerates_coarse_start`]:
    /// they end the coarse clock's lag early, never late), there is no breaker to ask nor budget
    /// to tell, and it does not hedge. Attempt 1's bound is the policy's formula at that
    /// start; a failure starts the engine at the same start and is judged as attempt 1
    /// (as the C host does).
    #[inline]
    pub(crate) fn starts_on_coarse_clock(&self) -> bool {
        self.coarse
    }

    /// Attempt 1's bound, the same whenever a call starts ([`Attempt::first`]).
    #[inline]
    pub(crate) fn first_bound(&self) -> Option<Duration> {
        self.first_bound
    }

    /// Runs `op` until it succeeds or the engine stops it; `classify` turns each error
    /// into a verdict. Uses the real clock, or the virtual one while the testing switch is
    /// on.
    ///
    /// `op` gets the [`Attempt`]: its number and its bound (the time left before the
    /// deadline, or the smaller attempt timeout). A blocking attempt cannot be
    /// interrupted: pass `remaining` to its I/O so that it ends in time.
    ///
    /// **It blocks the thread**, during the attempts and the waits between them
    /// (`std::thread::sleep`). Never call it on an async runtime's thread: a
    /// current-thread runtime stops running every other task until the call ends. In
    /// async code use [`Retrier::run_async`](crate::async_executor) (feature `tokio`) or
    /// [`Retrier::run_async_with`] on any runtime's timer.
    ///
    /// ```
    /// use retryrs::{Attempt, Policy, Retrier, Verdict};
    /// use std::time::Duration;
    /// # let _virtual_time = retryrs::testing::scoped();
    /// let retrier = Retrier::new(
    ///     Policy::builder().deadline(Some(Duration::from_secs(2))).attempt_timeout(Some(Duration::from_millis(500))).build().unwrap(),
    /// );
    /// let got = retrier.run(
    ///     |attempt: &Attempt| {
    ///         // e.g. stream.set_read_timeout(attempt.remaining)
    ///         assert_eq!(attempt.remaining, Some(Duration::from_millis(500)));
    ///         if attempt.number < 2 { Err("503") } else { Ok(attempt.number) }
    ///     },
    ///     |_err| Verdict::TRANSIENT,
    /// );
    /// assert_eq!(got.unwrap(), 2);
    /// ```
    #[cfg(feature = "blocking")]
    #[inline]
    pub fn run<T, E>(
        &self,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        // Once propagation is in use, an ambient context may bound the call: the engine
        // then starts first and constrains its policy (execute_from), out of line.
        if crate::propagation::in_use() {
            return self.run_in_context(op, classify);
        }
        let mut op = op;
        // Inlined into the caller: with a policy that has nothing to tell or bound, the
        // happy path is the attempt itself (the engine starts at the first failure).
        let first = match self.lazy {
            true => match op(&Attempt::new(1, Duration::ZERO, None)) {
                Ok(value) => {
                    // No Call, so no Success event to count: the stats are told here.
                    self.stats.count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => Some(First { error, started: None }),
            },
            // Bounds of whole seconds (the default policy): the happy path is one coarse
            // clock read and the attempt (the engine starts at the first failure, at
            // this start). Under virtual time the executor starts as usual.
            false if self.coarse && !testing::any_on() => {
                let started = SystemClock.now_coarse();
                match op(&Attempt::first(started, self.first_bound())) {
                    Ok(value) => {
                        self.stats.count_first_attempt_success_here();
                        return Ok(value);
                    }
                    Err(error) => Some(First { error, started: Some(started) }),
                }
            }
            false => None,
        };
        self.run_from(first, op, classify)
    }

    /// The rest of [`Retrier::run`] once attempt 1 failed, or when it did not start
    /// lazily: out of line, so that the caller's inlined happy path stays small.
    #[cfg(feature = "blocking")]
    #[inline(never)]
    fn run_from<T, E>(
        &self,
        first: Option<First<E>>,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        // No listener, statically: the engine's events reach only the stats, which read
        // their kind, so none is built (a call with two zero-delay failures builds five).
        let options = Options { cancel: None, clock: None, result_predicate: None, wait: None, before_retry: None };
        let got = match self.lazy {
            // A lazy policy reads no time: the engine is fed a constant, folded away (and
            // its call has no start to pass on, which the compiler then knows too).
            true => {
                let first = first.map(|f| First { error: f.error, started: None });
                self.execute_from::<_, _, _, false>(options, Quiet, first, op, classify)
            }
            false => self.execute_from::<_, _, _, true>(options, Quiet, first, op, classify),
        };
        got.map_err(RetryError::without_value)
    }

    /// [`Retrier::run`] once propagation is in use: through [`Retrier::execute`], whose
    /// engine starts before attempt 1 and constrains the policy by this thread's ambient
    /// context, if any (another instance of the executor than `run`'s, so `run`'s own
    /// stays inlined where it was).
    #[cfg(feature = "blocking")]
    #[cold]
    #[inline(never)]
    fn run_in_context<T, E>(
        &self,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E>> {
        self.execute(Run::default(), op, classify).map_err(RetryError::without_value)
    }

    /// [`Retrier::run`] with the options of [`Run`]: a listener, a cancel token, a clock,
    /// and a result predicate that can turn a returned value into a failure.
    ///
    /// ```
    /// use retryrs::{Policy, Retrier, Run, ValueVerdict, Verdict, RetryError};
    /// # let _virtual_time = retryrs::testing::scoped();
    /// let retrier = Retrier::new(Policy::builder().max_attempts(3).build().unwrap());
    /// let got = retrier.execute(
    ///     Run::default().result_predicate(|status: &u16| (*status == 503).into()),
    ///     |_attempt: &retryrs::Attempt| Ok::<u16, std::io::Error>(503),
    ///     |_err| Verdict::TRANSIENT,
    /// );
    /// assert!(matches!(got, Err(RetryError::Exhausted { attempts: 3, value: Some(503), .. })));
    /// ```
    #[cfg(feature = "blocking")]
    pub fn execute<T, E>(
        &self,
        run: Run<'_, E, T>,
        op: impl FnMut(&Attempt) -> Result<T, E>,
        classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>> {
        let Run { listener, cancel, clock, result_predicate, wait, before_retry } = run;
        let options = Options { cancel, clock, result_predicate, wait, before_retry };
        self.execute_from::<_, _, _, true>(options, listener, None, op, classify)
    }

    /// [`Retrier::execute`], where `first` is attempt 1's error if the caller already ran
    /// it (a lazy start: the policy has nothing to tell or bound).
    ///
    /// `MAY_READ_TIME` false is for a call whose time matters to nothing (a policy that
    /// reads no time, no listener, no hooks): every time given to the engine is then the
    /// constant zero, and the compiler folds the engine's time arithmetic away.
    #[cfg(feature = "blocking")]
    // Always inlined into its one caller per instance: in `run_from` the options are
    // constants (no hook, no predicate), and what they switch off folds away.
    #[inline(always)]
    fn execute_from<T, E, L: Tell<E, T>, const MAY_READ_TIME: bool>(
        &self,
        options: Options<'_, E, T>,
        mut listener: L,
        mut first: Option<First<E>>,
        mut op: impl FnMut(&Attempt) -> Result<T, E>,
        mut classify: impl FnMut(&E) -> Verdict,
    ) -> Result<T, RetryError<E, T>> {
        // Taken apart at once: each option is then dropped where it ends, in line (the
        // whole `Run`, dropped at each return, was a call).
        let Options { cancel, clock, mut result_predicate, wait, before_retry } = options;
        // Inside a request's ambient context (propagation), its constraint applies (a call
        // that reads no time is not started here once propagation is in use: see run).
        let constrained = match MAY_READ_TIME && crate::propagation::in_use() {
            true => self.policy_in_context(),
            false => None,
        };
        let policy: &Policy = constrained.as_deref().unwrap_or(&self.policy);
        let virtual_clock;
        // The real clock's zero wait without a cancel token is no wait at all: skipped
        // below without a call (any other clock is told of every wait).
        let mut real_clock = false;
        // A call started on the real clock (attempt 1 already ran) stays on it.
        let started_early = first.as_ref().and_then(|f| f.started);
        let clock: &dyn Clock = match clock {
            Some(clock) => clock,
            None if started_early.is_some() => {
                real_clock = true;
                &SystemClock
            }
            None => match testing::clock() {
                Some(v) => {
                    virtual_clock = v;
                    &virtual_clock
                }
                None => {
                    real_clock = true;
                    &SystemClock
                }
            },
        };
        if let Some(why) = crate::hedge::one_at_a_time_refusal(policy) {
            return Err(RetryError::Refused(format!(
                "{why}; a blocking Retrier::run/execute cannot abandon an attempt: hedge from async code with Retrier::run_async (or retryrs::hedge::HedgeCall)"
            )));
        }
        let has_listener = listener.present();
        let listener = &mut listener;
        // Hooks see the time since the call began, too.
        let hooked = wait.is_some() || before_retry.is_some();
        // The whole call runs on this thread: its stats cells are found once. Unless a
        // listener or a hook may run during the call (statically: `L::OBSERVED`), nothing
        // can read them before it ends (as in the C host): its events are tallied in place
        // and added once at its end, also on an unwind (Counted's drop). The events are
        // then never built: the tally reads only their kind and reason, constants at each
        // step.
        debug_assert!(L::OBSERVED || !hooked, "a call without listener has no hooks (run_from)");
        let local = if L::OBSERVED { Some(self.stats.local()) } else { None };
        let mut counted = Counted { stats: &self.stats, tally: CallTally::default(), batched: !L::OBSERVED };
        let tally = &mut counted.tally;
        let mut notify = |event: &Event<'_>, failed: Option<Failed<'_, E, T>>| {
            if L::OBSERVED {
                if let Some(stats) = &local {
                    stats.observe(event);
                }
                listener.tell(event, failed);
            } else {
                debug_assert!(event.attempts_abandoned == 0, "a blocking call never hedges");
                tally.observe(event);
            }
        };
        if cancel.is_some_and(CancelToken::is_cancelled) {
            crate::engine::cancelled_before_start(policy, &mut |e| notify(e, None));
            return Err(RetryError::Cancelled { attempts: 0, errors: Vec::new(), value: None, timed_out: None });
        }
        // Time matters only to the attempts' bounds (a deadline or an attempt timeout), to
        // a breaker or ratio budget, to events and to hooks: with none, the engine is fed
        // a constant and the clock is never read.
        debug_assert!(MAY_READ_TIME || !(policy.reads_time() || has_listener || hooked));
        let timed = MAY_READ_TIME && (policy.reads_time() || has_listener || hooked);
        let read_time = || if timed { clock.now() } else { Duration::ZERO };
        // The happy path of a policy with nothing to tell or bound (no clock needed, no
        // budget or breaker to inform, no listener, no result predicate): attempt 1 runs
        // before the engine starts (a lazy start, as the other hosts do), and a value
        // returns at once. A failure starts the engine and is judged as attempt 1.
        if first.is_none() && !timed && policy.budget.is_none() && result_predicate.is_none() {
            match op(&Attempt::new(1, Duration::ZERO, None)) {
                Ok(value) => {
                    self.stats.count_first_attempt_success_here();
                    return Ok(value);
                }
                Err(error) => first = Some(First { error, started: None }),
            }
        }
        // Bounds of whole seconds and no one to show the elapsed time: the coarse clock
        // may start the call (its bounds then end the coarse clock's lag early, never late).
        let start = match started_early {
            Some(started) => started,
            None if timed && !has_listener && !hooked && policy.tolerates_coarse_start() => clock.now_coarse(),
            None => read_time(),
        };
        // A panic (the attempt, classify, a listener) unwinds through the guard, which
        // gives a breaker's probe back.
        let mut guard = crate::async_executor::Unreported(Call::start_with(policy, start, &mut |e| notify(e, None)));
        let call = &mut guard.0;
        if let Some(refusal) = call.refusal() {
            return Err(RetryError::circuit_open(refusal));
        }
        // One clock read per attempt: a failure's time is read only when a decision needs
        // it (failure_timed), and it is also the next attempt's start after a zero delay;
        // after a real wait the clock is read again (the deadline is checked after it).
        let failure_timed = MAY_READ_TIME && (has_listener || hooked || policy.failure_reads_time());
        let attempt_start = Cell::new(call.started_at());
        let failed_at = Cell::new(None);
        let failure_now = || {
            let now = if failure_timed { clock.now() } else { attempt_start.get() };
            failed_at.set(Some(now).filter(|_| failure_timed));
            now
        };
        let success_timed =
            MAY_READ_TIME && (has_listener || policy.breaker().is_some_and(CircuitBreaker::times_successes));
        // The happy path allocates nothing, nor a call that fails up to INLINE times.
        let mut history = History::new();
        let (mut wait, mut before) = (wait, before_retry);
        let mut hooks = |ctx: &RetryContext<'_, E, T>| plan(ctx, before.as_deref_mut(), wait.as_deref_mut());
        // The real clock's zero wait without a cancel token is skipped (see `real_clock`).
        let zero_is_no_wait = real_clock && cancel.is_none();
        // Attempt 1's outcome (a lazy start's failure, or run now), then each next attempt's
        // at the loop's end: the loop does not ask again whether a lazy start's failure is
        // pending.
        let mut outcome = match first.take() {
            Some(first) => Err(first.error),
            None => op(&Attempt::new(call.attempt(), attempt_start.get(), call.attempt_bound())),
        };
        loop {
            let started = call.started_at();
            // Only the Success event (and a breaker) needs its time: else skip the read.
            let success_now = || if success_timed { clock.now() } else { started };
            let predicate = result_predicate.as_deref_mut();
            let hooks: Option<&mut crate::judge::PlanHook<'_, E, T>> = if hooked { Some(&mut hooks) } else { None };
            let decision = match history.judge(
                call,
                outcome,
                false,
                predicate,
                &mut classify,
                &mut notify,
                failure_now,
                success_now,
                hooks,
            ) {
                Judged::Accepted(value) => return Ok(value),
                Judged::Decided(decision) => decision,
            };
            let delay = match decision {
                Decision::Retry(delay) => delay,
                Decision::Stop(stop) => return Err(history.stopped(stop, call.attempt(), policy)),
            };
            let no_wait = delay.is_zero() && zero_is_no_wait;
            if !no_wait && clock.sleep(delay, cancel).is_err() {
                let _ = call.cancel(read_time(), &mut |e| notify(e, history.last()));
                return Err(history.stopped(Stop::Cancelled, call.attempt(), policy));
            }
            attempt_start.set(match failed_at.get() {
                Some(at) if delay.is_zero() => at,
                _ => read_time(),
            });
            let resume = call.resume(attempt_start.get(), &mut |e| notify(e, history.last()));
            if let Resume::Stop(stop) = resume {
                return Err(history.stopped(stop, call.attempt(), policy));
            }
            outcome = op(&Attempt::new(call.attempt(), attempt_start.get(), call.attempt_bound()));
        }
    }
}

/// Attempt 1's failure when it ran before the engine started (a lazy start), and the
/// call's start it ran at when the policy bounds it (`None`: the call reads no time).
#[cfg(feature = "blocking")]
struct First<E> {
    error: E,
    started: Option<Duration>,
}

/// Where a blocking call counts its events when nothing reads them mid-call (`batched`):
/// a tally added to its thread's stats cells when the call ends, however it ends.
#[cfg(feature = "blocking")]
struct Counted<'a> {
    stats: &'a Stats,
    tally: CallTally,
    batched: bool,
}

#[cfg(feature = "blocking")]
impl Drop for Counted<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.batched {
            self.stats.add_tally_here(&self.tally);
        }
    }
}

/// The options of a [`Run`] but its listener, which the executor takes as a [`Tell`]
/// (statically absent for [`Retrier::run`]).
#[cfg(feature = "blocking")]
struct Options<'a, E, T> {
    cancel: Option<&'a CancelToken>,
    clock: Option<&'a dyn Clock>,
    result_predicate: Option<ResultPredicate<'a, T>>,
    wait: Option<WaitHook<'a, E, T>>,
    before_retry: Option<BeforeRetry<'a, E, T>>,
}

#[cfg(all(test, feature = "blocking"))]
mod tests;

#[cfg(all(test, feature = "blocking"))]
mod lazy_tests;
