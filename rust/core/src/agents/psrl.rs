//! PSRL: posterior sampling for reinforcement learning (Strens 2000, "Bayesian dynamic
//! programming"; Osband, Russo & Van Roy 2013), and Mandel et al.'s K-sample variant
//! (Mandel et al. 2016, section 3; docs/replay.md). Not part of the original BBRL benchmark.
//!
//! `reference = "tabularl-gaussian"` builds TabulaRL's `GaussianPSRL` instead, a different planner
//! that shares nothing below ([`super::tabularl_bonus`]); `reference = "rlberry"` rlberry's
//! `PSRLAgent`, one draw per episode with Beta-Bernoulli rewards ([`super::rlberry_psrl`]).
//!
//! # Model
//! The posterior of pair `(s, a)` is `Dir(theta(s, a, ·) + counts(s, a, ·))`: the prior's
//! pseudo-counts plus the observed transitions (rewards are known, as for every BBRL agent). A
//! sampled model draws each row with [`crate::model::dirichlet::sample_row`] on the posterior support, so
//! entries outside it are exactly 0. A row whose support is a single state is a point mass and is
//! set to exactly 1 without a draw (a Dirichlet draw normalised in floating point can come out one
//! ulp away from 1, which would break exact ties between identical deterministic rows).
//!
//! # Solving
//! Each sampled model is solved with Guez value iteration (SPEC 2.2: from V = 0, squared-L2 stop at
//! eps = 1e-4), the more accurate of the two solvers of the benchmark (BBRL Q-iteration stops at
//! a per-entry change of 1e-2 and at most T + 1 sweeps); PSRL's guarantees are stated for the
//! optimal policy of the sample, so the accurate solver is the right one. The model's Q is the
//! one-step backup `Q(s, a) = sum_y P(y) (R + gamma V(y))` of the converged V, and its greedy
//! actions are those with the maximal Q, compared exactly.
//!
//! # Resampling schedule: every step
//! In this setting there are no episodes: one trajectory of T = 250 discounted steps. Strens'
//! Bayesian DP samples a model, follows its optimal policy for a fixed interval, then resamples; we
//! take the interval of one step: a new posterior sample after every real transition (each one
//! changes the posterior of the pair it left, so the sample would be stale otherwise). Reasons:
//! * it is the Thompson-sampling-per-decision reading of PSRL that needs no extra parameter, and
//!   in Osband et al.'s episodic form the episode boundary is the resampling point; a trajectory of
//!   this benchmark has no boundary other than its steps;
//! * it uses all the data at every decision, as the other agents of the benchmark do (BEB and
//!   e-Greedy re-plan after every transition);
//! * it keeps the revealed action distribution a function of the current posterior only, which is
//!   what the replay evaluators (PSRS, PERS) need.
//!
//! # Episodes: Mandel et al.'s schedule
//! Once an evaluator starts episodes ([`Agent::start_episode`], as the replay evaluators and
//! episodic online runs do), the task switches to one resampling per episode: `start_episode`
//! draws and solves the `k` models at once, and observations update the posterior without
//! redrawing them until the next episode. The policy is then fixed within an episode, which is
//! what the per-episode rejection sampler's bound on the episode ratio assumes, and the drawn
//! models are part of the agent's state, so a snapshot taken after `start_episode` keeps them
//! across rejected episodes. The benchmark protocol never starts episodes, so its schedule (and
//! its seeded results) are those of the previous section. `start_task` goes back to it.
//!
//! Known trade-off: resampling every step can dither between models instead of committing to one
//! for a multi-step exploratory plan (Osband et al.'s argument for episodes); the doubling schedule
//! of TSDE (Ouyang et al. 2017) would commit longer, and is a possible extension.
//!
//! # The K-sample variant (`k > 1`)
//! At every resampling `k` independent models are drawn and solved; at each step one of them is
//! picked uniformly, and a uniformly random greedy action of it is played. `action_probabilities`
//! reveals that mixture: `pi(a | s) = (1/k) sum_j [a greedy in model j] / #greedy actions of model j`
//! (tied actions of a model share its mass: revealed randomness, as Mandel et al. require). `k = 1` is
//! standard PSRL.
//!
//! # Randomness
//! The posterior samples come from the agent's own stream, seeded from the `rng` given to `reset`;
//! a pending resampling is carried out by whichever of `act` or `action_probabilities` comes
//! first, so calling `action_probabilities` never changes the trajectory. The per-step choice of a
//! model and the tie breaking use the `rng` given to `act`. All buffers are sized at
//! `learn_offline`; `act` and `observe` never allocate.

