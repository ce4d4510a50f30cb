//! Optimistic PSRL (the maximum over K posterior samples, TabulaRL's `OptimisticPSRL`), run in
//! blocks of H steps (docs/baselines.md).
//!
//! At each block start, K models are drawn from the posterior: transitions
//! `P̃(· | s, a) ~ Dirichlet(alpha0 + n(s, a, ·))` over every state, and, under learned rewards,
//! `r̃(s, a) ~ N(mu, sd^2)` from the Gaussian reward model of [`Experience::reward_posterior`]
//! (TabulaRL's `mu0 = 0`, `tau0 = tau = 1` on rewards rescaled to [0, 1]). Each model j is solved by its own
//! H-stage discounted backward induction, `Q^j_h(s, a) = r̃_j(s, a) + gamma sum_y P̃_j(y) V^j_{h+1}(y)`
//! (under known rewards `sum_y P̃_j(y) [R(s, a, y) + gamma V^j_{h+1}(y)]`), and the agent acts
//! greedily on `Q_h = max_j Q^j_h` at stage `h = t mod H`, ties uniformly at random. As in the
//! reference, the maximum is taken after solving: one model's values never use another's
//! continuation. `k = 1` is PSRL with per-block resampling. `alpha0 = 1` is TabulaRL's prior;
//! its `PSRLunif` uses `1 / S`.
//!
//! `reference = "tabularl"` (with learned rewards) follows TabulaRL's `PSRL`/`OptimisticPSRL`
//! in its one remaining difference: the transition of an episode's (a block's) last step is not
//! counted in the Dirichlet posterior; its reward is counted in the reward posterior.
//!
//! The draws come from a private stream seeded from the agent's stream at every task start, so a
//! block's plan drawn by `action_probabilities` is the plan `act` would draw.

