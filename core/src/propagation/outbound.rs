//! What a client helper sends with each attempt: `Retryrs-Context` with the attempt's
//! time left (recomputed from the monotonic clock at each send, never copied from an
//! inbound value) and its number, plus the interop headers of a mesh or an RPC protocol;
//! and the allowlist of hosts that may receive any of them.

use std::time::Duration;

use super::codec::{self, format_context, format_grpc_timeout};

/// Which mesh the outbound request goes through (its sidecar's own retries are turned off
/// and, for Envoy, its timeout set: one layer retries, not two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mesh {
    /// No mesh headers.
    #[default]
    None,
    /// Envoy: `x-envoy-upstream-rq-timeout-ms: <t>` and `x-envoy-max-retries: 0`.
    Envoy,
    /// Linkerd: `l5d-retry-limit: 0`.
    Linkerd,
}

impl Mesh {
    /// From its spelling in every host (`"none"`, `"envoy"`, `"linkerd"`).
    pub fn parse(name: &str) -> Result<Mesh, String> {
        match name {
            "none" => Ok(Mesh::None),
            "envoy" => Ok(Mesh::Envoy),
            "linkerd" => Ok(Mesh::Linkerd),
            other => Err(format!("mesh must be \"none\", \"envoy\" or \"linkerd\", got {other:?}")),
        }
    }
}

/// The protocol of the outbound request: gRPC and Connect carry their own budget header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestKind {
    /// Plain HTTP.
    #[default]
    Http,
    /// gRPC: `grpc-timeout` too.
    Grpc,
    /// Connect: `connect-timeout-ms` too.
    Connect,
}

impl RequestKind {
    /// From its spelling in every host (`"http"`, `"grpc"`, `"connect"`).
    pub fn parse(name: &str) -> Result<RequestKind, String> {
        match name {
            "http" => Ok(RequestKind::Http),
            "grpc" => Ok(RequestKind::Grpc),
            "connect" => Ok(RequestKind::Connect),
            other => Err(format!("kind must be \"http\", \"grpc\" or \"connect\", got {other:?}")),
        }
    }
}

/// Envoy's upstream timeout for the next hop.
pub const ENVOY_UPSTREAM_TIMEOUT_HEADER: &str = "x-envoy-upstream-rq-timeout-ms";
/// Envoy's retry limit for the next hop.
pub const ENVOY_MAX_RETRIES_HEADER: &str = "x-envoy-max-retries";
/// Linkerd's retry limit for the next hop.
pub const LINKERD_RETRY_LIMIT_HEADER: &str = "l5d-retry-limit";

/// The headers to send with one attempt: `left` is the attempt's time left (its bound;
/// `None` when unbounded), `attempt` its number, `is_retry` whether the call runs inside a
/// request that was a retry (then `r=?1` is passed on). An attempt with less than one
/// whole millisecond left sends nothing at all (it is not worth a request). The `t` sent
/// is the whole milliseconds left, rounded down (the next hop never gets more).
pub fn outbound_headers(
    mesh: Mesh,
    left: Option<Duration>,
    attempt: u32,
    is_retry: bool,
    kind: RequestKind,
) -> Vec<(&'static str, String)> {
    let t = left.map(|l| u64::try_from(l.as_millis()).unwrap_or(u64::MAX));
    if t == Some(0) {
        return Vec::new();
    }
    let mut headers = vec![(codec::CONTEXT_HEADER, format_context(t, attempt, is_retry))];
    match mesh {
        Mesh::None => {}
        Mesh::Envoy => {
            if let Some(t) = t {
                headers.push((ENVOY_UPSTREAM_TIMEOUT_HEADER, t.to_string()));
            }
            headers.push((ENVOY_MAX_RETRIES_HEADER, "0".into()));
        }
        Mesh::Linkerd => headers.push((LINKERD_RETRY_LIMIT_HEADER, "0".into())),
    }
    if let Some(left) = left {
        match kind {
            RequestKind::Http => {}
            RequestKind::Grpc => headers.push((codec::GRPC_TIMEOUT_HEADER, format_grpc_timeout(left))),
            RequestKind::Connect => headers.push((codec::CONNECT_TIMEOUT_HEADER, t.unwrap_or(0).to_string())),
        }
    }
    headers
}

/// What a client helper propagates (the reqwest middleware's and the tower layer's
/// `propagation` setting): on by default, to every host, with no mesh headers and the
/// request kind HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagate {
    enabled: bool,
    mesh: Mesh,
    kind: RequestKind,
    allowlist: Allowlist,
}

impl Default for Propagate {
    fn default() -> Self {
        Propagate { enabled: true, mesh: Mesh::None, kind: RequestKind::Http, allowlist: Allowlist::all() }
    }
}

