//! Converts the core `EpisodicExperiment` (K episodes of H steps per run, regret per episode).

use std::sync::Arc;

use crate::convert::{Count, Seed};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray3};
use pyo3::prelude::*;

use super::agent::PyAgent;
use super::callback::FreshCopies;
use super::distribution::PyFdm;
use super::experiment::PyProgress;
use super::{mdp_from_arrays, table, to_py, work_rows};
use bbrl_core::evaluators::episodic::{EpisodicExperiment, EpisodicOutcome, EpisodicProblem};

/// A run's arrays: (runs, K) returns, realised regret, expected regret, steps, CPU seconds; then
/// per run the wall seconds and the (runs, units) work counts.
type EpisodicArrays<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<u64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray2<u64>>,
);

/// A prior's tables: theta, rewards, initial state (-1: uniform).
type PriorTables<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>, i64);

/// The episodic protocol held by the core.
#[pyclass(name = "EpisodicExperiment", module = "bbrl._core", frozen)]
pub(super) struct PyEpisodicExperiment {
    inner: EpisodicExperiment,
}

impl PyEpisodicExperiment {
    fn arrays<'py>(&self, py: Python<'py>, out: EpisodicOutcome) -> PyResult<EpisodicArrays<'py>> {
        let shape = [out.run_seconds.len(), self.inner.episodes()];
        Ok((
            out.returns.into_pyarray(py).reshape(shape)?,
            out.regret.into_pyarray(py).reshape(shape)?,
            out.expected_regret.into_pyarray(py).reshape(shape)?,
            out.steps.into_pyarray(py).reshape(shape)?,
            out.cpu_seconds.into_pyarray(py).reshape(shape)?,
            out.run_seconds.into_pyarray(py),
            work_rows(py, &out.run_work)?,
        ))
    }
}

