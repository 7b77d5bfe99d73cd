//! The hooks asked about a wait the engine proposed (`before_sleep`, then `wait`), in
//! place or through the async driver's awaited answers, and the plan they make settled
//! with the engine.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use retryrs::{Decision, Plan, Proposal, RetryCause, Stop, Verdict};

use super::{now, state_error, CallState, Hooked, Pending};
use crate::host_policy::{Classified, HostPolicy};

static STOP_RETRYING: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();
static RAISED: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

impl CallState {
    /// The engine's proposal for a transient failure (`subject`, a value when `is_value`),
    /// then the hooks' answers: `Err` is a hook's own error (the call is closed).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn proposed(
        &mut self,
        py: Python<'_>,
        host: &HostPolicy,
        verdict: Verdict,
        exact: Option<Duration>,
        timed_out: bool,
        at: Duration,
        subject: &Bound<'_, PyAny>,
        is_value: bool,
        answers: Option<&Bound<'_, PyTuple>>,
        asked: usize,
        signal: &mut Option<PyErr>,
    ) -> PyResult<Result<Hooked, PyErr>> {
        let sink =
            &mut |e: &retryrs::Event<'_>| host.emit_counted(py, e, Some((subject, is_value)), signal, &mut self.tally);
        let proposal =
            self.call.propose_as(verdict, RetryCause::from_timed_out(timed_out), at, sink).map_err(state_error)?;
        match proposal {
            Proposal::Stop(stop) => Ok(Ok(Hooked::Decided(Decision::Stop(stop)))),
            Proposal::Wait { delay, attempt, .. } => {
                if signal.is_some() {
                    // A listener's Ctrl-C: the hooks are not asked; the call is cancelled.
                    let _ = self.call.cancel(at, &mut |_| {});
                    return Ok(Ok(Hooked::Decided(Decision::Stop(Stop::Cancelled))));
                }
                let subject_obj = subject.clone().unbind();
                let pending = Pending { delay, attempt, asked, hook: 0, subject: subject_obj, is_value, exact };
                Ok(self.hooked(py, host, pending, subject, is_value, answers, signal))
            }
        }
    }

    /// Asks the hooks about the proposed wait (before_sleep, then wait), each answer taken
    /// from the driver's awaited `answers` when it has it, and settles the call with the
    /// plan they make. An awaitable answer (async calls) comes back to be awaited, the
    /// proposal kept; a hook's own error (or an answer it may not give) is `Err`, the
    /// call then settled as stopped.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hooked(
        &mut self,
        py: Python<'_>,
        host: &HostPolicy,
        pending: Pending,
        subject: &Bound<'_, PyAny>,
        is_value: bool,
        answers: Option<&Bound<'_, PyTuple>>,
        signal: &mut Option<PyErr>,
    ) -> Result<Hooked, PyErr> {
        let can_await = answers.is_some();
        let mut asked = pending.asked;
        // A server's exact wait is the plan unless a hook makes another.
        let mut plan = pending.exact.map_or(Plan::Engine, Plan::Exact);
        let mut failure: Option<PyErr> = None;
        let hooks = [("before_sleep", &host.before_sleep), ("wait", &host.wait)];
        for (i, (name, hook)) in hooks.into_iter().enumerate().skip(pending.hook) {
            let Some(hook) = hook else { continue };
            let answer = match crate::host_policy::answered(answers, asked) {
                Ok(Some(a)) => {
                    asked += 1;
                    Ok(a)
                }
                Ok(None) => {
                    let delay = pending.delay.as_secs_f64();
                    match hook.bind(py).call1((pending.attempt, subject, delay)) {
                        Ok(a) => match crate::host_policy::awaitable(&a, name, can_await) {
                            Ok(Some(Classified::Await(p))) => {
                                // Its answer comes back at index `asked`; the hooks before
                                // it (answered in place, or it would not be reached) are done.
                                self.pending = Some(Pending { asked, hook: i, ..pending });
                                return Ok(Hooked::Await(p.unbind()));
                            }
                            Ok(_) => Ok(a),
                            Err(e) => Err(e),
                        },
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            // An awaited hook that raised comes back from the driver wrapped.
            let answer = match answer {
                Ok(a) if raised_type(py).is_ok_and(|t| a.is_instance(t).unwrap_or(false)) => {
                    Err(PyErr::from_value(a.getattr("error")?))
                }
                other => other,
            };
            match (name, answer) {
                ("before_sleep", Ok(a)) => {
                    if a.is_instance_of::<pyo3::types::PyBool>() && !a.is_truthy()? {
                        plan = Plan::Stop;
                    }
                }
                // StopRetrying from either hook stops the call (reason stopped), as
                // tenacity users raising it from a wait callable expect.
                (_, Err(e)) if is_stop(py, &e) => plan = Plan::Stop,
                (_, Err(e)) => {
                    failure = Some(e);
                    plan = Plan::Stop;
                }
                (_, Ok(a)) => {
                    if !a.is_none() {
                        let exact = crate::convert::seconds(&a, "wait")
                            .map_err(|e| {
                                pyo3::exceptions::PyTypeError::new_err(format!(
                                    "wait must return seconds (float, int, timedelta) or None, got {}: {e}",
                                    crate::convert::repr(&a)
                                ))
                            })
                            .and_then(|s| {
                                // The engine's rule (NaN, negative, infinite or past
                                // its longest wait: refused), in seconds.
                                Plan::exact_ms(crate::convert::ms(s)).map_err(|_| {
                                    pyo3::exceptions::PyValueError::new_err(format!(
                                        "wait returned {}: a wait must be seconds from 0 to 9e12 (about 285,000 \
                                         years), or None: the engine's",
                                        crate::convert::repr(&a)
                                    ))
                                })
                            });
                        match exact {
                            Ok(exact) => plan = exact,
                            Err(e) => {
                                failure = Some(e);
                                plan = Plan::Stop;
                            }
                        }
                    }
                }
            }
            if plan == Plan::Stop {
                break;
            }
        }
        let at = now(&self.clock);
        let decision = self
            .call
            .settle(plan, at, &mut |e| host.emit_counted(py, e, Some((subject, is_value)), signal, &mut self.tally))
            .map_err(state_error)?;
        match failure {
            Some(e) => Err(e),
            None => Ok(Hooked::Decided(decision)),
        }
    }
}

/// `retryrs.StopRetrying` raised by `wait` or `before_sleep`: the call stops (reason `stopped`).
fn is_stop(py: Python<'_>, e: &PyErr) -> bool {
    STOP_RETRYING.import(py, "retryrs._errors", "StopRetrying").is_ok_and(|t| e.is_instance(py, t))
}

/// Looks up StopRetrying and the async driver's wrapper now (package import: see preload.rs).
pub fn preload(py: Python<'_>) -> PyResult<()> {
    STOP_RETRYING.import(py, "retryrs._errors", "StopRetrying")?;
    raised_type(py).map(drop)
}

/// The wrapper the async driver puts around an awaited hook's exception.
fn raised_type(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    RAISED.import(py, "retryrs._errors", "_Raised")
}

impl CallState {
    /// Whether the hooks (not the classification) are being asked: an awaited answer that
    /// raises is then handed back wrapped, rather than raised.
    pub fn hooking(&self) -> bool {
        self.pending.is_some()
    }
}
