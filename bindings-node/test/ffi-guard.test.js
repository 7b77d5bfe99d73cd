'use strict';
// House rule: a Rust panic never crosses the FFI boundary. Every `#[napi]` fn in src/*.rs
// (free functions, factories, constructors, methods, getters, setters) must run its whole
// body under `guard::guarded` (which catches the panic and turns it into a JS exception),
// either directly or through a helper whose own body is a `guarded(...)` call. This test
// reads the Rust source and fails on any export that does not, so the rule is enforced
// mechanically rather than by review.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');

// Helpers an export may call instead of `guarded` directly. Listing one here is not
// trusted: the test checks that the helper's own body is a single `guarded(...)` call.
const GUARD_HELPERS = ['with_slot'];

// --- A small Rust scanner -------------------------------------------------------------

/** The source with comments and the contents of string and char literals blanked out
 * (same length, newlines kept), so `#[napi]`, braces and parentheses inside them are
 * never mistaken for code. */
function mask(src) {
  const out = src.split('');
  const blank = (from, to) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      let j = src.indexOf('\n', i);
      if (j < 0) j = n;
      blank(i, j);
      i = j;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (src[j] === '/' && src[j + 1] === '*') { depth++; j += 2; }
        else if (src[j] === '*' && src[j + 1] === '/') { depth--; j += 2; }
        else j++;
      }
      blank(i, j);
      i = j;
    } else if ((c === 'r' || (c === 'b' && next === 'r')) && /^(b?r)(#*)"/.test(src.slice(i, i + 260)) && !/[\w]/.test(src[i - 1] || '')) {
      const [, prefix, hashes] = /^(b?r)(#*)"/.exec(src.slice(i, i + 260));
      const open = i + prefix.length + hashes.length + 1;
      const close = src.indexOf(`"${hashes}`, open);
      const end = close < 0 ? n : close + 1 + hashes.length;
      blank(open, end - 1 - hashes.length);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{1F600}', '"') or a lifetime ('a, 'static).
      if (next === '\\') {
        const j = src.indexOf("'", i + 3);
        blank(i + 1, j);
        i = j + 1;
      } else if (next !== undefined && src[i + 2] === "'") {
        blank(i + 1, i + 2);
        i += 3;
      } else {
        i++;
      }
    } else {
      i++;
    }
  }
  return out.join('');
}

const CLOSE = { '(': ')', '[': ']', '{': '}' };

/** The index just past the bracket that closes the one at `open` (masked source). */
function matching(code, open) {
  const stack = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c in CLOSE) stack.push(CLOSE[c]);
    else if (c === ')' || c === ']' || c === '}') {
      assert.equal(c, stack.pop(), `unbalanced ${c} at offset ${i}`);
      if (stack.length === 0) return i + 1;
    }
  }
  throw new Error(`unclosed bracket at offset ${open}`);
}

function lineOf(code, index) {
  return code.slice(0, index).split('\n').length;
}

/** Every `#[...]` attribute run starting at `i` (skipping whitespace), then the item. */
function skipAttributes(code, i) {
  const attrs = [];
  for (;;) {
    while (/\s/.test(code[i] || '')) i++;
    if (code[i] === '#' && code[i + 1] === '[') {
      const end = matching(code, i + 1);
      attrs.push(code.slice(i + 2, end - 1).trim());
      i = end;
    } else return { attrs, at: i };
  }
}

