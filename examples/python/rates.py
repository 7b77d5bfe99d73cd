#!/usr/bin/env python3
"""The demo rates client: fetches a URL with requests, retried by retryrs through
``retryrs.http.RetryingAdapter`` (the one line: ``session.mount``), and prints one line
per retry and a success line, from the events.

    python rates.py http://127.0.0.1:PORT/<session>/rates/EURUSD

The policy is "rates" from examples/policies.json, the file the Node and C clients read
too (5 attempts, 200 ms, x2, 5 s cap, full jitter, 15 s deadline, seed 42). What is
retried (the retryable statuses, connection failures) and the Retry-After wait are the
core's rules, the same as the Node and C clients'. Exits 0 on a 200, 1 otherwise.
"""

import pathlib
import sys

import requests

import retryrs
from retryrs.http import RequestFailed, RetryableStatus, RetryingAdapter


def describe(error):
    if isinstance(error, RetryableStatus):
        return f"HTTP {error.status}"
    if isinstance(error, RequestFailed):
        return str(error)
    return repr(error)


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} URL", file=sys.stderr)
        return 2
    done = []

    def on_event(e):
        if e.kind == "retrying":
            print(f"[{round(e.elapsed * 1000):4d} ms] attempt {e.attempt} failed: {describe(e.error)} -> waiting {round(e.delay * 1000)} ms", flush=True)
        elif e.kind == "exhausted":
            print(f"[{round(e.elapsed * 1000):4d} ms] attempt {e.attempt} failed: {describe(e.error)} -> giving up ({e.reason})", flush=True)
        elif e.kind == "success":
            done.append(e)

    policies = retryrs.load_policies(pathlib.Path(__file__).resolve().parent.parent / "policies.json")
    session = requests.Session()
    session.mount("http://", RetryingAdapter(retryrs.Retrier.from_policy(policies["rates"], on_event=on_event)))
    try:
        resp = session.get(argv[1], timeout=10)
    except retryrs.RetryExhausted as e:
        print(f"gave up after {e.attempts} attempts ({e.reason}): {e.__cause__}")
        return 1
    except requests.RequestException as e:  # a failure the rules say not to repeat
        print(f"failed: {type(e).__name__}")
        return 1
    if resp.status_code != 200:
        print(f"response: HTTP {resp.status_code}")
        return 1
    print(f"[{round(done[-1].elapsed * 1000):4d} ms] success: {resp.text.strip()} (attempt {done[-1].attempt})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
