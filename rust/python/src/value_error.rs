//! Converts the value-error estimates (`bbrl_core::evaluators::value_error`) for `bbrl.value_error`.
//!
//! Losses, Algorithm 1's budget, Lemma 5's rollout length, EBGStop on arrays or Python iterators,
//! references and learning curves (options as a dict).

use crate::convert::{Count, Seed};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator};

use super::continuous_env::{states_from, PyFixedPolicy, PySparseFeatures, PyValueErrorEnv};
use super::{options, to_py};
use bbrl_core::evaluators::value_error::catalog;
use bbrl_core::evaluators::value_error::learners::TdSettings;
use bbrl_core::evaluators::value_error::{
    self as ve, EbgStopConfig, Loss, ReferenceSettings, StateValuesOptions, StopConfig,
};

fn loss_from(kind: &str, tau: f64, c: f64) -> PyResult<Loss> {
    Loss::from_name(kind, tau, c).map_err(to_py)
}

/// The loss of each pair of a 1-D array of learned values and one of references.
#[pyfunction]
fn value_error_elementwise<'py>(
    py: Python<'py>,
    kind: &str,
    v_hat: PyReadonlyArray1<'_, f64>,
    v: PyReadonlyArray1<'_, f64>,
    tau: f64,
    c: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let loss = loss_from(kind, tau, c)?;
    let (v_hat, v) = (v_hat.as_slice()?, v.as_slice()?);
    let mut out = vec![0.0; v.len()];
    ve::elementwise_loss(loss, v_hat, v, &mut out).map_err(to_py)?;
    Ok(out.into_pyarray(py))
}

/// The mean loss over pairs (MSVE, MAVE, MAPVE, CMAPVE).
#[pyfunction]
fn value_error_mean(
    kind: &str,
    v_hat: PyReadonlyArray1<'_, f64>,
    v: PyReadonlyArray1<'_, f64>,
    tau: f64,
    c: f64,
) -> PyResult<f64> {
    ve::mean_loss(loss_from(kind, tau, c)?, v_hat.as_slice()?, v.as_slice()?).map_err(to_py)
}

/// Algorithm 1's number of states m.
#[pyfunction]
fn value_error_sample_size(epsilon: f64, delta: f64, c: f64, k: Seed) -> PyResult<usize> {
    let k = k.0;
    ve::sample_size(epsilon, delta, c, k).map_err(to_py)
}

/// Lemma 5's truncation length.
#[pyfunction]
fn value_error_rollout_length(epsilon: f64, tau: f64, r_max: f64, gamma: f64) -> PyResult<usize> {
    ve::rollout_length(epsilon, tau, r_max, gamma).map_err(to_py)
}

/// (eps_m, eps_bar, corollary_total) of a split.
#[pyfunction]
fn value_error_accuracies(epsilon: f64, c: f64, split: &str) -> PyResult<(f64, f64, f64)> {
    let split = split.parse().map_err(to_py)?;
    let a = ve::accuracies(epsilon, c, split).map_err(to_py)?;
    Ok((a.eps_m, a.eps_bar, a.corollary_total))
}

/// Theorem 1's guaranteed error for m stored references of accuracy eps_bar.
#[pyfunction]
fn value_error_guaranteed_error(m: Count, delta: f64, c: f64, k: Seed, eps_bar: f64) -> PyResult<f64> {
    let m = m.0;
    let k = k.0;
    ve::guaranteed_error(m, delta, c, k, eps_bar).map_err(to_py)
}

fn outcome_dict<'py>(py: Python<'py>, out: &ve::EbgStopOutcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("estimate", out.estimate)?;
    d.set_item("n_samples", out.n_samples)?;
    d.set_item("reason", out.reason.name())?;
    d.set_item("certified", out.reason.certified())?;
    d.set_item("lower", out.lower)?;
    d.set_item("upper", out.upper)?;
    Ok(d)
}

/// EBGStop over a 1-D float64 array (its length caps the samples); options: the keys of
/// `EbgStopConfig`.
#[pyfunction]
fn ebgstop_array<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray1<'_, f64>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg: EbgStopConfig = self::options(options)?;
    let samples = samples.as_slice()?;
    let out = py.detach(|| ve::ebgstop_slice(&cfg, samples)).map_err(to_py)?;
    outcome_dict(py, &out)
}

/// EBGStop over a Python iterator of numbers (for tests and slow samplers); options as for
/// `ebgstop_array`.
#[pyfunction]
fn ebgstop_iterator<'py>(
    py: Python<'py>,
    samples: Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg: EbgStopConfig = self::options(options)?;
    let mut iter = PyIterator::from_object(&samples)?;
    // An error raised by the iterator (or a non-number) ends the run and is re-raised.
    let mut failure: Option<PyErr> = None;
    let out = ve::ebgstop(&cfg, || match iter.next()? {
        Ok(item) => match item.extract::<f64>() {
            Ok(x) => Some(x),
            Err(e) => {
                failure = Some(e);
                None
            }
        },
        Err(e) => {
            failure = Some(e);
            None
        }
    })
    .map_err(to_py)?;
    if let Some(e) = failure {
        return Err(e);
    }
    outcome_dict(py, &out)
}

