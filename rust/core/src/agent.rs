//! The agent interface: the `Agent` trait, the values it exchanges, and one decision step.
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

use crate::error::{BbrlError, Result};
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::rng::Rng;

/// The discount and horizon of an experiment, given to the agent as the original's `setMDP(γ, T)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// Discount factor in [0, 1).
    pub gamma: f64,
    /// Number of decisions per trajectory (steps).
    pub horizon: usize,
}

impl Setting {
    /// A discount in [0, 1) and a horizon of at least one step, or an error naming the bad one.
    pub fn checked(gamma: f64, horizon: usize) -> Result<Self> {
        if !(0.0..1.0).contains(&gamma) {
            return Err(invalid!("gamma must be in [0, 1), got {gamma}"));
        }
        if horizon < 1 {
            return Err(invalid!("horizon must be >= 1 step, got {horizon}"));
        }
        Ok(Self { gamma, horizon })
    }
}

/// The memory an agent's parameters size: bytes (an upper estimate, saturating) and the
/// parameters that set them, for the error that refuses too much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryNeed {
    pub bytes: u128,
    /// The parameters (and setting) that size it, e.g. `"k and depth (the search tree)"`.
    pub sized_by: &'static str,
}

impl MemoryNeed {
    /// Nothing beyond the prior's own size.
    pub const NONE: MemoryNeed = MemoryNeed { bytes: 0, sized_by: "" };
}

/// Refuses an agent whose parameters would size more memory than the memory rule allows, for a
/// prior of `n_states` x `n_actions`: the error names the agent, the parameters, the size and the
/// limit. Every offline learning goes through it ([`crate::evaluators::protocol::learn_offline`]).
pub fn check_memory(agent: &dyn Agent, n_states: usize, n_actions: usize, setting: Setting) -> Result<()> {
    let need = agent.parameter_memory(n_states, n_actions, setting);
    if need.bytes == 0 {
        return Ok(());
    }
    let what = format!("agent '{}': its {} on {n_states} states and {n_actions} actions", agent.name(), need.sized_by);
    crate::platform::memory::check(&what, need.bytes)
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

    /// The `T` decisions of a trajectory after `reset`, from `state`: [`decide`].
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
        decide(self, mdp, state, setting, agent_rng, env_rng, rewards)
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

    /// The memory its parameters size (search trees, sampled models, staged value tables), from
    /// above, for a prior of `n_states` x `n_actions` states and actions and `setting`; tables
    /// only the prior sizes are left out (its size is checked where it is read). Checked against
    /// the memory rule ([`crate::platform::memory`]) before offline learning allocates anything.
    fn parameter_memory(&self, _n_states: usize, _n_actions: usize, _setting: Setting) -> MemoryNeed {
        MemoryNeed::NONE
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

    /// For agents that can be saved (OPPS-DS): a text from which [`crate::agents::load_text`] rebuilds the agent,
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
pub fn not_trained(name: &str) -> BbrlError {
    BbrlError::Agent(format!("agent '{name}' used before learn_offline"))
}

/// An agent that fails with `reason` on every call: what an agent that cannot be copied returns
/// from [`Agent::clone_box`] (an error on first use, never a panic).
#[derive(Clone, Debug)]
pub struct FailedAgent {
    name: String,
    reason: String,
}

impl FailedAgent {
    pub fn new(name: String, reason: String) -> Self {
        Self { name, reason }
    }

    fn fail<T>(&self) -> Result<T> {
        Err(BbrlError::Agent(self.reason.clone()))
    }
}

impl Agent for FailedAgent {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn learn_offline(&mut self, _: &Fdm, _: Setting, _: &mut Rng) -> Result<()> {
        self.fail()
    }
    fn start_task(&mut self, _: &TaskContext<'_>, _: &mut Rng) -> Result<()> {
        self.fail()
    }
    fn act(&mut self, _: usize, _: &mut Rng) -> Result<usize> {
        self.fail()
    }
    fn observe(&mut self, _: Transition, _: &mut Rng) -> Result<()> {
        self.fail()
    }
    fn action_probabilities(&mut self, _: usize, _: &mut [f64]) -> Result<()> {
        self.fail()
    }
    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

/// Why the decision loop stopped early: an agent error or an out-of-range action at `step`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFailure {
    pub step: usize,
    pub message: String,
}

/// The decision loop of a trajectory, after the agent's reset: `setting.horizon` times, the agent
/// acts in `state`, the MDP steps, the reward is discounted into the return (and, with `rewards`,
/// written into `rewards[t]`) and the agent observes the transition. Returns the discounted return.
/// Generic so that each agent type gets its own copy with `act` and `observe` called directly;
/// reached through [`Agent::run_decisions`]. `rewards`, when given, holds at least
/// `setting.horizon` entries (checked by [`crate::trajectory::run_trajectory_recording`]; a shorter slice is an
/// error, never a panic).
#[inline]
pub fn decide<A: Agent + ?Sized>(
    agent: &mut A,
    mdp: &Mdp,
    state: usize,
    setting: Setting,
    agent_rng: &mut Rng,
    env_rng: &mut Rng,
    rewards: Option<&mut [f64]>,
) -> std::result::Result<f64, StepFailure> {
    // Local copies of the generators, written back at the end, can live in registers.
    let (mut agent_local, mut env_local) = (agent_rng.clone(), env_rng.clone());
    // One branch per trajectory: each arm is its own compiled loop, and the loop without a
    // buffer has no trace of recording in it (`Discard::record` is empty).
    let result = match rewards {
        None => steps(agent, mdp, state, setting, &mut agent_local, &mut env_local, Discard),
        Some(buffer) => match buffer.get_mut(..setting.horizon) {
            Some(row) => steps(agent, mdp, state, setting, &mut agent_local, &mut env_local, Record(row)),
            None => return Err(short_buffer(buffer.len(), setting.horizon)),
        },
    };
    (*agent_rng, *env_rng) = (agent_local, env_local);
    result
}

/// Where the loop puts the reward of each step.
trait RewardSink {
    fn record(&mut self, step: usize, reward: f64);
}

/// Recording off: nothing to do.
struct Discard;

impl RewardSink for Discard {
    #[inline(always)]
    fn record(&mut self, _step: usize, _reward: f64) {}
}

/// Recording on: the trajectory's row of the reward buffer, cut to exactly `horizon` entries by
/// [`decide`], so the write at `step < horizon` is always in bounds.
struct Record<'a>(&'a mut [f64]);

impl RewardSink for Record<'_> {
    #[inline(always)]
    fn record(&mut self, step: usize, reward: f64) {
        self.0[step] = reward;
    }
}

