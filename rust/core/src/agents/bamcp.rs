//! BAMCPAgent (SPEC 4.6): Bayes-adaptive Monte-Carlo planning (Guez, Silver & Dayan 2012) as the
//! original BBRL library runs it: UCT over the belief-augmented MDP with root sampling.

use std::sync::Arc;

use rand::Rng as _;

use super::common::{
    argmax_random_tie, argmax_random_tie_by_select, greedy_probabilities, plan_once, uniform_below, PlanningStream,
};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::work::{self, Unit};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "bamcp",
    display: "BAMCP",
    params: &[
        ParamSpec {
            name: "k",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "simulations per decision",
        },
        ParamSpec {
            name: "depth",
            ty: ParamType::Int,
            default: None,
            range: Range::at_least(1.0),
            doc: "simulation depth, in steps",
        },
    ],
    online_units: &[("k", 1.0), ("depth", 1.0)],
    offline_units: &[],
    sizes_memory: &["k", "depth"],
    examples: &[
        Example { doc: "quick", params: &[("k", ParamDefault::Int(10)), ("depth", ParamDefault::Int(15))] },
        Example { doc: "more simulations", params: &[("k", ParamDefault::Int(100)), ("depth", ParamDefault::Int(20))] },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| Ok(Box::new(Bamcp::new(r.count("k")?, r.count("depth")?)?)),
};

/// UCB exploration constant; fixed, not scaled by the reward range (SPEC 7.4).
const EXPLORATION: f64 = 3.0;
/// A Q-node gets a child V-node from its second visit on.
const EXPAND_COUNT: u32 = 1;
/// Learning rate of the rollout policy's Q-learning on real transitions.
const Q_LEARNING_RATE: f64 = 0.2;
/// "No node" in the arena's index links.
const NONE: u32 = u32::MAX;

/// BAMCP with `k` simulations per decision and search depth `depth`, as the original runs it
/// (SPEC 4.6, 7.4):
///
/// * each simulation runs in one MDP drawn from the posterior `Dir(counts + theta)` (root
///   sampling); the MDP is integrated out (see [`CollapsedPosterior`]): each step draws its next
///   state from the posterior predictive of the row given the steps the simulation already took
///   from that row, which gives the same distribution as the original's full draw;
/// * UCB1 in the tree with `c = 3`, a child node from a Q-node's second visit on;
/// * below the tree, rollouts that take a uniformly random action with probability 0.5 and
///   otherwise a greedy action (random ties) of a Q-table learned from the real transitions
///   (learning rate 0.2);
/// * every simulation covers exactly `depth` simulated steps (tree plus rollout), without the
///   paper's `gamma^d Rmax` cut-off;
/// * the tree is discarded after each decision and the action played is the root's greedy action
///   on the mean returns, ties broken at random.
#[derive(Clone, Debug)]
pub struct Bamcp {
    k: usize,
    depth: usize,
    state: Option<BamcpState>,
}

#[derive(Clone, Debug)]
struct BamcpState {
    /// The prior, restored at every reset.
    initial: CollapsedPosterior,
    posterior: CollapsedPosterior,
    tree: Tree,
    /// The rollout policy: Q-learned values `Qrl(s, a)` and the greedy action sets of each state.
    q_rollout: Vec<f64>,
    greedy_actions: Vec<u32>,
    greedy_len: Vec<u32>,
    /// The rollout policy as one draw per step: state `s` has `2 A |GreedyA[s]|` entries at
    /// `s * 2 A^2` (their number in `rollout_len[s]`), each action `|GreedyA[s]|` times then each
    /// greedy action `A` times, so a uniform entry is the action of the policy
    /// (see [`BamcpState::fill_rollout_table`]).
    rollout_actions: Vec<u32>,
    rollout_len: Vec<u32>,
    /// Tree descent of the current simulation: (V-node, Q-node, reward) per tree step; `depth`
    /// entries (from [`Agent::reset`] on), written by index.
    path: Vec<(u32, u32, f64)>,
    /// Per-action scores for the UCB and greedy choices (length A).
    scores: Vec<f64>,
    /// The UCB tables (see [`UcbTables`]).
    ucb: UcbTables,
    gamma: f64,
    /// The private stream of [`Agent::action_probabilities`], reseeded at every reset.
    /// The private stream planning draws from (see [`Agent::action_probabilities`]).
    plan_stream: PlanningStream,
}

/// UCB tables for visit counts `0..=k` (a search never exceeds `k` visits per node):
/// `c sqrt(ln(N + 1))` (but `c` at `N = 0`) and `1 / sqrt(n)` (+inf at `n = 0`), so a score
/// costs no logarithm, square root or branch (see [`BamcpState::ucb_action`]). The nodes cache
/// their current entries ([`VNode::exploration`], [`QNode::inv_sqrt`]).
#[derive(Clone, Debug)]
struct UcbTables {
    exploration: Vec<f64>,
    inv_sqrt: Vec<f64>,
}

impl Bamcp {
    /// `k >= 1` simulations per decision, search depth `depth >= 1`.
    pub fn new(k: usize, depth: usize) -> Result<Self> {
        if k < 1 {
            return Err(invalid!("k (simulations per decision) must be >= 1, got {k}"));
        }
        if depth < 1 {
            return Err(invalid!("depth must be >= 1, got {depth}"));
        }
        Ok(Self { k, depth, state: None })
    }

