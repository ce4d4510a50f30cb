//! Converts a Python agent object to a core `Agent` (calls forwarded to Python, errors chained).
//!
//! A Python agent ("bring your own agent") runs through the core's own loops
//! (`Experiment::run_each`, a `Stepper`), test MDPs and streams, as the built-in agents do.
//!
//! The Python object's `start_task()`, `start_episode(state)`, `act(state, rng)`, `observe(state,
//! action, reward, next_state)`, `action_probabilities(state)` and `snapshot()`/`restore(s)` are
//! called with the GIL held. `rng` is a NumPy `Generator` made at every task start as
//! `numpy.random.default_rng(k)`, `k = bbrl_core::rng::foreign_seed` of the agent's online stream
//! (for test MDP `i`, stream `(seed, AGENT_ONLINE, i)`). An agent whose `start_episode` takes an
//! `rng` (its class's `episode_rng` is true) gets a new Generator at every episode start,
//! `default_rng(k)`, `k` the next `foreign_seed` of the same stream, for the episode's own draws
//! (e.g. K posterior samples): reproducible, independent between runs, and restored with the
//! handle by a snapshot. What `act` returns is converted here: an
//! int (or NumPy integer) in `0..A`; anything else, and any exception raised by the agent, fails
//! the run with the agent's name, the MDP index and the step (the exception chained as the cause).

use std::sync::{Arc, Mutex};

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use super::{reward_rows, to_py, work_rows, AgentError, PyExperiment, RunArrays};
use bbrl_core::agent::{Agent, FailedAgent, Setting, TaskContext, Transition};
use bbrl_core::error::{BbrlError, Result};
use bbrl_core::model::fdm::Fdm;
use bbrl_core::rng::{foreign_seed, Rng};
use bbrl_core::work::{self, Unit};

/// Where a Python agent leaves the exception behind its last failure, for the caller to chain.
pub(super) type ErrorSlot = Arc<Mutex<Option<PyErr>>>;

/// A core agent that forwards every call to a Python object.
pub(super) struct PyCallbackAgent {
    name: String,
    n_actions: usize,
    object: Py<PyAny>,
    start_task: Py<PyAny>,
    act: Py<PyAny>,
    observe: Py<PyAny>,
    /// The NumPy Generator handed to `act` during this task (None before the first task).
    rng: Py<PyAny>,
    /// Whether `start_episode` takes a Generator (the class's `episode_rng`).
    episode_rng: bool,
    /// `operator.index`, for NumPy integer actions.
    index: Py<PyAny>,
    /// The Python exception behind the last failure, re-raised as the cause of the run's error;
    /// shared with the caller, which hands the agent itself to a `Stepper`.
    error: ErrorSlot,
}

impl PyCallbackAgent {
    /// Wraps the Python agent `object` (an instance of `bbrl.agents.Agent`).
    pub(super) fn new(object: &Bound<'_, PyAny>, name: String, n_actions: usize) -> PyResult<Self> {
        Self::with_generator(object, name, n_actions, object.py().None())
    }

    /// As [`PyCallbackAgent::new`], with the Generator of the current task (for copies).
    fn with_generator(object: &Bound<'_, PyAny>, name: String, n_actions: usize, rng: Py<PyAny>) -> PyResult<Self> {
        let py = object.py();
        let method = |name: &str| -> PyResult<Py<PyAny>> { Ok(object.getattr(name)?.unbind()) };
        let episode_rng = match object.getattr(intern!(py, "episode_rng")) {
            Ok(flag) => flag.is_truthy()?,
            Err(_) => false,
        };
        Ok(Self {
            name,
            n_actions,
            object: object.clone().unbind(),
            start_task: method("start_task")?,
            act: method("act")?,
            observe: method("observe")?,
            rng,
            episode_rng,
            index: py.import("operator")?.getattr("index")?.unbind(),
            error: Arc::default(),
        })
    }

    /// `numpy.random.default_rng(k)`, `k` the next `foreign_seed` of the handle's stream `rng`.
    fn generator(&mut self, rng: &mut Rng) -> Result<Py<PyAny>> {
        let key = foreign_seed(rng);
        Python::attach(|py| {
            let generator = py
                .import("numpy.random")
                .and_then(|m| m.getattr("default_rng"))
                .and_then(|default_rng| default_rng.call1((key,)));
            match generator {
                Ok(g) => Ok(g.unbind()),
                Err(e) => Err(self.failed(py, "numpy.random.default_rng", e)),
            }
        })
    }

    /// The slot this agent (and no copy of it) records its failures in.
    pub(super) fn error_slot(&self) -> ErrorSlot {
        Arc::clone(&self.error)
    }

