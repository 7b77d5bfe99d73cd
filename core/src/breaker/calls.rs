//! The engine's side of a breaker: a call (one at a time or hedged) asks its policy's
//! breaker before it starts ([`admit`]) and tells it each attempt or the call's end, and
//! each state change becomes an event.

use std::ops::Deref;
use std::time::Duration;

use crate::engine::{Call, Stop, Verdict};
use crate::event::{Event, EventKind};
use crate::policy::Policy;

use super::{Admission, Transition};

/// Puts a call about to start at `now` to `policy`'s breaker (`None`: it has none). Emits
/// BreakerHalfOpen when the break is over (this call is then a probe), or, when refused,
/// the call's one event: Exhausted, attempt 0, reason `circuit_open`. The host makes no
/// attempt for a refused call; for the others it starts the call with
/// [`Call::start_admitted`] (or uses [`Call::start_with`], which does both).
pub fn admit(policy: &Policy, now: Duration, sink: &mut impl FnMut(&Event<'_>)) -> Option<Admission> {
    let breaker = policy.breaker.as_ref()?;
    let mut event = |kind, delay, reason| sink(&Event::of(policy, kind, 0, Duration::ZERO, delay, reason));
    let admission = breaker.admit(now, &mut |t| {
        if t == Transition::HalfOpen {
            event(EventKind::BreakerHalfOpen, None, None);
        }
    });
    if let Admission::Refused { .. } = admission {
        event(EventKind::Exhausted, None, Some(crate::event::ExhaustReason::CircuitOpen));
    }
    Some(admission)
}

/// What a call (one at a time or hedged) tells its policy's breaker: the engine's side,
/// one piece of code for both. `admission` is what [`admit`] said at the start (`None`: no
/// breaker); `on` gets each state change.
/// `started`: when the attempt started (for a slow-call threshold).
pub(crate) fn count_attempt(
    policy: &Policy,
    admission: &mut Option<Admission>,
    verdict: Verdict,
    started: Duration,
    now: Duration,
    on: &mut impl FnMut(Transition),
) {
    let (Some(breaker), Some(admitted)) = (&policy.breaker, *admission) else { return };
    if !breaker.config.per_attempt || matches!(admitted, Admission::Refused { .. }) {
        return;
    }
    let failed = match verdict {
        Verdict::Permanent => breaker.config.count_permanent,
        other => other.is_counted_failure(),
    };
    breaker.record_since(admitted, failed, started, now, on);
    // After the first, the call counts as an ordinary one (a probe is decided by its first
    // attempt).
    *admission = Some(Admission::Pass);
}

/// The call that started at `started` ended with `stop` at `now`: per call, its outcome
/// counts (exhausted: a failure; success: a success; rejected: a success, or a failure
/// with `count_permanent`); a cancelled call gives its probe back.
pub(crate) fn count_call(
    policy: &Policy,
    admission: Option<Admission>,
    stop: Stop,
    started: Duration,
    now: Duration,
    on: &mut impl FnMut(Transition),
) {
    let (Some(breaker), Some(admitted)) = (&policy.breaker, admission) else { return };
    if matches!(admitted, Admission::Refused { .. }) {
        return;
    }
    let failed = match stop {
        Stop::Cancelled => return breaker.release(admitted),
        _ if breaker.config.per_attempt => return,
        Stop::Success => false,
        Stop::Rejected => breaker.config.count_permanent,
        Stop::Exhausted(_) => true,
    };
    breaker.record_since(admitted, failed, started, now, on);
}

/// A transition's event: its kind and the delay it carries.
pub(crate) fn transition_event(t: Transition) -> (EventKind, Option<Duration>) {
    match t {
        Transition::Opened(d) => (EventKind::BreakerOpened, Some(d)),
        Transition::HalfOpen => (EventKind::BreakerHalfOpen, None),
        Transition::Closed => (EventKind::BreakerClosed, None),
    }
}

/// The one-at-a-time engine's side.
impl<P: Deref<Target = Policy>> Call<P> {
    /// Emits a transition's event at `elapsed`.
    fn transition(&self, t: Transition, elapsed: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let (kind, delay) = transition_event(t);
        self.emit(kind, elapsed, delay, None, sink);
    }

    /// Per-attempt counting: an attempt that started at `started` has its verdict at `now`.
    pub(crate) fn count_attempt(
        &mut self,
        verdict: Verdict,
        started: Duration,
        now: Duration,
        sink: &mut impl FnMut(&Event<'_>),
    ) {
        let elapsed = now.saturating_sub(self.started_at());
        let mut admission = self.admission;
        count_attempt(&self.policy, &mut admission, verdict, started, now, &mut |t| self.transition(t, elapsed, sink));
        self.admission = admission;
    }

    /// The call ended with `stop` at `now` (see [`count_call`]).
    pub(crate) fn count_call(&mut self, stop: Stop, now: Duration, sink: &mut impl FnMut(&Event<'_>)) {
        let elapsed = now.saturating_sub(self.started_at());
        count_call(&self.policy, self.admission, stop, self.started_at(), now, &mut |t| {
            self.transition(t, elapsed, sink)
        });
    }
}
