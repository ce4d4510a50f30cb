//! Action selection shared by the agents.

use rand::{Rng as _, RngCore as _};

use crate::rng::{random_below, Rng};

/// A uniform integer of `0..n` (`n >= 1`), exact: Lemire's multiply-and-reject on 32 random
/// bits. A few instructions where `random_range` takes dozens; for hot loops (planner rollouts).
#[inline]
pub fn uniform_below(n: u32, rng: &mut Rng) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        // Reject the `2^32 mod n` lowest remainders, which would favour the small results.
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as u32
}

/// The greedy action with uniformly random ties ("search::max" with `>=`, SPEC 4).
/// Two passes over `values`, no allocation.
#[inline]
pub fn argmax_random_tie(values: &[f64], rng: &mut Rng) -> usize {
    let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ties = values.iter().filter(|&&v| v == best).count();
    if ties <= 1 {
        return values.iter().position(|&v| v == best).unwrap_or(0);
    }
    let mut pick = rng.random_range(0..ties);
    for (a, &v) in values.iter().enumerate() {
        if v == best {
            if pick == 0 {
                return a;
            }
            pick -= 1;
        }
    }
    0
}

/// [`argmax_random_tie`] over `score(0) .. score(n - 1)` without materialising the scores:
/// one pass, plus a second only when several indices tie (it then draws exactly as
/// `argmax_random_tie` does on the same values). `n` must be at least 1.
#[inline]
pub fn argmax_random_tie_by(n: usize, score: impl Fn(usize) -> f64, rng: &mut Rng) -> usize {
    let (mut best, mut best_index, mut ties) = (f64::NEG_INFINITY, 0, 0);
    for i in 0..n {
        let v = score(i);
        if v > best {
            (best, best_index, ties) = (v, i, 1);
        } else if v == best {
            ties += 1;
        }
    }
    if ties <= 1 {
        return best_index;
    }
    let pick = rng.random_range(0..ties);
    nth_maximiser(best_index..n, best, pick, score)
}

/// [`argmax_random_tie_by`] computed with selects rather than branches, for scores whose order is
/// unpredictable (UCB scores, where a branch on "is this one better" is mispredicted about as
/// often as not): the same result from the same draws. Where the order is mostly predictable
/// (BFS3's bounds), the branching form is cheaper.
#[inline]
pub fn argmax_random_tie_by_select(n: usize, score: impl Fn(usize) -> f64, rng: &mut Rng) -> usize {
    // The first index, peeled: against -inf it is the best so far (one tie) unless NaN (no tie).
    let first = score(0);
    let (mut best, mut best_index, mut ties) = if first.is_nan() { (f64::NEG_INFINITY, 0, 0) } else { (first, 0, 1) };
    for i in 1..n {
        let v = score(i);
        let (better, equal) = (v > best, v == best);
        best_index = if better { i } else { best_index };
        ties = if better { 1 } else { ties + usize::from(equal) };
        best = if better { v } else { best };
    }
    if ties <= 1 {
        return best_index;
    }
    // `random_range(0..ties)` draw for draw, inlined: no call takes the generator, so its state
    // can stay in registers through the caller's loop.
    let pick = random_below(ties as u32, rng) as usize;
    nth_maximiser(best_index..n, best, pick, score)
}

/// The `pick`-th (from 0) index of `range` whose score equals `best`: the tie-break walk of the
/// `argmax_random_tie_by*` functions (the range's start when there are fewer maximisers).
#[inline(always)]
fn nth_maximiser(range: std::ops::Range<usize>, best: f64, mut pick: usize, score: impl Fn(usize) -> f64) -> usize {
    let start = range.start;
    for i in range {
        if score(i) == best {
            if pick == 0 {
                return i;
            }
            pick -= 1;
        }
    }
    start
}

/// The distribution of [`argmax_random_tie`]: the maximisers share the mass equally.
pub fn greedy_probabilities(values: &[f64], out: &mut [f64]) {
    let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ties = values.iter().filter(|&&v| v == best).count().max(1);
    for (o, &v) in out.iter_mut().zip(values) {
        *o = if v == best { 1.0 / ties as f64 } else { 0.0 };
    }
}

