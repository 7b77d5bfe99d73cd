//! Backoff: the ceiling after the n-th failure, and jitter turning it into a delay.
//!
//! Delays have millisecond resolution: every host (C and Node count milliseconds, Python
//! seconds as floats) then sees the same integers, which is what lets the conformance
//! vectors compare delays exactly.

use crate::pcg::Pcg64Mcg;

use std::time::Duration;

use crate::policy::{Jitter, Policy, Pushback};

/// The backoff ceiling, in whole milliseconds, after the `failed`-th failed attempt
/// (1-based): `min(max_delay, initial_delay * multiplier^(failed-1))`, rounded down.
///
/// Exponentiation by squaring over plain IEEE multiplications, stopping as soon as the cap
/// is reached: O(log n) for any `n` up to `u32::MAX`, never overflowing, wrapping or going
/// negative, and bit-identical on every platform (no libm `powf`).
pub fn ceiling_ms(policy: &Policy, failed: u32) -> u64 {
    let cap = policy.max_delay_ms as f64;
    let mut value = policy.initial_delay_ms;
    if value == 0.0 {
        return 0;
    }
    let mut base = policy.multiplier;
    let mut exp = failed.saturating_sub(1);
    while exp > 0 && value < cap {
        if exp & 1 == 1 {
            value *= base;
        }
        exp >>= 1;
        // Once the base alone passes the cap any further set bit would too; `inf` is fine.
        base *= base;
    }
    if value >= cap {
        policy.max_delay_ms
    } else {
        value as u64 // truncation: floor, since value is finite and >= 0 here
    }
}

/// A zero initial delay makes every ceiling zero, and a zero range draws nothing
/// (`uniform`), so only decorrelated jitter (whose draw is made, and scaled by zero) needs
/// the full step: otherwise every backoff delay is 0 and no draw is made.
///
/// `initial_delay_ms == 0.0` is tested on its bits (either zero, the sign shifted out): an
/// integer test, without the float compare and its NaN branch, on every failure.
#[inline(always)]
fn zero_without_draw(policy: &Policy) -> bool {
    policy.initial_delay_ms.to_bits() << 1 == 0 && !matches!(policy.jitter, Jitter::Decorrelated)
}

/// Per-call jitter state: the random stream (created at the first draw, so a call that
/// never needs randomness never seeds one) and the previous delay for decorrelated jitter,
/// kept in full precision (a whole-millisecond state would never grow from a base under
/// 1 ms: 0.9 ms would round to 0 and stay there).
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    rng: Option<Pcg64Mcg>,
    previous_ms: Option<f64>,
    /// The failed attempt whose hint was waited out under [`Pushback::Grpc`] (0: none):
    /// the backoff counts its failures from the one after it.
    restarted_at: u32,
}

impl Backoff {
    /// A fresh state for one call.
    pub fn new() -> Self {
        Self::default()
    }

    /// The wait, in whole milliseconds, after the `failed`-th failed attempt of a call
    /// whose failure carried `hint` (a server's requested wait), by the policy's
    /// [`Pushback`] rule: the larger of the backoff and the hint rounded up (the
    /// contract's: never sooner than asked), or, for a gRPC policy, exactly the hint, after
    /// which the backoff starts again from `initial_delay` (A6; no draw is made for it).
    pub fn wait_ms(&mut self, policy: &Policy, failed: u32, hint: Option<Duration>) -> u64 {
        match (policy.pushback, hint) {
            (Pushback::Grpc, Some(hint)) => {
                self.restarted_at = failed;
                self.previous_ms = None;
                ceil_ms(hint)
            }
            _ => {
                let backoff = self.next_delay_ms(policy, failed.saturating_sub(self.restarted_at).max(1));
                backoff.max(hint.map_or(0, ceil_ms))
            }
        }
    }

    /// [`Backoff::wait_ms`] as the engine waits it: clamped to `max_ms` (the longest wait
    /// validation implies). Without a hint, a policy whose backoff is always zero and
    /// draws nothing ([`zero_without_draw`]) waits [`Duration::ZERO`] at once: the same
    /// delay and stream, without the millisecond-to-`Duration` conversion (a division,
    /// on every failure of a zero-delay policy).
    #[inline(always)]
    pub(crate) fn wait(&mut self, policy: &Policy, failed: u32, hint: Option<Duration>, max_ms: u64) -> Duration {
        if hint.is_none() && zero_without_draw(policy) {
            return Duration::ZERO;
        }
        Duration::from_millis(self.wait_ms(policy, failed, hint).min(max_ms))
    }

