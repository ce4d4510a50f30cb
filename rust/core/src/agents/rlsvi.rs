//! RLSVI, tabular (Osband, Van Roy & Wen 2016, Algorithm 1 with one-hot features), run in blocks
//! of H steps (docs/baselines.md).
//!
//! At each block start, backward over the stages with `Q̃_H = 0`: for each pair, the Bayesian
//! linear regression of the targets `y_i = r_i + gamma max_b Q̃_{h+1}(s'_i, b)` of its n
//! transitions so far, with noise standard deviation `sigma` and a zero-mean Gaussian prior of
//! precision `lambda` (parameter `prior_precision`; both in units of the reward range `scale`: `sigma scale` and
//! `lambda / scale^2`), gives the posterior mean `m = sum_i y_i / (n + sigma^2 lambda)` and
//! variance `v = sigma^2 scale^2 / (n + sigma^2 lambda)`; the agent draws
//! `Q̃_h(s, a) ~ N(m, v)` and acts greedily on `Q̃_h` at stage `h = t mod H`, ties uniformly at random.
//! The sum of targets is `sum_i r_i + gamma sum_y n(s, a, y) max_b Q̃_{h+1}(y, b)`, with `sum_i r_i`
//! the observed rewards (learned) or `sum_y n(s, a, y) R(s, a, y)` (known). The draws come from a
//! private stream seeded from the agent's stream at every task start.
//!
//! `reference = "rlberry"` is rlberry's `RLSVIAgent` instead (docs/baselines.md, "Reference
//! settings"), which perturbs the rewards of a smoothed model rather than regressing the targets:
//! with `n' = n(s, a) + 1` (a pseudo-count), `r̂ = sum_i r_i / n'` and
//! `P̂(y) = (1 / S + n(s, a, y)) / n'`, it draws per stage `r̃_h = 2 r̂ + sd_h xi`,
//! `sd_h = sigma scale / sqrt(n') + v_max(h) / n'`, `xi ~ N(0, 1)` (the doubled mean is rlberry's:
//! it adds a normal draw centred on `r̂` to `r̂`), then `Q̃_h = r̃_h + gamma P̂ V_{h+1}` and
//! `V_h = min(max_a Q̃_h, v_max(0))`. `prior_precision` is unused there.

