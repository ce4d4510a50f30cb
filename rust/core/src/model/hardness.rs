//! Hardness measures of a finite MDP (Conserva & Rauber 2022, "Hardness in Markov decision
//! processes: theory and practice"; reference code: Colosseum, `colosseum/hardness/measures/`).
//!
//! Setting, for every measure: the MDP as an agent meets it without end, the tables given in their
//! continuing form (an episodic problem's terminal transitions already replaced by resets to the
//! start law, as [`crate::envs::FiniteEnv::continuing_tables`] gives them; time limits play no
//! part), restricted to the states reachable from the start law (Taxi's unreachable terminal
//! states and DeepSea's cells right of the diagonal are not part of the problem). Values are
//! discounted with [`DISCOUNT`] = 0.99, Colosseum's setting, and solved exactly (value iteration,
//! then policy iteration with linear solves), not to Colosseum's 1e-3.
//!
//! * `diameter` (Jaksch, Ortner & Auer 2010): the largest, over pairs of states, of the least
//!   expected number of steps from one to the other; infinite when some state cannot reach
//!   another (a non-communicating MDP).
//! * `gap_sum`: the sum over `(s, a)` of `1 / Δ(s, a)`, `Δ = V* - Q*`, over the actions whose gap
//!   is not zero (zero gaps, the optimal actions', are skipped: a gap at most [`ZERO_GAP`] times
//!   `max(1, |V*|)` counts as zero). `gap_sum_colosseum`: Colosseum's regularised form,
//!   `Σ 1 / (Δ + 0.1)` over every pair, zero gaps included (10 each).
//! * `value_norm` (Maillard, Mann & Mannor 2014): `max_{s,a} sqrt(Var_{y ~ P(.|s,a)} V*(y))`.
//!   `value_norm_colosseum`: Colosseum's formula, which centres `V*(y)` on `E[V*]` of `(y, a)`
//!   instead of `(s, a)`, kept for comparison with its numbers.

use rayon::prelude::*;

use crate::error::Result;
use crate::invalid;

/// The discount of the values the gaps and the value norm are taken on (Colosseum's).
pub const DISCOUNT: f64 = 0.99;
/// A gap at most `ZERO_GAP * max(1, max |V*|)` is zero (rounding of exact ties).
pub const ZERO_GAP: f64 = 1e-9;
/// Colosseum's regulariser of the gaps.
pub const COLOSSEUM_REGULARISER: f64 = 0.1;
/// The hitting-time iteration stops when a sweep changes no value by more than this, relative to
/// `max(1, max h)`; the answer is then within ~1e-11 relative of the fixed point.
const HITTING_TOLERANCE: f64 = 1e-13;
/// Sweeps after which the hitting-time iteration gives up (a problem far beyond this module's
/// sizes).
const MAX_SWEEPS: usize = 10_000_000;

/// The measures of one MDP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardness {
    pub diameter: f64,
    pub gap_sum: f64,
    pub gap_sum_colosseum: f64,
    pub value_norm: f64,
    pub value_norm_colosseum: f64,
    /// The states measured: those reachable from the start law.
    pub n_states: usize,
}

/// A row's support as (next state, probability) pairs, over the reachable states renumbered.
struct Sparse {
    n_states: usize,
    n_actions: usize,
    start: Vec<usize>,
    entries: Vec<(usize, f64, f64)>,
}

impl Sparse {
    fn row(&self, s: usize, a: usize) -> &[(usize, f64, f64)] {
        let i = s * self.n_actions + a;
        &self.entries[self.start[i]..self.start[i + 1]]
    }
}

