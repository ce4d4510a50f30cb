//! FormulaAgent (SPEC 4.9.2–4.9.3): greedy on a formula of three Q-variables.
//!
//! Each Q-variable is a counting model with its Q-table ([`MeanModelQ`]: cold-start BBRL
//! Q-iteration at reset and after every transition):
//! * `X0 = QMean`: counts = the prior's theta (the posterior-mean model);
//! * `X1 = QSelf`: counts `N(x, u, x) = 1`, 0 elsewhere, plus the observed counts;
//! * `X2 = QUniform`: counts 1 for every (x, u, y), plus the observed counts.
//!
//! All share the prior's rewards. On models of more than 32 states, QUniform is not a dense
//! counting model (S·A·S counts, every one positive, so that every sweep of its solve visited them
//! all: most of OPPS-DS's cost on Taxi) but [`UniformCountsQ`], which keeps only the observed
//! counts and sums the uniform part once per sweep: the same Q-iteration, equal to the dense one
//! up to rounding (`solve/uniform.rs`). Models of at most 32 states, every model of the paper's
//! problems among them, keep the dense counting model and their results bit for bit.
//!
//! Only the variables the formula uses are instantiated and
//! solved; the others evaluate to 0.0 and cost nothing. The action is the argmax over `u` of
//! `f(QMean(x, u), QSelf(x, u), QUniform(x, u))`, with uniformly random ties.
//!
//! **Evaluation errors** (ln <= 0, sqrt < 0, 1/0, x/0; e.g. `X2 X1 DIV` where QSelf is 0):
//! * default: the run is not lost. A failing action's index counts as -inf (it is played only if
//!   every other index is -inf too, then at random among them); if every action fails, the
//!   action is uniformly random. `action_probabilities` follows the same rule.
//! * `compat = true`: the error is returned, which aborts the trajectory, as the original's
//!   `AgentException` aborts the whole `run_experiment` (and discards the arm in OPPS-DS).
//!
//! A NaN index (the formula can produce one without an error, e.g. `inf - inf`) is never the
//! argmax unless every index is NaN ([`argmax_random_tie`]).

use std::sync::Arc;

use rand::Rng as _;

use super::common::{argmax_random_tie, greedy_probabilities};
use super::mean_model::MeanModelQ;
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range, COMPAT};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::{BbrlError, Result};
use crate::formula::{Formula, N_VARIABLES};
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::solve::uniform::{self, UniformCountsQ};
use crate::solve::BBRL_Q_ACCURACY;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "formula",
    display: "Formula",
    params: &[
        ParamSpec {
            name: "formula",
            ty: ParamType::Text,
            default: None,
            range: Range::Parsed("an RPN (X2 X0 DIV) or infix (QUniform / QMean) formula"),
            doc: "the index formula whose argmax is played",
        },
        COMPAT,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[("formula", ParamDefault::Text("X0 X2 MAX2"))] },
        Example {
            doc: "an infix formula, the original's quirks",
            params: &[("formula", ParamDefault::Text("QUniform / QMean")), ("compat", ParamDefault::Bool(true))],
        },
    ],
    not_in_quick: Some("a fixed index formula is what OPPS-DS chooses offline; OPPS-DS stands for it"),
    episodic_baseline: false,
    build: |r| {
        let formula = Formula::parse_any(r.text("formula")?)
            .map_err(|e| invalid!("agent 'formula': parameter 'formula': {e}"))?;
        Ok(Box::new(FormulaAgent::new(formula).with_compat(r.flag("compat")?)))
    },
};

/// The initial counts of Q-variable `index` (0 QMean, 1 QSelf, 2 QUniform) for `prior`.
pub fn variable_counts(index: usize, prior: &Fdm) -> Vec<f64> {
    let (s, a) = (prior.n_states(), prior.n_actions());
    match index {
        0 => prior.theta().to_vec(),
        1 => {
            let mut counts = vec![0.0; s * a * s];
            for x in 0..s {
                for u in 0..a {
                    counts[(x * a + u) * s + x] = 1.0;
                }
            }
            counts
        }
        2 => vec![1.0; s * a * s],
        _ => panic!("there are {N_VARIABLES} Q-variables, not {}", index + 1),
    }
}

