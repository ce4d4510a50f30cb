//! Converts the free-standing kernels (Dirichlet draws, solvers, NumPy seeds) from and to NumPy.

use crate::convert::{Count, Seed};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use super::{flat, mdp_from_arrays, table, to_py, ArrayPair};
use bbrl_core::model::dirichlet;
use bbrl_core::model::tables::cube_dims;
use bbrl_core::{rng, solve};

/// One Dirichlet draw `P ~ Dir(alpha)` (`dirichlet::sample_seeded`).
#[pyfunction]
fn sample_dirichlet<'py>(
    py: Python<'py>,
    alpha: PyReadonlyArray1<'_, f64>,
    seed: Seed,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let seed = seed.0;
    let alpha: Vec<f64> = alpha.as_array().iter().copied().collect();
    Ok(dirichlet::sample_seeded(&alpha, seed).map_err(to_py)?.into_pyarray(py))
}

/// One transition table `P[s, a, :] ~ Dir(counts[s, a, :])` (`dirichlet::sample_table_seeded`).
#[pyfunction]
fn sample_transitions<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray3<'_, f64>,
    seed: Seed,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    let seed = seed.0;
    let (s, a) = cube_dims(counts.shape(), "counts").map_err(to_py)?;
    let out = dirichlet::sample_table_seeded(&flat(&counts), s, a, seed).map_err(to_py)?;
    Ok(table(py, &out, s, a))
}

/// BBRL Q-iteration (SPEC 2.1); returns Q with shape (S, A).
#[pyfunction]
#[pyo3(signature = (transitions, rewards, gamma, max_sweeps, accuracy=solve::BBRL_Q_ACCURACY))]
fn q_iteration<'py>(
    py: Python<'py>,
    transitions: PyReadonlyArray3<'_, f64>,
    rewards: PyReadonlyArray3<'_, f64>,
    gamma: f64,
    max_sweeps: Count,
    accuracy: f64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let max_sweeps = max_sweeps.0;
    let mdp = mdp_from_arrays(transitions, rewards)?;
    let q = solve::q_values(mdp.view(), gamma, max_sweeps, accuracy).map_err(to_py)?;
    Ok(q.into_pyarray(py).reshape([mdp.n_states(), mdp.n_actions()]).expect("S*A entries"))
}

/// Guez value iteration (SPEC 2.2); returns (V with shape (S,), greedy policy with shape (S,)).
#[pyfunction]
#[pyo3(signature = (transitions, rewards, gamma, epsilon=solve::GUEZ_VI_EPSILON))]
fn value_iteration<'py>(
    py: Python<'py>,
    transitions: PyReadonlyArray3<'_, f64>,
    rewards: PyReadonlyArray3<'_, f64>,
    gamma: f64,
    epsilon: f64,
) -> PyResult<ArrayPair<'py, f64, i64>> {
    let mdp = mdp_from_arrays(transitions, rewards)?;
    let (v, pi) = solve::optimal_values(mdp.view(), gamma, epsilon).map_err(to_py)?;
    let pi: Vec<i64> = pi.into_iter().map(|a| a as i64).collect();
    Ok((v.into_pyarray(py), pi.into_pyarray(py)))
}

/// Expected discounted return over `horizon` steps of a stochastic policy (S, A), from each state.
#[pyfunction]
fn evaluate_policy<'py>(
    py: Python<'py>,
    transitions: PyReadonlyArray3<'_, f64>,
    rewards: PyReadonlyArray3<'_, f64>,
    policy: PyReadonlyArray2<'_, f64>,
    gamma: f64,
    horizon: Count,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let horizon = horizon.0;
    let mdp = mdp_from_arrays(transitions, rewards)?;
    let (shape, pi) = ([policy.shape()[0], policy.shape()[1]], policy.as_array().iter().copied().collect::<Vec<_>>());
    Ok(solve::policy_values(mdp.view(), &pi, shape, gamma, horizon).map_err(to_py)?.into_pyarray(py))
}

/// `bbrl_core::rng::first_draw`: what seeds a NumPy Generator on stream `(seed, purpose, index)`.
#[pyfunction]
fn first_draw(seed: Seed, purpose: Seed, index: Seed) -> u64 {
    let seed = seed.0;
    let purpose = purpose.0;
    let index = index.0;
    rng::first_draw(seed, purpose, index)
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sample_dirichlet, m)?)?;
    m.add_function(wrap_pyfunction!(sample_transitions, m)?)?;
    m.add_function(wrap_pyfunction!(q_iteration, m)?)?;
    m.add_function(wrap_pyfunction!(value_iteration, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_policy, m)?)?;
    m.add_function(wrap_pyfunction!(first_draw, m)?)?;
    Ok(())
}
