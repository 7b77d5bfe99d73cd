// retryrs/axios for ES module and bundler programs. axios ships separate typings for
// require (index.d.cts) and import (index.d.ts): an augmentation reaches only the one its
// file resolves, so this file adds a request's `retry` option to the ES module typings
// (axios.d.ts adds it to the CommonJS ones).
import type { RequestRetryOptions } from './fetch.js';
import type { retryAxios as retryAxiosFn } from './axios.js';

export type { AxiosInstanceLike } from './axios.js';
/** Adds retries to an axios instance (see retryrs/axios's CommonJS typings for the options). */
export declare const retryAxios: typeof retryAxiosFn;
declare const cjs: { retryAxios: typeof retryAxiosFn };
export default cjs;

declare module 'axios' {
  interface AxiosRequestConfig {
    /** retryrs/axios: this request's own attempt limit, methods, statuses, Idempotency-Key rule. */
    retry?: RequestRetryOptions;
  }
}
