//! Replay evaluators (`bbrl.replay`): the validated log, the evaluations and their parallel runs,
//! the online truth, and the binomial survival function of the weighted estimate.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::env::PyFiniteEnv;
use super::stepper::PyStepper;
use super::to_py;
use bbrl_core::evaluators::replay::{
    self, binomial_sf, Config, Dataset, EpisodeEnd, LogColumns, LoggingInput, LoggingPolicy, Method, Outcome, Schedule,
};

/// A validated log of transitions.
#[pyclass(name = "ReplayDataset", module = "bbrl._core", frozen)]
pub(super) struct PyDataset {
    pub(super) inner: Arc<Dataset>,
}

fn vec_i64(a: &PyReadonlyArray1<'_, i64>) -> Vec<i64> {
    a.as_array().iter().copied().collect()
}

#[pymethods]
impl PyDataset {
    #[new]
    #[pyo3(signature = (n_states, n_actions, start_state, episode, t, state, action, reward, next_state,
                        terminal=None, logging_table=None, logging_rows=None, stationary=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_states: usize,
        n_actions: usize,
        start_state: usize,
        episode: PyReadonlyArray1<'_, i64>,
        t: PyReadonlyArray1<'_, i64>,
        state: PyReadonlyArray1<'_, i64>,
        action: PyReadonlyArray1<'_, i64>,
        reward: PyReadonlyArray1<'_, f64>,
        next_state: PyReadonlyArray1<'_, i64>,
        terminal: Option<PyReadonlyArray1<'_, bool>>,
        logging_table: Option<PyReadonlyArray2<'_, f64>>,
        logging_rows: Option<PyReadonlyArray2<'_, f64>>,
        stationary: bool,
    ) -> PyResult<Self> {
        let (episode, t, state, action, next_state) =
            (vec_i64(&episode), vec_i64(&t), vec_i64(&state), vec_i64(&action), vec_i64(&next_state));
        let reward: Vec<f64> = reward.as_array().iter().copied().collect();
        let terminal: Option<Vec<bool>> = terminal.map(|f| f.as_array().iter().copied().collect());
        let table: Option<Vec<f64>> = logging_table.map(|a| a.as_array().iter().copied().collect());
        let rows: Option<Vec<f64>> = logging_rows.map(|a| a.as_array().iter().copied().collect());
        let logging = match (&table, &rows) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err("give the logging policy as a table or per row, not both"))
            }
            (Some(t), None) => LoggingInput::Table(t),
            (None, Some(r)) => LoggingInput::PerRow { probabilities: r, stationary },
            (None, None) => LoggingInput::Unknown,
        };
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
    #[getter]
    fn start_state(&self) -> usize {
        self.inner.start_state()
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
        match self.inner.logging() {
            LoggingPolicy::Unknown => "unknown",
            LoggingPolicy::Table(_) => "table",
            LoggingPolicy::PerRow(_) => "per_row",
        }
    }

    /// The stationary logging policy (S, A) (NaN rows: states the log never visits), or None.
    fn logging_table<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        let (s, a) = (self.inner.n_states(), self.inner.n_actions());
        match self.inner.logging() {
            LoggingPolicy::Table(t) => Some(t.clone().into_pyarray(py).reshape([s, a]).expect("S*A entries")),
            _ => None,
        }
    }

    /// The rows as columns: (state, action, reward, next_state, terminal).
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let steps = self.inner.steps();
        let out = PyDict::new(py);
        out.set_item("state", steps.iter().map(|s| s.state as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("action", steps.iter().map(|s| s.action as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("reward", steps.iter().map(|s| s.reward).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("next_state", steps.iter().map(|s| s.next_state as i64).collect::<Vec<_>>().into_pyarray(py))?;
        out.set_item("terminal", steps.iter().map(|s| s.terminal).collect::<Vec<_>>().into_pyarray(py))?;
        Ok(out)
    }

    /// (complete episodes, rows of a dropped trailing episode, its id or None) under an episode end.
    fn complete_episodes(&self, end_kind: &str, horizon: usize) -> PyResult<(usize, usize, Option<i64>)> {
        let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
        let e = self.inner.episodes(end).map_err(to_py)?;
        Ok((e.ranges.len(), e.dropped_rows, e.dropped_episode))
    }
}

/// Runs spread over threads, or one after the other for an agent that calls back into Python
/// (it holds the GIL).
fn schedule(python_agent: bool, threads: Option<usize>) -> Schedule {
    if python_agent {
        Schedule::Sequential
    } else {
        Schedule::Parallel { threads }
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

/// `runs` evaluations of the agent behind `stepper` on `data` (one dict per run, in order); run
/// `i` steps a fork of the handle with stream `(seed, REPLAY_AGENT, i)`.
#[pyfunction]
#[pyo3(signature = (stepper, python_agent, data, method, end_kind, horizon, gamma=None, seed=0, runs=1, threads=None,
                    m_rule=None, m_value=None, max_length=None, weighted=false, max_episodes=None, trace=false))]
#[allow(clippy::too_many_arguments)]
fn replay_evaluate<'py>(
    py: Python<'py>,
    stepper: PyRef<'_, PyStepper>,
    python_agent: bool,
    data: &PyDataset,
    method: &str,
    end_kind: &str,
    horizon: usize,
    gamma: Option<f64>,
    seed: u64,
    runs: usize,
    threads: Option<usize>,
    m_rule: Option<String>,
    m_value: Option<f64>,
    max_length: Option<usize>,
    weighted: bool,
    max_episodes: Option<usize>,
    trace: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let method = Method::from_options(method, m_rule.as_deref(), m_value, max_length, weighted).map_err(to_py)?;
    let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
    let handle = &stepper.inner;
    let config = Config { method, end, gamma: gamma.unwrap_or(handle.setting().gamma), max_episodes, trace };
    let data = Arc::clone(&data.inner);
    let episodes = data.episodes(end).map_err(to_py)?;
    let schedule = schedule(python_agent, threads);
    let run = || replay::evaluate_runs(handle, &data, &episodes, &config, seed, runs, schedule);
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
    n_episodes: usize,
    end_kind: &str,
    horizon: usize,
    max_steps: usize,
    seed: u64,
) -> PyResult<PyDataset> {
    let env = Arc::clone(&env.env);
    let policy: Vec<f64> = policy.as_array().iter().copied().collect();
    let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
    let data = py.detach(|| replay::collect(&env, &policy, n_episodes, end, max_steps, seed)).map_err(to_py)?;
    Ok(PyDataset { inner: Arc::new(data) })
}

/// (runs, n_episodes) discounted returns of the agent behind `stepper` run online on `env`.
#[pyfunction]
#[pyo3(signature = (stepper, python_agent, env, n_episodes, end_kind, horizon, gamma=None, max_steps=1000, seed=0,
                    runs=1, threads=None))]
