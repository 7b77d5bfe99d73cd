#!/usr/bin/env python3
# Writes tests/conformance/hedging.json: the expectations are worked out by hand from the
# contract (docs/contract.md, "Hedging"), written here literally, not read from the engine.
import json

def ev(kind, attempt, at, delay=None, reason=None):
    e = {"kind": kind, "attempt": attempt, "elapsed_ms": at}
    if delay is not None: e["delay_ms"] = delay
    if reason is not None: e["reason"] = reason
    return e

def ok(ms): return {"result": "success", "takes_ms": ms}
def tr(ms, hint=None):
    a = {"result": "transient", "takes_ms": ms}
    if hint is not None: a["hint_ms"] = hint
    return a
def perm(ms): return {"result": "permanent", "takes_ms": ms}
def dont(ms): return {"result": "dont_retry", "takes_ms": ms}

V = []
def vec(id, rule, policy=None, calls=(), budgets=None, service_config=None):
    v = {"id": id, "rule": rule}
    if policy is not None: v["policy"] = policy
    if budgets: v["budgets"] = budgets
    if service_config is not None: v["service_config"] = service_config
    v["calls"] = [{"attempts": a, "expect": e} for a, e in calls]
    V.append(v)

fixed = lambda n, d, **kw: {"deadline": "10000ms", "hedge": {"max_attempts": n, "delay": d}, **kw}

vec("hedge-slow-first-hedge-wins",
    "hedging: attempt 1 stalls; attempt 2 launches after the delay (event hedge, delay 50), answers first and wins; attempt 1 is cancelled",
    fixed(3, "50ms"),
    [([ok(2000), ok(10)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 50], "cancelled": [1],
        "events": [ev("hedge", 2, 50, 50), ev("success", 2, 60)]})])
vec("hedge-fast-first-no-hedge",
    "hedging: an attempt that answers before the delay is the only one: no hedge, nothing cancelled",
    fixed(3, "50ms"),
    [([ok(30)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "cancelled": [],
        "events": [ev("success", 1, 30)]}),
     ([ok(50)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "cancelled": [],
        "events": [ev("success", 1, 50)]})])
vec("hedge-every-delay-until-max",
    "hedging: attempts launch every hedging delay; the third wins; both others are cancelled",
    fixed(3, "50ms"),
    [([ok(1000), ok(1000), ok(5)], {"outcome": "success", "winner": 3, "attempts": 3, "launched_ms": [0, 50, 100],
        "cancelled": [1, 2], "events": [ev("hedge", 2, 50, 50), ev("hedge", 3, 100, 50), ev("success", 3, 105)]})])
vec("hedge-max-attempts-bounds-launches",
    "hedging: no more than max_attempts are launched; the first still wins if it answers first",
    fixed(2, "50ms"),
    [([ok(300), ok(400)], {"outcome": "success", "winner": 1, "attempts": 2, "launched_ms": [0, 50], "cancelled": [2],
        "events": [ev("hedge", 2, 50, 50), ev("success", 1, 300)]})])
vec("hedge-non-fatal-launches-next-at-once",
    "A6: a non-fatal failure sends the next hedge at once (shortcutting the delay) and the others go on; the delay then runs from that launch",
    fixed(3, "100ms"),
    [([tr(20), ok(500), ok(10)], {"outcome": "success", "winner": 3, "attempts": 3, "launched_ms": [0, 20, 120],
        "cancelled": [2], "events": [ev("attempt_failed", 1, 20), ev("hedge", 2, 20, 20), ev("hedge", 3, 120, 100),
                                      ev("success", 3, 130)]})])
vec("hedge-fatal-failure-ends-the-call",
    "A6: a fatal failure ends the call with that failure (rejected) and cancels the attempts in flight",
    fixed(3, "50ms"),
    [([ok(1000), perm(10)], {"outcome": "rejected", "attempts": 2, "launched_ms": [0, 50], "cancelled": [1],
        "events": [ev("hedge", 2, 50, 50), ev("attempt_failed", 2, 60), ev("rejected", 2, 60)]})])
vec("hedge-all-non-fatal-exhausts",
    "hedging: when every attempt failed non-fatally and max_attempts were launched, the call is exhausted (attempts)",
    fixed(3, "50ms"),
    [([tr(10), tr(10), tr(10)], {"outcome": "exhausted", "reason": "attempts", "attempts": 3, "launched_ms": [0, 10, 20],
        "cancelled": [], "events": [ev("attempt_failed", 1, 10), ev("hedge", 2, 10, 10), ev("attempt_failed", 2, 20),
                                     ev("hedge", 3, 20, 10), ev("attempt_failed", 3, 30),
                                     ev("exhausted", 3, 30, reason="attempts")]})])
