//! The problem registry (`bbrl_core::problems`) and the one name rule (`bbrl_core::names`) for
//! Python: the problems as dicts, a distribution problem's test distribution or prior by name,
//! and the uniform-prior rule applied to any distribution.

use numpy::PyArray3;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::distribution::PyFdm;
use super::{table, to_py};
use bbrl_core::model::fdm::Fdm;
use bbrl_core::problems::{self as registry, Source, StartLaw};

/// The form two registered names are compared in (lower case, without `-` and `_`): every
/// lookup of an agent kind, environment, problem or prior compares these.
#[pyfunction]
fn name_key(name: &str) -> String {
    bbrl_core::names::key(name)
}

/// How the dicts name a problem's source.
fn source_name(spec: &registry::ProblemSpec) -> &'static str {
    match spec.source {
        Source::Distribution { .. } => "distribution",
        Source::Environment(_) => "environment",
    }
}

/// Every problem, distributions first: name, long_name, summary, source ("distribution" or
/// "environment"), priors (names; empty for an environment), n_states (None: continuous),
/// n_actions, reward_range (low, high), horizon (None: none), start ({"kind": "state", "state":
/// s}, {"kind": "uniform"}, {"kind": "law", "probabilities": [...]} or {"kind": "simulator"}) and
/// discount (None: the experiment's).
#[pyfunction]
fn problems(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    registry::all()
        .iter()
        .map(|spec| {
            let facts = spec.facts().map_err(to_py)?;
            let entry = PyDict::new(py);
            entry.set_item("name", spec.name)?;
            entry.set_item("long_name", spec.long_name)?;
            entry.set_item("summary", spec.summary)?;
            entry.set_item("source", source_name(spec))?;
            entry.set_item("priors", spec.priors().into_iter().map(|(name, _)| name).collect::<Vec<_>>())?;
            entry.set_item("n_states", facts.n_states)?;
            entry.set_item("n_actions", facts.n_actions)?;
            entry.set_item("reward_range", facts.reward_range)?;
            entry.set_item("horizon", facts.horizon)?;
            let start = PyDict::new(py);
            match &facts.start {
                StartLaw::State(s) => {
                    start.set_item("kind", "state")?;
                    start.set_item("state", s)?;
                }
                StartLaw::Uniform => start.set_item("kind", "uniform")?,
                StartLaw::Law(p) => {
                    start.set_item("kind", "law")?;
                    start.set_item("probabilities", p.clone())?;
                }
                StartLaw::Simulator => start.set_item("kind", "simulator")?,
            }
            entry.set_item("start", start)?;
            entry.set_item("discount", facts.discount)?;
            Ok(entry)
        })
        .collect()
}

/// Every problem's name, source ("distribution" or "environment") and priors (names), in the order
/// of `problems`: what a name lookup needs, without building the environments to describe them
/// (`problems` builds each one, Taxi's tables included: a quarter of a second).
#[pyfunction]
fn problem_names() -> Vec<(&'static str, &'static str, Vec<String>)> {
    registry::all()
        .iter()
        .map(|spec| (spec.name, source_name(spec), spec.priors().into_iter().map(|(name, _)| name).collect()))
        .collect()
}

/// theta, rewards, the initial state (-1: random), the name and the long name of a distribution.
type NamedTables<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>, i64, String, String);

fn named_tables<'py>(py: Python<'py>, fdm: &Fdm, name: String, long_name: String) -> NamedTables<'py> {
    let (s, a) = (fdm.n_states(), fdm.n_actions());
    let start = fdm.initial_state().map_or(-1, |s| s as i64);
    (table(py, fdm.theta(), s, a), table(py, fdm.rewards(), s, a), start, name, long_name)
}

/// A distribution problem's test distribution or prior by name (any spelling of the name rule:
/// GC, ugc, U-Grid...).
#[pyfunction]
fn problem_distribution<'py>(py: Python<'py>, name: &str) -> PyResult<NamedTables<'py>> {
    let found = registry::distribution(name).map_err(to_py)?;
    Ok(named_tables(py, &found.fdm, found.name, found.long_name))
}

/// The uniform prior of `distribution`, named from `name` and `long_name` (the registry's rule).
#[pyfunction]
fn uniform_prior<'py>(py: Python<'py>, distribution: &PyFdm, name: &str, long_name: &str) -> NamedTables<'py> {
    let (name, long_name) = registry::uniform_names(name, long_name);
    named_tables(py, &registry::uniform_prior(&distribution.inner), name, long_name)
}

/// Adds this file's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(name_key, m)?)?;
    m.add_function(wrap_pyfunction!(problems, m)?)?;
    m.add_function(wrap_pyfunction!(problem_names, m)?)?;
    m.add_function(wrap_pyfunction!(problem_distribution, m)?)?;
    m.add_function(wrap_pyfunction!(uniform_prior, m)?)?;
    Ok(())
}
