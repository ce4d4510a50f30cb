//! Converts the core `Stepper` (the handle on any agent) and its `Snapshot`.

use crate::convert::{Count, Seed};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use super::agent::PyAgent;
use super::callback::{raise, ErrorSlot, PyCallbackAgent};
use super::to_py;
use bbrl_core::agent::{Setting, Transition};
use bbrl_core::error::BbrlError;
use bbrl_core::stepper::{Snapshot, Stepper};

/// A trained agent with its random stream, stepped through the life cycle.
#[pyclass(name = "Stepper", module = "bbrl._core")]
pub(super) struct PyStepper {
    pub(super) inner: Stepper,
    /// For a Python agent: where it leaves the exception behind its last failure.
    python_error: Option<ErrorSlot>,
}

/// Everything a stepper's future depends on.
#[pyclass(name = "Snapshot", module = "bbrl._core", frozen)]
pub(super) struct PySnapshot {
    inner: Snapshot,
}

impl PyStepper {
    /// The core error as the Python exception (see `callback::raise`).
    fn raise(&self, py: Python<'_>, e: BbrlError) -> PyErr {
        raise(py, e, self.python_error.as_ref())
    }
}

#[pymethods]
impl PyStepper {
    /// A handle on a trained built-in agent (a copy of it), with stream `(seed, AGENT_ONLINE, index)`:
    /// the stream the benchmark protocol gives that agent on test MDP `index`.
    #[staticmethod]
    #[pyo3(signature = (agent, seed, index=Seed(0)), text_signature = "(agent, seed, index=0)")]
    fn builtin(agent: &PyAgent, seed: Seed, index: Seed) -> PyResult<Self> {
        let seed = seed.0;
        let index = index.0;
        Ok(Self { inner: agent.inner.stepper(seed, index).map_err(to_py)?, python_error: None })
    }

    /// A handle on a trained Python agent (used in place: pass a copy), with stream
    /// `(seed, AGENT_ONLINE, index)`; its `act` gets a NumPy Generator seeded from that stream at
    /// every task start.
    #[staticmethod]
    #[pyo3(
        signature = (agent, name, n_states, n_actions, gamma, horizon, seed, index=Seed(0)),
        text_signature = "(agent, name, n_states, n_actions, gamma, horizon, seed, index=0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn python(
        agent: &Bound<'_, PyAny>,
        name: String,
        n_states: Count,
        n_actions: Count,
        gamma: f64,
        horizon: Count,
        seed: Seed,
        index: Seed,
    ) -> PyResult<Self> {
        let n_states = n_states.0;
        let n_actions = n_actions.0;
        let horizon = horizon.0;
        let seed = seed.0;
        let index = index.0;
        let setting = Setting::checked(gamma, horizon).map_err(to_py)?;
        let callback = PyCallbackAgent::new(agent, name, n_actions)?;
        let slot = callback.error_slot();
        let inner = Stepper::for_task(Box::new(callback), n_states, n_actions, setting, seed, index);
        Ok(Self { inner, python_error: Some(slot) })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.agent().name()
    }
    #[getter]
    fn n_states(&self) -> usize {
        self.inner.n_states()
    }
    #[getter]
    fn n_actions(&self) -> usize {
        self.inner.n_actions()
    }
    #[getter]
    fn gamma(&self) -> f64 {
        self.inner.setting().gamma
    }
    #[getter]
    fn horizon(&self) -> usize {
        self.inner.setting().horizon
    }

    fn start_task(&mut self, py: Python<'_>) -> PyResult<()> {
        self.inner.start_task().map_err(|e| self.raise(py, e))
    }

    fn start_episode(&mut self, py: Python<'_>, state: Count) -> PyResult<()> {
        let state = state.0;
        self.inner.start_episode(state).map_err(|e| self.raise(py, e))
    }

    fn act(&mut self, py: Python<'_>, state: Count) -> PyResult<usize> {
        let state = state.0;
        self.inner.act(state).map_err(|e| self.raise(py, e))
    }

    fn observe(&mut self, py: Python<'_>, state: Count, action: Count, reward: f64, next_state: Count) -> PyResult<()> {
        let state = state.0;

        let action = action.0;

        let next_state = next_state.0;
        let t = Transition { state, action, reward, next_state };
        self.inner.observe(t).map_err(|e| self.raise(py, e))
    }

    fn action_probabilities<'py>(&mut self, py: Python<'py>, state: Count) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let state = state.0;
        let mut out = vec![0.0; self.inner.n_actions()];
        self.inner.action_probabilities(state, &mut out).map_err(|e| self.raise(py, e))?;
        Ok(out.into_pyarray(py))
    }

    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        Ok(PySnapshot { inner: self.inner.snapshot().map_err(|e| self.raise(py, e))? })
    }

    fn restore(&mut self, py: Python<'_>, snapshot: &PySnapshot) -> PyResult<()> {
        self.inner.restore(&snapshot.inner).map_err(|e| self.raise(py, e))
    }

    /// An independent handle in this one's state, with stream `(seed, AGENT_ONLINE, index)`.
    #[pyo3(signature = (seed, index=Seed(0)), text_signature = "($self, seed, index=0)")]
    fn fork(&self, py: Python<'_>, seed: Seed, index: Seed) -> PyResult<Self> {
        let seed = seed.0;
        let index = index.0;
        let inner = self.inner.fork_for_task(seed, index).map_err(|e| self.raise(py, e))?;
        Ok(Self { inner, python_error: self.python_error.clone() })
    }
}

/// Adds this file's classes to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStepper>()?;
    m.add_class::<PySnapshot>()?;
    Ok(())
}
