'use strict';
// Loads the native addon built by scripts/build.js, with a message that says how to get
// it when it is missing (the usual cause: the install script did not run).
const path = require('node:path');

const addon = path.join(__dirname, '..', 'retryrs.node');
let native;
try {
  native = require(addon);
} catch (cause) {
  const dir = path.dirname(addon);
  throw new Error(
    `retryrs: cannot load the native addon ${addon} (${cause.message}). ` +
      `Build it with \`npm install\` or \`npm run build\` in ${dir} (needs Rust's cargo).`,
    { cause },
  );
}

module.exports = native;
