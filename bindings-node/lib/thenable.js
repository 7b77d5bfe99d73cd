'use strict';
// Whether a hook's or fn's answer is a promise-like to await (any object or function with
// a `then` method), read once here for the call loop, its first attempt and hedging.

function isThenable(r) {
  return r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function';
}

module.exports = { isThenable };
