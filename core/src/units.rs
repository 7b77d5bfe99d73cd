//! Time conversions between what hosts hold (float milliseconds in Node and C, float
//! seconds in Python) and [`Duration`], written once: NaN, negative, huge and
//! not-quite-whole values are handled here, the same way for every host.

use std::time::Duration;

/// Float milliseconds as a [`Duration`]: `None` for NaN or negative values, saturating at
/// `Duration::MAX` past u64 milliseconds. Exact for whole milliseconds: whole milliseconds
/// and the fraction are converted apart (so 105 ms does not become 104.999999 ms, and the
/// result does not saturate at u64 nanoseconds, about 1.8e13 ms).
#[inline]
pub fn duration_from_ms(ms: f64) -> Option<Duration> {
    if ms.is_nan() || ms < 0.0 {
        return None;
    }
    if ms >= u64::MAX as f64 {
        return Some(Duration::MAX);
    }
    let whole = ms.floor();
    let nanos = ((ms - whole) * 1e6).round() as u64; // <= 1e6
    Some(Duration::from_millis(whole as u64).checked_add(Duration::from_nanos(nanos)).unwrap_or(Duration::MAX))
}

/// Like [`duration_from_ms`], with NaN and negative values read as zero (a wait or an
/// advance that asks for nothing).
pub fn duration_from_ms_or_zero(ms: f64) -> Duration {
    duration_from_ms(ms).unwrap_or(Duration::ZERO)
}

/// A [`Duration`] as float milliseconds.
pub fn ms_from_duration(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Float seconds as float milliseconds. `0.3 * 1000` is not always an integer in binary
/// floating point; noise far below a microsecond is snapped away so that a value written
/// in whole milliseconds arrives as exactly that. NaN and infinities pass through, for
/// validation to name.
pub fn ms_from_secs(secs: f64) -> f64 {
    let ms = secs * 1000.0;
    let whole = ms.round();
    if (ms - whole).abs() < 1e-6 {
        whole
    } else {
        ms
    }
}

/// Float milliseconds as float seconds.
pub fn secs_from_ms(ms: f64) -> f64 {
    ms / 1000.0
}

/// A number as an error message shows it: as written up to 1e15, in scientific notation
/// past it (or below 1e-6), so `1e300` reads `1e300`, not 301 digits.
pub fn compact(n: f64) -> String {
    let a = n.abs();
    if n.is_finite() && a != 0.0 && !(1e-6..1e15).contains(&a) {
        format!("{n:e}")
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_and_huge_values() {
        assert_eq!(duration_from_ms(f64::NAN), None);
        assert_eq!(duration_from_ms(-1.0), None);
        assert_eq!(duration_from_ms(f64::INFINITY), Some(Duration::MAX));
        assert_eq!(duration_from_ms(1e300), Some(Duration::MAX));
        assert_eq!(duration_from_ms(1e14), Some(Duration::from_millis(100_000_000_000_000)));
        assert_eq!(duration_from_ms_or_zero(-5.0), Duration::ZERO);
    }

    #[test]
    fn whole_milliseconds_are_exact() {
        for ms in [0.0, 1.0, 105.0, 3_000.0, 9.0e15] {
            assert_eq!(duration_from_ms(ms), Some(Duration::from_millis(ms as u64)), "{ms}");
            assert_eq!(ms_from_duration(duration_from_ms(ms).unwrap()), ms);
        }
        assert_eq!(ms_from_secs(0.3), 300.0);
        assert_eq!(ms_from_secs(0.0005), 0.5);
        assert!(ms_from_secs(f64::NAN).is_nan());
        assert_eq!(secs_from_ms(1500.0), 1.5);
    }

    #[test]
    fn huge_numbers_print_compactly() {
        assert_eq!(compact(1e300), "1e300");
        assert_eq!(compact(-2.5e20), "-2.5e20");
        assert_eq!(compact(60000.0), "60000");
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(f64::INFINITY), "inf");
    }
}
