//! What the registry knows of each agent kind: its parameters with their types, defaults and
//! ranges, how its cost grows with them, and how it is built. Each agent file declares its own
//! [`KindSpec`]; [`super::registry`] lists them. Front ends (the Python records, the command
//! line, the cost planner, the report's order) read these specs instead of restating them.

use std::collections::BTreeMap;

use crate::agent::Agent;
use crate::error::Result;
use crate::invalid;

pub use crate::options::{Bound, ParamType, ParamValue, Range};

/// Named parameters of one agent.
pub type Params = BTreeMap<String, ParamValue>;

/// One parameter of an agent kind.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: ParamType,
    /// The value when none is given; `None`: the parameter is required.
    pub default: Option<ParamDefault>,
    /// The values allowed: [`Reader`] enforces it before the agent is built, and front ends show
    /// it ([`Range::describe`]) and read its bounds.
    pub range: Range,
    /// What it is, with its unit.
    pub doc: &'static str,
}

/// A parameter value written in a spec: a default, or a value of an [`Example`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamDefault {
    Float(f64),
    Int(i64),
    Bool(bool),
    /// A string (a default of a choice parameter such as the baselines' `rewards`, or an example's value).
    Text(&'static str),
}

impl ParamDefault {
    /// The value as the builder reads it.
    pub fn to_value(self) -> ParamValue {
        match self {
            ParamDefault::Float(v) => ParamValue::Float(v),
            ParamDefault::Int(v) => ParamValue::Int(v),
            ParamDefault::Bool(v) => ParamValue::Bool(v),
            ParamDefault::Text(v) => ParamValue::Text(v.to_string()),
        }
    }
}

/// A setting of an agent kind that the registry shows and every registry-wide test runs (the
/// parameters it leaves out take their defaults).
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// What the setting shows.
    pub doc: &'static str,
    pub params: &'static [(&'static str, ParamDefault)],
}

impl Example {
    /// The setting's parameters, as [`super::registry::build`] takes them.
    pub fn params(&self) -> Params {
        self.params.iter().map(|(name, value)| (name.to_string(), value.to_value())).collect()
    }
}

/// The `compat` flag most agents share: reproduce the original library's quirks.
pub const COMPAT: ParamSpec = ParamSpec {
    name: "compat",
    ty: ParamType::Bool,
    default: Some(ParamDefault::Bool(false)),
    range: Range::Any,
    doc: "reproduce the original library's behaviour where it deviates from the intended algorithm",
};

/// One agent kind of the registry.
#[derive(Clone, Copy)]
pub struct KindSpec {
    /// The name front ends use (`--agent KIND`, cell ids).
    pub kind: &'static str,
    /// The name tables and figures show.
    pub display: &'static str,
    pub params: &'static [ParamSpec],
    /// Relative online work per decision: the product of `parameter^exponent` (empty: 1).
    pub online_units: &'static [(&'static str, f64)],
    /// Relative offline work: the product of `parameter^exponent`, where `"horizon"` stands for the
    /// training horizon (empty: a constant).
    pub offline_units: &'static [(&'static str, f64)],
    /// The parameters that size the agent's memory ([`crate::agent::Agent::parameter_memory`]):
    /// a value too large for the machine is refused before anything is allocated, and the
    /// validate-only check ([`super::registry::check`]) takes them at any size.
    pub sizes_memory: &'static [&'static str],
    /// Example settings. The first runs in seconds (a few MDPs of GC at horizons of tens of steps,
    /// and `bbrl quick`'s 100 MDPs of 250 steps in well under a minute): the quick benchmark, the
    /// conformance, parity and property tests run it. The others exercise the main options; together
    /// the examples set every parameter.
    pub examples: &'static [Example],
    /// Why `bbrl quick` leaves the kind out (`None`: it runs the first example).
    pub not_in_quick: Option<&'static str>,
    /// Whether the kind is a regret-minimising exploration baseline of the episodic literature
    /// (optimism, posterior sampling without a Bayes-adaptive plan, the ε-greedy floor): `bbrl
    /// regret-study` runs every kind that says so, beside PSRL and the Bayes-adaptive planners.
    pub episodic_baseline: bool,
    /// Builds an untrained agent from parameters already checked against `params`.
    pub build: fn(&Reader<'_>) -> Result<Box<dyn Agent>>,
}

