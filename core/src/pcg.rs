//! PCG64-MCG (`pcg64_fast`: a 128-bit multiplicative congruential generator with the
//! XSL-RR output function), the jitter's random stream. A named algorithm whose output is
//! fixed forever, so a seed gives the same delays in every host and every release. It is
//! a dozen lines, so it lives here rather than in a dependency (it was `rand_pcg`'s
//! `Pcg64Mcg`; the test below holds it to the reference implementation's numbers).

/// PCG's default multiplier for 128-bit state.
const MULTIPLIER: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

/// The generator. Its state is always odd (an MCG's must be).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Pcg64Mcg {
    state: u128,
}

impl std::fmt::Debug for Pcg64Mcg {
    /// Does not show the state.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pcg64Mcg")
    }
}

impl Pcg64Mcg {
    /// A generator at `state` (its low bit forced to 1, as the C implementation does).
    pub(crate) fn new(state: u128) -> Self {
        Pcg64Mcg { state: state | 1 }
    }

    /// The next 64 bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(MULTIPLIER);
        // XSL RR: xor the halves, rotate by the top 6 bits.
        let rot = (self.state >> 122) as u32;
        (((self.state >> 64) as u64) ^ (self.state as u64)).rotate_right(rot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_implementations_numbers() {
        // The PCG C library's own test vector for pcg64_fast seeded with 42 (as rand_pcg's
        // test suite copies it).
        let mut rng = Pcg64Mcg::new(42);
        let got: Vec<u64> = (0..6).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                0x63b4_a3a8_13ce_700a,
                0x3829_5420_0617_ab24,
                0xa7fd_85ae_3fe9_50ce,
                0xd715_286a_a288_7737,
                0x60c9_2fee_2e59_f32c,
                0x84c4_e96b_eff3_0017
            ]
        );
    }
}
