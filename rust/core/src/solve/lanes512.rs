//! AVX-512 sweeps for models of up to 32 states: both value-iteration routines of
//! [`crate::solve`], vectorised across states, bit-identical to the row-by-row loops.
//!
//! Why: re-solving a small model after every transition is bound by the latency of the chain
//! from one sweep to the next (V of sweep k feeds every backup of sweep k + 1), not by the number
//! of operations. Here the whole chain stays in registers: V (times gamma) lives in one to four
//! 8-lane registers, each backup term fetches `gamma V(y)` with a register permute (3 cycles)
//! instead of a load or gather, and the maximum over actions is taken lane by lane.
//!
//! Layout, "lane-major": for action `a`, chunk `c` of eight states and support slot `j`, lane `l`
//! holds the `j`-th support entry (next state, probability, reward) of row `(8c + l, a)`. Each lane
//! computes the original's `sum_y P (R + gamma V(y))` over its support in increasing `y`, with the
//! same IEEE operations in the same order (Rust never fuses a multiply and an add), so the values
//! are bit-identical to [`crate::solve`]'s scalar loops. Slots past a row's support and lanes past
//! the last state hold probability 0 and reward 0 on state 0, which add an exact 0.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use crate::model::tables::TabularView;

/// The largest state count served (four 8-lane registers of values).
pub(crate) const MAX_STATES: usize = 32;

/// Whether this CPU runs the AVX-512 sweeps (cached by std after the first call).
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// A model packed for the AVX-512 sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct Lanes512 {
    n_states: usize,
    n_actions: usize,
    /// Registers of values: 1, 2 or 4 (8, 16 or 32 lanes).
    registers: usize,
    /// Support slots per row (the widest row's).
    width: usize,
    /// `next[((a * registers + c) * width + j) * 8 + l]`, and the same for `prob` and `reward`.
    next: Vec<i64>,
    prob: Vec<f64>,
    reward: Vec<f64>,
    /// Q (or the backups of value iteration) of this sweep and of the previous one, lane-major:
    /// `[(a * registers + c) * 8 + l]`.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// Guez value iteration: the greedy value and action (as f64, exact) per lane.
    best: Vec<f64>,
    best_action: Vec<f64>,
}

