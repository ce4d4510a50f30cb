//! Criterion benches of the core kernels: MDP sampling, the two solvers, one simulated step, and
//! whole trajectories of the four basic agents (throughput in decisions).
//!
//! Run: `cargo bench -p bbrl-benches --bench kernels` (add `-- --quick` for a fast pass).
//!
//! The solver benches run every vector path this CPU has that serves the problem
//! (`solve_mean_model/<routine>/<path>/<problem>`);
//! the whole-trajectory benches run the process's path, which `BBRL_SIMD=scalar|avx2|avx512` forces.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};

use bbrl_core::agent::Setting;
use bbrl_core::agents::{build, ParamValue, Params};
use bbrl_core::evaluators::protocol::Experiment;
use bbrl_core::model::counts::CountModel;
use bbrl_core::problems;
use bbrl_core::rng::stream;
use bbrl_core::solve::{QIterationWorkspace, SimdPath, ValueIterationWorkspace, BBRL_Q_ACCURACY, GUEZ_VI_EPSILON};

const PROBLEMS: [&str; 3] = ["GC", "GDL", "Grid"];
const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };

fn sampling(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let mut group = c.benchmark_group("sample_mdp");
    for name in PROBLEMS {
        let fdm = problems::distribution(name).unwrap().fdm;
        let mut rng = stream(0, 0, 0);
        group.bench_function(name, |b| b.iter(|| fdm.sample_mdp(&mut rng)));
    }
    group.finish();
}

fn solvers(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let mut group = c.benchmark_group("solve_mean_model");
    for name in PROBLEMS {
        let fdm = problems::distribution(name).unwrap().fdm;
        let model = CountModel::from_prior(&fdm);
        let (ns, na) = (fdm.n_states(), fdm.n_actions());
        // Every path this CPU runs that serves the model (AVX-512: up to 32 states).
        for path in SimdPath::ALL.into_iter().filter(|p| p.is_available() && p.serves(ns, na)) {
            let mut ws = QIterationWorkspace::with_path(ns, na, path);
            assert_eq!(ws.path(), path);
            let mut q = vec![0.0; ns * na];
            group.bench_function(BenchmarkId::new(format!("bbrl_q_iteration/{path}"), name), |b| {
                b.iter(|| ws.solve(model.view(), 0.95, 250, BBRL_Q_ACCURACY, &mut q))
            });
            let (mut v, mut pi) = (vec![0.0; ns], vec![0; ns]);
            let mut vi = ValueIterationWorkspace::with_path(ns, na, path);
            group.bench_function(BenchmarkId::new(format!("guez_value_iteration/{path}"), name), |b| {
                b.iter(|| vi.solve(model.view(), None, 0.95, GUEZ_VI_EPSILON, &mut v, &mut pi))
            });
        }
    }
    group.finish();
}

fn step(c: &mut Criterion) {
    let mdp = problems::distribution("Grid").unwrap().fdm.sample_mdp(&mut stream(0, 0, 0));
    let mut rng = stream(1, 0, 0);
    let mut state = 0;
    c.bench_function("mdp_step/Grid", |b| {
        b.iter(|| {
            state = mdp.step(state, 1, &mut rng).0;
            state
        })
    });
}

fn trajectories(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let agents: [(&str, Params); 4] = [
        ("random", Params::new()),
        ("egreedy", Params::from([("epsilon".into(), ParamValue::Float(0.1))])),
        ("softmax", Params::from([("tau".into(), ParamValue::Float(1.0))])),
        ("beb", Params::from([("beta".into(), ParamValue::Float(1.0))])),
    ];
    let mut group = c.benchmark_group("decision");
    group.throughput(Throughput::Elements(SETTING.horizon as u64));
    group.sample_size(20);
    for name in PROBLEMS {
        let fdm = problems::distribution(name).unwrap().fdm;
        let exp = Experiment::new(fdm.clone(), 1, SETTING, 0).unwrap();
        let mdp = &exp.mdps()[0];
        for (kind, params) in &agents {
            let mut agent = build(kind, params).unwrap();
            exp.learn_offline(agent.as_mut(), &fdm).unwrap();
            group.bench_function(BenchmarkId::new(*kind, name), |b| {
                b.iter_batched(
                    || (agent.clone_box(), stream(0, 3, 0), stream(0, 2, 0)),
                    |(mut a, mut ar, mut er)| {
                        bbrl_core::trajectory::run_trajectory(a.as_mut(), mdp, 0, SETTING, &mut ar, &mut er).unwrap()
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, sampling, solvers, step, trajectories);
criterion_main!(benches);
