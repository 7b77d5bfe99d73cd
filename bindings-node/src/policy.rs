//! The policy: the JS options (already type-checked by the JS layer) handed to the
//! engine's `PolicyBuilder`, which does every range check, and the registry that lets a
//! call name its policy by a plain number.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use retryrs::{units, Jitter, Policy, PolicyBuilder, Setting, Stats};

use crate::breaker::NativeBreaker;
use crate::budget::NativeBudget;
use crate::guard::guarded;
use crate::problem::Problem;

/// The options the engine validates, in the shape the JS layer normalised them to: the
/// numeric knobs by their contract names (the list comes from the knob table through
/// `knobs()`, so a new numeric knob needs no edit here), the rest by field.
#[napi(object)]
pub struct PolicyOptions {
    /// Numeric knobs given, by contract name, in the core's units (ms for durations).
    pub numbers: Option<HashMap<String, f64>>,
    /// Knobs turned off (`null`), by contract name.
    pub off: Option<Vec<String>>,
    pub jitter: Option<String>,
    pub name: Option<String>,
    pub seed: Option<BigInt>,
    /// Hedging (`hedge: {...}`), type-checked by the JS layer; the engine checks ranges.
    pub hedge: Option<HedgeOptions>,
}

/// The constructor's `hedge` option in Node's spelling: `delayMs` a number of ms, or
/// `adaptive` with its quantile, floor, ceiling and window.
#[napi(object)]
pub struct HedgeOptions {
    pub max_attempts: f64,
    pub delay_ms: Option<f64>,
    pub adaptive: bool,
    pub quantile: Option<f64>,
    pub floor_ms: Option<f64>,
    pub ceiling_ms: Option<f64>,
    pub window: Option<f64>,
    /// false: no default guard (hedges unlimited without a budget).
    pub guard: bool,
}

/// The engine's hedging policy for `hedge`, its errors in Node's names (`hedge.delayMs`).
fn hedging(h: &HedgeOptions) -> Result<retryrs::Hedging, Problem> {
    use retryrs::hedge::{Hedging, DEFAULT_WINDOW};
    let whole = |name: &str, v: f64| -> Result<u64, Problem> {
        if v.fract() == 0.0 && (0.0..=1e15).contains(&v) {
            Ok(v as u64)
        } else {
            Err(Problem::new(&format!("hedge.{name}"), crate::problem::js_number(v), "a whole number"))
        }
    };
    let attempts = whole("maxAttempts", h.max_attempts)?;
    let built = if h.adaptive {
        let window = match h.window {
            Some(w) => whole("window", w)? as usize,
            None => DEFAULT_WINDOW,
        };
        Hedging::adaptive_window_ms(
            attempts,
            h.quantile.unwrap_or(0.95),
            h.floor_ms.unwrap_or(1.0),
            h.ceiling_ms.unwrap_or(1000.0),
            window,
        )
    } else {
        Hedging::fixed_ms(attempts, h.delay_ms.unwrap_or(0.0))
    };
    let built = built.map(|built| if h.guard { built } else { built.without_guard() });
    built.map_err(|e| Problem::from_message(format!("hedge.{}", e.render(retryrs::Spelling::Node))))
}

/// One policy knob as the JS layer needs it to derive its option handling.
#[napi(object)]
pub struct KnobInfo {
    /// The contract's name (`initial_delay`).
    pub name: String,
    /// Node's spelling (`initialDelayMs`).
    pub option: String,
    /// `count`, `duration` (milliseconds in Node), `factor`, `jitter`, `text`, `seed` or
    /// `budget`.
    pub unit: String,
    /// Whether it is a number the JS layer hands over by name.
    pub numeric: bool,
    /// Whether `null` turns it off.
    pub can_be_off: bool,
}

/// The knob table, in Node's spelling.
#[napi]
pub fn knobs() -> napi::Result<Vec<KnobInfo>> {
    guarded(|| {
        Ok(retryrs::KNOBS
            .iter()
            .map(|k| KnobInfo {
                name: k.name.into(),
                option: k.camel_ms(),
                unit: format!("{:?}", k.unit).to_lowercase(),
                numeric: k.unit.is_numeric(),
                can_be_off: k.can_be_off,
            })
            .collect())
    })
}

