//! The online truth a replay estimates: the agent run on the environment itself, episode after
//! episode, with the same episode-end rule. The model-based evaluator runs the same loop on the
//! log's maximum-likelihood model.

use super::{EpisodeEnd, EpisodeReturn};
use crate::agent::Transition;
use crate::envs::{Env, FiniteEnv};
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// The discounted return of each of `n_episodes` episodes of the agent behind `stepper` (trained,
/// task not yet started) on `env`, each from a start state drawn from the environment's start law
/// (no draw for a single start state). An episode still running after `max_steps` steps is cut
/// there (an agent may settle where the episode-end rule never fires, e.g. an arm of SixArms under
/// return-to-start); the cut changes a return by at most `gamma^max_steps * max|r| / (1 - gamma)`.
#[allow(clippy::too_many_arguments)]
pub fn online_returns(
    stepper: &mut Stepper,
    env: &FiniteEnv,
    n_episodes: usize,
    end: EpisodeEnd,
    gamma: f64,
    max_steps: usize,
    env_rng: &mut Rng,
) -> Result<Vec<f64>> {
    stepper.start_task()?;
    let mut episodes = Episodes::default();
    run_episodes(stepper, env, n_episodes, end, gamma, max_steps, env_rng, &mut episodes)?;
    Ok(episodes.returns)
}

/// The returns and lengths of the episodes of one online run.
#[derive(Default)]
pub(super) struct Episodes {
    pub returns: Vec<f64>,
    pub lengths: Vec<usize>,
}

/// `n_episodes` episodes of the agent behind `stepper` (task started) on `env`, appended to `out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_episodes(
    stepper: &mut Stepper,
    env: &FiniteEnv,
    n_episodes: usize,
    end: EpisodeEnd,
    gamma: f64,
    max_steps: usize,
    env_rng: &mut Rng,
    out: &mut Episodes,
) -> Result<()> {
    if max_steps == 0 {
        return Err(invalid!("max_steps must be >= 1"));
    }
    out.returns.reserve(n_episodes);
    out.lengths.reserve(n_episodes);
    for _ in 0..n_episodes {
        let start = env.reset(env_rng);
        stepper.start_episode(start)?;
        let mut state = start;
        let mut episode = EpisodeReturn::new();
        loop {
            if episode.steps == max_steps {
                break;
            }
            let action = stepper.act(state)?;
            let step = env.step(&state, action, env_rng);
            stepper.observe(Transition { state, action, reward: step.reward, next_state: step.next_state })?;
            episode.add(step.reward, gamma);
            if end.ends(episode.steps, step.next_state, step.terminal, start) {
                break;
            }
            state = step.next_state;
        }
        out.returns.push(episode.total);
        out.lengths.push(episode.steps);
    }
    Ok(())
}
