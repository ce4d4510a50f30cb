//! The known reward table of a large model as "one value per row plus a few exceptions", and the
//! next states of each row visited best-first under `w(y) = R(s, a, y) + gamma u(y)` without
//! building or sorting `w` over every state of every row.
//!
//! Why: the optimistic inner maximisations of UCRL2 and UCFH need, per row and per sweep, the
//! best next state (UCRL2) or the next states from the best down until the mass is placed (UCFH),
//! over all S next states, since optimism may put mass on a state never seen. On Taxi (500
//! states) that was a 500-entry `w` and an argmax or a sort for each of 3,000 rows at every sweep.
//! But a problem's reward table is nearly always constant along `y` (a reward per pair) except at
//! a few next states: Taxi has 0.7 exceptions per row on average. Rows whose constant, the row's
//! *default*, is the same form a *class* (Taxi: a handful). Per sweep, one order of the states by
//! `default + gamma u(y)` per class serves every row of the class; a row then visits its
//! exceptions and walks its class's order, skipping them.
//!
//! Exactness: `w(y)` is computed as `R(s, a, y) + gamma * u(y)` with the same two operations
//! whichever way it is reached (a non-exception's `R` equals its default bit for bit), and the
//! orders break ties exactly as the dense loops they replace (module users say which way), so the
//! plans are bit-identical to the dense ones. Small models (at most [`MIN_STATES`] states, the
//! paper's problems) keep the dense loops: their rows are a few entries long.

use std::sync::Arc;

/// Models of more states than this use the structured rows (fewer keep the dense loops).
pub const MIN_STATES: usize = 32;

/// Most classes (distinct defaults) the structure keeps: each costs a sort of S states per sweep.
const MAX_CLASSES: usize = 16;

/// How equal `w` are ordered, as the dense loop being replaced does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    /// The lower state index first (the first maximiser of a left-to-right scan).
    LowIndexFirst,
    /// The higher state index first (a sort by increasing `(w, index)` read backwards).
    HighIndexFirst,
}

/// The table's rows as a default per row (by class) and the states where the row differs.
#[derive(Clone, Debug)]
pub struct RewardRows {
    n_states: usize,
    /// Each row's class (an index into `defaults`).
    class: Vec<u16>,
    defaults: Vec<f64>,
    /// Row `r`'s exceptions are `exceptions[starts[r]..starts[r + 1]]`, by increasing state.
    starts: Vec<u32>,
    exceptions: Vec<u32>,
}

impl RewardRows {
    /// The structure of `known` (`n_rows` rows of `n_states`), or `None` where it does not pay:
    /// small models, more than [`MAX_CLASSES`] distinct defaults, or exceptions in more than a
    /// quarter of the entries.
    pub fn new(known: &[f64], n_rows: usize, n_states: usize) -> Option<Self> {
        if n_states <= MIN_STATES || known.len() != n_rows * n_states {
            return None;
        }
        let mut bits = vec![0u64; n_states];
        let (mut class, mut defaults) = (Vec::with_capacity(n_rows), Vec::<f64>::new());
        let (mut starts, mut exceptions) = (Vec::with_capacity(n_rows + 1), Vec::new());
        starts.push(0);
        for row in known.chunks_exact(n_states) {
            // The default is the most frequent value, compared bit for bit (ties: the smallest bits).
            for (b, &r) in bits.iter_mut().zip(row) {
                *b = r.to_bits();
            }
            bits.sort_unstable();
            let (mut mode, mut mode_run, mut run) = (bits[0], 0, 0);
            for (i, &b) in bits.iter().enumerate() {
                run = if i > 0 && bits[i - 1] == b { run + 1 } else { 1 };
                if run > mode_run {
                    (mode, mode_run) = (b, run);
                }
            }
            let k = match defaults.iter().position(|d| d.to_bits() == mode) {
                Some(k) => k,
                None if defaults.len() < MAX_CLASSES => {
                    defaults.push(f64::from_bits(mode));
                    defaults.len() - 1
                }
                None => return None,
            };
            class.push(k as u16);
            exceptions.extend((0..n_states as u32).filter(|&y| row[y as usize].to_bits() != mode));
            starts.push(exceptions.len() as u32);
        }
        if exceptions.len() * 4 > known.len() {
            return None;
        }
        Some(Self { n_states, class, defaults, starts, exceptions })
    }

    /// Row `row`'s class.
    #[inline]
    pub fn class(&self, row: usize) -> usize {
        self.class[row] as usize
    }

    /// The states where row `row` differs from its default, by increasing state.
    #[inline]
    pub fn exceptions(&self, row: usize) -> &[u32] {
        &self.exceptions[self.starts[row] as usize..self.starts[row + 1] as usize]
    }

    /// Classes (distinct defaults).
    pub fn n_classes(&self) -> usize {
        self.defaults.len()
    }
}

