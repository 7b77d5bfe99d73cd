'use strict';
// What becomes of a response's body, for every Node HTTP helper (retryingFetch,
// retryrs/undici, retryrs/axios, retryrs/got): the one place that decides it. The rule
// (docs/contract.md, "HTTP bodies"):
//
// - A response the rules do not retry is handed over: from then on it is the caller's,
//   and the retry deadline no longer applies to it. Its body is never cut while bytes
//   arrive; a body silent for `silenceMs` fails with the client's own timeout error.
// - A response the rules retry is held: at most DRAIN_LIMIT bytes of its body are read
//   (within the attempt's bound), then reading stops (the source is paused, not cut).
//   If the engine retries, the held body is cancelled (a body read to its end keeps its
//   connection); if retries ran out, it is handed over whole: the prefix read, then the
//   rest of the same body.
//
// The helpers supply the mechanics (a web stream, undici's handler callbacks, a Node
// stream); the limits and the order of things are here.

/** How much of a retried response's body is read to keep its connection. */
const DRAIN_LIMIT = 64 * 1024;

/**
 * How long a handed-over body may stay silent before it fails: the retrier's attempt
 * timeout, else the deadline's length; null (never) with neither.
 */
function silenceMs(o) {
  if (o.attemptTimeoutMs > 0) return o.attemptTimeoutMs;
  return o.deadlineMs ?? null;
}

/**
 * The body of a held response as it is read: at most DRAIN_LIMIT bytes are kept, then
 * the source is asked to stop (`push` answers false). `done` resolves when the body ended,
 * failed, or reached the limit: the attempt waits for it within its bound, no longer.
 */
class HeldBody {
  constructor() {
    this.chunks = [];
    this.size = 0;
    this.ended = false;
    this.error = null;
    // Set when the held response is handed over or cancelled: no more is kept here.
    this.released = false;
    this.done = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  #settle;

  /** A chunk read while held; false: the limit is reached, stop reading. */
  push(chunk) {
    this.chunks.push(chunk);
    this.size += chunk.length ?? chunk.byteLength;
    if (this.size < DRAIN_LIMIT) return true;
    this.#settle();
    return false;
  }

  end() {
    this.ended = true;
    this.#settle();
  }

  fail(err) {
    this.error = err;
    this.#settle();
  }

  /** Whether the body is still flowing (neither ended nor failed): cancelling it closes its connection. */
  get open() {
    return !this.ended && this.error === null;
  }

  /** Hands over what was kept (the caller's from now on); the holder forwards the rest. */
  take() {
    this.released = true;
    const chunks = this.chunks;
    this.chunks = [];
    return chunks;
  }
}

/**
 * A watchdog for a handed-over body: `fire` is called once the body has been silent for
 * `ms` while the caller was reading (touch() on each chunk; stop() at its end; `waiting()`,
 * when given, says whether the caller is waiting for bytes: a caller that paused is not
 * kept waiting by the server). One timer per body, re-armed only when it fires early, so
 * a chunk costs a clock read.
 */
function silenceWatch(ms, fire, waiting) {
  if (ms === null || ms === undefined || !(ms > 0) || !Number.isFinite(ms)) return null;
  let last = performance.now();
  let timer;
  const check = () => {
    if (waiting !== undefined && !waiting()) last = performance.now();
    const idle = performance.now() - last;
    if (idle >= ms) {
      timer = undefined;
      fire(ms);
    } else {
      timer = setTimeout(check, ms - idle);
      timer.unref();
    }
  };
  timer = setTimeout(check, ms);
  timer.unref();
  return {
    touch() {
      last = performance.now();
    },
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** The error a silent handed-over body fails with, when its client has no timeout of its own. */
function silenceError(where, ms) {
  return new DOMException(`${where}: the response body was silent for ${Math.round(ms)} ms (the retrier's attemptTimeoutMs, or the deadline's length without one)`, 'TimeoutError');
}

module.exports = { DRAIN_LIMIT, HeldBody, silenceMs, silenceWatch, silenceError };

/**
 * Holds a Node stream's body (a retried response of a client with Node streams): reads
 * into `held` until its end, an error, or DRAIN_LIMIT bytes, where the stream is paused
 * (not destroyed: the response may yet be handed back whole). Resolves with held.done.
 */
function holdStream(stream, held) {
  const onData = (chunk) => {
    if (!held.push(chunk)) {
      stream.pause();
      stream.off('data', onData);
    }
  };
  stream.on('data', onData);
  stream.once('end', () => held.end());
  // Kept for good: an error after the hold (a reset while paused) must not go unheard.
  stream.on('error', (err) => {
    if (!held.released) held.fail(err);
  });
  return held.done;
}

/**
 * The whole body of a Node stream, `held`'s prefix first (for a client that hands over
 * the response read whole): resolves with the bytes, rejects with the stream's error, or
 * with a silence error (`where`) once no byte came for `silence` ms.
 */
function readWhole(stream, held, silence, where) {
  const chunks = held === null ? [] : held.take();
  if (held !== null && held.error !== null) return Promise.reject(held.error);
  if (held !== null && held.ended) return Promise.resolve(Buffer.concat(chunks));
  return new Promise((resolve, reject) => {
    const watch = silenceWatch(silence, (ms) => {
      const err = silenceError(where, ms);
      stream.destroy(err);
      reject(err);
    });
    stream.on('data', (chunk) => {
      watch?.touch();
      chunks.push(chunk);
    });
    stream.once('end', () => {
      watch?.stop();
      resolve(Buffer.concat(chunks));
    });
    stream.once('error', (err) => {
      watch?.stop();
      reject(err);
    });
    stream.resume();
  });
}

module.exports.holdStream = holdStream;
module.exports.readWhole = readWhole;
