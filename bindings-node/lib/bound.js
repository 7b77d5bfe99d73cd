'use strict';
// The timers that bound attempts: one setTimeout per attempt on the retry path, and on
// the fast path (a call's first attempt) one queue per retrier, since a timer armed and
// cleared on every call would cost more than the rest of the call.
//
// Every first attempt of one retrier has the same bound (the engine's, read once:
// NativePolicy.firstBoundMs) and they start in time order, so they expire in the order
// they were queued: a FIFO with a single timer armed for its oldest live entry (Node's
// own timer lists per duration work the same way). A settled entry is only marked; it
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

/** The fast path's first-attempt bounds of one retrier. */
class BoundQueue {
  constructor(boundMs, unref) {
    this.boundMs = boundMs;
    this.unref = unref;
    this.items = [];
    this.head = 0;
    // Entries queued and not settled: while there are none the timer is unref'd, so an
    // idle retrier never holds the process.
    this.live = 0;
    this.timer = null;
    this.refed = false;
    this.fire = () => this.sweep();
  }

  /** Queues `entry` ({ expiresAt: performance.now() time, done, expire() }). */
  add(entry) {
    const items = this.items;
    while (this.head < items.length && items[this.head].done) items[this.head++] = undefined;
    // Emptied slots are dropped now and then, not on every call (an array truncated to
    // nothing gives up its storage, and the next push allocates it again).
    if (this.head > 1024 && this.head * 2 > items.length) {
      items.splice(0, this.head);
      this.head = 0;
    }
    items.push(entry);
    this.live++;
    if (this.timer === null) this.arm(entry.expiresAt - perf.now());
    else if (!this.refed && !this.unref) {
      this.timer.ref();
      this.refed = true;
    }
  }

  /** The entry's attempt settled first: it no longer needs the timer. */
  settle(entry) {
    entry.done = true;
    if (--this.live === 0) {
      if (this.refed) {
        this.timer.unref();
        this.refed = false;
      }
    }
  }

  arm(ms) {
    this.timer = setTimeout(this.fire, Math.min(Math.max(ms, 0), MAX_TIMER_MS));
    this.refed = !this.unref && this.live > 0;
    if (!this.refed) this.timer.unref();
  }

  sweep() {
    this.timer = null;
    const items = this.items;
    const t = perf.now();
    const expired = [];
    while (this.head < items.length) {
      const e = items[this.head];
      if (!e.done && e.expiresAt > t) break;
      items[this.head++] = undefined;
      if (!e.done) {
        e.done = true;
        this.live--;
        expired.push(e);
      }
    }
    if (this.head < items.length) this.arm(items[this.head].expiresAt - t);
    // Last, with the queue in order: an expiry aborts a signal, whose listeners may start
    // calls (and queue entries) at once.
    for (const e of expired) e.expire();
  }
}

module.exports = { BoundQueue, armBound, clearBound, unrefBound, MAX_TIMER_MS };
