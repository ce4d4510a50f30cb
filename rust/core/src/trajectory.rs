//! One trajectory of the protocol (SPEC 3.2).

use std::time::Instant;

use crate::agent::{Agent, Setting, StepFailure, TaskContext};
use crate::error::{BbrlError, Result};
use crate::model::mdp::Mdp;
use crate::rng::Rng;
use crate::work::{self, Work};

/// The outcome of one trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrajectoryOutcome {
    /// `sum_{t=0}^{T-1} gamma^t r_t` (T terms, as the original's `computeDSR`).
    pub discounted_return: f64,
    /// Wall time in seconds of the agent's reset and its T decisions and updates (the simulated
    /// environment steps inside the loop are included, as in the original; they cost nanoseconds).
    pub seconds: f64,
    /// CPU time in seconds of the same span, on the thread that ran it: what the agent computed,
    /// whatever else the machine was doing.
    pub cpu_seconds: f64,
    /// The work of the same span, in machine-independent units ([`crate::work`]): the same on
    /// every run of the same seeded trajectory.
    pub work: Work,
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
    trajectory(agent, mdp, mdp_index, setting, agent_rng, env_rng, None)
}

/// [`run_trajectory`], also writing the reward of step `t` into `rewards[t]`: the same return, bit
/// for bit, and the same random streams. `rewards` must hold exactly `setting.horizon` entries;
/// on an agent failure it holds the rewards of the steps before the failure (the rest untouched).
pub fn run_trajectory_recording(
    agent: &mut dyn Agent,
    mdp: &Mdp,
    mdp_index: usize,
    setting: Setting,
    agent_rng: &mut Rng,
    env_rng: &mut Rng,
    rewards: &mut [f64],
) -> Result<TrajectoryOutcome> {
    if rewards.len() != setting.horizon {
        return Err(crate::invalid!(
            "the reward buffer has {} entries for a horizon of {} steps",
            rewards.len(),
            setting.horizon
        ));
    }
    trajectory(agent, mdp, mdp_index, setting, agent_rng, env_rng, Some(rewards))
}

