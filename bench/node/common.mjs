// What bench.mjs and vs_commit.mjs both measure with: the timing loop, the flaky
// function, the hand-written loop retryrs is compared with. Node built-ins only:
// vs_commit.mjs runs it against a base tree that has nothing but its addon.
import { spawnSync } from 'node:child_process';

// Runs fn `iters` times, one after the other, each awaited; returns ns per call (with
// `cpu`, CPU time, user + system, per call: steadier on a machine other processes load).
export async function timeLoop(fn, iters, cpu) {
  if (cpu) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < iters; i++) await fn();
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / iters;
  }
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iters; i++) await fn();
  return Number(process.hrtime.bigint() - t0) / iters;
}

// The best of `rounds` rounds of about `roundMs` each, ns per call.
export async function measure(fn, { roundMs, rounds, cpu }) {
  // Warm up (the JIT settles) while sizing a round to about roundMs: the peers that
  // sleep on a zero-delay timer take milliseconds per call, the rest nanoseconds.
  let iters = 100;
  for (;;) {
    const ns = await timeLoop(fn, iters, cpu);
    if (ns * iters >= (roundMs * 1e6) / 4 || iters >= 1e7) {
      iters = Math.max(50, Math.round((roundMs * 1e6) / ns));
      break;
    }
    iters *= 4;
  }
  // The best of several rounds: the one least disturbed by GC and the other processes.
  let best = Infinity;
  for (let r = 0; r < rounds; r++) best = Math.min(best, await timeLoop(fn, iters, cpu));
  return best;
}

// A function failing twice with a transient error, then succeeding; one per call.
class Flaky {
  constructor() {
    this.n = 0;
  }
}
export const transient = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });
export const makeFlaky = () => {
  const state = new Flaky();
  return async () => {
    if (state.n++ < 2) throw transient();
    return 42;
  };
};

// A hand-written retry loop yielding one turn of the event loop before each retry (as
// retryrs does, so a zero-delay storm cannot starve timers and aborts).
export async function yieldingHandLoop(fn) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise(setImmediate);
    }
  }
}

export const fmt = (ns) => (ns >= 10_000 ? `${(ns / 1000).toFixed(1)} µs` : `${Math.round(ns)} ns`);

// A script's command line: its arguments and `opt(name, default)`, the value after `name`.
export function commandLine() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : dflt;
  };
  return { args, opt };
}

// The happy-path rows both vs_commit.mjs and instructions.mjs compare across trees, for the
// Retrier class of one tree: each row a function returning one call's promise of 42.
export function happyRows(Retrier, ok) {
  const retrier = new Retrier({ initialDelayMs: 0, maxDelayMs: 0 });
  const noDeadline = new Retrier({ initialDelayMs: 0, maxDelayMs: 0, deadlineMs: null });
  return {
    'bare await': () => ok(),
    'r.call': () => retrier.call(ok),
    'r.call, deadlineMs: null': () => noDeadline.call(ok),
  };
}

// Instructions one call costs, counted by valgrind's cachegrind: `script` run as
// `node script --child ...childArgs(iters)` for n1 and n2 calls, the difference of the two
// totals over n2 - n1 (start-up and warm-up cancelled out). Node runs with
// --single-threaded and --predictable-gc-schedule so two runs agree.
export function perCallInstructions(script, childArgs, n1, n2) {
  const count = (iters) => {
    // valgrind reports on stderr.
    const { status, stderr } = spawnSync('valgrind', [
      '--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null',
      process.execPath, '--single-threaded', '--predictable-gc-schedule', script, '--child', ...childArgs(iters),
    ], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
    const m = /I\s+refs:\s+([\d,]+)/.exec(stderr);
    if (status !== 0 || m === null) throw new Error(`${childArgs(iters).join(' ')} under valgrind: exit ${status}\n${stderr}`);
    return Number(m[1].replaceAll(',', ''));
  };
  return Math.round((count(n2) - count(n1)) / (n2 - n1));
}
