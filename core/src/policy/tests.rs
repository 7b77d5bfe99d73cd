//! The policy's tests: the defaults, each knob's rule and its error in a host's names,
//! jitter spellings, a builder from a policy, an attempt's bounds, the deadline hint.

use super::*;
use crate::spelling::Spelling;

#[test]
fn a_call_starts_on_the_coarse_clock_only_under_bounds_of_a_second_or_more() {
    let ms = Duration::from_millis;
    let with = |deadline: Option<Duration>, timeout: Option<Duration>| {
        Policy::builder().deadline(deadline).attempt_timeout(timeout).build().unwrap().tolerates_coarse_start()
    };
    assert!(with(Some(ms(15_000)), None), "the default 15 s deadline");
    assert!(with(Some(ms(1000)), Some(ms(1000))));
    assert!(!with(Some(ms(999)), None), "a tick of 10 ms would be over 1% of it");
    assert!(!with(Some(ms(15_000)), Some(ms(250))));
    let breaker = Arc::new(crate::breaker::CircuitBreaker::new(crate::breaker::BreakerConfig::consecutive(5)).unwrap());
    let shared = Policy::builder().breaker(Some(breaker)).build().unwrap();
    assert!(!shared.tolerates_coarse_start(), "a breaker keeps time with other calls");
}

#[test]
fn the_deadline_hint_names_both_knobs_when_the_backoff_cannot_fit() {
    // Defaults: 200 ms doubling to the 5 s cap; 9 waits = 0.2+0.4+0.8+1.6+3.2+4*5 = 26.2 s.
    let ten = Policy::builder().max_attempts(10).build().unwrap();
    let hint = ten.deadline_hint().expect("26.2 s of waits do not fit 15 s");
    assert_eq!(hint.waits, Duration::from_millis(26_200));
    assert_eq!(
        hint.to_string(),
        "max_attempts=10 needs up to 26.2 s of backoff waits (before jitter), deadline is 15 s: raise deadline or lower max_attempts"
    );
    assert_eq!(
        hint.render(Spelling::Node),
        "maxAttempts=10 needs up to 26200 ms of backoff waits (before jitter), deadlineMs is 15000 ms: raise deadlineMs or lower maxAttempts"
    );
    assert_eq!(
        hint.render(Spelling::C),
        "max_attempts=10 needs up to 26200 ms of backoff waits (before jitter), deadline_ms is 15000 ms: raise deadline_ms or lower max_attempts"
    );
    assert_eq!(hint.render(Spelling::Python), hint.to_string());
    assert_eq!(Policy::default().deadline_hint(), None, "5 attempts: 6.2 s of waits fit");
    assert_eq!(Policy::builder().max_attempts(10).deadline(None).build().unwrap().deadline_hint(), None);
    // Exactly the deadline fits.
    let exact = Policy::builder().max_attempts(3).initial_delay_ms(100.0).deadline_ms(Some(300.0)).build().unwrap();
    assert_eq!(exact.deadline_hint(), None);
    let over = Policy::builder().max_attempts(3).initial_delay_ms(100.0).deadline_ms(Some(299.0)).build().unwrap();
    assert_eq!(over.deadline_hint().map(|h| h.waits), Some(Duration::from_millis(300)));
    // Huge max_attempts: no overflow, no four-billion-step loop.
    let huge = Policy::builder().max_attempts(u64::from(u32::MAX)).multiplier(1.0).build().unwrap();
    assert!(huge.deadline_hint().is_some());
    let zero = Policy::builder().max_attempts(u64::from(u32::MAX)).initial_delay_ms(0.0).build().unwrap();
    assert_eq!(zero.deadline_hint(), None);
}

#[test]
fn defaults_are_the_contracts() {
    let p = Policy::default();
    assert_eq!(p.max_attempts(), 5);
    assert_eq!(p.initial_delay(), Duration::from_millis(200));
    assert_eq!(p.multiplier(), 2.0);
    assert_eq!(p.max_delay(), Duration::from_secs(5));
    assert_eq!(p.jitter(), Jitter::Full);
    assert_eq!(p.deadline(), Some(Duration::from_secs(15)));
    assert!(p.budget().is_none());
    assert_eq!(p.name(), "retry");
    assert_eq!(p.seed(), None);
    assert_eq!(p.attempt_timeout(), None);
}

#[test]
fn an_attempts_bound_is_the_deadline_or_the_sooner_attempt_timeout() {
    let ms = Duration::from_millis;
    let build = |deadline: Option<u64>, timeout: Option<u64>| {
        Policy::builder().deadline(deadline.map(ms)).attempt_timeout(timeout.map(ms)).build().unwrap()
    };
    // Call started at 1000, this attempt at 1800.
    let at = |p: &Policy| p.attempt_deadline(ms(1000), ms(1800));
    assert_eq!(at(&build(None, None)), None);
    assert!(!build(None, None).bounds_attempts());
    assert_eq!(at(&build(Some(2000), None)), Some(ms(3000)));
    assert_eq!(at(&build(None, Some(500))), Some(ms(2300)));
    assert_eq!(at(&build(Some(2000), Some(500))), Some(ms(2300)));
    assert_eq!(at(&build(Some(1000), Some(500))), Some(ms(2000)));
    assert!(build(None, Some(500)).bounds_attempts());
    // Huge values saturate instead of overflowing.
    let far = Policy::builder().deadline_ms(Some(9e15)).attempt_timeout_ms(Some(9e15)).build().unwrap();
    assert!(far.attempt_deadline(Duration::MAX, Duration::MAX).is_some());
}

