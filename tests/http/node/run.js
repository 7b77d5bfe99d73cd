#!/usr/bin/env node
'use strict';
// Node's runner of the hostile-server HTTP conformance suite: every case of
// tests/http/cases.json against every Node HTTP helper (tests/http/node/clients.js),
// through the shared scripted server. Prints a helpers x cases table; exits 1 if any case
// fails.
//
//   node tests/http/node/run.js [--helper NAME]... [--case NAME]... [--markdown FILE]
//
// A case marked `isolate` (the memory bounds) runs in a fresh process per helper
// (node --expose-gc), where its heap or peak RSS is measured.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { makeHelpers, HELPER_NAMES, READ_APIS, retryrs } = require('./clients');
const { expectation, judge } = require('./judge');

const ROOT = path.resolve(__dirname, '../../..');
const CASES = path.join(ROOT, 'tests/http/cases.json');
const SERVER = path.join(ROOT, 'scripts/http_conformance_server.py');
const WARM_UP = { listener: 'http', steps: [{ status: 200, body: { bytes: 2 } }] };
// A call (with its read) still pending after this is reported as a hang, not waited for.
const HANG_MS = 20000;

/** The shared scripted server as a subprocess: it exits when its stdin closes. */
async function startServer() {
  const python = process.env.PYTHON ?? 'python3';
  const proc = spawn(python, [SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`${SERVER} exited (${code}) before printing its listeners`)));
  });
  const info = JSON.parse(first);
  const control = async (method, where, body) => {
    const res = await fetch(info.control + where, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`the scripted server refused ${where}: ${text}`);
    return JSON.parse(text);
  };
  return {
    listeners: info.listeners,
    load: (spec) => control('POST', '/load', spec),
    seen: () => control('GET', '/seen'),
    url: (c) => info.listeners[c.server.listener] + c.request.path,
    close() {
      proc.stdin.end();
      lines.close();
    },
  };
}

/** The case's policy as Retrier options (a missing field: the default; null: off). */
function retrierFor(policy) {
  const names = {
    max_attempts: 'maxAttempts', deadline_ms: 'deadlineMs', attempt_timeout_ms: 'attemptTimeoutMs',
    initial_delay_ms: 'initialDelayMs', max_retry_after_ms: 'maxRetryAfterMs',
  };
  const options = { jitter: 'none' };
  for (const [key, value] of Object.entries(policy)) {
    if (!(key in names)) throw new Error(`cases.json: unknown policy field ${key}`);
    options[names[key]] = value;
  }
  return new retryrs.Retrier(options);
}

function requestOf(c, url) {
  const r = c.request;
  return {
    url,
    method: r.method ?? 'GET',
    headers: r.headers,
    body: r.body_bytes === undefined ? undefined : 'x'.repeat(r.body_bytes),
  };
}

const TIMEOUT_CODES = new Set(['UND_ERR_BODY_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ERR_TLS_HANDSHAKE_TIMEOUT']);
const CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ECONNREFUSED', 'ERR_STREAM_PREMATURE_CLOSE']);

/** The kind of a client's error, as the cases name them: timeout, connection, other. */
function kindOf(err) {
  for (let e = err, depth = 0; e !== null && typeof e === 'object' && depth < 4; e = e.cause, depth++) {
    if (e.name === 'TimeoutError' || TIMEOUT_CODES.has(e.code) || (e.code === 'ECONNABORTED' && /timeout/i.test(e.message))) return 'timeout';
    if (CONNECTION_CODES.has(e.code)) return 'connection';
  }
  return 'other';
}

/** The error marked exhausted: the client's own, or the one under fetch's "fetch failed". */
function exhaustedIn(err) {
  for (let e = err, depth = 0; e !== null && typeof e === 'object' && depth < 3; e = e.cause, depth++) {
    if (e instanceof retryrs.RetryExhaustedError) return e;
  }
  return null;
}

const describe = (err) => `${err?.name ?? typeof err}${err?.code ? ` ${err.code}` : ''}: ${String(err?.message ?? err).slice(0, 160)}`;

