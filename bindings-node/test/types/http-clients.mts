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

// fetch's init takes a request's retry option (a global RequestInit augmentation).
const init: RequestInit = { method: 'POST', retry: { limit: 2, idempotencyKey: false } };
void init;
// @ts-expect-error limit is a number
const badInit: RequestInit = { retry: { limit: 'two' } };
void badInit;
