//! Per-decision cost of the exploration baselines (every kind the agent registry marks as one,
//! `episodic_baseline`: UCRL2, UCBVI, UCFH, MBIE-EB, R-max, Optimistic PSRL, RLSVI, UCB Q-learning,
//! ε-greedy Q-learning, BBRL's e-Greedy) on the accurate GC, GDL and Grid experiments.
//!
//! Each agent is built from its registry entry's first example setting (the defaults otherwise),
//! so the bench times what `bbrl quick` runs. Each iteration runs one full trajectory (the task
//! start, then T = 250 decisions and updates) of a freshly cloned agent on the next of 100 test
//! MDPs drawn from the distribution, as the protocol does; the reported time is per decision.
//!
//! The reference settings that stand for another library's agent (TabulaRL's BEB, UCBVI and
//! GaussianPSRL, rlberry's PSRL; docs/baselines.md) are timed the same way, under `KIND-REFERENCE`.
//!
//! Run: `cargo bench -p bbrl-benches --bench baselines`. Results: `benches/README.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{build, ParamValue, Params, KINDS};
use bbrl_core::model::mdp::Mdp;
use bbrl_core::rng::{purpose, stream};
use bbrl_core::trajectory::run_trajectory;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };
const N_MDPS: usize = 100;
const SEED: u64 = 2016;
/// A reference setting: (kind, the `reference` value, its other parameters).
type Reference = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
/// Reference settings timed beside them.
const REFERENCES: [Reference; 4] = [
    ("beb", "tabularl", &[]),
    ("ucbvi", "tabularl", &[("rewards", "learned")]),
    ("psrl", "tabularl-gaussian", &[]),
    ("psrl", "rlberry", &[]),
];

/// The parameters of a reference setting (BEB's required beta at TabulaRL's 2 H^2, H = 20).
fn reference_params(kind: &str, reference: &str, others: &[(&str, &str)]) -> Params {
    let mut params: Params = others.iter().map(|(k, v)| (k.to_string(), ParamValue::Text(v.to_string()))).collect();
    params.insert("reference".into(), ParamValue::Text(reference.into()));
    if kind == "beb" {
        params.insert("beta".into(), ParamValue::Float(800.0));
    }
    params
}

fn per_decision(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let mut group = c.benchmark_group("baselines_per_decision");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for short in ["GC", "GDL", "Grid"] {
        let fdm = bbrl_core::problems::distribution(short).unwrap_or_else(|e| panic!("{e}")).fdm;
        let mdps: Vec<Mdp> =
            (0..N_MDPS).map(|i| fdm.sample_mdp(&mut stream(SEED, purpose::TEST_MDP, i as u64))).collect();
        // The registry's baselines (a kind registered later is timed without a change here), then
        // the reference settings.
        let settings = KINDS
            .iter()
            .filter(|k| k.episodic_baseline)
            .map(|spec| (spec.kind.to_string(), spec.kind, spec.examples[0].params()))
            .chain(REFERENCES.iter().map(|&(kind, reference, others)| {
                (format!("{kind}-{reference}"), kind, reference_params(kind, reference, others))
            }));
        for (id, kind, params) in settings {
            let mut agent: Box<dyn Agent> = build(kind, &params).unwrap();
            agent.learn_offline(&fdm, SETTING, &mut stream(SEED, purpose::AGENT_OFFLINE, 0)).unwrap();
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(id, short), |b| {
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
