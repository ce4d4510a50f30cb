//! The episodic protocol: in each run, one MDP, K episodes of at most H steps, the agent learning
//! across episodes (docs/regret.md), and per episode its two regrets
//! against the finite-horizon optimum:
//! - the realised regret `V*_0(s_0) - sum_h r_h` (the optimum from the episode's own start state
//!   minus the undiscounted return; it can be negative);
//! - the expected regret along the path `sum_h [V*_h(s_h) - Q*_h(s_h, a_h)]` (the gaps of the
//!   actions taken: never negative, the same expectation, a much smaller variance).
//!
//! A run is either on one fixed MDP ([`EpisodicExperiment::fixed`]: a registered environment) or
//! on MDP `i` drawn from a distribution ([`EpisodicExperiment::drawn`]). A transition into a
//! terminal state ends the episode, its reward paid (SPEC 3.0); the next episode starts from the
//! start law.
//!
//! Seed rule (the protocol's, [`crate::rng`]): run `i` uses the agent stream
//! `(seed, AGENT_ONLINE, i)`, the environment stream `(seed, ENVIRONMENT, i)`, the MDP drawn from
//! `(seed, TEST_MDP, i)` when MDPs are drawn, and its K start states drawn once from
//! `(seed, EPISODE_STARTS, i)` before any agent runs. Every agent therefore meets the same MDPs
//! and the same start states (paired), and a run's results never depend on the thread that ran it.

use std::time::Instant;

use rand::Rng as _;
use rand_distr::StandardNormal;
use rayon::prelude::*;

use super::protocol::{guard, reward_buffer_len, Progress};
use crate::agent::{Agent, Setting, Transition};
use crate::error::{BbrlError, Result};
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::platform::threads;
use crate::rng::{purpose, stream, Rng};
use crate::stepper::Stepper;
use crate::work::{self, Work};

/// One MDP of the episodic protocol: its tables, start law, terminal states, reward noise and
/// episode length.
#[derive(Clone, Debug)]
pub struct EpisodicProblem {
    mdp: Mdp,
    start: Vec<f64>,
    terminal: Vec<bool>,
    /// The standard deviation of the Gaussian noise added to each `(s, a)`'s reward, row major;
    /// empty for none (then no normal is drawn). The optimum and the gaps use the mean rewards.
    reward_noise: Vec<f64>,
    horizon: usize,
}

impl EpisodicProblem {
    /// Checks the start law (non-negative, summing to 1 within 1e-9, no mass on a terminal
    /// state), the terminal flags (one per state, empty for none) and the horizon (>= 1 step).
    pub fn new(mdp: Mdp, start: Vec<f64>, terminal: Vec<bool>, horizon: usize) -> Result<Self> {
        let s = mdp.n_states();
        if horizon < 1 {
            return Err(invalid!("the episode horizon must be >= 1 step, got {horizon}"));
        }
        if start.len() != s {
            return Err(invalid!("the start law has {} entries for {s} states", start.len()));
        }
        if start.iter().any(|p| !(p.is_finite() && *p >= 0.0)) || (start.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
            return Err(invalid!("the start law must be non-negative and sum to 1, got {start:?}"));
        }
        let terminal = if terminal.is_empty() { vec![false; s] } else { terminal };
        if terminal.len() != s {
            return Err(invalid!("the terminal flags have {} entries for {s} states", terminal.len()));
        }
        if let Some(bad) = (0..s).find(|&x| terminal[x] && start[x] > 0.0) {
            return Err(invalid!(
                "terminal state {bad} has start probability {}: an episode cannot start ended",
                start[bad]
            ));
        }
        if terminal.iter().all(|&t| t) {
            return Err(invalid!("every state is terminal"));
        }
        Ok(Self { mdp, start, terminal, reward_noise: Vec::new(), horizon })
    }

