#!/usr/bin/env python3
"""retryrs (Python) against itself at another commit, in the same run: the happy paths and
the two-failures path of this tree and of a base tree (a worktree of the other commit with
its own .venv, built with `make python-dev`), measured alternately, so both see the same
machine load.

    bench/python/vs_commit.py --base /path/to/other/worktree [--rounds 5] [--callgrind]

Timings: each round runs every row once in a fresh interpreter of each tree, in turn; a
row's figure is its best round (ns per call). With --callgrind the rows are also counted
in instructions per call under valgrind (the difference between a run of 2N calls and
one of N, so the interpreter's start-up cancels out): steady where timings are not, on a
machine other processes load. Needs only retryrs and the standard library in each venv.
"""

import argparse
import os
import re
import subprocess
import sys

from common import ATTEMPTS, hand_loop, hand_loop_async, make_flaky, time_async, time_sync

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def ok():
    return 42


async def aok():
    return 42


def rows():
    """name -> (kind, zero-argument callable running one call); built in the child."""
    import retryrs

    r = retryrs.Retrier(max_attempts=ATTEMPTS)
    zero = retryrs.Retrier(retry_on=OSError, max_attempts=ATTEMPTS, initial_delay=0, max_delay=0)
    flaky = make_flaky()
    decorated_async = r(aok)
    return {
        "hand loop": ("sync", lambda: hand_loop(ok)),
        "r.call": ("sync", lambda: r.call(ok)),
        "r.call two failures": ("sync", lambda: zero.call(flaky)),
        "hand loop async": ("async", lambda: hand_loop_async(aok)),
        "call_async": ("async", lambda: r.call_async(aok)),
        "@r async": ("async", decorated_async),
    }


def child(name, n, repeats):
    kind, run = rows()[name]
    timer = time_sync if kind == "sync" else time_async
    timer(run, max(1, n // 10), 1)  # warm up
    print(timer(run, n, repeats))


def python_of(tree):
    return os.path.join(tree, ".venv", "bin", "python")


def run_child(tree, name, n, repeats, callgrind=False):
    cmd = [python_of(tree), HERE, "--child", name, "--n", str(n), "--repeats", str(repeats)]
    # A fixed hash seed: dict probing (hence instruction counts) the same in every run.
    env = dict(os.environ, PYTHONHASHSEED="0")
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd
    # The child imports retryrs from the tree's venv; run it outside both trees so no
    # checkout's python/ directory shadows it.
    out = subprocess.run(cmd, capture_output=True, text=True, cwd="/", env=env, check=False)
    if out.returncode != 0:
        sys.exit(f"{tree}: {name} failed:\n{out.stderr}")
    if callgrind:
        m = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
        if m is None:
            sys.exit(f"no callgrind total in:\n{out.stderr}")
        return int(m.group(1))
    return float(out.stdout.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="the other commit's worktree (with a built .venv)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--callgrind", action="store_true", help="also count instructions per call under valgrind")
    ap.add_argument("--only", help="a comma-separated list of rows")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.n, args.repeats)
    if not args.base:
        ap.error("--base is required")
    trees = {"this": ROOT, "base": os.path.abspath(args.base)}
    for label, tree in trees.items():
        if not os.path.exists(python_of(tree)):
            sys.exit(f"{label} tree {tree} has no .venv: run make python-dev there")
    names = ["hand loop", "r.call", "r.call two failures", "hand loop async", "call_async", "@r async"]
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    best = {(t, n): float("inf") for t in trees for n in names}
    for _ in range(args.rounds):
        for name in names:
            for label, tree in trees.items():
                best[label, name] = min(best[label, name], run_child(tree, name, args.n, args.repeats))
    ir = {}
    if args.callgrind:
        small = 20_000
        for name in names:
            for label, tree in trees.items():
                one = run_child(tree, name, small, 1, callgrind=True)
                two = run_child(tree, name, 2 * small, 1, callgrind=True)
                # Each child runs n/10 warm-up calls plus n timed ones.
                ir[label, name] = (two - one) / (small * 1.1)
    head = "| row | this ns | base ns | this/base |"
    rule = "|---|---:|---:|---:|"
    if ir:
        head += " this instr | base instr | this/base |"
        rule += "---:|---:|---:|"
    print(f"Python {sys.version.split()[0]}; this = {trees['this']}, base = {trees['base']}; best of {args.rounds} rounds")
    print()
    print(head)
    print(rule)
    for name in names:
        t, b = best["this", name], best["base", name]
        line = f"| {name} | {t:,.0f} | {b:,.0f} | {t / b:.2f} |"
        if ir:
            ti, bi = ir["this", name], ir["base", name]
            line += f" {ti:,.0f} | {bi:,.0f} | {ti / bi:.2f} |"
        print(line)


if __name__ == "__main__":
    main()
