//! Formula-set generation (`--formula_set_generation ... --reduce`, SPEC 4.9.4) and the shipped sets.
//!
//! F_n holds one representative of every ranking of the sample points that a valid formula of at
//! most `n` tokens over the 14 tokens induces:
//! 1. every valid RPN sequence of length 1..=n over [`GENERATION_TOKENS`] (in that order, the
//!    first position most significant) is a candidate;
//! 2. `n_points` points are drawn uniformly in [-100, 100]^3 from stream
//!    `(seed, FORMULA_POINTS, 0)`, point by point, coordinate by coordinate;
//! 3. a candidate that fails (ln <= 0, sqrt < 0, 1/0, x/0) on any point is discarded; the others are
//!    keyed by the stable ascending argsort of their values; per key the candidate with the fewest
//!    tokens is kept, the first generated on a tie; the output is ordered by key, lexicographically.
//!
//! # How it is fast
//! * Depth-first enumeration of prefixes with stack-height pruning: a prefix that underflows, or
//!   whose stack cannot be reduced to one value with the tokens left, is never extended.
//! * Column evaluation with prefix sharing: each node of the enumeration applies one token to
//!   whole columns (all points at once, vectorisable loops) and its children reuse the result.
//!   A prefix that fails on a point is pruned with its whole subtree: every formula that
//!   starts with it fails on that point too.
//! * No full sort for known keys. The key is the unique permutation `p` along which the values
//!   are non-decreasing with ties in increasing index order; whether a candidate has the key `p` of
//!   a stored representative is therefore checked in one linear pass. Candidates are bucketed by
//!   a fingerprint of their key (the stable argsort of the first 16 points, packed in a u64, a
//!   function of the full key), so only a few stored keys are checked; a full argsort is computed
//!   only for keys not seen yet (a few thousand).
//! * Parallel over 3-token prefixes (rayon). The store keeps the **full** key of every
//!   representative (no hashing, so no collisions to argue about), and the winner of each key is
//!   the minimum of (length, lexicographic code), taken with an atomic `fetch_min`, so the result
//!   does not depend on the thread count or timing.
//!
//! Values are ordered as the original's `<`: `-0.0 == 0.0`. NaN is ordered after every number, a
//! total order where the original's `std::stable_sort` with `<` would be undefined. (From points in
//! [-100, 100] and at most 8 tokens no value can overflow — the largest come from inverting
//! rounding noise, around 1e19, or products of two such — and 0/0 is an error, so no NaN arises.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Instant;

use rand::Rng as _;
use rayon::prelude::*;

use super::{Binary, Formula, Token, Unary, N_VARIABLES};
use crate::error::Result;
use crate::invalid;
use crate::rng::{purpose, stream};

/// The generation order of the tokens (the original's `std::set` iteration order, SPEC 4.9.4).
pub const GENERATION_TOKENS: [Token; 14] = [
    Token::Binary(Binary::Max2),
    Token::Binary(Binary::Min2),
    Token::Binary(Binary::Mul2),
    Token::Binary(Binary::Add2),
    Token::Binary(Binary::Div),
    Token::Binary(Binary::Sub),
    Token::Unary(Unary::Opp),
    Token::Unary(Unary::Inv),
    Token::Unary(Unary::Sqrt),
    Token::Unary(Unary::Ln),
    Token::Unary(Unary::Abs),
    Token::Var(2),
    Token::Var(1),
    Token::Var(0),
];

const N_TOKENS: u64 = GENERATION_TOKENS.len() as u64;
/// Longest formulas [`formula_set`] accepts (14^8 = 1.5e9 candidates).
pub const MAX_GENERATION_SIZE: usize = 8;
/// The points range of the benchmark.
pub const POINTS_RANGE: (f64, f64) = (-100.0, 100.0);
/// Points in the key fingerprint (16 indices of 4 bits fill a u64).
const FINGERPRINT_POINTS: usize = 16;
/// Enumeration prefixes handed out as parallel tasks.
const TASK_PREFIX: usize = 3;