/// Per sweep, each class's states by decreasing `default + gamma u(y)`, ties as set; holds the
/// table's structure it orders (shared between the copies of an agent).
#[derive(Clone, Debug)]
pub struct BestFirst {
    rows: Arc<RewardRows>,
    n_states: usize,
    ties: Ties,
    /// `default_k + gamma u(y)` at `k * S + y`.
    keys: Vec<f64>,
    /// Class `k`'s order at `k * S..(k + 1) * S`.
    orders: Vec<u32>,
    /// A row's exceptions by decreasing `w` (scratch of [`BestFirst::visit`]).
    scratch: Vec<(f64, u32)>,
}

impl BestFirst {
    /// The orders of `known`'s structure ([`RewardRows::new`]), or `None` where it has none.
    pub fn for_table(known: &[f64], n_rows: usize, n_states: usize, ties: Ties) -> Option<Self> {
        RewardRows::new(known, n_rows, n_states).map(|rows| Self::new(Arc::new(rows), ties))
    }

    pub fn new(rows: Arc<RewardRows>, ties: Ties) -> Self {
        let cells = rows.n_classes() * rows.n_states;
        let widest = (0..rows.class.len()).map(|r| rows.exceptions(r).len()).max().unwrap_or(0);
        Self {
            n_states: rows.n_states,
            ties,
            keys: vec![0.0; cells],
            orders: vec![0; cells],
            scratch: Vec::with_capacity(widest),
            rows,
        }
    }

    /// The table's structure.
    pub fn rows(&self) -> &RewardRows {
        &self.rows
    }

    /// Orders every class's states for the values `u` (once per sweep or stage).
    pub fn update(&mut self, gamma: f64, u: &[f64]) {
        let ns = self.n_states;
        for (k, &default) in self.rows.defaults.iter().enumerate() {
            let keys = &mut self.keys[k * ns..(k + 1) * ns];
            for (key, &u) in keys.iter_mut().zip(u) {
                *key = default + gamma * u;
            }
            let order = &mut self.orders[k * ns..(k + 1) * ns];
            for (i, o) in order.iter_mut().enumerate() {
                *o = i as u32;
            }
            let keys = &*keys;
            // A total order (ties by index), so the unstable sort (which never allocates) is exact.
            match self.ties {
                Ties::LowIndexFirst => {
                    order.sort_unstable_by(|&a, &b| keys[b as usize].total_cmp(&keys[a as usize]).then(a.cmp(&b)))
                }
                Ties::HighIndexFirst => {
                    order.sort_unstable_by(|&a, &b| keys[b as usize].total_cmp(&keys[a as usize]).then(b.cmp(&a)))
                }
            }
        }
    }

    /// The first state (lowest index) maximising `known_row(y) + gamma u(y)` over every state,
    /// as a left-to-right scan with a strict `>` finds it (needs [`Ties::LowIndexFirst`]).
    pub fn best(&self, row: usize, known_row: &[f64], gamma: f64, u: &[f64]) -> usize {
        debug_assert_eq!(self.ties, Ties::LowIndexFirst);
        let rows = &*self.rows;
        let exceptions = rows.exceptions(row);
        let (mut best, mut best_w) = (usize::MAX, f64::NEG_INFINITY);
        for &y in exceptions {
            let w = known_row[y as usize] + gamma * u[y as usize];
            if w > best_w {
                (best, best_w) = (y as usize, w);
            }
        }
        let k = rows.class(row);
        let ns = self.n_states;
        // The class's first state that is not an exception is the best of the others.
        for &y in &self.orders[k * ns..(k + 1) * ns] {
            if exceptions.binary_search(&y).is_ok() {
                continue;
            }
            let w = self.keys[k * ns + y as usize];
            if w > best_w || (w == best_w && (y as usize) < best) {
                best = y as usize;
            }
            break;
        }
        best
    }

