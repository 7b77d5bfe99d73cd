'use strict';
// retryrs/axios: retries for an axios instance, installed with one call. The instance's
// adapter is wrapped: one attempt is one call of axios's own adapter (http, fetch or xhr),
// so interceptors, transforms and validateStatus run once per request, as without
// retries. What is retried is the core's HTTP rule (lib/http-common.js); this file maps
// axios's outcomes to "response", "connect" or "network".
const { requirePeer } = require('./metrics');
const { typeName } = require('./options');
const dc = require('node:diagnostics_channel');
const { AsyncLocalStorage } = require('node:async_hooks');
const { Readable } = require('node:stream');
const { httpHelper, idempotencyKeyOf, failureOf, codeOf, isClientTimeout } = require('./http-common');
const { runHttp } = require('./http-run');
const { pairsOf, mayReceive, withoutHeaders } = require('./http-propagation');
const { HeldBody, holdStream, readWhole, silenceMs } = require('./http-body');

const INSTALLED = Symbol('retryrs.axios');

/** Whether a request body can be sent again: strings, bytes, forms, URLSearchParams; not streams. */
function replayableData(data) {
  if (data === undefined || data === null || typeof data === 'string') return true;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return true;
  if (typeof data.pipe === 'function' || typeof data.getReader === 'function' || typeof data[Symbol.asyncIterator] === 'function') return false;
  return true; // a FormData, URLSearchParams or Blob: axios re-reads it each time
}

/** axios's error in the core's words: 'connect' (never sent), 'network', or undefined. */
function failureOfAxios(err) {
  // A response arrived: handled as a status, not here.
  const code = codeOf(err);
  if (code === undefined) return undefined;
  // A TLS failure before the request was written (a handshake: the socket never became
  // secure) never sent it; a TLS failure on a secure socket may have.
  const socket = err?.request?.socket;
  const handshake = socket == null || socket.encrypted !== true || socket.authorized !== true;
  return failureOf(err, handshake);
}

/**
 * Whether axios's error is its own timeout (`timeout` config): ECONNABORTED "timeout of
 * N ms exceeded", or ETIMEDOUT with transitional.clarifyTimeoutError.
 */
function timedOutAxios(err) {
  if (isClientTimeout(err)) return true;
  return codeOf(err) === 'ECONNABORTED' && typeof err?.message === 'string' && /timeout/i.test(err.message);
}

// The Node request each attempt of axios's http adapter creates, from Node's
// diagnostics channel (in the attempt's async context): whether its connection was made.
let creating = null;

function watched(progress, n, send) {
  if (creating === null) {
    creating = new AsyncLocalStorage();
    dc.subscribe('http.client.request.start', ({ request }) => {
      const state = creating.getStore();
      if (state === undefined) return;
      // A socket reused from the pool is connected; a new one once it has connected
      // (TLS: its handshake done). Nothing is written before.
      const watch = (socket) => {
        if (!socket.connecting) state.connected = true;
        else socket.once(socket.encrypted ? 'secureConnect' : 'connect', () => { state.connected = true; });
      };
      // The agent may have given it a socket already (Node publishes after that).
      if (request.socket) watch(request.socket);
      else request.once('socket', watch);
    });
  }
  const state = { connected: false };
  progress.set(n, state);
  return creating.run(state, send);
}

/** Whether an attempt's request never got a connected socket (nothing was written). */
function neverConnected(state) {
  return state !== undefined && !state.connected;
}

/**
 * Installs retries on an axios instance (axios.create(), or axios itself) and returns a
 * function that removes them. See axios.d.ts.
 */
function retryAxios(instance, options) {
  if (instance === null || (typeof instance !== 'object' && typeof instance !== 'function') || typeof instance.defaults !== 'object' || typeof instance.getUri !== 'function') {
    throw new TypeError(`retryAxios(instance, options): instance must be an axios instance (axios.create()), got ${typeName(instance)}`);
  }
  if (instance.defaults.adapter?.[INSTALLED] === true) {
    throw new TypeError('retryAxios: retries are already installed on this instance (call the function it returned to remove them first)');
  }
  const h = httpHelper('retryAxios', options);
  const axios = requirePeer('axios', 'retryrs/axios');
  const original = instance.defaults.adapter;
  const inner = axios.getAdapter(original);
  const streams = inner === axios.getAdapter('http');
  const silence = silenceMs(h.o);

  const adapter = async function retryrsAxiosAdapter(config) {
    const rules = h.rulesFor(config.retry);
    const method = String(config.method ?? 'get').toUpperCase();
    const raw = instance.getUri(config);
    const url = h.redact(raw);
    const req = {
      method,
      url,
      target: raw,
      key: idempotencyKeyOf(config.headers),
      replayable: replayableData(config.data),
      signal: config.signal ?? undefined,
    };
    // Each attempt's request as Node's http client reports it (see watched).
    const progress = new Map();
    let out;
    try {
      out = await runHttp(h, rules, req, {
        // axios's http adapter is asked for a stream, judged at its headers (the rule
        // of lib/http-body.js); another adapter buffers the body itself.
        send: (signal, n, extra) => (streams
          ? watched(progress, n, () => inner({ ...attemptConfig(axios, config, signal, extra, h.out), responseType: 'stream', validateStatus: null }))
            .then((response) => streamOutcome(axios, config, response, silence))
          : inner(attemptConfig(axios, config, signal, extra, h.out)).then(
            (response) => bufferedOutcome(response, undefined),
            (err) => {
              if (axios.isAxiosError(err) && err.response !== undefined && err.response !== null) return bufferedOutcome(err.response, err);
              throw err;
            },
          )),
        failureOf: failureOfAxios,
        timedOut: timedOutAxios,
        // Cut at its bound before its connection was made (a full accept queue): never sent.
        unsent: (err, n) => streams && neverConnected(progress.get(n)),
      });
    } catch (err) {
      // The caller's abort during a wait: axios's own CanceledError, as without retries.
      if (req.signal?.aborted && !axios.isAxiosError(err) && !axios.isCancel(err)) {
        throw new axios.CanceledError(undefined, undefined, config);
      }
      throw err;
    }
    if (out.error !== undefined) throw out.error;
    return out.response;
  };
  Object.defineProperty(adapter, INSTALLED, { value: true });
  instance.defaults.adapter = adapter;
  return function uninstall() {
    if (instance.defaults.adapter === adapter) instance.defaults.adapter = original;
  };
}

