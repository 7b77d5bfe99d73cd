// Loading a 10,000-policy document in Node: loadPolicies (the core's loader, then a Map of
// 10,000 frozen Policy objects) against JSON.parse of the same text (parsing only), in the
// same run. Prints one markdown row. Usage: node policies.mjs DOC
import fs from 'node:fs';
import { loadPolicies } from '../../bindings-node/index.mjs';

function medianMs(f, runs = 15) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    f();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

const path = process.argv[2];
if (loadPolicies(path).size !== 10001) throw new Error('the document holds 10,001 policies');
const ours = medianMs(() => loadPolicies(path));
const text = fs.readFileSync(path, 'utf8');
const peer = medianMs(() => JSON.parse(text));
console.log(`| Node | \`loadPolicies\` | ${ours.toFixed(1)} | \`JSON.parse\` (parse only) | ${peer.toFixed(1)} | ${(ours / peer).toFixed(2)}x |`);
