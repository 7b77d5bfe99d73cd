#!/usr/bin/env python3
"""What a C call costs in instructions, this tree against a base tree (a worktree of
another commit, its library built with `make c-lib`), per scenario of bench/c/bench.c.
Wall times on a shared machine move by tens of percent between runs; an instruction
count moves by well under 1%.

    bench/c/instructions.py --base /path/to/other/worktree [--only scenario,scenario]

bench/c/count.c is compiled against each tree's header and static library and run under
valgrind's cachegrind N1 and N2 times; the difference of the two totals over N2 - N1 is
one call's instructions, start-up cancelled out. Under valgrind a monotonic clock read
is a system call (a few dozen instructions), where a real process reads the vDSO for
about as long as ~100 instructions take: so each row also says how many clock reads a
call makes (counted from valgrind's system call trace on a short run; a coarse read,
CLOCK_MONOTONIC_COARSE, counts as one too, though natively it costs about a quarter of
a fine one), and the "eq" columns add CLOCK_INSTR per read: a rough figure to compare
rows by, where the instruction counts are exact. Needs valgrind, gcc, python3.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N1, N2 = 100_000, 300_000
TRACE_N1, TRACE_N2 = 100, 300
# One vDSO clock read, in instructions' worth of time: ~24 ns measured by bench.c on
# the reference machine, at roughly 4 instructions per ns for this code.
CLOCK_INSTR = 100

SCENARIOS = [
    ("direct", "direct callback call"),
    ("direct_deadline", "direct call + a deadline's clock read"),
    ("hand", "hand loop, 2 failures then success"),
    ("hand_deadline", "hand loop honouring a deadline, 2 failures"),
    ("untimed_happy", "retryrs, deadline off: happy path"),
    ("untimed_fail2", "retryrs, deadline off: 2 failures then success"),
    ("default_happy", "retryrs, default policy: happy path"),
    ("default_fail2", "retryrs, default policy: 2 failures then success"),
]


def static_libs(tree):
    """What a program linking the tree's libretryrs.a needs besides it (its .pc file)."""
    with open(os.path.join(tree, "bindings-c", "retryrs.pc.in")) as f:
        for line in f:
            if line.startswith("Libs.private:"):
                return line.split(":", 1)[1].split()
    return []


def build(tree, out):
    lib = os.path.join(tree, "build", "lib", "libretryrs.a")
    if not os.path.exists(lib):
        sys.exit(f"{tree} has no {lib}: run make c-lib there")
    cmd = ["gcc", "-std=c11", "-O2", "-I" + os.path.join(tree, "include"), os.path.join(HERE, "count.c"), "-o", out, lib]
    subprocess.run(cmd + static_libs(tree), check=True)


def valgrind(binary, scenario, n, *opts):
    out = subprocess.run(["valgrind", *opts, binary, scenario, str(n)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{binary} {scenario} {n} under valgrind: exit {out.returncode}\n{out.stderr[-3000:]}")
    return out.stderr


def instructions(binary, scenario, n):
    err = valgrind(binary, scenario, n, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")
    m = re.search(r"I\s+refs:\s+([\d,]+)", err)
    if m is None:
        sys.exit(f"no instruction total in:\n{err}")
    return int(m.group(1).replace(",", ""))


def clock_reads(binary, scenario, n):
    err = valgrind(binary, scenario, n, "--tool=none", "--trace-syscalls=yes")
    return err.count("sys_clock_gettime")


def per_call(binary, scenario):
    ir = (instructions(binary, scenario, N2) - instructions(binary, scenario, N1)) / (N2 - N1)
    reads = (clock_reads(binary, scenario, TRACE_N2) - clock_reads(binary, scenario, TRACE_N1)) / (TRACE_N2 - TRACE_N1)
    return ir, reads


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the other commit's worktree (with build/lib from make c-lib)")
    ap.add_argument("--only", help="a comma-separated list of scenarios (or unique parts of their names)")
    args = ap.parse_args()
    if subprocess.run(["valgrind", "--version"], capture_output=True).returncode != 0:
        sys.exit("instructions.py needs valgrind (make c-tools installs it)")
    picked = [s for s in SCENARIOS if not args.only or any(p.strip() in s[0] for p in args.only.split(","))]
    trees = {"this": ROOT, "base": os.path.abspath(args.base)}
    with tempfile.TemporaryDirectory() as tmp:
        binaries = {}
        for label, tree in trees.items():
            binaries[label] = os.path.join(tmp, f"count-{label}")
            build(tree, binaries[label])
        print(f"this = {trees['this']}, base = {trees['base']}; per call: instructions (cachegrind, {N2} - {N1} calls),")
        print(f"clock reads, and the two as instructions' worth (a read counted {CLOCK_INSTR})\n")
        print("| scenario | this instr | reads | this eq | base instr | reads | base eq | this/base eq |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, title in picked:
            row = []
            for label in trees:
                ir, reads = per_call(binaries[label], name)
                row.append((ir, reads, ir + CLOCK_INSTR * reads))
            (ti, tr, te), (bi, br, be) = row
            print(f"| {title} ({name}) | {ti:,.0f} | {tr:g} | {te:,.0f} | {bi:,.0f} | {br:g} | {be:,.0f} | {te / be:.2f} |")


if __name__ == "__main__":
    main()
