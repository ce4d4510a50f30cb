//! BFS3Agent (SPEC 4.7): Bayesian Forward Search Sparse Sampling (Asmuth & Littman 2011) as the
//! original BBRL library runs it: FSSS in the belief-augmented MDP, a fresh tree per root sample.

use rand::Rng as _;

use super::common::{argmax_random_tie, argmax_random_tie_by, greedy_probabilities, plan_once, PlanningStream};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::work::{self, Unit};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "bfs3",
    display: "BFS3",
    params: &[
        ParamSpec {
            name: "k",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "forward-search rollouts per decision",
        },
        ParamSpec {
            name: "c",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "branching factor: next states drawn per action",
        },
        ParamSpec {
            name: "depth",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "search depth, in steps",
        },
    ],
    online_units: &[("k", 1.0), ("depth", 1.0)],
    offline_units: &[],
    sizes_memory: &["k", "c", "depth"],
    examples: &[
        Example {
            doc: "quick",
            params: &[("k", ParamDefault::Int(10)), ("c", ParamDefault::Int(2)), ("depth", ParamDefault::Int(15))],
        },
        Example {
            doc: "wider, shallower search",
            params: &[("k", ParamDefault::Int(20)), ("c", ParamDefault::Int(5)), ("depth", ParamDefault::Int(6))],
        },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| Ok(Box::new(Bfs3::new(r.count("k")?, r.count("c")?, r.count("depth")?)?)),
};

/// "No node" in the arena's index links.
const NONE: u32 = u32::MAX;
/// The child of an edge whose node does not exist yet: node 0 of every tree is a placeholder
/// with the bounds of a missing child, `[Vmin, Vmax]`, so backups and path selection read a
/// missing child like any other (no branch on whether it exists).
const MISSING: u32 = 0;
/// `QEntry::len` of an action whose children are not drawn yet.
const DEFERRED: u32 = u32::MAX;
/// `QEntry::len` of a two-state action whose children are drawn, but not stored yet: `start`
/// holds how many of the C samples went to the first support state.
const DRAWN: u32 = u32::MAX - 1;

/// BFS3 with budget `k`, branching factor `c` and depth `depth` (SPEC 4.7, 7.5):
///
/// * for each action `a` of the current state `x`, `c` next states `y` are drawn from the
///   posterior predictive `(counts + theta) / sum`, and
///   `Q(x, a) = mean over the samples of R(x, a, y) + gamma U(y)`, where `U(y)` is the *upper*
///   bound at the root of a fresh FSSS tree grown from `y` by `N = max(1, k / c)` rollouts;
/// * in the tree, each node draws `c` next states per action from the predictive of the planning
///   counts of its path (the real counts plus the transitions simulated on the way down), picks
///   the action of largest upper bound and the child of largest `(U - L) * multiplicity`,
///   ties at random, and is backed up by Bellman updates of both bounds;
/// * bounds start at `[Vmin, Vmax] = [0, Rmax / (1 - gamma)]`, `Rmax` the largest reward of the
///   prior; nodes at depth `depth` are never created, so those leaves keep `[Vmin, Vmax]`;
/// * the action played is the argmax of `Q(x, ·)`, ties at random.
#[derive(Clone, Debug)]
pub struct Bfs3 {
    k: usize,
    c: usize,
    depth: usize,
    state: Option<Bfs3State>,
}

#[derive(Clone, Debug)]
struct Bfs3State {
    initial: CountModel,
    /// Posterior counts `theta + observed` with their supports.
    counts: CountModel,
    r_max: f64,
    gamma: f64,
    v_max: f64,
    /// FSSS rollouts per FSSS call: `max(1, k / c)`.
    rollouts: usize,
    /// The planning counts are `counts + planning`: the transitions simulated on the current
    /// rollout's path, undone from the `touched` log (flat index, row) after each rollout.
    planning: Vec<u32>,
    planning_totals: Vec<u32>,
    touched: Vec<(u32, u32)>,
    tree: FsssTree,
    /// Per-support-state sample counts while a node is expanded.
    sampled: Vec<u32>,
    /// The cumulative predictive weights of a row's support while its children are drawn.
    row_weights: Vec<f64>,
    /// Support entries walked by the draws from rows of three states or more since the last
    /// FSSS tree's count (Unit::DrawEntries): kept here, added to the thread's counters once per tree.
    walked: u64,
    /// Per (s, a) row (at `row * S`), the cumulative weights of its support under the real
    /// counts: the predictive of a row without planning counts (see `sample_children`).
    row_cumulative: Vec<f64>,
    /// `n / C` for `n = 0..=C`: the backup weight of a child drawn `n` times.
    weights: Vec<f64>,
    /// The sample counts of two-state rows.
    binomial: BinomialSampler,
    /// Per (s, a) row, the reward shared by every next state of its support, or NaN when the
    /// rewards differ (see [`Bfs3State::expand`]).
    row_reward: Vec<f64>,
    /// Per (s, a) row with two next states of different rewards, what drawing its sample count
    /// needs (see [`Bfs3State::update_row`]); `None` for the other rows.
    two_state_rows: Vec<Option<TwoStateRow>>,
    /// Per two-state (s, a) row and per count `k = 0..=C` of samples of its first state, the
    /// action's `(upper, lower)` bounds before any child exists, as `FsssTree::backup_action`
    /// computes them (see [`Bfs3State::update_row`]).
    row_bounds: Vec<(f64, f64)>,
    /// The current rollout's path: Q-entries (node, action) from the root down.
    path: Vec<u32>,
    /// Per-action values of the last decision (length A).
    scores: Vec<f64>,
    /// The private stream of [`Agent::action_probabilities`], reseeded at every reset.
    /// The private stream planning draws from (see [`Agent::action_probabilities`]).
    plan_stream: PlanningStream,
}

