// Compiled with `tsc --noEmit` by types.test.js: retryrs/propagation's declarations, used
// as a server would (node:http-shaped objects; @types/node is not installed here).
import { middleware, wrap, run, current, PropagationContext } from 'retryrs/propagation';
import type { ServerStats } from 'retryrs/propagation';
import { retryingFetch } from 'retryrs/fetch';

interface Req { rawHeaders: string[]; url: string }
interface Res { statusCode: number; writableFinished: boolean; setHeader(n: string, v: string): void; end(): void; once(e: 'close', f: () => void): void }

const handler = wrap(async (req: Req, res: Res) => {
  const c: PropagationContext | undefined = current();
  const left: number | null | undefined = c?.remainingMs;
  const aborted: boolean | undefined = c?.signal.aborted;
  void left;
  void aborted;
  void req.url;
  res.end();
}, { limitMs: 10_000, trustMesh: true });
const stats: ServerStats = handler.stats();
void stats.refused;

const mw = middleware({ observeOnly: true, limitMs: null });
declare const req: Req;
declare const res: Res;
mw(req, res, () => {});

const n: number = run({ remainingMs: 300, retry: true }, () => 1);
void n;
const fetchIt = retryingFetch({ propagate: { hosts: ['api.internal', '*.svc.local'], mesh: 'envoy', kind: 'grpc' } });
void fetchIt;
retryingFetch({ propagate: false });

// @ts-expect-error not an option of the server helpers
middleware({ limit: 5 });
// @ts-expect-error remainingMs is a number of ms
run({ remainingMs: '300' }, () => 1);
// @ts-expect-error not a mesh retryrs knows
retryingFetch({ propagate: { mesh: 'istio' } });
// @ts-expect-error the context is made by the helpers
new PropagationContext();
