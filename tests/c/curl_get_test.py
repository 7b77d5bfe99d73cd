#!/usr/bin/env python3
"""examples/c/curl_get (libcurl driven by retryrs) against a scripted loopback server:
the HTTP tests every host's helper passes, here through the C API, each run under
valgrind (any definite leak or invalid access fails it).

Usage: curl_get_test.py path/to/curl_get
"""
import email.utils
import os
import re
import socket
import subprocess
import sys
import threading
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
    # 8 s ahead: the date is written before valgrind starts the binary, which takes
    # seconds on a loaded machine (a date already past is no hint at all).
    when = email.utils.formatdate(time.time() + 8, usegmt=True)
    code, out = run(s.script(p, [(503, when), 200]))
    w = waits(out)
    assert code == 0 and len(w) == 1 and 1000 <= w[0] <= 8000, out


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


# The attempt's bound (issue 21): servers that hang rather than answer, each on its own
# loopback listener (port 0), so the bounds are the client's, never the server's.


class RawServer:
    """A loopback listener whose n-th connection (1-based) is handled by `handle(conn, n)`
    on its own thread. Handlers that hang wait on `self.stop` so none outlives the test."""

    def __init__(self, handle, backlog=16, accept=True):
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.handle = handle
        self.accepted = 0
        self.conns = []
        if accept:
            threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.conns.append(conn)
            threading.Thread(target=self._run, args=(conn, self.accepted), daemon=True).start()

    def _run(self, conn, n):
        try:
            self.handle(self, conn, n)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for c in self.conns:
            c.close()
        self.sock.close()


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def gave_up_at(out):
    """The call's own elapsed time when it gave up (the Exhausted event's line)."""
    m = re.search(r"\[\s*(\d+) ms\] attempt \d+ failed: .* -> giving up \((\w+)\)", out)
    assert m, out
    return int(m.group(1)), m.group(2)


def timed(*args):
    """curl_get without valgrind, for the timing cases: its wall time and output."""
    started = time.monotonic()
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=60)
    return time.monotonic() - started, p.returncode, p.stdout


def standalone(fn):
    name = fn.__name__.replace("_", " ")
    try:
        fn()
        print(f"ok   {name}")
    except AssertionError as e:
        failures.append(name)
        print(f"FAIL {name}: {e}")


@standalone
def a_server_that_accepts_and_never_answers_ends_the_call_at_its_deadline():
    def silent(server, conn, n):
        read_request(conn)
        server.stop.wait(30)

    with RawServer(silent) as server:
        wall, code, out = timed("--deadline", "2000", server.url + "/rates")
    at, reason = gave_up_at(out)
    assert code == 1 and reason == "deadline" and "gave up after" in out and "(deadline)" in out, out
    # The spec's bound: deadline + 250 ms for the call; the process's start and exit on
    # top of it are given a generous second.
    # (The time left is rounded down to whole ms: the request may end just before 2000.)
    assert 1900 <= at <= 2250, out
    assert wall < 3.25, f"{wall:.2f} s: {out}"


@standalone
def a_503_whose_body_stalls_is_bounded_by_the_attempt_timeout_and_the_deadline():
    def stalls(server, conn, n):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100000\r\n\r\npartial body")
        server.stop.wait(30)

    with RawServer(stalls) as server:
        wall, code, out = timed("--attempt-timeout", "500", "--deadline", "2000", server.url + "/rates")
        attempts = server.accepted
    at, reason = gave_up_at(out)
    assert code == 1 and reason == "deadline", out
    assert at <= 2250 and wall < 3.25, f"{wall:.2f} s: {out}"
    # Each attempt had 500 ms at most: several ran before the deadline.
    assert attempts >= 3 and "waiting" in out, f"{attempts} attempts: {out}"


@standalone
def a_post_whose_connect_times_out_is_retried_since_it_was_never_sent():
    # A listener whose accept queue is full (backlog 0, one connection queued and never
    # accepted): a new connection's SYN is dropped, so connecting times out.
    with RawServer(None, backlog=0, accept=False) as server:
        filler = socket.create_connection(server.sock.getsockname(), timeout=2)
        try:
            code, out = run("-X", "POST", "-d", "pay", "--max-attempts", "3", "--connect-timeout", "200",
                            "--deadline", "20000", server.url + "/pay")
        finally:
            filler.close()
    assert code == 1 and "gave up after 3 attempts (attempts)" in out and len(waits(out)) == 2, out
    assert "(not sent)" in out, out


@standalone
def a_retried_503_with_a_huge_body_is_not_read_whole():
    size = 256 * 1024 * 1024
    sent = []

    def big_then_ok(server, conn, n):
        read_request(conn)
        if n == 1:
            conn.sendall(f"HTTP/1.1 503 Service Unavailable\r\nContent-Length: {size}\r\n\r\n".encode())
            chunk, total = b"x" * 65536, 0
            try:
                while total < size and not server.stop.is_set():
                    conn.sendall(chunk)
                    total += len(chunk)
            finally:
                sent.append(total)
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    with RawServer(big_then_ok) as server:
        code, out = run("--deadline", "60000", server.url + "/rates")
        deadline = time.monotonic() + 10
        while not sent and time.monotonic() < deadline:
            time.sleep(0.05)
    assert code == 0 and "success: ok (attempt 2)" in out, out
    # The client dropped the connection after a small prefix: the server could write no
    # more than what the loopback buffers held, far from the whole body.
    assert sent and sent[0] < 32 * 1024 * 1024, f"the server wrote {sent} of {size} bytes"


if failures:
    print(f"curl_get: {len(failures)} failed")
    sys.exit(1)
print("curl_get: all passed")
