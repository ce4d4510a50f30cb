//! Flat Dirichlet-multinomial (FDM) distributions over MDPs (SPEC 1.2).

use std::sync::Arc;

use crate::error::Result;
use crate::invalid;
use crate::model::dirichlet;
use crate::model::mdp::{check_start_law, Mdp};
use crate::model::sparse::RowSupports;
use crate::model::tables::check_tables;
use crate::rng::{purpose, stream, Rng};

/// A distribution over MDPs with `S` states and `A` actions: one independent Dirichlet with
/// concentration `theta[s, a, ·]` per state-action pair; rewards `R[s, a, s']` and the initial
/// state (or start law) are fixed. Tables are row-major: `index(s, a, y) = (s * A + a) * S + y`.
#[derive(Clone, Debug)]
pub struct Fdm {
    n_states: usize,
    n_actions: usize,
    theta: Vec<f64>,
    rewards: Arc<[f64]>,
    initial_state: Option<usize>,
    /// A start law that is neither one state nor uniform (a classic problem's, such as Taxi's, as a
    /// distribution); `initial_state` is then `None`. Every drawn MDP starts from it.
    start_law: Option<Arc<[f64]>>,
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
        Ok(Self { n_states, n_actions, theta, rewards: rewards.into(), initial_state, start_law: None, support })
    }

    /// This distribution with every trajectory starting from a state drawn from `law` (one
    /// probability per state, summing to 1) in place of its initial state.
    pub fn with_start_law(mut self, law: Vec<f64>) -> Result<Self> {
        check_start_law(&law, self.n_states)?;
        self.initial_state = None;
        self.start_law = Some(law.into());
        Ok(self)
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
    /// The fixed initial state; `None` for a uniform start or a start law ([`Fdm::start_law`]).
    pub fn initial_state(&self) -> Option<usize> {
        self.initial_state
    }
    /// The start law when it is neither one state nor uniform.
    pub fn start_law(&self) -> Option<&[f64]> {
        self.start_law.as_deref()
    }
    /// The probability of starting in each state, whatever form the start takes.
    pub fn start_probabilities(&self) -> Vec<f64> {
        let s = self.n_states;
        match (self.initial_state, &self.start_law) {
            (Some(x), _) => (0..s).map(|y| if y == x { 1.0 } else { 0.0 }).collect(),
            (None, Some(law)) => law.to_vec(),
            (None, None) => vec![1.0 / s as f64; s],
        }
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
            .with_start_law(self.start_law.clone())
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
    fn a_start_law_is_checked_and_every_drawn_mdp_starts_from_it() {
        let fdm = chain().with_start_law(vec![0.25, 0.75, 0.0]).unwrap();
        assert_eq!(fdm.initial_state(), None);
        assert_eq!(fdm.start_probabilities(), vec![0.25, 0.75, 0.0]);
        let mut rng = stream(1, purpose::KERNEL, 0);
        let mdp = fdm.sample_mdp(&mut rng);
        let mut counts = [0usize; 3];
        for _ in 0..4000 {
            counts[mdp.initial_state(&mut rng)] += 1;
        }
        assert_eq!(counts[2], 0);
        assert!((counts[1] as f64 - 3000.0).abs() < 5.0 * (4000.0f64 * 0.75 * 0.25).sqrt(), "{counts:?}");
        assert!(chain().with_start_law(vec![0.5, 0.6, 0.0]).unwrap_err().to_string().contains("sums to"));
        assert!(chain().with_start_law(vec![1.0]).unwrap_err().to_string().contains("for 3 states"));
        assert_eq!(chain().start_probabilities(), vec![1.0, 0.0, 0.0]);
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
