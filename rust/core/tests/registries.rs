//! The registries through the core's public API alone (what any front end sees): every agent kind
//! builds from its spec and runs the protocol; every named environment builds with its defaults,
//! steps within its reward bounds, and refuses what it does not take.

use bbrl_core::agent::Setting;
use bbrl_core::agents::{build, ParamType, ParamValue, Params, KINDS};
use bbrl_core::envs::registry::{self, ENVIRONMENTS};
use bbrl_core::envs::{AnyEnv, Env, EnvOptions};
use bbrl_core::evaluators::protocol::Experiment;
use bbrl_core::model::problems;
use bbrl_core::rng::stream;

/// A valid value for each required parameter (kinds whose parameters all have defaults need none).
fn required_value(kind: &str, name: &str) -> ParamValue {
    match (kind, name) {
        ("egreedy", "epsilon") => ParamValue::Float(0.1),
        ("softmax", "tau") => ParamValue::Float(1.0),
        ("beb", "beta") => ParamValue::Float(1.0),
        ("formula", "formula") => ParamValue::Text("X0".into()),
        ("oppsds", "formulas") => ParamValue::Text("F2".into()),
        ("oppsds", "n_draws") => ParamValue::Int(5),
        ("sboss", "epsilon") => ParamValue::Float(1e-3),
        ("sboss", "delta") => ParamValue::Float(7.0),
        ("bamcp" | "bfs3", "k") => ParamValue::Int(4),
        ("bfs3", "c") => ParamValue::Int(2),
        ("bamcp" | "bfs3", "depth") => ParamValue::Int(3),
        other => panic!("no test value for the required parameter {other:?}: add one here"),
    }
}

#[test]
fn every_kind_builds_from_its_spec_and_runs_the_protocol() {
    let gc = problems::generalized_chain();
    let setting = Setting { gamma: 0.95, horizon: 10 };
    let experiment = Experiment::new(gc.clone(), 3, setting, 7).unwrap();
    for spec in KINDS {
        let params: Params = spec
            .params
            .iter()
            .filter(|p| p.default.is_none())
            .map(|p| (p.name.to_string(), required_value(spec.kind, p.name)))
            .collect();
        let mut agent = build(spec.kind, &params).unwrap_or_else(|e| panic!("{}: {e}", spec.kind));
        experiment.learn_offline(agent.as_mut(), &gc).unwrap();
        let outcome = experiment.run(agent.as_ref(), Some(1), None).unwrap();
        assert_eq!(outcome.returns.len(), 3, "{}", spec.kind);
        assert!(outcome.returns.iter().all(|r| r.is_finite()), "{}", spec.kind);
    }
}

#[test]
fn every_required_parameter_is_named_when_missing_and_types_are_declared() {
    for spec in KINDS {
        for param in spec.params.iter().filter(|p| p.default.is_none()) {
            let err = build(spec.kind, &Params::new()).err().unwrap().to_string();
            assert!(err.contains("missing parameter"), "{}: {err}", spec.kind);
            assert!(!param.range.is_empty() && !param.doc.is_empty(), "{}.{}", spec.kind, param.name);
        }
        for param in spec.params {
            if param.name == "compat" {
                assert_eq!(param.ty, ParamType::Bool);
            }
        }
    }
    let kinds: Vec<&str> = KINDS.iter().map(|s| s.kind).collect();
    let mut unique = kinds.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), kinds.len(), "kinds must be unique: {kinds:?}");
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
