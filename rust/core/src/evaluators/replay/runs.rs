//! Repeated evaluations with different streams, in parallel: run `i` uses the evaluator stream
//! `(seed, REPLAY_EVALUATOR, i)` and a fork of the agent's handle with the stream `(seed,
//! REPLAY_AGENT, i)`, so the results do not depend on the thread count. The front end passes as
//! `seed` the evaluation's seed keyed by the log (`REPLAY_LOG`, python/bbrl/seeds.py), so two logs
//! evaluated with one seed do not share these streams. The model-based evaluator
//! is an online run on the log's model: its environment stream is the online truth's, `(seed,
//! REPLAY_ONLINE_ENV, i)`, so where the model equals the environment it gives the online returns
//! exactly, and otherwise the two differ by the model's error only (common random numbers).
//!
//! Agents that call back into Python run their runs one after the other on the calling thread
//! ([`Schedule::Sequential`]): they hold the GIL. To spread them over worker processes, each
//! process runs a block of run indices (`first_run..first_run + runs`) with the same streams.

use rayon::prelude::*;

use super::{evaluate, online_returns, Config, Dataset, EpisodeEnd, Episodes, Method, Outcome};
use crate::envs::FiniteEnv;
use crate::error::Result;
use crate::invalid;
use crate::platform::threads;
use crate::rng::{purpose, stream};
use crate::stepper::Stepper;

/// How repeated runs are spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// On `threads` rayon workers (`None`: the global pool, one per core).
    Parallel { threads: Option<usize> },
    /// One after the other on the calling thread (agents that call back into Python).
    Sequential,
}

impl Schedule {
    /// One after the other for an agent that must stay on the calling thread (`sequential`: a
    /// Python agent, which holds the GIL), else in parallel on `threads` workers.
    pub fn new(sequential: bool, threads: Option<usize>) -> Self {
        if sequential {
            Schedule::Sequential
        } else {
            Schedule::Parallel { threads }
        }
    }
}

/// Runs `f(i)` for `i` in `0..runs` by `schedule`, results in order.
fn spread<T: Send>(runs: usize, schedule: Schedule, f: impl Fn(usize) -> Result<T> + Sync + Send) -> Result<Vec<T>> {
    let threads = match schedule {
        Schedule::Sequential => return (0..runs).map(&f).collect(),
        Schedule::Parallel { threads } => threads,
    };
    let work = || (0..runs).into_par_iter().map(&f).collect::<Result<Vec<T>>>();
    threads::install(threads, runs, work)?
}

/// Evaluations `first_run..first_run + runs` of the agent behind `stepper`, run `i` on a fork of
/// it with the stream `(seed, REPLAY_AGENT, i)`.
#[allow(clippy::too_many_arguments)]
pub fn evaluate_runs(
    stepper: &Stepper,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    seed: u64,
    first_run: usize,
    runs: usize,
    schedule: Schedule,
) -> Result<Vec<Outcome>> {
    if runs == 0 {
        return Err(invalid!("runs must be >= 1"));
    }
    let evaluator = match config.method {
        Method::Model { .. } => purpose::REPLAY_ONLINE_ENV,
        _ => purpose::REPLAY_EVALUATOR,
    };
    spread(runs, schedule, |k| {
        let i = (first_run + k) as u64;
        let mut stepper = stepper.fork(stream(seed, purpose::REPLAY_AGENT, i))?;
        evaluate(&mut stepper, data, episodes, config, &mut stream(seed, evaluator, i))
    })
}

/// Online runs `first_run..first_run + runs` of `n_episodes` episodes each on `env` (environment
/// stream `(seed, REPLAY_ONLINE_ENV, i)`, agent a fork of `stepper` with `(seed, REPLAY_AGENT,
/// i)`), for the learning curve a replay estimates.
#[allow(clippy::too_many_arguments)]
pub fn online_runs(
    stepper: &Stepper,
    env: &FiniteEnv,
    n_episodes: usize,
    end: EpisodeEnd,
    gamma: f64,
    max_steps: usize,
    seed: u64,
    first_run: usize,
    runs: usize,
    schedule: Schedule,
) -> Result<Vec<Vec<f64>>> {
    if runs == 0 {
        return Err(invalid!("runs must be >= 1"));
    }
    spread(runs, schedule, |k| {
        let i = (first_run + k) as u64;
        let mut stepper = stepper.fork(stream(seed, purpose::REPLAY_AGENT, i))?;
        let mut env_rng = stream(seed, purpose::REPLAY_ONLINE_ENV, i);
        online_returns(&mut stepper, env, n_episodes, end, gamma, max_steps, &mut env_rng)
    })
}
