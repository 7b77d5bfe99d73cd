"""docs/policies.schema.json against the loader, with Python's jsonschema (draft 2020-12):
every document of tests/policies/schema_cases.json gets the loader's verdict from the
schema, except the rules JSON Schema cannot state (schema_cannot, listed in
docs/policies.md), which the schema accepts. ajv checks the same list in Node."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import jsonschema
import pytest

from retryrs import PolicyDocumentError, load_policies

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "policies.schema.json").read_text())
CASES = json.loads((ROOT / "tests" / "policies" / "schema_cases.json").read_text())["cases"]
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_the_schema_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for knob in SCHEMA["$defs"]["policy"]["properties"].values():
        if "pattern" in knob:
            re.compile(knob["pattern"])


def loads(text: str) -> bool:
    try:
        load_policies(text)
    except PolicyDocumentError:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_schema_and_loader_agree(case: dict[str, Any]) -> None:
    text = case["text"] if "text" in case else json.dumps(case["document"])
    assert loads(text) == case["loader"], "the loader"
    want = True if "schema_cannot" in case else case["loader"]
    errors = [e.message for e in VALIDATOR.iter_errors(json.loads(text))]
    assert (not errors) == want, errors


# gRPC A6's retryPolicy example as a whole service config (A6-client-retries.md).
A6_EXAMPLE = {
    "methodConfig": [{
        "name": [{"service": "grpc.testing.TestService"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    }],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
}


def test_a_grpc_service_config_loads_but_is_not_what_the_schema_describes() -> None:
    # docs/policies.md, "The schema": the loader reads A6's format; the schema describes
    # retryrs documents only, so an editor validating a service config with it refuses it.
    assert loads(json.dumps(A6_EXAMPLE))
    assert list(VALIDATOR.iter_errors(A6_EXAMPLE)), "the schema accepted a gRPC service config"
    guide = (ROOT / "docs" / "policies.md").read_text()
    assert "not gRPC service configs" in guide and "refuses it" in guide


def test_a_key_written_twice_is_refused_by_the_loader_and_invisible_to_the_schema() -> None:
    text = '{"policies": {"rates": {"max_attempts": 3, "max_attempts": 4}}}'
    assert not loads(text)
    assert not list(VALIDATOR.iter_errors(json.loads(text))), "a validator sees only the last value"
