//! One run of every scenario at a given scale and seed: what `make sim` renders and what
//! the shape test checks at a small scale.

use retryrs::Jitter;

use crate::contention::{self, Outcome, Strategy};
use crate::herd;
use crate::outage::{self, World};
use crate::peers::Peer;

/// Scale and seed of a run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Seeds the world and every call's jitter.
    pub seed: u64,
    /// Clients in the contention table (the article's N = 100).
    pub contention_clients: usize,
    /// Runs averaged for the contention table (the article averaged 100).
    pub contention_trials: u64,
    /// Client counts of the contention plot.
    pub sweep: Vec<usize>,
    /// Runs averaged per point of the plot.
    pub sweep_trials: u64,
    /// The outage world, recovering to full capacity.
    pub outage: World,
    /// The same world, recovering to half capacity.
    pub outage_half: World,
    /// The flapping dependency (up 5 s, down 5 s).
    pub flapping: World,
    /// Clients in the herd.
    pub herd_clients: u64,
}

impl Config {
    /// The issue's scale: what `make sim` runs.
    pub fn full(seed: u64) -> Config {
        Config {
            seed,
            contention_clients: 100,
            contention_trials: 100,
            sweep: (1..=20).map(|i| i * 10).collect(),
            sweep_trials: 20,
            outage: World::issue(12_000),
            outage_half: World::issue(6_000),
            flapping: World::flapping(),
            herd_clients: 1_000,
        }
    }

    /// A tenth of it, for the test: seconds in a debug build.
    pub fn small(seed: u64) -> Config {
        let shrink = |w: World| World {
            clients: 100,
            capacity: w.capacity / 10,
            capacity_after: w.capacity_after / 10,
            outage_start_ms: 1_000,
            outage_ms: 5_000,
            end_ms: 12_000,
            ..w
        };
        Config {
            seed,
            contention_clients: 50,
            contention_trials: 10,
            sweep: vec![10, 30, 50],
            sweep_trials: 3,
            outage: shrink(World::issue(12_000)),
            outage_half: shrink(World::issue(6_000)),
            flapping: World { outage_ms: 8_000, flap_ms: 2_000, ..shrink(World::flapping()) },
            herd_clients: 100,
        }
    }
}

/// Everything a run measured.
#[derive(Debug, Clone)]
pub struct Results {
    /// The configuration it ran.
    pub config: Config,
    /// Contention at N = `contention_clients`, per strategy.
    pub contention: Vec<(Strategy, Outcome)>,
    /// Contention per N of the sweep: (N, one outcome per strategy in [`Strategy::ALL`] order).
    pub sweep: Vec<(usize, Vec<Outcome>)>,
    /// The outage runs, per policy.
    pub outage: Vec<outage::Run>,
    /// The half-capacity outage runs, per policy.
    pub outage_half: Vec<outage::Run>,
    /// The flapping runs, per retryrs policy ([`Peer::RETRYRS`]).
    pub flapping: Vec<outage::Run>,
    /// The herd: retries per 10 ms window, per jitter kind.
    pub herd: Vec<(Jitter, Vec<u64>)>,
}

/// Runs every scenario.
pub fn simulate(config: &Config) -> Results {
    let seed = config.seed;
    let contention = Strategy::ALL
        .iter()
        .map(|&s| (s, contention::run_mean(config.contention_clients, s, seed, config.contention_trials)))
        .collect();
    let sweep = config
        .sweep
        .iter()
        .map(|&n| (n, Strategy::ALL.iter().map(|&s| contention::run_mean(n, s, seed, config.sweep_trials)).collect()))
        .collect();
    let outage = Peer::ALL.iter().map(|&p| outage::run(&config.outage, p, seed)).collect();
    let outage_half = Peer::ALL.iter().map(|&p| outage::run(&config.outage_half, p, seed)).collect();
    let flapping = Peer::RETRYRS.iter().map(|&p| outage::run(&config.flapping, p, seed)).collect();
    let herd = herd::KINDS.iter().map(|&j| (j, herd::windows(config.herd_clients, j))).collect();
    Results { config: config.clone(), contention, sweep, outage, outage_half, flapping, herd }
}
