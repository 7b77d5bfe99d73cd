//! Errors that compose, tried as a user would: `?` from a retried call into
//! `anyhow::Result` and `Box<dyn Error + Send + Sync>`, an attempt error that is a plain
//! `String` or an `anyhow::Error` (neither is a `std::error::Error`), and the caller's own
//! error back by value.

use retryrs::{Attempt, Policy, Retrier, RetryError, Verdict};
use std::error::Error;
use std::time::Duration;

fn retrier(attempts: u64) -> Retrier {
    Retrier::new(Policy::builder().max_attempts(attempts).initial_delay(Duration::ZERO).build().unwrap())
}

fn fetch_with_anyhow(fail: bool) -> anyhow::Result<u32> {
    let got = retrier(2).run(
        |a: &Attempt| if fail { Err(anyhow::anyhow!("HTTP 503 on attempt {}", a.number)) } else { Ok(7) },
        |_| Verdict::TRANSIENT,
    )?;
    Ok(got)
}

fn fetch_boxed(fail: bool) -> Result<u32, Box<dyn Error + Send + Sync>> {
    let got = retrier(2).run(|_| if fail { Err(String::from("HTTP 503")) } else { Ok(7) }, |_| Verdict::TRANSIENT)?;
    Ok(got)
}

#[test]
fn question_mark_into_anyhow() {
    assert_eq!(fetch_with_anyhow(false).unwrap(), 7);
    let e = fetch_with_anyhow(true).unwrap_err();
    // anyhow's chain: what happened, then the last attempt's error.
    let chain: Vec<String> = e.chain().map(ToString::to_string).collect();
    assert_eq!(chain, ["gave up after 2 attempts (max_attempts reached)", "HTTP 503 on attempt 2"]);
    // The retryrs error is still there, typed.
    let retry = e.downcast_ref::<RetryError<anyhow::Error>>().expect("a RetryError inside");
    assert_eq!(retry.attempts(), 2);
}

#[test]
fn question_mark_into_a_boxed_error() {
    assert_eq!(fetch_boxed(false).unwrap(), 7);
    let e = fetch_boxed(true).unwrap_err();
    assert_eq!(e.to_string(), "gave up after 2 attempts (max_attempts reached)");
    assert_eq!(e.source().map(ToString::to_string).as_deref(), Some("HTTP 503"));
}

#[test]
fn the_callers_own_error_by_value() {
    let got = retrier(3).run(|a: &Attempt| Err::<(), _>(format!("HTTP 503 #{}", a.number)), |_| Verdict::TRANSIENT);
    let own: String = got.unwrap_err().into_last_error().expect("the last failure was an error");
    assert_eq!(own, "HTTP 503 #3");
}

#[tokio::test(start_paused = true)]
async fn run_async_with_a_string_error() -> anyhow::Result<()> {
    let retrier = Retrier::new(
        Policy::builder().initial_delay(Duration::from_millis(100)).deadline(Some(Duration::from_secs(30))).build()?,
    );
    let value = retrier
        .run_async(
            |a: Attempt| async move { if a.number < 3 { Err(format!("HTTP 503 #{}", a.number)) } else { Ok(a.number) } },
            |_: &String| Verdict::TRANSIENT,
        )
        .await?;
    assert_eq!(value, 3);
    // A hung attempt with a String error: no conversion from a timeout is asked of it;
    // the cut is told by the error's own field.
    let started = tokio::time::Instant::now();
    let got = retrier
        .run_async(|_| std::future::pending::<Result<(), String>>(), |_: &String| Verdict::TRANSIENT)
        .await;
    match got {
        Err(RetryError::Exhausted { attempts: 1, timed_out: Some(cut), .. }) => {
            assert_eq!(cut.bound, Duration::from_secs(30))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    Ok(())
}

/// The extension trait from outside: an anyhow operation retried with `.retry(..).await`,
/// its own error back with `own_error`, and `?` on the RetryError into anyhow.
#[tokio::test(start_paused = true)]
async fn the_extension_trait_with_anyhow() -> anyhow::Result<()> {
    use retryrs::Retryable;
    let retrier = retrier(3);
    let fetch = || async { Err::<u32, _>(anyhow::anyhow!("HTTP 404")) };
    let own: anyhow::Result<u32> =
        fetch.retry(&retrier).when(|e| e.to_string().starts_with("HTTP 5")).own_error(anyhow::Error::from).await;
    assert_eq!(own.unwrap_err().to_string(), "HTTP 404");
    let mut calls = 0;
    let got: u32 = (|| {
        calls += 1;
        let n = calls;
        async move { if n < 3 { Err(anyhow::anyhow!("HTTP 503")) } else { Ok(n) } }
    })
    .retry(&retrier)
    .await?;
    assert_eq!(got, 3);
    Ok(())
}
