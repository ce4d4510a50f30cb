//! SBOSSAgent (SPEC 4.8): Smarter Best Of Sampled Set (Castro & Precup 2010) as BBRL runs it.
//!
//! # The algorithm
//! The posterior of each pair is `alpha = theta + counts` (Dirichlet), with `alpha0 = sum_y alpha`.
//! Each pair gets `K(s, a) = max_y ceil(sigma^2(s, a, y) / epsilon)` posterior samples, where
//! `sigma^2 = alpha_y (alpha0 - alpha_y) / (alpha0^2 (alpha0 + 1))` is the variance of the Dirichlet
//! marginal. The samples are merged into one MDP whose merged action `a + k * A` follows sample `k`
//! of pair `(s, a)`; Guez value iteration (SPEC 2.2, eps 1e-4, squared L2 stop, strict `>` so ties
//! go to the lowest merged index) solves it, and the agent plays `policy[s] mod A`. After each real
//! transition of `(x, u)` the deviation
//! `Delta = sum_y |alpha_last_y / alpha0_last - alpha_y / alpha0| / sigma_last_y`
//! from the snapshot taken at the last resampling is compared with `delta`; `Delta > delta`
//! schedules a resampling for the next decision. `K(x, u)` is recomputed after every update.
//!
//! # `compat = false` (default): the intended algorithm
//! * A snapshot term with zero variance is skipped when its mean did not change and counts as
//!   infinite (forces a resampling) when it did (a transition the snapshot deemed impossible or
//!   certain was contradicted). No NaN can freeze the test.
//! * Every pair has at least one sample (`K >= 1`), so the merged MDP needs no padding: there are no
//!   dummy actions (a pair with `K < Kmax` simply has fewer merged actions).
//! * The snapshot is a full copy.
//!
//! # `compat = true`: the original, quirks included (SPEC 7.3)
//! * (a) NaN freeze: the test is evaluated literally, so a snapshot entry with `alpha_last = 0`
//!   whose current mean is 0 gives `0 / 0 = NaN`, `Delta` is NaN and `NaN > delta` is false. With the
//!   accurate priors every row has zeros that stay zero, so SBOSS samples once, at `t = 0`.
//! * (b) `K(s, a) = 0` when the posterior row has one nonzero entry; such a pair is represented only
//!   by dummy merged actions `a + k * A` (`K(s, a) <= k < Kmax`): self-loops with reward
//!   `INT_MIN = -2147483648`. If every pair has `K = 0` the original computes `x mod 0` and crashes;
//!   here `act` returns an error.
//! * (c) Half-copied snapshot: only indices `< S*A*S / 2` of `alpha_last` and `< S*A / 2` of
//!   `alpha0_last` are copied at each snapshot (the original copies `n * sizeof(uint)` bytes of
//!   doubles); the other entries read as 0, their value in fresh zeroed memory. (For odd sizes the
//!   original also copies the low 4 bytes of the middle element, which are 0 for integer-valued
//!   counts; they are treated as uncopied here.) Through (a), the uncopied pairs never trigger a
//!   resampling, even with the uniform priors.
//!
//! # Solving the merged MDP without materialising it
//! `epsilon = 1e-6` gives 83,334 samples per GC pair, i.e. a merged MDP with 250,002 actions per
//! state. Nothing of that size is built beyond the samples themselves:
//! * the sampled rows are stored compactly, only their support entries (2 numbers per GC sample);
//! * per sweep, the best sample of each pair is found first (value, then lowest sample index
//!   `k`), then the pairs of a state compete on (value, lowest merged index `a + k * A`): exactly the
//!   first maximiser of the full scan over merged indices `0..A*Kmax` with strict `>` (the policy
//!   and the values are bit-identical to a dense solve; a test checks it);
//! * all dummies of a state (compat) have the same value `INT_MIN + gamma * V(s)`, so one is
//!   evaluated, with the lowest dummy index of the state, instead of `Kmax - K` copies per pair;
//! * two-entry rows (every multi-entry row of the accurate GC, GDL and Grid priors): with
//!   `w_y = R + gamma V(y)` the value `p0 w0 + p1 w1` of a sample is affine in `p0` up to rounding,
//!   so the sample with the largest `p0` (if `w0 > w1`) or the smallest (if `w0 < w1`) is the best
//!   one, unless the runner-up's `p0` is within a rigorous rounding-error bound of it. One pass per
//!   resampling records both extremes and their gaps; each sweep then evaluates one sample per pair,
//!   and falls back to the full scan when the bound does not separate them (`w0 == w1`, e.g. before
//!   the values propagate, or a near tie in `p0`). The result is the same floating-point maximum,
//!   with the same lowest-index tie rule, as the full scan (`best_of_two` has the proof);
//! * the Gamma distributions of a row are built once per resampling, not once per draw
//!   (`sample_rows`, bit-identical to repeated `dirichlet::sample_row`).
//!
//! # Termination
//! Guez value iteration has no sweep cap in the original; here it stops after
//! [`GUEZ_VI_MAX_SWEEPS`] sweeps at most. With `INT_MIN` rewards the values reach about
//! `INT_MIN / (1 - gamma)` (-4.3e10 at gamma = 0.95), where one ulp is 7.6e-6: an ulp-level
//! floating-point cycle over S states changes `||V||^2` by about `S * 6e-11`, far below the `1e-8`
//! threshold, so the iteration stops by its own test (about 620 sweeps on GDL). Above gamma = 0.996
//! the ulp of `INT_MIN / (1 - gamma)` exceeds 1e-4 and an ulp-level cycle could defeat the test:
//! the cap then ends the solve. In practice the iteration from `V = 0` settles on an exact
//! floating-point fixed point (the Bellman operator stays monotone in floating point): a test at
//! gamma = 0.999 stops by the test after about 30,000 sweeps.
//!
//! # Randomness and `action_probabilities`
//! The posterior samples are drawn from the agent's own stream, seeded from the `rng` given to
//! `reset`; a pending resampling is carried out by whichever of `act` or `action_probabilities`
//! comes first. The action is then a deterministic function of the agent's state, so
//! `action_probabilities` is a point mass and calling it does not change the trajectory.
//!
//! # Allocation
//! Every buffer is sized at `reset` for the prior's sample counts. `K(s, a)` can grow after an
//! update (the variance of a Dirichlet marginal is not monotone in the counts), and the posterior
//! support can grow (a transition outside the prior support), so the sample buffers grow with
//! `Vec::resize` when a resampling needs more room: the growth is geometric and amortised. It never
//! happens with the shipped accurate priors: their rows start at `alpha = (1, 1)`, the largest
//! variance any later posterior can have (`sigma^2 <= 1 / (4 (alpha0 + 1)) <= 1/12`), and their
//! supports never grow. Buffers never shrink.

use std::sync::Arc;

