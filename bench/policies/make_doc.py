#!/usr/bin/env python3
"""Writes the 10,000-policy document the policy-loading benchmark reads (deterministic:
every host loads the very same bytes). Usage: make_doc.py OUT.json"""
import json
import sys

policies = {"default": {"deadline": "10s", "max_retry_after": "30s"}}
for i in range(10_000):
    policies[f"service-{i:05d}"] = {
        "max_attempts": 1 + i % 7,
        "initial_delay": f"{50 + i % 400}ms",
        "max_delay": f"{5 + i % 20}s",
        "jitter": ["full", "equal", "none", "decorrelated", "proportional(0.2)"][i % 5],
        "budget": f"pool-{i % 10}",
    }
doc = {"policies": policies, "budgets": {f"pool-{i}": {"max_tokens": 10, "token_ratio": 0.1} for i in range(10)}}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f, indent=1)
