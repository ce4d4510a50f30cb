//! Runs whole trajectories of one agent on one problem, for instruction counting under
//! `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine):
//! `cargo build --release -p bbrl-benches --example trajectory_count && valgrind --tool=callgrind \
//!  target/release/examples/trajectory_count GC egreedy 10`.

use bbrl::agents::{build, ParamValue, Params, Setting};
use bbrl::experiment::Experiment;
use bbrl::problems;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fdm = problems::by_name(&args[1]).expect("GC, GDL, Grid, UGC, UGDL or UGrid");
    let params = match args[2].as_str() {
        "egreedy" => Params::from([("epsilon".into(), ParamValue::Float(0.1))]),
        "softmax" => Params::from([("tau".into(), ParamValue::Float(1.0))]),
        "beb" => Params::from([("beta".into(), ParamValue::Float(1.0))]),
        _ => Params::new(),
    };
    let n: usize = args[3].parse().expect("a number of MDPs");
    let exp = Experiment::new(fdm.clone(), n, Setting { gamma: 0.95, horizon: 250 }, 0).unwrap();
    let mut agent = build(&args[2], &params).unwrap();
    exp.learn_offline(agent.as_mut(), &fdm).unwrap();
    let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
    println!("mean return {}", run.returns.iter().sum::<f64>() / n as f64);
}
