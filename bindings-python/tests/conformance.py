"""The conformance vectors (tests/conformance/*.json), run through the public Python API
only: a Retrier built from the vector's policy, a listener, a CancelToken fired from the
listener, and retryrs.testing virtual time (advance for takes_ms and wait_overrun_ms).

Vectors count milliseconds; the Python API speaks seconds. Delays and elapsed times come
back in seconds and are compared as round(x * 1000).
"""

from __future__ import annotations

import asyncio
import glob
import json
import math
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import retryrs
from retryrs import CancelToken, Retrier, RetryCancelled, RetryExhausted, _native, testing

import propagation_conformance

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VECTOR_DIR = os.path.join(ROOT, "tests", "conformance")


class Transient(Exception):
    def __init__(self, attempt: int, hint_ms: Optional[float]) -> None:
        super().__init__(f"transient failure of attempt {attempt}")
        self.attempt = attempt
        # The default hint hook reads the error's `retry_after` attribute (seconds).
        self.retry_after = None if hint_ms is None else hint_ms / 1000


class Permanent(Exception):
    pass


class DontRetry(Transient):
    """A failure whose server said "don't retry": its `retry_after` is retryrs.DONT_RETRY."""

    def __init__(self, attempt: int) -> None:
        super().__init__(attempt, None)
        self.retry_after = retryrs.DONT_RETRY


def scripted_failure(n: int, step: Dict[str, Any]) -> Exception:
    """The error attempt n raises for a failing script step."""
    if step["result"] == "transient":
        return Transient(n, step.get("hint_ms"))
    if step["result"] == "dont_retry":
        return DontRetry(n)
    return Permanent(f"attempt {n}")


class Value:
    """What attempt n returns: carries n, and (for a rejected value) the hint the default
    hint reader finds in its `retry_after` attribute, as on an error."""

    def __init__(self, n: int, rejected: bool, hint_ms: Optional[float] = None) -> None:
        self.n = n
        self.rejected = rejected
        self.retry_after = None if hint_ms is None else hint_ms / 1000

    def __repr__(self) -> str:
        return f"Value({self.n}{', rejected' if self.rejected else ''})"


def rejects(value: Any) -> bool:
    """The result predicate: rejects attempt n's value exactly when the script says
    rejected_value."""
    return isinstance(value, Value) and value.rejected


class ScriptOverrun(Exception):
    pass


