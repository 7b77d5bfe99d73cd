// Compiled with `tsc --noEmit` by types.test.js: the declarations must accept real use and
// reject misuse (each @ts-expect-error fails the build if the line compiles).
import { Retrier, RetryBudget, RetryExhaustedError, parseRetryAfter, isRetryableStatus, testing, type RetryEvent, type AttemptContext, type ListenerHandle, type RetryHistory, type RetryInfo, type RetryStats } from 'retryrs';

const budget = new RetryBudget(10, 0.1);
const r = new Retrier({
  maxAttempts: 3,
  initialDelayMs: 100,
  jitter: 'proportional(0.2)',
  deadlineMs: null,
  maxRetryAfterMs: null,
  seed: 42n,
  budget,
  shouldRetry: (err) => err instanceof Error,
  retryAfterMs: () => undefined,
  onEvent: (e: RetryEvent) => {
    if (e.kind === 'retrying') {
      const d: number = e.delayMs;
      void d;
    } else if (e.kind === 'exhausted') {
      const reason: 'attempts' | 'deadline' | 'budget' | 'retry_after' | 'circuit_open' | 'stopped' = e.reason;
      void reason;
    }
  },
  attemptTimeoutMs: 1000,
});

async function main(): Promise<void> {
  // The result type flows from fn, sync or async.
  const n: number = await r.call(() => 1);
  const s: string = await r.call(async (ctx: AttemptContext) => `attempt ${ctx.attempt} ${ctx.signal.aborted}`);
  // remainingMs is null when unbounded: it must be narrowed before use as a number.
  const left: number = await r.call((ctx) => ctx.remainingMs ?? Infinity);
  // @ts-expect-error remainingMs may be null
  await r.call((ctx) => Math.min(ctx.remainingMs, 5));
  const c = new AbortController();
  const o: { rate: number } = await r.call(async () => ({ rate: 1.08 }), { signal: c.signal });
  // @ts-expect-error the result is a number, not a string
  const wrong: string = await r.call(() => 1);
  try {
    await r.call(() => 1);
  } catch (err) {
    if (err instanceof RetryExhaustedError) {
      const attempts: number = err.attempts;
      const errors: unknown[] = err.errors;
      void attempts, errors;
    }
  }
  const ms: number | undefined = parseRetryAfter('120');
  const retry: boolean = isRetryableStatus(503);
  testing.enable();
  testing.advance(10);
  const t: number = testing.now();
  testing.disable();
  testing.enable({ scope: 'process' });
  testing.disable({ scope: 'process' });
  void testing.scoped(() => 1, { scope: 'context' }).then((n: number) => n);
  void n, s, o, wrong, ms, retry, t;
}

// Issue 13: shouldRetryResult is typed on what the calls return; hooks may be async.
interface Reply { status: number; retryAfterMs?: number }
const replies = new Retrier({
  shouldRetryResult: async (reply: Reply) => reply.status >= 500,
  shouldRetry: async () => true,
  retryAfterMs: async (failure) => (failure as Reply).retryAfterMs,
  maxRetryAfterMs: 30_000,
  unref: true,
  onEvent: [
    async (e: RetryEvent) => {
      if (e.kind === 'attempt_failed' && 'value' in e) void (e.value as Reply);
    },
    (e) => void e.kind,
  ],
});
async function typedResults(): Promise<void> {
  const reply: Reply = await replies.call(async () => ({ status: 200 }));
  // @ts-expect-error a retrier judging Replies cannot run a call returning a string
  await replies.call(async () => 'text');
  try {
    await replies.call(() => ({ status: 503 }));
  } catch (err) {
    if (err instanceof RetryExhaustedError) void (err.result as Reply | undefined);
  }
  const shared: RetryBudget = RetryBudget.from({ retryrsBudget: 1 });
  void reply, shared;
}
void typedResults;
// @ts-expect-error shouldRetryResult answers a boolean
new Retrier({ shouldRetryResult: () => 'yes' });
// shouldRetry is read by truthiness (p-retry's `err.code && set.has(err.code)` style).
const codes = new Set(['ECONNRESET']);
new Retrier({ shouldRetry: (e) => e instanceof Error && 'code' in e && typeof e.code === 'string' && codes.has(e.code) });
new Retrier({ shouldRetry: async (e) => (e as { code?: string }).code && codes.has((e as { code: string }).code) });
// reraise, overrides, listeners attached later.
const base = new Retrier({ reraise: true, maxAttempts: 3 });
const one: Retrier = base.with({ maxAttempts: 1, name: 'once' });
const handle: ListenerHandle = one.onEvent((e: RetryEvent) => void e.kind);
handle.dispose();
// Hooks that act: onRetry may stop the call, delayMs gives an exact wait.
const hooked = new Retrier({
  onRetry: async (info: RetryInfo) => info.retriesLeft > 0 && info.attempt < 3,
  delayMs: (info) => (info.error instanceof Error ? info.delayMs * 2 : undefined),
  onEvent: (e) => void e.retriesLeft,
});
const stats: RetryStats = hooked.stats();
void (stats.calls + stats.exhausted.stopped + stats.exhausted.deadline);
// @ts-expect-error delayMs answers a number of milliseconds
new Retrier({ delayMs: () => '5s' });
// @ts-expect-error reraise is a boolean
new Retrier({ reraise: 'yes' });
// @ts-expect-error with() takes options, not a number
base.with(3);
async function reraised(): Promise<void> {
  try {
    await base.call(() => 1);
  } catch (err) {
    const history = (err as RetryHistory).retryrs;
    if (history !== undefined) void (history.attempts + history.errors.length);
  }
}
void reraised;
// @ts-expect-error unref is a boolean
new Retrier({ unref: 1 });
// @ts-expect-error onEvent takes functions
new Retrier({ onEvent: ['log'] });
// @ts-expect-error p-retry's option name is not an option here
new Retrier({ retries: 3 });

