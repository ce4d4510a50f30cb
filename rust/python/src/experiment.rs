//! Converts the core `Experiment` and `Progress` (the benchmark protocol over N test MDPs).

use std::sync::Arc;

use crate::convert::{Count, Seed};
use numpy::{IntoPyArray, PyArray3};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::agent::PyAgent;
use super::distribution::PyFdm;
use super::{reward_rows, table, to_py, work_rows, RunArrays};
use bbrl_core::agent::Setting;
use bbrl_core::evaluators::protocol::{reward_buffer_len, Experiment, Progress};
use bbrl_core::platform::host::host_info;

/// Progress of a running experiment, shared with the thread that runs it.
#[pyclass(name = "Progress", module = "bbrl._core", frozen)]
pub(super) struct PyProgress {
    pub(super) inner: Arc<Progress>,
}

#[pymethods]
impl PyProgress {
    #[new]
    fn new() -> Self {
        Self { inner: Arc::new(Progress::new()) }
    }
    /// Trajectories finished so far.
    fn done(&self) -> usize {
        self.inner.done()
    }
    /// Asks the run to stop after the trajectories in flight.
    fn cancel(&self) {
        self.inner.cancel()
    }
}

/// The protocol: test MDPs drawn once; agents trained and run on them.
#[pyclass(name = "Experiment", module = "bbrl._core", frozen)]
pub(super) struct PyExperiment {
    pub(super) inner: Experiment,
}

#[pymethods]
impl PyExperiment {
    #[new]
    fn new(py: Python<'_>, test: &PyFdm, n_mdps: Count, gamma: f64, horizon: Count, seed: Seed) -> PyResult<Self> {
        let n_mdps = n_mdps.0;
        let horizon = horizon.0;
        let seed = seed.0;
        let fdm = test.inner.clone();
        let inner = py.detach(|| Experiment::new(fdm, n_mdps, Setting { gamma, horizon }, seed)).map_err(to_py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn n_mdps(&self) -> usize {
        self.inner.mdps().len()
    }

    /// The transition table (S, A, S) of test MDP `index`.
    fn transitions<'py>(&self, py: Python<'py>, index: Count) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let index = index.0;
        let mdp = self.inner.mdp(index).map_err(to_py)?;
        Ok(table(py, mdp.transitions(), mdp.n_states(), mdp.n_actions()))
    }

    /// Trains `agent` on `prior`; returns the offline (wall, CPU) seconds and work counts (one per
    /// unit of `work_units()`), zero for an agent that learns nothing offline.
    fn learn_offline(
        &self,
        py: Python<'_>,
        mut agent: PyRefMut<'_, PyAgent>,
        prior: &PyFdm,
    ) -> PyResult<(f64, f64, Vec<u64>)> {
        let (exp, learner, fdm) = (&self.inner, &mut agent.inner, &prior.inner);
        let time = py.detach(|| learner.learn_in(exp, fdm)).map_err(to_py)?;
        Ok((time.wall_seconds, time.cpu_seconds, time.work.0.to_vec()))
    }

    /// Runs the trained agent on the test MDPs `start..stop` (default: every one); returns
    /// (returns, online wall seconds, online CPU seconds) per MDP, with `record_rewards` the
    /// (n, T) rewards of every step (else None), and the (n, units) work counts of each
    /// trajectory. Entry `k` is MDP `start + k`, exactly as in a run over every MDP.
    #[pyo3(
        signature = (agent, threads=None, progress=None, record_rewards=false, start=Count(0), stop=None),
        text_signature = "($self, agent, threads=None, progress=None, record_rewards=False, start=0, stop=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        agent: PyRef<'_, PyAgent>,
        threads: Option<usize>,
        progress: Option<&PyProgress>,
        record_rewards: bool,
        start: Count,
        stop: Option<Count>,
    ) -> PyResult<RunArrays<'py>> {
        let start = start.0;
        let stop = stop.map(|v| v.0);
        let trained = agent.inner.trained().map_err(to_py)?;
        let exp = &self.inner;
        let mdps = start..stop.unwrap_or(exp.mdps().len());
        let n = mdps.len();
        let progress = progress.map(|p| Arc::clone(&p.inner));
        let outcome =
            py.detach(|| exp.run_range(trained, mdps, threads, progress.as_deref(), record_rewards)).map_err(to_py)?;
        let rewards = reward_rows(py, outcome.rewards, n, exp.setting().horizon)?;
        let work = work_rows(py, &outcome.online_work)?;
        Ok((
            outcome.returns.into_pyarray(py),
            outcome.online_seconds.into_pyarray(py),
            outcome.online_cpu_seconds.into_pyarray(py),
            rewards,
            work,
        ))
    }
}

/// The number of entries (N x T) of the reward buffer of `n_mdps` trajectories of `horizon`
/// steps; raises ValueError, naming the size, above the 2 GiB cap.
#[pyfunction]
fn reward_buffer_entries(n_mdps: Count, horizon: Count) -> PyResult<usize> {
    let n_mdps = n_mdps.0;
    let horizon = horizon.0;
    reward_buffer_len(n_mdps, horizon).map_err(to_py)
}

/// The host the results are measured on: a dict with `cpu_model`, `vector_extensions` (a list),
/// `logical_cores`, `load_average` (1 minute, NaN if unknown), `cpu_clock_resolution_seconds` and
/// `vector_path` (the solvers' path in this process: `scalar`, `neon`, `avx2` or `avx512`).
#[pyfunction]
fn host<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let info = host_info();
    let out = PyDict::new(py);
    out.set_item("cpu_model", info.cpu_model)?;
    out.set_item("vector_extensions", info.vector_extensions)?;
    out.set_item("logical_cores", info.logical_cores)?;
    out.set_item("load_average", info.load_average)?;
    out.set_item("cpu_clock_resolution_seconds", bbrl_core::platform::cputime::cpu_clock_resolution_seconds())?;
    out.set_item("vector_path", bbrl_core::solve::SimdPath::selected().name())?;
    Ok(out)
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyExperiment>()?;
    m.add_class::<PyProgress>()?;
    m.add_function(wrap_pyfunction!(host, m)?)?;
    m.add_function(wrap_pyfunction!(reward_buffer_entries, m)?)?;
    Ok(())
}