/// Counters of one generation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FormulaSetStats {
    /// Enumeration nodes evaluated (viable prefixes, one column operation each).
    pub nodes: u64,
    /// Valid formulas that evaluate without error on every point (the candidates that get a key).
    pub evaluated: u64,
    /// Distinct keys: the size of the set.
    pub distinct: usize,
    /// Full argsorts computed (distinct keys plus races between threads).
    pub sorts: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Total order of values matching the original's `<` (`-0.0 == 0.0`), NaN after every number.
#[inline]
fn order_key(v: f64) -> u64 {
    let v = if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The key: the stable ascending argsort of `values`.
fn full_key(values: &[f64]) -> Box<[u16]> {
    let mut idx: Vec<u16> = (0..values.len() as u16).collect();
    idx.sort_unstable_by_key(|&i| (order_key(values[i as usize]), i));
    idx.into_boxed_slice()
}

/// Whether `key` is the stable argsort of `values` (values non-decreasing along `key`, ties in
/// increasing index order): one linear pass, no sort.
#[inline]
fn has_key(values: &[f64], key: &[u16]) -> bool {
    let mut prev_i = key[0];
    let mut prev_k = order_key(values[prev_i as usize]);
    for &i in &key[1..] {
        let k = order_key(values[i as usize]);
        if k < prev_k || (k == prev_k && i < prev_i) {
            return false;
        }
        prev_k = k;
        prev_i = i;
    }
    true
}

/// The stable argsort of the first `m <= 16` values, 4 bits per index.
#[inline]
fn fingerprint(values: &[f64]) -> u64 {
    let m = values.len().min(FINGERPRINT_POINTS);
    let mut keys = [(0u64, 0u8); FINGERPRINT_POINTS];
    for i in 0..m {
        let k = (order_key(values[i]), i as u8);
        let mut j = i;
        while j > 0 && keys[j - 1] > k {
            keys[j] = keys[j - 1];
            j -= 1;
        }
        keys[j] = k;
    }
    keys[..m].iter().fold(0u64, |acc, &(_, i)| (acc << 4) | i as u64)
}

/// The fingerprint of a full key: its subsequence of the first 16 indices.
fn fingerprint_of_key(key: &[u16]) -> u64 {
    key.iter().filter(|&&i| (i as usize) < FINGERPRINT_POINTS).fold(0u64, |acc, &i| (acc << 4) | i as u64)
}

struct Rep {
    key: Box<[u16]>,
    /// min over the formulas with this key of `(length << 40) | lexicographic code`.
    code: AtomicU64,
}

#[derive(Default)]
struct Store {
    buckets: HashMap<u64, Vec<u32>>,
    reps: Vec<Rep>,
}

impl Store {
    fn find(&self, fp: u64, values: &[f64]) -> Option<&Rep> {
        let bucket = self.buckets.get(&fp)?;
        bucket.iter().map(|&r| &self.reps[r as usize]).find(|rep| has_key(values, &rep.key))
    }
}

#[derive(Clone, Copy)]
enum Ref {
    Var(u8),
    Col(u8),
}

struct Context<'a> {
    vars: &'a [Vec<f64>; N_VARIABLES],
    store: &'a RwLock<Store>,
    max_len: usize,
}

struct Workspace {
    cols: Vec<Vec<f64>>,
    stack: Vec<Ref>,
    nodes: u64,
    evaluated: u64,
    sorts: u64,
}

fn column<'a>(r: Ref, vars: &'a [Vec<f64>; N_VARIABLES], cols: &'a [Vec<f64>]) -> &'a [f64] {
    match r {
        Ref::Var(i) => &vars[i as usize],
        Ref::Col(d) => &cols[d as usize],
    }
}

