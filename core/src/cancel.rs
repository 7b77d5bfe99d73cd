//! A cancel token: one side calls [`CancelToken::cancel`], a sleeping executor on another
//! thread wakes at once (not when its timer would have fired), and so does an async one
//! awaiting [`CancelToken::cancelled`]. Tokens link: [`CancelToken::child`] and
//! [`CancelToken::any`] make a token that a parent's cancel cancels too (never the
//! reverse); a parent holds its children weakly, so dropped children cost nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Cheap to clone (one `Arc`), `Send + Sync`; every clone cancels the same thing.
/// Cancelling is sticky: a cancelled token stays cancelled.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    // The condvar needs a mutex; the flag itself is the atomic, so readers never lock.
    // The mutex also keeps the wakers of the futures awaiting the cancel.
    lock: Mutex<Waiters>,
    wake: Condvar,
}

/// The tasks awaiting [`CancelToken::cancelled`], each under the id of its future, and
/// the linked tokens a cancel reaches.
#[derive(Debug, Default)]
struct Waiters {
    next_id: u64,
    wakers: Vec<(u64, Waker)>,
    /// Tokens made by [`CancelToken::child`] / [`CancelToken::any`] from this one, held
    /// weakly (a dropped child is pruned when the next one is linked).
    children: Vec<Weak<Inner>>,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token cancelled when this one is (at once if it already is); cancelling the
    /// child leaves this one alone. This token holds it weakly: dropping it leaks nothing.
    pub fn child(&self) -> CancelToken {
        CancelToken::any(&[self])
    }

    /// A token cancelled as soon as any of `parents` is (at once if one already is; never
    /// if the list is empty, unless cancelled itself). Cancelling it cancels none of them.
    /// The parents hold it weakly: dropping it leaks nothing.
    pub fn any(parents: &[&CancelToken]) -> CancelToken {
        let token = CancelToken::new();
        for parent in parents {
            let mut guard = parent.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
            // Checked under the lock: cancel() sets the flag before it takes the lock to
            // collect the children, so a child linked now is one it will see, or the flag
            // is already set here.
            if parent.is_cancelled() {
                drop(guard);
                token.cancel();
                break;
            }
            guard.children.retain(|child| child.strong_count() > 0);
            guard.children.push(Arc::downgrade(&token.inner));
        }
        token
    }

    /// Cancels, and wakes every thread waiting on this token and every task awaiting
    /// [`CancelToken::cancelled`]; then the same for every linked token made from it.
    pub fn cancel(&self) {
        // A worklist, not recursion: a long chain of children cannot overflow the stack.
        let mut pending = vec![self.inner.clone()];
        while let Some(inner) = pending.pop() {
            if inner.cancelled.swap(true, Ordering::AcqRel) && !Arc::ptr_eq(&inner, &self.inner) {
                continue; // a linked token cancelled before: its children were reached then
            }
            // Taking the lock orders this notify after a waiter's check-then-wait.
            let (wakers, children) = {
                let mut guard = inner.lock.lock().unwrap_or_else(|e| e.into_inner());
                inner.wake.notify_all();
                (std::mem::take(&mut guard.wakers), std::mem::take(&mut guard.children))
            };
            // Woken outside the lock: a waker may run a task inline.
            for (_, waker) in wakers {
                waker.wake();
            }
            pending.extend(children.iter().filter_map(Weak::upgrade));
        }
    }

    /// A future that completes once the token is cancelled (at once if it already is):
    /// what an async executor races its waits and attempts against. Any runtime: it needs
    /// nothing but the waker it is polled with. Dropping it unregisters it.
    pub fn cancelled(&self) -> Cancellation<'_> {
        Cancellation { token: self, id: None }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Blocks for `timeout` or until cancelled, whichever is first. Returns `true` if
    /// cancelled. A zero timeout only looks at the flag.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        if self.is_cancelled() || timeout.is_zero() {
            return self.is_cancelled();
        }
        let until = Instant::now().checked_add(timeout);
        let mut guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.is_cancelled() {
                return true;
            }
            let left = match until {
                Some(until) => match until.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                // Beyond what Instant can hold: wait in long slices, forever in effect.
                None => Duration::from_secs(86_400),
            };
            guard = self.inner.wake.wait_timeout(guard, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// The future of [`CancelToken::cancelled`].
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct Cancellation<'a> {
    token: &'a CancelToken,
    /// Its place among the token's waiters, once registered.
    id: Option<u64>,
}