/** One call, read through `api`, as the cases judge it; never waits past HANG_MS. */
async function oneCall(helper, req, api) {
  const t0 = performance.now();
  const r = { outcome: '', api };
  const work = (async () => {
    let res;
    try {
      res = await helper.call(req, api);
    } catch (err) {
      r.outcome = 'error';
      // fetch wraps its dispatcher's error (the interceptor's, marked exhausted) in its own.
      const exhausted = exhaustedIn(err);
      r.error = exhausted !== null ? 'exhausted' : kindOf(err);
      r.errorText = describe(err);
      if (typeof exhausted?.attempts === 'number') r.attempts = exhausted.attempts;
      return;
    }
    r.outcome = 'response';
    r.status = res.status;
    try {
      r.body = await res.read(api);
      r.read = 'whole';
    } catch (err) {
      r.read = 'error';
      r.readError = kindOf(err);
      r.readErrorText = describe(err);
    }
  })();
  let timer;
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve(true), HANG_MS);
  });
  if (await Promise.race([work.then(() => false), hung])) {
    r.outcome = r.outcome === '' ? 'hang' : r.outcome;
    if (r.outcome === 'response') {
      r.read = 'hang';
    }
  }
  clearTimeout(timer);
  r.elapsedMs = performance.now() - t0;
  return r;
}

/** One case against one helper, in this process: each read API asked for, each on a fresh load. */
async function runCase(server, name, c, slackMs) {
  const failures = [];
  let expect = c.expect;
  for (const api of c.expect.read_apis === 'all' ? READ_APIS : ['bytes']) {
    // Fresh helpers (and connection pools) per load: the load drops the server's connections.
    const { helpers, close } = await makeHelpers(retrierFor(c.policy));
    const helper = helpers[name];
    expect = expectation(c, helper.readsBody);
    try {
      await server.load(c.server);
      const r = await oneCall(helper, requestOf(c, server.url(c)), api);
      judge(expect, slackMs, r, await server.seen(), failures);
    } finally {
      await close();
    }
  }
  return { failures, numbers: {} };
}

