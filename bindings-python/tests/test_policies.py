"""Policy documents in Python: the shared document gives the policies and waits every host
gets (tests/policies/expected.json), every error case names the same path, gRPC's example
service config, hostile input. The loader is the core's; these check the wiring."""

from __future__ import annotations

import collections.abc
import json
import pathlib

import pytest

import retryrs
from retryrs import PolicyDocumentError, Retrier, RetryExhausted, load_policies

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "policies"
EXPECTED = json.loads((DATA / "expected.json").read_text())
ERRORS = json.loads((DATA / "errors.json").read_text())["cases"]
GRPC_CASES = json.loads((DATA / "grpc_cases.json").read_text())["cases"]


def waits(policy: retryrs.Policy) -> list[int]:
    """The waits (ms) of a call whose every attempt fails transiently."""
    events: list[retryrs.Event] = []
    retrier = Retrier.from_policy(policy, retry_on=OSError, on_event=events.append)

    def fail() -> None:
        raise ConnectionError("down")

    with pytest.raises(RetryExhausted):
        retrier.call(fail)
    return [round(e.delay * 1000) for e in events if e.kind == "retrying" and e.delay is not None]


@pytest.mark.parametrize("name", sorted(EXPECTED["policies"]))
def test_the_shared_document_gives_every_host_s_policies(name: str, virtual: object) -> None:
    want = EXPECTED["policies"][name]
    policies = load_policies(DATA / "shared.json")
    p = policies[name]
    k = want["knobs"]
    assert p.max_attempts == k["max_attempts"]
    assert p.initial_delay == k["initial_delay_ms"] / 1000
    assert p.multiplier == k["multiplier"]
    assert p.max_delay == k["max_delay_ms"] / 1000
    assert p.deadline == (None if k["deadline_ms"] is None else k["deadline_ms"] / 1000)
    assert p.max_retry_after == (None if k["max_retry_after_ms"] is None else k["max_retry_after_ms"] / 1000)
    assert p.jitter == k["jitter"] and p.name == k["name"] and p.seed == k["seed"]
    assert (p.budget is None) == (k["budget"] is None)
    assert waits(p) == want["waits_ms"]


def test_the_three_sources_load_the_same(virtual: object) -> None:
    text = (DATA / "shared.json").read_text()
    for source in (str(DATA / "shared.json"), DATA / "shared.json", text, json.loads(text)):
        assert waits(load_policies(source)["payments"]) == EXPECTED["policies"]["payments"]["waits_ms"]


