'use strict';
// docs/policies.schema.json against the loader, with a JavaScript validator (ajv, draft
// 2020-12, patterns as ECMA-262 RegExps): every document of tests/policies/schema_cases.json
// gets the loader's verdict from the schema, except the rules JSON Schema cannot state
// (schema_cannot, listed in docs/policies.md), which the schema accepts. The loader's own
// verdicts are checked here too (and in Rust); Python's jsonschema checks the same list.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const Ajv2020 = require('ajv/dist/2020');
const { loadPolicies, PolicyDocumentError } = require('..');
const { sharedTests } = require('./helpers');

const ROOT = path.join(sharedTests('policies'), '..', '..');
const SCHEMA = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs', 'policies.schema.json'), 'utf8'));
const CASES = JSON.parse(fs.readFileSync(path.join(sharedTests('policies'), 'schema_cases.json'), 'utf8')).cases;

// strict: an unknown keyword or a pattern RegExp cannot compile is an error, not a warning.
const validate = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true }).compile(SCHEMA);

function loads(text) {
  try {
    loadPolicies(text);
    return true;
  } catch (err) {
    if (!(err instanceof PolicyDocumentError)) throw err;
    return false;
  }
}

test('the schema compiles as ECMA-262 (no inline flags such as (?i:...))', () => {
  assert.equal(typeof validate, 'function');
  assert.ok(new RegExp(SCHEMA.$defs.policy.properties.jitter.pattern, 'u').test('proportional(0.2)'));
});

for (const c of CASES) {
  test(`schema and loader agree: ${c.name}`, () => {
    const text = c.text ?? JSON.stringify(c.document);
    assert.equal(loads(text), c.loader, 'the loader');
    const want = c.schema_cannot ? true : c.loader;
    const valid = validate(JSON.parse(text));
    assert.equal(valid, want, `ajv: ${JSON.stringify(validate.errors)}`);
  });
}
