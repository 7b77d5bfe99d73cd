#!/usr/bin/env python3
"""The hostile-server HTTP conformance suite's scripted server, shared by every host.

Run it as a subprocess: ``python3 scripts/http_conformance_server.py``. It listens on
loopback only and prints one JSON line on stdout naming its endpoints, e.g.

    {"control": "http://127.0.0.1:40001", "listeners": {"http": "http://127.0.0.1:40002",
     "tls_stall": "https://127.0.0.1:40003", "full_queue": "http://127.0.0.1:40004",
     "refused": "http://127.0.0.1:40005"}}

then serves until its stdin closes (so it never outlives the runner that started it) or
it gets SIGTERM / ``POST /quit``. A runner loads a case's ``server`` section with
``POST /load`` and reads what the server saw with ``GET /seen``. The case format and the
control API are described in tests/http/README.md; only the standard library is used, so
any host's runner can start it with a plain ``python3``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

HOST = "127.0.0.1"
DEFAULT_CHUNK = 65536
ALPHABET = b"abcdefghijklmnopqrstuvwxyz"
# One chunk's worth of the repeating pattern plus one period, so any slice of it is a
# plain memoryview (no copy per chunk when streaming 200 MiB).
PATTERN = ALPHABET * (DEFAULT_CHUNK // len(ALPHABET) + 2)


def body_slice(total: int, start: int, length: int) -> bytes:
    """Bytes [start, start+length) of the body of ``total`` bytes: a JSON string literal
    (a quote, the alphabet repeated, a quote) so it reads as bytes, text and JSON alike.
    Bodies under 2 bytes are that many ``x``."""
    if total < 2:
        return b"x" * length
    out = bytearray()
    i = start
    end = start + length
    while i < end:
        if i == 0 or i == total - 1:
            out += b'"'
            i += 1
            continue
        inner_end = min(end, total - 1)
        offset = (i - 1) % len(ALPHABET)
        take = min(inner_end - i, len(PATTERN) - offset)
        out += PATTERN[offset:offset + take]
        i += take
    return bytes(out)


class Case:
    """What the loaded case asks of the server, and what the server saw since the load."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.steps: List[Dict[str, Any]] = list(spec.get("steps") or [])
        self.started = time.monotonic()
        self.requests: List[Dict[str, Any]] = []
        self.connections: Dict[str, int] = {"http": 0, "tls_stall": 0}
        self.reset = asyncio.Event()

    def step_for(self, n: int) -> Dict[str, Any]:
        """The step for the n-th request (0-based): the steps in order, the last repeating."""
        if not self.steps:
            return {"status": 200, "body": {"bytes": 2}}
        return self.steps[min(n, len(self.steps) - 1)]

    def ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 1)

    def seen(self) -> Dict[str, Any]:
        return {"requests": self.requests, "connections": self.connections}


