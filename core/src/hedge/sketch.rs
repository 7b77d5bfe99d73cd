//! The recent latencies of a policy's attempts ([`LatencySketch`]): a bounded ring shared
//! by every call of the policy, and the quantile over it that an adaptive hedging delay
//! follows.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use crate::units;

use super::{bad, HedgeError, MIN_SAMPLES};

/// The recent latencies of a policy's attempts, in bounded memory: a ring of the last
/// `window` samples (microseconds), and the quantile over them by nearest rank. Thread
/// safe (one short lock per sample and per read); shared by every call of a policy.
pub struct LatencySketch {
    quantile: f64,
    inner: Mutex<Ring>,
}

struct Ring {
    samples: Vec<u32>,
    next: usize,
    window: usize,
    scratch: Vec<u32>,
    /// The quantile over the samples, while no sample has arrived since.
    cached: Option<u32>,
}

impl fmt::Debug for LatencySketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencySketch").field("quantile", &self.quantile).field("len", &self.len()).finish()
    }
}

impl LatencySketch {
    /// A sketch of the last `window` latencies (>= 1) answering `quantile` (in (0, 1)).
    pub fn new(quantile: f64, window: usize) -> Result<Self, HedgeError> {
        if !(quantile > 0.0 && quantile < 1.0) {
            return Err(bad("quantile", format!("must be > 0 and < 1, got {}", units::compact(quantile))));
        }
        if !(1..=1_000_000).contains(&window) {
            return Err(bad("window", format!("must be >= 1 and <= 1000000, got {window}")));
        }
        let ring = Ring { samples: Vec::with_capacity(window), next: 0, window, scratch: Vec::new(), cached: None };
        Ok(LatencySketch { quantile, inner: Mutex::new(ring) })
    }

    /// The quantile this sketch answers.
    pub fn quantile(&self) -> f64 {
        self.quantile
    }

    /// How many latencies it holds now (at most its window).
    pub fn len(&self) -> usize {
        self.lock().samples.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One attempt's latency (saturating at about 71 minutes).
    pub fn record(&self, latency: Duration) {
        let us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        let mut ring = self.lock();
        if ring.samples.len() < ring.window {
            ring.samples.push(us);
        } else {
            let at = ring.next;
            ring.samples[at] = us;
        }
        ring.next = (ring.next + 1) % ring.window;
        ring.cached = None;
    }

    /// The quantile of the latencies held, by nearest rank (the smallest sample with at
    /// least `quantile` of the samples at or below it); `None` while fewer than
    /// [`MIN_SAMPLES`] are held.
    pub fn estimate(&self) -> Option<Duration> {
        let mut ring = self.lock();
        if ring.samples.len() < MIN_SAMPLES.min(ring.window) {
            return None;
        }
        if ring.cached.is_none() {
            let Ring { samples, scratch, .. } = &mut *ring;
            scratch.clear();
            scratch.extend_from_slice(samples);
            let rank = ((self.quantile * scratch.len() as f64).ceil() as usize).clamp(1, scratch.len()) - 1;
            let (_, at, _) = scratch.select_nth_unstable(rank);
            ring.cached = Some(*at);
        }
        ring.cached.map(|us| Duration::from_micros(u64::from(us)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // A panic while holding the lock leaves whole samples behind: keep using them.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}