use rand::{Rng as _, SeedableRng};
use rand_distr::{Distribution, Gamma};

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range, COMPAT};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::{BbrlError, Result};
use crate::invalid;
use crate::model::dirichlet::pick_proportional;
use crate::model::fdm::Fdm;
use crate::model::sparse::RowSupports;
use crate::rng::Rng;
use crate::solve::{GUEZ_VI_EPSILON, GUEZ_VI_MAX_SWEEPS};
use crate::work::{self, Unit};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "sboss",
    display: "SBOSS",
    params: &[
        ParamSpec {
            name: "epsilon",
            ty: ParamType::Float,
            default: None,
            range: Range::above(0.0),
            doc: "resampling threshold on the posterior's standard deviation",
        },
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: None,
            range: Range::at_least(0.0),
            doc: "count of new observations that triggers resampling",
        },
        COMPAT,
    ],
    online_units: &[("epsilon", -1.0)],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example {
            doc: "quick",
            params: &[("epsilon", ParamDefault::Float(1e-3)), ("delta", ParamDefault::Float(7.0))],
        },
        Example {
            doc: "frequent resampling, the original's quirks",
            params: &[
                ("epsilon", ParamDefault::Float(1e-2)),
                ("delta", ParamDefault::Float(1.0)),
                ("compat", ParamDefault::Bool(true)),
            ],
        },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| Ok(Box::new(Sboss::new(r.float("epsilon")?, r.float("delta")?, r.flag("compat")?)?)),
};

/// The reward of the dummy merged actions of the original (`INT_MIN`), compat mode only.
pub const DUMMY_REWARD: f64 = i32::MIN as f64;

/// The most sampled transition probabilities (support entries over all samples of all pairs) a
/// resampling may hold: 2^26 doubles, 512 MiB. A smaller `epsilon` is refused by `learn_offline`
/// rather than exhausting memory (the shipped grids need at most 3.7 million, UGrid at 1e-6).
pub const MAX_SAMPLED_ENTRIES: usize = 1 << 26;

const NO_DUMMY: usize = usize::MAX;
/// Unit roundoff of f64 (half an ulp of 1).
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// SBOSS with sample-count parameter `epsilon` and resampling threshold `delta` (SPEC 4.8). See
/// the module documentation for `compat`.
#[derive(Clone, Debug)]
pub struct Sboss {
    epsilon: f64,
    delta: f64,
    compat: bool,
    state: Option<SbossState>,
}

/// The compact merged MDP of one resampling.
#[derive(Clone, Debug, Default)]
struct MergedModel {
    /// Samples drawn for each pair (`K(s, a)` at the resampling).
    n_samples: Vec<u32>,
    /// Support size `m` of each pair's posterior at the resampling.
    support_len: Vec<u32>,
    /// The support of each pair, `S` slots per pair, first `support_len` used.
    support: Vec<u32>,
    /// Where each pair's samples start in `probs` (`n_samples * support_len` entries, sample-major,
    /// in draw order: the sample at position `k` is merged action `a + k * A`).
    prob_start: Vec<usize>,
    /// Two-entry pairs: their extreme samples (for `best_of_two`).
    extremes: Vec<TwoEntryExtremes>,
    /// The sampled probabilities on the support.
    probs: Vec<f64>,
    /// Per state: the lowest merged index of its dummy actions, or `NO_DUMMY`.
    dummy: Vec<usize>,
}

/// The samples of a two-entry pair with the largest and the smallest `p0`, how far the runner-up
/// is from each, and the rounding of the rows (see `best_of_two`); also the pair's two next states
/// and rewards, so that a sweep reads one record per pair.
#[derive(Clone, Copy, Debug, Default)]
struct TwoEntryExtremes {
    /// The support `(y0, y1)` and the rewards `R(s, a, y0)`, `R(s, a, y1)`.
    next: [u32; 2],
    rewards: [f64; 2],
    /// Position of a sample with the largest `p0`, and `p0(top) - max p0(others)` (+inf if alone).
    top: u32,
    top_gap: f64,
    /// Position of a sample with the smallest `p0`, and `min p0(others) - p0(bottom)`.
    bottom: u32,
    bottom_gap: f64,
    /// An upper bound on `|p0 + p1 - 1|` (exact reals) over the pair's samples.
    sum_error: f64,
}

impl TwoEntryExtremes {
    /// One pass over the samples `(p0, p1)` of a pair (at least one).
    fn of(probs: &[f64]) -> Self {
        let (mut top, mut max1, mut max2) = (0, f64::NEG_INFINITY, f64::NEG_INFINITY);
        let (mut bottom, mut min1, mut min2) = (0, f64::INFINITY, f64::INFINITY);
        let mut sum_error = 0.0f64;
        for (i, p) in probs.chunks_exact(2).enumerate() {
            let (p0, p1) = (p[0], p[1]);
            if p0 > max1 {
                (max2, max1, top) = (max1, p0, i);
            } else if p0 > max2 {
                max2 = p0;
            }
            if p0 < min1 {
                (min2, min1, bottom) = (min1, p0, i);
            } else if p0 < min2 {
                min2 = p0;
            }
            // fl(p0 + p1) - 1 is exact (Sterbenz); the rounding of the sum adds at most 1.01 u.
            sum_error = sum_error.max(((p0 + p1) - 1.0).abs() + 1.01 * UNIT_ROUNDOFF);
        }
        Self {
            next: [0; 2],
            rewards: [0.0; 2],
            top: top as u32,
            top_gap: max1 - max2,
            bottom: bottom as u32,
            bottom_gap: min2 - min1,
            sum_error,
        }
    }
}

#[derive(Clone, Debug)]
struct SbossState {
    n_states: usize,
    n_actions: usize,
    gamma: f64,
    theta: Vec<f64>,
    prior_totals: Vec<f64>,
    prior_support: RowSupports,
    prior_samples: Vec<u32>,
    rewards: Arc<[f64]>,
    /// Posterior `alpha = theta + counts`, its row totals and support.
    alpha: Vec<f64>,
    alpha0: Vec<f64>,
    support: RowSupports,
    /// The snapshot taken at the last resampling.
    alpha_last: Vec<f64>,
    alpha0_last: Vec<f64>,
    /// `K(s, a)`, kept up to date after every transition.
    samples_per_pair: Vec<u32>,
    do_sample: bool,
    /// The agent's sampling stream, seeded at reset.
    rng: Rng,
    merged: MergedModel,
    values: Vec<f64>,
    scratch: Vec<f64>,
    /// Merged index of the greedy action of each state (the agent plays it `mod A`).
    merged_policy: Vec<usize>,
    /// The Gamma distributions of one posterior row (`S`), for `sample_rows`.
    gammas: Vec<Option<Gamma<f64>>>,
    /// `R(s, a, y) + gamma V(y)` over a pair's support (`S`).
    weights: Vec<f64>,
    resamples: u64,
    last_sweeps: usize,
}

/// `K = max_y ceil(sigma^2 / epsilon)` of one posterior row (SPEC 4.8); at least 1 unless `compat`.
pub fn sample_count(alpha: &[f64], alpha0: f64, epsilon: f64, compat: bool) -> u32 {
    sample_count_of(alpha.iter().copied(), alpha0, epsilon, compat)
}

