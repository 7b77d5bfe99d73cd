#!/usr/bin/env python3
"""Loading a 10,000-policy document in Python: retryrs.load_policies (the core's loader:
parse, validate, build 10,000 policies) against json.load of the same file (the standard
library only parsing it), in the same run. Prints one markdown row. Usage: policies.py DOC"""
import json
import statistics
import sys
import time

import retryrs


def median_ms(f, runs=15):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


path = sys.argv[1]
assert len(retryrs.load_policies(path)) == 10_001
ours = median_ms(lambda: retryrs.load_policies(path))
with open(path) as fh:
    text = fh.read()
peer = median_ms(lambda: json.loads(text))
print(f"| Python | `load_policies` | {ours:.1f} | `json.loads` (parse only) | {peer:.1f} | {ours / peer:.2f}x |")
