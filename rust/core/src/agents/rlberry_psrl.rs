//! rlberry's `PSRLAgent` (rlberry 0.3.0), the `reference = "rlberry"` setting of PSRL
//! (docs/baselines.md, Reference settings): posterior sampling once per episode with a
//! Beta-Bernoulli reward model, for side-by-side checks against that code.
//!
//! # Model
//! * Rewards: each observed reward, rescaled to [0, 1] by the problem's reward range, is replaced
//!   by a Bernoulli draw of that mean ("Bernoullized"), and each pair keeps a `Beta(1 + successes,
//!   1 + failures)` posterior on its mean (rlberry's `scale_prior_reward = 1`).
//! * Transitions: `Dirichlet(1/S + n(s, a, ·))` over every next state (rlberry's
//!   `scale_prior_transition = 1/S`), every transition counted (the last step's too).
//!
//! # Plan: once per episode
//! Each episode draws one reward per pair from its Beta posterior and one transition row per pair
//! from its Dirichlet posterior (normalised Gamma variates), then runs an H-stage backward
//! induction from `V_H = 0`: `Q_h(s, a) = r̃(s, a) + gamma sum_y P̃(y) V_{h+1}(y)` on the original
//! reward scale, `V_h = min(max_a Q_h, v_max(0))` (rlberry clips V, not Q, at the first stage's
//! cap). Greedy on `Q_h` at the episode's step h. H is the episode length once the protocol starts
//! episodes; in the continuing protocol a block of `ceil(1 / (1 - gamma))` steps.
//!
//! # Randomness
//! The posterior draws come from a private stream seeded at every task start, so a plan made by
//! `action_probabilities` is the plan `act` would make; the Bernoulli draws of the rewards use the
//! stream given to `observe`. Ties go uniformly at random, where rlberry takes the first maximiser.

use rand::Rng as _;

use super::common::{argmax_random_tie, greedy_probabilities};
use super::tabular::{block_length, count_sweep, discounted_steps, planning_stream, Blocks};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::model::dirichlet::{gamma, sample_row};
use crate::model::fdm::Fdm;
use crate::model::sparse::RowSupports;
use crate::rng::Rng;

/// rlberry's PSRL (module doc).
#[derive(Clone, Debug, Default)]
pub struct RlberryPsrl {
    state: Option<RlberryState>,
}

#[derive(Clone, Debug)]
struct RlberryState {
    n_states: usize,
    n_actions: usize,
    /// `1/S + n(s, a, y)`, `(s * A + a) * S + y`.
    alpha: Vec<f64>,
    /// Every next state, for each pair (the Dirichlet's support).
    all: RowSupports,
    /// `(1 + successes, 1 + failures)` per pair.
    beta: Vec<[f64; 2]>,
    r_lo: f64,
    r_hi: f64,
    gamma: f64,
    horizon: usize,
    episodic: bool,
    blocks: Blocks,
    r_sample: Vec<f64>,
    p_sample: Vec<f64>,
    q: Vec<f64>,
    v: Vec<f64>,
    rng: Rng,
}

impl RlberryPsrl {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&mut self) -> Result<&mut RlberryState> {
        self.state.as_mut().ok_or_else(|| not_trained("PSRL (rlberry)"))
    }

    fn plan(st: &mut RlberryState) {
        let (ns, na, len) = (st.n_states, st.n_actions, st.blocks.length);
        let scale = if st.r_hi > st.r_lo { st.r_hi - st.r_lo } else { 1.0 };
        for row in 0..ns * na {
            let [a, b] = st.beta[row];
            let (x, y) = (gamma(a, &mut st.rng), gamma(b, &mut st.rng));
            let mean = if x + y > 0.0 { x / (x + y) } else { a / (a + b) };
            st.r_sample[row] = st.r_lo + scale * mean;
            let out = &mut st.p_sample[row * ns..(row + 1) * ns];
            sample_row(&st.alpha[row * ns..(row + 1) * ns], st.all.row(row), out, &mut st.rng);
        }
        let cap = st.r_hi * discounted_steps(st.gamma, len);
        st.v[len * ns..].fill(0.0);
        for h in (0..len).rev() {
            let (head, tail) = st.v.split_at_mut((h + 1) * ns);
            let (v_h, v_next) = (&mut head[h * ns..], &tail[..ns]);
            for (s, v_s) in v_h.iter_mut().enumerate() {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let p = &st.p_sample[row * ns..(row + 1) * ns];
                    let next: f64 = p.iter().zip(v_next).map(|(p, v)| p * v).sum();
                    let value = st.r_sample[row] + st.gamma * next;
                    st.q[(h * ns + s) * na + a] = value;
                    best = best.max(value);
                }
                *v_s = best.min(cap);
            }
            count_sweep(ns * na, ns * na * ns);
        }
        st.blocks.due = false;
    }

    fn ensure_planned(&mut self) -> Result<&RlberryState> {
        let st = self.state()?;
        if st.blocks.due {
            Self::plan(st);
        }
        Ok(self.state.as_ref().expect("planned"))
    }

    fn q_row(st: &RlberryState, state: usize) -> &[f64] {
        let (ns, na) = (st.n_states, st.n_actions);
        let start = (st.blocks.stage * ns + state) * na;
        &st.q[start..start + na]
    }

    fn resize(st: &mut RlberryState, length: usize) {
        let (ns, na) = (st.n_states, st.n_actions);
        if st.blocks.length != length || st.q.len() != length * ns * na {
            st.blocks = Blocks::new(length);
            st.q = vec![0.0; length * ns * na];
            st.v = vec![0.0; (length + 1) * ns];
        }
        st.blocks.restart();
    }

    fn continuing_length(setting: Setting) -> usize {
        block_length(0, setting.gamma).min(setting.horizon.max(1))
    }
}

