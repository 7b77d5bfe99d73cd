// retryrs/fetch (ES module): re-exports the CommonJS build (./fetch.js), so both share one addon and
// one Retrier class.
import cjs from './fetch.js';

export const { retryingFetch, redactUrl, HttpRetryError, RetryableStatusError, FinalStatusError, RequestFailedError, FinalNetworkError, IDEMPOTENT_METHODS } = cjs;
export default cjs;