fn trajectory(
    agent: &mut dyn Agent,
    mdp: &Mdp,
    mdp_index: usize,
    setting: Setting,
    agent_rng: &mut Rng,
    env_rng: &mut Rng,
    rewards: Option<&mut [f64]>,
) -> Result<TrajectoryOutcome> {
    let fail = |agent: &dyn Agent, step: usize, message: String| BbrlError::AgentFailure {
        agent: agent.name(),
        mdp: mdp_index,
        step,
        message,
    };
    let start = Instant::now();
    let work_start = Work::now();
    let cpu_start = crate::platform::cputime::thread_cpu_seconds();
    mdp.warm_up(setting.horizon);
    let state = mdp.initial_state(env_rng);
    let context = TaskContext { setting, true_mdp: agent.is_oracle().then_some(mdp) };
    agent.start_task(&context, agent_rng).map_err(|e| fail(agent, 0, format!("reset: {e}")))?;
    let discounted_return = agent
        .run_decisions(mdp, state, setting, agent_rng, env_rng, rewards)
        .map_err(|StepFailure { step, message }| fail(agent, step, message))?;
    let cpu_seconds = crate::platform::cputime::thread_cpu_seconds() - cpu_start;
    // The loop's own decisions, counted once per trajectory rather than per step.
    work::add_decisions(setting.horizon as u64, mdp.n_states(), mdp.n_actions());
    let work = Work::delta_since(&work_start);
    Ok(TrajectoryOutcome { discounted_return, seconds: start.elapsed().as_secs_f64(), cpu_seconds, work })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Transition;
    use crate::agents::RandomAgent;
    use crate::error::BbrlError;
    use crate::model::fdm::Fdm;
    use crate::rng::stream;

    const SETTING: Setting = Setting { gamma: 0.9, horizon: 40 };

    /// Three states, two actions, uniform start; action 0's rows have two next states, action 1's
    /// three (the two forms of the sampler).
    fn three_state_mdp() -> Mdp {
        let mut transitions = Vec::new();
        for s in 0..3 {
            let mut narrow = [0.0; 3];
            narrow[s] = 0.3;
            narrow[(s + 1) % 3] = 0.7;
            transitions.extend(narrow);
            transitions.extend([0.2, 0.5, 0.3]);
        }
        let rewards = (0..18).map(|i| f64::from(i) * 0.25).collect();
        Mdp::new(3, 2, transitions, rewards, None).unwrap()
    }

    /// Acts 0, 1, 0, 1, ...; fails or misbehaves in one chosen way at step 3.
    #[derive(Clone)]
    struct Faulty {
        fault: &'static str,
        step: usize,
    }

    impl Agent for Faulty {
        fn name(&self) -> String {
            "Faulty".into()
        }
        fn learn_offline(&mut self, _: &Fdm, _: Setting, _: &mut Rng) -> Result<()> {
            Ok(())
        }
        fn start_task(&mut self, _: &TaskContext<'_>, _: &mut Rng) -> Result<()> {
            self.step = 0;
            match self.fault {
                "reset" => Err(BbrlError::Agent("no reset".into())),
                _ => Ok(()),
            }
        }
        fn act(&mut self, _: usize, _: &mut Rng) -> Result<usize> {
            match (self.fault, self.step) {
                ("act", 3) => Err(BbrlError::Agent("no act".into())),
                ("range", 3) => Ok(2),
                _ => Ok(self.step % 2),
            }
        }
        fn observe(&mut self, _: Transition, _: &mut Rng) -> Result<()> {
            self.step += 1;
            match (self.fault, self.step) {
                ("observe", 4) => Err(BbrlError::Agent("no observe".into())),
                _ => Ok(()),
            }
        }
        fn action_probabilities(&mut self, _: usize, _: &mut [f64]) -> Result<()> {
            Ok(())
        }
        fn clone_box(&self) -> Box<dyn Agent> {
            Box::new(self.clone())
        }
    }

    #[test]
    fn failures_are_located() {
        let mdp = three_state_mdp();
        for (fault, message) in [
            ("reset", "agent 'Faulty' failed on MDP 7 at step 0: reset: no reset"),
            ("act", "agent 'Faulty' failed on MDP 7 at step 3: no act"),
            ("range", "agent 'Faulty' failed on MDP 7 at step 3: returned action 2, not one of the actions 0 to 1"),
            ("observe", "agent 'Faulty' failed on MDP 7 at step 3: no observe"),
        ] {
            let mut agent = Faulty { fault, step: 0 };
            let error = run_trajectory(&mut agent, &mdp, 7, SETTING, &mut stream(0, 3, 0), &mut stream(0, 2, 0));
            assert_eq!(error.unwrap_err().to_string(), message);
        }
        let mut agent = Faulty { fault: "none", step: 0 };
        assert!(run_trajectory(&mut agent, &mdp, 7, SETTING, &mut stream(0, 3, 0), &mut stream(0, 2, 0)).is_ok());
        // A buffer of the wrong length is an error, never a panic.
        let mut agent = Faulty { fault: "none", step: 0 };
        let mut short = vec![0.0; SETTING.horizon - 1];
        let error = run_trajectory_recording(
            &mut agent,
            &mdp,
            7,
            SETTING,
            &mut stream(0, 3, 0),
            &mut stream(0, 2, 0),
            &mut short,
        );
        assert!(error.unwrap_err().to_string().contains("reward buffer has 39 entries for a horizon of 40 steps"));
        // The loop itself refuses a short buffer too (for callers of `run_decisions`), and takes a
        // longer one, writing only its first T entries.
        let mut agent = Faulty { fault: "none", step: 0 };
        let (mut agent_rng, mut env_rng) = (stream(0, 3, 0), stream(0, 2, 0));
        let failure = agent.run_decisions(&mdp, 0, SETTING, &mut agent_rng, &mut env_rng, Some(&mut short));
        assert_eq!(failure.unwrap_err().message, "the reward buffer has 39 entries for 40 steps");
        let mut long = vec![f64::NAN; SETTING.horizon + 2];
        agent.run_decisions(&mdp, 0, SETTING, &mut agent_rng, &mut env_rng, Some(&mut long)).unwrap();
        assert!(
            long[..SETTING.horizon].iter().all(|r| r.is_finite()) && long[SETTING.horizon..].iter().all(|r| r.is_nan())
        );
    }

    #[test]
    fn the_loop_is_the_protocol() {
        // Step by step through `dyn Agent` and `Mdp::step`, as SPEC 3.2 states the protocol: the
        // same return and the generators left in the same states.
        let mdp = three_state_mdp();
        let prior = Fdm::new(3, 2, vec![1.0; 18], mdp.rewards().to_vec(), None).unwrap();
        let mut trained = RandomAgent::new();
        trained.learn_offline(&prior, SETTING, &mut stream(0, 4, 0)).unwrap();
        for seed in 0..20 {
            let (mut agent_rng, mut env_rng) = (stream(seed, 3, 0), stream(seed, 2, 0));
            let mut agent: Box<dyn Agent> = Box::new(trained.clone());
            let outcome = run_trajectory(agent.as_mut(), &mdp, 0, SETTING, &mut agent_rng, &mut env_rng).unwrap();

            let (mut agent_ref, mut env_ref) = (stream(seed, 3, 0), stream(seed, 2, 0));
            let mut agent: Box<dyn Agent> = Box::new(trained.clone());
            let mut state = mdp.initial_state(&mut env_ref);
            agent.start_task(&TaskContext { setting: SETTING, true_mdp: None }, &mut agent_ref).unwrap();
            let (mut total, mut discount) = (0.0, 1.0);
            let mut reference_rewards = Vec::new();
            for _ in 0..SETTING.horizon {
                let action = agent.act(state, &mut agent_ref).unwrap();
                let (next_state, reward) = mdp.step(state, action, &mut env_ref);
                reference_rewards.push(reward.to_bits());
                total += discount * reward;
                discount *= SETTING.gamma;
                agent.observe(Transition { state, action, reward, next_state }, &mut agent_ref).unwrap();
                state = next_state;
            }
            assert_eq!(outcome.discounted_return.to_bits(), total.to_bits());
            assert_eq!((&agent_rng, &env_rng), (&agent_ref, &env_ref));

            // Recording: the same return and streams, and the rewards the reference loop saw.
            let (mut agent_rec, mut env_rec) = (stream(seed, 3, 0), stream(seed, 2, 0));
            let mut agent: Box<dyn Agent> = Box::new(trained.clone());
            let mut rewards = vec![f64::NAN; SETTING.horizon];
            let recorded =
                run_trajectory_recording(agent.as_mut(), &mdp, 0, SETTING, &mut agent_rec, &mut env_rec, &mut rewards)
                    .unwrap();
            assert_eq!(recorded.discounted_return.to_bits(), total.to_bits());
            assert_eq!((agent_rec, env_rec), (agent_ref, env_ref));
            assert_eq!(rewards.iter().map(|r| r.to_bits()).collect::<Vec<_>>(), reference_rewards);
        }
    }
}
