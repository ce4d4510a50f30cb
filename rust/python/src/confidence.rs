//! Converts the core's confidence sequences read at checkpoints (what a race looks at), and the
//! replicates of a percentile bootstrap.

use std::borrow::Cow;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::to_py;
use bbrl_core::confidence::{bootstrap, intervals_at_rows, BettingOptions, Sequence};
use bbrl_core::platform::threads;

/// The lower and upper bounds, (rows, checkpoints) each.
type Bounds<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);
/// Each resample's mean and interquartile mean.
type Replicates<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// The confidence sequence `kind` of each row of `samples` (each value in [low, high]) read
/// after each count of `checkpoints`: two (rows, checkpoints) arrays, the lower and upper bounds.
/// `kind`: "betting" or "asymptotic"; `tuned_for`: the sample count the sequence is tuned for
/// (betting: None gives the anytime bets; asymptotic: required); `one_sided`: each bound at level
/// 1 − delta on its own (for a caller that acts on one bound), instead of both at once.
#[pyfunction]
#[pyo3(signature = (samples, low, high, delta, checkpoints, kind="betting", max_bet=0.5, tuned_for=None, one_sided=false, threads=None))]
#[allow(clippy::too_many_arguments)]
fn confidence_intervals<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray2<'py, f64>,
    low: f64,
    high: f64,
    delta: f64,
    checkpoints: Vec<usize>,
    kind: &str,
    max_bet: f64,
    tuned_for: Option<u64>,
    one_sided: bool,
    threads: Option<usize>,
) -> PyResult<Bounds<'py>> {
    let (rows, columns) = (samples.shape()[0], samples.shape()[1]);
    let table: Vec<f64> = samples.as_array().iter().copied().collect();
    let sequence = Sequence::named(kind, BettingOptions { max_bet, tuned_for, ..BettingOptions::default() }, one_sided)
        .map_err(to_py)?;
    let found = py
        .detach(|| {
            threads::install(threads, rows, || {
                intervals_at_rows(&table, columns, low, high - low, delta, sequence, &checkpoints)
            })
        })
        .and_then(|r| r)
        .map_err(to_py)?;
    let lower: Vec<Vec<f64>> = found.chunks(checkpoints.len()).map(|r| r.iter().map(|p| p.0).collect()).collect();
    let upper: Vec<Vec<f64>> = found.chunks(checkpoints.len()).map(|r| r.iter().map(|p| p.1).collect()).collect();
    debug_assert_eq!(lower.len(), rows);
    Ok((PyArray2::from_vec2(py, &lower)?, PyArray2::from_vec2(py, &upper)?))
}

/// Each resample's mean and interquartile mean (`bootstrap::replicate_means_and_iqms`): `indices`
/// is (resamples, values) of indices into `values`. Returns two arrays, one value per resample.
#[pyfunction]
fn bootstrap_replicates<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    indices: PyReadonlyArray2<'py, u32>,
) -> PyResult<Replicates<'py>> {
    if indices.shape()[1] != values.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "bootstrap_replicates: each resample needs {} indices (one per value), got {}",
            values.len(),
            indices.shape()[1]
        )));
    }
    // Borrowed where contiguous (the caller's cached draws, read by every statistic), else copied.
    let (values, indices) = (values.as_array(), indices.as_array());
    let values: Cow<'_, [f64]> = values.as_slice().map_or_else(|| Cow::Owned(values.to_vec()), Cow::Borrowed);
    let indices: Cow<'_, [u32]> =
        indices.as_slice().map_or_else(|| Cow::Owned(indices.iter().copied().collect()), Cow::Borrowed);
    let (means, iqms) = py.detach(|| bootstrap::replicate_means_and_iqms(&values, &indices)).map_err(to_py)?;
    Ok((means.into_pyarray(py), iqms.into_pyarray(py)))
}

/// Adds this file's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(confidence_intervals, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap_replicates, m)?)?;
    Ok(())
}
