//! OPPS-DS (SPEC 4.9.5): offline policy search over a discrete set of formulas with UCB1.
//!
//! Offline, every formula is an arm. A pull draws a fresh MDP from the **prior**, runs the
//! formula's agent for one trajectory of `T` steps and scores its raw discounted return. UCB1
//! ([`ucb1`]) spends `n_draws` successful pulls; the most-pulled formula is kept and the agent
//! then acts as that [`FormulaAgent`].
//!
//! As in the original:
//! * pulls run the formula agent in compat mode, so a formula that fails (ln <= 0, 1/0, ...) is
//!   detected: that arm is discarded for good and the failed pull does not consume budget;
//! * with `n_draws < |F|` only the first `n_draws` formulas (in set order) are pulled;
//! * the winner is the most-pulled arm among **all** arms (an arm discarded after successful
//!   pulls keeps its count and can win, exactly as `UCB1::run` counts `nList`).
//!
//! Differences, none of which changes the algorithm:
//! * Randomness: one u64 is taken from the offline rng as a base seed; pull number `p` (the
//!   initial pull of arm `i` is `p = i`; the t-th pull of the UCB phase, failed or not, is
//!   `p = k + t`) draws its MDP, environment and agent randomness from streams derived from
//!   `stream_key(base, OPPS_PULL, p)`, so results do not depend on the thread count.
//!   UCB ties and the final tie are broken with the offline rng.
//! * The initial round runs in parallel over arms (in batches of the remaining budget, which is
//!   exactly the "while the budget lasts" rule once failed pulls are accounted for in order); the
//!   UCB phase is sequential.
//! * The original resets the chosen inner agent twice at the start of every trajectory (`setMDP`
//!   resets it, then `reset` runs again), solving every Q-variable twice; that only costs time,
//!   and we reset once.
//! * The searching workers share one set of Q-variable models per thread and switch formulas,
//!   instead of the original's one FormulaAgent (three models) per formula, so memory does not
//!   grow with |F|.
//! * `compat` only changes the **test-time** agent: by default a formula error during a test run
//!   counts the failing action's index as -inf (see [`FormulaAgent`]); `compat = true` aborts the
//!   run as the original does.

use std::fmt::Write as _;
use std::sync::Arc;

use rand::Rng as _;
use rayon::prelude::*;

use crate::work::{self, Work};

use super::common::argmax_random_tie;
use super::formula_agent::FormulaAgent;
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range, COMPAT};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::{BbrlError, Result};
use crate::formula::set::shipped_set;
use crate::formula::{parse_formula_list, Formula};
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::{purpose, stream, stream_key, Rng};
use crate::trajectory::run_trajectory;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "oppsds",
    display: "OPPS-DS",
    params: &[
        ParamSpec {
            name: "formulas",
            ty: ParamType::Text,
            default: None,
            range: Range::Parsed("F2 to F6 (a shipped set), or RPN formulas separated by newlines or ';'"),
            doc: "the formula set UCB1 chooses from",
        },
        ParamSpec {
            name: "n_draws",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "UCB1 budget, in trajectories on MDPs drawn from the prior",
        },
        ParamSpec {
            name: "c",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(DEFAULT_C)),
            range: Range::at_least(0.0),
            doc: "UCB1 exploration constant, on raw returns",
        },
        COMPAT,
    ],
    online_units: &[],
    offline_units: &[("n_draws", 1.0), ("horizon", 1.0)],
    sizes_memory: &[],
    examples: &[
        Example {
            doc: "quick",
            params: &[("formulas", ParamDefault::Text("F2")), ("n_draws", ParamDefault::Int(200))],
        },
        Example {
            doc: "a listed formula set, its own constant, the original's quirks",
            params: &[
                ("formulas", ParamDefault::Text("X0; X1 ABS; X2 X0 DIV")),
                ("n_draws", ParamDefault::Int(50)),
                ("c", ParamDefault::Float(1.5)),
                ("compat", ParamDefault::Bool(true)),
            ],
        },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| {
        let spec = r.text("formulas")?.trim();
        let (formulas, label) = if let Some(n) = spec.strip_prefix('F').filter(|n| n.parse::<u8>().is_ok()) {
            (shipped_set(&format!("F{n}"))?, Some(spec))
        } else {
            (parse_formula_list(spec).map_err(|e| invalid!("agent 'oppsds': parameter 'formulas': {e}"))?, None)
        };
        let n_draws = r.count("n_draws")?;
        if n_draws < 1 {
            return Err(invalid!("agent 'oppsds': n_draws must be >= 1, got {n_draws}"));
        }
        let agent = OppsDs::new(formulas, n_draws as u64, r.float("c")?, r.flag("compat")?)?;
        Ok(Box::new(match label {
            Some(l) => agent.with_label(l),
            None => agent,
        }))
    },
};

