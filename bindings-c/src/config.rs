//! The config struct C fills in (laid out from the knob table in config_layout.rs), its
//! defaults initializer, and its translation into the core's `PolicyBuilder` (which does
//! every validation).

use std::ffi::c_char;
use std::sync::Arc;

use retryrs::{Jitter, Policy, PolicyBuilder, PolicyError};

// KNOWN_SIZES: every layout since struct_size came, one per appended knob (generated,
// so adding a knob keeps programs built against the older header working).
pub use crate::config_layout::{from_policy_parts, retryrs_config};
use crate::config_layout::{set_numbers, KNOWN_SIZES};
use crate::ffi::{arg_mut, c_str, guard_status, Failure};
use crate::types::*;

/// Fills the first `struct_size` bytes of `*config` with the contract's defaults (each
/// field's comment says its own) and sets config->struct_size.
/// Call it as retryrs_config_default(&config), the macro that passes sizeof(config).
/// A struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing written.
#[no_mangle]
pub unsafe extern "C" fn retryrs_config_init(config: *mut retryrs_config, struct_size: usize) -> retryrs_status {
    guard_status("retryrs_config_init", || {
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
    guard_status("retryrs_jitter_parse", || {
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

pub(crate) fn from_jitter(j: Jitter) -> (retryrs_jitter, f64) {
    match j {
        Jitter::None => (RETRYRS_JITTER_NONE, 0.0),
        Jitter::Full => (RETRYRS_JITTER_FULL, 0.0),
        Jitter::Equal => (RETRYRS_JITTER_EQUAL, 0.0),
        Jitter::Proportional(f) => (RETRYRS_JITTER_PROPORTIONAL, f),
        Jitter::Decorrelated => (RETRYRS_JITTER_DECORRELATED, 0.0),
        // Jitter is #[non_exhaustive] for Rust users; a kind added to the core comes with
        // its C constant, here and in retryrs.h (the header test checks the list).
        other => unreachable!("jitter {other:?} has no C constant yet"),
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
    Failure::invalid(e.render(&|k| retryrs::Spelling::C.name(k), &PolicyError::contract_value))
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
    let numbers = set_numbers(c, PolicyBuilder::new()).map_err(|e| config_failure("retryrs_retrier_new", &e))?;
    let mut builder = numbers.jitter(to_jitter(c.jitter, c.jitter_factor)?).seed(c.has_seed.then_some(c.seed));
    if !c.name.is_null() {
        builder = builder.name(c_str(c.name, "retryrs_retrier_new: config->name")?);
    }
    if let Some(budget) = c.budget.as_ref() {
        builder = builder.budget(Some(Arc::clone(&budget.inner)));
    }
    builder.build().map_err(|e| match e.knob {
        // C holds the factor in its own field: name that field, not the jitter kind.
        "jitter" if c.jitter == RETRYRS_JITTER_PROPORTIONAL => Failure::invalid(format!(
            "retryrs_retrier_new: config->jitter_factor must be in [0, 1] with RETRYRS_JITTER_PROPORTIONAL, got {}",
            retryrs::units::compact(c.jitter_factor)
        )),
        _ => config_failure("retryrs_retrier_new", &e),
    })
}
