#!/usr/bin/env python3
"""examples/c/curl_get (libcurl driven by retryrs) against a scripted loopback server:
the HTTP tests every host's helper passes, here through the C API, each run under
valgrind (any definite leak or invalid access fails it).

Usage: curl_get_test.py path/to/curl_get
"""
import email.utils
import os
import re
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from scripted_http_server import ScriptedServer, closed_port  # noqa: E402

BINARY = sys.argv[1] if len(sys.argv) > 1 else "build/c/curl_get"
VALGRIND = ["valgrind", "--quiet", "--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99"]
failures = []


def run(*args):
    p = subprocess.run(VALGRIND + [BINARY, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode != 99, f"valgrind found errors:\n{p.stderr}"
    return p.returncode, p.stdout


def waits(out):
    return [int(w) for w in re.findall(r"waiting (\d+) ms", out)]


def path():
    return f"/{uuid.uuid4().hex}"


def case(fn):
    name = fn.__name__.replace("_", " ")
    with ScriptedServer() as server:
        try:
            fn(server)
            print(f"ok   {name}")
        except AssertionError as e:
            failures.append(name)
            print(f"FAIL {name}: {e}")


@case
def the_seed_scenario_makes_four_requests_over_one_connection_and_the_third_wait_is_the_servers(s):
    p = path()
    code, out = run(s.script(p, [503, 503, (429, "1"), 200]))
    assert code == 0 and "success: ok (attempt 4)" in out, out
    w = waits(out)
    assert len(w) == 3 and w[2] >= 1000 and w[0] < 1000, out
    assert s.hits(p) == 4
    assert s.accepted == 1, f"{s.accepted} connections: a response was not read to the end"


@case
def an_http_date_retry_after_is_the_minimum_wait(s):
    p = path()
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    code, out = run(s.script(p, [(503, when), 200]))
    w = waits(out)
    assert code == 0 and len(w) == 1 and 1000 <= w[0] <= 3000, out


@case
def a_404_is_returned_at_once(s):
    p = path()
    code, out = run(s.script(p, [404, 200]))
    assert code == 1 and "response: HTTP 404 after 1 attempt:" in out and s.hits(p) == 1, out


@case
def a_post_answered_503_is_not_retried(s):
    p = path()
    code, out = run("-X", "POST", "-d", "x", s.script(p, [503, 200]))
    assert "response: HTTP 503 after 1 attempt" in out and s.hits(p) == 1, out


@case
def a_post_answered_by_a_reset_is_not_retried(s):
    p = path()
    code, out = run("-X", "POST", "-d", "x", s.script(p, ["reset", 200]))
    assert code == 1 and out.splitlines()[-1].startswith("failed: ") and s.hits(p) == 1, out


@case
def a_post_to_a_closed_port_is_retried_since_it_was_never_sent(s):
    code, out = run("-X", "POST", "-d", "x", "--max-attempts", "3", f"http://127.0.0.1:{closed_port()}/x")
    assert code == 1 and "gave up after 3 attempts (attempts)" in out and len(waits(out)) == 2, out


@case
def a_put_is_retried_on_a_status_and_on_a_reset(s):
    p = path()
    code, out = run("-X", "PUT", "-d", "payload", s.script(p, [503, "reset", 200]))
    assert code == 0 and s.hits(p) == 3, out
    assert [b for _, b in s.requests[p]] == [b"payload"] * 3


@case
def out_of_retries_on_503_the_last_503_response_is_the_answer(s):
    p = path()
    code, out = run("--max-attempts", "3", s.script(p, [503]))
    assert code == 1 and "response: HTTP 503 after 3 attempts: HTTP 503 body" in out and s.hits(p) == 3, out


@case
def out_of_retries_on_resets_the_call_is_exhausted(s):
    p = path()
    code, out = run("--max-attempts", "3", s.script(p, ["reset"]))
    assert code == 1 and "gave up after 3 attempts (attempts)" in out and s.hits(p) == 3, out


@case
def a_retry_after_past_the_default_cap_ends_at_once_with_the_503(s):
    p = path()
    code, out = run(s.script(p, [(503, "3600"), 200]))  # max_retry_after defaults to 60 s
    assert "giving up (retry_after)" in out and "response: HTTP 503 after 1 attempt" in out and s.hits(p) == 1, out
    assert not waits(out), out


@case
def a_retry_after_past_the_deadline_ends_at_once_with_the_503(s):
    p = path()
    code, out = run(s.script(p, [(503, "30"), 200]))  # under the cap, past the 15 s deadline
    assert "giving up (deadline)" in out and "response: HTTP 503 after 1 attempt" in out and s.hits(p) == 1, out
    assert not waits(out), out


@case
def credentials_and_signatures_never_reach_the_output(s):
    p = path()
    s.script(p, [503, 200])
    url = s.base.replace("http://", "http://user:s3cretpw@") + p + "?sig=zq9sig&x=1"
    code, out = run(url)
    assert code == 0 and "REDACTED:REDACTED@" in out and "sig=REDACTED" in out, out
    assert "s3cretpw" not in out and "zq9sig" not in out, out


if failures:
    print(f"curl_get: {len(failures)} failed")
    sys.exit(1)
print("curl_get: all passed")
