'use strict';
// Every option a user can pass, and every declaration the package exports, carries TSDoc
// in the package's .d.ts files: an editor's hover is where Node users read the reference.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const ROOT = path.join(__dirname, '..');
const FILES = ['index.d.ts', ...fs.readdirSync(path.join(ROOT, 'lib')).filter((f) => /\.d\.m?ts$/.test(f)).map((f) => `lib/${f}`)];

function hasDoc(node) {
  return ts.getJSDocCommentsAndTags(node).some((d) => ts.isJSDoc(d) && (d.comment || (d.tags && d.tags.length)));
}

function isOption(node) {
  for (let up = node.parent; up; up = up.parent) {
    if (ts.isParameter(up)) return true;
    if (ts.isInterfaceDeclaration(up) || ts.isTypeAliasDeclaration(up)) return /Option/.test(up.name.text);
  }
  return false;
}

/** Undocumented members and exported declarations of one file, as `file:line name`. */
function undocumented(file) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const missing = [];
  const where = (node, name) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1} ${name}`;
  const visit = (node) => {
    // An option: a property of an options interface or type (`RetrierOptions`,
    // `HedgeOptions`), or of an object type a function or constructor takes.
    if ((ts.isPropertySignature(node) || ts.isMethodSignature(node)) && isOption(node) && !hasDoc(node)) {
      missing.push(where(node, node.name.getText(source)));
    }
    // An exported top-level declaration.
    if (node.parent === source && (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isVariableStatement(node))) {
      const exported = node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (exported && !hasDoc(node)) missing.push(where(node, node.name ? node.name.getText(source) : node.declarationList.declarations[0].name.getText(source)));
    }
    // A public class member (constructor, method, property).
    if (ts.isClassDeclaration(node.parent ?? {}) && (ts.isMethodDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node))) {
      const isPrivate = node.modifiers?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword) || (node.name && ts.isPrivateIdentifier(node.name));
      if (!isPrivate && !hasDoc(node)) missing.push(where(node, node.name ? node.name.getText(source) : 'constructor'));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return missing;
}

test('every option and exported declaration in the .d.ts files carries TSDoc', () => {
  assert.ok(FILES.length >= 7, FILES.join(', '));
  const missing = FILES.flatMap(undocumented);
  assert.deepEqual(missing, [], `undocumented:\n${missing.join('\n')}`);
});

test('the TSDoc check finds an undocumented option', () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'tsdoc-'));
  const file = path.join(dir, 'x.d.ts');
  fs.writeFileSync(file, '/** Documented. */\nexport interface SampleOptions {\n  /** Yes. */\n  a?: number;\n  b?: number;\n}\n');
  const rel = path.relative(ROOT, file);
  assert.deepEqual(undocumented(rel).map((m) => m.split(' ')[1]), ['b']);
  fs.rmSync(dir, { recursive: true });
});
