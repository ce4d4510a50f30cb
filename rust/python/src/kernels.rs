//! Free-standing kernels: Dirichlet draws and the solvers, on NumPy arrays.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{cube_dims, flat, mdp_from_arrays, table, to_py, ArrayPair};
use bbrl_core::agent::Setting;
use bbrl_core::evaluators::protocol::check_setting;
use bbrl_core::model::dirichlet;
use bbrl_core::rng::{purpose, stream};
use bbrl_core::{invalid, solve};

/// One Dirichlet draw `P ~ Dir(alpha)`; zero concentrations give exactly zero probability.
#[pyfunction]
fn sample_dirichlet<'py>(
    py: Python<'py>,
    alpha: PyReadonlyArray1<'_, f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let alpha: Vec<f64> = alpha.as_array().iter().copied().collect();
    if alpha.is_empty() || alpha.iter().any(|a| !(a.is_finite() && *a >= 0.0)) || alpha.iter().all(|&a| a == 0.0) {
        return Err(to_py(invalid!("alpha must be non-empty, finite, >= 0 and not all zero")));
    }
    let support: Vec<u32> = (0..alpha.len() as u32).filter(|&y| alpha[y as usize] > 0.0).collect();
    let mut out = vec![0.0; alpha.len()];
    dirichlet::sample_row(&alpha, &support, &mut out, &mut stream(seed, purpose::KERNEL, 0));
    Ok(out.into_pyarray(py))
}

/// One transition table `P[s, a, :] ~ Dir(counts[s, a, :])` for every row, from stream
/// (seed, KERNEL, 0); zero counts give exactly zero probability.
#[pyfunction]
fn sample_transitions<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray3<'_, f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    let (s, a) = cube_dims(counts.shape(), "counts")?;
    let counts = flat(&counts);
    let mut out = vec![0.0; counts.len()];
    let mut rng = stream(seed, purpose::KERNEL, 0);
    let mut support = Vec::with_capacity(s);
    for (row, (alpha, p)) in counts.chunks_exact(s.max(1)).zip(out.chunks_exact_mut(s.max(1))).enumerate() {
        if alpha.iter().any(|c| !(c.is_finite() && *c >= 0.0)) || alpha.iter().all(|&c| c == 0.0) {
            return Err(to_py(invalid!(
                "counts[{}, {}, :] must be finite, >= 0 and not all zero",
                row / a.max(1),
                row % a.max(1)
            )));
        }
        support.clear();
        support.extend((0..s as u32).filter(|&y| alpha[y as usize] > 0.0));
        dirichlet::sample_row(alpha, &support, p, &mut rng);
    }
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
    max_sweeps: usize,
    accuracy: f64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    check_setting(Setting { gamma, horizon: 1 }).map_err(to_py)?;
    if !(accuracy.is_finite() && accuracy >= 0.0) {
        return Err(PyValueError::new_err(format!("accuracy must be finite and >= 0, got {accuracy}")));
    }
    let mdp = mdp_from_arrays(transitions, rewards)?;
    let (s, a) = (mdp.n_states(), mdp.n_actions());
    let mut q = vec![0.0; s * a];
    solve::q_iteration(mdp.view(), gamma, max_sweeps, accuracy, &mut q);
    Ok(q.into_pyarray(py).reshape([s, a]).expect("S*A entries"))
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
    check_setting(Setting { gamma, horizon: 1 }).map_err(to_py)?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(PyValueError::new_err(format!("epsilon must be finite and > 0, got {epsilon}")));
    }
    let mdp = mdp_from_arrays(transitions, rewards)?;
    let s = mdp.n_states();
    let (mut v, mut pi) = (vec![0.0; s], vec![0usize; s]);
    solve::guez_value_iteration(mdp.view(), None, gamma, epsilon, &mut v, &mut pi);
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
    horizon: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let mdp = mdp_from_arrays(transitions, rewards)?;
    if policy.shape() != [mdp.n_states(), mdp.n_actions()] {
        return Err(PyValueError::new_err(format!(
            "policy must have shape (S, A) = ({}, {}), got {:?}",
            mdp.n_states(),
            mdp.n_actions(),
            policy.shape()
        )));
    }
    let pi: Vec<f64> = policy.as_array().iter().copied().collect();
    Ok(solve::evaluate_policy_finite(mdp.view(), &pi, gamma, horizon).into_pyarray(py))
}

/// The first 64-bit draw of stream `(seed, purpose, index)`: what seeds a Python agent's NumPy
/// Generator at the start of a task on that stream.
#[pyfunction]
fn first_draw(seed: u64, purpose: u64, index: u64) -> u64 {
    use rand::RngCore as _;
    stream(seed, purpose, index).next_u64()
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
