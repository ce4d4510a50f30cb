//! The environment registry: every named environment, in the order users see them. Adding an
//! environment is its own file (the simulator, or a function building a [`FiniteEnv`]) and one
//! entry here. The entries live here rather than beside each simulator because [`AnyEnv`] names
//! the simulators' types: entries there would tie every simulator file to the enum and back.

use super::chain::{self, chain};
use super::finite::{river_swim, six_arms, FiniteEnv, RiverSwimVariant};
use super::mountain_car::{self, MountainCar};
use super::puddle_world::{self, PuddleWorld, DEFAULT_NOISE};
use super::spec::{AnyEnv, DefaultPolicy, EnvOptions, EnvSpec, StateSpace};
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
    ];
    if let Some((option, _)) = given.iter().find(|(option, set)| *set && !spec.options.contains(option)) {
        return Err(invalid!("{} takes no {option} (its options: {})", spec.name, spec.options.join(", ")));
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
    fn unknown_names_and_options_are_refused_by_name() {
        let err = find("Chian").unwrap_err().to_string();
        assert!(err.contains("Chian") && err.contains("Chain") && err.contains("SixArms"), "{err}");
        let err = build("Chain", &EnvOptions { noise: Some(0.1), ..Default::default() }).unwrap_err().to_string();
        assert!(err.contains("noise"), "{err}");
        assert!(build("Chain", &EnvOptions { discount: Some(1.5), ..Default::default() }).is_err());
        assert!(build("PuddleWorld", &EnvOptions { noise: Some(0.0), ..Default::default() }).is_ok());
    }
}
