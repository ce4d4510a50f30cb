//! The `bbrl._core` module: converts types between Python and `bbrl_core`, and releases the GIL.
//!
//! Conversions and GIL handling only; no logic lives here. Docstrings and friendly messages live
//! in the Python package; every check, choice of stream and parsed name lives in `bbrl_core`
//! (which returns errors, never panics), so no input can crash. Long lists of settings come in
//! as one dict, read by the core's typed options (`bbrl_core::options`).

use bbrl_core::work::{Work, N_UNITS, UNITS};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use bbrl_core::error::BbrlError;
use bbrl_core::model::{tables, Mdp};
use bbrl_core::options::{Options, ParamValue, Range};

mod agent;
mod callback;
mod confidence;
mod continuous_env;
mod convert;
mod distribution;
mod env;
mod env_registry;
mod episodic;
mod experiment;
mod formulas;
mod kernels;
mod problem_registry;
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

/// A Python bool, int (NumPy integers too), float or str as a core value.
/// (`what` names it in the error, e.g. "option 'seed'").
pub(crate) fn value_of(what: &str, value: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    Ok(if value.is_instance_of::<PyBool>() {
        ParamValue::Bool(value.extract()?)
    } else if value.is_instance_of::<PyFloat>() {
        ParamValue::Float(value.extract()?)
    } else if value.is_instance_of::<PyString>() {
        ParamValue::Text(value.extract()?)
    } else if let Ok(v) = value.extract::<i64>() {
        ParamValue::Int(v)
    } else if let (true, Ok(v)) = (value.is_instance_of::<PyInt>(), value.extract::<u64>()) {
        ParamValue::UInt(v)
    } else if value.is_instance_of::<PyInt>() {
        return Err(PyValueError::new_err(format!("{what} is out of range: {value} does not fit in 64 bits")));
    } else {
        let kind = value.get_type().name()?;
        return Err(PyTypeError::new_err(format!("{what} must be a bool, int, float or str, got {kind}")));
    })
}

/// A typed range as dict keys (one source: `bbrl_core::options::Range`): "range" (as users read
/// it), "min" and "max" (None: unbounded) with "min_inclusive" and "max_inclusive", and
/// "choices" (None unless the value is one of a list of strings).
pub(crate) fn set_range(entry: &Bound<'_, PyDict>, range: Range) -> PyResult<()> {
    entry.set_item("range", range.describe())?;
    let (min, max) = match range {
        Range::Number { min, max } => (min.value(), max.value()),
        _ => (None, None),
    };
    entry.set_item("min", min.map(|(v, _)| v))?;
    entry.set_item("min_inclusive", min.is_some_and(|(_, inclusive)| inclusive))?;
    entry.set_item("max", max.map(|(v, _)| v))?;
    entry.set_item("max_inclusive", max.is_some_and(|(_, inclusive)| inclusive))?;
    match range {
        Range::Choices(names) => entry.set_item("choices", names.to_vec())?,
        _ => entry.set_item("choices", entry.py().None())?,
    }
    Ok(())
}

/// The core's typed options `T` from a dict (a None value leaves the key at its default).
pub(crate) fn options<T: Options>(dict: &Bound<'_, PyDict>) -> PyResult<T> {
    let mut pairs = Vec::with_capacity(dict.len());
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        if !value.is_none() {
            pairs.push((value_of(&format!("option '{key}'"), &value)?, key));
        }
    }
    T::from_pairs(pairs.iter().map(|(v, k)| (k.as_str(), v))).map_err(to_py)
}

pub(crate) fn flat(array: &PyReadonlyArray3<'_, f64>) -> Vec<f64> {
    array.as_array().iter().copied().collect()
}

/// The (S, A) of a table `name` (S, A, S) and a rewards table of the same shape.
pub(crate) fn table_pair_dims(
    table: &PyReadonlyArray3<'_, f64>,
    name: &str,
    rewards: &PyReadonlyArray3<'_, f64>,
) -> PyResult<(usize, usize)> {
    tables::table_pair_dims(table.shape(), name, rewards.shape()).map_err(to_py)
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

/// A run's per-MDP arrays: returns, wall seconds, CPU seconds, the (N, T) rewards when recorded,
/// and the (N, units) work counts ([`work_rows`]).
pub(crate) type RunArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyArray2<f64>>>,
    Bound<'py, PyArray2<u64>>,
);

/// Work counts, one row per trajectory, one column per unit of `bbrl_core::work::UNITS`.
pub(crate) fn work_rows<'py>(py: Python<'py>, work: &[Work]) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let flat: Vec<u64> = work.iter().flat_map(|w| w.0).collect();
    flat.into_pyarray(py).reshape([work.len(), N_UNITS])
}

/// The names of the work units, in the order of the columns of every work array.
#[pyfunction]
fn work_units() -> Vec<&'static str> {
    UNITS.iter().map(|u| u.name()).collect()
}

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
    confidence::register(m)?;
    distribution::register(m)?;
    env::register(m)?;
    env_registry::register(m)?;
    episodic::register(m)?;
    experiment::register(m)?;
    kernels::register(m)?;
    problem_registry::register(m)?;
    formulas::register(m)?;
    stepper::register(m)?;
    m.add("AgentError", m.py().get_type::<AgentError>())?;
    continuous_env::register(m)?;
    value_error::register(m)?;
    replay::register(m)?;
    m.add_function(wrap_pyfunction!(callback::run_python_agent, m)?)?;
    m.add_function(wrap_pyfunction!(work_units, m)?)?;
    m.add("PURPOSES", bbrl_core::rng::purpose::NAMED.iter().copied().collect::<std::collections::BTreeMap<_, _>>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