    /// Records the Python exception and describes it for the located core error.
    fn failed(&mut self, py: Python<'_>, what: &str, err: PyErr) -> BbrlError {
        let kind = err.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "exception".into());
        let message = err.value(py).str().map(|s| s.to_string()).unwrap_or_default();
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err);
        // `what` is empty for reset: the trajectory loop already says "reset: ".
        let raised = if what.is_empty() { format!("raised {kind}") } else { format!("{what} raised {kind}") };
        let message = if message.is_empty() { raised } else { format!("{raised}: {message}") };
        BbrlError::Agent(message)
    }

    /// The action `value` stands for, or why it is not one.
    fn action(&self, value: &Bound<'_, PyAny>) -> std::result::Result<usize, String> {
        let n = self.n_actions;
        let not_an_int = || {
            let shown = value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
            let kind = value.get_type().name().map(|t| t.to_string()).unwrap_or_else(|_| "?".into());
            format!(
                "act returned {shown} of type {kind}; an action must be an int from 0 to {} (NumPy integers are fine)",
                n - 1
            )
        };
        let number = if let Ok(int) = value.downcast_exact::<PyInt>() {
            int.clone()
        } else if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyFloat>() {
            return Err(not_an_int());
        } else {
            // NumPy integers (and anything else with __index__, but not floats or bools).
            match self.index.bind(value.py()).call1((value,)) {
                Ok(i) => i.downcast_into::<PyInt>().map_err(|_| not_an_int())?,
                Err(_) => return Err(not_an_int()),
            }
        };
        match number.extract::<i64>() {
            Ok(a) if a >= 0 && (a as u64) < n as u64 => Ok(a as usize),
            Ok(a) => Err(format!("act returned action {a}, not one of the actions 0 to {}", n - 1)),
            Err(_) => Err(format!("act returned action {number}, not one of the actions 0 to {}", n - 1)),
        }
    }
}

impl Agent for PyCallbackAgent {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn learn_offline(&mut self, _prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        Err(BbrlError::Agent("a Python agent learns offline in Python (bbrl.agents.Agent.train)".into()))
    }

    fn start_task(&mut self, _context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        work::add(Unit::ForeignCalls, 1);
        self.rng = self.generator(rng)?;
        Python::attach(|py| match self.start_task.call0(py) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.failed(py, "", e)),
        })
    }

    fn start_episode(&mut self, state: usize, rng: &mut Rng) -> Result<()> {
        work::add(Unit::ForeignCalls, 1);
        let generator = if self.episode_rng { Some(self.generator(rng)?) } else { None };
        Python::attach(|py| {
            let called = match generator {
                Some(g) => self.object.call_method1(py, intern!(py, "start_episode"), (state, g)),
                None => self.object.call_method1(py, intern!(py, "start_episode"), (state,)),
            };
            match called {
                Ok(_) => Ok(()),
                Err(e) => Err(self.failed(py, "start_episode", e)),
            }
        })
    }

    fn act(&mut self, state: usize, _rng: &mut Rng) -> Result<usize> {
        work::add(Unit::ForeignCalls, 1);
        Python::attach(|py| {
            let value = match self.act.bind(py).call1((state, self.rng.bind(py))) {
                Ok(v) => v,
                Err(e) => return Err(self.failed(py, "act", e)),
            };
            self.action(&value).map_err(BbrlError::Agent)
        })
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        work::add(Unit::ForeignCalls, 1);
        Python::attach(|py| match self.observe.call1(py, (t.state, t.action, t.reward, t.next_state)) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.failed(py, "observe", e)),
        })
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        Python::attach(|py| {
            let p = match self.object.call_method1(py, intern!(py, "action_probabilities"), (state,)) {
                Ok(p) => p,
                Err(e) => return Err(self.failed(py, "action_probabilities", e)),
            };
            let p: Vec<f64> = p.extract(py).map_err(|e| self.failed(py, "action_probabilities", e))?;
            if p.len() != out.len() {
                return Err(BbrlError::Agent(format!(
                    "action_probabilities returned {} values for {} actions",
                    p.len(),
                    out.len()
                )));
            }
            out.copy_from_slice(&p);
            Ok(())
        })
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        // Not on any hot path (the Python runner copies agents in Python). A copy that cannot be
        // made becomes an agent that fails with the reason on first use: an error, never a panic.
        self.snapshot().unwrap_or_else(|e| Box::new(FailedAgent::new(self.name.clone(), e.to_string())))
    }

    /// A new object `copy.copy(agent)` given `agent.snapshot()` through its `restore`, and a deep
    /// copy of the Generator: the agent's own definition of its state, so an agent that overrides
    /// `snapshot`/`restore` is copied the way it says.
    fn snapshot(&self) -> Result<Box<dyn Agent>> {
        Python::attach(|py| {
            let copy = |what: &str, e: PyErr| {
                let message = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
                let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
                BbrlError::Agent(format!("agent '{}' could not be copied: {what} raised {kind}: {message}", self.name))
            };
            let module = py.import("copy").map_err(|e| copy("import copy", e))?;
            let object = self.object.bind(py);
            let state = object.call_method0(intern!(py, "snapshot")).map_err(|e| copy("snapshot()", e))?;
            let clone = module.call_method1("copy", (object,)).map_err(|e| copy("copy.copy", e))?;
            clone.call_method1(intern!(py, "restore"), (state,)).map_err(|e| copy("restore()", e))?;
            let rng = module.call_method1("deepcopy", (self.rng.bind(py),)).map_err(|e| copy("deepcopy(rng)", e))?;
            let mut agent = Self::with_generator(&clone, self.name.clone(), self.n_actions, rng.unbind())
                .map_err(|e| copy("init", e))?;
            // Copies report into the same slot, so a handle restored from a snapshot still
            // chains the agent's own exception.
            agent.error = Arc::clone(&self.error);
            Ok(Box::new(agent) as Box<dyn Agent>)
        })
    }
}

