//! Criterion benches of the formula code: OPPS-DS pulls per second on GC, formula evaluation and
//! formula-set generation. Kept short (10 samples each); run with
//! `cargo bench -p bbrl-benches --bench formulas`.

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use bbrl_benches::gc;
use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{OppsDs, OPPS_DEFAULT_C};
use bbrl_core::formula::{formula_set, set::shipped_set, Formula};
use bbrl_core::rng::stream;

/// OPPS-DS offline learning on GC (gamma 0.95, T 250): pulls per second.
/// * `one formula, 1 variable`: `X0`, every pull sequential after the first (UCB phase);
/// * `one formula, 3 variables`: `max(QMean, max(QSelf, QUniform))`, all three Q-variables solved per step;
/// * `F2, initial round`: 12 pulls, one per formula, in parallel over the cores.
fn opps_pulls(c: &mut Criterion) {
    bbrl_benches::print_machine();
    let prior = gc();
    let setting = Setting { gamma: 0.95, horizon: 250 };
    let mut group = c.benchmark_group("opps_pulls_gc");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    let cases: Vec<(&str, Vec<Formula>, u64)> = vec![
        ("one formula, 1 variable", vec![Formula::parse_rpn("X0").unwrap()], 10),
        ("one formula, 3 variables", vec![Formula::parse_rpn("X0 X1 X2 MAX2 MAX2").unwrap()], 10),
        ("F2, initial round", shipped_set("F2").unwrap(), 12),
    ];
    for (name, formulas, n_draws) in cases {
        group.throughput(Throughput::Elements(n_draws));
        group.bench_function(BenchmarkId::new(name, n_draws), |b| {
            let mut seed = 0;
            b.iter(|| {
                let mut agent = OppsDs::new(formulas.clone(), n_draws, OPPS_DEFAULT_C, false).unwrap();
                seed += 1;
                agent.learn_offline(&prior, setting, &mut stream(seed, 4, 0)).unwrap();
                black_box(agent.chosen_index())
            })
        });
    }
    group.finish();
}

fn formula_eval(c: &mut Criterion) {
    let f = Formula::parse_rpn("X0 X1 ABS X2 INV MAX2 MUL2 SQRT").unwrap();
    let mut group = c.benchmark_group("formula_eval");
    group.sample_size(10).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Elements(1000));
    group.bench_function("7 tokens x 1000 points", |b| {
        let points: Vec<[f64; 3]> = (0..1000).map(|i| [i as f64 + 0.5, -(i as f64), 3.0 + i as f64]).collect();
        b.iter(|| points.iter().map(|&x| f.eval(black_box(x)).unwrap_or(0.0)).sum::<f64>())
    });
    group.finish();
}

fn generation(c: &mut Criterion) {
    let mut group = c.benchmark_group("formula_set_generation");
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for n in [4, 5] {
        group.bench_function(BenchmarkId::new("F", n), |b| b.iter(|| formula_set(n, 0, 1000).unwrap().len()));
    }
    group.finish();
}

criterion_group!(benches, opps_pulls, formula_eval, generation);
criterion_main!(benches);
