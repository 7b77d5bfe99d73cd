//! The ambient context: what a server helper learned from the inbound request (its
//! deadline, whether it is a retry), visible to every retrier call made while handling
//! it. The constraint it puts on a call is computed here, once, for every host
//! ([`constrain`]); hosts only find the ambient context (a thread-local here, a
//! contextvar in Python, AsyncLocalStorage in Node) and pass it in.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use super::inbound::Inbound;
use super::margin::margin;
use crate::clock::{Clock, SystemClock};
use crate::policy::Policy;

/// Set once the first ambient context is made: until then a call's start asks nothing
/// more than this flag (the happy path of a program that never propagates).
static IN_USE: AtomicBool = AtomicBool::new(false);

/// Whether any ambient context was ever made in this process. Hosts test this one flag
/// before looking for an ambient context at a call's start.
#[inline(always)]
pub fn in_use() -> bool {
    IN_USE.load(Ordering::Relaxed)
}

/// Marks propagation as in use (done by every constructor of [`Ambient`]; a host whose
/// server helper keeps its own ambient store calls it when the helper is made).
pub fn mark_in_use() {
    if !IN_USE.load(Ordering::Relaxed) {
        IN_USE.store(true, Ordering::Relaxed);
    }
}

/// Now, on the clock the executors use: the virtual one while virtual time is on for this
/// thread ([`crate::testing`]), else [`SystemClock`]. An ambient context's deadline is on
/// this time base.
pub fn now() -> Duration {
    match crate::clock::testing::clock() {
        Some(virtual_clock) => virtual_clock.now(),
        None => SystemClock.now(),
    }
}

/// A request's deadline and retry state, as the calls made while handling it obey them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ambient {
    /// When the caller gives up, on [`now`]'s time base (the core's monotonic clock, or
    /// the virtual one under virtual time); `None`: no deadline was given.
    deadline: Option<Duration>,
    is_retry: bool,
}

impl Ambient {
    /// The ambient context of a request read at `now` (on [`now`]'s time base).
    pub fn at(inbound: &Inbound, now: Duration) -> Self {
        Self::new(inbound.budget, inbound.is_retry, now)
    }

    /// The ambient context of a request read now.
    pub fn start(inbound: &Inbound) -> Self {
        Self::at(inbound, now())
    }

    /// An ambient context with `left` from `now` and the retry state given.
    pub fn new(left: Option<Duration>, is_retry: bool, now: Duration) -> Self {
        mark_in_use();
        Ambient { deadline: left.map(|l| now.saturating_add(l)), is_retry }
    }

    /// When the caller gives up, on [`now`]'s time base.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Whether the inbound request was a retry (the downward rule applies).
    pub fn is_retry(&self) -> bool {
        self.is_retry
    }

    /// The time left at `now` (zero once past), or `None` without a deadline.
    pub fn left_at(&self, now: Duration) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_sub(now))
    }

    /// The time left now.
    pub fn left(&self) -> Option<Duration> {
        self.left_at(now())
    }

    /// This context entered inside `outer` (the one in force where it is entered): it
    /// narrows `outer` and never widens it, as a context derived from another does in Go
    /// or gRPC. The sooner deadline holds, and it is a retry if either is. A library
    /// that enters a context of its own inside a request (a longer budget, no retry mark)
    /// thus cannot give its calls more time than the caller waits, nor retries the
    /// caller's retry forbids.
    pub fn within(self, outer: Option<Ambient>) -> Ambient {
        let Some(outer) = outer else { return self };
        let deadline = match (self.deadline, outer.deadline) {
            (Some(own), Some(theirs)) => Some(own.min(theirs)),
            (own, theirs) => own.or(theirs),
        };
        Ambient { deadline, is_retry: self.is_retry || outer.is_retry }
    }

    /// The policy a call starting at `now` runs under (see [`constrain`]); `None`: the
    /// policy itself.
    pub fn constrain_at(&self, policy: &Policy, now: Duration) -> Option<Policy> {
        constrain(policy, self.left_at(now), self.is_retry)
    }
}