/// The exhaust reasons in the order `NativePolicy.stats` lists their counts.
#[napi]
pub fn exhaust_reasons() -> napi::Result<Vec<String>> {
    guarded(|| Ok(retryrs::ExhaustReason::ALL.iter().map(|r| r.as_str().to_string()).collect()))
}

/// A validated, immutable policy shared by every call of one JS `Retrier`.
#[napi]
pub struct NativePolicy {
    pub(crate) inner: Arc<Policy>,
    /// The retrier's statistics (`r.stats()`): every call under this policy feeds them.
    pub(crate) stats: Arc<Stats>,
    id: u32,
}

/// A registered policy and the statistics its calls feed.
pub(crate) type Entry = (Arc<Policy>, Arc<Stats>);

/// Live policies (by id) and the ids free for reuse.
type Registry = (Vec<Option<Entry>>, Vec<u32>);

thread_local! {
    /// Live policies by id, so a call can name its policy with a plain number: unwrapping
    /// a class instance on every call start costs more than the rest of the start.
    static POLICIES: RefCell<Registry> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn register(policy: &Arc<Policy>, stats: &Arc<Stats>) -> napi::Result<u32> {
    POLICIES.with(|cell| {
        let (slots, free) = &mut *cell.borrow_mut();
        let entry = Some((policy.clone(), stats.clone()));
        if let Some(id) = free.pop() {
            slots[id as usize] = entry;
            return Ok(id);
        }
        let id = u32::try_from(slots.len()).map_err(|_| napi::Error::from_reason("retryrs: too many retriers"))?;
        slots.push(entry);
        Ok(id)
    })
}

/// The policy registered under `id` (by a live NativePolicy), and its statistics.
pub fn policy_by_id(id: u32) -> napi::Result<Entry> {
    POLICIES
        .with(|cell| cell.borrow().0.get(id as usize).cloned().flatten())
        .ok_or_else(|| napi::Error::from_reason(format!("retryrs: no policy with id {id} (a bug)")))
}

impl Drop for NativePolicy {
    fn drop(&mut self) {
        // Finalizers run on the JS thread; at thread teardown the registry may be gone
        // already, and then there is nothing left to free.
        let _ = POLICIES.try_with(|cell| {
            if let Ok(mut guard) = cell.try_borrow_mut() {
                let (slots, free) = &mut *guard;
                if let Some(slot) = slots.get_mut(self.id as usize) {
                    *slot = None;
                    free.push(self.id);
                }
            }
        });
    }
}

impl NativePolicy {
    /// A policy already validated (a document's), registered for calls to name.
    pub(crate) fn from_policy(inner: Arc<Policy>) -> napi::Result<Self> {
        Self::with_stats(inner, Arc::new(Stats::new()))
    }

    /// A policy feeding existing statistics (a derivation of the same retrier).
    pub(crate) fn sharing_stats(inner: Arc<Policy>, stats: Arc<Stats>) -> napi::Result<Self> {
        Self::with_stats(inner, stats)
    }

    fn with_stats(inner: Arc<Policy>, stats: Arc<Stats>) -> napi::Result<Self> {
        let id = register(&inner, &stats)?;
        Ok(NativePolicy { inner, stats, id })
    }
}

#[napi]
impl NativePolicy {
    /// A gRPC policy's status codes (retryableStatusCodes, or a hedging policy's
    /// nonFatalStatusCodes) as names; null for a policy not from a service config.
    #[napi]
    pub fn grpc_status_codes(&self) -> napi::Result<Option<Vec<String>>> {
        guarded(|| Ok(self.inner.grpc_status_codes().map(|c| c.names().into_iter().map(String::from).collect())))
    }

    /// The verdict on gRPC status `code` (a number) or `name` by the policy's codes:
    /// 'success', 'transient' or 'permanent'; throws for a status that is none, or a policy
    /// without codes.
    #[napi]
    pub fn grpc_verdict(&self, code: Option<f64>, name: Option<String>) -> napi::Result<&'static str> {
        guarded(|| {
            let judged = match (code, name) {
                (Some(n), _) if n.fract() == 0.0 && (0.0..=1e15).contains(&n) => self.inner.grpc_verdict_code(n as u64),
                (Some(n), _) => Err(format!("{} is not a gRPC status code", crate::problem::js_number(n))),
                (None, Some(s)) => self.inner.grpc_verdict(&s),
                (None, None) => Err("a gRPC status is a number or a name".into()),
            };
            match judged {
                Ok(retryrs::Verdict::Success) => Ok("success"),
                Ok(retryrs::Verdict::Permanent) => Ok("permanent"),
                Ok(_) => Ok("transient"),
                Err(why) => Err(Problem::from_message(why).into_error()),
            }
        })
    }

    /// The numeric knob `name` (contract spelling) in the core's units (ms for
    /// durations), or null when it is off.
    #[napi]
    pub fn number(&self, name: String) -> napi::Result<Option<f64>> {
        guarded(|| Ok(self.inner.number(&name)))
    }

    /// The jitter seed, if set.
    #[napi(getter)]
    pub fn seed(&self) -> napi::Result<Option<BigInt>> {
        guarded(|| Ok(self.inner.seed().map(BigInt::from)))
    }

    /// Validates the options with the engine; a bad one throws (code `InvalidArg`) naming
    /// the option in its Node spelling.
    #[napi(factory)]
    pub fn create(
        options: PolicyOptions,
        budget: Option<&NativeBudget>,
        breaker: Option<&NativeBreaker>,
    ) -> napi::Result<Self> {
        guarded(|| {
            let breaker = breaker.map(|b| b.inner.clone());
            build(options, budget.map(|b| b.inner.clone()), breaker).map_err(Problem::into_error)
        })
    }

    /// The id calls use to name this policy (see `callStart`).
    #[napi(getter)]
    pub fn id(&self) -> napi::Result<u32> {
        guarded(|| Ok(self.id))
    }

    /// Whether a deadline is set (if not, and nobody listens, a call needs no clock).
    #[napi(getter)]
    pub fn has_deadline(&self) -> napi::Result<bool> {
        guarded(|| Ok(self.inner.deadline().is_some()))
    }

    /// The bound of a call's first attempt, in ms (the engine's `attempt_deadline` for a
    /// call and an attempt both starting at 0: the deadline or the sooner attempt
    /// timeout), or null when attempts are unbounded. Read once per retrier: the JS layer
    /// starts its engine call lazily, at the first failure, so attempt 1 asks here.
    #[napi(getter)]
    pub fn first_bound_ms(&self) -> napi::Result<Option<f64>> {
        guarded(|| Ok(self.inner.attempt_deadline(Duration::ZERO, Duration::ZERO).map(units::ms_from_duration)))
    }

    /// The same policy with another attempt timeout (ms, or null for none): what
    /// `Retrier.fromPolicy(policy, { attemptTimeoutMs })` runs. A bad value throws like
    /// `create` does.
    #[napi]
    pub fn with_attempt_timeout(&self, ms: Option<f64>) -> napi::Result<NativePolicy> {
        guarded(|| {
            let given: HashMap<String, f64> = ms.map(|v| ("attempt_timeout".to_string(), v)).into_iter().collect();
            let built = PolicyBuilder::from(&*self.inner)
                .attempt_timeout_ms(ms)
                .build()
                .map_err(|e| Problem::from_policy(e, &given).into_error())?;
            NativePolicy::from_policy(Arc::new(built))
        })
    }

    /// The same policy with another attempt limit: what an HTTP helper runs for a request
    /// whose `retry.limit` differs from its retrier's (the budget, deadline and the other
    /// knobs kept). For a hedging policy the limit is the hedged call's (at most 5, A6's
    /// cap), its fixed delay kept; an adaptive one's latency sketch belongs to its policy,
    /// so a limit there is refused. A bad value throws like `create` does.
    #[napi]
    pub fn with_max_attempts(&self, n: f64) -> napi::Result<NativePolicy> {
        guarded(|| {
            let given: HashMap<String, f64> = [("max_attempts".to_string(), n)].into_iter().collect();
            let mut builder = PolicyBuilder::from(&*self.inner);
            if let Some(h) = self.inner.hedging() {
                let hedging = match h.delay() {
                    retryrs::HedgeDelay::Fixed(_) => h.with_max_attempts(n as u64).map_err(|e| {
                        Problem::from_message(format!("retry.limit {} (this retrier hedges)", e.message)).into_error()
                    })?,
                    // Adaptive (HedgeDelay is #[non_exhaustive]: a delay that is not a fixed one).
                    _ => return Err(Problem::from_message(
                        "retry.limit cannot apply to a retrier whose hedging delay is adaptive (its latency sketch \
                             belongs to its policy)"
                            .into(),
                    )
                    .into_error()),
                };
                builder = builder.hedge(Some(hedging));
            } else {
                builder = builder
                    .set("max_attempts", Setting::Number(n))
                    .map_err(|e| Problem::from_policy(e, &given).into_error())?;
            }
            let built = builder.build().map_err(|e| Problem::from_policy(e, &given).into_error())?;
            // The same retrier's calls (an HTTP request's own retry.limit): its statistics.
            NativePolicy::with_stats(Arc::new(built), self.stats.clone())
        })
    }

    /// The same policy with some knobs overridden (the others, the budget and the breaker
    /// kept unless given): what `r.with({...})` and `Retrier.fromPolicy(p, overrides)`
    /// run. `budget`/`breaker` replace the policy's when `replace_budget`/`replace_breaker`
    /// is true (None then removes it); `drop_hedge` removes the hedging section. A bad
    /// value throws like `create` does.
    #[napi]
    pub fn with_options(
        &self,
        options: PolicyOptions,
        replace_budget: bool,
        budget: Option<&NativeBudget>,
        replace_breaker: bool,
        breaker: Option<&NativeBreaker>,
        drop_hedge: bool,
    ) -> napi::Result<NativePolicy> {
        guarded(|| {
            let mut b = PolicyBuilder::from(&*self.inner);
            if replace_budget {
                b = b.budget(budget.map(|x| x.inner.clone()));
            }
            if replace_breaker {
                b = b.breaker(breaker.map(|x| x.inner.clone()));
            }
            // `hedge: null` in the overrides: the same policy, unhedged.
            if drop_hedge {
                b = b.hedge(None);
            }
            apply(b, options).map_err(Problem::into_error)
        })
    }

    /// The counters of every call under this policy (`r.stats()`), after counting
    /// `unseen_ok` successes the engine did not hear of (the JS fast path's, and those of
    /// calls nobody needed it told of: no Success event to observe): `[calls, attempts, retries, successes, rejections, cancellations,
    /// ...exhaustions in ExhaustReason::ALL order]`.
    #[napi]
    pub fn stats(&self, unseen_ok: u32) -> napi::Result<Vec<f64>> {
        guarded(|| {
            self.stats.count_first_attempt_successes(u64::from(unseen_ok));
            let s = self.stats.snapshot();
            let mut out = vec![s.calls, s.attempts, s.retries, s.successes, s.rejections, s.cancellations];
            out.extend(s.exhaustions);
            Ok(out.into_iter().map(|n| n as f64).collect())
        })
    }

    /// Why max_attempts cannot fit the deadline (the core's wording, naming both knobs), or
    /// null when it can.
    #[napi(getter)]
    pub fn deadline_hint(&self) -> napi::Result<Option<String>> {
        guarded(|| Ok(self.inner.deadline_hint().map(|h| h.render(retryrs::Spelling::Node))))
    }

    /// Whether calls by this policy are hedged (`lib/hedge.js` runs them).
    #[napi(getter)]
    pub fn hedges(&self) -> napi::Result<bool> {
        guarded(|| Ok(self.inner.hedging().is_some()))
    }

    /// The hedging section as the constructor's `hedge` option spells it, for
    /// `util.inspect`: `delay_ms` for a fixed delay, else the adaptive one's parameters.
    #[napi(getter)]
    pub fn hedge(&self) -> napi::Result<Option<HedgeShown>> {
        guarded(|| {
            Ok(self.inner.hedging().map(|h| {
                let ms = |d: &Duration| units::ms_from_duration(*d);
                let mut shown = HedgeShown {
                    max_attempts: h.max_attempts(),
                    delay_ms: None,
                    quantile: None,
                    floor_ms: None,
                    ceiling_ms: None,
                };
                match h.delay() {
                    retryrs::HedgeDelay::Fixed(d) => shown.delay_ms = Some(ms(d)),
                    retryrs::HedgeDelay::Adaptive { floor, ceiling, sketch } => {
                        shown.quantile = Some(sketch.quantile());
                        shown.floor_ms = Some(ms(floor));
                        shown.ceiling_ms = Some(ms(ceiling));
                    }
                    // A delay kind added to the core: shown by its attempts alone until this
                    // binding learns its knobs.
                    _ => {}
                }
                shown
            }))
        })
    }

    /// The same hedging policy with one attempt and no hedge: what an HTTP helper runs
    /// for a request the core's rules do not let it send twice (a POST without an
    /// Idempotency-Key). Its deadline, budget and breaker are kept.
    #[napi]
    pub fn without_hedges(&self) -> napi::Result<NativePolicy> {
        guarded(|| {
            let single = retryrs::Hedging::fixed_ms(1, 0.0).map_err(|e| napi::Error::from_reason(e.to_string()))?;
            let built = PolicyBuilder::from(&*self.inner)
                .hedge(Some(single))
                .build()
                .map_err(|e| Problem::from(e).into_error())?;
            NativePolicy::with_stats(Arc::new(built), self.stats.clone())
        })
    }

    /// Whether the policy has a budget (a first-attempt success must then be recorded).
    #[napi(getter)]
    pub fn has_budget(&self) -> napi::Result<bool> {
        guarded(|| Ok(self.inner.budget().is_some()))
    }

    /// Whether the policy has a circuit breaker (every call then asks it first).
    #[napi(getter)]
    pub fn has_breaker(&self) -> napi::Result<bool> {
        guarded(|| Ok(self.inner.breaker().is_some()))
    }

    /// The policy's circuit breaker (a policy document's), for the JS layer to wrap.
    #[napi]
    pub fn breaker(&self) -> napi::Result<Option<NativeBreaker>> {
        guarded(|| Ok(self.inner.breaker().map(|b| NativeBreaker { inner: b.clone() })))
    }

    /// The retrier's name, as events and errors carry it.
    #[napi(getter)]
    pub fn name(&self) -> napi::Result<String> {
        guarded(|| Ok(self.inner.name().to_string()))
    }

    /// The jitter in its canonical spelling.
    #[napi(getter)]
    pub fn jitter(&self) -> napi::Result<String> {
        guarded(|| Ok(self.inner.jitter().spelling()))
    }
}

