"""Loopback servers for the propagation tests: one that records each request's headers
and answers from a script, one that accepts and never answers (a hanging dependency),
and the two ways an application is served here without a framework: a small ASGI
server on asyncio (with a real ``http.disconnect`` when the client goes away) and the
standard library's WSGI server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class Recording:
    """Answers each request with the next of ``steps`` (the last repeating): a status, or
    (status, {header: value}); keeps every request's headers (``seen``, lower-case names)."""

    def __init__(self, steps: Optional[List[Any]] = None) -> None:
        self.steps = list(steps or [200])
        self.seen: List[Dict[str, str]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer.lock:
                    outer.seen.append({k.lower(): v for k, v in self.headers.items()})
                    step = outer.steps[min(len(outer.seen), len(outer.steps)) - 1]
                status, headers = step if isinstance(step, tuple) else (step, {})
                body = b"ok" if status < 400 else b"no"
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def hits(self) -> int:
        with self.lock:
            return len(self.seen)

    def contexts(self) -> List[Optional[str]]:
        with self.lock:
            return [h.get("retryrs-context") for h in self.seen]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "Recording":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Hanging:
    """Accepts connections and reads, never answers (until closed)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.held: List[socket.socket] = []
        self.accepted = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._took(conn)

    def _took(self, conn: socket.socket) -> None:
        with self._lock:
            self.accepted += 1
            self.held.append(conn)

    def close(self) -> None:
        # Connections the kernel completed that the accept thread has not taken yet (a
        # thread starved on a loaded machine) were made too: take and count them here,
        # or `accepted` says the dependency was never called.
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            self._took(conn)
        self.sock.close()
        with self._lock:
            held = list(self.held)
        for c in held:
            c.close()

    def __enter__(self) -> "Hanging":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ASGIServer:
    """Serves an ASGI application on loopback, one request per connection: the body is
    read whole, ``receive`` then waits for the client to close (``http.disconnect``)."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.errors: List[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)
        port = self.server.sockets[0].getsockname()[1]
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = []
            length = 0
            for line in lines[1:]:
                if not line:
                    continue
                name, _, value = line.partition(":")
                headers.append((name.strip().lower().encode("latin-1"), value.strip().encode("latin-1")))
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            path, _, query = target.partition("?")
            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                "headers": headers, "client": writer.get_extra_info("peername"), "server": ("127.0.0.1", self.port),
            }
            sent_body = False

            async def receive() -> Dict[str, Any]:
                nonlocal sent_body
                if not sent_body:
                    sent_body = True
                    return {"type": "http.request", "body": body, "more_body": False}
                while await reader.read(4096):
                    pass
                return {"type": "http.disconnect"}

            async def send(message: Dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    out = [f"HTTP/1.1 {message['status']} X".encode()]
                    out += [k + b": " + v for k, v in message.get("headers", [])]
                    writer.write(b"\r\n".join(out) + b"\r\nConnection: close\r\n\r\n")
                elif message["type"] == "http.response.body":
                    writer.write(message.get("body", b""))
                    if not message.get("more_body"):
                        await writer.drain()
                        writer.close()

            await self.app(scope, receive, send)
        except Exception as e:  # kept for the test to see, never lost
            self.errors.append(e)
        finally:
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def __enter__(self) -> "ASGIServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class _ThreadingWSGIServer(WSGIServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self._one, args=(request, client_address), daemon=True)
        t.start()

    def _one(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


class WSGIServerThread:
    """The standard library's WSGI server on loopback, a thread per request."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self._server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_Quiet)
        self.url = f"http://127.0.0.1:{self._server.server_port}/"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "WSGIServerThread":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def get(url: str, headers: Optional[Dict[str, str]] = None, timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes, float]:
    """A plain GET (no retries): status, lower-case headers, body, and seconds taken."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    start = time.monotonic()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", u.path or "/", headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body, time.monotonic() - start
    finally:
        conn.close()
