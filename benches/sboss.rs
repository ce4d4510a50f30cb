//! Per-decision cost of SBOSS and PSRL on the accurate GC, GDL and Grid experiments.
//!
//! Each iteration runs one full trajectory (reset + T = 250 decisions and updates, through
//! `simulate::run_trajectory`) of a freshly cloned trained agent on the next of 100 test MDPs drawn
//! from the distribution, as the protocol does; the reported time is the trajectory time divided by
//! 250 (per decision). The prior is the test distribution (the accurate case).
//!
//! The distributions are the core's built-ins (`bbrl_core::model::problems`), which the test suite checks
//! against the original BBRL files.
//!
//! Run: `cargo bench -p bbrl-benches --bench sboss`. Results: `benches/README-sboss.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{Psrl, Sboss};
use bbrl_core::model::fdm::Fdm;
use bbrl_core::model::mdp::Mdp;
use bbrl_core::rng::{purpose, stream};
use bbrl_core::trajectory::run_trajectory;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };
const N_MDPS: usize = 100;
const SEED: u64 = 2016;

/// A built-in distribution by its original short name (`bbrl_core::problems`, the single source).
fn load(short: &str) -> Fdm {
    bbrl_core::problems::distribution(short).unwrap_or_else(|e| panic!("{e}")).fdm
}

fn per_decision(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let mut group = c.benchmark_group("per_decision");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    for short in ["GC", "GDL", "Grid"] {
        let fdm = load(short);
        let mdps: Vec<Mdp> =
            (0..N_MDPS).map(|i| fdm.sample_mdp(&mut stream(SEED, purpose::TEST_MDP, i as u64))).collect();
        let agents: Vec<(&str, Box<dyn Agent>)> = vec![
            ("sboss_compat_eps1e-3_delta7", Box::new(Sboss::new(1e-3, 7.0, true).unwrap())),
            ("sboss_eps1e-3_delta7", Box::new(Sboss::new(1e-3, 7.0, false).unwrap())),
            ("psrl_k1", Box::new(Psrl::new(1).unwrap())),
        ];
        for (label, mut agent) in agents {
            agent.learn_offline(&fdm, SETTING, &mut stream(SEED, purpose::AGENT_OFFLINE, 0)).unwrap();
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(label, short), |b| {
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
