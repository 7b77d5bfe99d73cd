'use strict';
// Native validation errors (code InvalidArg, message already in Node's option names) are
// rethrown as RangeError, the Node idiom for a value out of range. Anything else is a bug
// and propagates as it is.
function rethrowProblem(err, prefix = '') {
  if (err && err.code === 'InvalidArg') {
    throw new RangeError(prefix + err.message);
  }
  throw err;
}

module.exports = { rethrowProblem };
