//! The registries through the core's public API alone (what any front end sees): every example
//! setting of every agent kind builds and runs the protocol; every registered name (kinds,
//! environments, problems and priors) is found in every spelling of the one name rule; every
//! named environment builds with its defaults, steps within its reward bounds, and refuses what it
//! does not take; every problem's facts read.

use bbrl_core::agent::Setting;
use bbrl_core::agents::registry::find;
use bbrl_core::agents::{build, ParamType, Params, KINDS};
use bbrl_core::envs::registry::{self, ENVIRONMENTS};
use bbrl_core::envs::{AnyEnv, Env, EnvOptions};
use bbrl_core::evaluators::protocol::Experiment;
use bbrl_core::model::problems;
use bbrl_core::names;
use bbrl_core::rng::stream;

/// Spellings of a registered name that the one name rule must take to it.
fn spellings(name: &str) -> Vec<String> {
    let mut with_marks = String::new();
    for (i, c) in name.chars().enumerate() {
        with_marks.push(c);
        with_marks.push(if i % 2 == 0 { '_' } else { '-' });
    }
    vec![name.to_string(), name.to_lowercase(), name.to_uppercase(), with_marks, name.replace(['-', '_'], "")]
}

#[test]
fn every_example_of_every_kind_builds_and_runs_the_protocol() {
    let gc = problems::generalized_chain();
    let setting = Setting { gamma: 0.95, horizon: 10 };
    let experiment = Experiment::new(gc.clone(), 3, setting, 7).unwrap();
    for spec in KINDS {
        assert!(!spec.examples.is_empty(), "{}: no example setting", spec.kind);
        for example in spec.examples {
            let mut agent = build(spec.kind, &example.params()).unwrap_or_else(|e| panic!("{}: {e}", spec.kind));
            experiment.learn_offline(agent.as_mut(), &gc).unwrap();
            let outcome = experiment.run(agent.as_ref(), Some(1), None).unwrap();
            assert_eq!(outcome.returns.len(), 3, "{}", spec.kind);
            assert!(outcome.returns.iter().all(|r| r.is_finite()), "{}", spec.kind);
        }
        // The first example sets every required parameter; together they set every parameter.
        let first = spec.examples[0].params();
        for param in spec.params {
            assert!(param.default.is_some() || first.contains_key(param.name), "{}.{}", spec.kind, param.name);
            let set = spec.examples.iter().any(|e| e.params.iter().any(|(name, _)| *name == param.name));
            assert!(set, "{}.{}: no example sets it", spec.kind, param.name);
        }
    }
}

#[test]
fn every_required_parameter_is_named_when_missing_and_types_are_declared() {
    for spec in KINDS {
        for param in spec.params.iter().filter(|p| p.default.is_none()) {
            let err = build(spec.kind, &Params::new()).err().unwrap().to_string();
            assert!(err.contains("missing parameter"), "{}: {err}", spec.kind);
            assert!(!param.range.describe().is_empty() && !param.doc.is_empty(), "{}.{}", spec.kind, param.name);
        }
        for param in spec.params {
            if param.name == "compat" {
                assert_eq!(param.ty, ParamType::Bool);
            }
        }
    }
    let keys: Vec<String> = KINDS.iter().map(|s| names::key(s.kind)).collect();
    for (i, key) in keys.iter().enumerate() {
        assert!(!keys[..i].contains(key), "two kinds are one name under the name rule: {key}");
    }
}

#[test]
fn every_registered_name_is_found_in_every_spelling() {
    for spec in KINDS {
        for spelling in spellings(spec.kind) {
            assert_eq!(find(&spelling).unwrap().kind, spec.kind, "{spelling}");
            assert!(build(&spelling, &spec.examples[0].params()).is_ok(), "{spelling}");
        }
    }
    for spec in ENVIRONMENTS {
        for spelling in spellings(spec.name) {
            assert_eq!(registry::find(&spelling).unwrap().name, spec.name, "{spelling}");
        }
    }
    for spec in bbrl_core::problems::all() {
        for spelling in spellings(spec.name) {
            assert_eq!(bbrl_core::problems::find(&spelling).unwrap().name, spec.name, "{spelling}");
        }
        for (prior, _) in spec.priors() {
            for spelling in spellings(&prior) {
                assert_eq!(bbrl_core::problems::distribution(&spelling).unwrap().name, prior, "{spelling}");
            }
        }
    }
}

fn check_steps<E: Env>(env: &E, seed: u64) {
    let mut rng = stream(seed, 0, 0);
    let (low, high) = env.reward_bounds();
    let mut state = env.reset(&mut rng);
    for t in 0..200 {
        let step = env.step(&state, t % env.n_actions(), &mut rng);
        assert!(
            low <= step.reward && step.reward <= high,
            "{}: reward {} outside [{low}, {high}]",
            env.name(),
            step.reward
        );
        state = if step.terminal { env.reset(&mut rng) } else { step.next_state };
    }
}

#[test]
fn every_environment_builds_with_its_defaults_and_steps_within_its_bounds() {
    for spec in ENVIRONMENTS {
        let env = registry::build(spec.name, &EnvOptions::default()).unwrap();
        match &env {
            AnyEnv::Finite(e) => {
                assert_eq!(e.name(), spec.name);
                assert_eq!(e.discount(), spec.default_discount);
                check_steps(e.as_ref(), 1);
            }
            AnyEnv::MountainCar(e) => check_steps(e, 2),
            AnyEnv::PuddleWorld(e) => check_steps(e, 3),
        }
    }
    let with_discount = EnvOptions { discount: Some(0.5), ..EnvOptions::default() };
    let AnyEnv::Finite(chain) = registry::build("Chain", &with_discount).unwrap() else { panic!("Chain is finite") };
    assert_eq!(chain.discount(), 0.5);
    assert!(registry::build("Chain", &EnvOptions { time_limit: Some(10), ..EnvOptions::default() }).is_err());
}

#[test]
fn every_problem_reads_its_facts_and_every_environment_is_a_problem() {
    let all = bbrl_core::problems::all();
    for env in ENVIRONMENTS {
        let problem = all.iter().find(|p| p.name == env.name).unwrap_or_else(|| panic!("{} is no problem", env.name));
        assert_eq!(problem.long_name, env.long_name);
        let facts = problem.facts().unwrap();
        let AnyEnv::Finite(built) = registry::build(env.name, &EnvOptions::default()).unwrap() else {
            assert!(facts.n_states.is_none() && env.state_box.len() == 2, "{}", env.name);
            continue;
        };
        assert_eq!(facts.reward_range, built.reward_bounds(), "{}", env.name);
        assert_eq!(facts.horizon, built.time_limit(), "{}", env.name);
        assert!(env.state_box.is_empty() && env.default_policy.is_none(), "{}", env.name);
    }
    for problem in &all {
        let facts = problem.facts().unwrap();
        assert!(facts.reward_range.0 <= facts.reward_range.1 && facts.n_actions >= 1, "{}", problem.name);
        if let Some(test) = problem.test_distribution() {
            assert_eq!(facts.n_states, Some(test.n_states()), "{}", problem.name);
        }
    }
}