    /// The jittered backoff delay, in milliseconds, after the `failed`-th failed attempt.
    /// Never above `max_delay`.
    #[inline]
    pub fn next_delay_ms(&mut self, policy: &Policy, failed: u32) -> u64 {
        if zero_without_draw(policy) {
            return 0;
        }
        self.jittered_ms(policy, failed)
    }

    #[inline(never)]
    fn jittered_ms(&mut self, policy: &Policy, failed: u32) -> u64 {
        let cap = policy.max_delay_ms;
        match policy.jitter {
            Jitter::None => ceiling_ms(policy, failed),
            Jitter::Full => {
                let c = ceiling_ms(policy, failed);
                self.uniform(policy, 0, c)
            }
            Jitter::Equal => {
                let c = ceiling_ms(policy, failed);
                let half = c / 2;
                half + self.uniform(policy, 0, c - half)
            }
            Jitter::Proportional(f) => {
                let c = ceiling_ms(policy, failed) as f64;
                let lo = (c * (1.0 - f)).floor() as u64;
                let hi = (c * (1.0 + f)).floor() as u64;
                self.uniform(policy, lo, hi).min(cap)
            }
            Jitter::Decorrelated => {
                // The real-valued AWS formula; only the delay slept is whole milliseconds.
                let cap = cap as f64;
                let initial = policy.initial_delay_ms.min(cap);
                let previous = self.previous_ms.unwrap_or(initial);
                let hi = (previous * 3.0).max(initial);
                let exact = (initial + self.unit(policy) * (hi - initial)).min(cap);
                self.previous_ms = Some(exact);
                exact as u64 // floor: finite and >= 0
            }
        }
    }

