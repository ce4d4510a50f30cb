//! Runs a fixed number of mean-model solves, for instruction counting under
//! `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine):
//! `cargo build --release -p bbrl-benches --example solve_count && valgrind --tool=callgrind \
//!  target/release/examples/solve_count GC q 1000`.

use bbrl_core::model::counts::CountModel;
use bbrl_core::problems;
use bbrl_core::solve::{QIterationWorkspace, ValueIterationWorkspace, BBRL_Q_ACCURACY, GUEZ_VI_EPSILON};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fdm = problems::distribution(&args[1]).expect("GC, GDL, Grid, UGC, UGDL or UGrid").fdm;
    let solver = args[2].as_str();
    let n: usize = args[3].parse().expect("a count");
    let model = CountModel::from_prior(&fdm);
    let (ns, na) = (fdm.n_states(), fdm.n_actions());
    let mut total_sweeps = 0;
    let mut checksum = 0.0;
    if solver == "q" {
        let mut ws = QIterationWorkspace::new(ns, na);
        let mut q = vec![0.0; ns * na];
        for _ in 0..n {
            total_sweeps += ws.solve(model.view(), 0.95, 250, BBRL_Q_ACCURACY, &mut q);
            checksum += q[0];
        }
    } else {
        let mut ws = ValueIterationWorkspace::new(ns, na);
        let (mut v, mut pi) = (vec![0.0; ns], vec![0; ns]);
        for _ in 0..n {
            total_sweeps += ws.solve(model.view(), None, 0.95, GUEZ_VI_EPSILON, &mut v, &mut pi);
            checksum += v[0];
        }
    }
    println!("{} solves, {} sweeps each, checksum {checksum}", n, total_sweeps / n);
}