#[inline(always)]
fn steps<A: Agent + ?Sized, R: RewardSink>(
    agent: &mut A,
    mdp: &Mdp,
    mut state: usize,
    setting: Setting,
    agent_rng: &mut Rng,
    env_rng: &mut Rng,
    mut sink: R,
) -> std::result::Result<f64, StepFailure> {
    let n_actions = mdp.n_actions();
    let mut first_row = state * n_actions;
    let mut discount = 1.0;
    let mut total = 0.0;
    for step in 0..setting.horizon {
        let action = match agent.act(state, agent_rng) {
            Ok(action) => action,
            Err(e) => return Err(agent_error(step, e)),
        };
        if action >= n_actions {
            return Err(action_out_of_range(step, action, n_actions));
        }
        let (next_state, next_first_row, reward) = mdp.step_from(first_row, action, env_rng);
        total += discount * reward;
        discount *= setting.gamma;
        sink.record(step, reward);
        if let Err(e) = agent.observe(Transition { state, action, reward, next_state }, agent_rng) {
            return Err(agent_error(step, e));
        }
        state = next_state;
        first_row = next_first_row;
    }
    Ok(total)
}

#[cold]
#[inline(never)]
fn short_buffer(len: usize, horizon: usize) -> StepFailure {
    StepFailure { step: 0, message: format!("the reward buffer has {len} entries for {horizon} steps") }
}

#[cold]
#[inline(never)]
fn agent_error(step: usize, error: BbrlError) -> StepFailure {
    StepFailure { step, message: error.to_string() }
}

#[cold]
#[inline(never)]
fn action_out_of_range(step: usize, action: usize, n_actions: usize) -> StepFailure {
    StepFailure { step, message: format!("returned action {action}, not one of the actions 0 to {}", n_actions - 1) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn a_failed_agent_fails_with_its_reason_on_every_call_and_in_every_copy() {
        let mut agent = FailedAgent::new("mine".into(), "could not be copied".into());
        let mut rng = stream(0, 0, 0);
        let reason = |e: BbrlError| e.to_string();
        assert!(reason(agent.act(0, &mut rng).unwrap_err()).contains("could not be copied"));
        let t = Transition { state: 0, action: 0, reward: 0.0, next_state: 0 };
        assert!(agent.observe(t, &mut rng).is_err());
        assert!(agent.action_probabilities(0, &mut [0.0; 2]).is_err());
        let mut copy = agent.clone_box();
        assert_eq!(copy.name(), "mine");
        assert!(reason(copy.act(0, &mut rng).unwrap_err()).contains("could not be copied"));
        assert_eq!(
            Setting::checked(0.5, 0).unwrap_err().to_string(),
            invalid!("horizon must be >= 1 step, got 0").to_string()
        );
    }
}
