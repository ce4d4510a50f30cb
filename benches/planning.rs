//! Decisions per second of the planning agents (BAMCP, BFS3) on the accurate GC, GDL and Grid
//! problems, in the original's setting (gamma 0.95, T = 250, prior = test distribution).
//!
//! One iteration is a whole trajectory of T decisions (reset included, as the original's online
//! time), on test MDP `i mod 16` of a fixed draw, with the agent stream of that index; criterion's
//! throughput is in decisions. Per-decision cost = time per iteration / 250. The cost of a
//! decision varies a lot from one MDP to another (the posterior drives the search), hence the
//! round-robin over 16 MDPs; the original's figures average 500 MDPs.
//!
//! The time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: the
//! cost per core, unaffected by other processes competing for the cores (on an idle machine the
//! two agree).
//!
//! `cargo bench -p bbrl-benches --bench planning` (filter e.g. with `-- GC`).

use std::hint::black_box;
use std::time::Duration;

use bbrl_benches::{gc, gdl, grid};
use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{Bamcp, Bfs3};
use bbrl_core::model::fdm::Fdm;
use bbrl_core::model::mdp::Mdp;
use bbrl_core::rng::{purpose, stream};
use bbrl_core::trajectory::run_trajectory;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };
const SEED: u64 = 2016;
const N_MDPS: usize = 16;

/// CPU time consumed by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant supported by Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The configurations of the original's timing table, untrained.
fn agents() -> Vec<(&'static str, Box<dyn Agent>)> {
    vec![
        ("BAMCP K=500 D=15", Box::new(Bamcp::new(500, 15).unwrap())),
        ("BAMCP K=2500 D=15", Box::new(Bamcp::new(2500, 15).unwrap())),
        ("BFS3 K=500 C=15 D=15", Box::new(Bfs3::new(500, 15, 15).unwrap())),
    ]
}

fn planning(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let problems: [(&str, Fdm); 3] = [("GC", gc()), ("GDL", gdl()), ("Grid", grid())];
    let mut group = c.benchmark_group("planning");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(SETTING.horizon as u64));
    for (name, fdm) in &problems {
        let mdps: Vec<Mdp> =
            (0..N_MDPS).map(|i| fdm.sample_mdp(&mut stream(SEED, purpose::TEST_MDP, i as u64))).collect();
        for (label, mut trained) in agents() {
            trained.learn_offline(fdm, SETTING, &mut stream(SEED, purpose::AGENT_OFFLINE, 0)).unwrap();
            group.bench_function(BenchmarkId::new(label, name), |b| {
                let mut next = 0usize;
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let i = next % N_MDPS;
                        next += 1;
                        let mut agent = trained.clone();
                        let mut agent_rng = stream(SEED, purpose::AGENT_ONLINE, i as u64);
                        let mut env_rng = stream(SEED, purpose::ENVIRONMENT, i as u64);
                        let start = thread_cpu_time();
                        let outcome =
                            run_trajectory(agent.as_mut(), &mdps[i], i, SETTING, &mut agent_rng, &mut env_rng);
                        total += thread_cpu_time() - start;
                        black_box(outcome.unwrap());
                    }
                    total
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
