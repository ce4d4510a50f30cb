//! AVX2 sweeps for models of up to [`MAX_STATES`] (16) states: both value-iteration routines of
//! [`crate::solve`], vectorised across states, bit-identical to the row-by-row loops. The path for
//! x86-64 CPUs that have AVX2 but not AVX-512F (most since 2013); the design is that of
//! [`crate::solve::lanes512`] with 4-lane registers.
//!
//! Why: re-solving a small model after every transition is bound by the latency of the chain from
//! one sweep to the next (V of sweep k feeds every backup of sweep k + 1). As in the AVX-512 path,
//! gamma V lives in registers (one per four states) and each backup term fetches `gamma V(y)`
//! with register permutes instead of loads. AVX2 has no two-register permute of doubles, so a
//! term permutes every value register with `vpermps` (a double is a pair of 32-bit halves; the
//! packed index of a lane holds the pair `2y, 2y + 1`, of which `vpermps` reads the low three
//! bits, i.e. `y mod 4`), then picks the register `y / 4` with a tree of blends whose selectors
//! are the bits of `y` themselves, shifted into the sign bit `vblendvpd` reads. These are pure
//! data movements: the values fetched are the bits of gamma V.
//!
//! Layout, "lane-major" as in the AVX-512 path: for action `a`, chunk `c` of four states and
//! support slot `j`, lane `l` holds the `j`-th support entry of row `(4c + l, a)`. Each lane
//! computes the original's `sum_y P (R + gamma V(y))` over its support in increasing `y`, with the
//! same IEEE operations in the same order (no fused multiply-add: Rust never fuses, and this path
//! does not enable FMA), so the values are bit-identical to the scalar loops. Slots past a row's
//! support and lanes past the last state hold probability 0 and reward 0 on state 0, which add an
//! exact 0.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use crate::model::tables::TabularView;

/// The largest state count served (four 4-lane registers of values: GC and GDL, not Grid).
///
/// Above, a term would permute and blend more registers than AVX2's sixteen can hold, or fetch
/// with a gather: measured 1.2 to 1.3 times faster than the scalar loops on Grid on a Zen 5
/// EPYC, but gathers are several times slower on the AVX2-only CPUs this path is for (Haswell,
/// Zen 2), where the scalar loops would win. Larger models take the scalar loops.
pub(crate) const MAX_STATES: usize = 16;

/// Lanes per register.
const LANES: usize = 4;

/// Whether this CPU runs the AVX2 sweeps (cached by std after the first call).
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// A model packed for the AVX2 sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct Lanes256 {
    n_states: usize,
    n_actions: usize,
    /// Registers of values, `ceil(n_states / 4)`: 1 to 4.
    registers: usize,
    /// Support slots per row (the widest row's).
    width: usize,
    /// `index[((a * registers + c) * width + j) * 4 + l]`: the next state `y` as the 32-bit pair
    /// `(2y, 2y + 1)` (low half first), the permute index of the double `gamma V(y)`. The same
    /// layout for `prob` and `reward`.
    index: Vec<i64>,
    prob: Vec<f64>,
    reward: Vec<f64>,
    /// Q (or the backups of value iteration) of this sweep and of the previous one, lane-major:
    /// `[(a * registers + c) * 4 + l]`.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// Guez value iteration: the greedy value and action (as f64, exact) per lane.
    best: Vec<f64>,
    best_action: Vec<f64>,
}

/// The packed index of next state `y`: the 32-bit halves `2y` (low) and `2y + 1` (high).
fn packed_index(y: u32) -> i64 {
    let low = 2 * i64::from(y);
    low | ((low + 1) << 32)
}

