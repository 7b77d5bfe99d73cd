#!/usr/bin/env node
// The HTTP helpers' happy path in instructions per call, this tree against a base tree (a
// worktree of another commit with its addon and node_modules), as instructions.mjs does for
// r.call: each row runs N1 and N2 successful GETs (a 2-byte 200, its body read) against a
// loopback server in the same process, under valgrind's cachegrind, and the difference of
// the two totals over N2 - N1 is one call's cost, start-up and warm-up cancelled out. The
// plain clients' rows (no retries) show what the request itself costs.
//
//   node bench/node/http-instructions.mjs --base /path/to/other/worktree [--only row,row] [--calls N1,N2]
//
// Needs valgrind; a few minutes per row.
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { commandLine, perCallInstructions } from './common.mjs';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..', '..');
const { args, opt } = commandLine();

// --calls N1,N2 to trade precision for time (the default takes minutes per row).
const [N1, N2] = (opt('--calls') ?? '300,1300').split(',').map(Number);

// Each row: (tree's require, peers) => one call's promise (its body read).
const ROWS = {
  retryingFetch: (req, { undici }) => {
    const { retryingFetch } = req('./lib/fetch.js');
    const dispatcher = new undici.Agent();
    const f = retryingFetch({ fetch: (url, init) => undici.fetch(url, { ...init, dispatcher }) });
    return (url) => f(url).then((res) => res.text());
  },
  'undici.request + interceptor': (req, { undici }) => {
    const { retryInterceptor } = req('./lib/undici.js');
    const dispatcher = new undici.Agent().compose(retryInterceptor());
    return (url) => undici.request(url, { dispatcher }).then((res) => res.body.text());
  },
  'undici.fetch + interceptor': (req, { undici }) => {
    const { retryInterceptor } = req('./lib/undici.js');
    const dispatcher = new undici.Agent().compose(retryInterceptor());
    return (url) => undici.fetch(url, { dispatcher }).then((res) => res.text());
  },
  axios: (req, { axios }) => {
    const { retryAxios } = req('./lib/axios.js');
    const ax = axios.create({ httpAgent: new http.Agent({ keepAlive: true }) });
    retryAxios(ax);
    return (url) => ax.get(url).then((res) => res.data);
  },
  got: (req, { got }) => {
    const { retryGot } = req('./lib/got.js');
    const g = got.extend(retryGot(), { agent: { http: new http.Agent({ keepAlive: true }) } });
    return (url) => g(url).text();
  },
  'plain undici.fetch': (req, { undici }) => {
    const dispatcher = new undici.Agent();
    return (url) => undici.fetch(url, { dispatcher }).then((res) => res.text());
  },
  'plain undici.request': (req, { undici }) => {
    const dispatcher = new undici.Agent();
    return (url) => undici.request(url, { dispatcher }).then((res) => res.body.text());
  },
};

async function child(tree, name, iters) {
  const req = createRequire(path.join(tree, 'bindings-node', 'package.json'));
  const peers = { undici: req('undici'), axios: req('axios'), got: (await import(req.resolve('got'))).default };
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (q, r) => {
    r.writeHead(200, { 'content-length': 2 });
    r.end('ok');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const run = ROWS[name](req, peers);
  if ((await run(url)) !== 'ok') throw new Error(`${name}: not ok`);
  for (let i = 0; i < iters; i++) await run(url);
  process.exit(0);
}

const perCall = (tree, name) => perCallInstructions(here, (iters) => [tree, name, String(iters)], N1, N2);

if (args[0] === '--child') {
  await child(args[1], args[2], Number(args[3]));
} else {
  const base = opt('--base');
  if (base === undefined) {
    console.error('usage: http-instructions.mjs --base DIR [--only row,row]');
    process.exit(2);
  }
  const only = opt('--only');
  const picked = (name) => only === undefined || only.split(',').some((part) => name.includes(part.trim()));
  const trees = { this: root, base: path.resolve(base) };
  console.log(`Node ${process.version}; this = ${trees.this}, base = ${trees.base}; instructions per call (cachegrind, ${N2} - ${N1} calls)\n`);
  console.log('| row | this | base | this/base |\n|---|---:|---:|---:|');
  for (const name of Object.keys(ROWS).filter(picked)) {
    const t = perCall(trees.this, name);
    const b = name.startsWith('plain') ? t : perCall(trees.base, name);
    console.log(`| ${name} | ${t} | ${name.startsWith('plain') ? '' : b} | ${name.startsWith('plain') ? '' : (t / b).toFixed(3)} |`);
  }
}
