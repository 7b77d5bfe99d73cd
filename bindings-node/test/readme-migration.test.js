'use strict';
// The top-level README's "Coming from another library" / "### Node" section: every fenced
// js block runs against this package, and what it prints must be what its `// prints:`
// comments say, in order (issue 24: a migration guide whose recipes do not run misleads).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const README = path.join(__dirname, '..', '..', 'README.md');
const AsyncFunction = (async () => {}).constructor;

/** The fenced js blocks of `### Node` under `## Coming from another library`. */
function nodeBlocks(text) {
  const lines = text.split('\n');
  const top = lines.findIndex((l) => l.trim() === '## Coming from another library');
  assert.ok(top >= 0, 'README.md has a "## Coming from another library" section');
  let start = -1;
  for (let i = top + 1; i < lines.length && !lines[i].startsWith('## '); i++) {
    if (lines[i].trim() === '### Node') start = i;
  }
  assert.ok(start >= 0, 'that section has a "### Node" subsection');
  const blocks = [];
  let block = null;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i];
    if (block === null && (line.startsWith('## ') || line.startsWith('### '))) break;
    if (block === null && line.trim() === '```js') block = [];
    else if (block !== null && line.trim() === '```') {
      blocks.push(block.join('\n'));
      block = null;
    } else if (block !== null) block.push(line);
  }
  return blocks;
}

const blocks = fs.existsSync(README) ? nodeBlocks(fs.readFileSync(README, 'utf8')) : null;

test('the Node migration section has snippets', { skip: blocks === null ? 'README.md is not shipped with the package' : false }, () => {
  assert.ok(blocks.length >= 2, `found ${blocks.length}`);
});

for (const [i, code] of (blocks ?? []).entries()) {
  test(`README "Coming from another library" Node snippet ${i + 1} runs and prints what it says`, async () => {
    const printed = [];
    const console = { log: (...args) => printed.push(args.map(String).join(' ')) };
    const requireShim = (name) => (name === 'retryrs' ? require('..') : require(name));
    await new AsyncFunction('require', 'console', code)(requireShim, console);
    const expected = code.split('\n').map((l) => /\/\/ prints: (.*)$/.exec(l)).filter(Boolean).map((m) => m[1]);
    assert.ok(expected.length > 0, 'the snippet says what it prints');
    assert.deepEqual(printed, expected);
  });
}
