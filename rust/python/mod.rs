//! The PyO3 bindings (`bbrl._core`): conversions and GIL handling only; no logic lives here.
//! Docstrings and validation with friendly messages live in the Python package; these functions
//! re-validate everything (the core returns errors, never panics) so that no input can crash.

use std::sync::Arc;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::agents::{self, Agent, ParamValue, Params, ResetContext, Setting, Transition};
use crate::error::BbrlError;
use crate::experiment::{check_setting, Experiment, Progress};
use crate::fdm::Fdm;
use crate::mdp::Mdp;
use crate::rng::{purpose, stream, Rng};
use crate::{dirichlet, invalid, solve};

mod callback;

fn to_py(e: BbrlError) -> PyErr {
    match e {
        BbrlError::InvalidArgument(m) => PyValueError::new_err(m),
        BbrlError::Cancelled => PyKeyboardInterrupt::new_err("run cancelled"),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// (S, A, S) dimensions of a table, checked to be a cube over states.
fn cube_dims(shape: &[usize], name: &str) -> PyResult<(usize, usize)> {
    match shape {
        [s, a, s2] if s == s2 => Ok((*s, *a)),
        _ => Err(PyValueError::new_err(format!("{name} must have shape (S, A, S), got {shape:?}"))),
    }
}

fn flat(array: &PyReadonlyArray3<'_, f64>) -> Vec<f64> {
    array.as_array().iter().copied().collect()
}

fn initial(initial_state: i64, n_states: usize) -> PyResult<Option<usize>> {
    match initial_state {
        -1 => Ok(None),
        s if s >= 0 && (s as usize) < n_states => Ok(Some(s as usize)),
        s => Err(PyValueError::new_err(format!("initial state {s} is out of range 0..{n_states} (or -1 for random)"))),
    }
}

fn mdp_from_arrays(transitions: PyReadonlyArray3<'_, f64>, rewards: PyReadonlyArray3<'_, f64>) -> PyResult<Mdp> {
    let (s, a) = cube_dims(transitions.shape(), "transitions")?;
    if rewards.shape() != transitions.shape() {
        return Err(PyValueError::new_err(format!(
            "rewards shape {:?} differs from transitions shape {:?}",
            rewards.shape(),
            transitions.shape()
        )));
    }
    Mdp::new(s, a, flat(&transitions), flat(&rewards), Some(0)).map_err(to_py)
}

/// Two arrays returned together.
type ArrayPair<'py, T, U> = (Bound<'py, PyArray1<T>>, Bound<'py, PyArray1<U>>);

/// A validated FDM distribution held by the core.
#[pyclass(name = "Distribution", module = "bbrl._core", frozen)]
struct PyFdm {
    inner: Fdm,
}

#[pymethods]
impl PyFdm {
    #[new]
    fn new(theta: PyReadonlyArray3<'_, f64>, rewards: PyReadonlyArray3<'_, f64>, initial_state: i64) -> PyResult<Self> {
        let (s, a) = cube_dims(theta.shape(), "theta")?;
        if rewards.shape() != theta.shape() {
            return Err(PyValueError::new_err(format!(
                "rewards shape {:?} differs from theta shape {:?}",
                rewards.shape(),
                theta.shape()
            )));
        }
        let inner = Fdm::new(s, a, flat(&theta), flat(&rewards), initial(initial_state, s)?).map_err(to_py)?;
        Ok(Self { inner })
    }

    /// Draws one MDP's transition table (S, A, S) from stream (seed, KERNEL, 0).
    fn sample_transitions<'py>(&self, py: Python<'py>, seed: u64) -> Bound<'py, PyArray3<f64>> {
        let mdp = self.inner.sample_mdp(&mut stream(seed, purpose::KERNEL, 0));
        table(py, mdp.transitions(), self.inner.n_states(), self.inner.n_actions())
    }
}

fn table<'py>(py: Python<'py>, data: &[f64], s: usize, a: usize) -> Bound<'py, PyArray3<f64>> {
    data.to_vec().into_pyarray(py).reshape([s, a, s]).expect("length S*A*S by construction")
}

