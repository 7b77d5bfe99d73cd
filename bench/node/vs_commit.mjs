#!/usr/bin/env node
// retryrs (Node) against itself at another commit, in the same run: the happy path (the
// default 15 s deadline, and deadlineMs: null) and two failures then success (zero
// delay) of this tree and of a base tree (a worktree of the other commit with its addon
// built by `make node-addon`), measured alternately, so both see the same machine load.
//
//   node bench/node/vs_commit.mjs --base /path/to/other/worktree [--rounds 7] [--cpu]
//
// Each round runs every row once in a fresh node process of each tree, in turn; a row's
// figure is its best round (ns per call; --cpu: CPU time per call). Needs only the addon.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..', '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const cpu = args.includes('--cpu');

const ROWS = ['bare await', 'r.call', 'r.call, deadlineMs: null', 'yielding hand loop', 'r.call, two failures'];

async function child(tree, name, roundMs, repeats) {
  const { Retrier } = await import(pathToFileURL(path.join(tree, 'bindings-node', 'index.js')).href);
  const ok = async () => 42;
  const transient = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  const makeFlaky = () => {
    let n = 0;
    return async () => {
      if (n++ < 2) throw transient();
      return 42;
    };
  };
  const retrier = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const noDeadline = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, deadlineMs: null });
  const yielding = async (fn) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise(setImmediate);
      }
    }
  };
  const run = {
    'bare await': () => ok(),
    'r.call': () => retrier.call(ok),
    'r.call, deadlineMs: null': () => noDeadline.call(ok),
    'yielding hand loop': () => yielding(makeFlaky()),
    'r.call, two failures': () => retrier.call(makeFlaky()),
  }[name];
  if ((await run()) !== 42) throw new Error(`${name}: not 42`);
  const timeLoop = async (iters) => {
    if (cpu) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < iters; i++) await run();
      const c = process.cpuUsage(c0);
      return ((c.user + c.system) * 1000) / iters;
    }
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iters; i++) await run();
    return Number(process.hrtime.bigint() - t0) / iters;
  };
  // Warm up while sizing a repeat to about roundMs.
  let iters = 100;
  for (;;) {
    const ns = await timeLoop(iters);
    if (ns * iters >= (roundMs * 1e6) / 4 || iters >= 1e7) {
      iters = Math.max(50, Math.round((roundMs * 1e6) / ns));
      break;
    }
    iters *= 4;
  }
  let best = Infinity;
  for (let r = 0; r < repeats; r++) best = Math.min(best, await timeLoop(iters));
  console.log(best);
}

if (args[0] === '--child') {
  await child(args[1], args[2], Number(args[3]), Number(args[4]));
} else {
  const base = opt('--base');
  if (base === undefined) {
    console.error('usage: vs_commit.mjs --base DIR [--rounds N] [--cpu] [--only row,row]');
    process.exit(2);
  }
  const rounds = Number(opt('--rounds', '7'));
  const only = opt('--only');
  const names = only ? ROWS.filter((r) => only.split(',').includes(r)) : ROWS;
  const trees = { this: root, base: path.resolve(base) };
  const best = {};
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      for (const [label, tree] of Object.entries(trees)) {
        const out = execFileSync(process.execPath, [here, '--child', tree, name, '150', '3', ...(cpu ? ['--cpu'] : [])], { encoding: 'utf8' });
        const ns = Number(out.trim());
        best[`${label}|${name}`] = Math.min(best[`${label}|${name}`] ?? Infinity, ns);
      }
    }
  }
  const fmt = (ns) => (ns >= 10_000 ? `${(ns / 1000).toFixed(1)} µs` : `${Math.round(ns)} ns`);
  console.log(`Node ${process.version}; this = ${trees.this}, base = ${trees.base}; best of ${rounds} rounds${cpu ? ', CPU time' : ''}\n`);
  console.log('| row | this | base | this/base |\n|---|---:|---:|---:|');
  for (const name of names) {
    const t = best[`this|${name}`];
    const b = best[`base|${name}`];
    console.log(`| ${name} | ${fmt(t)} | ${fmt(b)} | ${(t / b).toFixed(2)} |`);
  }
}
