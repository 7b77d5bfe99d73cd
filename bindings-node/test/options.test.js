'use strict';
// Options are validated once at construction: a bad one throws RangeError (out of range,
// checked by the engine) or TypeError (wrong JS type), naming the option.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retrier, RetryBudget } = require('..');

function throwsNaming(options, Kind, name, fragment) {
  assert.throws(() => new Retrier(options), (err) => {
    assert.ok(err instanceof Kind, `${err.name}: ${err.message} should be a ${Kind.name}`);
    assert.ok(err.message.includes(name), `"${err.message}" names ${name}`);
    if (fragment) assert.ok(err.message.includes(fragment), `"${err.message}" includes ${fragment}`);
    return true;
  });
}

test('out-of-range options throw RangeError naming the option and the value', () => {
  throwsNaming({ maxAttempts: 0 }, RangeError, 'maxAttempts', 'got 0');
  throwsNaming({ maxAttempts: 2.5 }, RangeError, 'maxAttempts', '2.5');
  throwsNaming({ maxAttempts: -3 }, RangeError, 'maxAttempts', '-3');
  throwsNaming({ maxAttempts: 2 ** 40 }, RangeError, 'maxAttempts');
  throwsNaming({ initialDelayMs: -1 }, RangeError, 'initialDelayMs', '-1');
  throwsNaming({ initialDelayMs: NaN }, RangeError, 'initialDelayMs', 'NaN');
  throwsNaming({ maxDelayMs: Infinity }, RangeError, 'maxDelayMs');
  throwsNaming({ initialDelayMs: 2000, maxDelayMs: 1000 }, RangeError, 'maxDelayMs', 'initialDelayMs is 2000');
  throwsNaming({ multiplier: 0.5 }, RangeError, 'multiplier', '0.5');
  throwsNaming({ jitter: 'gaussian' }, RangeError, 'jitter', 'gaussian');
  throwsNaming({ jitter: 'proportional(1.5)' }, RangeError, 'jitter');
  throwsNaming({ deadlineMs: -5 }, RangeError, 'deadlineMs', '-5');
  throwsNaming({ seed: -1 }, RangeError, 'seed');
  throwsNaming({ seed: 1.5 }, RangeError, 'seed');
  throwsNaming({ seed: 2n ** 64n }, RangeError, 'seed');
  throwsNaming({ attemptTimeoutMs: 0 }, RangeError, 'attemptTimeoutMs');
  throwsNaming({ attemptTimeoutMs: -1 }, RangeError, 'attemptTimeoutMs', '-1');
  throwsNaming({ attemptTimeoutMs: 1e16 }, RangeError, 'attemptTimeoutMs', 'got 10000000000000000');
  // Past setTimeout's longest timer it is armed in chunks, as the deadline is.
  new Retrier({ attemptTimeoutMs: 2 ** 31 });
});

test('the value in a RangeError is spelt as JavaScript prints it', () => {
  // Not the engine's saturated u64 (18446744073709551615), nor Rust's `inf` or a
  // 300-digit expansion of 1e300.
  throwsNaming({ maxAttempts: 1e300 }, RangeError, 'maxAttempts', 'got 1e+300');
  throwsNaming({ maxAttempts: Infinity }, RangeError, 'maxAttempts', 'got Infinity');
  throwsNaming({ initialDelayMs: Infinity }, RangeError, 'initialDelayMs', 'got Infinity');
  throwsNaming({ deadlineMs: -Infinity }, RangeError, 'deadlineMs', 'got -Infinity');
  throwsNaming({ initialDelayMs: 1e300, maxDelayMs: 1e300 }, RangeError, 'initialDelayMs', 'got 1e+300');
  throwsNaming({ initialDelayMs: -1e-7 }, RangeError, 'initialDelayMs', 'got -1e-7');
});

test('options of the wrong type throw TypeError naming the option', () => {
  throwsNaming({ maxAttempts: '3' }, TypeError, 'maxAttempts', 'string');
  throwsNaming({ initialDelayMs: null }, TypeError, 'initialDelayMs', 'null');
  throwsNaming({ jitter: 3 }, TypeError, 'jitter');
  throwsNaming({ deadlineMs: '1s' }, TypeError, 'deadlineMs');
  throwsNaming({ name: 42 }, TypeError, 'name');
  throwsNaming({ seed: '42' }, TypeError, 'seed');
  throwsNaming({ budget: { maxTokens: 10 } }, TypeError, 'budget');
  throwsNaming({ shouldRetry: true }, TypeError, 'shouldRetry');
  throwsNaming({ retryAfterMs: 5 }, TypeError, 'retryAfterMs');
  throwsNaming({ onEvent: 'log' }, TypeError, 'onEvent');
  throwsNaming({ attemptTimeoutMs: '5' }, TypeError, 'attemptTimeoutMs');
  throwsNaming({ maxAttempt: 3 }, TypeError, 'maxAttempt');
  assert.throws(() => new Retrier('fast'), TypeError);
});

test('budget numbers are checked by the engine, named in Node spelling', () => {
  assert.throws(() => new RetryBudget(0, 0.1), { name: 'RangeError', message: /maxTokens/ });
  assert.throws(() => new RetryBudget(10, 11), { name: 'RangeError', message: /tokenRatio must be > 0 and <= maxTokens/ });
  assert.throws(() => new RetryBudget('10', 1), { name: 'TypeError', message: /maxTokens/ });
});

test('valid edge values are accepted and the defaults apply', () => {
  const r = new Retrier({ maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1, jitter: 'proportional(1)', deadlineMs: null, seed: 2n ** 64n - 1n });
  assert.equal(r.name, 'retry');
  assert.equal(new Retrier({ name: 'rates' }).name, 'rates');
  assert.equal(new Retrier().name, 'retry');
  new Retrier({ budget: null, seed: null, attemptTimeoutMs: null, onEvent: undefined });
});

test('options are read once: changing the object afterwards changes nothing', async () => {
  const options = { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 };
  const r = new Retrier(options);
  options.maxAttempts = 5;
  let calls = 0;
  await assert.rejects(r.call(() => {
    calls += 1;
    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  }), { name: 'RetryExhaustedError', attempts: 1 });
  assert.equal(calls, 1);
});

test('call() rejects a non-function and a bad signal with TypeError', async () => {
  const r = new Retrier();
  await assert.rejects(r.call('nope'), TypeError);
  await assert.rejects(r.call(() => 1, { signal: {} }), { name: 'TypeError', message: /signal/ });
  await assert.rejects(r.call(() => 1, 5), TypeError);
});