    fn state(&mut self) -> Result<&mut BamcpState> {
        let (k, depth) = (self.k, self.depth);
        // The name is formatted only on the error path: `act` and `observe` never allocate.
        self.state.as_mut().ok_or_else(|| not_trained(&name(k, depth)))
    }

    /// The root value of the last search: the largest mean return among the root's actions
    /// (the value of the action [`Agent::act`] prefers). A diagnostic for tests and studies;
    /// 0 before any search.
    pub fn root_value(&self) -> f64 {
        self.action_values().iter().copied().reduce(f64::max).unwrap_or(0.0)
    }

    /// The mean return of each root action in the last search (or in the last
    /// [`Agent::action_probabilities`] call); empty before offline learning. A diagnostic.
    pub fn action_values(&self) -> &[f64] {
        self.state.as_ref().map_or(&[], |st| &st.scores)
    }
}

fn name(k: usize, depth: usize) -> String {
    format!("BAMCP (K = {k}, depth = {depth})")
}

impl BamcpState {
    /// `UCTSearch`: `k` simulations from `state` on a fresh tree, then the root's mean returns
    /// in `self.scores`.
    fn search(&mut self, state: usize, k: usize, depth: usize, rng: &mut Rng) {
        // The unchecked indexing of the descent relies on a valid state and on tables sized for
        // `k` visits.
        assert!(state < self.posterior.n_states, "state {state} out of range");
        assert!(self.ucb.exploration.len() > k && self.ucb.inv_sqrt.len() > k);
        self.tree.clear();
        let root = self.tree.add_vnode(self.posterior.slots(state));
        // Taken out of `self` for the search, so that the descent can index it with bounds the
        // compiler sees (`d < depth`).
        let mut path = std::mem::take(&mut self.path);
        path.resize(depth, (0, 0, 0.0));
        for _ in 0..k {
            self.posterior.new_model();
            self.simulate(root, state, &mut path[..depth], rng);
        }
        self.path = path;
        // Every simulation covers exactly `depth` simulated steps (tree descent and rollout).
        work::add_simulated_steps((k * depth) as u64, self.posterior.n_actions);
        work::add(Unit::TreeNodes, self.tree.v.len() as u64);
        // A node holds one child slot per support state of each action: wide rows (uniform
        // priors) make every node and every step from it dearer.
        work::add(Unit::TreeEdges, self.tree.children.len() as u64);
        work::add(Unit::DrawEntries, std::mem::take(&mut self.posterior.walked));
        debug_assert_eq!(root, 0);
        for (score, mean) in self.scores.iter_mut().zip(self.tree.root_means()) {
            *score = mean;
        }
    }

    /// One simulation (`SimulateV`/`SimulateQ`, unrolled): descend the tree by UCB while nodes
    /// exist, add at most one node, finish with a rollout, then back the return up the path.
    /// `path` has `depth` entries: the steps of the descent are written to its start.
    fn simulate(&mut self, root: u32, state: usize, path: &mut [(u32, u32, f64)], rng: &mut Rng) {
        let na = self.posterior.n_actions as u32;
        let depth = path.len();
        let (mut vnode, mut s, mut d) = (root, state, 0);
        let mut delayed = 0.0;
        while d < depth {
            let action = self.ucb_action(vnode, rng);
            let qnode = vnode * na + action as u32;
            let (y, reward, position) = self.posterior.step(s, action, rng);
            path[d] = (vnode, qnode, reward);
            d += 1;
            // SAFETY: `qnode` is a Q-node of the existing V-node `vnode` (`action < A`), and
            // `position` is the position of `y` in the support of row `(s, a)`, of which the
            // Q-node owns one child slot each (the posterior does not change during a search).
            let (children, count) = unsafe {
                let q = self.tree.q.get_unchecked(qnode as usize);
                (q.children, q.count)
            };
            let slot = children as usize + position;
            debug_assert!(slot < self.tree.children.len());
            // SAFETY: as above.
            let mut child = unsafe { *self.tree.children.get_unchecked(slot) };
            // A node at depth `depth` would be left at once with value 0, which is what a
            // zero-step rollout returns: it is never created.
            if child == NONE && d < depth && count >= EXPAND_COUNT {
                child = self.tree.add_vnode(self.posterior.slots(y));
                self.tree.children[slot] = child;
            }
            if child == NONE {
                delayed = self.rollout(y, depth - d, rng);
                break;
            }
            vnode = child;
            s = y;
        }
        let mut ret = delayed;
        for &(v, q, reward) in path[..d].iter().rev() {
            ret = reward + self.gamma * ret;
            // SAFETY: the path holds existing V-nodes and their Q-nodes.
            unsafe { self.tree.add_return(q, v, ret, &self.ucb) };
        }
    }

