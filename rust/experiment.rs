//! The benchmark protocol (SPEC 3): N test MDPs drawn once, one trajectory per MDP and agent.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::agents::{Agent, Setting};
use crate::error::{BbrlError, Result};
use crate::fdm::Fdm;
use crate::invalid;
use crate::mdp::Mdp;
use crate::rng::{purpose, stream};
use crate::simulate::TrajectoryOutcome;
use crate::stepper::Stepper;

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
}

/// Checks a discount and horizon.
pub fn check_setting(setting: Setting) -> Result<()> {
    if !(setting.gamma >= 0.0 && setting.gamma < 1.0) {
        return Err(invalid!("gamma must be in [0, 1), got {}", setting.gamma));
    }
    if setting.horizon < 1 {
        return Err(invalid!("horizon must be >= 1 step, got {}", setting.horizon));
    }
    Ok(())
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
}

/// The time offline learning took: wall and CPU seconds, both zero by declaration for an agent
/// that learns nothing offline ([`Agent::learns_offline`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OfflineTime {
    pub wall_seconds: f64,
    /// CPU time of the whole process during learning, so that a search spread over worker
    /// threads (OPPS-DS) counts all of its work.
    pub cpu_seconds: f64,
}

impl OfflineTime {
    /// Times `learn` unless the agent declares it learns nothing offline.
    pub fn measure(learns: bool, learn: impl FnOnce() -> Result<()>) -> Result<Self> {
        let start = Instant::now();
        let cpu_start = crate::cputime::process_cpu_seconds();
        learn()?;
        if !learns {
            return Ok(Self { wall_seconds: 0.0, cpu_seconds: 0.0 });
        }
        let cpu_seconds = crate::cputime::process_cpu_seconds() - cpu_start;
        Ok(Self { wall_seconds: start.elapsed().as_secs_f64(), cpu_seconds })
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
        let mdps = (0..n_mdps).map(|i| test.sample_mdp(&mut stream(seed, purpose::TEST_MDP, i as u64))).collect();
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
        let mut rng = stream(self.seed, purpose::AGENT_OFFLINE, 0);
        let learns = agent.learns_offline();
        OfflineTime::measure(learns, || guard(|| agent.learn_offline(prior, self.setting, &mut rng)))
    }

    /// Runs a clone of the trained `agent` on every test MDP, in parallel over `threads` worker
    /// threads (`None`: rayon's global pool, one per core). MDP `i` uses the agent stream
    /// `(seed, AGENT_ONLINE, i)` and the environment stream `(seed, ENVIRONMENT, i)`, so the
    /// results are bit-identical whatever the thread count.
    pub fn run(&self, agent: &dyn Agent, threads: Option<usize>, progress: Option<&Progress>) -> Result<RunOutcome> {
        let job = || -> Result<Vec<TrajectoryOutcome>> {
            self.mdps
                .par_iter()
                .enumerate()
                .map(|(i, mdp)| {
                    if progress.is_some_and(Progress::is_cancelled) {
                        return Err(BbrlError::Cancelled);
                    }
                    let outcome = self.run_on(agent.clone_box(), mdp, i)?;
                    if let Some(p) = progress {
                        p.done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(outcome)
                })
                .collect()
        };
        let pairs = match threads {
            None => job()?,
            Some(0) => return Err(invalid!("threads must be >= 1 (or None for every core), got 0")),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| invalid!("cannot start {n} worker threads: {e}"))?
                .install(job)?,
        };
        Ok(RunOutcome {
            returns: pairs.iter().map(|o| o.discounted_return).collect(),
            online_seconds: pairs.iter().map(|o| o.seconds).collect(),
            online_cpu_seconds: pairs.iter().map(|o| o.cpu_seconds).collect(),
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
        let mdp =
            self.mdps.get(index).ok_or_else(|| invalid!("MDP index {index} is out of range 0..{}", self.mdps.len()))?;
        self.run_on(agent, mdp, index)
    }

    /// The handle on `agent` for test MDP `index`: its stream is `(seed, AGENT_ONLINE, index)`.
    pub fn stepper(&self, agent: Box<dyn Agent>, index: usize) -> Stepper {
        let rng = stream(self.seed, purpose::AGENT_ONLINE, index as u64);
        Stepper::new(agent, self.test.n_states(), self.test.n_actions(), self.setting, rng)
    }

    fn run_on(&self, agent: Box<dyn Agent>, mdp: &Mdp, index: usize) -> Result<TrajectoryOutcome> {
        let mut stepper = self.stepper(agent, index);
        let mut env_rng = stream(self.seed, purpose::ENVIRONMENT, index as u64);
        guard(|| stepper.run_trajectory(mdp, index, &mut env_rng))
    }
}

/// Runs `f`, turning a panic (a bug) into an error instead of unwinding into the caller.
fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
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
    use crate::agents::{build, ParamValue, Params};

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
        let exp = Experiment::new(fdm.clone(), 40, Setting { gamma: 0.95, horizon: 50 }, 11).unwrap();
        let mut agent = build(kind, &params).unwrap();
        exp.learn_offline(agent.as_mut(), &fdm).unwrap();
        exp.run(agent.as_ref(), threads, None).unwrap()
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        for (kind, params) in [
            ("random", Params::new()),
            ("egreedy", Params::from([("epsilon".to_string(), ParamValue::Float(0.2))])),
            ("softmax", Params::from([("tau".to_string(), ParamValue::Float(0.5))])),
            ("beb", Params::from([("beta".to_string(), ParamValue::Float(1.5))])),
            (
                "sboss",
                Params::from([
                    ("epsilon".to_string(), ParamValue::Float(0.01)),
                    ("delta".into(), ParamValue::Float(1.0)),
                ]),
            ),
            ("psrl", Params::from([("k".to_string(), ParamValue::Int(2))])),
            ("optimal", Params::new()),
            (
                "bamcp",
                Params::from([("k".to_string(), ParamValue::Int(20)), ("depth".to_string(), ParamValue::Int(5))]),
            ),
            (
                "bfs3",
                Params::from([
                    ("k".to_string(), ParamValue::Int(10)),
                    ("c".to_string(), ParamValue::Int(2)),
                    ("depth".to_string(), ParamValue::Int(4)),
                ]),
            ),
        ] {
            let one = run_with(Some(1), kind, params.clone());
            let two = run_with(Some(2), kind, params.clone());
            let three = run_with(Some(3), kind, params);
            assert_eq!(one.returns, two.returns, "{kind}");
            assert_eq!(one.returns, three.returns, "{kind}");
        }
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
        assert!(exp.run_one(agent, 6).unwrap_err().to_string().contains("out of range 0..6"));
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
                assert_eq!(offline, OfflineTime { wall_seconds: 0.0, cpu_seconds: 0.0 }, "{kind}");
            }
            let run = exp.run(agent.as_ref(), Some(1), None).unwrap();
            assert_eq!(run.online_cpu_seconds.len(), 8);
            // One thread runs each trajectory: its CPU time cannot exceed the wall time of the same
            // span (plus the clock resolution, for the two reads).
            let slack = 2.0 * crate::cputime::cpu_clock_resolution_seconds() + 1e-6;
            for (cpu, wall) in run.online_cpu_seconds.iter().zip(&run.online_seconds) {
                assert!(*cpu >= 0.0 && *cpu <= wall + slack, "{kind}: cpu {cpu} wall {wall}");
            }
        }
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