/// [`sample_count`] over some entries of a row; entries left out must be 0 (their variance is 0,
/// so they never raise the maximum).
#[inline]
fn sample_count_of(alpha: impl Iterator<Item = f64>, alpha0: f64, epsilon: f64, compat: bool) -> u32 {
    let mut k = 0u32;
    for a in alpha {
        let variance = a * (alpha0 - a) / (alpha0 * alpha0 * (alpha0 + 1.0));
        // `as u32` saturates (and maps NaN and rounding-negative values to 0); learn_offline
        // refuses an epsilon whose sample counts would not fit in memory.
        k = k.max((variance / epsilon).ceil() as u32);
    }
    if compat {
        k
    } else {
        k.max(1)
    }
}

/// The accumulation of the original's inner loop, `q = 0; q += P(y) (R + gamma V(y))` in support
/// order, with `w` holding `R + gamma V(y)`. Every evaluation goes through here, so the two-entry
/// shortcut and the full scan compute bit-identical values.
#[inline(always)]
fn dot(p: &[f64], w: &[f64]) -> f64 {
    let mut q = 0.0;
    for (pi, wi) in p.iter().zip(w) {
        q += pi * wi;
    }
    q
}

/// Samples evaluated side by side in [`best_by_scan`].
const SCAN_LANES: usize = 2;

/// The best sample of a pair by full scan: the largest value, ties to the lowest draw index.
///
/// The samples are evaluated [`SCAN_LANES`] at a time, each with its own accumulator: every
/// value is still [`dot`]'s sum, term by term in support order (so the same bits), but the
/// independent sums overlap instead of each waiting on the previous addition, which on wide rows
/// (the uniform priors' 5 to 25 next states) bounded the scan by the adder's latency. Two lanes:
/// four were faster on UGC and UGDL but slower on UGrid, whose 30 MB of samples per sweep make
/// the scan a stream from memory (measured at ε = 1e-6 on an AMD EPYC Zen 5).
#[inline]
fn best_by_scan(probs: &[f64], w: &[f64]) -> (f64, u32) {
    let m = w.len();
    let mut best = f64::NEG_INFINITY;
    let mut best_k = u32::MAX;
    let mut k = 0_u32;
    // Strict `>` in draw order: ties keep the lowest index.
    let mut consider = |q: f64| {
        if q > best {
            best = q;
            best_k = k;
        }
        k += 1;
    };
    let mut blocks = probs.chunks_exact(SCAN_LANES * m);
    for block in &mut blocks {
        let (p0, p1) = block.split_at(m);
        let (mut q0, mut q1) = (0.0, 0.0);
        for ((&a, &b), &wy) in p0.iter().zip(p1).zip(w) {
            q0 += a * wy;
            q1 += b * wy;
        }
        [q0, q1].into_iter().for_each(&mut consider);
    }
    for p in blocks.remainder().chunks_exact(m) {
        consider(dot(p, w));
    }
    (best, best_k)
}

/// The best sample of a two-entry pair: exactly `best_by_scan`, usually in one evaluation.
///
/// Write `L(p) = w1 + p (w0 - w1)`. For a sample `(p0, p1)` the computed value `q` satisfies
/// `|q - L(p0)| <= 2.01 u (|w0| + |w1|) + e |w1|`, with `u` the unit roundoff and
/// `e >= |p0 + p1 - 1|` (`sum_error`); `err` below is 4 times that bound (the slack absorbs the
/// rounding of `err`, `d` and the test itself). If `w0 > w1`, every other sample has `L` at least
/// `top_gap * (w0 - w1)` below the top sample's; when that exceeds `2 err`, their computed values
/// are strictly below the top sample's, which is then the unique maximiser. Likewise with the
/// bottom sample when `w0 < w1`. Otherwise (`w0 == w1`, or a near tie in `p0`) all are scanned.
///
/// The third value says whether it scanned every sample (`true`) or read one extreme (counted work).
#[inline]
fn best_of_two(probs: &[f64], w0: f64, w1: f64, extremes: &TwoEntryExtremes) -> (f64, u32, bool) {
    let w = [w0, w1];
    let d = w0 - w1;
    let err = 4.0 * (2.01 * UNIT_ROUNDOFF * (w0.abs() + w1.abs()) + extremes.sum_error * w1.abs()) + f64::MIN_POSITIVE;
    let (k, gap) = if d > 0.0 { (extremes.top, extremes.top_gap) } else { (extremes.bottom, extremes.bottom_gap) };
    // NaN-safe: `inf * 0` (one sample, d == 0) is NaN and falls through to the scan.
    if gap * d.abs() > 2.0 * err {
        let i = 2 * k as usize;
        return (dot(&probs[i..i + 2], &w), k, false);
    }
    let (q, k) = best_by_scan(probs, &w);
    (q, k, true)
}

/// `out.len() / m` draws of `Dir(alpha)` restricted to `support` (`m` entries), written
/// sample-major in support order: bit-identical to as many calls of [`crate::model::dirichlet::sample_row`] (the same
/// Gamma variates from the same stream, the same normalisation, the same underflow fallback), but
/// each Gamma distribution is built once per row rather than once per draw. A test checks the
/// equality.
fn sample_rows(alpha: &[f64], support: &[u32], gammas: &mut [Option<Gamma<f64>>], out: &mut [f64], rng: &mut Rng) {
    let m = support.len();
    for (g, &y) in gammas.iter_mut().zip(support) {
        // As `dirichlet::gamma`: an invalid shape (impossible on the support) gives 0.
        *g = Gamma::new(alpha[y as usize], 1.0).ok();
    }
    for sample in out.chunks_exact_mut(m) {
        let mut total = 0.0;
        for (slot, g) in sample.iter_mut().zip(gammas.iter()) {
            let v = g.as_ref().map_or(0.0, |g| g.sample(rng));
            *slot = v;
            total += v;
        }
        if total >= 1e-300 && total.is_finite() {
            let inv = 1.0 / total;
            for slot in sample.iter_mut() {
                *slot *= inv;
            }
        } else {
            sample.fill(0.0);
            let y = pick_proportional(alpha, support, rng);
            let pos = support.iter().position(|&z| z as usize == y).unwrap_or(0);
            sample[pos] = 1.0;
        }
    }
}

impl SbossState {
    fn rows(&self) -> usize {
        self.n_states * self.n_actions
    }

