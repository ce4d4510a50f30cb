//! `Agent`: a built-in agent by kind and parameters, its offline learning and saved form.

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use super::distribution::PyFdm;
use super::to_py;
use crate::agents::{self, Agent, ParamValue, Params, Setting, TaskContext, Transition};
use crate::experiment::check_setting;
use crate::rng::{purpose, stream, Rng};

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

/// A Rust agent. Besides the protocol, it can be stepped by hand (reset/act/observe), which is
/// what conformance tests and replay evaluators need.
#[pyclass(name = "Agent", module = "bbrl._core")]
pub(super) struct PyAgent {
    pub(super) inner: Box<dyn Agent>,
    /// (S, A) once trained.
    pub(super) shape: Option<(usize, usize)>,
    /// The stream used by the hand-stepping methods.
    pub(super) rng: Rng,
    pub(super) setting: Option<Setting>,
}

impl PyAgent {
    fn trained_shape(&self) -> PyResult<(usize, usize)> {
        self.shape.ok_or_else(|| PyValueError::new_err("the agent has not learned offline yet"))
    }
    fn check_state(&self, state: usize) -> PyResult<()> {
        let (s, _) = self.trained_shape()?;
        if state >= s {
            return Err(PyValueError::new_err(format!("state {state} is out of range 0..{s}")));
        }
        Ok(())
    }
}

#[pymethods]
impl PyAgent {
    #[new]
    fn new(kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let inner = agents::build(kind, &params_from(params)?).map_err(to_py)?;
        Ok(Self { inner, shape: None, rng: stream(0, purpose::KERNEL, 0), setting: None })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    #[getter]
    fn is_oracle(&self) -> bool {
        self.inner.is_oracle()
    }

    /// Offline learning on `prior` outside an experiment; returns the wall time in seconds.
    fn learn_offline(&mut self, py: Python<'_>, prior: &PyFdm, gamma: f64, horizon: usize, seed: u64) -> PyResult<f64> {
        let setting = Setting { gamma, horizon };
        check_setting(setting).map_err(to_py)?;
        let agent = &mut self.inner;
        let fdm = &prior.inner;
        let seconds = py.detach(|| {
            let mut rng = stream(seed, purpose::AGENT_OFFLINE, 0);
            let start = std::time::Instant::now();
            agent.learn_offline(fdm, setting, &mut rng).map(|_| start.elapsed().as_secs_f64())
        });
        let seconds = seconds.map_err(to_py)?;
        self.shape = Some((fdm.n_states(), fdm.n_actions()));
        self.setting = Some(setting);
        Ok(seconds)
    }

    /// Starts a hand-stepped trajectory with its own random stream (seed, AGENT_ONLINE, 0).
    fn start_task(&mut self, seed: u64) -> PyResult<()> {
        self.trained_shape()?;
        if self.inner.is_oracle() {
            return Err(PyValueError::new_err("an oracle agent needs the true MDP: run it through an Experiment"));
        }
        let setting = self.setting.ok_or_else(|| PyValueError::new_err("the agent has not learned offline yet"))?;
        self.rng = stream(seed, purpose::AGENT_ONLINE, 0);
        self.inner.start_task(&TaskContext { setting, true_mdp: None }, &mut self.rng).map_err(to_py)
    }

    fn act(&mut self, state: usize) -> PyResult<usize> {
        self.check_state(state)?;
        self.inner.act(state, &mut self.rng).map_err(to_py)
    }

    fn observe(&mut self, state: usize, action: usize, reward: f64, next_state: usize) -> PyResult<()> {
        self.check_state(state)?;
        self.check_state(next_state)?;
        let (_, a) = self.trained_shape()?;
        if action >= a {
            return Err(PyValueError::new_err(format!("action {action} is out of range 0..{a}")));
        }
        self.inner.observe(Transition { state, action, reward, next_state }, &mut self.rng).map_err(to_py)
    }

    fn action_probabilities<'py>(&mut self, py: Python<'py>, state: usize) -> PyResult<Bound<'py, PyArray1<f64>>> {
        self.check_state(state)?;
        let (_, a) = self.trained_shape()?;
        let mut out = vec![0.0; a];
        self.inner.action_probabilities(state, &mut out).map_err(to_py)?;
        Ok(out.into_pyarray(py))
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
        Ok(Self {
            inner,
            shape: Some((n_states, n_actions)),
            rng: stream(0, purpose::KERNEL, 0),
            setting: Some(setting),
        })
    }

    /// A deep copy, random stream included: the copy's future is identical to the original's.
    fn copy(&self) -> Self {
        Self { inner: self.inner.clone_box(), shape: self.shape, rng: self.rng.clone(), setting: self.setting }
    }
}

/// The agent kinds the core can build, with their parameter names.
#[pyfunction]
fn agent_kinds() -> Vec<(&'static str, Vec<&'static str>)> {
    agents::AGENT_KINDS.iter().map(|(k, p)| (*k, p.to_vec())).collect()
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgent>()?;
    m.add_function(wrap_pyfunction!(agent_kinds, m)?)?;
    Ok(())
}
