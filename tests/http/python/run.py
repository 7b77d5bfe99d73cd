"""Python's runner of the hostile-server HTTP conformance suite: every case of
tests/http/cases.json against every Python HTTP helper, through the shared scripted
server. Prints a helpers x cases table; exits 1 if any case fails.

    python tests/http/python/run.py [--helper NAME]... [--case NAME]... [--markdown FILE]

A case marked ``isolate`` (the memory bounds) runs in a fresh process per helper.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import Result, Server, Verdict, expectation, judge, load_cases  # noqa: E402
from helpers import HELPERS, READ_APIS, Helper, reset_peak_rss, rss_mb  # noqa: E402

WARM_UP = {"listener": "http", "steps": [{"status": 200, "body": {"bytes": 2}}]}


def run_case(server: Server, helper: Helper, case: Dict[str, Any], slack_ms: float) -> Verdict:
    """One case against one helper, in this process: each read API asked for, each on a
    fresh load of the case (so the server's counts are the call's)."""
    expect = expectation(case, helper.reads_body)
    verdict = Verdict()
    apis = READ_APIS if expect.get("read_apis") == "all" else ("bytes",)
    for api in apis:
        server.load(case["server"])
        results = helper.calls(case, server.url(case), api, 1)
        judge(expect, slack_ms, results[0], server.seen(), verdict)
    return verdict


def run_isolated_case(server: Server, helper: Helper, case: Dict[str, Any], slack_ms: float) -> Dict[str, Any]:
    """A memory case in this (fresh) process: a warm-up, then the case, with the RSS
    (or its peak) measured around it."""
    expect = expectation(case, helper.reads_body)
    verdict = Verdict()
    repeat = int(case.get("repeat", 1))
    server.load(WARM_UP)
    helper.calls(case, server.listeners["http"] + "/warm-up", "bytes", min(200, repeat))
    server.load(case["server"])
    gc.collect()
    before = rss_mb() or 0.0
    peak_known = reset_peak_rss()
    results = helper.calls(case, server.url(case), "bytes", repeat)
    peak = rss_mb("VmHWM") or 0.0
    gc.collect()
    after = rss_mb() or 0.0
    bad = [r for r in results if r.outcome != expect["outcome"] or r.status != expect.get("status", r.status)]
    verdict.check(not bad, f"{len(bad)} of {repeat} calls went wrong, the first: {bad[0].describe() if bad else ''}")
    if repeat == 1:
        judge(expect, slack_ms, results[0], server.seen(), verdict)
    else:
        judge({k: v for k, v in expect.items() if k != "within_ms"}, slack_ms, results[-1], None, verdict)
        seen = len(server.seen()["requests"])
        verdict.check(seen == expect.get("requests", seen), f"the server saw {seen} requests, expected {expect.get('requests')}")
    numbers = {"rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1), "peak_mb": round(peak, 1)}
    if "rss_growth_mb" in expect:
        grew = after - before
        numbers["rss_growth_mb"] = round(grew, 1)
        verdict.check(grew < expect["rss_growth_mb"], f"RSS grew by {grew:.1f} MB over {repeat} calls, bound {expect['rss_growth_mb']} MB")
    if "peak_rss_growth_mb" in expect:
        if not peak_known:
            verdict.failures.append("cannot measure peak RSS here (no /proc/self/clear_refs)")
        grew = peak - before
        numbers["peak_rss_growth_mb"] = round(grew, 1)
        verdict.check(grew < expect["peak_rss_growth_mb"], f"peak RSS grew by {grew:.1f} MB, bound {expect['peak_rss_growth_mb']} MB")
    return {"failures": verdict.failures, "numbers": numbers}


def isolated(helper: str, case: str) -> Dict[str, Any]:
    """Runs ``--isolated`` in a child process and returns its report."""
    out = subprocess.run([sys.executable, __file__, "--isolated", helper, case], capture_output=True, text=True, timeout=600)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
    except (ValueError, IndexError):
        return {"failures": [f"the isolated run failed (exit {out.returncode}): {out.stderr.strip()[-800:]}"], "numbers": {}}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--helper", action="append", choices=sorted(HELPERS), help="only this helper (repeatable)")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--markdown", help="also write the helpers x cases table here")
    ap.add_argument("--isolated", nargs=2, metavar=("HELPER", "CASE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    suite = load_cases()
    cases = {c["name"]: c for c in suite["cases"]}
    claimed = readme_count()
    if claimed != len(cases):
        print(f"tests/http/README.md says the suite has {claimed} cases; cases.json has {len(cases)}: write {len(cases)}")
        return 1
    slack = float(suite["slack_ms"])
    server = Server()
    try:
        if args.isolated:
            helper_name, case_name = args.isolated
            print(json.dumps(run_isolated_case(server, HELPERS[helper_name](), cases[case_name], slack)))
            return 0
        unknown = [c for c in args.case or [] if c not in cases]
        if unknown:
            ap.error(f"no case named {unknown[0]!r}; the cases are {', '.join(cases)}")
        chosen = [cases[c] for c in args.case] if args.case else list(cases.values())
        helpers = args.helper or list(HELPERS)
        table: Dict[str, Dict[str, bool]] = {}
        failed = 0
        for case in chosen:
            for name in helpers:
                helper = HELPERS[name]()
                if case.get("isolate"):
                    report = isolated(name, case["name"])
                    failures, numbers = report["failures"], report["numbers"]
                else:
                    failures, numbers = run_case(server, helper, case, slack).failures, {}
                table.setdefault(case["name"], {})[name] = not failures
                extra = f" {numbers}" if numbers else ""
                print(f"{'ok  ' if not failures else 'FAIL'} {case['name']} / {name}{extra}", flush=True)
                for f in failures:
                    print(f"       {f}", flush=True)
                failed += bool(failures)
        text = markdown(table, helpers)
        print("\n" + text)
        if args.markdown:
            Path(args.markdown).write_text(text)
        print(f"{failed} of {len(chosen) * len(helpers)} helper x case runs failed")
        return 1 if failed else 0
    finally:
        server.close()


def readme_count() -> Optional[int]:
    """The count tests/http/README.md states ("The suite has N cases"), kept true here."""
    text = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    m = re.search(r"The suite has (\d+) cases", text)
    return int(m.group(1)) if m else None


def markdown(table: Dict[str, Dict[str, bool]], helpers: List[str]) -> str:
    lines = ["| case | " + " | ".join(helpers) + " |", "|---|" + "---|" * len(helpers)]
    for case, row in table.items():
        lines.append(f"| {case} | " + " | ".join("pass" if row.get(h) else "FAIL" for h in helpers) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
