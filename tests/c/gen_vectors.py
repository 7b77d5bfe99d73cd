#!/usr/bin/env python3
"""Turns tests/conformance/*.json into a C table (vectors.c) for the C conformance runner.

No JSON library is assumed on the C side: the vectors become static data at build time.
Unknown keys are an error, so a vector feature the C runner does not know about fails
the build instead of being silently ignored.

Usage: gen_vectors.py OUT.c FILE.json...
"""
import json
import sys

# A vector's policy is in the policy-document format (docs/policies.md); the C runner
# loads it with retryrs_policies_from_json, which rejects unknown keys itself.
ATTEMPT_KEYS = {"result", "hint_ms", "takes_ms", "wait_overrun_ms", "cancel_during_wait", "wait", "timed_out"}
EXPECT_KEYS = {"outcome", "reason", "attempts", "value", "delays_ms", "events", "budget_tokens", "breaker_state",
               "bounds_ms", "winner", "launched_ms", "cancelled"}
# Every budget kind's keys and every breaker model's (the core's loader checks which belong
# to which kind or model).
BUDGET_KEYS = {"kind", "max_tokens", "token_ratio", "capacity", "retry_cost", "timeout_retry_cost", "no_retry_increment",
               "ttl", "min_retries_per_sec", "percent_can_retry"}
BREAKER_KEYS = {"model", "failures", "failure_ratio", "minimum_throughput", "sampling_duration", "break_duration",
                "half_open_probes", "break_multiplier", "max_break_duration", "per_attempt",
                "count_permanent", "judge_all_probes", "minimum_calls", "window_size", "slow_call_duration", "slow_call_ratio"}
EVENT_KEYS = {"kind", "attempt", "elapsed_ms", "delay_ms", "reason", "error", "value", "retries_left"}
# "error" and "value" (whether the event carries the failure, an error or a rejected value)
# have no C counterpart: a C event carries no failure (it is the attempt callback's verdict),
# and neither does a C outcome ("value" of expect), so they are read and ignored.
# A rejected value is the C callback answering RETRYRS_TRANSIENT for a value it does not
# accept (retryrs.h says so): C needs no result predicate.
RESULTS = {"success": "RETRYRS_SUCCESS", "transient": "RETRYRS_TRANSIENT", "permanent": "RETRYRS_PERMANENT",
           "dont_retry": "RETRYRS_DONT_RETRY", "rejected_value": "RETRYRS_TRANSIENT"}


# The skip tests/conformance/README.md allows (hedging, in a host that cannot hedge): the
# C runner drives hedged calls through retryrs_hedge_*, so it skips none; the table keeps
# the count (0) and the reason for the report.
HEDGING_PENDING = "hedging: host support pending"


def uses_hedging(v):
    configs = v.get("service_config", {}).get("methodConfig", [])
    return "hedge" in v.get("policy", {}) or any("hedgingPolicy" in c for c in configs)


def fail(where, msg):
    sys.exit(f"gen_vectors: {where}: {msg}")


def check_keys(where, obj, allowed):
    extra = set(obj) - allowed
    if extra:
        fail(where, f"unknown keys {sorted(extra)}: teach tests/c/conformance.c about them")


def c_str(s):
    if s is None:
        return "NULL"
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def num(x):
    return repr(float(x))


class Out:
    def __init__(self):
        self.defs = []
        self.n = 0

    def array(self, ctype, items):
        if not items:
            return "NULL"
        self.n += 1
        name = f"cv_arr_{self.n}"
        self.defs.append(f"static const {ctype} {name}[] = {{\n  " + ",\n  ".join(items) + "\n};")
        return name