    /// The same problem with Gaussian noise of standard deviation `sd[s * A + a]` on each reward
    /// of `(s, a)` (an environment whose rewards are noisy around the tables' means).
    pub fn with_reward_noise(mut self, sd: Vec<f64>) -> Result<Self> {
        let pairs = self.mdp.n_states() * self.mdp.n_actions();
        if sd.is_empty() {
            return Ok(self);
        }
        if sd.len() != pairs {
            return Err(invalid!("the reward noise has {} entries for {pairs} state-action pairs", sd.len()));
        }
        if let Some(bad) = sd.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
            return Err(invalid!("a reward noise standard deviation must be finite and >= 0, got {bad}"));
        }
        self.reward_noise = if sd.iter().any(|&x| x > 0.0) { sd } else { Vec::new() };
        Ok(self)
    }

    pub fn mdp(&self) -> &Mdp {
        &self.mdp
    }
    pub fn start_law(&self) -> &[f64] {
        &self.start
    }
    pub fn terminal(&self) -> &[bool] {
        &self.terminal
    }
    pub fn horizon(&self) -> usize {
        self.horizon
    }

    /// A start state drawn from the law (a point mass costs no draw).
    fn draw_start(&self, rng: &mut Rng) -> usize {
        if let Some(s) = self.start.iter().position(|&p| p == 1.0) {
            return s;
        }
        let u: f64 = rng.random();
        let mut cumul = 0.0;
        let mut last = 0;
        for (s, &p) in self.start.iter().enumerate().filter(|(_, p)| **p > 0.0) {
            cumul += p;
            last = s;
            if u < cumul {
                return s;
            }
        }
        // Rounding left u above the total: the last state with mass.
        last
    }
}

/// The finite-horizon optimum of an [`EpisodicProblem`], by backward induction:
/// `Q*_h(s, a) = sum_y P(y|s,a) [R(s,a,y) + V*_{h+1}(y)]`, `V*_h = max_a Q*_h`, `V*_H = 0`, and
/// `V*_h(y) = 0` at a terminal `y` (the episode has ended).
#[derive(Clone, Debug, PartialEq)]
pub struct FiniteHorizonOptimum {
    n_states: usize,
    n_actions: usize,
    horizon: usize,
    /// `V*_h(s)` at `h * S + s`, h = 0..=H.
    values: Vec<f64>,
    /// `Q*_h(s, a)` at `(h * S + s) * A + a`, h = 0..H.
    q: Vec<f64>,
}

impl FiniteHorizonOptimum {
    pub fn solve(problem: &EpisodicProblem) -> Self {
        let (mdp, terminal, horizon) = (&problem.mdp, &problem.terminal, problem.horizon);
        let (ns, na) = (mdp.n_states(), mdp.n_actions());
        let (p, r) = (mdp.transitions(), mdp.rewards());
        let mut values = vec![0.0; (horizon + 1) * ns];
        let mut q = vec![0.0; horizon * ns * na];
        for h in (0..horizon).rev() {
            let (now, next) = values.split_at_mut((h + 1) * ns);
            let (now, next) = (&mut now[h * ns..], &next[..ns]);
            for s in 0..ns {
                if terminal[s] {
                    continue;
                }
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = (s * na + a) * ns;
                    let mut total = 0.0;
                    for y in 0..ns {
                        let prob = p[row + y];
                        if prob > 0.0 {
                            let later = if terminal[y] { 0.0 } else { next[y] };
                            total += prob * (r[row + y] + later);
                        }
                    }
                    q[(h * ns + s) * na + a] = total;
                    best = best.max(total);
                }
                now[s] = best;
            }
        }
        Self { n_states: ns, n_actions: na, horizon, values, q }
    }

    pub fn horizon(&self) -> usize {
        self.horizon
    }
    /// `V*_h(s)`, `h <= H`.
    pub fn value(&self, h: usize, s: usize) -> f64 {
        self.values[h * self.n_states + s]
    }
    /// `Q*_h(s, a)`, `h < H`.
    pub fn q(&self, h: usize, s: usize, a: usize) -> f64 {
        self.q[(h * self.n_states + s) * self.n_actions + a]
    }
    /// `V*_h(s) - Q*_h(s, a) >= 0`: what action `a` costs in expectation at stage `h`.
    pub fn gap(&self, h: usize, s: usize, a: usize) -> f64 {
        self.value(h, s) - self.q(h, s, a)
    }
    /// Every `V*_h(s)`, row-major (H + 1) x S.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// The greedy action at stage `h` in `s` (the first maximiser).
    pub fn action(&self, h: usize, s: usize) -> usize {
        let row = &self.q[(h * self.n_states + s) * self.n_actions..][..self.n_actions];
        let best = self.value(h, s);
        row.iter().position(|&v| v == best).unwrap_or(0)
    }
}

