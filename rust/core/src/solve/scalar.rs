//! The row-at-a-time sweeps of both value-iteration routines of [`crate::solve`]: the reference
//! every path, the scalar path's two-lane kernel (`pairs.rs`) included, is checked against bit for
//! bit in the tests. They were the scalar path until the two-lane kernel replaced them; kept for
//! the tests only, so that no path is checked against code of its own shape.
//!
//! A model is packed for fast sweeps: each (s, a) row's support as `width` (next state,
//! probability, reward) triples, padded with probability 0 on state 0 to the widest row so that
//! every row has the same shape and the inner loop has a length known at compile time for the
//! usual widths. A backup is the original's `sum_y P (R + gamma V(y))`, summed over the support in
//! increasing `y`, starting from the first term (the vector paths do the same; only the sign of an
//! exact zero could differ from a sum started at 0.0), with padding adding exact zeros.
//!
//! What the profile of these loops showed (valgrind, GC and Grid): the sweeps are nearly all of
//! an e-Greedy, Soft-max or BEB decision, at 41 to 47 instructions per row when `gamma V(y)` was
//! recomputed in every term, V was a separate pass of maxima over the previous Q, each term's
//! `V(y)` was bounds-checked, and value iteration tracked the greedy action in every sweep. Here
//! `gamma V` is formed once per state as the sweep finishes the state's actions (the same product,
//! so the same bits), the maxima are taken in the same pass, the next states are checked once
//! when packed, and the greedy action is read from the last sweep's backups only.

use crate::model::tables::TabularView;

/// Each row's support entries, padded to the widest row.
#[derive(Clone, Debug)]
struct Tables {
    /// Support slots per row (the widest row's).
    width: usize,
    /// `next[row * width + j]`, and the same for `prob` and `reward`: entry `j` of row `row`.
    next: Vec<u32>,
    prob: Vec<f64>,
    reward: Vec<f64>,
}

impl Tables {
    /// The tables' start pointers, taken once per sweep: read through references, the compiler
    /// reloaded them for every row (the sweep's stores might have aliased them).
    fn pointers(&self) -> RowPointers {
        RowPointers {
            width: self.width,
            next: self.next.as_ptr(),
            prob: self.prob.as_ptr(),
            reward: self.reward.as_ptr(),
        }
    }
}

/// [`Tables`] as raw pointers, for the sweeps.
#[derive(Clone, Copy)]
struct RowPointers {
    width: usize,
    next: *const u32,
    prob: *const f64,
    reward: *const f64,
}

impl RowPointers {
    /// The backup `sum_j p_j (r_j + gamma V(y_j))` of the row whose entries start at `at`, with
    /// `W` entries (`W = 0`: `self.width`), `scaled` holding gamma V.
    ///
    /// # Safety
    /// `at + width` is at most the tables' length, and every packed next state is below the
    /// length of `scaled` (checked by [`ScalarRows::pack`]).
    #[inline(always)]
    unsafe fn backup<const W: usize>(self, at: usize, scaled: *const f64) -> f64 {
        let n = if W == 0 { self.width } else { W };
        // SAFETY: the caller's bounds.
        let term =
            |i: usize| unsafe { *self.prob.add(i) * (*self.reward.add(i) + *scaled.add(*self.next.add(i) as usize)) };
        // Starting from the first term rather than 0.0 gives the same sum (only the sign of an
        // exact zero could differ) and a dependency chain one addition shorter.
        let mut value = term(at);
        for j in 1..n {
            value += term(at + j);
        }
        value
    }
}

/// A model packed for the scalar sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct ScalarRows {
    n_states: usize,
    n_actions: usize,
    tables: Tables,
    /// Q (or the backups of value iteration) of this sweep and of the previous one, row-major.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// `gamma V` of the previous sweep (read by this one) and of this sweep.
    scaled: Vec<f64>,
    scaled_next: Vec<f64>,
}