#[pymethods]
impl PyEpisodicExperiment {
    /// `n_runs` runs of `episodes` episodes of at most `horizon` steps on one MDP (tables (S, A, S),
    /// start law (S,), terminal flags (S,) or empty, the reward noise's standard deviations (S * A,
    /// row major) or empty); agents get (`gamma`, `horizon`).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        transitions: PyReadonlyArray3<'_, f64>,
        rewards: PyReadonlyArray3<'_, f64>,
        start: PyReadonlyArray1<'_, f64>,
        terminal: Vec<bool>,
        reward_noise: Vec<f64>,
        horizon: Count,
        n_runs: Count,
        episodes: Count,
        gamma: f64,
        seed: Seed,
    ) -> PyResult<Self> {
        let horizon = horizon.0;
        let n_runs = n_runs.0;
        let episodes = episodes.0;
        let seed = seed.0;
        let mdp = mdp_from_arrays(transitions, rewards)?;
        let start = start.as_array().to_vec();
        let problem = EpisodicProblem::new(mdp, start, terminal, horizon)
            .and_then(|p| p.with_reward_noise(reward_noise))
            .map_err(to_py)?;
        let inner = py.detach(|| EpisodicExperiment::fixed(problem, n_runs, episodes, gamma, seed)).map_err(to_py)?;
        Ok(Self { inner })
    }

    /// Run `i` on the MDP drawn from `test` with stream (seed, TEST_MDP, i).
    #[staticmethod]
    fn drawn(
        py: Python<'_>,
        test: &PyFdm,
        horizon: Count,
        n_runs: Count,
        episodes: Count,
        gamma: f64,
        seed: Seed,
    ) -> PyResult<Self> {
        let horizon = horizon.0;
        let n_runs = n_runs.0;
        let episodes = episodes.0;
        let seed = seed.0;
        let fdm = test.inner.clone();
        let inner =
            py.detach(|| EpisodicExperiment::drawn(fdm, horizon, n_runs, episodes, gamma, seed)).map_err(to_py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn n_runs(&self) -> usize {
        self.inner.n_runs()
    }
    #[getter]
    fn episodes(&self) -> usize {
        self.inner.episodes()
    }
    #[getter]
    fn horizon(&self) -> usize {
        self.inner.setting().horizon
    }
    #[getter]
    fn n_states(&self) -> usize {
        self.inner.n_states()
    }
    #[getter]
    fn n_actions(&self) -> usize {
        self.inner.n_actions()
    }

    /// The start state of every episode, (runs, K).
    fn starts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let starts: Vec<u64> = self.inner.starts().iter().map(|&s| s as u64).collect();
        starts.into_pyarray(py).reshape([self.inner.n_runs(), self.inner.episodes()])
    }

    /// V*_0(s_0) of every episode, (runs, K).
    fn episode_optima<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.inner.episode_optima().into_pyarray(py).reshape([self.inner.n_runs(), self.inner.episodes()])
    }

    /// V*_h(s) of run `run`'s MDP, (H + 1, S).
    fn optimal_values<'py>(&self, py: Python<'py>, run: Count) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let run = run.0;
        let optimum = self.inner.optimum(run).map_err(to_py)?;
        optimum.values().to_vec().into_pyarray(py).reshape([optimum.horizon() + 1, self.inner.n_states()])
    }

    /// The tables of the prior the Bayesian agents learn from: (theta (S, A, S), rewards (S, A, S),
    /// initial state or -1 for a uniform one). A Dirichlet of `concentration` on every next state,
    /// or (None, drawn MDPs) the distribution they were drawn from.
    #[pyo3(signature = (concentration=None))]
    fn prior_tables<'py>(&self, py: Python<'py>, concentration: Option<f64>) -> PyResult<PriorTables<'py>> {
        let fdm = self.inner.prior(concentration).map_err(to_py)?;
        let (s, a) = (fdm.n_states(), fdm.n_actions());
        let initial = fdm.initial_state().map_or(-1, |x| x as i64);
        Ok((table(py, fdm.theta(), s, a), table(py, fdm.rewards(), s, a), initial))
    }

    /// Trains `agent` on `prior` for (gamma, H) with stream (seed, AGENT_OFFLINE, 0), as the
    /// benchmark protocol does; returns the
    /// offline (wall, CPU) seconds and work counts.
    fn learn_offline(
        &self,
        py: Python<'_>,
        mut agent: PyRefMut<'_, PyAgent>,
        prior: &PyFdm,
    ) -> PyResult<(f64, f64, Vec<u64>)> {
        let (setting, seed) = (self.inner.setting(), self.inner.seed());
        let (learner, fdm) = (&mut agent.inner, &prior.inner);
        if (fdm.n_states(), fdm.n_actions()) != (self.inner.n_states(), self.inner.n_actions()) {
            return Err(to_py(bbrl_core::invalid!(
                "the prior has {} states and {} actions; the experiment's MDPs have {} and {}",
                fdm.n_states(),
                fdm.n_actions(),
                self.inner.n_states(),
                self.inner.n_actions()
            )));
        }
        let time = py.detach(|| learner.learn_offline(fdm, setting, seed)).map_err(to_py)?;
        Ok((time.wall_seconds, time.cpu_seconds, time.work.0.to_vec()))
    }

    /// Runs the trained built-in agent in every run over `threads` threads (None: every core).
    #[pyo3(signature = (agent, threads=None, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        agent: PyRef<'_, PyAgent>,
        threads: Option<usize>,
        progress: Option<&PyProgress>,
    ) -> PyResult<EpisodicArrays<'py>> {
        let trained = agent.inner.trained().map_err(to_py)?;
        let exp = &self.inner;
        let progress = progress.map(|p| Arc::clone(&p.inner));
        let out = py.detach(|| exp.run(trained, threads, progress.as_deref())).map_err(to_py)?;
        self.arrays(py, out)
    }

    /// Runs the trained Python `agent` in every run, in order on this thread, a fresh
    /// `copy.deepcopy` of it per run.
    #[pyo3(signature = (agent, name, runs=None))]
    fn run_python<'py>(
        &self,
        py: Python<'py>,
        agent: &Bound<'py, PyAny>,
        name: String,
        runs: Option<Vec<usize>>,
    ) -> PyResult<EpisodicArrays<'py>> {
        let mut copies = FreshCopies::new(agent, name, self.inner.n_actions())?;
        let runs = runs.unwrap_or_else(|| (0..self.inner.n_runs()).collect());
        let outcome = self.inner.run_each_of(&runs, |_| copies.make());
        let out = copies.outcome(py, outcome)?;
        self.arrays(py, out)
    }
}

/// Adds this file's class to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEpisodicExperiment>()?;
    Ok(())
}
