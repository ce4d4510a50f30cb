//! NEON sweeps (aarch64) for models of any size: both value-iteration routines of
//! [`crate::solve`], two states per register, bit-identical to the scalar loops of
//! [`crate::solve::scalar`].
//!
//! Layout, "lane-major" as in the x86-64 paths, with 2-lane registers of doubles: for chunk `c` of
//! two states, action `a` and support slot `j`, lane `l` holds the `j`-th support entry of row
//! `(2c + l, a)`, padded as the scalar loops pad (probability 0 and reward 0 on state 0, to the
//! widest row). A term fetches `gamma V(y)` of its two lanes with two loads from the sweep's
//! `gamma V` (AArch64 has no permute across more than four 128-bit registers of doubles, and the
//! loads are not on the sweep-to-sweep chain's longest path: they wait only for the previous
//! sweep's stores). Each lane computes the original's `sum_y P (R + gamma V(y))` over its support
//! in increasing `y` with the same IEEE operations in the same order: no fused multiply-add (Rust
//! never fuses, and the intrinsics used are separate multiplies and adds), and the maxima by
//! compare and select (`q > top ? q : top`, as the scalar loops; NEON's own `fmax` would order
//! -0 below +0, which the scalar loops do not).
//!
//! Chunks run outermost, actions inside, so a chunk's maximum over actions and its greedy action
//! stay in registers; the two states of a chunk are consecutive, so `gamma V` is in state order.

#![cfg(target_arch = "aarch64")]

use std::arch::aarch64::*;

use crate::model::tables::TabularView;

/// Lanes per register.
const LANES: usize = 2;

/// Whether this CPU runs the NEON sweeps (every AArch64 CPU that Rust's aarch64 targets run on
/// has Advanced SIMD; the check keeps the dispatch honest).
pub(crate) fn available() -> bool {
    std::arch::is_aarch64_feature_detected!("neon")
}

/// A model packed for the NEON sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct LanesNeon {
    n_states: usize,
    n_actions: usize,
    /// Chunks of two states, `ceil(n_states / 2)`.
    chunks: usize,
    /// Support slots per row (the widest row's).
    width: usize,
    /// `next[((c * n_actions + a) * width + j) * 2 + l]`, and the same for `prob` and `reward`.
    next: Vec<u32>,
    prob: Vec<f64>,
    reward: Vec<f64>,
    /// Q (or the backups of value iteration) of this sweep and of the previous one:
    /// `[(c * n_actions + a) * 2 + l]`.
    current: Vec<f64>,
    previous: Vec<f64>,
    /// `gamma V` in state order (padded to whole chunks), of the previous sweep and of this one.
    scaled: Vec<f64>,
    scaled_next: Vec<f64>,
    /// Guez value iteration: V of the last sweep and its greedy action (as f64, exact) per lane.
    best: Vec<f64>,
    best_action: Vec<f64>,
}

