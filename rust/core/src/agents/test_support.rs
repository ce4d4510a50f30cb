//! Fixtures shared by the agents' unit tests.

use crate::agent::{Agent, Setting, TaskContext, Transition};
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::rng::{purpose, stream};

pub const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };

/// Two states, two actions. Action 0 in state 0 pays 1 now and mostly stays; action 1 pays nothing
/// but moves to state 1, where action 0 pays 5 per step. At gamma = 0.95 (value iteration to
/// convergence, by hand): Q(0, 0) = 67.094, Q(0, 1) = 68.952, Q(1, 0) = 76.210, Q(1, 1) = 68.952.
/// **The optimal first action (state 0) is 1**, against the lowest-index tie rule.
pub fn two_state_mdp() -> Mdp {
    let transitions = vec![
        0.9, 0.1, /* s0 a0 */ 0.5, 0.5, /* s0 a1 */
        0.1, 0.9, /* s1 a0 */ 0.5, 0.5, /* s1 a1 */
    ];
    let mut rewards = vec![0.0; 8];
    rewards[0] = 1.0; // s0 a0 -> s0
    rewards[5] = 5.0; // s1 a0 -> s1
    Mdp::new(2, 2, transitions, rewards, Some(0)).unwrap()
}

/// A prior concentrated on `mdp`: theta = scale * P (a point mass as scale grows).
pub fn point_mass_prior(mdp: &Mdp, scale: f64) -> Fdm {
    let theta = mdp.transitions().iter().map(|p| p * scale).collect();
    Fdm::new(mdp.n_states(), mdp.n_actions(), theta, mdp.rewards().to_vec(), Some(0)).unwrap()
}

/// The accurate GC prior (SPEC 1.3).
pub fn gc_prior() -> Fdm {
    crate::model::problems::generalized_chain()
}

/// theta = 1 everywhere, with the rewards of `like` (the U* priors of SPEC 1.3).
pub fn uniform_prior(like: &Fdm) -> Fdm {
    crate::model::problems::uniform_prior(like)
}

/// A trained agent's trajectory of `steps` steps on `mdp`: (state, action, next state) per step.
/// Agent stream `(seed, AGENT_ONLINE, 0)`, environment stream `(seed, ENVIRONMENT, 0)`.
pub fn rollout(agent: &mut dyn Agent, mdp: &Mdp, steps: usize, seed: u64) -> Vec<(usize, usize, usize)> {
    let mut agent_rng = stream(seed, purpose::AGENT_ONLINE, 0);
    let mut env_rng = stream(seed, purpose::ENVIRONMENT, 0);
    let context = TaskContext { setting: SETTING, true_mdp: agent.is_oracle().then_some(mdp) };
    agent.start_task(&context, &mut agent_rng).unwrap();
    let mut state = mdp.initial_state(&mut env_rng);
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let action = agent.act(state, &mut agent_rng).unwrap();
        let (next_state, reward) = mdp.step(state, action, &mut env_rng);
        agent.observe(Transition { state, action, reward, next_state }, &mut agent_rng).unwrap();
        out.push((state, action, next_state));
        state = next_state;
    }
    out
}

/// Trains `agent` on `prior` with the test setting.
pub fn train(agent: &mut dyn Agent, prior: &Fdm) {
    agent.learn_offline(prior, SETTING, &mut stream(0, purpose::AGENT_OFFLINE, 0)).unwrap();
}
