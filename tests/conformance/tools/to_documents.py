#!/usr/bin/env python3
"""Rewrites the vectors' policy objects into the policy-document format (docs/policies.md),
in place, so that every host's runner loads each vector's policy through its own
document loader (Rust Policies::from_json, Python load_policies, Node loadPolicies, C
retryrs_policies_from_json).

    python3 tests/conformance/tools/to_documents.py tests/conformance/*.json

What it changes, and nothing else (a converted vector is left as it is, so running it
again, e.g. after a merge brings new vectors, converts only the new ones):
  - a duration knob spelt with `_ms` and a number in ms becomes the knob's name with a
    string and a unit: "initial_delay_ms": 100  ->  "initial_delay": "100ms"
    (null stays null: off);
  - an inline budget, "budget": {"max_tokens": 10, "token_ratio": 0.1}, moves to the
    vector's "budgets" under the name "budget", and the policy names it: "budget": "budget".
A runner loads {"policies": {"retry": <policy>}, "budgets": <budgets or {}>} and runs the
policy "retry" (the document's default name is the key: "retry", the contract's default).
Only the policy objects' text is rewritten (the rest of each file keeps its layout), so
the diff is the conversion and nothing else."""

import json
import re
import sys


def ms_text(raw):
    n = json.loads(raw)
    if isinstance(n, float) and n.is_integer() and abs(n) < 1e15:
        n = int(n)
    return f'"{n}ms"'


DURATION = re.compile(r'"([a-z_]+)_ms"(\s*):(\s*)(null|-?[0-9][0-9.eE+-]*)')
BUDGET = re.compile(r'"budget"(\s*):(\s*)\{')
POLICY = re.compile(r'"policy"\s*:\s*\{')


def convert_span(text):
    """One policy object's text in the document format, and the budgets it needs."""
    text = DURATION.sub(lambda m: f'"{m[1]}"{m[2]}:{m[3]}' + ("null" if m[4] == "null" else ms_text(m[4])), text)
    budgets = None
    m = BUDGET.search(text)
    if m:
        budget, end = json.JSONDecoder().raw_decode(text, m.end() - 1)
        budgets = {"budget": budget}
        text = text[: m.start()] + f'"budget"{m[1]}:{m[2]}"budget"' + text[end:]
    return text, budgets


def convert_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    pos = 0
    count = 0
    decoder = json.JSONDecoder()
    for m in POLICY.finditer(text):
        if m.start() < pos:
            continue
        start = m.end() - 1
        _, end = decoder.raw_decode(text, start)
        span = text[start:end]
        converted, budgets = convert_span(span)
        out.append(text[pos:start])
        out.append(converted)
        if budgets:
            out.append(', "budgets": ' + json.dumps(budgets))
        if converted != span:
            count += 1
        pos = end
    out.append(text[pos:])
    if count:
        new = "".join(out)
        json.loads(new)  # still JSON
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return count


def main():
    total = 0
    for path in sys.argv[1:]:
        n = convert_file(path)
        if n:
            print(f"{path}: {n} vectors converted")
        total += n
    print(f"{total} vectors converted")


if __name__ == "__main__":
    main()
