//! Hardness measures of a finite MDP (Conserva & Rauber 2022, "Hardness in Markov decision
//! processes: theory and practice"; reference code: Colosseum, `colosseum/hardness/measures/`).
//!
//! Setting, for every measure: the MDP as an agent meets it without end, the tables given in their
//! continuing form (an episodic problem's terminal transitions already replaced by resets to the
//! start law, as [`crate::envs::FiniteEnv::continuing_tables`] gives them; time limits play no
//! part), restricted to the states reachable from the start law (Taxi's unreachable terminal
//! states and DeepSea's cells right of the diagonal are not part of the problem). Values are
//! discounted with [`DISCOUNT`] = 0.99, Colosseum's setting, and solved exactly (value iteration,
//! then policy iteration with linear solves), not to Colosseum's 1e-3. Every linear solve is a
//! sparse elimination whose order and fill are worked out once per MDP (`Factor`), so
//! Taxi-Fickle's 712 hitting-time problems take well under a second.
//!
//! * `diameter` (Jaksch, Ortner & Auer 2010): the largest, over pairs of states, of the least
//!   expected number of steps from one to the other; infinite when some state cannot reach
//!   another (a non-communicating MDP).
//! * `gap_sum`: the sum over `(s, a)` of `1 / Δ(s, a)`, `Δ = V* - Q*`, over the actions whose gap
//!   is not zero (zero gaps, the optimal actions', are skipped: a gap at most [`ZERO_GAP`] times
//!   `max(1, |V*|)` counts as zero). `gap_sum_colosseum`: Colosseum's regularised form,
//!   `Σ 1 / (Δ + 0.1)` over every pair, zero gaps included (10 each).
//! * `value_norm` (Maillard, Mann & Mannor 2014): `max_{s,a} sqrt(Var_{y ~ P(.|s,a)} V*(y))`.
//!   `value_norm_colosseum`: Colosseum's column, for comparison with its numbers: its formula,
//!   which centres `V*(y)` on `E[V*]` of `(y, a)` instead of `(s, a)`, and 0 outright for a
//!   deterministic MDP, as Colosseum's `BaseMDP.discounted_value_norm` reports it before calling
//!   that formula (when every transition and every reward is deterministic). The tables hold one
//!   reward per `(s, a, s')`, so deterministic here means that every reachable row has a single
//!   next state (DeepSea, Double Loop, CliffWalking); a reward noise the tables do not carry is not
//!   seen (bbrl's noisy problems, DeepSea-Stochastic and StochasticChain, have stochastic moves).

use rayon::prelude::*;

use crate::error::Result;
use crate::invalid;

/// The discount of the values the gaps and the value norm are taken on (Colosseum's).
pub const DISCOUNT: f64 = 0.99;
/// A gap at most `ZERO_GAP * max(1, max |V*|)` is zero (rounding of exact ties).
pub const ZERO_GAP: f64 = 1e-9;
/// Colosseum's regulariser of the gaps.
pub const COLOSSEUM_REGULARISER: f64 = 0.1;
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
    let factor = Factor::new(&sparse);
    let v = optimal_values(&sparse, &factor)?;
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
    // Colosseum reports 0 for an MDP whose every transition is deterministic (see the module's text).
    let deterministic = (0..sparse.n_states).all(|s| (0..na).all(|a| sparse.row(s, a).len() == 1));
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
        diameter: diameter(&sparse, &factor)?,
        gap_sum,
        gap_sum_colosseum,
        value_norm: norm,
        value_norm_colosseum: if deterministic { 0.0 } else { norm_colosseum },
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
/// iteration from its greedy policy, each policy evaluated exactly (`solve_chain`), until no
/// action improves by more than 1e-12 relative (so exact ties cannot cycle).
fn optimal_values(m: &Sparse, factor: &Factor) -> Result<Vec<f64>> {
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
    for _ in 0..MAX_POLICY_ITERATIONS {
        // v = r_π + γ P_π v: every row loses 1 - γ of its mass.
        let mut val = vec![0.0; factor.col.len()];
        let mut b = vec![0.0; ns];
        for s in 0..ns {
            let first = m.start[s * na + policy[s]];
            for (e, &(_, pr, rw)) in m.row(s, policy[s]).iter().enumerate() {
                val[factor.entry_pos[first + e]] += DISCOUNT * pr;
                b[s] += pr * rw;
            }
        }
        v = factor
            .solve(val, vec![1.0 - DISCOUNT; ns], b)
            .ok_or_else(|| invalid!("hardness: a discounted policy evaluation is singular"))?;
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
            return Ok(v);
        }
    }
    Err(invalid!("hardness: the discounted policy iteration did not settle in {MAX_POLICY_ITERATIONS} iterations"))
}