impl Agent for RlberryPsrl {
    fn name(&self) -> String {
        "PSRL (rlberry's PSRLAgent, Beta-Bernoulli rewards)".to_string()
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let rewards = prior.rewards();
        let r_lo = rewards.iter().copied().fold(f64::INFINITY, f64::min);
        let r_hi = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let length = Self::continuing_length(setting);
        self.state = Some(RlberryState {
            n_states: ns,
            n_actions: na,
            alpha: vec![1.0 / ns as f64; ns * na * ns],
            all: RowSupports::from_table(ns, na, &vec![1.0; ns * na * ns]),
            beta: vec![[1.0, 1.0]; ns * na],
            r_lo,
            r_hi,
            gamma: setting.gamma,
            horizon: setting.horizon,
            episodic: false,
            blocks: Blocks::new(length),
            r_sample: vec![0.0; ns * na],
            p_sample: vec![0.0; ns * na * ns],
            q: vec![0.0; length * ns * na],
            v: vec![0.0; (length + 1) * ns],
            rng: planning_stream(&mut crate::rng::stream(0, 0, 0)),
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let length = Self::continuing_length(context.setting);
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.horizon = context.setting.horizon;
        st.episodic = false;
        st.alpha.fill(1.0 / st.n_states as f64);
        st.beta.fill([1.0, 1.0]);
        st.rng = planning_stream(rng);
        Self::resize(st, length);
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        if !st.episodic {
            st.episodic = true;
            let length = st.horizon.max(1);
            Self::resize(st, length);
        }
        st.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let st = self.ensure_planned()?;
        Ok(argmax_random_tie(Self::q_row(st, state), rng))
    }

    fn observe(&mut self, t: Transition, rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        let (ns, na) = (st.n_states, st.n_actions);
        let row = t.state * na + t.action;
        let scale = if st.r_hi > st.r_lo { st.r_hi - st.r_lo } else { 1.0 };
        let mean = ((t.reward - st.r_lo) / scale).clamp(0.0, 1.0);
        // rlberry's Bernoullized reward: a success with probability the reward.
        let success = rng.random::<f64>() < mean;
        st.beta[row][usize::from(!success)] += 1.0;
        st.alpha[row * ns + t.next_state] += 1.0;
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.ensure_planned()?;
        greedy_probabilities(Self::q_row(st, state), out);
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

    fn agent(h: usize) -> RlberryPsrl {
        let mut agent = RlberryPsrl::new();
        let (_, fdm) = deterministic_chain();
        let setting = Setting { gamma: 1.0, horizon: h };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&fdm, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent.start_episode(0, &mut rng).unwrap();
        agent
    }

    #[test]
    fn bernoullized_rewards_and_every_transition_counted() {
        let mut agent = agent(3);
        let mut rng = crate::rng::stream(1, 0, 0);
        // The chain's rewards range over [0, 1]: reward 1 always succeeds, 0 always fails.
        for (reward, y) in [(1.0, 1), (0.0, 1), (1.0, 2)] {
            agent.observe(Transition { state: 0, action: 1, reward, next_state: y }, &mut rng).unwrap();
        }
        let st = agent.state.as_ref().unwrap();
        assert_eq!(st.beta[1], [3.0, 2.0]);
        let third = 1.0 / 5.0;
        assert_eq!(&st.alpha[5..10], &[third, third + 2.0, third + 1.0, third, third]);
        // A reward of 0.05 succeeds about 5% of the time.
        let mut agent = self::agent(3);
        for _ in 0..4000 {
            agent.observe(Transition { state: 0, action: 0, reward: 0.05, next_state: 0 }, &mut rng).unwrap();
        }
        let successes = agent.state.as_ref().unwrap().beta[0][0] - 1.0;
        assert!((150.0..250.0).contains(&successes), "{successes}");
    }

    #[test]
    fn plan_is_backward_induction_on_the_draws_with_v_clipped_at_the_first_stage_cap() {
        let mut agent = agent(3);
        let mut draws = agent.state.as_ref().unwrap().rng.clone();
        agent.act(0, &mut crate::rng::stream(0, 0, 0)).unwrap();
        let st = agent.state.as_ref().unwrap();
        let (ns, na) = (5, 2);
        // The same draws, in rlberry's order per pair: the reward's two Gamma variates, then the row.
        let mut r = vec![0.0; ns * na];
        let mut p = vec![0.0; ns * na * ns];
        for row in 0..ns * na {
            let (x, y) = (gamma(1.0, &mut draws), gamma(1.0, &mut draws));
            r[row] = x / (x + y);
            sample_row(&[0.2; 5], &[0, 1, 2, 3, 4], &mut p[row * ns..(row + 1) * ns], &mut draws);
        }
        let mut v = vec![0.0; ns];
        for h in (0..3).rev() {
            let mut next_v = vec![0.0; ns];
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let q = r[row] + (0..ns).map(|y| p[row * ns + y] * v[y]).sum::<f64>();
                    assert!((st.q[(h * ns + s) * na + a] - q).abs() < 1e-12);
                    best = best.max(q);
                }
                next_v[s] = best.min(3.0);
            }
            v = next_v;
        }
    }
}
