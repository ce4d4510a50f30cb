//! Per-decision cost of SBOSS and PSRL on the accurate GC, GDL and Grid experiments.
//!
//! Each iteration runs one full trajectory (reset + T = 250 decisions and updates, through
//! `simulate::run_trajectory`) of a freshly cloned trained agent on the next of 100 test MDPs drawn
//! from the distribution, as the protocol does; the reported time is the trajectory time divided by
//! 250 (per decision). The prior is the test distribution (the accurate case).
//!
//! The distributions are read from the original BBRL files (SPEC 1.1), by default from
//! `../../shared/data` relative to this crate, or from `$BBRL_DATA_DIR`.
//!
//! Run: `cargo bench -p bbrl-benches --bench sboss`. Results: `benches/README-sboss.md`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bbrl::agents::{Agent, Psrl, Sboss, Setting};
use bbrl::fdm::Fdm;
use bbrl::mdp::Mdp;
use bbrl::rng::{purpose, stream};
use bbrl::simulate::run_trajectory;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };
const N_MDPS: usize = 100;
const SEED: u64 = 2016;

/// Reads a `DirMultiDistribution` file (SPEC 1.1): theta and R blocks are stored action-major
/// ("for u, for x", one line of nX values), the tables in memory are state-major `idx(x, u, y)`.
fn load(short: &str) -> Fdm {
    let dir = std::env::var_os("BBRL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let path = dir.join(format!("bbrl-{short}-distrib.dat"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines().map(str::trim).skip_while(|l| *l != "DirMultiDistribution").skip(1);
    let mut next = move || lines.next().expect("truncated distribution file");
    let count: usize = next().parse().unwrap();
    let nx: usize = next().parse().unwrap();
    let nu: usize = next().parse().unwrap();
    let initial: i64 = next().parse().unwrap();
    assert_eq!(count, 3 + 2 * nx * nu * nx + 2, "{short}: unexpected field count (V block?)");
    let theta = read_block(&mut next, nx, nu);
    assert_eq!(next(), "0", "{short}: only RT_CONSTANT rewards are supported");
    let rewards = read_block(&mut next, nx, nu);
    assert_eq!(next(), "0", "{short}: no V block expected");
    Fdm::new(nx, nu, theta, rewards, usize::try_from(initial).ok()).unwrap()
}

/// One (S, A, S) block: nU * nX lines "for u: for x", each holding the nX values of row (x, u).
fn read_block<'a>(next: &mut impl FnMut() -> &'a str, nx: usize, nu: usize) -> Vec<f64> {
    let mut table = vec![0.0; nx * nu * nx];
    for u in 0..nu {
        for x in 0..nx {
            let row: Vec<f64> = next().split_whitespace().map(|v| v.parse().unwrap()).collect();
            assert_eq!(row.len(), nx);
            table[(x * nu + u) * nx..(x * nu + u + 1) * nx].copy_from_slice(&row);
        }
    }
    table
}

fn per_decision(c: &mut Criterion) {
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
