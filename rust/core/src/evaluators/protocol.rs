//! The benchmark protocol (SPEC 3): N test MDPs drawn once, one trajectory per MDP and agent.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::agent::{Agent, Setting};
use crate::error::{index_range, BbrlError, Result};
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::platform::threads;
use crate::rng::{purpose, stream};
use crate::stepper::Stepper;
use crate::trajectory::TrajectoryOutcome;
use crate::work::Work;

/// Shared progress of a running experiment: MDPs done, and a cancellation request.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicUsize,
    cancelled: AtomicBool,
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }
    /// Trajectories finished so far.
    pub fn done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }
    /// Asks the run to stop; it returns [`BbrlError::Cancelled`] after the trajectories in flight.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
    /// Counts one more unit of work done (a trajectory here, a run of the episodic protocol).
    pub(crate) fn finish_one(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Checks a discount and horizon.
pub fn check_setting(setting: Setting) -> Result<()> {
    Setting::checked(setting.gamma, setting.horizon).map(|_| ())
}

/// Trains `agent` on `prior` for `setting` outside an experiment, with stream
/// `(seed, AGENT_OFFLINE, 0)` (what [`Experiment::learn_offline`] gives it); returns its wall and
/// CPU time (zero for an agent that learns nothing offline).
pub fn learn_offline(agent: &mut dyn Agent, prior: &Fdm, setting: Setting, seed: u64) -> Result<OfflineTime> {
    check_setting(setting)?;
    crate::agent::check_memory(agent, prior.n_states(), prior.n_actions(), setting)?;
    let mut rng = stream(seed, purpose::AGENT_OFFLINE, 0);
    let learns = agent.learns_offline();
    OfflineTime::measure(learns, || guard(|| agent.learn_offline(prior, setting, &mut rng)))
}

/// Per-MDP results of one agent on one experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// Discounted return of each MDP's trajectory.
    pub returns: Vec<f64>,
    /// Wall time in seconds of each trajectory (reset + T decisions).
    pub online_seconds: Vec<f64>,
    /// CPU time in seconds of each trajectory, on the thread that ran it.
    pub online_cpu_seconds: Vec<f64>,
    /// The work of each trajectory in machine-independent units ([`crate::work`]).
    pub online_work: Vec<Work>,
    /// With reward recording: the reward of every step, row-major N x T (MDP `i`'s step `t` at
    /// `i * T + t`); `None` otherwise.
    pub rewards: Option<Vec<f64>>,
}

/// The most memory a run may take for its recorded rewards (2 GiB): beyond it the run is refused
/// before anything is allocated, with the size in the message.
pub const MAX_REWARD_BYTES: usize = 2 << 30;

/// The number of entries (N x T) of the reward buffer of `n_mdps` trajectories of `horizon` steps,
/// or an error naming the size when it would exceed [`MAX_REWARD_BYTES`].
pub fn reward_buffer_len(n_mdps: usize, horizon: usize) -> Result<usize> {
    let entries = n_mdps.checked_mul(horizon);
    match entries.and_then(|n| n.checked_mul(std::mem::size_of::<f64>())) {
        Some(bytes) if bytes <= MAX_REWARD_BYTES => Ok(entries.unwrap_or(0)),
        bytes => {
            let size = bytes.map_or_else(|| "more than 2^64 bytes".to_string(), |b| format!("{b} bytes"));
            Err(invalid!(
                "recording rewards of {n_mdps} MDPs x {horizon} steps needs {size}, above the {} GiB cap \
                 ({MAX_REWARD_BYTES} bytes); record fewer MDPs or a shorter horizon",
                MAX_REWARD_BYTES >> 30
            ))
        }
    }
}

/// The time offline learning took: wall and CPU seconds, both zero by declaration for an agent
/// that learns nothing offline ([`Agent::learns_offline`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OfflineTime {
    pub wall_seconds: f64,
    /// CPU time of the whole process during learning, so that a search spread over worker
    /// threads (OPPS-DS) counts all of its work.
    pub cpu_seconds: f64,
    /// The work of learning in machine-independent units ([`crate::work`]), worker threads'
    /// included; zero for an agent that learns nothing offline.
    pub work: Work,
}

impl OfflineTime {
    /// Times `learn` unless the agent declares it learns nothing offline.
    pub fn measure(learns: bool, learn: impl FnOnce() -> Result<()>) -> Result<Self> {
        let start = Instant::now();
        let work_start = Work::now();
        let cpu_start = crate::platform::cputime::process_cpu_seconds();
        learn()?;
        if !learns {
            return Ok(Self { wall_seconds: 0.0, cpu_seconds: 0.0, work: Work::default() });
        }
        let cpu_seconds = crate::platform::cputime::process_cpu_seconds() - cpu_start;
        let work = Work::delta_since(&work_start);
        Ok(Self { wall_seconds: start.elapsed().as_secs_f64(), cpu_seconds, work })
    }
}

