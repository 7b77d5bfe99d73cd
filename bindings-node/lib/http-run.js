'use strict';
// One request through an HTTP helper (retryingFetch, retryrs/axios, retryrs/undici): the
// retrier's call loop over the client's attempts, each bounded by the engine's bound up
// to its response's headers, judged by the core's HTTP rule (lib/http-common.js), its
// response's body disposed of by lib/http-body.js's rule; and the resend count the
// client's instrumentation reads. retryrs/got keeps got's own loop (lib/got.js).
const { AsyncLocalStorage } = require('node:async_hooks');
const { armBound, clearBound } = require('./bound');
const { boundOf } = require('./attempt');
const { isDeadline, markTimedOut } = require('./call-errors');
const { parseRetryAfter } = require('./http');
const {
  RetryableStatusError, FinalStatusError, RequestFailedError, FinalNetworkError,
  classify, isFailedStatus, retrierFor, exhaustedAs, isExhausted, isClientTimeout,
} = require('./http-common');
const { outboundHeaders, pushbackOf } = require('./http-propagation');
const { DONT_RETRY } = require('./codes');
const { eitherSignal } = require('./signals');

/**
 * One request through a helper (retryingFetch, axios, undici): the retrier's call loop
 * over `io.send(signal, n)`, one attempt each, with the engine's bound for the attempt as
 * a timer whose abort reaches the client through `signal` until the headers arrive.
 * `io.send` resolves with the attempt's outcome `{ status, retryAfter, hold(), cancel(),
 * handOver() }` (its Retry-After header value, or null; what becomes of its body is
 * lib/http-body.js's rule: hold() reads a retried response's prefix, cancel() drops it,
 * handOver() gives the response to the caller, whose value runHttp returns; optional
 * read(): reads a final response's body inside the attempt) or rejects with
 * the client's error; `io.failureOf(err, n)` maps that error to 'connect', 'network' or
 * undefined (final), `io.unsent(err, n)` (optional) says whether a request cut short
 * by its bound was never sent, and `io.timedOut(err)` (optional, default isClientTimeout)
 * whether the error is the client's own timeout. A request cut at its bound or timed out
 * by its client is priced as a timeout by a quota budget (markTimedOut). `req`: `{ method,
 * url (redacted), target (the URL as sent, for the propagation allowlist), key
 * (Idempotency-Key or null), replayable (a boolean, or a function: whether the body can be
 * sent again now), signal }`. Each send gets the attempt's propagation headers as a third
 * argument (a flat [name, value, ...] list, or null: lib/http-propagation.js), and an outcome may
 * carry `headerPairs()`, its response's headers as pairs, whose pushback the core reads.
 *
 * Resolves with handOver() of the last outcome: a success, a final error response (the
 * call counted rejected) or the last retried response when retries ran out, whole.
 * Rejects with the client's error: as it was for a final failure, or carrying the retry
 * information when retries ran out on the network (exhaustedAs).
 */