/// `out = op(a)` on whole columns; false if the operator fails on some point (then `out` is junk).
fn unary_column(op: Unary, a: &[f64], out: &mut [f64]) -> bool {
    match op {
        Unary::Abs => out.iter_mut().zip(a).for_each(|(o, &v)| *o = v.abs()),
        Unary::Opp => out.iter_mut().zip(a).for_each(|(o, &v)| *o = -v),
        Unary::Ln => {
            if a.iter().fold(false, |bad, &v| bad | (v <= 0.0)) {
                return false;
            }
            out.iter_mut().zip(a).for_each(|(o, &v)| *o = v.ln());
        }
        Unary::Sqrt => {
            if a.iter().fold(false, |bad, &v| bad | (v < 0.0)) {
                return false;
            }
            out.iter_mut().zip(a).for_each(|(o, &v)| *o = v.sqrt());
        }
        Unary::Inv => {
            if a.iter().fold(false, |bad, &v| bad | (v == 0.0)) {
                return false;
            }
            out.iter_mut().zip(a).for_each(|(o, &v)| *o = 1.0 / v);
        }
    }
    true
}

/// `out = op(a, b)` on whole columns (`b` is the top of the stack); false if it fails somewhere.
fn binary_column(op: Binary, a: &[f64], b: &[f64], out: &mut [f64]) -> bool {
    let it = out.iter_mut().zip(a.iter().zip(b));
    match op {
        Binary::Sub => it.for_each(|(o, (&x, &y))| *o = x - y),
        Binary::Add2 => it.for_each(|(o, (&x, &y))| *o = y + x),
        Binary::Mul2 => it.for_each(|(o, (&x, &y))| *o = y * x),
        Binary::Min2 => it.for_each(|(o, (&x, &y))| *o = if x < y { x } else { y }),
        Binary::Max2 => it.for_each(|(o, (&x, &y))| *o = if x > y { x } else { y }),
        Binary::Div => {
            if b.iter().fold(false, |bad, &v| bad | (v == 0.0)) {
                return false;
            }
            it.for_each(|(o, (&x, &y))| *o = x / y);
        }
    }
    true
}

impl Workspace {
    fn new(max_len: usize, n_points: usize) -> Self {
        Self {
            cols: vec![vec![0.0; n_points]; max_len],
            stack: Vec::with_capacity(max_len + 1),
            nodes: 0,
            evaluated: 0,
            sorts: 0,
        }
    }

    /// Extends the current prefix (`depth` tokens, lexicographic code `code`) by one token, in
    /// generation order; tokens at depths below `prefix.len()` are forced. Complete formulas of
    /// length >= `report_from` are recorded.
    fn visit(&mut self, ctx: &Context<'_>, depth: usize, code: u64, prefix: &[u8], report_from: usize) {
        let choices = if depth < prefix.len() { prefix[depth]..prefix[depth] + 1 } else { 0..N_TOKENS as u8 };
        for t in choices {
            let token = GENERATION_TOKENS[t as usize];
            let arity = token.arity();
            let h = self.stack.len();
            if h < arity {
                continue;
            }
            let new_h = h + 1 - arity;
            let left = ctx.max_len - (depth + 1);
            if new_h - 1 > left {
                continue;
            }
            // Apply the token.
            let saved = [self.stack.get(h.wrapping_sub(2)).copied(), self.stack.last().copied()];
            match token {
                Token::Var(i) => self.stack.push(Ref::Var(i)),
                Token::Unary(u) => {
                    let (before, after) = self.cols.split_at_mut(depth);
                    let a = column(self.stack[h - 1], ctx.vars, before);
                    if !unary_column(u, a, &mut after[0]) {
                        continue;
                    }
                    self.stack[h - 1] = Ref::Col(depth as u8);
                }
                Token::Binary(b) => {
                    let (before, after) = self.cols.split_at_mut(depth);
                    let x = column(self.stack[h - 2], ctx.vars, before);
                    let y = column(self.stack[h - 1], ctx.vars, before);
                    if !binary_column(b, x, y, &mut after[0]) {
                        continue;
                    }
                    self.stack.pop();
                    self.stack[h - 2] = Ref::Col(depth as u8);
                }
                Token::Const(_) => unreachable!("no constants in generation"),
            }
            self.nodes += 1;
            let code = code * N_TOKENS + t as u64;
            if new_h == 1 && depth + 1 >= report_from {
                self.report(ctx, depth + 1, code);
            }
            if depth + 1 < ctx.max_len {
                self.visit(ctx, depth + 1, code, prefix, report_from);
            }
            // Restore the stack.
            match arity {
                0 => {
                    self.stack.pop();
                }
                1 => self.stack[h - 1] = saved[1].expect("operand"),
                _ => {
                    self.stack[h - 2] = saved[0].expect("operand");
                    self.stack.push(saved[1].expect("operand"));
                }
            }
        }
    }

