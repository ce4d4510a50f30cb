//! AVX2 sweeps for models of more than [`super::lanes256::MAX_STATES`] states (Grid's 25): BBRL
//! Q-iteration of [`crate::solve`], four states per register, bit-identical to the scalar loops of
//! [`crate::solve::scalar`]. Models of up to 16 states take `lanes256.rs`, which keeps gamma V in
//! registers. Guez value iteration written the same way was 4 to 7% slower than the scalar loops
//! on Grid (Intel Xeon with AVX-512, forced AVX2; benches/README.md) and was not kept: it takes
//! the scalar loops above 16 states.
//!
//! Layout, "lane-major" as in the other vector paths: for chunk `c` of four states, action `a`
//! and support slot `j`, lane `l` holds the `j`-th support entry of row `(4c + l, a)`, padded as
//! the scalar loops pad (probability 0 and reward 0 on state 0, to the widest row). A term fetches
//! `gamma V(y)` of its four lanes with four scalar loads from the sweep's `gamma V` and two
//! inserts, not with `vgatherdpd` (slow on the AVX2-only CPUs this path is for) nor with register
//! permutes (past four registers they outgrow AVX2's sixteen). Each lane computes the original's
//! `sum_y P (R + gamma V(y))` over its support in increasing `y` with the same IEEE operations in
//! the same order (no fused multiply-add), and the maxima by compare and select
//! (`q > top ? q : top`, as the scalar loops).
//!
//! Chunks run outermost, actions inside, so a chunk's maximum over actions and its greedy action
//! stay in registers; the four states of a chunk are consecutive, so `gamma V` is in state order.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use crate::model::tables::TabularView;

use super::lanes256::available;

/// Lanes per register.
const LANES: usize = 4;

/// A model packed for the wide AVX2 sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct Wide256 {
    n_states: usize,
    n_actions: usize,
    /// Chunks of four states, `ceil(n_states / 4)`.
    chunks: usize,
    /// Support slots per row (the widest row's).
    width: usize,
    /// `next[((c * n_actions + a) * width + j) * 4 + l]`, and the same for `prob` and `reward`.
    next: Vec<u32>,
    prob: Vec<f64>,
    reward: Vec<f64>,
    /// Q of this sweep and of the previous one:
    /// `[(c * n_actions + a) * 4 + l]`.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// `gamma V` in state order (padded to whole chunks), of the previous sweep and of this one.
    scaled: Vec<f64>,
    scaled_next: Vec<f64>,
}