async function runHttp(h, rules, req, io) {
  const { method, url, key, replayable, signal } = req;
  const o = h.o;
  // Whether the body can be sent again now (a function: it depends on what was sent).
  const resendable = typeof replayable === 'function' ? replayable : () => replayable;
  const verdict = (status, failure) => (resendable()
    ? classify(rules, method, status, failure, key)
    : status !== null ? 'response' : 'fail');
  // What a request cut short by its bound rejects with.
  const timeoutError = (n, bound) => () => new DOMException(
    isDeadline(o, bound)
      ? `${h.where}: ${resendable() ? `attempt ${n}` : 'a request with a one-shot body'} ran past the deadline (it had ${Math.round(bound)} ms left)`
      : `${h.where}: ${resendable() ? `attempt ${n}` : 'a request with a one-shot body'} timed out after ${o.attemptTimeoutMs} ms (the retrier's attemptTimeoutMs)`,
    'TimeoutError',
  );
  // A network failure of an attempt (`timedOut`: cut at its bound or the client's own
  // timeout, which a quota prices as a timeout's), retried where the rules allow.
  const failedAttempt = (failure, unsent, err, timedOut) => {
    const Failure = verdict(null, failure) === 'retry' ? RequestFailedError : FinalNetworkError;
    const failed = new Failure(method, url, failure === 'connect' || unsent, err);
    return timedOut ? markTimedOut(failed) : failed;
  };
  let held;
  // Every retried response of the call (hedged attempts overlap: each holds its own).
  const heldAll = [];
  const attempt = async (ctx) => {
    const n = ctx.attempt;
    if (n > 1) markResend(n);
    // The last retried response is kept only until the next attempt starts; hedged
    // attempts overlap, so each keeps its own (at most 5, each read to 64 KiB at most):
    // whichever failure ends the call still has its response to hand back.
    if (held !== undefined && !rules.hedged) {
      RetryableStatusError.takeResponse(held)?.cancel();
      held = undefined;
      heldAll.length = 0;
    }
    // The engine's bound for this attempt (the deadline or the attempt timeout): it
    // bounds the request up to its headers, and the prefix read of a retried response;
    // not the body of a response handed over (lib/http-body.js).
    const bound = boundOf(ctx);
    const timer = bound === null ? undefined : attemptTimer(bound, o.unref, timeoutError(n, bound));
    // Hedged: the attempt's own signal (the call's reaches it; it aborts when it loses).
    const own = rules.hedged ? ctx.signal : signal;
    const attemptSignal = eitherSignal(own, timer?.signal);
    let out;
    try {
      // The attempt number is in the async context of the request's send: what
      // resendCountAttributes reads when the client's instrumentation makes its span.
      // The propagation headers of this attempt (its time left now, its number), or null.
      const extra = outboundHeaders(h.out, req.target, ctx);
      const sent = attempts.run(n, () => io.send(attemptSignal, n, extra));
      out = await (timer === undefined ? sent : Promise.race([sent, timer.expired]));
      // A client that hands a response over read whole (axios) reads a final one inside
      // the attempt: its bound covers the read, and a stall is a timed-out attempt.
      if (out.read !== undefined && verdict(out.status, null) !== 'retry') {
        await (timer === undefined ? out.read() : Promise.race([out.read(), timer.expired]));
      }
    } catch (err) {
      timer?.clear();
      out?.cancel();
      if (signal?.aborted) throw err;
      // Past its bound the request may have reached the server: a read timeout
      // ('network'), sent again only for an idempotent method; one never sent was not
      // connected: a connect failure.
      const unsent = io.unsent?.(err, n) === true;
      const cut = timer?.signal.aborted === true;
      const failure = cut ? (unsent ? 'connect' : 'network') : io.failureOf(err, n);
      if (failure === undefined) throw err;
      throw failedAttempt(failure, unsent, err, cut || (io.timedOut ?? isClientTimeout)(err));
    }
    if (verdict(out.status, null) !== 'retry') {
      // Handed over (lib/http-body.js): the deadline no longer applies to it.
      timer?.clear();
      // A final error response: handed back, the call counted rejected.
      if (isFailedStatus(out.status)) throw new FinalStatusError(out.status, method, url, undefined, out);
      return out;
    }
    // Held (lib/http-body.js): a prefix of its body is read within the attempt's bound;
    // the bound passing ends the wait but no longer aborts the request (the response may
    // still be handed back whole).
    timer?.afterHeaders();
    heldAll.push(out);
    try {
      await (timer === undefined ? out.hold() : Promise.race([out.hold(), timer.expired]));
    } catch (err) {
      // The bound passed while reading. A client that reads the body inside the attempt
      // (axios) timed out: a read timeout, as if its body had been final. For one that
      // hands over at headers the status is the failure all the same.
      if (out.read !== undefined) {
        out.cancel();
        throw failedAttempt('network', false, err, true);
      }
    } finally {
      timer?.clear();
    }
    const ra = out.retryAfter;
    // The server's pushback (the core's reading): "don't retry" ends the call with this
    // response, counted a failure; a wait is exact (the helpers' delayMs hook), and the
    // hint where no hook runs (hedging).
    const pushback = out.headerPairs === undefined ? undefined : pushbackOf(out.headerPairs());
    const hint = pushback ?? (ra === null || ra === undefined ? undefined : parseRetryAfter(String(ra)));
    held = new RetryableStatusError(out.status, method, url, hint, out);
    if (pushback !== undefined && pushback !== DONT_RETRY) held.pushbackMs = pushback;
    throw held;
  };
  let kept;
  try {
    kept = await retrierFor(rules, method, key, replayable === true).call(attempt, signal !== undefined ? { signal } : undefined);
  } catch (err) {
    const end = settleHttp(err);
    if (!('response' in end)) {
      for (const out of heldAll) out.cancel();
      throw end.error;
    }
    kept = end.response;
  }
  // Retried responses not handed back are cancelled (one read to its end keeps its
  // connection); the one handed back is the caller's.
  for (const out of heldAll) if (out !== kept) out.cancel();
  return kept.handOver();
}

