//! What a closed breaker (and a half-open one judging its probes together) has counted:
//! one job, the arithmetic of "must it open?", kept apart from the state machine.

use std::collections::VecDeque;
use std::time::Duration;

use super::{BreakerConfig, BreakerModel};

/// One outcome as the breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// It counts as a failure (by the engine's verdict and `count_permanent`).
    pub failed: bool,
    /// It took at least `slow_call_duration`.
    pub slow: bool,
}

/// The thresholds a ratio is judged against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Thresholds {
    /// Share of failures that opens it.
    pub failure_ratio: f64,
    /// Share of slow calls that opens it (`None`: slow calls are not counted).
    pub slow_ratio: Option<f64>,
}

impl Thresholds {
    /// Whether `failures` or `slow` of `calls` reach a threshold (ratios are inclusive, as
    /// Polly's and resilience4j's).
    pub fn reached(&self, calls: u64, failures: u64, slow: u64) -> bool {
        if calls == 0 {
            return false;
        }
        let calls = calls as f64;
        failures as f64 / calls >= self.failure_ratio || self.slow_ratio.is_some_and(|r| slow as f64 / calls >= r)
    }
}

/// Polly's `RollingHealthMetrics.NumberOfWindows`.
const WINDOWS: u32 = 10;

#[derive(Debug, Clone, Copy)]
pub(crate) struct HealthWindow {
    started: Duration,
    calls: u64,
    failures: u64,
    slow: u64,
}

/// The counts behind each model.
#[derive(Debug)]
pub(crate) enum Tally {
    /// Failures in a row.
    Consecutive(u32),
    /// Polly's windows, oldest first.
    Sampling(VecDeque<HealthWindow>),
    /// resilience4j's count-based ring: the last `window_size` outcomes, and their sums.
    Count { ring: VecDeque<Outcome>, failures: u64, slow: u64 },
}

impl Tally {
    /// Nothing counted yet, for `model`.
    pub fn new(model: &BreakerModel) -> Self {
        match model {
            BreakerModel::Consecutive { .. } => Tally::Consecutive(0),
            BreakerModel::Sampling { .. } => Tally::Sampling(VecDeque::new()),
            BreakerModel::Count { .. } => Tally::Count { ring: VecDeque::new(), failures: 0, slow: 0 },
        }
    }

    /// Forgets every outcome (keeps the memory).
    pub fn clear(&mut self) {
        match self {
            Tally::Consecutive(n) => *n = 0,
            Tally::Sampling(windows) => windows.clear(),
            Tally::Count { ring, failures, slow } => {
                ring.clear();
                *failures = 0;
                *slow = 0;
            }
        }
    }

    /// Counts `outcome` at `now`; whether the breaker must open.
    #[inline]
    pub fn count(&mut self, config: &BreakerConfig, outcome: Outcome, now: Duration) -> bool {
        // Read only by the ratio models (a consecutive count stays a few instructions).
        let slow_ratio = || config.slow_call_duration.map(|_| config.slow_call_ratio);
        match (self, config.model) {
            (Tally::Consecutive(n), BreakerModel::Consecutive { failures }) => {
                *n = if outcome.failed { n.saturating_add(1) } else { 0 };
                *n >= failures
            }
            (
                Tally::Sampling(windows),
                BreakerModel::Sampling { failure_ratio, minimum_throughput, sampling_duration },
            ) => {
                let slice = sampling_duration / WINDOWS;
                let fresh = match windows.back() {
                    Some(w) => now.saturating_sub(w.started) >= slice,
                    None => true,
                };
                if fresh {
                    windows.push_back(HealthWindow { started: now, calls: 0, failures: 0, slow: 0 });
                }
                while windows.front().is_some_and(|w| now.saturating_sub(w.started) >= sampling_duration) {
                    windows.pop_front();
                }
                // The window just pushed (or the last one) is never `sampling_duration` old.
                if let Some(w) = windows.back_mut() {
                    w.calls += 1;
                    w.failures += u64::from(outcome.failed);
                    w.slow += u64::from(outcome.slow);
                }
                // A fast success never opens it: skip the sum.
                if !outcome.failed && !outcome.slow {
                    return false;
                }
                let (calls, failures, slow) =
                    windows.iter().fold((0, 0, 0), |(c, f, s), w| (c + w.calls, f + w.failures, s + w.slow));
                calls >= u64::from(minimum_throughput)
                    && Thresholds { failure_ratio, slow_ratio: slow_ratio() }.reached(calls, failures, slow)
            }
            (
                Tally::Count { ring, failures, slow },
                BreakerModel::Count { failure_ratio, minimum_calls, window_size },
            ) => {
                if ring.len() >= window_size as usize {
                    if let Some(old) = ring.pop_front() {
                        *failures -= u64::from(old.failed);
                        *slow -= u64::from(old.slow);
                    }
                }
                ring.push_back(outcome);
                *failures += u64::from(outcome.failed);
                *slow += u64::from(outcome.slow);
                // resilience4j: the minimum is capped at the window (a window of 10 with a
                // minimum of 100 judges every 10 calls).
                let calls = ring.len() as u64;
                calls >= u64::from(minimum_calls.min(window_size))
                    && Thresholds { failure_ratio, slow_ratio: slow_ratio() }.reached(calls, *failures, *slow)
            }
            // Tally::new made it from the same model.
            _ => false,
        }
    }
}

/// Half-open probes judged together (resilience4j's `permittedNumberOfCallsInHalfOpenState`):
/// outcomes of the probes so far.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ProbeTally {
    pub done: u32,
    pub failures: u32,
    pub slow: u32,
}

impl ProbeTally {
    pub fn add(&mut self, outcome: Outcome) {
        self.done += 1;
        self.failures += u32::from(outcome.failed);
        self.slow += u32::from(outcome.slow);
    }
}
