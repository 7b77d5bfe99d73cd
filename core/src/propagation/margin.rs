//! The margin an inner call keeps for the way back: its deadline is the inbound one minus
//! this, so the answer (or the failure) still reaches the caller before it gives up.

use std::time::Duration;

/// The smallest margin: below it a reply's own latency is the whole of 2%.
pub const MIN_MARGIN: Duration = Duration::from_millis(5);
/// The largest margin: past it 2% of a long budget would waste seconds.
pub const MAX_MARGIN: Duration = Duration::from_millis(250);

/// 2% of the time `left`, clamped to [5 ms, 250 ms].
pub fn margin(left: Duration) -> Duration {
    (left / 50).clamp(MIN_MARGIN, MAX_MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_percent_between_5_and_250_ms() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(margin(ms(0)), ms(5));
        assert_eq!(margin(ms(100)), ms(5));
        assert_eq!(margin(ms(300)), ms(6));
        assert_eq!(margin(ms(2000)), ms(40));
        assert_eq!(margin(ms(12_500)), ms(250));
        assert_eq!(margin(ms(3_600_000)), ms(250));
    }
}