/// The private random stream of a stochastic planner, and the state its last plan was made for.
///
/// Planning draws from this stream (seeded at every reset from the agent's stream), so
/// `action_probabilities(state)` can run the very plan the next `act(state)` would run, keep it for
/// that `act`, and report the exact distribution of its choice without changing any trajectory.
/// A decision or an observation consumes the plan.
#[derive(Clone, Debug)]
pub struct PlanningStream {
    rng: Rng,
    planned_for: Option<usize>,
}

impl Default for PlanningStream {
    fn default() -> Self {
        Self { rng: <Rng as rand::SeedableRng>::seed_from_u64(0), planned_for: None }
    }
}

impl PlanningStream {
    /// A new trajectory: reseeds from the agent's stream and forgets any plan.
    pub fn reset(&mut self, agent_rng: &mut Rng) {
        self.rng = <Rng as rand::SeedableRng>::seed_from_u64(agent_rng.next_u64());
        self.planned_for = None;
    }

    /// Forgets the current plan (after a decision or an observation).
    pub fn consume(&mut self) {
        self.planned_for = None;
    }
}

/// Runs `plan` on `owner` with its private planning stream (reached through `stream`), unless the
/// current plan is already for `state`.
pub fn plan_once<T>(
    owner: &mut T,
    stream: fn(&mut T) -> &mut PlanningStream,
    state: usize,
    plan: impl FnOnce(&mut T, &mut Rng),
) {
    if stream(owner).planned_for == Some(state) {
        return;
    }
    // The generator is 32 bytes: copying it out lets `plan` borrow the whole owner.
    let mut rng = stream(owner).rng.clone();
    plan(owner, &mut rng);
    let planning = stream(owner);
    planning.rng = rng;
    planning.planned_for = Some(state);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn uniform_below_is_uniform() {
        let mut rng = stream(3, 0, 0);
        for n in [1u32, 2, 3, 7, 100] {
            let draws = 60_000;
            let mut hits = vec![0usize; n as usize];
            for _ in 0..draws {
                hits[uniform_below(n, &mut rng) as usize] += 1;
            }
            let p = 1.0 / f64::from(n);
            for (i, &h) in hits.iter().enumerate() {
                let f = h as f64 / draws as f64;
                // 5 standard errors of a Bernoulli(1/n) frequency.
                assert!((f - p).abs() <= 5.0 * (p * (1.0 - p) / draws as f64).sqrt(), "n {n}: {i} drawn {f}");
            }
        }
    }

    #[test]
    fn ties_are_uniform() {
        let values = [1.0, 3.0, 3.0, 0.0, 3.0];
        let mut rng = stream(0, 0, 0);
        let mut hits = [0usize; 5];
        let n = 30_000;
        for _ in 0..n {
            hits[argmax_random_tie(&values, &mut rng)] += 1;
        }
        assert_eq!(hits[0] + hits[3], 0);
        for &a in &[1, 2, 4] {
            let f = hits[a] as f64 / n as f64;
            assert!((f - 1.0 / 3.0).abs() < 5.0 * (2.0 / 9.0 / n as f64).sqrt());
        }
        // The closure form draws the same index from the same stream.
        let mut values_rng = stream(2, 0, 0);
        let (mut a, mut b) = (stream(1, 0, 0), stream(1, 0, 0));
        for _ in 0..1000 {
            let v: Vec<f64> = (0..4).map(|_| f64::from(values_rng.random_range(0..3u8))).collect();
            assert_eq!(argmax_random_tie(&v, &mut a), argmax_random_tie_by(4, |i| v[i], &mut b));
            let (mut c, mut d) = (a.clone(), b.clone());
            assert_eq!(argmax_random_tie_by(4, |i| v[i], &mut c), argmax_random_tie_by_select(4, |i| v[i], &mut d));
        }
        let mut p = [0.0; 5];
        greedy_probabilities(&values, &mut p);
        assert_eq!(p, [0.0, 1.0 / 3.0, 1.0 / 3.0, 0.0, 1.0 / 3.0]);
    }
}