impl LanesNeon {
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
            best: vec![0.0; lanes],
            best_action: vec![0.0; lanes],
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
        assert!(self.best.len() == lanes && self.best_action.len() == lanes);
    }

    /// The backups of chunk `c` under action `a` against `scaled`.
    ///
    /// # Safety
    /// `check_sizes` holds, `c < chunks`, `a < n_actions`, and every packed next state is below
    /// `n_states` (checked by `pack`), hence within `scaled`.
    #[inline(always)]
    unsafe fn backups(&self, c: usize, a: usize, scaled: *const f64) -> float64x2_t {
        let w = self.width;
        let (next, prob, reward) = (self.next.as_ptr(), self.prob.as_ptr(), self.reward.as_ptr());
        let term = |at: usize| {
            // SAFETY: at + 2 <= ((c * na + a + 1) * w) * 2 <= the table length, and the next
            // states index `scaled` (the caller's bounds).
            unsafe {
                let low = vld1q_dup_f64(scaled.add(*next.add(at) as usize));
                let gv = vld1q_lane_f64::<1>(scaled.add(*next.add(at + 1) as usize), low);
                vmulq_f64(vld1q_f64(prob.add(at)), vaddq_f64(vld1q_f64(reward.add(at)), gv))
            }
        };
        let mut at = (c * self.n_actions + a) * w * LANES;
        // Starting from the first term, as the scalar loops do.
        let mut acc = term(at);
        for _ in 1..w {
            at += LANES;
            acc = vaddq_f64(acc, term(at));
        }
        acc
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        self.check_sizes();
        let na = self.n_actions;
        // Q = 0 before the first sweep, so gamma V = 0.
        self.current.fill(0.0);
        self.scaled.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every entry backs up the previous sweep's V (held in `scaled`).
            std::mem::swap(&mut self.current, &mut self.previous);
            // SAFETY: check_sizes passed; every index (c * na + a) * 2 + 2 <= chunks * na * 2,
            // the length of current and previous, and c * 2 + 2 <= the length of scaled_next.
            let moved = unsafe {
                let (gamma, accuracy) = (vdupq_n_f64(gamma), vdupq_n_f64(accuracy));
                let (out, old) = (self.current.as_mut_ptr(), self.previous.as_ptr());
                let (scaled, scaled_next) = (self.scaled.as_ptr(), self.scaled_next.as_mut_ptr());
                let mut moved = vdupq_n_u64(0);
                for c in 0..self.chunks {
                    let mut top = vdupq_n_f64(0.0);
                    for a in 0..na {
                        let at = (c * na + a) * LANES;
                        let value = self.backups(c, a, scaled);
                        // |x| clears the sign bit, as f64::abs does.
                        let change = vabsq_f64(vsubq_f64(value, vld1q_f64(old.add(at))));
                        moved = vorrq_u64(moved, vcgtq_f64(change, accuracy));
                        vst1q_f64(out.add(at), value);
                        // V(y) = max_b Q(y, b), the first maximum (`q > top ? q : top`).
                        top = if a == 0 { value } else { vbslq_f64(vcgtq_f64(value, top), value, top) };
                    }
                    vst1q_f64(scaled_next.add(c * LANES), vmulq_f64(gamma, top));
                }
                vmaxvq_u32(vreinterpretq_u32_u64(moved)) != 0
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
        let (ns, na) = (self.n_states, self.n_actions);
        assert!(values.len() == ns && policy.len() == ns);
        let threshold = epsilon * epsilon;
        // V = 0 before the first sweep, so gamma V = 0.
        self.best.fill(0.0);
        self.scaled.fill(0.0);
        let mut sweeps = 0;
        loop {
            // Jacobi: every row backs up V_old (held in `scaled`) before any state is updated;
            // `best` holds V_old until the chunk's new V replaces it.
            let mut change = 0.0;
            // SAFETY: check_sizes passed; c * 2 + 2 <= chunks * 2, the length of best,
            // best_action and scaled_next.
            unsafe {
                let gamma = vdupq_n_f64(gamma);
                let (scaled, scaled_next) = (self.scaled.as_ptr(), self.scaled_next.as_mut_ptr());
                let (best, best_action) = (self.best.as_mut_ptr(), self.best_action.as_mut_ptr());
                for c in 0..self.chunks {
                    let mut top = self.backups(c, 0, scaled);
                    let mut arg = vdupq_n_f64(0.0);
                    for a in 1..na {
                        // The greedy action: strict `>` over increasing actions keeps the lowest;
                        // action 0 (finite) starts the chain, as -inf would.
                        let value = self.backups(c, a, scaled);
                        let better = vcgtq_f64(value, top);
                        arg = vbslq_f64(better, vdupq_n_f64(a as f64), arg);
                        top = vbslq_f64(better, value, top);
                    }
                    // The squared change, summed over states in increasing order as the
                    // original does (the squares are the same products, lane by lane).
                    let delta = vsubq_f64(top, vld1q_f64(best.add(c * LANES)));
                    let squares = vmulq_f64(delta, delta);
                    change += vgetq_lane_f64::<0>(squares);
                    if c * LANES + 1 < ns {
                        change += vgetq_lane_f64::<1>(squares);
                    }
                    vst1q_f64(best.add(c * LANES), top);
                    vst1q_f64(best_action.add(c * LANES), arg);
                    vst1q_f64(scaled_next.add(c * LANES), vmulq_f64(gamma, top));
                }
            }
            std::mem::swap(&mut self.scaled, &mut self.scaled_next);
            sweeps += 1;
            if change <= threshold || sweeps >= max_sweeps {
                values.copy_from_slice(&self.best[..ns]);
                for (p, &a) in policy.iter_mut().zip(&self.best_action[..ns]) {
                    *p = a as usize;
                }
                return sweeps;
            }
        }
    }
}
