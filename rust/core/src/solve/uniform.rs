//! BBRL Q-iteration of a counting model whose counts are one pseudo-count `alpha` on every
//! (s, a, y) plus sparse observed counts: the formula agents' QUniform variable (SPEC 4.9.2,
//! `alpha = 1`) on large models, without ever building its dense table.
//!
//! The mean row of such a model is `P(y) = (alpha + c_y) / (alpha S + n)`, where `c_y` are the
//! observed counts of the row and `n` their sum, so every backup splits into a part shared by
//! all next states and a part over the observed ones only:
//!
//! `sum_y P(y) (R(y) + gamma V(y)) = [alpha (sum_y R(y) + sum_y gamma V(y)) + sum_{c_y > 0} c_y (R(y) + gamma V(y))] / (alpha S + n)`
//!
//! `sum_y R(s, a, y)` is one number per row, computed once (the rewards are known), and
//! `sum_y gamma V(y)` one number per sweep: a sweep costs `O(S A + observed entries)` instead of
//! the dense `O(S^2 A)` (Taxi: about 3,000 + 250 terms instead of 1.5 million). It is the same
//! iteration as [`crate::solve::q_iteration`] (cold start at Q = 0, Jacobi sweeps, V(s) the first
//! maximum over actions, stopped when no entry moved by more than `accuracy` or after
//! `max_sweeps + 1` sweeps), but the sums are grouped differently, so the values differ from the
//! dense sweeps in the last bits (the tests bound the difference) and are not bit-identical.
//! That is why only models of more than [`MIN_STATES`] states take this path: every model of the
//! paper's problems (GC 5, GDL 9, Grid 25 states) and every model the padded vector paths serve
//! in registers keeps the exact dense sweeps, and with them every seeded result.

use std::sync::Arc;

use crate::work::{self, Unit};

/// Models of more states than this take the grouped sweeps; the others the dense ones, bit for
/// bit as before. The same bound as the ragged rows' (the largest model the padded vector paths
/// are built for), so that no model of the paper's problems changes.
pub const MIN_STATES: usize = super::ragged::MIN_STATES;

/// Whether a model of `n_states` states takes the grouped sweeps ([`UniformCountsQ`]).
pub fn suits(n_states: usize) -> bool {
    n_states > MIN_STATES
}

/// An observed (row, next state) with its count.
#[derive(Clone, Copy, Debug)]
struct Entry {
    row: u32,
    next: u32,
    count: f64,
}

/// The counts `alpha + c(s, a, y)` of a counting model (`c` the observed transitions) and the
/// buffers of its Q-iteration. Observed entries are kept in order of first observation, so that
/// the sums (and hence Q) depend only on the transitions observed, in their order.
#[derive(Clone, Debug)]
pub struct UniformCountsQ {
    n_states: usize,
    n_actions: usize,
    alpha: f64,
    rewards: Arc<[f64]>,
    /// `sum_y R(s, a, y)` per row.
    reward_sums: Vec<f64>,
    /// `alpha S + n(s, a)` per row.
    totals: Vec<f64>,
    entries: Vec<Entry>,
    /// The index in `entries` of each (s, a, y), or `u32::MAX` when not observed.
    slots: Vec<u32>,
    /// Per row, `sum c_y (R(y) + gamma V(y))` of the sweep in progress (zero between sweeps).
    observed: Vec<f64>,
    current: Vec<f64>,
    previous: Vec<f64>,
    /// `gamma V` of the previous sweep (read by this one) and of this sweep.
    scaled: Vec<f64>,
    scaled_next: Vec<f64>,
}

