//! Building agents by name from a parameter map: the one place that knows every agent kind, used
//! by the Python bindings (and any other front end).

use std::collections::BTreeMap;

use super::bamcp::Bamcp;
use super::beb::Beb;
use super::bfs3::Bfs3;
use super::egreedy::EGreedy;
use super::formula_agent::FormulaAgent;
use super::opps::{OppsDs, DEFAULT_C as OPPS_DEFAULT_C};
use super::optimal::Optimal;
use super::psrl::Psrl;
use super::random::RandomAgent;
use super::sboss::Sboss;
use super::softmax::SoftMax;
use crate::agent::Agent;
use crate::error::Result;
use crate::formula::{parse_formula_list, set::shipped_set, Formula};
use crate::invalid;

pub use crate::options::ParamValue;

/// Named parameters of one agent.
pub type Params = BTreeMap<String, ParamValue>;

/// The kinds [`build`] knows, with their parameter names.
pub const AGENT_KINDS: &[(&str, &[&str])] = &[
    ("random", &[]),
    ("egreedy", &["epsilon"]),
    ("softmax", &["tau", "compat"]),
    ("beb", &["beta", "compat"]),
    ("formula", &["formula", "compat"]),
    ("oppsds", &["formulas", "n_draws", "c", "compat"]),
    ("sboss", &["epsilon", "delta", "compat"]),
    ("psrl", &["k"]),
    ("optimal", &[]),
    ("bamcp", &["k", "depth"]),
    ("bfs3", &["k", "c", "depth"]),
];

struct Reader<'a> {
    kind: &'a str,
    params: &'a Params,
}

impl Reader<'_> {
    fn float(&self, key: &str) -> Result<f64> {
        match self.params.get(key) {
            Some(ParamValue::Float(v)) => Ok(*v),
            Some(ParamValue::Int(v)) => Ok(*v as f64),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be a number, got {other:?}", self.kind)),
            None => Err(invalid!("agent '{}': missing parameter '{key}'", self.kind)),
        }
    }

    fn float_or(&self, key: &str, default: f64) -> Result<f64> {
        if self.params.contains_key(key) {
            self.float(key)
        } else {
            Ok(default)
        }
    }

    fn int(&self, key: &str) -> Result<i64> {
        match self.params.get(key) {
            Some(ParamValue::Int(v)) => Ok(*v),
            Some(ParamValue::Float(v)) if v.fract() == 0.0 && v.abs() < 9e15 => Ok(*v as i64),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be an integer, got {other:?}", self.kind)),
            None => Err(invalid!("agent '{}': missing parameter '{key}'", self.kind)),
        }
    }

    fn text(&self, key: &str) -> Result<&str> {
        match self.params.get(key) {
            Some(ParamValue::Text(v)) => Ok(v),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be a string, got {other:?}", self.kind)),
            None => Err(invalid!("agent '{}': missing parameter '{key}'", self.kind)),
        }
    }

    fn count(&self, key: &str, default: usize) -> Result<usize> {
        match self.params.get(key) {
            Some(ParamValue::Int(v)) => usize::try_from(*v)
                .map_err(|_| invalid!("agent '{}': parameter '{key}' must be >= 0, got {v}", self.kind)),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be an integer, got {other:?}", self.kind)),
            None => Ok(default),
        }
    }

    /// A non-negative integer; an integral float (e.g. `500.0`) is accepted, a fractional one is not.
    fn count_required(&self, key: &str) -> Result<usize> {
        let value = match self.params.get(key) {
            Some(ParamValue::Int(v)) => *v,
            Some(ParamValue::Float(v)) if v.fract() == 0.0 && v.abs() < 2f64.powi(53) => *v as i64,
            Some(other) => {
                return Err(invalid!("agent '{}': parameter '{key}' must be an integer, got {other:?}", self.kind))
            }
            None => return Err(invalid!("agent '{}': missing parameter '{key}'", self.kind)),
        };
        usize::try_from(value)
            .map_err(|_| invalid!("agent '{}': parameter '{key}' must be a positive integer, got {value}", self.kind))
    }

    fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.params.get(key) {
            Some(ParamValue::Bool(v)) => Ok(*v),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be a boolean, got {other:?}", self.kind)),
            None => Ok(default),
        }
    }
}