    /// Lays out and draws the samples of every pair, records the extremes of the two-entry pairs
    /// and marks the dummies.
    fn draw_samples(&mut self, compat: bool) -> Result<()> {
        let (ns, na) = (self.n_states, self.n_actions);
        let rows = self.rows();
        let kmax = self.samples_per_pair.iter().copied().max().unwrap_or(0);
        if kmax == 0 {
            return Err(BbrlError::Agent(
                "SBOSS (compat): every state-action pair has K = 0 samples, so the merged MDP has no action \
                 (the original computes `x mod 0` here)"
                    .into(),
            ));
        }
        let merged = &mut self.merged;
        let mut n_probs = 0usize;
        for row in 0..rows {
            let k = self.samples_per_pair[row] as usize;
            let support = self.support.row(row);
            let m = support.len();
            merged.n_samples[row] = k as u32;
            merged.support_len[row] = m as u32;
            merged.support[row * ns..row * ns + m].copy_from_slice(support);
            merged.prob_start[row] = n_probs;
            n_probs += k * m;
        }
        if n_probs > MAX_SAMPLED_ENTRIES {
            return Err(BbrlError::Agent(format!(
                "SBOSS needs {n_probs} sampled probabilities, more than the limit of {MAX_SAMPLED_ENTRIES}"
            )));
        }
        // Growth only (never shrinks); `Vec::resize` grows the capacity geometrically, so the
        // cost is amortised (module doc, "Allocation").
        if merged.probs.len() < n_probs {
            merged.probs.resize(n_probs, 0.0);
        }
        for row in 0..rows {
            let k = merged.n_samples[row] as usize;
            let m = merged.support_len[row] as usize;
            let support = &merged.support[row * ns..row * ns + m];
            let alpha = &self.alpha[row * ns..(row + 1) * ns];
            let start = merged.prob_start[row];
            let probs = &mut merged.probs[start..start + k * m];
            if m == 1 {
                // Dir with one nonzero concentration is a point mass: exactly 1, no draw.
                probs.fill(1.0);
                continue;
            }
            sample_rows(alpha, support, &mut self.gammas, probs, &mut self.rng);
            work::add(Unit::GammaVariates, (k * m) as u64);
            if m == 2 && k > 0 {
                let (y0, y1) = (support[0] as usize, support[1] as usize);
                merged.extremes[row] = TwoEntryExtremes {
                    next: [y0 as u32, y1 as u32],
                    rewards: [self.rewards[row * ns + y0], self.rewards[row * ns + y1]],
                    ..TwoEntryExtremes::of(probs)
                };
            }
        }
        for s in 0..ns {
            merged.dummy[s] = NO_DUMMY;
            if compat {
                for a in 0..na {
                    let k = self.samples_per_pair[s * na + a];
                    if k < kmax {
                        merged.dummy[s] = merged.dummy[s].min(a + k as usize * na);
                    }
                }
            }
        }
        Ok(())
    }

    /// Guez value iteration on the compact merged model (see the module doc); returns the sweeps
    /// and the merged rows and sampled entries it read over all sweeps (a two-entry pair read
    /// through its extremes counts as one row of two entries, not as its K samples).
    fn solve_merged(&mut self) -> (usize, usize, usize) {
        let (ns, na, gamma) = (self.n_states, self.n_actions, self.gamma);
        let merged = &self.merged;
        let threshold = GUEZ_VI_EPSILON * GUEZ_VI_EPSILON;
        self.values.fill(0.0);
        let mut sweeps = 0;
        // Plain locals, added to the thread's counters once per solve (the work module's rule).
        let (mut rows_read, mut entries_read) = (0usize, 0usize);
        loop {
            for s in 0..ns {
                // The original starts from (-inf, action 0) and keeps the first strict maximum in
                // merged-index order; (value, lowest merged index) is the same order-free rule.
                let mut best = f64::NEG_INFINITY;
                let mut best_index = 0usize;
                for a in 0..na {
                    let row = s * na + a;
                    let k = merged.n_samples[row] as usize;
                    if k == 0 {
                        continue;
                    }
                    let m = merged.support_len[row] as usize;
                    let probs = &merged.probs[merged.prob_start[row]..merged.prob_start[row] + k * m];
                    // `w_y = R(s, a, y) + gamma V(y)`, as the original's `R + gamma * Vold[s']`.
                    let (q, j) = if m == 2 {
                        let pair = &merged.extremes[row];
                        let w0 = pair.rewards[0] + gamma * self.values[pair.next[0] as usize];
                        let w1 = pair.rewards[1] + gamma * self.values[pair.next[1] as usize];
                        let (q, j, scanned) = best_of_two(probs, w0, w1, pair);
                        let read = if scanned { k } else { 1 };
                        rows_read += read;
                        entries_read += 2 * read;
                        (q, j)
                    } else {
                        rows_read += k;
                        // The K sampled rows, and the row's weights (R + gamma V) computed once.
                        entries_read += (k + 1) * m;
                        let base = row * ns;
                        let support = &merged.support[base..base + m];
                        for (w, &y) in self.weights[..m].iter_mut().zip(support) {
                            *w = self.rewards[base + y as usize] + gamma * self.values[y as usize];
                        }
                        best_by_scan(probs, &self.weights[..m])
                    };
                    let merged_index = a + j as usize * na;
                    if q > best || (q == best && merged_index < best_index) {
                        best = q;
                        best_index = merged_index;
                    }
                }
                let dummy = merged.dummy[s];
                if dummy != NO_DUMMY {
                    // A self-loop with P(s -> s) = 1 and reward INT_MIN; the other terms of the
                    // original's dense sum are exact zeros.
                    let q = 1.0 * (DUMMY_REWARD + gamma * self.values[s]);
                    if q > best || (q == best && dummy < best_index) {
                        best = q;
                        best_index = dummy;
                    }
                }
                self.scratch[s] = best;
                self.merged_policy[s] = best_index;
            }
            let change: f64 = self.scratch.iter().zip(&self.values).map(|(n, o)| (n - o) * (n - o)).sum();
            self.values.copy_from_slice(&self.scratch);
            sweeps += 1;
            if change <= threshold || sweeps >= GUEZ_VI_MAX_SWEEPS {
                return (sweeps, rows_read, entries_read);
            }
        }
    }

    /// Draws the merged model, solves it and takes the snapshot (SPEC 4.8 getAction, steps 1–4).
    fn resample(&mut self, compat: bool) -> Result<()> {
        self.draw_samples(compat)?;
        let (sweeps, rows_read, entries_read) = self.solve_merged();
        self.last_sweeps = sweeps;
        // The merged rows and sampled entries the sweeps read: a two-entry pair usually costs one
        // read of its extremes whatever its K, which counting K rows per sweep overstated by
        // orders of magnitude at small epsilon.
        work::add(Unit::ViRowSweeps, rows_read as u64);
        work::add(Unit::ViEntrySweeps, entries_read as u64);
        let entries = (0..self.rows()).map(|row| self.support.row(row).len() as u64).sum();
        work::add_solve(entries, self.n_states);
        if compat {
            let half = self.alpha.len() / 2;
            self.alpha_last[..half].copy_from_slice(&self.alpha[..half]);
            let half0 = self.alpha0.len() / 2;
            self.alpha0_last[..half0].copy_from_slice(&self.alpha0[..half0]);
        } else {
            self.alpha_last.copy_from_slice(&self.alpha);
            self.alpha0_last.copy_from_slice(&self.alpha0);
        }
        self.resamples += 1;
        Ok(())
    }

    /// The deviation `Delta` of pair `row` from the snapshot (SPEC 4.8, step 2).
    fn deviation(&self, row: usize, compat: bool) -> f64 {
        let ns = self.n_states;
        let (a0_last, a0) = (self.alpha0_last[row], self.alpha0[row]);
        let mut delta = 0.0;
        for y in 0..ns {
            let (a_last, a) = (self.alpha_last[row * ns + y], self.alpha[row * ns + y]);
            let (mean_last, mean) = (a_last / a0_last, a / a0);
            let variance_last = a_last * (a0_last - a_last) / (a0_last * a0_last * (a0_last + 1.0));
            if compat || variance_last > 0.0 {
                // Literal in compat: 0/0 terms make Delta NaN, and a NaN sum stays NaN, so it can be
                // returned at once.
                let term = (mean_last - mean).abs() / variance_last.sqrt();
                if term.is_nan() {
                    return f64::NAN;
                }
                delta += term;
            } else if mean_last != mean {
                return f64::INFINITY;
            }
        }
        delta
    }
}