    /// Records the complete formula of `len` tokens (code `code`) whose values are on the stack.
    fn report(&mut self, ctx: &Context<'_>, len: usize, code: u64) {
        self.evaluated += 1;
        let values = column(self.stack[0], ctx.vars, &self.cols);
        let priority = ((len as u64) << 40) | code;
        let fp = fingerprint(values);
        if let Some(rep) = ctx.store.read().expect("store lock").find(fp, values) {
            rep.code.fetch_min(priority, Ordering::Relaxed);
            return;
        }
        let key = full_key(values);
        self.sorts += 1;
        debug_assert_eq!(fingerprint_of_key(&key), fp);
        let mut store = ctx.store.write().expect("store lock");
        if let Some(rep) = store.find(fp, values) {
            // Another thread stored this key in the meantime.
            rep.code.fetch_min(priority, Ordering::Relaxed);
            return;
        }
        let id = store.reps.len() as u32;
        store.reps.push(Rep { key, code: AtomicU64::new(priority) });
        store.buckets.entry(fp).or_default().push(id);
    }
}

fn decode(priority: u64) -> Formula {
    let len = (priority >> 40) as usize;
    let mut code = priority & ((1 << 40) - 1);
    let mut tokens = vec![GENERATION_TOKENS[0]; len];
    for slot in tokens.iter_mut().rev() {
        *slot = GENERATION_TOKENS[(code % N_TOKENS) as usize];
        code /= N_TOKENS;
    }
    Formula::new(tokens).expect("generated formulas are valid")
}

/// The `n_points` points of a generation, as three columns (X0, X1, X2).
pub fn generation_points(seed: u64, n_points: usize) -> [Vec<f64>; N_VARIABLES] {
    let mut rng = stream(seed, purpose::FORMULA_POINTS, 0);
    let (lo, hi) = POINTS_RANGE;
    let mut cols: [Vec<f64>; N_VARIABLES] = std::array::from_fn(|_| Vec::with_capacity(n_points));
    for _ in 0..n_points {
        for col in cols.iter_mut() {
            col.push(lo + (hi - lo) * rng.random::<f64>());
        }
    }
    cols
}

/// The formula set F_n (SPEC 4.9.4) for the points of `seed`.
pub fn formula_set(n: usize, seed: u64, n_points: usize) -> Result<Vec<Formula>> {
    formula_set_with_stats(n, seed, n_points).map(|(set, _)| set)
}

