//! A gRPC service config (`methodConfig[].retryPolicy` or `hedgingPolicy`,
//! `retryThrottling`), loaded as policies the way grpc-go reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::budget::{thousandths as thousandths_of, RetryBudget, TokenBucket};
use crate::grpc_status::{status_code, StatusCodes, GRPC_STATUS_NAMES};
use crate::hedge::Hedging;
use crate::knob::Setting;
use crate::policy::{Jitter, Policy, PolicyBuilder, Pushback};

use super::grammar::document_value;
use super::read::{describe, shown};
use super::{DocumentError, Loader, Policies, DEFAULT_POLICY, GRPC_BUDGET};

impl<'a> Loader<'a> {
    // ---- gRPC service config --------------------------------------------------------
    //
    // grpc-go's service config parser is the reference: what it refuses is refused, what
    // it accepts loads (and where A6 makes an accepted value useless, a warning says so).

    pub(super) fn load_grpc(&self, top: &[(String, &'a RawValue)]) -> Result<Policies, DocumentError> {
        let mut budgets = BTreeMap::new();
        let mut warnings = Vec::new();
        if let Some((_, raw)) = top.iter().find(|(k, _)| k == "retryThrottling") {
            let budget = self.grpc_throttling(raw, &mut warnings)?;
            budgets.insert(GRPC_BUDGET.to_string(), Arc::new(budget));
        }
        let mut policies = BTreeMap::new();
        if let Some((_, raw)) = top.iter().find(|(k, _)| k == "methodConfig") {
            let configs: Vec<&RawValue> = serde_json::from_str(raw.get())
                .map_err(|_| self.err("methodConfig", Some(raw), "must be a list of method configs"))?;
            // Where each name was given, to refuse one given twice (gRPC does).
            let mut named: BTreeMap<String, String> = BTreeMap::new();
            for (i, config) in configs.iter().enumerate() {
                let path = format!("methodConfig[{i}]");
                let budget = budgets.get(GRPC_BUDGET);
                self.grpc_method(&path, config, budget, &mut named, &mut policies, &mut warnings)?;
            }
        }
        Ok(Policies { policies, budgets, breakers: BTreeMap::new(), warnings })
    }

    /// `retryThrottling`: `maxTokens` a number in (0, 1000] (grpc-go reads a float64:
    /// 10.5 loads; A6 keeps 3 decimals), `tokenRatio` > 0. A ratio that keeps no token at three decimals is valid to
    /// gRPC, so it loads, with a warning.
    fn grpc_throttling(&self, raw: &'a RawValue, warnings: &mut Vec<String>) -> Result<RetryBudget, DocumentError> {
        let path = "retryThrottling";
        let mut max = None;
        let mut ratio = None;
        for (key, v) in self.object(path, Some(raw))? {
            let at = format!("{path}.{key}");
            match key.as_str() {
                "maxTokens" => max = Some((self.number(&at, v)?, v)),
                "tokenRatio" => ratio = Some((self.number(&at, v)?, v)),
                _ => return Err(self.key_err(&at, v, "unknown key; retryThrottling holds maxTokens and tokenRatio")),
            }
        }
        let (Some((m, m_raw)), Some((r, r_raw))) = (max, ratio) else {
            let missing = if max.is_none() { "maxTokens" } else { "tokenRatio" };
            return Err(self.err(path, Some(raw), format!("{missing} is missing")));
        };
        // grpc-go reads a float64 and checks (0, 1000]; tokens keep 3 decimals (A6).
        if !(m > 0.0 && m <= 1000.0) {
            return Err(self.err(
                "retryThrottling.maxTokens",
                Some(m_raw),
                format!("must be > 0 and <= 1000 (gRPC), got {m}"),
            ));
        }
        if thousandths_of(m) == 0 {
            return Err(self.err(
                "retryThrottling.maxTokens",
                Some(m_raw),
                format!("must be at least 0.001 (A6 keeps 3 decimals), got {m}"),
            ));
        }
        if !(r > 0.0 && r.is_finite()) {
            return Err(self.err("retryThrottling.tokenRatio", Some(r_raw), format!("must be > 0 (gRPC), got {r}")));
        }
        let budget = RetryBudget::from(TokenBucket::grpc(m, r));
        if budget.token_ratio() == 0.0 {
            warnings.push(format!(
                "retryThrottling.tokenRatio: {r} is 0 at the three decimals gRPC keeps (A6): successes never refill the bucket, so once {} failures spend half of it no call is retried again",
                m / 2.0
            ));
        }
        Ok(budget)
    }

    fn grpc_method(
        &self,
        path: &str,
        raw: &'a RawValue,
        budget: Option<&Arc<RetryBudget>>,
        named: &mut BTreeMap<String, String>,
        out: &mut BTreeMap<String, Policy>,
        warnings: &mut Vec<String>,
    ) -> Result<(), DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let get = |k: &str| entries.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        // grpc-go skips a method config without names: it applies to no method.
        let names = match get("name") {
            None => Vec::new(),
            Some(n) => self.grpc_names(&format!("{path}.name"), n)?,
        };
        if names.is_empty() {
            warnings.push(format!(
                "{path}: names no method, so it applies to none (gRPC); {{}} in name makes it every method's default"
            ));
            return Ok(());
        }
        for (name, at, raw_at) in &names {
            if let Some(first) = named.get(name) {
                let what = if name == DEFAULT_POLICY { "the default ({})".to_string() } else { format!("{name:?}") };
                return Err(self.err(
                    at,
                    Some(raw_at),
                    format!("names {what} again: {first} names it already; gRPC refuses a service config that names a method twice"),
                ));
            }
            named.insert(name.clone(), at.clone());
        }
        if let (Some(_), Some(h)) = (get("retryPolicy"), get("hedgingPolicy")) {
            let methods: Vec<&str> = names.iter().map(|(n, _, _)| n.as_str()).collect();
            return Err(self.err(
                &format!("{path}.hedgingPolicy"),
                Some(h),
                format!(
                    "and retryPolicy are both set for {}: a method is retried or hedged, not both (gRPC A6)",
                    methods.join(", ")
                ),
            ));
        }
        let deadline = match get("timeout") {
            None => None, // gRPC calls have no deadline unless one is set.
            Some(t) => match self.value(&format!("{path}.timeout"), t)? {
                Value::String(s) => {
                    Some(grpc_duration(&s).map_err(|w| self.err(&format!("{path}.timeout"), Some(t), w))?)
                }
                other => {
                    return Err(self.err(
                        &format!("{path}.timeout"),
                        Some(t),
                        format!("must be a duration such as \"1.5s\", got {}", describe(&other)),
                    ))
                }
            },
        };
        let base = PolicyBuilder::new()
            .deadline_ms(deadline)
            .pushback(Pushback::Grpc)
            // No retryPolicy: one attempt, no status retried (a retryPolicy lists its own).
            .grpc_status_codes(Some(StatusCodes::default()));
        let builder = match (get("retryPolicy"), get("hedgingPolicy")) {
            (Some(retry), _) => self.grpc_retry(path, retry, base, budget, warnings)?,
            (None, Some(hedge)) => self.grpc_hedging(path, hedge, base, budget)?,
            // A method config without a retry policy still is the method's config: gRPC
            // makes one attempt (a service-level policy does not apply to it), and a call
            // that is not retried spends no throttling token.
            (None, None) => base.max_attempts(1).budget(None),
        };
        for (name, _, _) in names {
            let built = builder.clone().name(&name).build().map_err(|e| {
                let text = e.render(&|k| k.to_string(), &document_value);
                self.err(&format!("{path}.timeout"), get("timeout"), format!("retryrs needs {text}"))
            })?;
            out.insert(name, built);
        }
        Ok(())
    }

    /// A method config's `retryPolicy`, checked as grpc-go checks it, onto `base`.
    /// `perAttemptRecvTimeout` (gRFC A6's later field) loads as grpc-go loads it: checked as
    /// a duration, then ignored, with a warning saying so.
    fn grpc_retry(
        &self,
        path: &str,
        retry: &'a RawValue,
        base: PolicyBuilder,
        budget: Option<&Arc<RetryBudget>>,
        warnings: &mut Vec<String>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let rp = format!("{path}.retryPolicy");
        let fields = self.object(&rp, Some(retry))?;
        let field = |k: &str| -> Result<&RawValue, DocumentError> {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| *v)
                .ok_or_else(|| self.err(&rp, Some(retry), format!("{k} is missing (gRPC requires it)")))
        };
        for (key, v) in &fields {
            if !matches!(
                key.as_str(),
                "maxAttempts"
                    | "initialBackoff"
                    | "maxBackoff"
                    | "backoffMultiplier"
                    | "retryableStatusCodes"
                    | "perAttemptRecvTimeout"
            ) {
                return Err(self.key_err(&format!("{rp}.{key}"), v, "unknown or unsupported retryPolicy field"));
            }
            if key == "perAttemptRecvTimeout" {
                let at = format!("{rp}.{key}");
                self.grpc_seconds(&at, v, "1s")?;
                warnings.push(format!(
                    "{at}: ignored, as grpc-go ignores it; bound each attempt with the method config's timeout, or a \
                     retryrs policy's attempt_timeout"
                ));
            }
        }
        let at = |k: &str| format!("{rp}.{k}");
        let attempts_raw = field("maxAttempts")?;
        let attempts = self.grpc_attempts(&at("maxAttempts"), attempts_raw, self.options.grpc_max_attempts.max(1))?;
        let backoff = |k: &str| -> Result<f64, DocumentError> {
            let raw = field(k)?;
            let ms = self.grpc_seconds(&at(k), raw, "0.1s")?;
            if ms <= 0.0 {
                return Err(self.err(&at(k), Some(raw), "must be > 0 (gRPC)"));
            }
            Ok(ms)
        };
        let initial = backoff("initialBackoff")?;
        let max = backoff("maxBackoff")?;
        let mult_raw = field("backoffMultiplier")?;
        let multiplier = self.number(&at("backoffMultiplier"), mult_raw)?;
        let codes_raw = field("retryableStatusCodes")?;
        let codes = self.grpc_codes(&at("retryableStatusCodes"), codes_raw)?;
        let builder = base
            .grpc_status_codes(Some(StatusCodes::retryable(codes)))
            .max_attempts(attempts)
            .initial_delay_ms(initial)
            .max_delay_ms(max)
            .multiplier(multiplier)
            .jitter(Jitter::Proportional(0.2))
            // gRPC obeys grpc-retry-pushback-ms as given: no cap on a server's wait.
            .set("max_retry_after", Setting::Off)
            .map_err(|e| self.err(&rp, Some(retry), e))?
            .budget(budget.cloned());
        // The knobs' own rules, reported at the gRPC field that broke them.
        builder.clone().build().map_err(|e| {
            let (key, raw) = match e.knob {
                "max_delay" => ("maxBackoff", field("maxBackoff").ok()),
                "initial_delay" => ("initialBackoff", field("initialBackoff").ok()),
                "multiplier" => ("backoffMultiplier", Some(mult_raw)),
                _ => ("maxAttempts", Some(attempts_raw)),
            };
            let text = e.render(&|k| k.to_string(), &document_value);
            self.err(&at(key), raw, format!("retryrs needs {text}"))
        })?;
        Ok(builder)
    }