use rand::Rng as _;
use rand_distr::StandardNormal;

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    count_sweep, discounted_steps, staged_memory, BlockPlanner, GreedyOnPlan, Reference, RewardModel, PLAN_HORIZON,
    REWARDS,
};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "rlsvi",
    display: "RLSVI",
    params: &[
        ParamSpec {
            name: "sigma",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: Range::above(0.0),
            doc: "noise standard deviation of the regression, in units of the reward range",
        },
        ParamSpec {
            name: "prior_precision",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: Range::above(0.0),
            doc: "precision of the zero-mean prior on each Q-value, in units of 1 / (reward range)^2",
        },
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: Range::Choices(&["paper", "rlberry"]),
            doc: "paper: the Bayesian regression of the targets; rlberry: rlberry's RLSVIAgent (rewards of a \
                  pseudo-count model perturbed with sd sigma / sqrt(n + 1) + v_max(h) / (n + 1), its doubled mean \
                  kept; prior_precision is unused)",
        },
        PLAN_HORIZON,
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &["plan_horizon"],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example {
            doc: "less noise, a wider prior, short blocks, learned rewards",
            params: &[
                ("sigma", ParamDefault::Float(0.3)),
                ("prior_precision", ParamDefault::Float(0.1)),
                ("plan_horizon", ParamDefault::Int(5)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
        Example {
            doc: "rlberry's RLSVIAgent (its default noise scale), learned rewards",
            params: &[("reference", ParamDefault::Text("rlberry")), ("rewards", ParamDefault::Text("learned"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        Ok(Box::new(
            Rlsvi::new(
                r.float("sigma")?,
                r.float("prior_precision")?,
                r.count("plan_horizon")?,
                RewardModel::read(r)?,
            )?
            .with_reference(Reference::read(r.text("reference")?)?),
        ))
    },
};

/// RLSVI (module doc).
#[derive(Clone, Debug)]
pub struct Rlsvi {
    sigma: f64,
    reference: Reference,
    lambda: f64,
    plan_horizon: usize,
    rewards: RewardModel,
    state: Option<RlsviState>,
}

#[derive(Clone, Debug)]
struct RlsviState {
    /// The plan: `Q̃_h(s, a)`.
    base: BlockPlanner,
}

impl Rlsvi {
    pub fn new(sigma: f64, lambda: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(invalid!("sigma must be a finite number > 0, got {sigma}"));
        }
        if !(lambda.is_finite() && lambda > 0.0) {
            return Err(invalid!("prior_precision must be a finite number > 0, got {lambda}"));
        }
        Ok(Self { sigma, reference: Reference::Paper, lambda, plan_horizon, rewards, state: None })
    }

    /// The same agent running `reference`'s algorithm.
    pub fn with_reference(mut self, reference: Reference) -> Self {
        self.reference = reference;
        self
    }

    fn state(&mut self) -> Result<&mut RlsviState> {
        self.state.as_mut().ok_or_else(|| not_trained("RLSVI"))
    }

    fn ensure_planned(&mut self) -> Result<&RlsviState> {
        let (sigma, lambda, rewards, reference) = (self.sigma, self.lambda, self.rewards, self.reference);
        let st = self.state()?;
        if st.base.due() {
            match reference {
                Reference::Paper => st.plan(sigma, lambda, rewards),
                Reference::Rlberry => st.plan_rlberry(sigma, rewards),
            }
        }
        Ok(st)
    }
}

impl GreedyOnPlan for Rlsvi {
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]> {
        Ok(self.ensure_planned()?.base.staged.q_row(state))
    }
}

impl RlsviState {
    /// The posterior (mean, standard deviation) of `Q_h(row)` given `V_{h+1}` in `v_next`.
    fn posterior(&self, row: usize, sigma: f64, lambda: f64, rewards: RewardModel) -> (f64, f64) {
        let n = self.base.exp.visits(row);
        let counts = self.base.exp.counts_row(row);
        let mut targets = match rewards {
            RewardModel::Learned => self.base.exp.reward_sum(row),
            RewardModel::Known => {
                let known = self.base.exp.known_row(row);
                self.base.exp.seen(row).iter().map(|&y| counts[y as usize] * known[y as usize]).sum()
            }
        };
        for &y in self.base.exp.seen(row) {
            targets += self.base.gamma * counts[y as usize] * self.base.v_next[y as usize];
        }
        let shrink = n + sigma * sigma * lambda;
        (targets / shrink, sigma * self.base.exp.scale() / shrink.sqrt())
    }

    fn plan(&mut self, sigma: f64, lambda: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.base.exp.n_states, self.base.exp.n_actions, self.base.staged.blocks.length);
        self.base.v_next.fill(0.0);
        for h in (0..len).rev() {
            let mut entries = 0;
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let (mean, sd) = self.posterior(row, sigma, lambda, rewards);
                    entries += self.base.exp.seen(row).len();
                    let value = mean + sd * self.base.rng.sample::<f64, _>(StandardNormal);
                    self.base.staged.q[h * ns * na + row] = value;
                    best = best.max(value);
                }
                self.base.v[s] = best;
            }
            std::mem::swap(&mut self.base.v, &mut self.base.v_next);
            count_sweep(ns * na, entries);
        }
        self.base.planned();
    }

    /// rlberry's perturbed-reward backward induction (module doc).
    fn plan_rlberry(&mut self, sigma: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.base.exp.n_states, self.base.exp.n_actions, self.base.staged.blocks.length);
        let (scale, r_hi) = (self.base.exp.scale(), self.base.exp.r_hi);
        let cap = r_hi * discounted_steps(self.base.gamma, len);
        self.base.v_next.fill(0.0);
        for h in (0..len).rev() {
            let v_max = r_hi * discounted_steps(self.base.gamma, len - h);
            let prior_next = self.base.v_next.iter().sum::<f64>() / ns as f64;
            let mut entries = 0;
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let n = self.base.exp.visits(row) + 1.0;
                    let counts = self.base.exp.counts_row(row);
                    let mut reward_sum = match rewards {
                        RewardModel::Learned => self.base.exp.reward_sum(row),
                        RewardModel::Known => 0.0,
                    };
                    let mut next = prior_next;
                    for &y in self.base.exp.seen(row) {
                        let (count, y) = (counts[y as usize], y as usize);
                        next += count * self.base.v_next[y];
                        if rewards == RewardModel::Known {
                            reward_sum += count * self.base.exp.known_row(row)[y];
                        }
                    }
                    entries += ns;
                    let sd = sigma * scale / n.sqrt() + v_max / n;
                    let perturbed = 2.0 * reward_sum / n + sd * self.base.rng.sample::<f64, _>(StandardNormal);
                    let value = perturbed + self.base.gamma * next / n;
                    self.base.staged.q[h * ns * na + row] = value;
                    best = best.max(value);
                }
                self.base.v[s] = best.min(cap);
            }
            std::mem::swap(&mut self.base.v, &mut self.base.v_next);
            count_sweep(ns * na, entries);
        }
        self.base.planned();
    }
}