def policy_init(where, v):
    """The vector's policy as the C runner loads it: a document whose one policy is
    "retry" (the contract's default name), with the vector's budgets, or the vector's gRPC
    service_config, whose service "retry" it runs."""
    for name, b in v.get("budgets", {}).items():
        check_keys(f"{where}.budgets.{name}", b, BUDGET_KEYS)
    for name, b in v.get("breakers", {}).items():
        check_keys(f"{where}.breakers.{name}", b, BREAKER_KEYS)
    document = v.get("service_config") or {"policies": {"retry": v.get("policy", {})}, "budgets": v.get("budgets", {}),
                                           "breakers": v.get("breakers", {})}
    return "{" + f".document = {c_str(json.dumps(document))}, .service_config = {int('service_config' in v)}, .hedging = {int(uses_hedging(v))}" + "}"


def call_init(out, where, c):
    check_keys(where, c, {"at_ms", "attempts", "expect"})
    attempts = []
    for i, a in enumerate(c["attempts"]):
        check_keys(f"{where}.attempts[{i}]", a, ATTEMPT_KEYS)
        if a["result"] not in RESULTS:
            fail(where, f"unknown result {a['result']!r}")
        fields = [f".result = {RESULTS[a['result']]}"]
        if a.get("timed_out") is not None:
            # The host cut the attempt at its bound (tests/conformance/README.md).
            if a["timed_out"] is not True or a["result"] != "transient" or "takes_ms" in a:
                fail(where, "timed_out is true, with result transient and no takes_ms")
            fields = [".result = RETRYRS_TIMED_OUT", ".timed_out = 1"]
        if "hint_ms" in a:
            fields.append(f".has_hint = 1, .hint_ms = {num(a['hint_ms'])}")
        fields.append(f".takes_ms = {int(a.get('takes_ms', 0))}ULL")
        fields.append(f".wait_overrun_ms = {int(a.get('wait_overrun_ms', 0))}ULL")
        fields.append(f".cancel_during_wait = {1 if a.get('cancel_during_wait') else 0}")
        # A hook vector's scripted answer (tests/conformance/README.md, "wait").
        w = a.get("wait", "engine")
        if w == "engine":
            fields.append(".plan = RETRYRS_PLAN_ENGINE")
        elif w == "stop":
            fields.append(".plan = RETRYRS_PLAN_STOP")
        elif isinstance(w, int) and not isinstance(w, bool) and w >= 0:
            fields.append(f".plan = RETRYRS_PLAN_EXACT, .wait_ms = {num(w)}")
        else:
            fail(where, f"wait is a whole number of ms, \"engine\" or \"stop\", not {w!r}")
        attempts.append("{" + ", ".join(fields) + "}")
    e = c["expect"]
    check_keys(where + ".expect", e, EXPECT_KEYS)
    events = []
    for i, ev in enumerate(e.get("events", [])):
        check_keys(f"{where}.events[{i}]", ev, EVENT_KEYS)
        events.append("{" + ", ".join([
            f".kind = {c_str(ev['kind'])}",
            f".attempt = {int(ev.get('attempt', -1))}",
            f".elapsed_ms = {int(ev.get('elapsed_ms', -1))}",
            f".delay_ms = {int(ev.get('delay_ms', -1))}",
            f".reason = {c_str(ev.get('reason'))}",
            f".retries_left = {int(ev.get('retries_left', -1))}",
        ]) + "}")
    delays = [f"{int(d)}LL" for d in e.get("delays_ms", [])]
    fields = [
        f".attempts = {out.array('cv_attempt', attempts)}, .n_attempts = {len(attempts)}",
        f".hooked = {int(any('wait' in a for a in c['attempts']))}",
        f".outcome = {c_str(e['outcome'])}",
        f".reason = {c_str(e.get('reason'))}",
        f".expect_attempts = {int(e.get('attempts', -1))}",
        f".has_delays = {1 if 'delays_ms' in e else 0}, .delays = {out.array('long long', delays)}, .n_delays = {len(delays)}",
        f".has_events = {1 if 'events' in e else 0}, .events = {out.array('cv_event', events)}, .n_events = {len(events)}",
    ]
    if "budget_tokens" in e:
        fields.append(f".has_budget_tokens = 1, .budget_tokens = {num(e['budget_tokens'])}")
    fields.append(f".at_ms = {int(c.get('at_ms', 0))}ULL")
    fields.append(f".breaker_state = {c_str(e.get('breaker_state'))}")
    # Hedged calls: the winner (-1: none expected), when each attempt launched, which
    # were cancelled (a mask, bit k-1 for attempt k).
    fields.append(f".winner = {int(e.get('winner', -1))}")
    if "launched_ms" in e:
        launched = [f"{int(t)}LL" for t in e["launched_ms"]]
        fields.append(f".has_launched = 1, .launched = {out.array('long long', launched)}, .n_launched = {len(launched)}")
    if "cancelled" in e:
        mask = sum(1 << (int(k) - 1) for k in e["cancelled"])
        fields.append(f".has_cancelled = 1, .cancelled = {mask}u")
    if "bounds_ms" in e:
        # Each attempt's bound; null (unbounded) is RETRYRS_UNBOUNDED (UINT64_MAX) in C.
        bounds = ["UINT64_MAX" if b is None else f"{int(b)}ULL" for b in e["bounds_ms"]]
        fields.append(f".has_bounds = 1, .bounds = {out.array('uint64_t', bounds)}, .n_bounds = {len(bounds)}")
    return "{" + ", ".join(fields) + "}"


