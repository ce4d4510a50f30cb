//! Building agents by name from a parameter map: the one place that knows every agent kind, used
//! by the Python bindings (and any other front end).

use std::collections::BTreeMap;

use super::{Agent, Bamcp, Beb, Bfs3, EGreedy, RandomAgent, SoftMax};
use crate::error::Result;
use crate::invalid;

/// A parameter value as a front end hands it over.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Float(f64),
    Int(i64),
    Bool(bool),
    Text(String),
}

/// Named parameters of one agent.
pub type Params = BTreeMap<String, ParamValue>;

/// The kinds [`build`] knows, with their parameter names.
pub const AGENT_KINDS: &[(&str, &[&str])] = &[
    ("random", &[]),
    ("egreedy", &["epsilon"]),
    ("softmax", &["tau", "compat"]),
    ("beb", &["beta", "compat"]),
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

    /// An integer >= 0 (the agent checks its own lower bound); an integral float such as `500.0`
    /// is accepted, a fractional one is not.
    fn count(&self, key: &str) -> Result<usize> {
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

/// Builds an untrained agent of `kind` (one of [`AGENT_KINDS`]) from `params`.
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
        "bamcp" => Box::new(Bamcp::new(r.count("k")?, r.count("depth")?)?),
        "bfs3" => Box::new(Bfs3::new(r.count("k")?, r.count("c")?, r.count("depth")?)?),
        _ => unreachable!("every kind of AGENT_KINDS is built above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, ParamValue)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
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
