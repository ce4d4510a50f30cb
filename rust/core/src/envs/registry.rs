//! The environment registry: every named environment, in the order users see them. Adding an
//! environment is its own file (the simulator, or a function building a [`FiniteEnv`]) and one
//! entry here. The entries live here rather than beside each simulator because [`AnyEnv`] names
//! the simulators' types: entries there would tie every simulator file to the enum and back.

use super::chain::{self, chain};
use super::cliff_walking::{self, cliff_walking};
use super::deep_sea::{self, deep_sea};
use super::double_loop::{self, double_loop};
use super::finite::{river_swim, six_arms, FiniteEnv, RiverSwimVariant};
use super::frozen_lake::{frozen_lake, MAP_4X4, MAP_8X8};
use super::mountain_car::{self, MountainCar};
use super::puddle_world::{self, PuddleWorld, DEFAULT_NOISE};
use super::spec::{AnyEnv, DefaultPolicy, EnvOptions, EnvSpec, StateSpace};
use super::stochastic_chain::{self, stochastic_chain};
use super::taxi::{self, taxi};
use crate::error::Result;
use crate::invalid;

fn finite(env: Result<FiniteEnv>) -> Result<AnyEnv> {
    Ok(AnyEnv::Finite(Box::new(env?)))
}

/// Every named environment.
pub const ENVIRONMENTS: &[EnvSpec] = &[
    EnvSpec {
        name: "SixArms",
        long_name: "Six Arms",
        summary: "Strehl & Littman (2008): a hub and six arms of rising reward and falling reach; continuing",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 0.95,
        options: &["discount"],
        build: |discount, _| finite(six_arms(discount)),
    },
    EnvSpec {
        name: "RiverSwim-Osband",
        long_name: "RiverSwim (Osband et al.)",
        summary: "Osband, Russo & Van Roy (2013): 6 states against a current, 20 undiscounted steps from state 0",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(river_swim(RiverSwimVariant::Osband, discount)),
    },
    EnvSpec {
        name: "RiverSwim-Strehl",
        long_name: "RiverSwim (Strehl and Littman)",
        summary: "Strehl & Littman (2008): 6 states against a current, start in 1 or 2; continuing",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 0.95,
        options: &["discount"],
        build: |discount, _| finite(river_swim(RiverSwimVariant::Strehl, discount)),
    },
    EnvSpec {
        name: chain::NAME,
        long_name: "Chain",
        summary:
            "Strens (2000): 5 states, forward (0) or back to the start (1), slip 0.2; rewards 10 at the end, 2 back",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 0.99,
        options: &["discount"],
        build: |discount, _| finite(chain(discount)),
    },
    EnvSpec {
        name: double_loop::NAME,
        long_name: "Double Loop",
        summary: "Strens (2000): two loops from state 0, paying 1 (easy) or 2 (action 1 throughout) per 5 steps",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 0.95,
        options: &["discount"],
        build: |discount, _| finite(double_loop(discount)),
    },
    EnvSpec {
        name: deep_sea::NAME,
        long_name: "DeepSea",
        summary: "Osband et al. (2019), bsuite: N x N, N steps down, 0.99 for going right throughout; N = size",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount", "size", "mapping_seed"],
        build: |discount, o| {
            let size = o.size.unwrap_or(deep_sea::DEFAULT_SIZE);
            finite(deep_sea(size, o.mapping_seed.unwrap_or(deep_sea::DEFAULT_MAPPING_SEED), false, discount))
        },
    },
    EnvSpec {
        name: deep_sea::STOCHASTIC_NAME,
        long_name: "DeepSea (stochastic)",
        summary: "bsuite's stochastic DeepSea: right moves fail 1/N, N(0, 1) reward noise at the bottom corners",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount", "size", "mapping_seed"],
        build: |discount, o| {
            let size = o.size.unwrap_or(deep_sea::DEFAULT_SIZE);
            finite(deep_sea(size, o.mapping_seed.unwrap_or(deep_sea::DEFAULT_MAPPING_SEED), true, discount))
        },
    },
    EnvSpec {
        name: stochastic_chain::NAME,
        long_name: "Stochastic Chain (Osband)",
        summary: "Osband's TabulaRL code: L states, right slips back 1/L, N(1, 1) at the far end; L = size",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount", "size"],
        build: |discount, o| finite(stochastic_chain(o.size.unwrap_or(stochastic_chain::DEFAULT_SIZE), discount)),
    },
    EnvSpec {
        name: "FrozenLake-4x4",
        long_name: "FrozenLake 4x4",
        summary: "Gymnasium FrozenLake-v1: a slippery 4 x 4 lake with holes, 1 at the goal, 100 steps",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(frozen_lake("FrozenLake-4x4", &MAP_4X4, true, 100, discount)),
    },
    EnvSpec {
        name: "FrozenLake-4x4-NotSlippery",
        long_name: "FrozenLake 4x4 (not slippery)",
        summary: "Gymnasium FrozenLake-v1 with is_slippery=False: every move goes where it is meant to",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(frozen_lake("FrozenLake-4x4-NotSlippery", &MAP_4X4, false, 100, discount)),
    },
    EnvSpec {
        name: "FrozenLake-8x8",
        long_name: "FrozenLake 8x8",
        summary: "Gymnasium FrozenLake8x8-v1: a slippery 8 x 8 lake with holes, 1 at the goal, 200 steps",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(frozen_lake("FrozenLake-8x8", &MAP_8X8, true, 200, discount)),
    },
    EnvSpec {
        name: "FrozenLake-8x8-NotSlippery",
        long_name: "FrozenLake 8x8 (not slippery)",
        summary: "Gymnasium FrozenLake8x8-v1 with is_slippery=False",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(frozen_lake("FrozenLake-8x8-NotSlippery", &MAP_8X8, false, 200, discount)),
    },
    EnvSpec {
        name: cliff_walking::NAME,
        long_name: "CliffWalking",
        summary: "Gymnasium CliffWalking-v1 (Sutton & Barto): -1 a step, -100 and back to the start off the cliff",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(cliff_walking(discount)),
    },
    EnvSpec {
        name: taxi::NAME,
        long_name: "Taxi",
        summary: "Dietterich (2000), Gymnasium Taxi-v4: fetch a passenger and drop them off, 500 states, 200 steps",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(taxi(false, false, discount)),
    },
    EnvSpec {
        name: taxi::RAINY_NAME,
        long_name: "Taxi (rainy)",
        summary: "Gymnasium Taxi-v4 with is_rainy=True: moves go sideways with probability 0.1 each",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(taxi(true, false, discount)),
    },
    EnvSpec {
        name: taxi::FICKLE_NAME,
        long_name: "Taxi (fickle passenger)",
        summary: "Gymnasium Taxi-v4 with fickle_passenger=True: the passenger may change destination (1000 states)",
        state_space: StateSpace::Finite,
        state_box: &[],
        default_policy: None,
        default_discount: 1.0,
        options: &["discount"],
        build: |discount, _| finite(taxi(false, true, discount)),
    },
    EnvSpec {
        name: mountain_car::NAME,
        long_name: "Mountain Car",
        summary: "Sutton & Barto's dynamics (as in Sajed et al. 2018): a car in a valley, goal at x = 0.5, -1 a step",
        state_space: StateSpace::Box2,
        state_box: &MountainCar::STATE_BOX,
        default_policy: Some(DefaultPolicy::EnergyPumping { random_share: 0.6 }),
        default_discount: 0.99,
        options: &["discount", "time_limit"],
        build: |discount, o| Ok(AnyEnv::MountainCar(MountainCar::new(discount, o.time_limit)?)),
    },
    EnvSpec {
        name: puddle_world::NAME,
        long_name: "Puddle World",
        summary:
            "the Alberta variant (Sajed et al. 2018): a unit square with two puddles, goal in the top-right corner",
        state_space: StateSpace::Box2,
        state_box: &PuddleWorld::STATE_BOX,
        default_policy: Some(DefaultPolicy::Uniform),
        default_discount: 0.99,
        options: &["discount", "time_limit", "noise"],
        build: |discount, o| {
            let noise = o.noise.unwrap_or(DEFAULT_NOISE);
            Ok(AnyEnv::PuddleWorld(PuddleWorld::new(discount, noise, o.time_limit)?))
        },
    },
];

