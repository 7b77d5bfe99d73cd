//! RetryError in an error chain: each message once. Display says what happened, source()
//! gives the cause, and a chain printer (anyhow's "caused by", `{:#}`) shows both without
//! repeating either.

use retryrs::{AsyncRun, Cause, ExhaustReason, Jitter, Policy, Retrier, RetryError, TimedOut, Verdict};
use std::error::Error;
use std::fmt;
use std::future::Future;

/// An HTTP error whose own cause is the connection error.
#[derive(Debug)]
struct Http(u16, Option<std::io::Error>);

impl fmt::Display for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.0)
    }
}

impl Error for Http {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.1.as_ref().map(|e| e as &(dyn Error + 'static))
    }
}

impl From<TimedOut> for Http {
    fn from(_: TimedOut) -> Self {
        Http(504, None)
    }
}

/// Every message of the chain, outermost first.
fn chain(e: &(dyn Error + 'static)) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        out.push(cause.to_string());
        next = cause.source();
    }
    out
}

fn run(status: u16, verdict: Verdict) -> RetryError<Http> {
    let retrier =
        Retrier::new(Policy::builder().max_attempts(2).jitter(Jitter::None).initial_delay_ms(0.0).build().unwrap());
    let call = retrier.execute_async(
        AsyncRun::new(|_| std::future::ready(())),
        |_| async move { Err::<(), _>(Http(status, Some(std::io::Error::other("connection reset")))) },
        move |_: &Http| verdict,
    );
    // Zero-delay waits only: a no-op waker drives it to the end.
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = call.as_mut().poll(&mut cx) {
            return out.unwrap_err();
        }
    }
}

#[test]
fn an_exhausted_error_names_the_limit_and_its_source_is_the_last_error() {
    let e = run(503, Verdict::TRANSIENT);
    assert!(matches!(e, RetryError::Exhausted { attempts: 2, reason: ExhaustReason::Attempts, .. }));
    // Any Debug + Display error is a source, seen through Cause: its own source is out of
    // reach for a type the crate does not know (no specialization), but the typed error
    // is one downcast away, with its whole chain.
    assert_eq!(chain(&e), ["gave up after 2 attempts (max_attempts reached)", "HTTP 503"]);
    let cause = e.source().and_then(|s| s.downcast_ref::<Cause<Http>>()).expect("the source is the last error");
    assert_eq!(chain(cause.get()), ["HTTP 503", "connection reset"]);
    assert!(matches!(e.into_last_error(), Ok(Http(503, Some(_)))));
}

#[test]
fn a_rejection_is_transparent() {
    let e = run(400, Verdict::Permanent);
    assert!(matches!(e, RetryError::Rejected(Http(400, _))));
    assert_eq!(chain(&e), ["HTTP 400"]);
}

/// A boxed error (no `std::error::Error` itself) keeps its whole chain: the crate knows
/// the type and asks the box for its source.
#[cfg(feature = "blocking")]
#[test]
fn a_boxed_error_keeps_its_chain() {
    type Boxed = Box<dyn Error + Send + Sync>;
    for verdict in [Verdict::TRANSIENT, Verdict::Permanent] {
        let retrier = Retrier::new(Policy::builder().max_attempts(2).initial_delay_ms(0.0).build().unwrap());
        let got = retrier.run(
            |_| Err::<(), Boxed>(Box::new(Http(503, Some(std::io::Error::other("connection reset"))))),
            |_| verdict,
        );
        let e = got.unwrap_err();
        let messages = chain(&e);
        assert_eq!(messages[messages.len() - 2..], ["HTTP 503", "connection reset"], "{verdict:?}");
        // `?` into the same boxed type.
        let boxed: Boxed = e.into();
        assert!(chain(&*boxed).ends_with(&["HTTP 503".to_string(), "connection reset".to_string()]));
    }
}

#[test]
fn no_message_appears_twice_in_any_chain() {
    for e in [run(503, Verdict::TRANSIENT), run(400, Verdict::Permanent)] {
        let messages = chain(&e);
        for (i, m) in messages.iter().enumerate() {
            assert!(
                !messages[i + 1..].iter().any(|later| later.contains(m.as_str()) || m.contains(later.as_str())),
                "{messages:?}"
            );
        }
    }
}