def load() -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for path in sorted(glob.glob(os.path.join(VECTOR_DIR, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        for v in doc["vectors"]:
            out.append((os.path.basename(path), v))
    return out


# The vectors' policies are in the policy-document format (docs/policies.md), keyed by the
# core's knob table; they are loaded through retryrs.load_policies, as a service loads
# its policy file.
POLICY_KEYS = {name for name, unit, _, _ in _native._knobs() if unit != "host"} | {"breaker", "hedge"}
VECTOR_KEYS = {
    "vector": {"id", "rule", "policy", "budgets", "breakers", "service_config", "calls", "expect_error", "retry_after",
               "status", "http", "propagation"},
    # Every budget kind's keys (the loader checks which belong to which kind).
    "budget": {"kind", "max_tokens", "token_ratio", "capacity", "retry_cost", "timeout_retry_cost", "no_retry_increment",
               "ttl", "min_retries_per_sec", "percent_can_retry"},
    "breaker": {"model", "failures", "failure_ratio", "minimum_throughput", "sampling_duration", "break_duration",
                "half_open_probes", "break_multiplier", "max_break_duration", "per_attempt",
                "count_permanent", "judge_all_probes", "minimum_calls", "window_size", "slow_call_duration", "slow_call_ratio"},
    "call": {"at_ms", "attempts", "expect"},
    "attempt": {"result", "hint_ms", "takes_ms", "wait_overrun_ms", "cancel_during_wait", "wait", "timed_out"},
    "expect": {"outcome", "reason", "attempts", "value", "delays_ms", "events", "budget_tokens", "breaker_state",
               "winner", "launched_ms", "cancelled",
               "bounds_ms"},
    "event": {"kind", "attempt", "elapsed_ms", "delay_ms", "reason", "error", "value", "retries_left"},
    "expect_error": {"knob"},
    "retry_after": {"value", "now_unix_s", "expect_ms"},
    "status": {"code", "retryable"},
    "http": {"method", "status", "failure", "retry_methods", "retry_statuses", "idempotency_key",
             "honour_idempotency_key", "expect"},
}


def unknown_keys(v: Dict[str, Any]) -> List[str]:
    """Keys the format does not define: a misspelt key must fail, not test nothing."""
    found: List[str] = []

    def check(where: str, obj: Any, allowed: Any) -> None:
        found.extend(f"{where}: unknown key {k!r}" for k in obj if k not in allowed)

    check("vector", v, VECTOR_KEYS["vector"])
    check("policy", v.get("policy", {}), POLICY_KEYS)
    for name, budget in v.get("budgets", {}).items():
        check(f"budgets.{name}", budget, VECTOR_KEYS["budget"])
    for name, breaker in v.get("breakers", {}).items():
        check(f"breakers.{name}", breaker, VECTOR_KEYS["breaker"])
    timed = [c["at_ms"] for c in v.get("calls", []) if "at_ms" in c]
    if timed and (len(timed) != len(v["calls"]) or timed != sorted(timed)):
        found.append("at_ms: every call of the vector gives one, in order")
    for call in v.get("calls", []):
        check("call", call, VECTOR_KEYS["call"])
        for a in call.get("attempts", []):
            check("attempt", a, VECTOR_KEYS["attempt"])
        check("expect", call.get("expect", {}), VECTOR_KEYS["expect"])
        for e in call.get("expect", {}).get("events", []):
            check("event", e, VECTOR_KEYS["event"])
    for body in ("expect_error", "retry_after", "status", "http"):
        if body in v:
            check(body, v[body], VECTOR_KEYS[body])
    return found


def build(v: Dict[str, Any], on_event: Optional[Callable[..., None]] = None, hook_script: Optional[Dict[str, Any]] = None) -> Retrier:
    """The vector's policy through the document loader: the policy "retry" (the
    contract's default name) in a document with the vector's budgets, or the service
    "retry" of the vector's gRPC service_config; the host parts
    (which errors and values are failures, the listener) given in code."""
    document = v.get("service_config") or {
        "policies": {"retry": v.get("policy", {})},
        "budgets": v.get("budgets", {}),
        "breakers": v.get("breakers", {}),
    }
    policy = retryrs.load_policies(document)["retry"]
    hooks: Dict[str, Any] = {}
    if hook_script is not None:
        # A hook vector: the wait hook answers the script's "wait" for the attempt that
        # just failed (a number: an exact wait in ms; "engine": None); the before_sleep
        # hook stops the call where the script says "stop".
        def scripted(attempt: int) -> Any:
            script = hook_script.get("attempts", [])
            return script[attempt - 1].get("wait", "engine") if 1 <= attempt <= len(script) else "engine"

        def wait(attempt: int, failure: Any, delay: float) -> Optional[float]:
            answer = scripted(attempt)
            return answer / 1000 if isinstance(answer, (int, float)) else None

        def before_sleep(attempt: int, failure: Any, delay: float) -> bool:
            return scripted(attempt) != "stop"

        hooks = {"wait": wait, "before_sleep": before_sleep}
    # The driver's own AttemptTimeout (an attempt it cut at its bound: "timed_out") is
    # transient, as every runner classifies its host's timeout error.
    retry_on = (Transient, retryrs.AttemptTimeout)
    if on_event is not None:
        return Retrier.from_policy(policy, retry_on=retry_on, retry_on_result=rejects, on_event=on_event, **hooks)
    return Retrier.from_policy(policy, retry_on=retry_on, retry_on_result=rejects, **hooks)


# In a run's failures: the AttemptTimeout the driver raised for an attempt it cut (the
# runner never sees the object before the call ends).
CUT = object()


def same_failure(got: Any, want: Any) -> bool:
    return got is want or (want is CUT and type(got) is retryrs.AttemptTimeout)


def ms(x: Optional[float]) -> Optional[int]:
    return None if x is None else round(x * 1000)


def run_call(r: Retrier, call: Dict[str, Any], holder: Dict[str, Any], use_async: bool) -> List[str]:
    script = call["attempts"]
    expect = call["expect"]
    problems: List[str] = []
    events: List[Any] = []
    raised: List[BaseException] = []
    failures: List[Tuple[Any, bool]] = []  # every failure in order: (error or value, is_value)
    token = CancelToken()
    count = 0
    bounds: List[Optional[int]] = []  # each attempt's bound as it saw it when it started

    def listener(e: Any) -> None:
        events.append(e)
        if e.kind == "retrying" and 1 <= e.attempt <= len(script):
            step = script[e.attempt - 1]
            if step.get("wait_overrun_ms"):
                testing.advance(step["wait_overrun_ms"] / 1000)
            if step.get("cancel_during_wait"):
                token.cancel()

    holder["listener"] = listener

    def count_one() -> None:
        nonlocal count
        count += 1

    def attempt() -> Value:
        count_one()
        if count > len(script):
            err: BaseException = ScriptOverrun(f"called {count} times, script has {len(script)}")
            raised.append(err)
            failures.append((err, False))
            raise err
        step = script[count - 1]
        current = retryrs.current_attempt()
        if current is None or current.number != count:
            problems.append(f"attempt {count}: current_attempt() is {current!r}")
        bounds.append(None if current is None else ms(current.remaining))
        if step.get("takes_ms"):
            testing.advance(step["takes_ms"] / 1000)
        if step["result"] == "success":
            return Value(count, False)
        if step["result"] == "rejected_value":
            rejected = Value(count, True, step.get("hint_ms"))
            failures.append((rejected, True))
            return rejected
        err = scripted_failure(count, step)
        raised.append(err)
        failures.append((err, False))
        raise err

    async def attempt_async() -> Value:
        if count >= len(script) or not script[count].get("timed_out"):
            return attempt()
        # "timed_out": the attempt runs past its bound, and the driver's own bound cuts it
        # (its AttemptTimeout is the failure). The virtual clock shows the cut at the
        # bound; the driver's timer, armed for the bound, fires in real time.
        count_one()
        current = retryrs.current_attempt()
        left = None if current is None else current.remaining
        bounds.append(ms(left))
        if left is None:
            problems.append(f"attempt {count} timed out but is unbounded")
            raise ScriptOverrun(f"attempt {count} is unbounded")
        failures.append((CUT, False))
        testing.advance(left)
        await asyncio.sleep(60)
        problems.append(f"attempt {count} was not cut at its bound")
        raise ScriptOverrun(f"attempt {count} ran past its bound")

    bound = r.with_cancel(token)
    outcome, reason, error = None, None, None
    state = None
    with testing.virtual_time():
        # Every call's clock starts at the vector's origin; at_ms moves it to the call's time.
        if call.get("at_ms"):
            testing.advance(call["at_ms"] / 1000)
        try:
            # Only the async driver cuts an attempt at its bound (a sync call cannot
            # interrupt one): a call with a timed-out attempt runs there in both passes.
            if use_async or any(a.get("timed_out") for a in script):
                value = asyncio.run(bound.call_async(attempt_async))
            else:
                value = bound.call(attempt)
            outcome = "success"
            if not isinstance(value, Value) or value.n != count or value.rejected:
                problems.append(f"returned {value!r}, expected the value of attempt {count}")
        except RetryExhausted as e:
            outcome, reason, error = "exhausted", e.reason, e
        except RetryCancelled as e:
            outcome, error = "cancelled", e
        except Permanent as e:
            outcome, error = "rejected", e
        except ScriptOverrun as e:
            problems.append(str(e))
            return problems
        finally:
            state = r.breaker.state if r.breaker is not None else None

    if outcome != expect["outcome"]:
        problems.append(f"outcome {outcome} ({error!r}), expected {expect['outcome']}")
    if "reason" in expect and reason != expect["reason"]:
        problems.append(f"reason {reason}, expected {expect['reason']}")
    if "attempts" in expect and count != expect["attempts"]:
        problems.append(f"{count} attempts, expected {expect['attempts']}")
    if outcome == "rejected" and raised and error is not raised[-1]:
        problems.append("the rejected error is not the original object")
    if outcome == "exhausted" and isinstance(error, RetryExhausted):
        # The errors among the last 64 failures in order (the contract's history cap);
        # attempts counts all. The last failure is the cause if an error, else `result`.
        window = failures[-64:]
        kept_errors = [f for f, is_value in window if not is_value]
        if len(error.errors) != len(kept_errors) or not all(map(same_failure, error.errors, kept_errors)):
            problems.append(f"errors {error.errors!r} are not the errors among the last 64 failures {window!r}")
        last, last_is_value = failures[-1] if failures else (None, False)
        if not failures:
            # Refused by the circuit breaker: no attempt, nothing to carry.
            if error.__cause__ is not None or error.result is not None:
                problems.append(f"a call with no failure carries {error.__cause__!r} / {error.result!r}")
        elif last_is_value:
            if error.__cause__ is not None:
                problems.append(f"__cause__ is {error.__cause__!r}; the last failure was a rejected value")
            if error.result is not last:
                problems.append(f"RetryExhausted.result is {error.result!r}, not the last rejected value {last!r}")
        else:
            if not same_failure(error.__cause__, last):
                problems.append("__cause__ is not the last failure")
            if error.result is not None:
                problems.append(f"RetryExhausted.result is {error.result!r}; the last failure was an error")
        want_value = expect.get("value")
        got_value = error.result.n if isinstance(error.result, Value) else None
        if got_value != want_value:
            problems.append(f"RetryExhausted.result carries {got_value}, expected {want_value}")
        if error.attempts != count:
            problems.append(f"RetryExhausted.attempts {error.attempts} != {count}")
    if outcome == "cancelled" and isinstance(error, RetryCancelled):
        if raised and error.__cause__ is not raised[-1]:
            problems.append("RetryCancelled.__cause__ is not the last failure")
    delays = [ms(e.delay) for e in events if e.kind == "retrying"]
    if "delays_ms" in expect and delays != expect["delays_ms"]:
        problems.append(f"delays {delays}, expected {expect['delays_ms']}")
    return problems + shared_checks(r, expect, events, state, bounds)


def shared_checks(r: Retrier, expect: Dict[str, Any], events: List[Any], state: Optional[str], bounds: List[Optional[int]]) -> List[str]:
    """What every call vector may expect of a call once it is over: its events, the
    breaker's state, each attempt's bound at its start, the budget's tokens."""
    problems: List[str] = []
    if "events" in expect:
        got = [
            {"kind": e.kind, "attempt": e.attempt, "elapsed_ms": ms(e.elapsed), "delay_ms": ms(e.delay), "reason": e.reason, "error": e.error is not None,
             "value": e.result is not None, "retries_left": e.retries_left}
            for e in events
        ]
        want = expect["events"]
        if len(got) != len(want):
            problems.append(f"{len(got)} events {[g['kind'] for g in got]}, expected {len(want)} {[w['kind'] for w in want]}")
        for i, (g, w) in enumerate(zip(got, want)):
            for k, v in w.items():
                if g.get(k) != v:
                    problems.append(f"event {i} ({w['kind']}): {k} = {g.get(k)}, expected {v}")
    if "breaker_state" in expect and state != expect["breaker_state"]:
        problems.append(f"breaker state {state}, expected {expect['breaker_state']}")
    if "bounds_ms" in expect and bounds != expect["bounds_ms"]:
        problems.append(f"bounds {bounds} ms, expected {expect['bounds_ms']}")
    if "budget_tokens" in expect:
        tokens = r.budget.tokens if r.budget is not None else None
        if tokens is None or abs(tokens - expect["budget_tokens"]) > 1e-9:
            problems.append(f"budget tokens {tokens}, expected {expect['budget_tokens']}")
    return problems


def run_vector(v: Dict[str, Any], use_async: bool = False) -> List[str]:
    unknown = unknown_keys(v)
    if unknown:
        return unknown
    if "propagation" in v:
        return propagation_conformance.run(v, lambda: build(v))
    if "calls" in v:
        holder: Dict[str, Any] = {}
        current: Dict[str, Any] = {}  # the call running now, for the hooks of a hook vector
        r = build(v, on_event=lambda e: holder["listener"](e), hook_script=current if uses_hooks(v) else None)
        problems: List[str] = []
        hedged = uses_hedging(v)
        for i, call in enumerate(v["calls"]):
            current.clear()
            current.update(call)
            found = run_hedged_call(r, call, holder) if hedged else run_call(r, call, holder, use_async)
            problems += [f"call {i + 1}: {p}" for p in found]
        return problems
    if "expect_error" in v:
        knob = v["expect_error"]["knob"]
        try:
            build(v)
        except retryrs.PolicyDocumentError as e:
            where = f"policies.retry.{knob}"
            return [] if e.path == where and knob in str(e) else [f"error {e!r} is not about {where}"]
        return [f"built without error, expected one naming {knob}"]
    if "retry_after" in v:
        ra = v["retry_after"]
        got = retryrs.parse_retry_after(ra["value"], now=ra["now_unix_s"])
        want = ra["expect_ms"]
        if want is None:
            return [] if got is None else [f"got {got} s, expected no hint"]
        if want == "saturated":
            return [] if got is not None and got * 1000 >= 1e15 else [f"got {got} s, expected saturated"]
        return [] if got is not None and math.isfinite(got) and round(got * 1000) == want else [f"got {got} s, expected {want} ms"]
    if "status" in v:
        st = v["status"]
        got = retryrs.is_retryable_status(st["code"])
        return [] if got == st["retryable"] else [f"is_retryable_status({st['code']}) = {got}"]
    if "http" in v:
        h = v["http"]
        got = retryrs.classify_http(
            h["method"], status=h.get("status"), failure=h.get("failure"),
            retry_methods=h.get("retry_methods"), retry_statuses=h.get("retry_statuses"),
            idempotency_key=h.get("idempotency_key"),
            honour_idempotency_key=h.get("honour_idempotency_key", True),
        )
        return [] if got == h["expect"] else [f"classify_http = {got!r}, expected {h['expect']!r}"]
    return ["vector has none of calls, expect_error, retry_after, status, http, propagation"]


def uses_hedging(v: Dict[str, Any]) -> bool:
    """A vector whose policy hedges (a policy's "hedge", a service config's hedgingPolicy)."""
    configs = v.get("service_config", {}).get("methodConfig", [])
    return "hedge" in v.get("policy", {}) or any("hedgingPolicy" in c for c in configs)


def run_hedged_call(r: Retrier, call: Dict[str, Any], holder: Dict[str, Any]) -> List[str]:
    """One call of a hedging vector, through the Python host's hedged call (the native
    stepper the asyncio driver runs, ``Retrier._hedge()``) on virtual time, as
    tests/conformance/README.md says: attempt k ends ``takes_ms`` after its launch; at one
    instant outcomes are reported (in attempt order) before a due hedge; cancelled attempts'
    late results are reported afterwards and must be dropped."""
    script = call["attempts"]
    expect = call["expect"]
    problems: List[str] = []
    events: List[Any] = []
    holder["listener"] = events.append
    launched: List[int] = []
    bounds: List[Optional[int]] = []
    ends: Dict[int, int] = {}
    failures: List[Tuple[Any, bool]] = []
    raised: Dict[int, BaseException] = {}
    cancelled: List[int] = []
    winner: Optional[int] = None
    outcome, reason, error = None, None, None
    value: Any = None
    now = 0

    def outcome_of(hc: Any, k: int) -> Any:
        step = script[k - 1]
        if step["result"] == "success":
            return hc.succeeded(k)
        if step["result"] == "rejected_value":
            rejected = Value(k, True, step.get("hint_ms"))
            return hc.rejected(k, rejected)
        err = scripted_failure(k, step)
        raised[k] = err
        return hc.failed(k, err)

    with testing.virtual_time():
        if call.get("at_ms"):
            testing.advance(call["at_ms"] / 1000)
        try:
            hc = r._hedge()
        except RetryExhausted as e:
            hc, outcome, reason, error = None, "exhausted", e.reason, e
        queue: List[int] = []
        step = hc.poll() if hc is not None else None
        while step is not None:
            action = step[0]
            if action == _native._HEDGE_LAUNCH:
                k = step[1]
                if k > len(script):
                    problems.append(f"launched attempt {k}, script has {len(script)}")
                    return problems
                launched.append(now)
                info = hc.attempt_info(k)
                if info.number != k:
                    problems.append(f"attempt {k}: attempt_info says {info.number}")
                bounds.append(ms(info.remaining))
                ends[k] = now + script[k - 1].get("takes_ms", 0)
            elif action == _native._HEDGE_WON:
                winner, cancelled, outcome = step[1], list(step[3]), "success"
                value = Value(winner, False)
                break
            elif action == _native._HEDGE_STOP:
                cancelled, error = list(step[3]), step[4]
                if isinstance(error, RetryExhausted):
                    outcome, reason = "exhausted", error.reason
                elif isinstance(error, RetryCancelled):
                    outcome = "cancelled"
                elif isinstance(error, Permanent):
                    outcome = "rejected"
                else:
                    problems.append(f"stopped with {error!r}")
                break
            elif action == _native._HEDGE_WAIT and not queue:
                running = hc.running
                targets = [ends[k] for k in running]
                if step[2] is not None:
                    targets.append(now + round(step[2] * 1000))
                if not targets:
                    problems.append("told to wait with nothing in flight and no timer")
                    return problems
                target = min(targets)
                testing.advance((target - now) / 1000)
                now = target
                queue = sorted(k for k in running if ends[k] <= now)
            if queue:
                step = outcome_of(hc, queue.pop(0))
                if step[0] == _native._HEDGE_DROPPED:
                    problems.append("an attempt in flight was dropped")
            else:
                step = hc.poll()
        # The losers' late results: dropped, with no event and no budget change.
        if hc is not None:
            seen, tokens = len(events), (r.budget.tokens if r.budget is not None else None)
            for k in sorted(cancelled):
                if hc_step_dropped(outcome_of(hc, k)) is False:
                    problems.append(f"attempt {k}'s late result was not dropped")
            if len(events) != seen or (r.budget is not None and r.budget.tokens != tokens):
                problems.append("a late result changed the events or the budget")
        state = r.breaker.state if r.breaker is not None else None

    if outcome != expect["outcome"]:
        problems.append(f"outcome {outcome} ({error!r}), expected {expect['outcome']}")
    if "reason" in expect and reason != expect["reason"]:
        problems.append(f"reason {reason}, expected {expect['reason']}")
    if "attempts" in expect and len(launched) != expect["attempts"]:
        problems.append(f"{len(launched)} attempts launched, expected {expect['attempts']}")
    if outcome == "rejected" and not any(error is e for e in raised.values()):
        problems.append("the rejected error is not the original object")
    if isinstance(error, RetryExhausted) and error.attempts != len(launched):
        problems.append(f"RetryExhausted.attempts {error.attempts} != {len(launched)}")
    if "winner" in expect and winner != expect["winner"]:
        problems.append(f"winner {winner}, expected {expect['winner']}")
    if outcome == "success" and (not isinstance(value, Value) or value.n != winner):
        problems.append(f"value {value!r} is not the winner's")
    if "launched_ms" in expect and launched != expect["launched_ms"]:
        problems.append(f"launched at {launched} ms, expected {expect['launched_ms']}")
    if "cancelled" in expect and cancelled != expect["cancelled"]:
        problems.append(f"cancelled {cancelled}, expected {expect['cancelled']}")
    return problems + shared_checks(r, expect, events, state, bounds)


def hc_step_dropped(step: Any) -> bool:
    return bool(step[0] == _native._HEDGE_DROPPED)


def uses_hooks(v: Dict[str, Any]) -> bool:
    """A hook vector (tests/conformance/README.md): an attempt scripts a hook's "wait"."""
    return any("wait" in a for c in v.get("calls", []) for a in c.get("attempts", []))


def run_all(use_async: bool = False) -> Tuple[int, List[Tuple[str, List[str]]], int]:
    """(passed, failures, skipped): every vector runs (the hedging ones through the hosts'
    hedged call, ``run_hedged_call``); nothing is skipped."""
    passed, failures, skipped = 0, [], 0
    for fname, v in load():
        try:
            problems = run_vector(v, use_async)
        except Exception as e:  # a crash is a failed vector, reported, not a dead runner
            problems = [f"runner raised {e!r}"]
        if problems:
            failures.append((f"{fname}:{v['id']}", problems))
        else:
            passed += 1
    return passed, failures, skipped
