//! The online truth a replay estimates: the agent run on the environment itself, episode after
//! episode, with the same episode-end rule.

use super::{EpisodeEnd, EpisodeReturn};
use crate::agent::Transition;
use crate::envs::{Env, FiniteEnv};
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// The discounted return of each of `n_episodes` episodes of the agent behind `stepper` (trained,
/// task not yet started) on `env` from `start`. An episode still running after `max_steps` steps
/// is cut there (an agent may settle where the episode-end rule never fires, e.g. an arm of
/// SixArms under return-to-start); the cut changes a return by at most
/// `gamma^max_steps * max|r| / (1 - gamma)`.
#[allow(clippy::too_many_arguments)]
pub fn online_returns(
    stepper: &mut Stepper,
    env: &FiniteEnv,
    start: usize,
    n_episodes: usize,
    end: EpisodeEnd,
    gamma: f64,
    max_steps: usize,
    env_rng: &mut Rng,
) -> Result<Vec<f64>> {
    if max_steps == 0 {
        return Err(invalid!("max_steps must be >= 1"));
    }
    stepper.start_task()?;
    let mut returns = Vec::with_capacity(n_episodes);
    for _ in 0..n_episodes {
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
        returns.push(episode.total);
    }
    Ok(returns)
}