/// The exploration constant of the benchmark (`--c 660.0`, raw returns, no normalisation).
pub const DEFAULT_C: f64 = 660.0;

/// The arms of a UCB1 search. `pull` must be a pure function of `(arm, pull_index)`, so that the
/// initial round can run in parallel; `None` means the pull failed (the arm is discarded).
pub trait Bandit: Sync {
    /// Per-thread scratch state.
    type Worker: Send;
    fn worker(&self) -> Self::Worker;
    fn pull(&self, worker: &mut Self::Worker, arm: usize, pull_index: u64) -> Option<f64>;
}

/// The state of a finished UCB1 search.
#[derive(Clone, Debug, PartialEq)]
pub struct Ucb1Outcome {
    /// Successful pulls per arm.
    pub pulls: Vec<u64>,
    /// Running mean of each arm's rewards (the original's update `mu = mu n/(n+1) + r/(n+1)`).
    pub means: Vec<f64>,
    /// Arms whose pull failed once.
    pub discarded: Vec<bool>,
    /// Pulls attempted, failed ones included.
    pub attempts: u64,
    /// The most-pulled arm (random among ties); `None` if every arm was discarded.
    pub chosen: Option<usize>,
}

/// UCB1 as `utils::UCB1::run` (SPEC 4.9.5): pull arms 0, 1, ... once each while the budget lasts,
/// then repeatedly the arm maximising `mu_i + c sqrt(ln(n_total) / n_i)` (discarded arms score
/// -DBL_MAX; ties at random), until `budget` successful pulls. Failed pulls discard the arm and
/// do not consume budget. The initial round runs in parallel (see [`Bandit`]).
pub fn ucb1<B: Bandit>(bandit: &B, n_arms: usize, budget: u64, c: f64, rng: &mut Rng) -> Ucb1Outcome {
    let k = n_arms;
    let mut out =
        Ucb1Outcome { pulls: vec![0; k], means: vec![0.0; k], discarded: vec![false; k], attempts: 0, chosen: None };
    let mut budget = budget;
    let mut total = 0u64;
    let mut n_discarded = 0usize;

    // Initialisation: arm i, in order, while the budget lasts. A batch of `budget` arms can never
    // overspend, and failed pulls are made up by the next batch.
    let mut next = 0usize;
    while next < k && budget > 0 {
        let end = next + (k - next).min(usize::try_from(budget).unwrap_or(usize::MAX));
        // Each pull's work is counted on the thread that ran it and what other threads did is
        // added back here, so that the caller's measurement of offline learning counts every
        // pull once whatever the thread count (pulls rayon runs on this thread count already).
        let before = Work::now();
        let pulled: Vec<(Option<f64>, Work)> = (next..end)
            .into_par_iter()
            .map_init(|| bandit.worker(), |worker, arm| work::counted(|| bandit.pull(worker, arm, arm as u64)))
            .collect();
        let all = pulled.iter().fold(Work::default(), |sum, (_, w)| sum.plus(w));
        work::add_all(&all.minus(&Work::delta_since(&before)));
        for (arm, (reward, _)) in (next..end).zip(pulled) {
            out.attempts += 1;
            match reward {
                Some(r) => {
                    out.means[arm] = r;
                    out.pulls[arm] = 1;
                    total += 1;
                    budget -= 1;
                }
                None => {
                    out.discarded[arm] = true;
                    n_discarded += 1;
                }
            }
        }
        next = end;
    }

    // UCB phase, sequential.
    let mut worker = bandit.worker();
    let mut scores = vec![0.0; k];
    let mut pull_index = k as u64;
    while budget > 0 && n_discarded < k {
        let log_total = (total as f64).ln();
        for i in 0..k {
            scores[i] =
                if out.discarded[i] { f64::MIN } else { out.means[i] + c * (log_total / out.pulls[i] as f64).sqrt() };
        }
        let s = argmax_random_tie(&scores, rng);
        out.attempts += 1;
        match bandit.pull(&mut worker, s, pull_index) {
            Some(r) => {
                let n = out.pulls[s] as f64;
                out.means[s] *= n / (n + 1.0);
                out.means[s] += (1.0 / (n + 1.0)) * r;
                out.pulls[s] += 1;
                total += 1;
                budget -= 1;
            }
            None => {
                out.discarded[s] = true;
                n_discarded += 1;
            }
        }
        pull_index += 1;
    }

    if n_discarded < k {
        let counts: Vec<f64> = out.pulls.iter().map(|&n| n as f64).collect();
        out.chosen = Some(argmax_random_tie(&counts, rng));
    }
    out
}

