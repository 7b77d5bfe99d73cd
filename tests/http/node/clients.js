'use strict';
// Every Node HTTP helper of retryrs behind one shape, for the shared HTTP cases
// (tests/http/README.md): `helper.call({ url, method, body, headers }, api)` resolves with
// `{ status, read() }` (read: the body through read API `api`, as bytes) or rejects with
// the client's own error. A helper that reads the body inside the attempt (axios, got's
// promise API) is asked for the body in the form `api` names and read() hands back what it
// read; the others hand over at headers and read() reads.
const http = require('node:http');
const path = require('node:path');
const { createRequire } = require('node:module');

const PKG = path.resolve(__dirname, '../../../bindings-node');
// The peers (axios, got, undici) are the package's dev dependencies.
const peer = createRequire(path.join(PKG, 'package.json'));
const retryrs = peer('./index.js');
const { retryingFetch } = peer('./lib/fetch.js');
const { retryAxios } = peer('./lib/axios.js');
const { retryGot } = peer('./lib/got.js');
const { retryInterceptor } = peer('./lib/undici.js');

/** The read APIs of a client that hands over at headers: bytes, text, JSON, stream. */
const READ_APIS = ['bytes', 'text', 'json', 'stream'];

// JSON is read as a value: the runner compares its text again (the server's body is a
// JSON string literal, so the text round-trips exactly).
const jsonBytes = (v) => Buffer.from(JSON.stringify(v));

async function streamBytes(iterable) {
  const chunks = [];
  for await (const c of iterable) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** A fetch Response read through one of its read APIs. */
async function readResponse(res, api) {
  if (api === 'text') return Buffer.from(await res.text());
  if (api === 'json') return jsonBytes(await res.json());
  if (api === 'stream') return streamBytes(res.body);
  return Buffer.from(await res.arrayBuffer());
}

/** An undici.request body (a Readable with body mixins) read through one of its read APIs. */
async function readUndiciBody(body, api) {
  if (api === 'text') return Buffer.from(await body.text());
  if (api === 'json') return jsonBytes(await body.json());
  if (api === 'stream') return streamBytes(body);
  return Buffer.from(await body.arrayBuffer());
}

const fetchHelper = (fetchFn) => ({
  readsBody: false,
  async call({ url, method, body, headers }) {
    const res = await fetchFn(url, { method, body, headers });
    return { status: res.status, read: (api) => readResponse(res, api) };
  },
});

// axios's responseType for each read API ('stream' hands the stream over at headers).
const AXIOS_TYPES = { bytes: 'arraybuffer', text: 'text', json: 'json', stream: 'stream' };
// got's promise API: its responseType for each read API (its stream API is not retried).
const GOT_TYPES = { bytes: 'buffer', text: 'text', json: 'json', stream: 'buffer' };

/** What an axios or got response's body was read as, back to bytes. */
function readBack(data, api) {
  if (api === 'json') return jsonBytes(data);
  if (typeof data === 'string') return Buffer.from(data);
  return Buffer.from(data);
}

/**
 * The helpers, each made with `retrier` (names as the README's table shows them). The
 * interceptor serves undici.request, undici.fetch and the global fetch through one
 * composed dispatcher; `close()` ends it.
 */
async function makeHelpers(retrier) {
  const undici = peer('undici');
  const axios = peer('axios');
  const got = (await import(peer.resolve('got'))).default;
  const dispatcher = new undici.Agent().compose(retryInterceptor({ retrier }));
  // Pools of their own (not Node's global agent), so no connection outlives the helpers.
  const agent = new http.Agent({ keepAlive: true });
  const plain = new undici.Agent();
  const ax = axios.create({ validateStatus: () => true, httpAgent: agent });
  retryAxios(ax, { retrier });
  const gt = got.extend(retryGot({ retrier }), { throwHttpErrors: false, agent: { http: agent } });
  const helpers = {
    // The global fetch, on a pool of its own.
    retryingFetch: fetchHelper(retryingFetch({ retrier, fetch: (url, init) => fetch(url, { ...init, dispatcher: plain }) })),
    'global fetch': fetchHelper((url, init) => fetch(url, { ...init, dispatcher })),
    'undici.fetch': fetchHelper((url, init) => undici.fetch(url, { ...init, dispatcher })),
    'undici.request': {
      readsBody: false,
      async call({ url, method, body, headers }) {
        const res = await undici.request(url, { method, body, headers, dispatcher });
        return { status: res.statusCode, read: (api) => readUndiciBody(res.body, api) };
      },
    },
    axios: {
      readsBody: true,
      async call({ url, method, body, headers }, api) {
        const res = await ax.request({ url, method, data: body, headers, responseType: AXIOS_TYPES[api] });
        if (api === 'stream') return { status: res.status, read: () => streamBytes(res.data) };
        return { status: res.status, read: async () => readBack(res.data, api) };
      },
    },
    got: {
      readsBody: true,
      async call({ url, method, body, headers }, api) {
        const res = await gt(url, { method, body, headers, responseType: GOT_TYPES[api] });
        return { status: res.statusCode, read: async () => readBack(res.body, api) };
      },
    },
  };
  return {
    helpers,
    close() {
      agent.destroy();
      return Promise.all([dispatcher.destroy().catch(() => {}), plain.destroy().catch(() => {})]);
    },
  };
}

const HELPER_NAMES = ['retryingFetch', 'global fetch', 'undici.fetch', 'undici.request', 'axios', 'got'];

module.exports = { makeHelpers, HELPER_NAMES, READ_APIS, retryrs, PKG };