/// What one agent did in every run: per episode, row-major (runs x K), and per run.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodicOutcome {
    /// The undiscounted return of each episode.
    pub returns: Vec<f64>,
    /// `V*_0(s_0) - return` of each episode.
    pub regret: Vec<f64>,
    /// The sum of the gaps of the actions taken in each episode.
    pub expected_regret: Vec<f64>,
    /// The steps each episode lasted (H, or fewer when it reached a terminal state).
    pub steps: Vec<u64>,
    /// The CPU seconds of each episode (the agent's `start_episode`, its decisions and updates).
    pub cpu_seconds: Vec<f64>,
    /// The wall seconds of each run (task start and K episodes).
    pub run_seconds: Vec<f64>,
    /// The work of each run in machine-independent units ([`crate::work`]).
    pub run_work: Vec<Work>,
}

/// One run's results, gathered into an [`EpisodicOutcome`] in run order.
struct RunRecord {
    returns: Vec<f64>,
    regret: Vec<f64>,
    expected_regret: Vec<f64>,
    steps: Vec<u64>,
    cpu_seconds: Vec<f64>,
    seconds: f64,
    work: Work,
}

/// The experiment: the runs' MDPs (one shared, or one drawn per run), their optima, the start
/// states of every episode, the agents' setting and the seed.
#[derive(Clone, Debug)]
pub struct EpisodicExperiment {
    /// One problem (fixed MDP) or one per run (drawn).
    problems: Vec<EpisodicProblem>,
    optima: Vec<FiniteHorizonOptimum>,
    /// The distribution the MDPs were drawn from, when they were.
    test: Option<Fdm>,
    n_runs: usize,
    episodes: usize,
    /// Start state of episode k of run i at `i * K + k`.
    starts: Vec<usize>,
    setting: Setting,
    seed: u64,
}

impl EpisodicExperiment {
    /// `n_runs` runs of `episodes` episodes on the one MDP of `problem`. The agents are given
    /// `Setting { gamma, horizon: H }`: `gamma` is the discount the planners plan with (the regret
    /// itself is undiscounted).
    pub fn fixed(problem: EpisodicProblem, n_runs: usize, episodes: usize, gamma: f64, seed: u64) -> Result<Self> {
        Self::build(vec![problem], None, n_runs, episodes, gamma, seed)
    }

    /// `n_runs` runs, run `i` on the MDP drawn from `test` with stream `(seed, TEST_MDP, i)` (the
    /// protocol's test MDP `i`), with episodes of `horizon` steps starting in the distribution's
    /// initial state (uniform when it has none) or from its start law.
    pub fn drawn(test: Fdm, horizon: usize, n_runs: usize, episodes: usize, gamma: f64, seed: u64) -> Result<Self> {
        check_counts(n_runs, episodes)?;
        let start = test.start_probabilities();
        let problems = (0..n_runs)
            .map(|i| EpisodicProblem::new(test.test_mdp(seed, i as u64), start.clone(), Vec::new(), horizon))
            .collect::<Result<Vec<_>>>()?;
        Self::build(problems, Some(test), n_runs, episodes, gamma, seed)
    }

    fn build(
        problems: Vec<EpisodicProblem>,
        test: Option<Fdm>,
        n_runs: usize,
        episodes: usize,
        gamma: f64,
        seed: u64,
    ) -> Result<Self> {
        check_counts(n_runs, episodes)?;
        let setting = Setting::checked(gamma, problems[0].horizon)?;
        let optima = problems.iter().map(FiniteHorizonOptimum::solve).collect();
        let mut starts = Vec::with_capacity(n_runs * episodes);
        for i in 0..n_runs {
            let problem = &problems[if problems.len() == 1 { 0 } else { i }];
            let mut rng = stream(seed, purpose::EPISODE_STARTS, i as u64);
            starts.extend((0..episodes).map(|_| problem.draw_start(&mut rng)));
        }
        Ok(Self { problems, optima, test, n_runs, episodes, starts, setting, seed })
    }