/// The formula arms: one trajectory on a fresh MDP from the prior per pull.
struct FormulaArms<'a> {
    formulas: &'a [Arc<Formula>],
    prior: &'a Fdm,
    setting: Setting,
    base_seed: u64,
}

impl Bandit for FormulaArms<'_> {
    type Worker = FormulaAgent;

    fn worker(&self) -> FormulaAgent {
        let mut agent = FormulaAgent::shared(Arc::clone(&self.formulas[0]), true);
        agent.build_variables(self.prior, self.setting, true);
        agent
    }

    fn pull(&self, agent: &mut FormulaAgent, arm: usize, pull_index: u64) -> Option<f64> {
        let key = stream_key(self.base_seed, purpose::OPPS_PULL, pull_index);
        let mdp = self.prior.sample_mdp(&mut stream(key, 0, 0));
        agent.set_formula(Arc::clone(&self.formulas[arm]));
        let mut env_rng = stream(key, 1, 0);
        let mut agent_rng = stream(key, 2, 0);
        run_trajectory(agent, &mdp, pull_index as usize, self.setting, &mut agent_rng, &mut env_rng)
            .ok()
            .map(|o| o.discounted_return)
    }
}

/// What offline learning produced (shared by the clones of a trained agent).
#[derive(Debug)]
struct Summary {
    outcome: Ucb1Outcome,
    chosen: usize,
    prior: Fdm,
    setting: Setting,
}

/// The OPPS-DS agent.
#[derive(Clone, Debug)]
pub struct OppsDs {
    formulas: Arc<[Arc<Formula>]>,
    n_draws: u64,
    c: f64,
    compat: bool,
    label: Option<String>,
    summary: Option<Arc<Summary>>,
    agent: Option<FormulaAgent>,
}

impl OppsDs {
    /// An untrained agent over `formulas` (in set order) with budget `n_draws >= 1` and
    /// exploration constant `c >= 0` (the benchmark: [`DEFAULT_C`]).
    pub fn new(formulas: Vec<Formula>, n_draws: u64, c: f64, compat: bool) -> Result<Self> {
        if formulas.is_empty() {
            return Err(invalid!("OPPS-DS needs at least one formula"));
        }
        if n_draws < 1 {
            return Err(invalid!("n_draws must be >= 1, got {n_draws}"));
        }
        if !(c.is_finite() && c >= 0.0) {
            return Err(invalid!("c must be a finite number >= 0, got {c}"));
        }
        Ok(Self {
            formulas: formulas.into_iter().map(Arc::new).collect(),
            n_draws,
            c,
            compat,
            label: None,
            summary: None,
            agent: None,
        })
    }

