'use strict';
// retryrs/got: an options object for `got.extend(...)` whose retry decisions come from
// the engine. got keeps its own request loop (bodies, redirects, hooks, its errors); each
// request also runs one retrier call whose attempts are got's: got's calculateDelay hands
// the engine each failure and waits for its verdict (the engine's wait is the wait), an
// afterResponse hook hands it each final response. What is retried is the core's HTTP
// rule (lib/http-common.js); this file maps got's outcomes to "response", "connect" or
// "network".
const { parseRetryAfter } = require('./http');
const {
  httpHelper, idempotencyKeyOf, failureOf, classify, isFailedStatus, exhaustedAs, isExhausted,
  RetryableStatusError, FinalStatusError, RequestFailedError, FinalNetworkError, isClientTimeout,
} = require('./http-common');
const { markResend } = require('./http-run');
const { outboundHeaders, withoutHeaders, pushbackOf, pairsOf } = require('./http-propagation');
const { DONT_RETRY } = require('./codes');
const { markTimedOut } = require('./call-errors');
const { DRAIN_LIMIT } = require('./http-body');

// Where a request's retrier call lives: in got's per-request `context` (shallow-copied
// from one attempt's options to the next, so every attempt of a request sees it).
const STATE = Symbol('retryrs.got');

// got's own retry fields, left empty (or at this limit) by the helper: a request that
// sets them overrides the rules for itself (limit: retries, so attempts = limit + 1).
const NO_LIMIT = 2 ** 31 - 1;

/** Whether a request body can be sent again: none, a string, bytes, a form, JSON; not a stream. */
function replayableBody(options) {
  const body = options.body;
  if (body === undefined || body === null || typeof body === 'string' || ArrayBuffer.isView(body)) return true;
  return !(typeof body.pipe === 'function' || typeof body[Symbol.asyncIterator] === 'function');
}

/**
 * The request's state: its retrier call, and the hand-over between got and the engine.
 * `settle(outcome)` ends the attempt in progress; `next` is got's calculateDelay waiting
 * for the engine's verdict (1: retry now, the engine has waited; 0: stop).
 */
function startCall(h, options) {
  const retryOpt = options.retry;
  const override = {};
  if (retryOpt.limit !== NO_LIMIT) override.limit = retryOpt.limit + 1;
  if (retryOpt.methods.length > 0) override.methods = retryOpt.methods;
  if (retryOpt.statusCodes.length > 0) override.statuses = retryOpt.statusCodes;
  // got's retry option has no room for ours: a request's `context.retry` takes what the
  // other helpers' `retry` option takes (limit, methods, statuses, idempotencyKey), over
  // got's own fields.
  const own = options.context?.retry;
  if (own !== undefined && own !== null) {
    if (typeof own !== 'object') throw new TypeError(`retryGot: a request's context.retry must be an object, got ${typeof own}`);
    // Two limits that count differently (attempts here, retries in got's) would be a
    // trap: got's own is the one a got user knows.
    if (own.limit !== undefined) {
      throw new TypeError(`retryGot: context.retry.limit is not taken; use got's own retry.limit, which counts retries as got does (retry: { limit: 2 } is 3 attempts), or the retrier's maxAttempts`);
    }
    Object.assign(override, own);
  }
  const rules = h.rulesFor(Object.keys(override).length > 0 ? override : undefined);
  const url = h.redact(options.url?.href ?? String(options.url));
  const state = {
    rules,
    url,
    method: String(options.method).toUpperCase(),
    key: idempotencyKeyOf(options.headers),
    replayable: replayableBody(options),
    current: null, // { resolve, reject } of the attempt in progress
    next: null, // calculateDelay's resolve, waiting for the engine
    ended: false,
    exhausted: null,
    held: undefined,
    ctx: null, // the attempt in progress's context (its bound: ctx.remainingMs)
    // The response of the attempt in progress, at its headers (its body is got's to read).
    response: null,
    // A retried response whose failure was handed to the engine at DRAIN_LIMIT bytes,
    // before got read it all: got's own failure for it is not the engine's to judge, and
    // got goes on when the engine's next attempt starts (`go`: it started first).
    preempted: false,
    go: false,
    // Ends the call when got ends the request without telling the hooks (a cancel).
    controller: new AbortController(),
  };
  state.call = rules.retrier.call((ctx) => new Promise((resolve, reject) => {
    if (state.held !== undefined) {
      RetryableStatusError.takeResponse(state.held);
      state.held = undefined;
    }
    state.ctx = ctx;
    if (ctx.attempt > 1) markResend(ctx.attempt);
    state.current = { resolve, reject };
    // A retry: got may go on (its calculateDelay waited for this).
    state.response = null;
    const next = state.next;
    state.next = null;
    if (next !== null) next(1);
    else if (state.preempted) state.go = true;
  }), { signal: state.controller.signal });
  state.call.then(
    () => end(state, null),
    (err) => end(state, err),
  );
  return state;
}