/// The measures of the MDP `(P, R)` (dense, `[s, a, y]` row major) started from `start`.
pub fn measure(n_states: usize, n_actions: usize, p: &[f64], r: &[f64], start: &[f64]) -> Result<Hardness> {
    let (ns, na) = (n_states, n_actions);
    if p.len() != ns * na * ns || r.len() != p.len() || start.len() != ns || ns == 0 || na == 0 {
        return Err(invalid!(
            "hardness: tables of {} and {} entries and a start law of {} for {ns} states and {na} actions",
            p.len(),
            r.len(),
            start.len()
        ));
    }
    // The states reachable from the start law, renumbered in increasing order.
    let mut seen = vec![false; ns];
    let mut stack: Vec<usize> = (0..ns).filter(|&s| start[s] > 0.0).collect();
    stack.iter().for_each(|&s| seen[s] = true);
    while let Some(s) = stack.pop() {
        for y in 0..ns {
            if !seen[y] && (0..na).any(|a| p[(s * na + a) * ns + y] > 0.0) {
                seen[y] = true;
                stack.push(y);
            }
        }
    }
    let kept: Vec<usize> = (0..ns).filter(|&s| seen[s]).collect();
    let mut new_index = vec![usize::MAX; ns];
    kept.iter().enumerate().for_each(|(i, &s)| new_index[s] = i);
    let mut sparse = Sparse { n_states: kept.len(), n_actions: na, start: vec![0], entries: Vec::new() };
    for &s in &kept {
        for a in 0..na {
            let base = (s * na + a) * ns;
            for y in 0..ns {
                if p[base + y] > 0.0 {
                    sparse.entries.push((new_index[y], p[base + y], r[base + y]));
                }
            }
            sparse.start.push(sparse.entries.len());
        }
    }
    let v = optimal_values(&sparse);
    let q = q_values(&sparse, &v);
    let scale = v.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    let (mut gap_sum, mut gap_sum_colosseum) = (0.0, 0.0);
    for s in 0..sparse.n_states {
        for a in 0..na {
            let gap = v[s] - q[s * na + a];
            let gap = if gap <= ZERO_GAP * scale { 0.0 } else { gap };
            if gap > 0.0 {
                gap_sum += 1.0 / gap;
            }
            gap_sum_colosseum += 1.0 / (gap + COLOSSEUM_REGULARISER);
        }
    }
    let expected = |s: usize, a: usize| sparse.row(s, a).iter().map(|&(y, pr, _)| pr * v[y]).sum::<f64>();
    let (mut norm, mut norm_colosseum) = (0.0f64, 0.0f64);
    for s in 0..sparse.n_states {
        for a in 0..na {
            let mean = expected(s, a);
            let var: f64 = sparse.row(s, a).iter().map(|&(y, pr, _)| pr * (v[y] - mean).powi(2)).sum();
            let var_colosseum: f64 =
                sparse.row(s, a).iter().map(|&(y, pr, _)| pr * (v[y] - expected(y, a)).powi(2)).sum();
            norm = norm.max(var.sqrt());
            norm_colosseum = norm_colosseum.max(var_colosseum.sqrt());
        }
    }
    Ok(Hardness {
        diameter: diameter(&sparse)?,
        gap_sum,
        gap_sum_colosseum,
        value_norm: norm,
        value_norm_colosseum: norm_colosseum,
        n_states: sparse.n_states,
    })
}

fn q_values(m: &Sparse, v: &[f64]) -> Vec<f64> {
    let mut q = vec![0.0; m.n_states * m.n_actions];
    for s in 0..m.n_states {
        for a in 0..m.n_actions {
            q[s * m.n_actions + a] = m.row(s, a).iter().map(|&(y, pr, rw)| pr * (rw + DISCOUNT * v[y])).sum();
        }
    }
    q
}