/// Policy iterations after which a solve gives up (each improves the policy strictly; far more
/// than any problem here needs).
const MAX_POLICY_ITERATIONS: usize = 10_000;

/// Solves `h = b + Q h` for a nonnegative, substochastic `Q` (`rows[i]` holds the `(j, Q_ij > 0)`
/// in increasing `j`; `exit[i] = 1 - Σ_j Q_ij >= 0` the mass that leaves, given directly rather
/// than by subtraction) by eliminating the unknowns one at a time, cheapest first (Markowitz's
/// least `(row entries) × (column entries)`, so a sparse chain stays sparse), each pivot formed as
/// a sum of nonnegative terms (Grassmann, Taksar & Heyman 1985: no cancellation, so the pivots
/// keep full relative accuracy however slowly the chain leaves). `None` when some unknowns never
/// leave (a pivot is exactly zero: `I - Q` is singular, the policy improper). The order depends on
/// the sparsity pattern alone, so the answer is the same on every run. Returns the solution, the
/// order and the rows as eliminated (their patterns are the fill, [`Factor`]'s pattern).
///
/// Rows stay sorted, and an eliminated column's entries are zeroed rather than removed, so a few
/// long rows (the resets of an episodic problem to a wide start law) cost a binary search per
/// update, not a pass over the row.
fn solve_chain(mut rows: Vec<Vec<(usize, f64)>>, mut exit: Vec<f64>, mut b: Vec<f64>) -> Option<Solved> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = rows.len();
    debug_assert!(rows.iter().all(|row| row.windows(2).all(|w| w[0].0 < w[1].0)));
    // cols[j]: the rows that have (or had, if eliminated since) an entry in column j; the counts
    // are of the live entries.
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut col_count = vec![0usize; n];
    let mut row_count: Vec<usize> = rows.iter().map(Vec::len).collect();
    for (i, row) in rows.iter().enumerate() {
        for &(j, _) in row {
            cols[j].push(i);
            col_count[j] += 1;
        }
    }
    let mut heap: BinaryHeap<Reverse<(usize, usize)>> =
        (0..n).map(|k| Reverse((row_count[k] * col_count[k], k))).collect();
    let mut alive = vec![true; n];
    let mut used = Vec::with_capacity(n);
    let mut pivots = vec![0.0; n];
    while let Some(Reverse((cost, k))) = heap.pop() {
        if !alive[k] {
            continue;
        }
        if cost != row_count[k] * col_count[k] {
            heap.push(Reverse((row_count[k] * col_count[k], k)));
            continue;
        }
        alive[k] = false;
        used.push(k);
        let row_k = std::mem::take(&mut rows[k]);
        let mut pivot = exit[k];
        for &(j, q) in &row_k {
            if alive[j] {
                col_count[j] -= 1;
                pivot += q;
            }
        }
        if pivot <= 0.0 {
            return None;
        }
        pivots[k] = pivot;
        for i in std::mem::take(&mut cols[k]) {
            if !alive[i] {
                continue;
            }
            let at = rows[i].binary_search_by_key(&k, |e| e.0).expect("a column lists only rows with that entry");
            let w = std::mem::replace(&mut rows[i][at].1, 0.0) / pivot;
            row_count[i] -= 1;
            b[i] += w * b[k];
            exit[i] += w * exit[k];
            for &(j, q) in &row_k {
                if !alive[j] {
                    continue;
                }
                match rows[i].binary_search_by_key(&j, |e| e.0) {
                    Ok(at) => rows[i][at].1 += w * q,
                    Err(at) => {
                        rows[i].insert(at, (j, w * q));
                        cols[j].push(i);
                        col_count[j] += 1;
                        row_count[i] += 1;
                        heap.push(Reverse((row_count[j] * col_count[j], j)));
                    }
                }
            }
            heap.push(Reverse((row_count[i] * col_count[i], i)));
        }
        rows[k] = row_k;
    }
    // Back substitution, latest eliminated first: row k's entries are zero but for the unknowns
    // eliminated after k.
    let mut h = vec![0.0; n];
    for &k in used.iter().rev() {
        let tail: f64 = rows[k].iter().filter(|e| e.0 != k).map(|&(j, q)| q * h[j]).sum();
        h[k] = (b[k] + tail) / pivots[k];
    }
    Some((h, used, rows))
}