    pub fn n_runs(&self) -> usize {
        self.n_runs
    }
    pub fn episodes(&self) -> usize {
        self.episodes
    }
    pub fn setting(&self) -> Setting {
        self.setting
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn n_states(&self) -> usize {
        self.problems[0].mdp.n_states()
    }
    pub fn n_actions(&self) -> usize {
        self.problems[0].mdp.n_actions()
    }

    /// The MDP of run `run`, or an error naming the range.
    pub fn problem(&self, run: usize) -> Result<&EpisodicProblem> {
        self.check_run(run)?;
        Ok(&self.problems[self.slot(run)])
    }
    /// The optimum of run `run`'s MDP.
    pub fn optimum(&self, run: usize) -> Result<&FiniteHorizonOptimum> {
        self.check_run(run)?;
        Ok(&self.optima[self.slot(run)])
    }
    /// The start state of every episode, row-major (runs x K).
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }
    /// `V*_0(s_0)` of every episode, row-major (runs x K): what the realised regret subtracts from.
    pub fn episode_optima(&self) -> Vec<f64> {
        let k = self.episodes;
        self.starts.iter().enumerate().map(|(j, &s)| self.optima[self.slot(j / k)].value(0, s)).collect()
    }

    /// The prior the Bayesian agents learn offline from: a Dirichlet of `concentration` on every
    /// next state of every pair, with the problem's rewards and start state. `None` with drawn
    /// MDPs: the distribution they were drawn from (the accurate prior). `None` on a fixed MDP is
    /// an error (it has no distribution).
    pub fn prior(&self, concentration: Option<f64>) -> Result<Fdm> {
        match (concentration, &self.test) {
            (None, Some(test)) => Ok(test.clone()),
            (None, None) => Err(invalid!("a fixed MDP has no distribution: give the prior's concentration")),
            (Some(c), _) => {
                if !(c.is_finite() && c > 0.0) {
                    return Err(invalid!("the prior's concentration must be finite and > 0, got {c}"));
                }
                let first = &self.problems[0];
                let (ns, na) = (self.n_states(), self.n_actions());
                let rewards = match &self.test {
                    Some(test) => test.rewards().to_vec(),
                    None => first.mdp.rewards().to_vec(),
                };
                let initial = first.start.iter().position(|&p| p == 1.0);
                Fdm::new(ns, na, vec![c; ns * na * ns], rewards, initial)
            }
        }
    }

    /// Runs a clone of the trained `agent` in every run, in parallel over `threads` worker threads
    /// (`None`: rayon's global pool). Bit-identical whatever the thread count.
    pub fn run(
        &self,
        agent: &dyn Agent,
        threads: Option<usize>,
        progress: Option<&Progress>,
    ) -> Result<EpisodicOutcome> {
        let one = |i: usize| -> Result<RunRecord> {
            if progress.is_some_and(Progress::is_cancelled) {
                return Err(BbrlError::Cancelled);
            }
            let record = guard(|| self.run_record(agent.clone_box(), i))?;
            if let Some(p) = progress {
                p.finish_one();
            }
            Ok(record)
        };
        let records = threads::install(threads, self.n_runs, || {
            (0..self.n_runs).into_par_iter().map(one).collect::<Result<Vec<_>>>()
        })??;
        Ok(self.gather(records))
    }

    /// Runs a fresh agent `make(i)` in each run `i` in order, on the calling thread: for agents the
    /// core cannot clone or share across threads (Python agents). Entry for entry what
    /// [`EpisodicExperiment::run`] gives a built-in agent.
    pub fn run_each(&self, make: impl FnMut(usize) -> Result<Box<dyn Agent>>) -> Result<EpisodicOutcome> {
        self.run_each_of(&(0..self.n_runs).collect::<Vec<_>>(), make)
    }

    /// [`EpisodicExperiment::run_each`] for the runs `runs` only, in that order (a worker process's
    /// share): run `i` gives the same entries whatever else runs, each run owning its streams.
    pub fn run_each_of(
        &self,
        runs: &[usize],
        mut make: impl FnMut(usize) -> Result<Box<dyn Agent>>,
    ) -> Result<EpisodicOutcome> {
        for &i in runs {
            self.check_run(i)?;
        }
        let records = runs.iter().map(|&i| self.run_record(make(i)?, i)).collect::<Result<Vec<_>>>()?;
        Ok(self.gather(records))
    }