/// A built-in agent and, once it has learned offline (or been loaded trained), the numbers of
/// states and actions and the setting it learned for: what a front end holds between building an
/// agent, training it and running it.
pub struct Learner {
    agent: Box<dyn Agent>,
    trained: Option<(usize, usize, Setting)>,
}

impl Learner {
    /// An untrained agent.
    pub fn new(agent: Box<dyn Agent>) -> Self {
        Self { agent, trained: None }
    }

    /// An agent already trained on a prior of `n_states` x `n_actions` for (`gamma`, `horizon`)
    /// (a saved agent, rebuilt).
    pub fn trained_for(
        agent: Box<dyn Agent>,
        n_states: usize,
        n_actions: usize,
        gamma: f64,
        horizon: usize,
    ) -> Result<Self> {
        let setting = Setting::checked(gamma, horizon)?;
        Ok(Self { agent, trained: Some((n_states, n_actions, setting)) })
    }

    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }

    /// [`learn_offline`] outside an experiment; the agent counts as trained once it succeeds.
    pub fn learn_offline(&mut self, prior: &Fdm, setting: Setting, seed: u64) -> Result<OfflineTime> {
        let time = learn_offline(self.agent.as_mut(), prior, setting, seed)?;
        self.trained = Some((prior.n_states(), prior.n_actions(), setting));
        Ok(time)
    }

    /// [`Experiment::learn_offline`]; the agent counts as trained once it succeeds.
    pub fn learn_in(&mut self, experiment: &Experiment, prior: &Fdm) -> Result<OfflineTime> {
        let time = experiment.learn_offline(self.agent.as_mut(), prior)?;
        self.trained = Some((prior.n_states(), prior.n_actions(), experiment.setting()));
        Ok(time)
    }

    /// The trained agent, or an error if it has not learned offline yet.
    pub fn trained(&self) -> Result<&dyn Agent> {
        self.shape_and_setting().map(|_| self.agent.as_ref())
    }

    /// A handle on a copy of the trained agent with the stream of test MDP `index`
    /// ([`Stepper::for_task`]).
    pub fn stepper(&self, seed: u64, index: u64) -> Result<Stepper> {
        let (s, a, setting) = self.shape_and_setting()?;
        Ok(Stepper::for_task(self.agent.clone_box(), s, a, setting, seed, index))
    }

    fn shape_and_setting(&self) -> Result<(usize, usize, Setting)> {
        self.trained.ok_or_else(|| invalid!("the agent has not learned offline yet"))
    }
}

/// An experiment: the test MDPs (drawn once from the test distribution), gamma, T and the seed.
#[derive(Clone, Debug)]
pub struct Experiment {
    test: Fdm,
    mdps: Vec<Mdp>,
    setting: Setting,
    seed: u64,
}

impl Experiment {
    /// Draws `n_mdps` test MDPs, MDP `i` from stream `(seed, TEST_MDP, i)`.
    pub fn new(test: Fdm, n_mdps: usize, setting: Setting, seed: u64) -> Result<Self> {
        if n_mdps < 1 {
            return Err(invalid!("n_mdps must be >= 1, got {n_mdps}"));
        }
        check_setting(setting)?;
        let mdps = (0..n_mdps).map(|i| test.test_mdp(seed, i as u64)).collect();
        Ok(Self { test, mdps, setting, seed })
    }

