#!/usr/bin/env node
// The rates demo client: fetches a rate through retryrs with the policy "rates" of
// examples/policies.json (the contract's defaults, seed 42), treating the retryable HTTP statuses as transient, honouring
// Retry-After, and printing one line per retry and a success line from the events.
//
//   node examples/node/rates.mjs http://127.0.0.1:PORT/<session>/rates/EURUSD
//
// Exits 0 on success, 1 otherwise.
// In your project: `npm install path/to/bindings-node`, then import from 'retryrs'.
import { Retrier, RetryExhaustedError, parseRetryAfter, isRetryableStatus, isTransientError, loadPolicies } from '../../bindings-node/index.mjs';

class HttpStatusError extends Error {
  constructor(status, retryAfterMs) {
    super(`HTTP ${status}`);
    this.name = 'HttpStatusError';
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

function describe(err) {
  if (err instanceof HttpStatusError) return err.message;
  const code = err?.cause?.code ?? err?.code;
  return code ? `${err.message} (${code})` : String(err?.message ?? err);
}

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
const rates = Retrier.fromPolicy(policies.get('rates'), {
  shouldRetry: (err) => (err instanceof HttpStatusError ? isRetryableStatus(err.status) : isTransientError(err)),
  onEvent: (e) => {
    switch (e.kind) {
      case 'attempt_failed':
        lastFailure = e.error;
        break;
      case 'retrying':
        console.log(`${stamp(e.elapsedMs)} attempt ${e.attempt} failed: ${describe(lastFailure)} -> waiting ${e.delayMs} ms`);
        break;
      case 'success':
        success = e;
        break;
      case 'rejected':
        console.log(`${stamp(e.elapsedMs)} attempt ${e.attempt} failed: ${describe(e.error)} -> giving up (not retryable)`);
        break;
      case 'exhausted':
        console.log(`${stamp(e.elapsedMs)} attempt ${e.attempt} failed: ${describe(e.error)} -> giving up (${e.reason})`);
        break;
      default:
        break;
    }
  },
});

try {
  const rate = await rates.call(async (ctx) => {
    const res = await fetch(url, { signal: ctx.signal });
    const body = (await res.text()).trim();
    if (res.status !== 200) throw new HttpStatusError(res.status, parseRetryAfter(res.headers.get('retry-after')));
    return body;
  });
  console.log(`${stamp(success.elapsedMs)} success: ${rate} (attempt ${success.attempt})`);
  process.exit(0);
} catch (err) {
  if (!(err instanceof RetryExhaustedError) && !(err instanceof HttpStatusError)) console.error(`rates: ${describe(err)}`);
  process.exit(1);
}
