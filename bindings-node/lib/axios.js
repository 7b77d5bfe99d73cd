'use strict';
// retryrs/axios: retries for an axios instance, installed with one call. The instance's
// adapter is wrapped: one attempt is one call of axios's own adapter (http, fetch or xhr),
// so interceptors, transforms and validateStatus run once per request, as without
// retries. What is retried is the core's HTTP rule (lib/http-common.js); this file maps
// axios's outcomes to "response", "connect" or "network".
const { requirePeer } = require('./metrics');
const { typeName } = require('./options');
const { httpHelper, runHttp, idempotencyKeyOf, failureOf, codeOf, isClientTimeout } = require('./http-common');

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

  const adapter = async function retryrsAxiosAdapter(config) {
    const rules = h.rulesFor(config.retry);
    const method = String(config.method ?? 'get').toUpperCase();
    const url = h.redact(instance.getUri(config));
    const req = {
      method,
      url,
      key: idempotencyKeyOf(config.headers),
      replayable: replayableData(config.data),
      signal: config.signal ?? undefined,
    };
    let out;
    try {
      out = await runHttp(h, rules, req, {
        send: (signal) => inner({ ...config, signal }).then(
          (response) => outcome(response, undefined),
          (err) => {
            if (axios.isAxiosError(err) && err.response !== undefined && err.response !== null) return outcome(err.response, err);
            throw err;
          },
        ),
        failureOf: failureOfAxios,
        timedOut: timedOutAxios,
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

/** One attempt's outcome: the response, and axios's error for it when validateStatus refused it. */
function outcome(response, error) {
  const header = response.headers?.['retry-after'];
  return {
    status: response.status,
    retryAfter: header === undefined || header === null ? null : String(header),
    response,
    error,
    // A retried response: a stream body (responseType 'stream') is destroyed, freeing
    // its socket; a buffered one was read whole already.
    async release() {
      const data = response.data;
      if (data !== null && typeof data === 'object' && typeof data.destroy === 'function' && typeof data.pipe === 'function') data.destroy();
    },
  };
}

module.exports = { retryAxios };
