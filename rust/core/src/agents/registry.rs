//! The agent registry: every agent kind, in the order tables and figures show them. Adding an
//! agent is its own file (with its [`KindSpec`]) and one line here; the bindings, the command line,
//! the Python records' checks, the cost planner and the report read this list.

use super::spec::{KindSpec, Params};
use super::{
    bamcp, beb, bfs3, egreedy, formula_agent, mbie_eb, opps, opsrl, optimal, optql, psrl, qlearning, random, rlsvi,
    rmax, sboss, softmax, ucbvi, ucfh, ucrl2,
};
use crate::agent::{Agent, Setting};
use crate::error::Result;
use crate::invalid;

use super::opps::OppsDs;

/// Every agent kind.
pub const KINDS: &[KindSpec] = &[
    random::SPEC,
    egreedy::SPEC,
    softmax::SPEC,
    beb::SPEC,
    bamcp::SPEC,
    bfs3::SPEC,
    sboss::SPEC,
    psrl::SPEC,
    optimal::SPEC,
    formula_agent::SPEC,
    opps::SPEC,
    ucrl2::SPEC,
    ucbvi::SPEC,
    ucfh::SPEC,
    mbie_eb::SPEC,
    rmax::SPEC,
    opsrl::SPEC,
    rlsvi::SPEC,
    optql::SPEC,
    qlearning::SPEC,
];

/// The spec of `kind` (any spelling of the name rule, [`crate::names`]), or an error listing the
/// kinds.
pub fn find(kind: &str) -> Result<&'static KindSpec> {
    crate::names::find(KINDS, kind, |spec| spec.kind).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|spec| spec.kind).collect();
        invalid!("unknown agent '{kind}'; known agents: {}", names.join(", "))
    })
}

/// Builds an untrained agent of `kind` (see [`KINDS`]) from `params`; a parameter left out takes
/// its default. Unknown kinds and parameters, and invalid values, are errors that name them.
pub fn build(kind: &str, params: &Params) -> Result<Box<dyn Agent>> {
    let spec = find(kind)?;
    if let Some(unknown) = params.keys().find(|k| spec.param(k).is_none()) {
        let known: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
        let kind = spec.kind;
        return Err(invalid!("agent '{kind}' has no parameter '{unknown}'; its parameters: [{}]", known.join(", ")));
    }
    (spec.build)(&super::spec::Reader { spec, params })
}

/// The validate-only path: builds the agent of `kind` from `params` (checked against its spec)
/// and checks the memory its parameters size for a prior of `n_states` x `n_actions` and
/// `setting` against the memory rule, without allocating any of it; returns the agent's name.
/// A huge but valid size is answered at once, as a run would before learning offline.
pub fn check(kind: &str, params: &Params, n_states: usize, n_actions: usize, setting: Setting) -> Result<String> {
    let setting = Setting::checked(setting.gamma, setting.horizon)?;
    let agent = build(kind, params)?;
    crate::agent::check_memory(agent.as_ref(), n_states, n_actions, setting)?;
    Ok(agent.name())
}