/// The Python exception for core error `e` of a run or handle on a Python agent: the agent's own
/// exception (left in `slot`) chained as the cause of an `AgentError`, or let through when it is
/// not an `Exception` (KeyboardInterrupt, SystemExit); without one, the core error's exception.
pub(super) fn raise(py: Python<'_>, e: BbrlError, slot: Option<&ErrorSlot>) -> PyErr {
    match slot.and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take()) {
        Some(cause) if !cause.is_instance_of::<PyException>(py) => cause,
        Some(cause) => {
            let err = AgentError::new_err(e.to_string());
            err.set_cause(py, Some(cause));
            err
        }
        None => to_py(e),
    }
}

/// Fresh copies of a trained Python agent, one per test MDP or run (`copy.deepcopy`, as the core
/// clones a built-in agent): the factory a core loop (`Experiment::run_each`,
/// `EpisodicExperiment::run_each_of`) calls, then the loop's outcome turned into Python's terms.
pub(super) struct FreshCopies<'a, 'py> {
    agent: &'a Bound<'py, PyAny>,
    deepcopy: Bound<'py, PyAny>,
    name: String,
    n_actions: usize,
    /// The error slot of the last copy made: the loops stop at the first failure, so the failing one.
    slot: Option<ErrorSlot>,
    /// Why the last copy could not be made.
    copy_error: Option<PyErr>,
}

impl<'a, 'py> FreshCopies<'a, 'py> {
    pub(super) fn new(agent: &'a Bound<'py, PyAny>, name: String, n_actions: usize) -> PyResult<Self> {
        let deepcopy = agent.py().import("copy")?.getattr("deepcopy")?;
        Ok(Self { agent, deepcopy, name, n_actions, slot: None, copy_error: None })
    }

    /// A new copy as a core agent (a core error if it could not be made; [`FreshCopies::outcome`]
    /// raises the Python one).
    pub(super) fn make(&mut self) -> Result<Box<dyn Agent>> {
        let made = self
            .deepcopy
            .call1((self.agent,))
            .and_then(|local| PyCallbackAgent::new(&local, self.name.clone(), self.n_actions));
        match made {
            Ok(callback) => {
                self.slot = Some(callback.error_slot());
                Ok(Box::new(callback) as Box<dyn Agent>)
            }
            Err(e) => {
                self.copy_error = Some(e);
                Err(BbrlError::Agent("the agent could not be copied".into()))
            }
        }
    }

    /// The loop's result, or its failure as Python's exception: the copy's own error when a copy
    /// could not be made, else the run's error with the agent's exception chained ([`raise`]).
    pub(super) fn outcome<T>(self, py: Python<'_>, outcome: Result<T>) -> PyResult<T> {
        match (outcome, self.copy_error) {
            (Ok(outcome), _) => Ok(outcome),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(raise(py, e, self.slot.as_ref())),
        }
    }
}

/// Runs the trained Python `agent` on the test MDPs `indices` (`Experiment::run_each`), a fresh
/// `copy.deepcopy` of it per MDP (the core clones built-in agents the same way). Returns (returns,
/// online wall seconds, online CPU seconds of this thread) and, with `record_rewards`, the
/// (len(indices), T) rewards (else None). On the first failure, raises `AgentError` with the
/// agent's own exception as its cause; no partial result.
#[pyfunction]
#[pyo3(signature = (experiment, agent, name, indices, record_rewards=false))]
pub(super) fn run_python_agent<'py>(
    py: Python<'py>,
    experiment: &PyExperiment,
    agent: &Bound<'py, PyAny>,
    name: String,
    indices: Vec<usize>,
    record_rewards: bool,
) -> PyResult<RunArrays<'py>> {
    let exp = &experiment.inner;
    let mut copies = FreshCopies::new(agent, name, exp.test_distribution().n_actions())?;
    let outcome = exp.run_each(&indices, record_rewards, |_| copies.make());
    let outcome = copies.outcome(py, outcome)?;
    let rewards = reward_rows(py, outcome.rewards, indices.len(), exp.setting().horizon)?;
    let work = work_rows(py, &outcome.online_work)?;
    let returns: Bound<'py, PyArray1<f64>> = outcome.returns.into_pyarray(py);
    Ok((returns, outcome.online_seconds.into_pyarray(py), outcome.online_cpu_seconds.into_pyarray(py), rewards, work))
}
