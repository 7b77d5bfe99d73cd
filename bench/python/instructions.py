#!/usr/bin/env python3
"""What a Python call costs in instructions, this tree against a base tree (a worktree of
another commit with its own .venv, built with `make python-dev`), per scenario: the
happy path and two failures then success with zero delay, each with the default policy
(15 s deadline) and with the deadline off, beside the hand-written loop they are judged
against. Wall times on a shared machine move by tens of percent; instruction counts by
well under 1%.

    bench/python/instructions.py --base /path/to/other/worktree [--only row,row]

Each row runs N1 and N2 calls in a fresh interpreter of each tree under valgrind's
callgrind (a fixed hash seed, so dict probing repeats); the difference of the two totals
over N2 - N1 is one call's instructions, start-up cancelled out. A monotonic clock read
is a system call under valgrind (a few dozen instructions), where a real process reads
the vDSO: the rows with a deadline read it once per attempt at most. Needs valgrind and
only retryrs and the standard library in each venv.
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
from common import ATTEMPTS, hand_loop, make_flaky  # noqa: E402

N1, N2 = 20_000, 60_000

ROWS = [
    "hand loop",
    "r.call",
    "r.call, deadline=None",
    "hand loop, two failures",
    "r.call two failures",
    "r.call two failures, deadline=None",
]


def ok():
    return 42


def make_rows():
    """name -> a zero-argument callable running one call; built in the child."""
    import retryrs

    zero = dict(retry_on=OSError, max_attempts=ATTEMPTS, initial_delay=0, max_delay=0)
    r = retryrs.Retrier(retry_on=OSError, max_attempts=ATTEMPTS)
    untimed = retryrs.Retrier(retry_on=OSError, max_attempts=ATTEMPTS, deadline=None)
    fail, fail_untimed = retryrs.Retrier(**zero), retryrs.Retrier(**zero, deadline=None)
    flaky = make_flaky()
    return {
        "hand loop": lambda: hand_loop(ok),
        "r.call": lambda: r.call(ok),
        "r.call, deadline=None": lambda: untimed.call(ok),
        "hand loop, two failures": lambda: hand_loop(flaky),
        "r.call two failures": lambda: fail.call(flaky),
        "r.call two failures, deadline=None": lambda: fail_untimed.call(flaky),
    }


def child(name, n):
    run = make_rows()[name]
    for _ in range(1000):  # warm up (and a multiple of 3: the flaky function's cycle)
        run()
    for _ in range(n):
        run()


def instructions(tree, name, n):
    python = os.path.join(tree, ".venv", "bin", "python")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, HERE, "--child", name, "--n", str(n)]
    env = dict(os.environ, PYTHONHASHSEED="0")
    # Outside both trees, so no checkout's python/ directory shadows the venv's retryrs.
    out = subprocess.run(cmd, capture_output=True, text=True, cwd="/", env=env, check=False)
    m = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if out.returncode != 0 or m is None:
        sys.exit(f"{tree}: {name} under valgrind failed:\n{out.stderr[-3000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="the other commit's worktree (with a built .venv)")
    ap.add_argument("--only", help="a comma-separated list of rows (or unique parts of their names)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.n)
    if not args.base:
        ap.error("--base is required")
    trees = {"this": ROOT, "base": os.path.abspath(args.base)}
    for label, tree in trees.items():
        if not os.path.exists(os.path.join(tree, ".venv", "bin", "python")):
            sys.exit(f"{label} tree {tree} has no .venv: run make python-dev there")
    picked = [r for r in ROWS if not args.only or any(p.strip() in r for p in args.only.split(","))]
    print(f"Python {sys.version.split()[0]}; this = {trees['this']}, base = {trees['base']}; "
          f"instructions per call (callgrind, {N2} - {N1} calls)\n")
    print("| row | this | base | this/base |")
    print("|---|---:|---:|---:|")
    for name in picked:
        per = {label: (instructions(tree, name, N2) - instructions(tree, name, N1)) / (N2 - N1) for label, tree in trees.items()}
        print(f"| {name} | {per['this']:,.0f} | {per['base']:,.0f} | {per['this'] / per['base']:.2f} |")


if __name__ == "__main__":
    main()
