'use strict';
// Small shared pieces of the test suite.

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

module.exports = { transient, flaky };
