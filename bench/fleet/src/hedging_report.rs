//! FLEET.md section 6: hedging against servers with finite capacity (bench/fleet's
//! [`crate::capacity`] model), with the done-when targets computed from the rows.

use std::fmt::Write;

use crate::capacity::{self, lag_label, pause_ms_range, Hedger, Row, Slowness, LAG_UTILISATIONS, UTILISATIONS};
use crate::report::thousands;
use crate::sim::Results;

/// How much worse than no hedging the default may be on p99.9 (the bound).
pub const DEFAULT_MAX_WORSE: f64 = 1.10;
/// The p99.9 cut the default must keep at 50% utilisation with independent slowness.
pub const DEFAULT_MIN_CUT: f64 = 5.0;

/// The row of `hedger` at `utilisation` in `rows`.
pub fn row(rows: &[Row], hedger: Hedger, utilisation: f64) -> &Row {
    rows.iter().find(|r| r.hedger == hedger && r.utilisation == utilisation).expect("every cell was run")
}

/// The default policy's p99.9 over no hedging's, at every utilisation of `rows`.
pub fn default_over_none(rows: &[Row]) -> Vec<(f64, f64)> {
    UTILISATIONS
        .iter()
        .map(|&u| (u, row(rows, Hedger::Default, u).p999 / row(rows, Hedger::NoHedging, u).p999))
        .collect()
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1} ms")
    } else {
        "failed".into()
    }
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// A row's measured cells: p50 | p99 | p99.9 | extra attempts | extra work | failed calls.
fn measured(r: &Row) -> String {
    format!(
        "{} | {} | {} | {} | {} | {}",
        ms(r.p50),
        ms(r.p99),
        ms(r.p999),
        pct(r.extra_attempts),
        pct(r.extra_work),
        thousands(r.failed as u64)
    )
}

fn table(w: &mut String, rows: &[Row]) {
    let _ = writeln!(w, "| utilisation | peer | p50 | p99 | p99.9 | extra attempts | extra work | failed calls |");
    let _ = writeln!(w, "|---:|---|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let _ = writeln!(w, "| {:.0}% | {} | {} |", r.utilisation * 100.0, r.hedger.label(), measured(r));
    }
    let _ = writeln!(w);
}

/// Section 6 of FLEET.md.
pub fn section(w: &mut String, r: &Results) {
    let f = &r.config.fleet;
    let (lo, hi) = pause_ms_range();
    let _ = writeln!(w, "## 6. Hedging against servers with finite capacity\n");
    let _ = writeln!(
        w,
        "Section 4's servers never fill up, so a hedge costs only itself. Here {} servers each have {} workers \
         and a queue of at most {} attempts (a full queue refuses an attempt: a transient failure); each attempt \
         goes to a server the call has not used yet, picked at random. A winner's losers are cancelled, and the \
         server sees the cancel {} ms later: it then drops the attempt from its queue or frees the worker \
         running it. Calls arrive as one Poisson stream sized to the utilisation (offered work over the \
         workers' capacity), shared by {} clients, each with its own policy (its own adaptive sketch and \
         default guard); {} calls per row. Two kinds of slowness, 1% of the work either way: **independent**, \
         section 4's (each attempt's work is 1 ms + Exp(3 ms), and 1% of attempts 50-100x that, drawn afresh per \
         attempt), and **correlated**: each server pauses (a GC pause, a noisy neighbour) for U({lo:.0}, {hi:.0}) \
         ms, 1% of the time, on its own schedule, and everything running or queued on it waits, a hedge sent \
         there too. The model is documented in bench/fleet/src/capacity.rs.\n",
        f.servers,
        f.workers,
        thousands(f.queue_limit as u64),
        f.cancel_lag_us / 1000,
        f.clients,
        thousands(f.calls as u64),
    );
    let _ = writeln!(
        w,
        "Peers: *fixed* hedges at section 4's p95 ({} ms) and *adaptive* at the p95 of its own recent latencies, \
         both with 3 attempts and the guard turned off (as gRPC's and the paper's hedging are); *default* is what \
         a policy document's `\"hedge\": {{ \"delay\": \"adaptive\" }}` gives (`{}`): 2 attempts, the p95, and the \
         engine's default guard (10% of the calls of the last 10 s plus one hedge a second, per client). \
         *Extra attempts*: attempts beyond one per call; *extra work*: worker time spent on attempts that did not \
         win, as a share of the worker time spent on winners.\n",
        r.tail_p95_ms,
        capacity::DEFAULT_DOCUMENT,
    );
    for (slowness, rows) in &r.hedging {
        let _ = writeln!(w, "**{} slowness**\n", capitalised(slowness.label()));
        table(w, rows);
    }
    targets(w, r);
    lags(w, r);
    verdict(w, r);
}