impl std::fmt::Debug for KindSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindSpec").field("kind", &self.kind).field("params", &self.params).finish()
    }
}

impl KindSpec {
    /// The spec of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Typed access to an agent's parameters; a missing parameter takes its spec's default, and a
/// missing required one is an error naming it.
pub struct Reader<'a> {
    pub(super) spec: &'a KindSpec,
    pub(super) params: &'a Params,
}

impl Reader<'_> {
    fn missing(&self, key: &str) -> crate::error::BbrlError {
        invalid!("agent '{}': missing parameter '{key}'", self.spec.kind)
    }

    fn wrong(&self, key: &str, what: &str, got: &ParamValue) -> crate::error::BbrlError {
        invalid!("agent '{}': parameter '{key}' must be {what}, got {got:?}", self.spec.kind)
    }

    fn default(&self, key: &str) -> Option<ParamDefault> {
        self.spec.param(key).and_then(|p| p.default)
    }

    /// The spec's range of `key` enforced on a number: an error naming the parameter, its range
    /// and the value (NaN and the infinities are never in a range).
    fn in_range(&self, key: &str, v: f64, shown: impl std::fmt::Display) -> Result<f64> {
        match self.spec.param(key).map(|p| p.range) {
            Some(range @ Range::Number { .. }) if !range.contains(v) => Err(invalid!(
                "agent '{}': parameter '{key}' must be {}, got {shown}",
                self.spec.kind,
                range.requirement()
            )),
            _ => Ok(v),
        }
    }

    /// A number (an integer is accepted) within the parameter's range.
    pub fn float(&self, key: &str) -> Result<f64> {
        let v = match (self.params.get(key), self.default(key)) {
            (Some(ParamValue::Float(v)), _) => *v,
            (Some(ParamValue::Int(v)), _) => *v as f64,
            (Some(ParamValue::UInt(v)), _) => *v as f64,
            (Some(other), _) => return Err(self.wrong(key, "a number", other)),
            (None, Some(ParamDefault::Float(v))) => v,
            (None, _) => return Err(self.missing(key)),
        };
        self.in_range(key, v, v)
    }

    /// A non-negative integer within the parameter's range; an integral float (e.g. `500.0`) is
    /// accepted, a fractional one is not.
    pub fn count(&self, key: &str) -> Result<usize> {
        let value = match (self.params.get(key), self.default(key)) {
            (Some(ParamValue::Int(v)), _) => *v,
            (Some(ParamValue::UInt(v)), _) => i64::try_from(*v).unwrap_or(i64::MAX),
            (Some(ParamValue::Float(v)), _) if v.fract() == 0.0 && v.abs() < 2f64.powi(53) => *v as i64,
            (Some(other), _) => return Err(self.wrong(key, "an integer", other)),
            (None, Some(ParamDefault::Int(v))) => v,
            (None, _) => return Err(self.missing(key)),
        };
        self.in_range(key, value as f64, value)?;
        usize::try_from(value).map_err(|_| {
            invalid!("agent '{}': parameter '{key}' must be a positive integer, got {value}", self.spec.kind)
        })
    }

    /// A string; one of the parameter's choices when its range lists them.
    pub fn text(&self, key: &str) -> Result<&str> {
        let text = match (self.params.get(key), self.default(key)) {
            (Some(ParamValue::Text(v)), _) => v.as_str(),
            (Some(other), _) => return Err(self.wrong(key, "a string", other)),
            (None, Some(ParamDefault::Text(v))) => v,
            (None, _) => return Err(self.missing(key)),
        };
        match self.spec.param(key).map(|p| p.range) {
            Some(range @ Range::Choices(names)) if !names.contains(&text) => Err(invalid!(
                "agent '{}': parameter '{key}' must be {}, got {text:?}",
                self.spec.kind,
                range.requirement()
            )),
            _ => Ok(text),
        }
    }

    /// A boolean.
    pub fn flag(&self, key: &str) -> Result<bool> {
        match (self.params.get(key), self.default(key)) {
            (Some(ParamValue::Bool(v)), _) => Ok(*v),
            (Some(other), _) => Err(self.wrong(key, "a boolean", other)),
            (None, Some(ParamDefault::Bool(v))) => Ok(v),
            (None, _) => Err(self.missing(key)),
        }
    }
}