const NAPI_ATTR = /^(?:napi_derive::)?napi\s*(?:\(([\s\S]*)\))?$/;
const ITEM = /^(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern(?:\s+"[^"]*")?)\s+)*(fn|struct|enum|impl|const|type|trait|mod|static|use)\b/;

/** The `fn` items of a file, with their attributes, name, body and the `#[napi]` impl
 * block (class) they sit in, if any. */
function scanFns(src, file = '<source>') {
  const code = mask(src);
  const fns = [];
  const impls = [];
  // Every attribute-led item: walk each `#[` that starts an attribute run.
  const seen = new Set();
  for (const m of code.matchAll(/#\s*\[/g)) {
    if (seen.has(m.index)) continue;
    let { attrs, at } = skipAttributes(code, m.index);
    // Mark the attributes of this run as seen, so a run is processed once.
    for (let k = m.index; k < at; k++) if (code[k] === '#') seen.add(k);
    const napi = attrs.map((a) => NAPI_ATTR.exec(a)).find(Boolean);
    const item = ITEM.exec(code.slice(at));
    if (!item) continue;
    if (item[1] === 'impl' && napi) {
      const open = code.indexOf('{', at);
      const head = code.slice(at, open);
      const type = /(\w+)\s*(?:<[^{]*>)?\s*$/.exec(head.replace(/\bwhere\b[\s\S]*$/, ''));
      impls.push({ start: open, end: matching(code, open), class: type && type[1], trait: /\bfor\b/.test(head) });
    }
  }
  // Every fn, attributed or not (helpers are looked up by name too).
  for (const m of code.matchAll(/\bfn\s+([A-Za-z_]\w*)/g)) {
    const name = m[1];
    const paren = code.indexOf('(', m.index);
    const paramsEnd = matching(code, paren);
    const params = code.slice(paren + 1, paramsEnd - 1);
    // The body: the first `{` after the parameters (a `;` first means no body).
    let j = paramsEnd;
    while (j < code.length && code[j] !== '{' && code[j] !== ';') j++;
    const body = code[j] === '{' ? code.slice(j + 1, matching(code, j) - 1) : null;
    // The attributes directly above: walk back over whitespace and `#[...]` runs, and
    // over the visibility and qualifiers.
    const before = code.slice(0, m.index);
    const quals = /(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern(?:\s+"[^"]*")?)\s+)*$/.exec(before);
    let k = quals.index;
    const attrs = [];
    const rawAttrs = [];
    for (;;) {
      let e = k;
      while (e > 0 && /\s/.test(code[e - 1])) e--;
      if (code[e - 1] !== ']') break;
      // Find the `#[` that opens this attribute.
      let depth = 0;
      let s = e - 1;
      for (; s >= 0; s--) {
        if (code[s] === ']') depth++;
        else if (code[s] === '[') { depth--; if (depth === 0) break; }
      }
      if (s < 1 || code[s - 1] !== '#') break;
      attrs.unshift(code.slice(s + 1, e - 1).trim());
      rawAttrs.unshift(src.slice(s + 1, e - 1).trim());
      k = s - 1;
    }
    const napiAt = attrs.findIndex((a) => NAPI_ATTR.test(a));
    const napi = napiAt < 0 ? null : NAPI_ATTR.exec(attrs[napiAt]);
    const impl = impls.find((b) => m.index > b.start && m.index < b.end);
    fns.push({
      file,
      name,
      line: lineOf(code, m.index),
      exported: Boolean(napi) && !(napi[1] || '').split(',').some((o) => o.trim() === 'object'),
      napiArgs: napi ? (napi[1] || '').trim() : null,
      jsName: napiAt < 0 ? undefined : (/\bjs_name\s*=\s*"([^"]*)"/.exec(rawAttrs[napiAt]) || [])[1],
      params,
      body,
      impl,
      code,
    });
  }
  return { fns, impls };
}

/** The callee if `body` is exactly one call `path::to::callee(...)` and nothing else
 * (no statement before it, none after it), else null. */
function soleCall(body) {
  if (body === null) return null;
  const m = /^\s*((?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*)\s*\(/.exec(body);
  if (!m) return null;
  const open = m.index + m[0].length - 1;
  const end = matching(body, open);
  if (body.slice(end).trim() !== '') return null;
  return { path: m[1].replace(/\s+/g, ''), name: m[2], args: body.slice(open + 1, end - 1) };
}

/** Problems with the exports of `files` ({ name: source }); empty when all are guarded. */
function check(files, helpers = GUARD_HELPERS) {
  const all = Object.entries(files).flatMap(([file, src]) => scanFns(src, file).fns);
  const problems = [];
  const defs = (name) => all.filter((f) => f.name === name && f.body !== null && !f.impl);

  // `guarded` itself: defined once, in guard.rs, and it really catches panics.
  const guardDefs = defs('guarded');
  const guardOk = guardDefs.length === 1 && guardDefs[0].file === 'guard.rs' && /\bcatch_unwind\s*\(/.test(guardDefs[0].body);
  if (!guardOk) problems.push('fn guarded must be defined exactly once, in guard.rs, and call catch_unwind');

  // Each helper: defined once, its whole body one `guarded(...)` call that uses the
  // closure it was given.
  const goodHelpers = new Set();
  for (const name of helpers) {
    const d = defs(name);
    const call = d.length === 1 ? soleCall(d[0].body) : null;
    const closure = d.length === 1 ? /\b(\w+)\s*:\s*impl\s+FnOnce/.exec(d[0].params) : null;
    if (d.length !== 1) problems.push(`helper ${name} must be defined exactly once (found ${d.length})`);
    else if (!call || call.name !== 'guarded') problems.push(`${d[0].file}:${d[0].line}: helper ${name} does not run its whole body through guarded(...)`);
    else if (!closure || !new RegExp(`\\b${closure[1]}\\b`).test(call.args)) problems.push(`${d[0].file}:${d[0].line}: helper ${name} does not call its closure inside guarded(...)`);
    else goodHelpers.add(name);
  }

  for (const f of all.filter((x) => x.exported)) {
    const where = `${f.file}:${f.line}: #[napi${f.napiArgs ? `(${f.napiArgs})` : ''}] fn ${f.name}`;
    if (f.impl && f.impl.trait) {
      problems.push(`${where} sits in a trait impl; the checker does not know how napi calls it`);
      continue;
    }
    const call = soleCall(f.body);
    if (!call) {
      problems.push(`${where}: the body must be a single guarded(...) call (or ${helpers.join('/')}), with nothing before or after it`);
    } else if (call.name === 'guarded') {
      const imported = call.path === 'crate::guard::' || f.file === 'guard.rs' || /\buse\s+crate::guard::guarded\s*;/.test(f.code);
      if (!guardOk || !imported) problems.push(`${where}: calls a guarded that is not crate::guard::guarded`);
    } else if (!goodHelpers.has(call.name)) {
      problems.push(`${where}: calls ${call.name}(...), which is neither guarded nor a verified guard helper`);
    }
  }
  return { problems, exports: all.filter((x) => x.exported) };
}

function sources() {
  const files = {};
  for (const name of fs.readdirSync(SRC).filter((n) => n.endsWith('.rs')).sort()) {
    files[name] = fs.readFileSync(path.join(SRC, name), 'utf8');
  }
  return files;
}

/** The JS name napi-rs gives an exported fn, and where it lives on the addon. */
function jsMember(f) {
  const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  const opts = f.napiArgs || '';
  const has = (o) => new RegExp(`\\b${o}\\b`).test(opts);
  if (!f.impl) return f.jsName || camel(f.name);
  if (has('constructor')) return `${f.impl.class}()`;
  const isSelf = /(^|[\s&(])(mut\s+)?self\b/.test(f.params);
  if (has('getter')) return `${f.impl.class}#get ${f.jsName || camel(f.name.replace(/^get_/, ''))}`;
  if (has('setter')) return `${f.impl.class}#set ${f.jsName || camel(f.name.replace(/^set_/, ''))}`;
  return `${f.impl.class}${isSelf ? '#' : '.'}${f.jsName || camel(f.name)}`;
}

// --- The tests ------------------------------------------------------------------------

test('every #[napi] fn in src/*.rs runs its whole body under the panic guard', () => {
  const { problems, exports } = check(sources());
  assert.deepEqual(problems, [], `unguarded exports (a panic there would cross the FFI boundary):\n${problems.join('\n')}`);
  assert.ok(exports.length >= 20, `only ${exports.length} exports found: the scanner is broken`);
});

test('the scanner sees every function, method and accessor the addon exports', () => {
  // Guards the checker against missing an export it cannot parse: what it found must be
  // exactly what napi-rs registered.
  const native = require('../lib/native');
  const onAddon = new Set();
  for (const [name, value] of Object.entries(native)) {
    if (typeof value !== 'function') continue;
    if (!/^[A-Z]/.test(name)) { onAddon.add(name); continue; }
    for (const key of Object.getOwnPropertyNames(value)) {
      if (['length', 'name', 'arguments', 'caller', 'prototype'].includes(key)) continue;
      if (typeof value[key] === 'function') onAddon.add(`${name}.${key}`);
    }
    for (const [key, d] of Object.entries(Object.getOwnPropertyDescriptors(value.prototype))) {
      if (key === 'constructor') continue;
      if (d.get) onAddon.add(`${name}#get ${key}`);
      if (d.set) onAddon.add(`${name}#set ${key}`);
      if (typeof d.value === 'function') onAddon.add(`${name}#${key}`);
    }
  }
  const scanned = new Set(check(sources()).exports.map(jsMember).filter((m) => !m.endsWith('()')));
  const missed = [...onAddon].filter((m) => !scanned.has(m)).sort();
  assert.deepEqual(missed, [], 'exported by the addon but not seen by the checker (a `pub` field of a #[napi] class also shows up here; make it a guarded getter)');
  const phantom = [...scanned].filter((m) => !onAddon.has(m)).sort();
  assert.deepEqual(phantom, [], 'seen by the checker but not exported by the addon (is retryrs.node stale?)');
});

// The checker checks itself: fed Rust source, it must flag each way of leaving a body
// unguarded, and accept the guarded forms.
const GUARD_RS = `
use std::panic::{catch_unwind, AssertUnwindSafe};
pub fn guarded<T>(f: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(napi::Error::from_reason("x")))
}
`;

const WITH_SLOT = `
fn with_slot<T>(id: f64, f: impl FnOnce(&mut Slot) -> napi::Result<T>) -> napi::Result<T> {
    guarded(|| SLOTS.with(|s| f(&mut s.borrow_mut()[id as usize])))
}`;

/** The checker's problems with `body`, next to a guard.rs and a with_slot helper. */
function checkOne(body, helper = WITH_SLOT) {
  const lib = `use napi_derive::napi;\nuse crate::guard::guarded;\n${helper}\n${body}\n`;
  return check({ 'guard.rs': GUARD_RS, 'lib.rs': lib }, ['with_slot']).problems;
}

test('self-test: the checker flags unguarded exports', () => {
  const flagged = {
    'a plain fn': `#[napi]\npub fn is_on() -> bool {\n    testing::is_on()\n}`,
    'a getter': `#[napi]\nimpl Budget {\n    /// Tokens.\n    #[napi(getter)]\n    pub fn tokens(&self) -> f64 {\n        self.inner.tokens()\n    }\n}`,
    'a factory': `#[napi]\nimpl Budget {\n    #[napi(factory)]\n    pub fn create(n: f64) -> napi::Result<Self> {\n        Ok(Budget::new(n))\n    }\n}`,
    'work before the guard': `#[napi]\npub fn create(b: Option<&Budget>) -> napi::Result<u32> {\n    let b = b.map(|b| b.inner.clone());\n    guarded(|| Ok(build(b)))\n}`,
    'work after the guard': `#[napi]\npub fn f() -> napi::Result<u32> {\n    let n = guarded(|| Ok(1))?;\n    Ok(n + v[9])\n}`,
    'a guarded call inside something else': `#[napi]\npub fn f() -> napi::Result<u32> {\n    Ok(guarded(|| Ok(1))? + 1)\n}`,
    'an unknown helper': `#[napi]\npub fn f(id: f64) -> napi::Result<u32> {\n    with_lock(id, |s| Ok(s.n))\n}\nfn with_lock<T>(id: f64, f: impl FnOnce(&mut S) -> napi::Result<T>) -> napi::Result<T> {\n    guarded(|| f(&mut get(id)))\n}`,
    'a fn with extra attributes and qualifiers': `#[napi(js_name = "go")]\n#[allow(clippy::all)]\npub async fn go() -> u32 {\n    1\n}`,
    'a method in a class': `#[napi]\nimpl Budget {\n    #[napi]\n    pub fn take(&mut self, n: u32) -> napi::Result<bool> {\n        Ok(self.inner.take(n))\n    }\n}`,
  };
  for (const [what, src] of Object.entries(flagged)) {
    const problems = checkOne(src);
    assert.equal(problems.length, 1, `${what} should be flagged once, got: ${JSON.stringify(problems)}`);
  }
  // A helper named in the list but not guarded itself is caught at the helper, and the
  // export that relies on it too.
  const fake = `fn with_slot<T>(id: f64, f: impl FnOnce(&mut Slot) -> napi::Result<T>) -> napi::Result<T> {\n    SLOTS.with(|s| f(&mut s.borrow_mut()[id as usize]))\n}`;
  const problems = checkOne(`#[napi]\npub fn a(id: f64) -> napi::Result<u32> {\n    with_slot(id, |s| Ok(s.n))\n}`, fake);
  assert.equal(problems.length, 2, JSON.stringify(problems));
  assert.match(problems[0], /helper with_slot does not run its whole body through guarded/);
  // A helper that guards something but calls the closure outside the guard.
  const leaky = `fn with_slot<T>(id: f64, f: impl FnOnce(&mut Slot) -> napi::Result<T>) -> napi::Result<T> {\n    guarded(|| Ok(()))\n}`;
  assert.match(checkOne('', leaky).join('\n'), /does not call its closure inside guarded/);
  // A guard that does not catch anything.
  const noCatch = check({ 'guard.rs': 'pub fn guarded<T>(f: impl FnOnce() -> T) -> T { f() }', 'lib.rs': 'use crate::guard::guarded;' }, []).problems;
  assert.match(noCatch.join('\n'), /call catch_unwind/);
});

test('self-test: the checker accepts guarded exports and ignores what is not an exported fn', () => {
  const src = `
/// Not an export: #[napi] pub fn in_a_comment() -> bool { true }
const NOTE: &str = "#[napi] pub fn in_a_string() -> bool { true }";
const BRACE: char = '{';
#[napi(object)]
pub struct Options { pub name: Option<String> }
#[napi]
pub struct Budget { inner: u32 }
#[napi]
impl Budget {
    #[napi(factory)]
    pub fn create(n: f64, b: Option<&Budget>) -> napi::Result<Self> {
        guarded(|| Ok(Budget { inner: b.map_or(n as u32, |b| b.inner) }))
    }
    #[napi(getter)]
    pub fn tokens(&self) -> napi::Result<f64> {
        crate::guard::guarded(|| Ok(f64::from(self.inner)))
    }
    fn not_exported(&self) -> u32 { self.inner }
}
#[napi]
pub fn attempt<'a>(id: f64) -> napi::Result<u32> {
    with_slot(id, |s| Ok(s.attempt()))
}
fn private_helper() -> u32 { 1 }
`;
  assert.deepEqual(checkOne(src), []);
  const names = check({ 'guard.rs': GUARD_RS, 'lib.rs': src + WITH_SLOT }).exports.map((f) => f.name);
  assert.deepEqual(names, ['create', 'tokens', 'attempt']);
});
