#!/usr/bin/env node
// The happy path's cost in instructions, this tree against a base tree (as vs_commit.mjs,
// a worktree of another commit with its addon built), and what the least JS that can cut
// a running attempt costs on this Node. Wall and CPU times on a shared machine move by
// tens of percent between runs; an instruction count moves by about 1%.
//
//   node bench/node/instructions.mjs --base /path/to/other/worktree [--only row,row]
//
// Each figure runs a row N1 and N2 times, each call awaited, in one node process under
// valgrind's cachegrind, and divides the difference of the two totals by N2 - N1: what
// one call costs, the process's start-up and warm-up cancelled out. Node runs with
// --single-threaded and --predictable-gc-schedule, so the JIT compiles on the main thread
// and two runs of a row agree. Needs valgrind; about a minute per figure.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { commandLine, happyRows, makeFlaky, perCallInstructions, yieldingHandLoop } from './common.mjs';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..', '..');
const { args, opt } = commandLine();

const N1 = 100_000;
const N2 = 600_000;

// Rows run in each tree (common.mjs, happyRows; and two failures then success, zero
// delay, which bench.mjs compares with the yielding hand loop below).
const TREE_ROWS = ['bare await', 'r.call', 'r.call, deadlineMs: null', 'r.call, two failures'];

// Rows that need no retryrs: what awaiting a call costs when the library subscribes to
// the attempt's promise (an unbounded call's least work) and when it must also be able
// to settle the call before the attempt does (a call that a bound can cut: a promise of
// its own, and a closure that knows it).
const counts = { ok: 0, start: 0 };
const countOk = (v) => {
  counts.ok += 1;
  return v;
};
const JS_ROWS = {
  'JS: p.then(count, onFail)': (ok) => () => ok().then(countOk, (err) => {
    throw err;
  }),
  'JS: own promise + p.then(onOk, onFail)': (ok) => () => {
    const p = ok();
    // Its executor a closure of the call: a shared one handing resolve over in a module
    // variable costs more (a write barrier per call, lib/call.js).
    let resolve;
    const call = new Promise((r) => {
      resolve = r;
    });
    let live = true;
    p.then((v) => {
      if (!live) return;
      live = false;
      counts.ok += 1;
      resolve(v);
    }, (err) => {
      live = false;
      resolve(Promise.reject(err));
    });
    return call;
  },
  // The same, reading performance.now() at the start: a bound that ends at a time needs
  // the time it started (the cheapest monotonic reading on Node 20; process.hrtime and
  // Date.now cost more).
  'JS: own promise + p.then(onOk, onFail) + performance.now()': (ok) => {
    const cuttable = JS_ROWS['JS: own promise + p.then(onOk, onFail)'](ok);
    const perf = globalThis.performance;
    return () => {
      counts.start = perf.now();
      return cuttable();
    };
  },
  // The least a call that a deadline can cut needs on this Node, written by hand: the
  // clock read above, and the attempt's failure callback and expiry stored where a timer
  // can reach them (a slot of a young array, as BoundQueue keeps them), cleared when the
  // attempt settles. No timer is armed, no late settle looked for, no head moved: a floor
  // under any implementation, against which r.call's own bookkeeping is what is left.
  'JS: own promise + p.then(onOk, onFail) + performance.now() + a slot a timer can reach': (ok) => {
    const perf = globalThis.performance;
    const SIZE = 256;
    let slots = new Array(SIZE).fill(null);
    const times = new Float64Array(SIZE);
    let tail = 0;
    return () => {
      const t0 = perf.now();
      const p = ok();
      let resolve;
      const call = new Promise((r) => {
        resolve = r;
      });
      let at = -1;
      const failed = (err) => {
        if (at < 0) return;
        slots[at] = null;
        at = -1;
        resolve(Promise.reject(err));
      };
      // New storage when full (a young array: a store into an old one costs a write barrier).
      if (tail === SIZE) {
        slots = new Array(SIZE).fill(null);
        tail = 0;
      }
      slots[tail] = failed;
      times[tail] = t0 + 15_000;
      at = tail++;
      p.then((v) => {
        if (at < 0) return;
        slots[at] = null;
        at = -1;
        counts.ok += 1;
        resolve(v);
      }, failed);
      return call;
    };
  },
  // What two failures then success cost without retryrs: bench.mjs's baseline for them.
  'JS: yielding hand loop, two failures': () => () => yieldingHandLoop(makeFlaky()),
};

