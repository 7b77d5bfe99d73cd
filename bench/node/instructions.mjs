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
  for (const name of TREE_ROWS.filter(picked)) {
    const t = perCall(trees.this, name);
    const b = perCall(trees.base, name);
    console.log(`| ${name} | ${t} | ${b} | ${(t / b).toFixed(2)} |`);
  }
  for (const name of Object.keys(JS_ROWS).filter(picked)) {
    console.log(`| ${name} | ${perCall(root, name)} | | |`);
  }
}