function end(state, err) {
  state.ended = true;
  if (err !== null && isExhausted(err)) state.exhausted = err;
  const next = state.next;
  state.next = null;
  next?.(0);
}

function verdict(state, status, failure) {
  return state.replayable ? classify(state.rules, state.method, status, failure, state.key) : status !== null ? 'response' : 'fail';
}

/** got's error in the core's words: 'connect' (never sent), 'network', or undefined. */
function failureOfGot(err) {
  // A TLS failure before the handshake completed never sent the request.
  const t = err?.timings;
  // Timed out before the connection was made (a full accept queue): nothing was sent.
  if (t !== undefined && t.connect === undefined && isClientTimeout(err)) return 'connect';
  return failureOf(err, t === undefined || t.secureConnect === undefined);
}

// The body each preempted failure stands for (see watchBody): dropped when the engine
// proposes a retry (the retrier's onRetry hook, ours alone: refuseHooks refuses a user's).
const heldBodies = new WeakMap();
const dropHeld = (info) => {
  heldBodies.get(info.error)?.destroy();
  return undefined;
};

/**
 * The failure a retried response stands for: its pushback (the core's reading: "don't
 * retry", or an exact wait, the helpers' delayMs hook) over its Retry-After hint.
 */
function retriedFailure(state, response, error) {
  const pushback = pushbackOf(pairsOf(response.headers));
  const header = response.headers?.['retry-after'];
  const hint = pushback ?? (header === undefined ? undefined : parseRetryAfter(String(header)));
  const failure = new RetryableStatusError(response.statusCode, state.method, state.url, hint, error);
  if (pushback !== undefined && pushback !== DONT_RETRY) failure.pushbackMs = pushback;
  return failure;
}

/**
 * got's promise API reads a body whole before it hands a response on (to afterResponse,
 * or to calculateDelay as an HTTPError): a retried response's body, watched as got reads
 * it (downloadProgress), is judged at DRAIN_LIMIT bytes (lib/http-body.js): the engine
 * hears of the failure then; if it retries, the response is destroyed before got reads
 * more (dropHeld); if retries ran out, got reads it whole and hands it back as without
 * retries.
 */
function watchBody(state, result) {
  if (typeof result?.on !== 'function') return;
  result.on('request', (clientRequest) => {
    clientRequest.once?.('response', (response) => {
      state.response = response;
    });
  });
  result.on('downloadProgress', (progress) => {
    const response = state.response;
    if (response === null || state.current === null || state.ended || progress.transferred < DRAIN_LIMIT) return;
    const status = response.statusCode;
    if (verdict(state, status, null) !== 'retry') return;
    const failure = retriedFailure(state, response);
    heldBodies.set(failure, response);
    state.held = failure;
    state.preempted = true;
    state.response = null;
    const { reject } = state.current;
    state.current = null;
    reject(failure);
  });
}

/**
 * The options object for got.extend: `got.extend(retryGot({ retrier }))`. See got.d.ts.
 */
