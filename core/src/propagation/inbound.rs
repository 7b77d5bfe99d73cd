//! What an inbound request says about its caller: the budget it has left and whether it
//! is itself a retry. A client can only shorten the server's own limit, never raise
//! attempts, hedges or budgets; a malformed value is ignored and counted, never fatal.

use std::time::Duration;

use super::codec::{self, Malformed};

/// A server helper's settings for reading inbound requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The longest budget a request may bring (a longer one is clamped to it); `None`:
    /// no clamp. Default 15 s, the contract's default deadline.
    pub limit: Option<Duration>,
    /// Whether the listener is internal (behind a mesh the operator trusts): only then
    /// are `x-envoy-expected-rq-timeout-ms` and `x-envoy-attempt-count` read (Envoy strips
    /// `x-envoy-*` from external requests; a public listener must not believe them).
    pub trust_mesh: bool,
    /// The upward rule only reports, never refuses (see [`super::RefusalCap`]).
    pub observe_only: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions { limit: Some(Duration::from_secs(15)), trust_mesh: false, observe_only: false }
    }
}

impl ServerOptions {
    /// The defaults (15 s limit, mesh headers not trusted, refusing).
    pub fn new() -> Self {
        Self::default()
    }
    /// [`ServerOptions::limit`].
    pub fn limit(mut self, limit: Option<Duration>) -> Self {
        self.limit = limit;
        self
    }
    /// [`ServerOptions::trust_mesh`].
    pub fn trust_mesh(mut self, trust: bool) -> Self {
        self.trust_mesh = trust;
        self
    }
    /// [`ServerOptions::observe_only`].
    pub fn observe_only(mut self, observe: bool) -> Self {
        self.observe_only = observe;
        self
    }
}

/// An inbound request's propagation headers, combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Inbound {
    /// The smallest budget given, clamped to the server's limit; `None`: none given.
    pub budget: Option<Duration>,
    /// The request is a retry (`a > 1`, `r=?1`, `grpc-previous-rpc-attempts >= 1`, or on
    /// an internal listener `x-envoy-attempt-count >= 2`): the downward rule applies.
    pub is_retry: bool,
    /// A budget larger than the server's limit was given (and clamped).
    pub clamped: bool,
    /// How many propagation headers were malformed (and ignored).
    pub malformed: u32,
}

impl Inbound {
    /// Reads the propagation headers among `headers` (name, value; names compared ignoring
    /// ASCII case, a repeated header read each time it appears).
    pub fn from_headers<'h>(headers: impl IntoIterator<Item = (&'h str, &'h str)>, options: &ServerOptions) -> Self {
        let mut inbound = Inbound::default();
        let mut given: Option<Duration> = None;
        let mut offer = |d: Duration| given = Some(given.map_or(d, |g| g.min(d)));
        for (name, value) in headers {
            let value = value.trim_matches([' ', '\t']);
            let read: Result<(), Malformed> = if name.eq_ignore_ascii_case(codec::CONTEXT_HEADER) {
                codec::parse_context(value).map(|c| {
                    if let Some(t) = c.t_ms {
                        offer(Duration::from_millis(t));
                    }
                    inbound.is_retry |= c.retry || c.attempt.is_some_and(|a| a > 1);
                })
            } else if name.eq_ignore_ascii_case(codec::GRPC_TIMEOUT_HEADER) {
                codec::parse_grpc_timeout(value).map(&mut offer)
            } else if name.eq_ignore_ascii_case(codec::GRPC_PREVIOUS_ATTEMPTS_HEADER) {
                count(codec::GRPC_PREVIOUS_ATTEMPTS_HEADER, value).map(|n| inbound.is_retry |= n >= 1)
            } else if options.trust_mesh && name.eq_ignore_ascii_case(codec::ENVOY_EXPECTED_TIMEOUT_HEADER) {
                count(codec::ENVOY_EXPECTED_TIMEOUT_HEADER, value).map(|ms| offer(Duration::from_millis(ms)))
            } else if options.trust_mesh && name.eq_ignore_ascii_case(codec::ENVOY_ATTEMPT_COUNT_HEADER) {
                count(codec::ENVOY_ATTEMPT_COUNT_HEADER, value).map(|n| inbound.is_retry |= n >= 2)
            } else {
                Ok(())
            };
            if read.is_err() {
                inbound.malformed = inbound.malformed.saturating_add(1);
            }
        }
        inbound.budget = match (given, options.limit) {
            (Some(g), Some(limit)) if g > limit => {
                inbound.clamped = true;
                Some(limit)
            }
            (g, _) => g,
        };
        inbound
    }

    /// Whether the request arrived with nothing left (a budget of zero whole milliseconds):
    /// the upward rule refuses it without running the handler.
    pub fn expired(&self) -> bool {
        self.budget.is_some_and(|b| b < Duration::from_millis(1))
    }
}

fn count(header: &'static str, value: &str) -> Result<u64, Malformed> {
    codec::parse_digits(value, codec::MAX_MS_DIGITS)
        .ok_or_else(|| Malformed { header, why: format!("expected 1 to 10 digits, got {value:?}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(headers: &[(&str, &str)], options: &ServerOptions) -> Inbound {
        Inbound::from_headers(headers.iter().copied(), options)
    }

    #[test]
    fn the_smallest_budget_clamped_to_the_limit() {
        let o = ServerOptions::default().limit(Some(Duration::from_secs(10)));
        let i = read(&[("retryrs-context", "t=3600000, a=1")], &o);
        assert_eq!((i.budget, i.clamped, i.is_retry), (Some(Duration::from_secs(10)), true, false));
        let i = read(&[("Retryrs-Context", "t=900"), ("grpc-timeout", "1S")], &o);
        assert_eq!(i.budget, Some(Duration::from_millis(900)));
        let i = read(&[("Retryrs-Context", "t=900"), ("grpc-timeout", "5m")], &o);
        assert_eq!(i.budget, Some(Duration::from_millis(5)));
        assert_eq!(read(&[("accept", "*/*")], &o), Inbound::default());
    }

    #[test]
    fn retries_are_recognised() {
        let o = ServerOptions::default();
        assert!(read(&[("retryrs-context", "t=5, a=2")], &o).is_retry);
        assert!(read(&[("retryrs-context", "t=5, a=1, r=?1")], &o).is_retry);
        assert!(read(&[("grpc-previous-rpc-attempts", "1")], &o).is_retry);
        assert!(!read(&[("grpc-previous-rpc-attempts", "0")], &o).is_retry);
    }

    #[test]
    fn mesh_headers_only_on_an_internal_listener() {
        let h = [("x-envoy-expected-rq-timeout-ms", "250"), ("x-envoy-attempt-count", "2")];
        let public = read(&h, &ServerOptions::default());
        assert_eq!((public.budget, public.is_retry, public.malformed), (None, false, 0));
        let internal = read(&h, &ServerOptions::default().trust_mesh(true));
        assert_eq!((internal.budget, internal.is_retry), (Some(Duration::from_millis(250)), true));
    }

    #[test]
    fn malformed_values_are_counted_and_ignored() {
        let i = read(
            &[("retryrs-context", "t=abc"), ("grpc-timeout", "123456789m"), ("grpc-previous-rpc-attempts", "x")],
            &ServerOptions::default(),
        );
        assert_eq!((i.budget, i.is_retry, i.malformed), (None, false, 3));
    }
}
