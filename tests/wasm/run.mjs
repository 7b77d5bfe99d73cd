// Runs the engine built for wasm32-unknown-unknown (tests/wasm, `make wasm-check-rust`)
// against every seeded jitter vector it can express (tests/conformance/jitter.json): the
// same waits as the native hosts, no trap. Then an unseeded policy, whose seed the engine
// finds without OS entropy.
//   node tests/wasm/run.mjs path/to/retryrs_wasm_smoke.wasm
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const wasmPath = process.argv[2];
if (!wasmPath) throw new Error('usage: node tests/wasm/run.mjs <retryrs_wasm_smoke.wasm>');
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const { smoke_delays: delays, smoke_out: outPtr, memory } = instance.exports;

const JITTER = { none: 0, full: 1, equal: 2, decorrelated: 3 };
const DEFAULTS = { initial_delay: 200, max_delay: 5000, max_attempts: 5, deadline: 15000 };
const KNOWN = new Set(['seed', 'jitter', 'initial_delay', 'max_delay', 'max_attempts', 'deadline', 'name']);

function ms(text) {
  const m = /^([0-9.]+)(ms|s)$/.exec(text);
  if (!m) throw new Error(`unexpected duration ${text}`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

function run(policy) {
  let code = 1;
  let factor = 0;
  const j = policy.jitter ?? 'full';
  const prop = /^proportional\(([0-9.]+)\)$/.exec(j);
  if (prop) [code, factor] = [4, Number(prop[1])];
  else code = JITTER[j];
  if (code === undefined) return undefined;
  const seeded = policy.seed !== undefined;
  const n = delays(
    BigInt(policy.seed ?? 0), seeded ? 1 : 0, code, factor,
    policy.initial_delay !== undefined ? ms(policy.initial_delay) : DEFAULTS.initial_delay,
    policy.max_delay !== undefined ? ms(policy.max_delay) : DEFAULTS.max_delay,
    policy.max_attempts ?? DEFAULTS.max_attempts,
    policy.deadline === null ? -1 : policy.deadline !== undefined ? ms(policy.deadline) : DEFAULTS.deadline,
    outPtr(), 64,
  );
  if (n < 0) throw new Error(`the wasm engine refused ${JSON.stringify(policy)}`);
  return Array.from(new Uint32Array(memory.buffer, outPtr(), Math.min(n, 64)));
}

const vectors = JSON.parse(readFileSync(fileURLToPath(new URL('../conformance/jitter.json', import.meta.url)))).vectors;
let ran = 0;
const failures = [];
for (const v of vectors) {
  if (!Object.keys(v.policy).every((k) => KNOWN.has(k))) continue;
  for (const call of v.calls) {
    // Only calls whose attempts fail at once, without a hint, but the last, which may
    // succeed (smoke_delays fails them all: the waits before the last are the same).
    const before = call.attempts.slice(0, -1);
    const last = call.attempts[call.attempts.length - 1];
    const plain = (a) => !a.takes_ms && a.hint_ms === undefined && a.retry_after === undefined;
    if (!before.every((a) => a.result === 'transient' && plain(a)) || !['transient', 'success'].includes(last.result) || !plain(last)) continue;
    if (call.expect.delays_ms === undefined) continue;
    let got = run(v.policy);
    if (got === undefined) continue;
    got = got.slice(0, before.length);
    ran += 1;
    if (JSON.stringify(got) !== JSON.stringify(call.expect.delays_ms)) failures.push(`${v.id}: got ${JSON.stringify(got)}, want ${JSON.stringify(call.expect.delays_ms)}`);
  }
}
const unseeded = run({ initial_delay: '100ms', max_attempts: 4 });
if (unseeded.length !== 3 || unseeded.some((d) => !(d >= 0 && d <= 400))) failures.push(`unseeded: ${JSON.stringify(unseeded)}`);
if (ran < 3) failures.push(`only ${ran} jitter vectors could be run on wasm32 (the runner expected at least 3)`);
if (failures.length) {
  console.error(`wasm32: ${failures.length} failed:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log(`wasm32-unknown-unknown: the lean engine ran ${ran} seeded jitter vectors with the native waits, and an unseeded policy, without a trap`);
