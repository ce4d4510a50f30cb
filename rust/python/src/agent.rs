//! Converts `bbrl_core::evaluators::protocol::Learner` (a built-in agent) to the `Agent` class.

use crate::convert::{Count, Seed};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::distribution::PyFdm;
use super::{set_range, to_py, value_of};
use bbrl_core::agent::Setting;
use bbrl_core::agents::spec::ParamDefault;
use bbrl_core::agents::{self, Params};
use bbrl_core::evaluators::protocol::Learner;

/// A built-in agent (`bbrl_core::evaluators::protocol::Learner`): built from its kind and
/// parameters, trained offline, saved. It is stepped through a `Stepper` (see stepper.rs).
#[pyclass(name = "Agent", module = "bbrl._core")]
pub(super) struct PyAgent {
    pub(super) inner: Learner,
}

#[pymethods]
impl PyAgent {
    #[new]
    fn new(kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let converted = params_of(params)?;
        Ok(Self { inner: Learner::new(agents::build(kind, &converted).map_err(to_py)?) })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.agent().name()
    }

    #[getter]
    fn is_oracle(&self) -> bool {
        self.inner.agent().is_oracle()
    }

    /// Offline learning on `prior` outside an experiment; returns (wall, CPU) seconds and the work
    /// counts (one per unit of `work_units()`), all zero for an agent that learns nothing offline.
    fn learn_offline(
        &mut self,
        py: Python<'_>,
        prior: &PyFdm,
        gamma: f64,
        horizon: Count,
        seed: Seed,
    ) -> PyResult<(f64, f64, Vec<u64>)> {
        let horizon = horizon.0;
        let seed = seed.0;
        let (learner, fdm) = (&mut self.inner, &prior.inner);
        let time = py.detach(|| learner.learn_offline(fdm, Setting { gamma, horizon }, seed)).map_err(to_py)?;
        Ok((time.wall_seconds, time.cpu_seconds, time.work.0.to_vec()))
    }

    /// What offline learning decided (e.g. OPPS-DS's chosen formula), as a dict of strings.
    #[getter]
    fn details(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.agent().details().into_iter().collect()
    }

    /// The text from which `load` rebuilds this agent, or None when the agent cannot be saved
    /// (it is then rebuilt from its parameters and retrained).
    fn saved_text(&self) -> Option<String> {
        self.inner.agent().saved_text()
    }

    /// Rebuilds a saved agent, trained on a prior of `n_states` x `n_actions` with `gamma`, `horizon`.
    #[staticmethod]
    fn load(text: &str, n_states: Count, n_actions: Count, gamma: f64, horizon: Count) -> PyResult<Self> {
        let n_states = n_states.0;
        let n_actions = n_actions.0;
        let horizon = horizon.0;
        let agent = agents::load_text(text).map_err(to_py)?;
        Ok(Self { inner: Learner::trained_for(agent, n_states, n_actions, gamma, horizon).map_err(to_py)? })
    }
}

/// The agent registry: per kind, its name, display name, parameters (name, type, default or
/// None when required, doc, sizes_memory and the typed range keys of `set_range`), cost units (online per decision, offline per training), its
/// example settings (doc, params by the core's names; the first runs in seconds) and why `bbrl
/// quick` leaves it out (None: it runs the first example).
#[pyfunction]
fn agent_kinds(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    agents::KINDS
        .iter()
        .map(|spec| {
            let entry = PyDict::new(py);
            entry.set_item("kind", spec.kind)?;
            entry.set_item("display", spec.display)?;
            let params = spec
                .params
                .iter()
                .map(|p| {
                    let param = PyDict::new(py);
                    param.set_item("name", p.name)?;
                    param.set_item("type", p.ty.as_str())?;
                    match p.default {
                        Some(value) => param.set_item("default", spec_value(py, value)?)?,
                        None => param.set_item("default", py.None())?,
                    }
                    param.set_item("required", p.default.is_none())?;
                    set_range(&param, p.range)?;
                    param.set_item("sizes_memory", spec.sizes_memory.contains(&p.name))?;
                    param.set_item("doc", p.doc)?;
                    Ok(param)
                })
                .collect::<PyResult<Vec<_>>>()?;
            entry.set_item("params", params)?;
            entry.set_item("online_units", spec.online_units.to_vec())?;
            entry.set_item("offline_units", spec.offline_units.to_vec())?;
            let examples = spec
                .examples
                .iter()
                .map(|example| {
                    let params = PyDict::new(py);
                    for (name, value) in example.params {
                        params.set_item(name, spec_value(py, *value)?)?;
                    }
                    let entry = PyDict::new(py);
                    entry.set_item("doc", example.doc)?;
                    entry.set_item("params", params)?;
                    Ok(entry)
                })
                .collect::<PyResult<Vec<_>>>()?;
            entry.set_item("examples", examples)?;
            entry.set_item("not_in_quick", spec.not_in_quick)?;
            entry.set_item("episodic_baseline", spec.episodic_baseline)?;
            Ok(entry)
        })
        .collect()
}

/// A value written in a spec (a default or an example's), as Python sees it.
fn spec_value(py: Python<'_>, value: ParamDefault) -> PyResult<Bound<'_, PyAny>> {
    Ok(match value {
        ParamDefault::Float(v) => v.into_pyobject(py)?.into_any(),
        ParamDefault::Int(v) => v.into_pyobject(py)?.into_any(),
        ParamDefault::Bool(v) => v.into_pyobject(py)?.to_owned().into_any(),
        ParamDefault::Text(v) => v.into_pyobject(py)?.into_any(),
    })
}

/// Adds this file's classes and functions to the module.
/// The validate-only path: builds agent `kind` from `params` and checks the memory its
/// parameters size for a prior of `n_states` x `n_actions` states and actions, discount `gamma`
/// and `horizon` steps, allocating none of it; returns the agent's name (ValueError otherwise).
#[pyfunction]
fn check_agent(
    kind: &str,
    params: &Bound<'_, PyDict>,
    n_states: Count,
    n_actions: Count,
    gamma: f64,
    horizon: Count,
) -> PyResult<String> {
    let n_states = n_states.0;
    let n_actions = n_actions.0;
    let horizon = horizon.0;
    let converted = params_of(params)?;
    agents::registry::check(kind, &converted, n_states, n_actions, Setting { gamma, horizon }).map_err(to_py)
}

/// The memory rule's limit in bytes (half the machine's memory, or `BBRL_MEMORY_LIMIT`).
#[pyfunction]
fn memory_limit() -> PyResult<u64> {
    bbrl_core::platform::memory::limit().map_err(to_py)
}

fn params_of(params: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut converted = Params::new();
    for (key, value) in params.iter() {
        let key: String = key.extract()?;
        converted.insert(key.clone(), value_of(&format!("parameter '{key}'"), &value)?);
    }
    Ok(converted)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgent>()?;
    m.add_function(wrap_pyfunction!(agent_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(check_agent, m)?)?;
    m.add_function(wrap_pyfunction!(memory_limit, m)?)?;
    Ok(())
}
