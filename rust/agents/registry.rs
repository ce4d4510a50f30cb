//! Building agents by name from a parameter map: the one place that knows every agent kind, used
//! by the Python bindings (and any other front end).

use std::collections::BTreeMap;

use super::{Agent, Beb, EGreedy, Optimal, Psrl, RandomAgent, Sboss, SoftMax};
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
    ("sboss", &["epsilon", "delta", "compat"]),
    ("psrl", &["k"]),
    ("optimal", &[]),
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

    fn count(&self, key: &str, default: usize) -> Result<usize> {
        match self.params.get(key) {
            Some(ParamValue::Int(v)) => usize::try_from(*v)
                .map_err(|_| invalid!("agent '{}': parameter '{key}' must be >= 0, got {v}", self.kind)),
            Some(other) => Err(invalid!("agent '{}': parameter '{key}' must be an integer, got {other:?}", self.kind)),
            None => Ok(default),
        }
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
        "sboss" => Box::new(Sboss::new(r.float("epsilon")?, r.float("delta")?, r.flag("compat", false)?)?),
        "psrl" => Box::new(Psrl::new(r.count("k", 1)?)?),
        "optimal" => Box::new(Optimal::new()),
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
}