/// What [`solve_chain`] returns: the solution, the elimination order, the rows' fill patterns.
type Solved = (Vec<f64>, Vec<usize>, Vec<Vec<(usize, f64)>>);

/// The symbolic elimination of every linear system on one MDP (each target's hitting times, each
/// policy's values): the order and fill that [`solve_chain`] chooses on the union of the supports
/// of all actions. Any one policy's system has a subset of that pattern, so the order fills it no
/// more than the union, and each solve ([`Factor::solve`]) is arithmetic on fixed positions: no
/// search for the next unknown, no allocation per row.
struct Factor {
    /// The unknowns in elimination order, and each one's place in it.
    order: Vec<usize>,
    rank: Vec<usize>,
    /// Row `i`'s pattern is `col[ptr[i]..ptr[i + 1]]`, sorted by rank; its entries from `later[i]`
    /// on are the unknowns eliminated after `i` (the ones its pivot and back substitution use).
    ptr: Vec<usize>,
    col: Vec<usize>,
    later: Vec<usize>,
    /// The rows still to eliminate that hold the unknown of step `t`: `pred_row[pred_ptr[t]..]`,
    /// with the position of that entry in `pred_pos`.
    pred_ptr: Vec<usize>,
    pred_row: Vec<usize>,
    pred_pos: Vec<usize>,
    /// The position in the pattern of each entry of the MDP's rows (`Sparse::entries` order).
    entry_pos: Vec<usize>,
}

impl Factor {
    fn new(m: &Sparse) -> Self {
        let n = m.n_states;
        let rows: Vec<Vec<(usize, f64)>> = (0..n)
            .map(|s| {
                let mut row: Vec<usize> = (0..m.n_actions).flat_map(|a| m.row(s, a).iter().map(|e| e.0)).collect();
                row.sort_unstable();
                row.dedup();
                let share = 0.5 / row.len() as f64;
                row.into_iter().map(|y| (y, share)).collect()
            })
            .collect();
        // Only the pattern matters: each row keeps half its mass on its support and loses the
        // rest, so no pivot is zero.
        let (_, order, filled) = solve_chain(rows, vec![0.5; n], vec![0.0; n]).expect("every row leaves");
        let mut rank = vec![0; n];
        order.iter().enumerate().for_each(|(t, &k)| rank[k] = t);
        let (mut ptr, mut col, mut later) = (vec![0], Vec::new(), Vec::with_capacity(n));
        for (i, row) in filled.iter().enumerate() {
            let mut pattern: Vec<usize> = row.iter().map(|e| e.0).collect();
            pattern.sort_unstable_by_key(|&j| rank[j]);
            later.push(col.len() + pattern.iter().filter(|&&j| rank[j] <= rank[i]).count());
            col.extend(pattern);
            ptr.push(col.len());
        }
        // Predecessors, grouped by the step that eliminates their column.
        let mut count = vec![0usize; n + 1];
        for i in 0..n {
            for &j in &col[ptr[i]..later[i]] {
                if j != i {
                    count[rank[j] + 1] += 1;
                }
            }
        }
        let pred_ptr: Vec<usize> = count
            .iter()
            .scan(0, |sum, &c| {
                *sum += c;
                Some(*sum)
            })
            .collect();
        let mut fill = pred_ptr.clone();
        let (mut pred_row, mut pred_pos) = (vec![0; pred_ptr[n]], vec![0; pred_ptr[n]]);
        for i in 0..n {
            for e in ptr[i]..later[i] {
                let j = col[e];
                if j != i {
                    pred_row[fill[rank[j]]] = i;
                    pred_pos[fill[rank[j]]] = e;
                    fill[rank[j]] += 1;
                }
            }
        }
        let mut factor = Factor { order, rank, ptr, col, later, pred_ptr, pred_row, pred_pos, entry_pos: Vec::new() };
        factor.entry_pos = (0..n)
            .flat_map(|s| (0..m.n_actions).map(move |a| (s, a)))
            .flat_map(|(s, a)| m.row(s, a).iter().map(move |e| (s, e.0)))
            .map(|(s, y)| factor.position(s, y))
            .collect();
        factor
    }