/// Optimal discounted values: value iteration to a sup change of 1e-6 (relative), then policy
/// iteration from its greedy policy, each policy evaluated by a dense linear solve, until no
/// action improves by more than 1e-12 relative (so exact ties cannot cycle).
fn optimal_values(m: &Sparse) -> Vec<f64> {
    let (ns, na) = (m.n_states, m.n_actions);
    let mut v = vec![0.0; ns];
    for _ in 0..100_000 {
        let q = q_values(m, &v);
        let new: Vec<f64> =
            (0..ns).map(|s| q[s * na..(s + 1) * na].iter().fold(f64::NEG_INFINITY, |x, &y| x.max(y))).collect();
        let scale = new.iter().fold(1.0f64, |x, y| x.max(y.abs()));
        let change = new.iter().zip(&v).fold(0.0f64, |x, (a, b)| x.max((a - b).abs()));
        v = new;
        if change <= 1e-6 * scale {
            break;
        }
    }
    let argmax =
        |q: &[f64], s: usize| (0..na).fold(0, |best, a| if q[s * na + a] > q[s * na + best] { a } else { best });
    let q = q_values(m, &v);
    let mut policy: Vec<usize> = (0..ns).map(|s| argmax(&q, s)).collect();
    for _ in 0..1000 {
        v = evaluate(m, &policy);
        let q = q_values(m, &v);
        let scale = v.iter().fold(1.0f64, |x, y| x.max(y.abs()));
        let mut changed = false;
        for s in 0..ns {
            let best = argmax(&q, s);
            if q[s * na + best] > q[s * na + policy[s]] + 1e-12 * scale {
                policy[s] = best;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    v
}

/// `(I - γ P_π)^{-1} r_π` by Gaussian elimination with partial pivoting.
fn evaluate(m: &Sparse, policy: &[usize]) -> Vec<f64> {
    let ns = m.n_states;
    let mut a = vec![0.0; ns * ns];
    let mut b = vec![0.0; ns];
    for s in 0..ns {
        a[s * ns + s] = 1.0;
        for &(y, pr, rw) in m.row(s, policy[s]) {
            a[s * ns + y] -= DISCOUNT * pr;
            b[s] += pr * rw;
        }
    }
    solve(ns, &mut a, &mut b);
    b
}

/// Solves `a x = b` in place (`b` becomes `x`); `a` is non-singular here (a discounted or proper
/// chain).
fn solve(n: usize, a: &mut [f64], b: &mut [f64]) {
    for k in 0..n {
        let pivot = (k..n).fold(k, |best, i| if a[i * n + k].abs() > a[best * n + k].abs() { i } else { best });
        if pivot != k {
            for j in 0..n {
                a.swap(k * n + j, pivot * n + j);
            }
            b.swap(k, pivot);
        }
        let d = a[k * n + k];
        for i in k + 1..n {
            let f = a[i * n + k] / d;
            if f != 0.0 {
                for j in k..n {
                    a[i * n + j] -= f * a[k * n + j];
                }
                b[i] -= f * b[k];
            }
        }
    }
    for k in (0..n).rev() {
        let tail: f64 = (k + 1..n).map(|j| a[k * n + j] * b[j]).sum();
        b[k] = (b[k] - tail) / a[k * n + k];
    }
}

/// The diameter: per target `g`, the least expected hitting times `h(g) = 0`,
/// `h(s) = 1 + min_a Σ_{y ≠ g} P(y|s,a) h(y)`, by in-place value iteration from 0 (monotone up to
/// the fixed point), sweeping the states in order of their graph distance to `g` (nearest first,
/// so a deterministic shortest path settles in one sweep); the largest over targets and states.
/// Infinite as soon as some state cannot reach a target (the iteration would diverge). Targets
/// run in parallel; each is computed alone, so the result does not depend on the thread count.
fn diameter(m: &Sparse) -> Result<f64> {
    let (ns, na) = (m.n_states, m.n_actions);
    // Reverse edges, for which states can reach a target and how far they are.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); ns];
    for s in 0..ns {
        for a in 0..na {
            for &(y, _, _) in m.row(s, a) {
                preds[y].push(s);
            }
        }
    }
    let hitting = |g: usize| -> Result<f64> {
        // Breadth-first from g over reverse edges: the sweep order.
        let mut order = Vec::with_capacity(ns);
        let mut seen = vec![false; ns];
        seen[g] = true;
        order.push(g);
        let mut next = 0;
        while next < order.len() {
            let y = order[next];
            next += 1;
            for &s in &preds[y] {
                if !seen[s] {
                    seen[s] = true;
                    order.push(s);
                }
            }
        }
        if order.len() < ns {
            return Ok(f64::INFINITY);
        }
        let mut h = vec![0.0; ns];
        for _ in 0..MAX_SWEEPS {
            let mut change = 0.0f64;
            for &s in &order[1..] {
                let best = (0..na)
                    .map(|a| m.row(s, a).iter().filter(|e| e.0 != g).map(|&(y, pr, _)| pr * h[y]).sum::<f64>())
                    .fold(f64::INFINITY, f64::min);
                let new = 1.0 + best;
                change = change.max((new - h[s]).abs());
                h[s] = new;
            }
            let scale = h.iter().fold(1.0f64, |x, &y| x.max(y));
            if change <= HITTING_TOLERANCE * scale {
                return Ok(h.iter().fold(0.0f64, |x, &y| x.max(y)));
            }
        }
        Err(invalid!("the hitting times of state {g} did not converge in {MAX_SWEEPS} sweeps"))
    };
    let each: Result<Vec<f64>> = (0..ns).into_par_iter().map(hitting).collect();
    Ok(each?.into_iter().fold(0.0f64, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_that_cannot_be_left_makes_the_diameter_infinite() {
        // Two states, state 1 absorbing.
        let p = [0.5, 0.5, 0.0, 1.0];
        let h = measure(2, 1, &p, &[0.0; 4], &[1.0, 0.0]).unwrap();
        assert_eq!(h.diameter, f64::INFINITY);
        assert_eq!(h.gap_sum, 0.0);
        assert_eq!(h.gap_sum_colosseum, 20.0);
    }

    #[test]
    fn a_two_state_cycle_has_diameter_one() {
        // 0 -> 1 -> 0 deterministically under the one action.
        let h = measure(2, 1, &[0.0, 1.0, 1.0, 0.0], &[0.0; 4], &[1.0, 0.0]).unwrap();
        assert_eq!(h.diameter, 1.0);
        assert_eq!(h.value_norm, 0.0);
    }
}
