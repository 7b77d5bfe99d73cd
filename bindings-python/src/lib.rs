//! Python binding of retryrs: the native module `retryrs._native`.
//!
//! It holds the policy, the engine and the blocking executor; the Python package around it
//! (`python/retryrs`) holds the asyncio driver, the decorator sugar, the exception classes
//! and the logging adapter. Every decision, delay, validation and parse is the engine's.

use pyo3::prelude::*;

mod ambient;
mod attempt;
mod breaker;
mod budget;
mod convert;
mod document;
mod errors;
mod event;
mod hedged;
mod host_policy;
mod http;
mod knobs;
mod listeners;
mod options;
mod own_attr;
mod preload;
mod propagation;
mod pushback;
mod retrier;
mod state;
mod step;
mod stepped;
mod testing;
mod token;
mod wait;
mod wrapped;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<retrier::Retrier>()?;
    m.add_class::<stepped::SteppedCall>()?;
    m.add_class::<attempt::AttemptInfo>()?;
    m.add_function(wrap_pyfunction!(attempt::current_attempt, m)?)?;
    m.add_function(wrap_pyfunction!(attempt::_leave_attempt, m)?)?;
    m.add_class::<step::FirstAttempt>()?;
    m.add_class::<hedged::HedgedCall>()?;
    hedged::add_constants(m)?;
    pushback::add(m)?;
    propagation::add(m)?;
    ambient::add(m)?;
    m.add("_CURRENT", attempt::context_var(m.py())?)?;
    m.add_class::<event::PyEvent>()?;
    m.add_class::<token::PyCancelToken>()?;
    m.add_class::<budget::PyRetryBudget>()?;
    m.add_class::<breaker::PyCircuitBreaker>()?;
    m.add_class::<wrapped::RetryingFunction>()?;
    m.add_class::<testing::VirtualScope>()?;
    m.add_class::<testing::PyProcessScope>()?;
    testing::init(m)?;
    m.add_function(wrap_pyfunction!(options::_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(preload::_preload, m)?)?;
    m.add_class::<document::PyPolicy>()?;
    m.add_class::<document::PyDocument>()?;
    m.add_function(wrap_pyfunction!(document::_load_policies, m)?)?;
    m.add_function(wrap_pyfunction!(http::parse_retry_after, m)?)?;
    m.add_function(wrap_pyfunction!(http::is_retryable_status, m)?)?;
    m.add_function(wrap_pyfunction!(http::classify_http, m)?)?;
    m.add_function(wrap_pyfunction!(http::redact_url, m)?)?;
    m.add_function(wrap_pyfunction!(http::check_redact_keys, m)?)?;
    m.add_function(wrap_pyfunction!(http::is_error_status, m)?)?;
    m.add_function(wrap_pyfunction!(http::redacted_query_keys, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_testing_enable_process_wide, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_testing_disable_process_wide, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_testing_is_on, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_testing_advance, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_testing_now, m)?)?;
    m.add("RETRYABLE_STATUSES", pyo3::types::PyTuple::new(m.py(), retryrs::RETRYABLE_STATUSES)?)?;
    m.add("IDEMPOTENT_METHODS", pyo3::types::PyTuple::new(m.py(), retryrs::IDEMPOTENT_METHODS)?)?;
    m.add("__version__", retryrs::VERSION)?;
    // Lets a wait on a daemon thread stay out of a finalizing interpreter (wait.rs).
    let exiting = wrap_pyfunction!(wait::_interpreter_exiting, m)?;
    m.py().import("atexit")?.call_method1("register", (exiting,))?;
    Ok(())
}
