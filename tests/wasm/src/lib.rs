//! The engine run on wasm32-unknown-unknown, where std has no clock, no threads and no
//! OS entropy (each traps): `make wasm-check-rust` builds this module for that target and
//! `tests/wasm/run.mjs` runs it in Node against the seeded jitter vectors of
//! tests/conformance/jitter.json. The host gives every time (a sans-IO engine reads no
//! clock), so a trap here means the engine reached something wasm32 does not have.

use std::time::Duration;

use retryrs::{Call, Decision, Jitter, Policy, Resume, Verdict};

/// The jitter codes `run.mjs` passes (a number crosses the wasm boundary without glue).
fn jitter(code: u32, factor: f64) -> Option<Jitter> {
    Some(match code {
        0 => Jitter::None,
        1 => Jitter::Full,
        2 => Jitter::Equal,
        3 => Jitter::Decorrelated,
        4 => Jitter::Proportional(factor),
        _ => return None,
    })
}

/// A call whose every attempt fails transiently at once (each attempt takes no time):
/// the engine's waits, in whole milliseconds, are written to `out` (at most `cap`).
/// Returns how many, or -1 when the policy is refused. `seeded` 0: no seed (the engine's
/// own seeding, which must not trap either); `deadline_ms` < 0: no deadline.
///
/// # Safety
/// `out` points to `cap` writable u32s.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn smoke_delays(
    seed: u64,
    seeded: u32,
    jitter_code: u32,
    factor: f64,
    initial_ms: f64,
    max_ms: f64,
    max_attempts: u32,
    deadline_ms: f64,
    out: *mut u32,
    cap: u32,
) -> i32 {
    let Some(jitter) = jitter(jitter_code, factor) else { return -1 };
    let policy = Policy::builder()
        .seed((seeded != 0).then_some(seed))
        .jitter(jitter)
        .initial_delay_ms(initial_ms)
        .max_delay_ms(max_ms)
        .max_attempts(u64::from(max_attempts))
        .deadline_ms((deadline_ms >= 0.0).then_some(deadline_ms))
        .build();
    let Ok(policy) = policy else { return -1 };
    let mut now = Duration::ZERO;
    let mut call = Call::start(&policy, now);
    let mut n = 0u32;
    loop {
        match call.record(Verdict::TRANSIENT, now, &mut |_| {}) {
            Ok(Decision::Retry(delay)) => {
                if n < cap {
                    // SAFETY: n < cap, and the caller gave cap writable slots.
                    unsafe { *out.add(n as usize) = delay.as_millis() as u32 };
                }
                n += 1;
                now += delay;
                match call.after_wait(now, &mut |_| {}) {
                    Ok(Resume::Attempt(_)) => {}
                    _ => return n as i32,
                }
            }
            Ok(Decision::Stop(_)) => return n as i32,
            Err(_) => return -1,
        }
    }
}

/// Scratch memory for `out` (the module exports no allocator).
#[no_mangle]
pub static mut SMOKE_OUT: [u32; 64] = [0; 64];

/// Where SMOKE_OUT is in the module's memory.
#[no_mangle]
pub extern "C" fn smoke_out() -> *mut u32 {
    std::ptr::addr_of_mut!(SMOKE_OUT).cast()
}

#[cfg(test)]
mod tests {
    /// Natively, the same export gives the vector's delays (so a wasm mismatch is wasm's).
    #[test]
    fn seed_42_defaults_natively() {
        let mut out = [0u32; 8];
        let n = unsafe { super::smoke_delays(42, 1, 1, 0.0, 200.0, 5_000.0, 5, 15_000.0, out.as_mut_ptr(), 8) };
        assert_eq!(&out[..n as usize], &[103, 5, 456, 1127]);
    }
}
