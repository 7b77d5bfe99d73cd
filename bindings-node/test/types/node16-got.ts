// Compiled with `tsc --noEmit` (module node16, skipLibCheck false) by types.test.js: the
// package's own declarations for got must check under node16 resolution (got is an ES
// module; the test reads only diagnostics in the package's own files).
import { retryGot } from 'retryrs/got';
import { retryAxios } from 'retryrs/axios';
import { retryingFetch } from 'retryrs/fetch';
import { retryInterceptor } from 'retryrs/undici';

const options = retryGot({ methods: ['GET'] });
void options.retry.limit;
void retryAxios;
void retryingFetch;
void retryInterceptor;
