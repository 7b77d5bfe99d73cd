#!/usr/bin/env node
// retryrs (Node) against a bare await, p-retry, cockatiel and async-retry, in one run:
//   (a) the happy path: fn succeeds at once;
//   (b) two failures then success, zero delay, against a hand-written retry loop that
//       yields one event-loop turn per retry (as retryrs does, so a zero-delay storm
//       cannot starve timers and aborts); the loop that never yields is kept as context;
// each also with a `retryrs:event` diagnostics_channel subscriber and with a Prometheus
// listener (retryrs/prometheus on a fresh prom-client registry): what observing costs.
// The plain retryrs rows have no subscriber: a call then reads channel.hasSubscribers
// and nothing else.
// Prints ns per call and ratios; `--out FILE` also writes the table as markdown.
// Not a test: figures depend on the machine; only the ratios measured together mean much.
import { readFileSync, writeFileSync } from 'node:fs';
import pRetry from 'p-retry';
import { retry, handleAll, ConstantBackoff } from 'cockatiel';
import asyncRetry from 'async-retry';
import dc from 'node:diagnostics_channel';
import { Registry } from 'prom-client';
import { Retrier } from '../../bindings-node/index.mjs';
import { promListener } from '../../bindings-node/lib/prometheus.js';
import { fmt, makeFlaky, measure as measureWith, yieldingHandLoop } from './common.mjs';

const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const outFile = outIndex >= 0 ? args[outIndex + 1] : undefined;
const quick = args.includes('--quick');
// --cpu: CPU time (user + system) per call instead of wall time: steadier on a machine
// other processes load (what a call costs, not how long it waited for a core).
const cpu = args.includes('--cpu');

const ROUNDS = quick ? 3 : 7;
const ROUND_MS = quick ? 60 : 250;
const measure = (fn) => measureWith(fn, { roundMs: ROUND_MS, rounds: ROUNDS, cpu });

// (a) A function that succeeds at once.
const ok = async () => 42;

const retrier = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
// Without a deadline (and a listener) the happy path needs no clock read at its start.
const noDeadline = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, deadlineMs: null });
const withProm = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, onEvent: promListener({ register: new Registry() }) });

// Rows marked SUBSCRIBED are measured with a subscriber on `retryrs:event` (one that
// does nothing), removed again afterwards, so every other row runs with none.
const SUBSCRIBED = true;
const idle = () => {};
const cockatielPolicy = retry(handleAll, { maxAttempts: 4, backoff: new ConstantBackoff(0) });
const pRetryOptions = { retries: 4, minTimeout: 0, maxTimeout: 0, randomize: false };
const asyncRetryOptions = { retries: 4, minTimeout: 0, maxTimeout: 0, factor: 1, randomize: false };

async function handLoop(fn) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }
}

const happy = [
  ['bare await fn()', () => ok()],
  ['retryrs', () => retrier.call(ok)],
  ['retryrs (deadlineMs: null)', () => noDeadline.call(ok)],
  ['retryrs, a diagnostics_channel subscriber', () => retrier.call(ok), SUBSCRIBED],
  ['retryrs + prometheus listener', () => withProm.call(ok)],
  ['cockatiel', () => cockatielPolicy.execute(ok)],
  ['p-retry', () => pRetry(ok)],
  ['p-retry (options)', () => pRetry(ok, pRetryOptions)],
  ['async-retry', () => asyncRetry(ok, asyncRetryOptions)],
];
const flaky = [
  ['hand-written loop, yielding (setImmediate per retry)', () => yieldingHandLoop(makeFlaky())],
  ['hand-written loop, never yielding (context)', () => handLoop(makeFlaky())],
  ['retryrs', () => retrier.call(makeFlaky())],
  ['retryrs, a diagnostics_channel subscriber', () => retrier.call(makeFlaky()), SUBSCRIBED],
  ['retryrs + prometheus listener', () => withProm.call(makeFlaky())],
  ['cockatiel', () => cockatielPolicy.execute(makeFlaky())],
  ['p-retry', () => pRetry(makeFlaky(), pRetryOptions)],
  ['async-retry', () => asyncRetry(makeFlaky(), asyncRetryOptions)],
];

// Sanity: every contender returns the value in both scenarios.
for (const [name, run] of [...happy, ...flaky]) {
  const v = await run();
  if (v !== 42) throw new Error(`${name} returned ${v}`);
}

const rows = [];
const results = {};
for (const [scenario, list] of [['a', happy], ['b', flaky]]) {
  const base = await measure(list[0][1]);
  results[scenario] = { [list[0][0]]: base };
  rows.push([scenario, list[0][0], base, 1]);
  for (const [name, run, subscribed] of list.slice(1)) {
    if (subscribed) dc.subscribe('retryrs:event', idle);
    const ns = await measure(run);
    if (subscribed) dc.unsubscribe('retryrs:event', idle);
    results[scenario][name] = ns;
    rows.push([scenario, name, ns, ns / base]);
  }
}

const label = { a: '(a) happy path', b: '(b) 2 failures, then success, zero delay' };
const base = { a: 'bare await', b: 'yielding hand loop' };
// The peers' versions as installed (bench/node/package-lock.json), for the claims made of them.
const manifest = (path) => JSON.parse(readFileSync(new URL(path, import.meta.url)));
const version = (name) => manifest(`./node_modules/${name}/package.json`).version;
const lines = [
  `# Node benchmark (${process.version}, ${new Date().toISOString().slice(0, 10)}${cpu ? ', CPU time per call' : ''})`,
  '',
  `retryrs ${manifest('../../bindings-node/package.json').version}; p-retry ${version('p-retry')}, cockatiel ${version('cockatiel')}, ` +
    `async-retry ${version('async-retry')}, prom-client ${version('prom-client')}.`,
  '',
  '| scenario | contender | per call | x baseline |',
  '|---|---|---:|---:|',
  ...rows.map(([s, name, ns, ratio]) => `| ${label[s]} | ${name} | ${fmt(ns)} | ${ratio.toFixed(2)}x ${base[s]} |`),
  '',
];
const a = results.a;
const b = results.b;
const peersA = ['cockatiel', 'p-retry', 'async-retry'];
const fastest = Math.min(...peersA.map((p) => a[p]));
const within = (ratio, bound) => `${ratio.toFixed(2)}x (target <= ${bound}x: ${ratio <= bound ? 'met' : 'missed'})`;
lines.push(
  `- (a) retryrs is ${within(a.retryrs / a['bare await fn()'], 1.5)} a bare await; ` +
    peersA.map((p) => `${(a[p] / a.retryrs).toFixed(2)}x faster than ${p}`).join(', ') +
    ` (target: faster than every peer: ${a.retryrs < fastest ? 'met' : 'missed'}).`,
  `- (b) retryrs is ${within(b.retryrs / b[flaky[0][0]], 1.5)} the yielding hand-written loop, ` +
    `${(b.retryrs / b[flaky[1][0]]).toFixed(2)}x the loop that never yields; ` +
    ['cockatiel', 'p-retry', 'async-retry'].map((p) => `${(b[p] / b.retryrs).toFixed(2)}x faster than ${p}`).join(', ') +
    '.',
  '- In (b) cockatiel and async-retry sleep on a timer even for a zero delay (setTimeout(0), about 1 ms in ' +
    'Node); p-retry 7 skips the timer for a zero delay, and so does retryrs: it arms none, as the contract says a zero delay sleeps not at all, but yields one ' +
    'setImmediate turn so timers, I/O and an abort are still served during a zero-delay storm.',
  '',
);
const md = lines.join('\n');
console.log(md);
if (outFile) writeFileSync(outFile, md);
