#!/usr/bin/env python3
"""retryrs (Python) against a hand-written try/except loop, tenacity, stamina and backoff,
all measured in this run: ns per call, and ratios.

(a) the happy path (the first attempt succeeds)
(b) two failures, then success, with zero delay
(c) the asyncio happy path (vs tenacity's AsyncRetrying and friends)

(a) and (b) also time retryrs with a Prometheus listener attached (retryrs.prometheus on
a fresh CollectorRegistry): what observing every call costs.

Every contender retries OSError, up to 5 attempts; (b) waits zero between attempts.
Usage: bench.py [--quick] [--markdown PATH]
"""

import argparse
import platform
import sys

import retryrs
from common import ATTEMPTS, hand_loop, hand_loop_async, make_flaky, time_async, time_sync

try:
    from prometheus_client import CollectorRegistry

    import retryrs.prometheus
    import backoff
    import stamina
    import tenacity
except ImportError as e:  # pragma: no cover
    sys.exit(f"bench needs the peers: pip install tenacity stamina backoff prometheus-client ({e})")

def make_ok():
    def ok():
        return 42

    return ok


def contenders(fn, zero_delay):
    """name -> zero-argument callable that runs fn once through that library."""
    delay = 0 if zero_delay else 0.2
    policy = dict(retry_on=OSError, max_attempts=ATTEMPTS, initial_delay=delay, max_delay=delay if zero_delay else 5)
    r = retryrs.Retrier(**policy)
    decorated = r(fn)
    observed = retryrs.Retrier(**policy, on_event=retryrs.prometheus.listener(registry=CollectorRegistry()))
    ten = tenacity.retry(
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=tenacity.wait_none() if zero_delay else tenacity.wait_random_exponential(multiplier=0.2, max=5),
        retry=tenacity.retry_if_exception_type(OSError),
        reraise=True,
    )(fn)
    sta = stamina.retry(on=OSError, attempts=ATTEMPTS, wait_initial=delay, wait_max=delay if zero_delay else 5, wait_jitter=0, timeout=None)(fn)
    if zero_delay:
        bo = backoff.on_exception(backoff.constant, OSError, max_tries=ATTEMPTS, interval=0, jitter=None)(fn)
    else:
        bo = backoff.on_exception(backoff.expo, OSError, max_tries=ATTEMPTS, factor=0.2)(fn)
    return {
        "hand loop": lambda: hand_loop(fn),
        "retryrs r.call": lambda: r.call(fn),
        "retryrs @r": decorated,
        "retryrs + prometheus listener": lambda: observed.call(fn),
        "tenacity": ten,
        "stamina": sta,
        "backoff": bo,
    }


def async_contenders(afn):
    r = retryrs.Retrier(retry_on=OSError, max_attempts=ATTEMPTS)
    decorated = r(afn)
    ten = tenacity.retry(
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=tenacity.wait_random_exponential(multiplier=0.2, max=5),
        retry=tenacity.retry_if_exception_type(OSError),
        reraise=True,
    )(afn)
    sta = stamina.retry(on=OSError, attempts=ATTEMPTS, timeout=None)(afn)
    bo = backoff.on_exception(backoff.expo, OSError, max_tries=ATTEMPTS, factor=0.2)(afn)
    return {
        "hand loop": lambda: hand_loop_async(afn),
        "retryrs r.call_async": lambda: r.call_async(afn),
        "retryrs @r": decorated,
        "tenacity": ten,
        "stamina": sta,
        "backoff": bo,
    }


def scenario(title, runs, timer, n_fast, n_slow, repeats):
    """Each contender's best of `repeats` rounds, the rounds interleaved (every contender
    runs once per round, in turn), so that a ratio compares figures taken under the same
    load of the machine."""
    rows = {name: float("inf") for name in runs}
    for name, run in runs.items():
        if timer is time_sync:
            run()  # warm up (time_async warms up in its own first repeat)
    for _ in range(repeats):
        for name, run in runs.items():
            n = n_fast if name.startswith(("hand", "retryrs")) else n_slow
            rows[name] = min(rows[name], timer(run, n, 1))
    return title, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    n_fast, n_slow, repeats = (20_000, 2_000, 3) if args.quick else (200_000, 20_000, 5)

    async def aok():
        return 42

    results = [
        scenario("(a) happy path", contenders(make_ok(), zero_delay=False), time_sync, n_fast, n_slow, repeats),
        scenario("(b) two failures then success, zero delay", contenders(make_flaky(), zero_delay=True), time_sync, n_fast // 4, n_slow // 4, repeats),
        scenario("(c) asyncio happy path", async_contenders(aok), time_async, n_fast // 2, n_slow // 2, repeats),
    ]

    lines = [
        "## Python: retryrs vs hand loop, tenacity, stamina, backoff",
        "",
        f"Python {platform.python_version()} on {platform.machine()}; tenacity {_version('tenacity')}, "
        f"stamina {_version('stamina')}, backoff {_version('backoff')}, retryrs {retryrs.__version__}. "
        "Best of several rounds, interleaved (each contender once per round), ns per call; ratio = ns / hand loop ns; 'retryrs is Nx faster' compares with retryrs' own row.",
        "",
    ]
    targets = []
    for title, rows in results:
        hand = rows["hand loop"]
        ours_name = next(k for k in rows if k.startswith("retryrs r.call"))
        ours = rows[ours_name]
        lines += [f"### {title}", "", "| contender | ns/call | x hand loop | retryrs is N x faster |", "|---|---:|---:|---:|"]
        for name, ns in rows.items():
            faster = "" if name.startswith(("retryrs", "hand")) else f"{ns / ours:.1f}x"
            lines.append(f"| {name} | {ns:,.0f} | {ns / hand:.2f} | {faster} |")
        lines.append("")
        targets.append((title, ours / hand, rows["tenacity"] / ours))
    observed = [(title, rows) for title, rows in results if "retryrs + prometheus listener" in rows]
    a, b, c = targets
    lines += [
        "### Targets (Python)",
        "",
        f"- (a) within 1.0x of the hand loop (0.3's target): {a[1]:.2f}x {'met' if a[1] <= 1.0 else 'missed'}; "
        f">= 50x faster than tenacity: {a[2]:.0f}x {'met' if a[2] >= 50 else 'missed'}",
        f"- (b) within 1.5x of the hand loop (0.3's target): {b[1]:.2f}x {'met' if b[1] <= 1.5 else 'missed'}",
        f"- (c) >= 20x faster than tenacity AsyncRetrying: {c[2]:.0f}x {'met' if c[2] >= 20 else 'missed'}",
        "",
        "### A Prometheus listener attached (retryrs.prometheus)",
        "",
    ]
    for title, rows in observed:
        plain, prom = rows["retryrs r.call"], rows["retryrs + prometheus listener"]
        lines.append(f"- {title}: {prom:,.0f} ns per call, {prom - plain:,.0f} ns more than no listener "
                     f"({prom / plain:.1f}x); still {rows['tenacity'] / prom:.0f}x faster than tenacity with none")
    lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


def _version(dist):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    main()