/// Converts a Python dict of agent parameters.
fn params_from(dict: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut params = Params::new();
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        let v = if value.is_instance_of::<PyBool>() {
            ParamValue::Bool(value.extract()?)
        } else if value.is_instance_of::<PyInt>() {
            ParamValue::Int(value.extract()?)
        } else if value.is_instance_of::<PyFloat>() {
            ParamValue::Float(value.extract()?)
        } else if value.is_instance_of::<PyString>() {
            ParamValue::Text(value.extract()?)
        } else {
            return Err(PyTypeError::new_err(format!(
                "parameter '{key}' must be a bool, int, float or str, got {}",
                value.get_type().name()?
            )));
        };
        params.insert(key, v);
    }
    Ok(params)
}

/// A Rust agent. Besides the protocol, it can be stepped by hand (reset/act/observe), which is
/// what conformance tests and replay evaluators need.
#[pyclass(name = "Agent", module = "bbrl._core")]
struct PyAgent {
    inner: Box<dyn Agent>,
    /// (S, A) once trained.
    shape: Option<(usize, usize)>,
    /// The stream used by the hand-stepping methods.
    rng: Rng,
    setting: Option<Setting>,
}

impl PyAgent {
    fn trained_shape(&self) -> PyResult<(usize, usize)> {
        self.shape.ok_or_else(|| PyValueError::new_err("the agent has not learned offline yet"))
    }
    fn check_state(&self, state: usize) -> PyResult<()> {
        let (s, _) = self.trained_shape()?;
        if state >= s {
            return Err(PyValueError::new_err(format!("state {state} is out of range 0..{s}")));
        }
        Ok(())
    }
}

#[pymethods]
impl PyAgent {
    #[new]
    fn new(kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let inner = agents::build(kind, &params_from(params)?).map_err(to_py)?;
        Ok(Self { inner, shape: None, rng: stream(0, purpose::KERNEL, 0), setting: None })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    #[getter]
    fn is_oracle(&self) -> bool {
        self.inner.is_oracle()
    }

    /// Offline learning on `prior` outside an experiment; returns the wall time in seconds.
    fn learn_offline(&mut self, py: Python<'_>, prior: &PyFdm, gamma: f64, horizon: usize, seed: u64) -> PyResult<f64> {
        let setting = Setting { gamma, horizon };
        check_setting(setting).map_err(to_py)?;
        let agent = &mut self.inner;
        let fdm = &prior.inner;
        let seconds = py.detach(|| {
            let mut rng = stream(seed, purpose::AGENT_OFFLINE, 0);
            let start = std::time::Instant::now();
            agent.learn_offline(fdm, setting, &mut rng).map(|_| start.elapsed().as_secs_f64())
        });
        let seconds = seconds.map_err(to_py)?;
        self.shape = Some((fdm.n_states(), fdm.n_actions()));
        self.setting = Some(setting);
        Ok(seconds)
    }

    /// Starts a hand-stepped trajectory with its own random stream (seed, AGENT_ONLINE, 0).
    fn reset(&mut self, seed: u64) -> PyResult<()> {
        self.trained_shape()?;
        if self.inner.is_oracle() {
            return Err(PyValueError::new_err("an oracle agent needs the true MDP: run it through an Experiment"));
        }
        let setting = self.setting.ok_or_else(|| PyValueError::new_err("the agent has not learned offline yet"))?;
        self.rng = stream(seed, purpose::AGENT_ONLINE, 0);
        self.inner.reset(&ResetContext { setting, true_mdp: None }, &mut self.rng).map_err(to_py)
    }

    fn act(&mut self, state: usize) -> PyResult<usize> {
        self.check_state(state)?;
        self.inner.act(state, &mut self.rng).map_err(to_py)
    }

    fn observe(&mut self, state: usize, action: usize, reward: f64, next_state: usize) -> PyResult<()> {
        self.check_state(state)?;
        self.check_state(next_state)?;
        let (_, a) = self.trained_shape()?;
        if action >= a {
            return Err(PyValueError::new_err(format!("action {action} is out of range 0..{a}")));
        }
        self.inner.observe(Transition { state, action, reward, next_state }, &mut self.rng).map_err(to_py)
    }

    fn action_probabilities<'py>(&mut self, py: Python<'py>, state: usize) -> PyResult<Bound<'py, PyArray1<f64>>> {
        self.check_state(state)?;
        let (_, a) = self.trained_shape()?;
        let mut out = vec![0.0; a];
        self.inner.action_probabilities(state, &mut out).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }

    /// What offline learning decided (e.g. OPPS-DS's chosen formula), as a dict of strings.
    #[getter]
    fn details(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.details().into_iter().collect()
    }

    /// The text from which `load` rebuilds this agent, or None when the agent cannot be saved
    /// (it is then rebuilt from its parameters and retrained).
    fn saved_text(&self) -> Option<String> {
        self.inner.saved_text()
    }

    /// Rebuilds a saved agent, trained on a prior of `n_states` x `n_actions` with `gamma`, `horizon`.
    #[staticmethod]
    fn load(text: &str, n_states: usize, n_actions: usize, gamma: f64, horizon: usize) -> PyResult<Self> {
        let setting = Setting { gamma, horizon };
        check_setting(setting).map_err(to_py)?;
        let inner = agents::load_text(text).map_err(to_py)?;
        Ok(Self {
            inner,
            shape: Some((n_states, n_actions)),
            rng: stream(0, purpose::KERNEL, 0),
            setting: Some(setting),
        })
    }

    /// A deep copy, random stream included: the copy's future is identical to the original's.
    fn copy(&self) -> Self {
        Self { inner: self.inner.clone_box(), shape: self.shape, rng: self.rng.clone(), setting: self.setting }
    }
}