impl Bfs3 {
    /// Budget `k >= 1`, branching factor `c >= 1`, depth `depth >= 1`.
    pub fn new(k: usize, c: usize, depth: usize) -> Result<Self> {
        if k < 1 {
            return Err(invalid!("k (budget per decision) must be >= 1, got {k}"));
        }
        if c < 1 {
            return Err(invalid!("c (branching factor) must be >= 1, got {c}"));
        }
        if depth < 1 {
            return Err(invalid!("depth must be >= 1, got {depth}"));
        }
        Ok(Self { k, c, depth, state: None })
    }

    fn state(&mut self) -> Result<&mut Bfs3State> {
        let (k, c, depth) = (self.k, self.c, self.depth);
        // The name is formatted only on the error path: `act` and `observe` never allocate.
        self.state.as_mut().ok_or_else(|| not_trained(&name(k, c, depth)))
    }

    /// The value estimate `Q(x, a)` of each action in the last decision (or in the last
    /// [`Agent::action_probabilities`] call); empty before offline learning. A diagnostic.
    pub fn action_values(&self) -> &[f64] {
        self.state.as_ref().map_or(&[], |st| &st.scores)
    }

    /// Runs one FSSS call as [`Agent::act`] does after drawing `next_state` for `(state, action)`
    /// and returns the root's `(lower, upper)` bounds. A diagnostic for tests and studies.
    pub fn fsss_bounds(&mut self, state: usize, action: usize, next_state: usize, rng: &mut Rng) -> Result<(f64, f64)> {
        let (c, depth) = (self.c, self.depth);
        let st = self.state()?;
        let root = st.fsss(state, action, next_state, c, depth, rng);
        let bounds = st.tree.nodes[root as usize];
        Ok((bounds.lower, bounds.upper))
    }
}

fn name(k: usize, c: usize, depth: usize) -> String {
    format!("BFS3 (K = {k}, C = {c}, depth = {depth})")
}

impl Bfs3State {
    fn n_states(&self) -> usize {
        self.counts.n_states()
    }
    fn n_actions(&self) -> usize {
        self.counts.n_actions()
    }

    /// `SelectAction`'s values: `Q(x, a)` for every action into `self.scores`.
    fn plan(&mut self, x: usize, c: usize, depth: usize, rng: &mut Rng) {
        let (ns, na) = (self.n_states(), self.n_actions());
        for a in 0..na {
            let row = x * na + a;
            let mut q = 0.0;
            for _ in 0..c {
                let support = self.counts.support().row(row);
                if support.len() >= 3 {
                    self.walked += support.len() as u64;
                }
                let y = support[self.predictive_index(row, rng)] as usize;
                let root = self.fsss(x, a, y, c, depth, rng);
                // One count per FSSS tree: nodes (less the placeholder node 0), sampled
                // children, rollout levels, and the entries its draws from wide rows walked.
                work::add(Unit::TreeNodes, self.tree.nodes.len() as u64 - 1);
                work::add(Unit::TreeEdges, self.tree.edges.len() as u64);
                work::add_simulated_steps((self.rollouts * depth.saturating_sub(1)) as u64, na);
                work::add(Unit::DrawEntries, std::mem::take(&mut self.walked));
                let upper = self.tree.nodes[root as usize].upper;
                q += (self.counts.rewards()[row * ns + y] + self.gamma * upper) / c as f64;
            }
            self.scores[a] = q;
        }
    }

    /// `FSSS(x, a, y)`: a fresh tree rooted in `y`, grown by `rollouts` rollouts, each starting
    /// from the real counts plus the transition `(x, a, y)`. Returns the root node.
    fn fsss(&mut self, x: usize, a: usize, y: usize, c: usize, depth: usize, rng: &mut Rng) -> u32 {
        let na = self.n_actions();
        self.tree.clear(self.v_max);
        let mut root = NONE;
        for _ in 0..self.rollouts {
            self.plan_transition(x * na + a, y);
            if root == NONE {
                root = self.expand(y, c, rng);
            }
            self.rollout(root, y, c, depth, rng);
            for &(i, row) in &self.touched {
                self.planning[i as usize] -= 1;
                self.planning_totals[row as usize] -= 1;
            }
            self.touched.clear();
        }
        debug_assert!(self.planning.iter().all(|&n| n == 0));
        root
    }

    /// One FSSS rollout from the existing node `root` (state `y`) down to depth `depth`.
    ///
    /// The original also runs `bestA`, `selectPath` and a backup at the last level (depth
    /// `depth - 1`), but a node there never gets a child, so none of that changes anything
    /// (beyond tie-breaking draws): the descent stops at that node.
    fn rollout(&mut self, root: u32, y: usize, c: usize, depth: usize, rng: &mut Rng) {
        let na = self.n_actions();
        self.path.clear();
        let (mut node, mut s) = (root, y);
        for _ in 1..depth {
            let first = node as usize * na;
            let q = &self.tree.q[first..first + na];
            let b = argmax_random_tie_by(na, |b| q[b].upper, rng);
            let len = self.tree.q[first + b].len;
            if len == DEFERRED {
                self.sample_children(first + b, s * na + b, c, rng);
            } else if len == DRAWN {
                let k = self.tree.q[first + b].start;
                self.store_two_state_children(first + b, s * na + b, k, c);
            }
            let e = self.tree.select_path(first + b, rng);
            let next = self.tree.edges[e].state as usize;
            self.plan_transition(s * na + b, next);
            self.path.push((first + b) as u32);
            let mut child = self.tree.edges[e].child;
            if child == MISSING {
                child = self.expand(next, c, rng);
                self.tree.edges[e].child = child;
            }
            node = child;
            s = next;
        }
        // `bellmanBackup` of every node on the path, deepest first. Only the action taken at a
        // node has a child whose bounds moved, so only its Q-bounds are recomputed: the others
        // would come out the same.
        for i in (0..self.path.len()).rev() {
            let q = self.path[i] as usize;
            self.tree.backup_action(q, self.gamma);
            self.tree.update_bounds(q / na);
        }
    }

