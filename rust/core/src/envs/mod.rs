//! Environments: one simulator interface for every evaluator (the benchmark protocol's MDPs,
//! the replay evaluators' logging environments, the value-error rollouts).
//!
//! An [`Env`] is stateless: the caller holds the state and passes it to [`Env::step`], so one
//! environment is shared by many threads and a rollout can start from any state (what the
//! value-error references need). Randomness comes in through the caller's stream, as for agents.
//! States are `usize` for finite environments ([`FiniteEnv`]) and whatever the simulator needs
//! for continuous ones (for example `[f64; 2]`).
//!
//! Every named environment has an [`EnvSpec`] beside its code and one line in [`registry`], which
//! the bindings, the command line and every evaluator read. [`Episode`] holds one episode's state
//! for a front end that steps an environment by hand.

mod chain;
mod cliff_walking;
pub mod deep_sea;
mod double_loop;
mod episode;
mod finite;
mod frozen_lake;
mod mountain_car;
mod puddle_world;
pub mod registry;
mod spec;
mod stochastic_chain;
mod taxi;

pub use chain::chain;
pub use cliff_walking::cliff_walking;
pub use deep_sea::deep_sea;
pub use double_loop::double_loop;
pub use episode::{Episode, EpisodeStep};
pub use finite::{river_swim, six_arms, FiniteEnv, RiverSwimVariant};
pub use frozen_lake::frozen_lake;
pub use mountain_car::MountainCar;
pub use puddle_world::PuddleWorld;
pub use spec::{AnyEnv, DefaultPolicy, EnvOptions, EnvSpec, OptionSpec, StateSpace, OPTIONS};
pub use stochastic_chain::stochastic_chain;
pub use taxi::taxi;

use crate::rng::Rng;

/// What one step of an environment returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step<S> {
    pub next_state: S,
    pub reward: f64,
    /// The episode ended in an absorbing state (the next state is not acted in).
    pub terminal: bool,
}

/// A simulator: a start law, a transition law, a discount and bounds on the reward.
pub trait Env: Send + Sync {
    /// A state: `usize` for finite environments.
    type State: Clone + Send + Sync + std::fmt::Debug;

    /// A short name, e.g. `SixArms`.
    fn name(&self) -> String;

    /// Number of actions; actions are `0..n_actions()`.
    fn n_actions(&self) -> usize;

    /// The number of states of a finite environment, `None` for a continuous one.
    fn n_states(&self) -> Option<usize> {
        None
    }

    /// The discount of the environment's return, in [0, 1].
    fn discount(&self) -> f64;

    /// `(min, max)` of a single reward: the range a return's bounds are derived from.
    fn reward_bounds(&self) -> (f64, f64);

    /// The number of steps after which an episode is cut (truncated, not terminal), if any.
    fn time_limit(&self) -> Option<usize> {
        None
    }

    /// An initial state drawn from the start law.
    fn reset(&self, rng: &mut Rng) -> Self::State;

    /// One transition from `state` under `action` (which must be in `0..n_actions()`).
    fn step(&self, state: &Self::State, action: usize, rng: &mut Rng) -> Step<Self::State>;
}
