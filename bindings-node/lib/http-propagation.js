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
// The defaults' mesh and request kind, as the core numbers them.
const DEFAULT_MODE = native.propagationOutboundMode('none', 'http');

/**
 * A helper's `propagate` option: false (send nothing), true or undefined (the defaults:
 * every host, no mesh, plain HTTP), or `{ hosts, mesh, kind }`. Returns what each attempt
 * asks the core with, or null when off.
 */
function outboundOf(where, option) {
  if (option === false) return null;
  if (option === undefined || option === null || option === true) return { allow: null, mode: DEFAULT_MODE };
  if (typeof option !== 'object' || Array.isArray(option)) {
    throw new TypeError(`${where}: propagate must be true, false or an object such as { hosts: ['api.internal'], mesh: 'envoy' }, got ${typeName(option)}`);
  }
  for (const key of Object.keys(option)) {
    if (!PROPAGATE_KEYS.includes(key)) throw new TypeError(`${where}: unknown key '${key}' in propagate (known: ${PROPAGATE_KEYS.join(', ')})`);
  }
  let allow = null;
  if (option.hosts !== undefined && option.hosts !== null) {
    const given = option.hosts;
    if (typeof given === 'string' || typeof given[Symbol.iterator] !== 'function') {
      throw new TypeError(`${where}: propagate.hosts must be an array of host names such as ['api.internal', '*.svc.cluster.local'], got ${typeName(given)}`);
    }
    const hosts = Array.from(given, (host) => {
      if (typeof host !== 'string') throw new TypeError(`${where}: propagate.hosts must hold strings, got ${typeName(host)}`);
      return host;
    });
    try {
      allow = new native.NativeAllowlist(hosts);
    } catch (err) {
      throw new RangeError(`${where}: propagate.hosts: ${err.message}`);
    }
  }
  const mesh = option.mesh ?? 'none';
  const kind = option.kind ?? 'http';
  for (const [name, v] of [['mesh', mesh], ['kind', kind]]) {
    if (typeof v !== 'string') throw new TypeError(`${where}: propagate.${name} must be a string, got ${typeName(v)}`);
  }
  let mode;
  try {
    // The core checks the spellings (and says what it takes).
    mode = native.propagationOutboundMode(mesh, kind);
  } catch (err) {
    throw new RangeError(`${where}: propagate.${err.message}`);
  }
  return { allow, mode };
}

/**
 * The headers one attempt sends to `url` (a string or a URL), as a flat list
 * [name, value, ...]; null when none (off, a host outside the allowlist, an attempt with
 * nothing left). `ctx`: the attempt's context (its number and time left now). Asked on
 * every attempt of every helper: the URL is parsed only when an allowlist is set, and the
 * core answers in the flat shape the helpers use (src/propagation_node.rs).
 */
function outboundHeaders(out, url, ctx) {
  if (out === null || !mayReceive(out, url)) return null;
  const c = ambient.current();
  const flat = native.propagationOutboundFlat(ctx.remainingMs, ctx.attempt, c !== undefined && c.retry, out.mode);
  return flat.length === 0 ? null : flat;
}

/** Whether `url` (a string or a URL) may receive the headers: its host is allowed, or no allowlist is set. */
function mayReceive(out, url) {
  return out.allow === null || out.allow.allows(hostOf(url));
}

/**
 * `headers` (a plain object, or a flat [name, value, ...] list as undici dispatches them)
 * without the headers of `sent` (a flat list, as outboundHeaders gives), names compared
 * ignoring case; the caller's object is not changed. What a request a client sends on
 * its own, following a redirect to a host outside the allowlist, carries: a client that
 * follows redirects copies the first request's headers to every hop.
 */
function withoutHeaders(headers, sent) {
  const names = new Set();
  for (let i = 0; i < sent.length; i += 2) names.add(sent[i].toLowerCase());
  if (headers === undefined || headers === null) return headers;
  if (Array.isArray(headers)) {
    const out = [];
    for (let i = 0; i + 1 < headers.length; i += 2) if (!names.has(String(headers[i]).toLowerCase())) out.push(headers[i], headers[i + 1]);
    return out;
  }
  const out = {};
  for (const k of Object.keys(headers)) if (!names.has(k.toLowerCase())) out[k] = headers[k];
  return out;
}

/**
 * A response's pushback (the core's reading of its headers, [name, value] pairs), as the
 * engine takes a hint: DONT_RETRY, an exact wait in ms, or undefined. Asked only of a
 * response the rules would retry.
 */
function pushbackOf(pairs) {
  const ms = native.propagationReadPushback(pairs);
  if (ms === null || ms === undefined) return undefined;
  return ms < 0 ? DONT_RETRY : ms;
}

/** A headers object's (node:http's, undici's, axios's, got's) [name, value] pairs. */
function pairsOf(headers) {
  const pairs = [];
  if (headers === undefined || headers === null) return pairs;
  if (typeof headers.entries === 'function' && typeof headers.get === 'function' && !(typeof headers.toJSON === 'function' && typeof headers.normalize === 'function')) {
    for (const [k, v] of headers.entries()) pairs.push([k, v]);
    return pairs;
  }
  // A plain object (an AxiosHeaders included: its headers are own properties).
  for (const [k, v] of Object.entries(typeof headers.toJSON === 'function' ? headers.toJSON() : headers)) {
    if (v === undefined || v === null) continue;
    for (const one of Array.isArray(v) ? v : [v]) pairs.push([k, String(one)]);
  }
  return pairs;
}

/**
 * `headers` (a Headers, a plain object, pairs, a flat array or an iterable of pairs, or
 * nothing) with `extra` (a flat [name, value, ...] list) set over any header of the same
 * name, names compared ignoring case; the caller's object is not changed.
 */
function withHeaders(headers, extra) {
  if (headers === undefined || headers === null) {
    const out = {};
    for (let i = 0; i < extra.length; i += 2) out[extra[i]] = extra[i + 1];
    return out;
  }
  const names = new Set();
  for (let i = 0; i < extra.length; i += 2) names.add(extra[i].toLowerCase());
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

/** The host (with its port) of a URL (a string or a URL), or '' when it has none (a relative URL). */
function hostOf(url) {
  if (url instanceof URL) return url.host;
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

module.exports = { outboundOf, outboundHeaders, mayReceive, withoutHeaders, pushbackOf, pairsOf, withHeaders };
