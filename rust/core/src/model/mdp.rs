//! A finite MDP with dense transition and reward tables, and its transition sampler.

use std::sync::Arc;

use rand::{Rng as _, RngCore as _};

use crate::error::Result;
use crate::invalid;
use crate::model::sparse::RowSupports;
use crate::model::tables::check_tables;
use crate::model::tables::TabularView;
use crate::rng::Rng;

/// A test MDP: `P[s, a, y]` and `R[s, a, y]` row-major, and an initial state
/// (`None`: uniform at every reset, or drawn from a start law when the MDP has one).
#[derive(Clone, Debug)]
pub struct Mdp {
    n_states: usize,
    n_actions: usize,
    transitions: Vec<f64>,
    rewards: Arc<[f64]>,
    initial_state: Option<usize>,
    /// A start law that is neither one state nor uniform (Taxi's), one probability per state;
    /// `initial_state` is then `None`.
    start_law: Option<Arc<[f64]>>,
    support: RowSupports,
    /// The transition sampler, one record per row. A row with one or two next states (every row
    /// of GC, GDL and Grid) is sampled from its record alone, without a branch on the draw.
    narrow: Vec<NarrowRow>,
    /// The sampler of the other rows (`narrow[row].states[1] == WIDE`): their support as
    /// (cumulative probability, next state, reward) triples in increasing next-state order,
    /// starting at `sampler_start[row]`.
    sampler: Vec<(f64, u32, f64)>,
    sampler_start: Vec<u32>,
}

/// Checks a start law over `n_states` states: one finite, non-negative probability per state,
/// summing to 1 within 1e-9.
pub fn check_start_law(law: &[f64], n_states: usize) -> Result<()> {
    if law.len() != n_states {
        return Err(invalid!("the start law has {} entries for {n_states} states", law.len()));
    }
    if let Some(s) = law.iter().position(|p| !(p.is_finite() && *p >= 0.0)) {
        return Err(invalid!("the start law's probability of state {s} is {}, not a probability", law[s]));
    }
    let total: f64 = law.iter().sum();
    if (total - 1.0).abs() > 1e-9 {
        return Err(invalid!("the start law sums to {total}, not 1"));
    }
    Ok(())
}

/// A state drawn from `law` with one uniform `u` of `rng`: the first state whose cumulative
/// probability exceeds `u`; rounding falls back to the last state with positive probability.
pub(crate) fn draw_from_law(law: &[f64], rng: &mut Rng) -> usize {
    let u: f64 = rng.random();
    let mut cumul = 0.0;
    let mut last = 0;
    for (s, &p) in law.iter().enumerate() {
        if p > 0.0 {
            cumul += p;
            last = s;
            if u < cumul {
                return s;
            }
        }
    }
    last
}

/// `NarrowRow::states[1]` of a row with more than two next states.
const WIDE: u32 = u32::MAX;

/// 2^-53, the scale of rand's 53-bit uniform `f64` in [0, 1).
const UNIT: f64 = 1.0 / (1u64 << 53) as f64;

/// The integer threshold of [`NarrowRow::first_below`]: `k / 2^53 < p` iff `k < ceil(p * 2^53)`
/// for every integer `k < 2^53` (`p * 2^53` is exact, and `p <= 1 + 1e-9` fits in a `u64`).
fn first_below(p: f64) -> u64 {
    (p * (1u64 << 53) as f64).ceil() as u64
}

/// A row's sampler record: its whole support when it has one or two next states.
#[derive(Clone, Copy, Debug)]
struct NarrowRow {
    /// The first next state is drawn iff the 53 random bits `k` of the uniform `u = k / 2^53`
    /// satisfy `k < first_below`, i.e. iff `u < p` for the probability `p` of the first next
    /// state: `first_below = ceil(p * 2^53)`, exact (a power-of-two scaling, then an integer).
    first_below: u64,
    /// The rewards of reaching `states[0]` and `states[1]`.
    rewards: [f64; 2],
    /// The first and second next states in increasing order; both the same state for a
    /// single-state row; `states[1] == WIDE` for a row with more than two.
    states: [u32; 2],
    /// `states[i] * A`, the first row of each next state: the next step's row without a
    /// multiplication on the chain of dependent steps.
    first_rows: [u32; 2],
}