vec("hedge-zero-delay-launches-all-at-once",
    "A6: a hedging delay of 0 sends every attempt at once; the fastest wins",
    fixed(3, "0ms"),
    [([ok(100), ok(50), ok(80)], {"outcome": "success", "winner": 2, "attempts": 3, "launched_ms": [0, 0, 0],
        "cancelled": [1, 3], "events": [ev("hedge", 2, 0, 0), ev("hedge", 3, 0, 0), ev("success", 2, 50)]})])
vec("hedge-deadline-cancels-everything",
    "hedging: the deadline ends the call (exhausted, deadline) at the first millisecond past it and cancels every attempt in flight; each attempt's bound is the deadline's time left",
    {"deadline": "300ms", "hedge": {"max_attempts": 2, "delay": "100ms"}},
    [([ok(1000), ok(1000)], {"outcome": "exhausted", "reason": "deadline", "attempts": 2, "launched_ms": [0, 100],
        "cancelled": [1, 2], "bounds_ms": [300, 200],
        "events": [ev("hedge", 2, 100, 100), ev("exhausted", 2, 301, reason="deadline")]})])
vec("hedge-attempt-timeout-is-per-attempt",
    "hedging: each attempt's bound is its own attempt_timeout; an attempt that times out (a non-fatal failure the host reports at its bound) launches the next at once",
    {"deadline": "1000ms", "attempt_timeout": "150ms", "hedge": {"max_attempts": 3, "delay": "100ms"}},
    [([tr(150), ok(1000), ok(20)], {"outcome": "success", "winner": 3, "attempts": 3, "launched_ms": [0, 100, 150],
        "cancelled": [2], "bounds_ms": [150, 150, 150],
        "events": [ev("hedge", 2, 100, 100), ev("attempt_failed", 1, 150), ev("hedge", 3, 150, 50),
                   ev("success", 3, 170)]})])
vec("hedge-hint-delays-the-next-hedge",
    "A6: a non-fatal failure with server pushback sends the next hedge after the pushback, not at once",
    fixed(3, "200ms"),
    [([tr(10, 70), ok(5)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 80], "cancelled": [],
        "events": [ev("attempt_failed", 1, 10), ev("hedge", 2, 80, 80), ev("success", 2, 85)]})])
vec("hedge-hint-over-max-retry-after-stops-hedging",
    "hedging: pushback over max_retry_after launches no further hedge; with nothing in flight the call is exhausted (retry_after)",
    fixed(3, "200ms", max_retry_after="50ms"),
    [([tr(10, 70)], {"outcome": "exhausted", "reason": "retry_after", "attempts": 1, "launched_ms": [0], "cancelled": [],
        "events": [ev("attempt_failed", 1, 10), ev("exhausted", 1, 10, reason="retry_after")]})])
vec("hedge-budget-throttles-hedges",
    "A6 throttling: each hedge spends a token and is launched only while tokens > max_tokens/2; a refused hedge leaves the call waiting for the attempts in flight; a success refills token_ratio; with nothing in flight a refused hedge exhausts the call (budget)",
    {"deadline": "10000ms", "budget": "b", "hedge": {"max_attempts": 2, "delay": "50ms"}},
    [([ok(200), ok(10)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 50], "cancelled": [1],
        "budget_tokens": 1.5, "events": [ev("hedge", 2, 50, 50), ev("success", 2, 60)]}),
     ([ok(200), ok(10)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 50], "cancelled": [1],
        "budget_tokens": 1.0, "events": [ev("hedge", 2, 50, 50), ev("success", 2, 60)]}),
     ([ok(200), ok(10)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "cancelled": [],
        "budget_tokens": 1.5, "events": [ev("success", 1, 200)]}),
     ([tr(10)], {"outcome": "exhausted", "reason": "budget", "attempts": 1, "launched_ms": [0], "cancelled": [],
        "budget_tokens": 0.5, "events": [ev("attempt_failed", 1, 10), ev("exhausted", 1, 10, reason="budget")]})],
    budgets={"b": {"max_tokens": 2, "token_ratio": 0.5}})