/// A certified mean of a 1-D float64 array by either stopping rule (its length caps the
/// samples); options: the keys of `StopConfig`.
#[pyfunction]
fn certify_array<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray1<'_, f64>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg: StopConfig = self::options(options)?;
    let samples = samples.as_slice()?;
    let out = py.detach(|| ve::certify_slice(&cfg, samples)).map_err(to_py)?;
    outcome_dict(py, &out)
}

/// Algorithm 1's references at the given states (options: the keys of `ReferenceSettings`): a
/// dict of arrays (value, n_samples, n_steps, reason) and the design (every derived parameter).
#[pyfunction]
fn value_error_references<'py>(
    py: Python<'py>,
    env: &PyValueErrorEnv,
    policy: &PyFixedPolicy,
    states: &Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let states = states_from(states)?;
    let settings: ReferenceSettings = self::options(options)?;
    let (design, values) =
        py.detach(|| catalog::references(&env.inner, &policy.inner, &states, settings)).map_err(to_py)?;
    let d = values_dict(py, &values)?;
    d.set_item("m", design.m)?;
    d.set_item("eps_m", design.eps_m)?;
    d.set_item("eps_bar", design.eps_bar)?;
    d.set_item("state_delta", design.state_delta)?;
    d.set_item("rollout_length", design.rollout_length)?;
    d.set_item("to_termination", design.to_termination)?;
    d.set_item("value_low", design.value_low)?;
    d.set_item("value_range", design.value_range)?;
    d.set_item("discount", design.discount)?;
    d.set_item("guaranteed_error", design.guaranteed_error().map_err(to_py)?)?;
    d.set_item("env", env.inner.name())?;
    d.set_item("policy", policy.inner.describe())?;
    Ok(d)
}

/// Algorithm 2 at each state with explicit EBGStop parameters, rollout length and seed (options:
/// the keys of `StateValuesOptions`).
#[pyfunction]
fn value_error_state_values<'py>(
    py: Python<'py>,
    env: &PyValueErrorEnv,
    policy: &PyFixedPolicy,
    states: &Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let states = states_from(states)?;
    let o: StateValuesOptions = self::options(options)?;
    let (env, policy) = (&env.inner, &policy.inner);
    let values = py.detach(|| catalog::state_values(env, policy, &states, &o)).map_err(to_py)?;
    values_dict(py, &values)
}

fn values_dict<'py>(py: Python<'py>, values: &[ve::ReferenceValue]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("value", values.iter().map(|v| v.value).collect::<Vec<_>>().into_pyarray(py))?;
    d.set_item("n_samples", values.iter().map(|v| v.n_samples).collect::<Vec<_>>().into_pyarray(py))?;
    d.set_item("n_steps", values.iter().map(|v| v.n_steps).collect::<Vec<_>>().into_pyarray(py))?;
    d.set_item("n_cut", values.iter().map(|v| v.n_cut).collect::<Vec<_>>().into_pyarray(py))?;
    d.set_item("reason", values.iter().map(|v| v.reason.name()).collect::<Vec<_>>())?;
    Ok(d)
}

/// `n` truncated returns from one state and the steps simulated.
#[pyfunction]
fn value_error_sample_returns<'py>(
    py: Python<'py>,
    env: &PyValueErrorEnv,
    policy: &PyFixedPolicy,
    state: &Bound<'py, PyAny>,
    n: Count,
    length: Count,
    seed: Seed,
) -> PyResult<(Bound<'py, PyArray1<f64>>, u64)> {
    let n = n.0;
    let length = length.0;
    let seed = seed.0;
    let state = states_from(state)?;
    let (returns, steps) =
        py.detach(|| catalog::sample_returns(&env.inner, &policy.inner, &state, n, length, seed)).map_err(to_py)?;
    Ok((returns.into_pyarray(py), steps))
}

/// Checkpoint steps and the predictions at each.
type Curve<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray2<f64>>);

/// Linear TD(λ) (options: the keys of `TdSettings`): (steps, predictions with shape
/// (checkpoints, m)).
#[pyfunction]
fn value_error_learning_curve<'py>(
    py: Python<'py>,
    env: &PyValueErrorEnv,
    policy: &PyFixedPolicy,
    features: &PySparseFeatures,
    states: &Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Curve<'py>> {
    let states = states_from(states)?;
    let m = states.len();
    let settings: TdSettings = self::options(options)?;
    let curve = py
        .detach(|| catalog::learning_curve(&env.inner, &policy.inner, &features.inner, &states, settings))
        .map_err(to_py)?;
    let rows = curve.steps.len();
    let predictions = curve.predictions.into_pyarray(py).reshape([rows, m]).expect("rows * m predictions");
    Ok((curve.steps.into_pyarray(py), predictions))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(value_error_references, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_sample_returns, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_state_values, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_learning_curve, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_elementwise, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_mean, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_sample_size, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_rollout_length, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_accuracies, m)?)?;
    m.add_function(wrap_pyfunction!(value_error_guaranteed_error, m)?)?;
    m.add_function(wrap_pyfunction!(ebgstop_array, m)?)?;
    m.add_function(wrap_pyfunction!(ebgstop_iterator, m)?)?;
    m.add_function(wrap_pyfunction!(certify_array, m)?)?;
    Ok(())
}