    /// Calls `f(y, w(y))` for row `row`'s states from the best down (equal `w`: as set by
    /// [`Ties`]) until `f` returns `false`.
    pub fn visit(
        &mut self,
        row: usize,
        known_row: &[f64],
        gamma: f64,
        u: &[f64],
        mut f: impl FnMut(usize, f64) -> bool,
    ) {
        // Disjoint borrows: the scratch is written while the structure and orders are read.
        let Self { rows, n_states, ties, keys, orders, scratch } = self;
        let exceptions = rows.exceptions(row);
        scratch.clear();
        scratch.extend(exceptions.iter().map(|&y| (known_row[y as usize] + gamma * u[y as usize], y)));
        let ties = *ties;
        let before = |a: (f64, u32), b: (f64, u32)| match a.0.total_cmp(&b.0) {
            std::cmp::Ordering::Equal => match ties {
                Ties::LowIndexFirst => a.1 < b.1,
                Ties::HighIndexFirst => a.1 > b.1,
            },
            order => order == std::cmp::Ordering::Greater,
        };
        scratch.sort_unstable_by(
            |&a, &b| {
                if before(a, b) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            },
        );
        let k = rows.class(row);
        let ns = *n_states;
        let (order, keys) = (&orders[k * ns..(k + 1) * ns], &keys[k * ns..(k + 1) * ns]);
        let mut next_exception = 0;
        for &y in order {
            if exceptions.binary_search(&y).is_ok() {
                continue;
            }
            let here = (keys[y as usize], y);
            while next_exception < scratch.len() && before(scratch[next_exception], here) {
                let (w, e) = scratch[next_exception];
                next_exception += 1;
                if !f(e as usize, w) {
                    return;
                }
            }
            if !f(y as usize, here.0) {
                return;
            }
        }
        for &(w, e) in &scratch[next_exception..] {
            if !f(e as usize, w) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A table of `rows` rows over `ns` states: a default per row from `defaults`, and a few
    /// exceptions drawn from `values` (small sets, so ties are common).
    fn table(ns: usize, picks: &[(usize, usize, usize)], classes: &[usize]) -> Vec<f64> {
        let defaults = [-1.0, 0.0, 20.0, -10.0];
        let values = [-1.0, 20.0, 0.5, -0.0, 3.0];
        let mut t: Vec<f64> = classes.iter().flat_map(|&c| std::iter::repeat_n(defaults[c % 4], ns)).collect();
        for &(row, y, v) in picks {
            let row = row % classes.len();
            t[row * ns + y % ns] = values[v % values.len()];
        }
        t
    }

    proptest! {
        #[test]
        fn best_and_visit_follow_the_dense_scan_and_sort(
            classes in proptest::collection::vec(0usize..4, 1..6),
            picks in proptest::collection::vec((0usize..6, 0usize..40, 0usize..5), 0..9),
            levels in proptest::collection::vec(0usize..4, 40),
            gamma in prop_oneof![Just(0.95), 0.5f64..1.0],
        ) {
            let ns = 40;
            let known = table(ns, &picks, &classes);
            let rows = Arc::new(RewardRows::new(&known, classes.len(), ns).expect("structured"));
            // At most 8 exceptions: at most a quarter of the 40 entries of one row.
            // Few distinct values, so equal w (and equal u) are common.
            let u: Vec<f64> = levels.iter().map(|&l| [0.0, 1.5, 1.5000000000000002, 7.25][l]).collect();
            let mut low = BestFirst::new(Arc::clone(&rows), Ties::LowIndexFirst);
            let mut high = BestFirst::new(rows, Ties::HighIndexFirst);
            low.update(gamma, &u);
            high.update(gamma, &u);
            for row in 0..classes.len() {
                let known_row = &known[row * ns..(row + 1) * ns];
                let w: Vec<f64> = known_row.iter().zip(&u).map(|(&r, &u)| r + gamma * u).collect();
                let mut first = 0;
                for y in 0..ns {
                    if w[y] > w[first] {
                        first = y;
                    }
                }
                prop_assert_eq!(low.best(row, known_row, gamma, &u), first);
                // The dense sort by increasing (w, index), read backwards.
                let mut dense: Vec<usize> = (0..ns).collect();
                dense.sort_by(|&a, &b| w[a].total_cmp(&w[b]).then(a.cmp(&b)));
                dense.reverse();
                let mut got = Vec::new();
                high.visit(row, known_row, gamma, &u, |y, wy| {
                    got.push((y, wy.to_bits()));
                    true
                });
                let expected: Vec<(usize, u64)> = dense.iter().map(|&y| (y, w[y].to_bits())).collect();
                prop_assert_eq!(got, expected);
            }
        }
    }

    #[test]
    fn small_or_irregular_tables_keep_the_dense_loops() {
        assert!(RewardRows::new(&[0.0; 8 * 4], 4, 8).is_none());
        // Every entry different: exceptions everywhere.
        let ns = 40;
        let varied: Vec<f64> = (0..2 * ns).map(|i| i as f64).collect();
        assert!(RewardRows::new(&varied, 2, ns).is_none());
        // One default per row, 20 distinct: too many classes.
        let classes: Vec<f64> = (0..20 * ns).map(|i| (i / ns) as f64).collect();
        assert!(RewardRows::new(&classes, 20, ns).is_none());
    }

    #[test]
    fn visit_stops_when_asked() {
        let ns = 40;
        let known = vec![-1.0; ns];
        let mut order = BestFirst::for_table(&known, 1, ns, Ties::HighIndexFirst).unwrap();
        let u: Vec<f64> = (0..ns).map(|y| y as f64).collect();
        order.update(0.9, &u);
        let mut seen = Vec::new();
        order.visit(0, &known, 0.9, &u, |y, _| {
            seen.push(y);
            seen.len() < 3
        });
        assert_eq!(seen, vec![39, 38, 37]);
    }
}
