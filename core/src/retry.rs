//! The extension trait, in backon's shape: the operation comes first and is retried by a
//! [`Retrier`], `fetch.retry(&retrier).await` for an async operation and
//! `op.retry(&retrier).call()` for a blocking one. The same engine as
//! [`Retrier::run_async`] and [`Retrier::run`] (the policy, its deadline and budget, the
//! breaker, the statistics), with retryrs's predicates and hooks on the way.
//!
//! ```
//! # #[cfg(all(feature = "tokio", feature = "blocking"))] {
//! use retryrs::{Attempt, Policy, Retrier, Retryable, Verdict};
//! use std::time::Duration;
//!
//! let retrier = Retrier::new(Policy::builder().initial_delay(Duration::from_millis(50)).build().unwrap());
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! # rt.block_on(async {
//! let mut calls = 0;
//! let mut fetch = || {
//!     calls += 1;
//!     let n = calls;
//!     async move { if n < 3 { Err(String::from("503")) } else { Ok("rate: 1.0842") } }
//! };
//! // Every error transient, as backon's default.
//! assert_eq!((&mut fetch).retry(&retrier).await.unwrap(), "rate: 1.0842");
//!
//! // A predicate, a notification before each wait, and the caller's own error back.
//! let got: Result<(), String> = (|| async { Err(String::from("404")) })
//!     .retry(&retrier)
//!     .when(|e| e.starts_with('5'))
//!     .notify(|e, wait| eprintln!("{e}: retrying in {wait:?}"))
//!     .own_error(|gave_up| gave_up.to_string())
//!     .await;
//! assert_eq!(got.unwrap_err(), "404");
//!
//! // An operation that takes its Attempt sees its number and the time it has.
//! let got = (|a: Attempt| async move { Ok::<_, String>(a.remaining) }).retry(&retrier).await;
//! assert_eq!(got.unwrap(), Some(Duration::from_secs(15)));
//! # });
//!
//! // Blocking: .call().
//! let got = (|| Err::<(), _>(std::io::Error::other("reset"))).retry(&retrier).when(|_| false).call();
//! assert_eq!(got.unwrap_err().attempts(), 1);
//! # }
//! ```
//!
//! `.await` needs the `tokio` feature (tokio's timer and clock) and a `Send` operation:
//! the call's future is boxed so the builder can be awaited directly. For a future that
//! is not `Send`, another runtime, or no allocation, use [`Retrier::run_async`] or
//! [`Retrier::execute_async`]. `.call()` needs the `blocking` feature.

use std::future::Future;
#[cfg(feature = "tokio")]
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::time::Duration;

use crate::attempt::Attempt;
use crate::cancel::CancelToken;
use crate::engine::Verdict;
use crate::event::{Event, EventKind};
use crate::executor::{Failed, Retrier, RetryContext, RetryError};

/// An operation a [`Retrier`] can retry: a closure (or function) that returns a future of
/// a `Result` (async) or a `Result` (blocking), taking no argument or the [`Attempt`].
/// `M` is a marker the compiler infers from the closure's shape: [`Async`],
/// [`AsyncAttempt`], [`Blocking`] or [`BlockingAttempt`].
pub trait Retryable<M: Mode>: Sized {
    /// A retried call of this operation, to configure and then run: `.await` or `.call()`.
    fn retry(self, retrier: &Retrier) -> Retry<'_, Self, M, EveryErrorTransient<M::Err>>;
}

/// What a marker says of its operation's outcome.
pub trait Mode {
    /// The value of a success.
    type Ok;
    /// The operation's own error.
    type Err;
}

macro_rules! marker {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<T, E>(PhantomData<fn() -> (T, E)>);
        impl<T, E> Mode for $name<T, E> {
            type Ok = T;
            type Err = E;
        }
    };
}
marker!(
    /// An async operation without argument: `FnMut() -> impl Future<Output = Result<T, E>>`.
    Async
);
marker!(
    /// An async operation that takes its [`Attempt`].
    AsyncAttempt
);
marker!(
    /// A blocking operation without argument: `FnMut() -> Result<T, E>`.
    Blocking
);
marker!(
    /// A blocking operation that takes its [`Attempt`].
    BlockingAttempt
);

/// The predicate of a [`Retry`] given none: every error transient (no hint), as backon
/// retries every error by default.
pub type EveryErrorTransient<E> = fn(&E) -> Verdict;