/// "When hedging helps and when it hurts", its numbers read from the rows.
fn verdict(w: &mut String, r: &Results) {
    let rows = |s: Slowness| &r.hedging.iter().find(|(x, _)| *x == s).expect("run").1;
    let (ind, cor) = (rows(Slowness::Independent), rows(Slowness::Correlated));
    let cuts: Vec<f64> = [ind, cor]
        .iter()
        .flat_map(|rows| {
            UTILISATIONS.map(|u| row(rows, Hedger::NoHedging, u).p999 / row(rows, Hedger::Default, u).p999)
        })
        .collect();
    let (least, most) = cuts.iter().fold((f64::MAX, 0.0f64), |(a, b), &c| (a.min(c), b.max(c)));
    let extra = [ind, cor].into_iter().flat_map(|rows| rows.iter()).filter(|x| x.hedger == Hedger::Default);
    let extra = extra.fold(0.0f64, |m, x| m.max(x.extra_attempts));
    let lag_ms = r.config.fleet.cancel_lag_us / 1000;
    let fixed = cor.iter().filter(|x| matches!(x.hedger, Hedger::Fixed(_)));
    let collapse = fixed.clone().find(|x| x.failed > 0 || x.extra_attempts > 1.0);
    let _ = writeln!(w, "**When hedging helps, and when it hurts**\n");
    let _ = writeln!(
        w,
        "- It helps when a hedge can escape the slowness (the slow attempt or the slow server is not where the \
         hedge goes), when the server drops a cancelled loser soon (its worker goes back to work: with a {lag_ms} ms \
         lag the default policy cut the p99.9 {least:.1}x to {most:.0}x in every row above, while adding \
         at most {} attempts), and when the hedges are bounded (the default guard, or a budget).",
        pct(extra)
    );
    match collapse {
        Some(c) => {
            let _ = writeln!(
                w,
                "- It hurts when hedges are unbounded and their delay is fixed below what a busy server's latency \
                 becomes: with correlated slowness at {:.0}% utilisation the fixed {} ms delay hedged nearly every \
                 call ({} extra attempts), the hedges queued behind the pauses' backlog, and {} calls failed.",
                c.utilisation * 100.0,
                r.tail_p95_ms,
                pct(c.extra_attempts),
                thousands(c.failed as u64)
            );
        }
        None => {
            let _ = writeln!(w, "- Unbounded fixed-delay hedging did not collapse in this run.");
        }
    }
    let _ = writeln!(
        w,
        "- It hurts when the server finishes what it started: every hedge is then a whole extra request, and \
         near capacity even the guard's 10% is more than the headroom (the \"never\" rows above). Give servers a \
         way to see the client go away (a cancelled stream, a closed connection, a deadline they read), or do not \
         hedge near capacity.\n- It cannot help when the slowness is in the request itself or shared by the whole \
         fleet (a slow dependency behind every server): the hedge is as slow as the attempt it duplicates, and \
         only adds load. This simulator does not model that case; the guard bounds what it costs.\n"
    );
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn targets(w: &mut String, r: &Results) {
    let mut worst = (0.0, 0.0, Slowness::Independent);
    for (slowness, rows) in &r.hedging {
        for (u, ratio) in default_over_none(rows) {
            if ratio > worst.0 {
                worst = (ratio, u, *slowness);
            }
        }
    }
    let independent = &r.hedging.iter().find(|(s, _)| *s == Slowness::Independent).expect("run").1;
    let (none, default) = (row(independent, Hedger::NoHedging, 0.5), row(independent, Hedger::Default, 0.5));
    let cut = none.p999 / default.p999;
    let _ = writeln!(
        w,
        "Targets: the default policy is never worse than no hedging by more than 10% on p99.9 at any utilisation \
         up to 95%: its highest p99.9 relative to no hedging is {:.2}x ({} slowness, {:.0}% utilisation) ({}); at \
         50% utilisation with independent slowness it cuts the p99.9 {:.1}x ({} → {}; target >= {:.0}x: {}). \
         Both hold for servers that see a cancel {} ms after it is sent, as in these tables; for servers that \
         never see one the first {} (the table below).\n",
        worst.0,
        worst.2.label(),
        worst.1 * 100.0,
        met(worst.0 <= DEFAULT_MAX_WORSE),
        cut,
        ms(none.p999),
        ms(default.p999),
        DEFAULT_MIN_CUT,
        met(cut >= DEFAULT_MIN_CUT),
        r.config.fleet.cancel_lag_us / 1000,
        if never_worse_without_cancels(r) { "holds too" } else { "does not" },
    );
}

/// Whether the default policy stays within [`DEFAULT_MAX_WORSE`] of no hedging's p99.9
/// in the lag table's rows where the server never sees a cancel.
fn never_worse_without_cancels(r: &Results) -> bool {
    LAG_UTILISATIONS.iter().all(|&u| {
        let none = r.lags.iter().find(|(_, x)| x.hedger == Hedger::NoHedging && x.utilisation == u);
        let default = r.lags.iter().find(|(l, x)| l.is_none() && x.hedger == Hedger::Default && x.utilisation == u);
        match (none, default) {
            (Some((_, none)), Some((_, default))) => default.p999 <= none.p999 * DEFAULT_MAX_WORSE,
            _ => false,
        }
    })
}

fn lags(w: &mut String, r: &Results) {
    let _ = writeln!(
        w,
        "**When the server is slow to see a cancel** (independent slowness): a loser keeps its worker until the \
         server sees the cancel; \"never\" is a server that finishes every request it started (a handler that \
         does not watch for the client going away).\n"
    );
    let _ = writeln!(
        w,
        "| utilisation | peer | cancel seen after | p50 | p99 | p99.9 | extra attempts | extra work | failed calls |"
    );
    let _ = writeln!(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for (lag, row) in &r.lags {
        let lag = if row.hedger == Hedger::NoHedging { "–".into() } else { lag_label(*lag) };
        let _ = writeln!(w, "| {:.0}% | {} | {lag} | {} |", row.utilisation * 100.0, row.hedger.label(), measured(row));
    }
    let _ = writeln!(w);
    let never = |u: f64| {
        let none = r.lags.iter().find(|(_, x)| x.hedger == Hedger::NoHedging && x.utilisation == u).expect("run");
        let default =
            r.lags.iter().find(|(l, x)| l.is_none() && x.hedger == Hedger::Default && x.utilisation == u).expect("run");
        (none.1.p999, default.1.p999)
    };
    let [low, high] = LAG_UTILISATIONS;
    let (n80, d80) = never(low);
    let (n95, d95) = never(high);
    let _ = writeln!(
        w,
        "With cancels that are never seen the default policy's p99.9 is {} against {} without hedging at {:.0}% \
         utilisation, and {} against {} at {:.0}%: the guard bounds hedges by count (10% of the calls), not by the \
         work they leave behind, and 10% more attempts that all run to the end is 10% more load, past the \
         capacity at 95%.\n",
        ms(d80),
        ms(n80),
        low * 100.0,
        ms(d95),
        ms(n95),
        high * 100.0
    );
}