/// The entry named `name` (any spelling of the name rule, [`crate::names`]), or an error listing
/// the names.
pub fn find(name: &str) -> Result<&'static EnvSpec> {
    crate::names::find(ENVIRONMENTS, name, |spec| spec.name).ok_or_else(|| {
        let names: Vec<&str> = ENVIRONMENTS.iter().map(|spec| spec.name).collect();
        invalid!("unknown environment {name:?}; the environments are {}", names.join(", "))
    })
}

/// Builds the environment `name` with `options`, refusing an option it does not take.
pub fn build(name: &str, options: &EnvOptions) -> Result<AnyEnv> {
    let spec = find(name)?;
    let given = [
        ("discount", options.discount.is_some()),
        ("time_limit", options.time_limit.is_some()),
        ("noise", options.noise.is_some()),
        ("size", options.size.is_some()),
        ("mapping_seed", options.mapping_seed.is_some()),
    ];
    debug_assert!(given.iter().map(|(o, _)| *o).eq(super::OPTIONS.iter().map(|o| o.name)));
    if let Some((option, _)) = given.iter().find(|(option, set)| *set && !spec.options.contains(option)) {
        return Err(invalid!(
            "environment '{}' has no option '{option}'; its options: {}",
            spec.name,
            spec.options.join(", ")
        ));
    }
    (spec.build)(options.discount.unwrap_or(spec.default_discount), options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::Env;

    #[test]
    fn names_are_unique_and_every_entry_builds_with_its_defaults() {
        for (i, spec) in ENVIRONMENTS.iter().enumerate() {
            assert!(ENVIRONMENTS[..i].iter().all(|other| other.name != spec.name), "{} twice", spec.name);
            let env = build(spec.name, &EnvOptions::default()).unwrap();
            let discount = match &env {
                AnyEnv::Finite(e) => e.discount(),
                AnyEnv::MountainCar(e) => e.discount(),
                AnyEnv::PuddleWorld(e) => e.discount(),
            };
            assert_eq!(discount, spec.default_discount, "{}", spec.name);
        }
    }

    #[test]
    fn options_are_read_by_their_typed_specs_and_named_in_errors() {
        use crate::options::ParamValue;
        let deep_sea = find("DeepSea").unwrap();
        let read = |key: &str, value: ParamValue| EnvOptions::read(deep_sea, [(key, &value)]);
        assert_eq!(read("size", ParamValue::Int(12)).unwrap().size, Some(12));
        assert_eq!(read("size", ParamValue::Float(12.0)).unwrap().size, Some(12));
        for (key, value, expected) in [
            ("size", ParamValue::Int(-3), "environment 'DeepSea': option 'size' must be >= 2, got -3"),
            ("size", ParamValue::Float(2.5), "option 'size' must be an integer"),
            ("size", ParamValue::Text("x".into()), "option 'size' must be an integer"),
            ("discount", ParamValue::Float(f64::NAN), "option 'discount' must be in [0, 1]"),
            ("bogus", ParamValue::Int(1), "environment 'DeepSea' has no option 'bogus'; its options: discount, size"),
            ("noise", ParamValue::Float(0.1), "environment 'DeepSea' has no option 'noise'"),
        ] {
            let e = read(key, value).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        }
        // Every option an environment lists has a spec.
        for spec in ENVIRONMENTS {
            for option in spec.options {
                assert!(super::super::OPTIONS.iter().any(|o| o.name == *option), "{}: {option}", spec.name);
            }
        }
    }

    #[test]
    fn unknown_names_and_options_are_refused_by_name() {
        let err = find("Chian").unwrap_err().to_string();
        assert!(err.contains("Chian") && err.contains("Chain") && err.contains("SixArms"), "{err}");
        let err = build("Chain", &EnvOptions { noise: Some(0.1), ..Default::default() }).unwrap_err().to_string();
        assert!(err.contains("noise"), "{err}");
        assert!(build("Chain", &EnvOptions { discount: Some(1.5), ..Default::default() }).is_err());
        assert!(build("PuddleWorld", &EnvOptions { noise: Some(0.0), ..Default::default() }).is_ok());
    }
}
