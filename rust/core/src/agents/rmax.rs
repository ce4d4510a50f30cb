//! R-max (Brafman & Tennenholtz 2002), in its discounted form (docs/baselines.md).
//!
//! A pair is known once it has been tried `m` times; its statistics are frozen then. The planning
//! model sends every unknown pair with probability 1 to an absorbing state paying the largest
//! reward `r_hi` under every action ([`super::tabular::AbsorbingModel`]), so an unknown pair is
//! worth `r_hi / (1 - gamma)`; a known pair follows its empirical transitions with the known
//! rewards (or, learned, the mean of its first m rewards). The model is solved by the benchmark's
//! value iteration at the task start and again only when a pair becomes known; greedy with ties
//! uniformly at random. The paper's own T-step undiscounted policy and its PAC-sized m are not
//! used: m = 16 and m = 6 are the RiverSwim and SixArms settings of the MBIE-EB experiments.

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{AbsorbingPlanner, GreedyOnPlan, RewardModel, REWARDS};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "rmax",
    display: "R-max",
    params: &[
        ParamSpec {
            name: "m",
            ty: ParamType::Int,
            default: Some(ParamDefault::Int(16)),
            range: Range::at_least(1.0),
            doc: "tries after which a pair is known (16: the RiverSwim setting)",
        },
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick: pairs known after 3 tries", params: &[("m", ParamDefault::Int(3))] },
        Example {
            doc: "the SixArms setting, learned rewards",
            params: &[("m", ParamDefault::Int(6)), ("rewards", ParamDefault::Text("learned"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| Ok(Box::new(Rmax::new(r.count("m")?, RewardModel::read(r)?)?)),
};

/// R-max (module doc).
#[derive(Clone, Debug)]
pub struct Rmax {
    m: usize,
    rewards: RewardModel,
    state: Option<AbsorbingPlanner>,
}

impl Rmax {
    pub fn new(m: usize, rewards: RewardModel) -> Result<Self> {
        if m < 1 {
            return Err(invalid!("m (tries before a pair is known) must be >= 1, got {m}"));
        }
        Ok(Self { m, rewards, state: None })
    }

    fn state(&mut self) -> Result<&mut AbsorbingPlanner> {
        self.state.as_mut().ok_or_else(|| not_trained("R-max"))
    }

    /// Whether pair `row` is known.
    pub fn is_known(&self, row: usize) -> bool {
        self.state.as_ref().is_some_and(|st| st.exp.visits(row) >= self.m as f64)
    }

    /// Solves since the task started.
    pub fn solves(&self) -> u64 {
        self.state.as_ref().map_or(0, |st| st.solves)
    }
}

impl GreedyOnPlan for Rmax {
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]> {
        Ok(self.state()?.q_row(state))
    }
}

impl Agent for Rmax {
    fn name(&self) -> String {
        format!("R-max (m = {}{})", self.m, self.rewards.label())
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
        let (m, rewards) = (self.m as f64, self.rewards);
        let st = self.state()?;
        let row = t.state * st.exp.n_actions + t.action;
        if st.exp.visits(row) < m {
            st.exp.observe(&t);
            if st.exp.visits(row) == m {
                st.set_known(row, rewards, 0.0);
            }
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
    fn a_pair_becomes_known_at_m_tries_and_only_then_is_the_model_solved_again() {
        let mut agent = Rmax::new(3, RewardModel::Known).unwrap();
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.5, horizon: 10 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent.act(0, &mut rng).unwrap();
        assert_eq!(agent.solves(), 1);
        let t = Transition { state: 0, action: 0, reward: 0.05, next_state: 0 };
        for tries in 1..=5 {
            agent.observe(t, &mut rng).unwrap();
            agent.act(0, &mut rng).unwrap();
            assert_eq!(agent.is_known(0), tries >= 3);
            assert_eq!(agent.solves(), if tries >= 3 { 2 } else { 1 }, "after {tries} tries");
        }
        // Known: Q(0, 0) = 0.05 + 0.5 V(0), and V(0) = Q(0, 1) = 2 (unknown): 1.05.
        let q = agent.planned_q_row(0).unwrap().to_vec();
        assert!((q[0] - 1.05).abs() < 1e-3 && (q[1] - 2.0).abs() < 1e-3, "{q:?}");
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut Rmax::new(2, RewardModel::Known).unwrap(), 300);
        learns_chain(&mut Rmax::new(2, RewardModel::Learned).unwrap(), 300);
    }
}
