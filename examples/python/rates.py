#!/usr/bin/env python3
"""The demo rates client: fetches a URL through retryrs (urllib only) and prints one line
per retry and a success line, from the events.

    python rates.py http://127.0.0.1:PORT/<session>/rates/EURUSD

The policy is "rates" from examples/policies.json, the file the Node and C clients read
too (5 attempts, 200 ms, x2, 5 s cap, full jitter, 15 s deadline, seed 42). The retryable statuses are transient, any other non-200 status is
permanent, and a Retry-After header is the minimum wait. Exits 0 on success, 1 otherwise.
"""

import pathlib
import sys
import urllib.error
import urllib.request

import retryrs


class HttpStatus(Exception):
    """A non-200 answer, with the wait its Retry-After header asked for."""

    def __init__(self, status, retry_after=None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = resp.read().decode()
            status = resp.status
            headers = resp.headers
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, e.headers, ""
        e.close()
    if status != 200:
        header = headers.get("Retry-After") if headers else None
        raise HttpStatus(status, retryrs.parse_retry_after(header) if header else None)
    return body.strip()


def transient(exc):
    if isinstance(exc, HttpStatus):
        return retryrs.is_retryable_status(exc.status)
    return isinstance(exc, OSError)  # connection refused, reset, timeout


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} URL", file=sys.stderr)
        return 2
    events = []

    def on_event(e):
        events.append(e)
        if e.kind == "retrying":
            print(f"[{round(e.elapsed * 1000):4d} ms] attempt {e.attempt} failed: {e.error} -> waiting {round(e.delay * 1000)} ms", flush=True)

    policies = retryrs.load_policies(pathlib.Path(__file__).resolve().parent.parent / "policies.json")
    r = retryrs.Retrier.from_policy(policies["rates"], retry_on=transient, on_event=on_event)
    try:
        rate = r.call(fetch, argv[1])
    except retryrs.RetryExhausted as e:
        print(f"gave up after {e.attempts} attempts ({e.reason}): {e.__cause__}")
        return 1
    except Exception as e:  # a permanent failure, as it was raised
        print(f"failed: {e}")
        return 1
    done = events[-1]
    print(f"[{round(done.elapsed * 1000):4d} ms] success: {rate} (attempt {done.attempt})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
