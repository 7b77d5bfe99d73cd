// retryrs/propagation (ES module): re-exports the CommonJS build (./propagation.js), so
// both share one addon, one Retrier class and one request context.
import cjs from './propagation.js';

export const { middleware, wrap, run, current, PropagationContext } = cjs;
export default cjs;
