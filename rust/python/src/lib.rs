//! The PyO3 bindings (`bbrl._core`): conversions and GIL handling only; no logic lives here.
//! Docstrings and validation with friendly messages live in the Python package; these functions
//! re-validate everything (the core returns errors, never panics) so that no input can crash.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use bbrl_core::error::BbrlError;
use bbrl_core::model::mdp::Mdp;

mod agent;
mod callback;
mod continuous_env;
mod distribution;
mod env;
mod env_registry;
mod experiment;
mod formulas;
mod kernels;
mod replay;
mod stepper;
mod value_error;

use experiment::PyExperiment;

pyo3::create_exception!(
    bbrl._core,
    AgentError,
    PyRuntimeError,
    "An agent failed (built-in or Python); the message names the agent and, in a run, the MDP and the step."
);

pub(crate) fn to_py(e: BbrlError) -> PyErr {
    match e {
        BbrlError::InvalidArgument(m) => PyValueError::new_err(m),
        BbrlError::Cancelled => PyKeyboardInterrupt::new_err("run cancelled"),
        other @ (BbrlError::Agent(_) | BbrlError::AgentFailure { .. }) => AgentError::new_err(other.to_string()),
    }
}

/// (S, A, S) dimensions of a table, checked to be a cube over states.
pub(crate) fn cube_dims(shape: &[usize], name: &str) -> PyResult<(usize, usize)> {
    match shape {
        [s, a, s2] if s == s2 => Ok((*s, *a)),
        _ => Err(PyValueError::new_err(format!("{name} must have shape (S, A, S), got {shape:?}"))),
    }
}

pub(crate) fn flat(array: &PyReadonlyArray3<'_, f64>) -> Vec<f64> {
    array.as_array().iter().copied().collect()
}

pub(crate) fn initial(initial_state: i64, n_states: usize) -> PyResult<Option<usize>> {
    match initial_state {
        -1 => Ok(None),
        s if s >= 0 && (s as usize) < n_states => Ok(Some(s as usize)),
        s => Err(PyValueError::new_err(format!("initial state {s} is out of range 0..{n_states} (or -1 for random)"))),
    }
}

/// The (S, A) of a table `name` (S, A, S) and a rewards table of the same shape.
pub(crate) fn table_pair_dims(
    table: &PyReadonlyArray3<'_, f64>,
    name: &str,
    rewards: &PyReadonlyArray3<'_, f64>,
) -> PyResult<(usize, usize)> {
    let dims = cube_dims(table.shape(), name)?;
    if rewards.shape() != table.shape() {
        return Err(PyValueError::new_err(format!(
            "rewards shape {:?} differs from {name} shape {:?}",
            rewards.shape(),
            table.shape()
        )));
    }
    Ok(dims)
}

pub(crate) fn mdp_from_arrays(
    transitions: PyReadonlyArray3<'_, f64>,
    rewards: PyReadonlyArray3<'_, f64>,
) -> PyResult<Mdp> {
    let (s, a) = table_pair_dims(&transitions, "transitions", &rewards)?;
    Mdp::new(s, a, flat(&transitions), flat(&rewards), Some(0)).map_err(to_py)
}

/// Two arrays returned together.
pub(crate) type ArrayPair<'py, T, U> = (Bound<'py, PyArray1<T>>, Bound<'py, PyArray1<U>>);

/// A run's per-MDP arrays: returns, wall seconds, CPU seconds, and the (N, T) rewards when recorded.
pub(crate) type RunArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyArray2<f64>>>,
);

/// Recorded rewards, row-major `rows` x `horizon`, as a NumPy (rows, horizon) array (no copy).
pub(crate) fn reward_rows<'py>(
    py: Python<'py>,
    rewards: Option<Vec<f64>>,
    rows: usize,
    horizon: usize,
) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
    rewards.map(|values| values.into_pyarray(py).reshape([rows, horizon])).transpose()
}

pub(crate) fn table<'py>(py: Python<'py>, data: &[f64], s: usize, a: usize) -> Bound<'py, PyArray3<f64>> {
    data.to_vec().into_pyarray(py).reshape([s, a, s]).expect("length S*A*S by construction")
}

#[pymodule(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    agent::register(m)?;
    distribution::register(m)?;
    env::register(m)?;
    env_registry::register(m)?;
    experiment::register(m)?;
    kernels::register(m)?;
    formulas::register(m)?;
    stepper::register(m)?;
    m.add("AgentError", m.py().get_type::<AgentError>())?;
    continuous_env::register(m)?;
    value_error::register(m)?;
    replay::register(m)?;
    m.add_function(wrap_pyfunction!(callback::run_python_agent, m)?)?;
    m.add("PURPOSES", bbrl_core::rng::purpose::NAMED.iter().copied().collect::<std::collections::BTreeMap<_, _>>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
