//! bench/FLEET.md: the tables, as one string, so the same seed gives the same bytes.

use std::fmt::Write;

use crate::contention::{Strategy, NET_MEAN_MS, NET_SD_MS};
use crate::herd::WINDOW_MS;
use crate::outage::{self, World};
use crate::peers::Peer;
use crate::sim::Results;

/// The published call counts at N = 100 (AWS Architecture Blog, "Exponential Backoff And
/// Jitter", Marc Brooker, 2015: the "calls" figure), where the article gives one.
pub fn published_calls(s: Strategy) -> Option<f64> {
    match s {
        Strategy::NoJitter => Some(1_850.0),
        Strategy::Full => Some(800.0),
        _ => None,
    }
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `-12345` as `-12,345`.
pub fn signed_thousands(n: i64) -> String {
    let digits = thousands(n.unsigned_abs());
    if n < 0 {
        format!("-{digits}")
    } else {
        digits
    }
}

/// The whole of bench/FLEET.md.
pub fn fleet_md(r: &Results) -> String {
    let c = &r.config;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "# The fleet simulator: what a retry policy does to a shared server\n");
    let _ = writeln!(
        w,
        "Written by `make sim` (bench/fleet, seed {}); do not edit by hand. Every delay, budget decision and \
         deadline below comes from the retryrs engine (`retryrs::engine::Call`; for hedging, \
         `retryrs::hedge::HedgeCall`); the simulator only models \
         the clients, the network and the server. The same seed gives these tables byte for byte.\n",
        c.seed
    );
    contention(w, r);
    outage_section(w, r);
    flapping_section(w, r);
    herd(w, r);
    tail_section(w, r);
    shifted_section(w, r);
    overload_section(w, r);
    crate::hedging_report::section(w, r);
    crate::chain_report::section(w, r);
    // One newline at the end of the file, whichever section is last.
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

/// A row of the overload table: the peer and its budget.
pub fn overload_label(run: &crate::tail::OverloadRun) -> String {
    match run.budget {
        Some((m, ratio)) => format!("{} + budget {m}/{ratio}", run.peer.label()),
        None => run.peer.label(),
    }
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1} ms")
    } else {
        "failed".into()
    }
}

fn tail_section(w: &mut String, r: &Results) {
    use crate::tail::{Peer, FAN_OUT, MAX_ATTEMPTS};
    let t = &r.config.tail;
    let _ = writeln!(w, "\n## 4. The tail at scale: hedged requests\n");
    let _ = writeln!(
        w,
        "The shape of The Tail at Scale (Dean & Barroso, CACM 2013): {} user requests, one every {} ms, each \
         fanning out to {FAN_OUT} sub-requests and as slow as its slowest. An attempt takes 1 ms + Exp(3 ms), and \
         1% of attempts take 50-100x that (drawn afresh for every attempt: the slowness is per request). The \
         servers have no capacity limit here, so extra attempts cost only themselves (\"extra requests\"). \
         Each sub-request is one call of the core's hedging engine (`retryrs::HedgeCall`): it decides when to \
         launch a hedge and which attempt wins; losers are cancelled. Hedging peers make at most \
         {MAX_ATTEMPTS} attempts. The fixed delays are told the distribution (its p90, p95 and p99 from 200,000 \
         draws, rounded up to whole ms: the p95 is {} ms); adaptive hedging is told nothing: its delay is the \
         p95 of the last 1,000 latencies its own calls saw (floor 1 ms, ceiling 1 s). \"Retry on timeout\" \
         is the retry engine with `attempt_timeout` at the p95 and no wait: it abandons the slow attempt; a \
         sub-request whose {MAX_ATTEMPTS} attempts all time out fails its user request (counted as slower than any).\n",
        thousands(t.users as u64),
        t.gap_us / 1000,
        r.tail_p95_ms
    );
    let _ = writeln!(w, "| peer | p50 | p99 | p99.9 | extra requests | failed user requests |");
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|");
    for run in &r.tail {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {:.2}% | {} |",
            run.peer.label(),
            ms(run.p50),
            ms(run.p99),
            ms(run.p999),
            run.extra * 100.0,
            run.failed
        );
    }
    let _ = writeln!(w, "\n![User request latency by percentile](fleet/tail.svg)\n");
    let find = |p: &Peer| r.tail.iter().find(|run| &run.peer == p);
    let check = |ok: bool| if ok { "met" } else { "MISSED" };
    if let (Some(none), Some(fixed), Some(adaptive)) =
        (find(&Peer::NoHedging), find(&Peer::Fixed(r.tail_p95_ms)), find(&Peer::Adaptive))
    {
        let cut = none.p999 / fixed.p999;
        // The best fixed delay within the paper's load: the lowest p99.9 for <= 5% extra.
        let best = r
            .tail
            .iter()
            .filter(|run| matches!(run.peer, Peer::Fixed(_)) && run.extra <= 0.05)
            .min_by(|a, b| a.p999.total_cmp(&b.p999));
        let _ = writeln!(
            w,
            "Targets: fixed-delay hedging at the p95 cuts the p99.9 {cut:.0}x ({} → {}) for {:.2}% extra requests \
             (target >= 10x for <= 5%: {}; the paper: 1,800 → 74 ms for 2%).",
            ms(none.p999),
            ms(fixed.p999),
            fixed.extra * 100.0,
            check(cut >= 10.0 && fixed.extra <= 0.05)
        );
        if let Some(best) = best {
            let ratio = adaptive.p999 / best.p999;
            let _ = writeln!(
                w,
                "Adaptive hedging, told nothing, against the best fixed delay within 5% extra ({}): p99.9 {} \
                 against {} ({ratio:.2}x), {:.2}% extra against {:.2}% (target: matches, p99.9 within 10%, or \
                 beats it: {}).\n",
                best.peer.label(),
                ms(adaptive.p999),
                ms(best.p999),
                adaptive.extra * 100.0,
                best.extra * 100.0,
                check(ratio <= 1.1 && adaptive.extra <= 0.05 * 1.1)
            );
        }
    }
}

