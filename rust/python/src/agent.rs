//! `Agent`: a built-in agent by kind and parameters, its offline learning and saved form.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use super::distribution::PyFdm;
use super::to_py;
use bbrl_core::agent::{Agent, Setting};
use bbrl_core::agents::spec::ParamDefault;
use bbrl_core::agents::{self, ParamValue, Params};
use bbrl_core::evaluators::protocol::{check_setting, OfflineTime};
use bbrl_core::rng::{purpose, stream};

/// Converts a Python dict of agent parameters.
fn params_from(dict: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut params = Params::new();
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        let v = if value.is_instance_of::<PyBool>() {
            ParamValue::Bool(value.extract()?)
        } else if value.is_instance_of::<PyInt>() {
            ParamValue::Int(value.extract()?)
        } else if value.is_instance_of::<PyFloat>() {
            ParamValue::Float(value.extract()?)
        } else if value.is_instance_of::<PyString>() {
            ParamValue::Text(value.extract()?)
        } else {
            return Err(PyTypeError::new_err(format!(
                "parameter '{key}' must be a bool, int, float or str, got {}",
                value.get_type().name()?
            )));
        };
        params.insert(key, v);
    }
    Ok(params)
}

/// A built-in agent: built from its kind and parameters, trained offline, saved. It is stepped
/// through a `Stepper` (see stepper.rs), like every agent.
#[pyclass(name = "Agent", module = "bbrl._core")]
pub(super) struct PyAgent {
    pub(super) inner: Box<dyn Agent>,
    /// (S, A) once trained.
    pub(super) shape: Option<(usize, usize)>,
    pub(super) setting: Option<Setting>,
}

#[pymethods]
impl PyAgent {
    #[new]
    fn new(kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let inner = agents::build(kind, &params_from(params)?).map_err(to_py)?;
        Ok(Self { inner, shape: None, setting: None })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    #[getter]
    fn is_oracle(&self) -> bool {
        self.inner.is_oracle()
    }

    /// Offline learning on `prior` outside an experiment; returns (wall, CPU) seconds, both zero
    /// for an agent that learns nothing offline.
    fn learn_offline(
        &mut self,
        py: Python<'_>,
        prior: &PyFdm,
        gamma: f64,
        horizon: usize,
        seed: u64,
    ) -> PyResult<(f64, f64)> {
        let setting = Setting { gamma, horizon };
        check_setting(setting).map_err(to_py)?;
        let agent = &mut self.inner;
        let fdm = &prior.inner;
        let time = py.detach(|| {
            let mut rng = stream(seed, purpose::AGENT_OFFLINE, 0);
            let learns = agent.learns_offline();
            OfflineTime::measure(learns, || agent.learn_offline(fdm, setting, &mut rng))
        });
        let time = time.map_err(to_py)?;
        self.shape = Some((fdm.n_states(), fdm.n_actions()));
        self.setting = Some(setting);
        Ok((time.wall_seconds, time.cpu_seconds))
    }

    /// What offline learning decided (e.g. OPPS-DS's chosen formula), as a dict of strings.
    #[getter]
    fn details(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.details().into_iter().collect()
    }

    /// The text from which `load` rebuilds this agent, or None when the agent cannot be saved
    /// (it is then rebuilt from its parameters and retrained).
    fn saved_text(&self) -> Option<String> {
        self.inner.saved_text()
    }

    /// Rebuilds a saved agent, trained on a prior of `n_states` x `n_actions` with `gamma`, `horizon`.
    #[staticmethod]
    fn load(text: &str, n_states: usize, n_actions: usize, gamma: f64, horizon: usize) -> PyResult<Self> {
        let setting = Setting { gamma, horizon };
        check_setting(setting).map_err(to_py)?;
        let inner = agents::load_text(text).map_err(to_py)?;
        Ok(Self { inner, shape: Some((n_states, n_actions)), setting: Some(setting) })
    }
}

/// The agent registry: per kind, its name, display name, parameters (name, type, default or
/// None when required, range, doc) and cost units (online per decision, offline per training).
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
                        Some(ParamDefault::Float(v)) => param.set_item("default", v)?,
                        Some(ParamDefault::Int(v)) => param.set_item("default", v)?,
                        Some(ParamDefault::Bool(v)) => param.set_item("default", v)?,
                        None => param.set_item("default", py.None())?,
                    }
                    param.set_item("required", p.default.is_none())?;
                    param.set_item("range", p.range)?;
                    param.set_item("doc", p.doc)?;
                    Ok(param)
                })
                .collect::<PyResult<Vec<_>>>()?;
            entry.set_item("params", params)?;
            entry.set_item("online_units", spec.online_units.to_vec())?;
            entry.set_item("offline_units", spec.offline_units.to_vec())?;
            Ok(entry)
        })
        .collect()
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgent>()?;
    m.add_function(wrap_pyfunction!(agent_kinds, m)?)?;
    Ok(())
}