/**
 * What a helper's call ended with, as the client would have it: a response (returned:
 * the final or last retried one), or the client's own error (thrown: as it was, or
 * carrying the retry information when retries ran out on the network).
 */
function settleHttp(err) {
  if (err instanceof FinalStatusError) return { response: FinalStatusError.takeResponse(err) };
  if (err instanceof FinalNetworkError) return { error: err.cause };
  if (isExhausted(err)) {
    if (err.cause instanceof RetryableStatusError) return { response: RetryableStatusError.takeResponse(err.cause) };
    if (err.cause instanceof RequestFailedError) return { error: exhaustedAs(err.cause.cause, err) };
  }
  return { error: err };
}

/**
 * One attempt's bound for its request: `signal` aborts the request, `expired` rejects
 * with the same TimeoutError while the response is awaited (so a fetch that drops
 * init.signal is bounded too). `afterHeaders()`: from then on the bound only rejects
 * `expired` (it ends the wait for a retried response's prefix) and no longer aborts the
 * request, whose response may yet be handed back; `clear()` disarms it.
 */
function attemptTimer(boundMs, unref, reason) {
  const controller = new AbortController();
  let expire;
  let racing = true;
  let aborts = true;
  const expired = new Promise((_, reject) => {
    expire = reject;
  });
  let timer = armBound(boundMs, unref, () => {
    timer = undefined;
    const why = reason();
    if (aborts) controller.abort(why);
    if (racing) expire(why);
  });
  return {
    signal: controller.signal,
    expired,
    clear() {
      racing = false;
      if (timer !== undefined) clearBound(timer);
      timer = undefined;
    },
    afterHeaders() {
      aborts = false;
    },
  };
}
// The attempt of the HTTP helper's request being sent, in the async context of its send.
const attempts = new AsyncLocalStorage();

/**
 * `http.request.resend_count` for the request a client is making now, as span attributes
 * (`{ 'http.request.resend_count': attempt - 1 }` on a resend, undefined otherwise): for
 * an instrumentation that makes one span per physical request and takes attributes from
 * a hook called as the request is created, such as OpenTelemetry's undici
 * instrumentation (`new UndiciInstrumentation({ startSpanHook: resendCountAttributes })`),
 * whose `undici:request:create` handler runs in the attempt's async context.
 */
function resendCountAttributes() {
  const n = attempts.getStore();
  return n !== undefined && n > 1 ? { 'http.request.resend_count': n - 1 } : undefined;
}

// OpenTelemetry's trace API when @opentelemetry/api is installed (null when it is not),
// looked up at the first resend: a request that succeeds at once never loads it.
let otelTrace;

/** `http.request.resend_count` (attempt - 1) on the active span, for a resend. */
function markResend(attempt) {
  if (otelTrace === undefined) {
    try {
      otelTrace = require('@opentelemetry/api').trace;
    } catch {
      otelTrace = null;
    }
  }
  otelTrace?.getActiveSpan()?.setAttribute('http.request.resend_count', attempt - 1);
}

module.exports = { runHttp, settleHttp, attemptTimer, resendCountAttributes, markResend };