impl Sboss {
    /// `epsilon > 0` (finite) sets the sample counts, `delta >= 0` the resampling threshold.
    pub fn new(epsilon: f64, delta: f64, compat: bool) -> Result<Self> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(invalid!("epsilon must be a finite number > 0, got {epsilon}"));
        }
        if !(delta.is_finite() && delta >= 0.0) {
            return Err(invalid!("delta must be a finite number >= 0, got {delta}"));
        }
        Ok(Self { epsilon, delta, compat, state: None })
    }

    /// The current `K(s, a)`, indexed `s * A + a` (after `learn_offline`).
    pub fn sample_counts(&self) -> Option<&[u32]> {
        self.state.as_ref().map(|st| &st.samples_per_pair[..])
    }

    /// How many times the merged model was sampled and solved since the last reset.
    pub fn resamples(&self) -> u64 {
        self.state.as_ref().map_or(0, |st| st.resamples)
    }

    fn state(&mut self) -> Result<&mut SbossState> {
        // The name is formatted only on error: `act` and `observe` must not allocate.
        if self.state.is_none() {
            return Err(not_trained(&self.name()));
        }
        Ok(self.state.as_mut().expect("checked above"))
    }

    /// Carries out a pending resampling.
    fn ensure_policy(&mut self) -> Result<&SbossState> {
        let compat = self.compat;
        let st = self.state()?;
        if st.do_sample {
            st.resample(compat)?;
            st.do_sample = false;
        }
        Ok(st)
    }
}

