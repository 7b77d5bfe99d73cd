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
import { commandLine, fmt, happyRows, makeFlaky, measure, yieldingHandLoop } from './common.mjs';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..', '..');
const { args, opt } = commandLine();
const cpu = args.includes('--cpu');

const ROWS = ['bare await', 'r.call', 'r.call, deadlineMs: null', 'yielding hand loop', 'r.call, two failures'];

async function child(tree, name, roundMs, repeats) {
  const { Retrier } = await import(pathToFileURL(path.join(tree, 'bindings-node', 'index.js')).href);
  const ok = async () => 42;
  const retrier = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const run = {
    ...happyRows(Retrier, ok),
    'yielding hand loop': () => yieldingHandLoop(makeFlaky()),
    'r.call, two failures': () => retrier.call(makeFlaky()),
  }[name];
  if ((await run()) !== 42) throw new Error(`${name}: not 42`);
  console.log(await measure(run, { roundMs, rounds: repeats, cpu }));
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
  console.log(`Node ${process.version}; this = ${trees.this}, base = ${trees.base}; best of ${rounds} rounds${cpu ? ', CPU time' : ''}\n`);
  console.log('| row | this | base | this/base |\n|---|---:|---:|---:|');
  for (const name of names) {
    const t = best[`this|${name}`];
    const b = best[`base|${name}`];
    console.log(`| ${name} | ${fmt(t)} | ${fmt(b)} | ${(t / b).toFixed(2)} |`);
  }
}