/// Progress of a running experiment, shared with the thread that runs it.
#[pyclass(name = "Progress", module = "bbrl._core", frozen)]
struct PyProgress {
    inner: Arc<Progress>,
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
struct PyExperiment {
    inner: Experiment,
}

#[pymethods]
impl PyExperiment {
    #[new]
    fn new(py: Python<'_>, test: &PyFdm, n_mdps: usize, gamma: f64, horizon: usize, seed: u64) -> PyResult<Self> {
        let fdm = test.inner.clone();
        let inner = py.detach(|| Experiment::new(fdm, n_mdps, Setting { gamma, horizon }, seed)).map_err(to_py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn n_mdps(&self) -> usize {
        self.inner.mdps().len()
    }

    /// The transition table (S, A, S) of test MDP `index`.
    fn transitions<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let mdp = self.inner.mdps().get(index).ok_or_else(|| {
            PyValueError::new_err(format!("MDP index {index} is out of range 0..{}", self.inner.mdps().len()))
        })?;
        Ok(table(py, mdp.transitions(), mdp.n_states(), mdp.n_actions()))
    }

    /// Trains `agent` on `prior`; returns the offline wall time in seconds.
    fn learn_offline(&self, py: Python<'_>, mut agent: PyRefMut<'_, PyAgent>, prior: &PyFdm) -> PyResult<f64> {
        let fdm = &prior.inner;
        let exp = &self.inner;
        let inner = &mut agent.inner;
        let seconds = py.detach(|| exp.learn_offline(inner.as_mut(), fdm)).map_err(to_py)?;
        agent.shape = Some((fdm.n_states(), fdm.n_actions()));
        agent.setting = Some(exp.setting());
        Ok(seconds)
    }

    /// Runs the trained agent on every test MDP; returns (returns, online seconds) per MDP.
    #[pyo3(signature = (agent, threads=None, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        agent: PyRef<'_, PyAgent>,
        threads: Option<usize>,
        progress: Option<&PyProgress>,
    ) -> PyResult<ArrayPair<'py, f64, f64>> {
        if agent.shape.is_none() {
            return Err(PyValueError::new_err("the agent has not learned offline yet"));
        }
        let trained: &dyn Agent = agent.inner.as_ref();
        let exp = &self.inner;
        let progress = progress.map(|p| Arc::clone(&p.inner));
        let outcome = py.detach(|| exp.run(trained, threads, progress.as_deref())).map_err(to_py)?;
        Ok((outcome.returns.into_pyarray(py), outcome.online_seconds.into_pyarray(py)))
    }
}

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

