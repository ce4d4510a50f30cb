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
//!
//! `reference = "rlberry"` is rlberry's `OptQLAgent` (docs/baselines.md, "Reference settings"):
//! the tables start at `(H - h) scale` (undiscounted), and the bonus is
//! `b_t = min(c scale / sqrt(t) + v_max(h) / t, v_max(h))`; the update and the cap on V are the same.

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    discounted_steps, plan_length, rlberry_bonus, staged_memory, GreedyOnPlan, Reference, RewardModel, StagedQ,
    PLAN_HORIZON, REWARDS,
};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
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
            range: Range::at_least(0.0),
            doc: "the bonus constant: b_t = c sqrt(H^3 iota / t), in units of the reward range",
        },
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.1)),
            range: Range::between(1e-9, 0.5),
            doc: "failure probability p of the bound, in iota = ln(S A T / p)",
        },
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: Range::Choices(&["paper", "rlberry"]),
            doc: "paper: Jin et al.'s bonus and initial values; rlberry: rlberry's OptQLAgent (bonus \
                  min(c / sqrt(t) + v_max(h) / t, v_max(h)), tables starting at H - h; delta is unused)",
        },
        PLAN_HORIZON,
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &["plan_horizon"],
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
        Example {
            doc: "rlberry's OptQLAgent (its default bonus scale)",
            params: &[("reference", ParamDefault::Text("rlberry"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        Ok(Box::new(
            OptQl::new(r.float("c")?, r.float("delta")?, r.count("plan_horizon")?, RewardModel::read(r)?)?
                .with_reference(Reference::read(r.text("reference")?)?),
        ))
    },
};

/// Optimistic Q-learning (module doc).
#[derive(Clone, Debug)]
pub struct OptQl {
    c: f64,
    reference: Reference,
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
    /// The schedule and `Q_h(s, a)`.
    staged: StagedQ,
    /// `V_h(s)` for `h <= H` (`V_H = 0`).
    v: Vec<f64>,
    counts: Vec<f64>,
    /// `v_max(h)` for `h <= H`.
    v_max: Vec<f64>,
    iota: f64,
    scale: f64,
    known: std::sync::Arc<[f64]>,
    /// The task's setting, and whether the protocol starts episodes (the plan then spans the
    /// episode: [`plan_length`]).
    setting: Setting,
    episodic: bool,
}

impl OptQl {
    pub fn new(c: f64, delta: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if !(c.is_finite() && c >= 0.0) {
            return Err(invalid!("c must be a finite number >= 0, got {c}"));
        }
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        Ok(Self { c, reference: Reference::Paper, delta, plan_horizon, rewards, state: None })
    }

    /// The same agent running `reference`'s algorithm.
    pub fn with_reference(mut self, reference: Reference) -> Self {
        self.reference = reference;
        self
    }

    /// The value the stage-`h` tables start from (index `h <= H`; 0 at `H`).
    fn initial_value(reference: Reference, st: &OptQlState, h: usize) -> f64 {
        match reference {
            Reference::Paper => st.v_max[h],
            Reference::Rlberry => st.scale * (st.staged.blocks.length - h) as f64,
        }
    }

    /// The bonus of the `t`-th update of a pair at stage `h`.
    fn bonus_at(c: f64, reference: Reference, st: &OptQlState, h: usize, t: f64) -> f64 {
        match reference {
            Reference::Paper => {
                let len = st.staged.blocks.length as f64;
                c * st.scale * (len * len * len * st.iota / t).sqrt()
            }
            Reference::Rlberry => rlberry_bonus(c, t, st.v_max[h], st.scale),
        }
    }

    fn state(&mut self) -> Result<&mut OptQlState> {
        self.state.as_mut().ok_or_else(|| not_trained("UCB Q-learning"))
    }

    /// The bonus of a pair's `t`-th update at stage `h`.
    pub fn bonus(&self, h: usize, t: f64) -> Option<f64> {
        let st = self.state.as_ref()?;
        Some(Self::bonus_at(self.c, self.reference, st, h, t))
    }

    fn reset_tables(&mut self, setting: Setting) -> Result<()> {
        let delta = self.delta;
        let requested = self.plan_horizon;
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let h = plan_length(requested, setting, st.episodic);
        st.gamma = setting.gamma;
        st.setting = setting;
        st.staged = StagedQ::new(h, ns, na);
        st.iota = ((ns * na) as f64 * setting.horizon as f64 / delta).ln();
        let r_hi = st.known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        st.v_max = (0..=h).map(|stage| r_hi * discounted_steps(setting.gamma, h - stage)).collect();
        st.v = vec![0.0; (h + 1) * ns];
        st.counts = vec![0.0; h * ns * na];
        self.fill_tables();
        Ok(())
    }

    /// The Q and V tables at their initial values.
    fn fill_tables(&mut self) {
        let reference = self.reference;
        if let Some(st) = self.state.as_mut() {
            let (ns, na) = (st.n_states, st.n_actions);
            for i in 0..st.staged.q.len() {
                st.staged.q[i] = Self::initial_value(reference, st, i / (ns * na));
            }
            for i in 0..st.v.len() {
                st.v[i] = Self::initial_value(reference, st, i / ns);
            }
        }
    }
}

impl GreedyOnPlan for OptQl {
    /// The table as the updates left it (Q-learning plans nothing: every observation updates it).
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]> {
        Ok(self.state()?.staged.q_row(state))
    }
}

impl Agent for OptQl {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        format!("UCB Q-learning (c = {}, H = {h}{}{})", self.c, self.rewards.label(), self.reference.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let rewards = prior.rewards_arc();
        let r_lo = rewards.iter().copied().fold(f64::INFINITY, f64::min);
        let r_hi = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        self.state = Some(OptQlState {
            n_states: prior.n_states(),
            n_actions: prior.n_actions(),
            gamma: setting.gamma,
            staged: StagedQ::new(1, prior.n_states(), prior.n_actions()),
            v: Vec::new(),
            counts: Vec::new(),
            v_max: Vec::new(),
            iota: 0.0,
            scale: if r_hi > r_lo { r_hi - r_lo } else { 1.0 },
            known: rewards,
            setting,
            episodic: false,
        });
        self.reset_tables(setting)
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let setting = context.setting;
        let (delta, requested) = (self.delta, self.plan_horizon);
        let st = self.state()?;
        let len = plan_length(requested, setting, st.episodic);
        // The reset of the H·S·A stage tables, a task's cost beside its O(A) decisions.
        work::add(Unit::ModelEntries, (st.staged.q.len() + st.v.len() + st.counts.len()) as u64);
        let same = st.gamma == setting.gamma && st.staged.blocks.length == len;
        if same {
            // Refill in place (no allocation between tasks of the same setting).
            let (ns, na) = (st.n_states, st.n_actions);
            st.setting = setting;
            st.staged.blocks.restart();
            st.counts.fill(0.0);
            st.iota = ((ns * na) as f64 * setting.horizon as f64 / delta).ln();
            self.fill_tables();
            Ok(())
        } else {
            self.reset_tables(setting)
        }
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        if !st.episodic {
            // The first episode: the plan spans the episode from now on (nothing is learned yet).
            st.episodic = true;
            let setting = st.setting;
            self.reset_tables(setting)?;
        }
        self.state()?.staged.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.act_greedily(state, rng)
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (c, rewards, reference) = (self.c, self.rewards, self.reference);
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let (h, len) = (st.staged.blocks.stage, st.staged.blocks.length);
        let reward = match rewards {
            RewardModel::Known => st.known[(t.state * na + t.action) * ns + t.next_state],
            RewardModel::Learned => t.reward,
        };
        let i = (h * ns + t.state) * na + t.action;
        st.counts[i] += 1.0;
        let n = st.counts[i];
        let big_h = len as f64;
        let alpha = (big_h + 1.0) / (big_h + n);
        let bonus = Self::bonus_at(c, reference, st, h, n);
        let next = st.v[(h + 1) * ns + t.next_state];
        st.staged.q[i] = (1.0 - alpha) * st.staged.q[i] + alpha * (reward + st.gamma * next + bonus);
        let row = (h * ns + t.state) * na;
        let best = st.staged.q[row..row + na].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        st.v[h * ns + t.state] = best.min(st.v_max[h]);
        st.staged.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.greedy_policy(state, out)
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        let bytes = staged_memory(2, self.plan_horizon, n_states, n_actions, setting);
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
        assert!((agent.bonus(0, 3.0).unwrap() - 0.5 * (64.0 * iota / 3.0).sqrt()).abs() < 1e-12);
        let v_max0 = 1.0 + 0.9 + 0.81 + 0.729;
        assert!((agent.state.as_ref().unwrap().staged.q[0] - v_max0).abs() < 1e-12);
        // One update at stage 0 of (0, 1): alpha_1 = 1, so Q = r + gamma V_1(1) + b_1.
        agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        let v1 = 1.0 + 0.9 + 0.81;
        let q = agent.state.as_ref().unwrap().staged.q[1];
        assert!((q - (0.9 * v1 + agent.bonus(0, 1.0).unwrap())).abs() < 1e-12, "{q}");
        assert_eq!(agent.state.as_ref().unwrap().staged.blocks.stage, 1);
        let _ = mdp;
    }

    #[test]
    fn rlberry_reference_starts_at_h_minus_h_and_has_rlberry_s_bonus() {
        let mut agent = OptQl::new(0.5, 0.1, 4, RewardModel::Known).unwrap().with_reference(Reference::Rlberry);
        let (_, prior) = crate::agents::baseline_test_support::deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 100 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let st = agent.state.as_ref().unwrap();
        // Undiscounted H - h (rewards span [0, 1]), whatever gamma; V_H = 0.
        assert_eq!((st.staged.q[0], st.staged.q[3 * 10], st.v[2 * 5], st.v[4 * 5]), (4.0, 1.0, 2.0, 0.0));
        let v_max2 = 1.0 + 0.9;
        // min(c / sqrt(t) + v_max(h) / t, v_max(h)): capped at t = 1, not at t = 4.
        assert_eq!(agent.bonus(2, 1.0).unwrap(), v_max2);
        assert!((agent.bonus(2, 4.0).unwrap() - (0.25 + v_max2 / 4.0)).abs() < 1e-15);
        // One update at stage 0 of (0, 1): alpha_1 = 1, Q = r + gamma V_1(1) + b_1 with V_1 = 3.
        agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        let q = agent.state.as_ref().unwrap().staged.q[1];
        assert!((q - (0.9 * 3.0 + agent.bonus(0, 1.0).unwrap())).abs() < 1e-12, "{q}");
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut OptQl::new(0.002, 0.1, 0, RewardModel::Known).unwrap(), 4000);
        learns_chain(
            &mut OptQl::new(0.1, 0.1, 0, RewardModel::Known).unwrap().with_reference(Reference::Rlberry),
            4000,
        );
    }
}
