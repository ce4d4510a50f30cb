//! The counting model (BBRL's `CModel`, SPEC 4.2): Dirichlet counts and their mean MDP.

use std::sync::Arc;

use crate::model::fdm::Fdm;
use crate::model::sparse::RowSupports;
use crate::model::tables::TabularView;

/// Counts `N(s, a, y)` (prior pseudo-counts plus observed transitions), row totals `Np(s, a)` and
/// the mean transition model `P = N / Np`, kept up to date row by row. The same object is the
/// Dirichlet posterior: `posterior = prior + counts`.
#[derive(Clone, Debug)]
pub struct CountModel {
    n_states: usize,
    n_actions: usize,
    counts: Vec<f64>,
    row_totals: Vec<f64>,
    transitions: Vec<f64>,
    rewards: Arc<[f64]>,
    support: RowSupports,
}

impl CountModel {
    /// A model from initial counts. Every row must have a positive total (validated upstream for
    /// priors; the built-in count vectors all satisfy it).
    pub fn new(n_states: usize, n_actions: usize, counts: Vec<f64>, rewards: Arc<[f64]>) -> Self {
        let rows = n_states * n_actions;
        let support = RowSupports::from_table(n_states, n_actions, &counts);
        let mut model = Self {
            n_states,
            n_actions,
            row_totals: vec![0.0; rows],
            transitions: vec![0.0; counts.len()],
            counts,
            rewards,
            support,
        };
        for row in 0..rows {
            model.refresh_row(row);
        }
        model
    }

    /// The posterior-mean model of a prior: counts = theta.
    pub fn from_prior(prior: &Fdm) -> Self {
        Self::new(prior.n_states(), prior.n_actions(), prior.theta().to_vec(), prior.rewards_arc())
    }

    fn refresh_row(&mut self, row: usize) {
        let base = row * self.n_states;
        let total: f64 = self.counts[base..base + self.n_states].iter().sum();
        self.row_totals[row] = total;
        for &y in self.support.row(row) {
            let i = base + y as usize;
            self.transitions[i] = self.counts[i] / total;
        }
    }

    /// Adds one observed transition `(s, a) -> y` (rewards are known, so the reward is not needed).
    pub fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        let row = state * self.n_actions + action;
        let i = row * self.n_states + next_state;
        if self.counts[i] == 0.0 {
            self.support.insert(row, next_state);
        }
        self.counts[i] += 1.0;
        // The original recomputes the whole row as N / Np; so do we (same arithmetic).
        let total = self.row_totals[row] + 1.0;
        self.row_totals[row] = total;
        let base = row * self.n_states;
        for &y in self.support.row(row) {
            let j = base + y as usize;
            self.transitions[j] = self.counts[j] / total;
        }
    }

    /// Restores `self` to `other` without allocating (both must have the same shape).
    pub fn copy_from(&mut self, other: &CountModel) {
        self.counts.copy_from_slice(&other.counts);
        self.row_totals.copy_from_slice(&other.row_totals);
        self.transitions.copy_from_slice(&other.transitions);
        self.support.clone_from(&other.support);
        self.rewards = Arc::clone(&other.rewards);
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    /// Counts N(s, a, y), row-major.
    pub fn counts(&self) -> &[f64] {
        &self.counts
    }
    /// Row totals Np(s, a) = sum_y N(s, a, y).
    pub fn row_totals(&self) -> &[f64] {
        &self.row_totals
    }
    /// The mean model P = N / Np.
    pub fn transitions(&self) -> &[f64] {
        &self.transitions
    }
    pub fn support(&self) -> &RowSupports {
        &self.support
    }
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }

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
    use proptest::prelude::*;

    proptest! {
        /// posterior = prior + counts, and the mean model is N / Np with rows summing to 1.
        #[test]
        fn posterior_is_prior_plus_counts(
            observations in proptest::collection::vec((0usize..3, 0usize..2, 0usize..3), 0..60)
        ) {
            let prior: Vec<f64> = (0..18).map(|i| if i % 4 == 0 { 0.0 } else { 0.5 + (i % 3) as f64 }).collect();
            let mut model = CountModel::new(3, 2, prior.clone(), vec![0.0; 18].into());
            let mut expected = prior.clone();
            for &(s, a, y) in &observations {
                model.observe(s, a, y);
                expected[(s * 2 + a) * 3 + y] += 1.0;
            }
            prop_assert_eq!(model.counts(), &expected[..]);
            for row in 0..6 {
                let p = &model.transitions()[row * 3..row * 3 + 3];
                prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                for y in 0..3 {
                    let n = expected[row * 3 + y];
                    prop_assert_eq!(p[y] == 0.0, n == 0.0);
                    prop_assert!((p[y] - n / model.row_totals()[row]).abs() < 1e-15);
                }
            }
        }
    }
}
