//! What the problem registry says of each problem, and the facts read from its tables or its
//! environment (never restated: the reward range is the tables' or the simulator's own).

use crate::envs::{AnyEnv, Env, EnvOptions, EnvSpec};
use crate::error::Result;
use crate::model::Fdm;

/// Where a problem's MDPs come from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// Test MDPs drawn from a distribution (the BBRL protocol). Its priors are the distribution
    /// itself (the accurate case) and its uniform prior (see [`super::uniform_prior`]).
    Distribution {
        /// Builds the test distribution.
        test: fn() -> Fdm,
        /// Steps after which an episode ends, if the problem has episodes (`None`: continuing,
        /// the experiment's horizon T applies).
        horizon: Option<usize>,
    },
    /// A registered environment, built with its defaults: one known MDP or simulator, no prior.
    Environment(&'static EnvSpec),
}

/// One entry of the problem registry.
#[derive(Clone, Copy, Debug)]
pub struct ProblemSpec {
    /// The name users type (`--test`, `--prior`, `bbrl.Experiment(NAME)`).
    pub name: &'static str,
    /// The descriptive name tables show.
    pub long_name: &'static str,
    /// One line: what it is and where it comes from.
    pub summary: &'static str,
    pub source: Source,
}

/// How a prior of a distribution problem is made from its test distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorRule {
    /// The test distribution itself (the accurate case).
    Accurate,
    /// Every concentration 1 (the inaccurate case), named with [`super::UNIFORM_PREFIX`].
    Uniform,
}

/// Where an episode starts.
#[derive(Clone, Debug, PartialEq)]
pub enum StartLaw {
    /// Always this state.
    State(usize),
    /// A state drawn uniformly at each reset.
    Uniform,
    /// A state drawn with these probabilities.
    Law(Vec<f64>),
    /// Drawn by a continuous simulator's reset.
    Simulator,
}

/// What the agents and the episodic protocol read of a problem.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// `None` for a continuous problem.
    pub n_states: Option<usize>,
    pub n_actions: usize,
    /// The smallest and largest reward a step can give.
    pub reward_range: (f64, f64),
    /// Steps after which an episode ends, if the problem has one.
    pub horizon: Option<usize>,
    pub start: StartLaw,
    /// The discount the problem comes with (environments); `None`: the experiment's.
    pub discount: Option<f64>,
}

fn start_of_fdm(fdm: &Fdm) -> StartLaw {
    match (fdm.initial_state(), fdm.start_law()) {
        (Some(s), _) => StartLaw::State(s),
        (None, Some(law)) => StartLaw::Law(law.to_vec()),
        (None, None) => StartLaw::Uniform,
    }
}

fn start_of_law(law: &[f64]) -> StartLaw {
    if let Some(s) = law.iter().position(|&p| p == 1.0) {
        StartLaw::State(s)
    } else if law.iter().all(|&p| p == law[0]) {
        StartLaw::Uniform
    } else {
        StartLaw::Law(law.to_vec())
    }
}

fn facts_of<E: Env>(env: &E, start: StartLaw) -> Facts {
    Facts {
        n_states: env.n_states(),
        n_actions: env.n_actions(),
        reward_range: env.reward_bounds(),
        horizon: env.time_limit(),
        start,
        discount: Some(env.discount()),
    }
}

impl ProblemSpec {
    /// The problem of a registered environment: its name, summary and simulator.
    pub const fn of_environment(spec: &'static EnvSpec) -> Self {
        ProblemSpec {
            name: spec.name,
            long_name: spec.long_name,
            summary: spec.summary,
            source: Source::Environment(spec),
        }
    }

    /// The priors an agent may be trained on, by name (empty for an environment).
    pub fn priors(&self) -> Vec<(String, PriorRule)> {
        match self.source {
            Source::Distribution { .. } => vec![
                (self.name.to_string(), PriorRule::Accurate),
                (super::uniform_names(self.name, self.long_name).0, PriorRule::Uniform),
            ],
            Source::Environment(_) => Vec::new(),
        }
    }

    /// The test distribution (`None` for an environment).
    pub fn test_distribution(&self) -> Option<Fdm> {
        match self.source {
            Source::Distribution { test, .. } => Some(test()),
            Source::Environment(_) => None,
        }
    }

    /// The problem's facts, read from its test distribution or its environment built with its
    /// defaults.
    pub fn facts(&self) -> Result<Facts> {
        match self.source {
            Source::Distribution { test, horizon } => {
                let fdm = test();
                let rewards = fdm.rewards();
                let low = rewards.iter().copied().fold(f64::INFINITY, f64::min);
                let high = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Ok(Facts {
                    n_states: Some(fdm.n_states()),
                    n_actions: fdm.n_actions(),
                    reward_range: (low, high),
                    horizon,
                    start: start_of_fdm(&fdm),
                    discount: None,
                })
            }
            Source::Environment(spec) => Ok(match (spec.build)(spec.default_discount, &EnvOptions::default())? {
                AnyEnv::Finite(env) => facts_of(env.as_ref(), start_of_law(env.start_law())),
                AnyEnv::MountainCar(env) => facts_of(&env, StartLaw::Simulator),
                AnyEnv::PuddleWorld(env) => facts_of(&env, StartLaw::Simulator),
            }),
        }
    }
}
