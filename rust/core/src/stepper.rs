//! The one way to drive an agent: a handle that owns a trained agent and its random stream.
//!
//! Every evaluator goes through a [`Stepper`]: the benchmark protocol (one task per test MDP,
//! `T` decisions through the compiled loop [`Stepper::run_decisions`]), the replay evaluators
//! (logged actions fed to `observe`, roll-backs through `snapshot`/`restore`), and a user's own
//! loop from Python. Python agents sit behind the same [`Agent`] trait object.
//!
//! The handle checks what crosses it (states and actions in range, a task started before the
//! first decision), so an agent never sees an invalid input and a caller never gets a panic.

use crate::agent::{Agent, Setting, TaskContext, Transition};
use crate::error::{index_range, BbrlError, Result};
use crate::invalid;
use crate::model::mdp::Mdp;
use crate::rng::{purpose, stream, Rng};
use crate::trajectory::{self, TrajectoryOutcome};

/// A trained agent with its random stream, stepped through the life cycle of [`Agent`].
pub struct Stepper {
    agent: Box<dyn Agent>,
    rng: Rng,
    n_states: usize,
    n_actions: usize,
    setting: Setting,
    in_task: bool,
}

/// Everything a [`Stepper`]'s future depends on: restore it, feed the same inputs, get the same
/// actions.
#[derive(Clone)]
pub struct Snapshot {
    agent: Box<dyn Agent>,
    rng: Rng,
    in_task: bool,
}

impl Stepper {
    /// A handle on `agent`, trained on a prior of `n_states` x `n_actions` for `setting`, whose
    /// randomness is `rng` (the protocol passes stream `(seed, AGENT_ONLINE, i)` for MDP `i`).
    pub fn new(agent: Box<dyn Agent>, n_states: usize, n_actions: usize, setting: Setting, rng: Rng) -> Self {
        Self { agent, rng, n_states, n_actions, setting, in_task: false }
    }