impl Future for Cancellation<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        let inner = &self.token.inner;
        let mut waiters = inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        // Checked again under the lock: cancel() sets the flag before it takes the lock
        // to wake the waiters, so a waker registered now is one it will see.
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        match self.id {
            Some(id) => {
                if let Some((_, waker)) = waiters.wakers.iter_mut().find(|(i, _)| *i == id) {
                    waker.clone_from(cx.waker());
                }
            }
            None => {
                let id = waiters.next_id;
                waiters.next_id += 1;
                waiters.wakers.push((id, cx.waker().clone()));
                drop(waiters);
                self.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for Cancellation<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let mut waiters = self.token.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
            waiters.wakers.retain(|(i, _)| *i != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A waker that counts its wakes, for the tests of the `cancelled()` future.
    struct Count(AtomicUsize);

    impl Count {
        fn waker() -> (Arc<Count>, Waker) {
            let count = Arc::new(Count(AtomicUsize::new(0)));
            (count.clone(), Waker::from(count))
        }
    }

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_parent_cancels_its_children_and_not_the_reverse() {
        let parent = CancelToken::new();
        let child = parent.child();
        let grandchild = child.child();
        assert!(!child.is_cancelled());
        child.cancel();
        assert!(!parent.is_cancelled(), "a child's cancel does not reach its parent");
        assert!(grandchild.is_cancelled(), "but reaches its own children");
        let other = parent.child();
        let sleeper = other.clone();
        let waiting = std::thread::spawn(move || sleeper.wait_timeout(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        parent.cancel();
        assert!(waiting.join().unwrap(), "a thread blocked on the child wakes when the parent is cancelled");
        assert!(other.is_cancelled());
        assert!(parent.child().is_cancelled(), "a child of a cancelled token starts cancelled");
    }

    #[test]
    fn any_is_cancelled_by_whichever_parent_goes_first() {
        let (a, b) = (CancelToken::new(), CancelToken::new());
        let either = CancelToken::any(&[&a, &b]);
        assert!(!either.is_cancelled());
        b.cancel();
        assert!(either.is_cancelled());
        assert!(!a.is_cancelled());
        assert!(CancelToken::any(&[&a, &b]).is_cancelled(), "one parent already cancelled");
        let none = CancelToken::any(&[]);
        assert!(!none.is_cancelled());
        none.cancel();
        assert!(none.is_cancelled());
    }

    #[test]
    fn dropped_children_are_not_kept() {
        let parent = CancelToken::new();
        for _ in 0..1000 {
            let child = parent.child();
            drop(child);
        }
        let kept = parent.child();
        // Pruned as each one is linked: only the live child is held.
        assert_eq!(parent.inner.lock.lock().unwrap().children.len(), 1);
        assert_eq!(Arc::strong_count(&kept.inner), 1, "the parent holds no strong reference");
        parent.cancel();
        assert!(kept.is_cancelled());
    }

    #[test]
    fn a_cancelled_parent_wakes_a_task_awaiting_its_child() {
        let (count, waker) = Count::waker();
        let mut cx = Context::from_waker(&waker);
        let parent = CancelToken::new();
        let child = CancelToken::any(&[&parent, &CancelToken::new()]);
        let mut waiting = child.cancelled();
        assert_eq!(Pin::new(&mut waiting).poll(&mut cx), Poll::Pending);
        parent.cancel();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(Pin::new(&mut waiting).poll(&mut cx), Poll::Ready(()));
    }

    #[test]
    fn a_cancel_from_another_thread_wakes_a_sleeper_at_once() {
        let token = CancelToken::new();
        let other = token.clone();
        let started = Instant::now();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.cancel();
        });
        assert!(token.wait_timeout(Duration::from_secs(30)));
        let waited = started.elapsed();
        canceller.join().unwrap();
        // 50 ms before the cancel, then "at once": generous slack for a loaded machine,
        // still far below the 30 s the timer would have taken.
        assert!(waited < Duration::from_secs(5), "woke after {waited:?}");
        assert!(token.is_cancelled());
    }

    #[test]
    fn an_uncancelled_wait_times_out() {
        let token = CancelToken::new();
        assert!(!token.wait_timeout(Duration::from_millis(10)));
        assert!(!token.wait_timeout(Duration::ZERO));
        token.cancel();
        assert!(token.wait_timeout(Duration::ZERO));
        assert!(token.wait_timeout(Duration::MAX));
    }

    #[test]
    fn the_cancelled_future_wakes_its_task_and_unregisters_when_dropped() {
        let (count, waker) = Count::waker();
        let mut cx = Context::from_waker(&waker);
        let token = CancelToken::new();
        let mut first = token.cancelled();
        let mut dropped = token.cancelled();
        assert_eq!(Pin::new(&mut first).poll(&mut cx), Poll::Pending);
        assert_eq!(Pin::new(&mut first).poll(&mut cx), Poll::Pending, "polled again: still one registration");
        assert_eq!(Pin::new(&mut dropped).poll(&mut cx), Poll::Pending);
        assert_eq!(token.inner.lock.lock().unwrap().wakers.len(), 2);
        drop(dropped);
        assert_eq!(token.inner.lock.lock().unwrap().wakers.len(), 1);
        token.clone().cancel();
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "the one registered task is woken once");
        assert_eq!(Pin::new(&mut first).poll(&mut cx), Poll::Ready(()));
        assert_eq!(Pin::new(&mut token.cancelled()).poll(&mut cx), Poll::Ready(()));
    }
}
