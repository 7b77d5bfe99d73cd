//! Events: what a call reports as it goes, one payload with everything a log line needs.
//!
//! The engine knows nothing of host errors, so an [`Event`] carries no error: each host
//! attaches the failure it is holding to the events whose kind carries one
//! ([`EventKind::carries_error`]), and to no other. That shape is the core's, written in
//! `docs/contract.md` ("Events") and checked by every conformance vector.

use std::fmt;
use std::time::Duration;

use crate::spelling::Spelling;

/// Which event this is. The order within a call is fixed by the contract: AttemptFailed for
/// each failure, then exactly one of Retrying (followed by the next attempt), Rejected,
/// Exhausted or Cancelled; or Success.
// Non-exhaustive: a new kind (hedging and the breaker added four in 0.2) is not a break
// for a listener that matches with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// An attempt returned a value.
    Success,
    /// An attempt failed (transient or permanent).
    AttemptFailed,
    /// A wait of `delay` is about to start; the next attempt follows it.
    Retrying,
    /// The predicate called the failure permanent: the original error surfaces.
    Rejected,
    /// No more attempts: `reason` says which limit ended the call.
    Exhausted,
    /// The call was cancelled.
    Cancelled,
    /// A hedged call launched attempt `attempt` beside those in flight, `delay` after the
    /// attempt before it (hedging only).
    Hedge,
    /// The policy's circuit breaker opened (after this call's outcome); `delay`: the break.
    BreakerOpened,
    /// The breaker's break is over: this call is a probe.
    BreakerHalfOpen,
    /// A probe succeeded: the breaker closed.
    BreakerClosed,
}

impl EventKind {
    /// Every kind, in declaration order (a test keeps it complete; the bindings check its
    /// length where they map kinds, so a new kind cannot fall into a `_` arm unseen).
    pub const ALL: [EventKind; 10] = [
        EventKind::Success,
        EventKind::AttemptFailed,
        EventKind::Retrying,
        EventKind::Rejected,
        EventKind::Exhausted,
        EventKind::Cancelled,
        EventKind::Hedge,
        EventKind::BreakerOpened,
        EventKind::BreakerHalfOpen,
        EventKind::BreakerClosed,
    ];

    /// The snake_case name every host and the conformance vectors use.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventKind::Success => "success",
            EventKind::AttemptFailed => "attempt_failed",
            EventKind::Retrying => "retrying",
            EventKind::Rejected => "rejected",
            EventKind::Exhausted => "exhausted",
            EventKind::Cancelled => "cancelled",
            EventKind::Hedge => "hedge",
            EventKind::BreakerOpened => "breaker_opened",
            EventKind::BreakerHalfOpen => "breaker_half_open",
            EventKind::BreakerClosed => "breaker_closed",
        }
    }
}

impl EventKind {
    /// Whether events of this kind carry the failure they are about: every call event but
    /// Success and Hedge (AttemptFailed, Retrying, Rejected, Exhausted, and Cancelled once an attempt
    /// has failed; a call cancelled before any failure has none to carry). The breaker's
    /// events carry none.
    pub const fn carries_error(self) -> bool {
        !matches!(self, EventKind::Success | EventKind::Hedge) && !self.is_breaker()
    }

    /// Whether events of this kind carry a delay (Retrying: the wait about to start;
    /// Hedge: the time since the attempt before it launched; BreakerOpened: the break).
    pub const fn carries_delay(self) -> bool {
        matches!(self, EventKind::Retrying | EventKind::Hedge | EventKind::BreakerOpened)
    }

    /// Whether this is one of the circuit breaker's events (they follow a call's own
    /// events, or precede its first attempt for BreakerHalfOpen).
    pub const fn is_breaker(self) -> bool {
        matches!(self, EventKind::BreakerOpened | EventKind::BreakerHalfOpen | EventKind::BreakerClosed)
    }

    /// Whether events of this kind carry an exhaust reason (Exhausted).
    pub const fn carries_reason(self) -> bool {
        matches!(self, EventKind::Exhausted)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a call stopped retrying transient failures.
// Non-exhaustive: 0.2 added two reasons (circuit_open, stopped); a new one is not a break
// for code that matches with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExhaustReason {
    /// max_attempts calls were made.
    Attempts,
    /// The next wait would pass the deadline, or the deadline passed during a wait.
    Deadline,
    /// The shared retry budget had no token to spare.
    Budget,
    /// The server asked for a wait longer than `max_retry_after` (contract step 5).
    RetryAfter,
    /// The policy's circuit breaker is open: the call was refused, no attempt made.
    CircuitOpen,
    /// A host hook that runs before a wait stopped the call ([`crate::engine::Plan::Stop`]);
    /// the last failure and the history are kept.
    Stopped,
}

impl ExhaustReason {
    /// Every reason, in declaration order: what documentation and listeners list (a test
    /// keeps docs/observability.md's list equal to it).
    pub const ALL: [ExhaustReason; 6] = [
        ExhaustReason::Attempts,
        ExhaustReason::Deadline,
        ExhaustReason::Budget,
        ExhaustReason::RetryAfter,
        ExhaustReason::CircuitOpen,
        ExhaustReason::Stopped,
    ];

