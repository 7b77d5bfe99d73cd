//! The simulator's own randomness: network delays, client phases, which arrivals an
//! overloaded server sheds. Backoff jitter never comes from here: it comes from the engine,
//! seeded per call by [`call_seed`].

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

/// A seeded stream for the world around the clients (not for their backoff).
pub struct WorldRng(Pcg64Mcg);

impl WorldRng {
    /// The stream for `seed` and `lane` (one lane per independent use, so adding a draw to
    /// one part of a scenario does not shift every other part).
    pub fn new(seed: u64, lane: u64) -> Self {
        let mut sm = seed ^ lane.wrapping_mul(0xA24B_AED4_963E_E407);
        let hi = splitmix64(&mut sm) as u128;
        let lo = splitmix64(&mut sm) as u128;
        WorldRng(Pcg64Mcg::new((hi << 64) | lo))
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// |Normal(mean, sd)|, the AWS simulator's network delay. Box-Muller by hand (one
    /// formula): a distribution crate may change its value stream between versions, and
    /// the tables must stay byte-identical for a seed.
    pub fn abs_normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mean + sd * z).abs()
    }
}

/// The jitter seed of call `index` in a run seeded `seed`: every call its own stream, the
/// same stream for the same seed.
pub fn call_seed(seed: u64, index: u64) -> u64 {
    let mut sm = seed.rotate_left(17) ^ index;
    splitmix64(&mut sm)
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