/// theta, rewards and the initial state (-1: random) of a distribution.
type DistributionTables<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>, i64);

/// A built-in distribution by short name (GC, GDL, Grid, UGC, UGDL, UGrid):
/// (theta, rewards, initial state).
#[pyfunction]
fn builtin_distribution<'py>(py: Python<'py>, name: &str) -> PyResult<DistributionTables<'py>> {
    let fdm = crate::problems::by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown built-in distribution {name:?}")))?;
    let (s, a) = (fdm.n_states(), fdm.n_actions());
    let start = fdm.initial_state().map_or(-1, |s| s as i64);
    Ok((table(py, fdm.theta(), s, a), table(py, fdm.rewards(), s, a), start))
}

/// The agent kinds the core can build, with their parameter names.
#[pyfunction]
fn agent_kinds() -> Vec<(&'static str, Vec<&'static str>)> {
    agents::AGENT_KINDS.iter().map(|(k, p)| (*k, p.to_vec())).collect()
}

/// Parses a formula (RPN or infix): (RPN, infix, number of tokens).
#[pyfunction]
fn formula_parse(text: &str) -> PyResult<(String, String, usize)> {
    let f = crate::formula::Formula::parse_any(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((f.to_rpn(), f.to_infix(), f.len()))
}

/// Evaluates a formula at (X0, X1, X2); evaluation errors (LN of a non-positive value, SQRT of a
/// negative one, INV or DIV by zero) raise ArithmeticError.
#[pyfunction]
fn formula_eval(text: &str, x0: f64, x1: f64, x2: f64) -> PyResult<f64> {
    let f = crate::formula::Formula::parse_any(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    f.eval([x0, x1, x2]).map_err(|e| pyo3::exceptions::PyArithmeticError::new_err(e.to_string()))
}

/// Generates F_n (RPN strings) with the random points of `seed`.
#[pyfunction]
fn formula_set(py: Python<'_>, n: usize, seed: u64, n_points: usize) -> PyResult<Vec<String>> {
    let set = py.detach(|| crate::formula::set::formula_set(n, seed, n_points)).map_err(to_py)?;
    Ok(set.iter().map(|f| f.to_rpn()).collect())
}

/// The shipped formula set `F2`..`F6` (RPN strings).
#[pyfunction]
fn shipped_formula_set(name: &str) -> PyResult<Vec<String>> {
    let set = crate::formula::set::shipped_set(name).map_err(to_py)?;
    Ok(set.iter().map(|f| f.to_rpn()).collect())
}

#[pymodule(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFdm>()?;
    m.add_class::<PyAgent>()?;
    m.add_class::<PyExperiment>()?;
    m.add_class::<PyProgress>()?;
    m.add_function(wrap_pyfunction!(sample_dirichlet, m)?)?;
    m.add_function(wrap_pyfunction!(sample_transitions, m)?)?;
    m.add_function(wrap_pyfunction!(callback::run_python_agent, m)?)?;
    m.add_function(wrap_pyfunction!(q_iteration, m)?)?;
    m.add_function(wrap_pyfunction!(value_iteration, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_policy, m)?)?;
    m.add_function(wrap_pyfunction!(agent_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_distribution, m)?)?;
    m.add_function(wrap_pyfunction!(formula_parse, m)?)?;
    m.add_function(wrap_pyfunction!(formula_eval, m)?)?;
    m.add_function(wrap_pyfunction!(formula_set, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_formula_set, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
