'use strict';
// Policy documents: loadPolicies hands the document to the core's loader (the same one
// Rust, Python and C use) and returns its policies by name. Nothing here parses or
// validates a document; see docs/policies.md for the format.
const native = require('./native');
const { wrapBudget } = require('./budget');
const { typeName } = require('./options');

// The knob table, in Node's spelling: a Policy's getters are derived from it.
const KNOBS = native.knobs();
const parts = new WeakMap();

/** Where and what: a document that could not be loaded. */
class PolicyDocumentError extends Error {
  constructor(info) {
    super(info.message);
    this.name = 'PolicyDocumentError';
    /** The path in the document (`policies.payments.initialDelay` is `policies.payments.initial_delay`). */
    this.path = info.path;
    this.line = info.line ?? null;
    this.column = info.column ?? null;
    this.file = info.file ?? null;
  }
}

/** A named policy from a document: read-only; it answers its knobs (ms for durations). */
class Policy {
  constructor() {
    throw new TypeError('Policy objects come from loadPolicies()');
  }

  /** A gRPC policy's retryableStatusCodes (a hedging one's nonFatalStatusCodes) as names; null otherwise. */
  get grpcStatusCodes() {
    return policyParts(this).handle.grpcStatusCodes() ?? null;
  }

  /**
   * The verdict on a gRPC status (a number such as 14, or a name such as 'UNAVAILABLE') by
   * the policy's status codes: 'success', 'transient' (listed) or 'permanent'.
   */
  grpcVerdict(status) {
    const { handle } = policyParts(this);
    if (typeof status === 'number') return handle.grpcVerdict(status, undefined);
    if (typeof status === 'string') return handle.grpcVerdict(undefined, status);
    throw new TypeError(`grpcVerdict: a gRPC status is a number or a name, got ${typeName(status)}`);
  }
}

// Where each numeric knob's value sits in a native row.
const NUMERIC_INDEX = new Map(KNOBS.filter((k) => k.numeric).map((k, i) => [k.name, i]));

function knobValue(row, budget, k) {
  if (k.numeric) return row.numbers[NUMERIC_INDEX.get(k.name)] ?? null;
  switch (k.unit) {
    case 'jitter':
      return row.jitter;
    case 'text':
      return row.name;
    case 'seed':
      return row.seed ?? null;
    case 'budget':
      return budget;
    default:
      return undefined;
  }
}

function makePolicy(row, loaded, budget) {
  // Plain assignments, then freeze: defineProperty per knob cost more than the core's load.
  const policy = Object.create(Policy.prototype);
  for (const k of KNOBS) policy[k.option] = knobValue(row, budget, k);
  // The native policy a Retrier runs is made on first use: loading 10,000 policies
  // should not register 10,000 native handles nobody asked for.
  parts.set(policy, { loaded, key: row.key, handle: undefined, hasBudget: budget !== null });
  return Object.freeze(policy);
}

/** The native policy behind a Policy ({ handle, hasBudget }), or undefined for anything else. */
function policyParts(policy) {
  const p = parts.get(policy);
  if (p === undefined) return undefined;
  if (p.handle === undefined) p.handle = p.loaded.policy(p.key);
  return { handle: p.handle, hasBudget: p.hasBudget };
}

/**
 * A loaded policy document: a Map of name to Policy, with the loader's `warnings` (valid
 * input that is probably not meant, such as a gRPC tokenRatio that A6's three decimals
 * make 0) and `forMethod`, gRPC's lookup. Read it; it is not meant to be changed.
 */
class PolicyDocument extends Map {
  #loaded;
  constructor(entries, loaded) {
    super(entries);
    this.#loaded = loaded;
    /** The loader's warnings, in document order, each starting with its path. */
    this.warnings = Object.freeze(loaded.warnings);
  }

  /**
   * The name of the policy a call to `method` of `service` runs under, looked up as gRPC
   * looks up a method config: `service/method`, then `service`, then `default`; null when
   * none is in the document (for a gRPC service config: one attempt). The core's lookup.
   * @param {string} service
   * @param {string} [method]
   */
  methodKey(service, method = '') {
    if (typeof service !== 'string') throw new TypeError(`service must be a string, got ${typeof service}`);
    if (typeof method !== 'string') throw new TypeError(`method must be a string, got ${typeof method}`);
    return this.#loaded.methodKey(service, method) ?? null;
  }

  /** The Policy of methodKey(service, method), or null. */
  forMethod(service, method = '') {
    const key = this.methodKey(service, method);
    return key === null ? null : this.get(key);
  }

  static get [Symbol.species]() {
    return Map;
  }
}

/**
 * Loads a policy document: a path, the JSON text itself (a string starting with `{`), or
 * an object as JSON.parse would give. Returns a PolicyDocument (a Map of name to Policy);
 * throws PolicyDocumentError.
 * @param {string | object} source
 */
function loadPolicies(source) {
  let text = null;
  let file = null;
  if (typeof source === 'string') {
    const first = source.trimStart()[0];
    if (first === '{' || first === '[') text = source;
    else file = source;
  } else if (source instanceof URL) {
    file = require('node:url').fileURLToPath(source);
  } else if (typeof source === 'object' && source !== null) {
    // An object is handed over as the JSON it stands for; the core reads it.
    try {
      text = JSON.stringify(source);
    } catch (err) {
      throw new PolicyDocumentError({ message: `document: not JSON data: ${err.message}`, path: 'document' });
    }
  } else {
    throw new TypeError(`loadPolicies needs a path, a JSON string or an object, got ${source === null ? 'null' : typeof source}`);
  }
  const loaded = native.NativePolicies.load(text, file);
  const error = loaded.error;
  if (error) throw new PolicyDocumentError(error);
  const budgets = new Map();
  const out = [];
  for (const row of loaded.rows()) {
    let budget = null;
    if (row.budget !== null && row.budget !== undefined) {
      if (!budgets.has(row.budget)) budgets.set(row.budget, wrapBudget(loaded.budget(row.budget)));
      budget = budgets.get(row.budget);
    }
    out.push([row.key, makePolicy(row, loaded, budget)]);
  }
  return new PolicyDocument(out, loaded);
}

module.exports = { loadPolicies, Policy, PolicyDocument, PolicyDocumentError, policyParts };