impl Lanes512 {
    /// Buffers for models of `n_states <= MAX_STATES` states.
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        assert!(n_states <= MAX_STATES && n_states > 0 && n_actions > 0);
        let registers = match n_states {
            0..=8 => 1,
            9..=16 => 2,
            _ => 4,
        };
        let lanes = 8 * registers;
        // Room for rows as wide as the state space, so that packing never allocates.
        let table = n_actions * registers * n_states * 8;
        Self {
            n_states,
            n_actions,
            registers,
            width: 0,
            next: Vec::with_capacity(table),
            prob: Vec::with_capacity(table),
            reward: Vec::with_capacity(table),
            current: vec![0.0; n_actions * lanes],
            previous: vec![0.0; n_actions * lanes],
            best: vec![0.0; lanes],
            best_action: vec![0.0; lanes],
        }
    }

    /// Packs `model`; with `row_bonus`, the rewards of row (s, a) are `R + bonus[s * A + a]` (the
    /// modified rewards of BEB). Allocates only when a model needs more room than the last one.
    pub(crate) fn pack(&mut self, model: TabularView<'_>, row_bonus: Option<&[f64]>) {
        let (ns, na, nv) = (self.n_states, self.n_actions, self.registers);
        assert_eq!((model.n_states, model.n_actions), (ns, na));
        self.width = (0..ns * na).map(|row| model.support.row(row).len()).max().unwrap_or(0).max(1);
        let size = na * nv * self.width * 8;
        self.next.clear();
        self.next.resize(size, 0);
        self.prob.clear();
        self.prob.resize(size, 0.0);
        self.reward.clear();
        self.reward.resize(size, 0.0);
        for s in 0..ns {
            let (c, l) = (s / 8, s % 8);
            for a in 0..na {
                let row = s * na + a;
                for (j, &y) in model.support.row(row).iter().enumerate() {
                    let at = ((a * nv + c) * self.width + j) * 8 + l;
                    let i = row * ns + y as usize;
                    self.next[at] = i64::from(y);
                    self.prob[at] = model.transitions[i];
                    self.reward[at] = match row_bonus {
                        Some(bonus) => model.rewards[i] + bonus[row],
                        None => model.rewards[i],
                    };
                }
            }
        }
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        assert!(available());
        // SAFETY: the CPU has AVX-512F (asserted).
        let sweeps = unsafe {
            match self.registers {
                1 => self.q_sweeps::<1>(gamma, max_sweeps, accuracy),
                2 => self.q_sweeps::<2>(gamma, max_sweeps, accuracy),
                _ => self.q_sweeps::<4>(gamma, max_sweeps, accuracy),
            }
        };
        let lanes = 8 * self.registers;
        for (s, q_row) in q.chunks_exact_mut(self.n_actions).enumerate() {
            for (a, value) in q_row.iter_mut().enumerate() {
                *value = self.current[a * lanes + s];
            }
        }
        sweeps
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
        assert!(available());
        // SAFETY: the CPU has AVX-512F (asserted).
        let sweeps = unsafe {
            match self.registers {
                1 => self.vi_sweeps::<1>(gamma, epsilon, max_sweeps, values),
                2 => self.vi_sweeps::<2>(gamma, epsilon, max_sweeps, values),
                _ => self.vi_sweeps::<4>(gamma, epsilon, max_sweeps, values),
            }
        };
        for (p, &a) in policy.iter_mut().zip(&self.best_action[..self.n_states]) {
            *p = a as usize;
        }
        sweeps
    }

    /// Asserts the buffer sizes the sweeps' unchecked loads and stores rely on.
    fn check_sizes(&self, nv: usize) {
        let lanes = 8 * nv;
        let table = self.n_actions * nv * self.width * 8;
        assert!(nv == self.registers && self.width >= 1);
        assert!(self.next.len() == table && self.prob.len() == table && self.reward.len() == table);
        assert!(self.current.len() == self.n_actions * lanes && self.previous.len() == self.n_actions * lanes);
        assert!(self.best.len() == lanes && self.best_action.len() == lanes);
    }

    /// One sweep of backups against `scaled` (gamma V per lane), action by action: calls
    /// `action_done(a, c, backups)` for each action `a` and chunk `c` in increasing order.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, and `check_sizes(NV)` must hold.
    #[inline(always)]
    unsafe fn sweep<const NV: usize>(
        &self,
        scaled: &[__m512d; NV],
        mut action_done: impl FnMut(usize, usize, __m512d),
    ) {
        let w = self.width;
        let (next, prob, reward) = (self.next.as_ptr(), self.prob.as_ptr(), self.reward.as_ptr());
        for a in 0..self.n_actions {
            for c in 0..NV {
                let mut at = (a * NV + c) * w * 8;
                // SAFETY: at + 8 <= ((a * NV + c + 1) * w) * 8 <= the table length (check_sizes).
                let mut acc = unsafe { term(scaled, next.add(at), prob.add(at), reward.add(at)) };
                for _ in 1..w {
                    at += 8;
                    // SAFETY: as above.
                    acc = _mm512_add_pd(acc, unsafe { term(scaled, next.add(at), prob.add(at), reward.add(at)) });
                }
                action_done(a, c, acc);
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    fn q_sweeps<const NV: usize>(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64) -> usize {
        self.check_sizes(NV);
        let gamma = _mm512_set1_pd(gamma);
        let accuracy = _mm512_set1_pd(accuracy);
        // Q = 0 before the first sweep, so gamma V = 0.
        let mut scaled = [_mm512_setzero_pd(); NV];
        self.current.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            let mut top = [_mm512_setzero_pd(); NV];
            let mut moved: __mmask8 = 0;
            let (out, old) = (self.current.as_mut_ptr(), self.previous.as_ptr());
            // SAFETY: AVX-512F is enabled here, and check_sizes(NV) passed; every index
            // (a * NV + c) * 8 + 8 <= n_actions * lanes, the length of current and previous.
            unsafe {
                self.sweep::<NV>(&scaled, |a, c, q| {
                    let at = (a * NV + c) * 8;
                    let change = _mm512_abs_pd(_mm512_sub_pd(q, _mm512_loadu_pd(old.add(at))));
                    moved |= _mm512_cmp_pd_mask::<_CMP_GT_OQ>(change, accuracy);
                    _mm512_storeu_pd(out.add(at), q);
                    // V(y) = max_b Q(y, b); `max_pd(x, v)` is `x > v ? x : v`: the first maximum
                    // wins, as the original's `max_v pQ[y, v]`.
                    top[c] = if a == 0 { q } else { _mm512_max_pd(q, top[c]) };
                });
            }
            for c in 0..NV {
                scaled[c] = _mm512_mul_pd(gamma, top[c]);
            }
            let go_on = sweeps < max_sweeps && moved != 0;
            sweeps += 1;
            if !go_on {
                return sweeps;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    fn vi_sweeps<const NV: usize>(&mut self, gamma: f64, epsilon: f64, max_sweeps: usize, values: &mut [f64]) -> usize {
        self.check_sizes(NV);
        let ns = self.n_states;
        assert!(values.len() == ns);
        let threshold = epsilon * epsilon;
        let gamma = _mm512_set1_pd(gamma);
        // V = 0 before the first sweep, so gamma V = 0.
        let mut values_old = [_mm512_setzero_pd(); NV];
        let mut scaled = [_mm512_setzero_pd(); NV];
        let mut sweeps = 0;
        loop {
            // Jacobi: every row backs up V_old (held in `scaled`) before any state is updated.
            let mut top = [_mm512_set1_pd(f64::NEG_INFINITY); NV];
            let mut arg = [_mm512_setzero_pd(); NV];
            // SAFETY: AVX-512F is enabled here, and check_sizes(NV) passed.
            unsafe {
                self.sweep::<NV>(&scaled, |a, c, q| {
                    // The greedy action: strict `>` over increasing actions keeps the lowest. The
                    // value takes `max_pd(q, top)` (`q > top ? q : top`, the same choice), which
                    // keeps the compare-and-blend off the sweep-to-sweep dependency chain.
                    // Action 0 beats the initial -inf (backups are finite): it starts the chain.
                    if a == 0 {
                        top[c] = q;
                        return;
                    }
                    let better = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(q, top[c]);
                    arg[c] = _mm512_mask_blend_pd(better, arg[c], _mm512_set1_pd(a as f64));
                    top[c] = _mm512_max_pd(q, top[c]);
                });
            }
            // The squared change, summed over states in increasing order as the original does
            // (the squares are the same products computed lane by lane).
            let mut squares = [0.0f64; 32];
            for c in 0..NV {
                let delta = _mm512_sub_pd(top[c], values_old[c]);
                // SAFETY: (c + 1) * 8 <= 8 * NV <= 32, the length of `squares`.
                unsafe { _mm512_storeu_pd(squares.as_mut_ptr().add(c * 8), _mm512_mul_pd(delta, delta)) };
                scaled[c] = _mm512_mul_pd(gamma, top[c]);
                values_old[c] = top[c];
            }
            let mut change = 0.0;
            for &square in &squares[..ns] {
                change += square;
            }
            sweeps += 1;
            if change <= threshold || sweeps >= max_sweeps {
                for c in 0..NV {
                    // SAFETY: (c + 1) * 8 <= 8 * NV, the length of best and best_action (check_sizes).
                    unsafe {
                        _mm512_storeu_pd(self.best.as_mut_ptr().add(c * 8), top[c]);
                        _mm512_storeu_pd(self.best_action.as_mut_ptr().add(c * 8), arg[c]);
                    }
                }
                values.copy_from_slice(&self.best[..ns]);
                return sweeps;
            }
        }
    }
}

/// One backup term per lane, `P (R + gamma V(y))`, with `gamma V(y)` fetched from the value
/// registers by a permute on the packed next states.
///
/// # Safety
/// The CPU must have AVX-512F; the three pointers must each be valid for 8 reads, and the next
/// states below `8 * NV`.
#[inline(always)]
unsafe fn term<const NV: usize>(
    scaled: &[__m512d; NV],
    next: *const i64,
    prob: *const f64,
    reward: *const f64,
) -> __m512d {
    // SAFETY: the caller guarantees 8 readable entries behind each pointer and AVX-512F.
    unsafe {
        let y = _mm512_loadu_si512(next.cast());
        let gv = match NV {
            1 => _mm512_permutexvar_pd(y, scaled[0]),
            2 => _mm512_permutex2var_pd(scaled[0], y, scaled[1]),
            _ => {
                let low = _mm512_permutex2var_pd(scaled[0], y, scaled[1]);
                let high = _mm512_permutex2var_pd(scaled[2], y, scaled[3]);
                _mm512_mask_blend_pd(_mm512_cmpge_epi64_mask(y, _mm512_set1_epi64(16)), low, high)
            }
        };
        _mm512_mul_pd(_mm512_loadu_pd(prob), _mm512_add_pd(_mm512_loadu_pd(reward), gv))
    }
}