    /// `GreedyUCB(vnode, ucb = true)`: the action maximising `mean + c sqrt(ln(N + 1) / n)`
    /// (+inf when unvisited), ties at random. The bonus is computed as
    /// `c sqrt(ln(N + 1)) * (1 / sqrt(n))` from tables (each node caches its entry), equal up to
    /// rounding. The tables make the unvisited case need no branch: `1 / sqrt(0)` is +inf, and
    /// the exploration factor is positive for every `N` (at `N = 0`, where every action is
    /// unvisited, the table holds `c` instead of 0, so that the product is +inf rather than NaN),
    /// so an unvisited action (mean 0) scores `0 + positive * inf = +inf`.
    #[inline]
    fn ucb_action(&self, vnode: u32, rng: &mut Rng) -> usize {
        let na = self.posterior.n_actions;
        debug_assert!((vnode as usize) < self.tree.v.len());
        // SAFETY: `vnode` exists.
        let exploration = unsafe { self.tree.v.get_unchecked(vnode as usize).exploration };
        let first = vnode as usize * na;
        debug_assert!(first + na <= self.tree.q.len());
        // SAFETY: V-node `vnode` owns the A Q-nodes from `vnode * A`.
        let qnodes = unsafe { self.tree.q.get_unchecked(first..first + na) };
        let score = |a: usize| {
            let q = &qnodes[a];
            q.mean + exploration * q.inv_sqrt
        };
        argmax_random_tie_by_select(na, score, rng)
    }

    /// `Rollout`: `steps` steps of the epsilon-greedy rollout policy; the discounted return.
    fn rollout(&mut self, mut s: usize, steps: usize, rng: &mut Rng) -> f64 {
        let na = self.posterior.n_actions;
        let (mut total, mut discount) = (0.0, 1.0);
        for _ in 0..steps {
            // One uniform entry of the state's table is the epsilon-greedy action.
            debug_assert!(s < self.rollout_len.len());
            // SAFETY: `s` is a state (the search's state, asserted in `search`, or a next state
            // of the posterior), and state `s` has `rollout_len[s] <= 2 A^2` entries from
            // `s * 2 A^2` in a table of `S * 2 A^2`.
            let action = unsafe {
                let draw = uniform_below(*self.rollout_len.get_unchecked(s), rng) as usize;
                *self.rollout_actions.get_unchecked(s * 2 * na * na + draw) as usize
            };
            let (y, reward, _) = self.posterior.step(s, action, rng);
            total += discount * reward;
            discount *= self.gamma;
            s = y;
        }
        total
    }

    /// Q-learning of the rollout policy on a real transition, then its greedy set in `x`.
    fn learn_rollout_policy(&mut self, t: Transition) {
        let na = self.posterior.n_actions;
        // `GreedyA[y]` always holds the maximisers of `Qrl(y, ·)`, so its first entry has the max.
        let next_value = self.q_rollout[t.next_state * na + self.greedy_actions[t.next_state * na] as usize];
        let i = t.state * na + t.action;
        self.q_rollout[i] += Q_LEARNING_RATE * (t.reward + self.gamma * next_value - self.q_rollout[i]);
        let row = &self.q_rollout[t.state * na..(t.state + 1) * na];
        let best = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut len = 0;
        for (a, &q) in row.iter().enumerate() {
            if q == best {
                self.greedy_actions[t.state * na + len] = a as u32;
                len += 1;
            }
        }
        self.greedy_len[t.state] = len as u32;
        self.fill_rollout_table(t.state);
    }

    /// The rollout policy's table of state `s`: the policy takes a uniformly random action with
    /// probability 1/2 and otherwise a uniformly random one of the `G = |GreedyA[s]|` greedy
    /// actions, i.e. action `a` with probability `1 / (2 A) + [a greedy] / (2 G)`. The table
    /// holds each action `G` times and each greedy action `A` times, `2 A G` entries in all, so
    /// a uniform entry has exactly that law, in one draw and without a branch on it.
    fn fill_rollout_table(&mut self, s: usize) {
        let na = self.posterior.n_actions;
        let greedy = &self.greedy_actions[s * na..s * na + self.greedy_len[s] as usize];
        let table = &mut self.rollout_actions[s * 2 * na * na..(s + 1) * 2 * na * na];
        let uniform = (0..na as u32).flat_map(|a| std::iter::repeat_n(a, greedy.len()));
        let preferred = greedy.iter().flat_map(|&a| std::iter::repeat_n(a, na));
        let mut len = 0;
        for (slot, a) in table.iter_mut().zip(uniform.chain(preferred)) {
            *slot = a;
            len += 1;
        }
        self.rollout_len[s] = len;
    }
}