impl Mdp {
    /// A validated MDP: probabilities non-negative and each row summing to 1 (within 1e-9).
    pub fn new(
        n_states: usize,
        n_actions: usize,
        transitions: Vec<f64>,
        rewards: Vec<f64>,
        initial_state: Option<usize>,
    ) -> Result<Self> {
        check_tables(n_states, n_actions, &transitions, "transitions", &rewards, initial_state)?;
        for row in 0..n_states * n_actions {
            let sum: f64 = transitions[row * n_states..(row + 1) * n_states].iter().sum();
            if (sum - 1.0).abs() > 1e-9 {
                return Err(invalid!("transitions[{}, {}, :] sums to {sum}, not 1", row / n_actions, row % n_actions));
            }
        }
        Ok(Self::from_parts(n_states, n_actions, transitions, rewards.into(), initial_state))
    }

    /// Assembles an MDP from tables already known to be valid.
    pub(crate) fn from_parts(
        n_states: usize,
        n_actions: usize,
        transitions: Vec<f64>,
        rewards: Arc<[f64]>,
        initial_state: Option<usize>,
    ) -> Self {
        let support = RowSupports::from_table(n_states, n_actions, &transitions);
        let rows = n_states * n_actions;
        // Row indices are u32 here (as next states are); the tables would need petabytes otherwise.
        assert!(rows <= WIDE as usize, "more than 2^32 - 1 rows");
        let mut narrow = Vec::with_capacity(rows);
        let mut sampler = Vec::new();
        let mut sampler_start = Vec::with_capacity(rows + 1);
        for row in 0..rows {
            sampler_start.push(sampler.len() as u32);
            let base = row * n_states;
            let entries = sampler.len();
            // The cumulative sums are accumulated term by term in increasing next-state order.
            let mut cumul = 0.0;
            for &y in support.row(row) {
                cumul += transitions[base + y as usize];
                sampler.push((cumul, y, rewards[base + y as usize]));
            }
            let (first_cumul, first, first_reward) = sampler[entries];
            let (_, last, last_reward) = sampler[sampler.len() - 1];
            let is_narrow = sampler.len() - entries <= 2;
            let second = if is_narrow { last } else { WIDE };
            narrow.push(NarrowRow {
                first_below: first_below(first_cumul),
                rewards: [first_reward, last_reward],
                states: [first, second],
                first_rows: [first * n_actions as u32, last * n_actions as u32],
            });
            if is_narrow {
                sampler.truncate(entries);
            }
        }
        sampler_start.push(sampler.len() as u32);
        Self {
            n_states,
            n_actions,
            transitions,
            rewards,
            initial_state,
            start_law: None,
            support,
            narrow,
            sampler,
            sampler_start,
        }
    }

    /// This MDP starting from `law` (checked by [`check_start_law`]) instead of its initial state.
    pub(crate) fn with_start_law(mut self, law: Option<Arc<[f64]>>) -> Self {
        if law.is_some() {
            self.initial_state = None;
        }
        self.start_law = law;
        self
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    pub fn transitions(&self) -> &[f64] {
        &self.transitions
    }
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }
    pub fn initial_state_spec(&self) -> Option<usize> {
        self.initial_state
    }

    /// The start law when it is neither one state nor uniform.
    pub fn start_law(&self) -> Option<&[f64]> {
        self.start_law.as_deref()
    }

    /// The state a trajectory starts in.
    pub fn initial_state(&self, rng: &mut Rng) -> usize {
        match (self.initial_state, &self.start_law) {
            (Some(s), _) => s,
            (None, Some(law)) => draw_from_law(law, rng),
            (None, None) => rng.random_range(0..self.n_states),
        }
    }

