//! One run of every scenario at a given scale and seed: what `make sim` renders and what
//! the shape test checks at a small scale.

use retryrs::Jitter;

use crate::capacity::{self, Fleet, Slowness};
use crate::chain::{self, ChainRun, ChainWorld, Rules};
use crate::contention::{self, Outcome, Strategy};
use crate::herd;
use crate::outage::{self, World};
use crate::peers::Peer;
use crate::tail::{self, OverloadWorld, TailWorld};

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
    /// The tail-at-scale fan-out.
    pub tail: TailWorld,
    /// The slow outage under hedging.
    pub overload: OverloadWorld,
    /// Hedging against servers with finite capacity.
    pub fleet: Fleet,
    /// The chain of services with C always failing.
    pub chain_failing: ChainWorld,
    /// The chain with C overloaded for a while.
    pub chain_overload: ChainWorld,
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
            tail: TailWorld { users: 10_000, gap_us: 10_000 },
            overload: OverloadWorld {
                clients: 100,
                rate_per_client: 100,
                slow_from_ms: 10_000,
                slow_until_ms: 30_000,
                end_ms: 40_000,
            },
            fleet: Fleet::issue(200_000),
            chain_failing: ChainWorld::failing(200),
            chain_overload: ChainWorld::overloaded(24_000, 2, 10_000..30_000),
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
            tail: TailWorld { users: 300, gap_us: 10_000 },
            overload: OverloadWorld {
                clients: 10,
                rate_per_client: 100,
                slow_from_ms: 4_000,
                slow_until_ms: 14_000,
                end_ms: 16_000,
            },
            fleet: Fleet::issue(1_000),
            chain_failing: ChainWorld::failing(20),
            // A sharper, shorter overload: C's queue must still fill past the user's 2 s.
            chain_overload: ChainWorld::overloaded(5_000, 3, 2_000..8_000),
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
    /// The p95 of the attempt latency, whole ms: the fixed delay "at the p95".
    pub tail_p95_ms: u64,
    /// The tail table, per peer.
    pub tail: Vec<tail::TailRun>,
    /// The overload table, per peer and budget.
    pub overload: Vec<tail::OverloadRun>,
    /// The tail variant whose servers get [`SHIFT`] times slower halfway: fixed at the
    /// first half's p95, and adaptive.
    pub shifted: Vec<tail::TailRun>,
    /// The utilisation tables, per slowness model.
    pub hedging: Vec<(Slowness, Vec<capacity::Row>)>,
    /// The cancel-lag table.
    pub lags: Vec<(Option<u64>, capacity::Row)>,
    /// The chain with C always failing, per rules.
    pub chain_failing: Vec<ChainRun>,
    /// The chain with C overloaded, per rules; then pushback with the upward rule uncapped.
    pub chain_overload: Vec<ChainRun>,
}

/// How much slower the servers of the shifted tail variant get halfway.
pub const SHIFT: f64 = 3.0;

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
    let (tail_p95_ms, tail, overload) = tail_scenarios(config);
    let shifted = [tail::Peer::Fixed(tail_p95_ms), tail::Peer::Adaptive]
        .iter()
        .map(|p| tail::tail_shifted(&config.tail, p, Some(SHIFT), seed))
        .collect();
    let hedging =
        Slowness::ALL.iter().map(|&s| (s, capacity::utilisation_table(&config.fleet, s, tail_p95_ms, seed))).collect();
    let lags = capacity::lag_table(&config.fleet, seed);
    let chain_failing = Rules::ALL.iter().map(|&rules| chain::run(&config.chain_failing, rules, seed)).collect();
    let uncapped = ChainWorld { uncapped: true, ..config.chain_overload };
    let mut jobs: Vec<Box<dyn FnOnce() -> ChainRun + Send>> = Rules::ALL
        .iter()
        .map(|&rules| {
            Box::new(move || chain::run(&config.chain_overload, rules, seed)) as Box<dyn FnOnce() -> ChainRun + Send>
        })
        .collect();
    jobs.push(Box::new(move || chain::run(&uncapped, Rules::Pushback, seed)));
    let chain_overload = crate::parallel::run_all(jobs);
    Results {
        config: config.clone(),
        contention,
        sweep,
        outage,
        outage_half,
        flapping,
        herd,
        tail_p95_ms,
        tail,
        overload,
        shifted,
        hedging,
        lags,
        chain_failing,
        chain_overload,
    }
}

/// The budgets of the overload table: gRPC A6's example (10 tokens, 0.1 per success), and
/// one sized to the paper's "about 5% more requests" (10, 0.05).
pub const OVERLOAD_BUDGETS: [(f64, f64); 2] = [(10.0, 0.1), (10.0, 0.05)];

/// Scenarios 4 and 5: the peers of the tail table (fixed delays at the p90, p95 and p99
/// of the latency, told to them; adaptive, told nothing), and the overload rows.
pub fn tail_scenarios(config: &Config) -> (u64, Vec<tail::TailRun>, Vec<tail::OverloadRun>) {
    use tail::Peer as T;
    let seed = config.seed;
    let q = |p: f64| tail::latency_quantile_ms(p, 200_000, seed);
    let p95 = q(0.95);
    let peers =
        [T::NoHedging, T::Fixed(q(0.90)), T::Fixed(p95), T::Fixed(q(0.99)), T::Adaptive, T::RetryOnTimeout(p95)];
    let runs = peers.iter().map(|p| tail::tail(&config.tail, p, seed)).collect();
    let [a6, five] = OVERLOAD_BUDGETS;
    let rows: [(T, Option<(f64, f64)>); 6] = [
        (T::NoHedging, None),
        (T::Fixed(p95), None),
        (T::Fixed(p95), Some(a6)),
        (T::Fixed(p95), Some(five)),
        (T::Adaptive, None),
        (T::Adaptive, Some(five)),
    ];
    let overload = rows.iter().map(|(p, b)| tail::overload(&config.overload, p, *b, seed)).collect();
    (p95, runs, overload)
}