impl Agent for Bamcp {
    fn name(&self) -> String {
        name(self.k, self.depth)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let initial = CollapsedPosterior::new(prior);
        let (ns, na) = (prior.n_states(), prior.n_actions());
        self.state = Some(BamcpState {
            posterior: initial.clone(),
            initial,
            tree: Tree::new(ns, na),
            q_rollout: vec![0.0; ns * na],
            greedy_actions: vec![0; ns * na],
            greedy_len: vec![0; ns],
            rollout_actions: vec![0; ns * 2 * na * na],
            rollout_len: vec![0; ns],
            path: Vec::new(),
            scores: vec![0.0; na],
            ucb: UcbTables {
                exploration: (0..=self.k)
                    .map(|n| if n == 0 { EXPLORATION } else { EXPLORATION * ((n as f64) + 1.0).ln().sqrt() })
                    .collect(),
                inv_sqrt: (0..=self.k).map(|n| 1.0 / (n as f64).sqrt()).collect(),
            },
            gamma: setting.gamma,
            plan_stream: PlanningStream::default(),
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let (k, depth) = (self.k, self.depth);
        let st = self.state()?;
        st.posterior.clone_from(&st.initial);
        st.gamma = context.setting.gamma;
        st.q_rollout.fill(0.0);
        let na = st.posterior.n_actions;
        for (i, g) in st.greedy_actions.iter_mut().enumerate() {
            *g = (i % na) as u32;
        }
        st.greedy_len.fill(na as u32);
        for s in 0..st.greedy_len.len() {
            st.fill_rollout_table(s);
        }
        st.tree.reserve(k);
        st.path.resize(depth, (0, 0, 0.0));
        st.plan_stream.reset(rng);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let (k, depth) = (self.k, self.depth);
        let st = self.state()?;
        plan_once(st, |st| &mut st.plan_stream, state, |st, rng| st.search(state, k, depth, rng));
        st.plan_stream.consume();
        // `GreedyUCB(root, ucb = false)`.
        Ok(argmax_random_tie(&st.scores, rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.plan_stream.consume();
        st.posterior.observe(t.state, t.action, t.next_state);
        st.learn_rollout_policy(t);
        Ok(())
    }

    /// The planning is stochastic and draws from a private stream seeded at [`Agent::reset`]:
    /// this runs the search that [`Agent::act`] would run next from `state` (and keeps it, so
    /// `act` then uses it) and reports the greedy set at the root, ties sharing the mass equally:
    /// exactly the distribution of the action `act` plays next, given that search. Calling it
    /// never changes a trajectory.
    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let (k, depth) = (self.k, self.depth);
        let st = self.state()?;
        plan_once(st, |st| &mut st.plan_stream, state, |st, rng| st.search(state, k, depth, rng));
        greedy_probabilities(&st.scores, out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only builds the prior posterior and sizes the search tree.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, _setting: Setting) -> MemoryNeed {
        use crate::platform::memory::{bytes_of, product};
        // A search adds at most one V-node per simulation ([`Tree::reserve`]), each with A
        // Q-nodes of at most S child slots; two UCB tables of k + 1 entries; the descent's path.
        let nodes = product(&[self.k]).saturating_add(1);
        let bytes = bytes_of::<VNode>(nodes)
            .saturating_add(bytes_of::<QNode>(nodes.saturating_mul(n_actions as u128)))
            .saturating_add(bytes_of::<u32>(nodes.saturating_mul(product(&[n_actions, n_states]))))
            .saturating_add(bytes_of::<f64>(nodes.saturating_mul(2)))
            .saturating_add(bytes_of::<(u32, u32, f64)>(self.depth as u128));
        MemoryNeed { bytes, sized_by: "search tree and UCB tables (parameters k and depth)" }
    }

    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

/// The search tree in an arena: V-node `v` owns the A consecutive Q-nodes `v * A .. v * A + A`.
/// The V-node children of a Q-node for `(s, a)` are indexed by the position of their state in the
/// support of row `(s, a)` (fixed during a search): Q-node `q` owns the child slots
/// `children[q.children ..]`, one per support state, `NONE` until that child exists. A step
/// returns the position of its next state, so finding a child is one load.
/// `clear` keeps every buffer's capacity, so searches after the first allocate nothing.
#[derive(Clone, Debug)]
struct Tree {
    n_states: usize,
    n_actions: usize,
    v: Vec<VNode>,
    q: Vec<QNode>,
    children: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct VNode {
    count: u32,
    /// The UCB exploration factor of `count` from the table (`c` when unvisited), cached at
    /// each visit so that the descent reads it without a second, dependent load.
    exploration: f64,
}

#[derive(Clone, Copy, Debug)]
struct QNode {
    count: u32,
    /// The first of the Q-node's child slots.
    children: u32,
    /// Sum of the returns, and `total / count` (0 when unvisited, as the original's
    /// `VALUE::GetValue`), cached so that UCB scores need no division.
    total: f64,
    mean: f64,
    /// `1 / sqrt(count)` (+inf when unvisited) from the table, cached at each visit so that a
    /// UCB score loads it with the mean.
    inv_sqrt: f64,
}

impl Tree {
    fn new(n_states: usize, n_actions: usize) -> Self {
        Self { n_states, n_actions, v: Vec::new(), q: Vec::new(), children: Vec::new() }
    }

    /// Room for a search of `k` simulations, which adds at most one V-node each, with at most
    /// S child slots per Q-node.
    fn reserve(&mut self, k: usize) {
        let nodes = k + 1;
        self.v.reserve(nodes.saturating_sub(self.v.len()));
        self.q.reserve((nodes * self.n_actions).saturating_sub(self.q.len()));
        self.children.reserve((nodes * self.n_actions * self.n_states).saturating_sub(self.children.len()));
    }

    fn clear(&mut self) {
        self.v.clear();
        self.q.clear();
        self.children.clear();
    }

    /// A new V-node whose Q-nodes have `slots[a]` child slots each (the support sizes of its
    /// state's rows).
    fn add_vnode(&mut self, slots: &[u32]) -> u32 {
        let id = self.v.len() as u32;
        self.v.push(VNode { count: 0, exploration: EXPLORATION });
        let mut next = self.children.len() as u32;
        for &n in slots {
            self.q.push(QNode { count: 0, children: next, total: 0.0, mean: 0.0, inv_sqrt: f64::INFINITY });
            next += n;
        }
        self.children.resize(next as usize, NONE);
        id
    }

    /// Adds one return to a Q-node and one visit to its V-node.
    ///
    /// # Safety
    /// `vnode` and `qnode` must exist, and the tables must have more entries than the nodes'
    /// new counts.
    #[inline]
    unsafe fn add_return(&mut self, qnode: u32, vnode: u32, ret: f64, tables: &UcbTables) {
        debug_assert!((qnode as usize) < self.q.len() && (vnode as usize) < self.v.len());
        // SAFETY: the caller's.
        let q = unsafe { self.q.get_unchecked_mut(qnode as usize) };
        q.count += 1;
        q.total += ret;
        q.mean = q.total / f64::from(q.count);
        debug_assert!((q.count as usize) < tables.inv_sqrt.len());
        // SAFETY: the caller's: the tables have an entry for every count a search reaches.
        q.inv_sqrt = unsafe { *tables.inv_sqrt.get_unchecked(q.count as usize) };
        // SAFETY: the caller's.
        let v = unsafe { self.v.get_unchecked_mut(vnode as usize) };
        v.count += 1;
        debug_assert!((v.count as usize) < tables.exploration.len());
        // SAFETY: the caller's.
        v.exploration = unsafe { *tables.exploration.get_unchecked(v.count as usize) };
    }

    /// The mean returns of the root's actions.
    fn root_means(&self) -> impl Iterator<Item = f64> + '_ {
        self.q.iter().take(self.n_actions).map(|q| q.mean)
    }
}

/// The Dirichlet posterior `Dir(counts + theta)` and the model of the current simulation,
/// collapsed: instead of drawing a row `P(s, a, ·) ~ Dir(alpha)` and then next states from it,
/// each row is a Pólya urn that starts a simulation at `alpha` (the posterior counts) and gains 1
/// on the next state of every step taken from it in that simulation, each step drawing
/// `y ~ weights / total`. Integrating the row out of "draw the row, then draw i.i.d. next states
/// from it" gives exactly this sequence law (the Dirichlet-multinomial: the probability of any
/// sequence of next states is `prod_y alpha_y^(n_y rising) / alpha_0^(n rising)` either way), and
/// a simulation uses its model only through the next states of its steps, so the simulations have
/// the original's distribution (root sampling of a whole model, SPEC 4.6) without a single Gamma
/// variate. A row's urn carries the generation stamp of the simulation that last used it;
/// starting a simulation only bumps the generation, so nothing is cleared between simulations.
///
/// Row `r` keeps its support states in `entries[r * S ..]` (increasing order, room for all S
/// states so the support can grow): the state, its reward, its posterior count and its urn
/// weight. A row of one or two states (every row of GC and Grid) also has its states, rewards
/// and urn inline in [`Urn`], so its steps read one 64-byte record and take no branch on the
/// draw.
#[derive(Clone, Debug)]
struct CollapsedPosterior {
    n_states: usize,
    n_actions: usize,
    rows: Vec<Urn>,
    /// Support size of each row (as in `rows`), contiguous per state for [`Tree::add_vnode`].
    support_len: Vec<u32>,
    entries: Vec<Entry>,
    rewards: Arc<[f64]>,
    generation: u32,
    /// Entries the draws from wide rows walked since the last search's count (Unit::DrawEntries).
    walked: u64,
}

#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Urn {
    /// The generation of the simulation whose urn `first` and `total` hold; any other value
    /// means the urn is still at its start, `alpha_first` and `alpha_total`.
    stamp: u32,
    /// Support size.
    len: u32,
    /// The urn's weight of the first support state (rows of at most two states) and its total.
    first: f64,
    total: f64,
    /// The posterior counts: of the first support state, and of the row.
    alpha_first: f64,
    alpha_total: f64,
    /// The first two support states and their rewards (the only one twice for a single-state row).
    states: [u32; 2],
    rewards: [f64; 2],
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    state: u32,
    reward: f64,
    /// Posterior count `theta + observed`.
    alpha: f64,
    /// The urn's weight in the current simulation (rows of three states or more).
    weight: f64,
}

impl CollapsedPosterior {
    /// The prior `Dir(theta)` of `prior`.
    fn new(prior: &Fdm) -> Self {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let mut posterior = Self {
            n_states: ns,
            n_actions: na,
            rows: vec![Urn::default(); ns * na],
            support_len: vec![0; ns * na],
            entries: vec![Entry::default(); ns * na * ns],
            rewards: prior.rewards_arc(),
            generation: 0,
            walked: 0,
        };
        for row in 0..ns * na {
            for &y in prior.support().row(row) {
                posterior.add(row, y as usize, prior.theta()[row * ns + y as usize]);
            }
        }
        posterior
    }

    /// Adds `amount` to the count of `(row, y)`, inserting `y` into the row's support if needed.
    fn add(&mut self, row: usize, y: usize, amount: f64) {
        let base = row * self.n_states;
        let len = self.support_len[row] as usize;
        let position = self.entries[base..base + len].partition_point(|e| (e.state as usize) < y);
        let i = base + position;
        if position == len || self.entries[i].state as usize != y {
            self.entries.copy_within(i..base + len, i + 1);
            self.entries[i] = Entry { state: y as u32, reward: self.rewards[base + y], alpha: 0.0, weight: 0.0 };
            self.support_len[row] += 1;
        }
        self.entries[i].alpha += amount;
        // The row's summary; stamp 0 (no simulation's generation) restarts its urn.
        let entries = &self.entries[base..base + self.support_len[row] as usize];
        let (first, second) = (entries[0], entries[entries.len().min(2) - 1]);
        self.rows[row] = Urn {
            stamp: 0,
            len: entries.len() as u32,
            first: 0.0,
            total: 0.0,
            alpha_first: first.alpha,
            alpha_total: entries.iter().map(|e| e.alpha).sum(),
            states: [first.state, second.state],
            rewards: [first.reward, second.reward],
        };
    }

    /// Adds a real transition to the posterior.
    fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        self.add(state * self.n_actions + action, next_state, 1.0);
    }

    /// The support sizes of the rows `(s, a)` of state `s`, in action order.
    #[inline]
    fn slots(&self, s: usize) -> &[u32] {
        &self.support_len[s * self.n_actions..(s + 1) * self.n_actions]
    }

    /// Starts a new simulation: every urn is back at its start.
    #[inline]
    fn new_model(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            for row in &mut self.rows {
                row.stamp = 0;
            }
            self.generation = 1;
        }
    }

    /// One step of the current simulation's model from `(s, a)`: the next state, its reward and
    /// its position in the row's support.
    #[inline(always)]
    fn step(&mut self, s: usize, a: usize, rng: &mut Rng) -> (usize, f64, usize) {
        let row = s * self.n_actions + a;
        let generation = self.generation;
        debug_assert!(row < self.rows.len());
        // SAFETY: `s` is a state and `a` an action (the callers' invariants: a search's state is
        // checked, the others are next states of the posterior; actions are below A).
        let urn = unsafe { self.rows.get_unchecked_mut(row) };
        if urn.len == 1 {
            // Dir over a single state is that state with probability 1: nothing to draw.
            return (urn.states[0] as usize, urn.rewards[0], 0);
        }
        // Drawn here rather than in `step_wide`, so that no call takes the generator: its state
        // can then stay in registers through the rollout loop.
        let u: f64 = rng.random();
        if urn.len > 2 {
            return self.step_wide(row, u);
        }
        // Selects, not branches: whether the row was already used in this simulation, and
        // where the draw falls, are both unpredictable.
        let fresh = urn.stamp != generation;
        let first = if fresh { urn.alpha_first } else { urn.first };
        let total = if fresh { urn.alpha_total } else { urn.total };
        let u = u * total;
        let position = usize::from(u >= first);
        urn.stamp = generation;
        // `1 - position` as a float, converted from a byte (one instruction, not a u64's several).
        urn.first = first + f64::from(u8::from(u < first));
        urn.total = total + 1.0;
        (urn.states[position] as usize, urn.rewards[position], position)
    }

    /// [`Self::step`] for a row of three support states or more, with the step's uniform draw
    /// `u`: the urn's weights are in the row's entries.
    #[inline(never)]
    fn step_wide(&mut self, row: usize, u: f64) -> (usize, f64, usize) {
        self.walked += u64::from(self.support_len[row]);
        let base = row * self.n_states;
        let urn = &mut self.rows[row];
        let entries = &mut self.entries[base..base + urn.len as usize];
        if urn.stamp != self.generation {
            urn.stamp = self.generation;
            urn.total = urn.alpha_total;
            for e in entries.iter_mut() {
                e.weight = e.alpha;
            }
        }
        let mut u = u * urn.total;
        urn.total += 1.0;
        // The first state whose weight exceeds what is left of `u` after subtracting the weights
        // before it (the fallback is the last state, should rounding leave u above the last
        // weight). Every weight is visited and the position kept by selects: where the draw
        // falls is unpredictable, and a mispredicted early exit cost more than the few extra
        // subtractions (UGC's rows of 5 states). The same subtractions in the same order, so the
        // same position as stopping at the first hit.
        let last = entries.len() - 1;
        let (mut position, mut found) = (last, false);
        for (i, e) in entries[..last].iter().enumerate() {
            let hit = u < e.weight;
            position = if hit && !found { i } else { position };
            found |= hit;
            u -= e.weight;
        }
        let e = &mut entries[position];
        e.weight += 1.0;
        (e.state as usize, e.reward, position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::planning_test_support::{
        assert_no_allocation_per_step, chain_mdp, play, point_mass, setting, vague, GAMMA,
    };
    use crate::rng::stream;
    use crate::solve::{guez_value_iteration, GUEZ_VI_EPSILON};

    fn trained(k: usize, depth: usize, prior: &Fdm, seed: u64) -> (Bamcp, Rng) {
        let mut agent = Bamcp::new(k, depth).unwrap();
        let mut rng = stream(seed, 0, 0);
        agent.learn_offline(prior, setting(), &mut rng).unwrap();
        agent.start_task(&TaskContext { setting: setting(), true_mdp: None }, &mut rng).unwrap();
        (agent, rng)
    }

    #[test]
    fn bad_parameters_are_errors() {
        let e = Bamcp::new(1, 1).unwrap().act(0, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("before learn_offline"), "{e}");
        let e = Bamcp::new(0, 15).unwrap_err();
        assert!(e.to_string().contains("k "), "{e}");
        let e = Bamcp::new(10, 0).unwrap_err();
        assert!(e.to_string().contains("depth"), "{e}");
        assert!(Bamcp::new(1, 1).is_ok());
    }

    #[test]
    fn no_allocation_per_decision() {
        assert_no_allocation_per_step(&mut Bamcp::new(300, 12).unwrap());
    }

    #[test]
    fn same_seed_same_actions() {
        let (p, r) = chain_mdp();
        let prior = vague(&p, &r, 4, 2);
        let run = |seed| play(&mut Bamcp::new(50, 10).unwrap(), Bamcp::action_values, &prior, seed, 30);
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4), "different seeds should (almost surely) differ somewhere");
    }

    #[test]
    fn picks_the_optimal_action_of_a_known_mdp() {
        let (p, r) = chain_mdp();
        let prior = point_mass(&p, &r, 4, 2);
        // The optimal policy by value iteration: forward in the chain.
        let mdp = crate::model::mdp::Mdp::new(4, 2, p.clone(), r.clone(), Some(0)).unwrap();
        let (mut values, mut policy) = (vec![0.0; 4], vec![0; 4]);
        guez_value_iteration(mdp.view(), None, GAMMA, GUEZ_VI_EPSILON, &mut values, &mut policy);
        assert_eq!(policy[..3], [0, 0, 0]);
        for seed in 0..5 {
            let (mut agent, mut rng) = trained(3000, 15, &prior, seed);
            for s in 0..3 {
                assert_eq!(agent.act(s, &mut rng).unwrap(), policy[s], "state {s}, seed {seed}");
                let mut probs = [0.0; 2];
                agent.action_probabilities(s, &mut probs).unwrap();
                assert_eq!(probs, [1.0, 0.0]);
            }
        }
    }

    #[test]
    fn urn_steps_have_the_law_of_a_drawn_model() {
        // One action, 5 states. Row 0: prior (0, 0.4, 0.5, 0, 3.5) and two observed transitions
        // to state 2: posterior (0, 0.4, 2.5, 0, 3.5), counts below, at and above 1 (the wide
        // path). Row 1: prior (0, 1, 0, 1, 0). Row 2: prior on state 2 only, then two observed
        // transitions to state 4 outside it: the support grows to (1, 2). Rows 3 and 4: a single
        // next state. Zero counts must never be stepped to.
        let ns = 5;
        let mut theta = vec![0.0; ns * ns];
        theta[..ns].copy_from_slice(&[0.0, 0.4, 0.5, 0.0, 3.5]);
        theta[ns..2 * ns].copy_from_slice(&[0.0, 1.0, 0.0, 1.0, 0.0]);
        for s in 2..ns {
            theta[s * ns + s] = 1.0;
        }
        let rewards: Vec<f64> = (0..ns * ns).map(|i| (i % ns) as f64 + 0.5).collect();
        let prior = Fdm::new(ns, 1, theta, rewards, Some(0)).unwrap();
        let mut posterior = CollapsedPosterior::new(&prior);
        for (s, y) in [(0, 2), (0, 2), (2, 4), (2, 4)] {
            posterior.observe(s, 0, y);
        }
        let supports: [&[u32]; 5] = [&[1, 2, 4], &[1, 3], &[2, 4], &[3], &[4]];
        let alphas: [&[f64]; 5] = [&[0.4, 2.5, 3.5], &[1.0, 1.0], &[1.0, 2.0], &[1.0], &[1.0]];
        // Each simulation takes M steps from every row, the rows interleaved; the ordered
        // sequence of support positions of a row is one cell of L^M.
        const M: usize = 3;
        let n = 100_000;
        let mut rng = stream(9, 0, 0);
        let mut hits: Vec<Vec<u64>> = supports.iter().map(|sup| vec![0; sup.len().pow(M as u32)]).collect();
        for _ in 0..n {
            posterior.new_model();
            let mut cells = [0usize; 5];
            for _ in 0..M {
                for s in 0..ns {
                    let (y, reward, position) = posterior.step(s, 0, &mut rng);
                    assert_eq!(y, supports[s][position] as usize, "row {s}: a state outside the support");
                    assert_eq!(reward, y as f64 + 0.5);
                    cells[s] = cells[s] * supports[s].len() + position;
                }
            }
            for s in 0..ns {
                hits[s][cells[s]] += 1;
            }
        }
        // Two references for the probability of a sequence with n_y steps to y. The exact law of
        // i.i.d. steps from P ~ Dir(alpha): E[prod_y P_y^n_y] = prod_y alpha_y^(n_y rising) /
        // alpha_0^(M rising). And, independently of that algebra, the original's procedure: the
        // mean of prod_y P_y^n_y over rows P drawn by `sample_row` (Gamma variates).
        let draws = 200_000;
        let mut row = [0.0; 5];
        for s in 0..ns {
            let (support, alpha) = (supports[s], alphas[s]);
            let l = support.len();
            let mut dense = [0.0; 5];
            for (&y, &a) in support.iter().zip(alpha) {
                dense[y as usize] = a;
            }
            let positions = |cell: usize| {
                let mut c = [0usize; M];
                let mut rest = cell;
                for t in (0..M).rev() {
                    c[t] = rest % l;
                    rest /= l;
                }
                c
            };
            let mut drawn = vec![0.0; hits[s].len()];
            for _ in 0..draws {
                crate::model::dirichlet::sample_row(&dense, support, &mut row, &mut rng);
                for (cell, d) in drawn.iter_mut().enumerate() {
                    *d += positions(cell).iter().map(|&i| row[support[i] as usize]).product::<f64>() / draws as f64;
                }
            }
            let a0: f64 = alpha.iter().sum();
            for (cell, &h) in hits[s].iter().enumerate() {
                let mut seen = vec![0.0; l];
                let mut exact = 1.0;
                for (t, &i) in positions(cell).iter().enumerate() {
                    exact *= (alpha[i] + seen[i]) / (a0 + t as f64);
                    seen[i] += 1.0;
                }
                let f = h as f64 / n as f64;
                // 5 standard errors of a Bernoulli(p) frequency; the Monte-Carlo reference adds
                // at most p / draws to the variance (each product lies in [0, 1]).
                let se = (exact * (1.0 - exact) / n as f64).sqrt() + 1e-12;
                assert!((f - exact).abs() < 5.0 * se, "row {s}, cell {cell}: frequency {f}, exact {exact}");
                let se = (se * se + exact / draws as f64).sqrt();
                assert!(
                    (f - drawn[cell]).abs() < 5.0 * se,
                    "row {s}, cell {cell}: frequency {f}, drawn {}",
                    drawn[cell]
                );
            }
        }
    }

    #[test]
    fn rollout_table_has_the_epsilon_greedy_law() {
        // The rollout policy: a uniformly random action with probability 1/2, otherwise a
        // uniformly random greedy action. One draw from the table must have that law.
        let (ns, na) = (2, 3);
        let prior = Fdm::new(ns, na, vec![1.0; ns * na * ns], vec![0.0; ns * na * ns], Some(0)).unwrap();
        let (mut agent, mut rng) = trained(10, 5, &prior, 0);
        let st = agent.state.as_mut().unwrap();
        for greedy in [&[0u32, 1, 2][..], &[1], &[0, 2]] {
            st.greedy_actions[..greedy.len()].copy_from_slice(greedy);
            st.greedy_len[0] = greedy.len() as u32;
            st.fill_rollout_table(0);
            let n = 60_000;
            let mut hits = [0usize; 3];
            for _ in 0..n {
                let draw = uniform_below(st.rollout_len[0], &mut rng) as usize;
                hits[st.rollout_actions[draw] as usize] += 1;
            }
            for (a, &h) in hits.iter().enumerate() {
                let bonus = if greedy.contains(&(a as u32)) { 0.5 / greedy.len() as f64 } else { 0.0 };
                let p = 0.5 / na as f64 + bonus;
                let f = h as f64 / n as f64;
                // 5 standard errors of a Bernoulli(p) frequency.
                assert!((f - p).abs() < 5.0 * (p * (1.0 - p) / n as f64).sqrt(), "{greedy:?}: action {a} {f} vs {p}");
            }
        }
    }

    /// A two-armed Bernoulli bandit as an MDP whose FDM rows are the arms' Beta posteriors:
    /// state 0 decides; arm `a` leads to state 1 (success, reward 1) or 2 (failure, reward 0)
    /// with `theta(0, a, ·) = (0, successes, failures)`; states 1 and 2 return to 0 whatever
    /// the action, with reward 0. One pull takes two steps, so `depth = 2H` covers H pulls.
    fn bandit_prior(arms: [(f64, f64); 2]) -> Fdm {
        let (ns, na) = (3, 2);
        let mut theta = vec![0.0; ns * na * ns];
        let mut rewards = vec![0.0; ns * na * ns];
        for (a, &(alpha, beta)) in arms.iter().enumerate() {
            theta[a * ns + 1] = alpha;
            theta[a * ns + 2] = beta;
            rewards[a * ns + 1] = 1.0;
        }
        for s in 1..3 {
            for a in 0..na {
                theta[(s * na + a) * ns] = 1.0;
            }
        }
        Fdm::new(ns, na, theta, rewards, Some(0)).unwrap()
    }

    /// The Bayes-optimal value of `pulls` pulls of the Beta-Bernoulli bandit, a pull every two
    /// steps (discount gamma^2 per pull), by dynamic programming over the Beta counts.
    fn bayes_optimal(arms: [(f64, f64); 2], pulls: usize) -> f64 {
        if pulls == 0 {
            return 0.0;
        }
        let g2 = GAMMA * GAMMA;
        (0..2)
            .map(|a| {
                let (alpha, beta) = arms[a];
                let p = alpha / (alpha + beta);
                let (mut win, mut lose) = (arms, arms);
                win[a].0 += 1.0;
                lose[a].1 += 1.0;
                p * (1.0 + g2 * bayes_optimal(win, pulls - 1)) + (1.0 - p) * g2 * bayes_optimal(lose, pulls - 1)
            })
            .fold(f64::NEG_INFINITY, f64::max)
    }

    #[test]
    fn root_value_converges_to_the_bayes_optimal_value() {
        let arms = [(1.0, 1.0), (2.0, 1.0)];
        let pulls = 3;
        let exact = bayes_optimal(arms, pulls);
        let prior = bandit_prior(arms);
        let error = |k: usize| {
            let seeds = 4;
            let mut total = 0.0;
            for seed in 0..seeds {
                let (mut agent, mut rng) = trained(k, 2 * pulls, &prior, seed);
                agent.act(0, &mut rng).unwrap();
                total += (agent.root_value() - exact).abs();
            }
            total / seeds as f64
        };
        // UCT's estimate approaches from below (exploration inside the subtree costs a
        // O(log K / K) fraction of visits): about 0.25, 0.08 and 0.02 below at these budgets.
        let errors = [error(200), error(4_000), error(100_000)];
        assert!(errors[0] > errors[1] && errors[1] > errors[2], "errors should shrink with K: {errors:?}");
        assert!(errors[2] < 0.02 * exact, "error {} at K = 100000 (exact value {exact})", errors[2]);
    }
}