impl UniformCountsQ {
    /// Counts `alpha` everywhere (`alpha > 0`), nothing observed; `rewards` is the (S, A, S) table.
    pub fn new(n_states: usize, n_actions: usize, alpha: f64, rewards: Arc<[f64]>) -> Self {
        let rows = n_states * n_actions;
        assert_eq!(rewards.len(), rows * n_states, "rewards must be an (S, A, S) table");
        assert!(alpha > 0.0 && alpha.is_finite(), "the pseudo-count must be positive, got {alpha}");
        assert!(rows * n_states < u32::MAX as usize, "too many (s, a, y) for 32-bit slots");
        let reward_sums = rewards.chunks_exact(n_states.max(1)).map(|row| row.iter().sum()).collect();
        Self {
            n_states,
            n_actions,
            alpha,
            rewards,
            reward_sums,
            totals: vec![alpha * n_states as f64; rows],
            entries: Vec::new(),
            slots: vec![u32::MAX; rows * n_states],
            observed: vec![0.0; rows],
            current: vec![0.0; rows],
            previous: vec![0.0; rows],
            scaled: vec![0.0; n_states],
            scaled_next: vec![0.0; n_states],
        }
    }

    /// Forgets every observation; keeps room for `capacity` observed entries, so that observing
    /// that many distinct transitions allocates nothing (a trajectory of T steps observes at most T).
    pub fn reset(&mut self, capacity: usize) {
        let s = self.n_states;
        for e in &self.entries {
            let row = e.row as usize;
            self.slots[row * s + e.next as usize] = u32::MAX;
            self.totals[row] = self.alpha * s as f64;
        }
        self.entries.clear();
        self.entries.reserve(capacity);
    }

