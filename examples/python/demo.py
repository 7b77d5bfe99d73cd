#!/usr/bin/env python3
"""`make demo-python`: starts scripts/flaky_server.py, runs rates.py against it, stops it."""

import os
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    server = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "scripts", "flaky_server.py"), "--until-stdin-closes"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline().strip()
        if not line.startswith("listening on "):
            print(f"flaky server did not start: {line!r}", file=sys.stderr)
            return 1
        url = f"{line[len('listening on '):]}/python-{uuid.uuid4().hex[:8]}/rates/EURUSD"
        print(f"python: GET {url}", flush=True)
        return subprocess.call([sys.executable, os.path.join(HERE, "rates.py"), url])
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
