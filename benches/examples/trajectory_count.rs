//! Runs whole trajectories of one agent on one problem, for instruction counting under
//! `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine):
//! `cargo build --release -p bbrl-benches --example trajectory_count && valgrind --tool=callgrind \
//!  target/release/examples/trajectory_count GC egreedy 10`. Arguments: problem, agent (egreedy,
//! softmax, beb, bamcp, bfs3, ...), number of MDPs, for bamcp and bfs3 an optional K (500) and
//! depth (15), and for bfs3 an optional C (15): `trajectory_count Grid bfs3 1 10000 50 2`.
//! The mean return is printed in full, so that two builds can be checked for identical results.
//! Also printed: the process CPU time (user + system) of the online part alone, the test
//! trajectories after `learn_offline`, so that an agent trained offline (OPPS-DS) can be timed
//! per decision without its training. SBOSS runs in compat mode (the original's behaviour, so the
//! same work as the original per decision); OPPS-DS trains on F2 with 200 draws (c = 660).

use bbrl_core::agent::Setting;
use bbrl_core::agents::{build, ParamValue, Params};
use bbrl_core::evaluators::protocol::Experiment;
use bbrl_core::problems;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fdm = problems::distribution(&args[1]).expect("GC, GDL, Grid, UGC, UGDL or UGrid").fdm;
    let k: i64 = args.get(4).map_or(500, |k| k.parse().expect("K, a number of simulations"));
    let depth: i64 = args.get(5).map_or(15, |d| d.parse().expect("a depth"));
    let c: i64 = args.get(6).map_or(15, |c| c.parse().expect("C, a branching factor"));
    let params = match args[2].as_str() {
        "egreedy" => Params::from([("epsilon".into(), ParamValue::Float(0.1))]),
        "softmax" => Params::from([("tau".into(), ParamValue::Float(1.0))]),
        "beb" => Params::from([("beta".into(), ParamValue::Float(1.0))]),
        // The planners at the parameters of the original's timing table (`benches/planning.rs`);
        // optional arguments set K, the depth and C.
        "bamcp" => Params::from([("k".into(), ParamValue::Int(k)), ("depth".into(), ParamValue::Int(depth))]),
        "bfs3" => Params::from([
            ("k".into(), ParamValue::Int(k)),
            ("c".into(), ParamValue::Int(c)),
            ("depth".into(), ParamValue::Int(depth)),
        ]),
        "sboss" => Params::from([
            ("epsilon".into(), ParamValue::Float(1e-3)),
            ("delta".into(), ParamValue::Float(7.0)),
            ("compat".into(), ParamValue::Bool(true)),
        ]),
        "oppsds" => Params::from([
            ("formulas".into(), ParamValue::Text("F2".into())),
            ("n_draws".into(), ParamValue::Int(200)),
            ("c".into(), ParamValue::Float(660.0)),
        ]),
        _ => Params::new(),
    };
    let n: usize = args[3].parse().expect("a number of MDPs");
    let exp = Experiment::new(fdm.clone(), n, Setting { gamma: 0.95, horizon: 250 }, 0).unwrap();
    let mut agent = build(&args[2], &params).unwrap();
    exp.learn_offline(agent.as_mut(), &fdm).unwrap();
    println!("agent {}", agent.name());
    let start = process_cpu_seconds();
    let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
    let online = process_cpu_seconds() - start;
    let mean = run.returns.iter().sum::<f64>() / n as f64;
    let var = run.returns.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / (n as f64 - 1.0).max(1.0);
    println!("mean return {mean:?} (standard error {:.3})", (var / n as f64).sqrt());
    println!("online cpu {online:.6} s");
}

/// User + system CPU time of the whole process (every thread), in seconds.
fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}
