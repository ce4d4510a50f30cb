//! MBIE-EB (Strehl & Littman 2008, §3-§6): model-based interval estimation with an exploration
//! bonus, discounted-native (docs/baselines.md).
//!
//! On the empirical model of every transition so far (a pair's statistics frozen after `m`
//! samples when `m > 0`), value iteration to convergence of
//! `Q(s, a) = R̂(s, a) + gamma sum_y T̂(y | s, a) max_b Q(y, b) + beta scale / sqrt(n(s, a))`,
//! with `Q(s, a) = r_hi / (1 - gamma)` for an unvisited pair (the absorbing state of
//! [`super::tabular::AbsorbingModel`]); re-solved before the first decision after each new
//! sample, greedy with ties uniformly at random. `beta` is stated in units of the reward range
//! `scale` (the paper's `beta = C R_max`, C = 0.4 on RiverSwim and 0.8 on SixArms). Under known
//! rewards `R̂` is the table's `R(s, a, y)` weighted by `T̂`, and the bonus remains (it covers the
//! transitions' uncertainty).

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{AbsorbingPlanner, GreedyOnPlan, RewardModel, REWARDS};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "mbie_eb",
    display: "MBIE-EB",
    params: &[
        ParamSpec {
            name: "beta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.4)),
            range: Range::at_least(0.0),
            doc: "bonus beta / sqrt(n(s, a)), in units of the reward range (0.4: the RiverSwim setting)",
        },
        ParamSpec {
            name: "m",
            ty: ParamType::Int,
            default: Some(ParamDefault::Int(0)),
            range: Range::at_least(0.0),
            doc: "samples after which a pair's statistics stop changing (0: never)",
        },
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example {
            doc: "the SixArms bonus, statistics capped at 16 samples, learned rewards",
            params: &[
                ("beta", ParamDefault::Float(0.8)),
                ("m", ParamDefault::Int(16)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| Ok(Box::new(MbieEb::new(r.float("beta")?, r.count("m")?, RewardModel::read(r)?)?)),
};

/// MBIE-EB (module doc).
#[derive(Clone, Debug)]
pub struct MbieEb {
    beta: f64,
    m: usize,
    rewards: RewardModel,
    state: Option<AbsorbingPlanner>,
}

impl MbieEb {
    pub fn new(beta: f64, m: usize, rewards: RewardModel) -> Result<Self> {
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(invalid!("beta must be a finite number >= 0, got {beta}"));
        }
        Ok(Self { beta, m, rewards, state: None })
    }

    fn state(&mut self) -> Result<&mut AbsorbingPlanner> {
        self.state.as_mut().ok_or_else(|| not_trained("MBIE-EB"))
    }
}

impl GreedyOnPlan for MbieEb {
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]> {
        Ok(self.state()?.q_row(state))
    }
}

impl Agent for MbieEb {
    fn name(&self) -> String {
        let cap = if self.m == 0 { String::new() } else { format!(", m = {}", self.m) };
        format!("MBIE-EB (beta = {}{cap}{})", self.beta, self.rewards.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.state = Some(AbsorbingPlanner::new(prior, setting.gamma));
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.state()?.start_task(context.setting.gamma);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.act_greedily(state, rng)
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (beta, m, rewards) = (self.beta, self.m, self.rewards);
        let st = self.state()?;
        let row = t.state * st.exp.n_actions + t.action;
        if m == 0 || st.exp.visits(row) < m as f64 {
            st.exp.observe(&t);
            // beta / sqrt(n(s, a)) in units of the reward range.
            let bonus = beta * st.exp.scale() / st.exp.visits(row).sqrt();
            st.set_known(row, rewards, bonus);
        }
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.greedy_policy(state, out)
    }

    /// Nothing learned offline: learn_offline only sizes the model.
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
    fn unvisited_pairs_are_worth_the_most_and_visited_ones_carry_the_bonus() {
        let mut agent = MbieEb::new(0.5, 0, RewardModel::Known).unwrap();
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.5, horizon: 10 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        // Rewards span [0, 1]: an unvisited pair is worth 1 / (1 - 0.5) = 2.
        let q = agent.planned_q_row(0).unwrap().to_vec();
        assert!(q.iter().all(|&v| (v - 2.0).abs() < 1e-3), "{q:?}");
        for _ in 0..4 {
            agent.observe(Transition { state: 0, action: 0, reward: 0.05, next_state: 0 }, &mut rng).unwrap();
        }
        // Q(0, 0) = 0.05 + 0.5 / 2 + 0.5 max(Q(0, 0), Q(0, 1) = 2) = 0.3 + 1.
        let q = agent.planned_q_row(0).unwrap().to_vec();
        assert!((q[0] - 1.3).abs() < 1e-3, "{q:?}");
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut MbieEb::new(0.1, 0, RewardModel::Known).unwrap(), 300);
        learns_chain(&mut MbieEb::new(0.1, 16, RewardModel::Learned).unwrap(), 300);
    }
}
