#!/usr/bin/env python3
"""An independent model of the engine's seeded jitter stream, for checking vectors.

Written from the recipe documented in core/src/backoff.rs and tests/conformance/README.md,
not from the engine's output: SplitMix64 spreads the seed over a 128-bit PCG64-MCG state
(PCG XSL-RR 128/64, multiplicative), one 64-bit draw per jittered delay.

    python3 tests/conformance/models/jitter_model.py            # self-check + the vectors
"""

M64 = (1 << 64) - 1
M128 = (1 << 128) - 1
PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


class Stream:
    def __init__(self, seed):
        sm, hi = splitmix64(seed)
        sm, lo = splitmix64(sm)
        self.state = ((hi << 64) | lo) | 1

    def next_u64(self):
        self.state = (self.state * PCG_MULT) & M128
        rot = self.state >> 122
        xsl = ((self.state >> 64) ^ self.state) & M64
        return ((xsl >> rot) | (xsl << (64 - rot))) & M64 if rot else xsl

    def uniform_int(self, lo, hi):
        """Integer in [lo, hi]: one draw, 128-bit multiply-shift (full/equal/proportional)."""
        if hi <= lo:
            return lo
        return lo + ((self.next_u64() * (hi - lo + 1)) >> 64)

    def unit(self):
        """Real in [0, 1): the draw's top 53 bits times 2^-53."""
        return (self.next_u64() >> 11) * 2.0**-53


def full_jitter(seed, initial, multiplier, cap, failures):
    s = Stream(seed)
    return [s.uniform_int(0, min(cap, int(initial * multiplier ** (n - 1)))) for n in range(1, failures + 1)]


def decorrelated(seed, initial, cap, failures):
    """min(cap, uniform[initial, 3 * previous]) over reals; the slept delay is its floor."""
    s = Stream(seed)
    cap = float(cap)
    initial = min(float(initial), cap)
    previous = initial
    out = []
    for _ in range(failures):
        hi = max(previous * 3.0, initial)
        exact = min(initial + s.unit() * (hi - initial), cap)
        previous = exact
        out.append(int(exact))
    return out


if __name__ == "__main__":
    # The model agrees with the stream pinned in core/src/backoff.rs (full jitter, seed 3).
    assert full_jitter(3, 100, 2, 1000, 5) == [51, 145, 356, 641, 861], full_jitter(3, 100, 2, 1000, 5)
    print("jitter-decorrelated-seed7:", decorrelated(7, 100, 2000, 7))
    print("jitter-decorrelated-sub-ms-base:", decorrelated(11, 0.9, 10000, 11))
