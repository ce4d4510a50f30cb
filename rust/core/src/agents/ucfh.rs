//! UCFH (Dann & Brunskill 2015, "Sample Complexity of Episodic Fixed-Horizon Reinforcement
//! Learning"), run in blocks of H steps (docs/baselines.md, "UCFH").
//!
//! At each block start (each episode start in the episodic protocol), a backward induction over
//! the H stages of the block with `V_H = 0`:
//! `Q_h(s, a) = r̃(s, a) + max_{p in P(s, a)} sum_y p(y) w_{h+1}(y)`, `w_{h+1} = gamma V_{h+1}`
//! (plus `R(s, a, y)` under known rewards, with no `r̃` term), `V_h = max_a Q_h`. Greedy on `Q_h` at
//! stage h, ties uniformly at random.
//!
//! # Confidence sets
//! `P(s, a)` bounds each next-state probability separately, `p(y) in [lo(y), hi(y)]`, and the
//! maximisation runs over the distributions within those bounds. With `n = n(s, a)`,
//! `p̂ = n(s, a, y) / n`, `sigma = sqrt(p̂ (1 - p̂))` and `L = ln(6 / delta_1)`, the paper's set
//! (its convex hull, which is all the optimistic maximisation needs) intersects
//! * Hoeffding: `|p - p̂| <= sqrt(L / (2 n))`;
//! * empirical Bernstein: `|p - p̂| <= sigma sqrt(2 L / n) + 7 L / (3 (n - 1))`;
//! * the deviation of the standard deviation, `|sqrt(p (1 - p)) - sigma| <= sqrt(2 L / (n - 1))`,
//!   whose lower side keeps p away from 0 and 1 when `sigma` exceeds that width (the upper side cuts
//!   a hole in the interval, which the convex hull fills back);
//!
//! and is `[0, 1]` while `n <= 1`. `delta_1 = delta / (2 U_max C)` with `C = S` (the agent does not
//! know how many successors a pair has), `U_max = S A log2(S H / w_min)` and `w_min = epsilon / (4 H S)`.
//!
//! # Inner maximisation
//! Every next state starts at `lo(y)`; the mass left, `1 - sum_y lo(y)`, goes to the states in
//! decreasing order of `w`, each up to `hi(y)` ([`optimistic_row`]). The bounds contain `p̂`, so
//! `sum lo <= 1 <= sum hi` and the result is a probability vector: the exact maximum of a linear
//! function over a box cut by the simplex.
//!
//! # Rewards
//! The paper takes the rewards as known (`rewards = "known"`). Under learned rewards
//! `r̃ = min(r_hi, r̂ + scale sqrt(L / (2 n_r)))`, `r_hi` before the first observation (a Hoeffding
//! bound at the same `delta_1`, bbrl's completion of the paper).
//!
//! # `reference = "tabularl"` (TabulaRL's `UCFH`; docs/baselines.md, Reference settings)
//! With `k` the 1-based plan index: `P̂(y) = (1e-5 + n(s, a, y)) / (1e-5 S + n)` (uniform when
//! unvisited), `n' = max(1, n + 1e-5 (S - 1))`, `m = max(1, n' - 1)`; the bounds are the empirical
//! Bernstein ones alone, `|p - p̂| <= sigma sqrt(2 L / m) + 7 L / (3 m)`, and the standard-deviation
//! bound applies only when `(sigma - sqrt(2 L / m))^2 > 0.2499` (practically never);
//! `r̃ = sum r / (1e-4 + n_r) + sqrt(4 ln(2 S A (k + 1) / delta) / max(1, n_r))`, unclipped; the
//! filling stops as soon as less than 0.001 of mass is left to place (the row may sum to 0.999);
//! the transition of a block's last step is not counted (its reward is).

