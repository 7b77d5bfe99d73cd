'use strict';
// The timers that bound attempts. A call's first attempt (fast path or loop) is an entry
// of its retrier's queue, since a timer armed and cleared on every call would cost more
// than the rest of the call; when that first bound is the deadline the call keeps the
// entry to cut later attempts too. Otherwise a call arms one setTimeout for its deadline,
// and an attempt timeout one per attempt (armBound).
//
// Every first attempt of one retrier has the same bound (the engine's, read once:
// NativePolicy.firstBoundMs) and they start in time order, so they expire in the order
// they were queued: a FIFO with a single timer armed for its oldest live entry (Node's
// own timer lists per duration work the same way). A settled entry is only cleared; it
// leaves the queue when it reaches the head.

const perf = globalThis.performance;

// The longest single setTimeout; longer bounds are armed in chunks.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A timer for `ms` that calls `fire` once (chunked past setTimeout's limit), unref'd when
 * `unref`; returns what `clearBound` clears.
 */
function armBound(ms, unref, fire) {
  const t = { timer: undefined, unref };
  let left = ms;
  const arm = () => {
    const chunk = Math.min(left, MAX_TIMER_MS);
    left -= chunk;
    t.timer = setTimeout(left > 0 ? arm : fire, chunk);
    if (t.unref) t.timer.unref();
  };
  arm();
  return t;
}

function clearBound(t) {
  clearTimeout(t.timer);
}

/** From now on the bound does not keep the process alive. */
function unrefBound(t) {
  t.unref = true;
  t.timer.unref();
}

/**
 * What the queue passes to an entry's callback when its bound passed first (an object no
 * attempt can reject with).
 */
const EXPIRED = Object.freeze({ retryrsBoundExpired: true });

// The least storage the queue allocates at a time (see renew).
const SLOTS = 256;

/**
 * The fast path's first-attempt bounds of one retrier. An entry is the attempt's own
 * failure callback (called with EXPIRED when the bound passes first) and its expiry time
 * (performance.now()), kept in two arrays: the call already has the callback, so queueing
 * allocates nothing but new storage once per SLOTS entries or more. `add` returns the
 * entry's position, which `settle` takes back.
 */
class BoundQueue {
  constructor(unref) {
    this.unref = unref;
    this.fns = [];
    this.times = new Float64Array(0);
    // fns[0] is entry number `base`; fns[head] the oldest that may be live; fns[tail] the
    // next free slot (fns.length is the storage; times is as long at least).
    this.base = 0;
    this.head = 0;
    this.tail = 0;
    // Entries queued and not settled: while there are none the timer is unref'd, so an
    // idle retrier never holds the process. The timer's ref follows `live` at the end of
    // each turn of the event loop (see check), not on every call.
    this.live = 0;
    this.timer = null;
    this.refed = false;
    this.checking = false;
    // Whether an entry that finds no other live has nothing to do (see still): in a run
    // of calls one after another every call does, and asks one field instead of four.
    this.quiet = false;
    this.fire = () => this.sweep();
    this.check = () => {
      this.checking = false;
      this.follow();
    };
  }

  /** Queues `fn`, expiring at `expiresAt` (performance.now() time); returns its position. */
  add(fn, expiresAt) {
    let tail = this.tail;
    if (tail === this.fns.length) tail = this.renew();
    this.fns[tail] = fn;
    this.times[tail] = expiresAt;
    this.tail = tail + 1;
    // `!== true`: a field's boolean test costs a compare, its truthiness a type dispatch.
    if (this.live++ === 0 && this.quiet !== true) this.wake(expiresAt);
    return this.base + tail;
  }

  /** The first live entry needs the timer: armed, or ref'd at the end of this turn. */
  wake(expiresAt) {
    if (this.timer === null) this.arm(expiresAt - perf.now());
    else if (!this.refed) this.soon();
  }

  /**
   * The storage is full: the entries from head on move to a new array of callbacks with
   * as much room again (SLOTS at least), emptied slots are dropped; returns the first
   * free slot. A new array rather than the same one reused: a callback stored into an
   * array the GC has moved to its old generation costs a write barrier (~60
   * instructions) on every call, into a young one a few. The times refer to no object:
   * their storage is kept (a new Float64Array costs an allocation outside the heap and
   * its zeroing), unless too small.
   */
  renew() {
    const { head, tail } = this;
    const n = tail - head;
    const size = Math.max(SLOTS, 2 * n);
    const fns = new Array(size);
    // Holds functions and null from the start: add's store then sees one kind of array.
    // Slots from tail on are holes, never read.
    fns[0] = null;
    for (let i = 0; i < n; i++) fns[i] = this.fns[head + i];
    this.fns = fns;
    if (this.times.length < size) {
      const times = new Float64Array(size);
      times.set(this.times.subarray(head, tail));
      this.times = times;
    } else {
      this.times.copyWithin(0, head, tail);
    }
    this.base += head;
    this.head = 0;
    this.tail = n;
    return n;
  }

  /** The entry at `at` settled before its bound: it no longer needs the timer. */
  settle(at) {
    const fns = this.fns;
    const i = at - this.base;
    fns[i] = null;
    // The head moves past settled entries here (most settle in the order they started).
    if (i === this.head) {
      let head = i + 1;
      while (head < this.tail && fns[head] === null) head++;
      this.head = head;
    }
    // Let go at once (only a timer a turn's end found needed is ref'd).
    if (--this.live === 0 && this.refed === true) {
      this.refed = false;
      this.timer.unref();
      this.still();
    }
  }

  /**
   * Refs the timer, if entries are still live, at the end of this turn of the event loop
   * (the immediate itself keeps the process alive until then): a run of calls that settle
   * within one turn toggles nothing (about 10 ns per call on the happy path), and the
   * process can only exit between turns. Letting go (settle) is at once.
   */
  soon() {
    if (this.unref || this.checking) return;
    this.checking = true;
    this.still();
    setImmediate(this.check);
  }

  follow() {
    const want = !this.unref && this.live > 0 && this.timer !== null;
    if (want !== this.refed) {
      this.refed = want;
      if (this.timer !== null) {
        if (want) this.timer.ref();
        else this.timer.unref();
      }
    }
    this.still();
  }

  /**
   * Sets quiet, after any change of the timer, its ref or a pending check: an entry
   * going live finds the timer armed and ref'd, or unref'd for good (an unref retrier),
   * or a check at the end of this turn pending already.
   */
  still() {
    this.quiet = this.timer !== null && (this.unref || this.refed || this.checking);
  }

  arm(ms) {
    this.timer = setTimeout(this.fire, Math.min(Math.max(ms, 0), MAX_TIMER_MS));
    this.refed = !this.unref && this.live > 0;
    if (!this.refed) this.timer.unref();
    this.still();
  }

  sweep() {
    this.timer = null;
    this.refed = false;
    this.quiet = false;
    const { fns, times } = this;
    const t = perf.now();
    const expired = [];
    let head = this.head;
    while (head < this.tail) {
      const fn = fns[head];
      if (fn !== null && times[head] > t) break;
      fns[head++] = null;
      if (fn !== null) {
        this.live--;
        expired.push(fn);
      }
    }
    this.head = head;
    if (head < this.tail) this.arm(times[head] - t);
    // Last, with the queue in order: an expiry aborts a signal, whose listeners may start
    // calls (and queue entries) at once.
    for (const fn of expired) fn(EXPIRED);
  }
}

module.exports = { BoundQueue, EXPIRED, armBound, clearBound, unrefBound, MAX_TIMER_MS };