    /// Adds one simulated transition `row -> y` to the planning counts.
    #[inline]
    fn plan_transition(&mut self, row: usize, y: usize) {
        let i = row * self.n_states() + y;
        self.planning[i] += 1;
        self.planning_totals[row] += 1;
        self.touched.push((i as u32, row as u32));
    }

    /// A next state of `row` from the predictive of the planning counts `counts + planning`,
    /// as a position in the row's support.
    #[inline]
    fn predictive_index(&self, row: usize, rng: &mut Rng) -> usize {
        let ns = self.n_states();
        let support = self.counts.support().row(row);
        if support.len() == 1 {
            return 0;
        }
        let base = row * ns;
        let alpha = &self.counts.counts()[base..base + ns];
        let planned = &self.planning[base..base + ns];
        let total = self.counts.row_totals()[row] + f64::from(self.planning_totals[row]);
        let mut u = rng.random::<f64>() * total;
        for (i, &y) in support.iter().enumerate() {
            let w = alpha[y as usize] + f64::from(planned[y as usize]);
            if u < w {
                return i;
            }
            u -= w;
        }
        support.len() - 1
    }

    /// `ExpandNode` then `bellmanBackup`: a node for state `s` with `c` predictive samples per
    /// action, stored as a multiset of next states in increasing order.
    ///
    /// The samples of an action are drawn when a rollout first descends that action rather than
    /// here, whenever that is the same thing: a node's planning counts depend only on its path
    /// from the root, so they are the same whenever a rollout reaches it, and when every next
    /// state of the row has the same reward `r`, the action's bounds before any child exists,
    /// `r + gamma Vmax` and `r + gamma Vmin`, do not depend on the samples either. (The original
    /// sums them over the samples, equal up to rounding.) Most actions of a node are never
    /// descended, so their samples are never drawn.
    ///
    /// When the rewards differ and the row has two next states, the samples are one count `k`
    /// (the first state's), drawn here; the bounds before any child exists depend only on `k`
    /// and are looked up (`row_bounds`, the same arithmetic as a backup), and the edges are
    /// stored when a rollout first descends the action.
    fn expand(&mut self, s: usize, c: usize, rng: &mut Rng) -> u32 {
        let na = self.n_actions();
        let node = self.tree.add_node(self.v_max);
        for b in 0..na {
            let (q, row) = (node as usize * na + b, s * na + b);
            let r = self.row_reward[row];
            if !r.is_nan() {
                self.tree.q[q] = QEntry { upper: r + self.gamma * self.v_max, lower: r, start: 0, len: DEFERRED };
            } else if let Some(info) = self.two_state_rows[row] {
                let w0 = info.count_first + f64::from(self.planning[info.first as usize]);
                let total = info.total + f64::from(self.planning_totals[row]);
                let k = self.binomial.sample(w0, total, rng);
                let (upper, lower) = self.row_bounds[row * (c + 1) + k as usize];
                self.tree.q[q] = QEntry { upper, lower, start: k, len: DRAWN };
            } else {
                self.sample_children(q, row, c, rng);
                self.tree.backup_action(q, self.gamma);
            }
        }
        self.tree.update_bounds(node as usize);
        node
    }

