//! What the exploration baselines (UCRL2, UCBVI, MBIE-EB, R-max, Optimistic PSRL, RLSVI and the
//! two Q-learners) share: their common parameters, the visit statistics they learn from, the
//! planning-block schedule of the continuing protocol and its staged Q table, and the optimistic
//! absorbing-state model that MBIE-EB and R-max hand to the benchmark's value iteration; and the
//! life cycle built on them: a task's reset, the replanning (per block for Optimistic PSRL and
//! RLSVI, [`BlockPlanner`]; per change of the model for MBIE-EB and R-max, [`AbsorbingPlanner`])
//! and the greedy decisions on the plan ([`GreedyOnPlan`]). docs/baselines.md states the
//! algorithms; each agent's file holds its own equations.

use std::sync::Arc;

use rand::{RngCore as _, SeedableRng as _};

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{ParamDefault, ParamSpec, ParamType, Range, Reader};
use crate::agent::{Setting, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::model::sparse::RowSupports;
use crate::model::tables::TabularView;
use crate::rng::Rng;
use crate::solve::{ValueIterationWorkspace, GUEZ_VI_EPSILON};
use crate::work::{self, Unit};

/// The `rewards` parameter every baseline takes.
pub const REWARDS: ParamSpec = ParamSpec {
    name: "rewards",
    ty: ParamType::Text,
    default: Some(ParamDefault::Text("known")),
    range: Range::Choices(&["known", "learned"]),
    doc: "known: plan on the problem's reward table R(s, a, s') as every BBRL agent does; learned: estimate \
          each pair's mean reward from the rewards observed, as the reference implementation does",
};

/// The `plan_horizon` parameter of the finite-horizon baselines.
pub const PLAN_HORIZON: ParamSpec = ParamSpec {
    name: "plan_horizon",
    ty: ParamType::Int,
    default: Some(ParamDefault::Int(0)),
    range: Range::at_least(0.0),
    doc: "H, steps per planning block in the continuing protocol (one episode's length in the episodic one); \
          the agent replans every H steps with an H-stage discounted backward induction; 0: ceil(1 / (1 - gamma)), \
          20 at gamma = 0.95",
};

/// Where the planning rewards come from (the `rewards` parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewardModel {
    /// The reward table `R(s, a, s')` given with the prior, weighted by the estimated transitions.
    Known,
    /// Each pair's mean observed reward.
    Learned,
}

impl RewardModel {
    /// Reads the `rewards` parameter.
    pub fn read(r: &Reader<'_>) -> Result<Self> {
        match r.text("rewards")? {
            "known" => Ok(Self::Known),
            "learned" => Ok(Self::Learned),
            other => Err(invalid!("rewards must be \"known\" or \"learned\", got {other:?}")),
        }
    }

    /// `", rewards learned"` for names (nothing for the default).
    pub fn label(self) -> &'static str {
        match self {
            Self::Known => "",
            Self::Learned => ", rewards learned",
        }
    }
}

/// Whose algorithm a baseline runs (its `reference` parameter): the paper's, or a reference
/// implementation's with its departures from the paper (docs/baselines.md, "Reference settings").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    Paper,
    Rlberry,
}

impl Reference {
    /// Reads a `reference` parameter.
    pub fn read(text: &str) -> Result<Self> {
        match text {
            "paper" => Ok(Self::Paper),
            "rlberry" => Ok(Self::Rlberry),
            other => Err(invalid!("reference must be \"paper\" or \"rlberry\", got {other:?}")),
        }
    }

    /// `", rlberry"` for names (nothing for the paper's).
    pub fn label(self) -> &'static str {
        match self {
            Self::Paper => "",
            Self::Rlberry => ", rlberry",
        }
    }
}

/// The `reference` parameter of the baselines that offer TabulaRL's settings (UCRL2, Optimistic PSRL).
pub const TABULARL_REFERENCE: ParamSpec = ParamSpec {
    name: "reference",
    ty: ParamType::Text,
    default: Some(ParamDefault::Text("paper")),
    range: Range::Choices(&["paper", "tabularl"]),
    doc: "paper: the algorithm as docs/baselines.md states it; tabularl: the choices of TabulaRL's code \
          (docs/baselines.md, Reference settings), for side-by-side checks against it",
};