impl Propagate {
    /// The default: `Retryrs-Context` on every attempt, to every host.
    pub fn new() -> Self {
        Self::default()
    }
    /// Nothing sent (the per-retrier opt-out).
    pub fn off() -> Self {
        Propagate { enabled: false, ..Self::default() }
    }
    /// Also the headers of this mesh.
    pub fn mesh(mut self, mesh: Mesh) -> Self {
        self.mesh = mesh;
        self
    }
    /// The protocol of the requests (gRPC and Connect add their budget header).
    pub fn kind(mut self, kind: RequestKind) -> Self {
        self.kind = kind;
        self
    }
    /// Only to these hosts (nothing to any other).
    ///
    /// The helpers check each request they send. A redirect the client follows by itself
    /// never passes through them: reqwest (its default `redirect::Policy` follows up to
    /// 10) keeps custom headers on every hop, so with an allowlist build the client with
    /// `reqwest::redirect::Policy::none()` or a policy that stops at hosts outside it;
    /// under the tower `RetryLayer`, put tower-http's `FollowRedirect` above the layer
    /// (each hop then goes through it), not below.
    pub fn allowlist(mut self, allowlist: Allowlist) -> Self {
        self.allowlist = allowlist;
        self
    }
    /// The headers for one attempt of a request to `host` (`None`: a request without one,
    /// sent only when no allowlist is set), with `left` and `attempt` the attempt's bound
    /// and number; `r=?1` when this thread's ambient context ([`super::current`]) is a
    /// retry. Empty when off, to a host the allowlist refuses, or with nothing left.
    pub fn headers(&self, host: Option<&str>, left: Option<Duration>, attempt: u32) -> Vec<(&'static str, String)> {
        let allowed = match host {
            Some(h) => self.allowlist.allows(h),
            None => self.allowlist.hosts.is_none(),
        };
        if !self.enabled || !allowed {
            return Vec::new();
        }
        let is_retry = super::current().is_some_and(|a| a.is_retry());
        outbound_headers(self.mesh, left, attempt, is_retry, self.kind)
    }
}

/// The hosts that may receive propagation headers: every host by default; once a list is
/// set, only the hosts it names (`example.com` exactly, `*.example.com` any subdomain of
/// it, never the apex; names compared ignoring ASCII case, ports ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    hosts: Option<Vec<String>>,
}

impl Allowlist {
    /// Every host (the default).
    pub fn all() -> Self {
        Allowlist { hosts: None }
    }

    /// Only these hosts. An entry that is empty, or has a `*` anywhere but a leading
    /// `*.`, is an error naming it.
    pub fn only<S: AsRef<str>>(hosts: impl IntoIterator<Item = S>) -> Result<Self, String> {
        let mut list = Vec::new();
        for host in hosts {
            let lower = host.as_ref().trim().to_ascii_lowercase();
            let host = host_name(&lower).to_string();
            let bare = host.strip_prefix("*.").unwrap_or(&host);
            if bare.is_empty() || bare.contains('*') || bare.contains('/') {
                return Err(format!(
                    "an allowed host is a name (\"api.example.com\") or \"*.example.com\", got {host:?}"
                ));
            }
            list.push(host);
        }
        Ok(Allowlist { hosts: Some(list) })
    }

    /// Whether `host` (a URL's host, with or without `:port`, IPv6 in brackets) may
    /// receive the headers.
    pub fn allows(&self, host: &str) -> bool {
        let Some(list) = &self.hosts else { return true };
        let name = host_name(host);
        list.iter().any(|entry| match entry.strip_prefix("*.") {
            Some(suffix) => {
                name.len() > suffix.len() + 1
                    && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
                    && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
            }
            None => name.eq_ignore_ascii_case(entry),
        })
    }
}

/// `host` without its port (and an IPv6 address without its brackets) or trailing dot.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    let name = match host.rsplit_once(':') {
        // One colon: name:port. More: an unbracketed IPv6 address, kept whole.
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    name.trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn the_context_header_and_the_interop_modes() {
        assert_eq!(
            outbound_headers(Mesh::None, ms(1999), 1, false, RequestKind::Http),
            [("Retryrs-Context", "t=1999, a=1".to_string())]
        );
        assert_eq!(
            outbound_headers(Mesh::Envoy, Some(Duration::from_micros(1_500_900)), 2, true, RequestKind::Grpc),
            [
                ("Retryrs-Context", "t=1500, a=2, r=?1".to_string()),
                ("x-envoy-upstream-rq-timeout-ms", "1500".to_string()),
                ("x-envoy-max-retries", "0".to_string()),
                ("grpc-timeout", "1500m".to_string()),
            ]
        );
        assert_eq!(
            outbound_headers(Mesh::Linkerd, ms(80), 1, false, RequestKind::Connect),
            [
                ("Retryrs-Context", "t=80, a=1".to_string()),
                ("l5d-retry-limit", "0".to_string()),
                ("connect-timeout-ms", "80".to_string())
            ]
        );
        assert!(outbound_headers(Mesh::Envoy, Some(Duration::from_micros(999)), 3, false, RequestKind::Grpc).is_empty());
        assert_eq!(
            outbound_headers(Mesh::None, None, 3, false, RequestKind::Grpc),
            [("Retryrs-Context", "a=3".to_string())]
        );
    }

    #[test]
    fn the_allowlist() {
        assert!(Allowlist::default().allows("anything.example"));
        let list = Allowlist::only(["api.example.com", "*.internal", "[::1]", "127.0.0.1"]).unwrap();
        for yes in
            ["api.example.com", "API.Example.com:8443", "a.internal", "b.c.internal:80", "[::1]:9000", "127.0.0.1:80"]
        {
            assert!(list.allows(yes), "{yes}");
        }
        for no in ["example.com", "internal", "xinternal", "api.example.com.evil", "127.0.0.2", "evil.com"] {
            assert!(!list.allows(no), "{no}");
        }
        assert!(Allowlist::only([""]).is_err());
        assert!(Allowlist::only(["a*.b"]).is_err());
        assert!(!Allowlist::only(Vec::<String>::new()).unwrap().allows("x"), "an empty list allows nothing");
    }
}