def test_the_mapping_is_read_only_and_a_policy_answers_its_knobs() -> None:
    policies = load_policies(DATA / "shared.json")
    assert isinstance(policies, collections.abc.Mapping) and isinstance(policies, retryrs.PolicyDocument)
    assert dict(policies) == {k: policies[k] for k in policies} and policies.warnings == ()
    with pytest.raises(TypeError):
        policies["x"] = policies["payments"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        policies["payments"].max_attempts = 9  # type: ignore[misc]
    for knob in retryrs._native._knobs():
        if knob[1] != "host":
            getattr(policies["payments"], knob[0])  # every knob of the table reads
    assert repr(policies["payments"]).startswith("Policy(name='payments', max_attempts=4, initial_delay=0.1")
    with pytest.raises(AttributeError, match="no attribute 'retry_on'"):
        policies["payments"].retry_on  # type: ignore[attr-defined]


def test_a_budget_named_twice_is_one_object(virtual: object) -> None:
    policies = load_policies(DATA / "shared.json")
    assert policies["payments"].budget is policies["rates"].budget
    waits(policies["payments"])
    assert policies["rates"].budget is not None
    assert policies["rates"].budget.tokens == EXPECTED["budget_after_payments"]["tokens"]
    assert waits(policies["rates"]) == EXPECTED["budget_after_payments"]["rates_waits_ms"]
    assert load_policies(DATA / "shared.json")["payments"].budget is not policies["payments"].budget


def test_from_policy_takes_the_host_parts_and_knob_overrides() -> None:
    p = load_policies(DATA / "shared.json")["payments"]
    # A knob given again overrides the document's (issue 24); the rest stay the document's.
    over = Retrier.from_policy(p, max_attempts=3, reraise=True)
    assert (over.max_attempts, over.name, over.budget, over.reraise) == (3, "payments", p.budget, True)
    assert over.initial_delay == p.initial_delay and over.deadline == p.deadline
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_attempt'"):
        Retrier.from_policy(p, max_attempt=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max_attempts"):
        Retrier.from_policy(p, max_attempts=0)
    r = Retrier.from_policy(p, retry_on=ValueError, attempt_timeout=2)
    assert (r.max_attempts, r.name, r.attempt_timeout, r.budget) == (4, "payments", 2, p.budget)
    with pytest.raises(TypeError):
        Retrier.from_policy({"max_attempts": 3})  # type: ignore[arg-type]


HEDGED = {"policies": {"reads": {"max_attempts": 4, "hedge": {"max_attempts": 2, "delay": "50ms"}}}}


def test_a_hedging_policy_is_refused_by_one_at_a_time_calls_saying_why() -> None:
    """A policy that hedges makes a Retrier whose async calls hedge (issue 26); the calls
    that run one attempt at a time (the sync call, a decorated sync function, the loop
    forms) refuse it, saying why and what to use instead, never silently retrying it
    with the backoff knobs."""
    p = load_policies(HEDGED)["reads"]
    r = Retrier.from_policy(p, retry_on=OSError)
    assert r._hedges
    called = []
    for run in (lambda: r.call(called.append, 1), lambda: r(called.append)(1), lambda: [a for a in r]):
        with pytest.raises(ValueError) as info:
            run()
        message = str(info.value)
        assert "reads: this policy hedges" in message, message
        assert "an attempt cannot be abandoned in a blocking call" in message, message
        assert "call_async" in message and "async def" in message, message
    assert called == [], "a refused call never runs the function"
    # The same document without the hedge: an ordinary retrier.
    plain = load_policies({"policies": {"reads": {"max_attempts": 4}}})["reads"]
    assert Retrier.from_policy(plain, retry_on=OSError).max_attempts == 4
    assert not Retrier.from_policy(plain, retry_on=OSError)._hedges


@pytest.mark.parametrize("case", ERRORS, ids=[c["name"] for c in ERRORS])
def test_every_error_names_its_path(case: dict) -> None:
    with pytest.raises(PolicyDocumentError) as info:
        load_policies(case["document"])
    err = info.value
    assert err.path == case["path"]
    assert case["path"] in str(err) and case["fragment"] in str(err)
    assert isinstance(err, ValueError)
    if case["position"] is not None:
        assert [err.line, err.column] == case["position"]


def test_a_file_s_error_carries_its_name_and_line(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "policies.json"
    f.write_text('{\n  "policies": {\n    "payments": { "deadline": "5 s" }\n  }\n}\n')
    with pytest.raises(PolicyDocumentError) as info:
        load_policies(f)
    assert str(info.value).startswith(f"{f}:3:31: policies.payments.deadline:")
    assert (info.value.file, info.value.line, info.value.column) == (str(f), 3, 31)
    with pytest.raises(PolicyDocumentError, match="cannot read it"):
        load_policies(tmp_path / "absent.json")


def test_hostile_input_is_a_clear_error() -> None:
    huge = '{"policies": {"p": {"name": "' + "x" * (100 * 1024 * 1024) + '"}}}'
    with pytest.raises(PolicyDocumentError, match="more than the 16777216"):
        load_policies(huge)
    with pytest.raises(PolicyDocumentError, match="recursion limit"):
        load_policies('{"policies": {"p": {"seed": ' + "[" * 100_000 + "]" * 100_000 + "}}}")
    with pytest.raises(PolicyDocumentError, match="not JSON data"):
        load_policies({"policies": {"p": {"multiplier": float("nan")}}})
    with pytest.raises(TypeError, match="a path, a JSON string or a dict"):
        load_policies(42)  # type: ignore[arg-type]


def test_grpc_s_example_service_config(virtual: object) -> None:
    policies = load_policies(DATA / "grpc_service_config.json")
    echo = policies["EchoService"]
    assert (echo.max_attempts, echo.initial_delay, echo.max_delay, echo.multiplier, echo.jitter, echo.deadline) == (
        4, 0.1, 1.0, 2.0, "proportional(0.2)", None)
    assert policies["EchoService/Stream"].max_attempts == 5  # gRPC's cap
    assert echo.budget is policies["EchoService/Stream"].budget
    w = waits(echo)
    assert len(w) == 3 and all(80 <= ms <= 120 * 2**i for i, ms in enumerate(w))


@pytest.mark.parametrize("case", GRPC_CASES, ids=[c["name"] for c in GRPC_CASES])
def test_grpc_service_configs_load_as_grpc_go_reads_them(case: dict) -> None:
    if "error" in case:
        with pytest.raises(PolicyDocumentError) as caught:
            load_policies(case["document"])
        assert caught.value.path == case["error"]["path"]
        assert case["error"]["fragment"] in str(caught.value)
        return
    policies = load_policies(case["document"])
    assert len(policies.warnings) == len(case["warnings"]), policies.warnings
    for got, want in zip(policies.warnings, case["warnings"]):
        assert want in got
    for look in case["lookups"]:
        key = policies.method_key(look["service"], look["method"])
        assert key == look["key"], look
        policy = policies.for_method(look["service"], look["method"])
        if key is None:
            assert policy is None
            continue
        assert policy is policies[key]
        assert policy.max_attempts == look["max_attempts"]
        assert policy.deadline == (None if look["deadline_ms"] is None else look["deadline_ms"] / 1000)
        assert (policy.budget is not None) == look["budget"]


def test_a_grpc_policy_waits_exactly_the_pushback(virtual: object) -> None:
    doc = {"methodConfig": [{"name": [{"service": "S"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
           "maxBackoff": "2s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}
    policy = load_policies(doc).for_method("S", "Get")
    assert policy is not None
    events: list[retryrs.Event] = []

    class PushedBack(Exception):
        retry_after = 0.03

    retrier = Retrier.from_policy(policy, retry_on=PushedBack, retry_after=lambda e: e.retry_after, on_event=events.append)

    def fail() -> None:
        raise PushedBack()

    with pytest.raises(RetryExhausted):
        retrier.call(fail)
    assert [round(e.delay * 1000) for e in events if e.kind == "retrying" and e.delay is not None] == [30, 30]


def test_ten_thousand_policies_load() -> None:
    # Correctness at size; the speed is bench/python's (not a timed test).
    doc = {"policies": {f"svc{i}": {"max_attempts": 1 + i % 7, "initial_delay": f"{i % 500}ms"} for i in range(10_000)}}
    policies = load_policies(doc)
    assert len(policies) == 10_000 and policies["svc9999"].initial_delay == 0.499


def test_the_stub_types_exactly_the_table_s_knobs() -> None:
    import ast

    stub = ast.parse((pathlib.Path(retryrs.__file__).parent / "_native.pyi").read_text())
    policy = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Policy")
    typed = [f.name for f in policy.body if isinstance(f, ast.FunctionDef)]
    # After the knobs, a gRPC policy's status codes and the verdict by them (not knobs).
    assert typed == [k[0] for k in retryrs._native._knobs() if k[1] != "host"] + ["grpc_status_codes", "grpc_verdict"]