/// Builds an untrained agent of `kind` (see [`AGENT_KINDS`]) from `params`.
///
/// * `formula`: `formula` (string, RPN such as `X2 X0 DIV` or infix such as `QUniform / QMean`), `compat`
///   (bool, default false: formula errors count as -inf instead of aborting the run).
/// * `oppsds`: `formulas` (string: `F2`..`F6` for a shipped set, or RPN formulas separated by
///   newlines or `;`), `n_draws` (integer >= 1), `c` (>= 0, default 660), `compat` (bool).
///
/// Unknown kinds and parameters, and invalid values, are errors that name them.
pub fn build(kind: &str, params: &Params) -> Result<Box<dyn Agent>> {
    let Some((_, known)) = AGENT_KINDS.iter().find(|(k, _)| *k == kind) else {
        let names: Vec<&str> = AGENT_KINDS.iter().map(|(k, _)| *k).collect();
        return Err(invalid!("unknown agent '{kind}'; known agents: {}", names.join(", ")));
    };
    if let Some(unknown) = params.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid!("agent '{kind}' has no parameter '{unknown}'; its parameters: [{}]", known.join(", ")));
    }
    let r = Reader { kind, params };
    Ok(match kind {
        "random" => Box::new(RandomAgent::new()),
        "egreedy" => Box::new(EGreedy::new(r.float("epsilon")?)?),
        "softmax" => Box::new(SoftMax::new(r.float("tau")?, r.flag("compat", false)?)?),
        "beb" => Box::new(Beb::new(r.float("beta")?, r.flag("compat", false)?)?),
        "formula" => {
            let formula = Formula::parse_any(r.text("formula")?)
                .map_err(|e| invalid!("agent 'formula': parameter 'formula': {e}"))?;
            Box::new(FormulaAgent::new(formula).with_compat(r.flag("compat", false)?))
        }
        "oppsds" => {
            let spec = r.text("formulas")?.trim();
            let (formulas, label) = if let Some(n) = spec.strip_prefix('F').filter(|n| n.parse::<u8>().is_ok()) {
                (shipped_set(&format!("F{n}"))?, Some(spec))
            } else {
                (parse_formula_list(spec).map_err(|e| invalid!("agent 'oppsds': parameter 'formulas': {e}"))?, None)
            };
            let n_draws = r.int("n_draws")?;
            if n_draws < 1 {
                return Err(invalid!("agent 'oppsds': n_draws must be >= 1, got {n_draws}"));
            }
            let agent =
                OppsDs::new(formulas, n_draws as u64, r.float_or("c", OPPS_DEFAULT_C)?, r.flag("compat", false)?)?;
            Box::new(match label {
                Some(l) => agent.with_label(l),
                None => agent,
            })
        }
        "sboss" => Box::new(Sboss::new(r.float("epsilon")?, r.float("delta")?, r.flag("compat", false)?)?),
        "psrl" => Box::new(Psrl::new(r.count("k", 1)?)?),
        "optimal" => Box::new(Optimal::new()),
        "bamcp" => Box::new(Bamcp::new(r.count_required("k")?, r.count_required("depth")?)?),
        "bfs3" => Box::new(Bfs3::new(r.count_required("k")?, r.count_required("c")?, r.count_required("depth")?)?),
        _ => unreachable!("every kind of AGENT_KINDS is built above"),
    })
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
        assert!(e.contains("n_draws must be >= 1"), "{e}");
        let e = bad(&[("formulas", text("F3")), ("n_draws", ParamValue::Int(10)), ("c", ParamValue::Float(-1.0))]);
        assert!(e.contains("c must be"), "{e}");
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
        for bad in [ParamValue::Int(0), ParamValue::Int(-2), ParamValue::Float(2.0)] {
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
        assert!(e.to_string().contains("'k' must be a positive integer"), "{e}");
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
        assert!(e.to_string().contains("c (branching factor)"), "{e}");
    }
}