    fn gather(&self, records: Vec<RunRecord>) -> EpisodicOutcome {
        let n = records.len() * self.episodes;
        let mut out = EpisodicOutcome {
            returns: Vec::with_capacity(n),
            regret: Vec::with_capacity(n),
            expected_regret: Vec::with_capacity(n),
            steps: Vec::with_capacity(n),
            cpu_seconds: Vec::with_capacity(n),
            run_seconds: Vec::with_capacity(records.len()),
            run_work: Vec::with_capacity(records.len()),
        };
        for r in records {
            out.returns.extend(r.returns);
            out.regret.extend(r.regret);
            out.expected_regret.extend(r.expected_regret);
            out.steps.extend(r.steps);
            out.cpu_seconds.extend(r.cpu_seconds);
            out.run_seconds.push(r.seconds);
            out.run_work.push(r.work);
        }
        out
    }

    fn slot(&self, run: usize) -> usize {
        if self.problems.len() == 1 {
            0
        } else {
            run
        }
    }

    fn check_run(&self, run: usize) -> Result<()> {
        if run >= self.n_runs {
            return Err(invalid!("run {run} is out of range: allowed 0 to {}", self.n_runs - 1));
        }
        Ok(())
    }

    /// Run `run`: a new task, then K episodes through the stepping seam.
    fn run_record(&self, agent: Box<dyn Agent>, run: usize) -> Result<RunRecord> {
        self.check_run(run)?;
        let (problem, optimum) = (&self.problems[self.slot(run)], &self.optima[self.slot(run)]);
        let (mdp, horizon, k_max) = (&problem.mdp, problem.horizon, self.episodes);
        let name = agent.name();
        let fail = |step: usize, e: BbrlError| BbrlError::AgentFailure {
            agent: name.clone(),
            mdp: run,
            step,
            message: e.to_string(),
        };
        let mut stepper =
            Stepper::for_task(agent, mdp.n_states(), mdp.n_actions(), self.setting, self.seed, run as u64);
        let mut env = stream(self.seed, purpose::ENVIRONMENT, run as u64);
        let mut record = RunRecord {
            returns: Vec::with_capacity(k_max),
            regret: Vec::with_capacity(k_max),
            expected_regret: Vec::with_capacity(k_max),
            steps: Vec::with_capacity(k_max),
            cpu_seconds: Vec::with_capacity(k_max),
            seconds: 0.0,
            work: Work::default(),
        };
        let clock = Instant::now();
        let work_start = Work::now();
        stepper.start_task_on(mdp).map_err(|e| fail(0, e))?;
        let mut step_count = 0usize;
        for k in 0..k_max {
            let cpu_start = crate::platform::cputime::thread_cpu_seconds();
            let first = self.starts[run * k_max + k];
            stepper.start_episode(first).map_err(|e| fail(step_count, e))?;
            let (mut state, mut total, mut gaps, mut steps) = (first, 0.0, 0.0, 0u64);
            for h in 0..horizon {
                let action = stepper.act(state).map_err(|e| fail(step_count, e))?;
                let (next_state, mut reward) = mdp.step(state, action, &mut env);
                if let Some(&sd) = problem.reward_noise.get(state * mdp.n_actions() + action) {
                    if sd > 0.0 {
                        reward += sd * env.sample::<f64, _>(StandardNormal);
                    }
                }
                total += reward;
                gaps += optimum.gap(h, state, action);
                steps += 1;
                stepper.observe(Transition { state, action, reward, next_state }).map_err(|e| fail(step_count, e))?;
                step_count += 1;
                if problem.terminal[next_state] {
                    break;
                }
                state = next_state;
            }
            record.returns.push(total);
            record.regret.push(optimum.value(0, first) - total);
            record.expected_regret.push(gaps);
            record.steps.push(steps);
            record.cpu_seconds.push(crate::platform::cputime::thread_cpu_seconds() - cpu_start);
        }
        work::add_decisions(step_count as u64, mdp.n_states(), mdp.n_actions());
        record.work = Work::delta_since(&work_start);
        record.seconds = clock.elapsed().as_secs_f64();
        Ok(record)
    }
}