/// One Q-variable: a counting model with its Q-table, or QUniform of a large model in the grouped
/// form of [`UniformCountsQ`].
// Three per agent, built once and never moved per step: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum QVariable {
    Counts(MeanModelQ),
    Uniform { model: UniformCountsQ, q: Vec<f64>, setting: Setting, solved: bool },
}

impl QVariable {
    /// Variable `index` of `prior`, with the counts of [`variable_counts`].
    fn new(index: usize, prior: &Fdm, setting: Setting) -> Self {
        let (s, a) = (prior.n_states(), prior.n_actions());
        if index == 2 && uniform::suits(s) {
            let mut model = UniformCountsQ::new(s, a, 1.0, prior.rewards_arc());
            model.reset(setting.horizon);
            return QVariable::Uniform { model, q: vec![0.0; s * a], setting, solved: false };
        }
        let counts = variable_counts(index, prior);
        QVariable::Counts(MeanModelQ::new(CountModel::new(s, a, counts, prior.rewards_arc()), setting))
    }

    /// As [`MeanModelQ::ensure_solved`].
    fn ensure_solved(&mut self) {
        match self {
            QVariable::Counts(v) => v.ensure_solved(),
            QVariable::Uniform { model, q, setting, solved } => {
                if !*solved {
                    model.q_iteration(setting.gamma, setting.horizon, BBRL_Q_ACCURACY, q);
                    *solved = true;
                }
            }
        }
    }

    fn reset(&mut self, new_setting: Setting) {
        match self {
            QVariable::Counts(v) => v.reset(new_setting),
            QVariable::Uniform { model, setting, solved, .. } => {
                // A trajectory of T steps observes at most T distinct transitions.
                model.reset(new_setting.horizon);
                *setting = new_setting;
                *solved = false;
            }
        }
    }

    fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        match self {
            QVariable::Counts(v) => v.observe(state, action, next_state),
            QVariable::Uniform { model, solved, .. } => {
                model.observe(state, action, next_state);
                *solved = false;
            }
        }
    }

    #[inline]
    fn q_row(&self, state: usize) -> &[f64] {
        match self {
            QVariable::Counts(v) => v.q_row(state),
            QVariable::Uniform { model, q, solved, .. } => {
                debug_assert!(*solved, "q_row read before ensure_solved");
                let na = model.n_actions();
                &q[state * na..(state + 1) * na]
            }
        }
    }
}

/// Greedy on `formula(QMean, QSelf, QUniform)`.
#[derive(Clone, Debug)]
pub struct FormulaAgent {
    formula: Arc<Formula>,
    compat: bool,
    vars: [Option<QVariable>; N_VARIABLES],
    /// The formula's index of each action in the current state (length A, allocated offline).
    scratch: Vec<f64>,
}

impl FormulaAgent {
    /// An untrained agent; evaluation errors are handled as described in the module docs.
    pub fn new(formula: Formula) -> Self {
        Self::shared(Arc::new(formula), false)
    }

    /// `compat = true`: evaluation errors abort the trajectory, as in the original.
    pub fn with_compat(mut self, compat: bool) -> Self {
        self.compat = compat;
        self
    }

    pub(crate) fn shared(formula: Arc<Formula>, compat: bool) -> Self {
        Self { formula, compat, vars: [None, None, None], scratch: Vec::new() }
    }

    pub fn formula(&self) -> &Formula {
        &self.formula
    }

    pub fn compat(&self) -> bool {
        self.compat
    }

    /// Builds the Q-variables: those the formula uses, or all three (`all`, for OPPS-DS workers that
    /// switch formulas with [`FormulaAgent::set_formula`]).
    pub(crate) fn build_variables(&mut self, prior: &Fdm, setting: Setting, all: bool) {
        for (i, var) in self.vars.iter_mut().enumerate() {
            *var = (all || self.formula.uses(i)).then(|| QVariable::new(i, prior, setting));
        }
        self.scratch = vec![0.0; prior.n_actions()];
    }

