'use strict';
// Every Node HTTP helper of retryrs behind one shape, for the shared HTTP cases:
// `client.request({ url, method, body, headers })` resolves with `{ status, headers,
// read(kind) }` (kind: 'text', 'json', 'bytes', 'stream'), or rejects with the client's
// own error. Clients that read the body inside the attempt (axios, got) have read it
// already; read() hands back what they read.
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

async function readWeb(body, kind) {
  if (kind === 'stream') {
    const chunks = [];
    for await (const c of body) chunks.push(Buffer.from(c));
    return Buffer.concat(chunks);
  }
  return body;
}

/** A fetch Response read through one of its read APIs, as bytes. */
async function readResponse(res, kind) {
  if (kind === 'text') return Buffer.from(await res.text());
  if (kind === 'json') return Buffer.from(JSON.stringify(await res.json()));
  if (kind === 'bytes') return Buffer.from(await res.arrayBuffer());
  return readWeb(res.body, 'stream');
}

/** An undici.request body (a Readable with text/json/arrayBuffer mixins), as bytes. */
async function readUndiciBody(body, kind) {
  if (kind === 'text') return Buffer.from(await body.text());
  if (kind === 'json') return Buffer.from(JSON.stringify(await body.json()));
  if (kind === 'bytes') return Buffer.from(await body.arrayBuffer());
  const chunks = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

const fetchShape = (fetchFn) => ({
  handsOver: true,
  async request({ url, method = 'GET', body, headers, signal }) {
    const res = await fetchFn(url, { method, body, headers, signal });
    return { status: res.status, headers: res.headers, read: (kind) => readResponse(res, kind), cancel: () => res.body?.cancel().catch(() => {}) };
  },
});

/**
 * The helpers, each made with `retrier`. `undici` (the package) serves the interceptor's
 * three forms; the global fetch goes through the same composed dispatcher.
 */
async function makeClients(retrier) {
  const undici = peer('undici');
  const axios = peer('axios');
  const got = (await import(peer.resolve('got'))).default;
  const dispatcher = new undici.Agent().compose(retryInterceptor({ retrier }));
  const ax = axios.create({ validateStatus: () => true, responseType: 'arraybuffer' });
  retryAxios(ax, { retrier });
  const gt = got.extend(retryGot({ retrier }), { throwHttpErrors: false, responseType: 'buffer' });
  const fixed = (buf) => (kind) => Promise.resolve(kind === 'json' ? Buffer.from(JSON.stringify(JSON.parse(buf.toString()))) : Buffer.from(buf));
  const clients = {
    retryingFetch: fetchShape(retryingFetch({ retrier })),
    'global fetch': fetchShape((url, init) => fetch(url, { ...init, dispatcher })),
    'undici.fetch': fetchShape((url, init) => undici.fetch(url, { ...init, dispatcher })),
    'undici.request': {
      handsOver: true,
      async request({ url, method = 'GET', body, headers, signal }) {
        const res = await undici.request(url, { method, body, headers, signal, dispatcher });
        return { status: res.statusCode, headers: res.headers, read: (kind) => readUndiciBody(res.body, kind), cancel: () => res.body.destroy() };
      },
    },
    axios: {
      handsOver: false,
      async request({ url, method = 'GET', body, headers, signal }) {
        const res = await ax.request({ url, method, data: body, headers, signal });
        return { status: res.status, headers: res.headers, read: fixed(Buffer.from(res.data)), cancel() {} };
      },
    },
    got: {
      handsOver: false,
      async request({ url, method = 'GET', body, headers, signal }) {
        const res = await gt(url, { method, body, headers, signal });
        return { status: res.statusCode, headers: res.headers, read: fixed(res.body), cancel() {} };
      },
    },
  };
  return { clients, close: () => dispatcher.close().catch(() => {}) };
}

module.exports = { makeClients, retryrs, PKG };
