'use strict';
// retryrs/undici: a dispatcher interceptor with retries, for `dispatcher.compose(...)`:
// undici's request/stream/fetch on that dispatcher, and Node's global fetch once the
// composed dispatcher is set with setGlobalDispatcher. One attempt is one dispatch
// downstream; what becomes of a response's body is lib/http-body.js's rule (a retried one
// held to 64 KiB, then dropped or handed back whole; a final one handed to the caller's
// handler as it streams in). What is retried is the core's HTTP
// rule (lib/http-common.js); this file maps undici's outcomes to "response", "connect"
// or "network".
const { typeName } = require('./options');
const { httpHelper, idempotencyKeyOf, failureOf } = require('./http-common');
const { runHttp } = require('./http-run');
const { withHeaders, pairsOf } = require('./http-propagation');
const { HeldBody, silenceMs, silenceWatch, silenceError } = require('./http-body');

/**
 * undici's own error for a body that went silent (BodyTimeoutError, UND_ERR_BODY_TIMEOUT),
 * from the undici package when it is installed; else an error of the same name and code.
 */
function bodyTimeoutError(ms) {
  const message = silenceError('retryInterceptor', ms).message;
  try {
    return new (require('undici').errors.BodyTimeoutError)(message);
  } catch {
    return Object.assign(new Error(message), { name: 'BodyTimeoutError', code: 'UND_ERR_BODY_TIMEOUT' });
  }
}


/** Whether a request body can be sent again: none, a string or bytes; not a stream or an iterable. */
function replayableBody(body) {
  return body === undefined || body === null || typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body);
}

// How much of a one-shot request body (a stream, an iterable: what fetch always hands a
// dispatcher) is kept as it is sent, so that it can be sent again.
const REPLAY_LIMIT = 1024 * 1024;

/**
 * A one-shot request body that can be sent again when it was never read (a connection
 * that failed: nothing sent) or when it was sent whole within REPLAY_LIMIT bytes (kept as
 * it went). `next()` is the body for the next attempt; `replayable()` whether there can be one.
 */
function recordedBody(body) {
  let state = 'fresh'; // then 'reading', 'kept' (sent whole and kept) or 'spent'
  let chunks = [];
  let size = 0;
  return {
    replayable: () => state === 'fresh' || state === 'kept',
    next() {
      if (state === 'kept') return Buffer.concat(chunks, size);
      // Pulled by hand, not with for-await: an attempt abandoned mid-way closes this
      // wrapper, never the caller's body under it.
      return (async function* recording() {
        if (state !== 'fresh') throw new Error('retryInterceptor: a one-shot request body cannot be sent again');
        state = 'reading';
        const iterator = body[Symbol.asyncIterator]();
        for (;;) {
          const { done, value } = await iterator.next();
          if (done) {
            state = chunks === null ? 'spent' : 'kept';
            return;
          }
          if (chunks !== null) {
            const bytes = typeof value === 'string' ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
            size += bytes.length;
            if (size > REPLAY_LIMIT) chunks = null;
            else chunks.push(Buffer.from(bytes));
          }
          yield value;
        }
      })();
    },
  };
}

/** The header bag as idempotencyKeyOf reads it: undici takes objects, flat arrays and iterables of pairs. */
function headerBag(headers) {
  if (headers === undefined || headers === null || Array.isArray(headers) || typeof headers.get === 'function') return headers;
  if (typeof headers[Symbol.iterator] === 'function') return Array.from(headers);
  return headers;
}

/**
 * The controller the caller's handler sees for the whole request: it forwards to the
 * attempt in progress, and an abort from the caller also ends the retries.
 */
class Controller {
  #target = null;
  #paused = false;
  #aborted = null;

  constructor(onAbort) {
    this.onAbort = onAbort;
  }

