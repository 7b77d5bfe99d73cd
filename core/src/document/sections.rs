//! A retryrs document's named sections a policy refers to: `budgets` (token bucket,
//! quota, ratio) and `breakers` (consecutive, sampling, count), each checked key by key.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::breaker::{BreakerConfig, BreakerModel, CircuitBreaker};
use crate::budget::{BudgetError, QuotaBudget, RatioBudget, RetryBudget};

use super::read::describe;
use super::{DocumentError, Loader, DEFAULT_POLICY};

impl<'a> Loader<'a> {
    pub(super) fn budget(&self, path: &str, raw: &'a RawValue) -> Result<RetryBudget, DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let kind = match entries.iter().find(|(k, _)| k == "kind") {
            None => "token_bucket".to_string(),
            Some((_, v)) => self.choice(&format!("{path}.kind"), v, &["token_bucket", "quota", "ratio"])?,
        };
        let entries: Vec<_> = entries.into_iter().filter(|(k, _)| k != "kind").collect();
        match kind.as_str() {
            "quota" => return self.quota(path, &entries).map(RetryBudget::from),
            "ratio" => return self.ratio(path, &entries).map(RetryBudget::from),
            _ => {}
        }
        let mut max = None;
        let mut ratio = None;
        for (key, v) in entries {
            let at = format!("{path}.{key}");
            match key.as_str() {
                "max_tokens" => max = Some((self.number(&at, v)?, v)),
                "token_ratio" => ratio = Some((self.number(&at, v)?, v)),
                _ => {
                    return Err(self.key_err(
                        &at,
                        v,
                        "unknown key; a token_bucket budget holds kind, max_tokens and token_ratio",
                    ))
                }
            }
        }
        let (Some((m, m_raw)), Some((r, r_raw))) = (max, ratio) else {
            let missing = if max.is_none() { "max_tokens" } else { "token_ratio" };
            return Err(self.err(
                path,
                Some(raw),
                format!("{missing} is missing; a budget needs max_tokens and token_ratio"),
            ));
        };
        RetryBudget::new(m, r).map_err(|e| {
            let at = if e.knob == "max_tokens" { m_raw } else { r_raw };
            self.err(&format!("{path}.{}", e.knob), Some(at), format!("must be {}, got {}", e.requirement, e.value))
        })
    }

    /// The AWS SDKs' quota; every knob defaults to the SDKs' value.
    fn quota(&self, path: &str, entries: &[(String, &'a RawValue)]) -> Result<QuotaBudget, DocumentError> {
        let known = ["capacity", "retry_cost", "timeout_retry_cost", "no_retry_increment"];
        let given = self.known(path, entries, &known, "a quota budget holds kind")?;
        let get = |knob: &str, default: u64| match given.get(knob) {
            Some(raw) => self.whole(&format!("{path}.{knob}"), raw),
            None => Ok(default),
        };
        let q = QuotaBudget::new(
            get("capacity", QuotaBudget::AWS_CAPACITY)?,
            get("retry_cost", QuotaBudget::AWS_RETRY_COST)?,
            get("timeout_retry_cost", QuotaBudget::AWS_TIMEOUT_RETRY_COST)?,
            get("no_retry_increment", QuotaBudget::AWS_NO_RETRY_INCREMENT)?,
        );
        q.map_err(|e| self.section_err(path, &given, e))
    }

    /// Finagle's ratio budget; every knob defaults to Finagle's value.
    fn ratio(&self, path: &str, entries: &[(String, &'a RawValue)]) -> Result<RatioBudget, DocumentError> {
        let known = ["ttl", "min_retries_per_sec", "percent_can_retry"];
        let given = self.known(path, entries, &known, "a ratio budget holds kind")?;
        let ttl = match given.get("ttl") {
            Some(raw) => self.duration(&format!("{path}.ttl"), raw)?,
            None => RatioBudget::FINAGLE_TTL,
        };
        let min = match given.get("min_retries_per_sec") {
            Some(raw) => {
                let at = format!("{path}.min_retries_per_sec");
                u32::try_from(self.whole(&at, raw)?).unwrap_or(u32::MAX)
            }
            None => RatioBudget::FINAGLE_MIN_RETRIES_PER_SEC,
        };
        let percent = match given.get("percent_can_retry") {
            Some(raw) => self.number(&format!("{path}.percent_can_retry"), raw)?,
            None => RatioBudget::FINAGLE_PERCENT_CAN_RETRY,
        };
        // The window starts at the first call it sees (a slice starts when noticed).
        RatioBudget::new(ttl, min, percent, std::time::Duration::ZERO).map_err(|e| self.section_err(path, &given, e))
    }

    /// A circuit breaker: `model` (consecutive, sampling or count) and its knobs.
    pub(super) fn breaker(&self, path: &str, raw: &'a RawValue) -> Result<CircuitBreaker, DocumentError> {
        let entries = self.object(path, Some(raw))?;
        let Some((_, model_raw)) = entries.iter().find(|(k, _)| k == "model") else {
            return Err(self.err(
                path,
                Some(raw),
                "model is missing; a breaker needs model: consecutive, sampling or count",
            ));
        };
        let model = self.choice(&format!("{path}.model"), model_raw, &["consecutive", "sampling", "count"])?;
        let entries: Vec<_> = entries.into_iter().filter(|(k, _)| k != "model").collect();
        let common = [
            "break_duration",
            "half_open_probes",
            "break_multiplier",
            "max_break_duration",
            "per_attempt",
            "count_permanent",
            "judge_all_probes",
        ];
        let own: &[&str] = match model.as_str() {
            "consecutive" => &["failures"],
            "sampling" => {
                &["failure_ratio", "minimum_throughput", "sampling_duration", "slow_call_duration", "slow_call_ratio"]
            }
            _ => &["failure_ratio", "minimum_calls", "window_size", "slow_call_duration", "slow_call_ratio"],
        };
        let known: Vec<&str> = own.iter().chain(common.iter()).copied().collect();
        let what = format!("a {model} breaker holds model");
        let given = self.known(path, &entries, &known, &what)?;
        let at = |k: &str| format!("{path}.{k}");
        let count = |k: &str| -> Result<Option<u32>, DocumentError> {
            match given.get(k) {
                Some(raw) => Ok(Some(u32::try_from(self.whole(&at(k), raw)?).unwrap_or(u32::MAX))),
                None => Ok(None),
            }
        };
        let ratio = |k: &str, default: f64| -> Result<f64, DocumentError> {
            match given.get(k) {
                Some(raw) => self.number(&at(k), raw),
                None => Ok(default),
            }
        };
        let flag = |k: &str| -> Result<bool, DocumentError> {
            match given.get(k) {
                None => Ok(false),
                Some(raw) => match self.value(&at(k), raw)? {
                    Value::Bool(b) => Ok(b),
                    other => {
                        Err(self.err(&at(k), Some(raw), format!("must be true or false, got {}", describe(&other))))
                    }
                },
            }
        };
        let model = match model.as_str() {
            "consecutive" => {
                let Some(failures) = count("failures")? else {
                    return Err(self.err(path, Some(raw), "failures is missing; a consecutive breaker needs failures"));
                };
                BreakerModel::Consecutive { failures }
            }
            "sampling" => {
                // Polly v8's defaults.
                let sampling_duration = match given.get("sampling_duration") {
                    Some(raw) => self.duration(&at("sampling_duration"), raw)?,
                    None => std::time::Duration::from_secs(30),
                };
                BreakerModel::Sampling {
                    failure_ratio: ratio("failure_ratio", 0.1)?,
                    minimum_throughput: count("minimum_throughput")?.unwrap_or(100),
                    sampling_duration,
                }
            }
            // resilience4j's defaults.
            _ => BreakerModel::Count {
                failure_ratio: ratio("failure_ratio", 0.5)?,
                minimum_calls: count("minimum_calls")?.unwrap_or(100),
                window_size: count("window_size")?.unwrap_or(100),
            },
        };
        let mut config = BreakerConfig::new(model);
        if let Some(raw) = given.get("break_duration") {
            config.break_duration = self.duration(&at("break_duration"), raw)?;
        }
        if let Some(n) = count("half_open_probes")? {
            config.half_open_probes = n;
        }
        if let Some(raw) = given.get("break_multiplier") {
            config.break_multiplier = self.number(&at("break_multiplier"), raw)?;
        }
        if let Some(raw) = given.get("max_break_duration") {
            config.max_break_duration = match self.value(&at("max_break_duration"), raw)? {
                Value::Null => None,
                _ => Some(self.duration(&at("max_break_duration"), raw)?),
            };
        }
        if let Some(raw) = given.get("slow_call_duration") {
            config.slow_call_duration = match self.value(&at("slow_call_duration"), raw)? {
                Value::Null => None,
                _ => Some(self.duration(&at("slow_call_duration"), raw)?),
            };
        }
        config.slow_call_ratio = ratio("slow_call_ratio", 1.0)?;
        config.per_attempt = flag("per_attempt")?;
        config.count_permanent = flag("count_permanent")?;
        config.judge_all_probes = flag("judge_all_probes")?;
        CircuitBreaker::new(config).map_err(|e| self.section_err(path, &given, e))
    }

    /// The breaker a policy names (its own `breaker` key, else `default`'s).
    pub(super) fn policy_breaker(
        &self,
        name: &str,
        own: &[(String, &'a RawValue)],
        default: &[(String, &'a RawValue)],
        breakers: &BTreeMap<String, Arc<CircuitBreaker>>,
    ) -> Result<Option<Arc<CircuitBreaker>>, DocumentError> {
        let find = |entries: &[(String, &'a RawValue)]| entries.iter().find(|(k, _)| k == "breaker").map(|(_, v)| *v);
        let (owner, raw) = match (find(own), find(default)) {
            (Some(raw), _) => (name, raw),
            (None, Some(raw)) => (DEFAULT_POLICY, raw),
            (None, None) => return Ok(None),
        };
        let path = format!("policies.{owner}.breaker");
        match self.value(&path, raw)? {
            Value::Null => Ok(None),
            Value::String(s) => match breakers.get(&s) {
                Some(b) => Ok(Some(Arc::clone(b))),
                None => {
                    let known: Vec<&str> = breakers.keys().map(String::as_str).collect();
                    let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                    Err(self.err(&path, Some(raw), format!("names no breaker in breakers (it holds {known})")))
                }
            },
            other => {
                Err(self.err(&path, Some(raw), format!("must name a breaker in breakers, got {}", describe(&other))))
            }
        }
    }

    /// The entries of a section whose keys must be among `known` (`what` starts the list
    /// the error gives).
    fn known(
        &self,
        path: &str,
        entries: &[(String, &'a RawValue)],
        known: &[&str],
        what: &str,
    ) -> Result<BTreeMap<String, &'a RawValue>, DocumentError> {
        let mut out = BTreeMap::new();
        for (key, v) in entries {
            if !known.contains(&key.as_str()) {
                let text = format!("unknown key; {what}, {}", known.join(", "));
                return Err(self.key_err(&format!("{path}.{key}"), v, text));
            }
            out.insert(key.clone(), *v);
        }
        Ok(out)
    }

    /// A core error about a section's knob, located at the knob when it was written.
    fn section_err(&self, path: &str, given: &BTreeMap<String, &'a RawValue>, e: BudgetError) -> DocumentError {
        let at = format!("{path}.{}", e.knob);
        // A document spells its keys as the contract does (the key is the path above);
        // a duration's value is shown with its unit, as the document's strings carry one.
        let value = if crate::spelling::Spelling::is_duration(e.knob) {
            crate::spelling::Spelling::Rust.span_ms(e.value)
        } else if e.value.fract() == 0.0 && e.value.abs() < 1e15 {
            format!("{}", e.value as i64)
        } else {
            format!("{}", e.value)
        };
        self.err(&at, given.get(e.knob).copied(), format!("must be {}, got {value}", e.requirement))
    }
}