    /// A uniform real in `[0, 1)` from the call's stream: the top 53 bits of one 64-bit
    /// draw, scaled by 2^-53 (exact in IEEE doubles, so every host can reproduce it).
    fn unit(&mut self, policy: &Policy) -> f64 {
        let draw = self.rng.get_or_insert_with(|| stream(policy.seed)).next_u64();
        (draw >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[lo, hi]` from the call's stream: one 64-bit draw scaled by a
    /// 128-bit multiply (Lemire's method without the rejection step; the bias is below
    /// 2^-40 for any range a delay can have). An empty range draws nothing.
    fn uniform(&mut self, policy: &Policy, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo) as u128 + 1;
        let draw = self.rng.get_or_insert_with(|| stream(policy.seed)).next_u64() as u128;
        lo + ((draw * span) >> 64) as u64
    }
}

/// A hint rounded up to whole milliseconds: never sooner than the server asked.
pub(crate) fn ceil_ms(hint: Duration) -> u64 {
    u64::try_from(hint.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// The random stream of one call. A seed is spread over PCG's 128-bit state with
/// SplitMix64, so seeds 1, 2, 3... start far apart; the recipe is fixed here, not left to
/// a crate's default `seed_from_u64`, which may change.
fn stream(seed: Option<u64>) -> Pcg64Mcg {
    let seed = seed.unwrap_or_else(fresh_seed);
    let mut sm = seed;
    let hi = splitmix64(&mut sm) as u128;
    let lo = splitmix64(&mut sm) as u128;
    Pcg64Mcg::new((hi << 64) | lo)
}

/// A seed for an unseeded call: the next value of one process-wide SplitMix64 sequence,
/// started from OS entropy, and started again when the process has forked since it last
/// started: a forked child inherits its parent's state, and forked workers of one parent
/// must not retry in lockstep.
///
/// No thread-local is involved (only atomics and the `getrandom` system call), so a call
/// made while a thread or the process is being torn down (an atexit handler, a C++ static
/// destructor, a pthread key destructor) gets a seed like any other, and a thread whose
/// only call is made there leaves nothing behind. The check costs one `getpid` when an
/// unseeded call first needs a random delay (after a failure, before a sleep); a call
/// that succeeds never gets here. Never inlined: thread checkers that cannot see atomics
/// (helgrind, DRD) are told about these two by this function's name
/// (bindings-c/suppressions/valgrind.supp).
#[inline(never)]
fn fresh_seed() -> u64 {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    // The process the sequence was started in (0: not yet), and the sequence itself.
    static SEEDED_IN: AtomicU32 = AtomicU32::new(0);
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let pid = process_id();
    if SEEDED_IN.load(Ordering::Acquire) != pid {
        // Two threads starting it at once both store a fresh start: either one will do.
        SEQUENCE.store(os_entropy(pid), Ordering::Relaxed);
        SEEDED_IN.store(pid, Ordering::Release);
    }
    // SplitMix64's own step: a Weyl sequence shared by all threads (each draw is one
    // atomic add), each value scrambled by the finaliser.
    let mut state = SEQUENCE.fetch_add(SPLITMIX_GAMMA, Ordering::Relaxed);
    splitmix64(&mut state)
}

/// 64 bits from the operating system; if it cannot give any, the time, the PID and an
/// address (ASLR) mixed, which still differ between processes and forked children.
#[cfg(not(all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))))]
fn os_entropy(pid: u32) -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let here = &pid as *const u32 as u64;
        let mut mixed = nanos ^ (u64::from(pid) << 32) ^ here.rotate_left(17);
        splitmix64(&mut mixed)
    })
}

/// wasm32-unknown-unknown has no operating system to ask (getrandom needs JavaScript
/// there, and the clock panics): an address of this instance's memory, mixed. Calls in
/// one instance still differ (the sequence above advances), but two instances may start
/// alike: give a policy a `seed` from the host (e.g. `crypto.getRandomValues`) where a
/// fleet of them must not retry in lockstep.
#[cfg(all(target_family = "wasm", any(target_os = "unknown", target_os = "none")))]
fn os_entropy(pid: u32) -> u64 {
    static HERE: u8 = 0;
    let mut mixed = (&HERE as *const u8 as u64) ^ (&pid as *const u32 as u64).rotate_left(32);
    splitmix64(&mut mixed)
}

/// The PID, which changes in a forked child; wasm32-unknown-unknown has neither processes
/// nor fork (std's `process::id` panics there), so it is one constant process.
fn process_id() -> u32 {
    if cfg!(all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))) {
        1
    } else {
        std::process::id()
    }
}

const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(SPLITMIX_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: Jitter) -> Policy {
        Policy::builder()
            .max_attempts(6)
            .initial_delay_ms(100.0)
            .max_delay_ms(1000.0)
            .jitter(jitter)
            .seed(Some(3))
            .build()
            .unwrap()
    }

    #[test]
    fn a_zero_initial_delay_skips_the_step_with_the_same_delays_and_stream() {
        for jitter in [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Proportional(0.5), Jitter::Decorrelated] {
            let p = Policy::builder().initial_delay_ms(0.0).jitter(jitter).seed(Some(3)).build().unwrap();
            let (mut fast, mut full) = (Backoff::new(), Backoff::new());
            for failed in 1..=5 {
                assert_eq!(fast.next_delay_ms(&p, failed), full.jittered_ms(&p, failed), "{jitter:?}");
                assert!(fast.rng == full.rng && fast.previous_ms == full.previous_ms, "{jitter:?}: the stream state");
            }
        }
    }

    #[test]
    fn ceiling_doubles_then_caps() {
        let p = policy(Jitter::None);
        let got: Vec<u64> = (1..=7).map(|n| ceiling_ms(&p, n)).collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000, 1000]);
    }

    #[test]
    fn huge_attempt_numbers_stay_at_the_cap() {
        let p = policy(Jitter::None);
        for n in [64, 1_000, 1 << 20, u32::MAX - 1, u32::MAX] {
            assert_eq!(ceiling_ms(&p, n), 1000, "n = {n}");
        }
        let slow = Policy::builder().multiplier(1.000_000_1).initial_delay_ms(1.0).max_delay_ms(1e12).build().unwrap();
        assert_eq!(ceiling_ms(&slow, u32::MAX), 1e12 as u64);
    }

    #[test]
    fn multiplier_one_is_constant_and_zero_stays_zero() {
        let constant = Policy::builder().multiplier(1.0).initial_delay_ms(300.0).build().unwrap();
        assert_eq!(ceiling_ms(&constant, u32::MAX), 300);
        let zero = Policy::builder().initial_delay_ms(0.0).max_delay_ms(0.0).build().unwrap();
        assert_eq!(ceiling_ms(&zero, u32::MAX), 0);
    }

    #[test]
    fn none_returns_the_ceiling() {
        let p = policy(Jitter::None);
        assert_eq!(Backoff::new().next_delay_ms(&p, 3), 400);
    }

    #[test]
    fn full_and_equal_stay_in_range_and_vary() {
        let full = policy(Jitter::Full);
        let equal = policy(Jitter::Equal);
        let (mut b1, mut b2) = (Backoff::new(), Backoff::new());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let d = b1.next_delay_ms(&full, 4);
            assert!(d <= 800);
            seen.insert(d);
            let e = b2.next_delay_ms(&equal, 4);
            assert!((400..=800).contains(&e), "{e}");
        }
        assert!(seen.len() > 700, "full jitter barely varies: {} values", seen.len());
    }

    #[test]
    fn same_seed_same_delays_other_seed_other_delays() {
        let p = policy(Jitter::Full);
        let run = |p: &Policy| (1..=5).map(|n| Backoff::new().next_delay_ms(p, n)).collect::<Vec<_>>();
        assert_eq!(run(&p), run(&p));
        let other = Policy::builder()
            .max_attempts(6)
            .initial_delay_ms(100.0)
            .max_delay_ms(1000.0)
            .seed(Some(4))
            .build()
            .unwrap();
        assert_ne!(run(&p), run(&other));
    }

    #[test]
    fn the_stream_is_pinned() {
        // These numbers are the contract's: every host reproduces them for seed 3. If this
        // test fails, the RNG recipe changed and every seeded vector with it.
        let p = policy(Jitter::Full);
        let mut b = Backoff::new();
        let got: Vec<u64> = (1..=5).map(|n| b.next_delay_ms(&p, n)).collect();
        assert_eq!(got, PINNED_SEED_3);
    }
    const PINNED_SEED_3: [u64; 5] = [51, 145, 356, 641, 861];

    #[test]
    fn decorrelated_grows_from_initial_and_caps() {
        let p = policy(Jitter::Decorrelated);
        let mut b = Backoff::new();
        let mut previous = 100;
        for n in 1..50 {
            let d = b.next_delay_ms(&p, n);
            assert!((100..=1000).contains(&d) && d <= previous * 3, "{d} after {previous}");
            previous = d;
        }
    }

    #[test]
    fn decorrelated_grows_from_a_sub_millisecond_base() {
        // A whole-millisecond state rounded 0.9 ms down to 0 and stayed there forever.
        let p = Policy::builder()
            .initial_delay_ms(0.9)
            .max_delay_ms(10_000.0)
            .jitter(Jitter::Decorrelated)
            .seed(Some(1))
            .build()
            .unwrap();
        let mut b = Backoff::new();
        let first = b.next_delay_ms(&p, 1);
        let state = b.previous_ms.unwrap();
        assert!(state.fract() != 0.0 && state as u64 == first, "state {state} vs {first}");
        let got: Vec<u64> = (2..=20).map(|n| b.next_delay_ms(&p, n)).collect();
        assert!(got.iter().any(|&d| d >= 10), "never grew: {got:?}");
    }

    #[test]
    fn unseeded_streams_differ_between_calls() {
        let p = Policy::builder().initial_delay_ms(1e9).max_delay_ms(1e9).build().unwrap();
        let a: Vec<u64> = (1..=4).map(|n| Backoff::new().next_delay_ms(&p, n)).collect();
        let b: Vec<u64> = (1..=4).map(|n| Backoff::new().next_delay_ms(&p, n)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn proportional_is_clamped_to_the_cap() {
        let p = Policy::builder()
            .initial_delay_ms(1000.0)
            .max_delay_ms(1000.0)
            .jitter(Jitter::Proportional(0.5))
            .build()
            .unwrap();
        let mut b = Backoff::new();
        let mut hit_cap = false;
        for _ in 0..1000 {
            let d = b.next_delay_ms(&p, 1);
            assert!((500..=1000).contains(&d));
            hit_cap |= d == 1000;
        }
        assert!(hit_cap);
    }
}