function heapUsedMb() {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Resets the kernel's peak RSS of this process (VmHWM); false where it cannot. */
function resetPeakRss() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function statusMb(field) {
  const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
  return m === null ? null : Number(m[1]) / 1024;
}

/** A memory case in this (fresh) process: a warm-up, then the case, measured around it. */
async function runIsolated(server, name, c, slackMs) {
  const failures = [];
  const numbers = {};
  const { helpers, close } = await makeHelpers(retrierFor(c.policy));
  const helper = helpers[name];
  const expect = expectation(c, helper.readsBody);
  const repeat = c.repeat ?? 1;
  try {
    await server.load(WARM_UP);
    const warm = requestOf(c, `${server.listeners.http}/warm-up`);
    for (let i = 0; i < Math.min(200, repeat); i++) await (await helper.call(warm, 'bytes')).read('bytes');
    await server.load(c.server);
    const heapBefore = heapUsedMb();
    const rssBefore = statusMb('VmRSS');
    const peakKnown = resetPeakRss();
    const req = requestOf(c, server.url(c));
    let bad = 0;
    let first = null;
    let last;
    for (let i = 0; i < repeat; i++) {
      last = await oneCall(helper, req, 'bytes');
      const wrong = [];
      judge({ outcome: expect.outcome, status: expect.status, read: expect.read, body_bytes: expect.body_bytes }, slackMs, last, null, wrong);
      if (wrong.length > 0) {
        bad++;
        first ??= wrong[0];
      }
    }
    const peak = statusMb('VmHWM');
    if (bad > 0) failures.push(`${bad} of ${repeat} calls went wrong, the first: ${first}`);
    const seen = await server.seen();
    if (repeat === 1) judge(expect, slackMs, last, seen, failures);
    else if (expect.requests !== undefined && seen.requests.length !== expect.requests) {
      failures.push(`the server saw ${seen.requests.length} requests, expected ${expect.requests}`);
    }
    if (expect.heap_growth_mb !== undefined) {
      const grew = heapUsedMb() - heapBefore;
      numbers.heap_growth_mb = Number(grew.toFixed(1));
      if (!(grew < expect.heap_growth_mb)) failures.push(`the heap grew by ${grew.toFixed(1)} MB over ${repeat} calls (after GC), bound ${expect.heap_growth_mb} MB`);
    }
    if (expect.peak_rss_growth_mb !== undefined) {
      if (!peakKnown || peak === null) failures.push('cannot measure peak RSS here (no /proc/self/clear_refs)');
      const grew = peak - rssBefore;
      numbers.peak_rss_growth_mb = Number(grew.toFixed(1));
      if (!(grew < expect.peak_rss_growth_mb)) failures.push(`peak RSS grew by ${grew.toFixed(1)} MB, bound ${expect.peak_rss_growth_mb} MB`);
    }
  } finally {
    await close();
  }
  return { failures, numbers };
}

/** Runs `--isolated helper case` in a child process and returns its report. */
function isolated(name, caseName) {
  const out = spawnSync(process.execPath, ['--expose-gc', __filename, '--isolated', name, caseName], { encoding: 'utf8', timeout: 600000 });
  try {
    return JSON.parse(out.stdout.trim().split('\n').at(-1));
  } catch {
    return { failures: [`the isolated run failed (exit ${out.status}): ${String(out.stderr).trim().slice(-800)}`], numbers: {} };
  }
}

function markdown(table, names) {
  const lines = [`| case | ${names.join(' | ')} |`, `|---|${'---|'.repeat(names.length)}`];
  for (const [c, row] of Object.entries(table)) lines.push(`| ${c} | ${names.map((n) => (row[n] ? 'pass' : 'FAIL')).join(' | ')} |`);
  return `${lines.join('\n')}\n`;
}

/** The Node helpers x cases table tests/http/README.md shows (its lines from the header row to a blank line). */
function readmeTable() {
  const lines = fs.readFileSync(path.join(ROOT, 'tests/http/README.md'), 'utf8').split('\n');
  const start = lines.indexOf(`| case | ${HELPER_NAMES.join(' | ')} |`);
  if (start < 0) return null;
  const end = lines.indexOf('', start);
  return `${lines.slice(start, end < 0 ? undefined : end).join('\n')}\n`;
}

function parseArgs(argv) {
  const args = { helper: [], case: [], markdown: null, isolated: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--helper' || a === '--case') args[a.slice(2)].push(argv[++i]);
    else if (a === '--markdown') args.markdown = argv[++i];
    else if (a === '--isolated') args.isolated = [argv[++i], argv[++i]];
    else throw new Error(`run.js: unknown argument ${a} (--helper NAME, --case NAME, --markdown FILE)`);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const suite = JSON.parse(fs.readFileSync(CASES, 'utf8'));
  const cases = new Map(suite.cases.map((c) => [c.name, c]));
  const slack = suite.slack_ms;
  for (const n of args.case) if (!cases.has(n)) throw new Error(`no case named ${n}; the cases are ${[...cases.keys()].join(', ')}`);
  for (const n of args.helper) if (!HELPER_NAMES.includes(n)) throw new Error(`no helper named ${n}; the helpers are ${HELPER_NAMES.join(', ')}`);
  const server = await startServer();
  try {
    if (args.isolated !== null) {
      const [name, caseName] = args.isolated;
      console.log(JSON.stringify(await runIsolated(server, name, cases.get(caseName), slack)));
      return 0;
    }
    const chosen = args.case.length > 0 ? args.case.map((n) => cases.get(n)) : [...cases.values()];
    const names = args.helper.length > 0 ? args.helper : HELPER_NAMES;
    const table = {};
    let failed = 0;
    for (const c of chosen) {
      for (const name of names) {
        const report = c.isolate ? isolated(name, c.name) : await runCase(server, name, c, slack);
        (table[c.name] ??= {})[name] = report.failures.length === 0;
        const extra = Object.keys(report.numbers).length > 0 ? ` ${JSON.stringify(report.numbers)}` : '';
        console.log(`${report.failures.length === 0 ? 'ok  ' : 'FAIL'} ${c.name} / ${name}${extra}`);
        for (const f of report.failures) console.log(`       ${f}`);
        failed += report.failures.length > 0 ? 1 : 0;
      }
    }
    const text = markdown(table, names);
    console.log(`\n${text}`);
    if (args.markdown !== null) fs.writeFileSync(args.markdown, text);
    console.log(`${failed} of ${chosen.length * names.length} helper x case runs failed`);
    // A full run keeps the README's Node table true.
    if (args.case.length === 0 && args.helper.length === 0 && readmeTable() !== text) {
      console.log(`tests/http/README.md's Node table differs from this run's; write:\n${text}`);
      return 1;
    }
    return failed > 0 ? 1 : 0;
  } finally {
    server.close();
  }
}


if (require.main === module) {
  main().then((code) => process.exit(code), (err) => {
    console.error(err);
    process.exit(2);
  });
}
