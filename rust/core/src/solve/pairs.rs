//! The baseline sweeps of both value-iteration routines of [`crate::solve`]: two states at a
//! time, in 128-bit registers of two doubles that every CPU of the two architectures has (SSE2 is
//! part of x86-64, Advanced SIMD of AArch64), so this kernel is at once the `scalar` path, the
//! `avx2` path (AVX2 sweeps of four states per register were slower than it), the path of models
//! too large for AVX-512's, and the NEON path of aarch64. Elsewhere the pairs are
//! plain arrays. Bit-identical to the row-at-a-time loops of [`crate::solve::scalar`], which the
//! tests keep as the reference.
//!
//! Layout, "lane-major" as in the wider x86-64 paths: for chunk `c` of two states, action `a` and
//! support slot `j`, lane `l` holds the `j`-th support entry of row `(2c + l, a)`, padded as the
//! row loops pad (probability 0 and reward 0 on state 0, to the widest row). A term fetches
//! `gamma V(y)` of its two lanes with two loads from the sweep's `gamma V` (no permute reaches
//! more than a few registers of doubles on either architecture, and the loads wait only for the
//! previous sweep's stores). Each lane computes the original's `sum_y P (R + gamma V(y))` over its
//! support in increasing `y` with the same IEEE operations in the same order: no fused
//! multiply-add (Rust never fuses, and the operations below are separate multiplies and adds),
//! and the maxima `q > top ? q : top` (SSE2's `maxpd` is exactly that; NEON's `fmax` is not, it
//! orders -0 below +0, so NEON compares and selects).
//!
//! Why: the row loops' profile had about 24 instructions per row of two support entries, most of
//! them per row rather than per entry (the maximum, the moved test, the store, the loop); two rows
//! per register halve those, and the term's arithmetic is one instruction for two rows.
//!
//! Chunks run outermost, actions inside, so a chunk's maximum over actions stays in a register;
//! the two states of a chunk are consecutive, so `gamma V` is in state order.

use crate::model::tables::TabularView;
use lane::{Mask, Pair};

/// Lanes per register.
const LANES: usize = 2;

/// Two lanes in memory, aligned as a register so that SSE2 reads them straight into its
/// arithmetic (an unaligned operand needs a load of its own).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
struct Two([f64; 2]);

/// Two doubles and the few operations the sweeps need, on each architecture's 128-bit registers.
#[cfg(target_arch = "x86_64")]
mod lane {
    use std::arch::x86_64::*;

    use super::Two;

    #[derive(Clone, Copy)]
    pub(super) struct Pair(__m128d);

    /// Lane-wise comparison results (all ones or all zeros per lane).
    #[derive(Clone, Copy)]
    pub(super) struct Mask(__m128d);

    // SSE2 is part of the x86-64 baseline: these intrinsics need no run-time check.
    impl Pair {
        #[inline(always)]
        pub(super) fn splat(x: f64) -> Self {
            // SAFETY: SSE2 is always present on x86-64.
            Pair(unsafe { _mm_set1_pd(x) })
        }

        /// # Safety
        /// `p` is readable.
        #[inline(always)]
        pub(super) unsafe fn load(p: *const Two) -> Self {
            // SAFETY: the caller's bound; `Two` is 16-byte aligned, so the load may be folded
            // into the arithmetic that uses it.
            Pair(unsafe { _mm_load_pd(p.cast()) })
        }

        /// # Safety
        /// `p` is writable.
        #[inline(always)]
        pub(super) unsafe fn store(self, p: *mut Two) {
            // SAFETY: the caller's bound (aligned, as above).
            unsafe { _mm_store_pd(p.cast(), self.0) }
        }

        /// `[*low, *high]`.
        ///
        /// # Safety
        /// Both pointers are readable.
        #[inline(always)]
        pub(super) unsafe fn gather(low: *const f64, high: *const f64) -> Self {
            // SAFETY: the caller's bound.
            Pair(unsafe { _mm_loadh_pd(_mm_load_sd(low), high) })
        }