vec("hedge-adaptive-delay-tracks-the-quantile",
    "adaptive hedging: the delay is the ceiling until the sketch holds min(20, window) latencies, then their quantile by nearest rank (here the median of the last 4), read when the call starts; a cancelled loser joins the sketch with the time it ran",
    {"deadline": "10000ms", "hedge": {"max_attempts": 2, "delay": "adaptive", "quantile": 0.5, "floor": "5ms",
                                      "ceiling": "100ms", "window": 4}},
    [([ok(10)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "events": [ev("success", 1, 10)]}),
     ([ok(20)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "events": [ev("success", 1, 20)]}),
     ([ok(30)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0], "events": [ev("success", 1, 30)]}),
     ([ok(150), ok(10)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 100], "cancelled": [1],
        "events": [ev("hedge", 2, 100, 100), ev("success", 2, 110)]}),
     # the last four: 20, 30, 10 (attempt 2), 110 (attempt 1, cancelled) -> nearest-rank median 20
     ([ok(500), ok(5)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 20], "cancelled": [1],
        "events": [ev("hedge", 2, 20, 20), ev("success", 2, 25)]}),
     # the last four: 10, 110, 5, 25 -> 10
     ([ok(500), ok(500)], {"outcome": "success", "winner": 1, "attempts": 2, "launched_ms": [0, 10], "cancelled": [2],
        "events": [ev("hedge", 2, 10, 10), ev("success", 1, 500)]}),
     # the last four: 5, 25, 500 (attempt 1), 490 (attempt 2, cancelled) -> 25
     ([ok(1000), ok(1)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 25], "cancelled": [1],
        "events": [ev("hedge", 2, 25, 25), ev("success", 2, 26)]})])
vec("hedge-adaptive-floor-and-ceiling",
    "adaptive hedging: the quantile is clamped to [floor, ceiling]",
    {"deadline": "10000ms", "hedge": {"max_attempts": 2, "delay": "adaptive", "quantile": 0.95, "floor": "40ms",
                                      "ceiling": "100ms", "window": 2}},
    [([ok(1)], {"outcome": "success", "winner": 1, "launched_ms": [0]}),
     ([ok(2)], {"outcome": "success", "winner": 1, "launched_ms": [0]}),
     # p95 of 1, 2 is 2: raised to the floor, 40
     ([ok(60), ok(1)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 40], "cancelled": [1],
        "events": [ev("hedge", 2, 40, 40), ev("success", 2, 41)]}),
     # the last two: 1, 41 -> 41
     ([ok(500), ok(500)], {"outcome": "success", "winner": 1, "attempts": 2, "launched_ms": [0, 41], "cancelled": [2]}),
     # the last two: 500, 459 -> 500: lowered to the ceiling, 100
     ([ok(1000), ok(1)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 100], "cancelled": [1],
        "events": [ev("hedge", 2, 100, 100), ev("success", 2, 101)]})])
