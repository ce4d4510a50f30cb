//! Times the value-error rollouts by the two paths that run them: `sample_returns` (the sampler on
//! its own) and `state_values` (inside the stopping rule, on a one-thread pool), from the same
//! state and stream, with the same number of returns (the rule's accuracy is set so small that it
//! only stops at `max_samples` = n), so both simulate the same trajectories. Prints ns per
//! simulated step, the median of `runs` timings, and a checksum that must agree between builds.
//! For instruction counts run it under `valgrind --tool=callgrind` with one run:
//! `cargo build --release -p bbrl-benches --example value_error_paths && valgrind --tool=callgrind \
//!  target/release/examples/value_error_paths puddle-world betting 200 1`.
//! Arguments: domain (puddle-world, mountain-car), path (sample, betting, ebgstop), n returns,
//! runs (default 3).

use std::time::Instant;

use bbrl_core::envs::{AnyEnv, MountainCar, PuddleWorld};
use bbrl_core::evaluators::value_error::catalog::{sample_returns, state_values, AnyPolicy, States};
use bbrl_core::evaluators::value_error::{EnergyPumping, StateValuesOptions, StopConfig, StoppingRule, UniformPolicy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (env, policy, state, length) = match args[1].as_str() {
        "puddle-world" => (
            AnyEnv::PuddleWorld(PuddleWorld::new(0.99, 0.01, None).unwrap()),
            AnyPolicy::Uniform(UniformPolicy::new(4).unwrap()),
            [0.5, 0.5],
            1194,
        ),
        "mountain-car" => (
            AnyEnv::MountainCar(MountainCar::new(0.99, None).unwrap()),
            AnyPolicy::EnergyPumping(EnergyPumping::new(0.6).unwrap()),
            [-0.5, 0.0],
            1000,
        ),
        other => panic!("unknown domain {other}: puddle-world or mountain-car"),
    };
    let path = args[2].as_str();
    let n: usize = args[3].parse().expect("n, a number of returns");
    let runs: usize = args.get(4).map_or(3, |r| r.parse().expect("runs"));
    let states = States::Points(vec![state]);
    let (low, range) = match &env {
        AnyEnv::PuddleWorld(_) => (-8100.0, 8099.0),
        _ => (-100.0, 99.0),
    };
    let mut timings = Vec::new();
    let mut checksum = (0.0, 0u64);
    for _ in 0..runs {
        let start = Instant::now();
        checksum = match path {
            "sample" => {
                let (returns, steps) = sample_returns(&env, &policy, &states, n, length, 7).unwrap();
                (returns.iter().sum::<f64>() / n as f64, steps)
            }
            "betting" | "ebgstop" => {
                let rule = if path == "betting" { StoppingRule::Betting } else { StoppingRule::Ebgstop };
                let stop = StopConfig { rule, max_samples: n as u64, ..StopConfig::new(1e-9, 0.1, 1e-9, low, range) };
                let options = StateValuesOptions { stop, rollout_length: length, seed: 7, threads: Some(1) };
                let v = state_values(&env, &policy, &states, &options).unwrap();
                assert_eq!(v[0].n_samples, n as u64, "the rule stopped before n returns");
                (v[0].value, v[0].n_steps)
            }
            other => panic!("unknown path {other}: sample, betting or ebgstop"),
        };
        timings.push(start.elapsed().as_secs_f64() * 1e9 / checksum.1 as f64);
    }
    let mut sorted = timings.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{} {path}: {n} returns, {} steps, mean return {:.6}; ns/step median {:.2} of {:?}",
        args[1],
        checksum.1,
        checksum.0,
        sorted[sorted.len() / 2],
        timings.iter().map(|t| (t * 100.0).round() / 100.0).collect::<Vec<_>>()
    );
}