use super::common::{argmax_random_tie, greedy_probabilities};
use super::reward_rows::{BestFirst, Ties};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    count_sweep, plan_length, staged_memory, Blocks, Experience, RewardModel, TabularlReference, PLAN_HORIZON, REWARDS,
    TABULARL_REFERENCE,
};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "ucfh",
    display: "UCFH",
    params: &[
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.05)),
            range: Range::between(1e-9, 0.5),
            doc: "failure probability of the confidence sets (through delta_1 = delta / (2 U_max S))",
        },
        ParamSpec {
            name: "epsilon",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.1)),
            range: Range::between(1e-9, 1.0),
            doc: "the paper's accuracy, in units of the reward range; it enters only delta_1, through \
                  w_min = epsilon / (4 H S)",
        },
        PLAN_HORIZON,
        REWARDS,
        TABULARL_REFERENCE,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &["plan_horizon"],
    examples: &[
        Example { doc: "quick: the paper's sets, known rewards", params: &[] },
        Example {
            doc: "wider sets, short blocks, learned rewards",
            params: &[
                ("delta", ParamDefault::Float(0.01)),
                ("epsilon", ParamDefault::Float(0.5)),
                ("plan_horizon", ParamDefault::Int(5)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
        Example {
            doc: "TabulaRL's UCFH",
            params: &[("rewards", ParamDefault::Text("learned")), ("reference", ParamDefault::Text("tabularl"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        let rewards = RewardModel::read(r)?;
        let reference = TabularlReference::read(r, rewards)?;
        Ok(Box::new(
            Ucfh::new(r.float("delta")?, r.float("epsilon")?, r.count("plan_horizon")?, rewards)?
                .with_reference(reference),
        ))
    },
};

/// TabulaRL's prior weights in its UCFH: its constructor asks for 1e-9 on transitions, but the
/// UCRL2 constructor it calls drops the argument and sets UCRL2's 1e-5 (and 1e-4 on rewards).
const TABULARL_ALPHA0: f64 = 1e-5;
const TABULARL_TAU0: f64 = 1e-4;
/// TabulaRL stops placing mass once less than this is left.
const TABULARL_LEFTOVER: f64 = 1e-3;

/// `delta_1 = delta / (2 U_max S)`, `U_max = S A log2(S H / w_min)`, `w_min = epsilon / (4 H S)`:
/// the failure probability of each confidence interval.
pub fn delta_1(delta: f64, epsilon: f64, n_states: usize, n_actions: usize, horizon: usize) -> f64 {
    let (s, a, h) = (n_states as f64, n_actions as f64, horizon as f64);
    let w_min = epsilon / (4.0 * h * s);
    let u_max = s * a * (s * h / w_min).log2();
    delta / (2.0 * u_max * s)
}

/// The paper's interval for one next-state probability estimated at `p_hat` from `n` samples,
/// with `log_term = ln(6 / delta_1)` (module doc). Always contains `p_hat`.
pub fn paper_interval(p_hat: f64, n: f64, log_term: f64) -> (f64, f64) {
    if n <= 1.0 {
        return (0.0, 1.0);
    }
    let sigma = (p_hat * (1.0 - p_hat)).max(0.0).sqrt();
    let hoeffding = (log_term / (2.0 * n)).sqrt();
    let bernstein = sigma * (2.0 * log_term / n).sqrt() + 7.0 * log_term / (3.0 * (n - 1.0));
    let width = hoeffding.min(bernstein);
    let (mut lo, mut hi) = ((p_hat - width).max(0.0), (p_hat + width).min(1.0));
    let sigma_width = (2.0 * log_term / (n - 1.0)).sqrt();
    if sigma > sigma_width {
        // p (1 - p) >= (sigma - sigma_width)^2: p within v of 1/2.
        let v = (0.25 - (sigma - sigma_width).powi(2)).max(0.0).sqrt();
        lo = lo.max(0.5 - v);
        hi = hi.min(0.5 + v);
    }
    // Rounding must not push p_hat out (the row's bounds must admit a distribution).
    (lo.min(p_hat), hi.max(p_hat))
}

/// TabulaRL's interval (its `compute_confidence`) for `p_hat` with the observation count `n_obs`
/// it uses (`max(1, n + 1e-5 (S - 1))`), `log_term = ln(6 / delta_1)` (module doc).
pub fn tabularl_interval(p_hat: f64, n_obs: f64, log_term: f64) -> (f64, f64) {
    let m = (n_obs - 1.0).max(1.0);
    let sigma = (p_hat * (1.0 - p_hat)).max(0.0).sqrt();
    let k1 = (2.0 * log_term / m).sqrt();
    let k2 = sigma * k1 + 7.0 / (3.0 * m) * log_term;
    let (mut var_lo, mut var_hi) = (0.0, 1.0);
    let c1 = (sigma - k1) * (sigma - k1);
    if sigma - k1 > 1e-5 && c1 > 0.2499 {
        let root = (1.0 - 4.0 * c1).max(0.0).sqrt();
        (var_lo, var_hi) = (0.5 * (1.0 - root), 0.5 * (1.0 + root));
    }
    if p_hat < var_lo || p_hat > var_hi {
        (var_lo, var_hi) = (0.0, 1.0);
    }
    (var_lo.max(p_hat - k2).max(0.0), var_hi.min(p_hat + k2).min(1.0))
}

/// When the filling of [`optimistic_row`] stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Every bit of mass is placed (the paper's maximisation).
    None,
    /// TabulaRL's: stop once less than 0.001 is left.
    Tabularl,
}

/// The optimistic distribution of one row, written into `p`, and its value `sum_y p(y) w(y)`:
/// every state at `lo`, then the mass left, `slack = 1 - sum lo`, given to the states in the
/// reverse of `order` (which lists the states by increasing `w`), each up to `hi`.
pub fn optimistic_row(
    lo: &[f64],
    hi: &[f64],
    w: &[f64],
    order: &[u32],
    slack: f64,
    rule: Leftover,
    p: &mut [f64],
) -> f64 {
    p.copy_from_slice(lo);
    let mut value: f64 = lo.iter().zip(w).map(|(p, w)| p * w).sum();
    let mut slack = slack;
    for &y in order.iter().rev() {
        let y = y as usize;
        let add = slack.min(hi[y] - lo[y]).max(0.0);
        p[y] += add;
        value += add * w[y];
        slack -= add;
        let done = match rule {
            Leftover::None => slack <= 0.0,
            Leftover::Tabularl => slack < TABULARL_LEFTOVER,
        };
        if done {
            break;
        }
    }
    value
}

/// Sorts `order` (every state) by increasing `w`, ties by index: a total order, so the unstable
/// sort (which never allocates) is exact.
fn sort_by_value(order: &mut [u32], w: &[f64]) {
    for (i, o) in order.iter_mut().enumerate() {
        *o = i as u32;
    }
    order.sort_unstable_by(|&x, &y| w[x as usize].total_cmp(&w[y as usize]).then(x.cmp(&y)));
}

/// UCFH (module doc).
#[derive(Clone, Debug)]
pub struct Ucfh {
    delta: f64,
    epsilon: f64,
    plan_horizon: usize,
    rewards: RewardModel,
    reference: TabularlReference,
    state: Option<UcfhState>,
}

#[derive(Clone, Debug)]
struct UcfhState {
    exp: Experience,
    gamma: f64,
    blocks: Blocks,
    /// `ln(6 / delta_1)` at the block length.
    log_term: f64,
    /// `Q_h(s, a)`, `(h * S + s) * A + a`.
    q: Vec<f64>,
    /// The bounds of the current plan, `(s * A + a) * S + y`, the mass left above the lower
    /// bounds and the optimistic reward of each pair (0 under known rewards).
    lo: Vec<f64>,
    hi: Vec<f64>,
    slack: Vec<f64>,
    r_opt: Vec<f64>,
    v_next: Vec<f64>,
    v_here: Vec<f64>,
    w: Vec<f64>,
    order: Vec<u32>,
    p: Vec<f64>,
    /// Plans made in the task (TabulaRL's episode index).
    plans: u64,
    /// The task's horizon, and whether the protocol starts episodes (the plan then spans the
    /// episode: [`plan_length`]).
    horizon: usize,
    episodic: bool,
    /// The known reward table's structure on large models (the paper's setting under known
    /// rewards; `None`: the dense loops), and per row whether its unseen next states' lower
    /// bound is 0, which lets the row skip them (every row but pathological ones).
    structure: Option<BestFirst>,
    floor_zero: Vec<bool>,
}

impl Ucfh {
    pub fn new(delta: f64, epsilon: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        if !(1e-9..=1.0).contains(&epsilon) {
            return Err(invalid!("epsilon must be in [1e-9, 1], got {epsilon}"));
        }
        Ok(Self { delta, epsilon, plan_horizon, rewards, reference: TabularlReference::Paper, state: None })
    }

    /// The same agent following `reference`'s choices (module doc).
    pub fn with_reference(mut self, reference: TabularlReference) -> Self {
        self.reference = reference;
        self
    }

    fn state(&mut self) -> Result<&mut UcfhState> {
        self.state.as_mut().ok_or_else(|| not_trained("UCFH"))
    }

    fn ensure_planned(&mut self) -> Result<()> {
        let (delta, rewards, reference) = (self.delta, self.rewards, self.reference);
        let st = self.state()?;
        if st.blocks.due {
            st.plan(delta, rewards, reference);
        }
        Ok(())
    }

    fn q_row(&self, state: usize) -> &[f64] {
        let st = self.state.as_ref().expect("planned");
        let na = st.exp.n_actions;
        let start = (st.blocks.stage * st.exp.n_states + state) * na;
        &st.q[start..start + na]
    }

    /// Sizes the tables for `setting` (allocates only when the block length changes).
    fn size(&mut self, setting: Setting) -> Result<()> {
        let (delta, epsilon, requested) = (self.delta, self.epsilon, self.plan_horizon);
        let st = self.state()?;
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        let length = plan_length(requested, setting, st.episodic);
        st.gamma = setting.gamma;
        st.horizon = setting.horizon;
        if st.blocks.length != length || st.q.is_empty() {
            st.q = vec![0.0; length * ns * na];
        }
        st.blocks = Blocks::new(length);
        st.log_term = (6.0 / delta_1(delta, epsilon, ns, na, length)).ln();
        st.exp.clear();
        st.plans = 0;
        Ok(())
    }
}

impl UcfhState {
    /// The bounds and optimistic rewards of every pair, then the backward induction (module doc).
    fn plan(&mut self, delta: f64, rewards: RewardModel, reference: TabularlReference) {
        let (ns, na, len) = (self.exp.n_states, self.exp.n_actions, self.blocks.length);
        let s = ns as f64;
        let scale = self.exp.scale();
        let reward_log = (2.0 * s * na as f64 * (self.plans as f64 + 2.0) / delta).ln();
        let known = rewards == RewardModel::Known && reference == TabularlReference::Paper;
        for row in 0..ns * na {
            let n = self.exp.visits(row);
            let counts = self.exp.counts_row(row);
            let (lo, hi) = (&mut self.lo[row * ns..(row + 1) * ns], &mut self.hi[row * ns..(row + 1) * ns]);
            let mut placed = 0.0;
            if known && self.structure.is_some() {
                // Every unseen next state has the interval of p̂ = 0 (the dense loop's `0 / n`),
                // computed once; a lower bound of 0 adds nothing to `placed` (x + 0 = x), so only
                // the seen states are summed, in the same order.
                let (l0, h0) = paper_interval(0.0, n, self.log_term);
                self.floor_zero[row] = l0 == 0.0;
                if self.floor_zero[row] {
                    lo.fill(l0);
                    hi.fill(h0);
                    for &y in self.exp.seen(row) {
                        let y = y as usize;
                        let p_hat = if n > 0.0 { counts[y] / n } else { 0.0 };
                        let (l, h) = paper_interval(p_hat, n, self.log_term);
                        (lo[y], hi[y]) = (l, h);
                        placed += l;
                    }
                    self.slack[row] = 1.0 - placed;
                    self.r_opt[row] = 0.0;
                    continue;
                }
            }
            for y in 0..ns {
                let (l, h) = match reference {
                    TabularlReference::Paper => {
                        let p_hat = if n > 0.0 { counts[y] / n } else { 0.0 };
                        paper_interval(p_hat, n, self.log_term)
                    }
                    TabularlReference::Tabularl => {
                        let p_hat = (TABULARL_ALPHA0 + counts[y]) / (TABULARL_ALPHA0 * s + n);
                        let n_obs = (n + TABULARL_ALPHA0 * (s - 1.0)).max(1.0);
                        tabularl_interval(p_hat, n_obs, self.log_term)
                    }
                };
                (lo[y], hi[y]) = (l, h);
                placed += l;
            }
            self.slack[row] = 1.0 - placed;
            let n_r = self.exp.reward_visits(row);
            self.r_opt[row] = match (reference, rewards) {
                (TabularlReference::Tabularl, _) => {
                    self.exp.reward_sum(row) / (TABULARL_TAU0 + n_r) + (4.0 * reward_log / n_r.max(1.0)).sqrt()
                }
                (TabularlReference::Paper, RewardModel::Known) => 0.0,
                (TabularlReference::Paper, RewardModel::Learned) if n_r == 0.0 => self.exp.r_hi,
                (TabularlReference::Paper, RewardModel::Learned) => {
                    let width = scale * (self.log_term / (2.0 * n_r)).sqrt();
                    (self.exp.observed_mean(row) + width).min(self.exp.r_hi)
                }
            };
        }
        let rule = match reference {
            TabularlReference::Paper => Leftover::None,
            TabularlReference::Tabularl => Leftover::Tabularl,
        };
        self.v_next.fill(0.0);
        for h in (0..len).rev() {
            if let (true, Some(k)) = (known, self.structure.as_mut()) {
                k.update(self.gamma, &self.v_next);
            }
            if !known {
                // w = gamma V_{h+1} is the same for every row: one sort per stage.
                for (w, &v) in self.w.iter_mut().zip(&self.v_next) {
                    *w = self.gamma * v;
                }
                sort_by_value(&mut self.order, &self.w);
            }
            for st in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for act in 0..na {
                    let row = st * na + act;
                    if let (true, Some(k), true) = (known, self.structure.as_mut(), self.floor_zero[row]) {
                        let bounds = row * ns..(row + 1) * ns;
                        let value = structured_row_value(
                            k,
                            &self.exp,
                            row,
                            self.gamma,
                            &self.v_next,
                            (&self.lo[bounds.clone()], &self.hi[bounds]),
                            self.slack[row],
                        );
                        let value = self.r_opt[row] + value;
                        self.q[(h * ns + st) * na + act] = value;
                        best = best.max(value);
                        continue;
                    }
                    if known {
                        let table = self.exp.known_row(row);
                        for ((w, &r), &v) in self.w.iter_mut().zip(table).zip(&self.v_next) {
                            *w = r + self.gamma * v;
                        }
                        sort_by_value(&mut self.order, &self.w);
                    }
                    let bounds = row * ns..(row + 1) * ns;
                    let value = self.r_opt[row]
                        + optimistic_row(
                            &self.lo[bounds.clone()],
                            &self.hi[bounds],
                            &self.w,
                            &self.order,
                            self.slack[row],
                            rule,
                            &mut self.p,
                        );
                    self.q[(h * ns + st) * na + act] = value;
                    best = best.max(value);
                }
                self.v_here[st] = best;
            }
            std::mem::swap(&mut self.v_next, &mut self.v_here);
            self.count_sweep(known);
        }
        self.blocks.due = false;
        self.plans += 1;
    }

    /// Counts one stage: a dense row reads every next state; a structured row its support, its
    /// exceptions and the states it fills (counted as its support again: the fill stops within
    /// a few states of the best), plus the classes' orders.
    fn count_sweep(&self, known: bool) {
        let (ns, na) = (self.exp.n_states, self.exp.n_actions);
        match (&self.structure, known) {
            (Some(k), true) => {
                let rows = ns * na;
                let entries: usize = (0..rows)
                    .map(|row| {
                        if self.floor_zero[row] {
                            2 * self.exp.seen(row).len() + k.rows().exceptions(row).len() + 1
                        } else {
                            ns
                        }
                    })
                    .sum();
                count_sweep(rows, entries + k.rows().n_classes() * ns);
            }
            _ => count_sweep(ns * na, ns * na * ns),
        }
    }
}

/// The optimistic value of `row` (lower bounds of 0 off its support, `bounds` its lower and upper
/// bounds, `slack` the mass above them) under known rewards, from the structure's orders for `v`:
/// the value of the lower bounds over the support, then the slack placed on the next states from
/// the best down, each up to its upper bound. The same operations in the same order as
/// [`optimistic_row`] on the dense `w` sorted by [`sort_by_value`] (the unseen states' terms are
/// `0 * w`, which leave a sum unchanged), so the same bits.
fn structured_row_value(
    k: &mut BestFirst,
    exp: &Experience,
    row: usize,
    gamma: f64,
    v: &[f64],
    (lo, hi): (&[f64], &[f64]),
    slack: f64,
) -> f64 {
    let known = exp.known_row(row);
    let mut value: f64 =
        exp.seen(row).iter().map(|&y| lo[y as usize] * (known[y as usize] + gamma * v[y as usize])).sum();
    let mut slack = slack;
    k.visit(row, known, gamma, v, |y, w| {
        let add = slack.min(hi[y] - lo[y]).max(0.0);
        value += add * w;
        slack -= add;
        slack > 0.0
    });
    value
}

impl Agent for Ucfh {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        format!(
            "UCFH (delta = {}, epsilon = {}, H = {h}{}{})",
            self.delta,
            self.epsilon,
            self.rewards.label(),
            self.reference.label()
        )
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let exp = Experience::new(prior);
        let (ns, na) = (exp.n_states, exp.n_actions);
        let structure = match (self.rewards, self.reference) {
            (RewardModel::Known, TabularlReference::Paper) => {
                BestFirst::for_table(&prior.rewards_arc(), ns * na, ns, Ties::HighIndexFirst)
            }
            _ => None,
        };
        self.state = Some(UcfhState {
            structure,
            floor_zero: vec![false; ns * na],
            exp,
            gamma: setting.gamma,
            blocks: Blocks::new(1),
            log_term: 0.0,
            q: Vec::new(),
            lo: vec![0.0; ns * na * ns],
            hi: vec![0.0; ns * na * ns],
            slack: vec![0.0; ns * na],
            r_opt: vec![0.0; ns * na],
            v_next: vec![0.0; ns],
            v_here: vec![0.0; ns],
            w: vec![0.0; ns],
            order: (0..ns as u32).collect(),
            p: vec![0.0; ns],
            plans: 0,
            horizon: setting.horizon,
            episodic: false,
        });
        self.size(setting)
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.size(context.setting)
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        if !st.episodic {
            // The first episode: the plan spans the episode from now on (nothing is learned yet).
            st.episodic = true;
            let setting = Setting { gamma: st.gamma, horizon: st.horizon };
            self.size(setting)?;
        }
        self.state()?.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.ensure_planned()?;
        Ok(argmax_random_tie(self.q_row(state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let reference = self.reference;
        let st = self.state()?;
        // TabulaRL counts the last step's reward, not its transition (module doc).
        if reference == TabularlReference::Tabularl && st.blocks.stage + 1 == st.blocks.length {
            st.exp.observe_reward_only(&t);
        } else {
            st.exp.observe(&t);
        }
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.ensure_planned()?;
        greedy_probabilities(self.q_row(state), out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        let bytes = staged_memory(1, self.plan_horizon, n_states, n_actions, setting);
        MemoryNeed { bytes, sized_by: "stage tables (parameter plan_horizon, or the horizon when it is 0)" }
    }

    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::baseline_test_support::{deterministic_chain, learns_chain};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn delta_1_at_known_sizes() {
        // S = 6, A = 2, H = 20, epsilon = 0.1: w_min = 0.1 / 480, S H / w_min = 576000.
        let u_max = 12.0 * 576_000f64.log2();
        assert!((delta_1(0.05, 0.1, 6, 2, 20) - 0.05 / (12.0 * u_max)).abs() < 1e-18);
    }

    #[test]
    fn paper_interval_at_hand_computed_values() {
        // p̂ = 0.5, n = 100, L = 2: Hoeffding sqrt(2 / 200) = 0.1 is below the Bernstein width
        // 0.5 sqrt(4 / 100) + 14 / 297; the variance bound (sigma - sqrt(4 / 99))^2 leaves
        // [0.099, 0.901], wider.
        let (lo, hi) = paper_interval(0.5, 100.0, 2.0);
        assert!(close(lo, 0.4) && close(hi, 0.6), "{lo} {hi}");
        // p̂ = 0.1, n = 400: Bernstein 0.3 sqrt(4 / 400) + 14 / 1197 = 0.03 + 0.0116959 < Hoeffding 0.05.
        let width = 0.03 + 14.0 / 1197.0;
        let (lo, hi) = paper_interval(0.1, 400.0, 2.0);
        assert!(close(lo, 0.1 - width) && close(hi, 0.1 + width), "{lo} {hi}");
        // Unseen next state (p̂ = 0), n = 50, L = 3: Bernstein 7 / 49 is below Hoeffding sqrt(0.03).
        let (lo, hi) = paper_interval(0.0, 50.0, 3.0);
        assert!(lo == 0.0 && close(hi, 7.0 / 49.0), "{lo} {hi}");
        // p̂ = 0.5, n = 3, L = 0.01: Hoeffding sqrt(0.01 / 6) binds; the standard-deviation bound
        // (sigma - sqrt(0.01))^2 = 0.16 leaves [0.2, 0.8], wider.
        let (lo, hi) = paper_interval(0.5, 3.0, 0.01);
        let h = (0.01f64 / 6.0).sqrt();
        assert!(close(lo, 0.5 - h) && close(hi, 0.5 + h), "{lo} {hi}");
        // Up to one sample the set is the whole interval.
        assert_eq!(paper_interval(0.3, 1.0, 2.0), (0.0, 1.0));
        assert_eq!(paper_interval(0.0, 0.0, 2.0), (0.0, 1.0));
    }

    #[test]
    fn tabularl_interval_at_hand_computed_values() {
        // n' = 101: m = 100, K1 = sqrt(2 L / 100), K2 = sigma K1 + 7 L / 300; no Hoeffding term.
        let l = 2.0;
        let k1 = (2.0f64 * l / 100.0).sqrt();
        let k2 = 0.5 * k1 + 7.0 * l / 300.0;
        let (lo, hi) = tabularl_interval(0.5, 101.0, l);
        assert!(close(lo, 0.5 - k2) && close(hi, 0.5 + k2), "{lo} {hi}");
        // One observation counts as m = 1 (not an unbounded interval): K2 = 0.4 sqrt(0.2) + 0.7 / 3.
        let k2 = 0.4 * 0.2f64.sqrt() + 0.7 / 3.0;
        let (lo, hi) = tabularl_interval(0.2, 1.0, 0.1);
        assert!(close(lo, 0.0_f64.max(0.2 - k2)) && close(hi, 0.2 + k2), "{lo} {hi}");
    }

    #[test]
    fn optimistic_row_fills_the_best_states_within_the_bounds() {
        let (lo, hi, w) = ([0.1, 0.2, 0.0], [0.5, 0.6, 0.3], [1.0, 3.0, 2.0]);
        let mut order = [0u32; 3];
        sort_by_value(&mut order, &w);
        assert_eq!(order, [0, 2, 1]);
        let mut p = [0.0; 3];
        let value = optimistic_row(&lo, &hi, &w, &order, 0.7, Leftover::None, &mut p);
        // State 1 (w = 3) rises to its bound 0.6, state 2 takes the remaining 0.3.
        let expected = [0.1, 0.6, 0.3];
        assert!(p.iter().zip(&expected).all(|(a, b)| close(*a, *b)), "{p:?}");
        assert!(close(value, 0.1 + 1.8 + 0.6), "{value}");
        assert!(close(p.iter().sum::<f64>(), 1.0));
        assert!(p.iter().zip(lo.iter().zip(&hi)).all(|(p, (l, h))| l <= p && p <= h));
    }

    #[test]
    fn optimistic_distribution_is_a_probability_vector_within_the_paper_bounds() {
        // Rows estimated from a few counts: the bounds contain p̂, the result sums to 1 and respects them.
        let w = [0.3, -1.0, 2.5, 0.0, 1.2];
        let mut order = [0u32; 5];
        sort_by_value(&mut order, &w);
        for counts in [[3.0, 0.0, 1.0, 0.0, 6.0], [0.0, 2.0, 0.0, 0.0, 0.0], [40.0, 25.0, 1.0, 30.0, 4.0]] {
            let n: f64 = counts.iter().sum();
            let (mut lo, mut hi) = ([0.0; 5], [0.0; 5]);
            for y in 0..5 {
                (lo[y], hi[y]) = paper_interval(counts[y] / n, n, 4.0);
                assert!(lo[y] <= counts[y] / n && counts[y] / n <= hi[y]);
            }
            let mut p = [0.0; 5];
            let value = optimistic_row(&lo, &hi, &w, &order, 1.0 - lo.iter().sum::<f64>(), Leftover::None, &mut p);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{p:?}");
            assert!(p.iter().zip(lo.iter().zip(&hi)).all(|(p, (l, h))| *l <= *p && *p <= *h + 1e-15));
            let empirical: f64 = counts.iter().zip(&w).map(|(c, w)| c / n * w).sum();
            assert!(value >= empirical - 1e-12 && close(value, p.iter().zip(&w).map(|(p, w)| p * w).sum()));
        }
    }

    #[test]
    fn tabularl_filling_leaves_less_than_a_thousandth_unplaced() {
        let (lo, hi, w) = ([0.2, 0.5, 0.0], [0.2, 0.7995, 1.0], [0.0, 2.0, 1.0]);
        let mut order = [0u32; 3];
        sort_by_value(&mut order, &w);
        let mut p = [0.0; 3];
        // State 1 takes 0.2995 of the 0.3 left; 0.0005 < 0.001 stays unplaced.
        let value = optimistic_row(&lo, &hi, &w, &order, 0.3, Leftover::Tabularl, &mut p);
        assert!(close(p[1], 0.7995) && p[2] == 0.0 && close(value, 1.599));
        // The paper's filling places it on state 2.
        let value = optimistic_row(&lo, &hi, &w, &order, 0.3, Leftover::None, &mut p);
        assert!(close(p[2], 0.0005) && close(value, 1.5995));
    }

    #[test]
    fn more_data_shrinks_the_bonus() {
        // A row seen n times, half to state 0 and half to state 1: the optimistic value over the
        // empirical one (0.5) falls with n, and every interval narrows.
        let w = [0.0, 1.0, 2.0];
        let mut order = [0u32; 3];
        sort_by_value(&mut order, &w);
        let bonus = |n: f64| {
            let p_hat = [0.5, 0.5, 0.0];
            let (mut lo, mut hi, mut p) = ([0.0; 3], [0.0; 3], [0.0; 3]);
            for y in 0..3 {
                (lo[y], hi[y]) = paper_interval(p_hat[y], n, 5.0);
            }
            optimistic_row(&lo, &hi, &w, &order, 1.0 - lo.iter().sum::<f64>(), Leftover::None, &mut p) - 0.5
        };
        let mut last = f64::INFINITY;
        for n in [2.0, 10.0, 100.0, 1e3, 1e4, 1e5] {
            let b = bonus(n);
            assert!(b < last && b > 0.0, "n = {n}: {b} after {last}");
            last = b;
        }
        assert!(last < 0.05, "{last}");
        assert!(bonus(1.0) == 1.5, "one sample: all the mass may sit on the best state");
    }

    #[test]
    fn unvisited_pairs_are_worth_the_best_next_state_and_plans_use_the_counts() {
        let mut agent = Ucfh::new(0.05, 0.1, 3, RewardModel::Known).unwrap();
        let (mdp, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent.act(0, &mut rng).unwrap();
        let st = agent.state.as_ref().unwrap();
        // Last stage, nothing seen: Q_2(s, a) = max_y R(s, a, y); (4, 1) pays 1, the left moves 0.05.
        let (ns, na) = (5, 2);
        assert!(close(st.q[(2 * ns + 4) * na + 1], 1.0) && close(st.q[2 * ns * na], 0.05));
        // Stage 1: R + 0.9 max V_2 with V_2 = (0.05, 0.05, 0.05, 0.05, 1): every pair can reach state 4.
        assert!(close(st.q[(ns + 4) * na + 1], 1.9) && close(st.q[ns * na], 0.9));
        // Once the pair (0, 0) is known to loop, its optimism fades.
        let mut env = crate::rng::stream(0, 1, 0);
        for _ in 0..3000 {
            agent.state.as_mut().unwrap().blocks.restart();
            let (y, r) = mdp.step(0, 0, &mut env);
            agent.observe(Transition { state: 0, action: 0, reward: r, next_state: y }, &mut rng).unwrap();
        }
        agent.state.as_mut().unwrap().blocks.restart();
        agent.act(0, &mut rng).unwrap();
        let st = agent.state.as_ref().unwrap();
        assert!(st.q[(ns) * na] < 0.05 + 0.9 * 0.3, "{}", st.q[ns * na]);
    }

    #[test]
    fn tabularl_setting_counts_the_last_reward_not_the_last_transition() {
        let mut agent =
            Ucfh::new(0.05, 0.1, 2, RewardModel::Learned).unwrap().with_reference(TabularlReference::Tabularl);
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        for _ in 0..2 {
            agent.observe(Transition { state: 0, action: 1, reward: 0.5, next_state: 1 }, &mut rng).unwrap();
        }
        let st = agent.state.as_ref().unwrap();
        assert_eq!((st.exp.visits(1), st.exp.reward_visits(1)), (1.0, 2.0));
        assert!(close(st.exp.reward_sum(1), 1.0));
    }

    #[test]
    fn parameters_are_checked() {
        for (delta, epsilon) in [(0.0, 0.1), (0.6, 0.1), (0.05, 0.0), (0.05, 1.5), (0.05, f64::NAN)] {
            assert!(Ucfh::new(delta, epsilon, 0, RewardModel::Known).is_err());
        }
        let example = Example { doc: "", params: &[("reference", ParamDefault::Text("tabularl"))] };
        let e = crate::agents::build("ucfh", &example.params()).err().expect("refused");
        assert!(e.to_string().contains("needs rewards = \"learned\""), "{e}");
    }

    #[test]
    fn structured_rows_plan_bit_for_bit_as_the_dense_loops() {
        use crate::agents::baseline_test_support::{decisions, structured_prior};
        let prior = structured_prior();
        for episodic in [false, true] {
            let run = |dense: bool| {
                let mut agent = Ucfh::new(0.05, 0.1, 0, RewardModel::Known).unwrap();
                decisions(
                    &mut agent,
                    &prior,
                    episodic,
                    |agent| {
                        let st = agent.state.as_mut().unwrap();
                        assert!(st.structure.is_some());
                        if dense {
                            st.structure = None;
                        }
                    },
                    |agent, s| agent.q_row(s).iter().map(|q| q.to_bits()).collect(),
                )
            };
            assert_eq!(run(false), run(true), "episodic: {episodic}");
            crate::agents::baseline_test_support::assert_no_allocation_on(
                &mut Ucfh::new(0.05, 0.1, 0, RewardModel::Known).unwrap(),
                &prior,
                episodic,
            );
        }
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut Ucfh::new(0.05, 0.1, 0, RewardModel::Known).unwrap(), 4000);
        learns_chain(&mut Ucfh::new(0.05, 0.1, 0, RewardModel::Learned).unwrap(), 4000);
        learns_chain(
            &mut Ucfh::new(0.05, 0.1, 0, RewardModel::Learned).unwrap().with_reference(TabularlReference::Tabularl),
            4000,
        );
    }
}
