// retryrs/axios (ES module): re-exports the CommonJS build (./axios.js), so both share one
// addon and one Retrier class; its types (axios.d.mts) augment axios's ES module typings.
import cjs from './axios.js';

export const { retryAxios } = cjs;
export default cjs;
