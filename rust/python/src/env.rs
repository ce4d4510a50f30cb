//! Converts a core `Episode` over a `FiniteEnv` to the `FiniteEnv` class (`reset`, `step`, tables).

use crate::convert::{Count, Seed};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{flat, table, table_pair_dims, to_py};
use bbrl_core::envs::{Env, Episode, FiniteEnv};
use bbrl_core::model::hardness;
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
    /// From tables (S, A, S), a start law (S,), a discount in [0, 1], a time limit in steps,
    /// optional terminal flags (S,) and the reward noise's standard deviations (S, A).
    #[new]
    #[pyo3(signature = (name, transitions, rewards, start, discount, time_limit=None, terminal=None, reward_noise=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        transitions: PyReadonlyArray3<'_, f64>,
        rewards: PyReadonlyArray3<'_, f64>,
        start: PyReadonlyArray1<'_, f64>,
        discount: f64,
        time_limit: Option<Count>,
        terminal: Option<PyReadonlyArray1<'_, bool>>,
        reward_noise: Option<PyReadonlyArray2<'_, f64>>,
    ) -> PyResult<Self> {
        let time_limit = time_limit.map(|v| v.0);
        let (s, a) = table_pair_dims(&transitions, "transitions", &rewards)?;
        let mdp = Mdp::new(s, a, flat(&transitions), flat(&rewards), None).map_err(to_py)?;
        let start = start.as_array().iter().copied().collect();
        let mut env = FiniteEnv::new(name, mdp, start, discount, time_limit).map_err(to_py)?;
        if let Some(terminal) = terminal {
            env = env.with_terminal_states(terminal.as_array().iter().copied().collect()).map_err(to_py)?;
        }
        if let Some(noise) = reward_noise {
            if noise.shape() != [s, a] {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "reward_noise must have shape ({s}, {a}), got {:?}",
                    noise.shape()
                )));
            }
            env = env.with_reward_noise(noise.as_array().iter().copied().collect()).map_err(to_py)?;
        }
        Ok(Self::wrap(env))
    }

    /// `terminal[s]`: entering s ends the episode.
    #[getter]
    fn terminal_states<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.env().terminal_states().into_pyarray(py)
    }
    /// The standard deviation of the Gaussian noise on each (s, a)'s reward, shape (S, A).
    #[getter]
    fn reward_noise<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let m = self.env().mdp();
        self.env().reward_noise().into_pyarray(py).reshape([m.n_states(), m.n_actions()]).expect("S * A entries")
    }
    /// The continuing form's tables (terminal transitions replaced by resets to the start law).
    fn continuing_tables<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>) {
        let m = self.env().mdp();
        let (p, r) = self.env().continuing_tables();
        (table(py, &p, m.n_states(), m.n_actions()), table(py, &r, m.n_states(), m.n_actions()))
    }
    /// The hardness measures of the continuing form (bbrl_core::model::hardness), GIL released.
    fn hardness<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let env = self.env().clone();
        let h = py
            .detach(move || {
                let m = env.mdp();
                let (p, r) = env.continuing_tables();
                hardness::measure(m.n_states(), m.n_actions(), &p, &r, env.start_law())
            })
            .map_err(to_py)?;
        let out = PyDict::new(py);
        out.set_item("diameter", h.diameter)?;
        out.set_item("gap_sum", h.gap_sum)?;
        out.set_item("gap_sum_colosseum", h.gap_sum_colosseum)?;
        out.set_item("value_norm", h.value_norm)?;
        out.set_item("value_norm_colosseum", h.value_norm_colosseum)?;
        out.set_item("n_states", h.n_states)?;
        out.set_item("discount", hardness::DISCOUNT)?;
        Ok(out)
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
    #[pyo3(signature = (seed=None, index=Seed(0)), text_signature = "($self, seed=None, index=0)")]
    fn reset(&mut self, seed: Option<Seed>, index: Seed) -> usize {
        let seed = seed.map(|v| v.0);
        let index = index.0;
        self.episode.reset(seed, index)
    }

    /// One step: (next state, reward, terminal, truncated by the time limit).
    fn step(&mut self, action: Count) -> PyResult<(usize, f64, bool, bool)> {
        let action = action.0;
        let step = self.episode.step(action).map_err(to_py)?;
        Ok((step.next_state, step.reward, step.terminated, step.truncated))
    }
}

/// bsuite's DeepSea action mapping, `RandomState(mapping_seed).binomial(1, 0.5, (size, size))`.
#[pyfunction]
fn deep_sea_mapping(py: Python<'_>, size: Count, mapping_seed: Seed) -> PyResult<Bound<'_, PyArray2<u8>>> {
    let size = size.0;
    let mapping_seed = mapping_seed.0;
    let mapping = bbrl_core::envs::deep_sea::action_mapping(size, mapping_seed).map_err(to_py)?;
    Ok(mapping.into_pyarray(py).reshape([size, size]).expect("size * size entries"))
}

/// Adds this file's class and function to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFiniteEnv>()?;
    m.add_function(wrap_pyfunction!(deep_sea_mapping, m)?)?;
    Ok(())
}