/// Whose choices UCRL2 and Optimistic PSRL follow (their `reference` parameter; the rlberry
/// baselines read [`Reference`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TabularlReference {
    /// The algorithm as docs/baselines.md states it.
    Paper,
    /// TabulaRL's code: among others, the transition of an episode's (a block's) last step is not
    /// counted in the transition statistics (its reward is).
    Tabularl,
}

impl TabularlReference {
    /// Reads the `reference` parameter; `tabularl` learns rewards as TabulaRL does, so it needs
    /// `rewards = "learned"`.
    pub fn read(r: &Reader<'_>, rewards: RewardModel) -> Result<Self> {
        match r.text("reference")? {
            "paper" => Ok(Self::Paper),
            "tabularl" if rewards == RewardModel::Learned => Ok(Self::Tabularl),
            "tabularl" => Err(invalid!(
                "reference = \"tabularl\" learns the rewards as TabulaRL does: it needs rewards = \"learned\""
            )),
            other => Err(invalid!("reference must be \"paper\" or \"tabularl\", got {other:?}")),
        }
    }

    /// `", TabulaRL's settings"` for names (nothing for the default).
    pub fn label(self) -> &'static str {
        match self {
            Self::Paper => "",
            Self::Tabularl => ", TabulaRL's settings",
        }
    }
}

/// rlberry's "simplified Bernstein" bonus (its UCBVI and OptQL) of a pair seen `n > 0` times at a
/// stage whose largest value is `v_max`, with the constant `c` in units of the reward range `scale`.
pub fn rlberry_bonus(c: f64, n: f64, v_max: f64, scale: f64) -> f64 {
    (c * scale / n.sqrt() + v_max / n).min(v_max)
}

/// The block length `H` for a requested `plan_horizon` (0: `ceil(1 / (1 - gamma))`, with a guard
/// against the rounding of `1 / (1 - 0.95) = 20.000000000000018`).
pub fn block_length(requested: usize, gamma: f64) -> usize {
    if requested > 0 {
        return requested;
    }
    let effective = 1.0 / (1.0 - gamma);
    ((effective - 1e-9).ceil() as usize).max(1)
}

/// The block length from a task's first episode on, in a protocol of episodes of `episode`
/// steps: `plan_horizon` when given, else the episode's length (a plan of `1 / (1 - gamma)`
/// steps would drop the last steps of a longer episode, and TabulaRL's last-step rule with them).
pub fn episode_length(requested: usize, episode: usize) -> usize {
    if requested > 0 {
        requested
    } else {
        episode.max(1)
    }
}

/// The block length of a task: [`episode_length`] once the protocol has started an episode,
/// else [`block_length`].
pub fn plan_length(requested: usize, setting: Setting, episodic: bool) -> usize {
    if episodic {
        episode_length(requested, setting.horizon)
    } else {
        block_length(requested, setting.gamma)
    }
}

/// Bytes of the stage tables a block planner sizes for a prior of `n_states` x `n_actions` and
/// `setting`: `tables` tables of `H S A` values, with `H` the longest of the continuing and the
/// episodic block lengths.
pub fn staged_memory(tables: u128, requested: usize, n_states: usize, n_actions: usize, setting: Setting) -> u128 {
    let longest = block_length(requested, setting.gamma).max(episode_length(requested, setting.horizon));
    let entries = crate::platform::memory::product(&[longest, n_states, n_actions]);
    crate::platform::memory::bytes_of::<f64>(entries.saturating_mul(tables))
}

/// `sum_{k < n} gamma^k`: the most discounted steps a block stage with `n` steps left holds.
pub fn discounted_steps(gamma: f64, n: usize) -> f64 {
    (0..n).fold(0.0, |acc, _| 1.0 + gamma * acc)
}

