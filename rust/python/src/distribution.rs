//! Converts a core `Fdm` from and to NumPy tables (`Distribution`).

use crate::convert::Seed;
use numpy::{PyArray3, PyReadonlyArray1, PyReadonlyArray3};
use pyo3::prelude::*;

use super::{flat, table, table_pair_dims, to_py};
use bbrl_core::model::fdm::Fdm;
use bbrl_core::model::tables::initial_state as initial;

/// A validated FDM distribution held by the core.
#[pyclass(name = "Distribution", module = "bbrl._core", frozen)]
pub(super) struct PyFdm {
    pub(super) inner: Fdm,
}

#[pymethods]
impl PyFdm {
    /// `start_law`: one probability per state, in place of the initial state (which must then be -1).
    #[new]
    #[pyo3(signature = (theta, rewards, initial_state, start_law=None))]
    fn new(
        theta: PyReadonlyArray3<'_, f64>,
        rewards: PyReadonlyArray3<'_, f64>,
        initial_state: i64,
        start_law: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<Self> {
        let (s, a) = table_pair_dims(&theta, "theta", &rewards)?;
        let inner =
            Fdm::new(s, a, flat(&theta), flat(&rewards), initial(initial_state, s).map_err(to_py)?).map_err(to_py)?;
        let inner = match start_law {
            None => inner,
            Some(_) if initial_state != -1 => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a distribution with a start law has no initial state: give initial_state=None",
                ))
            }
            Some(law) => inner.with_start_law(law.as_array().to_vec()).map_err(to_py)?,
        };
        Ok(Self { inner })
    }

    /// One MDP's transition table (S, A, S) (`Fdm::sample_seeded`).
    fn sample_transitions<'py>(&self, py: Python<'py>, seed: Seed) -> Bound<'py, PyArray3<f64>> {
        let seed = seed.0;
        let mdp = self.inner.sample_seeded(seed);
        table(py, mdp.transitions(), self.inner.n_states(), self.inner.n_actions())
    }

    /// The transition table (S, A, S) of test MDP `index` of an experiment with `seed` (`Fdm::test_mdp`).
    fn sample_test_mdp<'py>(&self, py: Python<'py>, seed: Seed, index: Seed) -> Bound<'py, PyArray3<f64>> {
        let seed = seed.0;
        let index = index.0;
        let mdp = self.inner.test_mdp(seed, index);
        table(py, mdp.transitions(), self.inner.n_states(), self.inner.n_actions())
    }
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFdm>()?;
    Ok(())
}
