//! The handed-over response body's bound on silence (docs/contract.md §6b), for the HTTP
//! helpers that hand a response over at its headers (`reqwest_retry`, `tower_retry`): the
//! retry deadline never cuts a body that flows, only a body silent for the bound fails.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};

use crate::policy::Policy;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The silence a handed-over body may keep: the attempt timeout, else the deadline; none
/// when the policy has neither (`deadline: null` opts out).
pub(crate) fn silence_of(policy: &Policy) -> Option<Duration> {
    policy.attempt_timeout().or(policy.deadline())
}

/// A response body that fails with an `io::Error` of kind `TimedOut` once it has been
/// silent (no frame, no end) for the bound; each frame starts the silence again, so a body
/// that keeps flowing is never cut, however long it lasts. Without a bound it is the
/// inner body as it is.
pub struct BoundedBody<B> {
    // Boxed: a body need not be Unpin, and one allocation per response is nothing beside
    // a network call.
    inner: Pin<Box<B>>,
    bound: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl<B> BoundedBody<B> {
    /// `inner`, failing after `silence` without a frame (`None`: never). Starts the timer:
    /// call within a tokio runtime.
    pub(crate) fn new(inner: B, silence: Option<Duration>) -> Self {
        let bound = silence.map(|s| (s, Box::pin(tokio::time::sleep(s))));
        BoundedBody { inner: Box::pin(inner), bound }
    }

    /// The inner body.
    // Public through `tower_retry` only; the reqwest middleware never unwraps its body.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub fn get_ref(&self) -> &B {
        &self.inner
    }

    /// The inner body, without the bound.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub fn into_inner(self) -> B
    where
        B: Unpin,
    {
        *Pin::into_inner(self.inner)
    }
}

impl<B> std::fmt::Debug for BoundedBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedBody").field("silence", &self.bound.as_ref().map(|(s, _)| *s)).finish_non_exhaustive()
    }
}

impl<B> Body for BoundedBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let this = &mut *self;
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(frame) => {
                // A frame (or the end): the silence starts again.
                if let Some((silence, timer)) = this.bound.as_mut() {
                    timer.as_mut().reset(tokio::time::Instant::now() + *silence);
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => match this.bound.as_mut() {
                Some((silence, timer)) => match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the response body was silent for {} ms", silence.as_millis()),
                    ))))),
                    Poll::Pending => Poll::Pending,
                },
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
