//! The agent interface and the built-in agents, one module per algorithm.
//!
//! Life cycle, the same for every evaluator (the benchmark protocol, the replay evaluators, a
//! user's own loop), which reach agents only through [`crate::stepper::Stepper`]:
//! - `learn_offline` once on the prior (timed as offline time);
//! - `start_task` for every new unknown MDP (posterior := prior: everything learned online is
//!   forgotten);
//! - `start_episode(state)` for a new episode of the same task: learned knowledge is kept (the
//!   default does nothing; PSRL draws new models there);
//! - `act` and `observe`, where `observe` may follow any action, not only the agent's own `act`
//!   (replay feeds logged actions);
//! - `action_probabilities` is a pure query: it changes no future action, no random stream and no
//!   learned quantity, however often it is called between steps;
//! - `snapshot` (a deep copy) together with the caller-held random stream captures everything the
//!   agent's future depends on (private planning streams included): restore it, replay the same
//!   inputs, get the same actions.

mod bamcp;
mod beb;
mod bfs3;
mod common;
mod egreedy;
mod formula_agent;
mod mean_model;
mod opps;
mod optimal;
#[cfg(test)]
mod planning_test_support;
mod psrl;
mod random;
mod registry;
mod sboss;
mod softmax;
#[cfg(test)]
mod test_support;

pub use bamcp::Bamcp;
pub use beb::Beb;
pub use bfs3::Bfs3;
pub use common::{
    argmax_random_tie, argmax_random_tie_by, argmax_random_tie_by_select, greedy_probabilities, plan_once,
    uniform_below, PlanningStream,
};
pub use egreedy::EGreedy;
pub use formula_agent::{variable_counts, FormulaAgent};
pub use mean_model::MeanModelQ;
pub use opps::{ucb1, Bandit, OppsDs, Ucb1Outcome, DEFAULT_C as OPPS_DEFAULT_C};
pub use optimal::Optimal;
pub use psrl::Psrl;
pub use random::RandomAgent;
pub use registry::{build, load_text, ParamValue, Params, AGENT_KINDS};
pub use sboss::Sboss;
pub use softmax::SoftMax;

use crate::error::Result;
use crate::fdm::Fdm;
use crate::mdp::Mdp;
use crate::rng::Rng;
use crate::simulate::StepFailure;

/// The discount and horizon of an experiment, given to the agent as the original's `setMDP(γ, T)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// Discount factor in [0, 1).
    pub gamma: f64,
    /// Number of decisions per trajectory (steps).
    pub horizon: usize,
}

/// What an agent may see when a task (a new unknown MDP) starts.
pub struct TaskContext<'a> {
    pub setting: Setting,
    /// The true test MDP: `Some` only for agents whose [`Agent::is_oracle`] is true (the Optimal
    /// reference line). The no-peeking rule of the protocol is enforced here, structurally.
    pub true_mdp: Option<&'a Mdp>,
}

/// One observed transition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition {
    pub state: usize,
    pub action: usize,
    pub reward: f64,
    pub next_state: usize,
}

/// A Bayesian RL agent. Implementations hold every buffer they need from `reset` on, so that
/// `act` and `observe` never allocate.
pub trait Agent: Send + Sync {
    /// A readable name with the parameters, e.g. `e-Greedy (epsilon = 0.1)`.
    fn name(&self) -> String;

    /// Offline learning from the prior (timed by the caller). Called once, before any `reset`.
    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, rng: &mut Rng) -> Result<()>;

    /// A new task: the posterior goes back to the prior (the original's `reset`, run through
    /// `setMDP`). Everything learned online is forgotten; what `learn_offline` learned is kept.
    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()>;

    /// A new episode of the same task, starting in `state`: knowledge learned online is kept.
    /// Agents that plan per episode (PSRL draws its models) act on it; the default does nothing.
    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    /// The action to take in `state`.
    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize>;

    /// Online learning from one real transition.
    fn observe(&mut self, transition: Transition, rng: &mut Rng) -> Result<()>;

    /// pi(a | state) for the agent's current knowledge, written into `out` (length A). A pure
    /// query: calling it never changes a future action, random stream or learned quantity.
    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()>;

    /// The `T` decisions of a trajectory after `reset`, from `state`: [`crate::simulate::decide`].
    /// With `rewards`, the reward of step `t` is also written into `rewards[t]`.
    /// Keep this default: as a provided method it is compiled for each agent type, so `act` and
    /// `observe` are called directly (inlined) in the loop, with one virtual call per trajectory.
    fn run_decisions(
        &mut self,
        mdp: &Mdp,
        state: usize,
        setting: Setting,
        agent_rng: &mut Rng,
        env_rng: &mut Rng,
        rewards: Option<&mut [f64]>,
    ) -> std::result::Result<f64, StepFailure> {
        crate::simulate::decide(self, mdp, state, setting, agent_rng, env_rng, rewards)
    }

    /// Whether `learn_offline` computes anything from the prior. Agents that only size their
    /// buffers there return false, and their offline time is zero by declaration rather than a
    /// measurement of microseconds of noise.
    fn learns_offline(&self) -> bool {
        true
    }

    /// Whether the agent is an oracle that is shown the true MDP at reset.
    fn is_oracle(&self) -> bool {
        false
    }

    /// A deep copy (the trained agent is cloned for every test MDP and thread).
    fn clone_box(&self) -> Box<dyn Agent>;

    /// A copy that captures everything the agent's future depends on (private planning streams
    /// included), for [`crate::stepper::Stepper::snapshot`]. Built-in agents are plain data, so
    /// this is [`Agent::clone_box`]; an agent written in Python copies itself through its own
    /// `snapshot`/`restore`, which can fail.
    fn snapshot(&self) -> Result<Box<dyn Agent>> {
        Ok(self.clone_box())
    }

    /// For agents that can be saved (OPPS-DS): a text from which [`load_text`] rebuilds the agent,
    /// trained or not. `None` for the others.
    fn saved_text(&self) -> Option<String> {
        None
    }

    /// What offline learning decided, as (name, value) pairs for result tables, e.g. OPPS-DS's
    /// chosen formula. Empty for agents whose training has nothing to report.
    fn details(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

impl Clone for Box<dyn Agent> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// The error every agent returns when used before `learn_offline`.
pub(crate) fn not_trained(name: &str) -> crate::error::BbrlError {
    crate::error::BbrlError::Agent(format!("agent '{name}' used before learn_offline"))
}