    pub fn mdps(&self) -> &[Mdp] {
        &self.mdps
    }
    pub fn setting(&self) -> Setting {
        self.setting
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn test_distribution(&self) -> &Fdm {
        &self.test
    }

    /// Trains `agent` on `prior` with stream `(seed, AGENT_OFFLINE, 0)`; returns its wall and CPU
    /// time (zero for an agent that learns nothing offline). The prior must have the test
    /// distribution's numbers of states and actions.
    pub fn learn_offline(&self, agent: &mut dyn Agent, prior: &Fdm) -> Result<OfflineTime> {
        self.test.check_compatible(prior, "the prior")?;
        learn_offline(agent, prior, self.setting, self.seed)
    }

    /// Runs a clone of the trained `agent` on every test MDP, in parallel over `threads` worker
    /// threads (`None`: rayon's global pool, one per core). MDP `i` uses the agent stream
    /// `(seed, AGENT_ONLINE, i)` and the environment stream `(seed, ENVIRONMENT, i)`, so the
    /// results are bit-identical whatever the thread count.
    pub fn run(&self, agent: &dyn Agent, threads: Option<usize>, progress: Option<&Progress>) -> Result<RunOutcome> {
        self.run_with(agent, threads, progress, false)
    }

    /// [`Experiment::run`], with `record_rewards` also keeping every step's reward
    /// ([`RunOutcome::rewards`]): one buffer of N x T values, allocated once (refused above
    /// [`MAX_REWARD_BYTES`]) and filled in place, each MDP writing its own row. Returns and random
    /// streams are those of [`Experiment::run`], bit for bit.
    pub fn run_with(
        &self,
        agent: &dyn Agent,
        threads: Option<usize>,
        progress: Option<&Progress>,
        record_rewards: bool,
    ) -> Result<RunOutcome> {
        self.run_range(agent, 0..self.mdps.len(), threads, progress, record_rewards)
    }

    /// [`Experiment::run_with`] on the test MDPs `mdps` only (a batch of a raced grid): entry `k`
    /// of the outcome is MDP `mdps.start + k`, with exactly the streams, return and work it has in
    /// a run over every MDP, so batches joined in order are the full run's results bit for bit.
    pub fn run_range(
        &self,
        agent: &dyn Agent,
        mdps: Range<usize>,
        threads: Option<usize>,
        progress: Option<&Progress>,
        record_rewards: bool,
    ) -> Result<RunOutcome> {
        let n = self.mdps.len();
        if mdps.start >= mdps.end || mdps.end > n {
            return Err(invalid!(
                "the MDP range {}..{} must be non-empty and within the experiment's {n} test MDPs (0..{n})",
                mdps.start,
                mdps.end
            ));
        }
        let first = mdps.start;
        let selected = &self.mdps[mdps];
        let horizon = self.setting.horizon;
        let mut rewards =
            if record_rewards { vec![0.0; reward_buffer_len(selected.len(), horizon)?] } else { Vec::new() };
        let one = |i: usize, mdp: &Mdp, row: Option<&mut [f64]>| -> Result<TrajectoryOutcome> {
            if progress.is_some_and(Progress::is_cancelled) {
                return Err(BbrlError::Cancelled);
            }
            let outcome = self.run_on(agent.clone_box(), mdp, i, row)?;
            if let Some(p) = progress {
                p.done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(outcome)
        };
        let job = || -> Result<Vec<TrajectoryOutcome>> {
            let mdps = selected.par_iter().enumerate();
            if record_rewards {
                mdps.zip(rewards.par_chunks_mut(horizon))
                    .map(|((k, mdp), row)| one(first + k, mdp, Some(row)))
                    .collect()
            } else {
                mdps.map(|(k, mdp)| one(first + k, mdp, None)).collect()
            }
        };
        let pairs = threads::install(threads, selected.len(), job)??;
        Ok(RunOutcome {
            returns: pairs.iter().map(|o| o.discounted_return).collect(),
            online_seconds: pairs.iter().map(|o| o.seconds).collect(),
            online_cpu_seconds: pairs.iter().map(|o| o.cpu_seconds).collect(),
            online_work: pairs.iter().map(|o| o.work).collect(),
            rewards: record_rewards.then_some(rewards),
        })
    }
}

impl Experiment {
    /// Runs the trained `agent` for one trajectory on test MDP `index`, with the agent stream
    /// `(seed, AGENT_ONLINE, index)` and the environment stream `(seed, ENVIRONMENT, index)`:
    /// exactly what [`Experiment::run`] does for that MDP, given a fresh clone of the trained
    /// agent. Front ends that step agents the core cannot clone or share across threads (Python
    /// agents) call this once per MDP.
    pub fn run_one(&self, agent: Box<dyn Agent>, index: usize) -> Result<TrajectoryOutcome> {
        self.run_on(agent, self.mdp(index)?, index, None)
    }

    /// [`Experiment::run_one`], also writing the reward of step `t` into `rewards[t]` (exactly T
    /// entries): the row [`Experiment::run_with`] records for that MDP.
    pub fn run_one_recording(
        &self,
        agent: Box<dyn Agent>,
        index: usize,
        rewards: &mut [f64],
    ) -> Result<TrajectoryOutcome> {
        self.run_on(agent, self.mdp(index)?, index, Some(rewards))
    }

    /// Runs a fresh agent `make(i)` on each test MDP `i` of `indices`, in that order, on the calling
    /// thread: [`Experiment::run_one`] for each (with `record_rewards`,
    /// [`Experiment::run_one_recording`] into row `k` of a `indices.len()` x T buffer). For agents
    /// the core cannot clone or share across threads (Python agents, which make a copy per MDP).
    /// Every index is checked before anything runs; the first failure ends the run.
    pub fn run_each(
        &self,
        indices: &[usize],
        record_rewards: bool,
        mut make: impl FnMut(usize) -> Result<Box<dyn Agent>>,
    ) -> Result<RunOutcome> {
        for &i in indices {
            self.mdp(i)?;
        }
        let horizon = self.setting.horizon;
        let mut rewards =
            if record_rewards { vec![0.0; reward_buffer_len(indices.len(), horizon)?] } else { Vec::new() };
        let mut out = RunOutcome {
            returns: Vec::with_capacity(indices.len()),
            online_seconds: Vec::with_capacity(indices.len()),
            online_cpu_seconds: Vec::with_capacity(indices.len()),
            online_work: Vec::with_capacity(indices.len()),
            rewards: None,
        };
        for (k, &i) in indices.iter().enumerate() {
            let agent = make(i)?;
            let outcome = if record_rewards {
                self.run_one_recording(agent, i, &mut rewards[k * horizon..(k + 1) * horizon])?
            } else {
                self.run_one(agent, i)?
            };
            out.returns.push(outcome.discounted_return);
            out.online_seconds.push(outcome.seconds);
            out.online_cpu_seconds.push(outcome.cpu_seconds);
            out.online_work.push(outcome.work);
        }
        out.rewards = record_rewards.then_some(rewards);
        Ok(out)
    }

    /// Test MDP `index`, or an error naming the range.
    pub fn mdp(&self, index: usize) -> Result<&Mdp> {
        self.mdps
            .get(index)
            .ok_or_else(|| invalid!("MDP index {index} is out of range: allowed {}", index_range(self.mdps.len())))
    }

    /// The handle on `agent` for test MDP `index`: its stream is `(seed, AGENT_ONLINE, index)`.
    pub fn stepper(&self, agent: Box<dyn Agent>, index: usize) -> Stepper {
        Stepper::for_task(agent, self.test.n_states(), self.test.n_actions(), self.setting, self.seed, index as u64)
    }

    fn run_on(
        &self,
        agent: Box<dyn Agent>,
        mdp: &Mdp,
        index: usize,
        rewards: Option<&mut [f64]>,
    ) -> Result<TrajectoryOutcome> {
        let mut stepper = self.stepper(agent, index);
        let mut env_rng = stream(self.seed, purpose::ENVIRONMENT, index as u64);
        guard(|| match rewards {
            None => stepper.run_trajectory(mdp, index, &mut env_rng),
            Some(row) => stepper.run_trajectory_recording(mdp, index, &mut env_rng, row),
        })
    }
}

/// Runs `f`, turning a panic (a bug) into an error instead of unwinding into the caller.
pub(crate) fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(BbrlError::Agent(format!("internal error (please report): {message}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{build, ParamValue, Params, KINDS};
    use crate::work::Unit;

    fn gc_like() -> Fdm {
        // 3 states, 2 actions; every row can go back to 0 or forward.
        let mut theta = vec![0.0; 18];
        let mut rewards = vec![0.0; 18];
        for s in 0..3 {
            for a in 0..2 {
                let row = (s * 2 + a) * 3;
                theta[row] = 1.0;
                theta[row + (s + 1).min(2)] = 1.0 + a as f64;
                rewards[row] = 0.5;
                rewards[row + 2] = 2.0;
            }
        }
        Fdm::new(3, 2, theta, rewards, Some(0)).unwrap()
    }

    fn run_with(threads: Option<usize>, kind: &str, params: Params) -> RunOutcome {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 24, Setting { gamma: 0.95, horizon: 30 }, 11).unwrap();
        let mut agent = build(kind, &params).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        exp.run(agent.as_ref(), threads, None).unwrap()
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        // Every kind of the registry, at its first example setting.
        for (kind, params) in KINDS.iter().map(|spec| (spec.kind, spec.examples[0].params())) {
            let one = run_with(Some(1), kind, params.clone());
            let two = run_with(Some(2), kind, params.clone());
            let three = run_with(Some(3), kind, params);
            assert_eq!(one.returns, two.returns, "{kind}");
            assert_eq!(one.returns, three.returns, "{kind}");
            // The work counts too, trajectory by trajectory: they depend on the seed alone.
            assert_eq!(one.online_work, two.online_work, "{kind}");
            assert_eq!(one.online_work, three.online_work, "{kind}");
            assert!(one.online_work.iter().all(|w| w.get(Unit::Decisions) == 30), "{kind}");
            // Random plans nothing; the model-based kinds count their solves (checked per unit by
            // work_counts_are_the_same_on_every_machine).
            let decision_units = [Unit::Decisions, Unit::DecisionsByStates, Unit::DecisionsByActions];
            let planning: u64 = crate::work::UNITS
                .iter()
                .filter(|u| !decision_units.contains(u))
                .map(|&u| one.online_work[0].get(u))
                .sum();
            if kind == "random" {
                assert_eq!(planning, 0, "{kind}: {:?}", one.online_work[0]);
            }
        }
    }

    /// The work of a seeded run of each planner on the Generalised Chain, summed over its
    /// trajectories, against the counts recorded when the test was written. Counts are the
    /// machines' common currency (budget maps redraw one machine's results with another's
    /// calibration), so they must not depend on the CPU: CI also runs this test built for aarch64
    /// under emulation, where the solvers take the scalar sweeps instead of AVX2 or AVX-512.
    #[test]
    fn work_counts_are_the_same_on_every_machine() {
        let gc = crate::model::problems::generalized_chain();
        let exp = Experiment::new(gc.clone(), 3, Setting { gamma: 0.95, horizon: 20 }, 3).unwrap();
        let int = |k: &str, v: i64| (k.to_string(), ParamValue::Int(v));
        let float = |k: &str, v: f64| (k.to_string(), ParamValue::Float(v));
        let cases: [(&str, Params, [u64; crate::work::N_UNITS]); 7] = [
            (
                "egreedy",
                Params::from([float("epsilon", 0.1)]),
                [60, 17640, 35280, 0, 0, 0, 0, 0, 0, 0, 0, 0, 56, 1680, 0, 300, 180, 8400, 0],
            ),
            (
                "beb",
                Params::from([float("beta", 1.0)]),
                [60, 0, 0, 189180, 378360, 0, 0, 0, 0, 0, 0, 0, 60, 1800, 0, 300, 180, 9000, 0],
            ),
            (
                "sboss",
                Params::from([float("epsilon", 0.01), float("delta", 1.0)]),
                [60, 0, 0, 150885, 301770, 9702, 0, 0, 0, 0, 0, 870, 42, 1260, 0, 300, 180, 6300, 0],
            ),
            (
                "bamcp",
                Params::from([int("k", 20), int("depth", 5)]),
                [60, 0, 0, 0, 0, 0, 608, 3648, 6000, 0, 0, 0, 0, 0, 0, 300, 180, 0, 18000],
            ),
            (
                "bfs3",
                Params::from([int("k", 5), int("c", 2), int("depth", 3)]),
                [60, 0, 0, 0, 0, 0, 1783, 2066, 1440, 0, 0, 0, 0, 0, 0, 300, 180, 0, 4320],
            ),
            ("ucbvi", Params::new(), [60, 0, 0, 900, 0, 0, 0, 0, 0, 0, 0, 225, 0, 0, 0, 300, 180, 0, 0]),
            (
                "optql",
                Params::from([float("c", 0.01)]),
                [60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2115, 0, 0, 0, 300, 180, 0, 0],
            ),
        ];
        let (mut actual, mut wanted) = (Vec::new(), Vec::new());
        for (kind, params, expected) in cases {
            let mut agent = build(kind, &params).unwrap();
            exp.learn_offline(agent.as_mut(), &gc).unwrap();
            let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
            let total = run.online_work.iter().fold(Work::default(), |sum, w| sum.plus(w));
            actual.push((kind, total.0));
            wanted.push((kind, expected));
        }
        // BAMCP on the uniform prior: every posterior row is wide, so its draws walk the rows'
        // entries (draw_entries), which GC's two-state rows never do.
        let ugc = crate::model::problems::uniform_prior(&gc);
        let mut agent = build("bamcp", &Params::from([int("k", 20), int("depth", 5)])).unwrap();
        exp.learn_offline(agent.as_mut(), &ugc).unwrap();
        let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
        let total = run.online_work.iter().fold(Work::default(), |sum, w| sum.plus(w));
        actual.push(("bamcp-ugc", total.0));
        wanted.push(("bamcp-ugc", [60, 0, 0, 0, 0, 0, 634, 9510, 6000, 0, 0, 0, 0, 0, 30000, 300, 180, 0, 18000]));
        assert_eq!(actual, wanted);
    }

    /// The discounted sum of a recorded row, summed as the loop sums it (the same operations in
    /// the same order, so the same bits).
    fn discounted_sum(row: &[f64], gamma: f64) -> f64 {
        let (mut total, mut discount) = (0.0, 1.0);
        for reward in row {
            total += discount * reward;
            discount *= gamma;
        }
        total
    }

    #[test]
    fn recorded_rewards_change_no_bit_and_sum_to_the_return() {
        let fdm = gc_like();
        let setting = Setting { gamma: 0.95, horizon: 30 };
        let exp = Experiment::new(fdm.clone(), 24, setting, 11).unwrap();
        let reward_values: Vec<u64> = fdm.rewards().iter().map(|r| r.to_bits()).collect();
        for (kind, params) in KINDS.iter().map(|spec| (spec.kind, spec.examples[0].params())) {
            let mut agent = build(kind, &params).unwrap();
            exp.learn_offline(agent.as_mut(), &fdm).unwrap();
            let plain = exp.run(agent.as_ref(), Some(1), None).unwrap();
            assert_eq!(plain.rewards, None);
            let one = exp.run_with(agent.as_ref(), Some(1), None, true).unwrap();
            let two = exp.run_with(agent.as_ref(), Some(2), None, true).unwrap();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one.returns), bits(&plain.returns), "{kind}: recording changed a return");
            assert_eq!(bits(&two.returns), bits(&plain.returns), "{kind}: threads changed a return");
            let rewards = one.rewards.unwrap();
            assert_eq!(rewards.len(), 24 * 30);
            assert_eq!(bits(&rewards), bits(&two.rewards.unwrap()), "{kind}: threads changed a reward");
            for (i, row) in rewards.chunks(30).enumerate() {
                let sum = discounted_sum(row, setting.gamma);
                assert_eq!(sum.to_bits(), plain.returns[i].to_bits(), "{kind}, MDP {i}");
                // Every reward is an entry of the reward table (the test MDPs share it).
                assert!(row.iter().all(|r| reward_values.contains(&r.to_bits())), "{kind}, MDP {i}: {row:?}");
            }
            // The row of one MDP run alone is the run's row.
            let mut row = vec![f64::NAN; 30];
            let alone = exp.run_one_recording(agent.clone_box(), 7, &mut row).unwrap();
            assert_eq!(alone.discounted_return.to_bits(), plain.returns[7].to_bits(), "{kind}");
            assert_eq!(bits(&row), bits(&rewards[7 * 30..8 * 30]), "{kind}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Over seeds, discounts, horizons and sizes (and a random initial state): recording changes
        /// no return, and each recorded row discounted and summed in step order is its return.
        #[test]
        fn recording_is_invisible_to_the_returns(
            seed in proptest::prelude::any::<u64>(),
            gamma in 0.0f64..0.999,
            horizon in 1usize..60,
            n_mdps in 1usize..6,
            epsilon in 0.0f64..=1.0,
            random_start in proptest::prelude::any::<bool>(),
        ) {
            let fdm = gc_like();
            let test = if random_start {
                Fdm::new(3, 2, fdm.theta().to_vec(), fdm.rewards().to_vec(), None).unwrap()
            } else {
                fdm
            };
            let setting = Setting { gamma, horizon };
            let exp = Experiment::new(test.clone(), n_mdps, setting, seed).unwrap();
            let mut agent = build("egreedy", &Params::from([("epsilon".to_string(), ParamValue::Float(epsilon))])).unwrap();
            exp.learn_offline(agent.as_mut(), &test).unwrap();
            let plain = exp.run(agent.as_ref(), Some(1), None).unwrap();
            let recorded = exp.run_with(agent.as_ref(), Some(2), None, true).unwrap();
            let rewards = recorded.rewards.unwrap();
            proptest::prop_assert_eq!(rewards.len(), n_mdps * horizon);
            for (i, row) in rewards.chunks(horizon).enumerate() {
                proptest::prop_assert_eq!(recorded.returns[i].to_bits(), plain.returns[i].to_bits());
                proptest::prop_assert_eq!(discounted_sum(row, gamma).to_bits(), plain.returns[i].to_bits());
            }
        }
    }

    #[test]
    fn reward_recording_above_the_cap_is_refused_before_allocating() {
        assert_eq!(reward_buffer_len(500, 250).unwrap(), 125_000);
        // Exactly 2 GiB is allowed; 8 bytes more is not.
        assert_eq!(reward_buffer_len(1, MAX_REWARD_BYTES / 8).unwrap(), MAX_REWARD_BYTES / 8);
        let e = reward_buffer_len(2, (1 << 27) + 1).unwrap_err().to_string();
        assert!(e.contains("2147483664 bytes") && e.contains("2 GiB cap"), "{e}");
        let e = reward_buffer_len(usize::MAX, 3).unwrap_err().to_string();
        assert!(e.contains("more than 2^64 bytes"), "{e}");
        // A run that would need 2 GiB + 16 bytes fails at once (a run of 2^27 steps would not).
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 2, Setting { gamma: 0.9, horizon: (1 << 27) + 1 }, 0).unwrap();
        let mut agent = build("random", &Params::new()).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        let e = exp.run_with(agent.as_ref(), Some(1), None, true).unwrap_err().to_string();
        assert!(e.contains("above the 2 GiB cap"), "{e}");
        let mut short = vec![0.0; 3];
        let e = exp.run_one_recording(agent.clone_box(), 0, &mut short).unwrap_err().to_string();
        assert!(e.contains("reward buffer has 3 entries"), "{e}");
    }

    #[test]
    fn rejects_bad_settings_and_priors() {
        let fdm = gc_like();
        assert!(Experiment::new(fdm.clone(), 0, Setting { gamma: 0.9, horizon: 5 }, 0).is_err());
        assert!(Experiment::new(fdm.clone(), 1, Setting { gamma: 1.0, horizon: 5 }, 0).is_err());
        assert!(Experiment::new(fdm.clone(), 1, Setting { gamma: f64::NAN, horizon: 5 }, 0).is_err());
        assert!(Experiment::new(fdm.clone(), 1, Setting { gamma: 0.9, horizon: 0 }, 0).is_err());
        let exp = Experiment::new(fdm, 1, Setting { gamma: 0.9, horizon: 5 }, 0).unwrap();
        let other = Fdm::new(2, 2, vec![1.0; 8], vec![0.0; 8], Some(0)).unwrap();
        let mut agent = build("random", &Params::new()).unwrap();
        let e = exp.learn_offline(agent.as_mut(), &other).unwrap_err();
        assert!(e.to_string().contains("the prior has 2 states"), "{e}");
    }

    #[test]
    fn run_one_equals_the_runs_entry() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 6, Setting { gamma: 0.95, horizon: 30 }, 3).unwrap();
        let mut agent = build("egreedy", &Params::from([("epsilon".to_string(), ParamValue::Float(0.3))])).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        let all = exp.run(agent.as_ref(), Some(1), None).unwrap();
        for i in (0..6).rev() {
            assert_eq!(exp.run_one(agent.clone_box(), i).unwrap().discounted_return, all.returns[i]);
        }
        assert!(exp.run_one(agent, 6).unwrap_err().to_string().contains("out of range: allowed 0 to 5"));
    }