# The propagation cases (tests/conformance/README.md): each case's keys and its expect's.
PROPAGATION_CASES = {
    "inbound": ({"headers", "limit_ms", "trust_mesh"}, {"budget_ms", "is_retry", "clamped", "malformed"}),
    "margin": ({"left_ms"}, {"margin_ms"}),
    "constrain": ({"left_ms", "is_retry"}, {"deadline_ms", "max_attempts", "changed"}),
    "outbound": ({"left_ms", "attempt", "is_retry", "mesh", "kind"}, {"headers"}),
    "pushback": ({"headers", "verdict"}, {"pushback", "verdict", "wait_ms"}),
    "upward": ({"requests", "observe_only"}, {"upward"}),
    "allowlist": ({"hosts", "host"}, {"allows"}),
}
UNBOUNDED = "UINT64_MAX"


def ms_or_unbounded(x):
    return UNBOUNDED if x is None else f"{int(x)}ULL"


def headers_init(out, headers):
    names = [c_str(n) for n, _ in headers] or ["NULL"]
    values = [c_str(v) for _, v in headers] or ["NULL"]
    return f".names = {out.array('char *const', names)}, .values = {out.array('char *const', values)}, .n_headers = {len(headers)}"


def propagation_init(out, where, p):
    cases = [k for k in PROPAGATION_CASES if k in p]
    if len(cases) != 1:
        fail(where, f"a propagation vector needs exactly one case of {sorted(PROPAGATION_CASES)}, has {cases}")
    which = cases[0]
    keys, expect_keys = PROPAGATION_CASES[which]
    check_keys(where, p, {which, "expect"})
    case, want = p[which], p["expect"]
    check_keys(f"{where}.{which}", case, keys)
    check_keys(f"{where}.expect", want, expect_keys)
    f = [f".which = {c_str(which)}"]
    if which == "inbound":
        f += [headers_init(out, case["headers"]), f".limit_ms = {ms_or_unbounded(case.get('limit_ms', 15000))}",
              f".trust_mesh = {int(case.get('trust_mesh', False))}", f".budget_ms = {ms_or_unbounded(want['budget_ms'])}",
              f".expect_is_retry = {int(want['is_retry'])}", f".clamped = {int(want['clamped'])}",
              f".malformed = {int(want['malformed'])}"]
    elif which == "margin":
        f += [f".left_ms = {int(case['left_ms'])}ULL", f".margin_ms = {int(want['margin_ms'])}ULL"]
    elif which == "constrain":
        f += [f".left_ms = {ms_or_unbounded(case['left_ms'])}", f".is_retry = {int(case['is_retry'])}",
              f".deadline_ms = {ms_or_unbounded(want['deadline_ms'])}", f".max_attempts = {int(want['max_attempts'])}"]
    elif which == "outbound":
        mesh = {"none": "RETRYRS_MESH_NONE", "envoy": "RETRYRS_MESH_ENVOY", "linkerd": "RETRYRS_MESH_LINKERD"}[case["mesh"]]
        kind = {"http": "RETRYRS_REQUEST_HTTP", "grpc": "RETRYRS_REQUEST_GRPC", "connect": "RETRYRS_REQUEST_CONNECT"}[case["kind"]]
        text = "".join(f"{n}: {v}\r\n" for n, v in want["headers"])
        f += [f".left_ms = {ms_or_unbounded(case['left_ms'])}", f".attempt = {int(case['attempt'])}",
              f".is_retry = {int(case['is_retry'])}", f".mesh = {mesh}", f".kind = {kind}", f".headers_text = {c_str(text)}"]
    elif which == "pushback":
        pb = want["pushback"]
        kind = "RETRYRS_PUSHBACK_NONE" if pb is None else "RETRYRS_PUSHBACK_DONT_RETRY" if pb == "dont_retry" else "RETRYRS_PUSHBACK_WAIT"
        f += [headers_init(out, case["headers"]), f".verdict_in = {c_str(case['verdict'])}", f".pushback = {kind}",
              f".pushback_ms = {int(pb) if isinstance(pb, int) else 0}ULL", f".verdict = {c_str(want['verdict'])}",
              f".wait_ms = {ms_or_unbounded(want['wait_ms'])}"]
    elif which == "upward":
        flat = [h for r in case["requests"] for h in r]
        sizes = [str(len(r)) for r in case["requests"]] or ["0"]
        upward = {"run": "RETRYRS_UPWARD_RUN", "refuse": "RETRYRS_UPWARD_REFUSE", "observed": "RETRYRS_UPWARD_OBSERVED",
                  "capped": "RETRYRS_UPWARD_CAPPED"}
        f += [headers_init(out, flat), f".request_sizes = {out.array('size_t', sizes)}",
              f".n_requests = {len(case['requests'])}", f".observe_only = {int(case['observe_only'])}",
              f".upward = {out.array('retryrs_upward', [upward[u] for u in want['upward']] or ['0'])}"]
    else:
        hosts = case["hosts"]
        if hosts is not None:
            f.append(f".has_hosts = 1, .hosts = {out.array('char *const', [c_str(h) for h in hosts] or ['NULL'])}, .n_hosts = {len(hosts)}")
        f += [f".host = {c_str(case['host'])}", f".allows = {int(want['allows'])}"]
    return out.array("cv_prop", ["{" + ", ".join(f) + "}"])