    /// `attempts`, `deadline`, `budget`, `retry_after`, `circuit_open` or `stopped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExhaustReason::Attempts => "attempts",
            ExhaustReason::Deadline => "deadline",
            ExhaustReason::Budget => "budget",
            ExhaustReason::RetryAfter => "retry_after",
            ExhaustReason::CircuitOpen => "circuit_open",
            ExhaustReason::Stopped => "stopped",
        }
    }
}

impl ExhaustReason {
    /// Which limit ended the call, as the one wording every host's message uses, in the
    /// contract's (Rust's, Python's) names.
    pub fn describe(&self) -> String {
        self.describe_in(Spelling::Rust)
    }

    /// [`ExhaustReason::describe`] with the knob it names spelt as `spelling`'s users
    /// write it (`maxAttempts reached` in Node, `max_retry_after_ms` in C).
    pub fn describe_in(&self, spelling: Spelling) -> String {
        match self {
            ExhaustReason::Attempts => format!("{} reached", spelling.name("max_attempts")),
            ExhaustReason::Deadline => format!("{} reached", spelling.name("deadline")),
            ExhaustReason::Budget => "retry budget spent".into(),
            ExhaustReason::RetryAfter => {
                format!("server asked to wait longer than {}", spelling.name("max_retry_after"))
            }
            ExhaustReason::CircuitOpen => "circuit breaker open".into(),
            ExhaustReason::Stopped => "stopped by a hook".into(),
        }
    }
}

impl std::str::FromStr for ExhaustReason {
    type Err = String;

    /// Reads [`ExhaustReason::as_str`] back (for hosts that carry the reason as text).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "attempts" => Ok(ExhaustReason::Attempts),
            "deadline" => Ok(ExhaustReason::Deadline),
            "budget" => Ok(ExhaustReason::Budget),
            "retry_after" => Ok(ExhaustReason::RetryAfter),
            "circuit_open" => Ok(ExhaustReason::CircuitOpen),
            "stopped" => Ok(ExhaustReason::Stopped),
            other => Err(format!("unknown exhaust reason {other:?}")),
        }
    }
}

/// What an exhausted call says, the one wording of every host's exhaustion message:
/// `rates: gave up after 3 attempts (max_attempts reached)`. A host appends the last
/// failure in its own rendering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaveUp<'a> {
    /// The retrier's name, or `None` where the message has no name (Rust's `RetryError`).
    pub name: Option<&'a str>,
    /// Attempts made.
    pub attempts: u32,
    /// Which limit ended the call.
    pub reason: ExhaustReason,
}

impl GaveUp<'_> {
    /// The message with the knob the reason names in `spelling`'s words (Node: `rates:
    /// gave up after 3 attempts (maxAttempts reached)`).
    pub fn render(&self, spelling: Spelling) -> String {
        let name = self.name.map(|n| format!("{n}: ")).unwrap_or_default();
        let s = if self.attempts == 1 { "" } else { "s" };
        format!("{name}gave up after {} attempt{s} ({})", self.attempts, self.reason.describe_in(spelling))
    }
}

impl fmt::Display for GaveUp<'_> {
    /// The message in Rust's words (the contract's names).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

/// What a cancelled call says, the one wording of every host's cancellation message:
/// `rates: cancelled after 1 attempt`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CancelledAfter<'a> {
    /// The retrier's name, or `None` where the message has no name (Rust's `RetryError`).
    pub name: Option<&'a str>,
    /// Attempts made (0: cancelled before the first).
    pub attempts: u32,
}

impl fmt::Display for CancelledAfter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.name {
            write!(f, "{name}: ")?;
        }
        let s = if self.attempts == 1 { "" } else { "s" };
        write!(f, "cancelled after {} attempt{s}", self.attempts)
    }
}

