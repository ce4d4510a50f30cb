//! Q-learning with UCB-Hoeffding bonuses (Jin, Allen-Zhu, Bubeck & Jordan 2018, Algorithm 1),
//! run in blocks of H steps (docs/baselines.md).
//!
//! One Q-table per stage `h < H`, all starting at the stage's largest value
//! `v_max(h) = r_hi sum_{k < H - h} gamma^k` (Jin et al.'s `H - h` for rewards in [0, 1]). After a
//! transition `(s, a, r, s')` at stage `h`, with `t = ++N_h(s, a)`:
//! `alpha_t = (H + 1) / (H + t)`, `b_t = c scale sqrt(H^3 iota / t)`,
//! `Q_h(s, a) <- (1 - alpha_t) Q_h(s, a) + alpha_t [r + gamma V_{h+1}(s') + b_t]`,
//! `V_h(s) = min(v_max(h), max_a Q_h(s, a))`, `V_H = 0`; `iota = ln(S A T / delta)` with T the
//! trajectory's steps, `scale` the width of the reward range (the bonus of rewards rescaled to
//! [0, 1], on the original scale). The stage of step t is `t mod H` (the continuing protocol's
//! fixed blocks; an episode start restarts at stage 0). Greedy on `Q_h`, ties uniformly at random.
//!
//! `rewards`: as for [`super::qlearning`], the table's reward of the observed transition or the
//! reward observed, the same in the BBRL protocol.

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType};
use super::tabular::{block_length, discounted_steps, Blocks, RewardModel, PLAN_HORIZON, REWARDS};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::work::{self, Unit};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "optql",
    display: "UCB Q-learning",
    params: &[
        ParamSpec {
            name: "c",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: ">= 0",
            doc: "the bonus constant: b_t = c sqrt(H^3 iota / t), in units of the reward range",
        },
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.1)),
            range: "[1e-9, 0.5]",
            doc: "failure probability p of the bound, in iota = ln(S A T / p)",
        },
        PLAN_HORIZON,
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    examples: &[
        Example { doc: "quick: Jin et al.'s bonus scaled down", params: &[("c", ParamDefault::Float(0.01))] },
        Example {
            doc: "the paper's constant c = 1, short blocks, learned rewards",
            params: &[
                ("c", ParamDefault::Float(1.0)),
                ("delta", ParamDefault::Float(0.05)),
                ("plan_horizon", ParamDefault::Int(5)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        Ok(Box::new(OptQl::new(r.float("c")?, r.float("delta")?, r.count("plan_horizon")?, RewardModel::read(r)?)?))
    },
};

/// Optimistic Q-learning (module doc).
#[derive(Clone, Debug)]
pub struct OptQl {
    c: f64,
    delta: f64,
    plan_horizon: usize,
    rewards: RewardModel,
    state: Option<OptQlState>,
}

#[derive(Clone, Debug)]
struct OptQlState {
    n_states: usize,
    n_actions: usize,
    gamma: f64,
    blocks: Blocks,
    /// `Q_h(s, a)`, `(h * S + s) * A + a`.
    q: Vec<f64>,
    /// `V_h(s)` for `h <= H` (`V_H = 0`).
    v: Vec<f64>,
    counts: Vec<f64>,
    /// `v_max(h)` for `h <= H`.
    v_max: Vec<f64>,
    iota: f64,
    scale: f64,
    known: std::sync::Arc<[f64]>,
}

impl OptQl {
    pub fn new(c: f64, delta: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if !(c.is_finite() && c >= 0.0) {
            return Err(invalid!("c must be a finite number >= 0, got {c}"));
        }
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        Ok(Self { c, delta, plan_horizon, rewards, state: None })
    }

    fn state(&mut self) -> Result<&mut OptQlState> {
        self.state.as_mut().ok_or_else(|| not_trained("UCB Q-learning"))
    }

    /// The bonus of a pair's `t`-th update.
    pub fn bonus(&self, t: f64) -> Option<f64> {
        let st = self.state.as_ref()?;
        let h = st.blocks.length as f64;
        Some(self.c * st.scale * (h * h * h * st.iota / t).sqrt())
    }

    fn reset_tables(&mut self, setting: Setting) -> Result<()> {
        let delta = self.delta;
        let requested = self.plan_horizon;
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let h = block_length(requested, setting.gamma);
        st.gamma = setting.gamma;
        st.blocks = Blocks::new(h);
        st.iota = ((ns * na) as f64 * setting.horizon as f64 / delta).ln();
        let r_hi = st.known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        st.v_max = (0..=h).map(|stage| r_hi * discounted_steps(setting.gamma, h - stage)).collect();
        st.q = (0..h * ns * na).map(|i| st.v_max[i / (ns * na)]).collect();
        st.v = (0..(h + 1) * ns).map(|i| st.v_max[i / ns]).collect();
        st.counts = vec![0.0; h * ns * na];
        Ok(())
    }
}

impl Agent for OptQl {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        format!("UCB Q-learning (c = {}, H = {h}{})", self.c, self.rewards.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let rewards = prior.rewards_arc();
        let r_lo = rewards.iter().copied().fold(f64::INFINITY, f64::min);
        let r_hi = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        self.state = Some(OptQlState {
            n_states: prior.n_states(),
            n_actions: prior.n_actions(),
            gamma: setting.gamma,
            blocks: Blocks::new(1),
            q: Vec::new(),
            v: Vec::new(),
            counts: Vec::new(),
            v_max: Vec::new(),
            iota: 0.0,
            scale: if r_hi > r_lo { r_hi - r_lo } else { 1.0 },
            known: rewards,
        });
        self.reset_tables(setting)
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let setting = context.setting;
        let (delta, len) = (self.delta, block_length(self.plan_horizon, setting.gamma));
        let st = self.state()?;
        // The reset of the H·S·A stage tables, a task's cost beside its O(A) decisions.
        work::add(Unit::ModelEntries, (st.q.len() + st.v.len() + st.counts.len()) as u64);
        let same = st.gamma == setting.gamma && st.blocks.length == len;
        if same {
            // Refill in place (no allocation between tasks of the same setting).
            let (ns, na) = (st.n_states, st.n_actions);
            st.blocks.restart();
            for (i, q) in st.q.iter_mut().enumerate() {
                *q = st.v_max[i / (ns * na)];
            }
            for (i, v) in st.v.iter_mut().enumerate() {
                *v = st.v_max[i / ns];
            }
            st.counts.fill(0.0);
            st.iota = ((ns * na) as f64 * setting.horizon as f64 / delta).ln();
            Ok(())
        } else {
            self.reset_tables(setting)
        }
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        self.state()?.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let start = (st.blocks.stage * ns + state) * na;
        Ok(argmax_random_tie(&st.q[start..start + na], rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (c, rewards) = (self.c, self.rewards);
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let (h, len) = (st.blocks.stage, st.blocks.length);
        let reward = match rewards {
            RewardModel::Known => st.known[(t.state * na + t.action) * ns + t.next_state],
            RewardModel::Learned => t.reward,
        };
        let i = (h * ns + t.state) * na + t.action;
        st.counts[i] += 1.0;
        let n = st.counts[i];
        let big_h = len as f64;
        let alpha = (big_h + 1.0) / (big_h + n);
        let bonus = c * st.scale * (big_h * big_h * big_h * st.iota / n).sqrt();
        let next = st.v[(h + 1) * ns + t.next_state];
        st.q[i] = (1.0 - alpha) * st.q[i] + alpha * (reward + st.gamma * next + bonus);
        let row = (h * ns + t.state) * na;
        let best = st.q[row..row + na].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        st.v[h * ns + t.state] = best.min(st.v_max[h]);
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let start = (st.blocks.stage * ns + state) * na;
        greedy_probabilities(&st.q[start..start + na], out);
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
    use crate::agents::baseline_test_support::learns_chain;

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn the_bonus_and_step_size_are_jin_et_al_s() {
        let mut agent = OptQl::new(0.5, 0.1, 4, RewardModel::Known).unwrap();
        let (mdp, prior) = crate::agents::baseline_test_support::deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 100 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let iota = (10.0f64 * 100.0 / 0.1).ln();
        // Rewards span [0, 1]: scale 1.
        assert!((agent.bonus(3.0).unwrap() - 0.5 * (64.0 * iota / 3.0).sqrt()).abs() < 1e-12);
        let v_max0 = 1.0 + 0.9 + 0.81 + 0.729;
        assert!((agent.state.as_ref().unwrap().q[0] - v_max0).abs() < 1e-12);
        // One update at stage 0 of (0, 1): alpha_1 = 1, so Q = r + gamma V_1(1) + b_1.
        agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        let v1 = 1.0 + 0.9 + 0.81;
        let q = agent.state.as_ref().unwrap().q[1];
        assert!((q - (0.9 * v1 + agent.bonus(1.0).unwrap())).abs() < 1e-12, "{q}");
        assert_eq!(agent.state.as_ref().unwrap().blocks.stage, 1);
        let _ = mdp;
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut OptQl::new(0.002, 0.1, 0, RewardModel::Known).unwrap(), 4000);
    }
}
