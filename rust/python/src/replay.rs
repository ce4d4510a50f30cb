//! Converts the replay evaluators (`bbrl_core::evaluators::replay`) for `bbrl.replay`.
//!
//! The log, the evaluations and the online truth (options as a dict), the binomial survival
//! function.

use std::sync::Arc;

use crate::convert::{Count, Seed};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::env::PyFiniteEnv;
use super::stepper::PyStepper;
use super::{options, to_py};
use bbrl_core::evaluators::replay::{
    self, Dataset, EpisodeEnd, LogColumns, LoggingInput, LoggingPolicy, OnlineOptions, Outcome, ReplayOptions,
};

/// A validated log of transitions.
#[pyclass(name = "ReplayDataset", module = "bbrl._core", frozen)]
pub(super) struct PyDataset {
    pub(super) inner: Arc<Dataset>,
}

/// A log from a dict: its columns (`terminal` may be None) and its logging policy
/// (`logging_table` (S, A), `logging_rows` (N, A) or neither, and `stationary`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Log<'py> {
    episode: PyReadonlyArray1<'py, i64>,
    t: PyReadonlyArray1<'py, i64>,
    state: PyReadonlyArray1<'py, i64>,
    action: PyReadonlyArray1<'py, i64>,
    reward: PyReadonlyArray1<'py, f64>,
    next_state: PyReadonlyArray1<'py, i64>,
    terminal: Option<PyReadonlyArray1<'py, bool>>,
    logging_table: Option<PyReadonlyArray2<'py, f64>>,
    logging_rows: Option<PyReadonlyArray2<'py, f64>>,
    stationary: bool,
}

fn vec<T: numpy::Element + Copy, D: numpy::ndarray::Dimension>(a: &numpy::PyReadonlyArray<'_, T, D>) -> Vec<T> {
    a.as_array().iter().copied().collect()
}

#[pymethods]
impl PyDataset {
    /// `start_state` None: episodes start where the log says (replay uses the logged starts).
    #[new]
    #[pyo3(signature = (n_states, n_actions, start_state, log))]
    fn new(n_states: Count, n_actions: Count, start_state: Option<Count>, log: Log<'_>) -> PyResult<Self> {
        let n_states = n_states.0;
        let n_actions = n_actions.0;
        let start_state = start_state.map(|v| v.0);
        let (episode, t, state, action, next_state) =
            (vec(&log.episode), vec(&log.t), vec(&log.state), vec(&log.action), vec(&log.next_state));
        let (reward, terminal) = (vec(&log.reward), log.terminal.as_ref().map(vec));
        let (table, rows) = (log.logging_table.as_ref().map(vec), log.logging_rows.as_ref().map(vec));
        let logging = LoggingInput::from_options(table.as_deref(), rows.as_deref(), log.stationary).map_err(to_py)?;
        let columns = LogColumns {
            episode: &episode,
            t: &t,
            state: &state,
            action: &action,
            reward: &reward,
            next_state: &next_state,
            terminal: terminal.as_deref(),
        };
        let inner = Dataset::new(n_states, n_actions, start_state, columns, logging).map_err(to_py)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    #[getter]
    fn n_states(&self) -> usize {
        self.inner.n_states()
    }
    #[getter]
    fn n_actions(&self) -> usize {
        self.inner.n_actions()
    }
    /// The fixed start state, or None (the log's own start states).
    #[getter]
    fn start_state(&self) -> Option<usize> {
        self.inner.start_state()
    }

    /// The start state of every logged episode, in log order.
    fn logged_starts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.logged_starts().iter().map(|&s| s as i64).collect::<Vec<_>>().into_pyarray(py)
    }