    /// The handle the protocol gives `agent` on test MDP `index` of an experiment with `seed`: its
    /// stream is `(seed, AGENT_ONLINE, index)`.
    pub fn for_task(
        agent: Box<dyn Agent>,
        n_states: usize,
        n_actions: usize,
        setting: Setting,
        seed: u64,
        index: u64,
    ) -> Self {
        Self::new(agent, n_states, n_actions, setting, stream(seed, purpose::AGENT_ONLINE, index))
    }

    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }
    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    pub fn setting(&self) -> Setting {
        self.setting
    }

    /// A new unknown task: the posterior goes back to the prior. Refused for oracle agents,
    /// which must be shown the true MDP ([`Stepper::start_task_on`]).
    pub fn start_task(&mut self) -> Result<()> {
        if self.agent.is_oracle() {
            return Err(invalid!("agent '{}' is an oracle: it needs the true MDP (start_task_on)", self.agent.name()));
        }
        self.begin(None)
    }

    /// A new task on the test MDP `mdp`, which only an oracle agent is shown (the protocol's
    /// no-peeking rule, held here for every evaluator).
    pub fn start_task_on(&mut self, mdp: &Mdp) -> Result<()> {
        self.check_mdp(mdp, "the MDP")?;
        self.begin(self.agent.is_oracle().then_some(mdp))
    }

    fn check_mdp(&self, mdp: &Mdp, what: &str) -> Result<()> {
        if (mdp.n_states(), mdp.n_actions()) != (self.n_states, self.n_actions) {
            return Err(invalid!(
                "{what} has {} states and {} actions; the agent was trained for {} and {}",
                mdp.n_states(),
                mdp.n_actions(),
                self.n_states,
                self.n_actions
            ));
        }
        Ok(())
    }

    fn begin(&mut self, true_mdp: Option<&Mdp>) -> Result<()> {
        self.in_task = false;
        self.agent.start_task(&TaskContext { setting: self.setting, true_mdp }, &mut self.rng)?;
        self.in_task = true;
        Ok(())
    }

    /// A new episode of the current task, from `state`: what was learned online is kept.
    pub fn start_episode(&mut self, state: usize) -> Result<()> {
        self.ready(state, "state")?;
        self.agent.start_episode(state, &mut self.rng)
    }

    /// The agent's action in `state`.
    pub fn act(&mut self, state: usize) -> Result<usize> {
        self.ready(state, "state")?;
        let action = self.agent.act(state, &mut self.rng)?;
        if action >= self.n_actions {
            return Err(BbrlError::Agent(format!(
                "agent '{}' chose action {action}, not one of the actions 0 to {}",
                self.agent.name(),
                self.n_actions - 1
            )));
        }
        Ok(action)
    }

    /// Online learning from one transition; the action need not be the agent's own.
    pub fn observe(&mut self, transition: Transition) -> Result<()> {
        self.ready(transition.state, "state")?;
        self.check_state(transition.next_state, "next state")?;
        if transition.action >= self.n_actions {
            return Err(invalid!(
                "action {} is out of range: allowed {}",
                transition.action,
                index_range(self.n_actions)
            ));
        }
        if !transition.reward.is_finite() {
            return Err(invalid!("reward {} is not finite", transition.reward));
        }
        self.agent.observe(transition, &mut self.rng)
    }

    /// pi(a | state) into `out` (length A): a pure query.
    pub fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.ready(state, "state")?;
        if out.len() != self.n_actions {
            return Err(invalid!("out has {} entries for {} actions", out.len(), self.n_actions));
        }
        self.agent.action_probabilities(state, out)
    }

    /// Everything the future depends on: the agent (private planning streams included) and the
    /// handle's stream.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(Snapshot { agent: self.agent.snapshot()?, rng: self.rng.clone(), in_task: self.in_task })
    }

    /// Goes back to `snapshot`, which stays usable for further restores.
    pub fn restore(&mut self, snapshot: &Snapshot) -> Result<()> {
        self.agent = snapshot.agent.snapshot()?;
        self.rng = snapshot.rng.clone();
        self.in_task = snapshot.in_task;
        Ok(())
    }

    /// An independent handle in the same state as this one but with the random stream `rng`: how
    /// an evaluator repeats a run under other seeds (in parallel, one fork per run).
    pub fn fork(&self, rng: Rng) -> Result<Stepper> {
        Ok(Stepper {
            agent: self.agent.snapshot()?,
            rng,
            n_states: self.n_states,
            n_actions: self.n_actions,
            setting: self.setting,
            in_task: self.in_task,
        })
    }

    /// [`Stepper::fork`] with the stream of test MDP `index` ([`Stepper::for_task`]).
    pub fn fork_for_task(&self, seed: u64, index: u64) -> Result<Stepper> {
        self.fork(stream(seed, purpose::AGENT_ONLINE, index))
    }

    /// One trajectory of the benchmark protocol on test MDP `mdp` (index `mdp_index`, for error
    /// messages): a new task, then `setting.horizon` decisions through the compiled loop
    /// ([`Agent::run_decisions`]), with the environment's stream `env_rng`. The task stays
    /// started afterwards, so the caller may go on stepping by hand.
    pub fn run_trajectory(&mut self, mdp: &Mdp, mdp_index: usize, env_rng: &mut Rng) -> Result<TrajectoryOutcome> {
        self.trajectory(mdp, mdp_index, env_rng, None)
    }

    /// [`Stepper::run_trajectory`], also writing the reward of step `t` into `rewards[t]`
    /// (`rewards` holds exactly `setting.horizon` entries): the same return and streams, bit for bit.
    pub fn run_trajectory_recording(
        &mut self,
        mdp: &Mdp,
        mdp_index: usize,
        env_rng: &mut Rng,
        rewards: &mut [f64],
    ) -> Result<TrajectoryOutcome> {
        self.trajectory(mdp, mdp_index, env_rng, Some(rewards))
    }

    fn trajectory(
        &mut self,
        mdp: &Mdp,
        mdp_index: usize,
        env_rng: &mut Rng,
        rewards: Option<&mut [f64]>,
    ) -> Result<TrajectoryOutcome> {
        self.check_mdp(mdp, &format!("MDP {mdp_index}"))?;
        self.in_task = false;
        let (agent, rng, setting) = (self.agent.as_mut(), &mut self.rng, self.setting);
        let outcome = match rewards {
            None => trajectory::run_trajectory(agent, mdp, mdp_index, setting, rng, env_rng)?,
            Some(row) => trajectory::run_trajectory_recording(agent, mdp, mdp_index, setting, rng, env_rng, row)?,
        };
        self.in_task = true;
        Ok(outcome)
    }

    fn ready(&self, state: usize, what: &str) -> Result<()> {
        if !self.in_task {
            return Err(invalid!("start_task must be called before the first decision"));
        }
        self.check_state(state, what)
    }

    fn check_state(&self, state: usize, what: &str) -> Result<()> {
        if state >= self.n_states {
            return Err(invalid!("{what} {state} is out of range: allowed {}", index_range(self.n_states)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{build, KINDS};
    use crate::model::problems;
    use crate::rng::{purpose, stream};

    fn trained(kind: &str) -> Stepper {
        let prior = problems::generalized_chain();
        let setting = Setting { gamma: 0.95, horizon: 20 };
        // The kind's first example setting, the one that runs in seconds.
        let params = crate::agents::registry::find(kind).unwrap().examples[0].params();
        let mut agent = build(kind, &params).unwrap();
        agent.learn_offline(&prior, setting, &mut stream(0, purpose::AGENT_OFFLINE, 0)).unwrap();
        Stepper::new(agent, prior.n_states(), prior.n_actions(), setting, stream(0, purpose::AGENT_ONLINE, 0))
    }

    #[test]
    fn checks_what_crosses_the_handle() {
        let mut h = trained("egreedy");
        assert!(h.act(0).unwrap_err().to_string().contains("start_task"));
        h.start_task().unwrap();
        assert!(h.act(5).unwrap_err().to_string().contains("state 5 is out of range: allowed 0 to 4"));
        let t = Transition { state: 0, action: 3, reward: 0.0, next_state: 1 };
        assert!(h.observe(t).unwrap_err().to_string().contains("action 3 is out of range: allowed 0 to 2"));
        let mut oracle = trained("optimal");
        assert!(oracle.start_task().unwrap_err().to_string().contains("oracle"));
    }

    #[test]
    fn restore_then_replay_gives_the_same_actions() {
        // Every kind of the registry but the oracle, which no handle may start without the true MDP.
        for kind in KINDS.iter().map(|spec| spec.kind) {
            let mut h = trained(kind);
            if h.agent.is_oracle() {
                continue;
            }
            h.start_task().unwrap();
            let snap = h.snapshot().unwrap();
            let run = |h: &mut Stepper| {
                let mut env = stream(9, purpose::ENVIRONMENT, 0);
                let mdp = problems::generalized_chain().sample_mdp(&mut stream(9, purpose::TEST_MDP, 0));
                let mut s = 0;
                (0..30)
                    .map(|_| {
                        let a = h.act(s).unwrap();
                        let (y, r) = mdp.step(s, a, &mut env);
                        h.observe(Transition { state: s, action: a, reward: r, next_state: y }).unwrap();
                        s = y;
                        a
                    })
                    .collect::<Vec<_>>()
            };
            let first = run(&mut h);
            h.restore(&snap).unwrap();
            assert_eq!(first, run(&mut h), "{kind}");
        }
    }
}
