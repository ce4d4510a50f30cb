//! One trajectory of the protocol (SPEC 3.2).

use std::time::Instant;

use crate::agents::{Agent, ResetContext, Setting, Transition};
use crate::error::{BbrlError, Result};
use crate::mdp::Mdp;
use crate::rng::Rng;

/// The outcome of one trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrajectoryOutcome {
    /// `sum_{t=0}^{T-1} gamma^t r_t` (T terms, as the original's `computeDSR`).
    pub discounted_return: f64,
    /// Wall time in seconds of the agent's reset and its T decisions and updates (the simulated
    /// environment steps inside the loop are included, as in the original; they cost nanoseconds).
    pub seconds: f64,
}

/// Runs `agent` (already trained) for `setting.horizon` steps on `mdp`. Agent errors and
/// out-of-range actions come back as [`BbrlError::AgentFailure`] located by `mdp_index` and step.
pub fn run_trajectory(
    agent: &mut dyn Agent,
    mdp: &Mdp,
    mdp_index: usize,
    setting: Setting,
    agent_rng: &mut Rng,
    env_rng: &mut Rng,
) -> Result<TrajectoryOutcome> {
    let fail = |agent: &dyn Agent, step: usize, message: String| BbrlError::AgentFailure {
        agent: agent.name(),
        mdp: mdp_index,
        step,
        message,
    };
    let n_actions = mdp.n_actions();
    let start = Instant::now();
    let mut state = mdp.initial_state(env_rng);
    let context = ResetContext { setting, true_mdp: agent.is_oracle().then_some(mdp) };
    agent.reset(&context, agent_rng).map_err(|e| fail(agent, 0, format!("reset: {e}")))?;
    let mut discount = 1.0;
    let mut total = 0.0;
    for step in 0..setting.horizon {
        let action = agent.act(state, agent_rng).map_err(|e| fail(agent, step, e.to_string()))?;
        if action >= n_actions {
            return Err(fail(agent, step, format!("returned action {action}, outside 0..{n_actions}")));
        }
        let (next_state, reward) = mdp.step(state, action, env_rng);
        total += discount * reward;
        discount *= setting.gamma;
        agent
            .observe(Transition { state, action, reward, next_state }, agent_rng)
            .map_err(|e| fail(agent, step, e.to_string()))?;
        state = next_state;
    }
    Ok(TrajectoryOutcome { discounted_return: total, seconds: start.elapsed().as_secs_f64() })
}