    /// Names the formula set in the agent's name (e.g. "F5").
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The formula chosen by offline learning.
    pub fn chosen(&self) -> Option<&Formula> {
        self.summary.as_ref().map(|s| &*self.formulas[s.chosen])
    }

    /// The index of the chosen formula in the set.
    pub fn chosen_index(&self) -> Option<usize> {
        self.summary.as_ref().map(|s| s.chosen)
    }

    /// The UCB1 statistics of offline learning (pulls, means, discarded arms).
    pub fn offline_outcome(&self) -> Option<&Ucb1Outcome> {
        self.summary.as_ref().map(|s| &s.outcome)
    }

    pub fn formulas(&self) -> impl Iterator<Item = &Formula> {
        self.formulas.iter().map(|f| &**f)
    }
    pub fn n_draws(&self) -> u64 {
        self.n_draws
    }
    pub fn c(&self) -> f64 {
        self.c
    }
    pub fn compat(&self) -> bool {
        self.compat
    }
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    fn inner(&mut self) -> Result<&mut FormulaAgent> {
        if self.agent.is_none() {
            return Err(not_trained(&self.name()));
        }
        Ok(self.agent.as_mut().expect("checked"))
    }

    fn install(&mut self, summary: Summary) {
        let mut agent = FormulaAgent::shared(Arc::clone(&self.formulas[summary.chosen]), self.compat);
        agent.build_variables(&summary.prior, summary.setting, false);
        self.agent = Some(agent);
        self.summary = Some(Arc::new(summary));
    }

    /// A small, human-readable text holding the parameters, the formula set, the prior and
    /// setting of offline learning, the per-formula statistics and the chosen formula.
    /// [`OppsDs::from_text`] reads it back (a trained agent stays trained).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "bbrl-opps-ds 1");
        let _ = writeln!(s, "label {}", self.label.as_deref().unwrap_or("-"));
        let _ = writeln!(s, "n_draws {}", self.n_draws);
        let _ = writeln!(s, "c {}", self.c);
        let _ = writeln!(s, "compat {}", self.compat);
        let join = |v: &[f64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ");
        match &self.summary {
            None => {
                let _ = writeln!(s, "chosen -");
            }
            Some(sum) => {
                let _ = writeln!(s, "chosen {} {}", sum.chosen, self.formulas[sum.chosen]);
                let _ = writeln!(s, "attempts {}", sum.outcome.attempts);
                let _ = writeln!(s, "gamma {}", sum.setting.gamma);
                let _ = writeln!(s, "horizon {}", sum.setting.horizon);
                let p = &sum.prior;
                let initial = p.initial_state().map_or("-".to_string(), |x| x.to_string());
                let _ = writeln!(s, "prior {} {} {initial}", p.n_states(), p.n_actions());
                let _ = writeln!(s, "theta {}", join(p.theta()));
                let _ = writeln!(s, "rewards {}", join(p.rewards()));
            }
        }
        let _ = writeln!(s, "formulas {}  # then: pulls mean discarded rpn", self.formulas.len());
        for (i, f) in self.formulas.iter().enumerate() {
            let (n, mu, d) = match &self.summary {
                Some(sum) => (sum.outcome.pulls[i], sum.outcome.means[i], sum.outcome.discarded[i] as u8),
                None => (0, 0.0, 0),
            };
            let _ = writeln!(s, "{n} {mu} {d} {f}");
        }
        s
    }

