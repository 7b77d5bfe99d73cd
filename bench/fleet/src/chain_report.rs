//! FLEET.md section 7: a chain of services (bench/fleet's [`crate::chain`] model).

use std::fmt::Write;

use crate::chain::{expected_when_failing, Leaf, Rules, ATTEMPTS, C_WORKERS, HOP_US, LAYERS, USER_DEADLINE_MS};
use crate::report::thousands;
use crate::sim::Results;

fn recovery(s: Option<f64>) -> String {
    s.map_or("never".into(), |s| format!("{s:.0} s"))
}

/// Section 7 of FLEET.md.
pub fn section(w: &mut String, r: &Results) {
    let _ = writeln!(w, "## 7. A chain of services: user → A → B → C\n");
    let _ = writeln!(
        w,
        "Each layer (the user's client, A, B) retries with its own retrier: {ATTEMPTS} attempts, 2 ms x2 with full \
         jitter (an RPC stack's quick retries); the user gives up after {:.0} s, A and B keep retryrs's default \
         15 s deadline. Every hop takes {} ms each way; A and B only call the next service; no attempt timeout, \
         and an abandoned attempt goes on downstream. Each row adds one rule of docs/propagation.md, run by the \
         core (`retryrs::propagation::constrain` for a hop's policy, `RefusalCap` for the upward rule, \
         `Verdict::DontRetry` for pushback; nothing here computes a margin or a deadline): *deadline*: each hop's \
         call ends when its caller gives up, less the margin, and a server refuses a request that arrives (or \
         reaches a worker) with nothing left, up to the cap of 20% of its requests per 10 s; *downward rule*: a \
         request that is a retry makes one attempt at the next layer and passes \"retry\" on; *pushback*: a layer \
         whose own retries ran out answers \"don't retry\", and its caller stops; *sidecar*: at every hop a proxy \
         retries a failed attempt once at once (as a mesh's default route retry), honouring \"don't retry\" and \
         marking its retry as one. The model is documented in bench/fleet/src/chain.rs.\n",
        USER_DEADLINE_MS / 1000.0,
        HOP_US / 1000,
    );
    failing(w, r);
    overloaded(w, r);
}

fn failing(w: &mut String, r: &Results) {
    let world = &r.config.chain_failing;
    let _ = writeln!(
        w,
        "**C always failing** ({} user requests, {} ms apart; C answers 503 after 1 ms). The expected counts are \
         the rules' arithmetic for n = {ATTEMPTS} attempts and d = {LAYERS} retrying layers: n^d, n + (d-1)(n-1), \
         n.\n",
        thousands(world.users as u64),
        world.gap_us / 1000
    );
    let _ = writeln!(
        w,
        "| rules | attempts at C per user request (simulated) | most for one request | expected | user's wait, p99 |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|");
    for run in &r.chain_failing {
        let expected = expected_when_failing(run.rules).map_or("–".into(), |n| n.to_string());
        let _ = writeln!(
            w,
            "| {} | {:.2} | {} | {} | {:.0} ms |",
            run.rules.label(),
            run.c_attempts,
            run.c_attempts_max,
            expected,
            run.p99_ms
        );
    }
    let _ = writeln!(w);
    let all_met = r.chain_failing.iter().all(|run| {
        expected_when_failing(run.rules).is_none_or(|n| run.c_attempts == n as f64 && run.c_attempts_max == n)
    });
    let _ = writeln!(
        w,
        "Target: 125, 13 and 5 attempts at C with C always failing (no propagation, + downward rule, + pushback): {}. \
         The deadline alone changes nothing here (every layer's retries end well within the user's 2 s); a sidecar \
         that retries once per hop doubles what reaches C, the one hop whose failures are not pushback.\n",
        if all_met { "met" } else { "NOT met" }
    );
}

fn overloaded(w: &mut String, r: &Results) {
    let world = &r.config.chain_overload;
    let Leaf::Overloaded { work_us, factor, queue, from_ms, until_ms } = world.leaf else { return };
    let capacity = C_WORKERS as f64 * 1e6 / work_us as f64;
    let offered = 1e6 / world.gap_us as f64;
    let _ = writeln!(
        w,
        "**C overloaded** ({} user requests, {:.0} a second, for {:.0} s). C has {C_WORKERS} workers and a queue of \
         {} (a request that finds it full gets a 503 at once); a request takes {} ms of work, so C serves \
         {capacity:.0} a second ({:.0}% of the users' rate); from t = {} s to {} s the work is {factor}x slower \
         (C serves {:.0} a second). *Work after the user gave up*: C's worker time spent on requests whose user \
         had already stopped waiting, as a share of all of it; *recovery*: from the end of the overload to the \
         first whole second in which 95% of the user requests succeed.\n",
        thousands(world.users as u64),
        offered,
        world.users as f64 / offered,
        thousands(queue as u64),
        work_us / 1000,
        capacity / offered * 100.0,
        from_ms / 1000,
        until_ms / 1000,
        capacity / factor as f64,
    );
    let _ = writeln!(
        w,
        "| rules | attempts at C per user request | most for one request | work after the user gave up | success rate | user's wait, p99 | recovery after the overload |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
    for (i, run) in r.chain_overload.iter().enumerate() {
        let label = if i < Rules::ALL.len() {
            run.rules.label().to_string()
        } else {
            format!("{}, refusals not capped", run.rules.label())
        };
        let _ = writeln!(
            w,
            "| {} | {:.2} | {} | {:.1}% | {:.1}% | {:.0} ms | {} |",
            label,
            run.c_attempts,
            run.c_attempts_max,
            run.wasted * 100.0,
            run.success * 100.0,
            run.p99_ms,
            recovery(run.recovery_s)
        );
    }
    let _ = writeln!(w);
    let find = |rules: Rules| r.chain_overload.iter().find(|x| x.rules == rules).expect("every row ran");
    let (none, deadline) = (find(Rules::None), find(Rules::Deadline));
    let uncapped = r.chain_overload.last().expect("the uncapped row ran");
    let _ = writeln!(
        w,
        "Without propagation C spends {:.0}% of its work on requests nobody waits for, and the fleet {}; the \
         deadline alone brings that to {:.0}% and the recovery to {}. What remains is the upward rule's cap: once \
         20% of a window's requests have been refused, C runs expired requests anyway (the cap is there so that a \
         wrong clock or a lying client cannot switch a server off). Without the cap (last row) the wasted work is \
         {:.1}% and {:.1}% of the users succeed: in a sustained overload more of what reaches C's workers has \
         expired than the cap lets it refuse.\n",
        none.wasted * 100.0,
        match none.recovery_s {
            Some(s) => format!("recovers {s:.0} s after the overload"),
            None => "does not recover within the run".into(),
        },
        deadline.wasted * 100.0,
        recovery(deadline.recovery_s),
        uncapped.wasted * 100.0,
        uncapped.success * 100.0,
    );
}
