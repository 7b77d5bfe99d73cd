// Compiled with `tsc --noEmit` (moduleResolution: bundler) by types.test.js: a bundler
// program sees axios's per-request retry option typed.
import axios from 'axios';
import { retryAxios } from 'retryrs/axios';
import { Retrier } from 'retryrs';

const instance = axios.create();
retryAxios(instance, { retrier: new Retrier() });
void instance.get('/x', { retry: { limit: 2, methods: ['GET'] } });
// @ts-expect-error statuses are numbers
void instance.get('/x', { retry: { statuses: ['503'] } });
