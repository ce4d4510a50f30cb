//! A finite MDP with dense transition and reward tables, and its transition sampler.

use std::sync::Arc;

use rand::Rng as _;

use crate::error::Result;
use crate::fdm::check_tables;
use crate::invalid;
use crate::rng::Rng;
use crate::solve::TabularView;
use crate::sparse::RowSupports;

/// A test MDP: `P[s, a, y]` and `R[s, a, y]` row-major, and an initial state
/// (`None`: uniform at every reset).
#[derive(Clone, Debug)]
pub struct Mdp {
    n_states: usize,
    n_actions: usize,
    transitions: Vec<f64>,
    rewards: Arc<[f64]>,
    initial_state: Option<usize>,
    support: RowSupports,
    /// The transition sampler: per row, its support as (cumulative probability, next state,
    /// reward) triples in increasing next-state order, starting at `sampler_start[row]`. One small
    /// contiguous array instead of three `S * A * S` tables keeps a step to a cache line or two.
    sampler: Vec<(f64, u32, f64)>,
    sampler_start: Vec<u32>,
}

impl Mdp {
    /// A validated MDP: probabilities non-negative and each row summing to 1 (within 1e-9).
    pub fn new(
        n_states: usize,
        n_actions: usize,
        transitions: Vec<f64>,
        rewards: Vec<f64>,
        initial_state: Option<usize>,
    ) -> Result<Self> {
        check_tables(n_states, n_actions, &transitions, "transitions", &rewards, initial_state)?;
        for row in 0..n_states * n_actions {
            let sum: f64 = transitions[row * n_states..(row + 1) * n_states].iter().sum();
            if (sum - 1.0).abs() > 1e-9 {
                return Err(invalid!("transitions[{}, {}, :] sums to {sum}, not 1", row / n_actions, row % n_actions));
            }
        }
        Ok(Self::from_parts(n_states, n_actions, transitions, rewards.into(), initial_state))
    }

    /// Assembles an MDP from tables already known to be valid.
    pub(crate) fn from_parts(
        n_states: usize,
        n_actions: usize,
        transitions: Vec<f64>,
        rewards: Arc<[f64]>,
        initial_state: Option<usize>,
    ) -> Self {
        let support = RowSupports::from_table(n_states, n_actions, &transitions);
        let rows = n_states * n_actions;
        let mut sampler = Vec::new();
        let mut sampler_start = Vec::with_capacity(rows + 1);
        for row in 0..rows {
            sampler_start.push(sampler.len() as u32);
            let base = row * n_states;
            // The cumulative sums are accumulated exactly as `step` used to, term by term.
            let mut cumul = 0.0;
            for &y in support.row(row) {
                cumul += transitions[base + y as usize];
                sampler.push((cumul, y, rewards[base + y as usize]));
            }
        }
        sampler_start.push(sampler.len() as u32);
        Self { n_states, n_actions, transitions, rewards, initial_state, support, sampler, sampler_start }
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    pub fn transitions(&self) -> &[f64] {
        &self.transitions
    }
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }
    pub fn initial_state_spec(&self) -> Option<usize> {
        self.initial_state
    }

    /// The state a trajectory starts in.
    pub fn initial_state(&self, rng: &mut Rng) -> usize {
        match self.initial_state {
            Some(s) => s,
            None => rng.random_range(0..self.n_states),
        }
    }

    /// Samples the next state and reward of `(state, action)`.
    ///
    /// Walks the row's support accumulating probabilities and stops at the first `y` with
    /// `u < cumul`. The original walks every `y` with `u <= cumul` and, should rounding leave `u`
    /// above the total, falls back to state 0 (SPEC 1.2, 7.9); here zero-probability states can
    /// never be returned, and the rounding fallback is the last state of the support.
    #[inline]
    pub fn step(&self, state: usize, action: usize, rng: &mut Rng) -> (usize, f64) {
        let row = state * self.n_actions + action;
        let entries = &self.sampler[self.sampler_start[row] as usize..self.sampler_start[row + 1] as usize];
        let u: f64 = rng.random();
        let &(_, last, last_reward) = entries.last().expect("every row has a non-empty support");
        for &(cumul, y, reward) in entries {
            if u < cumul {
                return (y as usize, reward);
            }
        }
        (last as usize, last_reward)
    }

    /// A borrowed view for the solvers.
    pub fn view(&self) -> TabularView<'_> {
        TabularView {
            n_states: self.n_states,
            n_actions: self.n_actions,
            transitions: &self.transitions,
            rewards: &self.rewards,
            support: &self.support,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn step_frequencies_match_probabilities() {
        let mdp = Mdp::new(3, 1, vec![0.2, 0.0, 0.8, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0], vec![1.0; 9], Some(0)).unwrap();
        let mut rng = stream(5, 0, 0);
        let n = 100_000;
        let hits = (0..n).filter(|_| mdp.step(0, 0, &mut rng).0 == 2).count();
        let p = hits as f64 / n as f64;
        // 5 standard errors of a Bernoulli(0.8) frequency.
        assert!((p - 0.8).abs() < 5.0 * (0.8f64 * 0.2 / n as f64).sqrt());
        assert!((0..1000).all(|_| mdp.step(0, 0, &mut rng).0 != 1));
    }

    #[test]
    fn rows_must_sum_to_one() {
        let err = Mdp::new(2, 1, vec![0.5, 0.4, 1.0, 0.0], vec![0.0; 4], Some(0)).unwrap_err();
        assert!(err.to_string().contains("sums to"));
    }
}
