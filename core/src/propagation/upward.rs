//! The upward rule: a request that arrives with nothing left is answered at once (504,
//! `Retryrs-Pushback: -1`) without running the handler, since its caller has already
//! given up. Refusals are capped (at most 20% of the requests of a 10 s window, rounded
//! up; beyond that the handler runs), as Finagle's expired-request filter does, so a
//! clock that is off, or a client that lies, cannot turn the server off. An observe-only
//! mode reports what it would refuse and runs the handler.

use std::sync::Mutex;
use std::time::Duration;

use super::ambient::Ambient;
use super::inbound::{Inbound, ServerOptions};

/// The status of a refused request.
pub const REFUSAL_STATUS: u16 = 504;
/// The header (and value) a refusal carries: "don't retry".
pub const REFUSAL_PUSHBACK: (&str, &str) = (super::pushback::PUSHBACK_HEADER, "-1");

/// What the upward rule says of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upward {
    /// Run the handler (time is left, or no deadline came).
    Run,
    /// Answer 504 with `Retryrs-Pushback: -1`, without running the handler.
    Refuse,
    /// Nothing was left, but the server only observes: run the handler (and report it).
    Observed,
    /// Nothing was left, but the cap on refusals was reached: run the handler.
    Capped,
}

impl Upward {
    /// The spelling in conformance vectors and host bindings.
    pub fn as_str(&self) -> &'static str {
        match self {
            Upward::Run => "run",
            Upward::Refuse => "refuse",
            Upward::Observed => "observed",
            Upward::Capped => "capped",
        }
    }
}

/// The cap on refusals: at most `ratio` of a window's requests (rounded up) are refused.
#[derive(Debug)]
pub struct RefusalCap {
    ratio: f64,
    window: Duration,
    state: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    start: Option<Duration>,
    requests: u64,
    refused: u64,
}

impl Default for RefusalCap {
    fn default() -> Self {
        RefusalCap::new(0.2, Duration::from_secs(10))
    }
}

impl RefusalCap {
    /// At most `ratio` (0 to 1) of each `window`'s requests refused.
    pub fn new(ratio: f64, window: Duration) -> Self {
        RefusalCap { ratio: ratio.clamp(0.0, 1.0), window, state: Mutex::new(Window::default()) }
    }

    /// Counts a request at `now` (any monotonic time base) and says whether one that
    /// arrived with nothing left (`expired`) may be refused (`observe_only`: never).
    pub fn judge(&self, expired: bool, observe_only: bool, now: Duration) -> Upward {
        let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if w.start.is_none_or(|s| now.saturating_sub(s) >= self.window) {
            *w = Window { start: Some(now), requests: 0, refused: 0 };
        }
        w.requests += 1;
        if !expired {
            return Upward::Run;
        }
        if observe_only {
            return Upward::Observed;
        }
        let allowed = (self.ratio * w.requests as f64).ceil() as u64;
        if w.refused < allowed {
            w.refused += 1;
            Upward::Refuse
        } else {
            Upward::Capped
        }
    }
}

/// What a server helper does with each request, in one place for every host: read its
/// headers ([`Inbound`]), make its [`Ambient`] context, and apply the upward rule.
#[derive(Debug, Default)]
pub struct Gate {
    options: ServerOptions,
    cap: RefusalCap,
}

/// One request, as the [`Gate`] received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Received {
    /// What the headers said.
    pub inbound: Inbound,
    /// The context the handler runs in.
    pub ambient: Ambient,
    /// Whether the handler runs.
    pub upward: Upward,
}

impl Received {
    /// The time the request's caller has left now (`None`: it gave no deadline).
    pub fn left(&self) -> Option<Duration> {
        self.ambient.left()
    }
}

impl Gate {
    /// A gate with these options and the default cap (20% per 10 s). Marks propagation
    /// as in use.
    pub fn new(options: ServerOptions) -> Self {
        super::ambient::mark_in_use();
        Gate { options, cap: RefusalCap::default() }
    }

    /// The same gate with another cap on refusals.
    pub fn with_cap(mut self, cap: RefusalCap) -> Self {
        self.cap = cap;
        self
    }

    /// Its options.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Receives a request with these headers at `now` (on [`super::now`]'s time base).
    pub fn receive_at<'h>(&self, headers: impl IntoIterator<Item = (&'h str, &'h str)>, now: Duration) -> Received {
        let inbound = Inbound::from_headers(headers, &self.options);
        let upward = self.cap.judge(inbound.expired(), self.options.observe_only, now);
        Received { inbound, ambient: Ambient::at(&inbound, now), upward }
    }

    /// [`Gate::receive_at`] now.
    pub fn receive<'h>(&self, headers: impl IntoIterator<Item = (&'h str, &'h str)>) -> Received {
        self.receive_at(headers, super::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_a_fifth_of_a_window_is_refused() {
        let cap = RefusalCap::default();
        let s = Duration::from_secs;
        assert_eq!(cap.judge(true, false, s(0)), Upward::Refuse, "1 request: ceil(0.2) = 1 refusal allowed");
        assert_eq!(cap.judge(true, false, s(1)), Upward::Capped);
        for _ in 0..3 {
            assert_eq!(cap.judge(false, false, s(2)), Upward::Run);
        }
        assert_eq!(cap.judge(true, false, s(3)), Upward::Refuse, "6 requests: 2 allowed");
        assert_eq!(cap.judge(true, false, s(3)), Upward::Capped);
        assert_eq!(cap.judge(true, false, s(10)), Upward::Refuse, "a new window");
        assert_eq!(cap.judge(true, true, s(30)), Upward::Observed);
    }

    #[test]
    fn the_gate_refuses_a_request_with_nothing_left() {
        let gate = Gate::new(ServerOptions::default());
        let r = gate.receive_at([("Retryrs-Context", "t=0, a=1")], Duration::from_secs(5));
        assert_eq!(r.upward, Upward::Refuse);
        let r = gate.receive_at([("Retryrs-Context", "t=300, a=2")], Duration::from_secs(5));
        assert_eq!((r.upward, r.ambient.is_retry()), (Upward::Run, true));
        assert_eq!(r.ambient.left_at(Duration::from_secs(5)), Some(Duration::from_millis(300)));
        let observing = Gate::new(ServerOptions::default().observe_only(true));
        assert_eq!(observing.receive_at([("grpc-timeout", "0m")], Duration::ZERO).upward, Upward::Observed);
    }
}
