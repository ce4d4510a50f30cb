//! UCRL2 (Jaksch, Ortner & Auer 2010, Algorithm 1 and Figure 2): in the discounted continuing
//! protocol, doubling epochs and discounted extended value iteration; in episodes, an H-stage
//! extended value iteration at every episode start (docs/baselines.md).
//!
//! # Epochs
//! Epoch k starts at step `t_k` (counted from 1) with the statistics frozen: `N_k(s, a)`,
//! `p̂ = n(s, a, ·) / max(1, N_k)` and `r̂ = R_k / max(1, N_k)`. The epoch ends after the step
//! whose pair's in-epoch count `nu(s, a)` reaches `max(1, N_k(s, a))` (the doubling rule tested
//! after the step, as Colosseum's `is_episode_end`: the plan depends on the observed history
//! only, so a query never decides when an epoch ends).
//!
//! # Confidence sets
//! `d_r = scale sqrt(7 ln(2 S A t_k / delta) / (2 max(1, N_k)))` and
//! `d_p = sqrt(14 S ln(2 A t_k / delta) / max(1, N_k))`; `r̃ = min(r_hi, r̂ + d_r)`. Under known
//! rewards `d_r = 0` and the table's `R(s, a, y)` enters the inner maximisation with the values.
//!
//! # Discounted extended value iteration
//! From `u = 0`: `u'(s) = max_a [r̃(s, a) + max_{p : ||p - p̂||_1 <= d_p} sum_y p(y) w(y)]` with
//! `w(y) = gamma u(y)` (plus `R(s, a, y)` under known rewards), until `max_s |u' - u|` falls
//! below `(1 - gamma) scale / sqrt(t_k)` (the average-reward span test of the paper has no
//! discounted counterpart; this bounds the values' error by `gamma scale / sqrt(t_k)`). The inner
//! maximisation is the paper's Figure 2: the best next state gets `min(1, p̂ + d_p / 2)` and the
//! excess is removed from the worst states first ([`inner_max`]). Greedy on the last backup's Q,
//! ties uniformly at random.
//!
//! # Episodes
//! Once the protocol starts episodes ([`Agent::start_episode`]; H is the setting's horizon), the
//! agent replans at every episode start, with the same confidence sets at `t_k` = the steps so
//! far + 1, by an H-stage extended value iteration `Q_h(s, a) = r̃ + max_p sum_y p(y) w_{h+1}(y)`,
//! `w_{h+1} = gamma V_{h+1}` (plus `R` under known rewards), `V_H = 0`, and plays `Q_h` at the
//! episode's step h: the "UCRL2 optimised for finite episodes" of Osband, Russo & Van Roy (2013).
//! The epochs are not used then (every episode starts a plan). `start_task` goes back to epochs.
//!
//! # `reference = "tabularl"` (TabulaRL's `UCRL2`; docs/baselines.md, Reference settings)
//! Always staged: one H-stage plan per episode (in the continuing protocol per block of
//! `ceil(1 / (1 - gamma))` steps), with TabulaRL's estimates and widths, `k` the 1-based plan
//! index and `L = ln(2 S A (k + 1) / delta)`:
//! `r̂ = sum r / (1e-4 + n_r)`, `P̂(y) = (1e-5 + n(s, a, y)) / (1e-5 S + n)` (uniform when
//! unvisited), `d_r = sqrt(4 L / max(1, n_r))` (no clipping), `d_p = sqrt(4 S L / max(1, n + 1e-5 (S - 1)))`;
//! the transition of an episode's last step is not counted (its reward is: `n_r` counts it). The
//! inner maximisation adds `d_p / 2` to the best next state (or, past 1, plays it with
//! probability 1) and trims the worst states until the row sums to at most 1, **writing the
//! result back into `P̂`**, so that the next stage starts from the shifted row and the optimism
//! compounds over the H stages ([`tabularl_inner_max`]); `P̂` is rebuilt from the counts at every
//! plan. Ties in the values are ordered by state index (the best is the last of the maximisers).