impl ScalarRows {
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        let rows = n_states * n_actions;
        Self {
            n_states,
            n_actions,
            tables: Tables {
                width: 0,
                next: Vec::with_capacity(rows * n_states),
                prob: Vec::with_capacity(rows * n_states),
                reward: Vec::with_capacity(rows * n_states),
            },
            current: vec![0.0; rows],
            previous: vec![0.0; rows],
            scaled: vec![0.0; n_states],
            scaled_next: vec![0.0; n_states],
        }
    }

    /// Packs `model`; with `row_bonus`, the rewards of row (s, a) are `R + bonus[s * A + a]`, the
    /// modified rewards `R'` BEB uses. Never allocates after the first solve.
    pub(crate) fn pack(&mut self, model: TabularView<'_>, row_bonus: Option<&[f64]>) {
        let (ns, na) = (self.n_states, self.n_actions);
        assert_eq!((model.n_states, model.n_actions), (ns, na));
        let rows = ns * na;
        let t = &mut self.tables;
        t.width = (0..rows).map(|row| model.support.row(row).len()).max().unwrap_or(0).max(1);
        t.next.clear();
        t.prob.clear();
        t.reward.clear();
        for row in 0..rows {
            let base = row * ns;
            let support = model.support.row(row);
            for &y in support {
                // The sweeps read gamma V(y) unchecked: this is their bound.
                assert!((y as usize) < ns, "next state {y} out of range");
                let i = base + y as usize;
                t.next.push(y);
                t.prob.push(model.transitions[i]);
                t.reward.push(match row_bonus {
                    Some(bonus) => model.rewards[i] + bonus[row],
                    None => model.rewards[i],
                });
            }
            for _ in support.len()..t.width {
                // Padding: probability 0 on state 0 adds exactly 0 to any finite backup.
                t.next.push(0);
                t.prob.push(0.0);
                t.reward.push(0.0);
            }
        }
    }

    /// Asserts the sizes the sweeps' unchecked reads rely on.
    fn check_sizes(&self) {
        let (rows, t) = (self.n_states * self.n_actions, &self.tables);
        let size = rows * t.width;
        assert!(t.width >= 1 && t.next.len() == size && t.prob.len() == size && t.reward.len() == size);
        assert!(self.scaled.len() == self.n_states && self.scaled_next.len() == self.n_states);
        assert!(self.current.len() == rows && self.previous.len() == rows);
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        match self.tables.width {
            1 => self.q_sweeps::<1>(gamma, max_sweeps, accuracy, q),
            2 => self.q_sweeps::<2>(gamma, max_sweeps, accuracy, q),
            3 => self.q_sweeps::<3>(gamma, max_sweeps, accuracy, q),
            4 => self.q_sweeps::<4>(gamma, max_sweeps, accuracy, q),
            _ => self.q_sweeps::<0>(gamma, max_sweeps, accuracy, q),
        }
    }

    fn q_sweeps<const W: usize>(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        self.check_sizes();
        // Q = 0 before the first sweep, so gamma V = 0.
        self.current.fill(0.0);
        self.scaled.fill(0.0);
        let sweeps = super::q_iteration_sweeps(max_sweeps, || {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            let moved = self.q_sweep::<W>(gamma, accuracy);
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            moved
        });
        q.copy_from_slice(&self.current);
        sweeps
    }

    /// One Q-iteration sweep for rows of `W` entries (`W = 0`: any width): backs up every row
    /// against `scaled` (gamma V of the previous sweep) into `current`, writes gamma V of this
    /// sweep into `scaled_next`, and says whether an entry moved by more than `accuracy` from
    /// `previous`. Plain index loops over raw pointers: with iterator adaptors the compiler kept
    /// the loop state on the stack, about 40 instructions per state.
    #[inline(always)]
    fn q_sweep<const W: usize>(&mut self, gamma: f64, accuracy: f64) -> bool {
        let (ns, na, w, t) = (self.n_states, self.n_actions, self.tables.width, self.tables.pointers());
        let scaled = self.scaled.as_ptr();
        let (new, old, scaled_next) =
            (self.current.as_mut_ptr(), self.previous.as_ptr(), self.scaled_next.as_mut_ptr());
        let mut moved = false;
        for s in 0..ns {
            // V(s) = max_a Q(s, a), the first maximum (strict `>`), as the original's
            // `max_v pQ[y, v]`; action 0 beats -inf (backups are finite).
            let mut best = f64::NEG_INFINITY;
            for a in 0..na {
                let row = s * na + a;
                // SAFETY: row < ns * na, the length of current and previous, and (row + 1) * w is
                // at most the tables' length (check_sizes); pack checked the next states against
                // n_states = scaled.len().
                let value = unsafe {
                    let value = t.backup::<W>(row * w, scaled);
                    moved |= (value - *old.add(row)).abs() > accuracy;
                    *new.add(row) = value;
                    value
                };
                if value > best {
                    best = value;
                }
            }
            // SAFETY: s < ns, the length of scaled_next (check_sizes).
            unsafe { *scaled_next.add(s) = gamma * best };
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
        match self.tables.width {
            1 => self.vi_sweeps::<1>(gamma, epsilon, max_sweeps, values, policy),
            2 => self.vi_sweeps::<2>(gamma, epsilon, max_sweeps, values, policy),
            3 => self.vi_sweeps::<3>(gamma, epsilon, max_sweeps, values, policy),
            4 => self.vi_sweeps::<4>(gamma, epsilon, max_sweeps, values, policy),
            _ => self.vi_sweeps::<0>(gamma, epsilon, max_sweeps, values, policy),
        }
    }

    fn vi_sweeps<const W: usize>(
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
            let change = self.vi_sweep::<W>(gamma, values);
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

    /// One value-iteration sweep for rows of `W` entries (`W = 0`: any width): every row's backup
    /// against `scaled` into `current`, V = max_a into `values` and gamma V into `scaled_next`;
    /// returns the squared change of V, summed over states in increasing order as the original
    /// does.
    #[inline(always)]
    fn vi_sweep<const W: usize>(&mut self, gamma: f64, values: &mut [f64]) -> f64 {
        let (ns, na, w, t) = (self.n_states, self.n_actions, self.tables.width, self.tables.pointers());
        let scaled = self.scaled.as_ptr();
        let (new, scaled_next) = (self.current.as_mut_ptr(), self.scaled_next.as_mut_ptr());
        assert!(values.len() == ns);
        let mut change = 0.0;
        for s in 0..ns {
            let mut best = f64::NEG_INFINITY;
            for a in 0..na {
                let row = s * na + a;
                // SAFETY: as in q_sweep.
                let value = unsafe {
                    let value = t.backup::<W>(row * w, scaled);
                    *new.add(row) = value;
                    value
                };
                if value > best {
                    best = value;
                }
            }
            let delta = best - values[s];
            change += delta * delta;
            values[s] = best;
            // SAFETY: s < ns, the length of scaled_next (check_sizes).
            unsafe { *scaled_next.add(s) = gamma * best };
        }
        change
    }
}