impl Agent for Sboss {
    fn name(&self) -> String {
        let compat = if self.compat { ", compat" } else { "" };
        format!("SBOSS (epsilon = {}, delta = {}{compat})", self.epsilon, self.delta)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let rows = ns * na;
        let theta = prior.theta().to_vec();
        let prior_totals: Vec<f64> = theta.chunks(ns).map(|r| r.iter().sum()).collect();
        let prior_samples: Vec<u32> = (0..rows)
            .map(|row| sample_count(&theta[row * ns..(row + 1) * ns], prior_totals[row], self.epsilon, self.compat))
            .collect();
        let entries: f64 = (0..rows).map(|row| prior_samples[row] as f64 * prior.support().row(row).len() as f64).sum();
        if entries > MAX_SAMPLED_ENTRIES as f64 || prior_samples.contains(&u32::MAX) {
            return Err(invalid!(
                "epsilon = {} is too small for this prior: SBOSS would sample {entries:.3e} transition probabilities \
                 (limit {MAX_SAMPLED_ENTRIES})",
                self.epsilon
            ));
        }
        self.state = Some(SbossState {
            n_states: ns,
            n_actions: na,
            gamma: setting.gamma,
            alpha: theta.clone(),
            alpha0: prior_totals.clone(),
            support: prior.support().clone(),
            alpha_last: vec![0.0; rows * ns],
            alpha0_last: vec![0.0; rows],
            samples_per_pair: prior_samples.clone(),
            theta,
            prior_totals,
            prior_support: prior.support().clone(),
            prior_samples,
            rewards: prior.rewards_arc(),
            do_sample: true,
            rng: Rng::seed_from_u64(0),
            // Sized at reset, so that the clones made for each test MDP stay small.
            merged: MergedModel::default(),
            values: vec![0.0; ns],
            scratch: vec![0.0; ns],
            merged_policy: vec![0; ns],
            gammas: vec![None; ns],
            weights: vec![0.0; ns],
            resamples: 0,
            last_sweeps: 0,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.alpha.copy_from_slice(&st.theta);
        st.alpha0.copy_from_slice(&st.prior_totals);
        st.support.clone_from(&st.prior_support);
        st.samples_per_pair.copy_from_slice(&st.prior_samples);
        st.alpha_last.fill(0.0);
        st.alpha0_last.fill(0.0);
        st.do_sample = true;
        st.rng = Rng::seed_from_u64(rng.random());
        st.resamples = 0;
        st.last_sweeps = 0;
        // The reset of the counts and of the last snapshot's: S·A·S entries each.
        work::add(Unit::ModelEntries, (2 * st.alpha.len()) as u64);
        // Size the merged model for the prior's sample counts (module doc, "Allocation").
        let (ns, rows) = (st.n_states, st.rows());
        let merged = &mut st.merged;
        merged.n_samples.resize(rows, 0);
        merged.support_len.resize(rows, 0);
        merged.support.resize(rows * ns, 0);
        merged.prob_start.resize(rows, 0);
        merged.extremes.resize(rows, TwoEntryExtremes::default());
        merged.dummy.resize(ns, NO_DUMMY);
        let n_probs: usize =
            (0..rows).map(|row| st.prior_samples[row] as usize * st.prior_support.row(row).len()).sum();
        if merged.probs.len() < n_probs {
            merged.probs.resize(n_probs, 0.0);
        }
        Ok(())
    }

    fn act(&mut self, state: usize, _rng: &mut Rng) -> Result<usize> {
        let st = self.ensure_policy()?;
        // "fit-action-space": the merged action modulo A.
        Ok(st.merged_policy[state] % st.n_actions)
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (compat, epsilon, delta) = (self.compat, self.epsilon, self.delta);
        let st = self.state()?;
        let ns = st.n_states;
        let row = t.state * st.n_actions + t.action;
        let i = row * ns + t.next_state;
        if st.alpha[i] == 0.0 {
            st.support.insert(row, t.next_state);
        }
        st.alpha[i] += 1.0;
        st.alpha0[row] += 1.0;
        let tested = !st.do_sample;
        if tested && st.deviation(row, compat) > delta {
            st.do_sample = true;
        }
        let alpha = &st.alpha[row * ns..(row + 1) * ns];
        let on_support = st.support.row(row).iter().map(|&y| alpha[y as usize]);
        st.samples_per_pair[row] = sample_count_of(on_support, st.alpha0[row], epsilon, compat);
        // The deviation test read the row's S states (when no resample was pending), the sample
        // count its support.
        work::add(Unit::ModelEntries, (if tested { ns } else { 0 } + st.support.row(row).len()) as u64);
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.ensure_policy()?;
        let action = st.merged_policy[state] % st.n_actions;
        out.fill(0.0);
        out[action] = 1.0;
        Ok(())
    }

    /// Nothing learned offline: learn_offline only derives the per-pair sample counts from the prior and sizes buffers.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::test_support::{
        gc_prior, point_mass_prior, rollout, train, two_state_mdp, uniform_prior, SETTING,
    };
    use crate::model::dirichlet::sample_row;
    use crate::model::tables::TabularView;
    use crate::rng::stream;
    use crate::solve::guez_value_iteration;

    fn trained(epsilon: f64, delta: f64, compat: bool, prior: &Fdm) -> Sboss {
        let mut agent = Sboss::new(epsilon, delta, compat).unwrap();
        train(&mut agent, prior);
        agent
    }

    fn reset(agent: &mut Sboss, gamma: f64, seed: u64) {
        let context = TaskContext { setting: Setting { gamma, horizon: 250 }, true_mdp: None };
        agent.start_task(&context, &mut stream(seed, 0, 0)).unwrap();
    }

    fn st(agent: &Sboss) -> &SbossState {
        agent.state.as_ref().unwrap()
    }

    #[test]
    fn sample_counts_follow_the_dirichlet_variance() {
        // SPEC 4.8: sigma^2 = 1/12 for alpha = (1, 1): 83333.3 -> 83334 at 1e-6, 83.3 -> 84 at 1e-3.
        assert_eq!(sample_count(&[1.0, 1.0, 0.0, 0.0, 0.0], 2.0, 1e-6, true), 83334);
        assert_eq!(sample_count(&[1.0, 0.0, 1.0], 2.0, 1e-3, false), 84);
        // All ones on 5, 9, 25 states: 4/150, 8/810, 24/16250.
        assert_eq!(sample_count(&[1.0; 5], 5.0, 1e-6, true), 26667);
        assert_eq!(sample_count(&[1.0; 9], 9.0, 1e-6, true), 9877);
        assert_eq!(sample_count(&[1.0; 25], 25.0, 1e-6, true), 1477);
        // Dir(2, 1): sigma^2 = 2 / 36 = 0.0556 -> 6 at 1e-2.
        assert_eq!(sample_count(&[2.0, 1.0], 3.0, 1e-2, true), 6);
        // One nonzero entry: no variance, K = 0 in compat and 1 otherwise.
        assert_eq!(sample_count(&[0.0, 3.0, 0.0], 3.0, 1e-6, true), 0);
        assert_eq!(sample_count(&[0.0, 3.0, 0.0], 3.0, 1e-6, false), 1);

        let gc = gc_prior();
        let agent = trained(1e-6, 1.0, true, &gc);
        assert!(agent.sample_counts().unwrap().iter().all(|&k| k == 83334));
        let agent = trained(1e-6, 1.0, true, &uniform_prior(&gc));
        assert!(agent.sample_counts().unwrap().iter().all(|&k| k == 26667));

        // The samples actually drawn, and K recomputed after an update.
        let mut agent = trained(1e-3, 7.0, false, &gc);
        reset(&mut agent, 0.95, 1);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        let merged = &st(&agent).merged;
        assert!(merged.n_samples.iter().all(|&k| k == 84));
        assert_eq!(merged.prob_start[14] + 84 * 2, 15 * 84 * 2);
        agent.observe(Transition { state: 0, action: 0, reward: 0.0, next_state: 1 }, &mut stream(0, 0, 0)).unwrap();
        // alpha = (1, 2): sigma^2 = 2/36 -> 55.6 -> 56.
        assert_eq!(agent.sample_counts().unwrap()[0], 56);
        assert_eq!(agent.sample_counts().unwrap()[1], 84);
    }

    /// The merged MDP of the agent's last resampling, built densely with A * Kmax actions per state
    /// (the original's layout), solved by the shared Guez value iteration.
    fn dense_reference(st: &SbossState, compat: bool) -> (Vec<f64>, Vec<usize>, usize) {
        let (ns, na) = (st.n_states, st.n_actions);
        let m = &st.merged;
        let kmax = m.n_samples.iter().copied().max().unwrap() as usize;
        let am = na * kmax;
        let mut p = vec![0.0; ns * am * ns];
        let mut r = vec![0.0; ns * am * ns];
        for s in 0..ns {
            for a in 0..na {
                let row = s * na + a;
                let k_row = m.n_samples[row] as usize;
                let len = m.support_len[row] as usize;
                for k in 0..kmax {
                    let base = (s * am + a + k * na) * ns;
                    if k < k_row {
                        for (i, &y) in m.support[row * ns..row * ns + len].iter().enumerate() {
                            p[base + y as usize] = m.probs[m.prob_start[row] + k * len + i];
                        }
                        r[base..base + ns].copy_from_slice(&st.rewards[row * ns..(row + 1) * ns]);
                    } else {
                        // compat: the original's dummy; default: no action (never chosen).
                        p[base + s] = 1.0;
                        r[base..base + ns].fill(if compat { DUMMY_REWARD } else { f64::NEG_INFINITY });
                    }
                }
            }
        }
        let support = RowSupports::from_table(ns, am, &p);
        let view = TabularView { n_states: ns, n_actions: am, transitions: &p, rewards: &r, support: &support };
        let (mut v, mut pi) = (vec![0.0; ns], vec![0; ns]);
        let sweeps = guez_value_iteration(view, None, st.gamma, GUEZ_VI_EPSILON, &mut v, &mut pi);
        (v, pi, sweeps)
    }

    /// A random prior mixing rows with 1, 2 and 3 next states and small integer rewards (so that
    /// ties and equal weights `w0 == w1` occur).
    fn mixed_prior(seed: u64) -> Fdm {
        let (ns, na) = (4, 3);
        let mut rng = stream(seed, 9, 0);
        let mut theta = vec![0.0; ns * na * ns];
        let mut rewards = vec![0.0; ns * na * ns];
        for row in 0..ns * na {
            let m = rng.random_range(1..=3usize);
            for _ in 0..m {
                theta[row * ns + rng.random_range(0..ns)] = rng.random_range(0.3..3.0);
            }
            for y in 0..ns {
                rewards[row * ns + y] = rng.random_range(0..3) as f64;
            }
        }
        Fdm::new(ns, na, theta, rewards, Some(0)).unwrap()
    }

    #[test]
    fn compact_solve_is_bit_identical_to_the_dense_merged_mdp() {
        let mut compared = [0usize; 2];
        for seed in 0..12 {
            let prior = mixed_prior(seed);
            let test_mdp = uniform_prior(&prior).sample_mdp(&mut stream(seed, 8, 0));
            for compat in [false, true] {
                let mut agent = trained(0.004, 0.5, compat, &prior);
                reset(&mut agent, [0.95, 0.9, 0.99][seed as usize % 3], seed);
                let mut rng = stream(seed, 7, 0);
                let mut state = 0;
                for step in 0..40 {
                    // Force a resampling now and then (the posterior, supports and K change).
                    if step % 10 == 0 {
                        agent.state.as_mut().unwrap().do_sample = true;
                    }
                    let action = match agent.act(state, &mut rng) {
                        Ok(a) => a,
                        Err(e) => {
                            // compat with every pair deterministic: nothing to compare.
                            assert!(compat && e.to_string().contains("K = 0"), "{e}");
                            break;
                        }
                    };
                    if step % 10 == 0 {
                        let s = st(&agent);
                        let (v, pi, sweeps) = dense_reference(s, compat);
                        assert_eq!(sweeps, s.last_sweeps, "seed {seed} compat {compat} step {step}");
                        assert_eq!(pi, s.merged_policy, "seed {seed} compat {compat} step {step}");
                        let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&v), bits(&s.values), "seed {seed} compat {compat} step {step}");
                        compared[compat as usize] += 1;
                    }
                    let (next_state, reward) = test_mdp.step(state, action, &mut rng);
                    agent.observe(Transition { state, action, reward, next_state }, &mut rng).unwrap();
                    state = next_state;
                }
            }
        }
        assert!(compared[0] == 48 && compared[1] >= 30, "{compared:?}");
    }

    #[test]
    fn blocked_scan_equals_the_one_by_one_scan() {
        // Every row width of the built-in problems and beyond, sample counts around the block
        // size, and values with exact ties (probabilities on a coarse grid), against the plain
        // loop of `dot` in draw order: the same value and index, bit for bit.
        let mut rng = stream(5, 0, 0);
        for m in 1..=26 {
            for k in [0, 1, 7, 8, 9, 16, 23, 40] {
                let probs: Vec<f64> = (0..k * m).map(|_| f64::from(rng.random_range(0..4_u8)) * 0.25).collect();
                let w: Vec<f64> = (0..m).map(|_| rng.random_range(-2.0..3.0)).collect();
                let (mut best, mut best_k) = (f64::NEG_INFINITY, u32::MAX);
                for (j, p) in probs.chunks_exact(m).enumerate() {
                    let q = dot(p, &w);
                    if q > best {
                        (best, best_k) = (q, j as u32);
                    }
                }
                let (q, j) = best_by_scan(&probs, &w);
                assert_eq!((q.to_bits(), j), (best.to_bits(), best_k), "m = {m}, k = {k}");
            }
        }
    }

    #[test]
    fn two_entry_window_matches_the_full_scan() {
        let mut rng = stream(4, 0, 0);
        let weights = [
            (0.0, 0.0),
            (1.0, 1.0),
            (3.0, 3.0 + 1e-15),
            (3.0 + 1e-15, 3.0),
            (2.0, 10.0),
            (10.0, 2.0),
            (DUMMY_REWARD * 20.0, DUMMY_REWARD * 20.0 + 1e-4),
            (DUMMY_REWARD * 20.0 + 3.0, -5.0),
            (-1e-300, 1e-300),
        ];
        for trial in 0..300 {
            let n = rng.random_range(1..60usize);
            let alpha = [rng.random_range(0.05..5.0), rng.random_range(0.05..5.0)];
            let mut probs = vec![0.0; 2 * n];
            let mut row = [0.0; 2];
            for i in 0..n {
                sample_row(&alpha, &[0, 1], &mut row, &mut rng);
                // Repeated samples make exact ties in p0.
                if i > 0 && trial % 3 == 0 && rng.random::<f64>() < 0.3 {
                    row.copy_from_slice(&probs[2 * (i - 1)..2 * i]);
                }
                probs[2 * i..2 * i + 2].copy_from_slice(&row);
            }
            let extremes = TwoEntryExtremes::of(&probs);
            for &(w0, w1) in &weights {
                // The original's loop, written out: first strict maximum in draw order.
                let (mut best, mut best_k) = (f64::NEG_INFINITY, u32::MAX);
                for k in 0..n {
                    let mut q = 0.0;
                    q += probs[2 * k] * w0;
                    q += probs[2 * k + 1] * w1;
                    if q > best {
                        (best, best_k) = (q, k as u32);
                    }
                }
                let fast = best_of_two(&probs, w0, w1, &extremes);
                assert_eq!((fast.0.to_bits(), fast.1), (best.to_bits(), best_k), "trial {trial} w {w0} {w1}");
            }
        }
    }

    #[test]
    fn batched_rows_equal_sample_row() {
        let mut gammas = vec![None; 6];
        for seed in 0..200 {
            let mut rng = stream(seed, 11, 0);
            let alpha: Vec<f64> = (0..6)
                .map(|_| match rng.random_range(0..4) {
                    0 => 0.0,
                    1 => 1.0,
                    2 => rng.random_range(1e-3..0.9),
                    _ => rng.random_range(1.0..30.0),
                })
                .collect();
            let support: Vec<u32> = (0..6u32).filter(|&y| alpha[y as usize] > 0.0).collect();
            if support.is_empty() {
                continue;
            }
            let k = rng.random_range(1..20);
            let (mut a, mut b) = (stream(seed, 12, 0), stream(seed, 12, 0));
            let mut batched = vec![0.0; k * support.len()];
            sample_rows(&alpha, &support, &mut gammas, &mut batched, &mut a);
            let mut row = [0.0; 6];
            for j in 0..k {
                sample_row(&alpha, &support, &mut row, &mut b);
                for (i, &y) in support.iter().enumerate() {
                    assert_eq!(batched[j * support.len() + i].to_bits(), row[y as usize].to_bits());
                }
            }
            assert_eq!(a.random::<u64>(), b.random::<u64>(), "same stream position");
        }
        // The underflow fallback too.
        let alpha = [1e-300, 0.0, 1e-300];
        let (mut a, mut b) = (stream(1, 12, 0), stream(1, 12, 0));
        let mut batched = [0.0; 10];
        sample_rows(&alpha, &[0, 2], &mut gammas, &mut batched, &mut a);
        let mut row = [0.0; 3];
        for j in 0..5 {
            sample_row(&alpha, &[0, 2], &mut row, &mut b);
            assert_eq!([batched[2 * j], batched[2 * j + 1]], [row[0], row[2]]);
        }
    }

    #[test]
    fn compat_freezes_on_nan_with_an_accurate_prior_and_default_does_not() {
        let gc = gc_prior();
        let mdp = gc.sample_mdp(&mut stream(3, 1, 0));
        let mut compat = trained(1e-2, 0.0, true, &gc);
        rollout(&mut compat, &mdp, 100, 5);
        // Every GC row has zeros that stay zero: Delta is NaN, resampling never triggers.
        assert_eq!(compat.resamples(), 1);
        let mut intended = trained(1e-2, 0.0, false, &gc);
        rollout(&mut intended, &mdp, 100, 5);
        // With delta = 0 every change of the means triggers a resampling.
        assert!(intended.resamples() > 50, "{}", intended.resamples());
        // A zero-variance entry whose mean changes forces one: a transition outside the support.
        let mut intended = trained(1e-2, 1e9, false, &gc);
        reset(&mut intended, 0.95, 0);
        intended.act(0, &mut stream(0, 0, 0)).unwrap();
        let t = Transition { state: 0, action: 0, reward: 0.0, next_state: 3 };
        intended.observe(t, &mut stream(0, 0, 0)).unwrap();
        assert!(st(&intended).do_sample);
    }

    #[test]
    fn compat_copies_half_the_snapshot() {
        let prior = Fdm::new(2, 2, vec![1.0; 8], vec![0.5; 8], Some(0)).unwrap();
        let observe = |agent: &mut Sboss, state, action, next_state| {
            let t = Transition { state, action, reward: 0.5, next_state };
            agent.observe(t, &mut stream(0, 0, 0)).unwrap();
        };
        let mut agent = trained(0.1, 0.0, true, &prior);
        reset(&mut agent, 0.95, 0);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        let s = st(&agent);
        assert_eq!(s.alpha_last, [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(s.alpha0_last, [2.0, 2.0, 0.0, 0.0]);
        // Pair (1, 1) lies in the uncopied half: 0/0 in its snapshot, no resampling even at delta 0.
        observe(&mut agent, 1, 1, 0);
        assert!(!st(&agent).do_sample);
        // Pair (0, 0) was copied: its deviation is finite and positive.
        observe(&mut agent, 0, 0, 1);
        assert!(st(&agent).do_sample);
        agent.act(1, &mut stream(0, 0, 0)).unwrap();
        // The second snapshot copies the first half again; the second half stays 0.
        assert_eq!(st(&agent).alpha_last, [1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);

        let mut agent = trained(0.1, 0.0, false, &prior);
        reset(&mut agent, 0.95, 0);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        assert_eq!(st(&agent).alpha_last, [1.0; 8]);
        observe(&mut agent, 1, 1, 0);
        assert!(st(&agent).do_sample);
    }

    /// State 0 has two-entry rows, state 1 only deterministic rows back to 0.
    fn poisoned_prior() -> Fdm {
        let theta = vec![
            1.0, 1.0, /* s0 a0 */ 2.0, 1.0, /* s0 a1 */ 1.0, 0.0, /* s1 a0 */ 3.0, 0.0, /* s1 a1 */
        ];
        Fdm::new(2, 2, theta, vec![1.0; 8], Some(0)).unwrap()
    }

    #[test]
    fn zero_sample_pairs_are_int_min_self_loops_in_compat() {
        let prior = poisoned_prior();
        let mut agent = trained(0.01, 7.0, true, &prior);
        // sigma^2 = 1/12 -> 8.3 -> 9 and 2/36 -> 5.6 -> 6 at epsilon = 0.01.
        assert_eq!(agent.sample_counts().unwrap(), [9, 6, 0, 0]);
        reset(&mut agent, 0.95, 0);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        let s = st(&agent);
        // State 1 has only dummies: V = INT_MIN / (1 - gamma), and it plays merged index 0.
        let poisoned = DUMMY_REWARD / (1.0 - 0.95);
        assert!((s.values[1] - poisoned).abs() < 1e-6 * poisoned.abs(), "{}", s.values[1]);
        assert_eq!(s.merged_policy[1], 0);
        assert!(s.values[0] < -1e9, "state 0 is poisoned through its successor: {}", s.values[0]);

        let mut agent = trained(0.01, 7.0, false, &prior);
        assert_eq!(agent.sample_counts().unwrap(), [9, 6, 1, 1]);
        reset(&mut agent, 0.95, 0);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        // Rewards are all 1: V = 1 / (1 - gamma) = 20 everywhere, up to the stopping error of the
        // squared-L2 test (a last change of 1e-4 leaves about gamma / (1 - gamma) * 1e-4 = 2e-3).
        for &v in &st(&agent).values {
            assert!((v - 20.0).abs() < 1e-2, "{v}");
        }
    }

    #[test]
    fn int_min_values_terminate_near_gamma_one() {
        let mut agent = trained(0.01, 7.0, true, &poisoned_prior());
        reset(&mut agent, 0.999, 0);
        agent.act(0, &mut stream(0, 0, 0)).unwrap();
        let s = st(&agent);
        assert!(s.last_sweeps < GUEZ_VI_MAX_SWEEPS, "{}", s.last_sweeps);
        let poisoned = DUMMY_REWARD / (1.0 - 0.999);
        assert!((s.values[1] - poisoned).abs() < 1e-6 * poisoned.abs(), "{}", s.values[1]);
    }

    #[test]
    fn point_mass_prior_gives_the_optimal_first_action() {
        let mdp = two_state_mdp();
        let prior = point_mass_prior(&mdp, 1e6);
        for compat in [false, true] {
            for seed in 0..5 {
                let mut agent = trained(1e-3, 7.0, compat, &prior);
                let steps = rollout(&mut agent, &mdp, 30, seed);
                assert_eq!(steps[0].1, 1, "compat {compat} seed {seed}");
                // And the optimal policy thereafter (state 0 -> 1, state 1 -> 0).
                assert!(steps.iter().all(|&(s, a, _)| a == 1 - s), "compat {compat} seed {seed}");
            }
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        let gc = gc_prior();
        let mdp = gc.sample_mdp(&mut stream(1, 1, 0));
        for (compat, prior) in [(false, gc.clone()), (true, uniform_prior(&gc))] {
            let agent = trained(1e-2, 0.5, compat, &prior);
            let a = rollout(&mut agent.clone(), &mdp, 80, 3);
            let b = rollout(&mut agent.clone(), &mdp, 80, 3);
            assert_eq!(a, b);
            // Asking for the action probabilities first does not change the trajectory.
            let mut probing = agent.clone();
            let mut agent_rng = stream(3, crate::rng::purpose::AGENT_ONLINE, 0);
            let mut env_rng = stream(3, crate::rng::purpose::ENVIRONMENT, 0);
            let context = TaskContext { setting: SETTING, true_mdp: None };
            probing.start_task(&context, &mut agent_rng).unwrap();
            let mut state = mdp.initial_state(&mut env_rng);
            let mut probs = [0.0; 3];
            for &(s, a, y) in &a {
                assert_eq!(s, state);
                probing.action_probabilities(state, &mut probs).unwrap();
                assert_eq!(probs[a], 1.0);
                assert_eq!(probing.act(state, &mut agent_rng).unwrap(), a);
                let (next_state, reward) = mdp.step(state, a, &mut env_rng);
                assert_eq!(next_state, y);
                probing.observe(Transition { state, action: a, reward, next_state }, &mut agent_rng).unwrap();
                state = next_state;
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Sboss::new(eps, 1.0, false).unwrap_err();
            assert!(e.to_string().contains("epsilon"), "{e}");
        }
        for delta in [-1e-9, f64::NAN, f64::INFINITY] {
            let e = Sboss::new(0.1, delta, true).unwrap_err();
            assert!(e.to_string().contains("delta"), "{e}");
        }
        assert!(Sboss::new(0.1, 0.0, true).is_ok());
        let mut agent = Sboss::new(0.1, 1.0, false).unwrap();
        assert!(agent.act(0, &mut stream(0, 0, 0)).unwrap_err().to_string().contains("before learn_offline"));
        let mut tiny = Sboss::new(1e-12, 1.0, false).unwrap();
        let e = tiny.learn_offline(&gc_prior(), SETTING, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("epsilon = 0.000000000001 is too small"), "{e}");
        // compat with every row deterministic: the original divides by zero; here, an error.
        let det = Fdm::new(2, 1, vec![0.0, 1.0, 1.0, 0.0], vec![0.0; 4], Some(0)).unwrap();
        let mut agent = trained(0.1, 1.0, true, &det);
        reset(&mut agent, 0.95, 0);
        assert!(agent.act(0, &mut stream(0, 0, 0)).unwrap_err().to_string().contains("K = 0"));
        let mut agent = trained(0.1, 1.0, false, &det);
        reset(&mut agent, 0.95, 0);
        assert_eq!(agent.act(0, &mut stream(0, 0, 0)).unwrap(), 0);
    }
}