    /// Draws the `c` children of Q-entry `q` (row `row`) from the predictive of the current
    /// planning counts, and stores them as a multiset of next states in increasing order.
    fn sample_children(&mut self, q: usize, row: usize, c: usize, rng: &mut Rng) {
        let base = row * self.n_states();
        let start = self.tree.edges.len();
        let support = self.counts.support().row(row);
        let (rewards, weights) = (self.counts.rewards(), &self.weights);
        let edge = |y: u32, count: u32| Edge {
            state: y,
            child: MISSING,
            count: f64::from(count),
            weight: weights[count as usize],
            reward: rewards[base + y as usize],
        };
        match support.len() {
            1 => self.tree.edges.push(edge(support[0], c as u32)),
            2 => {
                // Each draw goes to the first state with probability w0 / total.
                let y0 = support[0] as usize;
                let w0 = self.counts.counts()[base + y0] + f64::from(self.planning[base + y0]);
                let total = self.counts.row_totals()[row] + f64::from(self.planning_totals[row]);
                let first = self.binomial.sample(w0, total, rng);
                for (y, n) in [(support[0], first), (support[1], c as u32 - first)] {
                    if n > 0 {
                        self.tree.edges.push(edge(y, n));
                    }
                }
            }
            _ => {
                // Count the draws per support state, then emit the edges in support order. Each
                // draw inverts the predictive's CDF: the first state whose cumulative weight exceeds
                // `u * total`, found as the number of cumulative weights at most `u * total` (the
                // weights are positive, so those form a prefix): a count without branches, over
                // cumulative weights computed once for the C draws. (Sampling by subtracting the
                // weights one by one, as `predictive_index` does, is the same law; the two can
                // differ only where `u * total` is within rounding of a cumulative weight.)
                let ns = self.counts.n_states();
                let len = support.len();
                // The cumulative weights of the real counts are kept per row (`update_row`); with
                // planning counts in the row they are summed afresh (adding a zero planning count
                // leaves every sum as it is, so both give the same bits).
                // Each draw walks the row's cumulative weights, and summing them walks it once more.
                let cumulative: &[f64] = if self.planning_totals[row] == 0 {
                    self.walked += (c * len) as u64;
                    &self.row_cumulative[base..base + len]
                } else {
                    self.walked += ((c + 1) * len) as u64;
                    self.row_weights.resize(len, 0.0);
                    let (alpha, planned) = (&self.counts.counts()[base..base + ns], &self.planning[base..base + ns]);
                    cumulative_weights(support, alpha, planned, &mut self.row_weights);
                    &self.row_weights
                };
                let total = self.counts.row_totals()[row] + f64::from(self.planning_totals[row]);
                self.sampled.clear();
                self.sampled.resize(len, 0);
                // The last state takes whatever lies beyond the other cumulative weights.
                let bounds = &cumulative[..len - 1];
                // Which support positions were drawn, as bits (rows of up to 64 states), so that
                // the edges are emitted by walking the drawn positions only, in support order.
                let mut drawn = 0_u64;
                for _ in 0..c {
                    let u = rng.random::<f64>() * total;
                    let index = bounds.iter().map(|&w| usize::from(w <= u)).sum::<usize>();
                    self.sampled[index] += 1;
                    drawn |= 1_u64.checked_shl(index as u32).unwrap_or(0);
                }
                if len <= 64 {
                    while drawn != 0 {
                        let i = drawn.trailing_zeros() as usize;
                        drawn &= drawn - 1;
                        self.tree.edges.push(edge(support[i], self.sampled[i]));
                    }
                } else {
                    for (&y, &n) in support.iter().zip(&self.sampled) {
                        if n > 0 {
                            self.tree.edges.push(edge(y, n));
                        }
                    }
                }
            }
        }
        self.tree.q[q].start = start as u32;
        self.tree.q[q].len = (self.tree.edges.len() - start) as u32;
    }

    /// Stores the children of Q-entry `q` of two-state row `row` whose first state has `first`
    /// of the `c` samples (a state without samples gets no edge).
    #[inline]
    fn store_two_state_children(&mut self, q: usize, row: usize, first: u32, c: usize) {
        let start = self.tree.edges.len();
        let Some(info) = self.two_state_rows[row] else { return };
        for ((y, reward), n) in info.states.into_iter().zip(info.rewards).zip([first, c as u32 - first]) {
            if n > 0 {
                self.tree.edges.push(Edge {
                    state: y,
                    child: MISSING,
                    count: f64::from(n),
                    weight: self.weights[n as usize],
                    reward,
                });
            }
        }
        self.tree.q[q].start = start as u32;
        self.tree.q[q].len = (self.tree.edges.len() - start) as u32;
    }

    /// Recomputes `rows[row]` and `row_bounds` of `row` from the row's counts and support (and
    /// the current `gamma` and `Vmax`).
    fn update_row(&mut self, row: usize) {
        let base = row * self.n_states();
        let rewards = self.counts.rewards();
        let support = self.counts.support().row(row);
        // Outside a search the planning counts are all zero: the real counts' weights.
        let ns = self.n_states();
        let (alpha, planned) = (&self.counts.counts()[base..base + ns], &self.planning[base..base + ns]);
        cumulative_weights(support, alpha, planned, &mut self.row_cumulative[base..base + support.len()]);
        let mut values = support.iter().map(|&y| rewards[base + y as usize]);
        let first = values.next().unwrap_or(f64::NAN);
        let reward = if values.all(|r| r == first) { first } else { f64::NAN };
        self.row_reward[row] = reward;
        self.two_state_rows[row] = (reward.is_nan() && support.len() == 2).then(|| {
            // Each of the C samples goes to the first state with probability w0 / total.
            let y0 = base + support[0] as usize;
            TwoStateRow {
                first: y0 as u32,
                count_first: self.counts.counts()[y0],
                total: self.counts.row_totals()[row],
                states: [support[0], support[1]],
                rewards: [rewards[base + support[0] as usize], rewards[base + support[1] as usize]],
            }
        });
        if support.len() == 2 {
            // `FsssTree::backup_action` on the edges `store_two_state_children` would store, none
            // of them with a child yet: the same operations in the same order, so the same bits.
            let c = self.weights.len() - 1;
            let (r0, r1) = (rewards[base + support[0] as usize], rewards[base + support[1] as usize]);
            let no_child = Bounds { upper: self.v_max, lower: 0.0 };
            for k in 0..=c {
                let (mut usa, mut lsa) = (0.0, 0.0);
                for (reward, n) in [(r0, k), (r1, c - k)] {
                    if n > 0 {
                        usa += (reward + self.gamma * no_child.upper) * self.weights[n];
                        lsa += (reward + self.gamma * no_child.lower) * self.weights[n];
                    }
                }
                self.row_bounds[row * (c + 1) + k] = (usa, lsa);
            }
        }
    }
}

/// The running sums of the predictive weights `alpha[y] + planned[y]` over `support`, in support
/// order, into `out` (`support.len()` entries).
#[inline]
fn cumulative_weights(support: &[u32], alpha: &[f64], planned: &[u32], out: &mut [f64]) {
    let mut sum = 0.0;
    for (&y, cumulative) in support.iter().zip(out) {
        sum += alpha[y as usize] + f64::from(planned[y as usize]);
        *cumulative = sum;
    }
}