/// Counts one stage (sweep) of a backward induction or value iteration over `rows` pairs and
/// `entries` next-state terms, in the units of the benchmark's value iteration.
#[inline]
pub fn count_sweep(rows: usize, entries: usize) {
    work::add(Unit::ViRowSweeps, rows as u64);
    work::add(Unit::ViEntrySweeps, entries as u64);
}

/// The visit statistics of one task: `n(s, a)`, `n(s, a, y)` and the summed rewards, with the
/// known reward table and its range. Rows are `s * A + a`; tables row-major `(s * A + a) * S + y`.
#[derive(Clone, Debug)]
pub struct Experience {
    pub n_states: usize,
    pub n_actions: usize,
    visits: Vec<f64>,
    counts: Vec<f64>,
    reward_sums: Vec<f64>,
    /// Rewards observed without their transition ([`Experience::observe_reward_only`]).
    reward_only: Vec<f64>,
    /// Next states seen from each pair (grows, never shrinks within a task).
    seen: RowSupports,
    /// `seen` of a new task (copied back without allocating).
    none_seen: RowSupports,
    known: Arc<[f64]>,
    /// The smallest and largest reward of the table (the problem's reward range).
    pub r_lo: f64,
    pub r_hi: f64,
}

impl Experience {
    pub fn new(prior: &Fdm) -> Self {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let rewards = prior.rewards_arc();
        let r_lo = rewards.iter().copied().fold(f64::INFINITY, f64::min);
        let r_hi = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Self {
            n_states: ns,
            n_actions: na,
            visits: vec![0.0; ns * na],
            counts: vec![0.0; ns * na * ns],
            reward_sums: vec![0.0; ns * na],
            reward_only: vec![0.0; ns * na],
            seen: RowSupports::from_table(ns, na, &vec![0.0; ns * na * ns]),
            none_seen: RowSupports::from_table(ns, na, &vec![0.0; ns * na * ns]),
            known: rewards,
            r_lo,
            r_hi,
        }
    }

    /// Forgets every observation (a new task).
    pub fn clear(&mut self) {
        self.visits.fill(0.0);
        self.counts.fill(0.0);
        self.reward_sums.fill(0.0);
        self.reward_only.fill(0.0);
        self.seen.clone_from(&self.none_seen);
        // The S·A·S counts dominate a task's reset, a cost of its own for agents that solve little.
        work::add(Unit::ModelEntries, self.counts.len() as u64);
    }

    /// Adds one transition.
    #[inline]
    pub fn observe(&mut self, t: &Transition) {
        let row = t.state * self.n_actions + t.action;
        if self.counts[row * self.n_states + t.next_state] == 0.0 {
            self.seen.insert(row, t.next_state);
        }
        self.visits[row] += 1.0;
        self.counts[row * self.n_states + t.next_state] += 1.0;
        self.reward_sums[row] += t.reward;
    }

    /// Adds the reward of one transition but not its next state: TabulaRL counts the transition
    /// of an episode's last step in the reward statistics only.
    #[inline]
    pub fn observe_reward_only(&mut self, t: &Transition) {
        let row = t.state * self.n_actions + t.action;
        self.reward_only[row] += 1.0;
        self.reward_sums[row] += t.reward;
    }

    /// The rewards observed from `row` (its transitions, plus the rewards observed alone).
    #[inline]
    pub fn reward_visits(&self, row: usize) -> f64 {
        self.visits[row] + self.reward_only[row]
    }

    /// The width of the reward range (1 when the table has a single value), the unit in which
    /// the bounded-reward agents' bonuses are stated: scaling a bonus by it is the same as
    /// rescaling the rewards to [0, 1] and the returns back.
    pub fn scale(&self) -> f64 {
        if self.r_hi > self.r_lo {
            self.r_hi - self.r_lo
        } else {
            1.0
        }
    }

    #[inline]
    pub fn visits(&self, row: usize) -> f64 {
        self.visits[row]
    }

    /// `n(s, a, ·)` of `row`.
    #[inline]
    pub fn counts_row(&self, row: usize) -> &[f64] {
        &self.counts[row * self.n_states..(row + 1) * self.n_states]
    }