fn shifted_section(w: &mut String, r: &Results) {
    let _ = writeln!(
        w,
        "**Variant: the servers get {}x slower halfway** (from the middle user request on, every attempt takes \
         {}x as long; nobody retunes anything). The fixed delay stays at the first half's p95; the adaptive \
         one follows the new latencies. Percentiles over all user requests.\n",
        crate::sim::SHIFT,
        crate::sim::SHIFT
    );
    let _ = writeln!(w, "| peer | p50 | p99 | p99.9 | extra requests |");
    let _ = writeln!(w, "|---|---:|---:|---:|---:|");
    for run in &r.shifted {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {:.2}% |",
            run.peer.label(),
            ms(run.p50),
            ms(run.p99),
            ms(run.p999),
            run.extra * 100.0
        );
    }
    let _ = writeln!(
        w,
        "\nThe stale fixed delay now hedges a quarter or more of the slower requests: a lower tail, bought with \
         several times the paper's extra load (and on a server near capacity, that load is what slows it). \
         The adaptive delay keeps the extra load at about 5%, as in the steady case.\n"
    );
}

fn overload_section(w: &mut String, r: &Results) {
    let o = &r.config.overload;
    let _ = writeln!(w, "## 5. A slow outage under hedging\n");
    let _ = writeln!(
        w,
        "{} clients each start {} calls/s; from t = {} s to t = {} s every attempt is 50-100x slower than \
         usual (a slow outage: nothing fails, so failure-based throttling alone never engages). Each client has \
         its own budget, or none; with one, each hedge spends a token (and is not sent while the budget refuses \
         retries), each success refills `token_ratio`: over time hedges add at most `token_ratio` to the load. \
         Same latency model, fixed delay and adaptive rule as section 4. *Load*: attempts sent per call offered.\n",
        o.clients,
        o.rate_per_client,
        o.slow_from_ms / 1000,
        o.slow_until_ms / 1000
    );
    let _ = writeln!(w, "| peer | load in the slow outage | load outside it |");
    let _ = writeln!(w, "|---|---:|---:|");
    for run in &r.overload {
        let _ = writeln!(w, "| {} | {:.3}x | {:.3}x |", overload_label(run), run.slow_load, run.normal_load);
    }
    let _ = writeln!(w, "\n![Load during a slow outage](fleet/overload.svg)\n");
    let slow_with = |ratio: f64| {
        r.overload
            .iter()
            .filter(|run| run.budget.is_some_and(|(_, r)| r == ratio))
            .map(|run| run.slow_load)
            .fold(0.0, f64::max)
    };
    let (five, a6) = (slow_with(0.05), slow_with(0.1));
    let _ = writeln!(
        w,
        "Target: hedging with the budget on stays within 1.1x the offered load in the slow outage: with a \
         budget of 10 tokens and 0.05 per success (hedges may add the paper's 5%) the highest row is {five:.3}x \
         ({}). With gRPC A6's example budget (0.1 per success) the load is {a6:.3}x: its bound is 1 + 0.1, \
         plus the half bucket each client may spend at once when the outage begins.\n",
        if five <= 1.1 { "met" } else { "MISSED" }
    );
}