    /// Adds one observed transition `(state, action) -> next_state`.
    pub fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        let (s, a) = (self.n_states, self.n_actions);
        assert!(state < s && action < a && next_state < s, "transition out of range");
        let row = state * a + action;
        let slot = &mut self.slots[row * s + next_state];
        if *slot == u32::MAX {
            *slot = self.entries.len() as u32;
            self.entries.push(Entry { row: row as u32, next: next_state as u32, count: 0.0 });
        }
        self.entries[*slot as usize].count += 1.0;
        self.totals[row] += 1.0;
    }

    /// The count of `(state, action) -> next_state`: `alpha` plus the observations.
    pub fn count(&self, state: usize, action: usize, next_state: usize) -> f64 {
        let slot = self.slots[(state * self.n_actions + action) * self.n_states + next_state];
        self.alpha + if slot == u32::MAX { 0.0 } else { self.entries[slot as usize].count }
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }

    pub fn n_actions(&self) -> usize {
        self.n_actions
    }

    /// BBRL Q-iteration of the mean model (the iteration and stopping rule of
    /// [`crate::solve::q_iteration`]): writes Q row-major into `q` (`S * A` entries) and returns
    /// the number of sweeps. Counted as [`Unit::QRowSweeps`] (rows times sweeps) and
    /// [`Unit::QEntrySweeps`] (the terms a sweep adds: S for `sum_y gamma V(y)`, one per row and
    /// one per observed entry, times sweeps).
    pub fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        let rows = self.n_states * self.n_actions;
        assert_eq!(q.len(), rows);
        // Q = 0 before the first sweep, so gamma V = 0.
        self.current.fill(0.0);
        self.scaled.fill(0.0);
        let sweeps = super::q_iteration_sweeps(max_sweeps, || {
            std::mem::swap(&mut self.current, &mut self.previous);
            let moved = self.sweep(gamma, accuracy);
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            moved
        });
        q.copy_from_slice(&self.current);
        let terms = self.n_states + rows + self.entries.len();
        work::add(Unit::QRowSweeps, (rows * sweeps) as u64);
        work::add(Unit::QEntrySweeps, (terms * sweeps) as u64);
        work::add_solve(terms as u64, self.n_states);
        sweeps
    }

    /// One Jacobi sweep against `scaled` (gamma V of the previous sweep) into `current`, gamma V
    /// of this sweep into `scaled_next`; says whether an entry moved by more than `accuracy`.
    fn sweep(&mut self, gamma: f64, accuracy: f64) -> bool {
        let (ns, na) = (self.n_states, self.n_actions);
        let shared: f64 = self.scaled.iter().sum();
        for e in &self.entries {
            let (row, y) = (e.row as usize, e.next as usize);
            self.observed[row] += e.count * (self.rewards[row * ns + y] + self.scaled[y]);
        }
        let mut moved = false;
        for s in 0..ns {
            // V(s) = max_a Q(s, a), the first maximum (strict `>`), as the dense sweeps.
            let mut best = f64::NEG_INFINITY;
            for a in 0..na {
                let row = s * na + a;
                let value = (self.alpha * (self.reward_sums[row] + shared) + self.observed[row]) / self.totals[row];
                self.observed[row] = 0.0;
                moved |= (value - self.previous[row]).abs() > accuracy;
                self.current[row] = value;
                if value > best {
                    best = value;
                }
            }
            self.scaled_next[s] = gamma * best;
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counts::CountModel;
    use crate::solve::QIterationWorkspace;
    use proptest::prelude::{prop_assert, prop_assert_eq};

    /// Rewards shaped as Taxi's: constant over the next state in most rows, with a few exceptions
    /// per row, of either sign.
    fn taxi_like_rewards(ns: usize, na: usize, seed: u64) -> Arc<[f64]> {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut r = vec![0.0; ns * na * ns];
        for row in r.chunks_exact_mut(ns) {
            row.fill(rng.random_range(-10.0..20.0));
            for _ in 0..rng.random_range(0..3) {
                row[rng.random_range(0..ns)] = rng.random_range(-10.0..20.0);
            }
        }
        r.into()
    }

    proptest::proptest! {
        // Each case solves dense models of up to 64 x 5 x 64 entries: a few dozen cases suffice.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The grouped sweeps against the dense ones on the same counts (alpha everywhere plus
        /// random observations): the same number of sweeps and Q to a relative 1e-12. (Not at
        /// accuracy 0, where the dense sweeps stop at an exact fixed point of their own rounding.)
        #[test]
        fn grouped_sweeps_match_the_dense_ones(
            ns in 33usize..64, na in 1usize..6, seed in 0u64..u64::MAX, n_obs in 0usize..400,
            gamma in 0.5f64..0.99, alpha in proptest::sample::select(vec![1.0, 0.5, 3.0]),
            accuracy in proptest::sample::select(vec![1e-2, 1e-6]), max_sweeps in 0usize..300,
        ) {
            use rand::{Rng as _, SeedableRng as _};
            let rewards = taxi_like_rewards(ns, na, seed);
            let mut grouped = UniformCountsQ::new(ns, na, alpha, Arc::clone(&rewards));
            let mut dense = CountModel::new(ns, na, vec![alpha; ns * na * ns], Arc::clone(&rewards));
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 1);
            for round in 0..2 {
                // The second round checks that a reset forgets everything.
                grouped.reset(n_obs);
                if round == 1 {
                    dense = CountModel::new(ns, na, vec![alpha; ns * na * ns], Arc::clone(&rewards));
                }
                for _ in 0..n_obs {
                    // Few distinct states, so that rows see repeated next states.
                    let (x, u, y) = (rng.random_range(0..ns.min(12)), rng.random_range(0..na), rng.random_range(0..ns));
                    grouped.observe(x, u, y);
                    dense.observe(x, u, y);
                }
                for (i, &c) in dense.counts().iter().enumerate() {
                    prop_assert_eq!(grouped.count(i / (na * ns), (i / ns) % na, i % ns), c);
                }
                let mut q_grouped = vec![0.0; ns * na];
                let mut q_dense = vec![0.0; ns * na];
                let sweeps = grouped.q_iteration(gamma, max_sweeps, accuracy, &mut q_grouped);
                let dense_sweeps = QIterationWorkspace::new(ns, na)
                    .solve(dense.view(), gamma, max_sweeps, accuracy, &mut q_dense);
                prop_assert_eq!(sweeps, dense_sweeps);
                for (g, d) in q_grouped.iter().zip(&q_dense) {
                    prop_assert!((g - d).abs() <= 1e-12 * d.abs().max(1.0), "{} vs {}", g, d);
                }
            }
        }
    }

    #[test]
    fn only_large_models_take_the_grouped_sweeps() {
        // The paper's problems (at most 25 states) and every model of at most 32 states keep the
        // dense, bit-exact sweeps.
        assert!(!suits(5) && !suits(9) && !suits(25) && !suits(32));
        assert!(suits(33) && suits(500));
    }
}