impl Lanes256 {
    /// Buffers for models of `n_states <= MAX_STATES` states.
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        assert!(n_states <= MAX_STATES && n_states > 0 && n_actions > 0);
        let registers = n_states.div_ceil(LANES);
        let lanes = LANES * registers;
        // Room for rows as wide as the state space, so that packing never allocates.
        let table = n_actions * registers * n_states * LANES;
        Self {
            n_states,
            n_actions,
            registers,
            width: 0,
            index: Vec::with_capacity(table),
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
        let size = na * nv * self.width * LANES;
        self.index.clear();
        self.index.resize(size, packed_index(0));
        self.prob.clear();
        self.prob.resize(size, 0.0);
        self.reward.clear();
        self.reward.resize(size, 0.0);
        for s in 0..ns {
            let (c, l) = (s / LANES, s % LANES);
            for a in 0..na {
                let row = s * na + a;
                for (j, &y) in model.support.row(row).iter().enumerate() {
                    let at = ((a * nv + c) * self.width + j) * LANES + l;
                    let i = row * ns + y as usize;
                    self.index[at] = packed_index(y);
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
        // SAFETY: the CPU has AVX2 (asserted).
        let sweeps = unsafe {
            match self.registers {
                1 => self.q_sweeps::<1>(gamma, max_sweeps, accuracy),
                2 => self.q_sweeps::<2>(gamma, max_sweeps, accuracy),
                3 => self.q_sweeps::<3>(gamma, max_sweeps, accuracy),
                _ => self.q_sweeps::<4>(gamma, max_sweeps, accuracy),
            }
        };
        let lanes = LANES * self.registers;
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
        // SAFETY: the CPU has AVX2 (asserted).
        let sweeps = unsafe {
            match self.registers {
                1 => self.vi_sweeps::<1>(gamma, epsilon, max_sweeps, values),
                2 => self.vi_sweeps::<2>(gamma, epsilon, max_sweeps, values),
                3 => self.vi_sweeps::<3>(gamma, epsilon, max_sweeps, values),
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
        let lanes = LANES * nv;
        let table = self.n_actions * nv * self.width * LANES;
        assert!(nv == self.registers && self.width >= 1);
        assert!(self.index.len() == table && self.prob.len() == table && self.reward.len() == table);
        assert!(self.current.len() == self.n_actions * lanes && self.previous.len() == self.n_actions * lanes);
        assert!(self.best.len() == lanes && self.best_action.len() == lanes);
    }

    /// One sweep of backups against `scaled` (gamma V per lane), action by action: calls
    /// `action_done(a, c, backups)` for each action `a` and chunk `c` in increasing order.
    ///
    /// # Safety
    /// The CPU must have AVX2, and `check_sizes(NV)` must hold.
    #[inline(always)]
    unsafe fn sweep<const NV: usize>(
        &self,
        scaled: &[__m256d; NV],
        mut action_done: impl FnMut(usize, usize, __m256d),
    ) {
        let w = self.width;
        let (index, prob, reward) = (self.index.as_ptr(), self.prob.as_ptr(), self.reward.as_ptr());
        for a in 0..self.n_actions {
            for c in 0..NV {
                let mut at = (a * NV + c) * w * LANES;
                // SAFETY: at + 4 <= ((a * NV + c + 1) * w) * 4 <= the table length (check_sizes).
                let mut acc = unsafe { term(scaled, index.add(at), prob.add(at), reward.add(at)) };
                for _ in 1..w {
                    at += LANES;
                    // SAFETY: as above.
                    acc = _mm256_add_pd(acc, unsafe { term(scaled, index.add(at), prob.add(at), reward.add(at)) });
                }
                action_done(a, c, acc);
            }
        }
    }

    #[target_feature(enable = "avx2")]
    fn q_sweeps<const NV: usize>(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64) -> usize {
        self.check_sizes(NV);
        let gamma = _mm256_set1_pd(gamma);
        let accuracy = _mm256_set1_pd(accuracy);
        // |x| clears the sign bit, as f64::abs does.
        let sign = _mm256_set1_pd(-0.0);
        // Q = 0 before the first sweep, so gamma V = 0.
        let mut scaled = [_mm256_setzero_pd(); NV];
        self.current.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            let mut top = [_mm256_setzero_pd(); NV];
            let mut moved = 0;
            let (out, old) = (self.current.as_mut_ptr(), self.previous.as_ptr());
            // SAFETY: AVX2 is enabled here, and check_sizes(NV) passed; every index
            // (a * NV + c) * 4 + 4 <= n_actions * lanes, the length of current and previous.
            unsafe {
                self.sweep::<NV>(&scaled, |a, c, q| {
                    let at = (a * NV + c) * LANES;
                    let change = _mm256_andnot_pd(sign, _mm256_sub_pd(q, _mm256_loadu_pd(old.add(at))));
                    moved |= _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(change, accuracy));
                    _mm256_storeu_pd(out.add(at), q);
                    // V(y) = max_b Q(y, b); `max_pd(x, v)` is `x > v ? x : v`: the first maximum
                    // wins, as the original's `max_v pQ[y, v]`.
                    top[c] = if a == 0 { q } else { _mm256_max_pd(q, top[c]) };
                });
            }
            for c in 0..NV {
                scaled[c] = _mm256_mul_pd(gamma, top[c]);
            }
            let go_on = sweeps < max_sweeps && moved != 0;
            sweeps += 1;
            if !go_on {
                return sweeps;
            }
        }
    }

    #[target_feature(enable = "avx2")]
    fn vi_sweeps<const NV: usize>(&mut self, gamma: f64, epsilon: f64, max_sweeps: usize, values: &mut [f64]) -> usize {
        self.check_sizes(NV);
        let ns = self.n_states;
        assert!(values.len() == ns);
        let threshold = epsilon * epsilon;
        let gamma = _mm256_set1_pd(gamma);
        // V = 0 before the first sweep, so gamma V = 0.
        let mut values_old = [_mm256_setzero_pd(); NV];
        let mut scaled = [_mm256_setzero_pd(); NV];
        let mut sweeps = 0;
        loop {
            // Jacobi: every row backs up V_old (held in `scaled`) before any state is updated.
            let mut top = [_mm256_set1_pd(f64::NEG_INFINITY); NV];
            let mut arg = [_mm256_setzero_pd(); NV];
            // SAFETY: AVX2 is enabled here, and check_sizes(NV) passed.
            unsafe {
                self.sweep::<NV>(&scaled, |a, c, q| {
                    // The greedy action: strict `>` over increasing actions keeps the lowest; the
                    // value takes `max_pd(q, top)` (`q > top ? q : top`, the same choice). Action
                    // 0 beats the initial -inf (backups are finite): it starts the chain.
                    if a == 0 {
                        top[c] = q;
                        return;
                    }
                    let better = _mm256_cmp_pd::<_CMP_GT_OQ>(q, top[c]);
                    arg[c] = _mm256_blendv_pd(arg[c], _mm256_set1_pd(a as f64), better);
                    top[c] = _mm256_max_pd(q, top[c]);
                });
            }
            // The squared change, summed over states in increasing order as the original does
            // (the squares are the same products computed lane by lane).
            let mut squares = [0.0f64; MAX_STATES];
            for c in 0..NV {
                let delta = _mm256_sub_pd(top[c], values_old[c]);
                // SAFETY: (c + 1) * 4 <= 4 * NV <= 16, the length of `squares`.
                unsafe { _mm256_storeu_pd(squares.as_mut_ptr().add(c * LANES), _mm256_mul_pd(delta, delta)) };
                scaled[c] = _mm256_mul_pd(gamma, top[c]);
                values_old[c] = top[c];
            }
            let mut change = 0.0;
            for &square in &squares[..ns] {
                change += square;
            }
            sweeps += 1;
            if change <= threshold || sweeps >= max_sweeps {
                for c in 0..NV {
                    // SAFETY: (c + 1) * 4 <= 4 * NV, the length of best and best_action (check_sizes).
                    unsafe {
                        _mm256_storeu_pd(self.best.as_mut_ptr().add(c * LANES), top[c]);
                        _mm256_storeu_pd(self.best_action.as_mut_ptr().add(c * LANES), arg[c]);
                    }
                }
                values.copy_from_slice(&self.best[..ns]);
                return sweeps;
            }
        }
    }
}

/// The selector of level `level` (0 or 1: four registers at most) of the blend tree: bit `level`
/// of the register number `y / 4`,
/// which is bit `level + 3` of the low half `2y` of the packed index, moved into the sign bit of
/// each 64-bit lane (the only bit `vblendvpd` reads).
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
unsafe fn selector(index: __m256i, level: usize) -> __m256d {
    // SAFETY: the caller guarantees AVX2.
    unsafe {
        _mm256_castsi256_pd(match level {
            0 => _mm256_slli_epi64::<60>(index),
            _ => _mm256_slli_epi64::<59>(index),
        })
    }
}

/// One backup term per lane, `P (R + gamma V(y))`, with `gamma V(y)` fetched from the value
/// registers by permutes and a tree of blends on the packed next states.
///
/// # Safety
/// The CPU must have AVX2; the three pointers must each be valid for 4 reads, and the next states
/// below `4 * NV` (at most 16, so two levels of blends).
#[inline(always)]
unsafe fn term<const NV: usize>(
    scaled: &[__m256d; NV],
    index: *const i64,
    prob: *const f64,
    reward: *const f64,
) -> __m256d {
    // SAFETY: the caller guarantees 4 readable entries behind each pointer and AVX2.
    unsafe {
        let y = _mm256_loadu_si256(index.cast());
        // Every register permuted by y mod 4 ...
        let mut picked = [_mm256_setzero_pd(); NV];
        for k in 0..NV {
            picked[k] = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(scaled[k]), y));
        }
        // ... then register y / 4 chosen bit by bit, lowest bit first: after level L, entry i
        // holds the pick among registers i * 2^(L+1) .. (i + 1) * 2^(L+1).
        let mut count = NV;
        let mut level = 0;
        while count > 1 {
            let select = selector(y, level);
            for i in 0..count / 2 {
                picked[i] = _mm256_blendv_pd(picked[2 * i], picked[2 * i + 1], select);
            }
            if count % 2 == 1 {
                picked[count / 2] = picked[count - 1];
            }
            count = count.div_ceil(2);
            level += 1;
        }
        _mm256_mul_pd(_mm256_loadu_pd(prob), _mm256_add_pd(_mm256_loadu_pd(reward), picked[0]))
    }
}
