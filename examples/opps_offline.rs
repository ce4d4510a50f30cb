//! Offline learning time of OPPS-DS on the GC prior, gamma = 0.95, T = 250.
//!
//! ```text
//! cargo run --release --example opps_offline -- [--seed S] [--threads N] N_DRAWS SET...
//! cargo run --release --example opps_offline -- 10000 F2 F3 F4 F5 F6
//! ```
//! Prints one line per set: formulas, budget, wall time, pulls per second, chosen formula.

use std::time::Instant;

use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::{OppsDs, OPPS_DEFAULT_C};
use bbrl_core::formula::set::shipped_set;
use bbrl_core::model::fdm::Fdm;
use bbrl_core::rng::{purpose, stream};

/// The GC prior: 5 states, 3 identical actions, x -> {0, x+1} (x4 -> {0, 4}),
/// theta 1 on the support; R(., ., 0) = 2, R(., ., 4) = 10.
fn gc() -> Fdm {
    let (s, a) = (5, 3);
    let mut theta = vec![0.0; s * a * s];
    let mut rewards = vec![0.0; s * a * s];
    for x in 0..s {
        for u in 0..a {
            let row = (x * a + u) * s;
            theta[row] = 1.0;
            theta[row + (x + 1).min(4)] = 1.0;
            rewards[row] = 2.0;
            rewards[row + 4] = 10.0;
        }
    }
    Fdm::new(s, a, theta, rewards, Some(0)).expect("GC")
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut seed = 0u64;
    let mut threads = None;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let flag = args.remove(0);
        let value = args.remove(0);
        match flag.as_str() {
            "--seed" => seed = value.parse().expect("--seed: integer"),
            "--threads" => threads = Some(value.parse::<usize>().expect("--threads: integer")),
            _ => panic!("unknown flag {flag}"),
        }
    }
    let n_draws: u64 =
        args.first().expect("usage: opps_offline [--seed S] [--threads N] N_DRAWS SET...").parse().unwrap();
    let prior = gc();
    let setting = Setting { gamma: 0.95, horizon: 250 };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.unwrap_or(0)).build().unwrap();
    for set in &args[1..] {
        let formulas = shipped_set(set).expect("a shipped set name");
        let k = formulas.len();
        let mut agent = OppsDs::new(formulas, n_draws, OPPS_DEFAULT_C, false).unwrap().with_label(set.clone());
        let mut rng = stream(seed, purpose::AGENT_OFFLINE, 0);
        let start = Instant::now();
        pool.install(|| agent.learn_offline(&prior, setting, &mut rng)).expect("offline learning");
        let seconds = start.elapsed().as_secs_f64();
        let out = agent.offline_outcome().unwrap();
        let chosen = agent.chosen().unwrap();
        let initial = (k as u64).min(n_draws);
        println!(
            "{set}: {k} formulas, n_draws {n_draws} ({initial} in the parallel initial round), {} attempts, \
             {} discarded, {seconds:.2} s, {:.0} pulls/s, threads {}, chosen {} = {} ({} pulls, mean {:.3})",
            out.attempts,
            out.discarded.iter().filter(|&&d| d).count(),
            out.attempts as f64 / seconds,
            pool.current_num_threads(),
            chosen,
            chosen.to_infix(),
            out.pulls[agent.chosen_index().unwrap()],
            out.means[agent.chosen_index().unwrap()],
        );
    }
}