impl fmt::Display for ExhaustReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of one call.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Event<'a> {
    /// What happened.
    pub kind: EventKind,
    /// The retrier's name.
    pub name: &'a str,
    /// The attempt the event is about (1-based; 0 for a call cancelled before it began).
    pub attempt: u32,
    /// Time since the call began (monotonic, or virtual under the testing switch).
    pub elapsed: Duration,
    /// The wait about to start (Retrying only).
    pub delay: Option<Duration>,
    /// Why the call was exhausted (Exhausted only).
    pub reason: Option<ExhaustReason>,
    /// The retries the attempt limit still allows after this event's attempt:
    /// `max_attempts - attempt` (`max_attempts - 1` for an event before the first
    /// attempt). A bound, not a promise: the deadline, the budget, a server's hint or a
    /// hook may end the call sooner.
    pub retries_left: u32,
    /// Cancelled only: the cancel ended attempt `attempt` while it ran (a Ctrl-C or a
    /// task cancellation raised by the attempt, an abort during it), rather than a wait.
    /// The attempt neither failed nor succeeded, but it was made: [`Stats`] counts it.
    ///
    /// [`Stats`]: crate::Stats
    pub attempt_interrupted: bool,
    /// A hedged call's end (success, rejected, exhausted or cancelled): its attempts still
    /// in flight, which the end abandons (cancelled, never settled). They were made:
    /// [`Stats`] counts them (a call cut at its deadline after 3 launches made 3
    /// attempts). Always 0 for a call that does not hedge.
    ///
    /// [`Stats`]: crate::Stats
    pub attempts_abandoned: u32,
}

/// [`Event::retries_left`] for `attempt` under a limit of `max_attempts`.
#[inline]
pub(crate) fn retries_left(max_attempts: u32, attempt: u32) -> u32 {
    max_attempts.saturating_sub(attempt.max(1))
}

impl<'a> Event<'a> {
    /// The event `kind` of a call under `policy`, about `attempt` (0: before any), its
    /// name and retries left taken from the policy; not an interrupted attempt's. Every
    /// emitter (a call, a hedged call, a breaker's admission) builds its events here.
    #[inline(always)]
    pub(crate) fn of(
        policy: &'a crate::policy::Policy,
        kind: EventKind,
        attempt: u32,
        elapsed: Duration,
        delay: Option<Duration>,
        reason: Option<ExhaustReason>,
    ) -> Self {
        Event {
            kind,
            name: &policy.name,
            attempt,
            elapsed,
            delay,
            reason,
            retries_left: retries_left(policy.max_attempts, attempt),
            attempt_interrupted: false,
            attempts_abandoned: 0,
        }
    }
}

impl fmt::Display for Event<'_> {
    /// A log line: `[name] 451 ms attempt 2 retrying in 87 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {} ms attempt {} {}", self.name, self.elapsed.as_millis(), self.attempt, self.kind)?;
        if let Some(d) = self.delay {
            write!(f, " in {} ms", d.as_millis())?;
        }
        if let Some(r) = self.reason {
            write!(f, " ({r})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_holds_every_reason() {
        // No wildcard: a new reason fails to compile here until ALL holds it too.
        for r in ExhaustReason::ALL {
            match r {
                ExhaustReason::Attempts
                | ExhaustReason::Deadline
                | ExhaustReason::Budget
                | ExhaustReason::RetryAfter
                | ExhaustReason::CircuitOpen
                | ExhaustReason::Stopped => {}
            }
        }
        let count = |r: ExhaustReason| match r {
            ExhaustReason::Attempts => 0,
            ExhaustReason::Deadline => 1,
            ExhaustReason::Budget => 2,
            ExhaustReason::RetryAfter => 3,
            ExhaustReason::CircuitOpen => 4,
            ExhaustReason::Stopped => 5,
        };
        assert_eq!(ExhaustReason::ALL.map(count), [0, 1, 2, 3, 4, 5]);
        for r in ExhaustReason::ALL {
            assert_eq!(r.as_str().parse::<ExhaustReason>(), Ok(r));
        }
    }

    #[test]
    fn all_holds_every_event_kind() {
        // No wildcard: a new kind fails to compile here until ALL holds it too.
        let index = |k: EventKind| match k {
            EventKind::Success => 0,
            EventKind::AttemptFailed => 1,
            EventKind::Retrying => 2,
            EventKind::Rejected => 3,
            EventKind::Exhausted => 4,
            EventKind::Cancelled => 5,
            EventKind::Hedge => 6,
            EventKind::BreakerOpened => 7,
            EventKind::BreakerHalfOpen => 8,
            EventKind::BreakerClosed => 9,
        };
        assert_eq!(EventKind::ALL.map(index), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn the_end_messages_agree_in_number() {
        let cancelled = |attempts| CancelledAfter { name: Some("rates"), attempts }.to_string();
        assert_eq!(cancelled(0), "rates: cancelled after 0 attempts");
        assert_eq!(cancelled(1), "rates: cancelled after 1 attempt");
        assert_eq!(cancelled(2), "rates: cancelled after 2 attempts");
        let gave_up = GaveUp { name: None, attempts: 1, reason: ExhaustReason::Deadline };
        assert_eq!(gave_up.to_string(), "gave up after 1 attempt (deadline reached)");
    }
}