fn check_counts(n_runs: usize, episodes: usize) -> Result<()> {
    if n_runs < 1 {
        return Err(invalid!("n_runs must be >= 1, got {n_runs}"));
    }
    if episodes < 1 {
        return Err(invalid!("episodes must be >= 1, got {episodes}"));
    }
    // Each of the per-episode tables holds runs x K numbers: the protocol's memory cap applies.
    reward_buffer_len(n_runs, episodes).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::TaskContext;
    use crate::agents::{build, registry, KINDS};
    use crate::envs::{river_swim, RiverSwimVariant};
    use crate::evaluators::protocol::learn_offline;

    /// Plays the finite-horizon optimum it is given, counting its own stage.
    #[derive(Clone)]
    struct Planner {
        optimum: FiniteHorizonOptimum,
        h: usize,
    }

    impl Agent for Planner {
        fn name(&self) -> String {
            "finite-horizon optimum".into()
        }
        fn learn_offline(&mut self, _: &Fdm, _: Setting, _: &mut Rng) -> Result<()> {
            Ok(())
        }
        fn start_task(&mut self, _: &TaskContext<'_>, _: &mut Rng) -> Result<()> {
            Ok(())
        }
        fn start_episode(&mut self, _: usize, _: &mut Rng) -> Result<()> {
            self.h = 0;
            Ok(())
        }
        fn act(&mut self, state: usize, _: &mut Rng) -> Result<usize> {
            Ok(self.optimum.action(self.h, state))
        }
        fn observe(&mut self, _: Transition, _: &mut Rng) -> Result<()> {
            self.h += 1;
            Ok(())
        }
        fn action_probabilities(&mut self, _: usize, out: &mut [f64]) -> Result<()> {
            out.fill(1.0 / out.len() as f64);
            Ok(())
        }
        fn clone_box(&self) -> Box<dyn Agent> {
            Box::new(self.clone())
        }
    }

    fn osband() -> EpisodicProblem {
        let env = river_swim(RiverSwimVariant::Osband, 1.0).unwrap();
        EpisodicProblem::new(env.mdp().clone(), env.start_law().to_vec(), Vec::new(), 20).unwrap()
    }

    /// A deterministic MDP with integer rewards (sums exact in floating point) and a terminal
    /// state 3: from 0, action 1 goes to 1 (reward 1), action 0 stays (reward 0); from 1, action 1
    /// enters the terminal state (reward 5), action 0 goes to 2 (reward 2); 2 loops (reward 1).
    fn deterministic() -> EpisodicProblem {
        let (ns, na) = (4, 2);
        let mut p = vec![0.0; ns * na * ns];
        let mut r = vec![0.0; ns * na * ns];
        let mut set = |s: usize, a: usize, y: usize, reward: f64| {
            p[(s * na + a) * ns + y] = 1.0;
            r[(s * na + a) * ns + y] = reward;
        };
        set(0, 0, 0, 0.0);
        set(0, 1, 1, 1.0);
        set(1, 0, 2, 2.0);
        set(1, 1, 3, 5.0);
        set(2, 0, 2, 1.0);
        set(2, 1, 2, 1.0);
        set(3, 0, 3, 0.0);
        set(3, 1, 3, 0.0);
        let mdp = Mdp::new(ns, na, p, r, Some(0)).unwrap();
        EpisodicProblem::new(mdp, vec![1.0, 0.0, 0.0, 0.0], vec![false, false, false, true], 6).unwrap()
    }

    /// `V*_h(s)` by plain recursion over the stages, without tables.
    fn recursive_value(problem: &EpisodicProblem, h: usize, s: usize) -> f64 {
        if h == problem.horizon || problem.terminal[s] {
            return 0.0;
        }
        let (mdp, ns, na) = (&problem.mdp, problem.mdp.n_states(), problem.mdp.n_actions());
        (0..na)
            .map(|a| {
                (0..ns)
                    .map(|y| {
                        let i = (s * na + a) * ns + y;
                        let p = mdp.transitions()[i];
                        if p == 0.0 {
                            0.0
                        } else {
                            p * (mdp.rewards()[i] + recursive_value(problem, h + 1, y))
                        }
                    })
                    .sum::<f64>()
            })
            .fold(f64::NEG_INFINITY, f64::max)
    }

    #[test]
    fn backward_induction_agrees_with_recursion_and_the_published_values() {
        let problem = osband();
        let optimum = FiniteHorizonOptimum::solve(&problem);
        // V*_0 of RiverSwim-Osband, H = 20, by float64 backward induction (docs/regret.md).
        let published = [3.397264, 4.052651, 5.301868, 6.678367, 8.094000, 9.521445];
        for (s, v) in published.iter().enumerate() {
            assert!((optimum.value(0, s) - v).abs() < 5e-7, "state {s}: {}", optimum.value(0, s));
        }
        // Left at state 0 from stage 14 on (too few steps remain to reach the far end), right before.
        assert_eq!(optimum.action(13, 0), 1);
        assert_eq!(optimum.action(14, 0), 0);
        let short = EpisodicProblem::new(problem.mdp.clone(), problem.start.clone(), Vec::new(), 7).unwrap();
        let optimum = FiniteHorizonOptimum::solve(&short);
        for h in 0..=7 {
            for s in 0..6 {
                assert!((optimum.value(h, s) - recursive_value(&short, h, s)).abs() < 1e-12, "h {h} s {s}");
            }
        }
        let det = deterministic();
        let optimum = FiniteHorizonOptimum::solve(&det);
        assert_eq!(optimum.value(0, 0), recursive_value(&det, 0, 0));
        // 0 -> 1 (1) -> 2 (2) -> 2 ... (1 each): 1 + 2 + 4 = 7 beats ending at once for 6.
        assert_eq!(optimum.value(0, 0), 7.0);
        assert_eq!(optimum.value(4, 1), 5.0);
    }

    #[test]
    fn the_optimal_agent_has_zero_regret_and_terminal_states_end_episodes() {
        let det = deterministic();
        let planner = Planner { optimum: FiniteHorizonOptimum::solve(&det), h: 0 };
        let exp = EpisodicExperiment::fixed(det, 3, 10, 0.95, 1).unwrap();
        let out = exp.run(&planner, Some(1), None).unwrap();
        assert!(out.regret.iter().all(|&r| r == 0.0), "{:?}", out.regret);
        assert!(out.expected_regret.iter().all(|&r| r == 0.0));
        assert!(out.returns.iter().all(|&r| r == 7.0));
        // A short horizon where ending at the terminal state is best: 2 steps, 1 + 5.
        let det = deterministic();
        let short = EpisodicProblem::new(det.mdp.clone(), det.start.clone(), det.terminal.clone(), 2).unwrap();
        let planner = Planner { optimum: FiniteHorizonOptimum::solve(&short), h: 0 };
        let exp = EpisodicExperiment::fixed(short, 2, 4, 0.95, 1).unwrap();
        let out = exp.run(&planner, Some(1), None).unwrap();
        assert!(out.regret.iter().all(|&r| r == 0.0) && out.returns.iter().all(|&r| r == 6.0));
        assert!(out.steps.iter().all(|&n| n == 2));
        // A terminal state reached before H ends the episode early.
        let det = deterministic();
        let long = EpisodicProblem::new(det.mdp.clone(), det.start.clone(), det.terminal.clone(), 6).unwrap();
        let always_right = build("random", &Default::default()).unwrap();
        let exp = EpisodicExperiment::fixed(long, 4, 20, 0.95, 3).unwrap();
        let mut trained = always_right;
        learn_offline(trained.as_mut(), &exp.prior(Some(1.0)).unwrap(), exp.setting(), 3).unwrap();
        let out = exp.run(trained.as_ref(), Some(1), None).unwrap();
        assert!(out.steps.iter().any(|&n| n < 6), "some random episode must reach the terminal state");
    }

    #[test]
    fn expected_regret_is_nonnegative_and_has_the_realised_regrets_mean() {
        // A uniformly random agent learns nothing, so the episodes of a run are independent and
        // D = realised - expected has mean 0 in each; the test allows 4 standard errors.
        let exp = EpisodicExperiment::fixed(osband(), 40, 100, 0.95, 11).unwrap();
        let mut agent = build("random", &Default::default()).unwrap();
        learn_offline(agent.as_mut(), &exp.prior(Some(1.0)).unwrap(), exp.setting(), 11).unwrap();
        let out = exp.run(agent.as_ref(), Some(1), None).unwrap();
        assert!(out.expected_regret.iter().all(|&g| g >= 0.0));
        let d: Vec<f64> = out.regret.iter().zip(&out.expected_regret).map(|(r, e)| r - e).collect();
        let n = d.len() as f64;
        let mean = d.iter().sum::<f64>() / n;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!(mean.abs() < 4.0 * (var / n).sqrt(), "mean {mean}, se {}", (var / n).sqrt());
        // And the test can fail: the realised regret is not the expected one episode by episode.
        assert!(d.iter().any(|x| x.abs() > 1e-9));
    }

    #[test]
    fn runs_are_bit_identical_on_one_and_two_threads_and_paired() {
        let fixed = EpisodicExperiment::fixed(osband(), 4, 12, 0.95, 5).unwrap();
        let drawn = EpisodicExperiment::drawn(crate::model::problems::generalized_chain(), 10, 3, 8, 0.95, 5).unwrap();
        for exp in [&fixed, &drawn] {
            let prior = exp.prior(Some(1.0 / exp.n_states() as f64)).unwrap();
            for spec in KINDS {
                let mut agent = build(spec.kind, &registry::find(spec.kind).unwrap().examples[0].params()).unwrap();
                learn_offline(agent.as_mut(), &prior, exp.setting(), 5).unwrap();
                let one = exp.run(agent.as_ref(), Some(1), None).unwrap();
                let two = exp.run(agent.as_ref(), Some(2), None).unwrap();
                assert_eq!(one.returns, two.returns, "{}", spec.kind);
                assert_eq!(one.expected_regret, two.expected_regret, "{}", spec.kind);
                assert_eq!(one.run_work, two.run_work, "{}", spec.kind);
                assert!(one.run_work.iter().all(|w| w.get(work::Unit::Decisions) > 0));
            }
        }
        // The start states are drawn once, before any agent runs: every agent meets the same.
        assert_eq!(drawn.starts().len(), 24);
        assert_eq!(drawn.episode_optima().len(), 24);
    }

    #[test]
    fn reward_noise_moves_the_realised_regret_only() {
        let quiet = EpisodicExperiment::fixed(deterministic(), 2, 50, 0.9, 8).unwrap();
        let noisy_problem = deterministic().with_reward_noise(vec![0.5; 8]).unwrap();
        let noisy = EpisodicExperiment::fixed(noisy_problem, 2, 50, 0.9, 8).unwrap();
        let planner = Planner { optimum: FiniteHorizonOptimum::solve(&deterministic()), h: 0 };
        let (a, b) = (quiet.run(&planner, Some(1), None).unwrap(), noisy.run(&planner, Some(1), None).unwrap());
        assert_eq!(a.expected_regret, b.expected_regret);
        assert!(b.regret.iter().any(|&r| r != 0.0) && a.regret.iter().all(|&r| r == 0.0));
        let mean = b.regret.iter().sum::<f64>() / b.regret.len() as f64;
        // 100 episodes of 3 noisy steps: sd of the mean sqrt(3 * 0.25 / 100) ~ 0.087.
        assert!(mean.abs() < 0.35, "{mean}");
        assert!(deterministic().with_reward_noise(vec![0.1; 3]).is_err());
        assert!(deterministic().with_reward_noise(vec![-1.0; 8]).is_err());
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let err = |r: Result<EpisodicExperiment>| r.unwrap_err().to_string();
        assert!(err(EpisodicExperiment::fixed(osband(), 0, 5, 0.9, 0)).contains("n_runs"));
        assert!(err(EpisodicExperiment::fixed(osband(), 2, 0, 0.9, 0)).contains("episodes"));
        assert!(err(EpisodicExperiment::fixed(osband(), 2, 2, 1.0, 0)).contains("gamma"));
        let mdp = osband().mdp.clone();
        let e = EpisodicProblem::new(mdp.clone(), vec![0.5; 6], Vec::new(), 5).unwrap_err().to_string();
        assert!(e.contains("start law"), "{e}");
        assert!(EpisodicProblem::new(mdp.clone(), vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0], Vec::new(), 0).is_err());
        let e = EpisodicProblem::new(mdp.clone(), vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0], vec![true; 2], 5).unwrap_err();
        assert!(e.to_string().contains("terminal flags"));
        let mut t = vec![false; 6];
        t[0] = true;
        let e = EpisodicProblem::new(mdp, vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0], t, 5).unwrap_err();
        assert!(e.to_string().contains("cannot start ended"));
        let exp = EpisodicExperiment::fixed(osband(), 1, 1, 0.9, 0).unwrap();
        assert!(exp.prior(None).unwrap_err().to_string().contains("concentration"));
        assert!(exp.prior(Some(0.0)).unwrap_err().to_string().contains("> 0"));
        assert!(exp.problem(1).unwrap_err().to_string().contains("run 1 is out of range"));
    }
}