    /// Reads the text of [`OppsDs::to_text`]; errors name the offending line.
    pub fn from_text(text: &str) -> Result<Self> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let mut next = |key: &str| -> Result<(usize, String)> {
            let (i, line) = lines.next().ok_or_else(|| invalid!("OPPS-DS text: missing '{key}' line"))?;
            let rest = line
                .strip_prefix(key)
                .filter(|r| r.is_empty() || r.starts_with(' '))
                .ok_or_else(|| invalid!("OPPS-DS text, line {}: expected '{key} ...', got '{line}'", i + 1))?;
            Ok((i + 1, rest.trim().to_string()))
        };
        fn num<T: std::str::FromStr>(line: usize, what: &str, v: &str) -> Result<T> {
            v.parse().map_err(|_| invalid!("OPPS-DS text, line {line}: bad {what} '{v}'"))
        }
        let (l, version) = next("bbrl-opps-ds")?;
        if version != "1" {
            return Err(invalid!("OPPS-DS text, line {l}: unsupported version '{version}'"));
        }
        let (_, label) = next("label")?;
        let (l, v) = next("n_draws")?;
        let n_draws: u64 = num(l, "n_draws", &v)?;
        let (l, v) = next("c")?;
        let c: f64 = num(l, "c", &v)?;
        let (l, v) = next("compat")?;
        let compat: bool = num(l, "compat", &v)?;
        let (l, chosen_line) = next("chosen")?;
        let mut trained = None;
        if chosen_line != "-" {
            let chosen: usize = num(l, "chosen index", chosen_line.split_whitespace().next().unwrap_or(""))?;
            let (l, v) = next("attempts")?;
            let attempts: u64 = num(l, "attempts", &v)?;
            let (l, v) = next("gamma")?;
            let gamma: f64 = num(l, "gamma", &v)?;
            let (l, v) = next("horizon")?;
            let horizon: usize = num(l, "horizon", &v)?;
            let (l, v) = next("prior")?;
            let parts: Vec<&str> = v.split_whitespace().collect();
            if parts.len() != 3 {
                return Err(invalid!("OPPS-DS text, line {l}: expected 'prior S A initial'"));
            }
            let (ns, na): (usize, usize) = (num(l, "S", parts[0])?, num(l, "A", parts[1])?);
            let initial = if parts[2] == "-" { None } else { Some(num(l, "initial state", parts[2])?) };
            let mut table = |key: &str| -> Result<Vec<f64>> {
                let (l, v) = next(key)?;
                v.split_whitespace().map(|x| num(l, key, x)).collect()
            };
            let theta = table("theta")?;
            let rewards = table("rewards")?;
            let prior = Fdm::new(ns, na, theta, rewards, initial)?;
            trained = Some((chosen, attempts, prior, Setting { gamma, horizon }, l));
        }
        let (l, v) = next("formulas")?;
        let k: usize = num(l, "formula count", v.split_whitespace().next().unwrap_or(""))?;
        let mut formulas = Vec::with_capacity(k);
        let mut outcome = Ucb1Outcome {
            pulls: vec![0; k],
            means: vec![0.0; k],
            discarded: vec![false; k],
            attempts: 0,
            chosen: None,
        };
        for i in 0..k {
            let (l, line) = lines
                .next()
                .map(|(l, s)| (l + 1, s))
                .ok_or_else(|| invalid!("OPPS-DS text: {k} formulas announced, {i} found"))?;
            let mut parts = line.trim().splitn(4, ' ');
            let mut field = || parts.next().unwrap_or("");
            outcome.pulls[i] = num(l, "pull count", field())?;
            outcome.means[i] = num(l, "mean", field())?;
            outcome.discarded[i] = num::<u8>(l, "discarded flag", field())? != 0;
            let rpn = field();
            formulas.push(Formula::parse_rpn(rpn).map_err(|e| invalid!("OPPS-DS text, line {l}: {e}"))?);
        }
        let mut agent = Self::new(formulas, n_draws, c, compat)?;
        if label != "-" {
            agent.label = Some(label);
        }
        if let Some((chosen, attempts, prior, setting, l)) = trained {
            if chosen >= k {
                return Err(invalid!("OPPS-DS text, line {l}: chosen index {chosen} >= {k} formulas"));
            }
            outcome.attempts = attempts;
            outcome.chosen = Some(chosen);
            agent.install(Summary { outcome, chosen, prior, setting });
        }
        Ok(agent)
    }
}