use rand::Rng as _;
use rand_distr::StandardNormal;

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    count_sweep, staged_memory, BlockPlanner, GreedyOnPlan, RewardModel, TabularlReference, PLAN_HORIZON, REWARDS,
    TABULARL_REFERENCE,
};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::dirichlet::sample_row;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "opsrl",
    display: "Optimistic PSRL",
    params: &[
        ParamSpec {
            name: "k",
            ty: ParamType::Int,
            default: Some(ParamDefault::Int(10)),
            range: Range::at_least(1.0),
            doc: "posterior samples per plan, whose Q-tables' maximum is played (10: TabulaRL's nSamp)",
        },
        ParamSpec {
            name: "alpha0",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: Range::above(0.0),
            doc: "Dirichlet concentration of the transition prior, per next state",
        },
        PLAN_HORIZON,
        REWARDS,
        TABULARL_REFERENCE,
    ],
    online_units: &[("k", 1.0)],
    offline_units: &[],
    sizes_memory: &["plan_horizon"],
    examples: &[
        Example { doc: "quick: 3 samples", params: &[("k", ParamDefault::Int(3))] },
        Example {
            doc: "TabulaRL's 10 samples, a sparser prior, short blocks, learned rewards",
            params: &[
                ("k", ParamDefault::Int(10)),
                ("alpha0", ParamDefault::Float(0.2)),
                ("plan_horizon", ParamDefault::Int(5)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
        Example {
            doc: "TabulaRL's PSRL: one sample, its last-step rule",
            params: &[
                ("k", ParamDefault::Int(1)),
                ("rewards", ParamDefault::Text("learned")),
                ("reference", ParamDefault::Text("tabularl")),
            ],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        let rewards = RewardModel::read(r)?;
        let agent = OptimisticPsrl::new(r.count("k")?, r.float("alpha0")?, r.count("plan_horizon")?, rewards)?;
        Ok(Box::new(agent.with_reference(TabularlReference::read(r, rewards)?)))
    },
};

/// Optimistic PSRL (module doc). The K models are drawn and solved one at a time into the same
/// buffers: K multiplies the time, not the memory.
#[derive(Clone, Debug)]
pub struct OptimisticPsrl {
    k: usize,
    alpha0: f64,
    plan_horizon: usize,
    rewards: RewardModel,
    reference: TabularlReference,
    state: Option<OpsrlState>,
}

#[derive(Clone, Debug)]
struct OpsrlState {
    /// The plan: `max_j Q^j_h(s, a)`.
    base: BlockPlanner,
    /// One sampled model: transitions (S * A * S) and mean rewards (S * A).
    p: Vec<f64>,
    r: Vec<f64>,
    alpha: Vec<f64>,
    all_states: Vec<u32>,
}

impl OptimisticPsrl {
    pub fn new(k: usize, alpha0: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if k < 1 {
            return Err(invalid!("k (the number of posterior samples) must be >= 1, got {k}"));
        }
        if !(alpha0.is_finite() && alpha0 > 0.0) {
            return Err(invalid!("alpha0 must be a finite number > 0, got {alpha0}"));
        }
        Ok(Self { k, alpha0, plan_horizon, rewards, reference: TabularlReference::Paper, state: None })
    }

    /// The same agent following `reference`'s choices (module doc).
    pub fn with_reference(mut self, reference: TabularlReference) -> Self {
        self.reference = reference;
        self
    }

    fn state(&mut self) -> Result<&mut OpsrlState> {
        self.state.as_mut().ok_or_else(|| not_trained("Optimistic PSRL"))
    }

    fn ensure_planned(&mut self) -> Result<&OpsrlState> {
        let (k, alpha0, rewards) = (self.k, self.alpha0, self.rewards);
        let st = self.state()?;
        if st.base.due() {
            st.plan(k, alpha0, rewards);
        }
        Ok(st)
    }
}

impl GreedyOnPlan for OptimisticPsrl {
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]> {
        Ok(self.ensure_planned()?.base.staged.q_row(state))
    }
}

impl OpsrlState {
    fn sample(&mut self, alpha0: f64, rewards: RewardModel) {
        let base = &mut self.base;
        let (ns, na) = (base.exp.n_states, base.exp.n_actions);
        for row in 0..ns * na {
            for (a, &c) in self.alpha.iter_mut().zip(base.exp.counts_row(row)) {
                *a = alpha0 + c;
            }
            sample_row(&self.alpha, &self.all_states, &mut self.p[row * ns..(row + 1) * ns], &mut base.rng);
            self.r[row] = match rewards {
                RewardModel::Known => 0.0,
                RewardModel::Learned => {
                    let (mean, sd) = base.exp.reward_posterior(row);
                    mean + sd * base.rng.sample::<f64, _>(StandardNormal)
                }
            };
        }
    }

    fn plan(&mut self, k: usize, alpha0: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.base.exp.n_states, self.base.exp.n_actions, self.base.staged.blocks.length);
        self.base.staged.q.fill(f64::NEG_INFINITY);
        for _ in 0..k {
            self.sample(alpha0, rewards);
            let base = &mut self.base;
            base.v_next.fill(0.0);
            for h in (0..len).rev() {
                for s in 0..ns {
                    let mut best = f64::NEG_INFINITY;
                    for a in 0..na {
                        let row = s * na + a;
                        let p = &self.p[row * ns..(row + 1) * ns];
                        let value = match rewards {
                            RewardModel::Known => {
                                let known = base.exp.known_row(row);
                                p.iter().zip(known).zip(&base.v_next).map(|((p, r), v)| p * (r + base.gamma * v)).sum()
                            }
                            RewardModel::Learned => {
                                self.r[row] + base.gamma * p.iter().zip(&base.v_next).map(|(p, v)| p * v).sum::<f64>()
                            }
                        };
                        let slot = &mut base.staged.q[h * ns * na + row];
                        *slot = slot.max(value);
                        best = best.max(value);
                    }
                    base.v[s] = best;
                }
                std::mem::swap(&mut base.v, &mut base.v_next);
                count_sweep(ns * na, ns * na * ns);
            }
        }
        self.base.planned();
    }
}

impl Agent for OptimisticPsrl {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        format!(
            "Optimistic PSRL (k = {}, alpha0 = {}, H = {h}{}{})",
            self.k,
            self.alpha0,
            self.rewards.label(),
            self.reference.label()
        )
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, rng: &mut Rng) -> Result<()> {
        let base = BlockPlanner::new(prior, self.plan_horizon, setting.gamma, rng);
        let (ns, na) = (base.exp.n_states, base.exp.n_actions);
        self.state = Some(OpsrlState {
            p: vec![0.0; ns * na * ns],
            r: vec![0.0; ns * na],
            alpha: vec![0.0; ns],
            all_states: (0..ns as u32).collect(),
            base,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let requested = self.plan_horizon;
        self.state()?.base.start_task(requested, context.setting, rng);
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let requested = self.plan_horizon;
        self.state()?.base.start_episode(requested);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.act_greedily(state, rng)
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let reference = self.reference;
        let base = &mut self.state()?.base;
        let reward_only = reference == TabularlReference::Tabularl && base.at_last_stage();
        base.observe(&t, reward_only);
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.greedy_policy(state, out)
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        let bytes = staged_memory(1, self.plan_horizon, n_states, n_actions, setting);
        MemoryNeed { bytes, sized_by: "stage tables (parameter plan_horizon, or the horizon when it is 0)" }
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
    use crate::agents::baseline_test_support::{deterministic_chain, learns_chain};

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn the_maximum_of_k_samples_dominates_each_sample() {
        // With k samples, Q_h is at least the Q_h of a single-sample plan from the same stream's
        // first draw, and more samples raise it on average.
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 50 };
        let mean_q0 = |k: usize| {
            let mut total = 0.0;
            for seed in 0..20 {
                let mut agent = OptimisticPsrl::new(k, 1.0, 4, RewardModel::Known).unwrap();
                let mut rng = crate::rng::stream(seed, 0, 0);
                agent.learn_offline(&prior, setting, &mut rng).unwrap();
                agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
                total += agent.ensure_planned().unwrap().base.staged.q.iter().sum::<f64>();
            }
            total
        };
        assert!(mean_q0(8) > mean_q0(1));
        // The first of k draws is the single-sample plan: the maximum dominates it entry by entry.
        let plan = |k: usize| {
            let mut agent = OptimisticPsrl::new(k, 1.0, 4, RewardModel::Known).unwrap();
            let mut rng = crate::rng::stream(3, 0, 0);
            agent.learn_offline(&prior, setting, &mut rng).unwrap();
            agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
            agent.ensure_planned().unwrap().base.staged.q.clone()
        };
        let (one, five) = (plan(1), plan(5));
        assert!(one.iter().zip(&five).all(|(a, b)| a <= b));
    }

    #[test]
    fn tabularl_counts_the_last_step_reward_only_and_learns_in_episodes() {
        let (mdp, prior) = deterministic_chain();
        let (h, episodes) = (10, 200);
        let setting = Setting { gamma: 0.99, horizon: h };
        let mut agent =
            OptimisticPsrl::new(1, 1.0, h, RewardModel::Learned).unwrap().with_reference(TabularlReference::Tabularl);
        let (mut rng, mut env) = (crate::rng::stream(4, 0, 0), crate::rng::stream(4, 1, 0));
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let mut late = 0.0;
        for k in 0..episodes {
            agent.start_episode(0, &mut rng).unwrap();
            let mut s = 0;
            for _ in 0..h {
                let a = agent.act(s, &mut rng).unwrap();
                let (y, reward) = mdp.step(s, a, &mut env);
                agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
                if k >= episodes - 20 {
                    late += reward;
                }
                s = y;
            }
        }
        let exp = &agent.state.as_ref().unwrap().base.exp;
        let rows = exp.n_states * exp.n_actions;
        let rewards: f64 = (0..rows).map(|row| exp.reward_visits(row)).sum();
        let transitions: f64 = (0..rows).map(|row| exp.visits(row)).sum();
        assert_eq!((rewards, transitions), ((h * episodes) as f64, ((h - 1) * episodes) as f64));
        // Right all the way pays 6 per episode; the last 20 episodes earn nearly all of it.
        assert!(late >= 0.9 * 6.0 * 20.0, "{late}");
        let mut default = OptimisticPsrl::new(1, 1.0, h, RewardModel::Learned).unwrap();
        assert!(!default.name().contains("TabulaRL"));
        default.reference = TabularlReference::Tabularl;
        assert!(default.name().contains("TabulaRL's settings"));
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut OptimisticPsrl::new(5, 1.0, 0, RewardModel::Known).unwrap(), 1500);
        learns_chain(&mut OptimisticPsrl::new(5, 1.0, 0, RewardModel::Learned).unwrap(), 1500);
    }
}
