"""A scripted HTTP/1.1 server on loopback for the HTTP helpers' tests (Python's
retryrs.http, the C curl_get example), with keep-alive (so
a leaked connection shows) and counts of what it saw.

Each path has a script of steps, played in order, the last repeating: an int status, a
(status, retry_after) pair, "reset" (the connection is dropped with a TCP RST after
the request is read: no response), or "cut" (after the request is read, the connection
breaks mid-response: under TLS a record that does not decrypt, a TLS error; in the clear,
part of a response). Unscripted
paths answer 200 "ok". ``tls``: an ``ssl.SSLContext`` (server side) makes it an HTTPS
server; ``ScriptedServer.tls_context()`` makes one with a throwaway CA (trustme).
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple


class ScriptedServer:
    def __init__(self, tls: Optional[ssl.SSLContext] = None) -> None:
        self.scripts: Dict[str, List[Any]] = {}
        self.requests: Dict[str, List[Tuple[str, bytes]]] = defaultdict(list)
        self.accepted = 0
        self.open = 0
        self.lock = threading.Lock()
        # Set by close(): a "slow" step stops waiting and answers nothing, so no handler
        # outlives the server (a late write would raise in a thread during later tests).
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.base = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def script(self, path: str, steps: List[Any]) -> str:
        with self.lock:
            self.scripts[path] = list(steps)
        return self.base + path

    def hits(self, path: str) -> int:
        with self.lock:
            return len(self.requests[path])

    @staticmethod
    def tls_context() -> Tuple[ssl.SSLContext, str]:
        """A server context for 127.0.0.1 signed by a throwaway CA, and the CA's PEM file
        (for the client's ``verify=`` / ``ssl.create_default_context(cafile=...)``)."""
        import tempfile

        import trustme

        ca = trustme.CA()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
        pem = tempfile.NamedTemporaryFile(prefix="retryrs-test-ca-", suffix=".pem", delete=False)
        pem.write(ca.cert_pem.bytes())
        pem.close()
        return ctx, pem.name

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += h.rfile.read(size)
            h.rfile.readline()
    n = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(n) if n else b""


def _handler(server: ScriptedServer) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def setup(self) -> None:
            super().setup()
            with server.lock:
                server.accepted += 1
                server.open += 1

        def finish(self) -> None:
            try:
                super().finish()
            finally:
                with server.lock:
                    server.open -= 1

        def _handle(self) -> None:
            body = _read_body(self)
            path = self.path.split("?")[0]
            with server.lock:
                server.requests[path].append((self.command, body))
                n = len(server.requests[path])
                steps = server.scripts.get(path) or [200]
                step = steps[min(n, len(steps)) - 1]
            if step == "cut":
                # Mid-response, the connection breaks. Under TLS: a record that does not
                # decrypt (written under the TLS layer), so the client's TLS library
                # fails after the request was written; in the clear: part of a response.
                if isinstance(self.connection, ssl.SSLSocket):
                    socket.socket.sendall(self.connection, b"\x17\x03\x03\x00\x20" + bytes(32))
                else:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n")
                    self.wfile.flush()
                self.close_connection = True
                return
            if step == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if isinstance(step, tuple) and step[0] == "slow":
                # A server that takes step[1] s, then answers 200 if the client still waits.
                if server.closing.wait(step[1]):
                    self.close_connection = True
                    return
                step = 200
            status, retry_after = step if isinstance(step, tuple) else (step, None)
            payload = b"ok" if status == 200 else f"HTTP {status} body".encode()
            self.send_response(status)
            if retry_after is not None:
                self.send_header("Retry-After", retry_after)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)