// @ts-expect-error maxAttempts is a number
new Retrier({ maxAttempts: '3' });
// @ts-expect-error no such jitter
new Retrier({ jitter: 'gaussian' });
// @ts-expect-error unknown option
new Retrier({ maxAttempt: 3 });

void main;

// retryrs/fetch: the wrapper keeps the wrapped fetch's type.
import { retryingFetch, RetryableStatusError, RequestFailedError, redactUrl } from 'retryrs/fetch';

const plain = retryingFetch({ retrier: r, methods: ['GET', 'PUT'], statuses: [503, 429] });
void plain;
type Tiny = (input: string, init?: { method?: string; signal?: unknown }) => Promise<{ status: number }>;
const tiny: Tiny = async () => ({ status: 200 });
const wrapped: Tiny = retryingFetch({ fetch: tiny });
void wrapped;
function onError(e: unknown): void {
  if (e instanceof RetryableStatusError) {
    const s: number = e.status;
    const ra: number | undefined = e.retryAfterMs;
    void s, ra;
  } else if (e instanceof RequestFailedError) {
    const c: boolean = e.connect;
    void c;
  }
}
void onError;
const red: string = redactUrl('http://u:p@h/');
void red;
// @ts-expect-error statuses are numbers
retryingFetch({ statuses: ['503'] });
// @ts-expect-error no such option
retryingFetch({ retries: 3 });
// @ts-expect-error retrier must be a Retrier
retryingFetch({ retrier: { maxAttempts: 3 } });

// Policy documents: a Map of typed policies; fromPolicy takes the host's options and knob overrides.
import { loadPolicies, PolicyDocumentError, type Policy } from 'retryrs';
const policies: Map<string, Policy> = loadPolicies('policies.json');
const payments = policies.get('payments');
if (payments !== undefined) {
  const attempts: number = payments.maxAttempts;
  const deadline: number | null = payments.deadlineMs;
  void attempts;
  void deadline;
  Retrier.fromPolicy(payments, { shouldRetry: () => true, onEvent: (e: RetryEvent) => void e });
  Retrier.fromPolicy(payments, { maxAttempts: 3 });
  // @ts-expect-error an override is checked like a constructor option
  Retrier.fromPolicy(payments, { maxAttempts: '3' });
}
try {
  loadPolicies({ policies: {} });
} catch (err) {
  if (err instanceof PolicyDocumentError) {
    const where: string = err.path;
    const line: number | null = err.line;
    void where;
    void line;
  }
}

// The circuit breaker (issue 27): shared like a budget; its refusal is on the error.
import { CircuitBreaker as Breaker, RetryBudget as Budget, Retrier as R2 } from 'retryrs';
const breaker = new Breaker({ model: 'sampling', failureRatio: 0.5, minimumThroughput: 10, breakDurationMs: 1000 });
const guarded = new R2({ breaker, budget: Budget.quota({ capacity: 100 }) });
void guarded;
const breakerState: 'closed' | 'open' | 'half_open' | 'isolated' = breaker.state;
void breakerState;
// Issue 35: resilience4j's count window, slow calls, probes judged together, manual control.
const counted = new Breaker({ model: 'count', failureRatio: 0.5, minimumCalls: 10, windowSize: 20, slowCallDurationMs: 200, slowCallRatio: 0.8, judgeAllProbes: true, halfOpenProbes: 3, countPermanent: true });
counted.isolate();
counted.reset();
const countModel: 'consecutive' | 'sampling' | 'count' = counted.model;
void countModel;
const ratioKind: 'token_bucket' | 'quota' | 'ratio' = Budget.ratio({ percentCanRetry: 0.1 }).kind;
void ratioKind;

// Hedging (issue 26): a fixed or an adaptive delay; adaptive knobs only with 'adaptive'.
import { testing as clock } from 'retryrs';
const hedged = new R2({ hedge: { maxAttempts: 3, delayMs: 50 }, deadlineMs: 1000 });
const adaptive = new R2({ hedge: { maxAttempts: 2, delayMs: 'adaptive', quantile: 0.95, floorMs: 5, ceilingMs: 200 } });
// @ts-expect-error quantile applies to an adaptive delay only
new R2({ hedge: { maxAttempts: 2, delayMs: 50, quantile: 0.9 } });
void hedged;
void adaptive;
const hedgeSeen = new R2({
  hedge: { maxAttempts: 2 },
  onEvent: (e) => {
    if (e.kind === 'hedge') {
      const d: number = e.delayMs;
      void d;
    }
  },
});
void hedgeSeen;
const slept: Promise<void> = clock.sleep(5, { signal: new AbortController().signal });
void slept;