    /// A retry or hedging policy's `maxAttempts`: a whole number > 1 (gRPC), capped at `cap`.
    fn grpc_attempts(&self, path: &str, raw: &'a RawValue, cap: u32) -> Result<u64, DocumentError> {
        let attempts = self.number(path, raw)?;
        if !(attempts.fract() == 0.0 && attempts > 1.0) {
            return Err(self.err(path, Some(raw), format!("must be a whole number > 1 (gRPC), got {attempts}")));
        }
        // grpc-go reads an int: JSON's 2.0 or 2e0 does not unmarshal into one.
        if !raw.get().trim().bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.err(
                path,
                Some(raw),
                format!(
                    "must be an integer written without a fraction or exponent (gRPC reads an int), got {}",
                    raw.get().trim()
                ),
            ));
        }
        Ok(attempts.min(f64::from(cap)) as u64)
    }

    /// A gRPC duration (`"0.1s"`) in milliseconds; `example` shows the form in the error.
    fn grpc_seconds(&self, path: &str, raw: &'a RawValue, example: &str) -> Result<f64, DocumentError> {
        match self.value(path, raw)? {
            Value::String(s) => grpc_duration(&s).map_err(|w| self.err(path, Some(raw), w)),
            other => Err(self.err(
                path,
                Some(raw),
                format!("must be a duration in seconds such as \"{example}\", got {}", describe(&other)),
            )),
        }
    }

    /// A method config's `hedgingPolicy`, as A6 and grpc-java read it: `maxAttempts` a
    /// whole number > 1 (capped at 5, or
    /// [`LoadOptions::grpc_max_attempts`](super::LoadOptions::grpc_max_attempts) if lower),
    /// `hedgingDelay` a duration >= 0 (0s when omitted: every attempt at once),
    /// `nonFatalStatusCodes` a list of status codes (none when omitted: every failure is
    /// fatal). Hedges are throttled by `retryThrottling` exactly as A6 says (sent only
    /// while tokens > maxTokens/2, spending nothing: only failures spend); without
    /// `retryThrottling` they are not limited (A6: no throttling configured), so the
    /// native default guard is off.
    fn grpc_hedging(
        &self,
        path: &str,
        hedge: &'a RawValue,
        base: PolicyBuilder,
        budget: Option<&Arc<RetryBudget>>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let hp = format!("{path}.hedgingPolicy");
        let fields = self.object(&hp, Some(hedge))?;
        for (key, v) in &fields {
            if !matches!(key.as_str(), "maxAttempts" | "hedgingDelay" | "nonFatalStatusCodes") {
                return Err(self.key_err(&format!("{hp}.{key}"), v, "unknown hedgingPolicy field"));
            }
        }
        let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        let at = |k: &str| format!("{hp}.{k}");
        let attempts_raw = get("maxAttempts")
            .ok_or_else(|| self.err(&hp, Some(hedge), "maxAttempts is missing (gRPC requires it)"))?;
        let cap = self.options.grpc_max_attempts.clamp(1, crate::hedge::MAX_HEDGE_ATTEMPTS);
        let attempts = self.grpc_attempts(&at("maxAttempts"), attempts_raw, cap)?;
        let delay = match get("hedgingDelay") {
            None => 0.0,
            Some(raw) => self.grpc_seconds(&at("hedgingDelay"), raw, "0.5s")?,
        };
        let non_fatal = match get("nonFatalStatusCodes") {
            None => vec![],
            Some(raw) => self.grpc_code_names(&at("nonFatalStatusCodes"), raw, true)?,
        };
        let codes = StatusCodes::non_fatal(non_fatal.iter().filter_map(|n| status_code(n).ok()));
        let hedging = Hedging::fixed_ms(attempts, delay)
            .map_err(|e| self.err(&at("hedgingDelay"), get("hedgingDelay"), format!("retryrs needs {e}")))?
            .with_non_fatal(non_fatal)
            .with_a6_throttling()
            .without_guard();
        Ok(base
            .hedge(Some(hedging))
            .grpc_status_codes(Some(codes))
            .set("max_retry_after", Setting::Off)
            .map_err(|e| self.err(&hp, Some(hedge), e))?
            .budget(budget.cloned()))
    }

    /// `retryableStatusCodes`: a non-empty list of gRPC status codes, each a name
    /// (`"UNAVAILABLE"`) or a number in [0, 16], as grpc-go reads them; kept in the
    /// policy ([`Policy::grpc_status_codes`], [`Policy::grpc_verdict`]) for the host's
    /// predicate, which decides which errors are retried.
    fn grpc_codes(&self, path: &str, raw: &RawValue) -> Result<Vec<u8>, DocumentError> {
        Ok(self.grpc_code_names(path, raw, false)?.iter().filter_map(|n| status_code(n).ok()).collect())
    }

    /// A list of gRPC status codes (names or numbers), as names; empty only if `may_be_empty`.
    fn grpc_code_names(&self, path: &str, raw: &RawValue, may_be_empty: bool) -> Result<Vec<String>, DocumentError> {
        let list: Vec<&RawValue> = serde_json::from_str(raw.get())
            .map_err(|_| self.err(path, Some(raw), "must be a non-empty list (gRPC)"))?;
        if list.is_empty() && !may_be_empty {
            return Err(self.err(path, Some(raw), "must be a non-empty list (gRPC)"));
        }
        let mut names = Vec::with_capacity(list.len());
        for (i, code) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let found = match self.value(&p, code)? {
                Value::String(s) => GRPC_STATUS_NAMES.iter().find(|c| **c == s.as_str()).copied(),
                Value::Number(n) => n.as_u64().and_then(|n| GRPC_STATUS_NAMES.get(n as usize)).copied(),
                _ => None,
            };
            if let Some(name) = found {
                names.push(name.to_string());
            } else {
                return Err(self.err(
                    &p,
                    Some(code),
                    format!(
                        "{} is not a gRPC status code; write a name such as \"UNAVAILABLE\" or a number from 0 to {}",
                        shown(code),
                        GRPC_STATUS_NAMES.len() - 1
                    ),
                ));
            }
        }
        Ok(names)
    }

    /// A method config's names, each with its path: gRPC's `service/method`, `service`
    /// for all its methods, `default` for `{}` (every method).
    #[allow(clippy::type_complexity)]
    fn grpc_names(&self, path: &str, raw: &'a RawValue) -> Result<Vec<(String, String, &'a RawValue)>, DocumentError> {
        let list: Vec<&RawValue> =
            serde_json::from_str(raw.get()).map_err(|_| self.err(path, Some(raw), "must be a list of names"))?;
        let mut out = Vec::new();
        for (i, n) in list.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let mut service = String::new();
            let mut method = String::new();
            for (key, v) in self.object(&p, Some(n))? {
                let text = match self.value(&format!("{p}.{key}"), v)? {
                    Value::String(s) => s,
                    other => {
                        return Err(self.err(
                            &format!("{p}.{key}"),
                            Some(v),
                            format!("must be a string, got {}", describe(&other)),
                        ))
                    }
                };
                match key.as_str() {
                    "service" => service = text,
                    "method" => method = text,
                    _ => {
                        return Err(self.key_err(
                            &format!("{p}.{key}"),
                            v,
                            "unknown key; a name holds service and method",
                        ))
                    }
                }
            }
            let name = match (service.is_empty(), method.is_empty()) {
                (true, true) => DEFAULT_POLICY.to_string(),
                (false, true) => service,
                (false, false) => format!("{service}/{method}"),
                (true, false) => return Err(self.err(&p, Some(n), "a method needs its service (gRPC)")),
            };
            out.push((name, p, *n));
        }
        Ok(out)
    }
}

/// A protobuf JSON duration as gRPC's service config writes it: seconds with an `s`.
fn grpc_duration(text: &str) -> Result<f64, String> {
    match text.strip_suffix('s') {
        // A protobuf duration has nanoseconds: grpc-go refuses a 10th fractional digit.
        Some(n) if n.split_once('.').is_some_and(|(_, frac)| frac.len() > 9) => {
            Err(format!("{text:?} has more than 9 digits after the point (a protobuf duration holds nanoseconds)"))
        }
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.') => {
            n.parse::<f64>().map(crate::units::ms_from_secs).map_err(|_| format!("{text:?} is not a duration"))
        }
        _ => Err(format!("{text:?} is not a protobuf duration; gRPC writes seconds such as \"0.1s\"")),
    }
}