/// [`formula_set`] with counters and the wall time.
pub fn formula_set_with_stats(n: usize, seed: u64, n_points: usize) -> Result<(Vec<Formula>, FormulaSetStats)> {
    if !(1..=MAX_GENERATION_SIZE).contains(&n) {
        return Err(invalid!("formula size n must be in 1..={MAX_GENERATION_SIZE}, got {n}"));
    }
    if !(1..=u16::MAX as usize).contains(&n_points) {
        return Err(invalid!("n_points must be in 1..={}, got {n_points}", u16::MAX));
    }
    let start = Instant::now();
    let vars = generation_points(seed, n_points);
    let store = RwLock::new(Store::default());
    let ctx = Context { vars: &vars, store: &store, max_len: n };

    // Formulas shorter than the task prefixes, sequentially.
    let split = TASK_PREFIX.min(n);
    let mut stats = FormulaSetStats::default();
    {
        let short = Context { max_len: split - 1, ..ctx };
        if short.max_len > 0 {
            let mut ws = Workspace::new(short.max_len, n_points);
            ws.visit(&short, 0, 0, &[], 1);
            (stats.nodes, stats.evaluated, stats.sorts) = (ws.nodes, ws.evaluated, ws.sorts);
        }
    }
    // Every viable prefix of `split` tokens is a task; each reports formulas of >= split tokens.
    let mut prefixes = Vec::new();
    let mut p = vec![0u8; split];
    'outer: loop {
        let mut h = 0usize;
        let mut viable = true;
        for (d, &t) in p.iter().enumerate() {
            let arity = GENERATION_TOKENS[t as usize].arity();
            if h < arity {
                viable = false;
                break;
            }
            h = h + 1 - arity;
            if h - 1 > n - (d + 1) {
                viable = false;
                break;
            }
        }
        if viable {
            prefixes.push(p.clone());
        }
        for d in (0..split).rev() {
            p[d] += 1;
            if (p[d] as u64) < N_TOKENS {
                continue 'outer;
            }
            p[d] = 0;
        }
        break;
    }
    let counts = prefixes
        .par_iter()
        .map_init(
            || Workspace::new(n, n_points),
            |ws, prefix| {
                let before = (ws.nodes, ws.evaluated, ws.sorts);
                ws.visit(&ctx, 0, 0, prefix, split);
                (ws.nodes - before.0, ws.evaluated - before.1, ws.sorts - before.2)
            },
        )
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    stats.nodes += counts.0;
    stats.evaluated += counts.1;
    stats.sorts += counts.2;

    let mut reps = store.into_inner().expect("store lock").reps;
    reps.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    let set: Vec<Formula> = reps.iter().map(|r| decode(r.code.load(Ordering::Relaxed))).collect();
    stats.distinct = set.len();
    stats.seconds = start.elapsed().as_secs_f64();
    Ok((set, stats))
}

/// Reads a list of formulas (RPN, or infix as [`Formula::parse_any`]): one per line or separated by
/// `;`; blank parts and `#` comment lines are skipped. Errors name the offending entry.
pub fn parse_formula_list(text: &str) -> Result<Vec<Formula>> {
    let mut out = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let f = Formula::parse_any(part)
                .map_err(|e| invalid!("formula list, line {}: '{part}' is not a valid formula: {e}", line_no + 1))?;
            out.push(f);
        }
    }
    if out.is_empty() {
        return Err(invalid!("the formula list is empty"));
    }
    Ok(out)
}

/// The text of a formula-set file: a `#` header line, then one RPN formula per line.
pub fn format_formula_set(set: &[Formula], header: &str) -> String {
    let mut s = format!("# {}\n", header.replace('\n', " "));
    for f in set {
        s.push_str(&f.to_rpn());
        s.push('\n');
    }
    s
}

/// The sets shipped in `python/bbrl/data/formulas/` (seed 0, 1000 points), by name `F2`..`F6`.
pub fn shipped_set_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "F2" => include_str!("../../../../python/bbrl/data/formulas/F2.txt"),
        "F3" => include_str!("../../../../python/bbrl/data/formulas/F3.txt"),
        "F4" => include_str!("../../../../python/bbrl/data/formulas/F4.txt"),
        "F5" => include_str!("../../../../python/bbrl/data/formulas/F5.txt"),
        "F6" => include_str!("../../../../python/bbrl/data/formulas/F6.txt"),
        _ => return None,
    })
}

