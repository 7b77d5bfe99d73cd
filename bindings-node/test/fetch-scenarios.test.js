'use strict';
// retryrs/fetch on the issue 23 scenarios (with undici's fetch, so the TLS scenario can
// trust its self-signed certificate through a dispatcher).
const undici = require('undici');
const { retryingFetch } = require('retryrs/fetch');
const { scenarios } = require('./http-scenarios');

const agents = new Map();

function make(retrier, options = {}) {
  const f = retryingFetch({ retrier, fetch: undici.fetch, ...options });
  return async (url, { method = 'GET', body, headers, retry, ca, timeoutMs } = {}) => {
    let dispatcher;
    if (ca) {
      dispatcher = agents.get(ca) ?? new undici.Agent({ connect: { ca } });
      agents.set(ca, dispatcher);
    }
    // The client's own timeout: undici's headersTimeout.
    if (timeoutMs !== undefined) dispatcher = new undici.Agent({ headersTimeout: timeoutMs });
    const res = await f(url, { method, body, headers, retry, ...(dispatcher ? { dispatcher } : {}) });
    await res.text();
    return { status: res.status };
  };
}

// fetch's own error is its TypeError ("fetch failed").
scenarios({ name: 'fetch', make, isClientError: (err) => err instanceof TypeError && err.message === 'fetch failed' });