def vector_init(out, path, v):
    where = f"{path}:{v.get('id')}"
    bodies = [k for k in ("calls", "expect_error", "retry_after", "status", "http", "propagation") if k in v]
    if len(bodies) != 1:
        fail(where, f"needs exactly one of calls/expect_error/retry_after/status/http/propagation, has {bodies}")
    check_keys(where, v, {"id", "rule", "policy", "budgets", "breakers", "service_config", bodies[0]})
    timed = [c["at_ms"] for c in v.get("calls", []) if "at_ms" in c]
    if timed and (len(timed) != len(v["calls"]) or timed != sorted(timed)):
        fail(where, "at_ms: every call of the vector gives one, in order")
    fields = [f".id = {c_str(v['id'])}", f".file = {c_str(path)}"]
    body = bodies[0]
    if body in ("calls", "expect_error") or (body == "propagation" and "policy" in v):
        fields.append(f".policy = {policy_init(where, v)}")
    if body == "calls":
        calls = [call_init(out, f"{where}.calls[{i}]", c) for i, c in enumerate(v["calls"])]
        fields += [".kind = CV_CALLS", f".calls = {out.array('cv_call', calls)}, .n_calls = {len(calls)}"]
    elif body == "expect_error":
        check_keys(where, v["expect_error"], {"knob"})
        fields += [".kind = CV_ERROR", f".knob = {c_str(v['expect_error']['knob'])}"]
    elif body == "retry_after":
        ra = v["retry_after"]
        check_keys(where, ra, {"value", "now_unix_s", "expect_ms"})
        exp = ra["expect_ms"]
        kind = "CV_RA_NONE" if exp is None else "CV_RA_SATURATED" if exp == "saturated" else "CV_RA_MS"
        ms = exp if isinstance(exp, int) else 0
        fields += [".kind = CV_RETRY_AFTER", f".ra_value = {c_str(ra['value'])}",
                   f".ra_now_unix_s = {int(ra['now_unix_s'])}LL", f".ra_expect = {kind}", f".ra_expect_ms = {ms}ULL"]
    elif body == "http":
        h = v["http"]
        check_keys(where, h, {"method", "status", "failure", "retry_methods", "retry_statuses", "idempotency_key",
                              "honour_idempotency_key", "expect"})
        if ("status" in h) == ("failure" in h):
            fail(where, "an http vector needs exactly one of status, failure")
        outcome = {"connect": "RETRYRS_HTTP_CONNECT_FAILED", "network": "RETRYRS_HTTP_NETWORK_FAILED"}.get(h.get("failure"), "RETRYRS_HTTP_RESPONSE")
        if "failure" in h and h["failure"] not in ("connect", "network"):
            fail(where, f"unknown failure {h['failure']!r}")
        fields += [".kind = CV_HTTP", f".http_method = {c_str(h['method'])}", f".http_outcome = {outcome}",
                   f".http_status = {int(h.get('status', 0))}", f".http_expect = {c_str(h['expect'])}"]
        # C passes the header's value, or NULL: a request whose header is not honoured is
        # classified as one without it.
        if h.get("idempotency_key") is not None and h.get("honour_idempotency_key", True):
            fields.append(f".http_idempotency_key = {c_str(h['idempotency_key'])}")
        if "retry_methods" in h:
            # A non-NULL pointer even for an empty list: empty is not "the default list".
            items = [c_str(m) for m in h["retry_methods"]] or ["NULL"]
            fields.append(f".has_http_methods = 1, .http_methods = {out.array('char *const', items)}, .n_http_methods = {len(h['retry_methods'])}")
        if "retry_statuses" in h:
            items = [str(int(s)) for s in h["retry_statuses"]] or ["0"]
            fields.append(f".has_http_statuses = 1, .http_statuses = {out.array('int32_t', items)}, .n_http_statuses = {len(h['retry_statuses'])}")
    elif body == "propagation":
        fields += [".kind = CV_PROPAGATION", f".prop = {propagation_init(out, where, v['propagation'])}"]
    else:
        st = v["status"]
        check_keys(where, st, {"code", "retryable"})
        fields += [".kind = CV_STATUS", f".status_code = {int(st['code'])}", f".status_retryable = {1 if st['retryable'] else 0}"]
    return "{" + ", ".join(fields) + "}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = Out()
    vectors = []
    skipped = []
    for path in sorted(sys.argv[2:]):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        name = path.rsplit("/", 1)[-1]
        for v in doc["vectors"]:
            vectors.append(vector_init(out, name, v))
    text = ["/* Generated by tests/c/gen_vectors.py from tests/conformance/ (every .json): do not edit. */",
            '#include "conformance.h"', ""]
    text += out.defs
    text.append("const cv_vector cv_vectors[] = {\n  " + ",\n  ".join(vectors) + "\n};")
    text.append(f"const size_t cv_vector_count = {len(vectors)};")
    names = ", ".join(c_str(n) for n in skipped) or "NULL"
    text.append(f"const char *const cv_skipped[] = {{{names}}};")
    text.append(f"const size_t cv_skipped_count = {len(skipped)};")
    text.append(f"const char *const cv_skip_reason = {c_str(HEDGING_PENDING)};")
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
