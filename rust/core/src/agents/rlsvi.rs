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

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType};
use super::tabular::{
    block_length, count_sweep, discounted_steps, planning_stream, Blocks, Experience, Reference, RewardModel,
    PLAN_HORIZON, REWARDS,
};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
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
            range: "> 0",
            doc: "noise standard deviation of the regression, in units of the reward range",
        },
        ParamSpec {
            name: "prior_precision",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: "> 0",
            doc: "precision of the zero-mean prior on each Q-value, in units of 1 / (reward range)^2",
        },
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: "\"paper\" or \"rlberry\"",
            doc: "paper: the Bayesian regression of the targets; rlberry: rlberry's RLSVIAgent (rewards of a \
                  pseudo-count model perturbed with sd sigma / sqrt(n + 1) + v_max(h) / (n + 1), its doubled mean \
                  kept; prior_precision is unused)",
        },
        PLAN_HORIZON,
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
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
    exp: Experience,
    gamma: f64,
    blocks: Blocks,
    rng: Rng,
    /// `Q̃_h(s, a)`, `(h * S + s) * A + a`.
    q: Vec<f64>,
    v_next: Vec<f64>,
    v: Vec<f64>,
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
        if st.blocks.due {
            match reference {
                Reference::Paper => st.plan(sigma, lambda, rewards),
                Reference::Rlberry => st.plan_rlberry(sigma, rewards),
            }
        }
        Ok(st)
    }
}

impl RlsviState {
    /// The posterior (mean, standard deviation) of `Q_h(row)` given `V_{h+1}` in `v_next`.
    fn posterior(&self, row: usize, sigma: f64, lambda: f64, rewards: RewardModel) -> (f64, f64) {
        let n = self.exp.visits(row);
        let counts = self.exp.counts_row(row);
        let mut targets = match rewards {
            RewardModel::Learned => self.exp.reward_sum(row),
            RewardModel::Known => {
                let known = self.exp.known_row(row);
                self.exp.seen(row).iter().map(|&y| counts[y as usize] * known[y as usize]).sum()
            }
        };
        for &y in self.exp.seen(row) {
            targets += self.gamma * counts[y as usize] * self.v_next[y as usize];
        }
        let shrink = n + sigma * sigma * lambda;
        (targets / shrink, sigma * self.exp.scale() / shrink.sqrt())
    }

    fn plan(&mut self, sigma: f64, lambda: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.exp.n_states, self.exp.n_actions, self.blocks.length);
        self.v_next.fill(0.0);
        for h in (0..len).rev() {
            let mut entries = 0;
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let (mean, sd) = self.posterior(row, sigma, lambda, rewards);
                    entries += self.exp.seen(row).len();
                    let value = mean + sd * self.rng.sample::<f64, _>(StandardNormal);
                    self.q[h * ns * na + row] = value;
                    best = best.max(value);
                }
                self.v[s] = best;
            }
            std::mem::swap(&mut self.v, &mut self.v_next);
            count_sweep(ns * na, entries);
        }
        self.blocks.due = false;
    }

    /// rlberry's perturbed-reward backward induction (module doc).
    fn plan_rlberry(&mut self, sigma: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.exp.n_states, self.exp.n_actions, self.blocks.length);
        let (scale, r_hi) = (self.exp.scale(), self.exp.r_hi);
        let cap = r_hi * discounted_steps(self.gamma, len);
        self.v_next.fill(0.0);
        for h in (0..len).rev() {
            let v_max = r_hi * discounted_steps(self.gamma, len - h);
            let prior_next = self.v_next.iter().sum::<f64>() / ns as f64;
            let mut entries = 0;
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let n = self.exp.visits(row) + 1.0;
                    let counts = self.exp.counts_row(row);
                    let mut reward_sum = match rewards {
                        RewardModel::Learned => self.exp.reward_sum(row),
                        RewardModel::Known => 0.0,
                    };
                    let mut next = prior_next;
                    for &y in self.exp.seen(row) {
                        let (count, y) = (counts[y as usize], y as usize);
                        next += count * self.v_next[y];
                        if rewards == RewardModel::Known {
                            reward_sum += count * self.exp.known_row(row)[y];
                        }
                    }
                    entries += ns;
                    let sd = sigma * scale / n.sqrt() + v_max / n;
                    let perturbed = 2.0 * reward_sum / n + sd * self.rng.sample::<f64, _>(StandardNormal);
                    let value = perturbed + self.gamma * next / n;
                    self.q[h * ns * na + row] = value;
                    best = best.max(value);
                }
                self.v[s] = best.min(cap);
            }
            std::mem::swap(&mut self.v, &mut self.v_next);
            count_sweep(ns * na, entries);
        }
        self.blocks.due = false;
    }

    fn q_row(&self, state: usize) -> &[f64] {
        let (ns, na) = (self.exp.n_states, self.exp.n_actions);
        let start = (self.blocks.stage * ns + state) * na;
        &self.q[start..start + na]
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
        let exp = Experience::new(prior);
        let (ns, na) = (exp.n_states, exp.n_actions);
        let len = block_length(self.plan_horizon, setting.gamma);
        self.state = Some(RlsviState {
            exp,
            gamma: setting.gamma,
            blocks: Blocks::new(len),
            rng: planning_stream(&mut rng.clone()),
            q: vec![0.0; len * ns * na],
            v_next: vec![0.0; ns],
            v: vec![0.0; ns],
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let requested = self.plan_horizon;
        let st = self.state()?;
        let setting = context.setting;
        let len = block_length(requested, setting.gamma);
        if len != st.blocks.length {
            st.q = vec![0.0; len * st.exp.n_states * st.exp.n_actions];
        }
        st.gamma = setting.gamma;
        st.blocks = Blocks::new(len);
        st.exp.clear();
        st.rng = planning_stream(rng);
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        self.state()?.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(argmax_random_tie(self.ensure_planned()?.q_row(state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.exp.observe(&t);
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        greedy_probabilities(self.ensure_planned()?.q_row(state), out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
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
        st.v_next.copy_from_slice(&[0.0, 2.0, 4.0, 0.0, 0.0]);
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
        agent.state.as_mut().unwrap().blocks.restart();
        // Replay the plan's normal draws from a copy of its stream.
        let mut draws = agent.state.as_ref().unwrap().rng.clone();
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
            assert!((st.q[ns * na + row] - q1[row]).abs() < 1e-12);
        }
        let v1: Vec<f64> = (0..ns).map(|s| q1[s * na].max(q1[s * na + 1]).min(1.9)).collect();
        // Stage 0, pair (0, 1): P̂ = (1/S + n(y)) / n' over every state.
        let next = (v1.iter().sum::<f64>() / 5.0 + 2.0 * v1[1] + v1[2]) / 4.0;
        let sd0 = 0.5 / 2.0 + 1.9 / 4.0;
        let expected = 2.0 * 2.0 / 4.0 + sd0 * xi[ns * na + 1] + 0.9 * next;
        assert!((st.q[1] - expected).abs() < 1e-12, "{} {expected}", st.q[1]);
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
