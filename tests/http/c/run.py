"""C's runner of the hostile-server HTTP conformance suite: every case of
tests/http/cases.json against the libcurl example's request function
(examples/c/curl_get), through the shared scripted server.

    python3 tests/http/c/run.py path/to/curl_get [--case NAME]...

libcurl's easy API reads the body before it returns, so this client reads the body
inside the attempt: ``expect_if_reads_body`` applies. One call is one process, so the
3,000-calls case does not apply here (curl_get_test.py runs every call under
valgrind's leak check instead); the 200 MiB case measures the process's peak RSS
against a warm-up run's.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from cases import Result, Server, Verdict, expectation, judge, load_cases  # noqa: E402

NOT_APPLICABLE = {"calls_3000_memory": "one call per process: leaks are valgrind's job (tests/c/curl_get_test.py)"}


def args_for(case: Dict[str, Any], url: str, out: str) -> List[str]:
    p, req = case["policy"], case["request"]
    args = ["-X", req["method"], "-o", out, "--jitter", "none"]
    if req.get("body_bytes"):
        args += ["-d", "x" * req["body_bytes"]]
    for k, v in (req.get("headers") or {}).items():
        args += ["-H", f"{k}: {v}"]
    if "max_attempts" in p:
        args += ["--max-attempts", str(p["max_attempts"])]
    for key, flag in (("deadline_ms", "--deadline"), ("max_retry_after_ms", "--max-retry-after")):
        if key in p:
            args += [flag, "none" if p[key] is None else str(p[key])]
    if p.get("attempt_timeout_ms") is not None:
        args += ["--attempt-timeout", str(p["attempt_timeout_ms"])]
    if "initial_delay_ms" in p:
        args += ["--initial-delay", str(p["initial_delay_ms"])]
    return args + [url]


def call(binary: str, case: Dict[str, Any], url: str) -> Result:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "body")
        t0 = time.monotonic()
        p = subprocess.run([binary, *args_for(case, url, out)], capture_output=True, text=True, timeout=120)
        r = Result(api="bytes", elapsed_ms=(time.monotonic() - t0) * 1000)
        m = re.search(r"response: HTTP (\d+) after (\d+) attempt", p.stdout)
        if p.returncode == 0 or m:
            r.outcome = "response"
            r.status = int(m.group(1)) if m else 200
            if os.path.exists(out):
                r.read, r.body = "whole", Path(out).read_bytes()
            if "body cut" in p.stdout:
                r.read, r.read_error, r.read_error_repr = "error", "cut", "the body was cut at 64 KiB"
            return r
        r.outcome = "error"
        g = re.search(r"gave up after (\d+) attempts \((\w+)\): (.*)", p.stdout)
        if g:
            r.error, r.attempts, r.error_repr = "exhausted", int(g.group(1)), g.group(0)
        else:
            last = (p.stdout.strip().splitlines() or [p.stderr.strip()])[-1]
            r.error = "timeout" if "timed out" in last.lower() or "timeout" in last.lower() else "connection"
            r.error_repr = last
        return r


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--case", action="append")
    args = ap.parse_args(argv)
    suite = load_cases()
    slack = float(suite["slack_ms"])
    server = Server()
    failed = 0
    try:
        for case in suite["cases"]:
            if args.case and case["name"] not in args.case:
                continue
            if case["name"] in NOT_APPLICABLE:
                print(f"n/a  {case['name']} / curl: {NOT_APPLICABLE[case['name']]}")
                continue
            expect = expectation(case, reads_body=True)
            v = Verdict()
            numbers = ""
            if "peak_rss_growth_mb" in expect:
                server.load({"listener": "http", "steps": []})
                call(args.binary, case, server.listeners["http"] + "/warm-up")
                warm = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            server.load(case["server"])
            r = call(args.binary, case, server.url(case))
            judge(expect, slack, r, server.seen(), v)
            if "peak_rss_growth_mb" in expect:
                grew = max(0.0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 - warm)
                numbers = f" (peak RSS +{grew:.1f} MB at most)"
                v.check(grew < expect["peak_rss_growth_mb"], f"peak RSS grew by {grew:.1f} MB, bound {expect['peak_rss_growth_mb']} MB")
            print(f"{'ok  ' if not v.failures else 'FAIL'} {case['name']} / curl{numbers}", flush=True)
            for f in v.failures:
                print(f"       {f}")
            failed += bool(v.failures)
    finally:
        server.close()
    print(f"curl: {failed} cases failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
