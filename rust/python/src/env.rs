//! Converts a core `Episode` over a `FiniteEnv` to the `FiniteEnv` class (`reset`, `step`, tables).

use numpy::{IntoPyArray, PyArray1, PyArray3, PyReadonlyArray1, PyReadonlyArray3};
use pyo3::prelude::*;

use super::{flat, table, table_pair_dims, to_py};
use bbrl_core::envs::{Env, Episode, FiniteEnv};
use bbrl_core::model::mdp::Mdp;

/// A finite environment and one episode on it.
#[pyclass(name = "FiniteEnv", module = "bbrl._core")]
pub(super) struct PyFiniteEnv {
    pub(super) episode: Episode<FiniteEnv>,
}

impl PyFiniteEnv {
    pub(super) fn wrap(env: FiniteEnv) -> Self {
        Self { episode: Episode::new(env) }
    }

    pub(super) fn env(&self) -> &FiniteEnv {
        self.episode.env()
    }
}

#[pymethods]
impl PyFiniteEnv {
    /// From tables (S, A, S), a start law (S,), a discount in [0, 1] and a time limit in steps.
    #[new]
    #[pyo3(signature = (name, transitions, rewards, start, discount, time_limit=None))]
    fn new(
        name: &str,
        transitions: PyReadonlyArray3<'_, f64>,
        rewards: PyReadonlyArray3<'_, f64>,
        start: PyReadonlyArray1<'_, f64>,
        discount: f64,
        time_limit: Option<usize>,
    ) -> PyResult<Self> {
        let (s, a) = table_pair_dims(&transitions, "transitions", &rewards)?;
        let mdp = Mdp::new(s, a, flat(&transitions), flat(&rewards), None).map_err(to_py)?;
        let start = start.as_array().iter().copied().collect();
        Ok(Self::wrap(FiniteEnv::new(name, mdp, start, discount, time_limit).map_err(to_py)?))
    }

    #[getter]
    fn name(&self) -> String {
        self.env().name()
    }
    #[getter]
    fn n_states(&self) -> usize {
        self.env().mdp().n_states()
    }
    #[getter]
    fn n_actions(&self) -> usize {
        self.env().n_actions()
    }
    #[getter]
    fn discount(&self) -> f64 {
        self.env().discount()
    }
    #[getter]
    fn time_limit(&self) -> Option<usize> {
        self.env().time_limit()
    }
    #[getter]
    fn reward_bounds(&self) -> (f64, f64) {
        self.env().reward_bounds()
    }
    #[getter]
    fn transitions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f64>> {
        let m = self.env().mdp();
        table(py, m.transitions(), m.n_states(), m.n_actions())
    }
    #[getter]
    fn rewards<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f64>> {
        let m = self.env().mdp();
        table(py, m.rewards(), m.n_states(), m.n_actions())
    }
    #[getter]
    fn start_law<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.env().start_law().to_vec().into_pyarray(py)
    }
    /// The current state, None before the first reset.
    #[getter]
    fn state(&self) -> Option<usize> {
        self.episode.state().copied()
    }

    /// Starts an episode; with a seed, the stream becomes `(seed, ENVIRONMENT, index)` first.
    #[pyo3(signature = (seed=None, index=0))]
    fn reset(&mut self, seed: Option<u64>, index: u64) -> usize {
        self.episode.reset(seed, index)
    }

    /// One step: (next state, reward, terminal, truncated by the time limit).
    fn step(&mut self, action: usize) -> PyResult<(usize, f64, bool, bool)> {
        let step = self.episode.step(action).map_err(to_py)?;
        Ok((step.next_state, step.reward, step.terminated, step.truncated))
    }
}

/// Adds this file's class to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFiniteEnv>()?;
    Ok(())
}
