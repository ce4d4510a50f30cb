//! Scalar sweeps of both value-iteration routines of [`crate::solve`] over rows packed at their
//! own widths (compressed sparse rows), for large models whose rows are of very unequal widths.
//!
//! The other layouts pad every (s, a) row to the widest one, so that their inner loops have one
//! length. That costs little on the paper's problems (rows of 1 to 3 next states), but on Taxi
//! (500 states, 6 actions) the rows that restart a trajectory reach the start law's 300 states
//! while most rows reach 1 to 5: padded, a sweep visited 3000 x 303 slots for about 31,000 support
//! entries, and e-Greedy spent nearly all its time in padding (perf: 88% of the samples in the
//! padded AVX2 sweep of the time). Here a row holds exactly its support.
//!
//! Bit-identical to the padded scalar loops of [`super::scalar`], so any layout may be chosen for
//! any model: a row's backup is the same sum over its support in increasing next state, started
//! from the first term; the padded loops then add padding terms `0 * (0 + gamma V(0))`, each an
//! exact zero, which changes nothing but the sign of a backup that is itself a zero (`-0 + +0 =
//! +0`). One such term added to every row narrower than the widest reproduces that too (adding the
//! same zero again changes nothing), so the values are equal bit for bit, signs of zeros included.

use crate::model::tables::TabularView;

/// Models of more states than this may take the ragged rows: the paper's problems (at most 25
/// states) stay on the padded vector paths, whose register layouts serve them best.
pub(crate) const MIN_STATES: usize = 32;

/// Whether `model` is better swept ragged: more than [`MIN_STATES`] states and rows padded to the
/// widest one would be at least twice its support entries.
pub(crate) fn suits(model: TabularView<'_>) -> bool {
    if model.n_states <= MIN_STATES {
        return false;
    }
    let rows = model.n_states * model.n_actions;
    let (mut entries, mut width) = (0usize, 0usize);
    for row in 0..rows {
        let len = model.support.row(row).len();
        entries += len;
        width = width.max(len);
    }
    rows * width.max(1) >= 2 * entries
}

/// A model packed row by row at each row's width, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct RaggedRows {
    n_states: usize,
    n_actions: usize,
    /// The widest row's support length (at least 1), as the padded layouts pad to.
    width: usize,
    /// Row `row`'s entries are `start[row] .. start[row + 1]` of `next`, `prob` and `reward`.
    start: Vec<usize>,
    next: Vec<u32>,
    prob: Vec<f64>,
    reward: Vec<f64>,
    /// Q (or the backups of value iteration) of this sweep and of the previous one, row-major.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// `gamma V` of the previous sweep (read by this one) and of this sweep.
    scaled: Vec<f64>,
    scaled_next: Vec<f64>,
}