fn contention(w: &mut String, r: &Results) {
    let c = &r.config;
    let _ = writeln!(w, "## 1. Contention: the AWS \"Exponential Backoff And Jitter\" experiment\n");
    let _ = writeln!(
        w,
        "The model of the article's simulator (aws-samples/aws-arch-backoff-simulator): {} clients each update \
         one row once under optimistic concurrency (read the version, write if unchanged), all starting at \
         t = 0; every message crosses a network of |Normal({NET_MEAN_MS} ms, {NET_SD_MS} ms)|; each write that \
         names the current version wins, the others fail, and their clients back off and start over. The \
         backoff is the article's, run by the engine: 10 ms after the first failure, x2, capped at 2 s \
         (decorrelated: from 5 ms), attempts unbounded, no deadline. \"Calls\" are writes the server received; \
         \"time\" is when the last update was acknowledged. Mean of {} runs.\n",
        c.contention_clients, c.contention_trials
    );
    let _ = writeln!(w, "| backoff | calls | published calls (N = 100) | off by | time to finish |");
    let _ = writeln!(w, "|---|---:|---:|---:|---:|");
    for (s, o) in &r.contention {
        let (published, off) = match published_calls(*s) {
            Some(p) if c.contention_clients == 100 => {
                (format!("~{}", thousands(p as u64)), format!("{:+.1}%", (o.calls / p - 1.0) * 100.0))
            }
            _ => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            w,
            "| {} | {} | {published} | {off} | {:.2} s |",
            s.label(),
            thousands(o.calls.round() as u64),
            o.completion_ms / 1000.0
        );
    }
    let _ = writeln!(
        w,
        "\nPublished numbers: AWS Architecture Blog, \"Exponential Backoff And Jitter\" (Marc Brooker, 2015), \
         read off its calls figure at N = 100. Its findings, reproduced here: jitter cuts the work by more \
         than half; full jitter does the least work; equal jitter is the slowest of the jittered kinds; \
         decorrelated jitter finishes about as soon as full jitter for more calls.\n"
    );
    let _ = writeln!(
        w,
        "![Calls against clients](fleet/contention_calls.svg)\n\n![Time against clients](fleet/contention_time.svg)\n\n\
         (Plots: N = {}..{}, mean of {} runs per point.)\n",
        c.sweep.first().copied().unwrap_or(0),
        c.sweep.last().copied().unwrap_or(0),
        c.sweep_trials
    );
}