    /// The next states seen from `row`, increasing.
    #[inline]
    pub fn seen(&self, row: usize) -> &[u32] {
        self.seen.row(row)
    }

    /// `R(s, a, ·)` of `row` (the known table).
    #[inline]
    pub fn known_row(&self, row: usize) -> &[f64] {
        &self.known[row * self.n_states..(row + 1) * self.n_states]
    }

    /// The summed observed rewards of `row`.
    #[inline]
    pub fn reward_sum(&self, row: usize) -> f64 {
        self.reward_sums[row]
    }

    /// The mean observed reward of `row` (0 if unvisited).
    #[inline]
    pub fn observed_mean(&self, row: usize) -> f64 {
        let n = self.reward_visits(row);
        if n > 0.0 {
            self.reward_sums[row] / n
        } else {
            0.0
        }
    }

    /// The empirical mean reward of a visited `row`: under known rewards `sum_y P̂(y) R(s, a, y)`
    /// with `P̂ = n(s, a, ·) / n(s, a)` (never the true mean, SPEC 1.1), else the observed mean.
    #[inline]
    pub fn empirical_reward(&self, row: usize, rewards: RewardModel) -> f64 {
        match rewards {
            RewardModel::Learned => self.observed_mean(row),
            RewardModel::Known => {
                let n = self.visits[row];
                if n == 0.0 {
                    return 0.0;
                }
                let (counts, known) = (self.counts_row(row), self.known_row(row));
                self.seen(row).iter().map(|&y| counts[y as usize] * known[y as usize]).sum::<f64>() / n
            }
        }
    }

    /// The posterior mean reward of the Gaussian reward model of the posterior-sampling agents
    /// (prior `N(0, 1)` and unit noise on rewards rescaled to [0, 1], TabulaRL's `mu0 = 0`,
    /// `tau0 = tau = 1`), on the original scale, and its standard deviation there.
    #[inline]
    pub fn reward_posterior(&self, row: usize) -> (f64, f64) {
        let n = self.reward_visits(row);
        let scale = self.scale();
        let shifted = (self.reward_sums[row] - n * self.r_lo) / scale;
        (self.r_lo + scale * shifted / (1.0 + n), scale / (1.0 + n).sqrt())
    }
}

/// The planning-block schedule of the finite-horizon agents in the continuing protocol: stage
/// `h = t mod H` of step t, a new plan at every block start. `start_episode` restarts a block
/// (the episodic protocol's reset), so the stage is then the step within the episode.
#[derive(Clone, Debug)]
pub struct Blocks {
    pub length: usize,
    pub stage: usize,
    /// Whether a new plan is due before the next decision.
    pub due: bool,
}

impl Blocks {
    pub fn new(length: usize) -> Self {
        Self { length, stage: 0, due: true }
    }

    /// Back to stage 0 with a plan due.
    pub fn restart(&mut self) {
        self.stage = 0;
        self.due = true;
    }

    /// One step taken.
    #[inline]
    pub fn advance(&mut self) {
        self.stage += 1;
        if self.stage == self.length {
            self.restart();
        }
    }
}

/// An `H`-stage Q table, `(h * S + s) * A + a`, read at the stage of its block schedule: what the
/// finite-horizon baselines (Optimistic PSRL, RLSVI, UCB Q-learning) act greedily on.
#[derive(Clone, Debug)]
pub struct StagedQ {
    pub blocks: Blocks,
    pub q: Vec<f64>,
    n_states: usize,
    n_actions: usize,
}

impl StagedQ {
    /// Blocks of `length` steps, a plan due, the table zero.
    pub fn new(length: usize, n_states: usize, n_actions: usize) -> Self {
        Self { blocks: Blocks::new(length), q: vec![0.0; length * n_states * n_actions], n_states, n_actions }
    }

    /// A new task's schedule: blocks of `length` steps from stage 0, a plan due; the table is
    /// allocated again only when the length changes (its values are the next plan's to write).
    pub fn restart_with(&mut self, length: usize) {
        if length != self.blocks.length {
            // Shrinking keeps the capacity: switching between a task's continuing and episodic
            // lengths allocates once.
            self.q.resize(length * self.n_states * self.n_actions, 0.0);
        }
        self.blocks = Blocks::new(length);
    }