async function child(tree, name, iters) {
  const ok = async () => 42;
  let run;
  if (name in JS_ROWS) {
    run = JS_ROWS[name](ok);
  } else {
    const { Retrier } = await import(pathToFileURL(path.join(tree, 'bindings-node', 'index.js')).href);
    const retrier = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
    run = { ...happyRows(Retrier, ok), 'r.call, two failures': () => retrier.call(makeFlaky()) }[name];
  }
  if ((await run()) !== 42) throw new Error(`${name}: not 42`);
  for (let i = 0; i < iters; i++) await run();
  // The bound's timer must not keep the process for the deadline.
  process.exit(0);
}

// A row of two failures costs some fifty happy calls (two errors' stacks, two turns of
// the event loop): a twentieth as many calls is precise enough and takes minutes.
const perCall = (tree, name) => {
  const scale = name.includes('two failures') ? 20 : 1;
  return perCallInstructions(here, (iters) => [tree, name, String(iters)], N1 / scale, N2 / scale);
};

if (args[0] === '--child') {
  await child(args[1], args[2], Number(args[3]));
} else {
  const base = opt('--base');
  if (base === undefined) {
    console.error('usage: instructions.mjs --base DIR [--only row,row] (rows: a name, or a unique part of one)');
    process.exit(2);
  }
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.error('instructions.mjs needs valgrind (make c-tools installs it)');
    process.exit(2);
  }
  const only = opt('--only');
  const picked = (name) => only === undefined || only.split(',').some((part) => name.includes(part.trim()));
  const trees = { this: root, base: path.resolve(base) };
  console.log(`Node ${process.version}; this = ${trees.this}, base = ${trees.base}; instructions per call (cachegrind, ${N2} - ${N1} calls)\n`);
  console.log('| row | this | base | this/base |\n|---|---:|---:|---:|');
  const got = {};
  for (const name of TREE_ROWS.filter(picked)) {
    const t = perCall(trees.this, name);
    const b = perCall(trees.base, name);
    got[name] = t;
    console.log(`| ${name} | ${t} | ${b} | ${(t / b).toFixed(2)} |`);
  }
  for (const name of Object.keys(JS_ROWS).filter(picked)) {
    got[name] = perCall(root, name);
    console.log(`| ${name} | ${got[name]} | | |`);
  }
  printFloors(got);
}

// The bounded happy path against the floor for any call a bound can cut (issue 41): what
// this tree's unbounded call costs plus what being cuttable costs at least in plain JS
// (a promise of its own and the closure that settles it). Beside it, the same ratio for
// the least hand-written call that also reads the clock and keeps a slot a timer can
// reach: how near a fine clock lets any implementation come.
function printFloors(got) {
  const own = 'JS: own promise + p.then(onOk, onFail)';
  const [jsThen, jsOwn, jsNow, jsSlot] = [
    'JS: p.then(count, onFail)', own, `${own} + performance.now()`, `${own} + performance.now() + a slot a timer can reach`,
  ].map((name) => {
    if (!(name in JS_ROWS)) throw new Error(`instructions.mjs: no row '${name}'`);
    return got[name];
  });
  const [bounded, unbounded] = [got['r.call'], got['r.call, deadlineMs: null']];
  if ([jsThen, jsOwn, bounded, unbounded].includes(undefined)) return;
  const floor = unbounded + (jsOwn - jsThen);
  console.log(`\ncuttable floor = r.call, deadlineMs: null + (own promise - p.then) = ${floor}; r.call / floor = ${(bounded / floor).toFixed(2)}`);
  if (jsNow !== undefined) console.log(`in plain JS: + performance.now() / own promise = ${(jsNow / jsOwn).toFixed(2)}`);
  if (jsSlot !== undefined) console.log(`in plain JS: + performance.now() + a slot a timer can reach / own promise = ${(jsSlot / jsOwn).toFixed(2)}`);
}
