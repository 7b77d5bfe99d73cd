#!/usr/bin/env python3
"""A scripted, deliberately flaky rates server for the demos and the HTTP tests.

Every session (the first path segment) gets the same script, counted per session:
503, 503, 429 with `Retry-After: 1`, then 200 with `EUR/USD 1.0842` forever after.
So several clients (one per host) can share one server: `GET /<session>/rates/EURUSD`.
`GET /<session>/hits` returns how many rate requests the session made.

Usage: flaky_server.py [--port N] [--script 503,503,429:1,200]
Prints `listening on http://127.0.0.1:PORT` on its first line, then serves until killed
(or until stdin closes, with --until-stdin-closes, so it never outlives its parent).
"""
import argparse
import sys
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RATE = b"EUR/USD 1.0842"


def parse_script(text):
    steps = []
    for item in text.split(","):
        status, _, retry_after = item.strip().partition(":")
        steps.append((int(status), retry_after or None))
    return steps


def make_handler(script):
    hits = defaultdict(int)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            parts = self.path.strip("/").split("/")
            session = parts[0] if parts else ""
            if len(parts) >= 2 and parts[1] == "hits":
                self._send(200, str(hits[session]).encode())
                return
            with lock:
                hits[session] += 1
                n = hits[session]
            status, retry_after = script[min(n, len(script)) - 1]
            headers = {"Retry-After": retry_after} if retry_after else {}
            body = RATE if status == 200 else f"HTTP {status}".encode()
            self._send(status, body, headers)

        def _send(self, status, body, headers=None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def log_message(self, *args):  # keep the demo's output to the clients' lines
            pass

    return Handler


def serve(port=0, script="503,503,429:1,200"):
    """Starts the server in a daemon thread; returns (server, base_url)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(parse_script(script)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", default="503,503,429:1,200")
    ap.add_argument("--until-stdin-closes", action="store_true")
    args = ap.parse_args()
    server, url = serve(args.port, args.script)
    print(f"listening on {url}", flush=True)
    try:
        if args.until_stdin_closes:
            sys.stdin.read()
        else:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