    /// The log's maximum-likelihood model (`replay::mle_model`): `transitions` and `rewards` (S, A,
    /// S), `start` (S,), and `unvisited`, the rule for pairs the log never tried.
    fn mle_model<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, a) = (self.inner.n_states(), self.inner.n_actions());
        let env = replay::mle_model(&self.inner, 1.0, 1).map_err(to_py)?;
        let out = PyDict::new(py);
        let table = |v: &[f64]| v.to_vec().into_pyarray(py).reshape([s, a, s]);
        out.set_item("transitions", table(env.mdp().transitions())?)?;
        out.set_item("rewards", table(env.mdp().rewards())?)?;
        out.set_item("start", env.start_law().to_vec().into_pyarray(py))?;
        out.set_item("unvisited", replay::UNVISITED_RULE)?;
        Ok(out)
    }
    #[getter]
    fn n_rows(&self) -> usize {
        self.inner.steps().len()
    }
    #[getter]
    fn n_episodes(&self) -> usize {
        self.inner.n_episodes()
    }

    /// `"unknown"`, `"table"` or `"per_row"`.
    #[getter]
    fn logging_kind(&self) -> &'static str {
        self.inner.logging().kind()
    }

    /// The stationary logging policy (S, A) (NaN rows: states the log never visits), or None.
    fn logging_table<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        let (s, a) = (self.inner.n_states(), self.inner.n_actions());
        match self.inner.logging() {
            LoggingPolicy::Table(t) => Some(t.clone().into_pyarray(py).reshape([s, a]).expect("S*A entries")),
            _ => None,
        }
    }

    /// The rows as columns: (episode, t, state, action, reward, next_state, terminal).
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let steps = self.inner.steps();
        let out = PyDict::new(py);
        let (episode, t) = self.inner.episode_and_t();
        out.set_item("episode", episode.into_pyarray(py))?;
        out.set_item("t", t.into_pyarray(py))?;
        out.set_item("state", steps.iter().map(|s| s.state as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("action", steps.iter().map(|s| s.action as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("reward", steps.iter().map(|s| s.reward).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("next_state", steps.iter().map(|s| s.next_state as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("terminal", steps.iter().map(|s| s.terminal).collect::<Vec<_>>().into_pyarray(py))?;
        Ok(out)
    }

    /// (complete episodes, rows of a dropped trailing episode, its id or None) under an episode end.
    fn complete_episodes(&self, end_kind: &str, horizon: Count) -> PyResult<(usize, usize, Option<i64>)> {
        let horizon = horizon.0;
        let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
        let e = self.inner.episodes(end).map_err(to_py)?;
        Ok((e.ranges.len(), e.dropped_rows, e.dropped_episode))
    }
}

fn outcome_dict<'py>(py: Python<'py>, o: Outcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("returns", o.returns.into_pyarray(py))?;
    d.set_item("lengths", o.lengths.iter().map(|&l| l as i64).collect::<Vec<_>>().into_pyarray(py))?;
    d.set_item("tuples_used", o.tuples_used)?;
    d.set_item("proposals", o.proposals)?;
    d.set_item("accepted", o.accepted)?;
    d.set_item("stop_reason", o.stop.tag())?;
    d.set_item("stop_message", o.stop.describe())?;
    d.set_item("m_values", o.m_values.into_pyarray(py))?;
    d.set_item("weighted", o.weighted.map(|w| w.into_pyarray(py)))?;
    if !o.trace.is_empty() {
        let col = |f: &dyn Fn(&(usize, bbrl_core::agent::Transition)) -> i64| o.trace.iter().map(f).collect::<Vec<_>>();
        let trace = PyDict::new(py);
        trace.set_item("episode", col(&|x| x.0 as i64).into_pyarray(py))?;
        trace.set_item("state", col(&|x| x.1.state as i64).into_pyarray(py))?;
        trace.set_item("action", col(&|x| x.1.action as i64).into_pyarray(py))?;
        trace.set_item("next_state", col(&|x| x.1.next_state as i64).into_pyarray(py))?;
        trace.set_item("reward", o.trace.iter().map(|x| x.1.reward).collect::<Vec<_>>().into_pyarray(py))?;
        d.set_item("trace", trace)?;
    }
    Ok(d)
}

/// `runs` evaluations of the agent behind `stepper` on `data` (`replay::evaluate_with`; options: the
/// keys of `ReplayOptions`), one dict per run, in order. A Python agent (`python_agent`) keeps the
/// GIL, so its runs go one after the other (worker processes each run a block, `first_run`).
#[pyfunction]
fn replay_evaluate<'py>(
    py: Python<'py>,
    stepper: PyRef<'_, PyStepper>,
    python_agent: bool,
    data: &PyDataset,
    options: &Bound<'py, PyDict>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let options: ReplayOptions = self::options(options)?;
    let (handle, data) = (&stepper.inner, &data.inner);
    let run = || replay::evaluate_with(handle, data, &options, python_agent);
    let outcomes = if python_agent { run() } else { py.detach(run) }.map_err(to_py)?;
    outcomes.into_iter().map(|o| outcome_dict(py, o)).collect()
}

/// A log of `n_episodes` episodes of the stationary `policy` (S, A) on `env`.
#[pyfunction]
#[pyo3(signature = (env, policy, n_episodes, end_kind, horizon, max_steps, seed))]
#[allow(clippy::too_many_arguments)]
fn replay_collect(
    py: Python<'_>,
    env: PyRef<'_, PyFiniteEnv>,
    policy: PyReadonlyArray2<'_, f64>,
    n_episodes: Count,
    end_kind: &str,
    horizon: Count,
    max_steps: Count,
    seed: Seed,
) -> PyResult<PyDataset> {
    let n_episodes = n_episodes.0;
    let horizon = horizon.0;
    let max_steps = max_steps.0;
    let seed = seed.0;
    let env = Arc::clone(env.episode.env());
    let policy: Vec<f64> = policy.as_array().iter().copied().collect();
    let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
    let data = py.detach(|| replay::collect(&env, &policy, n_episodes, end, max_steps, seed)).map_err(to_py)?;
    Ok(PyDataset { inner: Arc::new(data) })
}

/// (runs, n_episodes) discounted returns of the agent behind `stepper` run online on `env`
/// (`replay::online_with`; options: the keys of `OnlineOptions`).
#[pyfunction]
fn replay_online<'py>(
    py: Python<'py>,
    stepper: PyRef<'_, PyStepper>,
    python_agent: bool,
    env: PyRef<'_, PyFiniteEnv>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let options: OnlineOptions = self::options(options)?;
    let (handle, env) = (&stepper.inner, Arc::clone(env.episode.env()));
    let run = || replay::online_with(handle, &env, &options, python_agent);
    let curves = if python_agent { run() } else { py.detach(run) }.map_err(to_py)?;
    let shape = [options.runs, options.n_episodes];
    Ok(curves.concat().into_pyarray(py).reshape(shape).expect("runs x n_episodes"))
}

/// P(Binomial(n, p) >= t) for every t of `t`, accurate far in the upper tail.
#[pyfunction]
fn binomial_survival<'py>(
    py: Python<'py>,
    n: Seed,
    p: f64,
    t: PyReadonlyArray1<'_, i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let n = n.0;
    let t: Vec<i64> = t.as_array().iter().copied().collect();
    Ok(replay::binomial_survival(n, p, &t).map_err(to_py)?.into_pyarray(py))
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDataset>()?;
    m.add_function(wrap_pyfunction!(replay_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(replay_collect, m)?)?;
    m.add_function(wrap_pyfunction!(replay_online, m)?)?;
    m.add_function(wrap_pyfunction!(binomial_survival, m)?)?;
    Ok(())
}