use rand::{Rng as _, SeedableRng};

use super::common::{argmax_random_tie, greedy_probabilities};
use super::rlberry_psrl::RlberryPsrl;
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabularl_bonus::{TabularlBonus, TabularlPlanner, TabularlPrior};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::dirichlet::sample_row;
use crate::model::fdm::Fdm;
use crate::model::tables::TabularView;
use crate::rng::Rng;
use crate::solve::{ValueIterationWorkspace, GUEZ_VI_EPSILON};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "psrl",
    display: "PSRL",
    params: &[
        ParamSpec {
            name: "k",
            ty: ParamType::Int,
            default: Some(ParamDefault::Int(1)),
            range: Range::at_least(1.0),
            doc: "posterior samples drawn per episode (the optimistic maximum over them is played)",
        },
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: Range::Choices(&["paper", "tabularl-gaussian", "rlberry"]),
            doc: "paper: posterior sampling from the Dirichlet posterior (module doc); tabularl-gaussian: TabulaRL's \
                  GaussianPSRL, a MAP model with learned rewards perturbed by one Gaussian draw per pair and episode, \
                  one H-stage plan per episode; rlberry: rlberry's PSRLAgent, one posterior draw per episode with \
                  Beta-Bernoulli rewards and a Dirichlet(1/S) prior (docs/baselines.md, Reference settings; with \
                  either, k must stay 1)",
        },
    ],
    online_units: &[("k", 1.0)],
    offline_units: &[],
    sizes_memory: &["k"],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example { doc: "the optimistic maximum of 5 samples", params: &[("k", ParamDefault::Int(5))] },
        Example { doc: "rlberry's PSRLAgent", params: &[("reference", ParamDefault::Text("rlberry"))] },
        Example { doc: "TabulaRL's GaussianPSRL", params: &[("reference", ParamDefault::Text("tabularl-gaussian"))] },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| {
        let k = r.count("k")?;
        match r.text("reference")? {
            "paper" => Ok(Box::new(Psrl::new(k)?)),
            reference @ ("tabularl-gaussian" | "rlberry") if k != 1 => Err(invalid!(
                "k = {k} does not apply with reference = {reference:?} (one draw per pair and episode): k must be 1"
            )),
            "rlberry" => Ok(Box::new(RlberryPsrl::new())),
            "tabularl-gaussian" => {
                Ok(Box::new(TabularlPlanner::new("PSRL", TabularlBonus::Gaussian, TabularlPrior::Given, 0)))
            }
            other => Err(invalid!("reference must be \"paper\", \"tabularl-gaussian\" or \"rlberry\", got {other:?}")),
        }
    },
};

/// The most sampled transition probabilities PSRL may hold (`k * S * A * S`): 2^26 doubles,
/// 512 MiB. A larger `k` is refused by `learn_offline` rather than exhausting memory.
pub const MAX_MODEL_ENTRIES: usize = 1 << 26;

/// Posterior sampling with `k` models per resampling (module doc).
#[derive(Clone, Debug)]
pub struct Psrl {
    k: usize,
    state: Option<PsrlState>,
}

#[derive(Clone, Debug)]
struct PsrlState {
    n_states: usize,
    n_actions: usize,
    gamma: f64,
    initial: CountModel,
    /// The Dirichlet posterior: counts = theta + observed transitions.
    posterior: CountModel,
    /// `k` sampled transition tables, (S, A, S) each.
    models: Vec<f64>,
    /// The Q-table of each sampled model, (S, A) each.
    q: Vec<f64>,
    values: Vec<f64>,
    workspace: ValueIterationWorkspace,
    vi_policy: Vec<usize>,
    /// One model's greedy distribution at a state (A).
    greedy: Vec<f64>,
    /// Whether the posterior changed since the models were drawn.
    stale: bool,
    /// Whether the task runs in episodes (models drawn at `start_episode` only).
    episodic: bool,
    rng: Rng,
    resamples: u64,
}

impl PsrlState {
    /// Draws `k` models from the posterior into `models`.
    fn sample_models(&mut self, k: usize) {
        let ns = self.n_states;
        let table = ns * self.n_actions * ns;
        let counts = self.posterior.counts();
        let support = self.posterior.support();
        for j in 0..k {
            let model = &mut self.models[j * table..(j + 1) * table];
            for row in 0..ns * self.n_actions {
                let out = &mut model[row * ns..(row + 1) * ns];
                let row_support = support.row(row);
                if let [y] = row_support {
                    out.fill(0.0);
                    out[*y as usize] = 1.0;
                } else {
                    sample_row(&counts[row * ns..(row + 1) * ns], row_support, out, &mut self.rng);
                }
            }
        }
    }

