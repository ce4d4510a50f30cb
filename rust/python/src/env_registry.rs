//! The environment registry (`bbrl_core::envs::registry`) for Python: its entries as dicts, and
//! `make_env`, which builds a named environment as a `FiniteEnv` or a `ValueErrorEnv`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::continuous_env::PyValueErrorEnv;
use super::env::PyFiniteEnv;
use super::to_py;
use bbrl_core::envs::registry::{build, ENVIRONMENTS};
use bbrl_core::envs::{AnyEnv, DefaultPolicy, EnvOptions};

/// Every named environment: name, long_name, summary, state_space ("finite" or "box2"),
/// state_box (a continuous state's (low, high, name) per coordinate; empty when finite),
/// default_policy (None, or {"kind": "uniform"} or {"kind": "energy-pumping", "random_share": p}),
/// default_discount and options (the keyword arguments `make_env` accepts for it).
#[pyfunction]
fn environments(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    ENVIRONMENTS
        .iter()
        .map(|spec| {
            let entry = PyDict::new(py);
            entry.set_item("name", spec.name)?;
            entry.set_item("long_name", spec.long_name)?;
            entry.set_item("summary", spec.summary)?;
            entry.set_item("state_space", spec.state_space.as_str())?;
            entry.set_item("state_box", spec.state_box.to_vec())?;
            let policy = match spec.default_policy {
                None => None,
                Some(policy) => {
                    let entry = PyDict::new(py);
                    entry.set_item("kind", policy.kind())?;
                    if let DefaultPolicy::EnergyPumping { random_share } = policy {
                        entry.set_item("random_share", random_share)?;
                    }
                    Some(entry)
                }
            };
            entry.set_item("default_policy", policy)?;
            entry.set_item("default_discount", spec.default_discount)?;
            entry.set_item("options", spec.options.to_vec())?;
            Ok(entry)
        })
        .collect()
}

/// The environment `name` built with the given options (None: its default).
#[pyfunction]
#[pyo3(signature = (name, discount=None, time_limit=None, noise=None, size=None, mapping_seed=None))]
fn make_env(
    py: Python<'_>,
    name: &str,
    discount: Option<f64>,
    time_limit: Option<usize>,
    noise: Option<f64>,
    size: Option<usize>,
    mapping_seed: Option<u64>,
) -> PyResult<Py<PyAny>> {
    let options = EnvOptions { discount, time_limit, noise, size, mapping_seed };
    Ok(match build(name, &options).map_err(to_py)? {
        AnyEnv::Finite(env) => Py::new(py, PyFiniteEnv::wrap(*env))?.into_any(),
        other => Py::new(py, PyValueErrorEnv { inner: other })?.into_any(),
    })
}

/// Adds this file's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(environments, m)?)?;
    m.add_function(wrap_pyfunction!(make_env, m)?)?;
    Ok(())
}
