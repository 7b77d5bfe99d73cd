'use strict';
// break-it3: this round's features tried as a stranger would, at the edges.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier } = require('..');

/** An attempt that hangs until its signal aborts, then rejects with the abort's reason. */
const hangs = (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));

for (const [name, hedge] of [['a plain call', undefined], ['a hedged call', { maxAttempts: 2, delayMs: 20 }]]) {
  test(`${name} aborted while its attempt runs counts the attempt in stats`, async () => {
    const r = new Retrier({ hedge, deadlineMs: 10_000 });
    const controller = new AbortController();
    let launched = 0;
    const reason = new Error('user gave up');
    const p = r.call((ctx) => {
      launched += 1;
      // Abort once every attempt the policy sends is running (no sleep to race with).
      if (launched === (hedge ? 2 : 1)) setImmediate(() => controller.abort(reason));
      return hangs(ctx);
    }, { signal: controller.signal });
    await assert.rejects(p, (err) => err === reason);
    const s = r.stats();
    assert.equal(s.calls, 1);
    assert.equal(s.cancellations, 1);
    assert.ok(s.attempts >= 1, `${launched} attempt(s) running at the abort, stats counted ${s.attempts}`);
  });
}