    /// Where column `j` sits in row `i`'s pattern (it must be there).
    fn position(&self, i: usize, j: usize) -> usize {
        let (rank, col) = (&self.rank, &self.col[self.ptr[i]..self.ptr[i + 1]]);
        self.ptr[i] + col.binary_search_by_key(&rank[j], |&c| rank[c]).expect("the fill holds every entry")
    }

    /// Solves `h = b + Q h` as [`solve_chain`] does (same pivots, as sums of nonnegative terms),
    /// `Q` given as `val` over the pattern (zero where the policy has no entry), `exit` the mass
    /// each row loses. `None` when some unknowns never leave.
    fn solve(&self, mut val: Vec<f64>, mut exit: Vec<f64>, mut b: Vec<f64>) -> Option<Vec<f64>> {
        let n = self.order.len();
        let mut pivots = vec![0.0; n];
        for (t, &k) in self.order.iter().enumerate() {
            let tail = self.later[k]..self.ptr[k + 1];
            let pivot = exit[k] + val[tail.clone()].iter().sum::<f64>();
            if pivot <= 0.0 {
                return None;
            }
            pivots[k] = pivot;
            for p in self.pred_ptr[t]..self.pred_ptr[t + 1] {
                let (i, at) = (self.pred_row[p], self.pred_pos[p]);
                let w = val[at] / pivot;
                if w == 0.0 {
                    continue;
                }
                b[i] += w * b[k];
                exit[i] += w * exit[k];
                for e in tail.clone() {
                    if val[e] != 0.0 {
                        let to = self.position(i, self.col[e]);
                        val[to] += w * val[e];
                    }
                }
            }
        }
        let mut h = vec![0.0; n];
        for &k in self.order.iter().rev() {
            let tail: f64 = (self.later[k]..self.ptr[k + 1]).map(|e| val[e] * h[self.col[e]]).sum();
            h[k] = (b[k] + tail) / pivots[k];
        }
        Some(h)
    }
}

