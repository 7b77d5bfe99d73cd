'use strict';
// Every message the engine words names options as a Node user writes them (camelCase,
// `Ms` on durations, times in ms): the core renders each in Node's spelling from its
// knob table. One case per message kind: a knob's rule (every numeric knob of the
// table), the deadline hint, the exhaustion reasons that name a knob, and the budget's,
// breaker's and hedge's own settings.
const test = require('node:test');
const assert = require('node:assert/strict');
const { inspect } = require('node:util');
const { Retrier, RetryBudget, CircuitBreaker, RetryExhaustedError } = require('..');
const native = require('../lib/native');
const { flaky, transient } = require('./helpers');

const KNOBS = native.knobs();
// The contract's snake_case spelling of every knob and setting: none may reach a Node user.
const SNAKE = new Set([
  ...KNOBS.map((k) => k.name),
  'max_tokens', 'token_ratio', 'ttl', 'min_retries_per_sec', 'percent_can_retry', 'failures', 'failure_ratio',
  'minimum_throughput', 'sampling_duration', 'minimum_calls', 'window_size', 'break_duration', 'half_open_probes',
  'break_multiplier', 'max_break_duration', 'slow_call_duration', 'slow_call_ratio', 'deadline_ms',
].filter((n) => n.includes('_')));

function assertNodeSpelling(message, expected) {
  for (const word of message.match(/\b[a-z]+(?:_[a-z]+)+\b/g) ?? []) {
    assert.ok(!SNAKE.has(word), `'${word}' is the contract's spelling, not Node's: ${message}`);
  }
  for (const part of expected) assert.ok(message.includes(part), `expected ${JSON.stringify(part)} in: ${message}`);
}

function messageOf(fn) {
  try {
    fn();
  } catch (e) {
    return e.message;
  }
  assert.fail('expected an error');
}

test('a broken knob rule names every numeric knob of the table as Node spells it', () => {
  const bad = { count: 0, duration: -1, factor: 0.5 };
  const numeric = KNOBS.filter((k) => k.numeric);
  assert.ok(numeric.length >= 7, 'the table has its numeric knobs');
  for (const k of numeric) {
    const message = messageOf(() => new Retrier({ [k.option]: bad[k.unit] }));
    assertNodeSpelling(message, [`${k.option} must be`]);
    if (k.unit === 'duration') assert.ok(k.option.endsWith('Ms'), k.option);
  }
  // A rule between two knobs names both.
  assertNodeSpelling(messageOf(() => new Retrier({ initialDelayMs: 2000, maxDelayMs: 1000 })), ['maxDelayMs must be >= initialDelayMs', 'initialDelayMs is 2000']);
  assertNodeSpelling(messageOf(() => new Retrier({ initialDelayMs: 9000 })), ['initialDelayMs', 'maxDelayMs']);
});

test('the deadline hint names maxAttempts and deadlineMs, in ms', async () => {
  const tight = new Retrier({ maxAttempts: 10, deadlineMs: 15_000 });
  const hint = 'maxAttempts=10 needs up to 26200 ms of backoff waits (before jitter), deadlineMs is 15000 ms: raise deadlineMs or lower maxAttempts';
  assert.ok(inspect(tight).includes(hint), inspect(tight));
  const short = new Retrier({ maxAttempts: 10, initialDelayMs: 200, maxDelayMs: 200, jitter: 'none', deadlineMs: 300 });
  const e = await short.call(flaky(20)).catch((err) => err);
  assert.ok(e instanceof RetryExhaustedError && e.reason === 'deadline');
  assertNodeSpelling(e.message, ['(deadlineMs reached)', 'raise deadlineMs or lower maxAttempts', '300 ms']);
});

test('exhaustion names the limit as Node spells it', async () => {
  const fast = { initialDelayMs: 0, maxDelayMs: 0 };
  const attempts = await new Retrier({ ...fast, maxAttempts: 2 }).call(flaky(5)).catch((err) => err);
  assert.equal(attempts.reason, 'attempts');
  assertNodeSpelling(attempts.message, ['gave up after 2 attempts (maxAttempts reached)']);
  const capped = new Retrier({ ...fast, maxRetryAfterMs: 100, retryAfterMs: () => 500 });
  const hinted = await capped.call(() => { throw transient(); }).catch((err) => err);
  assert.equal(hinted.reason, 'retry_after');
  assertNodeSpelling(hinted.message, ['server asked to wait longer than maxRetryAfterMs']);
});

test('budget settings are named as Node spells them, durations in ms', () => {
  assertNodeSpelling(messageOf(() => new RetryBudget(10, 20)), ['tokenRatio must be > 0 and <= maxTokens, got 20']);
  assertNodeSpelling(messageOf(() => new RetryBudget(0, 0.1)), ['maxTokens must be']);
  assertNodeSpelling(messageOf(() => RetryBudget.ratio({ ttlMs: 500 })), ['ttlMs must be in [1 s, 60 s], got 500 ms']);
  assertNodeSpelling(messageOf(() => RetryBudget.ratio({ percentCanRetry: -1 })), ['percentCanRetry must be']);
});

test('breaker settings are named as Node spells them, durations in ms', () => {
  assertNodeSpelling(messageOf(() => new CircuitBreaker({ breakDurationMs: 0 })), ['breakDurationMs must be >= 1 ms and <= 1 day, got 0 ms']);
  assertNodeSpelling(messageOf(() => new CircuitBreaker({ breakDurationMs: 5000, maxBreakDurationMs: 10 })), ['maxBreakDurationMs must be >= breakDurationMs']);
  assertNodeSpelling(messageOf(() => new CircuitBreaker({ model: 'sampling', samplingDurationMs: 10 })), ['samplingDurationMs must be >= 500 ms']);
  assertNodeSpelling(messageOf(() => new CircuitBreaker({ model: 'sampling', failureRatio: 2 })), ['failureRatio must be']);
  assertNodeSpelling(messageOf(() => new CircuitBreaker({ model: 'count', slowCallDurationMs: 1000, slowCallRatio: 2 })), ['slowCallRatio must be']);
});

test('hedge settings are named as Node spells them', () => {
  assertNodeSpelling(messageOf(() => new Retrier({ hedge: { maxAttempts: 99, delayMs: 5 } })), ['hedge.maxAttempts must be']);
  assertNodeSpelling(messageOf(() => new Retrier({ hedge: { maxAttempts: 3, delayMs: -1 } })), ['hedge.delayMs must be']);
  assertNodeSpelling(
    messageOf(() => new Retrier({ hedge: { maxAttempts: 3, delayMs: 'adaptive', floorMs: 50, ceilingMs: 10 } })),
    ['hedge.ceilingMs must be >= floorMs'],
  );
});
