//! BAMCPAgent (SPEC 4.6): Bayes-adaptive Monte-Carlo planning (Guez, Silver & Dayan 2012) as the
//! original BBRL library runs it: UCT over the belief-augmented MDP with root sampling.

use std::sync::Arc;

use rand::Rng as _;

use super::{
    argmax_random_tie, argmax_random_tie_by, greedy_probabilities, not_trained, plan_once, uniform_below, Agent,
    PlanningStream, ResetContext, Setting, Transition,
};
use crate::dirichlet::GammaSampler;
use crate::error::Result;
use crate::fdm::Fdm;
use crate::invalid;
use crate::rng::Rng;

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
///   sampling); the rows of that MDP are drawn lazily, the first time the simulation steps
///   from a (state, action) pair, which gives the same distribution as the original's full draw;
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
    initial: LazyPosterior,
    posterior: LazyPosterior,
    tree: Tree,
    /// The rollout policy: Q-learned values `Qrl(s, a)` and the greedy action sets of each state.
    q_rollout: Vec<f64>,
    greedy_actions: Vec<u32>,
    greedy_len: Vec<u32>,
    /// Tree descent of the current simulation: (V-node, Q-node, reward) per tree step.
    path: Vec<(u32, u32, f64)>,
    /// Per-action scores for the UCB and greedy choices (length A).
    scores: Vec<f64>,
    /// UCB tables for visit counts `0..=k` (a search never exceeds `k` visits per node):
    /// `c sqrt(ln(N + 1))` (but `c` at `N = 0`) and `1 / sqrt(n)` (+inf at `n = 0`), so a score
    /// costs no logarithm, square root or branch (see [`BamcpState::ucb_action`]).
    exploration: Vec<f64>,
    inv_sqrt: Vec<f64>,
    gamma: f64,
    /// The private stream of [`Agent::action_probabilities`], reseeded at every reset.
    /// The private stream planning draws from (see [`Agent::action_probabilities`]).
    plan_stream: PlanningStream,
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
        self.tree.clear();
        let root = self.tree.add_vnode(self.posterior.slots(state));
        for _ in 0..k {
            self.posterior.new_model();
            self.simulate(root, state, depth, rng);
        }
        debug_assert_eq!(root, 0);
        for (score, mean) in self.scores.iter_mut().zip(self.tree.root_means()) {
            *score = mean;
        }
    }

    /// One simulation (`SimulateV`/`SimulateQ`, unrolled): descend the tree by UCB while nodes
    /// exist, add at most one node, finish with a rollout, then back the return up the path.
    fn simulate(&mut self, root: u32, state: usize, depth: usize, rng: &mut Rng) {
        let na = self.posterior.n_actions as u32;
        self.path.clear();
        let (mut vnode, mut s, mut d) = (root, state, 0);
        let mut delayed = 0.0;
        while d < depth {
            let action = self.ucb_action(vnode, rng);
            let qnode = vnode * na + action as u32;
            let (y, reward, position) = self.posterior.step(s, action, rng);
            self.path.push((vnode, qnode, reward));
            d += 1;
            let slot = self.tree.q[qnode as usize].children as usize + position;
            let mut child = self.tree.children[slot];
            // A node at depth `depth` would be left at once with value 0, which is what a
            // zero-step rollout returns: it is never created.
            if child == NONE && d < depth && self.tree.q[qnode as usize].count >= EXPAND_COUNT {
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
        for &(v, q, reward) in self.path.iter().rev() {
            ret = reward + self.gamma * ret;
            self.tree.add_return(q, ret);
            self.tree.v_count[v as usize] += 1;
        }
    }

    /// `GreedyUCB(vnode, ucb = true)`: the action maximising `mean + c sqrt(ln(N + 1) / n)`
    /// (+inf when unvisited), ties at random. The bonus is computed as
    /// `c sqrt(ln(N + 1)) * (1 / sqrt(n))` from tables, equal up to rounding. The tables make
    /// the unvisited case need no branch: `1 / sqrt(0)` is +inf, and the exploration factor is
    /// positive for every `N` (at `N = 0`, where every action is unvisited, the table holds `c`
    /// instead of 0, so that the product is +inf rather than NaN), so an unvisited action
    /// (mean 0) scores `0 + positive * inf = +inf`.
    #[inline]
    fn ucb_action(&self, vnode: u32, rng: &mut Rng) -> usize {
        let na = self.posterior.n_actions;
        let exploration = self.exploration[self.tree.v_count[vnode as usize] as usize];
        let first = vnode as usize * na;
        let qnodes = &self.tree.q[first..first + na];
        let score = |a: usize| {
            let q = &qnodes[a];
            q.mean + exploration * self.inv_sqrt[q.count as usize]
        };
        argmax_random_tie_by(na, score, rng)
    }

    /// `Rollout`: `steps` steps of the epsilon-greedy rollout policy; the discounted return.
    fn rollout(&mut self, mut s: usize, steps: usize, rng: &mut Rng) -> f64 {
        let na = self.posterior.n_actions;
        let (mut total, mut discount) = (0.0, 1.0);
        for _ in 0..steps {
            // One draw in 0..2A: below A (probability 1/2) it is the uniformly random action.
            let draw = uniform_below(2 * na as u32, rng) as usize;
            let action = if draw < na {
                draw
            } else {
                let len = self.greedy_len[s];
                let pick = if len == 1 { 0 } else { uniform_below(len, rng) as usize };
                self.greedy_actions[s * na + pick] as usize
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
    }
}

impl Agent for Bamcp {
    fn name(&self) -> String {
        name(self.k, self.depth)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let initial = LazyPosterior::new(prior);
        let (ns, na) = (prior.n_states(), prior.n_actions());
        self.state = Some(BamcpState {
            posterior: initial.clone(),
            initial,
            tree: Tree::new(ns, na),
            q_rollout: vec![0.0; ns * na],
            greedy_actions: vec![0; ns * na],
            greedy_len: vec![0; ns],
            path: Vec::new(),
            scores: vec![0.0; na],
            exploration: (0..=self.k)
                .map(|n| if n == 0 { EXPLORATION } else { EXPLORATION * ((n as f64) + 1.0).ln().sqrt() })
                .collect(),
            inv_sqrt: (0..=self.k).map(|n| 1.0 / (n as f64).sqrt()).collect(),
            gamma: setting.gamma,
            plan_stream: PlanningStream::default(),
        });
        Ok(())
    }

    fn reset(&mut self, context: &ResetContext<'_>, rng: &mut Rng) -> Result<()> {
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
        st.tree.reserve(k);
        st.path.reserve(depth);
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
    v_count: Vec<u32>,
    q: Vec<QNode>,
    children: Vec<u32>,
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
}

impl Tree {
    fn new(n_states: usize, n_actions: usize) -> Self {
        Self { n_states, n_actions, v_count: Vec::new(), q: Vec::new(), children: Vec::new() }
    }

    /// Room for a search of `k` simulations, which adds at most one V-node each, with at most
    /// S child slots per Q-node.
    fn reserve(&mut self, k: usize) {
        let nodes = k + 1;
        self.v_count.reserve(nodes.saturating_sub(self.v_count.len()));
        self.q.reserve((nodes * self.n_actions).saturating_sub(self.q.len()));
        self.children.reserve((nodes * self.n_actions * self.n_states).saturating_sub(self.children.len()));
    }

    fn clear(&mut self) {
        self.v_count.clear();
        self.q.clear();
        self.children.clear();
    }

    /// A new V-node whose Q-nodes have `slots[a]` child slots each (the support sizes of its
    /// state's rows).
    fn add_vnode(&mut self, slots: &[u32]) -> u32 {
        let id = self.v_count.len() as u32;
        self.v_count.push(0);
        let mut next = self.children.len() as u32;
        for &n in slots {
            self.q.push(QNode { count: 0, children: next, total: 0.0, mean: 0.0 });
            next += n;
        }
        self.children.resize(next as usize, NONE);
        id
    }

    /// Adds one return to a Q-node.
    #[inline]
    fn add_return(&mut self, qnode: u32, ret: f64) {
        let q = &mut self.q[qnode as usize];
        q.count += 1;
        q.total += ret;
        q.mean = q.total / f64::from(q.count);
    }

    /// The mean returns of the root's actions.
    fn root_means(&self) -> impl Iterator<Item = f64> + '_ {
        self.q.iter().take(self.n_actions).map(|q| q.mean)
    }
}

/// The Dirichlet posterior `Dir(counts + theta)` and one model drawn from it, row by row on
/// demand. A row drawn in the current model carries the model's generation stamp; starting a
/// new model only bumps the generation, so nothing is cleared between simulations.
///
/// Row `r` keeps its support states in `hot[r * S ..]` / `cold[r * S ..]` (increasing order,
/// room for all S states so the support can grow): the state, its reward and the current
/// draw's unnormalised weight (the row's Gamma variate) where a step reads them, and the
/// posterior count with its Gamma sampler where a draw reads them. A step draws `u * total`
/// and walks the weights, which samples the normalised row.
#[derive(Clone, Debug)]
struct LazyPosterior {
    n_states: usize,
    n_actions: usize,
    rows: Vec<RowDraw>,
    /// Support size of each row (as in `rows`), contiguous per state for [`Tree::add_vnode`].
    support_len: Vec<u32>,
    hot: Vec<Hot>,
    cold: Vec<Cold>,
    rewards: Arc<[f64]>,
    generation: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct RowDraw {
    /// The generation of the model that drew `total` and the weights.
    stamp: u32,
    /// Support size.
    len: u32,
    total: f64,
}

#[derive(Clone, Copy, Debug)]
struct Hot {
    state: u32,
    reward: f64,
    weight: f64,
}

#[derive(Clone, Copy, Debug)]
struct Cold {
    /// Posterior count `theta + observed`.
    alpha: f64,
    gamma: GammaSampler,
}

impl LazyPosterior {
    /// The prior `Dir(theta)` of `prior`.
    fn new(prior: &Fdm) -> Self {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let unused_hot = Hot { state: 0, reward: 0.0, weight: 0.0 };
        let unused_cold = Cold { alpha: 0.0, gamma: GammaSampler::new(1.0) };
        let mut posterior = Self {
            n_states: ns,
            n_actions: na,
            rows: vec![RowDraw::default(); ns * na],
            support_len: vec![0; ns * na],
            hot: vec![unused_hot; ns * na * ns],
            cold: vec![unused_cold; ns * na * ns],
            rewards: prior.rewards_arc(),
            generation: 0,
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
        let len = self.rows[row].len as usize;
        let position = self.hot[base..base + len].partition_point(|h| (h.state as usize) < y);
        let i = base + position;
        if position == len || self.hot[i].state as usize != y {
            self.hot.copy_within(i..base + len, i + 1);
            self.cold.copy_within(i..base + len, i + 1);
            self.hot[i] = Hot { state: y as u32, reward: self.rewards[base + y], weight: 0.0 };
            self.cold[i].alpha = 0.0;
            self.rows[row].len += 1;
            self.support_len[row] += 1;
            // The stored draw no longer matches the support.
            self.rows[row].stamp = 0;
        }
        self.cold[i].alpha += amount;
        self.cold[i].gamma = GammaSampler::new(self.cold[i].alpha);
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

    /// Starts a new model: every row is undrawn.
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

    /// One step of the current model from `(s, a)`: the next state, its reward and its position
    /// in the row's support.
    #[inline(always)]
    fn step(&mut self, s: usize, a: usize, rng: &mut Rng) -> (usize, f64, usize) {
        let row = s * self.n_actions + a;
        let base = row * self.n_states;
        let draw = self.rows[row];
        let len = draw.len as usize;
        if len == 1 {
            // Dir over a single state is that state with probability 1: nothing to draw.
            let only = self.hot[base];
            return (only.state as usize, only.reward, 0);
        }
        let total = if draw.stamp == self.generation { draw.total } else { self.draw_row(row, rng) };
        let entries = &self.hot[base..base + len];
        let mut u = rng.random::<f64>() * total;
        if len == 2 {
            // The usual case (every row of GC and Grid): an index, not a hard-to-predict branch.
            let position = usize::from(u >= entries[0].weight);
            let e = entries[position];
            return (e.state as usize, e.reward, position);
        }
        for (position, e) in entries[..len - 1].iter().enumerate() {
            if u < e.weight {
                return (e.state as usize, e.reward, position);
            }
            u -= e.weight;
        }
        // Also the fallback should rounding leave u above the last weight.
        let last = entries[len - 1];
        (last.state as usize, last.reward, len - 1)
    }

    /// Draws row `row` of the current model: one Gamma variate per support state. Should
    /// every variate underflow (only with tiny counts), one support state drawn with probability
    /// proportional to its count gets all the mass, as [`crate::dirichlet::sample_row`] does.
    #[inline(never)]
    fn draw_row(&mut self, row: usize, rng: &mut Rng) -> f64 {
        let base = row * self.n_states;
        let len = self.rows[row].len as usize;
        let (hot, cold) = (&mut self.hot[base..base + len], &self.cold[base..base + len]);
        let mut total = 0.0;
        if len == 2 && cold[0].alpha == 1.0 && cold[1].alpha == 1.0 {
            // Dir(1, 1) is (U, 1 - U) with U uniform: one draw instead of two exponentials.
            let u: f64 = rng.random();
            (hot[0].weight, hot[1].weight) = (u, 1.0 - u);
            self.rows[row] = RowDraw { stamp: self.generation, len: 2, total: 1.0 };
            return 1.0;
        }
        for (h, c) in hot.iter_mut().zip(cold) {
            h.weight = c.gamma.sample(rng);
            total += h.weight;
        }
        if !(total >= 1e-300 && total.is_finite()) {
            let mut u = rng.random::<f64>() * cold.iter().map(|c| c.alpha).sum::<f64>();
            let mut pick = len - 1;
            for (i, c) in cold.iter().enumerate() {
                if u < c.alpha {
                    pick = i;
                    break;
                }
                u -= c.alpha;
            }
            for (i, h) in hot.iter_mut().enumerate() {
                h.weight = if i == pick { 1.0 } else { 0.0 };
            }
            total = 1.0;
        }
        self.rows[row] = RowDraw { stamp: self.generation, len: len as u32, total };
        total
    }

    /// The row `P(s, a, ·)` of the current model (drawn now if this model has not drawn it yet),
    /// written densely into `out` (length S).
    #[cfg(test)]
    fn row(&mut self, s: usize, a: usize, out: &mut [f64], rng: &mut Rng) {
        let row = s * self.n_actions + a;
        let base = row * self.n_states;
        let draw = self.rows[row];
        let total = if draw.stamp == self.generation { draw.total } else { self.draw_row(row, rng) };
        out.fill(0.0);
        for e in &self.hot[base..base + draw.len as usize] {
            out[e.state as usize] = e.weight / total;
        }
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
        agent.reset(&ResetContext { setting: setting(), true_mdp: None }, &mut rng).unwrap();
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
        let mdp = crate::mdp::Mdp::new(4, 2, p.clone(), r.clone(), Some(0)).unwrap();
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
    fn lazy_rows_have_the_posterior_moments() {
        // One action, 5 states. Row 0: prior (0, 0.4, 0.5, 0, 3.5) and two observed transitions
        // to state 2: posterior (0, 0.4, 2.5, 0, 3.5), Gamma shapes below, at and above 1.
        // Row 1: prior (0, 1, 0, 1, 0), the Dir(1, 1) shortcut. Row 2: prior on state 2 only,
        // then two observed transitions to state 4 outside it: the support grows to (1, 2).
        // Rows 3 and 4: a single next state, probability 1. Zeros must stay exactly zero.
        let ns = 5;
        let mut theta = vec![0.0; ns * ns];
        theta[..ns].copy_from_slice(&[0.0, 0.4, 0.5, 0.0, 3.5]);
        theta[ns..2 * ns].copy_from_slice(&[0.0, 1.0, 0.0, 1.0, 0.0]);
        for s in 2..ns {
            theta[s * ns + s] = 1.0;
        }
        let prior = Fdm::new(ns, 1, theta, vec![0.0; ns * ns], Some(0)).unwrap();
        let mut posterior = LazyPosterior::new(&prior);
        for (s, y) in [(0, 2), (0, 2), (2, 4), (2, 4)] {
            posterior.observe(s, 0, y);
        }
        let alphas: [[f64; 5]; 5] = [
            [0.0, 0.4, 2.5, 0.0, 3.5],
            [0.0, 1.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0, 0.0, 2.0],
            [0.0, 0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ];
        let n = 50_000;
        let mut rng = stream(9, 0, 0);
        let (mut sum, mut sum2) = ([[0.0; 5]; 5], [[0.0; 5]; 5]);
        let (mut row, mut again) = ([0.0; 5], [0.0; 5]);
        for _ in 0..n {
            posterior.new_model();
            for s in 0..ns {
                posterior.row(s, 0, &mut row, &mut rng);
                // Within one model a row is drawn once: asking again returns the same row.
                posterior.row(s, 0, &mut again, &mut rng);
                assert_eq!(row, again);
                for y in 0..ns {
                    sum[s][y] += row[y];
                    sum2[s][y] += row[y] * row[y];
                }
            }
        }
        for (s, alpha) in alphas.iter().enumerate() {
            let a0: f64 = alpha.iter().sum();
            for y in 0..ns {
                let (mean, var) = (sum[s][y] / n as f64, sum2[s][y] / n as f64 - (sum[s][y] / n as f64).powi(2));
                if alpha[y] == 0.0 {
                    assert_eq!(sum[s][y], 0.0, "P({s}, {y}) must be exactly 0");
                    continue;
                }
                let true_mean = alpha[y] / a0;
                let true_var = alpha[y] * (a0 - alpha[y]) / (a0 * a0 * (a0 + 1.0));
                // Standard error of the sample mean: sqrt(var / n); of the sample variance:
                // sqrt((m4 - var^2) / n) <= sqrt(var / n), since the values lie in [0, 1].
                let se = (true_var / n as f64).sqrt() + 1e-12;
                assert!((mean - true_mean).abs() < 5.0 * se, "mean of P({s}, {y}): {mean} vs {true_mean}");
                assert!((var - true_var).abs() < 5.0 * se, "variance of P({s}, {y}): {var} vs {true_var}");
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