/// A shipped set, parsed.
pub fn shipped_set(name: &str) -> Result<Vec<Formula>> {
    let text = shipped_set_text(name).ok_or_else(|| invalid!("unknown formula set '{name}'; shipped: F2..F6"))?;
    parse_formula_list(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The key of a formula computed the slow way: scalar evaluation, then a stable sort.
    fn scalar_key(f: &Formula, vars: &[Vec<f64>; 3]) -> Option<Vec<usize>> {
        let values: Vec<f64> = (0..vars[0].len())
            .map(|i| f.eval([vars[0][i], vars[1][i], vars[2][i]]))
            .collect::<std::result::Result<_, _>>()
            .ok()?;
        let mut idx: Vec<usize> = (0..values.len()).collect();
        idx.sort_by(|&a, &b| values[a].partial_cmp(&values[b]).unwrap());
        Some(idx)
    }

    #[test]
    fn f2_is_as_in_the_spec() {
        let set = formula_set(2, 0, 1000).unwrap();
        let got: HashSet<String> = set.iter().map(|f| f.to_rpn()).collect();
        let mut expected = HashSet::new();
        for i in 0..3 {
            expected.insert(format!("X{i}"));
            for op in ["ABS", "INV", "OPP"] {
                expected.insert(format!("X{i} {op}"));
            }
        }
        assert_eq!(got, expected);
        assert_eq!(set.len(), 12);
    }

    #[test]
    fn sizes_match_the_paper_for_any_points() {
        for seed in [0, 1] {
            assert_eq!(formula_set(2, seed, 1000).unwrap().len(), 12);
            assert_eq!(formula_set(3, seed, 1000).unwrap().len(), 43);
        }
        let (f4, stats) = formula_set_with_stats(4, 0, 1000).unwrap();
        assert_eq!(f4.len(), 226);
        assert_eq!(stats.distinct, 226);
        // F3's content as SPEC 4.9.4 describes it.
        let f3: HashSet<String> = formula_set(3, 0, 1000).unwrap().iter().map(|f| f.to_rpn()).collect();
        assert!(f3.contains("X2 X2 DIV"), "the constant formula");
        assert!(f3.contains("X0 INV ABS") && f3.contains("X1 OPP INV"));
        assert!(f3.contains("X2 X0 DIV") && f3.contains("X1 X0 MAX2"));
    }

    #[test]
    fn kept_formulas_rank_the_points_differently_and_are_ordered_by_key() {
        let points = generation_points(0, 1000);
        let set = formula_set(4, 0, 1000).unwrap();
        let keys: Vec<Vec<usize>> =
            set.iter().map(|f| scalar_key(f, &points).expect("kept formulas never fail")).collect();
        let distinct: HashSet<&Vec<usize>> = keys.iter().collect();
        assert_eq!(distinct.len(), set.len());
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "output ordered by key");
    }

    /// Brute force over all 14^L sequences (L <= 4), scalar evaluation, first-seen representatives:
    /// the fast generator must give the same set, representatives and order.
    #[test]
    fn matches_a_brute_force_reduction() {
        let n = 4;
        let points = generation_points(5, 120);
        let mut best: Vec<(Vec<usize>, Formula)> = Vec::new();
        for len in 1..=n {
            for code in 0..N_TOKENS.pow(len as u32) {
                let f = match decode_checked(len, code) {
                    Some(f) => f,
                    None => continue,
                };
                if let Some(key) = scalar_key(&f, &points) {
                    if !best.iter().any(|(k, _)| *k == key) {
                        best.push((key, f));
                    }
                }
            }
        }
        best.sort_by(|a, b| a.0.cmp(&b.0));
        let fast = formula_set(n, 5, 120).unwrap();
        let slow: Vec<Formula> = best.into_iter().map(|(_, f)| f).collect();
        assert_eq!(fast, slow);
    }

    /// The reduction relies on it: formulas with the same key (monotone transforms of each other on
    /// the sample) pick the same argmax over any subset of the points, taken as "actions".
    #[test]
    fn argmax_is_invariant_between_formulas_of_equal_key() {
        let points = generation_points(3, 300);
        let set = formula_set(3, 3, 300).unwrap();
        let keys: Vec<Vec<usize>> = set.iter().map(|f| scalar_key(f, &points).unwrap()).collect();
        let argmax = |f: &Formula, subset: &[usize]| -> Vec<usize> {
            let v: Vec<f64> =
                subset.iter().map(|&i| f.eval([points[0][i], points[1][i], points[2][i]]).unwrap()).collect();
            let best = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (0..v.len()).filter(|&a| v[a] == best).collect()
        };
        let mut rng = stream(7, 0, 0);
        let mut checked = 0;
        for len in 1..=3 {
            for code in 0..N_TOKENS.pow(len as u32) {
                let Some(f) = decode_checked(len, code) else { continue };
                let Some(key) = scalar_key(&f, &points) else { continue };
                let rep = &set[keys.iter().position(|k| *k == key).expect("every key has a representative")];
                for _ in 0..20 {
                    let subset: Vec<usize> = (0..4).map(|_| rng.random_range(0..300)).collect();
                    assert_eq!(argmax(&f, &subset), argmax(rep, &subset), "{f} vs {rep}");
                }
                checked += 1;
            }
        }
        assert!(checked > 90, "{checked}");
    }

    /// Regenerates the shipped F5 and F6 (seed 0) and prints the times; run in release:
    /// `cargo test --release --lib -- --ignored regenerates_the_shipped`.
    #[test]
    #[ignore]
    fn regenerates_the_shipped_f5_and_f6() {
        for n in [5, 6] {
            let (set, stats) = formula_set_with_stats(n, 0, 1000).unwrap();
            eprintln!("F{n}: {} formulas in {:.3} s ({stats:?})", set.len(), stats.seconds);
            assert_eq!(set, shipped_set(&format!("F{n}")).unwrap());
        }
    }

    fn decode_checked(len: usize, mut code: u64) -> Option<Formula> {
        let mut tokens = vec![GENERATION_TOKENS[0]; len];
        for slot in tokens.iter_mut().rev() {
            *slot = GENERATION_TOKENS[(code % N_TOKENS) as usize];
            code /= N_TOKENS;
        }
        Formula::new(tokens).ok()
    }

    #[test]
    fn keys_and_fingerprints_agree() {
        let values = [3.0, -1.0, 3.0, 0.0, -0.0, 2.0];
        let key = full_key(&values);
        assert_eq!(&*key, &[1, 3, 4, 5, 0, 2]);
        assert!(has_key(&values, &key));
        assert!(!has_key(&values, &[1, 4, 3, 5, 0, 2]));
        assert_eq!(fingerprint(&values), fingerprint_of_key(&key));
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(formula_set(0, 0, 1000).unwrap_err().to_string().contains("size n"));
        assert!(formula_set(9, 0, 1000).is_err());
        assert!(formula_set(2, 0, 0).unwrap_err().to_string().contains("n_points"));
        let e = parse_formula_list("X0\nX0 X1\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(parse_formula_list("# only a comment\n").is_err());
        assert_eq!(parse_formula_list("X0; X1 ABS\n# c\n\nX2").unwrap().len(), 3);
    }

    #[test]
    fn shipped_sets_parse_and_have_the_expected_sizes() {
        for (name, size) in [("F2", 12), ("F3", 43), ("F4", 226)] {
            assert_eq!(shipped_set(name).unwrap().len(), size, "{name}");
        }
        // F2..F4 are regenerated exactly from the recorded seed.
        for n in 2..=4 {
            let text = shipped_set_text(&format!("F{n}")).unwrap();
            let header = text.lines().next().unwrap();
            assert!(header.starts_with('#') && header.contains("seed=0"), "{header}");
            assert_eq!(shipped_set(&format!("F{n}")).unwrap(), formula_set(n, 0, 1000).unwrap());
        }
        let f5 = shipped_set("F5").unwrap().len();
        let f6 = shipped_set("F6").unwrap().len();
        assert!((1150..1250).contains(&f5), "{f5}");
        assert!((7100..7600).contains(&f6), "{f6}");
        assert!(shipped_set("F7").is_err());
    }
}