    #[test]
    fn batches_joined_in_order_are_the_full_run() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 7, Setting { gamma: 0.95, horizon: 20 }, 5).unwrap();
        let mut agent = build("egreedy", &Params::from([("epsilon".to_string(), ParamValue::Float(0.3))])).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        let all = exp.run_with(agent.as_ref(), Some(2), None, true).unwrap();
        let mut joined: Vec<f64> = Vec::new();
        let mut rewards: Vec<f64> = Vec::new();
        let mut work = Vec::new();
        for (range, threads) in [(0..3, 1), (3..4, 2), (4..7, 2)] {
            let part = exp.run_range(agent.as_ref(), range, Some(threads), None, true).unwrap();
            joined.extend(&part.returns);
            rewards.extend(part.rewards.unwrap());
            work.extend(part.online_work);
        }
        assert_eq!(joined, all.returns);
        assert_eq!(Some(rewards), all.rewards);
        assert_eq!(work, all.online_work);
        for bad in [3..3, 5..8, 7..9] {
            let e = exp.run_range(agent.as_ref(), bad, Some(1), None, false).unwrap_err().to_string();
            assert!(e.contains("within the experiment's 7 test MDPs"), "{e}");
        }
    }

    #[test]
    fn run_each_equals_the_runs_entries_in_the_given_order() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 6, Setting { gamma: 0.95, horizon: 30 }, 3).unwrap();
        let mut agent = build("egreedy", &Params::from([("epsilon".to_string(), ParamValue::Float(0.3))])).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        let all = exp.run_with(agent.as_ref(), Some(1), None, true).unwrap();
        let (all_rewards, horizon) = (all.rewards.unwrap(), 30);
        let mut made = Vec::new();
        let some = exp
            .run_each(&[4, 1], true, |i| {
                made.push(i);
                Ok(agent.clone_box())
            })
            .unwrap();
        assert_eq!(made, [4, 1]);
        assert_eq!(some.returns, [all.returns[4], all.returns[1]]);
        let rows = some.rewards.unwrap();
        assert_eq!(rows[..horizon], all_rewards[4 * horizon..5 * horizon]);
        assert_eq!(rows[horizon..], all_rewards[horizon..2 * horizon]);
        // A bad index is refused before any agent is made; a factory error ends the run.
        let e = exp.run_each(&[0, 6], false, |_| panic!("no agent is made")).unwrap_err();
        assert!(e.to_string().contains("out of range: allowed 0 to 5"), "{e}");
        let e = exp.run_each(&[0], false, |_| Err(BbrlError::Agent("no copy".into()))).unwrap_err();
        assert_eq!(e.to_string(), BbrlError::Agent("no copy".into()).to_string());
    }

    #[test]
    fn learning_offline_outside_an_experiment_uses_the_experiments_stream() {
        let fdm = gc_like();
        let setting = Setting { gamma: 0.95, horizon: 20 };
        let exp = Experiment::new(fdm.clone(), 4, setting, 9).unwrap();
        let params = Params::from([
            ("formulas".to_string(), ParamValue::Text("F2".into())),
            ("n_draws".to_string(), ParamValue::Int(12)),
        ]);
        let (mut a, mut b) = (build("oppsds", &params).unwrap(), build("oppsds", &params).unwrap());
        exp.learn_offline(a.as_mut(), &fdm).unwrap();
        learn_offline(b.as_mut(), &fdm, setting, 9).unwrap();
        assert_eq!(a.details(), b.details());
        let returns = |agent: &dyn Agent| exp.run(agent, Some(1), None).unwrap().returns;
        assert_eq!(returns(a.as_ref()), returns(b.as_ref()));
        let e = learn_offline(b.as_mut(), &fdm, Setting { gamma: 1.0, horizon: 20 }, 9).unwrap_err();
        assert!(e.to_string().contains("gamma must be in [0, 1)"), "{e}");
    }

    #[test]
    fn a_learner_runs_only_once_trained() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 3, Setting { gamma: 0.9, horizon: 10 }, 1).unwrap();
        let mut learner = Learner::new(build("random", &Params::new()).unwrap());
        let e = learner.trained().err().unwrap().to_string();
        assert!(e.contains("has not learned offline yet"), "{e}");
        assert!(learner.stepper(1, 0).is_err());
        learner.learn_in(&exp, &fdm).unwrap();
        let stepper = learner.stepper(1, 2).unwrap();
        assert_eq!((stepper.n_states(), stepper.n_actions(), stepper.setting()), (3, 2, exp.setting()));
        assert!(learner.trained().is_ok());
        let mut other = Learner::new(build("random", &Params::new()).unwrap());
        let e = other.learn_offline(&fdm, Setting { gamma: 0.9, horizon: 0 }, 0).unwrap_err().to_string();
        assert!(e.contains("horizon must be >= 1") && other.trained().is_err(), "{e}");
        assert!(Learner::trained_for(build("random", &Params::new()).unwrap(), 3, 2, 1.0, 5).is_err());
    }

    #[test]
    fn offline_time_is_zero_by_declaration_and_cpu_time_is_recorded() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 8, Setting { gamma: 0.95, horizon: 40 }, 5).unwrap();
        let text = |v: &str| ParamValue::Text(v.to_string());
        for (kind, params, learns) in [
            ("random", Params::new(), false),
            ("egreedy", Params::from([("epsilon".to_string(), ParamValue::Float(0.2))]), false),
            ("optimal", Params::new(), false),
            ("formula", Params::from([("formula".to_string(), text("X0"))]), false),
            (
                "oppsds",
                Params::from([("formulas".to_string(), text("F2")), ("n_draws".to_string(), ParamValue::Int(30))]),
                true,
            ),
        ] {
            let mut agent = build(kind, &params).unwrap();
            assert_eq!(agent.learns_offline(), learns, "{kind}");
            let offline = exp.learn_offline(agent.as_mut(), &fdm).unwrap();
            if learns {
                assert!(offline.wall_seconds > 0.0 && offline.cpu_seconds >= 0.0, "{kind}: {offline:?}");
            } else {
                // Exactly zero: declared, not measured.
                assert_eq!(
                    offline,
                    OfflineTime { wall_seconds: 0.0, cpu_seconds: 0.0, work: Work::default() },
                    "{kind}"
                );
            }
            let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
            assert_eq!(run.online_cpu_seconds.len(), 8);
            // One thread runs each trajectory: its CPU time cannot exceed the wall time of the same
            // span (plus the clock resolution, for the two reads).
            let slack = 2.0 * crate::platform::cputime::cpu_clock_resolution_seconds() + 1e-6;
            for (cpu, wall) in run.online_cpu_seconds.iter().zip(&run.online_seconds) {
                assert!(*cpu >= 0.0 && *cpu <= wall + slack, "{kind}: cpu {cpu} wall {wall}");
            }
        }
    }

    #[test]
    fn offline_work_does_not_depend_on_the_thread_count() {
        // OPPS-DS's first round of pulls runs in parallel: each pull's work is counted once,
        // whichever thread ran it.
        let fdm = gc_like();
        let setting = Setting { gamma: 0.95, horizon: 30 };
        let text = ParamValue::Text("F3".into());
        let params = Params::from([("formulas".to_string(), text), ("n_draws".to_string(), ParamValue::Int(60))]);
        let learn = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let mut agent = build("oppsds", &params).unwrap();
                learn_offline(agent.as_mut(), &fdm, setting, 4).unwrap().work
            })
        };
        let one = learn(1);
        assert_eq!(one, learn(2));
        assert_eq!(one, learn(3));
        assert_eq!(one.get(Unit::Decisions), 60 * 30, "60 pulls of 30 decisions: {one:?}");
        assert!(one.get(Unit::FormulaTokens) > 0 && one.get(Unit::QRowSweeps) > 0, "{one:?}");
    }

    #[test]
    fn cancellation_stops_the_run() {
        let fdm = gc_like();
        let exp = Experiment::new(fdm.clone(), 10, Setting { gamma: 0.9, horizon: 5 }, 0).unwrap();
        let mut agent = build("random", &Params::new()).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        let progress = Progress::new();
        progress.cancel();
        assert_eq!(exp.run(agent.as_ref(), Some(1), Some(&progress)).unwrap_err(), BbrlError::Cancelled);
    }
}