fn build(
    o: PolicyOptions,
    budget: Option<Arc<retryrs::RetryBudget>>,
    breaker: Option<Arc<retryrs::CircuitBreaker>>,
) -> Result<NativePolicy, Problem> {
    apply(Policy::builder().budget(budget).breaker(breaker), o)
}

/// The options set on a builder (a fresh one, or an existing policy's), validated by the
/// engine, and the result registered.
fn apply(b: PolicyBuilder, o: PolicyOptions) -> Result<NativePolicy, Problem> {
    let given = o.numbers.unwrap_or_default();
    let problem = |e| Problem::from_policy(e, &given);
    let mut b = b;
    for (name, value) in &given {
        b = b.set(name, Setting::Number(*value)).map_err(problem)?;
    }
    for name in o.off.iter().flatten() {
        b = b.set(name, Setting::Off)?;
    }
    if let Some(j) = o.jitter {
        b = b.jitter(j.parse::<Jitter>()?);
    }
    if let Some(name) = o.name {
        b = b.name(name);
    }
    if let Some(h) = &o.hedge {
        b = b.hedge(Some(hedging(h)?));
    }
    if let Some(seed) = o.seed {
        let (negative, value, lossless) = seed.get_u64();
        if negative || !lossless {
            return Err(Problem::new("seed", "a value outside 0..2^64-1".into(), "an integer in [0, 2^64-1]"));
        }
        b = b.seed(Some(value));
    }
    let inner = Arc::new(b.build().map_err(problem)?);
    NativePolicy::from_policy(inner).map_err(|e| Problem::new("options", e.reason.clone(), "registrable"))
}

/// A hedging section as `NativePolicy.hedge` shows it (no `delay_ms`: adaptive).
#[napi(object)]
pub struct HedgeShown {
    pub max_attempts: u32,
    pub delay_ms: Option<f64>,
    pub quantile: Option<f64>,
    pub floor_ms: Option<f64>,
    pub ceiling_ms: Option<f64>,
}