fn outage_section(w: &mut String, r: &Results) {
    let world = &r.config.outage;
    let _ = writeln!(w, "## 2. Outage and recovery\n");
    let _ = writeln!(
        w,
        "{} clients each start {} requests/s ({} requests/s in all, the steady rate) against one server that \
         serves {} requests/s. From t = {} s the server fails every request for {} s, then recovers. Every \
         attempt is answered after a {} ms round trip. Each request is one call (clients do not wait for \
         their earlier calls); beyond its capacity the server sheds a random share of each millisecond's \
         arrivals with a transient error. The model is documented in bench/fleet/src/outage.rs.\n",
        thousands(world.clients.into()),
        world.rate_per_client,
        thousands(world.steady_rate()),
        thousands(world.capacity.into()),
        world.outage_start_ms / 1000,
        world.outage_ms / 1000,
        world.rtt_ms
    );
    let _ = writeln!(
        w,
        "The policies, each a peer's documented default (shared/REFERENCES.md section 5 has the versions checked):\n"
    );
    let _ = writeln!(w, "| policy | as simulated, and its source |");
    let _ = writeln!(w, "|---|---|");
    for p in Peer::ALL {
        let _ = writeln!(w, "| {} | {} |", p.label(), p.model());
    }
    let _ = writeln!(w);
    outage_table(w, "The server recovers to full capacity", world, &r.outage);
    let _ = writeln!(w, "![Load during the outage and after](fleet/outage.svg)\n");
    outage_table(
        w,
        &format!(
            "Variant: the server comes back at half capacity ({} requests/s, below the steady rate)",
            thousands(r.config.outage_half.capacity_after.into())
        ),
        &r.config.outage_half,
        &r.outage_half,
    );
    let _ = writeln!(w, "![Load, half-capacity recovery](fleet/outage_half.svg)\n");
    let _ = writeln!(
        w,
        "Columns: *sent / offered*: attempts the server received during the outage per request the clients \
         started in it; *extra*: retries during the outage; *busiest second*: the most attempts in any second \
         of the run, as a multiple of the steady rate; *recovery*: from the server's recovery to the first \
         whole second in which it serves at least 95% of what it can (the steady rate, or its capacity when \
         lower) while the load is at most 1.1x the new requests (\"never\": not within the {} s simulated \
         after the recovery); *outage calls that succeeded*: requests started during the outage that \
         eventually succeeded; *unfinished at the end*: calls still retrying (or in flight) when the run stopped.\n",
        (world.end_ms - world.recovery_ms()) / 1000
    );
    breaker_targets(w, r);
    if let Some(budget) = r.outage.iter().find(|run| run.peer == Peer::RetryrsBudget) {
        let s = budget.summary(world);
        let check = |ok: bool| if ok { "met" } else { "MISSED" };
        let recovery = s.recovery_s.unwrap_or(f64::INFINITY);
        let _ = writeln!(
            w,
            "Targets for retryrs + budget: sent during the outage {:.2}x offered (target <= 1.1x: {}); busiest \
             second {:.2}x steady (target <= 1.5x: {}); steady rate served {:.1} s after recovery (target <= \
             2 s: {}).\n",
            s.amplification(),
            check(s.amplification() <= 1.1),
            s.peak_multiple(world),
            check(s.peak_multiple(world) <= 1.5),
            recovery,
            check(recovery <= 2.0)
        );
    }
}

/// How long a breaker's clients take to see the outage: the settled load is measured after it.
const SETTLE_MS: u32 = 5_000;

fn breaker_targets(w: &mut String, r: &Results) {
    let world = &r.config.outage;
    let find = |peer: Peer| r.outage.iter().find(|run| run.peer == peer);
    let (Some(breaker), Some(budget)) = (find(Peer::RetryrsBreaker), find(Peer::RetryrsBudget)) else { return };
    let check = |ok: bool| if ok { "met" } else { "MISSED" };
    let settled = breaker.settled_amplification(world, SETTLE_MS);
    let alone = budget.settled_amplification(world, SETTLE_MS);
    let recovery = breaker.summary(world).recovery_s.unwrap_or(f64::INFINITY);
    let bound = crate::peers::BREAKER_BREAK.as_secs_f64() + f64::from(world.rtt_ms) / 1000.0;
    let _ = writeln!(
        w,
        "Targets for retryrs + breaker (the budget and a breaker, issue 27): after the first {} s of the outage (the breakers \
         have opened) the server receives {:.3}x the offered load (target <= 0.2x: {}; budget alone {:.2}x); \
         {} calls were refused without an attempt; the steady rate is served {:.1} s after the recovery \
         (target <= break_duration + one probe round trip = {:.2} s, at the 0.1 s resolution of the load \
         series: {}).\n",
        SETTLE_MS / 1000,
        settled,
        check(settled <= 0.2),
        alone,
        thousands(breaker.refused),
        recovery,
        bound,
        check(recovery <= bound + 0.1)
    );
}

