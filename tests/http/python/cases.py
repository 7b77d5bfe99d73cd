"""The shared cases (tests/http/cases.json) and the shared server, for Python's runner:
loading the cases, starting the server, and judging a call's result against a case's
``expect`` (tests/http/README.md describes both)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "http" / "cases.json"
SERVER = ROOT / "scripts" / "http_conformance_server.py"


def load_cases() -> Dict[str, Any]:
    return json.loads(CASES.read_text())


def expectation(case: Dict[str, Any], reads_body: bool) -> Dict[str, Any]:
    """The case's ``expect``, amended by ``expect_if_reads_body`` for a client that reads
    the body inside the attempt (a ``null`` there removes the field)."""
    out = dict(case["expect"])
    if reads_body:
        for k, v in (case.get("expect_if_reads_body") or {}).items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
    return out


class Server:
    """The shared scripted server as a subprocess: it exits when our end of its stdin
    closes, so it never outlives this process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{SERVER} printed nothing (exit status {self.proc.wait()})")
        info = json.loads(line)
        self.control: str = info["control"]
        self.listeners: Dict[str, str] = info["listeners"]

    def load(self, server_spec: Dict[str, Any]) -> None:
        req = urllib.request.Request(self.control + "/load", data=json.dumps(server_spec).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def seen(self) -> Dict[str, Any]:
        with urllib.request.urlopen(self.control + "/seen", timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def url(self, case: Dict[str, Any]) -> str:
        return self.listeners[case["server"]["listener"]] + case["request"]["path"]

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def expected_body(n: int) -> bytes:
    """The server's body of ``n`` bytes (see the README: a JSON string literal)."""
    sys.path.insert(0, str(SERVER.parent))
    from http_conformance_server import body_slice

    return body_slice(n, 0, n)


@dataclass
class Result:
    """One call as a helper saw it."""

    outcome: str = ""  # "response" or "error"
    error: Optional[str] = None  # the kind: exhausted, timeout, connection, other
    error_repr: str = ""
    attempts: Optional[int] = None
    status: Optional[int] = None
    read: Optional[str] = None  # "whole" (body read to its end) or "error"
    read_error: Optional[str] = None
    read_error_repr: str = ""
    body: bytes = b""
    elapsed_ms: float = 0.0
    api: str = ""

    def describe(self) -> str:
        if self.outcome == "error":
            return f"error {self.error} ({self.error_repr}) after {self.elapsed_ms:.0f} ms"
        got = f"{len(self.body)} bytes" if self.read == "whole" else f"read error {self.read_error} ({self.read_error_repr})"
        return f"{self.status}, {got}, after {self.elapsed_ms:.0f} ms"


@dataclass
class Verdict:
    failures: List[str] = field(default_factory=list)

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.failures.append(message)


def _count_ok(want: Any, got: int) -> bool:
    if isinstance(want, dict):
        return bool(want.get("min", 0) <= got <= want.get("max", got))
    return bool(want == got)


def judge(expect: Dict[str, Any], slack_ms: float, r: Result, seen: Optional[Dict[str, Any]], verdict: Verdict) -> None:
    """Every field of ``expect`` that applies to one call (``seen``: what the server saw
    during it, or None for a repeated call judged in bulk)."""
    where = f"[{r.api}] " if r.api else ""
    v = verdict
    v.check(r.outcome == expect["outcome"], f"{where}outcome {r.outcome} ({r.describe()}), expected {expect['outcome']}")
    if r.outcome != expect["outcome"]:
        return
    if "error" in expect:
        v.check(r.error in expect["error"], f"{where}error kind {r.error} ({r.error_repr}), expected one of {expect['error']}")
    if "attempts" in expect and r.attempts is not None:
        v.check(r.attempts == expect["attempts"], f"{where}{r.attempts} attempts, expected {expect['attempts']}")
    if "status" in expect:
        v.check(r.status == expect["status"], f"{where}status {r.status}, expected {expect['status']}")
    if expect.get("read") == "whole":
        v.check(r.read == "whole", f"{where}body not read whole: {r.read_error} ({r.read_error_repr})")
        if r.read == "whole" and "body_bytes" in expect:
            want = expected_body(expect["body_bytes"])
            v.check(r.body == want, f"{where}body of {len(r.body)} bytes, expected the server's {len(want)}")
    if expect.get("read") == "error":
        v.check(r.read == "error", f"{where}body read gave {len(r.body)} bytes, expected a read error")
        if r.read == "error" and "read_error" in expect:
            v.check(r.read_error in expect["read_error"], f"{where}read error kind {r.read_error} ({r.read_error_repr}), expected one of {expect['read_error']}")
    if "within_ms" in expect:
        bound = expect["within_ms"] + slack_ms
        v.check(r.elapsed_ms <= bound, f"{where}took {r.elapsed_ms:.0f} ms, bound {expect['within_ms']} + {slack_ms:.0f} ms")
    if "min_ms" in expect:
        v.check(r.elapsed_ms >= expect["min_ms"], f"{where}took {r.elapsed_ms:.0f} ms, sooner than {expect['min_ms']} ms")
    if seen is not None:
        if "requests" in expect:
            n = len(seen["requests"])
            v.check(_count_ok(expect["requests"], n), f"{where}the server saw {n} requests, expected {expect['requests']}")
        if "connections" in expect:
            n = sum(seen["connections"].values())
            v.check(_count_ok(expect["connections"], n), f"{where}the listener accepted {n} connections, expected {expect['connections']}")
