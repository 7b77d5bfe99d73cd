//! A cancel token: one side calls [`CancelToken::cancel`], a sleeping executor on another
//! thread wakes at once (not when its timer would have fired), and so does an async one
//! awaiting [`CancelToken::cancelled`]. Tokens link: [`CancelToken::child`] and
//! [`CancelToken::any`] make a token that a parent's cancel cancels too (never the
//! reverse); a parent holds its children weakly, so dropped children cost nothing.
//!
//! [`CancelToken::cancel_from_signal`] cancels from a signal handler: it takes no lock and
//! allocates nothing. A blocking wait ([`CancelToken::wait_timeout`]) sleeps on a word that
//! a cancel changes and wakes (the crate's `wake` module), with no lock between its check and its
//! sleep, so that cancel reaches it at once; a token linked from the one fired sees the
//! fire through its parents (each token holds its parents), since a signal handler cannot
//! walk the children.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::wake;

/// What a blocking wait on a linked token (one with parents) sleeps on: a token fired
/// from a signal handler cannot reach its children, so every fire also wakes this word
/// while such a wait is on ([`LINKED_WAITERS`]), and the woken waiters look at their
/// parents.
static LINKED_WORD: AtomicU32 = AtomicU32::new(0);
/// The blocking waits on linked tokens in progress: a fire wakes [`LINKED_WORD`] only
/// when there is one, so programs without them pay nothing for it.
static LINKED_WAITERS: AtomicUsize = AtomicUsize::new(0);

/// Cheap to clone (one `Arc`), `Send + Sync`; every clone cancels the same thing.
/// Cancelling is sticky: a cancelled token stays cancelled.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Changed by every cancel of this token: a blocking wait sleeps on it (wake.rs).
    word: AtomicU32,
    /// The tokens this one was linked from ([`CancelToken::any`]), held strongly (they
    /// hold it weakly): what a check of a linked token looks at when a parent was fired
    /// from a signal handler, which cannot reach the children. Set once, at creation.
    parents: Vec<Arc<Inner>>,
    // The flag is the atomic, so readers never lock; the mutex keeps the wakers of the
    // futures awaiting the cancel and the children.
    lock: Mutex<Waiters>,
}

impl Inner {
    /// Whether this token, or any token it was linked from, was cancelled. A chain of
    /// single parents (child of child of ...) is walked in a loop, so a long one cannot
    /// overflow the stack. Out of line: a check of an unlinked token stays two loads.
    #[inline(never)]
    fn fired(&self) -> bool {
        let mut inner = self;
        loop {
            if inner.cancelled.load(Ordering::SeqCst) {
                return true;
            }
            match inner.parents.as_slice() {
                [] => return false,
                [parent] => inner = parent,
                parents => return parents.iter().any(|p| p.fired()),
            }
        }
    }

    /// Sets the flag and wakes the blocking waits on this token (and on linked tokens,
    /// which look at their parents). No lock, no allocation: async-signal-safe. Whether
    /// the flag was already set.
    fn fire(&self, from_signal: bool) -> bool {
        let was = self.cancelled.swap(true, Ordering::SeqCst);
        wake::wake_all(&self.word, from_signal);
        // After the flag: a linked wait that registered before this load is woken; one
        // that registers after it sees the flag when it checks (all SeqCst).
        if LINKED_WAITERS.load(Ordering::SeqCst) > 0 {
            wake::wake_all(&LINKED_WORD, from_signal);
        }
        was
    }
}

impl Drop for Inner {
    // A long chain of children, each held only by the next, would otherwise be dropped
    // by recursion: dropped here in a loop instead.
    fn drop(&mut self) {
        let mut parents = std::mem::take(&mut self.parents);
        while let Some(parent) = parents.pop() {
            if let Some(mut inner) = Arc::into_inner(parent) {
                parents.append(&mut inner.parents);
            }
        }
    }
}

