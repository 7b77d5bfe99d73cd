"""A policy from a gRPC service config keeps its status codes, and judges a status by
them (issue 35): a config that limits a method to UNAVAILABLE does not retry INTERNAL."""

import enum

import pytest

import retryrs

CONFIG = {
    "methodConfig": [
        {"name": [{"service": "pay"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                                                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}},
        {"name": [{"service": "reads"}], "hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": [13, "ABORTED"]}},
    ]
}


class StatusCode(enum.Enum):
    """grpc.StatusCode's shape: each value is (number, name)."""

    INTERNAL = (13, "internal")
    UNAVAILABLE = (14, "unavailable")


def test_the_codes_are_kept_and_judge_a_status_given_as_number_name_or_enum() -> None:
    policies = retryrs.load_policies(CONFIG)
    pay, reads = policies["pay"], policies["reads"]
    assert pay.grpc_status_codes == ["UNAVAILABLE"]
    assert reads.grpc_status_codes == ["ABORTED", "INTERNAL"]
    assert [pay.grpc_verdict(s) for s in (14, "UNAVAILABLE", StatusCode.UNAVAILABLE)] == ["transient"] * 3
    assert [pay.grpc_verdict(s) for s in (13, "INTERNAL", StatusCode.INTERNAL)] == ["permanent"] * 3
    assert pay.grpc_verdict(0) == "success"
    assert reads.grpc_verdict(StatusCode.INTERNAL) == "transient"


def test_a_broad_predicate_defers_to_the_config() -> None:
    policy = retryrs.load_policies(CONFIG)["pay"]

    class RpcError(Exception):
        def __init__(self, code: StatusCode) -> None:
            self.code = code

    r = retryrs.Retrier.from_policy(policy, retry_on=lambda e: policy.grpc_verdict(e.code) == "transient")
    calls = []

    def internal() -> None:
        calls.append(1)
        raise RpcError(StatusCode.INTERNAL)

    with retryrs.testing.virtual_time(), pytest.raises(RpcError):
        r.call(internal)
    assert len(calls) == 1, "INTERNAL is not in retryableStatusCodes: not retried"


def test_bad_statuses_and_native_policies_are_clear_errors() -> None:
    pay = retryrs.load_policies(CONFIG)["pay"]
    for bad, said in ((17, "17 is not a gRPC status code"), ("BUSY", '"BUSY" is not'),
                      (-1, "-1 is not a gRPC status code"), (True, "a number or a name"), (1.5, "a number or a name")):
        with pytest.raises(ValueError, match=said):
            pay.grpc_verdict(bad)
    native = retryrs.load_policies({"policies": {"x": {}}})["x"]
    assert native.grpc_status_codes is None
    with pytest.raises(ValueError, match="not loaded from a gRPC service config"):
        native.grpc_verdict(14)
