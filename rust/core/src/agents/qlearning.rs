//! Q-learning with ε-greedy behaviour (Watkins 1989): the model-free floor of the exploration
//! baselines (docs/baselines.md).
//!
//! After each transition `(s, a, r, s')`:
//! `Q(s, a) <- Q(s, a) + alpha_n [r + gamma max_b Q(s', b) - Q(s, a)]`, with the step size
//! `alpha_n = n(s, a)^(-alpha_exponent)` of the pair's n-th visit and `Q = 0` at the start of a
//! task. Behaviour: with probability ε a uniformly random action among all A (the greedy one
//! included), else a greedy action, ties broken uniformly at random.
//!
//! `rewards = "known"` updates with the table's reward `R(s, a, s')` of the observed transition,
//! `"learned"` with the reward observed; in the BBRL protocol the environment pays the table's
//! reward, so the two coincide there (the choice exists for the protocols whose rewards are noisy).

use rand::Rng as _;

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{RewardModel, REWARDS};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "qlearning",
    display: "Q-learning",
    params: &[
        ParamSpec {
            name: "epsilon",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.1)),
            range: Range::between(0.0, 1.0),
            doc: "probability of a uniformly random action",
        },
        ParamSpec {
            name: "alpha_exponent",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.8)),
            range: Range::between(0.51, 1.0),
            doc: "the step size of a pair's n-th update is n^(-alpha_exponent)",
        },
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example {
            doc: "more exploration, 1/n steps, learned rewards",
            params: &[
                ("epsilon", ParamDefault::Float(0.3)),
                ("alpha_exponent", ParamDefault::Float(1.0)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| Ok(Box::new(QLearning::new(r.float("epsilon")?, r.float("alpha_exponent")?, RewardModel::read(r)?)?)),
};

/// ε-greedy Q-learning (module doc).
#[derive(Clone, Debug)]
pub struct QLearning {
    epsilon: f64,
    alpha_exponent: f64,
    rewards: RewardModel,
    state: Option<QState>,
}

#[derive(Clone, Debug)]
struct QState {
    n_states: usize,
    n_actions: usize,
    gamma: f64,
    q: Vec<f64>,
    visits: Vec<f64>,
    known: std::sync::Arc<[f64]>,
}

impl QLearning {
    pub fn new(epsilon: f64, alpha_exponent: f64, rewards: RewardModel) -> Result<Self> {
        if !(0.0..=1.0).contains(&epsilon) {
            return Err(invalid!("epsilon must be in [0, 1], got {epsilon}"));
        }
        if !(0.51..=1.0).contains(&alpha_exponent) {
            return Err(invalid!(
                "alpha_exponent must be in [0.51, 1] (steps that shrink, not too fast), got {alpha_exponent}"
            ));
        }
        Ok(Self { epsilon, alpha_exponent, rewards, state: None })
    }

    fn state(&mut self) -> Result<&mut QState> {
        self.state.as_mut().ok_or_else(|| not_trained("Q-learning"))
    }

    /// The Q-table (S * A).
    pub fn q(&self) -> &[f64] {
        self.state.as_ref().map_or(&[], |st| &st.q)
    }
}

impl Agent for QLearning {
    fn name(&self) -> String {
        format!("Q-learning (epsilon = {}, alpha = n^-{}{})", self.epsilon, self.alpha_exponent, self.rewards.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        self.state = Some(QState {
            n_states: ns,
            n_actions: na,
            gamma: setting.gamma,
            q: vec![0.0; ns * na],
            visits: vec![0.0; ns * na],
            known: prior.rewards_arc(),
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.q.fill(0.0);
        st.visits.fill(0.0);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let epsilon = self.epsilon;
        let st = self.state()?;
        let na = st.n_actions;
        if rng.random::<f64>() < epsilon {
            Ok(rng.random_range(0..na))
        } else {
            Ok(argmax_random_tie(&st.q[state * na..(state + 1) * na], rng))
        }
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (exponent, rewards) = (self.alpha_exponent, self.rewards);
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let row = t.state * na + t.action;
        let reward = match rewards {
            RewardModel::Known => st.known[row * ns + t.next_state],
            RewardModel::Learned => t.reward,
        };
        st.visits[row] += 1.0;
        let alpha = st.visits[row].powf(-exponent);
        let next = st.q[t.next_state * na..(t.next_state + 1) * na].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        st.q[row] += alpha * (reward + st.gamma * next - st.q[row]);
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let epsilon = self.epsilon;
        let st = self.state()?;
        let na = st.n_actions;
        greedy_probabilities(&st.q[state * na..(state + 1) * na], out);
        let uniform = epsilon / na as f64;
        for p in out.iter_mut() {
            *p = (1.0 - epsilon) * *p + uniform;
        }
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
    use crate::agents::baseline_test_support::deterministic_chain;

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn the_update_is_the_stated_one() {
        let mut agent = QLearning::new(0.0, 1.0, RewardModel::Learned).unwrap();
        let (mdp, prior) = deterministic_chain();
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, Setting { gamma: 0.5, horizon: 10 }, &mut rng).unwrap();
        agent
            .start_task(&TaskContext { setting: Setting { gamma: 0.5, horizon: 10 }, true_mdp: None }, &mut rng)
            .unwrap();
        let na = mdp.n_actions();
        agent.observe(Transition { state: 0, action: 1, reward: 2.0, next_state: 1 }, &mut rng).unwrap();
        assert_eq!(agent.q()[1], 2.0); // alpha_1 = 1
        agent.state.as_mut().unwrap().q[na] = 4.0;
        agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        assert_eq!(agent.q()[1], 2.0 + 0.5 * (0.5 * 4.0 - 2.0));
    }

    /// The floor: with Q = 0 and a 0.05 reward one step away, ε-greedy Q-learning needs four
    /// random right moves in a row to discover the chain's end, so it learns the chain only with
    /// much exploration (ε = 0.5) and many steps; its greedy policy then is optimal everywhere.
    #[test]
    fn learns_the_chain_with_enough_exploration() {
        let (mdp, prior) = deterministic_chain();
        let mut agent = QLearning::new(0.5, 0.8, RewardModel::Known).unwrap();
        let setting = crate::agents::baseline_test_support::CHAIN_SETTING;
        let (mut rng, mut env) = (crate::rng::stream(7, 0, 0), crate::rng::stream(7, 1, 0));
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let mut s = 0;
        for _ in 0..20_000 {
            let a = agent.act(s, &mut rng).unwrap();
            let (y, reward) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
            s = y;
        }
        for s in 0..mdp.n_states() {
            assert!(agent.q()[2 * s + 1] > agent.q()[2 * s], "state {s}: {:?}", agent.q());
        }
        // And with little exploration it stays on the myopic action (the floor it is meant to be).
        let rewarded = learns_nothing(0.05);
        assert!(rewarded < 100, "{rewarded}");
    }

    fn learns_nothing(epsilon: f64) -> usize {
        let (mdp, prior) = deterministic_chain();
        let mut agent = QLearning::new(epsilon, 0.8, RewardModel::Known).unwrap();
        let setting = crate::agents::baseline_test_support::CHAIN_SETTING;
        let (mut rng, mut env) = (crate::rng::stream(7, 0, 0), crate::rng::stream(7, 1, 0));
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let (mut s, mut rewarded) = (0, 0);
        for _ in 0..2000 {
            let a = agent.act(s, &mut rng).unwrap();
            let (y, reward) = mdp.step(s, a, &mut env);
            rewarded += usize::from(reward == 1.0);
            agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
            s = y;
        }
        rewarded
    }
}