    /// The index of `Q_h(state, 0)` at the current stage `h`.
    #[inline]
    pub fn row_start(&self, state: usize) -> usize {
        (self.blocks.stage * self.n_states + state) * self.n_actions
    }

    /// `Q_h(state, ·)` at the current stage.
    #[inline]
    pub fn q_row(&self, state: usize) -> &[f64] {
        let start = self.row_start(state);
        &self.q[start..start + self.n_actions]
    }
}

/// The blocked planners (Optimistic PSRL, RLSVI): a task's visit statistics, a plan of the
/// [`StagedQ`] computed at every block start from its own stream, and the two value buffers of
/// the backward induction. Each agent writes its own plan into `staged.q`, then calls
/// [`BlockPlanner::planned`].
#[derive(Clone, Debug)]
pub struct BlockPlanner {
    pub exp: Experience,
    pub gamma: f64,
    pub staged: StagedQ,
    pub rng: Rng,
    pub v_next: Vec<f64>,
    pub v: Vec<f64>,
    /// The task's horizon: the episode's length once the protocol starts episodes.
    pub horizon: usize,
    /// Whether the protocol starts episodes ([`BlockPlanner::start_episode`]; kept from task to
    /// task, so that the tables are sized once).
    pub episodic: bool,
}

impl BlockPlanner {
    /// Sized for `prior` and blocks of `plan_horizon` steps ([`block_length`]); the stream is a
    /// copy's, so the agent's own stream is left as it was (a task start draws the real one).
    pub fn new(prior: &Fdm, plan_horizon: usize, gamma: f64, rng: &Rng) -> Self {
        let exp = Experience::new(prior);
        let (ns, na) = (exp.n_states, exp.n_actions);
        let len = block_length(plan_horizon, gamma);
        Self {
            exp,
            gamma,
            staged: StagedQ::new(len, ns, na),
            rng: planning_stream(&mut rng.clone()),
            v_next: vec![0.0; ns],
            v: vec![0.0; ns],
            horizon: 0,
            episodic: false,
        }
    }

    /// A new task under `setting`: nothing observed, the schedule restarted (blocks of
    /// [`plan_length`]), a new planning stream.
    pub fn start_task(&mut self, plan_horizon: usize, setting: Setting, rng: &mut Rng) {
        self.gamma = setting.gamma;
        self.horizon = setting.horizon;
        self.staged.restart_with(plan_length(plan_horizon, setting, self.episodic));
        self.exp.clear();
        self.rng = planning_stream(rng);
    }

    /// A new episode: blocks of [`episode_length`] from stage 0, a plan due.
    pub fn start_episode(&mut self, plan_horizon: usize) {
        if !self.episodic {
            self.episodic = true;
            self.staged.restart_with(episode_length(plan_horizon, self.horizon));
        }
        self.staged.blocks.restart();
    }

    /// Whether a plan is due before the next decision (a block starts).
    #[inline]
    pub fn due(&self) -> bool {
        self.staged.blocks.due
    }

    /// The plan just written into `staged.q` holds until the next block start.
    #[inline]
    pub fn planned(&mut self) {
        self.staged.blocks.due = false;
    }

    /// Counts one step's transition (only its reward when `reward_only`: TabulaRL's last step of
    /// a block) and moves the schedule on.
    #[inline]
    pub fn observe(&mut self, t: &Transition, reward_only: bool) {
        if reward_only {
            self.exp.observe_reward_only(t);
        } else {
            self.exp.observe(t);
        }
        self.staged.blocks.advance();
    }

    /// Whether the next step is the last of its block.
    #[inline]
    pub fn at_last_stage(&self) -> bool {
        self.staged.blocks.stage + 1 == self.staged.blocks.length
    }
}

