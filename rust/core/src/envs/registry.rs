//! The environment registry: every named environment, in the order users see them. Adding an
//! environment is its own file (with its [`EnvSpec`]) and one line here.

use super::spec::{AnyEnv, EnvOptions, EnvSpec};
use super::{chain, finite, mountain_car, puddle_world};
use crate::error::Result;
use crate::invalid;

/// Every named environment.
pub const ENVIRONMENTS: &[EnvSpec] = &[
    finite::SIX_ARMS,
    finite::RIVER_SWIM_OSBAND,
    finite::RIVER_SWIM_STREHL,
    chain::SPEC,
    mountain_car::SPEC,
    puddle_world::SPEC,
];

/// The entry named `name` (exact spelling), or an error listing the names.
pub fn find(name: &str) -> Result<&'static EnvSpec> {
    ENVIRONMENTS.iter().find(|spec| spec.name == name).ok_or_else(|| {
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
        return Err(invalid!("{name} takes no {option} (its options: {})", spec.options.join(", ")));
    }
    (spec.build)(options)
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