/// The tasks awaiting [`CancelToken::cancelled`], each under the id of its future, and
/// the linked tokens a cancel reaches.
#[derive(Debug, Default)]
struct Waiters {
    next_id: u64,
    wakers: Vec<(u64, Waker)>,
    /// Tokens made by [`CancelToken::child`] / [`CancelToken::any`] from this one, held
    /// weakly (dropped children are pruned when a child is linked and the list has
    /// doubled since the last pruning).
    children: Vec<Weak<Inner>>,
    /// The list's length at which the next link prunes it: pruning at every link cost
    /// each new child a walk over all live siblings (20k live children of one token took
    /// 1.4 s to make; now linear).
    prune_at: usize,
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
        let token = CancelToken {
            inner: Arc::new(Inner {
                cancelled: AtomicBool::new(false),
                word: AtomicU32::new(0),
                parents: parents.iter().map(|p| p.inner.clone()).collect(),
                lock: Mutex::default(),
            }),
        };
        for parent in parents {
            let mut guard = parent.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
            // Checked under the lock: cancel() sets the flag before it takes the lock to
            // collect the children, so a child linked now is one it will see, or the flag
            // is already set here.
            // The parent's own flag: a fire from a signal handler further up reaches the
            // new token through its parents anyway (is_cancelled walks them), and walking
            // here would make a chain of n children cost n^2 to build.
            if parent.inner.cancelled.load(Ordering::SeqCst) {
                drop(guard);
                token.cancel();
                break;
            }
            if guard.children.len() >= guard.prune_at {
                guard.children.retain(|child| child.strong_count() > 0);
                guard.prune_at = (2 * guard.children.len()).max(16);
            }
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
            if inner.fire(false) && !Arc::ptr_eq(&inner, &self.inner) {
                continue; // a linked token cancelled before: its children were reached then
            }
            let (wakers, children) = {
                let mut guard = inner.lock.lock().unwrap_or_else(|e| e.into_inner());
                (std::mem::take(&mut guard.wakers), std::mem::take(&mut guard.children))
            };
            // Woken outside the lock: a waker may run a task inline.
            for (_, waker) in wakers {
                waker.wake();
            }
            pending.extend(children.iter().filter_map(Weak::upgrade));
        }
    }

    /// Cancels from a signal handler: takes no lock and allocates nothing (async-signal
    /// safe). Sets the flag and wakes at once every thread blocked in
    /// [`CancelToken::wait_timeout`] on this token or on a token linked from it (the
    /// linked ones see the fire through their parents). What it cannot do without a
    /// lock: wake a task awaiting [`CancelToken::cancelled`] (it sees the fire when next
    /// polled) and set the flags of the linked tokens (their checks look at the parents;
    /// a later [`CancelToken::cancel`] of this token completes both).
    pub fn cancel_from_signal(&self) {
        self.inner.fire(true);
    }

    /// A future that completes once the token is cancelled (at once if it already is):
    /// what an async executor races its waits and attempts against. Any runtime: it needs
    /// nothing but the waker it is polled with. Dropping it unregisters it.
    pub fn cancelled(&self) -> Cancellation<'_> {
        Cancellation { token: self, id: None }
    }

    /// Whether [`CancelToken::cancel`] (or [`CancelToken::cancel_from_signal`]) was called
    /// on it or on a token it was linked from. Async-signal-safe.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire) || (!self.inner.parents.is_empty() && self.inner.fired())
    }

    /// Blocks for `timeout` or until cancelled, whichever is first. Returns `true` if
    /// cancelled. A zero timeout only looks at the flag.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        if self.is_cancelled() || timeout.is_zero() {
            return self.is_cancelled();
        }
        let until = Instant::now().checked_add(timeout);
        // A linked token sleeps on the word every fire wakes while such a wait is on (a
        // parent fired from a signal handler cannot reach it); others on their own word.
        let linked = !self.inner.parents.is_empty();
        let word = if linked {
            LINKED_WAITERS.fetch_add(1, Ordering::SeqCst);
            &LINKED_WORD
        } else {
            &self.inner.word
        };
        let cancelled = loop {
            // Read before the check: a fire after the check changes the word, so the
            // wait below returns at once instead of missing it.
            let seen = word.load(Ordering::SeqCst);
            if self.is_cancelled() {
                break true;
            }
            let left = match until {
                Some(until) => match until.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => break false,
                },
                // Beyond what Instant can hold: wait in long slices, forever in effect.
                None => Duration::from_secs(86_400),
            };
            wake::wait(word, seen, left);
        };
        if linked {
            LINKED_WAITERS.fetch_sub(1, Ordering::SeqCst);
        }
        cancelled
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
        // Pruned when the list doubles: never more than 16 dropped children are held.
        assert!(parent.inner.lock.lock().unwrap().children.len() <= 16);
        assert_eq!(Arc::strong_count(&kept.inner), 1, "the parent holds no strong reference");
        parent.cancel();
        assert!(kept.is_cancelled());
    }

    #[test]
    fn many_live_children_are_held_at_most_twice_over_and_all_cancelled() {
        // Each link used to walk every live sibling; the list is now pruned when it has
        // doubled, so it holds at most twice the live children (plus 16) and a cancel
        // reaches every one.
        let parent = CancelToken::new();
        let live: Vec<CancelToken> = (0..5_000).map(|_| parent.child()).collect();
        for _ in 0..5_000 {
            drop(parent.child());
        }
        assert!(parent.inner.lock.lock().unwrap().children.len() <= 2 * live.len() + 16);
        parent.cancel();
        assert!(live.iter().all(CancelToken::is_cancelled));
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
    fn a_cancel_from_a_signal_wakes_waiters_on_the_token_and_on_linked_tokens() {
        let parent = CancelToken::new();
        let child = parent.child();
        let either = CancelToken::any(&[&CancelToken::new(), &child]);
        let started = Instant::now();
        let sleepers: Vec<_> = [parent.clone(), child.clone(), either.clone()]
            .into_iter()
            .map(|t| std::thread::spawn(move || t.wait_timeout(Duration::from_secs(30))))
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        parent.cancel_from_signal();
        for sleeper in sleepers {
            assert!(sleeper.join().unwrap(), "every waiter saw the cancel");
        }
        assert!(started.elapsed() < Duration::from_secs(5), "woke after {:?}", started.elapsed());
        assert!(child.is_cancelled() && either.is_cancelled(), "linked tokens see it through their parents");
        assert!(!child.inner.cancelled.load(Ordering::SeqCst), "without setting their flags (no lock taken)");
        parent.cancel();
        assert!(child.inner.cancelled.load(Ordering::SeqCst), "a later cancel() completes the propagation");
        assert_eq!(LINKED_WAITERS.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_long_chain_of_children_checks_and_drops_without_recursion() {
        let root = CancelToken::new();
        let mut last = root.child();
        for _ in 0..200_000 {
            last = last.child(); // each intermediate is held only by its child
        }
        assert!(!last.is_cancelled());
        root.cancel_from_signal();
        assert!(last.is_cancelled());
        drop(last);
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