    /// Samples the next state and reward of `(state, action)`.
    ///
    /// Walks the row's support accumulating probabilities and stops at the first `y` with
    /// `u < cumul`. The original walks every `y` with `u <= cumul` and, should rounding leave `u`
    /// above the total, falls back to state 0 (SPEC 1.2, 7.9); here zero-probability states can
    /// never be returned, and the rounding fallback is the last state of the support.
    ///
    /// A row with one or two next states is sampled without a branch on `u`: the first state if
    /// `u < cumul` of the first, else the second (the last, also the rounding fallback), which
    /// is the walk's answer for every `u`. A 50/50 row would mispredict a branch half the time.
    #[inline]
    pub fn step(&self, state: usize, action: usize, rng: &mut Rng) -> (usize, f64) {
        let (next_state, _, reward) = self.step_from(state * self.n_actions, action, rng);
        (next_state, reward)
    }

    /// Reads every sampler record, if there are at most `steps` of them, so that they are in
    /// cache before a trajectory of `steps` steps: read here, their cache misses overlap; read by
    /// the steps, each waits for the previous one (the next row depends on the draw). The bound
    /// keeps the sweep within the trajectory's own number of row reads.
    pub(crate) fn warm_up(&self, steps: usize) {
        if self.narrow.len() <= steps {
            std::hint::black_box(self.narrow.iter().fold(0, |acc, row| acc ^ row.states[0]));
        }
    }

    /// [`Mdp::step`] from the state whose first row is `first_row` (`state * A`), returning the
    /// next state, its first row and the reward: the form of the trajectory loop.
    #[inline]
    pub(crate) fn step_from(&self, first_row: usize, action: usize, rng: &mut Rng) -> (usize, usize, f64) {
        let row = first_row + action;
        // The draw of `rng.random::<f64>()`: u = bits / 2^53.
        let bits = rng.next_u64() >> 11;
        let narrow = &self.narrow[row];
        if narrow.states[1] != WIDE {
            // All ones iff `bits < first_below` (both below 2^54, so the difference cannot wrap),
            // computed arithmetically: written as a comparison, the compiler turns it back into
            // a branch, which mispredicts on every other draw of a 50/50 row.
            let first = ((bits as i64).wrapping_sub(narrow.first_below as i64) >> 63) as u64;
            let [s0, s1] = narrow.states;
            let next_state = s1 ^ ((s0 ^ s1) & first as u32);
            let [f0, f1] = narrow.first_rows;
            let next_first_row = f1 ^ ((f0 ^ f1) & first as u32);
            let [r0, r1] = narrow.rewards.map(f64::to_bits);
            let reward = f64::from_bits(r1 ^ ((r0 ^ r1) & first));
            return (next_state as usize, next_first_row as usize, reward);
        }
        let (next_state, reward) = self.step_wide(row, bits as f64 * UNIT);
        (next_state, next_state * self.n_actions, reward)
    }

    /// The walk of [`Mdp::step`] over a row with more than two next states.
    fn step_wide(&self, row: usize, u: f64) -> (usize, f64) {
        let entries = &self.sampler[self.sampler_start[row] as usize..self.sampler_start[row + 1] as usize];
        let &(_, last, last_reward) = entries.last().expect("a wide row has more than two next states");
        for &(cumul, y, reward) in entries {
            if u < cumul {
                return (y as usize, reward);
            }
        }
        (last as usize, last_reward)
    }