impl RaggedRows {
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        let rows = n_states * n_actions;
        Self {
            n_states,
            n_actions,
            width: 1,
            start: Vec::with_capacity(rows + 1),
            next: Vec::new(),
            prob: Vec::new(),
            reward: Vec::new(),
            current: vec![0.0; rows],
            previous: vec![0.0; rows],
            scaled: vec![0.0; n_states],
            scaled_next: vec![0.0; n_states],
        }
    }

    /// Packs `model`; with `row_bonus`, the rewards of row (s, a) are `R + bonus[s * A + a]` (the
    /// modified rewards of BEB). Allocates only when a model has more entries than the last one.
    pub(crate) fn pack(&mut self, model: TabularView<'_>, row_bonus: Option<&[f64]>) {
        let (ns, na) = (self.n_states, self.n_actions);
        assert_eq!((model.n_states, model.n_actions), (ns, na));
        self.start.clear();
        self.next.clear();
        self.prob.clear();
        self.reward.clear();
        let mut width = 1;
        for row in 0..ns * na {
            self.start.push(self.next.len());
            let base = row * ns;
            let support = model.support.row(row);
            width = width.max(support.len());
            for &y in support {
                // The sweeps read gamma V(y) unchecked: this is their bound.
                assert!((y as usize) < ns, "next state {y} out of range");
                let i = base + y as usize;
                self.next.push(y);
                self.prob.push(model.transitions[i]);
                self.reward.push(match row_bonus {
                    Some(bonus) => model.rewards[i] + bonus[row],
                    None => model.rewards[i],
                });
            }
        }
        self.start.push(self.next.len());
        self.width = width;
    }

    /// Asserts the sizes the sweeps' unchecked reads rely on.
    fn check_sizes(&self) {
        let rows = self.n_states * self.n_actions;
        let entries = self.next.len();
        assert!(self.start.len() == rows + 1 && self.start[rows] == entries);
        assert!(self.start.windows(2).all(|w| w[0] <= w[1]));
        assert!(self.prob.len() == entries && self.reward.len() == entries);
        assert!(self.scaled.len() == self.n_states && self.scaled_next.len() == self.n_states);
        assert!(self.current.len() == rows && self.previous.len() == rows);
    }

    /// The backup `sum_j p_j (r_j + gamma V(y_j))` of `row` against `scaled` (gamma V), plus
    /// `padding` (the padded loops' zero term) when the row is narrower than the widest.
    ///
    /// # Safety
    /// `check_sizes` holds, `row < n_states * n_actions`, and every packed next state is below the
    /// length of `scaled` (checked by `pack`).
    #[inline(always)]
    unsafe fn backup(&self, row: usize, scaled: *const f64, padding: f64) -> f64 {
        // SAFETY: the caller's bounds: start has rows + 1 entries, each at most the tables' length.
        let (from, to) = unsafe { (*self.start.get_unchecked(row), *self.start.get_unchecked(row + 1)) };
        let (next, prob, reward) = (self.next.as_ptr(), self.prob.as_ptr(), self.reward.as_ptr());
        // SAFETY: from <= i < to <= the tables' length; next states index `scaled` (the caller's).
        let term = |i: usize| unsafe { *prob.add(i) * (*reward.add(i) + *scaled.add(*next.add(i) as usize)) };
        if from == to {
            // An empty support (never in a model with rows that sum to 1): the padded loops' sum
            // of padding terms alone.
            return padding;
        }
        let mut value = term(from);
        for i in from + 1..to {
            value += term(i);
        }
        if to - from < self.width {
            value += padding;
        }
        value
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        self.check_sizes();
        // Q = 0 before the first sweep, so gamma V = 0.
        self.current.fill(0.0);
        self.scaled.fill(0.0);
        let sweeps = super::q_iteration_sweeps(max_sweeps, || {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            let moved = self.q_sweep(gamma, accuracy);
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            moved
        });
        q.copy_from_slice(&self.current);
        sweeps
    }

    /// One Q-iteration sweep: backs up every row against `scaled` into `current`, writes gamma V
    /// of this sweep into `scaled_next`, and says whether an entry moved by more than `accuracy`
    /// from `previous`.
    fn q_sweep(&mut self, gamma: f64, accuracy: f64) -> bool {
        let (ns, na) = (self.n_states, self.n_actions);
        let scaled = self.scaled.as_ptr();
        // The padded loops' padding term, `0 * (0 + gamma V(0))`, with this sweep's gamma V.
        let padding = 0.0 * (0.0 + self.scaled[0]);
        let mut moved = false;
        for s in 0..ns {
            // V(s) = max_a Q(s, a), the first maximum (strict `>`), as the padded loops.
            let mut best = f64::NEG_INFINITY;
            for a in 0..na {
                let row = s * na + a;
                // SAFETY: row < ns * na and check_sizes held (q_iteration); pack checked the next
                // states against n_states = scaled.len().
                let value = unsafe { self.backup(row, scaled, padding) };
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

    /// Guez value iteration (see [`crate::solve::guez_value_iteration`]) on the packed model:
    /// writes V and the greedy policy and returns the number of sweeps.
    pub(crate) fn value_iteration(
        &mut self,
        gamma: f64,
        epsilon: f64,
        max_sweeps: usize,
        values: &mut [f64],
        policy: &mut [usize],
    ) -> usize {
        self.check_sizes();
        assert!(values.len() == self.n_states && policy.len() == self.n_states);
        let threshold = epsilon * epsilon;
        // V = 0 before the first sweep, so gamma V = 0.
        values.fill(0.0);
        self.scaled.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every row backs up V_old (held in `scaled`) before any state is updated.
            let change = self.vi_sweep(gamma, values);
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            sweeps += 1;
            if change <= threshold || sweeps >= max_sweeps {
                // The greedy policy of the last sweep: strict `>` over increasing actions keeps
                // the lowest of tied actions.
                for (p, row) in policy.iter_mut().zip(self.current.chunks_exact(self.n_actions)) {
                    let mut best = f64::NEG_INFINITY;
                    for (a, &value) in row.iter().enumerate() {
                        if value > best {
                            best = value;
                            *p = a;
                        }
                    }
                }
                return sweeps;
            }
        }
    }

    /// One value-iteration sweep: every row's backup against `scaled` into `current`, V = max_a
    /// into `values` and gamma V into `scaled_next`; returns the squared change of V, summed over
    /// states in increasing order as the original does.
    fn vi_sweep(&mut self, gamma: f64, values: &mut [f64]) -> f64 {
        let (ns, na) = (self.n_states, self.n_actions);
        let scaled = self.scaled.as_ptr();
        let padding = 0.0 * (0.0 + self.scaled[0]);
        let mut change = 0.0;
        for s in 0..ns {
            let mut best = f64::NEG_INFINITY;
            for a in 0..na {
                let row = s * na + a;
                // SAFETY: as in q_sweep.
                let value = unsafe { self.backup(row, scaled, padding) };
                self.current[row] = value;
                if value > best {
                    best = value;
                }
            }
            let delta = best - values[s];
            change += delta * delta;
            values[s] = best;
            self.scaled_next[s] = gamma * best;
        }
        change
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mdp::Mdp;
    use crate::solve::scalar::ScalarRows;
    use crate::solve::{QIterationWorkspace, SimdPath, ValueIterationWorkspace};
    use proptest::prelude::{prop_assert_eq, TestCaseError};

    /// A random model shaped as Taxi's distribution: most rows reach 1 to 4 states, a few reach
    /// many (a restart to a wide start law), rewards of either sign with exact zeros of both signs
    /// (the signs of zero backups are part of the bits compared).
    fn taxi_like_model(n_states: usize, n_actions: usize, seed: u64) -> Mdp {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut p = vec![0.0; n_states * n_actions * n_states];
        let mut r = vec![0.0; p.len()];
        for row in p.chunks_exact_mut(n_states) {
            let width = if rng.random_range(0..20) == 0 { n_states / 2 } else { rng.random_range(1..=4) };
            for _ in 0..width {
                row[rng.random_range(0..n_states)] += rng.random_range(0.1..1.0);
            }
            let total: f64 = row.iter().sum();
            row.iter_mut().for_each(|x| *x /= total);
        }
        for x in r.iter_mut() {
            *x = match rng.random_range(0..4) {
                0 => 0.0,
                1 => -0.0,
                _ => rng.random_range(-2.0..10.0),
            };
        }
        Mdp::from_parts(n_states, n_actions, p, r.into(), Some(0))
    }

    fn bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    /// The ragged rows against the padded scalar loops on `mdp`: sweeps, values (bit for bit) and
    /// policies of both routines.
    fn assert_ragged_matches_scalar(mdp: &Mdp, gamma: f64, bonus: Option<f64>) -> Result<(), TestCaseError> {
        let (ns, na) = (mdp.n_states(), mdp.n_actions());
        let row_bonus: Option<Vec<f64>> = bonus.map(|b| (0..ns * na).map(|row| b / (2.0 + row as f64)).collect());
        let (mut padded, mut ragged) = (ScalarRows::new(ns, na), RaggedRows::new(ns, na));
        padded.pack(mdp.view(), None);
        ragged.pack(mdp.view(), None);
        let (mut q_padded, mut q_ragged) = (vec![0.0; ns * na], vec![0.0; ns * na]);
        let sweeps = padded.q_iteration(gamma, 250, 1e-2, &mut q_padded);
        prop_assert_eq!(ragged.q_iteration(gamma, 250, 1e-2, &mut q_ragged), sweeps);
        prop_assert_eq!(bits(&q_ragged), bits(&q_padded));

        padded.pack(mdp.view(), row_bonus.as_deref());
        ragged.pack(mdp.view(), row_bonus.as_deref());
        let (mut v_padded, mut pi_padded) = (vec![0.0; ns], vec![0; ns]);
        let (mut v_ragged, mut pi_ragged) = (vec![0.0; ns], vec![0; ns]);
        let sweeps = padded.value_iteration(gamma, 1e-4, 100_000, &mut v_padded, &mut pi_padded);
        prop_assert_eq!(ragged.value_iteration(gamma, 1e-4, 100_000, &mut v_ragged, &mut pi_ragged), sweeps);
        prop_assert_eq!(bits(&v_ragged), bits(&v_padded));
        prop_assert_eq!(pi_ragged, pi_padded);
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Bit for bit the padded scalar loops, on models of unequal row widths and on the dense
        /// random ones (every row as wide as the widest: no padding term).
        #[test]
        fn ragged_rows_are_bit_identical_to_the_padded_loops(
            n_states in 2usize..80, n_actions in 1usize..5, seed in 0u64..u64::MAX,
            gamma in 0.5f64..0.99, bonus in proptest::option::of(0.0f64..3.0),
        ) {
            assert_ragged_matches_scalar(&taxi_like_model(n_states, n_actions, seed), gamma, bonus)?;
        }
    }

    #[test]
    fn a_zero_backup_keeps_the_padded_loops_sign() {
        // Row 0 reaches state 1 alone with reward -0 and V(1) = -0 after the first sweep: its
        // backup is -0 summed alone, +0 once a padding term is added (row 2 is wider).
        let (ns, na) = (3, 1);
        let mut p = vec![0.0; 9];
        p[1] = 1.0; // 0 -> 1
        p[3 + 1] = 1.0; // 1 -> 1
        p[6] = 0.5; // 2 -> 0, 2
        p[8] = 0.5;
        let mut r = vec![0.0; 9];
        r[1] = -0.0;
        r[4] = -0.0;
        let mdp = Mdp::from_parts(ns, na, p, r.into(), Some(0));
        let (mut padded, mut ragged) = (ScalarRows::new(ns, na), RaggedRows::new(ns, na));
        padded.pack(mdp.view(), None);
        ragged.pack(mdp.view(), None);
        let (mut q_padded, mut q_ragged) = (vec![0.0; 3], vec![0.0; 3]);
        padded.q_iteration(0.9, 5, 0.0, &mut q_padded);
        ragged.q_iteration(0.9, 5, 0.0, &mut q_ragged);
        assert_eq!(bits(&q_ragged), bits(&q_padded));
    }

    #[test]
    fn large_models_of_unequal_rows_take_the_ragged_rows_and_others_do_not() {
        for name in ["GC", "GDL", "Grid"] {
            let fdm = crate::problems::distribution(name).unwrap().fdm;
            let mean = crate::model::counts::CountModel::from_prior(&fdm);
            assert!(!suits(mean.view()), "{name}");
            assert!(QIterationWorkspace::new(fdm.n_states(), fdm.n_actions()).ragged.is_none(), "{name}");
        }
        let mdp = taxi_like_model(60, 3, 1);
        assert!(suits(mdp.view()));
        // Through the workspaces, on every path: the bits of the padded scalar loops.
        let mut padded = ScalarRows::new(60, 3);
        padded.pack(mdp.view(), None);
        let mut expected = vec![0.0; 180];
        padded.q_iteration(0.95, 250, 1e-2, &mut expected);
        padded.pack(mdp.view(), Some(&[0.5; 180]));
        let (mut v_expected, mut pi_expected) = (vec![0.0; 60], vec![0; 60]);
        padded.value_iteration(0.95, 1e-4, super::super::GUEZ_VI_MAX_SWEEPS, &mut v_expected, &mut pi_expected);
        for path in SimdPath::ALL {
            let mut ws = QIterationWorkspace::with_path(60, 3, path);
            assert!(ws.ragged.is_some());
            let mut q = vec![0.0; 180];
            ws.solve(mdp.view(), 0.95, 250, 1e-2, &mut q);
            assert_eq!(bits(&q), bits(&expected), "{path}");
            let (mut v, mut pi) = (vec![0.0; 60], vec![0; 60]);
            ValueIterationWorkspace::with_path(60, 3, path).solve(
                mdp.view(),
                Some(&[0.5; 180]),
                0.95,
                1e-4,
                &mut v,
                &mut pi,
            );
            assert_eq!(bits(&v), bits(&v_expected), "{path}");
            assert_eq!(pi, pi_expected, "{path}");
        }
    }
}
