//! What the environment registry says of each named environment, and the built environment
//! itself: finite environments share one type ([`FiniteEnv`]); each continuous simulator is its
//! own type, so the evaluators' loops stay monomorphic and dispatch once per call.

use super::finite::FiniteEnv;
use super::mountain_car::MountainCar;
use super::puddle_world::PuddleWorld;
use crate::error::Result;
use crate::invalid;

/// A built environment of any kind.
#[derive(Clone, Debug)]
pub enum AnyEnv {
    MountainCar(MountainCar),
    PuddleWorld(PuddleWorld),
    Finite(Box<FiniteEnv>),
}

impl AnyEnv {
    /// The finite environment, or an error naming the environment when it is continuous.
    pub fn into_finite(self) -> Result<FiniteEnv> {
        match self {
            AnyEnv::Finite(env) => Ok(*env),
            AnyEnv::MountainCar(_) => Err(invalid!("MountainCar is continuous, a finite environment is needed here")),
            AnyEnv::PuddleWorld(_) => Err(invalid!("PuddleWorld is continuous, a finite environment is needed here")),
        }
    }
}

/// The kind of state an environment has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateSpace {
    /// States `0..n_states` ([`FiniteEnv`]).
    Finite,
    /// Points of a box in the plane (`[f64; 2]`).
    Box2,
}

impl StateSpace {
    /// `"finite"` or `"box2"`, as the bindings and the command line show it.
    pub fn as_str(self) -> &'static str {
        match self {
            StateSpace::Finite => "finite",
            StateSpace::Box2 => "box2",
        }
    }
}

/// Options a named environment is built with; `None` takes the environment's default. Each
/// environment takes the options its [`EnvSpec::options`] lists; the registry refuses the others.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EnvOptions {
    /// The discount of the return, in [0, 1].
    pub discount: Option<f64>,
    /// Steps after which an episode is cut (continuous environments).
    pub time_limit: Option<usize>,
    /// Standard deviation of the step length (Puddle World).
    pub noise: Option<f64>,
    /// The size of a family of problems (DeepSea's side N, the stochastic chain's length).
    pub size: Option<usize>,
    /// The seed of DeepSea's action mapping (bsuite's `mapping_seed`).
    pub mapping_seed: Option<u64>,
}

/// The fixed policy an environment's value-error studies follow unless told otherwise (Sajed et
/// al. 2018's); the value-error evaluator builds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultPolicy {
    /// Every action with the same probability.
    Uniform,
    /// Mountain Car's energy pumping (push with the velocity), with this share of uniform actions.
    EnergyPumping { random_share: f64 },
}

impl DefaultPolicy {
    /// `"uniform"` or `"energy-pumping"`, as the bindings show it.
    pub fn kind(self) -> &'static str {
        match self {
            DefaultPolicy::Uniform => "uniform",
            DefaultPolicy::EnergyPumping { .. } => "energy-pumping",
        }
    }
}

/// One entry of the environment registry.
#[derive(Clone, Copy)]
pub struct EnvSpec {
    /// The name users type (`--env NAME`, `bbrl.envs.make(NAME)`).
    pub name: &'static str,
    /// The descriptive name tables show (the environment's problem's long name).
    pub long_name: &'static str,
    /// One line: what it is and where it comes from.
    pub summary: &'static str,
    pub state_space: StateSpace,
    /// A continuous state's box, one `(low, high, name)` per coordinate (empty for a finite one):
    /// what tile coding covers.
    pub state_box: &'static [(f64, f64, &'static str)],
    /// The policy value-error studies follow by default, if the environment has one.
    pub default_policy: Option<DefaultPolicy>,
    /// The discount when none is given.
    pub default_discount: f64,
    /// The [`EnvOptions`] it takes, by field name; any other option given is refused.
    pub options: &'static [&'static str],
    /// Builds the environment with the discount resolved (the one asked for, or the default) and
    /// the other options.
    pub build: fn(f64, &EnvOptions) -> Result<AnyEnv>,
}

impl std::fmt::Debug for EnvSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvSpec").field("name", &self.name).field("state_space", &self.state_space).finish()
    }
}
