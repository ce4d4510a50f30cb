//! Repeated evaluations with different streams, in parallel: run `i` uses the evaluator stream
//! `(seed, REPLAY_EVALUATOR, i)` and an agent whose stream the caller derives from `(seed,
//! REPLAY_AGENT, i)`, so the results do not depend on the thread count.

use rayon::prelude::*;

use super::{evaluate, online_returns, Config, Dataset, EpisodeEnd, Episodes, Outcome};
use crate::env::FiniteEnv;
use crate::error::Result;
use crate::invalid;
use crate::rng::{purpose, stream};
use crate::stepper::Stepper;

/// Runs `f(i)` for `i` in `0..runs` on `threads` workers (`None`: rayon's global pool), in order.
fn parallel<T: Send>(
    runs: usize,
    threads: Option<usize>,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    let work = || (0..runs).into_par_iter().map(&f).collect::<Result<Vec<T>>>();
    match threads {
        None => work(),
        Some(0) => Err(invalid!("threads must be >= 1 (or None for every core), got 0")),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| invalid!("cannot start {n} worker threads: {e}"))?
            .install(work),
    }
}

/// `runs` evaluations; `make_stepper(i)` builds run `i`'s agent (a clone of the trained agent with
/// the stream `(seed, REPLAY_AGENT, i)`).
pub fn evaluate_runs(
    make_stepper: impl Fn(u64) -> Stepper + Sync + Send,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    seed: u64,
    runs: usize,
    threads: Option<usize>,
) -> Result<Vec<Outcome>> {
    if runs == 0 {
        return Err(invalid!("runs must be >= 1"));
    }
    parallel(runs, threads, |i| {
        let mut stepper = make_stepper(i as u64);
        evaluate(&mut stepper, data, episodes, config, &mut stream(seed, purpose::REPLAY_EVALUATOR, i as u64))
    })
}

/// `runs` online runs of `n_episodes` episodes each on `env` (environment stream `(seed,
/// REPLAY_ONLINE_ENV, i)`), for the learning curve a replay estimates.
#[allow(clippy::too_many_arguments)]
pub fn online_runs(
    make_stepper: impl Fn(u64) -> Stepper + Sync + Send,
    env: &FiniteEnv,
    start: usize,
    n_episodes: usize,
    end: EpisodeEnd,
    gamma: f64,
    max_steps: usize,
    seed: u64,
    runs: usize,
    threads: Option<usize>,
) -> Result<Vec<Vec<f64>>> {
    if runs == 0 {
        return Err(invalid!("runs must be >= 1"));
    }
    parallel(runs, threads, |i| {
        let mut stepper = make_stepper(i as u64);
        let mut env_rng = stream(seed, purpose::REPLAY_ONLINE_ENV, i as u64);
        online_returns(&mut stepper, env, start, n_episodes, end, gamma, max_steps, &mut env_rng)
    })
}
