//! One attempt's outcome, judged: the step both executors (blocking and async) take after
//! each attempt, in one place. A value goes through the result predicate, an error
//! through the classifier; the engine records the verdict and the history keeps the
//! failure.

use std::ops::Deref;
use std::time::Duration;

use crate::async_executor::TimedOut;
use crate::budget::RetryCause;
use crate::engine::{Call, Decision, Plan, Proposal, Verdict};
use crate::event::Event;
use crate::executor::{Failed, History, RetryContext, ValueVerdict};
use crate::policy::Policy;

/// A call's hooks, as one answer to each proposed wait.
pub(crate) type PlanHook<'h, E, T> = dyn FnMut(&RetryContext<'_, E, T>) -> Plan + 'h;

/// Records `verdict`: one step ([`Call::record`]) without hooks; with them, the engine
/// proposes, the hooks answer, the engine settles (the time read again after them).
///
/// Always inlined, the hooked path kept out of line: called out of line, the decision came
/// back through memory, written in pieces and read back whole (a store-forwarding stall
/// on every failure).
#[inline(always)]
fn decide<P, E, T>(
    call: &mut Call<P>,
    verdict: Verdict,
    failure: Failed<'_, E, T>,
    notify: &mut impl FnMut(&Event<'_>, Option<Failed<'_, E, T>>),
    now: &impl Fn() -> Duration,
    hooks: Option<&mut PlanHook<'_, E, T>>,
    timed_out: bool,
) -> Decision
where
    P: Deref<Target = Policy>,
{
    let sink = &mut |e: &Event<'_>| notify(e, Some(failure));
    let Some(hooks) = hooks else {
        // An attempt cut at its bound: a quota prices the retry after it as a timeout's.
        return call.record_attempt(verdict, RetryCause::from_timed_out(timed_out), now(), sink);
    };
    decide_hooked(call, verdict, failure, sink, now, hooks, timed_out)
}

const BUSY: &str = "the executor only records while an attempt is in progress";

/// [`decide`] with hooks.
#[inline(never)]
fn decide_hooked<P, E, T>(
    call: &mut Call<P>,
    verdict: Verdict,
    failure: Failed<'_, E, T>,
    sink: &mut impl FnMut(&Event<'_>),
    now: &impl Fn() -> Duration,
    hooks: &mut PlanHook<'_, E, T>,
    timed_out: bool,
) -> Decision
where
    P: Deref<Target = Policy>,
{
    let at = now();
    let proposed = call.propose_as(verdict, RetryCause::from_timed_out(timed_out), at, sink);
    match proposed.expect(BUSY) {
        Proposal::Stop(stop) => Decision::Stop(stop),
        Proposal::Wait { delay, attempt, retries_left, hint } => {
            let elapsed = at.saturating_sub(call.started_at());
            let plan = hooks(&RetryContext { attempt, delay, retries_left, hint, elapsed, failure });
            call.settle(plan, now(), sink).expect("settle follows a proposed wait")
        }
    }
}

/// What became of an attempt's outcome.
pub(crate) enum Judged<T> {
    /// The value is the call's result (the engine has recorded the success).
    Accepted(T),
    /// A failure, recorded and kept: the engine's decision.
    Decided(Decision),
}

impl<E, T> History<E, T> {
    /// Judges `outcome` of the attempt `call` has in progress (`timed_out`: the executor
    /// cut it at its bound, and the error is its `TimedOut`). `now` reads the time the
    /// engine is given for a failure; `success_now` the time of a success (only its event
    /// shows it, so an executor without a listener need not read the clock).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn judge<P, A>(
        &mut self,
        call: &mut Call<P>,
        outcome: Result<T, E>,
        timed_out: bool,
        predicate: Option<&mut A>,
        classify: &mut impl FnMut(&E) -> Verdict,
        notify: &mut impl FnMut(&Event<'_>, Option<Failed<'_, E, T>>),
        now: impl Fn() -> Duration,
        success_now: impl FnOnce() -> Duration,
        hooks: Option<&mut PlanHook<'_, E, T>>,
    ) -> Judged<T>
    where
        P: Deref<Target = Policy>,
        A: FnMut(&T) -> ValueVerdict + ?Sized,
    {
        match outcome {
            Ok(value) => {
                let verdict = match predicate {
                    None => ValueVerdict::Accept,
                    Some(accept) => accept(&value),
                };
                let verdict = match verdict {
                    ValueVerdict::Accept => {
                        call.record_attempt(Verdict::Success, RetryCause::Failure, success_now(), &mut |e| {
                            notify(e, None)
                        });
                        return Judged::Accepted(value);
                    }
                    ValueVerdict::Retry { hint } => Verdict::Transient { hint },
                    ValueVerdict::DontRetry => Verdict::DontRetry,
                };
                let decision = decide(call, verdict, Failed::Value(&value), notify, &now, hooks, false);
                self.set_value(value);
                Judged::Decided(decision)
            }
            Err(error) => {
                let verdict = classify(&error);
                let decision = decide(call, verdict, Failed::Error(&error), notify, &now, hooks, timed_out);
                self.push_error(error);
                Judged::Decided(decision)
            }
        }
    }

    /// Judges an attempt the async executor cut at its bound, with no error of the
    /// caller's type to show for it: transient (no hint), kept as the last failure.
    pub(crate) fn judge_timed_out<P>(
        &mut self,
        call: &mut Call<P>,
        cut: TimedOut,
        notify: &mut impl FnMut(&Event<'_>, Option<Failed<'_, E, T>>),
        now: impl Fn() -> Duration,
        hooks: Option<&mut PlanHook<'_, E, T>>,
    ) -> Decision
    where
        P: Deref<Target = Policy>,
    {
        let decision = decide(call, Verdict::TRANSIENT, Failed::TimedOut(cut), notify, &now, hooks, true);
        self.push_timed_out(cut);
        decision
    }
}