#[allow(clippy::too_many_arguments)]
fn replay_online<'py>(
    py: Python<'py>,
    stepper: PyRef<'_, PyStepper>,
    python_agent: bool,
    env: PyRef<'_, PyFiniteEnv>,
    n_episodes: usize,
    end_kind: &str,
    horizon: usize,
    gamma: Option<f64>,
    max_steps: usize,
    seed: u64,
    runs: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let env = Arc::clone(&env.env);
    let end = EpisodeEnd::parse(end_kind, horizon).map_err(to_py)?;
    let starts: Vec<usize> = (0..env.start_law().len()).filter(|&s| env.start_law()[s] > 0.0).collect();
    let [start] = starts[..] else {
        return Err(PyValueError::new_err("the online curve needs an environment with a single start state"));
    };
    let handle = &stepper.inner;
    let gamma = gamma.unwrap_or(handle.setting().gamma);
    let schedule = schedule(python_agent, threads);
    let run = || replay::online_runs(handle, &env, start, n_episodes, end, gamma, max_steps, seed, runs, schedule);
    let curves = if python_agent { run() } else { py.detach(run) }.map_err(to_py)?;
    let flat: Vec<f64> = curves.concat();
    Ok(flat.into_pyarray(py).reshape([runs, n_episodes]).expect("runs x n_episodes"))
}

/// P(Binomial(n, p) >= t) for every t of `t`, accurate far in the upper tail.
#[pyfunction]
fn binomial_survival<'py>(
    py: Python<'py>,
    n: u64,
    p: f64,
    t: PyReadonlyArray1<'_, i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    if !(0.0..=1.0).contains(&p) {
        return Err(PyValueError::new_err(format!("p must be in [0, 1], got {p}")));
    }
    let out: Vec<f64> = t.as_array().iter().map(|&k| if k <= 0 { 1.0 } else { binomial_sf(n, p, k as u64) }).collect();
    Ok(out.into_pyarray(py))
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