/// The planners on an [`AbsorbingModel`] (MBIE-EB, R-max): a task's visit statistics and the
/// model they build, solved again before the next decision whenever a pair's entry changed.
#[derive(Clone, Debug)]
pub struct AbsorbingPlanner {
    pub exp: Experience,
    model: AbsorbingModel,
    gamma: f64,
    stale: bool,
    /// Solves since the task started.
    pub solves: u64,
}

impl AbsorbingPlanner {
    pub fn new(prior: &Fdm, gamma: f64) -> Self {
        let exp = Experience::new(prior);
        let model = AbsorbingModel::new(exp.n_states, exp.n_actions);
        Self { exp, model, gamma, stale: true, solves: 0 }
    }

    /// A new task under `gamma`: nothing observed, every pair unknown.
    pub fn start_task(&mut self, gamma: f64) {
        self.gamma = gamma;
        self.exp.clear();
        let r_hi = self.exp.r_hi;
        self.model.set_top_reward(r_hi);
        for row in 0..self.exp.n_states * self.exp.n_actions {
            self.model.set_unknown(row, r_hi);
        }
        self.stale = true;
        self.solves = 0;
    }

    /// Makes `row` known ([`AbsorbingModel::set_known`] with the statistics so far); the model is
    /// solved again before the next decision.
    pub fn set_known(&mut self, row: usize, rewards: RewardModel, bonus: f64) {
        self.model.set_known(row, &self.exp, rewards, bonus);
        self.stale = true;
    }

    /// Q(state, ·) of the model as it stands, solved first if it changed.
    pub fn q_row(&mut self, state: usize) -> &[f64] {
        if self.stale {
            self.model.solve(self.gamma);
            self.stale = false;
            self.solves += 1;
        }
        self.model.q_row(state)
    }
}

/// A baseline that acts greedily on a Q table it plans (again) when a plan is due: its decisions
/// and their probabilities, the same for the five tabular planners (OPSRL, RLSVI, UCB Q-learning,
/// MBIE-EB, R-max).
pub trait GreedyOnPlan {
    /// `Q(state, ·)` of the plan in force, planned first when one is due.
    fn planned_q_row(&mut self, state: usize) -> Result<&[f64]>;

    /// The greedy action, ties broken at random with `rng`.
    fn act_greedily(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(argmax_random_tie(self.planned_q_row(state)?, rng))
    }

    /// The greedy policy's probabilities (ties shared) into `out`.
    fn greedy_policy(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        greedy_probabilities(self.planned_q_row(state)?, out);
        Ok(())
    }
}

/// A private planning stream, seeded from the agent's stream at every task start, so that a plan
/// drawn lazily by `action_probabilities` is the very plan the next `act` would draw.
pub fn planning_stream(agent_rng: &mut Rng) -> Rng {
    Rng::seed_from_u64(agent_rng.next_u64())
}

/// The model MBIE-EB and R-max solve: the S states plus an absorbing state `G = S` paying the
/// largest reward under every action. A pair the agent treats as unknown moves to `G` with
/// probability 1 (so its value is `r_hi / (1 - gamma)`, the most any policy earns); a known pair
/// follows its empirical transitions, with the known or estimated rewards and an optional bonus.
/// Solved by the benchmark's Guez value iteration ([`ValueIterationWorkspace`]), so its work is
/// counted as the other agents' value iterations are.
#[derive(Clone, Debug)]
pub struct AbsorbingModel {
    n_states: usize,
    n_actions: usize,
    transitions: Vec<f64>,
    rewards: Vec<f64>,
    support: RowSupports,
    bonus: Vec<f64>,
    values: Vec<f64>,
    policy: Vec<usize>,
    workspace: ValueIterationWorkspace,
    /// Q of the real pairs (S * A), one backup of the converged values.
    q: Vec<f64>,
}