    /// Switches to another formula without allocating. Every variable it uses must have been
    /// built (`build_variables(.., all = true)`); the next `reset` re-solves them.
    pub(crate) fn set_formula(&mut self, formula: Arc<Formula>) {
        debug_assert!((0..N_VARIABLES).all(|i| !formula.uses(i) || self.vars[i].is_some()));
        self.formula = formula;
    }

    fn trained(&self) -> Result<()> {
        if self.scratch.is_empty() {
            Err(not_trained(&self.name()))
        } else {
            Ok(())
        }
    }

    /// Fills `scratch` with the index of every action in `state`; returns the number of actions
    /// whose evaluation failed (their index is -inf), or the error in compat mode.
    fn fill_indices(&mut self, state: usize) -> Result<usize> {
        self.for_used_variables(QVariable::ensure_solved)?;
        let Self { formula, compat, vars, scratch } = self;
        let rows: [Option<&[f64]>; N_VARIABLES] =
            std::array::from_fn(|i| if formula.uses(i) { vars[i].as_ref().map(|v| v.q_row(state)) } else { None });
        crate::work::add(crate::work::Unit::FormulaTokens, (scratch.len() * formula.len()) as u64);
        let mut failed = 0;
        for (u, index) in scratch.iter_mut().enumerate() {
            let x = std::array::from_fn(|i| rows[i].map_or(0.0, |row| row[u]));
            match formula.eval(x) {
                Ok(v) => *index = v,
                Err(e) if *compat => {
                    return Err(BbrlError::Agent(format!(
                        "formula '{formula}' failed in state {state} for action {u}: {e} \
                         (QMean = {}, QSelf = {}, QUniform = {})",
                        x[0], x[1], x[2]
                    )))
                }
                Err(_) => {
                    *index = f64::NEG_INFINITY;
                    failed += 1;
                }
            }
        }
        Ok(failed)
    }

    fn for_used_variables(&mut self, mut f: impl FnMut(&mut QVariable)) -> Result<()> {
        self.trained()?;
        for (i, var) in self.vars.iter_mut().enumerate() {
            if self.formula.uses(i) {
                f(var.as_mut().ok_or_else(|| BbrlError::Agent(format!("Q-variable X{i} was not built")))?);
            }
        }
        Ok(())
    }
}