/// The diameter: per target `g`, the least expected hitting times `h(g) = 0`,
/// `h(s) = 1 + min_a Σ_{y ≠ g} P(y|s,a) h(y)`, by policy iteration with exact evaluations
/// (`solve_chain`), from the policy that steps toward `g` in the transition graph (proper: every
/// state reaches `g` with positive probability) until no action improves by more than 1e-12
/// relative; the largest over targets and states. Infinite as soon as some state cannot reach a
/// target. Targets run in parallel; each is computed alone, so the result does not depend on the
/// thread count.
fn diameter(m: &Sparse, factor: &Factor) -> Result<f64> {
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
        // Breadth-first from g over reverse edges: the graph distance of each state to g.
        let mut dist = vec![usize::MAX; ns];
        let mut queue = std::collections::VecDeque::from([g]);
        dist[g] = 0;
        while let Some(y) = queue.pop_front() {
            for &s in &preds[y] {
                if dist[s] == usize::MAX {
                    dist[s] = dist[y] + 1;
                    queue.push_back(s);
                }
            }
        }
        if dist.contains(&usize::MAX) {
            return Ok(f64::INFINITY);
        }
        // Expected cost of (s, a) against h: 1 + Σ_{y ≠ g} P(y|s,a) h(y).
        let cost = |h: &[f64], s: usize, a: usize| {
            1.0 + m.row(s, a).iter().filter(|e| e.0 != g).map(|&(y, pr, _)| pr * h[y]).sum::<f64>()
        };
        // The first policy: at each state, of the actions that can step one closer to g, the one
        // most likely to.
        let closer =
            |s: usize, a: usize| -> f64 { m.row(s, a).iter().filter(|e| dist[e.0] + 1 == dist[s]).map(|e| e.1).sum() };
        let mut policy: Vec<usize> = (0..ns)
            .map(|s| {
                if s == g {
                    0
                } else {
                    (0..na).fold(0, |best, a| if closer(s, a) > closer(s, best) { a } else { best })
                }
            })
            .collect();
        for _ in 0..MAX_POLICY_ITERATIONS {
            // Entering g leaves the chain; g itself is left at once (h(g) = 0).
            let mut val = vec![0.0; factor.col.len()];
            let mut exit = vec![0.0; ns];
            exit[g] = 1.0;
            for s in (0..ns).filter(|&s| s != g) {
                let first = m.start[s * na + policy[s]];
                for (e, &(y, pr, _)) in m.row(s, policy[s]).iter().enumerate() {
                    if y == g {
                        exit[s] += pr;
                    } else {
                        val[factor.entry_pos[first + e]] += pr;
                    }
                }
            }
            let b = (0..ns).map(|s| if s == g { 0.0 } else { 1.0 }).collect();
            let h = factor
                .solve(val, exit, b)
                .ok_or_else(|| invalid!("hardness: a policy toward state {g} never reaches it"))?;
            let scale = h.iter().fold(1.0f64, |x, &y| x.max(y));
            let mut changed = false;
            for s in (0..ns).filter(|&s| s != g) {
                let current = cost(&h, s, policy[s]);
                let (best, best_cost) =
                    (0..na)
                        .map(|a| (a, cost(&h, s, a)))
                        .fold((policy[s], current), |x, y| if y.1 < x.1 { y } else { x });
                if best_cost < current - 1e-12 * scale {
                    policy[s] = best;
                    changed = true;
                }
            }
            if !changed {
                return Ok(h.iter().fold(0.0f64, |x, &y| x.max(y)));
            }
        }
        Err(invalid!("hardness: the hitting times of state {g} did not settle in {MAX_POLICY_ITERATIONS} iterations"))
    };
    let each: Result<Vec<f64>> = (0..ns).into_par_iter().map(hitting).collect();
    Ok(each?.into_iter().fold(0.0f64, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

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

    #[test]
    fn colosseums_value_norm_is_zero_on_a_deterministic_mdp_only() {
        // 0 -> 1 -> 0 under action 0, pays 1 into 1; action 1 stays. The formula centres V*(y) on
        // the next value of (y, a), which differs: it is not 0 here, but Colosseum reports 0.
        let mut p = [0.0; 8];
        let mut r = [0.0; 8];
        let at = |s: usize, a: usize, y: usize| (s * 2 + a) * 2 + y;
        p[at(0, 0, 1)] = 1.0;
        r[at(0, 0, 1)] = 1.0;
        p[at(1, 0, 0)] = 1.0;
        p[at(0, 1, 0)] = 1.0;
        p[at(1, 1, 1)] = 1.0;
        let h = measure(2, 2, &p, &r, &[1.0, 0.0]).unwrap();
        assert_eq!((h.value_norm, h.value_norm_colosseum), (0.0, 0.0));
        // One row made stochastic: the formula's value, positive.
        p[at(1, 1, 1)] = 0.5;
        p[at(1, 1, 0)] = 0.5;
        let h = measure(2, 2, &p, &r, &[1.0, 0.0]).unwrap();
        assert!(h.value_norm_colosseum > 0.0 && h.value_norm > 0.0, "{h:?}");
    }

    #[test]
    fn an_improper_chain_is_singular() {
        // 0 <-> 1 closed, 2 leaves: the pair never leaves, whatever the order.
        let rows = vec![vec![(1, 1.0)], vec![(0, 1.0)], vec![(0, 0.5)]];
        assert!(solve_chain(rows, vec![0.0, 0.0, 0.5], vec![1.0; 3]).is_none());
        // The same through a factor of an MDP with that pattern: 0 <-> 1, 2 -> {0, 2}.
        let mut m = Sparse { n_states: 3, n_actions: 1, start: vec![0, 1, 2, 4], entries: Vec::new() };
        m.entries = vec![(1, 1.0, 0.0), (0, 1.0, 0.0), (0, 0.5, 0.0), (2, 0.5, 0.0)];
        let factor = Factor::new(&m);
        let mut val = vec![0.0; factor.col.len()];
        // The policy's rows are the first three entries; the last (2 -> 2) is the mass that leaves.
        for (e, &(_, pr, _)) in m.entries.iter().enumerate().take(3) {
            val[factor.entry_pos[e]] = pr;
        }
        assert!(factor.solve(val, vec![0.0, 0.0, 0.5], vec![1.0; 3]).is_none());
    }

    /// A random MDP on `n` states: each row on 1 to 3 next states, some rows deterministic.
    fn random_mdp(rng: &mut crate::rng::Rng, n: usize, na: usize) -> Sparse {
        let mut m = Sparse { n_states: n, n_actions: na, start: vec![0], entries: Vec::new() };
        for _ in 0..n * na {
            let k = rng.random_range(1..=3.min(n));
            let mut ys: Vec<usize> = (0..k).map(|_| rng.random_range(0..n)).collect();
            ys.sort_unstable();
            ys.dedup();
            let w: Vec<f64> = ys.iter().map(|_| rng.random_range(0.25..1.0)).collect();
            let total: f64 = w.iter().sum();
            for (&y, &wy) in ys.iter().zip(&w) {
                m.entries.push((y, wy / total, rng.random_range(-1.0..1.0)));
            }
            m.start.push(m.entries.len());
        }
        m
    }

    /// The oracle for the diameter: per target, Gauss-Seidel value iteration from 0 (monotone up
    /// to the fixed point) until a sweep changes nothing by more than 1e-14 relative; infinite
    /// once a hitting time passes 1e4 (far above these small MDPs' finite ones).
    fn diameter_by_value_iteration(m: &Sparse) -> f64 {
        let (ns, na) = (m.n_states, m.n_actions);
        let mut diameter = 0.0f64;
        for g in 0..ns {
            let mut h = vec![0.0; ns];
            for sweep in 0.. {
                let mut change = 0.0f64;
                for s in (0..ns).filter(|&s| s != g) {
                    let best = (0..na)
                        .map(|a| m.row(s, a).iter().filter(|e| e.0 != g).map(|&(y, pr, _)| pr * h[y]).sum::<f64>())
                        .fold(f64::INFINITY, f64::min);
                    change = change.max((1.0 + best - h[s]).abs());
                    h[s] = 1.0 + best;
                }
                let top = h.iter().fold(1.0f64, |x, &y| x.max(y));
                if top > 1e4 || sweep > 1_000_000 {
                    return f64::INFINITY;
                }
                if change <= 1e-14 * top {
                    break;
                }
            }
            diameter = diameter.max(h.iter().fold(0.0f64, |x, &y| x.max(y)));
        }
        diameter
    }

    /// The oracle for the discounted values: value iteration to a change of 1e-14 relative.
    fn values_by_value_iteration(m: &Sparse) -> Vec<f64> {
        let (ns, na) = (m.n_states, m.n_actions);
        let mut v = vec![0.0; ns];
        loop {
            let q = q_values(m, &v);
            let new: Vec<f64> =
                (0..ns).map(|s| q[s * na..(s + 1) * na].iter().fold(f64::NEG_INFINITY, |x, &y| x.max(y))).collect();
            let change = new.iter().zip(&v).fold(0.0f64, |x, (a, b)| x.max((a - b).abs()));
            v = new;
            if change <= 1e-15 {
                return v;
            }
        }
    }

    #[test]
    fn policy_iteration_with_exact_solves_agrees_with_value_iteration_on_random_mdps() {
        let mut rng = crate::rng::Rng::seed_from_u64(7);
        let (mut finite, mut infinite) = (0, 0);
        for case in 0..150 {
            let (n, na) = (rng.random_range(1..=10), rng.random_range(1..=3));
            let m = random_mdp(&mut rng, n, na);
            let factor = Factor::new(&m);
            let (fast, slow) = (diameter(&m, &factor).unwrap(), diameter_by_value_iteration(&m));
            if slow.is_infinite() {
                // The oracle gives up on diverging hitting times; the graph test must agree.
                assert_eq!(fast, f64::INFINITY, "case {case}");
                infinite += 1;
            } else {
                assert!((fast - slow).abs() <= 1e-9 * slow.max(1.0), "case {case}: {fast} vs {slow}");
                finite += 1;
            }
            let (v, w) = (optimal_values(&m, &factor).unwrap(), values_by_value_iteration(&m));
            for (a, b) in v.iter().zip(&w) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "case {case}: {a} vs {b}");
            }
        }
        // Both kinds of MDP were drawn.
        assert!(finite > 20 && infinite > 20, "{finite} finite, {infinite} infinite");
    }

    #[test]
    fn a_slowly_leaving_chain_keeps_its_accuracy() {
        // A ring of 200 states, each leaving to the target 0 with probability 1e-4 and otherwise
        // stepping on: hitting times near 1e4, which elimination gets to rounding.
        let n = 200;
        let rows: Vec<Vec<(usize, f64)>> = (0..n).map(|i| vec![((i + 1) % n, 1.0 - 1e-4)]).collect();
        let (h, _, _) = solve_chain(rows, vec![1e-4; n], vec![1.0; n]).unwrap();
        // Every state is alike by symmetry: h = 1 / 1e-4.
        h.iter().for_each(|&x| assert!((x - 1e4).abs() < 1e-8, "{x}"));
    }
}