/// A row with two next states of different rewards, whose C samples are one binomial count
/// drawn at expansion (see [`Bfs3State::expand`]).
#[derive(Clone, Copy, Debug)]
struct TwoStateRow {
    /// The flat index `(row, first support state)` (into `planning`), its count, and the row's
    /// total count (the real counts, without the planning ones).
    first: u32,
    count_first: f64,
    total: f64,
    /// The two next states and their rewards.
    states: [u32; 2],
    rewards: [f64; 2],
}

/// Binomial(C, w / total) draws (`0 < w < total`), the number of C predictive samples of a
/// two-state row that go to its first state.
///
/// By inversion: one uniform `u` and the CDF of the less likely outcome's count, `K = #{j < C :
/// F(j) <= u}`. The CDFs of the last (w, total) pairs met are kept in a small direct-mapped cache
/// (the same pairs recur all through a decision's trees), so a draw is usually a table lookup.
/// Exact up to the rounding of the CDF; C above 1000 (where the first term could underflow)
/// draws the C Bernoulli variables one by one instead.
#[derive(Clone, Debug)]
struct BinomialSampler {
    c: usize,
    /// Per slot: the pair it holds (NaN: none), and its `c` CDF values `F(0) .. F(c - 1)`.
    keys: Vec<(f64, f64)>,
    cdfs: Vec<f64>,
}

impl BinomialSampler {
    const SLOTS: usize = 256;
    const MAX_C: usize = 1000;

    fn new(c: usize) -> Self {
        let cached = c <= Self::MAX_C;
        Self {
            c,
            keys: vec![(f64::NAN, f64::NAN); if cached { Self::SLOTS } else { 0 }],
            cdfs: vec![0.0; if cached { Self::SLOTS * c } else { 0 }],
        }
    }