#[test]
fn every_bad_knob_is_named_with_its_value() {
    let cases: Vec<(PolicyBuilder, &str, &str)> = vec![
        (Policy::builder().max_attempts(0), "max_attempts", "got 0"),
        (Policy::builder().max_attempts(1 << 40), "max_attempts", "got 1099511627776"),
        (Policy::builder().initial_delay_ms(-1.0), "initial_delay", "got -1 ms"),
        (Policy::builder().initial_delay_ms(f64::NAN), "initial_delay", "got NaN ms"),
        (Policy::builder().max_delay_ms(f64::INFINITY), "max_delay", "got inf ms"),
        (Policy::builder().initial_delay_ms(2000.0).max_delay_ms(1000.0), "max_delay", "initial_delay is 2000 ms"),
        (Policy::builder().multiplier(0.5), "multiplier", "got 0.5"),
        (Policy::builder().multiplier(f64::NAN), "multiplier", "got NaN"),
        (Policy::builder().jitter(Jitter::Proportional(1.5)), "jitter", "proportional(1.5)"),
        (Policy::builder().deadline_ms(Some(-5.0)), "deadline", "got -5 ms"),
        (Policy::builder().attempt_timeout_ms(Some(0.0)), "attempt_timeout", "must be finite and > 0"),
        (Policy::builder().attempt_timeout_ms(Some(f64::NAN)), "attempt_timeout", "got NaN ms"),
        // Finite but past the limit: the message must say there is one.
        (Policy::builder().deadline_ms(Some(1e16)), "deadline", "at most about 285,000 years), got 1e16 ms"),
    ];
    for (builder, knob, fragment) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!(err.knob, knob);
        let msg = err.to_string();
        assert!(msg.starts_with(knob), "{msg}");
        assert!(msg.contains(fragment), "{msg} lacks {fragment}");
    }
}

#[test]
fn every_numeric_knob_can_be_set_generically() {
    for k in knob::numeric() {
        let value = match k.default {
            knob::Default::Number(n) => n,
            // Off by default: any valid value reads back.
            knob::Default::Off if k.can_be_off => 250.0,
            _ => panic!("{} is numeric without a numeric default", k.name),
        };
        let b = Policy::builder().set(k.name, Setting::Number(value)).unwrap();
        assert_eq!(b.build().unwrap().number(k.name), Some(value), "{} reads back", k.name);
        let off = Policy::builder().set(k.name, Setting::Off);
        assert_eq!(off.is_ok(), k.can_be_off, "{}", k.name);
    }
    let err = Policy::builder().set("max_attempts", Setting::Number(1.5)).unwrap_err();
    assert_eq!(err.to_string(), "max_attempts must be >= 1 and <= 4294967295, got 1.5");
    // A count too large for u64 is reported as given, not as the saturated u64::MAX.
    let err = Policy::builder().set("max_attempts", Setting::Number(1e300)).unwrap_err();
    assert_eq!(err.value, Given::Number(1e300));
    let err = Policy::builder().set("max_attempts", Setting::Number(2f64.powi(32))).unwrap_err();
    assert_eq!(err.to_string(), "max_attempts must be >= 1 and <= 4294967295, got 4294967296");
    let p = Policy::builder().set("deadline", Setting::Off).unwrap().build().unwrap();
    assert_eq!(p.deadline(), None);
}