/// Rebuilds an agent from its [`Agent::saved_text`] (only OPPS-DS can be saved); the first line
/// names the format.
pub fn load_text(text: &str) -> Result<Box<dyn Agent>> {
    match text.lines().next().map(str::trim) {
        Some(first) if first.starts_with("bbrl-opps-ds") => Ok(Box::new(OppsDs::from_text(text)?)),
        Some(first) => Err(invalid!("not a saved agent: unknown format '{first}'")),
        None => Err(invalid!("not a saved agent: empty text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::planning_test_support::assert_no_allocation_per_step;
    use crate::agents::spec::ParamValue;

    fn params(pairs: &[(&str, ParamValue)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    /// The agents that re-solve a model as they learn (mean-model Q-iteration, Guez value
    /// iteration on the posterior, sampled models) allocate nothing per step, first solve included.
    #[test]
    fn model_based_agents_allocate_nothing_per_step() {
        for (kind, pairs) in [
            ("egreedy", vec![("epsilon", ParamValue::Float(0.1))]),
            ("softmax", vec![("tau", ParamValue::Float(1.0))]),
            ("beb", vec![("beta", ParamValue::Float(1.0))]),
            ("psrl", vec![]),
            ("formula", vec![("formula", ParamValue::Text("X0 X1 ADD2".into()))]),
        ] {
            assert_no_allocation_per_step(build(kind, &params(&pairs)).unwrap().as_mut());
        }
    }

    /// `sizes_memory` says which parameters size an agent's memory: raising one of them raises
    /// the estimate, raising any other parameter leaves it as it was; and a size far beyond any
    /// machine is refused by the validate-only check, naming the parameters.
    #[test]
    fn the_parameters_that_size_memory_are_the_listed_ones() {
        let setting = Setting { gamma: 0.95, horizon: 50 };
        for spec in KINDS {
            for example in spec.examples {
                let base = example.params();
                let agent = build(spec.kind, &base).unwrap();
                let before = agent.parameter_memory(5, 3, setting).bytes;
                for p in spec.params.iter().filter(|p| p.ty == crate::agents::spec::ParamType::Int) {
                    let mut raised = base.clone();
                    let value = match base.get(p.name) {
                        Some(ParamValue::Int(v)) => *v,
                        _ => 0,
                    };
                    raised.insert(p.name.to_string(), ParamValue::Int(value.max(1) * 1000));
                    let Ok(bigger) = build(spec.kind, &raised) else { continue };
                    let after = bigger.parameter_memory(5, 3, setting).bytes;
                    if spec.sizes_memory.contains(&p.name) {
                        assert!(after > before, "{} {}: {before} -> {after}", spec.kind, p.name);
                        raised.insert(p.name.to_string(), ParamValue::Int(1 << 40));
                        let e = check(spec.kind, &raised, 5, 3, setting).unwrap_err().to_string();
                        assert!(e.contains("above the limit") && e.contains(p.name), "{e}");
                    } else {
                        assert_eq!(after, before, "{} {} sizes memory but is not listed", spec.kind, p.name);
                    }
                }
            }
        }
    }

    #[test]
    fn builds_known_agents_and_names_errors() {
        assert_eq!(
            build("egreedy", &params(&[("epsilon", ParamValue::Float(0.1))])).unwrap().name(),
            "e-Greedy (epsilon = 0.1)"
        );
        let e = build("egreedy", &params(&[("epsilon", ParamValue::Float(1.5))])).err().unwrap();
        assert!(e.to_string().contains("epsilon"), "{e}");
        let e = build("egreedy", &params(&[("eps", ParamValue::Float(0.1))])).err().unwrap();
        assert!(e.to_string().contains("'eps'"), "{e}");
        let e = build("nope", &Params::new()).err().unwrap();
        assert!(e.to_string().contains("unknown agent 'nope'"), "{e}");
        let e = build("softmax", &params(&[("tau", ParamValue::Float(0.0))])).err().unwrap();
        assert!(e.to_string().contains("tau"), "{e}");
        let e = build("beb", &params(&[("beta", ParamValue::Float(-1.0))])).err().unwrap();
        assert!(e.to_string().contains("beta"), "{e}");
        let e =
            build("beb", &params(&[("beta", ParamValue::Float(1.0)), ("compat", ParamValue::Int(1))])).err().unwrap();
        assert!(e.to_string().contains("boolean"), "{e}");
    }

    #[test]
    fn builds_formula_agents_and_names_errors() {
        let text = |s: &str| ParamValue::Text(s.to_string());
        let a = build("formula", &params(&[("formula", text("QUniform / QMean"))])).unwrap();
        assert_eq!(a.name(), "Formula (X2 X0 DIV)");
        let a = build("formula", &params(&[("formula", text("X0 X1 MAX2")), ("compat", ParamValue::Bool(true))]));
        assert_eq!(a.unwrap().name(), "Formula (X0 X1 MAX2, compat)");
        let e = build("formula", &params(&[("formula", text("X0 FOO"))])).err().unwrap();
        assert!(e.to_string().contains("'FOO'"), "{e}");
        let e = build("formula", &params(&[("formula", text("X0 SUB"))])).err().unwrap();
        assert!(e.to_string().contains("needs 2 operand"), "{e}");
        let e = build("formula", &params(&[("formula", ParamValue::Float(1.0))])).err().unwrap();
        assert!(e.to_string().contains("must be a string"), "{e}");

        let a = build("oppsds", &params(&[("formulas", text("F3")), ("n_draws", ParamValue::Int(50))])).unwrap();
        assert_eq!(a.name(), "OPPS-DS (F3, n_draws = 50, c = 660)");
        let a = build(
            "oppsds",
            &params(&[
                ("formulas", text("X0; X1 ABS\nX2 X0 DIV")),
                ("n_draws", ParamValue::Int(5)),
                ("c", ParamValue::Float(1.5)),
            ]),
        )
        .unwrap();
        assert_eq!(a.name(), "OPPS-DS (3 formulas, n_draws = 5, c = 1.5)");
        let bad = |p: &[(&str, ParamValue)]| build("oppsds", &params(p)).err().unwrap().to_string();
        let e = bad(&[("formulas", text("F3")), ("n_draws", ParamValue::Int(0))]);
        assert!(e.contains("'n_draws' must be >= 1"), "{e}");
        let e = bad(&[("formulas", text("F3")), ("n_draws", ParamValue::Int(10)), ("c", ParamValue::Float(-1.0))]);
        assert!(e.contains("'c' must be >= 0"), "{e}");
        let e = bad(&[("formulas", text("F9")), ("n_draws", ParamValue::Int(10))]);
        assert!(e.contains("unknown formula set 'F9'"), "{e}");
        let e = bad(&[("formulas", text("X0; X0 X1")), ("n_draws", ParamValue::Int(10))]);
        assert!(e.contains("'X0 X1' is not a valid formula"), "{e}");
        let e = bad(&[("formulas", text("F3")), ("n_draws", ParamValue::Float(2.5))]);
        assert!(e.contains("must be an integer"), "{e}");
        let e = bad(&[("formulas", text("F3"))]);
        assert!(e.contains("missing parameter 'n_draws'"), "{e}");

        assert!(build("formula", &params(&[("formula", text("X0"))])).unwrap().saved_text().is_none());
        assert!(load_text("bbrl-something 1\n").err().unwrap().to_string().contains("unknown format"));
        assert!(load_text("").is_err());
    }

    #[test]
    fn builds_sboss_psrl_and_optimal() {
        let sboss = params(&[("epsilon", ParamValue::Float(1e-3)), ("delta", ParamValue::Int(7))]);
        assert_eq!(build("sboss", &sboss).unwrap().name(), "SBOSS (epsilon = 0.001, delta = 7)");
        let mut compat = sboss.clone();
        compat.insert("compat".into(), ParamValue::Bool(true));
        assert_eq!(build("sboss", &compat).unwrap().name(), "SBOSS (epsilon = 0.001, delta = 7, compat)");
        let e = build("sboss", &params(&[("epsilon", ParamValue::Float(1e-3))])).err().unwrap();
        assert!(e.to_string().contains("missing parameter 'delta'"), "{e}");
        let e = build("sboss", &params(&[("epsilon", ParamValue::Float(0.0)), ("delta", ParamValue::Float(1.0))]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("epsilon"), "{e}");

        assert_eq!(build("psrl", &Params::new()).unwrap().name(), "PSRL (k = 1)");
        assert_eq!(build("psrl", &params(&[("k", ParamValue::Int(10))])).unwrap().name(), "PSRL (k = 10)");
        // An integral float is an integer (as for every integer parameter); a fractional one is not.
        assert_eq!(build("psrl", &params(&[("k", ParamValue::Float(2.0))])).unwrap().name(), "PSRL (k = 2)");
        for bad in [ParamValue::Int(0), ParamValue::Int(-2), ParamValue::Float(2.5)] {
            let e = build("psrl", &params(&[("k", bad)])).err().unwrap();
            assert!(e.to_string().contains('k'), "{e}");
        }

        let optimal = build("optimal", &Params::new()).unwrap();
        assert!(optimal.is_oracle());
        assert_eq!(optimal.name(), "Optimal (oracle: sees the true MDP)");
    }

    #[test]
    fn planning_agents_take_integer_parameters() {
        let bamcp = build("bamcp", &params(&[("k", ParamValue::Int(500)), ("depth", ParamValue::Float(15.0))]));
        assert_eq!(bamcp.unwrap().name(), "BAMCP (K = 500, depth = 15)");
        let bfs3 = build(
            "bfs3",
            &params(&[("k", ParamValue::Float(500.0)), ("c", ParamValue::Int(15)), ("depth", ParamValue::Int(15))]),
        );
        assert_eq!(bfs3.unwrap().name(), "BFS3 (K = 500, C = 15, depth = 15)");
        let e =
            build("bamcp", &params(&[("k", ParamValue::Float(2.5)), ("depth", ParamValue::Int(15))])).err().unwrap();
        assert!(e.to_string().contains("'k' must be an integer"), "{e}");
        let e = build("bamcp", &params(&[("k", ParamValue::Int(-1)), ("depth", ParamValue::Int(15))])).err().unwrap();
        assert!(e.to_string().contains("'k' must be >= 1, got -1"), "{e}");
        let e = build("bamcp", &params(&[("k", ParamValue::Int(10)), ("depth", ParamValue::Int(0))])).err().unwrap();
        assert!(e.to_string().contains("depth"), "{e}");
        let e = build("bfs3", &params(&[("k", ParamValue::Int(10)), ("depth", ParamValue::Int(5))])).err().unwrap();
        assert!(e.to_string().contains("missing parameter 'c'"), "{e}");
        let e = build(
            "bfs3",
            &params(&[("k", ParamValue::Int(10)), ("c", ParamValue::Int(0)), ("depth", ParamValue::Int(5))]),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("'c' must be >= 1, got 0"), "{e}");
    }
}