class Server:
    def __init__(self) -> None:
        self.case = Case({})
        self.writers: Set[asyncio.StreamWriter] = set()
        self.keep: List[socket.socket] = []

    # --- the HTTP listener: plays the loaded case's steps ---------------------------

    async def serve_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        case = self.case
        case.connections["http"] += 1
        conn = case.connections["http"]
        self.writers.add(writer)
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    return
                method, path, headers, body = request
                if self.case is not case:
                    return  # a connection kept alive from an earlier case: drop it
                n = len(case.requests)
                case.requests.append({
                    "method": method, "path": path, "headers": headers,
                    "body_bytes": len(body), "at_ms": case.ms(), "connection": conn,
                })
                keep_alive = await self.play(case, case.step_for(n), method, reader, writer)
                if not keep_alive or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        finally:
            self.writers.discard(writer)
            if not writer.is_closing():
                writer.close()

    async def play(self, case: Case, step: Dict[str, Any], method: str,
                   reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Plays one step; returns whether the connection may serve another request."""
        action = step.get("action", "respond")
        if action == "never_answer":
            await hold(case, reader)
            return False
        if action == "reset_after_request":
            reset(writer)
            return False
        if action == "close_after_request":
            writer.close()
            return False
        if action != "respond":
            raise ValueError(f"unknown action {action!r}")
        status = int(step.get("status", 200))
        body = step.get("body") or {}
        total = int(body.get("bytes", 0))
        chunked = bool(body.get("chunked", False))
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
                "Content-Type: application/json"]
        head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
        retry_after = step.get("retry_after")
        if retry_after is not None:
            head.append(f"Retry-After: {retry_after_value(retry_after)}")
        for k, v in (step.get("headers") or {}).items():
            head.append(f"{k}: {v}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        if step.get("reset_after_headers"):
            reset(writer)
            return False
        if method == "HEAD":
            return True
        chunk = int(body.get("chunk_bytes", DEFAULT_CHUNK))
        interval = float(body.get("interval_ms", 0)) / 1000
        stall_after = body.get("stall_after_bytes")
        sent = 0
        while sent < total:
            if stall_after is not None and sent >= int(stall_after):
                await hold(case, reader)
                return False
            size = min(chunk, total - sent)
            if stall_after is not None:
                size = min(size, int(stall_after) - sent)
            data = body_slice(total, sent, size)
            writer.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            await writer.drain()
            sent += size
            if interval and sent < total:
                await asyncio.sleep(interval)
            if self.case is not case:
                return False
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return True

    # --- the TLS-stall listener: accepts TCP, never answers the ClientHello ----------

    async def serve_tls_stall(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        case = self.case
        case.connections["tls_stall"] += 1
        self.writers.add(writer)
        try:
            await hold(case, reader)
        except (ConnectionError, OSError):
            pass
        finally:
            self.writers.discard(writer)
            writer.close()

    # --- the control listener --------------------------------------------------------

    async def serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
            if request is None:
                return
            method, path, _, body = request
            status, answer = 200, {}
            if method == "POST" and path == "/load":
                self.load(json.loads(body or b"{}"))
                answer = {"loaded": True}
            elif method == "GET" and path == "/seen":
                answer = self.case.seen()
            elif method == "POST" and path == "/quit":
                asyncio.get_running_loop().call_soon(lambda: os._exit(0))
            else:
                status, answer = 404, {"error": f"no control route {method} {path}"}
            data = json.dumps(answer).encode()
            writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (status, len(data), data))
            await writer.drain()
        except (ValueError, KeyError) as exc:
            data = json.dumps({"error": str(exc)}).encode()
            writer.write(b"HTTP/1.1 400 X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(data), data))
        finally:
            writer.close()

    def load(self, spec: Dict[str, Any]) -> None:
        """Starts a case: every connection of the previous one is dropped, the counts reset."""
        for step in spec.get("steps") or []:
            if step.get("action", "respond") not in ("respond", "never_answer", "reset_after_request", "close_after_request"):
                raise ValueError(f"unknown action {step.get('action')!r}")
        self.case.reset.set()
        for w in list(self.writers):
            w.transport.abort()
        self.writers.clear()
        self.case = Case(spec)


async def read_request(reader: asyncio.StreamReader) -> Optional[Tuple[str, str, Dict[str, str], bytes]]:
    """One HTTP/1.1 request (Content-Length or chunked body), or None at a clean EOF."""
    line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) < 2:
        return None
    method, target = parts[0], parts[1]
    headers: Dict[str, str] = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                break
            body += await reader.readexactly(size)
            await reader.readline()
    elif headers.get("content-length"):
        body = await reader.readexactly(int(headers["content-length"]))
    return method, target.split("?")[0], headers, body


async def hold(case: Case, reader: asyncio.StreamReader) -> None:
    """Keeps a connection open, silent, until the client closes it or another case loads."""
    reset_wait = asyncio.ensure_future(case.reset.wait())
    try:
        while not case.reset.is_set():
            read = asyncio.ensure_future(reader.read(65536))
            done, _ = await asyncio.wait({read, reset_wait}, return_when=asyncio.FIRST_COMPLETED)
            if read not in done:
                read.cancel()
                return
            if not read.result():
                return
    finally:
        reset_wait.cancel()


def reset(writer: asyncio.StreamWriter) -> None:
    """Drops the connection with a TCP RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def retry_after_value(spec: Any) -> str:
    if isinstance(spec, str):
        return spec  # sent as written
    if "seconds" in spec:
        return str(int(spec["seconds"]))
    if "date_in_s" in spec:
        return email.utils.formatdate(time.time() + float(spec["date_in_s"]), usegmt=True)
    raise ValueError(f"retry_after: {spec!r} has none of seconds, date_in_s")


REASONS = {200: "OK", 404: "Not Found", 408: "Request Timeout", 425: "Too Early",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


def full_queue_listener() -> List[socket.socket]:
    """A listener whose accept queue is full (it never accepts, and the queue was filled
    first): a new connection's SYN is dropped, so connecting times out."""
    sock = socket.socket()
    sock.bind((HOST, 0))
    sock.listen(0)
    port = sock.getsockname()[1]
    fillers = []
    for _ in range(64):
        c = socket.socket()
        c.settimeout(0.3)
        try:
            c.connect((HOST, port))
        except OSError:
            c.close()
            return [sock] + fillers  # the listener first; the fillers must stay open
        fillers.append(c)
    raise RuntimeError("the accept queue never filled")


def refused_port() -> socket.socket:
    """A port bound but not listening: connecting is refused, and no one else takes it."""
    sock = socket.socket()
    sock.bind((HOST, 0))
    return sock


async def main() -> None:
    server = Server()
    control = await asyncio.start_server(server.serve_control, HOST, 0)
    http = await asyncio.start_server(server.serve_http, HOST, 0)
    tls_stall = await asyncio.start_server(server.serve_tls_stall, HOST, 0)
    queue = full_queue_listener()
    refused = refused_port()
    server.keep += queue + [refused]

    def url(scheme: str, port: int) -> str:
        return f"{scheme}://{HOST}:{port}"

    print(json.dumps({
        "control": url("http", control.sockets[0].getsockname()[1]),
        "listeners": {
            "http": url("http", http.sockets[0].getsockname()[1]),
            "tls_stall": url("https", tls_stall.sockets[0].getsockname()[1]),
            "full_queue": url("http", queue[0].getsockname()[1]),
            "refused": url("http", refused.getsockname()[1]),
        },
    }), flush=True)
    await asyncio.Event().wait()


def exit_when_stdin_closes() -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if "--no-stdin" not in sys.argv:
        threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    asyncio.run(main())