#[test]
fn every_numeric_knob_obeys_its_table_rule_through_set_and_build() {
    // What a host does: set, then build. A knob whose hand-written check in `build`
    // disagrees with its table rule (which hosts print as the requirement), or whose
    // error misquotes the value, fails here.
    let check = |name: &str, value: Setting| Policy::builder().set(name, value).and_then(PolicyBuilder::build);
    for k in knob::numeric() {
        let bad: Vec<(Setting, &str)> = match k.rule {
            Rule::Whole { min, max } => {
                assert!(
                    check(k.name, Setting::Whole(min)).is_ok() && check(k.name, Setting::Number(max as f64)).is_ok()
                );
                let mut bad =
                    vec![(Setting::Number(min as f64 + 0.5), ""), (Setting::Whole(u64::MAX), "18446744073709551615")];
                if max < u64::MAX {
                    bad.push((Setting::Whole(max + 1), ""));
                }
                if min > 0 {
                    bad.push((Setting::Number(min as f64 - 1.0), ""));
                }
                bad
            }
            Rule::AtLeast { min } => {
                assert!(check(k.name, Setting::Number(min)).is_ok(), "{}", k.name);
                vec![(Setting::Number(min - 0.5), ""), (Setting::Number(f64::NAN), "NaN")]
            }
            Rule::Duration { not_below } => {
                let floor = not_below.and_then(|o| Policy::default().number(o)).unwrap_or(0.0);
                assert!(check(k.name, Setting::Number(floor)).is_ok(), "{}", k.name);
                vec![(Setting::Number(-1.0), "-1"), (Setting::Number(f64::INFINITY), "inf")]
            }
            Rule::Positive => {
                assert!(check(k.name, Setting::Number(0.001)).is_ok(), "{}", k.name);
                vec![
                    (Setting::Number(0.0), "got 0"),
                    (Setting::Number(-1.0), "-1"),
                    (Setting::Number(f64::INFINITY), "inf"),
                    (Setting::Number(f64::NAN), "NaN"),
                    (Setting::Number(1e16), "1e16"),
                ]
            }
            Rule::Jitter | Rule::Any => vec![],
        };
        for (value, quoted) in bad {
            let err = check(k.name, value).unwrap_err();
            assert_eq!(err.knob, k.name, "{value:?}");
            // The table's rule, or for a delay its plain range (-1 is not finite-and->=0,
            // whatever it must also be >=).
            let plain = matches!(k.rule, Rule::Duration { .. }) && err.rule == Rule::Duration { not_below: None };
            assert!(err.rule == k.rule || plain, "{}: reported {:?}", k.name, err.rule);
            assert!(err.to_string().contains(quoted), "{err} should quote {quoted}");
        }
    }
}

#[test]
fn errors_render_in_a_hosts_names_and_units() {
    let err = Policy::builder().initial_delay_ms(2000.0).max_delay_ms(1000.0).build().unwrap_err();
    let node = err.render(&|k| knob::knob(k).unwrap().camel_ms(), &|_, v| match v {
        Given::Number(n) => format!("{n}"),
        other => format!("{other:?}"),
    });
    assert_eq!(node, "maxDelayMs must be >= initialDelayMs, got 1000 (initialDelayMs is 2000)");
    assert_eq!(err.to_string(), "max_delay must be >= initial_delay, got 1000 ms (initial_delay is 2000 ms)");
    // Huge and tiny numbers in exponent form (what C's retryrs_last_error shows), not
    // written out in 301 digits.
    let err = Policy::builder().initial_delay_ms(1e300).max_delay_ms(1e300).build().unwrap_err();
    assert_eq!(err.to_string(), "initial_delay must be finite and >= 0 (at most about 285,000 years), got 1e300 ms");
    let err = Policy::builder().multiplier(1e-7).build().unwrap_err();
    assert_eq!(err.to_string(), "multiplier must be finite and >= 1, got 1e-7");
}

#[test]
fn the_defaults_are_the_tables() {
    let p = Policy::default();
    let get = |name: &str| match knob::knob(name).unwrap().default {
        knob::Default::Number(n) => n,
        _ => panic!(),
    };
    assert_eq!(f64::from(p.max_attempts()), get("max_attempts"));
    assert_eq!(p.initial_delay().as_secs_f64() * 1000.0, get("initial_delay"));
    assert_eq!(p.multiplier(), get("multiplier"));
    assert_eq!(p.max_delay().as_secs_f64() * 1000.0, get("max_delay"));
    assert_eq!(p.deadline().unwrap().as_secs_f64() * 1000.0, get("deadline"));
}

#[test]
fn a_builder_from_a_policy_rebuilds_it() {
    let p = Policy::builder()
        .max_attempts(7)
        .initial_delay_ms(0.5)
        .max_delay_ms(900.0)
        .multiplier(1.5)
        .jitter(Jitter::Equal)
        .deadline_ms(Some(1234.0))
        .max_retry_after(None)
        .attempt_timeout_ms(Some(250.0))
        .name("rates")
        .seed(Some(9))
        .build()
        .unwrap();
    let again = PolicyBuilder::from(&p).build().unwrap();
    assert_eq!(format!("{again:?}"), format!("{p:?}"));
    let other = PolicyBuilder::from(&p).attempt_timeout(None).build().unwrap();
    assert_eq!((other.attempt_timeout(), other.max_attempts()), (None, 7));
}

#[test]
fn edge_values_are_accepted() {
    let p = Policy::builder()
        .max_attempts(1)
        .initial_delay_ms(0.0)
        .max_delay_ms(0.0)
        .multiplier(1.0)
        .jitter(Jitter::Proportional(1.0))
        .deadline(None)
        .build()
        .unwrap();
    assert_eq!(p.max_attempts(), 1);
    assert_eq!(p.deadline(), None);
}

#[test]
fn jitter_spellings_round_trip() {
    for j in [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated, Jitter::Proportional(0.25)] {
        assert_eq!(j.spelling().parse::<Jitter>().unwrap(), j);
    }
    assert_eq!(" Proportional:0.5 ".parse::<Jitter>().unwrap(), Jitter::Proportional(0.5));
    for bad in ["", "fulll", "proportional(2)", "proportional(x)", "proportional(-0.1)"] {
        let err = bad.parse::<Jitter>().unwrap_err();
        assert_eq!(err.knob, "jitter", "{bad}");
    }
}