/** One attempt's outcome from an adapter that buffered the body itself (fetch, xhr). */
function bufferedOutcome(response, error) {
  const data = response.data;
  const stream = data !== null && typeof data === 'object' && typeof data.destroy === 'function' && typeof data.pipe === 'function';
  return {
    status: response.status,
    retryAfter: retryAfterOf(response),
    headerPairs: () => pairsOf(response.headers),
    hold() {},
    // A stream body (responseType 'stream') is destroyed, freeing its socket; a
    // buffered one was read whole already.
    cancel() {
      if (stream) data.destroy();
    },
    handOver: () => ({ response, error }),
  };
}

/**
 * The attempt's config: `extra` (the propagation headers, or null) set over its headers;
 * with an allowlist, a redirect that axios follows (follow-redirects) to a host outside
 * it loses them, before the caller's own beforeRedirect runs.
 */
function attemptConfig(axios, config, signal, extra, out) {
  const attempt = { ...config, headers: headersWith(axios, config.headers, extra), signal };
  if (extra !== null && out.allow !== null) {
    const own = config.beforeRedirect;
    attempt.beforeRedirect = (options, ...rest) => {
      if (!mayReceive(out, options.href)) options.headers = withoutHeaders(options.headers, extra);
      if (typeof own === 'function') own(options, ...rest);
    };
  }
  return attempt;
}

/** The request's headers with the attempt's propagation headers over them (a copy), or as they were. */
function headersWith(axios, headers, extra) {
  if (extra === null) return headers;
  const copy = new axios.AxiosHeaders(headers);
  for (let i = 0; i < extra.length; i += 2) copy.set(extra[i], extra[i + 1]);
  return copy;
}

function retryAfterOf(response) {
  const header = response.headers?.['retry-after'];
  return header === undefined || header === null ? null : String(header);
}

/**
 * One attempt's outcome from axios's http adapter, asked for a stream (lib/http-body.js
 * decides what becomes of it): a final response is read inside the attempt (read()) and
 * handed over as axios would have built it (responseType, responseEncoding, then
 * validateStatus); a retried one is held to DRAIN_LIMIT bytes, then cancelled or, when
 * retries ran out, read whole. With responseType 'stream' the stream is handed over.
 */
function streamOutcome(axios, config, response, silence) {
  const stream = response.data;
  let held = null;
  let body = null;
  const wantsStream = config.responseType === 'stream';
  const build = (bytes) => {
    let data = bytes;
    if (config.responseType !== 'arraybuffer') {
      data = bytes.toString(config.responseEncoding);
      if ((!config.responseEncoding || config.responseEncoding === 'utf8') && data.charCodeAt(0) === 0xfeff) data = data.slice(1);
    }
    return settled(axios, config, { ...response, config, data });
  };
  return {
    status: response.status,
    retryAfter: retryAfterOf(response),
    headerPairs: () => pairsOf(response.headers),
    read: wantsStream ? undefined : async () => {
      body = await readWhole(stream, null, null, 'retryAxios');
    },
    hold() {
      held = new HeldBody();
      return holdStream(stream, held);
    },
    cancel() {
      if (held === null || held.open) stream.destroy();
    },
    async handOver() {
      if (wantsStream) {
        if (held === null) return settled(axios, config, { ...response, config });
        const prefix = held.take();
        const rest = held.ended || held.error !== null ? null : stream;
        const failed = held.error;
        async function* whole() {
          yield* prefix;
          if (failed !== null) throw failed;
          if (rest !== null) { rest.resume(); yield* rest; }
        }
        return settled(axios, config, { ...response, config, data: Readable.from(whole(), { objectMode: false }) });
      }
      if (body === null) {
        try {
          body = await readWhole(stream, held, silence, 'retryAxios');
        } catch (err) {
          return { response: undefined, error: axios.AxiosError.from(err, null, config, response.request, response) };
        }
      }
      return build(body);
    },
  };
}

/** axios's settle: the response, or axios's error for a status validateStatus refuses. */
function settled(axios, config, response) {
  const valid = config.validateStatus;
  if (!response.status || !valid || valid(response.status)) return { response, error: undefined };
  const code = [axios.AxiosError.ERR_BAD_REQUEST, axios.AxiosError.ERR_BAD_RESPONSE][Math.floor(response.status / 100) - 4];
  return { response, error: new axios.AxiosError(`Request failed with status code ${response.status}`, code, config, response.request, response) };
}
module.exports = { retryAxios };