/// The one rule of a call made under an ambient context, given the time the context had
/// `left` when the call starts and whether the inbound request `is_retry`:
/// - its deadline is the smaller of its own and `left` minus the [margin](margin)
///   (each attempt's bound, and every wait, follow the deadline; a call cut by it ends
///   with reason `deadline`);
/// - the downward rule: under a retry it makes exactly one attempt and no hedges.
///
/// `None` when the policy already obeys both (no copy made).
pub fn constrain(policy: &Policy, left: Option<Duration>, is_retry: bool) -> Option<Policy> {
    let deadline = left.map(|l| l.saturating_sub(margin(l)));
    let shorter = match (deadline, policy.deadline) {
        (Some(d), Some(own)) => (d < own).then_some(d),
        (d, _) => d,
    };
    let downward = is_retry && (policy.max_attempts > 1 || policy.hedge.is_some());
    if shorter.is_none() && !downward {
        return None;
    }
    let mut under = policy.clone();
    if let Some(d) = shorter {
        under.deadline = Some(d);
    }
    if is_retry {
        under.max_attempts = 1;
        under.hedge = None;
    }
    Some(under)
}

thread_local! {
    static CURRENT: Cell<Option<Ambient>> = const { Cell::new(None) };
}

/// The ambient context of this thread (set by [`enter`] or by a [`Scoped`] future being
/// polled), or `None`. One flag test when propagation was never used.
#[inline]
pub fn current() -> Option<Ambient> {
    if !in_use() {
        return None;
    }
    CURRENT.try_with(Cell::get).ok().flatten()
}

/// Replaces this thread's ambient context, returning the one it replaces (for a host
/// that keeps its own nesting, as C's enter/leave do).
pub fn replace(ambient: Option<Ambient>) -> Option<Ambient> {
    if ambient.is_some() {
        mark_in_use();
    }
    CURRENT.try_with(|c| c.replace(ambient)).ok().flatten()
}

/// Makes `ambient` this thread's ambient context until the guard drops (which restores
/// the one before, also when unwinding). Entered inside another, it narrows that one
/// ([`Ambient::within`]).
pub fn enter(ambient: Ambient) -> Entered {
    Entered { previous: replace(Some(ambient.within(current()))) }
}

/// The guard of [`enter`]: restores the previous ambient context on drop.
#[must_use = "the context is left when the guard drops"]
#[derive(Debug)]
pub struct Entered {
    previous: Option<Ambient>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        replace(self.previous);
    }
}

/// A future polled inside an ambient context: each poll enters it and leaves it after,
/// so every retrier call the future makes (on any runtime, on whichever thread polls it)
/// obeys it, and nothing leaks to other tasks on the same thread. Polled inside another
/// context (a `Scoped` within a `Scoped`), it narrows that one ([`Ambient::within`]).
#[derive(Debug)]
pub struct Scoped<F> {
    ambient: Option<Ambient>,
    inner: F,
}

