//! The retryrs document: its top level (`policies`, `budgets`, `breakers`) and each
//! policy, knob by knob (from the policy, then `default`, then the built-in default), with
//! its `hedge` object.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::budget::RetryBudget;
use crate::hedge::Hedging;
use crate::knob::{Setting, Unit, KNOBS};
use crate::policy::{Policy, PolicyBuilder, PolicyError};

use super::grammar::{document_jitter, document_value, no_unit, parse_duration, valid_name, NAME_RULE};
use super::read::describe;
use super::{DocumentError, Loader, Policies, DEFAULT_POLICY, HEDGE_KEY};

/// A value as written, with where.
#[derive(Clone, Copy)]
struct At<'a> {
    path_owner: &'a str,
    raw: &'a RawValue,
}

impl<'a> Loader<'a> {
    // ---- the retryrs document -------------------------------------------------------

    pub(super) fn load_document(&self, top: &[(String, &'a RawValue)]) -> Result<Policies, DocumentError> {
        let mut policies_raw = None;
        let mut budgets_raw = None;
        let mut breakers_raw = None;
        for (key, raw) in top {
            match key.as_str() {
                "policies" => policies_raw = Some(*raw),
                "budgets" => budgets_raw = Some(*raw),
                "breakers" => breakers_raw = Some(*raw),
                "$schema" => {}
                other => {
                    return Err(self.key_err(other, raw, "unknown key; a policy document holds policies, budgets and breakers (or a gRPC service config, methodConfig and retryThrottling)"))
                }
            }
        }
        let breakers = self.named("breakers", breakers_raw, Self::breaker)?;
        let budgets = self.named("budgets", budgets_raw, Self::budget)?;
        let Some(policies_raw) = policies_raw else {
            return Err(self.err("policies", None, "missing; a policy document holds a \"policies\" object"));
        };
        let entries = self.object("policies", Some(policies_raw))?;
        let mut written: Vec<(&str, Vec<(String, &'a RawValue)>)> = Vec::with_capacity(entries.len());
        for (name, raw) in &entries {
            if !valid_name(name) {
                return Err(self.key_err(&format!("policies.{name:?}"), raw, format!("the key {NAME_RULE}")));
            }
            written.push((name.as_str(), self.object(&format!("policies.{name}"), Some(raw))?));
        }
        let default = written.iter().find(|(n, _)| *n == DEFAULT_POLICY).map(|(_, e)| e.as_slice()).unwrap_or(&[]);
        let mut policies = BTreeMap::new();
        for (name, own) in &written {
            let mut policy = self.policy(name, own, default, &budgets)?;
            policy.breaker = self.policy_breaker(name, own, default, &breakers)?;
            policies.insert(name.to_string(), policy);
        }
        Ok(Policies { policies, budgets, breakers, warnings: Vec::new() })
    }

    /// A section of named objects (`budgets`, `breakers`): each key checked against the
    /// name rule, each value built by `build` at its path; an absent section is empty.
    fn named<T>(
        &self,
        section: &str,
        raw: Option<&'a RawValue>,
        build: impl Fn(&Self, &str, &'a RawValue) -> Result<T, DocumentError>,
    ) -> Result<BTreeMap<String, Arc<T>>, DocumentError> {
        let mut out = BTreeMap::new();
        if let Some(raw) = raw {
            for (name, value) in self.object(section, Some(raw))? {
                if !valid_name(&name) {
                    return Err(self.key_err(&format!("{section}.{name:?}"), value, format!("the key {NAME_RULE}")));
                }
                let built = build(self, &format!("{section}.{name}"), value)?;
                out.insert(name, Arc::new(built));
            }
        }
        Ok(out)
    }

    /// One policy: its own knobs, then `default`'s, then the built-in defaults.
    fn policy(
        &self,
        name: &str,
        own: &[(String, &'a RawValue)],
        default: &[(String, &'a RawValue)],
        budgets: &BTreeMap<String, Arc<RetryBudget>>,
    ) -> Result<Policy, DocumentError> {
        for (key, raw) in own {
            if crate::knob::knob(key).is_none() && key != "breaker" && key != HEDGE_KEY {
                let known: Vec<&str> = KNOBS.iter().map(|k| k.name).chain(["breaker", HEDGE_KEY]).collect();
                return Err(self.key_err(
                    &format!("policies.{name}.{key}"),
                    raw,
                    format!("unknown key; a policy's keys are {}", known.join(", ")),
                ));
            }
        }
        let find =
            |entries: &[(String, &'a RawValue)], knob: &str| entries.iter().find(|(k, _)| k == knob).map(|(_, v)| *v);
        let mut builder = PolicyBuilder::new().name(name);
        let mut origin: BTreeMap<&'static str, At<'_>> = BTreeMap::new();
        for knob in KNOBS {
            // The name is the policy's own: inheriting it would give every policy default's.
            let at = match find(own, knob.name) {
                Some(raw) => At { path_owner: name, raw },
                None if knob.name == "name" => continue,
                None => match find(default, knob.name) {
                    Some(raw) => At { path_owner: DEFAULT_POLICY, raw },
                    None => continue,
                },
            };
            origin.insert(knob.name, at);
            let path = format!("policies.{}.{}", at.path_owner, knob.name);
            builder = self.knob(builder, knob, &path, at.raw, budgets)?;
        }
        // `hedge` is an object, not a knob: its own, else the default policy's.
        let hedge = match find(own, HEDGE_KEY) {
            Some(raw) => Some((name, raw)),
            None => find(default, HEDGE_KEY).map(|raw| (DEFAULT_POLICY, raw)),
        };
        if let Some((owner, raw)) = hedge {
            builder = builder.hedge(self.hedge(&format!("policies.{owner}.{HEDGE_KEY}"), raw)?);
        }
        builder.build().map_err(|e| {
            let at = origin.get(e.knob);
            let path = format!("policies.{}.{}", at.map_or(name, |a| a.path_owner), e.knob);
            let text = e.render(&|k| if k == e.knob { path.clone() } else { k.to_string() }, &document_value);
            DocumentError { message: text, position: at.map(|a| self.position(a.raw)), path, file: None }
        })
    }

    /// A policy's `hedge`: `{max_attempts, delay, non_fatal}`, `delay` a duration or
    /// `"adaptive"` (then `quantile`, `floor`, `ceiling`, `window` may follow); `null`
    /// for none.
    fn hedge(&self, path: &str, raw: &'a RawValue) -> Result<Option<Hedging>, DocumentError> {
        if raw.get().trim() == "null" {
            return Ok(None);
        }
        let fields = self.object(path, Some(raw))?;
        let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        const KEYS: [&str; 8] =
            ["max_attempts", "delay", "non_fatal", "quantile", "floor", "ceiling", "window", "guard"];
        for (key, v) in &fields {
            if !KEYS.contains(&key.as_str()) {
                return Err(self.key_err(
                    &format!("{path}.{key}"),
                    v,
                    format!("unknown key; hedge holds {}", KEYS.join(", ")),
                ));
            }
        }
        let at = |k: &str| format!("{path}.{k}");
        let whole = |k: &str, default: u64| -> Result<u64, DocumentError> {
            let Some(v) = get(k) else { return Ok(default) };
            let n = self.number(&at(k), v)?;
            if n.fract() == 0.0 && (0.0..1e9).contains(&n) {
                Ok(n as u64)
            } else {
                Err(self.err(&at(k), Some(v), format!("must be a whole number, got {}", crate::units::compact(n))))
            }
        };
        let dur = |k: &str, default: f64| -> Result<f64, DocumentError> {
            let Some(v) = get(k) else { return Ok(default) };
            match self.value(&at(k), v)? {
                Value::String(s) => parse_duration(&s).map_err(|w| self.err(&at(k), Some(v), w)),
                Value::Number(n) => Err(self.err(&at(k), Some(v), no_unit(&n.to_string()))),
                other => Err(self.err(
                    &at(k),
                    Some(v),
                    format!("must be a duration such as \"50ms\", got {}", describe(&other)),
                )),
            }
        };
        let attempts = whole("max_attempts", 2)?;
        let delay_raw = get("delay").ok_or_else(|| {
            self.err(path, Some(raw), "delay is missing; write a duration such as \"50ms\" or \"adaptive\"")
        })?;
        let adaptive = matches!(self.value(&at("delay"), delay_raw)?, Value::String(s) if s == "adaptive");
        let hedging = if adaptive {
            let quantile = match get("quantile") {
                Some(v) => self.number(&at("quantile"), v)?,
                None => 0.95,
            };
            let window = whole("window", crate::hedge::DEFAULT_WINDOW as u64)?;
            Hedging::adaptive_window_ms(
                attempts,
                quantile,
                dur("floor", 1.0)?,
                dur("ceiling", 1000.0)?,
                window as usize,
            )
        } else {
            for k in ["quantile", "floor", "ceiling", "window"] {
                if let Some(v) = get(k) {
                    return Err(self.key_err(&at(k), v, "applies only to \"delay\": \"adaptive\""));
                }
            }
            Hedging::fixed_ms(attempts, dur("delay", 0.0)?)
        }
        .map_err(|e| {
            let key = if e.field == "quantile"
                || e.field == "floor"
                || e.field == "ceiling"
                || e.field == "window"
                || e.field == "max_attempts"
            {
                e.field
            } else {
                "delay"
            };
            self.err(&at(key), get(key), format!("must {}", e.message.trim_start_matches("must ")))
        })?;
        let non_fatal = match get("non_fatal") {
            None => vec![],
            Some(v) => self.names_list(&at("non_fatal"), v)?,
        };
        let guarded = match get("guard") {
            None => true,
            Some(v) => match self.value(&at("guard"), v)? {
                Value::Bool(b) => b,
                other => {
                    return Err(self.err(
                        &at("guard"),
                        Some(v),
                        format!("must be true or false, got {}", describe(&other)),
                    ))
                }
            },
        };
        let hedging = hedging.with_non_fatal(non_fatal);
        Ok(Some(if guarded { hedging } else { hedging.without_guard() }))
    }

    /// A list of failure names (strings) or numbers (statuses), kept as text.
    fn names_list(&self, path: &str, raw: &RawValue) -> Result<Vec<String>, DocumentError> {
        match self.value(path, raw)? {
            Value::Array(items) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    Value::Number(n) if n.as_u64().is_some() => Ok(n.to_string()),
                    other => Err(self.err(
                        path,
                        Some(raw),
                        format!("must list names or status numbers, got {}", describe(other)),
                    )),
                })
                .collect(),
            other => Err(self.err(path, Some(raw), format!("must be a list, got {}", describe(&other)))),
        }
    }

    /// Applies one written knob, converted by its unit in the table.
    fn knob(
        &self,
        builder: PolicyBuilder,
        knob: &'static crate::knob::Knob,
        path: &str,
        raw: &RawValue,
        budgets: &BTreeMap<String, Arc<RetryBudget>>,
    ) -> Result<PolicyBuilder, DocumentError> {
        let value = self.value(path, raw)?;
        let bad = |what: String| self.err(path, Some(raw), what);
        if value.is_null() && !knob.can_be_off {
            let offable: Vec<&str> = KNOBS.iter().filter(|k| k.can_be_off).map(|k| k.name).collect();
            return Err(bad(format!("cannot be null; null turns off only {}", offable.join(", "))));
        }
        let policy_err = |e: PolicyError| {
            bad(e
                .render(&|k| k.to_string(), &document_value)
                .split_once(" must be ")
                .map_or_else(|| e.to_string(), |(_, rest)| format!("must be {rest}")))
        };
        match knob.unit {
            Unit::Count | Unit::Factor => {
                let setting = match &value {
                    Value::Null => Setting::Off,
                    Value::Number(n) => Setting::Number(n.as_f64().unwrap_or(f64::NAN)),
                    other => return Err(bad(format!("must be a number, got {}", describe(other)))),
                };
                builder.set(knob.name, setting).map_err(policy_err)
            }
            Unit::Duration => {
                let setting = match &value {
                    Value::Null => Setting::Off,
                    Value::String(s) => Setting::Number(parse_duration(s).map_err(bad)?),
                    Value::Number(n) => return Err(bad(no_unit(&n.to_string()))),
                    other => return Err(bad(format!("must be a duration such as \"100ms\", got {}", describe(other)))),
                };
                builder.set(knob.name, setting).map_err(policy_err)
            }
            Unit::Jitter => match &value {
                Value::String(s) => Ok(builder.jitter(document_jitter(s).map_err(policy_err)?)),
                other => Err(bad(format!("must be a jitter spelling such as \"full\", got {}", describe(other)))),
            },
            Unit::Text => match &value {
                Value::String(s) if !valid_name(s) => Err(bad(NAME_RULE.to_string())),
                Value::String(s) => Ok(builder.name(s)),
                other => Err(bad(format!("must be a string, got {}", describe(other)))),
            },
            Unit::Seed => match &value {
                Value::Null => Ok(builder.seed(None)),
                Value::Number(n) if n.as_u64().is_some() => Ok(builder.seed(n.as_u64())),
                // 1e3 or 7.0: JSON's integers, as JSON Schema counts them.
                Value::Number(n)
                    if n.as_f64().is_some_and(|f| f.fract() == 0.0 && (0.0..1.8446744073709552e19).contains(&f)) =>
                {
                    Ok(builder.seed(n.as_f64().map(|f| f as u64)))
                }
                other => Err(bad(format!("must be a whole number in [0, 2^64), got {}", describe(other)))),
            },
            Unit::Budget => match &value {
                Value::Null => Ok(builder.budget(None)),
                Value::String(s) => match budgets.get(s) {
                    Some(b) => Ok(builder.budget(Some(Arc::clone(b)))),
                    None => {
                        let known: Vec<&str> = budgets.keys().map(String::as_str).collect();
                        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                        Err(bad(format!("names no budget in budgets (it holds {known})")))
                    }
                },
                other => Err(bad(format!("must name a budget in budgets, got {}", describe(other)))),
            },
        }
    }
}
