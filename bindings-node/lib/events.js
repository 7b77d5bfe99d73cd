'use strict';
// Events as a listener sees them: the engine's records translated into Node's shape,
// and a listener's throw (or its returned promise's rejection) reported without changing
// the call.
const { describe } = require('./errors');

/** Reports a listener's throw on Node's warning channel; the call goes on unchanged. */
function reportListenerError(err) {
  const warning = new Error(`retryrs: an onEvent listener threw: ${describe(err)}`, { cause: err });
  warning.name = 'RetryrsListenerError';
  process.emitWarning(warning);
}

/**
 * Hands one event to a listener. An `async` listener's rejection is caught and reported
 * like a throw: left alone it would be an unhandled rejection, which ends the process
 * under Node's default mode although the call itself succeeded.
 */
function deliver(listener, event) {
  try {
    const r = listener(event);
    if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function') {
      Promise.resolve(r).then(undefined, reportListenerError);
    }
  } catch (err) {
    reportListenerError(err);
  }
}

/**
 * onEvent as given (a function or an array of functions) made into one listener that
 * never throws and never leaves a rejection unhandled; undefined stays undefined.
 */
function listenerOf(onEvent) {
  if (onEvent === undefined) return undefined;
  if (typeof onEvent === 'function') return (event) => deliver(onEvent, event);
  const all = [...onEvent];
  return (event) => {
    for (const listener of all) deliver(listener, event);
  };
}

module.exports = { reportListenerError, deliver, listenerOf };
