// retryrs for Node.js: the ES module entry point. It re-exports the CommonJS build so
// both entry points share one addon, one class identity and one virtual clock.
import cjs from './index.js';

export const {
  Retrier,
  AttemptContext,
  RetryExhaustedError,
  RetryBudget,
  CircuitBreaker,
  parseRetryAfter,
  isRetryableStatus,
  classifyHttp,
  RETRYABLE_STATUSES,
  isTransientError,
  retryAfterFromError,
  DONT_RETRY,
  testing,
  loadPolicies,
  Policy,
  PolicyDocument,
  PolicyDocumentError,
} = cjs;
export default cjs;