    #[inline]
    fn sample(&mut self, w: f64, total: f64, rng: &mut Rng) -> u32 {
        let c = self.c;
        // Count the less likely outcome, whose CDF starts at max(p, q)^C >= 2^-C: no underflow.
        let flip = 2.0 * w > total;
        if c > Self::MAX_C {
            let p = w / total;
            return (0..c).map(|_| u32::from(rng.random::<f64>() < p)).sum();
        }
        let hash =
            (w.to_bits() ^ total.to_bits().wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = (hash >> 56) as usize % Self::SLOTS;
        let cdf = &mut self.cdfs[slot * c..(slot + 1) * c];
        if self.keys[slot] != (w, total) {
            self.keys[slot] = (w, total);
            let (p, q) = if flip { ((total - w) / total, w / total) } else { (w / total, (total - w) / total) };
            let ratio = p / q;
            let mut pmf = q.powi(c as i32);
            let mut cumulative = 0.0;
            for (j, f) in cdf.iter_mut().enumerate() {
                cumulative += pmf;
                *f = cumulative;
                pmf *= (c - j) as f64 / (j + 1) as f64 * ratio;
            }
        }
        let u: f64 = rng.random();
        let k = cdf.iter().map(|&f| u32::from(f <= u)).sum::<u32>();
        if flip {
            c as u32 - k
        } else {
            k
        }
    }
}

impl Agent for Bfs3 {
    fn name(&self) -> String {
        name(self.k, self.c, self.depth)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let initial = CountModel::from_prior(prior);
        let (ns, na) = (prior.n_states(), prior.n_actions());
        self.state = Some(Bfs3State {
            counts: initial.clone(),
            initial,
            r_max: prior.r_max(),
            gamma: setting.gamma,
            v_max: prior.r_max() / (1.0 - setting.gamma),
            rollouts: (self.k / self.c).max(1),
            planning: vec![0; ns * na * ns],
            planning_totals: vec![0; ns * na],
            touched: Vec::new(),
            tree: FsssTree::new(na),
            sampled: Vec::with_capacity(ns),
            row_weights: Vec::with_capacity(ns),
            walked: 0,
            weights: (0..=self.c).map(|k| k as f64 / self.c as f64).collect(),
            row_reward: vec![f64::NAN; ns * na],
            two_state_rows: vec![None; ns * na],
            row_bounds: vec![(0.0, 0.0); ns * na * (self.c + 1)],
            row_cumulative: vec![0.0; ns * na * ns],
            binomial: BinomialSampler::new(self.c),
            path: Vec::new(),
            scores: vec![0.0; na],
            plan_stream: PlanningStream::default(),
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let (c, depth) = (self.c, self.depth);
        let st = self.state()?;
        st.counts.copy_from(&st.initial);
        st.gamma = context.setting.gamma;
        st.v_max = st.r_max / (1.0 - st.gamma);
        for row in 0..st.row_reward.len() {
            st.update_row(row);
        }
        st.touched.reserve(depth + 1);
        st.path.reserve(depth);
        // The largest tree an FSSS call can grow: the placeholder, the root, and at most
        // depth - 1 new nodes per rollout, each with A Q-entries of at most min(C, support)
        // distinct children.
        let na = st.n_actions();
        let widest = (0..st.counts.support().n_rows()).map(|row| st.counts.support().row(row).len()).max().unwrap_or(1);
        let nodes = 2 + st.rollouts * (depth - 1);
        st.tree.reserve(nodes, nodes * na * c.min(widest));
        st.plan_stream.reset(rng);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let (c, depth) = (self.c, self.depth);
        let st = self.state()?;
        plan_once(st, |st| &mut st.plan_stream, state, |st, rng| st.plan(state, c, depth, rng));
        st.plan_stream.consume();
        Ok(argmax_random_tie(&st.scores, rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.plan_stream.consume();
        st.counts.observe(t.state, t.action, t.next_state);
        // The support may have grown.
        st.update_row(t.state * st.n_actions() + t.action);
        Ok(())
    }

    /// The planning is stochastic and draws from a private stream seeded at [`Agent::reset`]:
    /// this runs the planning that [`Agent::act`] would run next from `state` (and keeps it, so
    /// `act` then uses it) and reports the greedy set of its action values, ties sharing the mass
    /// equally: exactly the distribution of the action `act` plays next, given that planning.
    /// Calling it never changes a trajectory.
    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let (c, depth) = (self.c, self.depth);
        let st = self.state()?;
        plan_once(st, |st| &mut st.plan_stream, state, |st, rng| st.plan(state, c, depth, rng));
        greedy_probabilities(&st.scores, out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only copies the prior counts and sizes the search buffers.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, _setting: Setting) -> MemoryNeed {
        use crate::platform::memory::{bytes_of, product};
        // The largest FSSS tree ([`Agent::start_task`]'s reserve): 2 + rollouts (depth - 1) nodes
        // of A Q-entries of at most min(C, S) children; the rows' C + 1 bounds; the rollout logs.
        let rollouts = (self.k / self.c).max(1);
        let nodes = product(&[rollouts, self.depth]).saturating_add(2);
        let width = self.c.min(n_states).max(1);
        let bytes = bytes_of::<Bounds>(nodes)
            .saturating_add(bytes_of::<QEntry>(nodes.saturating_mul(n_actions as u128)))
            .saturating_add(bytes_of::<Edge>(nodes.saturating_mul(product(&[n_actions, width]))))
            .saturating_add(bytes_of::<(f64, f64)>(product(&[n_states, n_actions, self.c]).saturating_add(1)))
            .saturating_add(bytes_of::<f64>(product(&[BinomialSampler::SLOTS, self.c])))
            .saturating_add(bytes_of::<(u32, u32)>(product(&[self.depth]).saturating_mul(2)));
        MemoryNeed { bytes, sized_by: "search trees (parameters k, c and depth)" }
    }

    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

/// An FSSS tree in an arena. Node `v` has the A consecutive Q-entries `v * A .. v * A + A`; the
/// sampled children of Q-entry `q` are `edges[q.start .. q.start + q.len]`, one edge per distinct
/// next state with its multiplicity. `clear` keeps the capacities.
#[derive(Clone, Debug)]
struct FsssTree {
    n_actions: usize,
    nodes: Vec<Bounds>,
    q: Vec<QEntry>,
    edges: Vec<Edge>,
}

#[derive(Clone, Copy, Debug)]
struct Bounds {
    upper: f64,
    lower: f64,
}

#[derive(Clone, Copy, Debug)]
struct QEntry {
    upper: f64,
    lower: f64,
    start: u32,
    len: u32,
}

#[derive(Clone, Copy, Debug)]
struct Edge {
    state: u32,
    child: u32,
    /// Multiplicity among the C samples, and `count / C`, the weight in the backups.
    count: f64,
    weight: f64,
    /// `R(s, b, state)` of the parent's state and action.
    reward: f64,
}

impl FsssTree {
    fn new(n_actions: usize) -> Self {
        Self { n_actions, nodes: Vec::new(), q: Vec::new(), edges: Vec::new() }
    }

    /// Room for `nodes` nodes and `edges` edges in all.
    fn reserve(&mut self, nodes: usize, edges: usize) {
        self.nodes.reserve(nodes.saturating_sub(self.nodes.len()));
        self.q.reserve((nodes * self.n_actions).saturating_sub(self.q.len()));
        self.edges.reserve(edges.saturating_sub(self.edges.len()));
    }

    /// Empties the tree but for the placeholder node 0 (see [`MISSING`]).
    fn clear(&mut self, v_max: f64) {
        self.nodes.clear();
        self.q.clear();
        self.edges.clear();
        self.add_node(v_max);
    }

    fn add_node(&mut self, v_max: f64) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(Bounds { upper: v_max, lower: 0.0 });
        let unexplored = QEntry { upper: v_max, lower: 0.0, start: 0, len: 0 };
        self.q.resize(self.q.len() + self.n_actions, unexplored);
        id
    }

    /// `bellmanBackup` of Q-entry `q`: `Usa = sum_y count/C (R(s, b, y) + gamma U(y))`, a missing
    /// child counting `Vmax`, and `Lsa` the same with the lower bounds (`Vmin = 0`). The weight
    /// `count/C` is precomputed, which matches the original's `(...) * count / C` up to rounding.
    #[inline]
    fn backup_action(&mut self, q: usize, gamma: f64) {
        let entry = self.q[q];
        let (mut usa, mut lsa) = (0.0, 0.0);
        for e in &self.edges[entry.start as usize..(entry.start + entry.len) as usize] {
            let child = self.nodes[e.child as usize];
            usa += (e.reward + gamma * child.upper) * e.weight;
            lsa += (e.reward + gamma * child.lower) * e.weight;
        }
        self.q[q].upper = usa;
        self.q[q].lower = lsa;
    }

    /// The node's bounds: the largest Q-bounds, and at least `Vmin = 0`.
    #[inline]
    fn update_bounds(&mut self, node: usize) {
        let first = node * self.n_actions;
        let (mut upper, mut lower) = (0.0, 0.0);
        for q in &self.q[first..first + self.n_actions] {
            if q.upper > upper {
                upper = q.upper;
            }
            if q.lower > lower {
                lower = q.lower;
            }
        }
        self.nodes[node] = Bounds { upper, lower };
    }

    /// `selectPath`: the child of Q-entry `q` with the largest `(U - L) * count` (a missing child
    /// counts `Vmax - Vmin`), ties at random. Returns the edge index. (The original starts its
    /// search at 0, which every gap reaches since `Vmax >= Vmin`; with a prior whose rewards are
    /// all negative, where it would index an empty vector, this still returns the largest.)
    #[inline]
    fn select_path(&self, q: usize, rng: &mut Rng) -> usize {
        let entry = self.q[q];
        if entry.len == 1 {
            return entry.start as usize;
        }
        let block = &self.edges[entry.start as usize..(entry.start + entry.len) as usize];
        let gap = |i: usize| {
            let e = &block[i];
            // A missing child's width is `Vmax - 0 = Vmax`, exactly.
            let child = self.nodes[e.child as usize];
            (child.upper - child.lower) * e.count
        };
        entry.start as usize + argmax_random_tie_by(block.len(), gap, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::planning_test_support::{
        assert_no_allocation_per_step, chain_mdp, play, point_mass, setting, vague, GAMMA,
    };
    use crate::model::mdp::Mdp;
    use crate::rng::stream;
    use crate::solve::{guez_value_iteration, GUEZ_VI_EPSILON};

    fn trained(k: usize, c: usize, depth: usize, prior: &Fdm, seed: u64) -> (Bfs3, Rng) {
        let mut agent = Bfs3::new(k, c, depth).unwrap();
        let mut rng = stream(seed, 0, 0);
        agent.learn_offline(prior, setting(), &mut rng).unwrap();
        agent.start_task(&TaskContext { setting: setting(), true_mdp: None }, &mut rng).unwrap();
        (agent, rng)
    }

    fn optimal_values(p: &[f64], r: &[f64], ns: usize, na: usize) -> (Vec<f64>, Vec<usize>) {
        let mdp = Mdp::new(ns, na, p.to_vec(), r.to_vec(), Some(0)).unwrap();
        let (mut values, mut policy) = (vec![0.0; ns], vec![0; ns]);
        guez_value_iteration(mdp.view(), None, GAMMA, GUEZ_VI_EPSILON * 1e-4, &mut values, &mut policy);
        (values, policy)
    }

    #[test]
    fn success_counts_are_binomial() {
        // Binomial(n, w / total): mean n p, variance n p (1 - p). Both tails, integer and
        // fractional counts, the cached path (n = 15) and the direct one (n > 1000). The pairs
        // are drawn in turn, so the cache is looked up, and its slots reused, across pairs.
        let pairs = [(1.0, 2.0), (3.0, 7.0), (1.0, 1000.0), (999.0, 1000.0), (2.5, 4.0)];
        let mut rng = stream(8, 0, 0);
        for (n, draws) in [(15usize, 40_000), (1500, 400)] {
            let mut sampler = BinomialSampler::new(n);
            let (mut sum, mut sum2) = ([0.0; 5], [0.0; 5]);
            for _ in 0..draws {
                for (i, &(w, total)) in pairs.iter().enumerate() {
                    let k = f64::from(sampler.sample(w, total, &mut rng));
                    sum[i] += k;
                    sum2[i] += k * k;
                }
            }
            for (i, &(w, total)) in pairs.iter().enumerate() {
                let (n, p) = (n as f64, w / total);
                let (mean, var) = (sum[i] / draws as f64, sum2[i] / draws as f64 - (sum[i] / draws as f64).powi(2));
                let (true_mean, true_var) = (n * p, n * p * (1.0 - p));
                // 5 standard errors of the sample mean and of the sample variance, whose variance
                // is about (mu4 - sigma^4) / draws with the binomial's mu4 = npq (1 + 3 (n - 2) pq).
                let mu4 = true_var * (1.0 + 3.0 * (n - 2.0) * p * (1.0 - p));
                let se_var = ((mu4 - true_var * true_var) / draws as f64).sqrt();
                assert!((mean - true_mean).abs() < 5.0 * (true_var / draws as f64).sqrt(), "{n} x {w}/{total}: {mean}");
                assert!((var - true_var).abs() < 5.0 * se_var, "{n} x {w}/{total}: variance {var} vs {true_var}");
            }
        }
    }

    #[test]
    fn children_of_a_wide_row_are_multinomial_in_the_planning_predictive() {
        // One state's row with four next states, theta = (1, 2, 3, 4), and 5 simulated
        // transitions to the first: the C = 15 children are Multinomial(15, (6, 2, 3, 4) / 15),
        // whose marginals are Binomial(15, p_i): the same 5-standard-error bounds on the mean
        // and the variance as `success_counts_are_binomial`.
        let (ns, c, draws) = (4, 15_usize, 20_000);
        let theta = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        let prior = Fdm::new(ns, 1, theta.to_vec(), vec![0.5; ns * ns], Some(0)).unwrap();
        let (mut agent, _) = trained(30, c, 4, &prior, 3);
        let st = agent.state.as_mut().unwrap();
        for _ in 0..5 {
            st.plan_transition(0, 0);
        }
        let mut rng = stream(11, 0, 0);
        let (mut sum, mut sum2) = ([0.0; 4], [0.0; 4]);
        for _ in 0..draws {
            st.tree.clear(st.v_max);
            let node = st.tree.add_node(st.v_max) as usize;
            st.sample_children(node, 0, c, &mut rng);
            let entry = st.tree.q[node];
            let mut counts = [0.0; 4];
            for e in &st.tree.edges[entry.start as usize..(entry.start + entry.len) as usize] {
                counts[e.state as usize] = e.count;
            }
            assert_eq!(counts.iter().sum::<f64>(), c as f64);
            for i in 0..4 {
                sum[i] += counts[i];
                sum2[i] += counts[i] * counts[i];
            }
        }
        for (i, w) in [6.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
            let (n, p) = (c as f64, w / 15.0);
            let mean = sum[i] / draws as f64;
            let var = sum2[i] / draws as f64 - mean * mean;
            let (true_mean, true_var) = (n * p, n * p * (1.0 - p));
            let mu4 = true_var * (1.0 + 3.0 * (n - 2.0) * p * (1.0 - p));
            let se_var = ((mu4 - true_var * true_var) / draws as f64).sqrt();
            assert!((mean - true_mean).abs() < 5.0 * (true_var / draws as f64).sqrt(), "state {i}: mean {mean}");
            assert!((var - true_var).abs() < 5.0 * se_var, "state {i}: variance {var} vs {true_var}");
        }
    }

    #[test]
    fn draws_from_wide_rows_count_their_entries() {
        // Rows of two states (the chain's vague prior) walk no entries. On a prior where every
        // row holds all S = 5 states with distinct rewards, one decision with K = C (one rollout
        // per tree) and depth 2 draws, per action, C root samples (S entries each) and grows C
        // trees of two expanded nodes whose A rows each draw C children (C S entries, and S more
        // when the row's cumulative weights are summed again for planning counts).
        let (p, r) = chain_mdp();
        let mut agent = Bfs3::new(3, 3, 2).unwrap();
        let ((), narrow) = work::counted(|| {
            play(&mut agent, Bfs3::action_values, &vague(&p, &r, 4, 2), 1, 3);
        });
        assert_eq!(narrow.get(Unit::DrawEntries), 0);
        let (ns, na, c) = (5_u64, 2_u64, 3_u64);
        let n = (ns * na * ns) as usize;
        let rewards = (0..n).map(|i| i as f64 / n as f64).collect();
        let wide = Fdm::new(ns as usize, na as usize, vec![1.0; n], rewards, Some(0)).unwrap();
        let (mut agent, mut rng) = trained(c as usize, c as usize, 2, &wide, 4);
        let ((), work) = work::counted(|| {
            agent.act(0, &mut rng).unwrap();
        });
        let walked = work.get(Unit::DrawEntries);
        let (least, most) = (na * c * ns * (1 + 2 * na * c), na * c * ns * (1 + 2 * na * (c + 1)));
        assert!(walked % ns == 0 && (least..=most).contains(&walked), "{walked} not in {least}..={most}");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let e = Bfs3::new(1, 1, 1).unwrap().act(0, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("before learn_offline"), "{e}");
        assert!(Bfs3::new(0, 5, 15).unwrap_err().to_string().contains("k "));
        assert!(Bfs3::new(10, 0, 15).unwrap_err().to_string().contains("c "));
        assert!(Bfs3::new(10, 5, 0).unwrap_err().to_string().contains("depth"));
        assert!(Bfs3::new(1, 1, 1).is_ok());
    }

    #[test]
    fn no_allocation_per_decision() {
        assert_no_allocation_per_step(&mut Bfs3::new(100, 5, 12).unwrap());
    }

    #[test]
    fn same_seed_same_actions() {
        let (p, r) = chain_mdp();
        let prior = vague(&p, &r, 4, 2);
        let run = |seed| play(&mut Bfs3::new(30, 3, 6).unwrap(), Bfs3::action_values, &prior, seed, 30);
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6), "different seeds should (almost surely) differ somewhere");
    }

    #[test]
    fn picks_the_optimal_action_of_a_known_mdp() {
        let (p, r) = chain_mdp();
        let prior = point_mass(&p, &r, 4, 2);
        let (_, policy) = optimal_values(&p, &r, 4, 2);
        assert_eq!(policy[..3], [0, 0, 0]);
        for seed in 0..5 {
            let (mut agent, mut rng) = trained(500, 10, 15, &prior, seed);
            for s in 0..3 {
                assert_eq!(agent.act(s, &mut rng).unwrap(), policy[s], "state {s}, seed {seed}");
                let mut probs = [0.0; 2];
                agent.action_probabilities(s, &mut probs).unwrap();
                assert_eq!(probs, [1.0, 0.0]);
            }
        }
    }

    #[test]
    fn root_bounds_bracket_the_true_value() {
        // A deterministic 4-state MDP (every row a point mass), so the sampled trees are exact
        // and `L <= V*(y) <= U` must hold for every FSSS root, whatever its budget and depth.
        let (ns, na) = (4, 2);
        let mut p = vec![0.0; ns * na * ns];
        let mut r = vec![0.0; ns * na * ns];
        let next = [[1, 0], [2, 0], [3, 1], [3, 0]];
        for s in 0..ns {
            for a in 0..na {
                let i = (s * na + a) * ns + next[s][a];
                p[i] = 1.0;
                r[i] = [[0.0, 1.0], [0.0, 0.5], [0.0, 0.0], [3.0, 0.0]][s][a];
            }
        }
        let prior = point_mass(&p, &r, ns, na);
        let (values, _) = optimal_values(&p, &r, ns, na);
        for (k, c, depth) in [(1, 1, 1), (20, 2, 3), (200, 5, 8), (2000, 2, 60)] {
            let (mut agent, mut rng) = trained(k, c, depth, &prior, 1);
            for s in 0..ns {
                for a in 0..na {
                    let y = next[s][a];
                    let (lower, upper) = agent.fsss_bounds(s, a, y, &mut rng).unwrap();
                    assert!(lower <= values[y] + 1e-9 && values[y] <= upper + 1e-9, "{lower} {} {upper}", values[y]);
                }
            }
            // With a generous budget and depth the bounds close in on the value.
            if depth == 60 {
                let (lower, upper) = agent.fsss_bounds(0, 0, 1, &mut rng).unwrap();
                assert!(upper - lower < 0.1 * upper, "[{lower}, {upper}]");
            }
        }
    }
}
