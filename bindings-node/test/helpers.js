'use strict';
// Small shared pieces of the test suite.

const path = require('node:path');

/** An error the default predicate calls transient (a connection reset). */
function transient(message = 'connection reset', extra = {}) {
  return Object.assign(new Error(message), { code: 'ECONNRESET' }, extra);
}

/** fn that fails with transient errors `failures` times, then returns `value`. */
function flaky(failures, value = 'ok') {
  let calls = 0;
  const fn = () => {
    calls += 1;
    if (calls <= failures) throw transient(`failure ${calls}`);
    return value;
  };
  fn.calls = () => calls;
  return fn;
}

/**
 * A folder of the repository's shared test data (tests/<name>: the conformance vectors,
 * the policy documents, the observability scenario). The artefact tests run this suite
 * from an installed package, away from the repository; there RETRYRS_VECTORS names the
 * vectors' folder and the others sit beside it.
 */
function sharedTests(name) {
  const vectors = process.env.RETRYRS_VECTORS;
  return vectors ? path.join(vectors, '..', name) : path.join(__dirname, '..', '..', 'tests', name);
}

module.exports = { transient, flaky, sharedTests };
