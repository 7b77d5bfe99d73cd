#!/usr/bin/env node
// The demo rates client: fetches a rate with fetch, retried by retryrs through
// retryingFetch (the one line: wrapping fetch), with the policy "rates" of
// examples/policies.json (the contract's defaults, seed 42), the file the Python and C
// clients read too; prints one line per retry and a success line from the events. What
// is retried (the retryable statuses, connection failures) and the Retry-After wait are
// the core's rules, the same as the Python and C clients'.
//
//   node examples/node/rates.mjs http://127.0.0.1:PORT/<session>/rates/EURUSD
//
// Exits 0 on a 200, 1 otherwise.
// In your project: `npm install path/to/bindings-node`, then import from 'retryrs' and
// 'retryrs/fetch'.
import { Retrier, RetryExhaustedError, loadPolicies } from '../../bindings-node/index.mjs';
import { retryingFetch, RetryableStatusError } from '../../bindings-node/lib/fetch.mjs';

const describe = (err) => (err instanceof RetryableStatusError ? `HTTP ${err.status}` : String(err?.message ?? err));
const stamp = (ms) => `[${String(ms).padStart(4)} ms]`;

const url = process.argv[2];
if (!url) {
  console.error('usage: rates.mjs http://127.0.0.1:PORT/<session>/rates/EURUSD');
  process.exit(2);
}

let lastFailure;
let success;
// The policy is "rates" from examples/policies.json, the file the Python and C clients read too.
const policies = loadPolicies(new URL('../policies.json', import.meta.url));
const retrier = Retrier.fromPolicy(policies.get('rates'), {
  onEvent: (e) => {
    if (e.kind === 'attempt_failed') lastFailure = e.error;
    else if (e.kind === 'retrying') console.log(`${stamp(e.elapsedMs)} attempt ${e.attempt} failed: ${describe(lastFailure)} -> waiting ${e.delayMs} ms`);
    else if (e.kind === 'exhausted') console.log(`${stamp(e.elapsedMs)} attempt ${e.attempt} failed: ${describe(e.error)} -> giving up (${e.reason})`);
    else if (e.kind === 'success') success = e;
  },
});
const fetchWithRetries = retryingFetch({ retrier });

try {
  const res = await fetchWithRetries(url, { signal: AbortSignal.timeout(30_000) });
  const body = (await res.text()).trim();
  if (res.status !== 200) {
    console.log(`response: HTTP ${res.status}`);
    process.exit(1);
  }
  console.log(`${stamp(success.elapsedMs)} success: ${body} (attempt ${success.attempt})`);
  process.exit(0);
} catch (err) {
  console.error(`rates: ${err instanceof RetryExhaustedError ? err.message : describe(err)}`);
  process.exit(1);
}