    /// A borrowed view for the solvers.
    pub fn view(&self) -> TabularView<'_> {
        TabularView {
            n_states: self.n_states,
            n_actions: self.n_actions,
            transitions: &self.transitions,
            rewards: &self.rewards,
            support: &self.support,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn step_frequencies_match_probabilities() {
        let mdp = Mdp::new(3, 1, vec![0.2, 0.0, 0.8, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0], vec![1.0; 9], Some(0)).unwrap();
        let mut rng = stream(5, 0, 0);
        let n = 100_000;
        let hits = (0..n).filter(|_| mdp.step(0, 0, &mut rng).0 == 2).count();
        let p = hits as f64 / n as f64;
        // 5 standard errors of a Bernoulli(0.8) frequency.
        assert!((p - 0.8).abs() < 5.0 * (0.8f64 * 0.2 / n as f64).sqrt());
        assert!((0..1000).all(|_| mdp.step(0, 0, &mut rng).0 != 1));
    }

    /// The sampler's answer by definition: the first support state with `u < cumul`, else the
    /// last one, with `u = rng.random::<f64>()`.
    fn walk(mdp: &Mdp, state: usize, action: usize, rng: &mut Rng) -> (usize, f64) {
        let base = (state * mdp.n_actions() + action) * mdp.n_states();
        let u: f64 = rng.random();
        let (mut cumul, mut last) = (0.0, 0);
        for y in 0..mdp.n_states() {
            if mdp.transitions()[base + y] > 0.0 {
                cumul += mdp.transitions()[base + y];
                last = y;
                if u < cumul {
                    return (y, mdp.rewards()[base + y]);
                }
            }
        }
        (last, mdp.rewards()[base + last])
    }

    #[test]
    fn step_is_the_walk_for_narrow_and_wide_rows() {
        // Rows of one, two and more next states, with awkward and tiny probabilities.
        let rows: [&[f64]; 6] = [
            &[0.0, 1.0, 0.0, 0.0],
            &[0.3, 0.0, 0.7, 0.0],
            &[1e-17, 0.0, 0.0, 1.0 - 1e-17],
            &[0.0, 1.0 / 3.0, 0.0, 2.0 / 3.0],
            &[0.1, 0.2, 0.3, 0.4],
            &[0.0, 0.5, 0.25, 0.25],
        ];
        let (ns, na) = (4, 3);
        let mut transitions = Vec::new();
        for i in 0..ns * na {
            transitions.extend_from_slice(rows[i % rows.len()]);
        }
        let rewards: Vec<f64> = (0..ns * na * ns).map(|i| i as f64 * 0.5 - 3.0).collect();
        let mdp = Mdp::new(ns, na, transitions, rewards, None).unwrap();
        let (mut a, mut b) = (stream(8, 0, 0), stream(8, 0, 0));
        for i in 0..60_000 {
            let (s, act) = (i % ns, (i / ns) % na);
            assert_eq!(mdp.step(s, act, &mut a), walk(&mdp, s, act, &mut b), "draw {i}");
            let (next, first_row, _) = mdp.step_from(s * na, act, &mut stream(9, 0, i as u64));
            assert_eq!(first_row, next * na);
        }
    }

    #[test]
    fn integer_threshold_is_the_float_comparison() {
        let mut rng = stream(4, 0, 0);
        let mut probabilities: Vec<f64> = (0..10_000).map(|_| rng.random()).collect();
        probabilities.extend([1.0, 1.0 - 1e-12, 1.0 + 1e-10, 0.5, 1e-17, 1e-300, f64::MIN_POSITIVE / 8.0]);
        for p in probabilities {
            let t = first_below(p);
            for k in [t.saturating_sub(2), t.saturating_sub(1), t, t + 1] {
                if k < 1 << 53 {
                    assert_eq!(k < t, (k as f64 * UNIT) < p, "p = {p:e}, k = {k}");
                }
            }
        }
        // `bits * UNIT` is rand's `f64`.
        let (mut a, mut b) = (stream(5, 0, 0), stream(5, 0, 0));
        for _ in 0..1000 {
            assert_eq!(((a.next_u64() >> 11) as f64 * UNIT).to_bits(), b.random::<f64>().to_bits());
        }
    }

    #[test]
    fn rows_must_sum_to_one() {
        let err = Mdp::new(2, 1, vec![0.5, 0.4, 1.0, 0.0], vec![0.0; 4], Some(0)).unwrap_err();
        assert!(err.to_string().contains("sums to"));
    }
}