use super::common::{argmax_random_tie, greedy_probabilities};
use super::reward_rows::{BestFirst, Ties};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    block_length, count_sweep, staged_memory, Blocks, Experience, RewardModel, TabularlReference, REWARDS,
    TABULARL_REFERENCE,
};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "ucrl2",
    display: "UCRL2",
    params: &[
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.05)),
            range: Range::between(1e-9, 0.5),
            doc: "confidence parameter of the confidence sets",
        },
        REWARDS,
        TABULARL_REFERENCE,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example {
            doc: "wider sets, learned rewards",
            params: &[("delta", ParamDefault::Float(0.01)), ("rewards", ParamDefault::Text("learned"))],
        },
        Example {
            doc: "TabulaRL's UCRL2",
            params: &[("rewards", ParamDefault::Text("learned")), ("reference", ParamDefault::Text("tabularl"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        let rewards = RewardModel::read(r)?;
        Ok(Box::new(Ucrl2::new(r.float("delta")?, rewards)?.with_reference(TabularlReference::read(r, rewards)?)))
    },
};

/// The most sweeps one extended value iteration runs (a guard: it converges geometrically).
const MAX_SWEEPS: usize = 100_000;

/// `max_{p : ||p - p̂||_1 <= d, p a distribution} sum_y p(y) w(y)` (Jaksch et al. 2010, Fig. 2):
/// the best next state gets `min(1, p̂ + d / 2)` and the mass it gains is taken from the worst
/// states first. Only the states of `p̂`'s support (`seen`, increasing) have mass to give, so only
/// they are sorted (into `order`, S entries): a row costs `O(S + k log k)` for a support of k
/// states rather than a sort of all S. Ties in `w` change which state gives, not the value.
pub fn inner_max(p_hat: &[f64], w: &[f64], d: f64, seen: &[u32], order: &mut [u32]) -> f64 {
    inner_max_at(p_hat, w, first_argmax(w), d, seen, order)
}

/// The first index of `w`'s maximum (a left-to-right scan keeping the first of equals).
pub fn first_argmax(w: &[f64]) -> usize {
    let mut best = 0;
    for (y, &value) in w.iter().enumerate() {
        if value > w[best] {
            best = y;
        }
    }
    best
}

/// [`inner_max`] with its best next state `best` given: `w` is read only at `best` and at the
/// states of `seen`, so a caller that knows `best` fills only those.
pub fn inner_max_at(p_hat: &[f64], w: &[f64], best: usize, d: f64, seen: &[u32], order: &mut [u32]) -> f64 {
    let gain = (d / 2.0).min(1.0 - p_hat[best]).max(0.0);
    let mut value = gain * w[best];
    let mut givers = 0;
    for &y in seen {
        value += p_hat[y as usize] * w[y as usize];
        if y as usize != best {
            order[givers] = y;
            givers += 1;
        }
    }
    let order = &mut order[..givers];
    order.sort_unstable_by(|&a, &b| w[a as usize].total_cmp(&w[b as usize]).then(a.cmp(&b)));
    let mut excess = gain;
    for &y in order.iter() {
        if excess <= 0.0 {
            break;
        }
        let cut = p_hat[y as usize].min(excess);
        value -= cut * w[y as usize];
        excess -= cut;
    }
    value
}

/// TabulaRL's inner step (`compute_qVals_EVI`): `p` is the row's current estimate, edited in
/// place; `order` lists the states by increasing `w` (ties by index). The best state gains
/// `d / 2`, or, if that passes 1, the row played is the point mass on it (and `p` is left as it
/// was); otherwise the worst states are trimmed, in order, until the row sums to at most 1, and
/// the edited row stays in `p` for the next stage. Returns `sum_y p(y) w(y)` of the row played.
pub fn tabularl_inner_max(p: &mut [f64], w: &[f64], d: f64, order: &[u32]) -> f64 {
    let best = *order.last().expect("at least one state") as usize;
    if p[best] + 0.5 * d > 1.0 {
        return w[best];
    }
    p[best] += 0.5 * d;
    let mut total: f64 = p.iter().sum();
    for &worst in order {
        if total <= 1.0 {
            break;
        }
        let worst = worst as usize;
        let new = (1.0 - total + p[worst]).max(0.0);
        total += new - p[worst];
        p[worst] = new;
    }
    p.iter().zip(w).map(|(p, w)| p * w).sum()
}

/// TabulaRL's prior weights in its UCRL2 (its `alpha0` and `tau0`, made small so that the
/// estimates are the empirical ones).
const TABULARL_ALPHA0: f64 = 1e-5;
const TABULARL_TAU0: f64 = 1e-4;

/// UCRL2 (module doc).
#[derive(Clone, Debug)]
pub struct Ucrl2 {
    delta: f64,
    rewards: RewardModel,
    reference: TabularlReference,
    state: Option<Ucrl2State>,
}

#[derive(Clone, Debug)]
struct Ucrl2State {
    exp: Experience,
    gamma: f64,
    /// Steps observed in the task.
    t: usize,
    /// `N_k`, `p̂` and `r̂` of the current epoch, and the in-epoch counts.
    n_k: Vec<f64>,
    p_hat: Vec<f64>,
    r_hat: Vec<f64>,
    nu: Vec<f64>,
    u: Vec<f64>,
    u_next: Vec<f64>,
    q: Vec<f64>,
    order: Vec<u32>,
    w: Vec<f64>,
    epoch_due: bool,
    /// Epoch start steps `t_k`, for the tests (capacity reserved: no allocation per step).
    epochs: u64,
    last_epoch_start: usize,
    /// The setting's horizon (H of the episodic protocol).
    horizon: usize,
    /// Staged planning (episodes, or TabulaRL's blocks): the schedule, `Q_h` (`(h * S + s) * A + a`)
    /// and the plans made in the task (TabulaRL's episode index).
    staged: bool,
    blocks: Blocks,
    q_stages: Vec<f64>,
    plans: u64,
    /// TabulaRL's estimate being edited across the stages of one plan (S * A * S), and its L1 widths.
    p_work: Vec<f64>,
    d_p: Vec<f64>,
    v_next: Vec<f64>,
    /// The known reward table's structure on large models (`None`: the dense loops).
    structure: Option<BestFirst>,
}

/// The optimistic value `max_p sum_y p(y) (R(s, a, y) + gamma u(y))` of `row` under known rewards
/// (`w`, `order`: scratch of S entries). With `structure` (its orders made for `u`), `w` is filled
/// only at the row's best next state and its support; without, over every state.
#[allow(clippy::too_many_arguments)]
fn known_value(
    exp: &Experience,
    structure: Option<&BestFirst>,
    row: usize,
    gamma: f64,
    u: &[f64],
    p_hat: &[f64],
    d_p: f64,
    w: &mut [f64],
    order: &mut [u32],
) -> f64 {
    let (known, seen) = (exp.known_row(row), exp.seen(row));
    match structure {
        Some(k) => {
            let best = k.best(row, known, gamma, u);
            w[best] = known[best] + gamma * u[best];
            for &y in seen {
                w[y as usize] = known[y as usize] + gamma * u[y as usize];
            }
            inner_max_at(p_hat, w, best, d_p, seen, order)
        }
        None => {
            for ((w, &r), &u) in w.iter_mut().zip(known).zip(u) {
                *w = r + gamma * u;
            }
            inner_max(p_hat, w, d_p, seen, order)
        }
    }
}

/// What a sweep's rows share, from the values `v` the sweep backs up: under learned rewards the
/// weights `w = gamma v` (the same for every row) and their best state, returned; under known
/// rewards, the structured rows' order of the next states (`structure`, above 32 states), and 0.
fn sweep_weights(
    rewards: RewardModel,
    gamma: f64,
    v: &[f64],
    w: &mut [f64],
    structure: &mut Option<BestFirst>,
) -> usize {
    match rewards {
        RewardModel::Known => {
            if let Some(k) = structure.as_mut() {
                k.update(gamma, v);
            }
            0
        }
        RewardModel::Learned => {
            for (w, &v) in w.iter_mut().zip(v) {
                *w = gamma * v;
            }
            first_argmax(w)
        }
    }
}

impl Ucrl2State {
    /// Counts one sweep of every row: the entries a row reads are its next states, or with the
    /// structure its exceptions, its support and its best state, plus the classes' orders.
    fn count_sweep(&self) {
        let (ns, na) = (self.exp.n_states, self.exp.n_actions);
        match &self.structure {
            None => count_sweep(ns * na, ns * na * ns),
            Some(k) => {
                let rows = ns * na;
                let entries: usize =
                    (0..rows).map(|row| self.exp.seen(row).len() + k.rows().exceptions(row).len() + 1).sum();
                count_sweep(rows, entries + k.rows().n_classes() * ns);
            }
        }
    }
}

impl Ucrl2 {
    pub fn new(delta: f64, rewards: RewardModel) -> Result<Self> {
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        Ok(Self { delta, rewards, reference: TabularlReference::Paper, state: None })
    }

    /// The same agent following `reference`'s choices (module doc).
    pub fn with_reference(mut self, reference: TabularlReference) -> Self {
        self.reference = reference;
        self
    }

    /// Plans made at episode or block starts since the task start (0 under epochs).
    pub fn staged_plans(&self) -> u64 {
        self.state.as_ref().map_or(0, |st| st.plans)
    }

    fn state(&mut self) -> Result<&mut Ucrl2State> {
        self.state.as_mut().ok_or_else(|| not_trained("UCRL2"))
    }

    /// Epochs started since the task start, and the step `t_k` of the last one.
    pub fn epochs(&self) -> (u64, usize) {
        self.state.as_ref().map_or((0, 0), |st| (st.epochs, st.last_epoch_start))
    }

    fn ensure_planned(&mut self) -> Result<&Ucrl2State> {
        let (delta, rewards, reference) = (self.delta, self.rewards, self.reference);
        let st = self.state()?;
        if st.staged {
            if st.blocks.due {
                match reference {
                    TabularlReference::Paper => st.plan_stages(delta, rewards),
                    TabularlReference::Tabularl => st.plan_tabularl(delta),
                }
            }
        } else if st.epoch_due {
            st.new_epoch(delta, rewards);
        }
        Ok(st)
    }

    /// The Q-values the next decision in `state` uses.
    fn q_row(st: &Ucrl2State, state: usize) -> &[f64] {
        let na = st.exp.n_actions;
        if st.staged {
            let start = (st.blocks.stage * st.exp.n_states + state) * na;
            &st.q_stages[start..start + na]
        } else {
            &st.q[state * na..(state + 1) * na]
        }
    }
}

impl Ucrl2State {
    /// Sizes the staged schedule for blocks of `length` steps (allocates only when it grows).
    fn stage_in_blocks(&mut self, length: usize) {
        let needed = length * self.exp.n_states * self.exp.n_actions;
        if self.q_stages.len() < needed {
            self.q_stages.resize(needed, 0.0);
        }
        self.blocks = Blocks::new(length);
        self.staged = true;
    }

    /// The paper's sets at `t_k` = steps so far + 1, an H-stage extended value iteration (module doc).
    fn plan_stages(&mut self, delta: f64, rewards: RewardModel) {
        let (ns, na, len) = (self.exp.n_states, self.exp.n_actions, self.blocks.length);
        let t_k = (self.t + 1) as f64;
        let (s, a) = (ns as f64, na as f64);
        let log_r = (2.0 * s * a * t_k / delta).ln();
        let log_p = (2.0 * a * t_k / delta).ln();
        let scale = self.exp.scale();
        for row in 0..ns * na {
            let n = self.exp.visits(row);
            let denominator = n.max(1.0);
            for (p, &c) in self.p_hat[row * ns..(row + 1) * ns].iter_mut().zip(self.exp.counts_row(row)) {
                *p = c / denominator;
            }
            self.r_hat[row] = self.exp.reward_sum(row) / self.exp.reward_visits(row).max(1.0);
        }
        self.v_next.fill(0.0);
        for h in (0..len).rev() {
            let best_learned = sweep_weights(rewards, self.gamma, &self.v_next, &mut self.w, &mut self.structure);
            for st in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for act in 0..na {
                    let row = st * na + act;
                    let n = self.exp.visits(row).max(1.0);
                    let d_p = (14.0 * s * log_p / n).sqrt();
                    let p_hat = &self.p_hat[row * ns..(row + 1) * ns];
                    let value = match rewards {
                        RewardModel::Known => known_value(
                            &self.exp,
                            self.structure.as_ref(),
                            row,
                            self.gamma,
                            &self.v_next,
                            p_hat,
                            d_p,
                            &mut self.w,
                            &mut self.order,
                        ),
                        RewardModel::Learned => {
                            let n_r = self.exp.reward_visits(row).max(1.0);
                            let d_r = scale * (7.0 * log_r / (2.0 * n_r)).sqrt();
                            let r = (self.r_hat[row] + d_r).min(self.exp.r_hi);
                            r + inner_max_at(p_hat, &self.w, best_learned, d_p, self.exp.seen(row), &mut self.order)
                        }
                    };
                    self.q_stages[(h * ns + st) * na + act] = value;
                    best = best.max(value);
                }
                self.u_next[st] = best;
            }
            std::mem::swap(&mut self.v_next, &mut self.u_next);
            self.count_sweep();
        }
        self.blocks.due = false;
        self.plans += 1;
    }

    /// TabulaRL's UCRL2 plan (module doc).
    fn plan_tabularl(&mut self, delta: f64) {
        let (ns, na, len) = (self.exp.n_states, self.exp.n_actions, self.blocks.length);
        let s = ns as f64;
        let episode = (self.plans + 1) as f64;
        let log = (2.0 * s * na as f64 * (episode + 1.0) / delta).ln();
        for row in 0..ns * na {
            let n = self.exp.visits(row);
            let total = TABULARL_ALPHA0 * s + n;
            for (p, &c) in self.p_work[row * ns..(row + 1) * ns].iter_mut().zip(self.exp.counts_row(row)) {
                *p = (TABULARL_ALPHA0 + c) / total;
            }
            let n_r = self.exp.reward_visits(row);
            // r̂ + d_r, unclipped.
            self.r_hat[row] = self.exp.reward_sum(row) / (TABULARL_TAU0 + n_r) + (4.0 * log / n_r.max(1.0)).sqrt();
            self.d_p[row] = (4.0 * s * log / (n + TABULARL_ALPHA0 * (s - 1.0)).max(1.0)).sqrt();
        }
        self.v_next.fill(0.0);
        for h in (0..len).rev() {
            for (i, o) in self.order.iter_mut().enumerate() {
                *o = i as u32;
            }
            let v_next = &self.v_next;
            // A total order (ties by index), so the unstable sort (which never allocates) is exact.
            self.order.sort_unstable_by(|&x, &y| v_next[x as usize].total_cmp(&v_next[y as usize]).then(x.cmp(&y)));
            for (w, &v) in self.w.iter_mut().zip(&self.v_next) {
                *w = self.gamma * v;
            }
            for st in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for act in 0..na {
                    let row = st * na + act;
                    let p = &mut self.p_work[row * ns..(row + 1) * ns];
                    let value = self.r_hat[row] + tabularl_inner_max(p, &self.w, self.d_p[row], &self.order);
                    self.q_stages[(h * ns + st) * na + act] = value;
                    best = best.max(value);
                }
                self.u_next[st] = best;
            }
            std::mem::swap(&mut self.v_next, &mut self.u_next);
            count_sweep(ns * na, ns * na * ns);
        }
        self.blocks.due = false;
        self.plans += 1;
    }

    fn new_epoch(&mut self, delta: f64, rewards: RewardModel) {
        let (ns, na) = (self.exp.n_states, self.exp.n_actions);
        let t_k = (self.t + 1) as f64;
        for row in 0..ns * na {
            let n = self.exp.visits(row);
            self.n_k[row] = n;
            let denominator = n.max(1.0);
            let counts = self.exp.counts_row(row);
            for (p, &c) in self.p_hat[row * ns..(row + 1) * ns].iter_mut().zip(counts) {
                *p = c / denominator;
            }
            self.r_hat[row] = self.exp.reward_sum(row) / denominator;
        }
        self.nu.fill(0.0);
        let scale = self.exp.scale();
        let (s, a) = (ns as f64, na as f64);
        let log_r = (2.0 * s * a * t_k / delta).ln();
        let log_p = (2.0 * a * t_k / delta).ln();
        let threshold = (1.0 - self.gamma) * scale / t_k.sqrt();
        self.u.fill(0.0);
        for _ in 0..MAX_SWEEPS {
            let mut change: f64 = 0.0;
            let best_learned = sweep_weights(rewards, self.gamma, &self.u, &mut self.w, &mut self.structure);
            for st in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for act in 0..na {
                    let row = st * na + act;
                    let n = self.n_k[row].max(1.0);
                    let d_p = (14.0 * s * log_p / n).sqrt();
                    let p_hat = &self.p_hat[row * ns..(row + 1) * ns];
                    let value = match rewards {
                        RewardModel::Known => known_value(
                            &self.exp,
                            self.structure.as_ref(),
                            row,
                            self.gamma,
                            &self.u,
                            p_hat,
                            d_p,
                            &mut self.w,
                            &mut self.order,
                        ),
                        RewardModel::Learned => {
                            let d_r = scale * (7.0 * log_r / (2.0 * n)).sqrt();
                            let r = (self.r_hat[row] + d_r).min(self.exp.r_hi);
                            r + inner_max_at(p_hat, &self.w, best_learned, d_p, self.exp.seen(row), &mut self.order)
                        }
                    };
                    self.q[row] = value;
                    best = best.max(value);
                }
                change = change.max((best - self.u[st]).abs());
                self.u_next[st] = best;
            }
            self.count_sweep();
            std::mem::swap(&mut self.u, &mut self.u_next);
            if change < threshold {
                break;
            }
        }
        self.epoch_due = false;
        self.epochs += 1;
        self.last_epoch_start = self.t + 1;
    }
}

