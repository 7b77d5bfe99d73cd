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

// Node names an OpenSSL error ERR_SSL_ + its reason text, upper-cased, spaces to '_'.
// OpenSSL 3.2 renamed the "sslv3 alert ..." reasons "ssl/tls alert ...": a Node built
// with a newer OpenSSL (such as a distro build linked to the system's)
// reports a peer's refusal of our certificate as ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE.
// Such a refusal fails the same way every time: no network failure, as under OpenSSL 3.0.
test('failureOf: the certificate alerts as OpenSSL 3.2+ spells them are no network failure', () => {
  const { failureOf } = require('../lib/http-common');
  const coded = (code) => Object.assign(new Error(code), { code });
  for (const alert of ['BAD_CERTIFICATE', 'UNSUPPORTED_CERTIFICATE', 'CERTIFICATE_REVOKED', 'CERTIFICATE_EXPIRED', 'CERTIFICATE_UNKNOWN']) {
    for (const code of [`ERR_SSL_SSLV3_ALERT_${alert}`, `ERR_SSL_SSL/TLS_ALERT_${alert}`]) {
      assert.equal(failureOf(coded(code), true), undefined, code);
      assert.equal(failureOf(new TypeError('fetch failed', { cause: coded(code) }), true), undefined, `fetch: ${code}`);
    }
  }
  // Still a failed connect: a handshake failure that is no certificate's.
  assert.equal(failureOf(coded('ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE'), true), 'connect');
});
