//! HTTP-date (RFC 9110 §5.6.7) as seconds since the Unix epoch, for Retry-After.
//!
//! Hand-written because the contract is more lenient than the `httpdate` crate, which
//! rejects dates before 1970, rejects a weekday that does not match the date, and reads
//! RFC 850's two-digit years with a fixed 1970 pivot instead of RFC 9110's 50-year rule.
//! The three forms have fixed layouts, so each is a few byte comparisons.

const MONTHS: [&[u8; 3]; 12] =
    [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// Seconds since 1970-01-01T00:00:00Z (negative before it) of an HTTP-date in any of its
/// three forms, or `None` if `value` is not one. The weekday must be a weekday name but is
/// not checked against the date. An RFC 850 two-digit year is read in the century of
/// `now_s` (Unix seconds), unless that timestamp is more than 50 years after `now_s`:
/// then it is the most recent past year with those digits (RFC 9110's rule, which
/// compares timestamps, not calendar years).
pub fn parse(value: &str, now_s: i64) -> Option<i64> {
    let s = value.as_bytes();
    imf_fixdate(s).or_else(|| rfc850(s, now_s)).or_else(|| asctime(s))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(s: &[u8]) -> Option<i64> {
    if s.len() != 29
        || s[3] != b','
        || s[4] != b' '
        || s[7] != b' '
        || s[11] != b' '
        || s[16] != b' '
        || &s[25..] != b" GMT"
    {
        return None;
    }
    short_weekday(&s[..3])?;
    timestamp(number(&s[12..16])?, month(&s[8..11])?, number(&s[5..7])?, &s[17..25])
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn rfc850(s: &[u8], now_s: i64) -> Option<i64> {
    let comma = s.iter().position(|&b| b == b',')?;
    let day_name = std::str::from_utf8(&s[..comma]).ok()?;
    if !DAYS.iter().any(|d| d.eq_ignore_ascii_case(day_name)) {
        return None;
    }
    let s = &s[comma..];
    if s.len() != 24 || s[1] != b' ' || s[4] != b'-' || s[8] != b'-' || s[11] != b' ' || &s[20..] != b" GMT" {
        return None;
    }
    let two_digits = number(&s[9..11])?;
    let (month, day, time) = (month(&s[5..8])?, number(&s[2..4])?, &s[12..20]);
    let now = civil(now_s);
    let year = now.0 - now.0.rem_euclid(100) + two_digits;
    let when = timestamp(year, month, day, time)?;
    // "More than 50 years in the future": later than the same instant 50 calendar years
    // on, compared field by field (a 29 February needs no 50-years-later twin).
    let (h, m, sec) = (number(&time[..2])?, number(&time[3..5])?, number(&time[6..8])?);
    if (year, month, day, h * 3600 + m * 60 + sec) > (now.0 + 50, now.1, now.2, now.3) {
        return timestamp(year - 100, month, day, time);
    }
    Some(when)
}

/// `Sun Nov  6 08:49:37 1994` (the day of the month space-padded)
fn asctime(s: &[u8]) -> Option<i64> {
    if s.len() != 24 || s[3] != b' ' || s[7] != b' ' || s[10] != b' ' || s[19] != b' ' {
        return None;
    }
    short_weekday(&s[..3])?;
    let day = match s[8] {
        b' ' => number(&s[9..10])?,
        _ => number(&s[8..10])?,
    };
    timestamp(number(&s[20..24])?, month(&s[4..7])?, day, &s[11..19])
}

fn short_weekday(s: &[u8]) -> Option<()> {
    DAYS.iter().any(|d| d.as_bytes()[..3].eq_ignore_ascii_case(s)).then_some(())
}

fn month(s: &[u8]) -> Option<i64> {
    MONTHS.iter().position(|m| m.eq_ignore_ascii_case(s)).map(|i| i as i64 + 1)
}

/// ASCII digits only (no sign, no space) as a number.
fn number(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + i64::from(d - b'0')))
}

/// `hh:mm:ss` on the given date, checked (a leap second, :60, is accepted as RFC 9110's
/// grammar allows).
fn timestamp(year: i64, month: i64, day: i64, time: &[u8]) -> Option<i64> {
    if time[2] != b':' || time[5] != b':' {
        return None;
    }
    let (h, m, sec) = (number(&time[..2])?, number(&time[3..5])?, number(&time[6..8])?);
    if h > 23 || m > 59 || sec > 60 || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The Gregorian year of a Unix time in seconds.
#[cfg(test)]
fn year_of(unix_s: i64) -> i64 {
    civil(unix_s).0
}

/// The Gregorian date of a Unix time in seconds: year, month, day, second of the day.
fn civil(unix_s: i64) -> (i64, i64, i64, i64) {
    // Inverse of days_from_civil.
    let z = unix_s.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let day = doy - (153 * mp + 2) / 5 + 1;
    (yoe + era * 400 + i64::from(month <= 2), month, day, unix_s.rem_euclid(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_examples_in_every_form() {
        let t = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT", t), Some(t));
        assert_eq!(parse("Sunday, 06-Nov-94 08:49:37 GMT", t), Some(t));
        assert_eq!(parse("Sun Nov  6 08:49:37 1994", t), Some(t));
    }

    #[test]
    fn before_1970_and_wrong_weekdays_are_dates() {
        assert_eq!(parse("Fri, 01 Jan 1960 00:00:00 GMT", IN_2026), Some(-315_619_200));
        assert_eq!(parse("Sun, 07 Nov 1994 08:48:37 GMT", IN_2026), Some(784_111_777 + 86_400 - 60));
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT", IN_2026), Some(0));
    }

    /// 2026-12-01T00:00:00Z.
    const IN_2026: i64 = 1_796_083_200;

    #[test]
    fn two_digit_years_follow_the_50_year_rule() {
        let t = 784_111_777;
        // Read in 2026: 70 is 2070 (44 years ahead), 80 would be 2080 (54 ahead) so 1980.
        assert_eq!(parse("Wednesday, 01-Jan-70 00:00:00 GMT", IN_2026).map(year_of), Some(2070));
        assert_eq!(parse("Tuesday, 01-Jan-80 00:00:00 GMT", IN_2026).map(year_of), Some(1980));
        assert_eq!(parse("Monday, 01-Jan-76 00:00:00 GMT", IN_2026).map(year_of), Some(2076));
        assert_eq!(parse("Monday, 01-Jan-77 00:00:00 GMT", IN_2026).map(year_of), Some(1977));
        assert_eq!(parse("Monday, 01-Jan-94 00:00:00 GMT", t).map(year_of), Some(1994));
        // The rule compares timestamps: on 2026-12-01, 2076-12-01 00:00:00 is exactly 50
        // years ahead (kept), one second later is more than 50 (the past century).
        assert_eq!(parse("Tuesday, 01-Dec-76 00:00:00 GMT", IN_2026).map(year_of), Some(2076));
        assert_eq!(parse("Tuesday, 01-Dec-76 00:00:01 GMT", IN_2026).map(year_of), Some(1976));
        assert_eq!(parse("Thursday, 31-Dec-76 00:00:00 GMT", IN_2026), Some(220_838_400));
        assert_eq!(parse("Monday, 30-Nov-76 23:59:59 GMT", IN_2026).map(year_of), Some(2076));
        // A 29 February 50 years on from a date without one.
        assert_eq!(parse("Saturday, 29-Feb-76 00:00:00 GMT", 1_772_323_200).map(year_of), Some(2076));
    }

    #[test]
    fn impossible_dates_and_other_shapes_are_not_dates() {
        for bad in [
            "Sun, 31 Feb 2026 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, -6 Nov 1994 08:49:37 GMT",
            "Funday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "",
        ] {
            assert_eq!(parse(bad, IN_2026), None, "{bad:?}");
        }
    }

    #[test]
    fn years_round_trip() {
        for (y, m, d) in [(1960, 1, 1), (1969, 12, 31), (1970, 1, 1), (2000, 2, 29), (2026, 11, 30), (9999, 12, 31)] {
            assert_eq!(civil(days_from_civil(y, m, d) * 86_400 + 86_399), (y, m, d, 86_399));
        }
    }
}