        #[inline(always)]
        pub(super) fn add(self, other: Self) -> Self {
            // SAFETY: SSE2.
            Pair(unsafe { _mm_add_pd(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn sub(self, other: Self) -> Self {
            // SAFETY: SSE2.
            Pair(unsafe { _mm_sub_pd(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn mul(self, other: Self) -> Self {
            // SAFETY: SSE2.
            Pair(unsafe { _mm_mul_pd(self.0, other.0) })
        }

        /// `self > other ? self : other` per lane: `maxpd` returns its second operand unless the
        /// first is greater (ties, signed zeros and NaN included).
        #[inline(always)]
        pub(super) fn greater_or(self, other: Self) -> Self {
            // SAFETY: SSE2.
            Pair(unsafe { _mm_max_pd(self.0, other.0) })
        }

        /// Whether `|self - old| > accuracy` per lane (`abs` clears the sign bit, as f64::abs).
        #[inline(always)]
        pub(super) fn moved(self, old: Self, accuracy: Self) -> Mask {
            // SAFETY: SSE2.
            unsafe {
                let change = _mm_andnot_pd(_mm_set1_pd(-0.0), _mm_sub_pd(self.0, old.0));
                Mask(_mm_cmpgt_pd(change, accuracy.0))
            }
        }

        #[inline(always)]
        pub(super) fn lanes(self) -> [f64; 2] {
            let mut out = [0.0; 2];
            // SAFETY: `out` holds two doubles.
            unsafe { _mm_storeu_pd(out.as_mut_ptr(), self.0) };
            out
        }
    }

    impl Mask {
        #[inline(always)]
        pub(super) fn none() -> Self {
            // SAFETY: SSE2.
            Mask(unsafe { _mm_setzero_pd() })
        }

        #[inline(always)]
        pub(super) fn or(self, other: Self) -> Self {
            // SAFETY: SSE2.
            Mask(unsafe { _mm_or_pd(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn any(self) -> bool {
            // SAFETY: SSE2.
            unsafe { _mm_movemask_pd(self.0) != 0 }
        }
    }
}

/// Two doubles and the few operations the sweeps need, on each architecture's 128-bit registers.
#[cfg(target_arch = "aarch64")]
mod lane {
    use std::arch::aarch64::*;

    use super::Two;

    #[derive(Clone, Copy)]
    pub(super) struct Pair(float64x2_t);

    /// Lane-wise comparison results (all ones or all zeros per lane).
    #[derive(Clone, Copy)]
    pub(super) struct Mask(uint64x2_t);

    // Advanced SIMD is part of every AArch64 target Rust builds for: no run-time check needed.
    impl Pair {
        #[inline(always)]
        pub(super) fn splat(x: f64) -> Self {
            // SAFETY: NEON is always present on aarch64.
            Pair(unsafe { vdupq_n_f64(x) })
        }

        /// # Safety
        /// `p` is readable.
        #[inline(always)]
        pub(super) unsafe fn load(p: *const Two) -> Self {
            // SAFETY: the caller's bound.
            Pair(unsafe { vld1q_f64(p.cast()) })
        }

        /// # Safety
        /// `p` is writable.
        #[inline(always)]
        pub(super) unsafe fn store(self, p: *mut Two) {
            // SAFETY: the caller's bound.
            unsafe { vst1q_f64(p.cast(), self.0) }
        }

        /// `[*low, *high]`.
        ///
        /// # Safety
        /// Both pointers are readable.
        #[inline(always)]
        pub(super) unsafe fn gather(low: *const f64, high: *const f64) -> Self {
            // SAFETY: the caller's bound.
            Pair(unsafe { vld1q_lane_f64::<1>(high, vld1q_dup_f64(low)) })
        }

        #[inline(always)]
        pub(super) fn add(self, other: Self) -> Self {
            // SAFETY: NEON.
            Pair(unsafe { vaddq_f64(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn sub(self, other: Self) -> Self {
            // SAFETY: NEON.
            Pair(unsafe { vsubq_f64(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn mul(self, other: Self) -> Self {
            // SAFETY: NEON.
            Pair(unsafe { vmulq_f64(self.0, other.0) })
        }

        /// `self > other ? self : other` per lane, by compare and select (`fmax` would order -0
        /// below +0).
        #[inline(always)]
        pub(super) fn greater_or(self, other: Self) -> Self {
            // SAFETY: NEON.
            Pair(unsafe { vbslq_f64(vcgtq_f64(self.0, other.0), self.0, other.0) })
        }

        /// Whether `|self - old| > accuracy` per lane (`abs` clears the sign bit, as f64::abs).
        #[inline(always)]
        pub(super) fn moved(self, old: Self, accuracy: Self) -> Mask {
            // SAFETY: NEON.
            Mask(unsafe { vcgtq_f64(vabsq_f64(vsubq_f64(self.0, old.0)), accuracy.0) })
        }

        #[inline(always)]
        pub(super) fn lanes(self) -> [f64; 2] {
            // SAFETY: NEON.
            unsafe { [vgetq_lane_f64::<0>(self.0), vgetq_lane_f64::<1>(self.0)] }
        }
    }

    impl Mask {
        #[inline(always)]
        pub(super) fn none() -> Self {
            // SAFETY: NEON.
            Mask(unsafe { vdupq_n_u64(0) })
        }

        #[inline(always)]
        pub(super) fn or(self, other: Self) -> Self {
            // SAFETY: NEON.
            Mask(unsafe { vorrq_u64(self.0, other.0) })
        }

        #[inline(always)]
        pub(super) fn any(self) -> bool {
            // SAFETY: NEON.
            unsafe { vmaxvq_u32(vreinterpretq_u32_u64(self.0)) != 0 }
        }
    }
}

/// Two doubles as a plain array, for the other architectures (the same operations lane by lane).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod lane {
    use super::Two;

    #[derive(Clone, Copy)]
    pub(super) struct Pair([f64; 2]);

    #[derive(Clone, Copy)]
    pub(super) struct Mask([bool; 2]);

    impl Pair {
        #[inline(always)]
        pub(super) fn splat(x: f64) -> Self {
            Pair([x, x])
        }

        /// # Safety
        /// `p` is readable.
        #[inline(always)]
        pub(super) unsafe fn load(p: *const Two) -> Self {
            // SAFETY: the caller's bound.
            Pair(unsafe { (*p).0 })
        }

        /// # Safety
        /// `p` is writable.
        #[inline(always)]
        pub(super) unsafe fn store(self, p: *mut Two) {
            // SAFETY: the caller's bound.
            unsafe { (*p).0 = self.0 }
        }

        /// `[*low, *high]`.
        ///
        /// # Safety
        /// Both pointers are readable.
        #[inline(always)]
        pub(super) unsafe fn gather(low: *const f64, high: *const f64) -> Self {
            // SAFETY: the caller's bound.
            Pair(unsafe { [*low, *high] })
        }

        #[inline(always)]
        pub(super) fn add(self, other: Self) -> Self {
            Pair([self.0[0] + other.0[0], self.0[1] + other.0[1]])
        }

        #[inline(always)]
        pub(super) fn sub(self, other: Self) -> Self {
            Pair([self.0[0] - other.0[0], self.0[1] - other.0[1]])
        }

        #[inline(always)]
        pub(super) fn mul(self, other: Self) -> Self {
            Pair([self.0[0] * other.0[0], self.0[1] * other.0[1]])
        }

        /// `self > other ? self : other` per lane.
        #[inline(always)]
        pub(super) fn greater_or(self, other: Self) -> Self {
            let pick = |l: usize| if self.0[l] > other.0[l] { self.0[l] } else { other.0[l] };
            Pair([pick(0), pick(1)])
        }

        /// Whether `|self - old| > accuracy` per lane.
        #[inline(always)]
        pub(super) fn moved(self, old: Self, accuracy: Self) -> Mask {
            let lane = |l: usize| (self.0[l] - old.0[l]).abs() > accuracy.0[l];
            Mask([lane(0), lane(1)])
        }

        #[inline(always)]
        pub(super) fn lanes(self) -> [f64; 2] {
            self.0
        }
    }

    impl Mask {
        #[inline(always)]
        pub(super) fn none() -> Self {
            Mask([false; 2])
        }

        #[inline(always)]
        pub(super) fn or(self, other: Self) -> Self {
            Mask([self.0[0] | other.0[0], self.0[1] | other.0[1]])
        }

        #[inline(always)]
        pub(super) fn any(self) -> bool {
            self.0[0] | self.0[1]
        }
    }
}

/// Calls `$self.$sweeps::<W, A, SHARED>($args)` with the model's width `W` and action count `A`
/// as constants for the usual shapes (0: known at run time only): with both known, the compiler
/// unrolls the action loop and the terms, which took a tenth of the instructions of GC's sweeps.
/// `SHARED` (constant shapes only) is [`LanePairs::shared`]: each chunk's `gamma V(y)` pairs are
/// then fetched once for all its actions.
macro_rules! by_shape {
    ($self:ident . $sweeps:ident $args:tt) => {
        by_shape!(@shapes $self $sweeps $args [(1, 2) (1, 3) (1, 4) (2, 2) (2, 3) (2, 4) (3, 2) (3, 3) (3, 4)
            (4, 2) (4, 3) (4, 4) (5, 2) (5, 3) (5, 4)])
    };
    (@shapes $self:ident $sweeps:ident $args:tt [$(($w:literal, $a:literal))*]) => {
        match ($self.width, $self.n_actions, $self.shared) {
            $(
                ($w, $a, true) => $self.$sweeps::<$w, $a, true> $args,
                ($w, $a, false) => $self.$sweeps::<$w, $a, false> $args,
            )*
            (1, _, _) => $self.$sweeps::<1, 0, false> $args,
            (2, _, _) => $self.$sweeps::<2, 0, false> $args,
            (3, _, _) => $self.$sweeps::<3, 0, false> $args,
            (4, _, _) => $self.$sweeps::<4, 0, false> $args,
            (5, _, _) => $self.$sweeps::<5, 0, false> $args,
            _ => $self.$sweeps::<0, 0, false> $args,
        }
    };
}

/// [`LanePairs`]'s tables as raw pointers, for the sweeps.
#[derive(Clone, Copy)]
struct RowPointers {
    width: usize,
    next: *const [u32; 2],
    prob: *const Two,
    reward: *const Two,
}

impl RowPointers {
    /// The backups of row pair `pair` (`c * n_actions + a`: rows `(2c, a)` and `(2c + 1, a)`),
    /// with `W` entries (`W = 0`: `self.width`), against `scaled` (gamma V in state order).
    ///
    /// # Safety
    /// `LanePairs::check_sizes` holds, `pair < chunks * n_actions`, and every packed next state
    /// is below `n_states` (checked by `pack`), hence within `scaled`.
    #[inline(always)]
    unsafe fn backups<const W: usize>(self, pair: usize, scaled: *const f64) -> Pair {
        let w = if W == 0 { self.width } else { W };
        let at = pair * w;
        let term = |at: usize| {
            // SAFETY: at < (pair + 1) * w, within the tables, and the next states index `scaled`
            // (the caller's bounds).
            unsafe {
                let [low, high] = *self.next.add(at);
                let gv = Pair::gather(scaled.add(low as usize), scaled.add(high as usize));
                Pair::load(self.prob.add(at)).mul(Pair::load(self.reward.add(at)).add(gv))
            }
        };
        // Starting from the first term, as the row loops do.
        let mut acc = term(at);
        for j in 1..w {
            acc = acc.add(term(at + j));
        }
        acc
    }

    /// The `gamma V(y)` pairs of the `W` slots of row pair `pair` (for a shared chunk, those of
    /// every action of the chunk).
    ///
    /// # Safety
    /// As [`Self::backups`], with `W == self.width > 0`.
    #[inline(always)]
    unsafe fn fetch<const W: usize>(self, pair: usize, scaled: *const f64) -> [Pair; W] {
        std::array::from_fn(|j| {
            // SAFETY: the caller's bounds, as in `backups`.
            unsafe {
                let [low, high] = *self.next.add(pair * W + j);
                Pair::gather(scaled.add(low as usize), scaled.add(high as usize))
            }
        })
    }

    /// [`Self::backups`] with the `gamma V(y)` pairs already fetched (`fetch`): the same
    /// operations on the same values, in the same order.
    ///
    /// # Safety
    /// As [`Self::backups`], with `W == self.width > 0`.
    #[inline(always)]
    unsafe fn backups_of<const W: usize>(self, pair: usize, gv: &[Pair; W]) -> Pair {
        let at = pair * W;
        // SAFETY: at + j < (pair + 1) * W, within the tables (the caller's bounds).
        let term =
            |j: usize| unsafe { Pair::load(self.prob.add(at + j)).mul(Pair::load(self.reward.add(at + j)).add(gv[j])) };
        let mut acc = term(0);
        for j in 1..W {
            acc = acc.add(term(j));
        }
        acc
    }
}

/// A model packed for the pair sweeps, with the buffers of both routines.
#[derive(Clone, Debug)]
pub(crate) struct LanePairs {
    n_states: usize,
    n_actions: usize,
    /// Chunks of two states, `ceil(n_states / 2)`.
    chunks: usize,
    /// Support slots per row (the widest row's).
    width: usize,
    /// Whether, in every chunk, every action's rows have the same next states slot by slot
    /// (`next` is the same for all of a chunk's row pairs), as in GC and GDL, whose supports
    /// depend on the state only: the sweeps then fetch a chunk's `gamma V(y)` once, not once per
    /// action (two loads for the next states and two for the values per slot).
    shared: bool,
    /// Lane `l` of `next[(c * n_actions + a) * width + j]`, and the same for `prob` and `reward`:
    /// the `j`-th support entry of row `(2c + l, a)`.
    next: Vec<[u32; 2]>,
    prob: Vec<Two>,
    reward: Vec<Two>,
    /// Q (or the backups of value iteration) of this sweep and of the previous one, lane `l` of
    /// `[c * n_actions + a]` for row `(2c + l, a)`.
    current: Vec<Two>,
    previous: Vec<Two>,
    /// `gamma V` in state order (padded to whole chunks: chunk `c`), of the previous sweep and
    /// of this one.
    scaled: Vec<Two>,
    scaled_next: Vec<Two>,
    /// Guez value iteration: V of the last sweep, per chunk.
    best: Vec<Two>,
}

impl LanePairs {
    pub(crate) fn new(n_states: usize, n_actions: usize) -> Self {
        let chunks = n_states.div_ceil(LANES);
        // Room for rows as wide as the state space, so that packing never allocates.
        let table = chunks * n_actions * n_states;
        Self {
            n_states,
            n_actions,
            chunks,
            width: 0,
            shared: false,
            next: Vec::with_capacity(table),
            prob: Vec::with_capacity(table),
            reward: Vec::with_capacity(table),
            current: vec![Two::default(); n_actions * chunks],
            previous: vec![Two::default(); n_actions * chunks],
            scaled: vec![Two::default(); chunks],
            scaled_next: vec![Two::default(); chunks],
            best: vec![Two::default(); chunks],
        }
    }

    /// Packs `model`; with `row_bonus`, the rewards of row (s, a) are `R + bonus[s * A + a]` (the
    /// modified rewards of BEB). Allocates only when a model needs more room than the last one.
    pub(crate) fn pack(&mut self, model: TabularView<'_>, row_bonus: Option<&[f64]>) {
        let (ns, na) = (self.n_states, self.n_actions);
        assert_eq!((model.n_states, model.n_actions), (ns, na));
        self.width = (0..ns * na).map(|row| model.support.row(row).len()).max().unwrap_or(0).max(1);
        let size = self.chunks * na * self.width;
        self.next.clear();
        self.next.resize(size, [0; 2]);
        self.prob.clear();
        self.prob.resize(size, Two::default());
        self.reward.clear();
        self.reward.resize(size, Two::default());
        for s in 0..ns {
            let (c, l) = (s / LANES, s % LANES);
            for a in 0..na {
                let row = s * na + a;
                for (j, &y) in model.support.row(row).iter().enumerate() {
                    // The sweeps read gamma V(y) unchecked: this is their bound.
                    assert!((y as usize) < ns, "next state {y} out of range");
                    let at = (c * na + a) * self.width + j;
                    let i = row * ns + y as usize;
                    self.next[at][l] = y;
                    self.prob[at].0[l] = model.transitions[i];
                    self.reward[at].0[l] = match row_bonus {
                        Some(bonus) => model.rewards[i] + bonus[row],
                        None => model.rewards[i],
                    };
                }
            }
        }
        let (width, chunk_rows) = (self.width, na * self.width);
        self.shared = chunk_rows > 0
            && self.next.chunks_exact(chunk_rows).all(|chunk| chunk.chunks_exact(width).all(|r| r == &chunk[..width]));
    }

    /// Asserts the buffer sizes the sweeps' unchecked loads and stores rely on.
    fn check_sizes(&self) {
        let (chunks, rows) = (self.chunks, self.chunks * self.n_actions);
        let table = rows * self.width;
        assert!(self.width >= 1 && self.next.len() == table && self.prob.len() == table && self.reward.len() == table);
        assert!(self.current.len() == rows && self.previous.len() == rows);
        assert!(self.scaled.len() == chunks && self.scaled_next.len() == chunks && self.best.len() == chunks);
    }

    /// The tables' start pointers, taken once per sweep: read through `self`, the compiler
    /// reloaded them for every row pair (the sweep's stores might have aliased them).
    fn pointers(&self) -> RowPointers {
        RowPointers {
            width: self.width,
            next: self.next.as_ptr(),
            prob: self.prob.as_ptr(),
            reward: self.reward.as_ptr(),
        }
    }

    /// BBRL Q-iteration (see [`crate::solve::q_iteration`]) on the packed model: writes Q
    /// row-major into `q` and returns the number of sweeps.
    pub(crate) fn q_iteration(&mut self, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
        by_shape!(self.q_sweeps(gamma, max_sweeps, accuracy, q))
    }

    fn q_sweeps<const W: usize, const A: usize, const SHARED: bool>(
        &mut self,
        gamma: f64,
        max_sweeps: usize,
        accuracy: f64,
        q: &mut [f64],
    ) -> usize {
        self.check_sizes();
        // The shapes by_shape passes: a constant width is the model's, and only then shared.
        assert!((W == 0 || W == self.width) && (!SHARED || W > 0));
        let na = if A == 0 { self.n_actions } else { A };
        assert_eq!(q.len(), self.n_states * self.n_actions);
        // Q = 0 before the first sweep (the first sweep's old Q), so gamma V = 0.
        self.previous.fill(Two::default());
        self.scaled.fill(Two::default());
        let (gamma, accuracy) = (Pair::splat(gamma), Pair::splat(accuracy));
        let t = self.pointers();
        // Jacobi: every entry backs up the previous sweep's V (`gamma V` in `scaled`). The
        // buffers swap roles after each sweep, as local pointers: swapping the vectors in `self`
        // cost a dozen loads and stores per sweep.
        let (mut out, mut old) = (self.current.as_mut_ptr(), self.previous.as_mut_ptr());
        let (mut scaled, mut scaled_next) = (self.scaled.as_mut_ptr(), self.scaled_next.as_mut_ptr());
        let mut sweeps = 0;
        loop {
            // SAFETY: check_sizes passed; every pair c * na + a < chunks * na, the length of
            // current and previous, and c < chunks, the length of scaled and scaled_next.
            let moved = unsafe {
                let gv_old = scaled.cast::<f64>().cast_const();
                let mut moved = Mask::none();
                for c in 0..self.chunks {
                    let mut top = Pair::splat(f64::NEG_INFINITY);
                    let gv = if SHARED { t.fetch::<W>(c * na, gv_old) } else { [Pair::splat(0.0); W] };
                    for a in 0..na {
                        let pair = c * na + a;
                        let value = if SHARED { t.backups_of::<W>(pair, &gv) } else { t.backups::<W>(pair, gv_old) };
                        moved = moved.or(value.moved(Pair::load(old.add(pair)), accuracy));
                        value.store(out.add(pair));
                        // V(y) = max_b Q(y, b), the first maximum; action 0 beats -inf (backups
                        // are finite), as in the row loops.
                        top = value.greater_or(top);
                    }
                    gamma.mul(top).store(scaled_next.add(c));
                }
                moved.any()
            };
            std::mem::swap(&mut out, &mut old);
            std::mem::swap(&mut scaled, &mut scaled_next);
            let go_on = sweeps < max_sweeps && moved;
            sweeps += 1;
            if !go_on {
                // This sweep's Q is now behind `old`.
                for (s, q_row) in q.chunks_exact_mut(na).enumerate() {
                    let (c, l) = (s / LANES, s % LANES);
                    for (a, value) in q_row.iter_mut().enumerate() {
                        // SAFETY: c * na + a < chunks * na, the buffer's length.
                        *value = unsafe { (*old.add(c * na + a)).0[l] };
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
        by_shape!(self.vi_sweeps(gamma, epsilon, max_sweeps, values, policy))
    }

    fn vi_sweeps<const W: usize, const A: usize, const SHARED: bool>(
        &mut self,
        gamma: f64,
        epsilon: f64,
        max_sweeps: usize,
        values: &mut [f64],
        policy: &mut [usize],
    ) -> usize {
        self.check_sizes();
        // The shapes by_shape passes: a constant width is the model's, and only then shared.
        assert!((W == 0 || W == self.width) && (!SHARED || W > 0));
        let ns = self.n_states;
        let na = if A == 0 { self.n_actions } else { A };
        assert!(values.len() == ns && policy.len() == ns);
        let threshold = epsilon * epsilon;
        // V = 0 before the first sweep, so gamma V = 0.
        self.best.fill(Two::default());
        self.scaled.fill(Two::default());
        let gamma = Pair::splat(gamma);
        let t = self.pointers();
        let best = self.best.as_mut_ptr();
        // Jacobi: every row backs up V_old (`gamma V_old` in `scaled`) before any state is
        // updated; `best` holds V_old until the chunk's new V replaces it. The two `gamma V`
        // buffers swap roles after each sweep, as local pointers (see q_sweeps).
        let (mut scaled, mut scaled_next) = (self.scaled.as_mut_ptr(), self.scaled_next.as_mut_ptr());
        let mut sweeps = 0;
        loop {
            let mut change = 0.0;
            let gv_old = scaled.cast::<f64>().cast_const();
            // SAFETY: check_sizes passed; every pair c * na + a < chunks * na, and c < chunks,
            // the length of best, scaled and scaled_next.
            unsafe {
                for c in 0..self.chunks {
                    let mut top = Pair::splat(f64::NEG_INFINITY);
                    let gv = if SHARED { t.fetch::<W>(c * na, gv_old) } else { [Pair::splat(0.0); W] };
                    for a in 0..na {
                        let pair = c * na + a;
                        let value = if SHARED { t.backups_of::<W>(pair, &gv) } else { t.backups::<W>(pair, gv_old) };
                        top = value.greater_or(top);
                    }
                    // The squared change, summed over states in increasing order as the original
                    // does (the squares are the same products, lane by lane).
                    let delta = top.sub(Pair::load(best.add(c)));
                    // A padding lane (odd n_states) backs up only products with probability 0,
                    // so its V stays a zero and its square is +0, which leaves the sum's bits
                    // as they are: no test for it.
                    let [low, high] = delta.mul(delta).lanes();
                    change += low;
                    change += high;
                    top.store(best.add(c));
                    gamma.mul(top).store(scaled_next.add(c));
                }
            }
            sweeps += 1;
            if change <= threshold || sweeps >= max_sweeps {
                for (s, v) in values.iter_mut().enumerate() {
                    *v = self.best[s / LANES].0[s % LANES];
                }
                // The greedy policy of the last sweep's backups. They are not stored by every
                // sweep (only the last one's are read): the last sweep's are computed again here,
                // from the same `gamma V_old`, so they are the same bits.
                let out = self.current.as_mut_ptr();
                for c in 0..self.chunks {
                    // SAFETY: as in the sweep above; current has chunks * na pairs.
                    unsafe {
                        let gv = if SHARED { t.fetch::<W>(c * na, gv_old) } else { [Pair::splat(0.0); W] };
                        for a in 0..na {
                            let pair = c * na + a;
                            let value =
                                if SHARED { t.backups_of::<W>(pair, &gv) } else { t.backups::<W>(pair, gv_old) };
                            value.store(out.add(pair));
                        }
                    }
                }
                // Strict `>` over increasing actions keeps the lowest of tied actions.
                for (s, p) in policy.iter_mut().enumerate() {
                    let (c, l) = (s / LANES, s % LANES);
                    let mut top = f64::NEG_INFINITY;
                    for a in 0..na {
                        let value = self.current[c * na + a].0[l];
                        if value > top {
                            top = value;
                            *p = a;
                        }
                    }
                }
                return sweeps;
            }
            std::mem::swap(&mut scaled, &mut scaled_next);
        }
    }
}
