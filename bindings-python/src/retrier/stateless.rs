//! What the engine hears of a call before its engine state starts (it starts at the
//! first failure): the circuit breaker's admission, a cancellation before the start, a
//! first-attempt success; a short-lived `Call` or a free function of the engine, nothing kept.

use std::time::Duration;

use pyo3::prelude::*;
use retryrs::{cancelled_before_start, Admission, Call, Verdict, VirtualClock};

use super::Retrier;
use crate::errors;
use crate::state::now;

impl Retrier {
    /// A first-attempt success still reaches the engine when someone listens or a budget
    /// refills: a short-lived `Call` on the stack, nothing allocated.
    /// A listener's KeyboardInterrupt / SystemExit comes back as the error to raise.
    pub(super) fn report_success(
        &self,
        py: Python<'_>,
        start: Duration,
        clock: &Option<VirtualClock>,
        admission: Option<Admission>,
    ) -> PyResult<()> {
        let host = &*self.host;
        let mut call = Call::start_admitted(&*host.policy, start, admission);
        let mut signal = None;
        let _ = call.record(Verdict::Success, now(clock), &mut |e| host.emit(py, e, None, &mut signal));
        signal.map_or(Ok(()), Err)
    }

    /// Puts the call to the policy's circuit breaker, if it has one: a refused call is
    /// `RetryExhausted(reason="circuit_open")` at once, the function never called.
    #[inline]
    pub(super) fn admit(&self, py: Python<'_>, start: Duration) -> PyResult<Option<Admission>> {
        let host = &*self.host;
        let Some(breaker) = host.policy.breaker() else { return Ok(None) };
        let mut signal = None;
        let admission = retryrs::admit(&host.policy, start, &mut |e| host.emit(py, e, None, &mut signal));
        match admission {
            Some(Admission::Refused { state, retry_in }) => {
                Err(signal.unwrap_or_else(|| errors::circuit_open(py, host.policy.name(), state.as_str(), retry_in)))
            }
            Some(admitted) => match signal {
                // A listener's KeyboardInterrupt: the call never runs, its probe goes back.
                Some(signal) => {
                    breaker.release(admitted);
                    Err(signal)
                }
                None => Ok(admission),
            },
            None => Ok(None),
        }
    }

    pub(super) fn cancelled_before_start(&self, py: Python<'_>) -> PyErr {
        let host = &*self.host;
        let mut signal = None;
        cancelled_before_start(&host.policy, &mut |e| host.emit(py, e, None, &mut signal));
        signal.unwrap_or_else(|| errors::cancelled(py, host.policy.name(), 0, &[]))
    }
}