impl Agent for OppsDs {
    fn name(&self) -> String {
        let compat = if self.compat { ", compat" } else { "" };
        match self.chosen() {
            Some(f) => format!("OPPS-DS (Formula ({f}){compat})"),
            None => {
                let set = self.label.clone().unwrap_or_else(|| format!("{} formulas", self.formulas.len()));
                format!("OPPS-DS ({set}, n_draws = {}, c = {}{compat})", self.n_draws, self.c)
            }
        }
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, rng: &mut Rng) -> Result<()> {
        let base_seed: u64 = rng.random();
        let arms = FormulaArms { formulas: &self.formulas, prior, setting, base_seed };
        let outcome = ucb1(&arms, self.formulas.len(), self.n_draws, self.c, rng);
        let Some(chosen) = outcome.chosen else {
            return Err(BbrlError::Agent(format!(
                "OPPS-DS: every one of the {} formulas failed during offline learning",
                self.formulas.len()
            )));
        };
        self.install(Summary { outcome, chosen, prior: prior.clone(), setting });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        self.inner()?.start_task(context, rng)
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.inner()?.act(state, rng)
    }

    fn observe(&mut self, transition: Transition, rng: &mut Rng) -> Result<()> {
        self.inner()?.observe(transition, rng)
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.inner()?.action_probabilities(state, out)
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }

    fn saved_text(&self) -> Option<String> {
        Some(self.to_text())
    }

