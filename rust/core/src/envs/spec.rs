//! What the environment registry says of each named environment, and the built environment
//! itself: finite environments share one type ([`FiniteEnv`]); each continuous simulator is its
//! own type, so the evaluators' loops stay monomorphic and dispatch once per call.

use super::finite::FiniteEnv;
use super::mountain_car::MountainCar;
use super::puddle_world::PuddleWorld;
use crate::error::Result;
use crate::invalid;
use crate::options::{ParamType, ParamValue, Range};

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

/// One option of the environment registry: its type and range, which [`EnvOptions::read`]
/// enforces and front ends show; what each environment takes is its [`EnvSpec::options`].
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    pub ty: ParamType,
    pub range: Range,
    /// What it is, with its unit.
    pub doc: &'static str,
    /// Whether it sizes the environment's tables (a family's size; each family caps it).
    pub sizes_memory: bool,
}

/// Every environment option, in the order of [`EnvOptions`]'s fields.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "discount",
        ty: ParamType::Float,
        range: Range::between(0.0, 1.0),
        doc: "the discount of the return",
        sizes_memory: false,
    },
    OptionSpec {
        name: "time_limit",
        ty: ParamType::Int,
        range: Range::at_least(1.0),
        doc: "steps after which an episode is cut",
        sizes_memory: false,
    },
    OptionSpec {
        name: "noise",
        ty: ParamType::Float,
        range: Range::at_least(0.0),
        doc: "standard deviation of the step length",
        sizes_memory: false,
    },
    OptionSpec {
        name: "size",
        ty: ParamType::Int,
        range: Range::at_least(2.0),
        doc: "the size of a family of problems (DeepSea's side N, the stochastic chain's length)",
        sizes_memory: true,
    },
    OptionSpec {
        name: "mapping_seed",
        ty: ParamType::Int,
        range: Range::at_least(0.0),
        doc: "the seed of DeepSea's action mapping",
        sizes_memory: false,
    },
];

impl EnvOptions {
    /// The options of environment `env` from keyword values, each checked against its
    /// [`OptionSpec`] and against the options `env` takes: every error names the environment,
    /// the option and what it takes.
    pub fn read<'a>(env: &EnvSpec, pairs: impl IntoIterator<Item = (&'a str, &'a ParamValue)>) -> Result<Self> {
        let mut options = EnvOptions::default();
        for (key, value) in pairs {
            let Some(spec) = OPTIONS.iter().find(|o| o.name == key).filter(|o| env.options.contains(&o.name)) else {
                return Err(invalid!(
                    "environment '{}' has no option '{key}'; its options: {}",
                    env.name,
                    env.options.join(", ")
                ));
            };
            let wrong =
                |what: String| invalid!("environment '{}': option '{key}' must be {what}, got {value}", env.name);
            let number = match (spec.ty, value) {
                (ParamType::Float, ParamValue::Float(v)) => *v,
                (_, ParamValue::Int(v)) => *v as f64,
                (_, ParamValue::UInt(v)) => *v as f64,
                (ParamType::Int, ParamValue::Float(v)) if v.fract() == 0.0 => *v,
                (ParamType::Int, _) => return Err(wrong("an integer".into())),
                _ => return Err(wrong("a number".into())),
            };
            if !spec.range.contains(number) {
                return Err(wrong(spec.range.requirement()));
            }
            let integer = || -> Result<u64> {
                match value {
                    ParamValue::Int(v) => u64::try_from(*v).map_err(|_| wrong(spec.range.requirement())),
                    ParamValue::UInt(v) => Ok(*v),
                    _ if number < 2f64.powi(63) => Ok(number as u64),
                    _ => Err(wrong("a smaller integer".into())),
                }
            };
            let count =
                || -> Result<usize> { usize::try_from(integer()?).map_err(|_| wrong("a smaller integer".into())) };
            match key {
                "discount" => options.discount = Some(number),
                "time_limit" => options.time_limit = Some(count()?),
                "noise" => options.noise = Some(number),
                "size" => options.size = Some(count()?),
                "mapping_seed" => options.mapping_seed = Some(integer()?),
                _ => return Err(invalid!("option '{key}' has a spec but no field (please report)")),
            }
        }
        Ok(options)
    }
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
