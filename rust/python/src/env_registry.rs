//! The environment registry (`bbrl_core::envs::registry`) for Python: its entries as dicts, and
//! `make_env`, which builds a named environment as a `FiniteEnv` or a `ValueErrorEnv`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::continuous_env::PyValueErrorEnv;
use super::env::PyFiniteEnv;
use super::{set_range, to_py, value_of};
use bbrl_core::envs::registry::{build, find, ENVIRONMENTS};
use bbrl_core::envs::{AnyEnv, DefaultPolicy, EnvOptions, OPTIONS};

/// Every named environment: name, long_name, summary, state_space ("finite" or "box2"),
/// state_box (a continuous state's (low, high, name) per coordinate; empty when finite),
/// default_policy (None, or {"kind": "uniform"} or {"kind": "energy-pumping", "random_share": p}),
/// default_discount and options (those `make_env` accepts for it: name, type, doc, sizes_memory and
/// the typed range keys of `set_range`).
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
            let options = OPTIONS
                .iter()
                .filter(|o| spec.options.contains(&o.name))
                .map(|o| {
                    let option = PyDict::new(py);
                    option.set_item("name", o.name)?;
                    option.set_item("type", o.ty.as_str())?;
                    option.set_item("doc", o.doc)?;
                    option.set_item("sizes_memory", o.sizes_memory)?;
                    set_range(&option, o.range)?;
                    Ok(option)
                })
                .collect::<PyResult<Vec<_>>>()?;
            entry.set_item("options", options)?;
            Ok(entry)
        })
        .collect()
}

/// The environment `name` built with `options` (a dict of option name to value; None: the
/// default), each read by the registry's typed option specs (`bbrl_core::envs::OPTIONS`).
#[pyfunction]
#[pyo3(signature = (name, options=None))]
fn make_env(py: Python<'_>, name: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
    let spec = find(name).map_err(to_py)?;
    let mut pairs = Vec::new();
    if let Some(options) = options {
        for (key, value) in options.iter() {
            let key: String = key.extract()?;
            if !value.is_none() {
                pairs.push((key.clone(), value_of(&format!("environment '{}': option '{key}'", spec.name), &value)?));
            }
        }
    }
    let options = EnvOptions::read(spec, pairs.iter().map(|(k, v)| (k.as_str(), v))).map_err(to_py)?;
    Ok(match build(spec.name, &options).map_err(to_py)? {
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