    fn details(&self) -> Vec<(String, String)> {
        match self.chosen() {
            Some(f) => vec![("formula".into(), f.to_rpn()), ("formula_infix".into(), f.to_infix())],
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::formula_agent::tests::small_prior;

    /// Arms with rewards `mean + U(-0.1, 0.1)` (in [0, 1]), a pure function of the pull index;
    /// `fail_on[arm]` makes the arm fail at its first pull of index >= that value.
    struct Synthetic {
        means: Vec<f64>,
        fail_from: Vec<u64>,
        seed: u64,
    }

    impl Bandit for Synthetic {
        type Worker = ();
        fn worker(&self) {}
        fn pull(&self, _: &mut (), arm: usize, pull_index: u64) -> Option<f64> {
            if pull_index >= self.fail_from[arm] {
                return None;
            }
            let u: f64 = stream(self.seed, 99, pull_index).random();
            Some(self.means[arm] + 0.2 * (u - 0.5))
        }
    }

    fn synthetic(means: &[f64], seed: u64) -> Synthetic {
        Synthetic { means: means.to_vec(), fail_from: vec![u64::MAX; means.len()], seed }
    }

    #[test]
    fn ucb1_finds_the_best_arm_with_the_expected_frequency() {
        // Auer et al. (2002), Thm 1, with c = sqrt(2) and rewards in [0, 1]:
        // E[pulls of arm i] <= 8 ln(n) / gap_i^2 + 1 + pi^2 / 3.
        let means = [0.3, 0.5, 0.8, 0.45];
        let n = 2000u64;
        let runs = 60;
        let mut chosen_best = 0;
        let mut pulls = [0.0; 4];
        for seed in 0..runs {
            let out = ucb1(&synthetic(&means, seed), 4, n, 2f64.sqrt(), &mut stream(seed, 0, 0));
            assert_eq!(out.pulls.iter().sum::<u64>(), n);
            chosen_best += (out.chosen == Some(2)) as usize;
            for (p, &x) in pulls.iter_mut().zip(&out.pulls) {
                *p += x as f64 / runs as f64;
            }
        }
        assert_eq!(chosen_best, runs as usize);
        for i in [0, 1, 3] {
            let gap: f64 = 0.8 - means[i];
            let bound = 8.0 * (n as f64).ln() / (gap * gap) + 1.0 + std::f64::consts::PI.powi(2) / 3.0;
            assert!(pulls[i] <= bound, "arm {i}: {} pulls on average, bound {bound}", pulls[i]);
            assert!(pulls[i] >= 1.0);
        }
        assert!(pulls[2] / n as f64 > 0.75, "best arm pulled {:.0} times", pulls[2]);
    }

    #[test]
    fn ucb1_failures_budget_and_small_budgets() {
        // Arm 1 fails at once, arm 3 at its third pull (index >= 6 means a UCB-phase pull).
        let mut bandit = synthetic(&[0.2, 0.9, 0.5, 0.95, 0.1], 1);
        bandit.fail_from[1] = 0;
        bandit.fail_from[3] = 6;
        let out = ucb1(&bandit, 5, 100, 0.5, &mut stream(1, 0, 0));
        assert_eq!(out.pulls.iter().sum::<u64>(), 100, "failed pulls do not consume budget");
        assert_eq!(out.pulls[1], 0);
        assert!(out.discarded[1] && out.discarded[3]);
        assert!(out.pulls[3] >= 1);
        assert_eq!(out.attempts, 102);
        assert_eq!(out.chosen, Some(2));
        // n < k: only the first n arms (failed ones skipped, not counted) are pulled.
        let out = ucb1(&bandit, 5, 2, 0.5, &mut stream(2, 0, 0));
        assert_eq!(out.pulls, vec![1, 0, 1, 0, 0]);
        assert!(matches!(out.chosen, Some(0) | Some(2)));
        // Every arm fails: no winner.
        let mut bad = synthetic(&[0.5, 0.5], 0);
        bad.fail_from = vec![0, 0];
        assert_eq!(ucb1(&bad, 2, 10, 1.0, &mut stream(0, 0, 0)).chosen, None);
    }

    #[test]
    fn ucb1_does_not_depend_on_the_thread_count() {
        let bandit = synthetic(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.85], 3);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| ucb1(&bandit, 10, 300, 0.3, &mut stream(5, 0, 0)))
        };
        assert_eq!(run(1), run(3));
    }

    fn rpns(list: &[&str]) -> Vec<Formula> {
        list.iter().map(|r| Formula::parse_rpn(r).unwrap()).collect()
    }

    #[test]
    fn opps_picks_the_clearly_best_formula() {
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 20 };
        // Arm 0 fails in the initial state (1/QSelf with QSelf = 0); arm 1 never moves to the
        // reward; arm 3 (a constant) acts at random; arm 2 (greedy on QMean) is the best.
        let set = rpns(&["X1 INV", "X0 OPP", "X0", "X2 X2 DIV"]);
        let mut agent = OppsDs::new(set, 60, 2.0, false).unwrap().with_label("test");
        assert_eq!(agent.name(), "OPPS-DS (test, n_draws = 60, c = 2)");
        let run = |agent: &mut OppsDs, threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| agent.learn_offline(&prior, setting, &mut stream(9, 4, 0)))
        };
        run(&mut agent, 2).unwrap();
        assert_eq!(agent.chosen().unwrap().to_rpn(), "X0");
        assert_eq!(agent.name(), "OPPS-DS (Formula (X0))");
        let out = agent.offline_outcome().unwrap().clone();
        assert!(out.discarded[0] && out.pulls[0] == 0);
        assert_eq!(out.pulls.iter().sum::<u64>(), 60);
        assert!(out.pulls[2] > out.pulls[1] && out.pulls[2] > out.pulls[3], "{:?}", out.pulls);
        let mut again = OppsDs::new(rpns(&["X1 INV", "X0 OPP", "X0", "X2 X2 DIV"]), 60, 2.0, false).unwrap();
        run(&mut again, 1).unwrap();
        assert_eq!(again.offline_outcome().unwrap(), &out, "same result with one thread");

        // The trained agent acts as the chosen formula.
        let mdp = prior.sample_mdp(&mut stream(3, 1, 0));
        let dsr = run_trajectory(&mut agent, &mdp, 0, setting, &mut stream(1, 3, 0), &mut stream(1, 2, 0)).unwrap();
        let mut direct = FormulaAgent::new(Formula::parse_rpn("X0").unwrap());
        direct.learn_offline(&prior, setting, &mut stream(0, 0, 0)).unwrap();
        let dsr2 = run_trajectory(&mut direct, &mdp, 0, setting, &mut stream(1, 3, 0), &mut stream(1, 2, 0)).unwrap();
        assert_eq!(dsr.discounted_return, dsr2.discounted_return);
    }

    #[test]
    fn all_failing_formulas_and_bad_parameters_are_errors() {
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 10 };
        let mut agent = OppsDs::new(rpns(&["X1 INV", "X1 LN"]), 5, 1.0, false).unwrap();
        let e = agent.learn_offline(&prior, setting, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("every one of the 2 formulas failed"), "{e}");
        assert!(agent.act(0, &mut stream(0, 0, 0)).is_err(), "untrained");
        let e = OppsDs::new(rpns(&["X0"]), 0, 1.0, false).unwrap_err();
        assert!(e.to_string().contains("n_draws"), "{e}");
        let e = OppsDs::new(rpns(&["X0"]), 1, -1.0, false).unwrap_err();
        assert!(e.to_string().contains("c must be"), "{e}");
        assert!(OppsDs::new(rpns(&["X0"]), 1, f64::NAN, false).is_err());
        assert!(OppsDs::new(vec![], 1, 1.0, false).is_err());
    }

    #[test]
    fn experiment_results_do_not_depend_on_the_thread_count() {
        use crate::agents::{build, ParamValue, Params};
        use crate::evaluators::protocol::Experiment;
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 15 };
        let exp = Experiment::new(prior.clone(), 12, setting, 4).unwrap();
        let params = Params::from([
            ("formulas".to_string(), ParamValue::Text("X0 OPP; X0; X2 X1 DIV; X0 X2 MAX2".into())),
            ("n_draws".to_string(), ParamValue::Int(10)),
            ("c".to_string(), ParamValue::Float(5.0)),
        ]);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let mut agent = build("oppsds", &params).unwrap();
                exp.learn_offline(agent.as_mut(), &prior).unwrap();
                (agent.name(), exp.run(agent.as_ref(), Some(threads), None).unwrap().returns)
            })
        };
        assert_eq!(run(1), run(2));
    }

    #[test]
    fn text_round_trip_keeps_the_trained_agent() {
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 15 };
        let untrained = OppsDs::new(rpns(&["X0 OPP", "X0", "X2 X0 DIV"]), 12, 660.0, true).unwrap().with_label("F?");
        let back = OppsDs::from_text(&untrained.to_text()).unwrap();
        assert_eq!(back.to_text(), untrained.to_text());
        assert!(back.chosen().is_none() && back.compat());

        let mut agent = untrained.clone();
        agent.learn_offline(&prior, setting, &mut stream(2, 4, 0)).unwrap();
        let text = agent.to_text();
        let loaded = OppsDs::from_text(&text).unwrap();
        assert_eq!(loaded.to_text(), text);
        assert_eq!(loaded.chosen(), agent.chosen());
        assert_eq!(loaded.offline_outcome(), agent.offline_outcome());
        assert_eq!(loaded.name(), agent.name());
        let mdp = prior.sample_mdp(&mut stream(3, 1, 0));
        let mut a: Box<dyn Agent> = Box::new(agent);
        let mut b: Box<dyn Agent> = Box::new(loaded);
        let ra = run_trajectory(a.as_mut(), &mdp, 0, setting, &mut stream(1, 3, 0), &mut stream(1, 2, 0)).unwrap();
        let rb = run_trajectory(b.as_mut(), &mdp, 0, setting, &mut stream(1, 3, 0), &mut stream(1, 2, 0)).unwrap();
        assert_eq!(ra.discounted_return, rb.discounted_return);

        let boxed = crate::agents::load_text(&a.saved_text().unwrap()).unwrap();
        assert_eq!(boxed.saved_text().unwrap(), text);
        let e = OppsDs::from_text(&text.replace("n_draws 12", "n_draws x")).unwrap_err();
        assert!(e.to_string().contains("line 3: bad n_draws"), "{e}");
        let e = OppsDs::from_text(&text.replace("X2 X0 DIV", "X2 X0 FOO")).unwrap_err();
        assert!(e.to_string().contains("'FOO'"), "{e}");
        assert!(OppsDs::from_text("nonsense").is_err());
    }
}
