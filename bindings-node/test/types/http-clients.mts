// Compiled with `tsc --noEmit` by types.test.js: the HTTP helpers' declarations against
// the clients' own (skipLibCheck: the clients' typings need @types/node, not installed).
import axios from 'axios';
import { Agent } from 'undici';
import got from 'got';
import { Retrier } from 'retryrs';
import { retryAxios } from 'retryrs/axios';
import { retryInterceptor } from 'retryrs/undici';
import { retryGot } from 'retryrs/got';
import { retryingFetch, FinalStatusError, redactUrl } from 'retryrs/fetch';

const retrier = new Retrier({ maxAttempts: 3 });
const instance = axios.create();
const uninstall: () => void = retryAxios(instance, { retrier, redactQuery: ['session'], idempotencyKey: false });
uninstall();
// @ts-expect-error not an option of the helper
retryAxios(instance, { retries: 3 });
// @ts-expect-error not an axios instance
retryAxios({}, { retrier });

const dispatcher = new Agent().compose(retryInterceptor({ retrier, methods: ['GET'] }));
void dispatcher;
// @ts-expect-error statuses are numbers
retryInterceptor({ statuses: ['503'] });

const client = got.extend(retryGot({ retrier }));
void client;
// @ts-expect-error redactQuery holds strings
retryGot({ redactQuery: [1] });

const f = retryingFetch({ retrier, redactQuery: ['session'] });
void f;
const s: string = redactUrl('http://x/?session=1', ['session']);
void s;
declare const e: FinalStatusError;
const status: number = e.status;
void status;


// retryingFetch's own init takes retry; a plain fetch's RequestInit does not (it would be ignored).
void f('http://x/', { retry: { limit: 2, idempotencyKey: false } });
// @ts-expect-error limit is a number
void f('http://x/', { retry: { limit: 'two' } });
// @ts-expect-error plain fetch has no retry option
void fetch('http://x/', { retry: { limit: 2 } });

// axios's per-request retry option, typed in an ES module program too (axios.d.mts).
void instance.get('/x', { retry: { limit: 2, statuses: [503] } });
// @ts-expect-error limit is a number
void instance.get('/x', { retry: { limit: 'two' } });
