//! The model-based evaluator, the baseline Mandel et al. (2016, Figure 2a) compare PSRS with:
//! estimate the MDP from the log by maximum likelihood, then run the agent on it online.
//!
//! The model: P(s' | s, a) = n(s, a, s') / n(s, a), the reward of (s, a, s') the mean of its
//! logged rewards, the start law the logged episodes' start states in their frequencies (or the
//! log's fixed start). A pair (s, a) the log never tried has no estimate; [`UNVISITED_RULE`]: it
//! stays in s with reward 0 (the model knows no move and no payoff there). Nothing stops the
//! evaluation, so its estimates go on however little data supports them; where the log covers
//! every transition with its exact frequencies, the model is the environment and the evaluation
//! is an online run.

use super::online::{run_episodes, Episodes};
use super::{Config, Dataset, Outcome, StopReason};
use crate::envs::FiniteEnv;
use crate::error::Result;
use crate::model::mdp::Mdp;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// What the model does at a (state, action) pair the log never tried, in words.
pub const UNVISITED_RULE: &str = "an untried (state, action) stays in its state with reward 0";

/// The maximum-likelihood model of `data` as an environment with discount `gamma` and episodes
/// cut at `max_steps` steps.
pub fn mle_model(data: &Dataset, gamma: f64, max_steps: usize) -> Result<FiniteEnv> {
    let (s_count, a_count) = (data.n_states(), data.n_actions());
    let mut counts = vec![0u64; s_count * a_count * s_count];
    let mut reward_sums = vec![0.0; s_count * a_count * s_count];
    for step in data.steps() {
        let i = (step.state * a_count + step.action) * s_count + step.next_state;
        counts[i] += 1;
        reward_sums[i] += step.reward;
    }
    let mut transitions = vec![0.0; counts.len()];
    let mut rewards = vec![0.0; counts.len()];
    for row in 0..s_count * a_count {
        let cells = row * s_count..(row + 1) * s_count;
        let total: u64 = counts[cells.clone()].iter().sum();
        if total == 0 {
            transitions[row * s_count + row / a_count] = 1.0;
            continue;
        }
        for i in cells {
            if counts[i] > 0 {
                transitions[i] = counts[i] as f64 / total as f64;
                rewards[i] = reward_sums[i] / counts[i] as f64;
            }
        }
    }
    let mut start = vec![0.0; s_count];
    match data.start_state() {
        Some(s) => start[s] = 1.0,
        None => {
            let starts = data.logged_starts();
            for &s in &starts {
                start[s] += 1.0;
            }
            start.iter_mut().for_each(|p| *p /= starts.len() as f64);
        }
    }
    let mdp = Mdp::new(s_count, a_count, transitions, rewards, None)?;
    FiniteEnv::new("maximum-likelihood model", mdp, start, gamma, Some(max_steps))
}

/// `n_episodes` episodes of the agent behind `stepper` (task started) on the model of `data`,
/// with `env_rng` as the model's environment stream.
pub(super) fn run(
    stepper: &mut Stepper,
    data: &Dataset,
    config: &Config,
    max_steps: usize,
    env_rng: &mut Rng,
) -> Result<Outcome> {
    let env = mle_model(data, config.gamma, max_steps)?;
    let mut episodes = Episodes::default();
    let n_episodes = config.max_episodes.unwrap_or(0);
    run_episodes(stepper, &env, n_episodes, config.end, config.gamma, max_steps, env_rng, &mut episodes)?;
    let mut out = Outcome::new(StopReason::MaxEpisodes);
    out.returns = episodes.returns;
    out.lengths = episodes.lengths;
    out.tuples_used = data.steps().len();
    Ok(out)
}
