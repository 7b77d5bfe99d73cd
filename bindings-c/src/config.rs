//! The plain config struct C fills in, its defaults initializer, and its translation into
//! the core's `PolicyBuilder` (which does every validation).

use std::ffi::c_char;
use std::sync::Arc;

use retryrs::units::ms_from_duration;
use retryrs::{Jitter, Policy, PolicyBuilder, PolicyError};

use crate::budget::retryrs_budget;
use crate::ffi::{arg_mut, c_str, guard_status, Failure};
use crate::types::*;

/// Every knob of a retrier. Start from retryrs_config_default() (which sets struct_size)
/// and change what you need; retryrs_retrier_new() validates the whole struct and copies
/// what it keeps. New knobs are only ever appended (see "ABI growth" above).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_config {
    /// sizeof(retryrs_config) as the program was compiled: set by retryrs_config_default().
    /// The library reads only that many bytes; a size it does not know is refused.
    pub struct_size: usize,
    /// Total calls, the first one included; >= 1 (1 disables retrying).
    pub max_attempts: u64,
    /// Ceiling of the wait after the first failure, in ms; finite and >= 0.
    pub initial_delay_ms: f64,
    /// Growth of the ceiling per failed attempt; finite and >= 1.
    pub multiplier: f64,
    /// Cap on every backoff delay, in ms; >= initial_delay_ms.
    pub max_delay_ms: f64,
    /// One of RETRYRS_JITTER_*.
    pub jitter: retryrs_jitter,
    /// The factor f of RETRYRS_JITTER_PROPORTIONAL, in [0, 1]; ignored otherwise.
    pub jitter_factor: f64,
    /// false: no deadline (deadline_ms is ignored).
    pub has_deadline: bool,
    /// Budget for the whole call, attempts and waits included, in ms; finite and >= 0.
    pub deadline_ms: f64,
    /// false: fresh random jitter per call; true: reproducible jitter from `seed`.
    pub has_seed: bool,
    /// The jitter seed (used when has_seed).
    pub seed: u64,
    /// The retrier's name in events (UTF-8, copied); NULL: the default name ("retry").
    pub name: *const c_char,
    /// A retry budget shared with other retriers (the retrier keeps its own reference,
    /// so the budget handle may be freed first); NULL: no budget.
    pub budget: *const retryrs_budget,
    /// false: any Retry-After hint is waited out (the deadline still bounds it).
    pub has_max_retry_after: bool,
    /// The longest server-asked wait a call accepts, in ms (finite and >= 0); a longer
    /// hint ends the call at once: RETRYRS_EXHAUSTED, reason RETRYRS_REASON_RETRY_AFTER.
    pub max_retry_after_ms: f64,
}

/// Fills the first `struct_size` bytes of `*config` with the contract's defaults (5
/// attempts, 200 ms, x2, 5000 ms cap, full jitter, a 15000 ms deadline, a 60000 ms
/// max_retry_after, no seed, the default name, no budget) and sets config->struct_size.
/// Call it as retryrs_config_default(&config), the macro that passes sizeof(config).
/// A struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing written.
#[no_mangle]
pub unsafe extern "C" fn retryrs_config_init(config: *mut retryrs_config, struct_size: usize) -> retryrs_status {
    guard_status(|| {
        if config.is_null() {
            return Err(Failure::invalid("retryrs_config_init: config must not be NULL"));
        }
        let size = known_size(struct_size).map_err(|why| Failure::invalid(format!("retryrs_config_init: {why}")))?;
        let mut full = defaults();
        full.struct_size = size;
        // SAFETY: the caller's struct is at least `size` bytes (its own sizeof), and every
        // known size is a prefix of this layout made of whole fields.
        std::ptr::copy_nonoverlapping((&full as *const retryrs_config).cast::<u8>(), config.cast::<u8>(), size);
        Ok(())
    })
}

/// The sizes of retryrs_config this library reads: every layout a release has shipped
/// with a struct_size. Each is a prefix of the current one (fields are only appended);
/// the fields past a smaller size take their defaults.
const KNOWN_SIZES: &[usize] = &[std::mem::size_of::<retryrs_config>()];

pub(crate) fn known_size(size: usize) -> Result<usize, String> {
    if KNOWN_SIZES.contains(&size) {
        return Ok(size);
    }
    Err(format!(
        "struct_size is {size}, not a size of retryrs_config this library knows ({} in retryrs {}): fill the \
         config with retryrs_config_default(), which sets it; a program built against retryrs 0.1's header \
         (whose config has no struct_size) must be recompiled",
        std::mem::size_of::<retryrs_config>(),
        retryrs::VERSION
    ))
}

/// Reads a caller's config of any known size into the current layout (defaults past its
/// end), without reading a byte past struct_size.
///
/// # Safety
/// `config` is NULL or points to at least `struct_size` readable bytes (its first field).
unsafe fn read_config(config: *const retryrs_config) -> Result<retryrs_config, Failure> {
    if config.is_null() {
        return Err(Failure::invalid("retryrs_retrier_new: config must not be NULL"));
    }
    // Only the first field is read before the size is known to be one of ours.
    let size = std::ptr::read_unaligned(config.cast::<usize>());
    let size = known_size(size).map_err(|why| Failure::invalid(format!("retryrs_retrier_new: config->{why}")))?;
    let mut full = defaults();
    std::ptr::copy_nonoverlapping(config.cast::<u8>(), (&mut full as *mut retryrs_config).cast::<u8>(), size);
    Ok(full)
}

