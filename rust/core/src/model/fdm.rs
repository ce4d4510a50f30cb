//! Flat Dirichlet-multinomial (FDM) distributions over MDPs (SPEC 1.2).

use std::sync::Arc;

use crate::error::Result;
use crate::invalid;
use crate::model::dirichlet;
use crate::model::mdp::Mdp;
use crate::model::sparse::RowSupports;
use crate::model::tables::check_tables;
use crate::rng::{purpose, stream, Rng};

/// A distribution over MDPs with `S` states and `A` actions: one independent Dirichlet with
/// concentration `theta[s, a, ·]` per state-action pair; rewards `R[s, a, s']` and the initial
/// state are fixed. Tables are row-major: `index(s, a, y) = (s * A + a) * S + y`.
#[derive(Clone, Debug)]
pub struct Fdm {
    n_states: usize,
    n_actions: usize,
    theta: Vec<f64>,
    rewards: Arc<[f64]>,
    initial_state: Option<usize>,
    support: RowSupports,
}

impl Fdm {
    /// A validated distribution. `initial_state = None` draws a uniform initial state at every reset
    /// (the original's `-1`).
    pub fn new(
        n_states: usize,
        n_actions: usize,
        theta: Vec<f64>,
        rewards: Vec<f64>,
        initial_state: Option<usize>,
    ) -> Result<Self> {
        check_tables(n_states, n_actions, &theta, "theta", &rewards, initial_state)?;
        let support = RowSupports::from_table(n_states, n_actions, &theta);
        Ok(Self { n_states, n_actions, theta, rewards: rewards.into(), initial_state, support })
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    /// Concentrations, row-major (S, A, S).
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }
    /// Rewards R(s, a, s'), row-major (S, A, S).
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }
    /// Shared handle on the rewards (every MDP drawn from this distribution shares them).
    pub fn rewards_arc(&self) -> Arc<[f64]> {
        Arc::clone(&self.rewards)
    }
    pub fn initial_state(&self) -> Option<usize> {
        self.initial_state
    }
    /// The support (theta > 0) of each (s, a) row.
    pub fn support(&self) -> &RowSupports {
        &self.support
    }
    /// The largest reward, `Rmax` of the paper's horizon formula.
    pub fn r_max(&self) -> f64 {
        self.rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    /// Draws one MDP: `P(s, a, ·) ~ Dir(theta(s, a, ·))` for every pair, zeros kept at zero.
    pub fn sample_mdp(&self, rng: &mut Rng) -> Mdp {
        let s = self.n_states;
        let mut transitions = vec![0.0; self.theta.len()];
        for row in 0..s * self.n_actions {
            let range = row * s..(row + 1) * s;
            dirichlet::sample_row(&self.theta[range.clone()], self.support.row(row), &mut transitions[range], rng);
        }
        Mdp::from_parts(s, self.n_actions, transitions, self.rewards_arc(), self.initial_state)
    }

    /// Test MDP `index` of an experiment with `seed`: drawn from stream `(seed, TEST_MDP, index)`.
    pub fn test_mdp(&self, seed: u64, index: u64) -> Mdp {
        self.sample_mdp(&mut stream(seed, purpose::TEST_MDP, index))
    }

    /// One MDP drawn from stream `(seed, KERNEL, 0)` (a free-standing draw from a front end).
    pub fn sample_seeded(&self, seed: u64) -> Mdp {
        self.sample_mdp(&mut stream(seed, purpose::KERNEL, 0))
    }

    /// Checks that `other` can serve as a prior for MDPs of this distribution (same S and A).
    pub fn check_compatible(&self, other: &Fdm, what: &str) -> Result<()> {
        if self.n_states != other.n_states || self.n_actions != other.n_actions {
            return Err(invalid!(
                "{what} has {} states and {} actions but the test distribution has {} states and {} actions",
                other.n_states,
                other.n_actions,
                self.n_states,
                self.n_actions
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn chain() -> Fdm {
        // 3 states, 1 action: 0 -> {0, 1}, 1 -> {1, 2}, 2 -> {2}.
        let theta = vec![1.0, 2.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 3.0];
        let rewards = vec![0.0, 1.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0];
        Fdm::new(3, 1, theta, rewards, Some(0)).unwrap()
    }

    #[test]
    fn sampled_mdps_keep_the_support_and_sum_to_one() {
        let fdm = chain();
        let mut rng = stream(0, 0, 0);
        for _ in 0..100 {
            let mdp = fdm.sample_mdp(&mut rng);
            for row in 0..3 {
                let p = &mdp.transitions()[row * 3..row * 3 + 3];
                assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                for y in 0..3 {
                    assert_eq!(p[y] == 0.0, fdm.theta()[row * 3 + y] == 0.0);
                }
            }
        }
    }

    #[test]
    fn invalid_tables_are_named() {
        let bad = Fdm::new(2, 1, vec![1.0, -1.0, 1.0, 0.0], vec![0.0; 4], Some(0)).unwrap_err();
        assert!(bad.to_string().contains("theta[0, 0, 1]"), "{bad}");
        let zero_row = Fdm::new(2, 1, vec![0.0, 0.0, 1.0, 0.0], vec![0.0; 4], Some(0)).unwrap_err();
        assert!(zero_row.to_string().contains("all zero"), "{zero_row}");
        let start = Fdm::new(2, 1, vec![1.0; 4], vec![0.0; 4], Some(2)).unwrap_err();
        assert!(start.to_string().contains("initial state 2"), "{start}");
        let shape = Fdm::new(2, 1, vec![1.0; 4], vec![0.0; 3], Some(0)).unwrap_err();
        assert!(shape.to_string().contains("rewards has 3"), "{shape}");
        let nan = Fdm::new(2, 1, vec![1.0, f64::NAN, 1.0, 1.0], vec![0.0; 4], None).unwrap_err();
        assert!(nan.to_string().contains("finite"), "{nan}");
    }
}
