'use strict';
// retryrs for Node.js: the CommonJS entry point (index.mjs re-exports it for ESM).
const { Retrier, AttemptContext } = require('./lib/retrier');
const { RetryExhaustedError } = require('./lib/errors');
const { RetryBudget } = require('./lib/budget');
const { CircuitBreaker } = require('./lib/breaker');
const { parseRetryAfter, isRetryableStatus, classifyHttp, RETRYABLE_STATUSES } = require('./lib/http');
const { isTransientError, retryAfterFromError } = require('./lib/predicate');
const { testing } = require('./lib/clock');
const { loadPolicies, Policy, PolicyDocument, PolicyDocumentError } = require('./lib/policies');
const { DONT_RETRY } = require('./lib/codes');

module.exports = {
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
};
