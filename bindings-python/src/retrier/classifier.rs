//! The Retrier an HTTP helper runs (`Retrier._with_classifier`): this one's policy,
//! listeners, budget, hooks and cancel token, with the helper's classification (its doc
//! on the Python method says what each argument does).

use std::sync::Arc;

use pyo3::prelude::*;
use retryrs::Policy;

use super::Retrier;
use crate::host_policy::{Hooks, HostPolicy, RetryOn};

impl Retrier {
    /// `helper` (an HTTP helper's name) refuses this Retrier when it has a hook the helper
    /// would silently drop.
    pub(super) fn refuse_dropped_hooks(&self, helper: Option<&str>) -> PyResult<()> {
        let h = &*self.host;
        if let Some(helper) = helper {
            const JUDGED: &str = "the HTTP rules judge every response (statuses=, methods=, a per-request override) \
                                  and Retry-After is read from the response";
            const ENDS: &str = "when retries run out the helper returns the last response or raises its own \
                                RetryExhausted (its cause the client's error), as the HTTP rules say";
            for (option, set, why) in [
                ("retry_on_result", h.retry_on_result.is_some(), JUDGED),
                ("retry_after", h.retry_after.is_some(), JUDGED),
                ("reraise", h.reraise, ENDS),
            ] {
                if set {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "{helper} does not use the Retrier's {option}: {why}; give a Retrier without {option}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// This Retrier's policy with `max_attempts` (a per-request attempt limit) and, when
    /// `unhedged`, without its hedging section.
    pub(super) fn helper_policy(
        &self,
        max_attempts: Option<&Bound<'_, PyAny>>,
        unhedged: bool,
    ) -> PyResult<Arc<Policy>> {
        let h = &*self.host;
        let policy = match max_attempts {
            None => h.policy.clone(),
            Some(n) if n.is_none() => h.policy.clone(),
            Some(n) => {
                let n: u64 = if n.is_instance_of::<pyo3::types::PyBool>() {
                    0
                } else {
                    n.extract().map_err(|_| {
                        pyo3::exceptions::PyTypeError::new_err(format!(
                            "max_attempts must be an int >= 1, got {}",
                            crate::convert::repr(n)
                        ))
                    })?
                };
                let built = retryrs::PolicyBuilder::from(&*h.policy).max_attempts(n).build().map_err(|e| {
                    pyo3::exceptions::PyValueError::new_err(format!("max_attempts must be an int >= 1: {e}"))
                })?;
                Arc::new(built)
            }
        };
        let policy = if unhedged && policy.hedging().is_some() {
            let built = retryrs::PolicyBuilder::from(&*policy).hedge(None).build().map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("{}: without its hedging: {e}", policy.name()))
            })?;
            Arc::new(built)
        } else {
            policy
        };
        Ok(policy)
    }

    /// The same retrier under `policy`, classifying by `retry_on` and `retry_after`.
    pub(super) fn reclassified(
        &self,
        py: Python<'_>,
        policy: Arc<Policy>,
        retry_on: Py<PyAny>,
        retry_after: Option<Py<PyAny>>,
        interrupts: bool,
    ) -> PyResult<Self> {
        let h = &*self.host;
        let host = HostPolicy::new(
            py,
            policy,
            RetryOn::Classes(retry_on),
            // No result predicate: a response is judged by the HTTP rules alone.
            Hooks {
                retry_after,
                retry_on_result: None,
                on_event: h.on_event.as_ref().map(|f| f.clone_ref(py)),
                reraise: false,
                wait: h.wait.as_ref().map(|f| f.clone_ref(py)),
                before_sleep: h.before_sleep.as_ref().map(|f| f.clone_ref(py)),
            },
            h.budget.as_ref().map(|b| b.clone_ref(py)),
            h.attempt_timeout,
        );
        let mut host = host;
        (host.stats, host.named) = (h.stats.clone(), h.named);
        Ok(Retrier { host: Arc::new(host), cancel: self.cancel.as_ref().map(|t| t.clone_ref(py)), interrupts })
    }
}