  set target(t) {
    this.#target = t;
    if (this.#paused) t?.pause();
  }

  pause() {
    this.#paused = true;
    this.#target?.pause();
  }

  resume() {
    this.#paused = false;
    this.#target?.resume();
  }

  abort(reason) {
    if (this.#aborted !== null) return;
    this.#aborted = { reason };
    this.#target?.abort(reason);
    this.onAbort(reason);
  }

  get paused() {
    return this.#paused;
  }

  get aborted() {
    return this.#aborted !== null || (this.#target?.aborted ?? false);
  }

  get reason() {
    return this.#aborted !== null ? this.#aborted.reason : (this.#target?.reason ?? null);
  }

  get rawHeaders() {
    return this.#target?.rawHeaders ?? null;
  }

  get rawTrailers() {
    return this.#target?.rawTrailers ?? null;
  }
}

/**
 * A dispatcher interceptor with retries: `new Agent().compose(retryInterceptor(options))`.
 * A request's `retry` dispatch option (RequestRetryOptions) overrides the rules for it.
 * See undici.d.ts.
 */
function retryInterceptor(options) {
  const h = httpHelper('retryInterceptor', options);
  const silence = silenceMs(h.o);
  return (dispatch) => {
    if (typeof dispatch !== 'function') throw new TypeError(`retryInterceptor: dispatch must be a function, got ${typeName(dispatch)}`);
    return function retryrsDispatch(opts, handler) {
      const { retry, ...rest } = opts;
      // An upgrade (CONNECT, WebSocket) is a connection, not a request to repeat.
      if (rest.upgrade || String(rest.method).toUpperCase() === 'CONNECT') return dispatch(rest, handler);
      const rules = h.rulesFor(retry);
      const method = String(rest.method ?? 'GET').toUpperCase();
      const url = h.redact(`${rest.origin ?? ''}${rest.path ?? ''}`);
      // The caller's abort, through the controller it was given.
      const aborter = new AbortController();
      const proxy = new Controller((reason) => aborter.abort(reason ?? new DOMException('This operation was aborted', 'AbortError')));
      let started = false;
      let responded = false;
      // Each failure before a response: whether its request never started on a connection.
      const failedBeforeStart = new WeakMap();

      // A one-shot body (a stream, an iterable) is kept as it is sent (recordedBody).
      const recorded = !replayableBody(rest.body) && typeof rest.body?.[Symbol.asyncIterator] === 'function' ? recordedBody(rest.body) : null;
      // Whether each attempt's request started on a connection (its headers written).
      const startedAt = new Map();
      const send = (signal, n, extra) => new Promise((resolve, reject) => {
        // 'waiting' (no response yet), 'held' (paused at the headers, being judged),
        // 'hold' (a retried response's prefix being read: lib/http-body.js), 'forward'
        // (handed to the caller's handler) or 'dropped'.
        let mode = 'waiting';
        let held = null;
        let trailers;
        let requestStarted = false;
        let controller = null;
        // The attempt's bound and the caller's abort reach the request until its headers;
        // after them a response is held (its fate is runHttp's) or the caller's.
        const onAbort = () => {
          if (mode === 'waiting' || mode === 'forward') controller?.abort(signal.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        let watch = null;
        const done = () => {
          watch?.stop();
          signal?.removeEventListener('abort', onAbort);
        };
        const attemptHandler = {
          onRequestStart(c, context) {
            controller = c;
            requestStarted = true;
            startedAt.set(n, true);
            proxy.target = c;
            if (signal?.aborted) c.abort(signal.reason);
            if (!started) {
              started = true;
              handler.onRequestStart?.(proxy, context);
            }
          },
          onRequestUpgrade(c, statusCode, headers, socket) {
            handler.onRequestUpgrade?.(proxy, statusCode, headers, socket);
          },
          onResponseStart(c, statusCode, headers, statusMessage) {
            // An attempt abandoned at its bound: its late response frees its connection.
            if (signal?.aborted) {
              c.abort(signal.reason);
              return;
            }
            // Held until the rules have judged it (runHttp decides asynchronously).
            c.pause();
            mode = 'held';
            const header = headers?.['retry-after'];
            resolve({
              status: statusCode,
              retryAfter: header === undefined ? null : Array.isArray(header) ? header[0] : String(header),
              headerPairs: () => pairsOf(headers),
              hold() {
                mode = 'hold';
                held = new HeldBody();
                c.resume();
                return held.done;
              },
              cancel() {
                if (mode === 'forward' || mode === 'dropped') return;
                const open = held === null || held.open;
                mode = 'dropped';
                done();
                if (open) c.abort(new DOMException('retryInterceptor: a retried response was dropped', 'AbortError'));
              },
              handOver() {
                responded = true;
                // Hedged attempts overlap: the caller's controller drives the one handed back.
                proxy.target = c;
                handler.onResponseStart?.(proxy, statusCode, headers, statusMessage);
                if (held !== null) {
                  // A retried response handed back when retries ran out: what was read
                  // of its body, then the rest of it.
                  for (const chunk of held.take()) handler.onResponseData?.(proxy, chunk);
                  if (held.ended) {
                    done();
                    handler.onResponseEnd?.(proxy, trailers ?? {});
                    return;
                  }
                  if (held.error !== null) {
                    done();
                    handler.onResponseError?.(proxy, held.error);
                    return;
                  }
                }
                mode = 'forward';
                // A body handed over may be silent this long (lib/http-body.js), then it
                // fails with undici's own body timeout error. (undici's bodyTimeout would
                // do, but its timers tick every half second.)
                watch = silenceWatch(silence, (ms) => {
                  watch = null;
                  c.abort(bodyTimeoutError(ms));
                }, () => !proxy.paused);
                if (!proxy.paused) c.resume();
              },
            });
          },
          onResponseData(c, chunk) {
            if (mode === 'forward') {
              watch?.touch();
              return handler.onResponseData?.(proxy, chunk);
            }
            if (mode === 'hold' && !held.push(chunk)) c.pause();
            return true;
          },
          onResponseEnd(c, t) {
            if (mode === 'forward') {
              done();
              return handler.onResponseEnd?.(proxy, t);
            }
            trailers = t;
            held?.end();
            return undefined;
          },
          onResponseError(c, err) {
            if (mode === 'forward') {
              done();
              return handler.onResponseError?.(proxy, err);
            }
            if (mode === 'waiting') {
              done();
              // A failure before any response: was the request started on a connection
              // (it may have been written) or not (a failed connect or TLS handshake)?
              if (err !== null && typeof err === 'object') failedBeforeStart.set(err, !requestStarted);
              reject(err);
              return undefined;
            }
            held?.fail(err);
            return undefined;
          },
        };
        startedAt.set(n, false);
        try {
          const attempt = recorded === null ? { ...rest } : { ...rest, body: recorded.next() };
          // The attempt's propagation headers, over the request's own (a copy of them).
          if (extra !== null) attempt.headers = withHeaders(headerBag(rest.headers), extra);
          dispatch(attempt, attemptHandler);
        } catch (err) {
          done();
          reject(err);
        }
      });

      const req = {
        method,
        url,
        target: rest.origin,
        key: idempotencyKeyOf(headerBag(rest.headers)),
        replayable: recorded === null ? replayableBody(rest.body) : recorded.replayable,
        signal: aborter.signal,
      };
      runHttp(h, rules, req, {
        send,
        failureOf: (err) => failureOf(err, failedBeforeStart.get(err) === true),
        // Failed, or cut at its bound, before it started on a connection: never sent.
        unsent: (err, n) => failedBeforeStart.get(err) === true || startedAt.get(n) === false,
      }).then(
        () => {},
        (err) => {
          if (!responded) handler.onResponseError?.(proxy, err);
        },
      );
      return true;
    };
  };
}

module.exports = { retryInterceptor };