impl Agent for FormulaAgent {
    fn name(&self) -> String {
        if self.compat {
            format!("Formula ({}, compat)", self.formula)
        } else {
            format!("Formula ({})", self.formula)
        }
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.build_variables(prior, setting, false);
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let setting = context.setting;
        self.for_used_variables(|v| v.reset(setting))
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let failed = self.fill_indices(state)?;
        if failed == self.scratch.len() {
            return Ok(rng.random_range(0..self.scratch.len()));
        }
        Ok(argmax_random_tie(&self.scratch, rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        self.for_used_variables(|v| v.observe(t.state, t.action, t.next_state))
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let failed = self.fill_indices(state)?;
        if failed == self.scratch.len() {
            out.fill(1.0 / out.len() as f64);
        } else {
            greedy_probabilities(&self.scratch, out);
        }
        Ok(())
    }

    /// Nothing learned offline: learn_offline only builds the mean models the formula reads; they are solved online.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::mdp::Mdp;
    use crate::rng::stream;
    use crate::trajectory::run_trajectory;

    /// Three states, two actions. From states 0 and 1, action 0 leads to state 1 with reward 1
    /// (mostly; else to state 0, reward 0) and action 1 to the absorbing, rewardless state 2.
    /// No self-loop reward in state 0, so QSelf(0, ·) = 0 at first; QMean(0, 1) = 0.
    pub(crate) fn small_prior() -> Fdm {
        let (s, a) = (3, 2);
        let mut theta = vec![0.0; s * a * s];
        let mut rewards = vec![0.0; s * a * s];
        for x in 0..2 {
            theta[(x * a) * s + 1] = 5.0;
            theta[(x * a) * s] = 0.2;
            rewards[(x * a) * s + 1] = 1.0;
            theta[(x * a + 1) * s + 2] = 1.0;
        }
        for u in 0..a {
            theta[(2 * a + u) * s + 2] = 1.0;
        }
        Fdm::new(s, a, theta, rewards, Some(0)).unwrap()
    }

    fn agent(rpn: &str, compat: bool, prior: &Fdm, setting: Setting) -> FormulaAgent {
        let mut a = FormulaAgent::new(Formula::parse_rpn(rpn).unwrap()).with_compat(compat);
        a.learn_offline(prior, setting, &mut stream(0, 0, 0)).unwrap();
        a
    }

    fn run(agent: &mut FormulaAgent, mdp: &Mdp, setting: Setting, seed: u64) -> Result<f64> {
        run_trajectory(agent, mdp, 0, setting, &mut stream(seed, 3, 0), &mut stream(seed, 2, 0))
            .map(|o| o.discounted_return)
    }

    #[test]
    fn variables_have_the_spec_counts_and_only_used_ones_are_built() {
        let prior = small_prior();
        let own = |x: usize, u: usize, y: usize| variable_counts(1, &prior)[(x * 2 + u) * 3 + y];
        assert!((0..3).all(|x| (0..2).all(|u| (0..3).all(|y| own(x, u, y) == if x == y { 1.0 } else { 0.0 }))));
        assert_eq!(variable_counts(2, &prior), vec![1.0; 18]);
        assert_eq!(variable_counts(0, &prior), prior.theta());
        let setting = Setting { gamma: 0.95, horizon: 20 };
        let a = agent("X2 X0 DIV", false, &prior, setting);
        assert!(a.vars[0].is_some() && a.vars[1].is_none() && a.vars[2].is_some());
        assert_eq!(a.name(), "Formula (X2 X0 DIV)");
    }

    #[test]
    fn greedy_on_qmean_collects_the_reward() {
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 30 };
        let mdp = prior.sample_mdp(&mut stream(1, 1, 0));
        let good = run(&mut agent("X0", false, &prior, setting), &mdp, setting, 4).unwrap();
        let bad = run(&mut agent("X0 OPP", false, &prior, setting), &mdp, setting, 4).unwrap();
        assert!(good > 5.0 && bad == 0.0, "{good} {bad}");
        let mut a = agent("X0", false, &prior, setting);
        a.start_task(&TaskContext { setting, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        let mut p = [0.0; 2];
        a.action_probabilities(0, &mut p).unwrap();
        assert_eq!(p, [1.0, 0.0]);
    }

    #[test]
    fn argmax_is_invariant_under_monotone_transforms() {
        // v -> v|v| and v -> 2v + 1 are increasing: the same actions, step by step.
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 40 };
        for seed in 0..5 {
            let mdp = prior.sample_mdp(&mut stream(seed, 1, 0));
            let base = run(&mut agent("X0 X2 SUB", false, &prior, setting), &mdp, setting, seed).unwrap();
            for rpn in ["X0 X2 SUB X0 X2 SUB ABS MUL2", "X0 X2 SUB 2 MUL2 1 ADD2"] {
                let other = run(&mut agent(rpn, false, &prior, setting), &mdp, setting, seed).unwrap();
                assert_eq!(base, other, "{rpn}");
            }
        }
    }

    #[test]
    fn evaluation_errors_abort_only_in_compat_mode() {
        // QSelf(0, ·) = 0 in the initial state: 1/QSelf fails for both actions.
        let prior = small_prior();
        let setting = Setting { gamma: 0.95, horizon: 20 };
        let mdp = prior.sample_mdp(&mut stream(2, 1, 0));
        let e = run(&mut agent("X1 INV", true, &prior, setting), &mdp, setting, 0).unwrap_err();
        assert!(e.to_string().contains("INV of 0") && e.to_string().contains("step 0"), "{e}");
        let mut lenient = agent("X1 INV", false, &prior, setting);
        assert!(run(&mut lenient, &mdp, setting, 0).is_ok());
        lenient.start_task(&TaskContext { setting, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        let mut p = [0.0; 2];
        lenient.action_probabilities(0, &mut p).unwrap();
        assert_eq!(p, [0.5, 0.5], "all actions fail: uniform");
        // Only action 1 fails (QMean(0, 1) = 0: it leads to the rewardless absorbing state): action 0 is played.
        let mut one = agent("X0 INV", false, &prior, setting);
        one.start_task(&TaskContext { setting, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        one.action_probabilities(0, &mut p).unwrap();
        assert_eq!(p, [1.0, 0.0]);
        let mut strict = agent("X0 INV", true, &prior, setting);
        strict.start_task(&TaskContext { setting, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        assert!(strict.action_probabilities(0, &mut p).is_err());
    }

    /// 40 states, 3 actions: each row reaches two to four random states; rewards constant over the
    /// next state but for a few exceptions (as Taxi's).
    fn large_prior() -> Fdm {
        use rand::SeedableRng as _;
        let (s, a) = (40, 3);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let mut theta = vec![0.0; s * a * s];
        let mut rewards = vec![0.0; s * a * s];
        for (row, (t, r)) in theta.chunks_exact_mut(s).zip(rewards.chunks_exact_mut(s)).enumerate() {
            for _ in 0..rng.random_range(2..=4) {
                t[rng.random_range(0..s)] += rng.random_range(0.5..3.0);
            }
            r.fill((row % 7) as f64 - 2.0);
            r[rng.random_range(0..s)] = 10.0;
        }
        Fdm::new(s, a, theta, rewards, Some(0)).unwrap()
    }

    #[test]
    fn quniform_of_a_large_model_is_the_dense_one_up_to_rounding_and_allocates_nothing() {
        use super::super::planning_test_support::allocations;
        let (prior, setting) = (large_prior(), Setting { gamma: 0.95, horizon: 80 });
        let (ns, na) = (prior.n_states(), prior.n_actions());
        assert!(matches!(QVariable::new(2, &small_prior(), setting), QVariable::Counts(_)), "small: dense");
        let mut grouped = QVariable::new(2, &prior, setting);
        assert!(matches!(grouped, QVariable::Uniform { .. }));
        let counts = CountModel::new(ns, na, variable_counts(2, &prior), prior.rewards_arc());
        let mut dense = QVariable::Counts(MeanModelQ::new(counts, setting));
        let mdp = prior.sample_mdp(&mut stream(4, 1, 0));
        let mut env = stream(4, 2, 0);
        for task in 0..2 {
            grouped.reset(setting);
            dense.reset(setting);
            let mut x = 0;
            for t in 0..setting.horizon {
                dense.ensure_solved();
                let n = allocations(|| grouped.ensure_solved());
                assert_eq!(n, 0, "task {task}, step {t}: the solve allocated");
                for state in 0..ns {
                    for (g, d) in grouped.q_row(state).iter().zip(dense.q_row(state)) {
                        assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "step {t}: {g} vs {d}");
                    }
                }
                let u = (t + task) % na;
                let (y, _) = mdp.step(x, u, &mut env);
                dense.observe(x, u, y);
                assert_eq!(allocations(|| grouped.observe(x, u, y)), 0, "step {t}: observe allocated");
                x = y;
            }
        }
        // The whole agent, acting on QUniform of the large model, allocates nothing per step.
        let mut agent = agent("X2 X0 ADD2", false, &prior, setting);
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        let (mut rng, mut x) = (stream(5, 0, 0), 0);
        let n = allocations(|| {
            for _ in 0..setting.horizon {
                let u = agent.act(x, &mut rng).unwrap();
                let (y, reward) = mdp.step(x, u, &mut env);
                agent.observe(Transition { state: x, action: u, reward, next_state: y }, &mut rng).unwrap();
                x = y;
            }
        });
        assert_eq!(n, 0, "the agent allocated while acting");
    }

    #[test]
    fn untrained_agent_is_an_error() {
        let mut a = FormulaAgent::new(Formula::parse_rpn("X0").unwrap());
        assert!(a.act(0, &mut stream(0, 0, 0)).is_err());
    }
}
