//! The cost of one mean-model solve on every vector path this CPU runs, in thread CPU time (the
//! least over several batches, which a shared machine disturbs less than wall time):
//! `cargo run --release -p bbrl-benches --example solve_paths [batches] [solves per batch]`.
//! A quick check between criterion runs; the criterion bench `solve_mean_model` is the reference.

use std::time::Duration;

use bbrl_core::model::counts::CountModel;
use bbrl_core::problems;
use bbrl_core::solve::{QIterationWorkspace, SimdPath, ValueIterationWorkspace, BBRL_Q_ACCURACY, GUEZ_VI_EPSILON};

/// CPU time consumed by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant supported by Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The least CPU time per call of `solve` over `batches` batches of `n` calls, in µs.
fn least_per_call(batches: usize, n: usize, mut solve: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut sweeps = 0;
    for _ in 0..batches {
        let start = thread_cpu_time();
        for _ in 0..n {
            sweeps = std::hint::black_box(solve());
        }
        best = best.min((thread_cpu_time() - start).as_secs_f64() * 1e6 / n as f64);
    }
    (best, sweeps)
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a count")).collect();
    let batches = args.first().copied().unwrap_or(15);
    let n = args.get(1).copied().unwrap_or(2000);
    bbrl_benches::print_machine();
    println!("problem  solver               path     µs/solve  sweeps");
    for name in ["GC", "GDL", "Grid"] {
        let fdm = problems::distribution(name).unwrap().fdm;
        let model = CountModel::from_prior(&fdm);
        let (ns, na) = (fdm.n_states(), fdm.n_actions());
        // A path that does not serve the model (AVX2 on Grid) runs the scalar loops: shown as such.
        for path in SimdPath::ALL.into_iter().filter(|p| p.is_available()) {
            let mut ws = QIterationWorkspace::with_path(ns, na, path);
            let mut q = vec![0.0; ns * na];
            let (t, sweeps) = least_per_call(batches, n, || ws.solve(model.view(), 0.95, 250, BBRL_Q_ACCURACY, &mut q));
            println!("{name:<8} {:<20} {:<8} {t:>8.3}  {sweeps}", "bbrl_q_iteration", ws.path().name());
            let mut vi = ValueIterationWorkspace::with_path(ns, na, path);
            let (mut v, mut pi) = (vec![0.0; ns], vec![0; ns]);
            let (t, sweeps) =
                least_per_call(batches, n, || vi.solve(model.view(), None, 0.95, GUEZ_VI_EPSILON, &mut v, &mut pi));
            println!("{name:<8} {:<20} {:<8} {t:>8.3}  {sweeps}", "guez_value_iteration", vi.path().name());
        }
    }
}
