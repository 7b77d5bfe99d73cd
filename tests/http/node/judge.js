'use strict';
// What a case expects of one call, and the check of one call against it (the meaning of
// each field: tests/http/README.md, "What must happen").

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz';

/** The server's body of `n` bytes: a JSON string literal (a quote, the alphabet repeated, a quote); under 2 bytes, that many x. */
function expectedBody(n) {
  if (n < 2) return Buffer.from('x'.repeat(n));
  const inner = ALPHABET.repeat(Math.ceil((n - 2) / ALPHABET.length)).slice(0, n - 2);
  return Buffer.from(`"${inner}"`);
}

/**
 * The case's `expect`, amended by `expect_if_reads_body` for a helper that reads the body
 * inside the attempt (a null there removes the field).
 */
function expectation(c, readsBody) {
  const out = { ...c.expect };
  if (readsBody) {
    for (const [k, v] of Object.entries(c.expect_if_reads_body ?? {})) {
      if (v === null) delete out[k];
      else out[k] = v;
    }
  }
  return out;
}

function countOk(want, got) {
  if (want !== null && typeof want === 'object') return (want.min ?? 0) <= got && got <= (want.max ?? got);
  return want === got;
}

function describe(r) {
  if (r.outcome !== 'response') return `${r.outcome} ${r.error ?? ''} (${r.errorText ?? ''}) after ${Math.round(r.elapsedMs)} ms`;
  const got = r.read === 'whole' ? `${r.body.length} bytes` : `read ${r.read} ${r.readError ?? ''} (${r.readErrorText ?? ''})`;
  return `${r.status}, ${got}, after ${Math.round(r.elapsedMs)} ms`;
}

/**
 * Every field of `expect` that applies to one call `r` (`seen`: what the server saw during
 * it, or null for a repeated call judged in bulk); pushes a message per failure.
 */
function judge(expect, slackMs, r, seen, failures) {
  const where = r.api ? `[${r.api}] ` : '';
  const check = (ok, message) => {
    if (!ok) failures.push(where + message);
  };
  check(r.outcome === expect.outcome, `outcome ${r.outcome} (${describe(r)}), expected ${expect.outcome}`);
  if (r.outcome !== expect.outcome) return;
  if (expect.error !== undefined) check(expect.error.includes(r.error), `error kind ${r.error} (${r.errorText}), expected one of ${expect.error}`);
  if (expect.attempts !== undefined && r.attempts !== undefined) check(r.attempts === expect.attempts, `${r.attempts} attempts, expected ${expect.attempts}`);
  if (expect.status !== undefined) check(r.status === expect.status, `status ${r.status}, expected ${expect.status}`);
  if (expect.read === 'whole') {
    check(r.read === 'whole', `body not read whole: ${describe(r)}`);
    if (r.read === 'whole' && expect.body_bytes !== undefined) {
      const want = expectedBody(expect.body_bytes);
      check(Buffer.compare(r.body, want) === 0, `body of ${r.body.length} bytes, expected the server's ${want.length}`);
    }
  }
  if (expect.read === 'error') {
    check(r.read === 'error', `body read gave ${describe(r)}, expected a read error`);
    if (r.read === 'error' && expect.read_error !== undefined) {
      check(expect.read_error.includes(r.readError), `read error kind ${r.readError} (${r.readErrorText}), expected one of ${expect.read_error}`);
    }
  }
  if (expect.within_ms !== undefined) {
    check(r.elapsedMs <= expect.within_ms + slackMs, `took ${Math.round(r.elapsedMs)} ms, bound ${expect.within_ms} + ${slackMs} ms`);
  }
  if (expect.min_ms !== undefined) check(r.elapsedMs >= expect.min_ms, `took ${Math.round(r.elapsedMs)} ms, sooner than ${expect.min_ms} ms`);
  if (seen !== null) {
    if (expect.requests !== undefined) {
      const n = seen.requests.length;
      check(countOk(expect.requests, n), `the server saw ${n} requests, expected ${JSON.stringify(expect.requests)}`);
    }
    if (expect.connections !== undefined) {
      const n = Object.values(seen.connections).reduce((a, b) => a + b, 0);
      check(countOk(expect.connections, n), `the listener accepted ${n} connections, expected ${JSON.stringify(expect.connections)}`);
    }
  }
}

module.exports = { expectation, judge, expectedBody };