# grpc
a6 = {"methodConfig": [{"name": [{"service": "retry"}],
                        "hedgingPolicy": {"maxAttempts": 4, "hedgingDelay": "0.5s",
                                          "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]}}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
vec("grpc-a6-hedging-example",
    "A6's hedgingPolicy example: hedges every 0.5 s up to 4 attempts; a non-fatal status sends the next hedge at once; a fatal one ends the call; A6 throttling: a hedge spends no retryThrottling token (it is only sent while tokens > maxTokens/2), a non-fatal failure spends one, a fatal one none, a success adds 0.1",
    service_config=a6,
    calls=[([ok(2000), tr(100), ok(3000), ok(50)], {"outcome": "success", "winner": 4, "attempts": 4,
              "launched_ms": [0, 500, 600, 1100], "cancelled": [1, 3], "budget_tokens": 9.1,
              "events": [ev("hedge", 2, 500, 500), ev("attempt_failed", 2, 600), ev("hedge", 3, 600, 100),
                         ev("hedge", 4, 1100, 500), ev("success", 4, 1150)]}),
           ([ok(2000), perm(10)], {"outcome": "rejected", "attempts": 2, "launched_ms": [0, 500], "cancelled": [1],
              "budget_tokens": 9.1, "events": [ev("hedge", 2, 500, 500), ev("attempt_failed", 2, 510),
                                               ev("rejected", 2, 510)]})])
java = {"methodConfig": [{"name": [{"service": "retry"}], "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "1s"}}],
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
vec("grpc-java-hedging-example",
    "grpc-java's hedging_service_config.json (its method renamed to the runner's service): 3 attempts a second apart, throttled by retryThrottling (A6: the hedges spend nothing; the success's 0.1 is capped at maxTokens)",
    service_config=java,
    calls=[([ok(5000), ok(5000), ok(200)], {"outcome": "success", "winner": 3, "attempts": 3,
              "launched_ms": [0, 1000, 2000], "cancelled": [1, 2], "budget_tokens": 10,
              "events": [ev("hedge", 2, 1000, 1000), ev("hedge", 3, 2000, 1000), ev("success", 3, 2200)]})])
slow1 = {"methodConfig": [{"name": [{"service": "retry"}],
                           "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.01s"}}],
         "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
vec("grpc-a6-hedges-spend-no-tokens",
    "A6 throttling (issue 35): with A6's example throttling (maxTokens 10, tokenRatio 0.1), nothing failing and attempt 1 slow, every one of 60 calls sends its hedge: hedges are gated on tokens > maxTokens/2, never paid for",
    service_config=slow1,
    calls=[([ok(100), ok(5)], {"outcome": "success", "winner": 2, "attempts": 2, "launched_ms": [0, 10],
              "cancelled": [1], "budget_tokens": 10,
              "events": [ev("hedge", 2, 10, 10), ev("success", 2, 15)]}) for _ in range(60)])
push = {"methodConfig": [{"name": [{"service": "retry"}],
                          "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                                            "nonFatalStatusCodes": ["UNAVAILABLE"]}}],
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
vec("grpc-a6-dont-retry-pushback-stops-new-hedges",
    "A6 pushback (issue 35): a \"don't retry\" pushback counts as a failure (one token), sends no further hedge (attempt 3 would have gone at 100 ms) and lets the attempts in flight finish (attempt 1 wins at 200 ms); alone, it ends the call exhausted (retry_after)",
    service_config=push,
    calls=[([ok(200), dont(10)], {"outcome": "success", "winner": 1, "attempts": 2, "launched_ms": [0, 50],
              "cancelled": [], "budget_tokens": 9.1,
              "events": [ev("hedge", 2, 50, 50), ev("attempt_failed", 2, 60), ev("success", 1, 200)]}),
           ([dont(10)], {"outcome": "exhausted", "reason": "retry_after", "attempts": 1, "launched_ms": [0],
              "cancelled": [], "budget_tokens": 8.1,
              "events": [ev("attempt_failed", 1, 10), ev("exhausted", 1, 10, reason="retry_after")]})])
hedged = lambda: ([ok(100), ok(100)], {"outcome": "success", "winner": 1, "attempts": 2, "launched_ms": [0, 10],
                   "cancelled": [2], "events": [ev("hedge", 2, 10, 10), ev("success", 1, 100)]})
unhedged = ([ok(100), ok(100)], {"outcome": "success", "winner": 1, "attempts": 1, "launched_ms": [0],
             "cancelled": [], "events": [ev("success", 1, 100)]})
vec("hedge-default-guard-limits-hedges",
    "hedging's default guard (issue 35): without a budget, hedges draw from a Finagle ratio budget of 10 s, 10% of the calls plus 1 a second (a reserve of 10): with every attempt slow, the first 11 calls hedge (11 deposits of 0.1 and the reserve of 10 cover 11 hedges) and the 12th does not",
    fixed(2, "10ms"),
    [hedged() for _ in range(11)] + [unhedged])
vec("hedge-guard-false-turns-the-guard-off",
    "hedging's default guard (issue 35): \"guard\": false turns it off: every one of 12 slow calls hedges",
    {"deadline": "10000ms", "hedge": {"max_attempts": 2, "delay": "10ms", "guard": False}},
    [hedged() for _ in range(12)])
V.append({"id": "hedge-validate-guard", "rule": "hedging: guard is true or false",
          "policy": {"hedge": {"max_attempts": 2, "delay": "10ms", "guard": "off"}}, "expect_error": {"knob": "hedge.guard"}})
V.append({"id": "hedge-validate-max-attempts-over-a6-cap", "rule": "hedging: max_attempts is at most 5 (A6)",
          "policy": {"hedge": {"max_attempts": 6, "delay": "10ms"}}, "expect_error": {"knob": "hedge.max_attempts"}})
V.append({"id": "hedge-validate-negative-delay", "rule": "hedging: the delay is a duration >= 0 or \"adaptive\"",
          "policy": {"hedge": {"max_attempts": 2, "delay": "-5ms"}}, "expect_error": {"knob": "hedge.delay"}})
V.append({"id": "hedge-validate-quantile", "rule": "adaptive hedging: the quantile is in (0, 1)",
          "policy": {"hedge": {"max_attempts": 2, "delay": "adaptive", "quantile": 1.5}}, "expect_error": {"knob": "hedge.quantile"}})
doc = {"topic": "Hedging (issue 26): which attempt wins, when each starts, how many are launched, what throttling and the deadline do, the adaptive delay, and gRPC's hedgingPolicy", "vectors": V}
with open(__import__("os").path.join(__import__("os").path.dirname(__file__), "..", "hedging.json"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
