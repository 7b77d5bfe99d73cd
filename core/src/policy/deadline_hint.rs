//! Whether `max_attempts` fits the deadline ([`Policy::deadline_hint`]): the advice
//! ([`DeadlineHint`]) a policy whose nominal backoff waits outrun its deadline gets.

use std::fmt;
use std::time::Duration;

use crate::spelling::Spelling;

use super::Policy;

/// What [`Policy::deadline_hint`] reports: `max_attempts` attempts' waits, at the nominal
/// backoff (the ceilings, before jitter), do not fit the deadline. Its Display is the one
/// wording every host shows (repr/inspect, and appended to an exhaustion by `deadline`):
/// `max_attempts=10 needs up to 26.2 s of backoff waits (before jitter), deadline is 15 s:
/// raise deadline or lower max_attempts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineHint {
    /// The policy's max_attempts.
    pub max_attempts: u32,
    /// The sum of the nominal waits between those attempts (a lower bound when the sum
    /// was cut short: enough to pass the deadline).
    pub waits: Duration,
    /// The policy's deadline.
    pub deadline: Duration,
}

impl DeadlineHint {
    /// The hint in `spelling`'s knob names and unit: Node reads `maxAttempts=10 needs up
    /// to 26200 ms of backoff waits (before jitter), deadlineMs is 15000 ms: raise
    /// deadlineMs or lower maxAttempts`; C the same with `max_attempts` and `deadline_ms`.
    pub fn render(&self, spelling: Spelling) -> String {
        let (attempts, deadline) = (spelling.name("max_attempts"), spelling.name("deadline"));
        // Whole milliseconds: the waits are sums of whole-millisecond ceilings.
        let span = |d: Duration| spelling.span_ms(d.as_millis() as f64);
        format!(
            "{attempts}={} needs up to {} of backoff waits (before jitter), {deadline} is {}: raise {deadline} or lower {attempts}",
            self.max_attempts,
            span(self.waits),
            span(self.deadline)
        )
    }
}

impl fmt::Display for DeadlineHint {
    /// The hint in Rust's words (the contract's names, seconds).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Spelling::Rust))
    }
}

impl Policy {
    /// Whether `max_attempts` cannot fit the deadline at the nominal backoff: the sum of
    /// the backoff ceilings of the `max_attempts - 1` waits (before jitter, hints aside)
    /// is longer than the deadline. `None` when it fits, or with no deadline. Advice for
    /// people (a ported `max_attempts=10` cut short by the 15 s default deadline), never
    /// a decision: the engine goes on deciding each wait as it comes. `None` for a
    /// hedging policy, whose attempts follow the hedging delay, not the backoff.
    pub fn deadline_hint(&self) -> Option<DeadlineHint> {
        if self.hedge.is_some() {
            return None;
        }
        let deadline = self.deadline?;
        let limit = deadline.as_millis();
        let waits = self.max_attempts.saturating_sub(1);
        let mut sum: u128 = 0;
        let mut failed = 1;
        while failed <= waits && sum <= limit {
            let ceiling = crate::backoff::ceiling_ms(self, failed);
            if ceiling >= self.max_delay_ms || self.multiplier == 1.0 || failed >= 10_000 {
                // Constant from here on (or, after many tiny steps, at least this each,
                // which keeps the sum a lower bound): the rest in one multiplication.
                sum += u128::from(ceiling) * u128::from(waits - failed + 1);
                break;
            }
            sum += u128::from(ceiling);
            failed += 1;
        }
        (sum > limit).then(|| DeadlineHint {
            max_attempts: self.max_attempts,
            waits: Duration::from_millis(u64::try_from(sum).unwrap_or(u64::MAX)),
            deadline,
        })
    }
}
