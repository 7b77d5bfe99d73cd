'use strict';
// Events as a listener sees them: the engine's records translated into Node's shape,
// and a listener's throw reported without changing the call.
const { describe } = require('./errors');

/** Reports a listener's throw on Node's warning channel; the call goes on unchanged. */
function reportListenerError(err) {
  const warning = new Error(`retryrs: an onEvent listener threw: ${describe(err)}`, { cause: err });
  warning.name = 'RetryrsListenerError';
  process.emitWarning(warning);
}

module.exports = { reportListenerError };
