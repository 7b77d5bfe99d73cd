#!/usr/bin/env python3
# Writes tests/conformance/quota_timeouts.json: the AWS quota's price of a retry after an
# attempt the host cut at its bound (issue 27). The expectations come from the model
# below (the contract's call loop, jitter none, with botocore's retries/standard.py
# RetryQuotaChecker and retries/quota.py RetryQuota: a retry costs 5, 10 after a timeout;
# a success gives back the cost of the retry that led to it, or 1; never past the
# capacity; a refused acquisition takes nothing), not read from the engine.
#
# An attempt with "timed_out": true is one the host cut at its bound (the attempt timeout,
# or the deadline's time left if that is sooner): it takes its bound and fails with the
# host's own timeout error (transient, no hint). One whose takes_ms equals the bound
# returned at it: an ordinary failure. (takes_ms past the bound alone is an attempt that
# overran it, not cut: tests/conformance/README.md.)
import json
import sys

V = []


def run_call(policy, quota, script):
    """One call: (expect, quota after). `quota` is [available, capacity]."""
    at = policy.get("attempt_timeout")
    deadline = policy.get("deadline")
    delay = policy["initial_delay"]
    max_attempts = policy["max_attempts"]
    t, events, delays, acquired = 0, [], [], None
    n = 0

    def ev(kind, attempt, **kw):
        e = {"kind": kind, "attempt": attempt, "elapsed_ms": t, **kw}
        e["retries_left"] = max_attempts - attempt
        e["error"] = kind != "success"
        events.append(e)

    for a in script:
        n += 1
        left = None if deadline is None else max(deadline - t, 0)
        bound = left if at is None else at if left is None else min(at, left)
        cut = a.get("timed_out", False)
        t += bound if cut else a.get("takes_ms", 0)
        result = "transient" if cut else a["result"]
        if result == "success":
            quota[0] = min(quota[0] + (acquired if acquired is not None else 1), quota[1])
            ev("success", n)
            return {"outcome": "success", "attempts": n, "delays_ms": delays, "events": events}
        ev("attempt_failed", n)
        if result == "permanent":
            ev("rejected", n)
            return {"outcome": "rejected", "attempts": n, "delays_ms": delays, "events": events}
        stop = None
        if deadline is not None and t > deadline:
            stop = "deadline"
        elif n >= max_attempts:
            stop = "attempts"
        elif deadline is not None and t + delay > deadline:
            stop = "deadline"
        else:
            cost = 10 if cut else 5
            if cost > quota[0]:
                stop = "budget"
            else:
                quota[0] -= cost
                acquired = cost
        if stop:
            ev("exhausted", n, reason=stop)
            return {"outcome": "exhausted", "reason": stop, "attempts": n, "delays_ms": delays, "events": events}
        ev("retrying", n, delay_ms=delay)
        delays.append(delay)
        t += delay
    sys.exit("a script ran out before its call ended")


def vec(id, rule, policy, capacity, calls):
    quota = [capacity, capacity]
    doc_policy = {
        "max_attempts": policy["max_attempts"],
        "initial_delay": f"{policy['initial_delay']}ms",
        "multiplier": 1,
        "jitter": "none",
        "deadline": None if policy.get("deadline") is None else f"{policy['deadline']}ms",
        "attempt_timeout": f"{policy['attempt_timeout']}ms",
        "budget": "quota",
    }
    budget = {"kind": "quota"} if capacity == 500 else {"kind": "quota", "capacity": capacity}
    out = []
    for script in calls:
        expect = run_call(policy, quota, script)
        expect["budget_tokens"] = quota[0]
        out.append({"attempts": script, "expect": expect})
    V.append({"id": id, "rule": rule, "policy": doc_policy, "budgets": {"quota": budget}, "calls": out})


CUT = {"result": "transient", "timed_out": True}


def tr(ms=0):
    return {"result": "transient", "takes_ms": ms}


def ok(ms=0):
    return {"result": "success", "takes_ms": ms}


vec(
    "quota-timeout-costs-ten",
    "issue 27: an attempt the host cut at its attempt timeout is a timeout: the AWS quota "
    "charges the retry after it 10 (botocore's _TIMEOUT_RETRY_REQUEST), after any other "
    "transient failure 5; a success gives back its last retry's cost, or 1; a call that "
    "fails for good gives nothing back; an attempt that returned exactly at its bound "
    "was not cut (5)",
    {"max_attempts": 3, "initial_delay": 10, "attempt_timeout": 100, "deadline": None},
    500,
    [
        [CUT, ok()],
        [CUT, CUT, CUT],
        [tr(20), ok()],
        [ok()],
        [tr(), CUT, ok(30)],
        [CUT, tr(), tr()],
        [tr(), CUT, tr(100)],
        [tr(100), ok()],
    ],
)

vec(
    "quota-timeout-does-not-fit",
    "issue 27: a quota of 12: a timeout's retry (10) fits once; the next is refused "
    "(reason budget) and takes nothing; then a plain retry (5) does not fit the 2 left "
    "either; a success without a retry gives 1",
    {"max_attempts": 3, "initial_delay": 10, "attempt_timeout": 100, "deadline": None},
    12,
    [[CUT, CUT, ok()], [tr(), ok()], [ok()], [CUT, ok()]],
)

vec(
    "quota-timeout-cut-at-the-deadline",
    "issue 27, contract 3a: the bound is the smaller of the attempt timeout and the "
    "deadline's time left; an attempt cut at the deadline ends the call (reason deadline) "
    "and its retry is never priced; one cut at its attempt timeout earlier costs 10",
    {"max_attempts": 5, "initial_delay": 10, "attempt_timeout": 300, "deadline": 500},
    500,
    [[CUT, CUT], [tr(50), ok()]],
)

if __name__ == "__main__":
    doc = {"topic": "The AWS quota's price of a retry after a timed-out attempt (issue 27)", "vectors": V}
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/conformance/quota_timeouts.json"
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