impl AbsorbingModel {
    pub fn new(n_states: usize, n_actions: usize) -> Self {
        let (ns, na) = (n_states + 1, n_actions);
        let mut model = Self {
            n_states,
            n_actions,
            transitions: vec![0.0; ns * na * ns],
            rewards: vec![0.0; ns * na * ns],
            support: RowSupports::from_table(ns, na, &vec![0.0; ns * na * ns]),
            bonus: vec![0.0; ns * na],
            values: vec![0.0; ns],
            policy: vec![0; ns],
            workspace: ValueIterationWorkspace::new(ns, na),
            q: vec![0.0; n_states * n_actions],
        };
        for a in 0..na {
            let row = n_states * na + a;
            model.transitions[row * ns + n_states] = 1.0;
            model.support.insert(row, n_states);
        }
        model
    }

    /// Sets the absorbing state's reward (the largest reward of the table).
    pub fn set_top_reward(&mut self, r_hi: f64) {
        let ns = self.n_states + 1;
        for a in 0..self.n_actions {
            let row = self.n_states * self.n_actions + a;
            self.rewards[row * ns + self.n_states] = r_hi;
        }
    }

    /// Makes `row` unknown: to `G` with probability 1, paying the absorbing state's reward.
    pub fn set_unknown(&mut self, row: usize, r_hi: f64) {
        let ns = self.n_states + 1;
        self.transitions[row * ns..(row + 1) * ns].fill(0.0);
        self.transitions[row * ns + self.n_states] = 1.0;
        self.rewards[row * ns + self.n_states] = r_hi;
        self.support.insert(row, self.n_states);
        self.bonus[row] = 0.0;
    }

    /// Makes `row` known: its empirical transitions with the known rewards (or, under learned
    /// rewards, the observed mean on every next state), plus `bonus`.
    pub fn set_known(&mut self, row: usize, experience: &Experience, rewards: RewardModel, bonus: f64) {
        let ns = self.n_states + 1;
        let n = experience.visits(row);
        let (counts, known) = (experience.counts_row(row), experience.known_row(row));
        let mean = experience.observed_mean(row);
        self.transitions[row * ns + self.n_states] = 0.0;
        for &y in experience.seen(row) {
            let (y, i) = (y as usize, row * ns + y as usize);
            self.transitions[i] = counts[y] / n;
            self.rewards[i] = match rewards {
                RewardModel::Known => known[y],
                RewardModel::Learned => mean,
            };
            self.support.insert(row, y);
        }
        self.bonus[row] = bonus;
    }

    /// Solves the model and stores Q of the real pairs.
    pub fn solve(&mut self, gamma: f64) {
        let ns = self.n_states + 1;
        let view = TabularView {
            n_states: ns,
            n_actions: self.n_actions,
            transitions: &self.transitions,
            rewards: &self.rewards,
            support: &self.support,
        };
        self.workspace.solve(view, Some(&self.bonus), gamma, GUEZ_VI_EPSILON, &mut self.values, &mut self.policy);
        for (row, slot) in self.q.iter_mut().enumerate() {
            let base = row * ns;
            let mut value = self.bonus[row];
            for &y in self.support.row(row) {
                let i = base + y as usize;
                value += self.transitions[i] * (self.rewards[i] + gamma * self.values[y as usize]);
            }
            *slot = value;
        }
        count_sweep(self.q.len(), 0);
    }

    /// Q(state, ·) of the last solve.
    #[inline]
    pub fn q_row(&self, state: usize) -> &[f64] {
        &self.q[state * self.n_actions..(state + 1) * self.n_actions]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_length_defaults_to_the_effective_horizon() {
        assert_eq!(block_length(0, 0.95), 20);
        assert_eq!(block_length(0, 0.9), 10);
        assert_eq!(block_length(0, 0.0), 1);
        assert_eq!(block_length(7, 0.95), 7);
        assert!((discounted_steps(0.5, 3) - 1.75).abs() < 1e-15);
    }

    #[test]
    fn absorbing_state_values_an_unknown_pair_at_the_most_any_policy_earns() {
        let mut m = AbsorbingModel::new(2, 2);
        m.set_top_reward(3.0);
        for row in 0..4 {
            m.set_unknown(row, 3.0);
        }
        m.solve(0.9);
        for &q in &m.q {
            assert!((q - 30.0).abs() < 1e-2, "{q}");
        }
    }
}