fn flapping_section(w: &mut String, r: &Results) {
    let world = &r.config.flapping;
    let _ = writeln!(
        w,
        "## 2b. A flapping dependency
"
    );
    let _ = writeln!(
        w,
        "The world of section 2, but from t = {} s to {} s the server is down {} s, up {} s, down again, and \
         so on; then up for good. A breaker that opens too late keeps sending into the down phases; one that \
         stays open too long (or reopens too eagerly) refuses calls the server could have served in the up \
         phases. retryrs's policies only.\n",
        world.outage_start_ms / 1000,
        world.recovery_ms() / 1000,
        world.flap_ms / 1000,
        world.flap_ms / 1000
    );
    let _ = writeln!(
        w,
        "| policy | load while down (sent / offered) | load while up | busiest second | up-phase calls that succeeded | refused by the breaker |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|");
    for run in &r.flapping {
        let (down, up) = run.flap_load(world);
        let _ = writeln!(
            w,
            "| {} | {:.2}x | {:.2}x | {:.2}x | {:.1}% | {} |",
            run.peer.label(),
            down,
            up,
            run.summary(world).peak_multiple(world),
            run.up_success_share() * 100.0,
            thousands(run.refused)
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "![Load with a flapping dependency](fleet/flapping.svg)\n");
    breaker_options(w, r);
}

/// What the breaker options (issue 35: per attempt, a count window, probes judged
/// together) change in the outage and the flapping runs, read from the rows.
fn breaker_options(w: &mut String, r: &Results) {
    let find = |runs: &[outage::Run], p: Peer| runs.iter().find(|x| x.peer == p).cloned();
    let world = &r.config.flapping;
    let (Some(base), Some(count), Some(probes)) = (
        find(&r.flapping, Peer::RetryrsBreaker),
        find(&r.flapping, Peer::RetryrsBreakerCount),
        find(&r.flapping, Peer::RetryrsBreakerProbes),
    ) else {
        return;
    };
    let peak =
        |p: Peer| find(&r.outage, p).map_or(f64::NAN, |x| x.summary(&r.config.outage).peak_multiple(&r.config.outage));
    let (attempt_peak, base_peak) = (peak(Peer::RetryrsBreakerPerAttempt), peak(Peer::RetryrsBreaker));
    let half = |p: Peer| {
        find(&r.outage_half, p)
            .and_then(|x| x.summary(&r.config.outage_half).recovery_s)
            .map_or("never".to_string(), |s| format!("{s:.1} s"))
    };
    let _ = writeln!(
        w,
        "**Breaker options** (docs/breaker.md), the same token bucket and a 2 s break in every row. Counting \
         attempts (`per_attempt`, what a Polly or resilience4j pipeline with the retry outside the breaker does) \
         opens it after 5 failed attempts instead of 5 failed calls: the busiest second of the outage was {:.2}x \
         the steady rate against {:.2}x. A count window (50% of the last 20 calls, at least 10) served {:.1}% of \
         the flapping dependency's up-phase calls against {:.1}% for 5 failures in a row, for more load while \
         down ({:.2}x against {:.2}x). Three probes judged together close it only when all three succeed: \
         {:.1}% of the up-phase calls succeeded, and after the outage with half capacity the steady rate came \
         back after {} against {} with one probe. Slow-call thresholds and counting permanent failures do not \
         engage here (every failure is a fast transient one).\n",
        attempt_peak,
        base_peak,
        count.up_success_share() * 100.0,
        base.up_success_share() * 100.0,
        count.flap_load(world).0,
        base.flap_load(world).0,
        probes.up_success_share() * 100.0,
        half(Peer::RetryrsBreakerProbes),
        half(Peer::RetryrsBreaker),
    );
}

fn outage_table(w: &mut String, title: &str, world: &World, runs: &[outage::Run]) {
    let _ = writeln!(w, "**{title}**\n");
    let _ = writeln!(
        w,
        "| policy | sent / offered | extra requests | busiest second | recovery | outage calls that succeeded | unfinished at the end |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
    for run in runs {
        let s = run.summary(world);
        let recovery = match s.recovery_s {
            Some(t) => format!("{t:.1} s"),
            None => "never".into(),
        };
        let _ = writeln!(
            w,
            "| {} | {:.2}x | {} | {:.2}x | {recovery} | {:.1}% | {} |",
            run.peer.label(),
            s.amplification(),
            signed_thousands(s.extra()),
            s.peak_multiple(world),
            run.outage_success_share() * 100.0,
            thousands(run.pending_at_end)
        );
    }
    let _ = writeln!(w);
}

fn herd(w: &mut String, r: &Results) {
    let _ = writeln!(w, "## 3. The herd\n");
    let _ = writeln!(
        w,
        "The herd of `make demo` over time: {} clients fail together at t = 0 and keep failing; each retries \
         under 6 attempts, 100 ms x2, 10 s cap, client i seeded with i as in the example (so the busiest windows are the ones `make demo` prints). Retries per {WINDOW_MS} ms window:\n",
        thousands(r.config.herd_clients)
    );
    let _ = writeln!(w, "| jitter | busiest {WINDOW_MS} ms window | retries in all |");
    let _ = writeln!(w, "|---|---:|---:|");
    for (j, windows) in &r.herd {
        let busiest = windows.iter().copied().max().unwrap_or(0);
        let _ = writeln!(w, "| {} | {} | {} |", j.spelling(), thousands(busiest), thousands(windows.iter().sum()));
    }
    let _ = writeln!(w, "\n![Retries per 10 ms window](fleet/herd.svg)");
}