    /// Solves each sampled model and stores its Q-table.
    fn solve_models(&mut self, k: usize) {
        let (ns, na, gamma) = (self.n_states, self.n_actions, self.gamma);
        let table = ns * na * ns;
        for j in 0..k {
            let view = TabularView {
                n_states: ns,
                n_actions: na,
                transitions: &self.models[j * table..(j + 1) * table],
                rewards: self.posterior.rewards(),
                support: self.posterior.support(),
            };
            self.workspace.solve(view, None, gamma, GUEZ_VI_EPSILON, &mut self.values, &mut self.vi_policy);
            let q = &mut self.q[j * ns * na..(j + 1) * ns * na];
            for (row, slot) in q.iter_mut().enumerate() {
                let base = row * ns;
                let mut value = 0.0;
                for &y in view.support.row(row) {
                    let i = base + y as usize;
                    value += view.transitions[i] * (view.rewards[i] + gamma * self.values[y as usize]);
                }
                *slot = value;
            }
        }
    }

    /// Q(state, ·) of model `j`.
    fn q_row(&self, j: usize, state: usize) -> &[f64] {
        let na = self.n_actions;
        let start = (j * self.n_states + state) * na;
        &self.q[start..start + na]
    }
}

impl Psrl {
    /// PSRL drawing `k >= 1` models at each resampling (`k = 1`: standard PSRL).
    pub fn new(k: usize) -> Result<Self> {
        if k < 1 {
            return Err(invalid!("k (the number of posterior samples) must be >= 1, got {k}"));
        }
        Ok(Self { k, state: None })
    }

    /// How many times the models were drawn and solved since the last reset.
    pub fn resamples(&self) -> u64 {
        self.state.as_ref().map_or(0, |st| st.resamples)
    }

    fn state(&mut self) -> Result<&mut PsrlState> {
        // The name is formatted only on error: `act` and `observe` must not allocate.
        if self.state.is_none() {
            return Err(not_trained(&self.name()));
        }
        Ok(self.state.as_mut().expect("checked above"))
    }

    /// Carries out a pending resampling.
    fn ensure_models(&mut self) -> Result<&mut PsrlState> {
        let k = self.k;
        let st = self.state()?;
        if st.stale {
            st.sample_models(k);
            st.solve_models(k);
            st.stale = false;
            st.resamples += 1;
        }
        Ok(st)
    }
}