impl Agent for Ucrl2 {
    fn name(&self) -> String {
        format!("UCRL2 (delta = {}{}{})", self.delta, self.rewards.label(), self.reference.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let exp = Experience::new(prior);
        let (ns, na) = (exp.n_states, exp.n_actions);
        let structure = match self.rewards {
            RewardModel::Known => BestFirst::for_table(&prior.rewards_arc(), ns * na, ns, Ties::LowIndexFirst),
            RewardModel::Learned => None,
        };
        self.state = Some(Ucrl2State {
            structure,
            exp,
            gamma: setting.gamma,
            t: 0,
            n_k: vec![0.0; ns * na],
            p_hat: vec![0.0; ns * na * ns],
            r_hat: vec![0.0; ns * na],
            nu: vec![0.0; ns * na],
            u: vec![0.0; ns],
            u_next: vec![0.0; ns],
            q: vec![0.0; ns * na],
            order: (0..ns as u32).collect(),
            w: vec![0.0; ns],
            epoch_due: true,
            epochs: 0,
            last_epoch_start: 0,
            horizon: setting.horizon,
            staged: false,
            blocks: Blocks::new(1),
            q_stages: Vec::new(),
            plans: 0,
            p_work: vec![0.0; ns * na * ns],
            d_p: vec![0.0; ns * na],
            v_next: vec![0.0; ns],
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let reference = self.reference;
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.horizon = context.setting.horizon;
        st.exp.clear();
        st.t = 0;
        st.epoch_due = true;
        st.epochs = 0;
        st.last_epoch_start = 0;
        st.plans = 0;
        st.staged = false;
        if reference == TabularlReference::Tabularl {
            // TabulaRL replans per episode; without episodes, per block of the effective horizon
            // (never longer than the task).
            st.stage_in_blocks(block_length(0, st.gamma).min(st.horizon.max(1)));
        }
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        if !(st.staged && st.blocks.length == st.horizon) {
            st.stage_in_blocks(st.horizon.max(1));
        }
        st.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let st = self.ensure_planned()?;
        Ok(argmax_random_tie(Self::q_row(st, state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let reference = self.reference;
        let st = self.state()?;
        let row = t.state * st.exp.n_actions + t.action;
        if st.staged {
            // TabulaRL counts the last step's reward, not its transition (module doc).
            if reference == TabularlReference::Tabularl && st.blocks.stage + 1 == st.blocks.length {
                st.exp.observe_reward_only(&t);
            } else {
                st.exp.observe(&t);
            }
            st.blocks.advance();
        } else {
            st.exp.observe(&t);
        }
        st.t += 1;
        st.nu[row] += 1.0;
        if st.nu[row] >= st.n_k[row].max(1.0) {
            st.epoch_due = true;
        }
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.ensure_planned()?;
        greedy_probabilities(Self::q_row(st, state), out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        MemoryNeed { bytes: staged_memory(1, 0, n_states, n_actions, setting), sized_by: "stage tables (the horizon)" }
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
    use crate::agents::baseline_test_support::learns_chain;
    use proptest::prelude::*;

    /// The maximum of `p . w` over the distributions within L1 distance d of p̂, by enumeration:
    /// every transfer of up to d / 2 of mass onto one state, taken from the others in every
    /// possible order (each a feasible distribution; the optimum, moving the most mass onto the
    /// best state from the worst ones, is among them).
    fn brute_force(p_hat: &[f64], w: &[f64], d: f64) -> f64 {
        fn permutations(items: Vec<usize>) -> Vec<Vec<usize>> {
            if items.len() <= 1 {
                return vec![items];
            }
            let mut out = Vec::new();
            for i in 0..items.len() {
                let mut rest = items.clone();
                let x = rest.remove(i);
                for mut p in permutations(rest) {
                    p.insert(0, x);
                    out.push(p);
                }
            }
            out
        }
        let n = p_hat.len();
        let mut best = f64::NEG_INFINITY;
        for gain in 0..n {
            let others: Vec<usize> = (0..n).filter(|&y| y != gain).collect();
            for loss_order in permutations(others) {
                // Move up to d / 2 of mass onto `gain`, taken in `loss_order`.
                let mut p = p_hat.to_vec();
                let mut budget = (d / 2.0).min(1.0 - p[gain]);
                p[gain] += budget;
                for &y in &loss_order {
                    let cut = p[y].min(budget);
                    p[y] -= cut;
                    budget -= cut;
                }
                best = best.max(p.iter().zip(w).map(|(p, w)| p * w).sum());
            }
        }
        best
    }

    proptest! {
        #[test]
        fn inner_maximisation_matches_enumeration(
            raw in proptest::collection::vec(0.0f64..1.0, 2..6),
            zeros in proptest::collection::vec(proptest::bool::ANY, 6),
            w in proptest::collection::vec(-5.0f64..5.0, 6),
            d in 0.0f64..2.5,
        ) {
            // Some states outside the support (p̂ = 0), at least one inside.
            let mut raw = raw.clone();
            for (x, &zero) in raw.iter_mut().zip(&zeros).skip(1) {
                if zero {
                    *x = 0.0;
                }
            }
            raw[0] += 1e-3;
            let total: f64 = raw.iter().sum();
            let p_hat: Vec<f64> = raw.iter().map(|x| x / total).collect();
            let w = &w[..p_hat.len()];
            let seen: Vec<u32> = (0..p_hat.len() as u32).filter(|&y| p_hat[y as usize] > 0.0).collect();
            let mut order = vec![0u32; p_hat.len()];
            let got = inner_max(&p_hat, w, d, &seen, &mut order);
            let expected = brute_force(&p_hat, w, d);
            prop_assert!((got - expected).abs() < 1e-9, "{} vs {}", got, expected);
            // Never below the plain expectation under p̂ (p̂ itself is feasible).
            let plain: f64 = p_hat.iter().zip(w).map(|(p, w)| p * w).sum();
            prop_assert!(got >= plain - 1e-12);
        }
    }

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn epochs_double_the_counts() {
        // One state, one action: every step visits the same pair, so epoch k ends when the
        // count doubles: epochs start at steps 1, 2, 3, 5, 9, 17, ...
        let prior = Fdm::new(1, 1, vec![1.0], vec![0.5], Some(0)).unwrap();
        let mut agent = Ucrl2::new(0.05, RewardModel::Known).unwrap();
        let setting = Setting { gamma: 0.9, horizon: 40 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let mut starts = Vec::new();
        for _ in 0..40 {
            agent.act(0, &mut rng).unwrap();
            let (k, t_k) = agent.epochs();
            if starts.len() < k as usize {
                starts.push(t_k);
            }
            agent.observe(Transition { state: 0, action: 0, reward: 0.5, next_state: 0 }, &mut rng).unwrap();
        }
        assert_eq!(starts, vec![1, 2, 3, 5, 9, 17, 33]);
    }

    /// Plays `episodes` episodes of `horizon` steps from state 0 on the deterministic chain,
    /// calling `start_episode` as the episodic protocol does; returns the reward of each episode.
    fn chain_episodes(agent: &mut Ucrl2, episodes: usize, horizon: usize) -> Vec<f64> {
        let (mdp, prior) = crate::agents::baseline_test_support::deterministic_chain();
        let setting = Setting { gamma: 0.99, horizon };
        let (mut rng, mut env) = (crate::rng::stream(5, 0, 0), crate::rng::stream(5, 1, 0));
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        (0..episodes)
            .map(|_| {
                agent.start_episode(0, &mut rng).unwrap();
                let (mut s, mut total) = (0, 0.0);
                for _ in 0..horizon {
                    let a = agent.act(s, &mut rng).unwrap();
                    let (y, reward) = mdp.step(s, a, &mut env);
                    agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
                    (s, total) = (y, total + reward);
                }
                total
            })
            .collect()
    }

    #[test]
    fn episodes_plan_h_stages_and_learn_the_chain() {
        // Right all the way earns 1 per step from step 4 on: 6 per episode of 10 steps. The
        // paper's sets hold the whole simplex until a pair has about 200 visits, so UCRL2 needs
        // a few thousand episodes here (it does not learn in the first few hundred).
        for rewards in [RewardModel::Known, RewardModel::Learned] {
            let mut agent = Ucrl2::new(0.05, rewards).unwrap();
            let returns = chain_episodes(&mut agent, 3000, 10);
            assert_eq!(agent.staged_plans(), 3000);
            let late = &returns[2980..];
            // An optimistic agent still re-tries a pair now and then.
            assert!(late.iter().filter(|&&r| r == 6.0).count() >= 18, "{rewards:?}: {late:?}");
            let early = &returns[..20];
            assert!(early.iter().filter(|&&r| r == 6.0).count() < 18, "{rewards:?}: {early:?}");
        }
    }

    #[test]
    fn tabularl_inner_step_edits_the_row_and_compounds() {
        let (w, order) = ([0.0, 1.0, 2.0], [0u32, 1, 2]);
        let mut p = [0.2, 0.5, 0.3];
        // +0.2 on state 2, then the worst state 0 gives its 0.2.
        assert!((tabularl_inner_max(&mut p, &w, 0.4, &order) - 1.5).abs() < 1e-12);
        assert!(p.iter().zip([0.0, 0.5, 0.5]).all(|(a, b)| (a - b).abs() < 1e-12), "{p:?}");
        // The next stage starts from the edited row: 0.7 on state 2, state 1 gives 0.2.
        assert!((tabularl_inner_max(&mut p, &w, 0.4, &order) - 1.7).abs() < 1e-12);
        assert!((p[1] - 0.3).abs() < 1e-12 && (p[2] - 0.7).abs() < 1e-12);
        // Past 1 the point mass on the best state is played and the row is left as it was.
        let before = p;
        assert_eq!(tabularl_inner_max(&mut p, &w, 0.8, &order), 2.0);
        assert_eq!(p, before);
        // The paper's step (from p̂ every time) does not compound.
        let mut scratch = [0u32; 3];
        let paper = inner_max(&[0.2, 0.5, 0.3], &w, 0.4, &[0, 1, 2], &mut scratch);
        assert!((paper - 1.5).abs() < 1e-12);
    }

    #[test]
    fn tabularl_widths_and_last_step_at_known_counts() {
        let build = |reference: &str| {
            let mut p = crate::agents::spec::Params::new();
            p.insert("rewards".into(), crate::agents::spec::ParamValue::Text("learned".into()));
            p.insert("reference".into(), crate::agents::spec::ParamValue::Text(reference.into()));
            crate::agents::build("ucrl2", &p)
        };
        assert!(build("tabularl").unwrap().name().contains("TabulaRL"));
        let e = build("tabula").err().unwrap();
        assert!(e.to_string().contains("'reference' must be one of"), "{e}");
        let mut p = crate::agents::spec::Params::new();
        p.insert("reference".into(), crate::agents::spec::ParamValue::Text("tabularl".into()));
        let e = crate::agents::build("ucrl2", &p).err().unwrap();
        assert!(e.to_string().contains("needs rewards = \"learned\""), "{e}");

        let (h, delta) = (10, 0.05);
        let mut agent = Ucrl2::new(delta, RewardModel::Learned).unwrap().with_reference(TabularlReference::Tabularl);
        let returns = chain_episodes(&mut agent, 3, h);
        let st = agent.state.as_mut().unwrap();
        // 3 episodes of 10 steps: 30 rewards, 27 transitions (the last step's is not counted).
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        let rewards: f64 = (0..ns * na).map(|row| st.exp.reward_visits(row)).sum();
        let transitions: f64 = (0..ns * na).map(|row| st.exp.visits(row)).sum();
        assert_eq!((rewards, transitions), (30.0, 27.0));
        let earned: f64 = (0..ns * na).map(|row| st.exp.reward_sum(row)).sum();
        assert!((earned - returns.iter().sum::<f64>()).abs() < 1e-12);
        // The 4th plan (k = 4): at the last stage Q = r̂ + d_r, with TabulaRL's constants.
        st.blocks.restart();
        st.plan_tabularl(delta);
        let log = (2.0 * (ns * na) as f64 * 5.0 / delta).ln();
        for row in 0..ns * na {
            let n_r = st.exp.reward_visits(row);
            let expected = st.exp.reward_sum(row) / (1e-4 + n_r) + (4.0 * log / n_r.max(1.0)).sqrt();
            let got = st.q_stages[(h - 1) * ns * na + row];
            assert!((got - expected).abs() < 1e-12, "row {row}: {got} vs {expected}");
            let n = st.exp.visits(row);
            let d_p = (4.0 * ns as f64 * log / (n + 1e-5 * (ns as f64 - 1.0)).max(1.0)).sqrt();
            assert!((st.d_p[row] - d_p).abs() < 1e-12);
        }
    }

    #[test]
    fn structured_rows_plan_bit_for_bit_as_the_dense_loops() {
        use crate::agents::baseline_test_support::{decisions, structured_prior};
        let prior = structured_prior();
        for episodic in [false, true] {
            let run = |dense: bool| {
                let mut agent = Ucrl2::new(0.05, RewardModel::Known).unwrap();
                let trace = decisions(
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
                    |agent, s| Ucrl2::q_row(agent.state.as_ref().unwrap(), s).iter().map(|q| q.to_bits()).collect(),
                );
                (trace, agent.epochs())
            };
            assert_eq!(run(false), run(true), "episodic: {episodic}");
            crate::agents::baseline_test_support::assert_no_allocation_on(
                &mut Ucrl2::new(0.05, RewardModel::Known).unwrap(),
                &prior,
                episodic,
            );
        }
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut Ucrl2::new(0.05, RewardModel::Known).unwrap(), 1500);
        learns_chain(&mut Ucrl2::new(0.05, RewardModel::Learned).unwrap(), 4000);
    }
}