/// Reads a jitter spelling ("none", "full", "equal", "decorrelated",
/// "proportional(F)") into a kind and a factor (0 unless proportional), e.g. from a
/// configuration file. Fails with RETRYRS_INVALID_ARGUMENT naming the jitter.
#[no_mangle]
pub unsafe extern "C" fn retryrs_jitter_parse(
    text: *const c_char,
    jitter: *mut retryrs_jitter,
    jitter_factor: *mut f64,
) -> retryrs_status {
    guard_status(|| {
        let text = c_str(text, "text")?;
        let kind = arg_mut(jitter, "jitter")?;
        let factor = arg_mut(jitter_factor, "jitter_factor")?;
        let parsed: Jitter = text.parse().map_err(|e: PolicyError| {
            let mut f = policy_failure(&e);
            f.message = format!("retryrs_jitter_parse: {}", f.message);
            f
        })?;
        (*kind, *factor) = from_jitter(parsed);
        Ok(())
    })
}

/// The C config of the core's default policy: the numbers come from the core.
pub fn defaults() -> retryrs_config {
    from_policy_parts(&Policy::default(), std::ptr::null(), std::ptr::null())
}

/// The C config of a validated policy (a document's), with its name and budget as the
/// caller keeps them alive.
pub fn from_policy_parts(p: &Policy, name: *const c_char, budget: *const retryrs_budget) -> retryrs_config {
    let (jitter, jitter_factor) = from_jitter(p.jitter());
    retryrs_config {
        struct_size: std::mem::size_of::<retryrs_config>(),
        max_attempts: u64::from(p.max_attempts()),
        initial_delay_ms: p.number("initial_delay").unwrap_or(0.0),
        multiplier: p.multiplier(),
        max_delay_ms: ms_from_duration(p.max_delay()),
        jitter,
        jitter_factor,
        has_deadline: p.deadline().is_some(),
        deadline_ms: p.deadline().map_or(0.0, ms_from_duration),
        has_seed: p.seed().is_some(),
        seed: p.seed().unwrap_or(0),
        name,
        budget,
        has_max_retry_after: p.max_retry_after().is_some(),
        max_retry_after_ms: p.max_retry_after().map_or(0.0, ms_from_duration),
    }
}

fn from_jitter(j: Jitter) -> (retryrs_jitter, f64) {
    match j {
        Jitter::None => (RETRYRS_JITTER_NONE, 0.0),
        Jitter::Full => (RETRYRS_JITTER_FULL, 0.0),
        Jitter::Equal => (RETRYRS_JITTER_EQUAL, 0.0),
        Jitter::Proportional(f) => (RETRYRS_JITTER_PROPORTIONAL, f),
        Jitter::Decorrelated => (RETRYRS_JITTER_DECORRELATED, 0.0),
    }
}

fn to_jitter(kind: retryrs_jitter, factor: f64) -> Result<Jitter, Failure> {
    Ok(match kind {
        RETRYRS_JITTER_NONE => Jitter::None,
        RETRYRS_JITTER_FULL => Jitter::Full,
        RETRYRS_JITTER_EQUAL => Jitter::Equal,
        RETRYRS_JITTER_PROPORTIONAL => Jitter::Proportional(factor),
        RETRYRS_JITTER_DECORRELATED => Jitter::Decorrelated,
        other => {
            return Err(Failure::invalid(format!(
                "retryrs_retrier_new: config->jitter must be one of RETRYRS_JITTER_NONE, _FULL, _EQUAL, _PROPORTIONAL, _DECORRELATED, got {other}"
            )))
        }
    })
}

/// The core's validation error in the C API's names (`*_ms` fields, from the knob table)
/// and units (milliseconds, the core's own), huge numbers printed compactly.
pub fn policy_failure(e: &PolicyError) -> Failure {
    let name = |k: &'static str| retryrs::knob::knob(k).map_or_else(|| k.to_string(), |k| k.snake_ms());
    Failure::invalid(e.render(&name, &PolicyError::contract_value))
}

/// [`policy_failure`] for a config handed to `function`: names the function and the
/// field (`retryrs_retrier_new: config->initial_delay_ms must be ...`).
fn config_failure(function: &str, e: &PolicyError) -> Failure {
    let mut f = policy_failure(e);
    f.message = format!("{function}: config->{}", f.message);
    f
}

/// Validates `config` through the core's builder. `name` is returned too so the retrier
/// can hand events a NUL-terminated copy.
///
/// # Safety
/// `config` is NULL or a valid config (of a known struct_size) whose `name` and `budget`
/// are NULL or valid.
pub unsafe fn build(config: *const retryrs_config) -> Result<Policy, Failure> {
    let c = &read_config(config)?;
    let mut builder = PolicyBuilder::new()
        .max_attempts(c.max_attempts)
        .initial_delay_ms(c.initial_delay_ms)
        .multiplier(c.multiplier)
        .max_delay_ms(c.max_delay_ms)
        .jitter(to_jitter(c.jitter, c.jitter_factor)?)
        .deadline_ms(c.has_deadline.then_some(c.deadline_ms))
        .max_retry_after_ms(c.has_max_retry_after.then_some(c.max_retry_after_ms))
        .seed(c.has_seed.then_some(c.seed));
    if !c.name.is_null() {
        builder = builder.name(c_str(c.name, "retryrs_retrier_new: config->name")?);
    }
    if let Some(budget) = c.budget.as_ref() {
        builder = builder.budget(Some(Arc::clone(&budget.inner)));
    }
    builder.build().map_err(|e| config_failure("retryrs_retrier_new", &e))
}
