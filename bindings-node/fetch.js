'use strict';
// retryrs/fetch (CommonJS): see lib/fetch.js and fetch.d.ts.
module.exports = require('./lib/fetch');
