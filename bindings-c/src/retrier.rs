//! The retrier handle: a validated, immutable policy shared by every call made with it.

use std::ffi::CString;
use std::sync::Arc;

use retryrs::Retrier;

use crate::config::{build, retryrs_config};
use crate::ffi::{arg_mut, free_handle, guard_status, guard_value, hand_out, Failure};
use crate::types::*;

/// A retrier (opaque): immutable, so any number of threads may run calls with it at
/// once; each call keeps its own state.
pub struct retryrs_retrier {
    pub(crate) inner: Arc<Shared>,
}

/// What a retrier and the engine calls started from it share.
pub struct Shared {
    /// The core's retrier over the policy.
    pub retrier: Retrier,
    /// The name, NUL-terminated, for events.
    pub name: CString,
}

impl Shared {
    /// This retrier under this thread's request context (retryrs_context_enter), when
    /// one constrains it: a copy sharing the statistics. Asked behind one flag
    /// (`retryrs::propagation::in_use`) on a call's start: out of line, the happy path of
    /// a program that never propagates pays one load.
    #[cold]
    #[inline(never)]
    pub fn under_current(&self) -> Option<Arc<Shared>> {
        let retrier = self.retrier.under_current()?;
        Some(Arc::new(Shared { retrier, name: self.name.clone() }))
    }

    /// One event of a call made with this retrier: counted in its statistics, then
    /// delivered to the call's listener, if it has one. Inlined into each call's event
    /// sink (a blocking call sends one per failure): left to the codegen units' split it
    /// was an out-of-line call for some builds and not others (+67 instructions a call).
    #[inline]
    pub fn report(&self, listener: Option<&crate::event::retryrs_listener>, event: &retryrs::Event<'_>) {
        self.retrier.stats_counters().observe(event);
        if let Some(l) = listener {
            l.deliver(event, &self.name);
        }
    }
}

/// Validates `config` and creates a retrier. On RETRYRS_INVALID_ARGUMENT nothing is
/// created and retryrs_last_error() names the field and value ("retryrs_retrier_new:
/// config->max_attempts must be >= 1 and <= 4294967295, got 0"); a config whose
/// struct_size this library does not know is refused the same way (see "ABI growth").
/// Free with retryrs_retrier_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_new(
    config: *const retryrs_config,
    out: *mut *mut retryrs_retrier,
) -> retryrs_status {
    guard_status("retryrs_retrier_new", || {
        arg_mut(out, "out")?;
        let policy = build(config)?;
        // The name came from a C string (or is the core's default), so it has no NUL.
        let name = CString::new(policy.name()).map_err(|_| Failure::invalid("config->name contains NUL"))?;
        hand_out(out, retryrs_retrier { inner: Arc::new(Shared { retrier: Retrier::new(policy), name }) });
        Ok(())
    })
}

/// Releases the retrier. NULL is a no-op. Must not be called twice for the same retrier.
/// Engine calls started from it stay valid (they share the policy), and so does a
/// blocking call already running with it on another thread (it holds its own reference):
/// only starting a new call with a freed retrier is an error.
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_free(retrier: *mut retryrs_retrier) {
    guard_value("retryrs_retrier_free", (), || free_handle(retrier))
}