function retryGot(options) {
  const h = httpHelper('retryGot', options, [], true, { onRetry: dropHeld, hooked: true });
  if (h.base.hedged) {
    // got's own retry loop sends each attempt after the last one ended: it cannot run two
    // side by side, so a hedging retrier would silently run one.
    throw new TypeError(`retryGot: the retrier's policy hedges, which got cannot do (its retry loop runs one attempt at a time); hedge with retryingFetch, retryrs/undici or retryrs/axios`);
  }

  const calculateDelay = ({ error, attemptCount }) => {
    const state = error?.options?.context?.[STATE];
    if (state !== undefined && state.preempted) {
      // The end of a retried response the engine already judged (see watchBody).
      state.preempted = false;
      if (state.ended) return 0;
      if (state.go) {
        state.go = false;
        return 1;
      }
      return new Promise((resolve) => {
        state.next = resolve;
      });
    }
    if (state === undefined || state.ended || state.current === null) return 0;
    const { reject } = state.current;
    state.current = null;
    const response = error.response;
    let failure;
    // A status (got's HTTPError, its body read whole); a failure while a response's body
    // was read (a timeout, a reset: got's error carries the response too) is a failure of
    // the attempt, judged as the network's (the body is read inside the attempt).
    if (error.name === 'HTTPError' && response !== undefined && response !== null && typeof response.statusCode === 'number') {
      const status = response.statusCode;
      if (verdict(state, status, null) === 'retry') {
        failure = state.held = retriedFailure(state, response, error);
      } else {
        failure = isFailedStatus(status) ? new FinalStatusError(status, state.method, state.url, undefined, error) : error;
      }
    } else {
      const kind = failureOfGot(error);
      if (kind === undefined) failure = error;
      else {
        const Failure = verdict(state, null, kind) === 'retry' ? RequestFailedError : FinalNetworkError;
        failure = new Failure(state.method, state.url, kind === 'connect', error);
        // got's own timeout (timeout.request is the engine's bound, see beforeRequest): a
        // quota prices the retry after it as a timeout's.
        if (isClientTimeout(error)) markTimedOut(failure);
      }
    }
    return new Promise((resolve) => {
      state.next = (delay) => {
        // Out of retries on the network: got's own error, carrying the retry information.
        if (delay === 0 && state.exhausted !== null && state.exhausted.cause?.cause === error) exhaustedAs(error, state.exhausted);
        resolve(delay);
      };
      reject(failure);
      void attemptCount;
    });
  };

  return {
    retry: {
      limit: NO_LIMIT,
      methods: [],
      statusCodes: [],
      errorCodes: [],
      enforceRetryRules: false,
      calculateDelay,
    },
    // Each promise request runs one retrier call, started here, ended by the hooks below
    // (or by a cancel). A stream request (got.stream) is not retried: got leaves its
    // retries to the caller.
    handlers: [
      (opts, next) => {
        if (opts.isStream) return next(opts);
        const state = startCall(h, opts);
        opts.context[STATE] = state;
        const result = next(opts);
        watchBody(state, result);
        // A cancel ends the request without a hook hearing of it: it ends the call too
        // (cancelled). The promise gets no handler of ours, so an unhandled rejection
        // is still reported as without retries.
        const cancel = result?.cancel;
        if (typeof cancel === 'function') {
          result.cancel = function cancelWithRetries(...args) {
            if (!state.ended) state.controller.abort(new DOMException('the got request was cancelled', 'AbortError'));
            return cancel.apply(this, args);
          };
        }
        return result;
      },
    ],
    hooks: {
      beforeRequest: [
        (opts) => {
          // The engine's bound for this attempt (the deadline or the attempt timeout)
          // bounds got's request, as got's own timeout.request does.
          const ctx = opts.context[STATE]?.ctx;
          const ms = ctx?.remainingMs;
          if (typeof ms === 'number') {
            const own = opts.timeout.request;
            opts.timeout = { ...opts.timeout, request: Math.max(1, Math.min(own ?? Infinity, Math.ceil(ms))) };
          }
          // The attempt's propagation headers (its time left now, its number). got runs
          // this hook again for each redirect it follows, with the headers sent before:
          // a hop outside the allowlist gets them removed.
          const state = opts.context[STATE];
          const extra = ctx === null || ctx === undefined ? null : outboundHeaders(h.out, opts.url, ctx);
          if (extra !== null) {
            const headers = { ...opts.headers };
            for (let i = 0; i < extra.length; i += 2) headers[extra[i].toLowerCase()] = extra[i + 1];
            opts.headers = headers;
            state.propagated = extra;
          } else if (state?.propagated !== undefined) {
            opts.headers = withoutHeaders(opts.headers, state.propagated);
          }
        },
      ],
      afterResponse: [
        (response) => {
          const state = response.request?.options?.context?.[STATE];
          if (state === undefined || state.ended || state.current === null) return response;
          const status = response.statusCode;
          if (verdict(state, status, null) === 'retry') return response; // calculateDelay has it
          const { resolve, reject } = state.current;
          state.current = null;
          if (isFailedStatus(status)) reject(new FinalStatusError(status, state.method, state.url, undefined, response));
          else resolve(response);
          return response;
        },
      ],
    },
  };
}

module.exports = { retryGot };
