'use strict';
// retryrs/undici: a dispatcher interceptor with retries, for `dispatcher.compose(...)`:
// undici's request/stream/fetch on that dispatcher, and Node's global fetch once the
// composed dispatcher is set with setGlobalDispatcher. One attempt is one dispatch
// downstream; a retried response is read (at most 64 KiB) and dropped, a final one is
// handed to the caller's handler as it streams in. What is retried is the core's HTTP
// rule (lib/http-common.js); this file maps undici's outcomes to "response", "connect"
// or "network".
const { typeName } = require('./options');
const { httpHelper, runHttp, idempotencyKeyOf, failureOf } = require('./http-common');

// How much of a retried response's body is read to keep its connection: past this the
// attempt is aborted (its connection closed) instead.
const DRAIN_LIMIT = 64 * 1024;

/** Whether a request body can be sent again: none, a string or bytes; not a stream or an iterable. */
function replayableBody(body) {
  return body === undefined || body === null || typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body);
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

      const send = (signal) => new Promise((resolve, reject) => {
        let mode = 'waiting'; // then 'held' (paused at the headers), 'forward' or 'drain'
        let drained = 0;
        // A retried response's body as read (to hand back if retries run out), its
        // trailers, and why it was cut short (null: read whole).
        const kept = [];
        let trailers;
        let cut = null;
        let finishRelease;
        let requestStarted = false;
        let controller = null;
        const onAbort = () => controller?.abort(signal.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = () => signal?.removeEventListener('abort', onAbort);
        const attemptHandler = {
          onRequestStart(c, context) {
            controller = c;
            requestStarted = true;
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
              forward() {
                responded = true;
                // Hedged attempts overlap: the caller's controller drives the one handed back.
                proxy.target = c;
                handler.onResponseStart?.(proxy, statusCode, headers, statusMessage);
                if (mode === 'held') {
                  // The attempt's signal stays on until the body ends: its bound (and the
                  // caller's abort) cut a body that stalls, as fetch's body read is cut.
                  mode = 'forward';
                  if (!proxy.paused) c.resume();
                  return;
                }
                done();
                // A retried response handed back when retries ran out: what was read of
                // its body, then its end, or an error saying it was cut.
                for (const chunk of kept) handler.onResponseData?.(proxy, chunk);
                if (cut === null) handler.onResponseEnd?.(proxy, trailers ?? {});
                else handler.onResponseError?.(proxy, cut);
              },
              release() {
                done();
                mode = 'drain';
                return new Promise((r) => {
                  finishRelease = r;
                  c.resume();
                });
              },
            });
          },
          onResponseData(c, chunk) {
            if (mode === 'forward') return handler.onResponseData?.(proxy, chunk);
            if (mode === 'drain') {
              if (drained + chunk.length > DRAIN_LIMIT) {
                // Too long to read for a connection: closed instead.
                kept.push(chunk.subarray(0, DRAIN_LIMIT - drained));
                drained = DRAIN_LIMIT;
                mode = 'dropped';
                cut = new Error(`retryInterceptor: the body of a retried response was cut after ${DRAIN_LIMIT} bytes (retried bodies are not read whole)`);
                c.abort(cut);
                finishRelease?.();
              } else {
                kept.push(chunk);
                drained += chunk.length;
              }
            }
            return true;
          },
          onResponseEnd(c, t) {
            if (mode === 'forward') {
              done();
              return handler.onResponseEnd?.(proxy, t);
            }
            trailers = t;
            finishRelease?.();
            return undefined;
          },
          onResponseError(c, err) {
            done();
            if (mode === 'forward') return handler.onResponseError?.(proxy, err);
            if (mode === 'waiting') {
              // A failure before any response: was the request started on a connection
              // (it may have been written) or not (a failed connect or TLS handshake)?
              if (err !== null && typeof err === 'object') failedBeforeStart.set(err, !requestStarted);
              reject(err);
              return undefined;
            }
            if (mode === 'drain') cut = err;
            finishRelease?.();
            return undefined;
          },
        };
        try {
          dispatch({ ...rest }, attemptHandler);
        } catch (err) {
          done();
          reject(err);
        }
      });

      const req = {
        method,
        url,
        key: idempotencyKeyOf(headerBag(rest.headers)),
        replayable: replayableBody(rest.body),
        signal: aborter.signal,
      };
      runHttp(h, rules, req, {
        send,
        failureOf: (err) => failureOf(err, failedBeforeStart.get(err) === true),
        unsent: (err) => failedBeforeStart.get(err) === true,
      }).then(
        (out) => out.forward(),
        (err) => {
          if (!responded) handler.onResponseError?.(proxy, err);
        },
      );
      return true;
    };
  };
}

module.exports = { retryInterceptor };