impl<F> Scoped<F> {
    /// `inner`, polled inside `ambient` (`None`: inside no ambient context at all, hiding
    /// any the poller has; `Some`: inside `ambient` narrowed by any the poller has).
    pub fn new(ambient: Option<Ambient>, inner: F) -> Self {
        Scoped { ambient, inner }
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let ambient = self.ambient.map(|a| a.within(current()));
        let _entered = Entered { previous: replace(ambient) };
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` (no
        // method hands it out by value and there is no Drop impl that moves it), and the
        // other field is Copy.
        let inner = unsafe { self.map_unchecked_mut(|s| &mut s.inner) };
        inner.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Jitter;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_context_within_another_narrows_it_and_never_widens_it() {
        let now = ms(1_000);
        let request = Ambient::new(Some(ms(300)), true, now);
        let own = Ambient::new(Some(ms(30_000)), false, now);
        let inside = own.within(Some(request));
        assert_eq!((inside.deadline(), inside.is_retry()), (Some(ms(1_300)), true));
        let shorter = Ambient::new(Some(ms(100)), false, now).within(Some(request));
        assert_eq!((shorter.deadline(), shorter.is_retry()), (Some(ms(1_100)), true));
        let unbounded = Ambient::new(None, false, now);
        assert_eq!(unbounded.within(Some(request)).deadline(), Some(ms(1_300)));
        assert_eq!(request.within(Some(unbounded)), request);
        assert_eq!(own.within(None), own);
    }

    #[test]
    fn entering_inside_another_narrows_and_leaving_restores() {
        let now = now();
        let request = Ambient::new(Some(ms(300)), true, now);
        let own = Ambient::new(Some(ms(30_000)), false, now);
        let outer = enter(request);
        {
            let _inner = enter(own);
            assert_eq!(current(), Some(own.within(Some(request))));
            assert_eq!(current().map(|a| a.is_retry()), Some(true));
        }
        assert_eq!(current(), Some(request));
        drop(outer);
        assert_eq!(current(), None);
        let _alone = enter(own);
        assert_eq!(current(), Some(own));
    }

    #[test]
    fn the_deadline_is_the_smaller_minus_the_margin() {
        let p = Policy::default(); // 15 s deadline, 5 attempts
        let under = constrain(&p, Some(ms(300)), false).unwrap();
        assert_eq!((under.deadline(), under.max_attempts()), (Some(ms(294)), 5));
        assert!(constrain(&p, Some(ms(20_000)), false).is_none(), "15 s is already shorter than 20 s - 250 ms");
        let unbounded = Policy::builder().deadline(None).build().unwrap();
        assert_eq!(constrain(&unbounded, Some(ms(1000)), false).unwrap().deadline(), Some(ms(980)));
        assert_eq!(constrain(&p, Some(ms(3)), false).unwrap().deadline(), Some(Duration::ZERO), "nothing left");
        assert!(constrain(&p, None, false).is_none());
    }

    #[test]
    fn the_downward_rule_makes_one_attempt_and_no_hedge() {
        let p = Policy::builder().jitter(Jitter::None).build().unwrap();
        let under = constrain(&p, None, true).unwrap();
        assert_eq!((under.max_attempts(), under.deadline()), (1, p.deadline()));
        let hedged = Policy::builder().hedge(Some(crate::Hedging::fixed(3, ms(50)).unwrap())).build().unwrap();
        assert!(constrain(&hedged, None, true).unwrap().hedging().is_none());
        let single = Policy::builder().max_attempts(1).build().unwrap();
        assert!(constrain(&single, None, true).is_none());
    }

    #[test]
    fn enter_and_scoped_restore_the_previous_context() {
        let outer = Ambient::new(Some(ms(1000)), false, ms(0));
        let inner = Ambient::new(None, true, ms(0));
        assert!(in_use());
        {
            let _a = enter(outer);
            assert_eq!(current(), Some(outer));
            {
                let _b = enter(inner);
                // Narrowed by the outer one: its deadline, the inner retry mark.
                assert_eq!(current(), Some(Ambient { deadline: Some(ms(1000)), is_retry: true }));
            }
            assert_eq!(current(), Some(outer));
            let mut seen = None;
            let fut = Scoped::new(
                Some(inner),
                std::future::poll_fn(|_| {
                    seen = current();
                    Poll::Ready(())
                }),
            );
            let waker = std::task::Waker::noop();
            let mut fut = std::pin::pin!(fut);
            assert!(fut.as_mut().poll(&mut Context::from_waker(waker)).is_ready());
            assert_eq!(seen, Some(inner.within(Some(outer))));
            assert_eq!(current(), Some(outer));
        }
        assert_eq!(current(), None);
    }
}
