//! The async, hedged and loop drivers' steps (`_start`, `_hedge`, `_succeeded`,
//! `_begin`), run as the retrier a call runs as.

use pyo3::prelude::*;

use super::Retrier;
use crate::attempt::{AttemptInfo, Frame};
use crate::state::{now, CallState};
use crate::stepped::SteppedCall;

/// The drivers' steps as the retrier a call runs as (itself, or the one an ambient
/// context constrains it to: see `ambient.rs`).
impl Retrier {
    pub(super) fn start_here(&self, py: Python<'_>) -> PyResult<AttemptInfo> {
        if self.cancel.as_ref().is_some_and(|t| t.get().inner.is_cancelled()) {
            return Err(self.cancelled_before_start(py));
        }
        let clock = crate::testing::clock(py);
        let start = now(&clock);
        let admission = self.admit(py, start)?;
        let frame = Frame::first(&self.host.policy, start, clock);
        Ok(AttemptInfo::with_arm(frame, start, self.interrupts).admitted(admission))
    }

    pub(super) fn hedge_here(&self, py: Python<'_>) -> PyResult<crate::hedged::HedgedCall> {
        if self.cancel.as_ref().is_some_and(|t| t.get().inner.is_cancelled()) {
            return Err(self.cancelled_before_start(py));
        }
        let token = self.cancel.as_ref().map(|t| t.clone_ref(py));
        Ok(crate::hedged::HedgedCall::start(py, self.host.clone(), token, self.interrupts))
    }

    pub(super) fn succeeded_here(&self, py: Python<'_>, first: &Bound<'_, AttemptInfo>) -> PyResult<()> {
        if !self.host.wants_success {
            self.host.stats.count_first_attempt_success();
            return Ok(());
        }
        let first = first.get();
        self.report_success(py, first.start, &crate::testing::clock(py), first.admission)
    }

    pub(super) fn begin_here(&self, py: Python<'_>, first: &Bound<'_, AttemptInfo>) -> SteppedCall {
        let token = self.cancel.as_ref().map(|t| t.get().inner.clone());
        let first = first.get();
        SteppedCall::new(
            CallState::begin(self.host.clone(), first.start, crate::testing::clock(py), token, first.admission, false),
            self.cancel.as_ref().map(|t| t.clone_ref(py)),
        )
    }
}