impl Agent for Rlsvi {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        format!(
            "RLSVI (sigma = {}, prior precision = {}, H = {h}{}{})",
            self.sigma,
            self.lambda,
            self.rewards.label(),
            self.reference.label()
        )
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, rng: &mut Rng) -> Result<()> {
        self.state = Some(RlsviState { base: BlockPlanner::new(prior, self.plan_horizon, setting.gamma, rng) });
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
        self.state()?.base.observe(&t, false);
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
    fn the_posterior_is_the_bayesian_regression_of_the_targets() {
        let mut agent = Rlsvi::new(0.5, 2.0, 3, RewardModel::Learned).unwrap();
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        for (r, y) in [(1.0, 1), (0.0, 2), (1.0, 1)] {
            agent.observe(Transition { state: 0, action: 1, reward: r, next_state: y }, &mut rng).unwrap();
        }
        let st = agent.state.as_mut().unwrap();
        st.base.v_next.copy_from_slice(&[0.0, 2.0, 4.0, 0.0, 0.0]);
        let (mean, sd) = st.posterior(1, 0.5, 2.0, RewardModel::Learned);
        let targets = 2.0 + 0.9 * (2.0 * 2.0 + 4.0);
        assert!((mean - targets / (3.0 + 0.5)).abs() < 1e-12);
        assert!((sd - 0.5 / 3.5f64.sqrt()).abs() < 1e-12);
        // An unvisited pair: the prior N(0, 1 / lambda) (in reward-range units).
        let (mean, sd) = st.posterior(0, 0.5, 2.0, RewardModel::Learned);
        assert_eq!(mean, 0.0);
        assert!((sd - 0.5 / 0.5f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn rlberry_reference_perturbs_the_doubled_mean_reward_of_a_pseudo_count_model() {
        let mut agent = Rlsvi::new(0.5, 1.0, 2, RewardModel::Learned).unwrap().with_reference(Reference::Rlberry);
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        for (r, y) in [(1.0, 1), (0.0, 2), (1.0, 1)] {
            agent.observe(Transition { state: 0, action: 1, reward: r, next_state: y }, &mut rng).unwrap();
        }
        agent.state.as_mut().unwrap().base.staged.blocks.restart();
        // Replay the plan's normal draws from a copy of its stream.
        let mut draws = agent.state.as_ref().unwrap().base.rng.clone();
        agent.act(0, &mut rng).unwrap();
        let st = agent.state.as_ref().unwrap();
        let xi: Vec<f64> = (0..20).map(|_| draws.sample::<f64, _>(StandardNormal)).collect();
        let (ns, na) = (5, 2);
        // Stage 1 (the last): Q = 2 r̂ + sd xi with r̂ = sum r / (n + 1), sd = sigma / sqrt(n') + v_max(1) / n'.
        let sd1 = |n: f64| 0.5 / n.sqrt() + 1.0 / n;
        let q1: Vec<f64> = (0..ns * na).map(|row| if row == 1 { 2.0 * 2.0 / 4.0 } else { 0.0 }).collect();
        let q1: Vec<f64> =
            q1.iter().enumerate().map(|(row, m)| m + sd1(if row == 1 { 4.0 } else { 1.0 }) * xi[row]).collect();
        for row in 0..ns * na {
            assert!((st.base.staged.q[ns * na + row] - q1[row]).abs() < 1e-12);
        }
        let v1: Vec<f64> = (0..ns).map(|s| q1[s * na].max(q1[s * na + 1]).min(1.9)).collect();
        // Stage 0, pair (0, 1): P̂ = (1/S + n(y)) / n' over every state.
        let next = (v1.iter().sum::<f64>() / 5.0 + 2.0 * v1[1] + v1[2]) / 4.0;
        let sd0 = 0.5 / 2.0 + 1.9 / 4.0;
        let expected = 2.0 * 2.0 / 4.0 + sd0 * xi[ns * na + 1] + 0.9 * next;
        assert!((st.base.staged.q[1] - expected).abs() < 1e-12, "{} {expected}", st.base.staged.q[1]);
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(
            &mut Rlsvi::new(0.1, 1.0, 0, RewardModel::Learned).unwrap().with_reference(Reference::Rlberry),
            2000,
        );
        learns_chain(&mut Rlsvi::new(0.1, 1.0, 0, RewardModel::Known).unwrap(), 2000);
        learns_chain(&mut Rlsvi::new(0.1, 1.0, 0, RewardModel::Learned).unwrap(), 2000);
    }
}