/// Every error transient (no hint): the default when no predicate is given.
fn every_error_transient<E>(_: &E) -> Verdict {
    Verdict::TRANSIENT
}

macro_rules! retryable {
    ($marker:ident, ($($arg:ty)?), $out:ty $(, $fut:ident)?) => {
        impl<F, $($fut,)? T, E> Retryable<$marker<T, E>> for F
        where
            F: FnMut($($arg)?) -> $out,
            $($fut: Future<Output = Result<T, E>>,)?
        {
            fn retry(self, retrier: &Retrier) -> Retry<'_, Self, $marker<T, E>, EveryErrorTransient<E>> {
                Retry {
                    retrier,
                    op: self,
                    classify: every_error_transient::<E>,
                    cancel: None,
                    listener: None,
                    wait: None,
                    before_retry: None,
                    mode: PhantomData,
                }
            }
        }
    };
}
retryable!(Async, (), Fut, Fut);
retryable!(AsyncAttempt, (Attempt), Fut, Fut);
retryable!(Blocking, (), Result<T, E>);
retryable!(BlockingAttempt, (Attempt), Result<T, E>);

type Listen<'r, E, T> = Box<dyn FnMut(&Event<'_>, Option<Failed<'_, E, T>>) + Send + 'r>;
type WaitWith<'r, E, T> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> Option<Duration> + Send + 'r>;
type BeforeRetry<'r, E, T> = Box<dyn FnMut(&RetryContext<'_, E, T>) -> ControlFlow<()> + Send + 'r>;

/// A retried call being configured ([`Retryable::retry`]); `.await` it (async) or
/// [`call`](Retry::call) it (blocking). It ends with the operation's value or a
/// [`RetryError`] (with [`own_error`](Retry::own_error): the operation's own error).
#[must_use = "a retried call does nothing until it is awaited or called"]
pub struct Retry<'r, F, M: Mode, C> {
    retrier: &'r Retrier,
    op: F,
    classify: C,
    cancel: Option<&'r CancelToken>,
    listener: Option<Listen<'r, M::Err, M::Ok>>,
    wait: Option<WaitWith<'r, M::Err, M::Ok>>,
    before_retry: Option<BeforeRetry<'r, M::Err, M::Ok>>,
    mode: PhantomData<M>,
}

impl<'r, F, M: Mode, C> Retry<'r, F, M, C> {
    /// Which errors to retry (backon's `when`): `true` retries (transient, no hint),
    /// `false` ends the call with the error (permanent).
    pub fn when<P>(self, mut retry_if: P) -> Retry<'r, F, M, impl FnMut(&M::Err) -> Verdict>
    where
        P: FnMut(&M::Err) -> bool,
    {
        self.classify(move |e: &M::Err| if retry_if(e) { Verdict::TRANSIENT } else { Verdict::Permanent })
    }

    /// The full verdict on each error ([`Verdict`]: permanent, or transient with a
    /// Retry-After hint), e.g. [`transient`](crate::transient) or an
    /// [`HttpRules`](crate::HttpRules) closure.
    pub fn classify<K>(self, classify: K) -> Retry<'r, F, M, K>
    where
        K: FnMut(&M::Err) -> Verdict,
    {
        let Retry { retrier, op, classify: _, cancel, listener, wait, before_retry, mode } = self;
        Retry { retrier, op, classify, cancel, listener, wait, before_retry, mode }
    }

    /// Called before each wait with the error and the wait (backon's `notify`).
    pub fn notify(self, mut notify: impl FnMut(&M::Err, Duration) + Send + 'r) -> Self {
        self.observer(move |event, failed| {
            if let (EventKind::Retrying, Some(e)) = (event.kind, failed.and_then(Failed::error)) {
                notify(e, event.delay.unwrap_or_default());
            }
        })
    }

    /// Sees every event and the failure it is about (as [`Run::observer`](crate::Run::observer)).
    pub fn observer(mut self, f: impl FnMut(&Event<'_>, Option<Failed<'_, M::Err, M::Ok>>) + Send + 'r) -> Self {
        self.listener = Some(Box::new(f));
        self
    }