impl Wide256 {
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        assert!(n_states > 0 && n_actions > 0);
        let chunks = n_states.div_ceil(LANES);
        let lanes = LANES * chunks;
        // Room for rows as wide as the state space, so that packing never allocates.
        let table = chunks * n_actions * n_states * LANES;
        Self {
            n_states,
            n_actions,
            chunks,
            width: 0,
            next: Vec::with_capacity(table),
            prob: Vec::with_capacity(table),
            reward: Vec::with_capacity(table),
            current: vec![0.0; n_actions * lanes],
            previous: vec![0.0; n_actions * lanes],
            scaled: vec![0.0; lanes],
            scaled_next: vec![0.0; lanes],
        }
    }

    /// Packs `model`; with `row_bonus`, the rewards of row (s, a) are `R + bonus[s * A + a]` (the
    /// modified rewards of BEB). Allocates only when a model needs more room than the last one.
    pub(crate) fn pack(&mut self, model: TabularView<'_>, row_bonus: Option<&[f64]>) {
        let (ns, na) = (self.n_states, self.n_actions);
        assert_eq!((model.n_states, model.n_actions), (ns, na));
        self.width = (0..ns * na).map(|row| model.support.row(row).len()).max().unwrap_or(0).max(1);
        let size = self.chunks * na * self.width * LANES;
        self.next.clear();
        self.next.resize(size, 0);
        self.prob.clear();
        self.prob.resize(size, 0.0);
        self.reward.clear();
        self.reward.resize(size, 0.0);
        for s in 0..ns {
            let (c, l) = (s / LANES, s % LANES);
            for a in 0..na {
                let row = s * na + a;
                for (j, &y) in model.support.row(row).iter().enumerate() {
                    // The sweeps read gamma V(y) unchecked: this is their bound.
                    assert!((y as usize) < ns, "next state {y} out of range");
                    let at = ((c * na + a) * self.width + j) * LANES + l;
                    let i = row * ns + y as usize;
                    self.next[at] = y;
                    self.prob[at] = model.transitions[i];
                    self.reward[at] = match row_bonus {
                        Some(bonus) => model.rewards[i] + bonus[row],
                        None => model.rewards[i],
                    };
                }
            }
        }
    }

    /// Asserts the buffer sizes the sweeps' unchecked loads and stores rely on.
    fn check_sizes(&self) {
        let lanes = LANES * self.chunks;
        let table = self.chunks * self.n_actions * self.width * LANES;
        assert!(self.width >= 1 && self.next.len() == table && self.prob.len() == table && self.reward.len() == table);
        assert!(self.current.len() == self.n_actions * lanes && self.previous.len() == self.n_actions * lanes);
        assert!(self.scaled.len() == lanes && self.scaled_next.len() == lanes);
    }

    /// The backups of chunk `c` under action `a` against `scaled`.
    ///
    /// # Safety
    /// `check_sizes` holds, `c < chunks`, `a < n_actions`, and every packed next state is below
    /// `n_states` (checked by `pack`), hence within `scaled`. The CPU must have AVX2.
    #[inline(always)]
    unsafe fn backups(&self, c: usize, a: usize, scaled: *const f64) -> __m256d {
        let w = self.width;
        let (next, prob, reward) = (self.next.as_ptr(), self.prob.as_ptr(), self.reward.as_ptr());
        let term = |at: usize| {
            // SAFETY: at + 4 <= ((c * na + a + 1) * w) * 4 <= the table length, and the next
            // states index `scaled` (the caller's bounds); AVX2 (the caller's).
            unsafe {
                let y = next.add(at);
                let fetch = |k: usize| scaled.add(*y.add(k) as usize);
                let low = _mm_loadh_pd(_mm_load_sd(fetch(0)), fetch(1));
                let high = _mm_loadh_pd(_mm_load_sd(fetch(2)), fetch(3));
                let gv = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(low), high);
                _mm256_mul_pd(_mm256_loadu_pd(prob.add(at)), _mm256_add_pd(_mm256_loadu_pd(reward.add(at)), gv))
            }
        };
        let mut at = (c * self.n_actions + a) * w * LANES;
        // Starting from the first term, as the scalar loops do.
        let mut acc = term(at);
        for _ in 1..w {
            at += LANES;
            acc = _mm256_add_pd(acc, term(at));
        }
        acc
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        assert!(available());
        // SAFETY: the CPU has AVX2 (asserted).
        unsafe { self.q_sweeps(gamma, max_sweeps, accuracy, q) }
    }

    #[target_feature(enable = "avx2")]
    fn q_sweeps(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        self.check_sizes();
        let na = self.n_actions;
        // Q = 0 before the first sweep, so gamma V = 0.
        self.current.fill(0.0);
        self.scaled.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            // SAFETY: AVX2 is enabled here; check_sizes passed; every index
            // (c * na + a) * 4 + 4 <= chunks * na * 4, the length of current and previous, and
            // c * 4 + 4 <= the length of scaled_next.
            let moved = unsafe {
                let (gamma, accuracy) = (_mm256_set1_pd(gamma), _mm256_set1_pd(accuracy));
                // |x| clears the sign bit, as f64::abs does.
                let sign = _mm256_set1_pd(-0.0);
                let (out, old) = (self.current.as_mut_ptr(), self.previous.as_ptr());
                let (scaled, scaled_next) = (self.scaled.as_ptr(), self.scaled_next.as_mut_ptr());
                let mut moved = 0;
                for c in 0..self.chunks {
                    let mut top = _mm256_setzero_pd();
                    for a in 0..na {
                        let at = (c * na + a) * LANES;
                        let value = self.backups(c, a, scaled);
                        let change = _mm256_andnot_pd(sign, _mm256_sub_pd(value, _mm256_loadu_pd(old.add(at))));
                        moved |= _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(change, accuracy));
                        _mm256_storeu_pd(out.add(at), value);
                        // V(y) = max_b Q(y, b), the first maximum: `max_pd(q, top)` is
                        // `q > top ? q : top`.
                        top = if a == 0 { value } else { _mm256_max_pd(value, top) };
                    }
                    _mm256_storeu_pd(scaled_next.add(c * LANES), _mm256_mul_pd(gamma, top));
                }
                moved != 0
            };
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            let go_on = sweeps < max_sweeps && moved;
            sweeps += 1;
            if !go_on {
                for (s, q_row) in q.chunks_exact_mut(na).enumerate() {
                    let (c, l) = (s / LANES, s % LANES);
                    for (a, value) in q_row.iter_mut().enumerate() {
                        *value = self.current[(c * na + a) * LANES + l];
                    }
                }
                return sweeps;
            }
        }
    }
}