impl Agent for Psrl {
    fn name(&self) -> String {
        format!("PSRL (k = {})", self.k)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        match self.k.checked_mul(ns * na * ns) {
            Some(entries) if entries <= MAX_MODEL_ENTRIES => {}
            _ => {
                return Err(invalid!(
                    "k = {} is too large for this prior: PSRL would hold k * S * A * S sampled probabilities \
                     (limit {MAX_MODEL_ENTRIES})",
                    self.k
                ))
            }
        }
        let initial = CountModel::from_prior(prior);
        self.state = Some(PsrlState {
            n_states: ns,
            n_actions: na,
            gamma: setting.gamma,
            posterior: initial.clone(),
            initial,
            models: vec![0.0; self.k * ns * na * ns],
            q: vec![0.0; self.k * ns * na],
            values: vec![0.0; ns],
            workspace: ValueIterationWorkspace::new(ns, na),
            vi_policy: vec![0; ns],
            greedy: vec![0.0; na],
            stale: true,
            episodic: false,
            rng: Rng::seed_from_u64(0),
            resamples: 0,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.posterior.copy_from(&st.initial);
        st.rng = Rng::seed_from_u64(rng.random());
        st.stale = true;
        st.episodic = false;
        st.resamples = 0;
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        self.state()?.episodic = true;
        self.state()?.stale = true;
        self.ensure_models().map(|_| ())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let k = self.k;
        let st = self.ensure_models()?;
        let j = if k > 1 { rng.random_range(0..k) } else { 0 };
        Ok(argmax_random_tie(st.q_row(j, state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.posterior.observe(t.state, t.action, t.next_state);
        if !st.episodic {
            st.stale = true;
        }
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let k = self.k;
        let st = self.ensure_models()?;
        out.fill(0.0);
        let mut greedy = std::mem::take(&mut st.greedy);
        for j in 0..k {
            greedy_probabilities(st.q_row(j, state), &mut greedy);
            for (o, &g) in out.iter_mut().zip(&greedy) {
                *o += g / k as f64;
            }
        }
        st.greedy = greedy;
        Ok(())
    }

    /// Nothing learned offline: learn_offline only copies the prior counts and sizes the model buffers.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, _setting: Setting) -> MemoryNeed {
        use crate::platform::memory::{bytes_of, product};
        // k sampled models (S A S probabilities) and their Q tables (S A).
        let models = product(&[self.k, n_states, n_actions, n_states]);
        let q = product(&[self.k, n_states, n_actions]);
        MemoryNeed { bytes: bytes_of::<f64>(models.saturating_add(q)), sized_by: "sampled models (parameter k)" }
    }

    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::test_support::{
        gc_prior, point_mass_prior, rollout, train, two_state_mdp, uniform_prior, SETTING,
    };
    use crate::rng::stream;

    fn trained(k: usize, prior: &Fdm) -> Psrl {
        let mut agent = Psrl::new(k).unwrap();
        train(&mut agent, prior);
        agent
    }

    fn st(agent: &mut Psrl) -> &mut PsrlState {
        agent.state.as_mut().unwrap()
    }

    #[test]
    fn deterministic_for_a_seed() {
        let gc = gc_prior();
        let mdp = gc.sample_mdp(&mut stream(2, 1, 0));
        for k in [1, 3] {
            let agent = trained(k, &uniform_prior(&gc));
            let a = rollout(&mut agent.clone(), &mdp, 60, 9);
            let b = rollout(&mut agent.clone(), &mdp, 60, 9);
            assert_eq!(a, b, "k = {k}");
            let mut once = agent.clone();
            rollout(&mut once, &mdp, 60, 9);
            // One resampling at reset, then one after every transition but the last.
            assert_eq!(once.resamples(), 60);
        }
    }

    #[test]
    fn point_mass_prior_gives_the_optimal_first_action() {
        let mdp = two_state_mdp();
        let prior = point_mass_prior(&mdp, 1e6);
        for k in [1, 4] {
            for seed in 0..5 {
                let mut agent = trained(k, &prior);
                let steps = rollout(&mut agent, &mdp, 30, seed);
                assert_eq!(steps[0].1, 1, "k {k} seed {seed}");
                assert!(steps.iter().all(|&(s, a, _)| a == 1 - s), "k {k} seed {seed}");
            }
        }
    }

    #[test]
    fn sampled_rows_have_the_posterior_mean() {
        // One action; rows with 2, 2 and 1 next states and non-integer concentrations.
        let theta = vec![0.5, 1.5, 0.0, /* s0 */ 2.0, 0.0, 1.0, /* s1 */ 0.0, 0.0, 4.0 /* s2 */];
        let prior = Fdm::new(3, 1, theta, vec![0.0; 9], Some(0)).unwrap();
        let mut agent = trained(1, &prior);
        let context = TaskContext { setting: SETTING, true_mdp: None };
        agent.start_task(&context, &mut stream(0, 0, 0)).unwrap();
        let mut rng = stream(1, 0, 0);
        for (state, next_state) in [(0, 1), (0, 1), (1, 2), (1, 1)] {
            agent.observe(Transition { state, action: 0, reward: 0.0, next_state }, &mut rng).unwrap();
        }
        // Posterior: (0.5, 3.5, 0), (2, 1, 2) (a new next state), (0, 0, 4).
        let alpha = [0.5, 3.5, 0.0, 2.0, 1.0, 2.0, 0.0, 0.0, 4.0];
        let n = 20_000;
        let mut sum = [0.0; 9];
        let st = st(&mut agent);
        for _ in 0..n {
            st.sample_models(1);
            for (acc, &p) in sum.iter_mut().zip(&st.models[..9]) {
                *acc += p;
            }
            assert_eq!(st.models[2], 0.0);
            assert_eq!(st.models[8], 1.0);
        }
        for row in 0..3 {
            let a0: f64 = alpha[row * 3..row * 3 + 3].iter().sum();
            for y in 0..3 {
                let a = alpha[row * 3 + y];
                let (mean, var) = (a / a0, a * (a0 - a) / (a0 * a0 * (a0 + 1.0)));
                let got = sum[row * 3 + y] / n as f64;
                // 5 standard errors of the sample mean (exact when the variance is 0).
                assert!((got - mean).abs() <= 5.0 * (var / n as f64).sqrt() + 1e-12, "{row} {y}: {got} vs {mean}");
            }
        }
    }

    #[test]
    fn k_sample_probabilities_are_the_mixture() {
        let gc = gc_prior();
        let mdp = gc.sample_mdp(&mut stream(5, 1, 0));
        let k = 5;
        let mut agent = trained(k, &uniform_prior(&gc));
        let steps = rollout(&mut agent, &mdp, 20, 4);
        let state = steps.last().unwrap().2;
        let mut probs = [0.0; 3];
        agent.action_probabilities(state, &mut probs).unwrap();
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // The mixture, recomputed from the k Q-tables.
        let st = st(&mut agent);
        let mut expected = [0.0; 3];
        for j in 0..k {
            let q = st.q_row(j, state);
            let best = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ties = q.iter().filter(|&&v| v == best).count() as f64;
            for a in 0..3 {
                if q[a] == best {
                    expected[a] += 1.0 / (k as f64 * ties);
                }
            }
        }
        for a in 0..3 {
            assert!((probs[a] - expected[a]).abs() < 1e-12, "{probs:?} vs {expected:?}");
        }
        // And `act` (no observation in between, so no resampling) follows it.
        let n = 20_000;
        let mut hits = [0usize; 3];
        let mut rng = stream(6, 0, 0);
        for _ in 0..n {
            hits[agent.act(state, &mut rng).unwrap()] += 1;
        }
        // 20 from the rollout, one for the posterior after its last transition.
        assert_eq!(agent.resamples(), 21);
        for a in 0..3 {
            let f = hits[a] as f64 / n as f64;
            assert!((f - probs[a]).abs() <= 5.0 * (probs[a] * (1.0 - probs[a]) / n as f64).sqrt() + 1e-12);
        }
    }

    #[test]
    fn tied_deterministic_rows_split_the_mass() {
        // State 1: both actions are the same deterministic self-loop, so the two are exactly tied.
        let theta = vec![1.0, 1.0, 1.0, 2.0, 0.0, 1.0, 0.0, 1.0];
        let prior = Fdm::new(2, 2, theta, vec![1.0; 8], Some(0)).unwrap();
        let mut agent = trained(1, &prior);
        agent.start_task(&TaskContext { setting: SETTING, true_mdp: None }, &mut stream(0, 0, 0)).unwrap();
        let mut probs = [0.0; 2];
        agent.action_probabilities(1, &mut probs).unwrap();
        assert_eq!(probs, [0.5, 0.5]);
    }

    #[test]
    fn episodes_draw_the_models_once() {
        let gc = gc_prior();
        let mdp = gc.sample_mdp(&mut stream(3, 1, 0));
        let mut agent = trained(4, &uniform_prior(&gc));
        let mut rng = stream(7, 0, 0);
        agent.start_task(&TaskContext { setting: SETTING, true_mdp: None }, &mut rng).unwrap();
        agent.start_episode(0, &mut rng).unwrap();
        assert_eq!(agent.resamples(), 1);
        let mut before = [0.0; 3];
        agent.action_probabilities(0, &mut before).unwrap();
        let mut env = stream(8, 2, 0);
        let mut s = 0;
        for _ in 0..10 {
            let a = agent.act(s, &mut rng).unwrap();
            let (y, r) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward: r, next_state: y }, &mut rng).unwrap();
            s = y;
        }
        // Within the episode: the same models, so the same revealed policy.
        let mut after = [0.0; 3];
        agent.action_probabilities(0, &mut after).unwrap();
        assert_eq!((before, agent.resamples()), (after, 1));
        agent.start_episode(s, &mut rng).unwrap();
        assert_eq!(agent.resamples(), 2);
        // A new task goes back to the per-step schedule.
        agent.start_task(&TaskContext { setting: SETTING, true_mdp: None }, &mut rng).unwrap();
        rollout(&mut agent, &mdp, 5, 1);
        assert_eq!(agent.resamples(), 5);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let e = Psrl::new(0).unwrap_err();
        assert!(e.to_string().contains("k (the number of posterior samples) must be >= 1"), "{e}");
        let mut agent = Psrl::new(2).unwrap();
        assert!(agent.act(0, &mut stream(0, 0, 0)).unwrap_err().to_string().contains("before learn_offline"));
        assert_eq!(agent.name(), "PSRL (k = 2)");
        let mut huge = Psrl::new(usize::MAX / 2).unwrap();
        let e = huge.learn_offline(&gc_prior(), SETTING, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("is too large"), "{e}");
    }
}