    /// Ends a wait (and an async attempt) at once when `token` fires: the call ends as
    /// [`RetryError::Cancelled`].
    pub fn cancel(mut self, token: &'r CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// A wait hook (see [`Run::wait_with`](crate::Run::wait_with)).
    pub fn wait_with(
        mut self,
        f: impl FnMut(&RetryContext<'_, M::Err, M::Ok>) -> Option<Duration> + Send + 'r,
    ) -> Self {
        self.wait = Some(Box::new(f));
        self
    }

    /// A before-retry hook (see [`Run::before_retry`](crate::Run::before_retry)).
    pub fn before_retry(
        mut self,
        f: impl FnMut(&RetryContext<'_, M::Err, M::Ok>) -> ControlFlow<()> + Send + 'r,
    ) -> Self {
        self.before_retry = Some(Box::new(f));
        self
    }

    /// Ends with the operation's own error, as backon does: the last attempt's error
    /// when there is one ([`RetryError::into_last_error`]), else `or` of the
    /// [`RetryError`] (no attempt ran, the last one was cut at its bound, or the call was
    /// cancelled before it failed), e.g. `anyhow::Error::from` or `|e| e.to_string()`.
    pub fn own_error<O>(self, or: O) -> OwnError<'r, Self, O>
    where
        O: FnOnce(RetryError<M::Err>) -> M::Err,
    {
        OwnError { retry: self, or, lifetime: PhantomData }
    }

    /// Whether any option beyond the predicate was given: without, a call takes the
    /// retrier's plain path (no listener, no hooks).
    fn plain(&self) -> bool {
        self.cancel.is_none() && self.listener.is_none() && self.wait.is_none() && self.before_retry.is_none()
    }
}

/// A retried call that ends with the operation's own error ([`Retry::own_error`]).
#[must_use = "a retried call does nothing until it is awaited or called"]
pub struct OwnError<'r, R, O> {
    retry: R,
    or: O,
    lifetime: PhantomData<&'r ()>,
}

/// The boxed future of an awaited [`Retry`].
pub type RetryFuture<'r, T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'r>>;

/// A [`Retry`]'s options, apart from the operation.
struct Options<'r, E, T, C> {
    retrier: &'r Retrier,
    classify: C,
    cancel: Option<&'r CancelToken>,
    listener: Option<Listen<'r, E, T>>,
    wait: Option<WaitWith<'r, E, T>>,
    before_retry: Option<BeforeRetry<'r, E, T>>,
    plain: bool,
}

impl<'r, F, M: Mode, C> Retry<'r, F, M, C> {
    fn into_parts(self) -> (F, Options<'r, M::Err, M::Ok, C>) {
        let plain = self.plain();
        let Retry { retrier, op, classify, cancel, listener, wait, before_retry, mode: _ } = self;
        (op, Options { retrier, classify, cancel, listener, wait, before_retry, plain })
    }
}

#[cfg(feature = "tokio")]
impl<'r, E, T, C> Options<'r, E, T, C>
where
    E: Send + 'r,
    C: FnMut(&E) -> Verdict + Send + 'r,
{
    async fn run_async<Fut>(self, op: impl FnMut(Attempt) -> Fut + Send + 'r) -> Result<T, RetryError<E>>
    where
        Fut: Future<Output = Result<T, E>> + Send + 'r,
        T: Send + 'r,
    {
        let Options { retrier, classify, cancel, listener, wait, before_retry, plain } = self;
        if plain {
            return retrier.run_async(op, classify).await;
        }
        let mut run = crate::async_executor::AsyncRun::tokio();
        if let Some(token) = cancel {
            run = run.cancel(token);
        }
        if let Some(f) = listener {
            run = run.observer(f);
        }
        if let Some(f) = wait {
            run = run.wait_with(f);
        }
        if let Some(f) = before_retry {
            run = run.before_retry(f);
        }
        retrier.execute_async(run, op, classify).await.map_err(RetryError::without_value)
    }
}

#[cfg(feature = "blocking")]
impl<'r, E, T, C> Options<'r, E, T, C>
where
    C: FnMut(&E) -> Verdict,
{
    fn call(self, op: impl FnMut(&Attempt) -> Result<T, E>) -> Result<T, RetryError<E>> {
        let Options { retrier, classify, cancel, listener, wait, before_retry, plain } = self;
        if plain {
            return retrier.run(op, classify);
        }
        let run = crate::executor::Run {
            cancel,
            listener: listener.map(|f| f as crate::executor::Listener<'r, E, T>),
            wait: wait.map(|f| f as crate::executor::WaitHook<'r, E, T>),
            before_retry: before_retry.map(|f| f as crate::executor::BeforeRetry<'r, E, T>),
            ..Default::default()
        };
        retrier.execute(run, op, classify).map_err(RetryError::without_value)
    }
}

#[cfg(feature = "tokio")]
impl<'r, F, Fut, T, E, C> IntoFuture for Retry<'r, F, Async<T, E>, C>
where
    F: FnMut() -> Fut + Send + 'r,
    Fut: Future<Output = Result<T, E>> + Send + 'r,
    T: Send + 'r,
    E: Send + 'r,
    C: FnMut(&E) -> Verdict + Send + 'r,
{
    type Output = Result<T, RetryError<E>>;
    type IntoFuture = RetryFuture<'r, T, RetryError<E>>;
    fn into_future(self) -> Self::IntoFuture {
        let (mut op, options) = self.into_parts();
        Box::pin(options.run_async(move |_| op()))
    }
}

#[cfg(feature = "tokio")]
impl<'r, F, Fut, T, E, C> IntoFuture for Retry<'r, F, AsyncAttempt<T, E>, C>
where
    F: FnMut(Attempt) -> Fut + Send + 'r,
    Fut: Future<Output = Result<T, E>> + Send + 'r,
    T: Send + 'r,
    E: Send + 'r,
    C: FnMut(&E) -> Verdict + Send + 'r,
{
    type Output = Result<T, RetryError<E>>;
    type IntoFuture = RetryFuture<'r, T, RetryError<E>>;
    fn into_future(self) -> Self::IntoFuture {
        let (op, options) = self.into_parts();
        Box::pin(options.run_async(op))
    }
}

#[cfg(feature = "tokio")]
impl<'r, R, O, T, E> IntoFuture for OwnError<'r, R, O>
where
    R: IntoFuture<Output = Result<T, RetryError<E>>>,
    R::IntoFuture: Send + 'r,
    O: FnOnce(RetryError<E>) -> E + Send + 'r,
{
    type Output = Result<T, E>;
    type IntoFuture = RetryFuture<'r, T, E>;
    fn into_future(self) -> Self::IntoFuture {
        let OwnError { retry, or, .. } = self;
        let call = retry.into_future();
        Box::pin(async move { call.await.map_err(|e| e.into_own_error(or)) })
    }
}

#[cfg(feature = "blocking")]
impl<'r, F, T, E, C> Retry<'r, F, Blocking<T, E>, C>
where
    F: FnMut() -> Result<T, E>,
    C: FnMut(&E) -> Verdict,
{
    /// Runs the blocking operation until it succeeds or the engine stops it (as
    /// [`Retrier::run`]: it blocks the thread during the waits).
    pub fn call(self) -> Result<T, RetryError<E>> {
        let (mut op, options) = self.into_parts();
        options.call(move |_| op())
    }
}

#[cfg(feature = "blocking")]
impl<'r, F, T, E, C> Retry<'r, F, BlockingAttempt<T, E>, C>
where
    F: FnMut(Attempt) -> Result<T, E>,
    C: FnMut(&E) -> Verdict,
{
    /// Runs the blocking operation, given each [`Attempt`], until it succeeds or the
    /// engine stops it (as [`Retrier::run`]).
    pub fn call(self) -> Result<T, RetryError<E>> {
        let (mut op, options) = self.into_parts();
        options.call(move |a: &Attempt| op(*a))
    }
}

#[cfg(feature = "blocking")]
impl<'r, F, T, E, C, O> OwnError<'r, Retry<'r, F, Blocking<T, E>, C>, O>
where
    F: FnMut() -> Result<T, E>,
    C: FnMut(&E) -> Verdict,
    O: FnOnce(RetryError<E>) -> E,
{
    /// [`Retry::call`], ending with the operation's own error.
    pub fn call(self) -> Result<T, E> {
        let OwnError { retry, or, .. } = self;
        retry.call().map_err(|e| e.into_own_error(or))
    }
}

#[cfg(feature = "blocking")]
impl<'r, F, T, E, C, O> OwnError<'r, Retry<'r, F, BlockingAttempt<T, E>, C>, O>
where
    F: FnMut(Attempt) -> Result<T, E>,
    C: FnMut(&E) -> Verdict,
    O: FnOnce(RetryError<E>) -> E,
{
    /// [`Retry::call`], ending with the operation's own error.
    pub fn call(self) -> Result<T, E> {
        let OwnError { retry, or, .. } = self;
        retry.call().map_err(|e| e.into_own_error(or))
    }
}
