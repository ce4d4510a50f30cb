//! Converts the value-error catalog (environments, policies, features) and NumPy state arrays.
//!
//! `ValueErrorEnv` (Mountain Car, Puddle World or a finite environment of `bbrl.envs`),
//! `FixedPolicy`, `SparseFeatures`, and states as (m, 2) float64 or (m,) int64 arrays.

use crate::convert::{Count, Seed};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::env::PyFiniteEnv;
use super::to_py;
use bbrl_core::evaluators::value_error::catalog::{self, AnyEnv, AnyFeatures, AnyPolicy, States};
use bbrl_core::evaluators::value_error::tiles::{OneHot, TileCoder};
use bbrl_core::evaluators::value_error::{ConstantPolicy, EnergyPumping, TabularPolicy, UniformPolicy};

/// An environment for value-error studies.
#[pyclass(name = "ValueErrorEnv", module = "bbrl._core", frozen)]
pub(super) struct PyValueErrorEnv {
    pub(super) inner: AnyEnv,
}

#[pymethods]
impl PyValueErrorEnv {
    /// The finite environment `env` of `bbrl.envs` (its tables, start law, discount and time
    /// limit; not its current state): one way to build a finite MDP, whichever module asks.
    #[staticmethod]
    fn from_finite(env: PyRef<'_, PyFiniteEnv>) -> Self {
        Self { inner: AnyEnv::Finite(Box::new(env.env().clone())) }
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// (n_actions, n_states or None, discount, (min reward, max reward), time_limit or None).
    #[getter]
    fn spec(&self) -> catalog::EnvSpec {
        self.inner.spec()
    }
}

/// A fixed policy.
#[pyclass(name = "FixedPolicy", module = "bbrl._core", frozen)]
pub(super) struct PyFixedPolicy {
    pub(super) inner: AnyPolicy,
}

#[pymethods]
impl PyFixedPolicy {
    #[staticmethod]
    fn uniform(n_actions: Count) -> PyResult<Self> {
        let n_actions = n_actions.0;
        Ok(Self { inner: AnyPolicy::Uniform(UniformPolicy::new(n_actions).map_err(to_py)?) })
    }

    /// `action` in every state, of `n_actions`.
    #[staticmethod]
    fn constant(action: Count, n_actions: Count) -> PyResult<Self> {
        let action = action.0;
        let n_actions = n_actions.0;
        Ok(Self { inner: AnyPolicy::Constant(ConstantPolicy::new(action, n_actions).map_err(to_py)?) })
    }

    #[staticmethod]
    fn energy_pumping(random_share: f64) -> PyResult<Self> {
        Ok(Self { inner: AnyPolicy::EnergyPumping(EnergyPumping::new(random_share).map_err(to_py)?) })
    }

    #[staticmethod]
    fn tabular(probabilities: PyReadonlyArray2<'_, f64>) -> PyResult<Self> {
        let [s, a] = [probabilities.shape()[0], probabilities.shape()[1]];
        let table = probabilities.as_array().iter().copied().collect();
        Ok(Self { inner: AnyPolicy::Tabular(TabularPolicy::new(s, a, table).map_err(to_py)?) })
    }

    #[getter]
    fn description(&self) -> String {
        self.inner.describe()
    }
}

/// Sparse binary features for linear TD.
#[pyclass(name = "SparseFeatures", module = "bbrl._core", frozen)]
pub(super) struct PySparseFeatures {
    pub(super) inner: AnyFeatures,
}

#[pymethods]
impl PySparseFeatures {
    #[staticmethod]
    fn tiles(lo: [f64; 2], hi: [f64; 2], tiles: Count, tilings: Count) -> PyResult<Self> {
        let tiles = tiles.0;
        let tilings = tilings.0;
        Ok(Self { inner: AnyFeatures::Tiles(TileCoder::new(lo, hi, tiles, tilings).map_err(to_py)?) })
    }

    #[staticmethod]
    fn one_hot(n_states: Count) -> PyResult<Self> {
        let n_states = n_states.0;
        Ok(Self { inner: AnyFeatures::OneHot(OneHot::new(n_states).map_err(to_py)?) })
    }
}

/// States from NumPy: an (m, 2) float64 array of coordinates or an (m,) int64 array of indices.
pub(super) fn states_from(states: &Bound<'_, PyAny>) -> PyResult<States> {
    if let Ok(points) = states.extract::<PyReadonlyArray2<'_, f64>>() {
        if points.shape()[1] != 2 {
            return Err(PyValueError::new_err(format!("states must have shape (m, 2), got {:?}", points.shape())));
        }
        let a = points.as_array();
        return Ok(States::Points(a.rows().into_iter().map(|r| [r[0], r[1]]).collect()));
    }
    if let Ok(indices) = states.extract::<PyReadonlyArray1<'_, i64>>() {
        let idx = indices.as_array();
        if let Some(bad) = idx.iter().find(|&&s| s < 0) {
            return Err(PyValueError::new_err(format!("state index {bad} is negative")));
        }
        return Ok(States::Indices(idx.iter().map(|&s| s as usize).collect()));
    }
    Err(PyValueError::new_err("states must be an (m, 2) float64 array or an (m,) int64 array"))
}

/// States back to NumPy: (m, 2) float64 coordinates or (m,) int64 indices.
pub(super) fn states_to<'py>(py: Python<'py>, states: &States) -> Bound<'py, PyAny> {
    match states {
        States::Points(p) => {
            let flat: Vec<f64> = p.iter().flatten().copied().collect();
            let array: Bound<'py, PyArray2<f64>> = flat.into_pyarray(py).reshape([p.len(), 2]).expect("m * 2 entries");
            array.into_any()
        }
        States::Indices(i) => {
            let array: Bound<'py, PyArray1<i64>> = i.iter().map(|&s| s as i64).collect::<Vec<_>>().into_pyarray(py);
            array.into_any()
        }
    }
}

/// `m` states drawn uniformly over the environment's state space (stream (seed, VALUE_ERROR_STATES, 0)).
#[pyfunction]
fn value_error_uniform_states<'py>(
    py: Python<'py>,
    env: &PyValueErrorEnv,
    m: Count,
    seed: Seed,
) -> PyResult<Bound<'py, PyAny>> {
    let m = m.0;
    let seed = seed.0;
    let states = catalog::uniform_states(&env.inner, m, seed).map_err(to_py)?;
    Ok(states_to(py, &states))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyValueErrorEnv>()?;
    m.add_class::<PyFixedPolicy>()?;
    m.add_class::<PySparseFeatures>()?;
    m.add_function(wrap_pyfunction!(value_error_uniform_states, m)?)?;
    Ok(())
}
