//! Per-decision cost of the exploration baselines (every kind the agent registry marks as one,
//! `episodic_baseline`: UCRL2, UCBVI, UCFH, MBIE-EB, R-max, Optimistic PSRL, RLSVI, UCB Q-learning,
//! ε-greedy Q-learning, BBRL's e-Greedy) on the accurate GC, GDL and Grid experiments.
//!
//! Each agent is built from its registry entry's first example setting (the defaults otherwise),
//! so the bench times what `bbrl quick` runs. Each iteration runs one full trajectory (the task
//! start, then T = 250 decisions and updates) of a freshly cloned agent on the next of 100 test
//! MDPs drawn from the distribution, as the protocol does; the reported time is per decision.
//!
//! Run: `cargo bench -p bbrl-benches --bench baselines`. Results: `benches/README.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{build, KINDS};
use bbrl_core::model::mdp::Mdp;
use bbrl_core::rng::{purpose, stream};
use bbrl_core::trajectory::run_trajectory;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };
const N_MDPS: usize = 100;
const SEED: u64 = 2016;

fn per_decision(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let mut group = c.benchmark_group("baselines_per_decision");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for short in ["GC", "GDL", "Grid"] {
        let fdm = bbrl_core::problems::distribution(short).unwrap_or_else(|e| panic!("{e}")).fdm;
        let mdps: Vec<Mdp> =
            (0..N_MDPS).map(|i| fdm.sample_mdp(&mut stream(SEED, purpose::TEST_MDP, i as u64))).collect();
        // The registry's baselines: a kind registered later is timed without a change here.
        for spec in KINDS.iter().filter(|k| k.episodic_baseline) {
            let kind = spec.kind;
            let mut agent: Box<dyn Agent> = build(kind, &spec.examples[0].params()).unwrap();
            agent.learn_offline(&fdm, SETTING, &mut stream(SEED, purpose::AGENT_OFFLINE, 0)).unwrap();
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(kind, short), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mdp = &mdps[i % N_MDPS];
                        let mut local = agent.clone_box();
                        let mut agent_rng = stream(SEED, purpose::AGENT_ONLINE, i as u64);
                        let mut env_rng = stream(SEED, purpose::ENVIRONMENT, i as u64);
                        let start = Instant::now();
                        let outcome =
                            run_trajectory(local.as_mut(), mdp, i, SETTING, &mut agent_rng, &mut env_rng).unwrap();
                        total += start.elapsed();
                        black_box(outcome);
                        i += 1;
                    }
                    total / SETTING.horizon as u32
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, per_decision);
criterion_main!(benches);
