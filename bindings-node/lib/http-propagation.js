'use strict';
// The client side of propagation for the HTTP helpers (docs/propagation.md): the headers
// each attempt sends (the core's outbound set: Retryrs-Context with the attempt's time
// left and number, and the interop headers of a mesh or an RPC protocol), only to the
// hosts the helper allows; and a response's pushback ("don't retry", or an exact wait),
// read by the core. Nothing here decides a value: it hands the core what it needs.
const native = require('./native');
const ambient = require('./ambient');
const { typeName } = require('./options');
const { DONT_RETRY } = require('./codes');

const PROPAGATE_KEYS = ['hosts', 'mesh', 'kind'];

/**
 * A helper's `propagate` option: false (send nothing), true or undefined (the defaults:
 * every host, no mesh, plain HTTP), or `{ hosts, mesh, kind }`. Returns what each attempt
 * asks the core with, or null when off.
 */
function outboundOf(where, option) {
  if (option === false) return null;
  if (option === undefined || option === null || option === true) return { hosts: null, mesh: 'none', kind: 'http' };
  if (typeof option !== 'object' || Array.isArray(option)) {
    throw new TypeError(`${where}: propagate must be true, false or an object such as { hosts: ['api.internal'], mesh: 'envoy' }, got ${typeName(option)}`);
  }
  for (const key of Object.keys(option)) {
    if (!PROPAGATE_KEYS.includes(key)) throw new TypeError(`${where}: unknown key '${key}' in propagate (known: ${PROPAGATE_KEYS.join(', ')})`);
  }
  let hosts = null;
  if (option.hosts !== undefined && option.hosts !== null) {
    const given = option.hosts;
    if (typeof given === 'string' || typeof given[Symbol.iterator] !== 'function') {
      throw new TypeError(`${where}: propagate.hosts must be an array of host names such as ['api.internal', '*.svc.cluster.local'], got ${typeName(given)}`);
    }
    hosts = Array.from(given, (host) => {
      if (typeof host !== 'string') throw new TypeError(`${where}: propagate.hosts must hold strings, got ${typeName(host)}`);
      return host;
    });
  }
  const mesh = option.mesh ?? 'none';
  const kind = option.kind ?? 'http';
  for (const [name, v] of [['mesh', mesh], ['kind', kind]]) {
    if (typeof v !== 'string') throw new TypeError(`${where}: propagate.${name} must be a string, got ${typeName(v)}`);
  }
  try {
    // The core checks the names, the mesh and the kind, and says what was wrong.
    native.checkPropagation(hosts, mesh, kind);
  } catch (err) {
    throw new RangeError(`${where}: propagate: ${err.message}`);
  }
  return { hosts, mesh, kind };
}

/**
 * The headers one attempt sends to `host` (a URL's host, port included or not), as a
 * flat list [name, value, ...]; null when none (off, a host outside the allowlist, an
 * attempt with nothing left). `ctx`: the attempt's context (its number and time left).
 */
function outboundHeaders(out, host, ctx) {
  if (out === null) return null;
  const c = ambient.current();
  const flat = native.propagationHeaders(host, out.hosts, out.mesh, out.kind, ctx.remainingMs, ctx.attempt, c !== undefined && c.retry);
  return flat.length === 0 ? null : flat;
}

/**
 * A response's pushback, as the engine takes a hint: DONT_RETRY, an exact wait in ms,
 * or undefined. `headers`: a flat list [name, value, ...] of the pushback headers found.
 */
function pushbackOf(headers) {
  if (headers.length === 0) return undefined;
  const ms = native.readPushback(headers);
  if (ms === null || ms === undefined) return undefined;
  return ms < 0 ? DONT_RETRY : ms;
}

// The headers a pushback may be in (the core reads their values).
const PUSHBACK_HEADERS = native.pushbackHeaders().map((h) => h.toLowerCase());

/** The pushback headers of a response, read with `get(name)` (a value, an array or null). */
function pushbackHeadersFrom(get) {
  const flat = [];
  for (const name of PUSHBACK_HEADERS) {
    const v = get(name);
    if (v === undefined || v === null) continue;
    for (const one of Array.isArray(v) ? v : [v]) flat.push(name, String(one));
  }
  return flat;
}

/**
 * `headers` (a Headers, a plain object, pairs, a flat array or an iterable of pairs, or
 * nothing) with `extra` (flat [name, value, ...]) set over any header of the same name,
 * names compared ignoring case; the caller's object is not changed.
 */
function withHeaders(headers, extra) {
  const names = new Set();
  for (let i = 0; i < extra.length; i += 2) names.add(extra[i].toLowerCase());
  if (headers === undefined || headers === null) {
    const out = {};
    for (let i = 0; i < extra.length; i += 2) out[extra[i]] = extra[i + 1];
    return out;
  }
  if (typeof headers.get === 'function' && typeof headers.set === 'function' && typeof headers.entries === 'function') {
    const copy = new Headers(headers);
    for (let i = 0; i < extra.length; i += 2) copy.set(extra[i], extra[i + 1]);
    return copy;
  }
  if (Array.isArray(headers) && (headers.length === 0 || !Array.isArray(headers[0]))) {
    // A flat list [name, value, ...] (undici's).
    const out = [];
    for (let i = 0; i + 1 < headers.length; i += 2) if (!names.has(String(headers[i]).toLowerCase())) out.push(headers[i], headers[i + 1]);
    return out.concat(extra);
  }
  if (typeof headers[Symbol.iterator] === 'function') {
    const out = Array.from(headers).filter(([k]) => !names.has(String(k).toLowerCase()));
    for (let i = 0; i < extra.length; i += 2) out.push([extra[i], extra[i + 1]]);
    return out;
  }
  const out = {};
  for (const k of Object.keys(headers)) if (!names.has(k.toLowerCase())) out[k] = headers[k];
  for (let i = 0; i < extra.length; i += 2) out[extra[i]] = extra[i + 1];
  return out;
}

/** The host (with its port) of a URL, or '' when it has none (a relative URL). */
function hostOf(raw) {
  try {
    return new URL(raw).host;
  } catch {
    return '';
  }
}

module.exports = { outboundOf, outboundHeaders, pushbackOf, pushbackHeadersFrom, withHeaders, hostOf, PUSHBACK_HEADERS };
